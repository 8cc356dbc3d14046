//! Floods of a UDP receiver (spoofed SYNs, datagrams that open no
//! connection): shared by the tests that bound what the receiver keeps and
//! by the example that measures its memory and a real transfer meanwhile.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_node::checksum::Checksum;
use scps_proto::wire::{TcpFlags, TcpRepr, build_tcp_packet};

/// What a flood sends, each datagram from a different random inner source
/// in 10.0.0.0/8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flood {
    /// Datagrams no connection could take: IP packets that are not TCP,
    /// TCP segments with a bad checksum, and well-formed ACKs and SYNs to
    /// ports other than the listener's (the endpoint answers those with
    /// resets).
    Garbage,
    /// Well-formed SYNs to the listener's port, from sources that never
    /// answer: a SYN flood.
    Syns,
}

/// Sends `count` datagrams of `flood` to the UDP path at `to`, whose
/// endpoint listens on `listening`. Datagrams a full socket buffer refuses
/// are dropped, as in a real flood.
pub fn send(flood: Flood, seed: u64, to: SocketAddr, count: usize, listening: u16) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let dst = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut packet = Vec::new();
    for i in 0..count {
        let src = IpAddr::V4(Ipv4Addr::from(rng.random::<u32>() & 0x00ff_ffff | 0x0a00_0000));
        let (flags, dst_port) = match flood {
            Flood::Syns => (TcpFlags::SYN, listening),
            Flood::Garbage if i % 2 == 0 => (TcpFlags::ACK, other_port(listening, i)),
            Flood::Garbage => (TcpFlags::SYN, other_port(listening, i)),
        };
        let segment = TcpRepr {
            src_port: rng.random_range(1024..65535),
            dst_port,
            seq: rng.random(),
            ack: rng.random(),
            flags,
            window: 1000,
            urgent: 0,
            options: Default::default(),
            payload: &[],
        };
        build_tcp_packet(src, dst, 64, &segment, &mut packet).unwrap();
        if flood == Flood::Garbage {
            match i % 4 {
                // Not TCP: the protocol byte says UDP.
                0 => {
                    packet[9] = 17;
                    packet[10..12].fill(0);
                    let mut sum = Checksum::new();
                    sum.add_bytes(&packet[..20]);
                    packet[10..12].copy_from_slice(&sum.finish().to_be_bytes());
                }
                // A TCP checksum that does not match.
                1 => packet[36] ^= 0xff,
                _ => {}
            }
        }
        let _ = socket.send_to(&packet, to);
    }
}

fn other_port(listening: u16, i: usize) -> u16 {
    listening.wrapping_add(1 + (i % 1000) as u16)
}
