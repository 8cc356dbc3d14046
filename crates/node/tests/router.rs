//! The router as a node: longest-prefix forwarding between interfaces, and
//! what it refuses.

use std::net::IpAddr;

use scps_node::{Instant, InterfaceId, IpPrefix, Node, Route, Router, RouterError};

fn route(prefix: &str, interface: u16) -> Route {
    Route {
        prefix: prefix.parse().unwrap(),
        interface: InterfaceId(interface),
    }
}

/// An IPv4 (20-byte header, correct checksum) or IPv6 packet to `dst`
/// with `ttl` and a payload.
fn packet(dst: &str, ttl: u8, payload: &[u8]) -> Vec<u8> {
    match dst.parse::<IpAddr>().unwrap() {
        IpAddr::V4(dst) => {
            let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, ttl, 17, 0, 0, 192, 0, 2, 1];
            p[2..4].copy_from_slice(&((20 + payload.len()) as u16).to_be_bytes());
            p.extend_from_slice(&dst.octets());
            let sum: u32 = p
                .chunks(2)
                .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
                .sum();
            let folded = (sum & 0xffff) + (sum >> 16);
            p[10..12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
            p.extend_from_slice(payload);
            p
        }
        IpAddr::V6(dst) => {
            let mut p = vec![0x60, 0, 0, 0, 0, 0, 17, ttl];
            p[4..6].copy_from_slice(&(payload.len() as u16).to_be_bytes());
            p.extend_from_slice(&"fd00::1".parse::<std::net::Ipv6Addr>().unwrap().octets());
            p.extend_from_slice(&dst.octets());
            p.extend_from_slice(payload);
            p
        }
    }
}

/// Hands `packet` in on interface 0 and returns where it left, if it did.
fn forward(router: &mut Router, packet: &[u8]) -> Option<(InterfaceId, Vec<u8>)> {
    router.handle_packet(Instant::ZERO, InterfaceId(0), packet);
    let mut out = Vec::new();
    let interface = router.poll_transmit(Instant::ZERO, &mut out)?;
    assert_eq!(
        router.poll_transmit(Instant::ZERO, &mut out),
        None,
        "one packet in, one out"
    );
    Some((interface, out))
}

#[test]
fn the_longest_matching_prefix_chooses_the_interface() {
    let mut router = Router::new(
        4,
        [
            route("10.0.0.0/8", 0),
            route("10.2.0.0/16", 1),
            route("0.0.0.0/0", 2),
            route("fd00::/8", 3),
            route("fd00:2::/32", 1),
        ],
    )
    .unwrap();
    for (dst, expected) in [
        ("10.2.3.4", 1),
        ("10.9.0.1", 0),
        ("192.0.2.7", 2),
        ("fd00:2::9", 1),
        ("fd77::1", 3),
    ] {
        let (interface, _) = forward(&mut router, &packet(dst, 64, b"x")).unwrap();
        assert_eq!(interface, InterfaceId(expected), "to {dst}");
    }
    assert_eq!(router.stats().forwarded, 5);
    // No IPv6 default route: counted, not sent anywhere.
    assert_eq!(forward(&mut router, &packet("2001:db8::1", 64, b"x")), None);
    assert_eq!(router.stats().dropped("no_route"), 1);
}

#[test]
fn a_forwarded_packet_keeps_its_content_with_one_hop_less() {
    let mut router = Router::new(2, [route("10.2.0.0/16", 1)]).unwrap();
    let sent = packet("10.2.0.1", 64, b"the payload, untouched");
    let (_, out) = forward(&mut router, &sent).unwrap();
    assert_eq!(out.len(), sent.len());
    assert_eq!(out[8], 63, "TTL decremented");
    assert_eq!(&out[20..], &sent[20..]);
    // Forwarded again by a second router: still a valid header (its
    // checksum was updated), one more hop less.
    let (_, again) = forward(&mut router, &out).unwrap();
    assert_eq!(again[8], 62);

    let sent = packet("fd00::2", 9, b"v6 payload");
    let mut router = Router::new(1, [route("::/0", 0)]).unwrap();
    let (_, out) = forward(&mut router, &sent).unwrap();
    assert_eq!(out[7], 8, "hop limit decremented");
    assert_eq!(&out[40..], b"v6 payload");
}

#[test]
fn packets_a_router_must_not_forward_are_counted_by_cause() {
    let mut router = Router::new(2, [route("0.0.0.0/0", 1)]).unwrap();
    assert_eq!(forward(&mut router, &packet("10.2.0.1", 1, b"")), None);
    let mut corrupt = packet("10.2.0.1", 64, b"");
    corrupt[15] ^= 0x40;
    assert_eq!(forward(&mut router, &corrupt), None);
    assert_eq!(forward(&mut router, b"\x45garbage"), None);
    router.handle_packet(Instant::ZERO, InterfaceId(7), &packet("10.2.0.1", 64, b""));
    let stats = router.stats();
    assert_eq!(stats.forwarded, 0);
    assert_eq!(stats.dropped("ttl_expired"), 1);
    assert_eq!(stats.dropped("bad_checksum"), 1);
    assert_eq!(stats.dropped("truncated"), 1);
    assert_eq!(stats.dropped("no_such_interface"), 1);
}

#[test]
fn a_driver_that_never_drains_the_router_cannot_grow_it_without_bound() {
    let mut router = Router::new(1, [route("0.0.0.0/0", 0)]).unwrap();
    let p = packet("10.2.0.1", 64, b"");
    for _ in 0..10_000 {
        router.handle_packet(Instant::ZERO, InterfaceId(0), &p);
    }
    let queued = router.stats().forwarded;
    assert!(queued < 10_000, "queued {queued}");
    assert_eq!(router.stats().dropped("queue_full"), 10_000 - queued);
}

#[test]
fn a_route_table_that_cannot_work_is_refused() {
    assert_eq!(Router::new(0, []).unwrap_err(), RouterError::NoInterfaces);
    let err = Router::new(2, [route("10.0.0.0/8", 2)]).unwrap_err();
    assert!(matches!(err, RouterError::NoSuchInterface { .. }));
    assert!(err.to_string().contains("10.0.0.0/8"), "{err}");
    assert!(err.to_string().contains("interface 2"), "{err}");
    let err = Router::new(2, [route("10.0.0.0/8", 0), route("10.0.0.0/8", 1)]).unwrap_err();
    assert!(matches!(err, RouterError::Duplicate { .. }), "{err}");
    // The same route twice is no ambiguity.
    let router = Router::new(2, [route("10.0.0.0/8", 1), route("10.0.0.0/8", 1)]).unwrap();
    assert_eq!(router.routes().len(), 1);
    assert_eq!(router.lookup("10.1.1.1".parse().unwrap()), Some(InterfaceId(1)));
    assert_eq!(IpPrefix::host("10.1.1.1".parse().unwrap()).len(), 32);
}
