//! Transparent addressing over a real path, with Linux TCP as the peer
//! (the namespaces of `common::Topology`):
//!
//! - a kernel client dials addresses that are not ours (10.20.x.x, routed
//!   by the kernel into our TUN device); our transparent listener answers
//!   as each of them, on any port, and the kernel sees its connection to
//!   the address it dialled;
//! - our stack connects to a kernel server *from* an address that is not
//!   ours (10.50.0.7, routed back to our TUN device); the kernel server
//!   sees that address as its peer;
//!
//! every byte checked both ways (SHA-256). Prefixes outside those the
//! endpoint may act as, and an empty list, are refused with errors that
//! say so.
//!
//! As root (CI) they run as they are; otherwise each runs itself again in
//! a user namespace of its own.

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

use common::*;
use scps_net::{Net, NetOptions, UdpPath};
use scps_proto::IpPrefix;
use sha2::{Digest, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const BYTES: usize = 1 << 20;

/// Servers the kernel client dials: none of them exists, our stack stands
/// in for all of them.
const STOOD_IN_FOR: [&str; 2] = ["10.20.5.5:5001", "10.20.200.9:80"];

/// The client address our stack opens connections from.
const CLIENT_STOOD_IN_FOR: &str = "10.50.0.7";

/// Our stack allowed to act as 10.20.0.0/16 and 10.50.0.0/16.
fn transparent_options() -> NetOptions {
    let mut options = NetOptions::default();
    options.endpoint.transparent = vec!["10.20.0.0/16".parse().unwrap(), "10.50.0.0/16".parse().unwrap()];
    options
}

/// Our own addresses, and the two prefixes the namespace `ours` routes
/// into the TUN device for the addresses our stack stands in for.
fn routed_prefixes() -> Vec<(IpAddr, u8)> {
    let mut prefixes = Topology::our_prefixes();
    prefixes.push(("10.20.0.1".parse().unwrap(), 16));
    prefixes.push(("10.50.0.1".parse().unwrap(), 16));
    prefixes
}

/// The kernel routes both stood-in-for prefixes towards `ours`.
fn route_through_ours(topology: &Topology) {
    topology.kernel.ip("route add 10.20.0.0/16 via 10.77.0.1");
    topology.kernel.ip("route add 10.50.0.0/16 via 10.77.0.1");
}

/// Sends `upload`, reads the reply to its end: (bytes, SHA-256) received.
fn kernel_exchange(mut stream: TcpStream, upload: Vec<u8>) -> (usize, Vec<u8>) {
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let writer = {
        let mut stream = stream.try_clone().unwrap();
        std::thread::spawn(move || {
            stream.write_all(&upload).unwrap();
            stream.shutdown(Shutdown::Write).unwrap();
        })
    };
    let mut received = Vec::new();
    stream.read_to_end(&mut received).unwrap();
    writer.join().unwrap();
    (received.len(), Sha256::digest(&received).to_vec())
}

fn digest(data: &[u8]) -> Vec<u8> {
    Sha256::digest(data).to_vec()
}

#[test]
fn transparent_listener_answers_as_the_addresses_the_kernel_dials() {
    if common::netns::in_user_namespace("transparent_listener_answers_as_the_addresses_the_kernel_dials") {
        return;
    }
    let seed = seed();
    let topology = Topology::new();
    route_through_ours(&topology);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let ours = start_our_stack(
        &topology,
        routed_prefixes(),
        transparent_options(),
        move |net| async move {
            let prefix: IpPrefix = "10.20.0.0/16".parse().unwrap();
            let listener = net.listen_transparent(&[prefix], None).unwrap();
            ready_tx.send(()).unwrap();
            let mut served = Vec::new();
            for _ in STOOD_IN_FOR {
                let mut stream = listener.accept().await.unwrap();
                let mut received = Vec::new();
                stream.read_to_end(&mut received).await.unwrap();
                // The reply is the upload reversed: it proves this
                // connection's bytes came back on it.
                received.reverse();
                stream.write_all(&received).await.unwrap();
                stream.shutdown().await.unwrap();
                served.push((stream.local_addr(), stream.peer_addr(), received.len()));
            }
            served
        },
    );
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("our listener is ready");
    for (i, dialled) in STOOD_IN_FOR.iter().enumerate() {
        let dialled: SocketAddr = dialled.parse().unwrap();
        let upload = content(seed ^ i as u64, BYTES);
        let mut expected = upload.clone();
        expected.reverse();
        let (len, received_digest, peer) = topology
            .kernel
            .spawn(move || {
                let stream = TcpStream::connect_timeout(&dialled, Duration::from_secs(10))
                    .expect("the kernel connects to the address it dialled");
                let peer = stream.peer_addr().unwrap();
                let (len, digest) = kernel_exchange(stream, upload);
                (len, digest, peer)
            })
            .join()
            .unwrap();
        assert_eq!(
            peer, dialled,
            "the kernel's connection is to the address it dialled"
        );
        assert_eq!(len, BYTES, "bytes the kernel received from {dialled}");
        assert_eq!(received_digest, digest(&expected), "content from {dialled}");
    }
    let served = ours.join().expect("our transparent server");
    let kernel_ip: IpAddr = "10.77.0.2".parse().unwrap();
    for ((local, peer, len), dialled) in served.iter().zip(STOOD_IN_FOR) {
        assert_eq!(
            local.to_string(),
            dialled,
            "our connection answers as the address dialled"
        );
        assert_eq!(peer.ip(), kernel_ip, "the client is the kernel");
        assert_eq!(*len, BYTES, "bytes we received on {local}");
    }
}

#[test]
fn connect_from_an_address_that_is_not_ours() {
    if common::netns::in_user_namespace("connect_from_an_address_that_is_not_ours") {
        return;
    }
    let seed = seed();
    let topology = Topology::new();
    route_through_ours(&topology);
    let server_addr: SocketAddr = "10.77.0.2:5001".parse().unwrap();
    let listener = topology
        .kernel
        .spawn(move || TcpListener::bind(server_addr))
        .join()
        .unwrap()
        .expect("kernel listener");
    let download = content(seed ^ 1, BYTES);
    let reply = download.clone();
    let kernel_server = std::thread::spawn(move || {
        let (mut stream, peer) = listener.accept().unwrap();
        let mut received = Vec::new();
        stream.read_to_end(&mut received).unwrap();
        stream.write_all(&reply).unwrap();
        stream.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        stream.read_to_end(&mut rest).unwrap();
        (peer, received.len(), digest(&received))
    });
    let upload = content(seed, BYTES);
    let upload_copy = upload.clone();
    let ours = start_our_stack(
        &topology,
        routed_prefixes(),
        transparent_options(),
        move |net| async move {
            let local = SocketAddr::new(CLIENT_STOOD_IN_FOR.parse().unwrap(), 0);
            let mut stream = net.connect_from(local, server_addr).await.unwrap();
            stream.write_all(&upload_copy).await.unwrap();
            stream.shutdown().await.unwrap();
            let mut received = Vec::new();
            stream.read_to_end(&mut received).await.unwrap();
            (stream.local_addr(), received)
        },
    );
    let (local, received) = ours.join().expect("our client");
    let (peer, uploaded, upload_digest) = kernel_server.join().unwrap();
    assert_eq!(local.ip().to_string(), CLIENT_STOOD_IN_FOR);
    assert_eq!(peer, local, "the kernel server sees the address we stood in for");
    assert_eq!(uploaded, BYTES, "bytes the kernel received");
    assert_eq!(upload_digest, digest(&upload), "content the kernel received");
    assert_eq!(received.len(), BYTES, "bytes we received");
    assert_eq!(digest(&received), digest(&download), "content we received");
}

/// No namespace needed: the checks come before any packet.
#[tokio::test]
async fn prefixes_outside_the_transparent_ones_are_refused() {
    let path = UdpPath::bind("127.0.0.1:0".parse().unwrap(), None).unwrap();
    let net = Net::start(path, transparent_options()).unwrap();
    let outside: IpPrefix = "10.30.0.0/16".parse().unwrap();
    let err = net
        .listen_transparent(&[outside], Some(80))
        .unwrap_err()
        .to_string();
    assert!(err.contains("10.30.0.0/16"), "{err}");
    let err = net.listen_transparent(&[], Some(80)).unwrap_err().to_string();
    assert!(err.contains("needs the prefixes"), "{err}");
    let from: SocketAddr = "10.30.0.7:0".parse().unwrap();
    let err = net
        .connect_from(from, "127.0.0.1:9".parse().unwrap())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("10.30.0.7"), "{err}");
    // Within the prefixes, the same calls are accepted; a second listener
    // for the same prefix and port is refused.
    let inside: IpPrefix = "10.20.0.0/16".parse().unwrap();
    let _listener = net.listen_transparent(&[inside], Some(80)).unwrap();
    let err = net
        .listen_transparent(&[inside], Some(80))
        .unwrap_err()
        .to_string();
    assert!(err.contains("already has a transparent listener"), "{err}");
}
