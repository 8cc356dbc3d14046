//! Datagrams no connection of a UDP receiver could take, as a flood
//! (issue 12 defect 2): shared by the test that bounds what the receiver
//! remembers and by the example that measures its memory.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_proto::wire::{TcpFlags, TcpRepr, build_tcp_packet};

/// Sends `count` datagrams to `to`, each from a different random inner
/// source in 10.0.0.0/8: IP packets that are not TCP, TCP segments with a
/// bad checksum, and well-formed ACKs and SYNs to ports other than
/// `listening` (the endpoint answers those with resets). Datagrams a full
/// socket buffer refuses are dropped, as in a real flood.
pub fn send(seed: u64, to: SocketAddr, count: usize, listening: u16) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let dst = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut packet = Vec::new();
    for i in 0..count {
        let src = IpAddr::V4(Ipv4Addr::from(rng.random::<u32>() & 0x00ff_ffff | 0x0a00_0000));
        let flags = if i % 2 == 0 { TcpFlags::ACK } else { TcpFlags::SYN };
        let segment = TcpRepr {
            src_port: rng.random_range(1024..65535),
            dst_port: listening.wrapping_add(1 + (i % 1000) as u16),
            seq: rng.random(),
            ack: rng.random(),
            flags,
            window: 1000,
            urgent: 0,
            options: Default::default(),
            payload: &[],
        };
        build_tcp_packet(src, dst, 64, &segment, &mut packet).unwrap();
        match i % 4 {
            // Not TCP: the protocol byte says UDP.
            0 => packet[9] = 17,
            // A TCP checksum that does not match.
            1 => packet[36] ^= 0xff,
            _ => {}
        }
        let _ = socket.send_to(&packet, to);
    }
}
