//! The UDP path's frame check: a relay between two endpoints swaps two
//! 16-bit words of the data in every twentieth large datagram, damage TCP's
//! ones'-complement checksum cannot see. With the CRC-32C trailer the
//! damaged datagrams are dropped and counted (`frame_check`) and the data
//! arrives intact; with the trailers removed on the way, as a peer without
//! them would send, the same damage is delivered and only the application's
//! SHA-256 notices.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{PORT, content, seed};
use scps_net::frame_check::TRAILER_BYTES;
use scps_net::{Net, NetOptions, UdpPath};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Trailers {
    /// Carried through, as the endpoints sent them.
    Kept,
    /// Removed from every datagram, both ways.
    Removed,
}

/// Forwards datagrams between the first peer that writes to it and
/// `server`, damaging every `every`th one towards the server longer than
/// 1000 bytes, until `stop`.
fn relay(server: SocketAddr, trailers: Trailers, every: usize, stop: Arc<AtomicBool>) -> SocketAddr {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    let address = socket.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut client = None;
        let mut large = 0;
        let mut buf = vec![0u8; 65536];
        while !stop.load(Ordering::Relaxed) {
            let Ok((len, from)) = socket.recv_from(&mut buf) else {
                continue;
            };
            let mut datagram = buf[..len].to_vec();
            let trailer = if trailers == Trailers::Removed && len > TRAILER_BYTES {
                datagram.truncate(len - TRAILER_BYTES);
                0
            } else {
                TRAILER_BYTES
            };
            if from == server {
                if let Some(client) = client {
                    let _ = socket.send_to(&datagram, client);
                }
                continue;
            }
            client = Some(from);
            if datagram.len() > 1000 {
                large += 1;
                if large % every == 0 {
                    // The IP packet's last two 16-bit words, swapped: the
                    // data of a full-sized segment, word-aligned.
                    let end = datagram.len() - trailer;
                    let first = [datagram[end - 4], datagram[end - 3]];
                    datagram.copy_within(end - 2..end, end - 4);
                    datagram[end - 2..end].copy_from_slice(&first);
                }
            }
            let _ = socket.send_to(&datagram, server);
        }
    });
    address
}

/// Sends `len` seeded bytes through a damaging relay; returns whether the
/// receiver's SHA-256 of what arrived matched, and its frame check drops.
async fn transfer(trailers: Trailers, len: usize) -> (bool, u64) {
    let data = content(seed(), len);
    let server_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let server_udp = server_path.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let relay = relay(server_udp, trailers, 20, stop.clone());
    let client_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(relay)).unwrap();
    let server_net = Net::start(server_path, NetOptions::default()).unwrap();
    let client_net = Net::start(client_path, NetOptions::default()).unwrap();
    let server_addr = SocketAddr::new(server_udp.ip(), PORT);
    let listener = server_net.listen(server_addr).unwrap();
    let reader = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).await.unwrap();
        Sha256::digest(&received)
    });
    let mut stream = client_net.connect(server_addr).await.unwrap();
    stream.write_all(&data).await.unwrap();
    stream.shutdown().await.unwrap();
    let intact = reader.await.unwrap() == Sha256::digest(&data);
    drop(stream);
    client_net.close(Duration::from_secs(5)).await.unwrap();
    let stats = server_net.close(Duration::from_secs(5)).await.unwrap();
    stop.store(true, Ordering::Relaxed);
    (intact, stats.endpoint.dropped("frame_check"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_frame_check_drops_damage_the_tcp_checksum_misses() {
    let (intact, dropped) = transfer(Trailers::Kept, 2 << 20).await;
    assert!(intact, "the data arrived intact");
    assert!(dropped > 10, "the damaged datagrams were dropped: {dropped}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_trailers_the_same_damage_is_delivered() {
    let (intact, dropped) = transfer(Trailers::Removed, 2 << 20).await;
    assert_eq!(dropped, 0, "nothing to check");
    assert!(!intact, "TCP's checksum let the swapped words through");
}
