//! Bad input to the endpoint is counted by cause and dropped, never a
//! panic and never a change to a connection.

mod harness;

use harness::*;
use scps_proto::Config;

#[test]
fn malformed_and_foreign_packets_are_counted_by_cause() {
    let mut c = Established::new(Config::default());
    let good = c.peer_segment(c.snd_nxt).payload(b"data");
    let mut packet = Vec::new();
    let repr = scps_proto::wire::TcpRepr {
        src_port: THEIRS.port(),
        dst_port: OURS.port(),
        seq: good.seq,
        ack: good.ack,
        flags: good.flags,
        window: good.window,
        urgent: 0,
        options: good.options,
        payload: &good.payload,
    };
    scps_proto::wire::build_tcp_packet(THEIRS.ip(), OURS.ip(), 64, &repr, &mut packet).unwrap();
    let now = c.h.now;

    let mut corrupt = packet.clone();
    let last = corrupt.len() - 1;
    corrupt[last] ^= 0x40;
    c.h.ep.handle_packet(now, &corrupt);
    c.h.ep.handle_packet(now, &packet[..30]);
    c.h.ep.handle_packet(now, &[]);
    let mut udp = packet.clone();
    udp[9] = 17;
    // Fix the IPv4 header checksum so only the protocol is wrong.
    udp[10] = 0;
    udp[11] = 0;
    let sum = scps_node::checksum::Checksum::new();
    let mut sum = sum;
    sum.add_bytes(&udp[..20]);
    let checksum = sum.finish().to_be_bytes();
    udp[10..12].copy_from_slice(&checksum);
    c.h.ep.handle_packet(now, &udp);
    let mut elsewhere = Vec::new();
    scps_proto::wire::build_tcp_packet(
        THEIRS.ip(),
        "10.9.9.9".parse().unwrap(),
        64,
        &repr,
        &mut elsewhere,
    )
    .unwrap();
    c.h.ep.handle_packet(now, &elsewhere);

    let stats = c.h.ep.stats();
    assert_eq!(stats.dropped("bad_checksum"), 1);
    assert_eq!(stats.dropped("truncated"), 1, "{stats:?}");
    assert_eq!(stats.dropped("bad_ipv4_total_length"), 1, "{stats:?}");
    assert_eq!(stats.dropped("not_tcp"), 1);
    assert_eq!(stats.dropped("not_local"), 1);
    assert_eq!(stats.packets_received, 1 + 5, "the SYN-ACK and the five");
    assert!(c.output().is_empty(), "nothing answered");
    assert!(c.h.read(c.conn).is_empty(), "nothing delivered");
    // The genuine packet still works.
    c.h.ep.handle_packet(now, &packet);
    assert_eq!(c.h.read(c.conn), b"data");
}

#[test]
fn random_garbage_never_panics_and_is_always_counted() {
    let mut h = Harness::new(Config::default());
    h.ep.listen(OURS, None).unwrap();
    // A fixed-seed xorshift keeps this reproducible without extra crates.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000 {
        let len = (next() % 120) as usize;
        let mut packet: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if let Some(first) = packet.first_mut() {
            // Plausible version and header-length bytes, to get past the
            // first check.
            *first = [0x45, 0x46, 0x4f, 0x60][(next() % 4) as usize];
        }
        h.ep.handle_packet(h.now, &packet);
    }
    let stats = h.ep.stats();
    assert_eq!(stats.packets_received, 20_000);
    assert_eq!(
        stats.total_dropped(),
        20_000,
        "every packet dropped and counted: {stats:?}"
    );
    h.nothing();
}

#[test]
fn as_a_node_the_endpoint_has_one_interface() {
    use scps_node::{InterfaceId, Node};
    let mut c = Established::new(Config::default());
    let now = c.h.now;
    let mut packet = Vec::new();
    let good = c.peer_segment(c.snd_nxt).payload(b"node");
    let repr = scps_proto::wire::TcpRepr {
        src_port: THEIRS.port(),
        dst_port: OURS.port(),
        seq: good.seq,
        ack: good.ack,
        flags: good.flags,
        window: good.window,
        urgent: 0,
        options: good.options,
        payload: &good.payload,
    };
    scps_proto::wire::build_tcp_packet(THEIRS.ip(), OURS.ip(), 64, &repr, &mut packet).unwrap();
    assert_eq!(Node::interface_count(&c.h.ep), 1);
    // On an interface it does not have: counted, not delivered.
    Node::handle_packet(&mut c.h.ep, now, InterfaceId(1), &packet);
    assert_eq!(c.h.ep.stats().dropped("no_such_interface"), 1);
    assert!(c.h.read(c.conn).is_empty());
    // On its interface: delivered, and the ACK leaves by the same one.
    Node::handle_packet(&mut c.h.ep, now, scps_proto::endpoint::INTERFACE, &packet);
    assert_eq!(c.h.read(c.conn), b"node");
    Node::handle_timeout(&mut c.h.ep, now + std::time::Duration::from_secs(1));
    let mut out = Vec::new();
    assert_eq!(
        Node::poll_transmit(&mut c.h.ep, now + std::time::Duration::from_secs(1), &mut out),
        Some(InterfaceId(0)),
        "the delayed ACK"
    );
}
