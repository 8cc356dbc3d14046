//! What a node between two paths costs, now that the real-network driver
//! hosts a node over several packet paths (docs/BENCHMARKS.md, "Real I/O:
//! one connection on real packet paths"): one connection of ours moves
//! BYTES over UDP on loopback, first straight from client to server, then
//! through the router of `scps_node` hosted by `NodeHost` on two UDP
//! links, in one process (both endpoints and the router share the
//! runtime's two worker threads). Every byte is checked against the
//! pattern it was written from. The limit a routed run is judged against
//! is the direct one.
//!
//!     cargo run --release -p scps-net --example router_throughput [MEGABYTES] [ROUNDS]

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use scps_net::{BoxedPath, HostOptions, Net, NetOptions, NodeHost, UdpPath};
use scps_node::{InterfaceId, Route, Router};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PORT: u16 = 5001;
const CHUNK: usize = 256 * 1024;

/// The byte at `offset` of the stream: cheap to write and to check, and
/// different at every offset of a 256-byte cycle and across cycles.
fn pattern(offset: u64) -> u8 {
    (offset as u8) ^ ((offset >> 8) as u8).rotate_left(3)
}

fn udp(bind: &str, peer: Option<SocketAddr>, inner: &str) -> UdpPath {
    UdpPath::bind(bind.parse().unwrap(), peer)
        .unwrap()
        .with_inner_addrs(vec![inner.parse().unwrap()])
}

/// Moves `bytes` from `client` to `server` (listening at `to`) and
/// returns the rate, after checking every byte.
async fn transfer(client: &Net, server: &Net, to: SocketAddr, bytes: u64) -> f64 {
    let listener = server.listen(to).unwrap();
    let receiving = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let mut buf = vec![0u8; CHUNK];
        let mut offset = 0u64;
        loop {
            let n = stream.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            for (i, &byte) in buf[..n].iter().enumerate() {
                assert_eq!(byte, pattern(offset + i as u64), "byte {}", offset + i as u64);
            }
            offset += n as u64;
        }
        offset
    });
    let started = Instant::now();
    let mut stream = client.connect(to).await.unwrap();
    let mut chunk = vec![0u8; CHUNK];
    let mut offset = 0u64;
    while offset < bytes {
        let n = CHUNK.min((bytes - offset) as usize);
        for (i, byte) in chunk[..n].iter_mut().enumerate() {
            *byte = pattern(offset + i as u64);
        }
        stream.write_all(&chunk[..n]).await.unwrap();
        offset += n as u64;
    }
    stream.shutdown().await.unwrap();
    let received = receiving.await.unwrap();
    let took = started.elapsed();
    assert_eq!(received, bytes, "bytes received");
    bytes as f64 * 8.0 / took.as_secs_f64() / 1e9
}

async fn direct(bytes: u64) -> f64 {
    let server_path = udp("127.0.0.1:0", None, "10.2.0.2");
    let server_udp = server_path.local_addr().unwrap();
    let server = Net::start(server_path, NetOptions::default()).unwrap();
    let client = Net::start(
        udp("127.0.0.1:0", Some(server_udp), "10.1.0.2"),
        NetOptions::default(),
    )
    .unwrap();
    let rate = transfer(&client, &server, to(), bytes).await;
    client.close(Duration::from_secs(5)).await.unwrap();
    server.close(Duration::from_secs(5)).await.unwrap();
    rate
}

async fn routed(bytes: u64) -> (f64, u64) {
    let server_path = udp("127.0.0.1:0", None, "10.2.0.2");
    let server_udp = server_path.local_addr().unwrap();
    let link_b = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(server_udp)).unwrap();
    let link_a = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let router_udp = link_a.local_addr().unwrap();
    let routes = [("10.1.0.0/16", 0), ("10.2.0.0/16", 1)].map(|(prefix, interface)| Route {
        prefix: prefix.parse().unwrap(),
        interface: InterfaceId(interface),
    });
    let router = Router::new(2, routes).unwrap();
    let paths: Vec<BoxedPath> = vec![Box::new(link_a), Box::new(link_b)];
    let host = NodeHost::start(router, paths, HostOptions::default()).unwrap();
    let server = Net::start(server_path, NetOptions::default()).unwrap();
    let client = Net::start(
        udp("127.0.0.1:0", Some(router_udp), "10.1.0.2"),
        NetOptions::default(),
    )
    .unwrap();
    let rate = transfer(&client, &server, to(), bytes).await;
    client.close(Duration::from_secs(5)).await.unwrap();
    server.close(Duration::from_secs(5)).await.unwrap();
    let forwarded = host.with(|router| router.stats().forwarded);
    host.stop().await.unwrap();
    (rate, forwarded)
}

fn to() -> SocketAddr {
    SocketAddr::new(IpAddr::from([10, 2, 0, 2]), PORT)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut args = std::env::args().skip(1);
    let megabytes: u64 = args
        .next()
        .map_or(1000, |n| n.parse().expect("MEGABYTES is a number"));
    let rounds: usize = args.next().map_or(3, |n| n.parse().expect("ROUNDS is a number"));
    let bytes = megabytes * 1_000_000;
    println!("one connection, {megabytes} MB over UDP on loopback, every byte checked");
    for round in 1..=rounds {
        let direct = direct(bytes).await;
        let (routed, forwarded) = routed(bytes).await;
        println!(
            "round {round}: direct {direct:.2} Gbit/s, through the router {routed:.2} Gbit/s \
             ({forwarded} packets forwarded): {:.2} of direct (the limit)",
            routed / direct
        );
    }
}
