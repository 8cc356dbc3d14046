//! A UDP receiver under floods (docs/BENCHMARKS.md, "A receiver under a
//! flood"): the resident memory of this process, which
//! runs one receiving endpoint, before, during and after a flood of
//! spoofed SYNs and one of garbage datagrams; the time a real transfer
//! takes during each, against the same transfer without; and the peer
//! addresses the receiver holds at the end against the bound it is judged
//! by (its backlog of half-open connections, the sources of the latest
//! 1024 packets it answered that opened nothing, and the real
//! connections).
//!
//!     cargo run --release -p scps-net --example flood_memory [SYNS] [GARBAGE]
//!
//! With `UDP_ADDRESS syns|garbage COUNT` it only floods the receiver at
//! that UDP address (whose listener is on port 5001), for
//! scripts/bench-flood.sh to measure `scps recv` itself.

#[path = "../tests/common/resident.rs"]
mod resident;

#[path = "../tests/common/flood.rs"]
mod flood;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use flood::Flood;
use scps_net::{Net, NetOptions, UdpPath};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PORT: u16 = 5001;
const TRANSFER: usize = 50 << 20;
const CHUNK: usize = 64 << 10;
const TRANSFERS: usize = 3;
/// The backlog of half-open connections, the strays, the real connections.
const PEERS_BOUND: usize = 128 + 2 * scps_proto::MAX_ANSWERS_WAITING + TRANSFERS;

/// One real transfer through the receiver, checked; returns its time.
async fn transfer(receiver_udp: SocketAddr, to: SocketAddr) -> Duration {
    let started = Instant::now();
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(receiver_udp)).unwrap();
    let sender = Net::start(path, NetOptions::default()).unwrap();
    let mut stream = sender.connect(to).await.unwrap();
    // Written and read in chunks, so that the process's memory is the
    // endpoints' and not the transfer's.
    let chunk = [7u8; CHUNK];
    for _ in 0..TRANSFER / CHUNK {
        stream.write_all(&chunk).await.unwrap();
    }
    stream.shutdown().await.unwrap();
    let mut echo = [0u8; 8];
    stream.read_exact(&mut echo).await.unwrap();
    assert_eq!(
        u64::from_be_bytes(echo),
        TRANSFER as u64,
        "bytes the receiver counted"
    );
    let took = started.elapsed();
    drop(stream);
    sender.close(Duration::from_secs(5)).await.unwrap();
    took
}

/// Runs a transfer while `flood` sends `count` datagrams; returns the
/// transfer's time, the flood's, and the peak resident size meanwhile.
async fn transfer_during(
    flood: Flood,
    count: usize,
    receiver_udp: SocketAddr,
    to: SocketAddr,
) -> (Duration, Duration, f64) {
    let flooding = Arc::new(AtomicBool::new(true));
    let sampling = flooding.clone();
    let peak = std::thread::spawn(move || {
        let mut peak: f64 = 0.0;
        while sampling.load(Ordering::Relaxed) {
            peak = peak.max(resident::status_mb("VmRSS:"));
            std::thread::sleep(Duration::from_millis(20));
        }
        peak
    });
    let started = Instant::now();
    let flooder = tokio::task::spawn_blocking(move || {
        flood::send(flood, 1, receiver_udp, count, PORT);
        started.elapsed()
    });
    let took = transfer(receiver_udp, to).await;
    let flood_took = flooder.await.unwrap();
    flooding.store(false, Ordering::Relaxed);
    (took, flood_took, peak.join().unwrap())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [at, kind, count] = &args[..] {
        // Only the flood, at another process's receiver (scripts/bench-flood.sh).
        let kind = match kind.as_str() {
            "syns" => Flood::Syns,
            "garbage" => Flood::Garbage,
            other => panic!("a flood is syns or garbage, not {other}"),
        };
        let at: SocketAddr = at.parse().expect("UDP_ADDRESS");
        flood::send(kind, 1, at, count.parse().expect("COUNT"), PORT);
        return;
    }
    let mut counts = args
        .iter()
        .map(|n| n.parse::<usize>().expect("counts of datagrams"));
    let syns = counts.next().unwrap_or(100_000);
    let garbage = counts.next().unwrap_or(1_000_000);
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let receiver_udp = path.local_addr().unwrap();
    let receiver = Net::start(path, NetOptions::default()).unwrap();
    let to = SocketAddr::new(receiver_udp.ip(), PORT);
    let listener = receiver.listen(to).unwrap();
    let server = tokio::spawn(async move {
        for _ in 0..TRANSFERS {
            let mut stream = listener.accept().await.unwrap();
            let (mut received, mut chunk) = (0u64, [0u8; CHUNK]);
            loop {
                match stream.read(&mut chunk).await.unwrap() {
                    0 => break,
                    n => received += n as u64,
                }
            }
            stream.write_all(&received.to_be_bytes()).await.unwrap();
            stream.shutdown().await.unwrap();
        }
    });
    // The first transfer allocates what any transfer needs.
    let quiet = transfer(receiver_udp, to).await;
    let before = resident::status_mb("VmRSS:");
    let (syn_took, syn_flood_took, syn_peak) = transfer_during(Flood::Syns, syns, receiver_udp, to).await;
    let (garbage_took, garbage_flood_took, garbage_peak) =
        transfer_during(Flood::Garbage, garbage, receiver_udp, to).await;
    server.await.unwrap();
    let after = resident::status_mb("VmRSS:");
    let stats = receiver.close(Duration::from_secs(1)).await.unwrap();
    let mb = TRANSFER >> 20;
    println!("a {mb} MiB transfer alone: {:.3} s", quiet.as_secs_f64());
    println!(
        "during {syns} spoofed SYNs (sent in {:.2} s): {:.3} s, {:.2} times as long; {} SYN cookies sent, {} accepted",
        syn_flood_took.as_secs_f64(),
        syn_took.as_secs_f64(),
        syn_took.as_secs_f64() / quiet.as_secs_f64(),
        stats.endpoint.syn_cookies_sent,
        stats.endpoint.syn_cookies_accepted,
    );
    println!(
        "during {garbage} garbage datagrams (sent in {:.2} s): {:.3} s, {:.2} times as long",
        garbage_flood_took.as_secs_f64(),
        garbage_took.as_secs_f64(),
        garbage_took.as_secs_f64() / quiet.as_secs_f64(),
    );
    println!(
        "resident: {before:.1} MB before, peak {syn_peak:.1} MB during the SYNs, {garbage_peak:.1} MB during the garbage, {after:.1} MB after"
    );
    println!(
        "datagrams that reached the endpoint: {}; dropped by cause: {:?}",
        stats.packets_in, stats.endpoint.drops
    );
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
