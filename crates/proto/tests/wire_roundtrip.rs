//! Property tests of the wire module: what we build we parse back unchanged,
//! no input makes a parser panic, and single-bit corruption is never
//! accepted as a different segment.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use scps_proto::wire::{
    IpRepr, Ipv4Repr, Ipv6Repr, MAX_OPTIONS_LEN, SackBlock, ScpsCapabilities, Snack, TcpFlags, TcpOptions,
    TcpRepr, Timestamps, WireError, build_tcp_packet, parse_tcp_packet,
};

/// One option to try adding to a set.
#[derive(Debug, Clone)]
enum Item {
    Mss(u16),
    WindowScale(u8),
    SackPermitted,
    Sack(Vec<SackBlock>),
    Timestamps(Timestamps),
    Caps(ScpsCapabilities),
    Snack(Snack),
    RecordBoundary,
    CorruptionExperienced,
}

fn item() -> impl Strategy<Value = Item> {
    let block = (any::<u32>(), any::<u32>()).prop_map(|(left, right)| SackBlock { left, right });
    prop_oneof![
        any::<u16>().prop_map(Item::Mss),
        any::<u8>().prop_map(Item::WindowScale),
        Just(Item::SackPermitted),
        prop::collection::vec(block, 1..=4).prop_map(Item::Sack),
        (any::<u32>(), any::<u32>()).prop_map(|(tsval, tsecr)| Item::Timestamps(Timestamps { tsval, tsecr })),
        (any::<u8>(), any::<u8>())
            .prop_map(|(bitmap, id)| Item::Caps(ScpsCapabilities::from_bitmap(bitmap, id))),
        (any::<u16>(), any::<u16>()).prop_map(|(hole_offset, hole_size)| Item::Snack(Snack {
            hole_offset,
            hole_size
        })),
        Just(Item::RecordBoundary),
        Just(Item::CorruptionExperienced),
    ]
}

fn apply(opts: &mut TcpOptions, item: &Item) {
    match item {
        Item::Mss(v) => opts.mss = Some(*v),
        Item::WindowScale(v) => opts.window_scale = Some(*v),
        Item::SackPermitted => opts.sack_permitted = true,
        Item::Sack(blocks) => {
            opts.sack_blocks.clear();
            for b in blocks {
                opts.sack_blocks.push(*b);
            }
        }
        Item::Timestamps(ts) => opts.timestamps = Some(*ts),
        Item::Caps(caps) => opts.scps_capabilities = Some(*caps),
        Item::Snack(s) => {
            opts.snacks.push(*s);
        }
        Item::RecordBoundary => opts.record_boundary = true,
        Item::CorruptionExperienced => opts.corruption_experienced = true,
    }
}

/// A random subset of options that fits a header: items are added in a
/// random order and each one that would overflow 40 bytes is left out.
fn options() -> impl Strategy<Value = TcpOptions> {
    prop::collection::vec(item(), 0..14).prop_map(|items| {
        let mut opts = TcpOptions::default();
        for item in &items {
            let before = opts;
            apply(&mut opts, item);
            if opts.encoded_len() > MAX_OPTIONS_LEN {
                opts = before;
            }
        }
        opts
    })
}

/// The fields of a TcpRepr except its payload.
#[derive(Debug, Clone)]
struct Fields {
    src_port: u16,
    dst_port: u16,
    seq: u32,
    ack: u32,
    flags: u16,
    window: u16,
    urgent: u16,
    options: TcpOptions,
}

fn fields() -> impl Strategy<Value = Fields> {
    (
        any::<u16>(),
        any::<u16>(),
        any::<u32>(),
        any::<u32>(),
        0u16..0x200,
        any::<u16>(),
        any::<u16>(),
        options(),
    )
        .prop_map(
            |(src_port, dst_port, seq, ack, flags, window, urgent, options)| Fields {
                src_port,
                dst_port,
                seq,
                ack,
                flags,
                window,
                urgent,
                options,
            },
        )
}

impl Fields {
    fn repr<'a>(&self, payload: &'a [u8]) -> TcpRepr<'a> {
        TcpRepr {
            src_port: self.src_port,
            dst_port: self.dst_port,
            seq: self.seq,
            ack: self.ack,
            flags: TcpFlags::from_bits(self.flags),
            window: self.window,
            urgent: self.urgent,
            options: self.options,
            payload,
        }
    }
}

fn addresses() -> impl Strategy<Value = (IpAddr, IpAddr)> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<[u8; 4]>())
            .prop_map(|(s, d)| (IpAddr::V4(Ipv4Addr::from(s)), IpAddr::V4(Ipv4Addr::from(d)))),
        (any::<[u8; 16]>(), any::<[u8; 16]>())
            .prop_map(|(s, d)| (IpAddr::V6(Ipv6Addr::from(s)), IpAddr::V6(Ipv6Addr::from(d)))),
    ]
}

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..1500)
}

/// Random bytes that often look like the start of an IP packet.
fn ip_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    (
        prop_oneof![Just(0x45u8), Just(0x46), Just(0x4f), Just(0x60), any::<u8>()],
        prop::collection::vec(any::<u8>(), 0..200),
    )
        .prop_map(|(first, mut rest)| {
            rest.insert(0, first);
            rest
        })
}

/// Option bytes drawn mostly from the kinds and lengths that matter.
fn option_like_bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop_oneof![0u8..=24, Just(34), Just(255), any::<u8>()], 0..64)
}

fn build(src: IpAddr, dst: IpAddr, hop: u8, tcp: &TcpRepr<'_>) -> Vec<u8> {
    let mut buf = vec![0xa5; 7]; // build_tcp_packet must replace this
    build_tcp_packet(src, dst, hop, tcp, &mut buf).expect("valid repr must build");
    buf
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn build_then_parse_gives_back_the_same(
        (src, dst) in addresses(),
        hop in any::<u8>(),
        f in fields(),
        data in payload(),
    ) {
        let tcp = f.repr(&data);
        let packet = build(src, dst, hop, &tcp);
        let ip = IpRepr::new(src, dst, 6, tcp.segment_len(), hop).unwrap();
        prop_assert_eq!(packet.len(), ip.header_len() + tcp.segment_len());
        let (parsed_ip, parsed_tcp) = parse_tcp_packet(&packet).unwrap();
        prop_assert_eq!(parsed_ip, ip);
        prop_assert_eq!(parsed_tcp, Some(tcp));
        // The layers parse on their own too.
        let segment = &packet[ip.header_len()..];
        prop_assert_eq!(TcpRepr::parse(segment, src, dst, true), Ok(tcp));
        prop_assert_eq!(TcpRepr::parse(segment, src, dst, false), Ok(tcp));
        let opts_bytes = &segment[20..tcp.header_len()];
        prop_assert_eq!(TcpOptions::parse(opts_bytes), Ok(tcp.options));
    }

    #[test]
    fn options_round_trip(opts in options()) {
        let mut buf = [0u8; MAX_OPTIONS_LEN];
        let n = opts.emit(&mut buf).unwrap();
        prop_assert_eq!(n, opts.encoded_len());
        prop_assert_eq!(n % 4, 0);
        prop_assert_eq!(TcpOptions::parse(&buf[..n]), Ok(opts));
    }

    #[test]
    fn random_bytes_never_panic(bytes in ip_like_bytes(), opt_bytes in option_like_bytes()) {
        let _ = parse_tcp_packet(&bytes);
        let _ = IpRepr::parse(&bytes);
        let _ = Ipv4Repr::parse(&bytes);
        let _ = Ipv6Repr::parse(&bytes);
        let _ = TcpOptions::parse(&bytes);
        let _ = TcpOptions::parse(&opt_bytes);
        let v4 = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        for verify in [false, true] {
            let _ = TcpRepr::parse(&bytes, v4, v4, verify);
            let _ = TcpRepr::parse(&bytes, v6, v6, verify);
            let _ = TcpRepr::parse(&bytes, v4, v6, verify);
        }
    }

    /// Valid packets with a few bytes overwritten reach the deeper checks.
    #[test]
    fn mangled_packets_never_panic(
        (src, dst) in addresses(),
        f in fields(),
        data in prop::collection::vec(any::<u8>(), 0..64),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let tcp = f.repr(&data);
        let mut packet = build(src, dst, 64, &tcp);
        for (at, value) in &edits {
            let i = at.index(packet.len());
            packet[i] = *value;
        }
        let _ = parse_tcp_packet(&packet);
        let ip_len = if src.is_ipv4() { 20 } else { 40 };
        let segment = &packet[ip_len..];
        let _ = TcpRepr::parse(segment, src, dst, false);
        let _ = TcpRepr::parse(segment, src, dst, true);
        let end = cut.index(packet.len() + 1);
        let _ = parse_tcp_packet(&packet[..end]);
    }

    /// A flipped bit is never accepted as a TCP segment with other contents.
    /// IPv4: the header checksum and the TCP checksum (over pseudo-header,
    /// header and payload) together cover every bit, so every flip is an
    /// error, except one flip of the version nibble that turns 4 into 6,
    /// after which the bytes read as a non-TCP IPv6 packet.
    #[test]
    fn flipped_bit_is_caught_ipv4(
        src in any::<[u8; 4]>(),
        dst in any::<[u8; 4]>(),
        f in fields(),
        data in prop::collection::vec(any::<u8>(), 0..200),
        bit in any::<prop::sample::Index>(),
    ) {
        let (src, dst) = (IpAddr::from(src), IpAddr::from(dst));
        let tcp = f.repr(&data);
        let mut packet = build(src, dst, 64, &tcp);
        let bit = bit.index(packet.len() * 8);
        let (byte, mask) = (bit / 8, 0x80u8 >> (bit % 8));
        packet[byte] ^= mask;
        let result = parse_tcp_packet(&packet);
        if byte == 0 && mask == 0x20 {
            prop_assert!(matches!(result, Ok((IpRepr::V6(_), None)) | Err(_)), "{:?}", result);
        } else {
            prop_assert!(result.is_err(), "bit {} accepted: {:?}", bit, result);
        }
    }

    /// IPv6 has no header checksum. Bits covered by the TCP checksum
    /// (addresses, via the pseudo-header, and the whole segment) are always
    /// caught; a flipped next header gives an error or a non-TCP packet;
    /// flips of the uncovered version, traffic class, flow label or hop
    /// limit never change the segment. (Payload-length flips are left out:
    /// a truncation that happens to keep the one's-complement sum is a
    /// limit of the Internet checksum, not of this code.)
    #[test]
    fn flipped_bit_is_caught_ipv6(
        src in any::<[u8; 16]>(),
        dst in any::<[u8; 16]>(),
        f in fields(),
        data in prop::collection::vec(any::<u8>(), 0..200),
        bit in any::<prop::sample::Index>(),
    ) {
        let (src, dst) = (IpAddr::from(src), IpAddr::from(dst));
        let tcp = f.repr(&data);
        let mut packet = build(src, dst, 64, &tcp);
        let bit = bit.index(packet.len() * 8);
        let (byte, mask) = (bit / 8, 0x80u8 >> (bit % 8));
        packet[byte] ^= mask;
        let result = parse_tcp_packet(&packet);
        match byte {
            0..=3 | 7 => match result {
                Ok((IpRepr::V6(ip), Some(parsed))) => {
                    prop_assert_eq!(parsed, tcp);
                    prop_assert_eq!((ip.src, ip.dst, ip.next_header), (
                        match src { IpAddr::V6(a) => a, _ => unreachable!() },
                        match dst { IpAddr::V6(a) => a, _ => unreachable!() },
                        6,
                    ));
                }
                Err(WireError::BadIpVersion(_) | WireError::BadIpv4HeaderLength(_)) => {}
                other => prop_assert!(false, "bit {} gave {:?}", bit, other),
            },
            4 | 5 => {}
            6 => prop_assert!(
                matches!(result, Ok((_, None)) | Err(_)),
                "bit {} gave {:?}", bit, result
            ),
            _ => prop_assert!(result.is_err(), "bit {} accepted: {:?}", bit, result),
        }
    }
}
