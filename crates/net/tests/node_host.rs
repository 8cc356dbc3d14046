//! A node other than an endpoint on real packet paths: the router of
//! `scps_node` hosted by `NodeHost`, one path per interface.
//!
//! - Between two UDP links on loopback, our client and our server (inner
//!   addresses in two different prefixes) exchange seeded content both
//!   ways through it, checked by SHA-256; the router forwarded every
//!   packet, each interface counted what crossed it, and the capture at
//!   one interface holds exactly those packets.
//! - Between a TUN device and a UDP link (two kinds of path side by side),
//!   Linux TCP in a namespace reaches our server behind the router.
//! - A node given the wrong number of paths, or a capture at an interface
//!   it does not have, is refused before anything runs.

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use common::{Topology, content, seed};
use scps_net::{BoxedPath, HostOptions, Net, NetError, NetOptions, NodeHost, TunPath, UdpPath};
use scps_node::{InterfaceId, Route, Router};
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PORT: u16 = 5001;

fn route(prefix: &str, interface: u16) -> Route {
    Route {
        prefix: prefix.parse().unwrap(),
        interface: InterfaceId(interface),
    }
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// Packets in a pcap file (classic format: a 24-byte file header whose
/// magic number gives the byte order, then each record's 16-byte header,
/// whose third word is the stored length).
fn pcap_packets(file: &Path) -> u64 {
    let bytes = std::fs::read(file).unwrap();
    let word = |at: usize| -> [u8; 4] { bytes[at..at + 4].try_into().unwrap() };
    let little_endian = matches!(word(0), [0x4d, 0x3c, 0xb2, 0xa1] | [0xd4, 0xc3, 0xb2, 0xa1]);
    let mut at = 24;
    let mut count = 0;
    while at + 16 <= bytes.len() {
        let stored = if little_endian {
            u32::from_le_bytes(word(at + 8))
        } else {
            u32::from_be_bytes(word(at + 8))
        } as usize;
        at += 16 + stored;
        count += 1;
    }
    assert_eq!(at, bytes.len(), "the capture ends with a whole record");
    count
}

/// Writes `upload` and reads to the end, both at once.
async fn exchange(stream: &mut scps_net::Stream, upload: &[u8]) -> Vec<u8> {
    let (mut reader, mut writer) = tokio::io::split(stream);
    let send = async {
        writer.write_all(upload).await.unwrap();
        writer.shutdown().await.unwrap();
    };
    let receive = async {
        let mut received = Vec::new();
        reader.read_to_end(&mut received).await.unwrap();
        received
    };
    tokio::join!(send, receive).1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_between_two_udp_links_carries_both_ways_byte_for_byte() {
    let seed = seed();
    let upload = content(seed, 2 << 20);
    let download = content(seed ^ 1, 1 << 20);

    // Server (10.2.0.2) <- link B -> router <- link A -> client (10.1.0.2);
    // the router's link-A end learns the client's outer address from what
    // it hears, its link-B end is pointed at the server.
    let server_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None)
        .unwrap()
        .with_inner_addrs(vec![ip("10.2.0.2")]);
    let server_udp = server_path.local_addr().unwrap();
    let link_b = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(server_udp)).unwrap();
    let link_a = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let router_udp = link_a.local_addr().unwrap();
    let client_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), Some(router_udp))
        .unwrap()
        .with_inner_addrs(vec![ip("10.1.0.2")]);

    let router = Router::new(2, [route("10.1.0.0/16", 0), route("10.2.0.0/16", 1)]).unwrap();
    let capture = std::env::temp_dir().join(format!("scps-node-host-{}.pcap", std::process::id()));
    let options = HostOptions {
        captures: vec![(InterfaceId(1), capture.clone())],
    };
    let paths: Vec<BoxedPath> = vec![Box::new(link_a), Box::new(link_b)];
    let host = NodeHost::start(router, paths, options).unwrap();

    let server_net = Net::start(server_path, NetOptions::default()).unwrap();
    let client_net = Net::start(client_path, NetOptions::default()).unwrap();
    let server_addr = SocketAddr::new(ip("10.2.0.2"), PORT);
    let listener = server_net.listen(server_addr).unwrap();
    let reply = download.clone();
    let server = tokio::spawn(async move {
        let mut stream = listener.accept().await.unwrap();
        let peer = stream.peer_addr();
        let received = exchange(&mut stream, &reply).await;
        (peer, received)
    });
    let mut stream = client_net.connect(server_addr).await.unwrap();
    assert_eq!(stream.local_addr().ip(), ip("10.1.0.2"));
    let received = exchange(&mut stream, &upload).await;
    let (peer, uploaded) = server.await.unwrap();
    assert_eq!(
        peer,
        stream.local_addr(),
        "the server sees the client's own address"
    );
    assert_eq!(uploaded.len(), upload.len(), "bytes the server received");
    assert_eq!(
        Sha256::digest(&uploaded),
        Sha256::digest(&upload),
        "content the server received"
    );
    assert_eq!(received.len(), download.len(), "bytes the client received");
    assert_eq!(
        Sha256::digest(&received),
        Sha256::digest(&download),
        "content the client received"
    );
    drop(stream);
    let client_stats = client_net.close(Duration::from_secs(5)).await.unwrap();
    server_net.close(Duration::from_secs(5)).await.unwrap();

    let router_stats = host.with(|router| router.stats().clone());
    let stats = host.stop().await.unwrap();
    println!("{router_stats:?}\n{stats:?}");
    assert!(router_stats.drops.is_empty(), "nothing dropped: {router_stats:?}");
    let [a, b] = &stats.interfaces[..] else {
        panic!("two interfaces: {stats:?}")
    };
    assert_eq!(router_stats.forwarded, a.packets_in + b.packets_in);
    assert_eq!(
        a.packets_in, b.packets_out,
        "what came from the client went to the server"
    );
    assert_eq!(b.packets_in, a.packets_out, "and back");
    assert_eq!(
        a.packets_in, client_stats.packets_out,
        "every packet the client sent"
    );
    assert_eq!(stats.misdirected, 0);
    assert_eq!(
        pcap_packets(&capture),
        b.packets_in + b.packets_out,
        "the capture at interface 1 holds what crossed it"
    );
    std::fs::remove_file(&capture).unwrap();
}

#[tokio::test]
async fn a_node_with_the_wrong_paths_is_refused_before_it_runs() {
    let router = || Router::new(2, [route("10.1.0.0/16", 0), route("10.2.0.0/16", 1)]).unwrap();
    let udp = || -> BoxedPath { Box::new(UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap()) };

    let err = NodeHost::start(router(), vec![udp()], HostOptions::default()).unwrap_err();
    assert!(
        matches!(
            err,
            NetError::InterfacesMismatch {
                interfaces: 2,
                paths: 1
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("2 interfaces but 1 paths"), "{err}");

    let options = HostOptions {
        captures: vec![(
            InterfaceId(5),
            std::env::temp_dir().join("scps-never-written.pcap"),
        )],
    };
    let err = NodeHost::start(router(), vec![udp(), udp()], options).unwrap_err();
    assert!(
        err.to_string().contains("no interface 5 on the node: it has 2"),
        "{err}"
    );
}

/// Kernel TCP in `kernel` dials 10.79.0.2, routed into our TUN device in
/// `ours`: interface 0 of the router. The router forwards it over a UDP
/// link (interface 1) to our server, whose inner address is 10.79.0.2,
/// and the answers back into the TUN device.
#[test]
fn router_between_a_tun_device_and_a_udp_link_carries_kernel_tcp() {
    if common::netns::in_user_namespace("router_between_a_tun_device_and_a_udp_link_carries_kernel_tcp") {
        return;
    }
    let seed = seed();
    let topology = Topology::new();
    topology.kernel.ip("route add 10.79.0.0/24 via 10.77.0.1");
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let ours = topology.ours.spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let tun = TunPath::create(common::TUN_NAME, &[(ip("10.79.0.1"), 24)], 1500).unwrap();
            let server_path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None)
                .unwrap()
                .with_inner_addrs(vec![ip("10.79.0.2")]);
            let link = UdpPath::bind(
                "127.0.0.1:0".parse().unwrap(),
                Some(server_path.local_addr().unwrap()),
            )
            .unwrap();
            let router = Router::new(2, [route("10.77.0.0/24", 0), route("10.79.0.0/24", 1)]).unwrap();
            let host = NodeHost::start(
                router,
                vec![Box::new(tun), Box::new(link)],
                HostOptions::default(),
            )
            .unwrap();
            let server_net = Net::start(server_path, NetOptions::default()).unwrap();
            let listener = server_net.listen(SocketAddr::new(ip("10.79.0.2"), PORT)).unwrap();
            ready_tx.send(()).unwrap();
            let mut stream = listener.accept().await.unwrap();
            let peer = stream.peer_addr();
            let mut received = Vec::new();
            stream.read_to_end(&mut received).await.unwrap();
            // The reply is the upload reversed: these bytes came back on
            // this connection.
            received.reverse();
            stream.write_all(&received).await.unwrap();
            stream.shutdown().await.unwrap();
            drop(stream);
            server_net.close(Duration::from_secs(5)).await.unwrap();
            let forwarded = host.with(|router| router.stats().clone());
            host.stop().await.unwrap();
            (peer, received.len(), forwarded)
        })
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("our server is ready");
    let upload = content(seed, 1 << 20);
    let mut expected = upload.clone();
    expected.reverse();
    let received = topology
        .kernel
        .spawn(move || {
            let server: SocketAddr = "10.79.0.2:5001".parse().unwrap();
            let mut stream = TcpStream::connect_timeout(&server, Duration::from_secs(10)).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            let mut writer = stream.try_clone().unwrap();
            let sending = std::thread::spawn(move || {
                writer.write_all(&upload).unwrap();
                writer.shutdown(Shutdown::Write).unwrap();
            });
            let mut received = Vec::new();
            stream.read_to_end(&mut received).unwrap();
            sending.join().unwrap();
            received
        })
        .join()
        .unwrap();
    let (peer, uploaded, router_stats) = ours.join().expect("our router and server");
    assert_eq!(peer.ip(), ip("10.77.0.2"), "the server sees the kernel client");
    assert_eq!(uploaded, expected.len(), "bytes our server received");
    assert_eq!(received.len(), expected.len(), "bytes the kernel received");
    assert_eq!(
        Sha256::digest(&received),
        Sha256::digest(&expected),
        "content the kernel received"
    );
    // The kernel's own IPv6 housekeeping on the new device (MLD reports
    // with a hop limit of 1, router solicitations) reaches the router too,
    // and is dropped as expired or unroutable: the content checks above
    // say that nothing of the transfer was.
    assert!(router_stats.forwarded > 1000, "{router_stats:?}");
    assert_eq!(router_stats.dropped("bad_checksum"), 0, "{router_stats:?}");
}
