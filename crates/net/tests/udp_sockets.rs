//! Kernel UDP sockets as a path of IP/UDP packets (`UdpSocketsPath`),
//! under a node hosted by `NodeHost` that answers every datagram with its
//! own payload from the address it was sent to.
//!
//! - A datagram to a socket bound to a wildcard address reaches the node
//!   as a packet from the sender to the address the kernel answers from,
//!   with the socket's port; the node's answer leaves by that socket, and
//!   the sender hears it from there. The same over IPv6. Without a
//!   capture, the packet is addressed to the wildcard itself, and the
//!   answer from it leaves by the same socket.
//! - A packet from an address and port no socket is bound to is counted
//!   and dropped; a send the kernel refuses is kept as the last send
//!   error, and the packets after it still go out.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use scps_net::{HostOptions, NodeHost, UdpSocketsPath};
use scps_node::{Instant, InterfaceId, Node, udp};

/// Answers each datagram with its payload, from where it was sent to;
/// sends what it is given besides.
#[derive(Debug, Default)]
struct Echo {
    heard: Vec<(SocketAddr, SocketAddr, Vec<u8>)>,
    out: Vec<Vec<u8>>,
}

impl Node for Echo {
    fn interface_count(&self) -> usize {
        1
    }

    fn handle_packet(&mut self, _now: Instant, _interface: InterfaceId, packet: &[u8]) {
        let datagram = udp::unwrap(packet).expect("an intact IP/UDP packet");
        self.heard
            .push((datagram.src, datagram.dst, datagram.payload.to_vec()));
        let mut answer = Vec::new();
        udp::wrap(datagram.dst, datagram.src, 0, datagram.payload, &mut answer).unwrap();
        self.out.push(answer);
    }

    fn poll_transmit(&mut self, _now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        *buf = self.out.pop()?;
        Some(InterfaceId(0))
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }

    fn handle_timeout(&mut self, _now: Instant) {}
}

fn nonblocking(addr: &str) -> UdpSocket {
    let socket = UdpSocket::bind(addr).unwrap();
    socket.set_nonblocking(true).unwrap();
    socket
}

/// A peer's socket, which waits at most 5 s for an answer.
fn peer(addr: &str) -> UdpSocket {
    let socket = UdpSocket::bind(addr).unwrap();
    socket.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    socket
}

/// Sends `payload` from `peer` to the path's socket at `to`; checks what
/// the node heard and what the peer hears back.
async fn echoes(host: &NodeHost<Echo>, peer: &UdpSocket, to: SocketAddr, heard_at: SocketAddr) {
    peer.send_to(b"hello", to).unwrap();
    let heard = host.wait_for(|node| node.heard.pop()).await.unwrap();
    assert_eq!(heard, (peer.local_addr().unwrap(), heard_at, b"hello".to_vec()));
    let mut buf = [0; 16];
    let (len, from) = tokio::task::block_in_place(|| peer.recv_from(&mut buf)).unwrap();
    assert_eq!((&buf[..len], from), (&b"hello"[..], heard_at));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wildcard_socket_hands_the_node_packets_to_the_address_it_answers_from() {
    let path = UdpSocketsPath::new(vec![nonblocking("0.0.0.0:0")]).unwrap();
    let port = path.locals()[0].port();
    let host = NodeHost::start(Echo::default(), vec![Box::new(path)], HostOptions::default()).unwrap();
    let at: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    echoes(&host, &peer("127.0.0.1:0"), at, at).await;
    let stats = host.stop().await.unwrap();
    assert_eq!(
        (stats.interfaces[0].packets_in, stats.interfaces[0].packets_out),
        (1, 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn uncaptured_a_wildcard_socket_hands_the_node_its_own_address() {
    let path = UdpSocketsPath::new(vec![nonblocking("0.0.0.0:0")])
        .unwrap()
        .uncaptured();
    let bound = path.locals()[0];
    let host = NodeHost::start(Echo::default(), vec![Box::new(path)], HostOptions::default()).unwrap();
    let peer = peer("127.0.0.1:0");
    peer.send_to(b"hello", ("127.0.0.1", bound.port())).unwrap();
    let (from, to, _) = host.wait_for(|node| node.heard.pop()).await.unwrap();
    assert_eq!((from, to), (peer.local_addr().unwrap(), bound));
    // Answered from the wildcard: by the same socket, from the address
    // the kernel picks.
    let mut buf = [0; 16];
    let (len, from) = tokio::task::block_in_place(|| peer.recv_from(&mut buf)).unwrap();
    assert_eq!((&buf[..len], from.port()), (&b"hello"[..], bound.port()));
    host.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ipv6_socket_does_the_same_over_ipv6() {
    let Ok(socket) = UdpSocket::bind("[::1]:0") else {
        println!("skipped: no IPv6 loopback here");
        return;
    };
    socket.set_nonblocking(true).unwrap();
    let at = socket.local_addr().unwrap();
    let path = UdpSocketsPath::new(vec![socket]).unwrap();
    let host = NodeHost::start(Echo::default(), vec![Box::new(path)], HostOptions::default()).unwrap();
    echoes(&host, &peer("[::1]:0"), at, at).await;
    host.stop().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn packets_of_no_socket_are_counted_and_refused_sends_are_kept() {
    let socket = nonblocking("127.0.0.1:0");
    let at = socket.local_addr().unwrap();
    let path = UdpSocketsPath::new(vec![socket]).unwrap();
    let errors = path.send_errors();
    let host = NodeHost::start(Echo::default(), vec![Box::new(path)], HostOptions::default()).unwrap();
    let receiver = peer("127.0.0.1:0");
    let to = receiver.local_addr().unwrap();
    let packet = |src: SocketAddr, dst: SocketAddr| {
        let mut packet = Vec::new();
        udp::wrap(src, dst, 0, b"sent", &mut packet).unwrap();
        packet
    };
    let elsewhere: SocketAddr = format!("127.0.0.1:{}", at.port() ^ 1).parse().unwrap();
    // Broadcast without SO_BROADCAST: the kernel refuses the send.
    let broadcast: SocketAddr = "255.255.255.255:9".parse().unwrap();
    host.with(|node| {
        // Sent last to first.
        node.out.push(packet(at, to));
        node.out.push(packet(at, broadcast));
        node.out.push(packet(elsewhere, to));
    });
    let mut buf = [0; 16];
    let (len, from) = tokio::task::block_in_place(|| receiver.recv_from(&mut buf)).unwrap();
    assert_eq!((&buf[..len], from), (&b"sent"[..], at));
    assert!(
        errors.last().is_some_and(|e| e.contains("ermission")),
        "{:?}",
        errors.last()
    );
    let stats = host.stop().await.unwrap();
    assert_eq!(stats.interfaces[0].unroutable, 1);
}
