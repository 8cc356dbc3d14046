//! The memory of a UDP receiver under a flood of datagrams that open no
//! connection (issue 12 defect 2; docs/BENCHMARKS.md "A receiver under a
//! flood"): the resident size of this process, which runs one receiving
//! endpoint, before and after the flood, and the peer addresses it holds
//! at the end against the bound it is judged by (one per connection, and
//! the latest 256 packets that opened none).
//!
//!     cargo run --release -p scps-net --example flood_memory [DATAGRAMS]

#[path = "../tests/common/flood.rs"]
mod flood;

use std::net::SocketAddr;
use std::time::Duration;

use scps_net::{Net, NetOptions, PacketPath, UdpPath};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PORT: u16 = 5001;
/// The bound on peers held: `udp_peers::STRAYS`, plus the one real
/// connection of the run.
const PEERS_BOUND: usize = 256 + 1;

/// A line of /proc/self/status, in MB.
fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kb: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1000.0
}

/// One real transfer of `bytes` through the receiver, checked.
async fn transfer(receiver_udp: SocketAddr, to: SocketAddr, bytes: usize) {
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(receiver_udp)).unwrap();
    let sender = Net::start(PacketPath::Udp(path), NetOptions::default()).unwrap();
    let mut stream = sender.connect(to).await.unwrap();
    stream.write_all(&vec![7u8; bytes]).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut echo = [0u8; 8];
    stream.read_exact(&mut echo).await.unwrap();
    assert_eq!(
        u64::from_be_bytes(echo),
        bytes as u64,
        "bytes the receiver counted"
    );
    drop(stream);
    sender.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let datagrams: usize = std::env::args()
        .nth(1)
        .map(|n| n.parse().expect("DATAGRAMS is a count"))
        .unwrap_or(1_000_000);
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let receiver_udp = path.local_addr().unwrap();
    let receiver = Net::start(PacketPath::Udp(path), NetOptions::default()).unwrap();
    let to = SocketAddr::new(receiver_udp.ip(), PORT);
    let listener = receiver.listen(to).unwrap();
    let server = tokio::spawn(async move {
        for _ in 0..2 {
            let mut stream = listener.accept().await.unwrap();
            let mut received = Vec::new();
            stream.read_to_end(&mut received).await.unwrap();
            stream
                .write_all(&(received.len() as u64).to_be_bytes())
                .await
                .unwrap();
            stream.shutdown().await.unwrap();
        }
    });
    // Warm up: the buffers a transfer needs are allocated before the
    // first figure.
    transfer(receiver_udp, to, 10 << 20).await;
    let before = status_mb("VmRSS:");
    let seed = 1;
    tokio::task::spawn_blocking(move || flood::send(seed, receiver_udp, datagrams, PORT))
        .await
        .unwrap();
    transfer(receiver_udp, to, 10 << 20).await;
    server.await.unwrap();
    let after = status_mb("VmRSS:");
    let peak = status_mb("VmHWM:");
    let stats = receiver.close(Duration::from_secs(5)).await.unwrap();
    println!(
        "{datagrams} flood datagrams sent, {} reached the endpoint ({} dropped by cause: {:?})",
        stats.packets_in,
        stats.endpoint.total_dropped(),
        stats.endpoint.drops
    );
    println!("resident: {before:.1} MB before the flood, {after:.1} MB after, peak {peak:.1} MB");
    println!(
        "peer addresses held at the end: {} (bound {PEERS_BOUND}: {})",
        stats.peers_held,
        if stats.peers_held <= PEERS_BOUND {
            "within"
        } else {
            "EXCEEDED"
        }
    );
}
