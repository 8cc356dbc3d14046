//! Differential tests against etherparse 0.21: packets we build read the
//! same in etherparse (checksums included), and packets etherparse builds
//! read the same with us. Standard options only: etherparse rejects the
//! SCPS kinds 20-23.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use etherparse::{
    IpDscp, IpEcn, IpHeaders, IpNumber, Ipv4Header, Ipv6FlowLabel, Ipv6Header, NetHeaders, PacketBuilder,
    PacketHeaders, TcpHeader, TcpOptionElement, TransportHeader,
};
use proptest::prelude::*;
use scps_proto::wire::{
    IpRepr, Ipv4Repr, Ipv6Repr, MAX_OPTIONS_LEN, SackBlock, TcpFlags, TcpOptions, TcpRepr, Timestamps,
    WireError, build_tcp_packet, parse_tcp_packet,
};

/// Standard options only, each present or not, trimmed to fit 40 bytes.
fn standard_options() -> impl Strategy<Value = TcpOptions> {
    let block = (any::<u32>(), any::<u32>()).prop_map(|(left, right)| SackBlock { left, right });
    (
        prop::option::of(any::<u16>()),
        prop::option::of(any::<u8>()),
        any::<bool>(),
        prop::option::of((any::<u32>(), any::<u32>())),
        prop::collection::vec(block, 0..=4),
    )
        .prop_map(|(mss, window_scale, sack_permitted, ts, blocks)| {
            let mut opts = TcpOptions {
                mss,
                window_scale,
                sack_permitted,
                timestamps: ts.map(|(tsval, tsecr)| Timestamps { tsval, tsecr }),
                ..TcpOptions::default()
            };
            for b in blocks {
                opts.sack_blocks.push(b);
                if opts.encoded_len() > MAX_OPTIONS_LEN {
                    let kept: Vec<_> = opts.sack_blocks.as_slice().to_vec();
                    opts.sack_blocks.clear();
                    for b in &kept[..kept.len() - 1] {
                        opts.sack_blocks.push(*b);
                    }
                    break;
                }
            }
            opts
        })
}

/// What etherparse reports for our options, NOPs dropped.
fn elements_of(opts: &TcpOptions) -> Vec<TcpOptionElement> {
    let mut out = Vec::new();
    if let Some(mss) = opts.mss {
        out.push(TcpOptionElement::MaximumSegmentSize(mss));
    }
    if opts.sack_permitted {
        out.push(TcpOptionElement::SelectiveAcknowledgementPermitted);
    }
    if let Some(ts) = opts.timestamps {
        out.push(TcpOptionElement::Timestamp(ts.tsval, ts.tsecr));
    }
    if let Some(ws) = opts.window_scale {
        out.push(TcpOptionElement::WindowScale(ws));
    }
    if let [first, rest @ ..] = opts.sack_blocks.as_slice() {
        let mut more = [None; 3];
        for (slot, b) in more.iter_mut().zip(rest) {
            *slot = Some((b.left, b.right));
        }
        out.push(TcpOptionElement::SelectiveAcknowledgement(
            (first.left, first.right),
            more,
        ));
    }
    out
}

fn flags_of(tcp: &TcpHeader) -> TcpFlags {
    let mut flags = TcpFlags::empty();
    for (set, flag) in [
        (tcp.fin, TcpFlags::FIN),
        (tcp.syn, TcpFlags::SYN),
        (tcp.rst, TcpFlags::RST),
        (tcp.psh, TcpFlags::PSH),
        (tcp.ack, TcpFlags::ACK),
        (tcp.urg, TcpFlags::URG),
        (tcp.ece, TcpFlags::ECE),
        (tcp.cwr, TcpFlags::CWR),
        (tcp.ns, TcpFlags::NS),
    ] {
        if set {
            flags.insert(flag);
        }
    }
    flags
}

#[derive(Debug, Clone)]
struct Segment {
    src_port: u16,
    dst_port: u16,
    seq: u32,
    ack: u32,
    flags: u16,
    window: u16,
    urgent: u16,
    options: TcpOptions,
    payload: Vec<u8>,
}

fn segment() -> impl Strategy<Value = Segment> {
    (
        (any::<u16>(), any::<u16>(), any::<u32>(), any::<u32>()),
        (0u16..0x200, any::<u16>(), any::<u16>()),
        standard_options(),
        prop::collection::vec(any::<u8>(), 0..1400),
    )
        .prop_map(
            |((src_port, dst_port, seq, ack), (flags, window, urgent), options, payload)| Segment {
                src_port,
                dst_port,
                seq,
                ack,
                flags,
                window,
                urgent,
                options,
                payload,
            },
        )
}

impl Segment {
    fn repr(&self) -> TcpRepr<'_> {
        TcpRepr {
            src_port: self.src_port,
            dst_port: self.dst_port,
            seq: self.seq,
            ack: self.ack,
            flags: TcpFlags::from_bits(self.flags),
            window: self.window,
            urgent: self.urgent,
            options: self.options,
            payload: &self.payload,
        }
    }

    /// The same segment as an etherparse header, its option elements in
    /// the order `order` (a permutation of their indices) with a NOP before
    /// each element whose `nops` entry is true (when that still fits), so
    /// that etherparse lays the options out differently from us.
    fn etherparse_header(&self, order: &[usize], nops: &[bool]) -> TcpHeader {
        let f = TcpFlags::from_bits(self.flags);
        let elements = elements_of(&self.options);
        let plain: Vec<_> = order.iter().filter_map(|&i| elements.get(i).cloned()).collect();
        assert_eq!(plain.len(), elements.len(), "order must be a permutation");
        let mut shuffled = Vec::new();
        for (e, nop) in plain.iter().zip(nops.iter().chain(std::iter::repeat(&false))) {
            if *nop {
                shuffled.push(TcpOptionElement::Noop);
            }
            shuffled.push(e.clone());
        }
        let mut header = TcpHeader {
            source_port: self.src_port,
            destination_port: self.dst_port,
            sequence_number: self.seq,
            acknowledgment_number: self.ack,
            ns: f.contains(TcpFlags::NS),
            fin: f.fin(),
            syn: f.syn(),
            rst: f.rst(),
            psh: f.psh(),
            ack: f.ack(),
            urg: f.contains(TcpFlags::URG),
            ece: f.contains(TcpFlags::ECE),
            cwr: f.contains(TcpFlags::CWR),
            window_size: self.window,
            checksum: 0,
            urgent_pointer: self.urgent,
            options: Default::default(),
        };
        if header.set_options(&shuffled).is_err() {
            header.set_options(&plain).expect("our options fit 40 bytes");
        }
        header
    }
}

/// A segment with a random order of its option elements and random NOPs.
fn shuffled_segment() -> impl Strategy<Value = (Segment, Vec<usize>, Vec<bool>)> {
    segment().prop_flat_map(|seg| {
        let n = elements_of(&seg.options).len();
        (
            Just(seg),
            Just((0..n).collect::<Vec<_>>()).prop_shuffle(),
            prop::collection::vec(any::<bool>(), n),
        )
    })
}

fn v4_addr() -> impl Strategy<Value = Ipv4Addr> {
    any::<[u8; 4]>().prop_map(Ipv4Addr::from)
}

fn v6_addr() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>().prop_map(Ipv6Addr::from)
}

/// Checks what etherparse reads in a packet we built.
fn check_etherparse_reads(packet: &[u8], seg: &Segment, src: IpAddr, dst: IpAddr, hop: u8) {
    let headers = PacketHeaders::from_ip_slice(packet).expect("etherparse parses our packet");
    let Some(TransportHeader::Tcp(tcp)) = &headers.transport else {
        panic!("etherparse found no TCP header: {:?}", headers.transport)
    };
    let payload = headers.payload.slice();
    assert_eq!(tcp.source_port, seg.src_port);
    assert_eq!(tcp.destination_port, seg.dst_port);
    assert_eq!(tcp.sequence_number, seg.seq);
    assert_eq!(tcp.acknowledgment_number, seg.ack);
    assert_eq!(flags_of(tcp), TcpFlags::from_bits(seg.flags));
    assert_eq!(tcp.window_size, seg.window);
    assert_eq!(tcp.urgent_pointer, seg.urgent);
    assert_eq!(tcp.header_len(), 20 + seg.options.encoded_len());
    let elements: Vec<_> = tcp
        .options_iterator()
        .map(|e| e.expect("etherparse reads our options"))
        .filter(|e| *e != TcpOptionElement::Noop)
        .collect();
    assert_eq!(elements, elements_of(&seg.options));
    assert_eq!(payload, seg.payload.as_slice());
    match (&headers.net, src, dst) {
        (Some(NetHeaders::Ipv4(ip, _)), IpAddr::V4(s), IpAddr::V4(d)) => {
            assert_eq!(ip.source, s.octets());
            assert_eq!(ip.destination, d.octets());
            assert_eq!(ip.time_to_live, hop);
            assert_eq!(ip.protocol, IpNumber::TCP);
            assert!(ip.dont_fragment);
            assert_eq!(ip.header_checksum, ip.calc_header_checksum());
            assert_eq!(usize::from(ip.total_len), packet.len());
            assert_eq!(tcp.checksum, tcp.calc_checksum_ipv4(ip, payload).unwrap());
        }
        (Some(NetHeaders::Ipv6(ip, _)), IpAddr::V6(s), IpAddr::V6(d)) => {
            assert_eq!(ip.source, s.octets());
            assert_eq!(ip.destination, d.octets());
            assert_eq!(ip.hop_limit, hop);
            assert_eq!(ip.next_header, IpNumber::TCP);
            assert_eq!(usize::from(ip.payload_length), packet.len() - 40);
            assert_eq!(tcp.checksum, tcp.calc_checksum_ipv6(ip, payload).unwrap());
        }
        (net, _, _) => panic!("unexpected network header {net:?} for {src} -> {dst}"),
    }
}

/// Checks what we read in a packet etherparse built from `seg`.
fn check_we_read(packet: &[u8], seg: &Segment, expected_ip: IpRepr) {
    let (ip, tcp) = parse_tcp_packet(packet).expect("we parse etherparse's packet");
    assert_eq!(ip, expected_ip);
    assert_eq!(tcp, Some(seg.repr()));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// (a) Our IPv4 packets, read by etherparse.
    #[test]
    fn etherparse_reads_our_ipv4(src in v4_addr(), dst in v4_addr(), hop in any::<u8>(), seg in segment()) {
        let (src, dst) = (IpAddr::V4(src), IpAddr::V4(dst));
        let mut packet = Vec::new();
        build_tcp_packet(src, dst, hop, &seg.repr(), &mut packet).unwrap();
        check_etherparse_reads(&packet, &seg, src, dst, hop);
    }

    /// (a) Our IPv6 packets, read by etherparse.
    #[test]
    fn etherparse_reads_our_ipv6(src in v6_addr(), dst in v6_addr(), hop in any::<u8>(), seg in segment()) {
        let (src, dst) = (IpAddr::V6(src), IpAddr::V6(dst));
        let mut packet = Vec::new();
        build_tcp_packet(src, dst, hop, &seg.repr(), &mut packet).unwrap();
        check_etherparse_reads(&packet, &seg, src, dst, hop);
    }

    /// (b) etherparse's IPv4 packets, random header fields, read by us.
    #[test]
    fn we_read_etherparse_ipv4(
        src in v4_addr(),
        dst in v4_addr(),
        ttl in any::<u8>(),
        dscp in 0u8..64,
        ecn in 0u8..4,
        identification in any::<u16>(),
        dont_fragment in any::<bool>(),
        (seg, order, nops) in shuffled_segment(),
    ) {
        let tcp = seg.etherparse_header(&order, &nops);
        let mut ip = Ipv4Header::new(0, ttl, IpNumber::TCP, src.octets(), dst.octets()).unwrap();
        ip.dscp = IpDscp::try_new(dscp).unwrap();
        ip.ecn = IpEcn::try_new(ecn).unwrap();
        ip.identification = identification;
        ip.dont_fragment = dont_fragment;
        let mut packet = Vec::new();
        PacketBuilder::ip(IpHeaders::Ipv4(ip, Default::default()))
            .tcp_header(tcp.clone())
            .write(&mut packet, &seg.payload)
            .unwrap();
        let expected = IpRepr::V4(Ipv4Repr {
            src,
            dst,
            protocol: 6,
            ttl,
            dscp_ecn: (dscp << 2) | ecn,
            identification,
            dont_fragment,
            payload_len: tcp.header_len() + seg.payload.len(),
        });
        check_we_read(&packet, &seg, expected);
        // The same packet marked as a fragment is refused.
        let mut fragment = packet.clone();
        fragment[6] |= 0x20;
        let mut ip = Ipv4Header::from_slice(&fragment).unwrap().0;
        ip.header_checksum = ip.calc_header_checksum();
        fragment[10..12].copy_from_slice(&ip.header_checksum.to_be_bytes());
        prop_assert_eq!(parse_tcp_packet(&fragment), Err(WireError::Fragmented));
    }

    /// (b) etherparse's IPv6 packets, random header fields, read by us.
    #[test]
    fn we_read_etherparse_ipv6(
        src in v6_addr(),
        dst in v6_addr(),
        hop_limit in any::<u8>(),
        traffic_class in any::<u8>(),
        flow_label in 0u32..(1 << 20),
        (seg, order, nops) in shuffled_segment(),
    ) {
        let tcp = seg.etherparse_header(&order, &nops);
        let ip = Ipv6Header {
            traffic_class,
            flow_label: Ipv6FlowLabel::try_new(flow_label).unwrap(),
            payload_length: 0,
            next_header: IpNumber::TCP,
            hop_limit,
            source: src.octets(),
            destination: dst.octets(),
        };
        let mut packet = Vec::new();
        PacketBuilder::ip(IpHeaders::Ipv6(ip, Default::default()))
            .tcp_header(tcp.clone())
            .write(&mut packet, &seg.payload)
            .unwrap();
        let expected = IpRepr::V6(Ipv6Repr {
            src,
            dst,
            next_header: 6,
            hop_limit,
            traffic_class,
            flow_label,
            payload_len: tcp.header_len() + seg.payload.len(),
        });
        check_we_read(&packet, &seg, expected);
    }
}

/// etherparse and we agree on a fixed, fully specified packet too (a guard
/// against both sides drifting together in the random tests above).
#[test]
fn fixed_packet_agrees() {
    let seg = Segment {
        src_port: 5001,
        dst_port: 80,
        seq: 0xdead_beef,
        ack: 0x0102_0304,
        flags: (TcpFlags::ACK | TcpFlags::PSH | TcpFlags::NS).bits(),
        window: 0xfffe,
        urgent: 0,
        options: TcpOptions {
            timestamps: Some(Timestamps {
                tsval: 0xffff_ffff,
                tsecr: 1,
            }),
            ..TcpOptions::default()
        },
        payload: (0..=255).collect(),
    };
    let src = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 7));
    let dst = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 9));
    let mut ours = Vec::new();
    build_tcp_packet(src, dst, 250, &seg.repr(), &mut ours).unwrap();
    check_etherparse_reads(&ours, &seg, src, dst, 250);
    // etherparse builds byte-identical output for the same fields (it pads
    // with EOL where we pad with NOP, so use options that need no padding).
    let ip = Ipv4Header::new(0, 250, IpNumber::TCP, [198, 51, 100, 7], [203, 0, 113, 9]).unwrap();
    let mut theirs = Vec::new();
    PacketBuilder::ip(IpHeaders::Ipv4(ip, Default::default()))
        .tcp_header(seg.etherparse_header(&[0], &[]))
        .write(&mut theirs, &seg.payload)
        .unwrap();
    let with_nops = {
        let mut h = seg.etherparse_header(&[0], &[]);
        h.set_options(&[
            TcpOptionElement::Timestamp(0xffff_ffff, 1),
            TcpOptionElement::Noop,
            TcpOptionElement::Noop,
        ])
        .unwrap();
        h
    };
    let ip = Ipv4Header::new(0, 250, IpNumber::TCP, [198, 51, 100, 7], [203, 0, 113, 9]).unwrap();
    let mut theirs_nop = Vec::new();
    PacketBuilder::ip(IpHeaders::Ipv4(ip, Default::default()))
        .tcp_header(with_nops)
        .write(&mut theirs_nop, &seg.payload)
        .unwrap();
    assert_eq!(ours, theirs_nop);
    check_we_read(&theirs, &seg, IpRepr::new(src, dst, 6, 32 + 256, 250).unwrap());
}
