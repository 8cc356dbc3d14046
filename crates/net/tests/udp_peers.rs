//! A UDP receiver with many peers: two senders behind one inner address are
//! told apart by their connections, so both transfers arrive intact; a
//! flood of datagrams that open no connection leaves the receiver holding a
//! bounded number of peer addresses, and a real sender still gets through.

mod common;

use std::net::SocketAddr;
use std::time::Duration;

use common::flood::{self, Flood};
use common::{PORT, content, seed};
use scps_net::{Net, NetOptions, NetStats, UdpPath};
use scps_proto::MAX_ANSWERS_WAITING;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A receiving endpoint on loopback (no fixed peer) and its listener's
/// address.
fn receiver() -> (Net, SocketAddr, SocketAddr) {
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let udp = path.local_addr().unwrap();
    let net = Net::start(path, NetOptions::default()).unwrap();
    (net, udp, SocketAddr::new(udp.ip(), PORT))
}

fn sender(receiver_udp: SocketAddr) -> Net {
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(receiver_udp)).unwrap();
    Net::start(path, NetOptions::default()).unwrap()
}

/// Serves `count` connections: each is read to its end and its SHA-256
/// written back.
fn serve_digests(net: &Net, addr: SocketAddr, count: usize) -> tokio::task::JoinHandle<()> {
    let listener = net.listen(addr).unwrap();
    tokio::spawn(async move {
        let mut served = tokio::task::JoinSet::new();
        for _ in 0..count {
            let mut stream = listener.accept().await.unwrap();
            served.spawn(async move {
                let mut received = Vec::new();
                stream.read_to_end(&mut received).await.unwrap();
                stream.write_all(&Sha256::digest(&received)).await.unwrap();
                stream.shutdown().await.unwrap();
            });
        }
        while let Some(done) = served.join_next().await {
            done.unwrap();
        }
    })
}

/// Sends `data` from `local`, and returns the digest the receiver sent
/// back.
async fn send_for_digest(net: &Net, local: SocketAddr, to: SocketAddr, data: &[u8]) -> Vec<u8> {
    let mut stream = net.connect_from(local, to).await.unwrap();
    stream.write_all(data).await.unwrap();
    stream.shutdown().await.unwrap();
    let mut digest = Vec::new();
    stream.read_to_end(&mut digest).await.unwrap();
    digest
}

fn assert_clean(stats: &NetStats) {
    assert_eq!(stats.endpoint.total_dropped(), 0, "{stats:?}");
    assert_eq!(stats.unroutable, 0, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_senders_behind_one_inner_address_both_arrive() {
    let seed = seed();
    let (receiving, receiver_udp, addr) = receiver();
    let server = serve_digests(&receiving, addr, 2);
    let (a, b) = (sender(receiver_udp), sender(receiver_udp));
    let (data_a, data_b) = (content(seed, 4 << 20), content(seed ^ 1, 4 << 20));
    // Both inner sources are 127.0.0.1: only the ports and the outer
    // (UDP) addresses differ.
    let local_a: SocketAddr = "127.0.0.1:40001".parse().unwrap();
    let local_b: SocketAddr = "127.0.0.1:40002".parse().unwrap();
    let (digest_a, digest_b) = tokio::join!(
        send_for_digest(&a, local_a, addr, &data_a),
        send_for_digest(&b, local_b, addr, &data_b),
    );
    assert_eq!(digest_a, Sha256::digest(&data_a).to_vec(), "sender a's content");
    assert_eq!(digest_b, Sha256::digest(&data_b).to_vec(), "sender b's content");
    server.await.unwrap();
    for net in [a, b, receiving] {
        assert_clean(&net.close(Duration::from_secs(5)).await.unwrap());
    }
}

/// A receiver flooded with `count` datagrams of `flood`, then a real
/// sender, whose content must arrive; the receiver's figures once closed.
async fn send_after_a_flood(flood: Flood, count: usize) -> NetStats {
    let seed = seed();
    let (receiving, receiver_udp, addr) = receiver();
    let server = serve_digests(&receiving, addr, 1);
    tokio::task::spawn_blocking(move || flood::send(flood, seed, receiver_udp, count, PORT))
        .await
        .unwrap();
    let data = content(seed ^ 1, 1 << 20);
    let sending = sender(receiver_udp);
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let digest = send_for_digest(&sending, local, addr, &data).await;
    assert_eq!(
        digest,
        Sha256::digest(&data).to_vec(),
        "the real sender's content"
    );
    server.await.unwrap();
    sending.close(Duration::from_secs(5)).await.unwrap();
    receiving.close(Duration::from_secs(1)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_that_opens_nothing_is_not_remembered() {
    const FLOOD: usize = 100_000;
    let stats = send_after_a_flood(Flood::Garbage, FLOOD).await;
    let dropped = stats.endpoint.total_dropped();
    assert!(
        stats.packets_in > (FLOOD / 10) as u64 && dropped > 0,
        "the flood reached the endpoint: {stats:?}"
    );
    // Before the fix, one address per inner source: about FLOOD of them.
    assert!(
        stats.peers_held <= 2 * MAX_ANSWERS_WAITING + 1,
        "peer addresses held after {FLOOD} datagrams: {}",
        stats.peers_held
    );
}

/// 130 spoofed SYNs fill a backlog of 128: a real sender must still be
/// answered, not left waiting minutes for the half-open ones to expire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sender_gets_through_a_syn_flood() {
    let stats = send_after_a_flood(Flood::Syns, 10_000).await;
    let endpoint = &stats.endpoint;
    assert!(endpoint.syn_cookies_sent > 0, "the backlog filled: {stats:?}");
    assert_eq!(
        endpoint.syn_cookies_accepted, 1,
        "the real sender came in by a cookie: {stats:?}"
    );
    assert!(
        stats.peers_held <= 128 + 2 * MAX_ANSWERS_WAITING + 1,
        "what the flood left: {} peer addresses",
        stats.peers_held
    );
}
