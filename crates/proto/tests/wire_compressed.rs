//! The SCPS compressed header (IP protocol 105): the RI's typical forms
//! built byte by byte, every combination of control bits, checksums,
//! header sizes, and compressor/decompressor pairs over lossless and lossy
//! links (every segment accepted must be exactly the one sent).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::num::NonZeroU8;

use proptest::prelude::*;
use scps_proto::wire::compressed::{COMPRESSIBLE_FLAGS, WINDOW_ACK_REFRESH_SEGMENTS};
use scps_proto::wire::{
    CompressedRepr, Compressor, Decompressor, IpRepr, Layer, MAX_OPTIONS_LEN, SackBlock, ScpsCapabilities,
    Snack, TcpFlags, TcpOptions, TcpRepr, Timestamps, WindowAck, WireError, build_compressed_packet,
    peek_conn_id,
};

const SRC: IpAddr = IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1));
const DST: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 2));
const SRC6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
const DST6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));
const SRC_PORT: u16 = 5001;
const DST_PORT: u16 = 7168;
const CONN_ID: u8 = 7;

fn id(n: u8) -> NonZeroU8 {
    NonZeroU8::new(n).unwrap()
}

/// The Internet checksum written out independently of the crate's
/// (RFC 1071): 16-bit big-endian words, odd byte padded, carries folded.
fn internet_checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = 0;
    for pair in bytes.chunks(2) {
        let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
        sum += u32::from(word);
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// IPv4 pseudo-header (RFC 9293 section 3.1) for `len` bytes of `protocol`.
fn pseudo_header_v4(protocol: u8, len: usize) -> Vec<u8> {
    let (IpAddr::V4(s), IpAddr::V4(d)) = (SRC, DST) else {
        unreachable!()
    };
    let mut p = Vec::new();
    p.extend_from_slice(&s.octets());
    p.extend_from_slice(&d.octets());
    p.extend_from_slice(&[0, protocol]);
    p.extend_from_slice(&(len as u16).to_be_bytes());
    p
}

/// Fills in the checksum of a hand-built segment whose header is
/// `header_len` bytes long (checksum field last, still zero).
fn set_checksum(segment: &mut [u8], header_len: usize, protocol: u8) {
    let mut all = pseudo_header_v4(protocol, segment.len());
    all.extend_from_slice(segment);
    let sum = internet_checksum(&all);
    segment[header_len - 2..header_len].copy_from_slice(&sum.to_be_bytes());
}

fn emit_vec(c: &CompressedRepr<'_>, src: IpAddr, dst: IpAddr) -> Vec<u8> {
    let mut buf = vec![0u8; c.segment_len().unwrap()];
    assert_eq!(c.emit(&mut buf, src, dst), Ok(buf.len()));
    buf
}

/// A decompressor that has seen the peer's SYN-ACK (ISN `isn`, acking 1000,
/// window 0x2000).
fn decompressor_after_syn_ack(isn: u32) -> Decompressor {
    let mut d = Decompressor::new(id(CONN_ID), SRC_PORT, DST_PORT, isn);
    d.observe(&TcpRepr {
        src_port: SRC_PORT,
        dst_port: DST_PORT,
        seq: isn,
        ack: 1000,
        flags: TcpFlags::SYN | TcpFlags::ACK,
        window: 0x2000,
        urgent: 0,
        options: TcpOptions::default(),
        payload: &[],
    });
    d
}

/// The RI's usual data segment (control 0x62: TS1, TS2, S; no window or
/// ack), 1464 payload bytes as in a 1500-byte packet.
#[test]
fn ri_data_segment_0x62_parses_and_decompresses() {
    let payload: Vec<u8> = (0..1464u32).map(|i| (i * 13 % 256) as u8).collect();
    let mut segment = vec![
        CONN_ID, 0x62, // connection id, control 1
        0x00, 0x00, 0x27, 0x11, // seq 10001
        0x00, 0x01, 0x00, 0x02, // TSval 0x10002
        0x00, 0x03, 0x00, 0x04, // TSecr 0x30004
        0x00, 0x00, // checksum
    ];
    segment.extend_from_slice(&payload);
    set_checksum(&mut segment, 16, 6);
    assert_eq!(peek_conn_id(&segment), Ok(CONN_ID));

    let parsed = CompressedRepr::parse(&segment, SRC, DST, true).unwrap();
    assert_eq!(
        parsed,
        CompressedRepr {
            conn_id: CONN_ID,
            flags: TcpFlags::ACK,
            urgent: 0,
            window_ack: None,
            seq: Some(10001),
            tsval: Some(0x10002),
            tsecr: Some(0x30004),
            record_boundary: false,
            options: TcpOptions::default(),
            payload: &payload,
        }
    );
    assert_eq!(parsed.header_len(), Ok(16));
    // Our emission of the same fields is byte for byte the RI's.
    assert_eq!(emit_vec(&parsed, SRC, DST), segment);
    let mut packet = Vec::new();
    build_compressed_packet(SRC, DST, 64, &parsed, &mut packet).unwrap();
    assert_eq!(packet.len(), 1500);
    let (ip, body) = IpRepr::parse(&packet).unwrap();
    assert_eq!((ip.protocol(), body), (105, segment.as_slice()));

    // Window and ack come from the SYN-ACK the decompressor observed.
    let mut d = decompressor_after_syn_ack(10000);
    let tcp = d.decompress(&segment, SRC, DST).unwrap();
    assert_eq!(
        tcp,
        TcpRepr {
            src_port: SRC_PORT,
            dst_port: DST_PORT,
            seq: 10001,
            ack: 1000,
            flags: TcpFlags::ACK,
            window: 0x2000,
            urgent: 0,
            options: TcpOptions {
                timestamps: Some(Timestamps {
                    tsval: 0x10002,
                    tsecr: 0x30004,
                }),
                ..TcpOptions::default()
            },
            payload: &payload,
        }
    );
    assert_eq!(tcp.header_len(), 32);
    // Without that context the segment cannot be rebuilt.
    let mut fresh = Decompressor::new(id(CONN_ID), SRC_PORT, DST_PORT, 10000);
    assert_eq!(
        fresh.decompress(&segment, SRC, DST),
        Err(WireError::CompressedFieldUnknown(
            "window and acknowledgment number"
        ))
    );
}

/// The RI's pure ACK (control 0x61: TS1, TS2, A; no sequence number).
#[test]
fn ri_pure_ack_0x61_parses_and_decompresses() {
    let mut segment = vec![
        CONN_ID, 0x61, // connection id, control 1
        0x10, 0x00, // window 4096
        0xde, 0xad, 0xbe, 0xef, // ack
        0x00, 0x00, 0x00, 0x09, // TSval
        0x00, 0x00, 0x00, 0x08, // TSecr
        0x00, 0x00, // checksum
    ];
    set_checksum(&mut segment, 18, 6);
    let parsed = CompressedRepr::parse(&segment, SRC, DST, true).unwrap();
    assert_eq!(
        parsed.window_ack,
        Some(WindowAck {
            window: 4096,
            ack: 0xdead_beef
        })
    );
    assert_eq!((parsed.seq, parsed.tsval, parsed.tsecr), (None, Some(9), Some(8)));
    assert_eq!(parsed.flags, TcpFlags::ACK);
    assert_eq!(parsed.header_len(), Ok(18));
    assert_eq!(emit_vec(&parsed, SRC, DST), segment);

    // The sequence number is the one after the peer's SYN.
    let mut d = Decompressor::new(id(CONN_ID), SRC_PORT, DST_PORT, u32::MAX);
    let tcp = d.decompress(&segment, SRC, DST).unwrap();
    assert_eq!((tcp.seq, tcp.ack, tcp.window), (0, 0xdead_beef, 4096));
    assert_eq!(tcp.options.timestamps, Some(Timestamps { tsval: 9, tsecr: 8 }));
    assert!(tcp.payload.is_empty());
}

#[test]
fn checksum_with_protocol_105_is_accepted_too() {
    let mut segment = vec![
        CONN_ID, 0x61, 0, 1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, b'h', b'i',
    ];
    set_checksum(&mut segment, 18, 105);
    assert!(CompressedRepr::parse(&segment, SRC, DST, true).is_ok());
    set_checksum(&mut segment, 18, 17);
    assert_eq!(
        CompressedRepr::parse(&segment, SRC, DST, true),
        Err(WireError::BadChecksum {
            layer: Layer::Compressed
        })
    );
    // Unverified, the fields still read.
    assert!(CompressedRepr::parse(&segment, SRC, DST, false).is_ok());
}

/// Every value of control byte 1, and with MORE every value of control
/// byte 2: the fields the bits announce are read in the spec's order, every
/// prefix of the header is a truncation error, and what parses re-emits and
/// parses back the same.
#[test]
fn every_control_bit_combination_parses() {
    const SNACK_OPTION: [u8; 6] = [21, 6, 0, 2, 0, 3];
    let mut parsed_ok = 0;
    for c1 in 0..=255u8 {
        let c2_values: Vec<Option<u8>> = if c1 & 0x80 != 0 {
            (0..=255).map(Some).collect()
        } else {
            vec![None]
        };
        for c2 in c2_values {
            let b2 = c2.unwrap_or(0);
            let mut seg = vec![CONN_ID, c1];
            seg.extend(c2);
            if b2 & 0x20 != 0 {
                seg.extend_from_slice(&[0x12, 0x34]);
            }
            if c1 & 0x01 != 0 {
                seg.extend_from_slice(&[0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0]);
            }
            if c1 & 0x02 != 0 {
                seg.extend_from_slice(&[0x11, 0x22, 0x33, 0x44]);
            }
            if c1 & 0x40 != 0 {
                seg.extend_from_slice(&[0x55, 0x66, 0x77, 0x88]);
            }
            if c1 & 0x20 != 0 {
                seg.extend_from_slice(&[0x99, 0xaa, 0xbb, 0xcc]);
            }
            if b2 & 0x80 != 0 {
                seg.push(6);
                seg.extend_from_slice(&SNACK_OPTION);
            }
            if b2 & 0x40 != 0 {
                seg.push(0xee); // the pad byte's value does not matter
            }
            seg.extend_from_slice(&[0, 0]);
            let header_len = seg.len();
            seg.extend_from_slice(b"xyz");
            set_checksum(&mut seg, header_len, 6);

            for cut in 0..header_len {
                assert!(
                    matches!(
                        CompressedRepr::parse(&seg[..cut], SRC, DST, false),
                        Err(WireError::Truncated {
                            layer: Layer::Compressed,
                            ..
                        })
                    ),
                    "control {c1:#04x} {c2:?} cut at {cut}"
                );
            }
            let result = CompressedRepr::parse(&seg, SRC, DST, true);
            if c1 & 0x08 != 0 && b2 & 0x80 == 0 {
                assert_eq!(result, Err(WireError::SnackBitWithoutSnack), "{c1:#04x} {c2:?}");
                continue;
            }
            let mut flags = TcpFlags::empty();
            for (set, flag) in [
                (b2 & 0x10 == 0, TcpFlags::ACK),
                (c1 & 0x04 != 0, TcpFlags::PSH),
                (b2 & 0x04 != 0, TcpFlags::RST),
                (b2 & 0x01 != 0, TcpFlags::FIN),
                (b2 & 0x20 != 0, TcpFlags::URG),
            ] {
                if set {
                    flags.insert(flag);
                }
            }
            let mut options = TcpOptions::default();
            if b2 & 0x80 != 0 {
                options.snacks.push(Snack {
                    hole_offset: 2,
                    hole_size: 3,
                });
            }
            let expected = CompressedRepr {
                conn_id: CONN_ID,
                flags,
                urgent: if b2 & 0x20 != 0 { 0x1234 } else { 0 },
                window_ack: (c1 & 0x01 != 0).then_some(WindowAck {
                    window: 0x5678,
                    ack: 0x9abc_def0,
                }),
                seq: (c1 & 0x02 != 0).then_some(0x1122_3344),
                tsval: (c1 & 0x40 != 0).then_some(0x5566_7788),
                tsecr: (c1 & 0x20 != 0).then_some(0x99aa_bbcc),
                record_boundary: c1 & 0x10 != 0,
                options,
                payload: b"xyz",
            };
            assert_eq!(result, Ok(expected), "control {c1:#04x} {c2:?}");
            let again = emit_vec(&expected, SRC, DST);
            assert_eq!(again.len() % 2, 1, "even header plus 3 payload bytes");
            assert_eq!(CompressedRepr::parse(&again, SRC, DST, true), Ok(expected));
            parsed_ok += 1;
        }
    }
    // 128 + 128 * 256 combinations, less those with SNACK but no OPTS.
    assert_eq!(parsed_ok, 128 + 128 * 256 - (64 + 64 * 128));
}

#[test]
fn malformed_headers_are_typed_errors() {
    fn parse(bytes: &[u8]) -> Result<CompressedRepr<'_>, WireError> {
        CompressedRepr::parse(bytes, SRC, DST, false)
    }
    assert_eq!(
        peek_conn_id(&[]),
        Err(WireError::Truncated {
            layer: Layer::Compressed,
            needed: 1,
            available: 0
        })
    );
    assert_eq!(
        parse(&[CONN_ID]),
        Err(WireError::Truncated {
            layer: Layer::Compressed,
            needed: 2,
            available: 1
        })
    );
    // OPTS length beyond what a TCP header holds.
    let mut long = vec![CONN_ID, 0x80, 0x80, 41];
    long.extend_from_slice(&[1; 41]);
    long.extend_from_slice(&[0, 0]);
    assert_eq!(parse(&long), Err(WireError::OptionsTooLong(41)));
    // OPTS length running past the segment.
    assert_eq!(
        parse(&[CONN_ID, 0x80, 0x80, 8, 1, 1, 0, 0]),
        Err(WireError::Truncated {
            layer: Layer::Compressed,
            needed: 12,
            available: 8
        })
    );
    // An option inside OPTS running past the OPTS bytes.
    assert_eq!(
        parse(&[CONN_ID, 0x80, 0x80, 3, 21, 6, 0, 0, 0]),
        Err(WireError::OptionOverrun { kind: 21 })
    );
    assert_eq!(
        parse(&[CONN_ID, 0x80, 0x80, 2, 21, 2, 0, 0]),
        Err(WireError::BadOptionLength { kind: 21, len: 2 })
    );
    // The unassigned bits of control byte 2 are ignored.
    assert_eq!(parse(&[CONN_ID, 0x80, 0x0a, 0, 0]).unwrap().flags, TcpFlags::ACK);
    assert_eq!(
        CompressedRepr::parse(&[CONN_ID, 0, 0, 0], SRC, DST6, true),
        Err(WireError::AddressFamilyMismatch)
    );
}

/// A header-only segment for the decompressor tests.
fn with_fields(
    window_ack: Option<WindowAck>,
    tsval: Option<u32>,
    tsecr: Option<u32>,
) -> CompressedRepr<'static> {
    CompressedRepr {
        conn_id: CONN_ID,
        flags: TcpFlags::ACK,
        urgent: 0,
        window_ack,
        seq: None,
        tsval,
        tsecr,
        record_boundary: false,
        options: TcpOptions::default(),
        payload: &[],
    }
}

#[test]
fn decompressor_refuses_what_it_cannot_rebuild() {
    let mut d = Decompressor::new(id(CONN_ID), SRC_PORT, DST_PORT, 99);
    let wa = Some(WindowAck { window: 1, ack: 2 });
    let other_id = CompressedRepr {
        conn_id: 8,
        ..with_fields(wa, None, None)
    };
    assert_eq!(
        d.reconstruct(&other_id),
        Err(WireError::ConnectionIdMismatch { expected: 7, got: 8 })
    );
    assert_eq!(
        d.reconstruct(&with_fields(None, None, None)),
        Err(WireError::CompressedFieldUnknown(
            "window and acknowledgment number"
        ))
    );
    // The RI's one-timestamp forms need the other from an earlier segment.
    assert_eq!(
        d.reconstruct(&with_fields(wa, Some(5), None)),
        Err(WireError::CompressedFieldUnknown("timestamp echo reply (TSecr)"))
    );
    assert_eq!(
        d.reconstruct(&with_fields(wa, None, Some(5))),
        Err(WireError::CompressedFieldUnknown("timestamp value (TSval)"))
    );
    // Refusals leave the context alone: still nothing known.
    assert!(d.reconstruct(&with_fields(None, None, None)).is_err());
    let full = d.reconstruct(&with_fields(wa, Some(5), Some(6))).unwrap();
    assert_eq!((full.seq, full.ack, full.window), (100, 2, 1));
    let half = d.reconstruct(&with_fields(None, None, Some(7))).unwrap();
    assert_eq!((half.ack, half.window), (2, 1));
    assert_eq!(half.options.timestamps, Some(Timestamps { tsval: 5, tsecr: 7 }));
    // No timestamp bits, no timestamps.
    assert_eq!(
        d.reconstruct(&with_fields(None, None, None))
            .unwrap()
            .options
            .timestamps,
        None
    );

    // 40 bytes of OPTS plus the timestamps do not fit a TCP header.
    let mut crowded = with_fields(wa, Some(1), Some(2));
    for i in 0..4 {
        crowded.options.sack_blocks.push(SackBlock { left: i, right: i });
    }
    crowded.options.record_boundary = true;
    crowded.options.corruption_experienced = true;
    assert_eq!(d.reconstruct(&crowded), Err(WireError::OptionsTooLong(48)));
}

fn data_segment(seq: u32, ack: u32, payload: &[u8]) -> TcpRepr<'_> {
    TcpRepr {
        src_port: SRC_PORT,
        dst_port: DST_PORT,
        seq,
        ack,
        flags: TcpFlags::ACK,
        window: 65535,
        urgent: 0,
        options: TcpOptions {
            timestamps: Some(Timestamps {
                tsval: seq,
                tsecr: 77,
            }),
            ..TcpOptions::default()
        },
        payload,
    }
}

/// Header sizes of the usual segments, next to the 32 bytes of a TCP header
/// with timestamps: a data segment 16 (the RI's 0x62), a pure ACK 18 (0x61).
#[test]
fn header_sizes_of_typical_segments() {
    let payload = [0x5au8; 1000];
    let iss = 5000;
    let mut c = Compressor::new(id(CONN_ID), iss);
    let header_len = |c: &CompressedRepr<'_>| c.header_len().unwrap();

    // Data: the first segment also carries window and ack (22 bytes), until
    // the peer acknowledges data sent with them.
    let first = data_segment(iss + 1, 1, &payload);
    assert_eq!(first.header_len(), 32);
    let sent = c.compress(&first, false).unwrap();
    assert_eq!(
        (header_len(&sent), sent.seq.is_some(), sent.window_ack.is_some()),
        (22, true, true)
    );
    c.on_ack_received(iss + 1001);
    let second = data_segment(iss + 1001, 1, &payload);
    let sent = c.compress(&second, false).unwrap();
    let bytes = emit_vec(&sent, SRC, DST);
    assert_eq!(header_len(&sent), 16);
    assert_eq!(bytes[1], 0x62);
    let mut pushed = data_segment(iss + 2001, 1, &payload);
    pushed.flags.insert(TcpFlags::PSH);
    let bytes = emit_vec(&c.compress(&pushed, false).unwrap(), SRC, DST);
    assert_eq!((bytes.len() - payload.len(), bytes[1]), (16, 0x66));

    // Pure ACKs of the receiving side: the first one carries its sequence
    // number (22 bytes), the following ones do not (18).
    let mut c = Compressor::new(id(CONN_ID), 1);
    let ack = |n| data_segment(2, n, &[]);
    assert_eq!(header_len(&c.compress(&ack(100), false).unwrap()), 22);
    let sent = c.compress(&ack(1100), false).unwrap();
    let bytes = emit_vec(&sent, SRC, DST);
    assert_eq!((bytes.len(), bytes[1]), (18, 0x61));
    assert_eq!(ack(1100).header_len(), 32);
}

#[test]
fn resends_are_segments_below_the_highest_sequence_sent() {
    let iss = 5000;
    let mut c = Compressor::new(id(CONN_ID), iss);
    let payload = [1u8; 100];
    let first = data_segment(iss + 1, 1, &payload);
    assert!(!c.resends(&first), "new data");
    c.compress(&first, false).unwrap();
    assert!(c.resends(&first), "the same data again");
    assert!(
        !c.resends(&data_segment(iss + 101, 1, &payload)),
        "the next new data"
    );
    let mut fin = data_segment(iss + 101, 1, &[]);
    fin.flags.insert(TcpFlags::FIN);
    c.compress(&fin, false).unwrap();
    assert!(c.resends(&fin), "the FIN again");
    // An ACK or keepalive takes no sequence space: never a resend.
    assert!(!c.resends(&data_segment(iss + 101, 1, &[])));
    assert!(!c.resends(&data_segment(iss, 1, &[])));
}

#[test]
fn compressor_refuses_what_has_no_compressed_form() {
    let mut c = Compressor::new(id(1), 0);
    let mut syn = data_segment(0, 0, &[]);
    syn.flags = TcpFlags::SYN | TcpFlags::ACK;
    assert_eq!(
        c.compress(&syn, false),
        Err(WireError::NotCompressible("the SYN flag"))
    );
    let mut ece = data_segment(1, 0, &[]);
    ece.flags.insert(TcpFlags::ECE);
    assert_eq!(
        c.compress(&ece, false),
        Err(WireError::NotCompressible("an ECE, CWR or NS flag"))
    );
    let mut urgent = data_segment(1, 0, &[]);
    urgent.urgent = 3;
    assert_eq!(
        c.compress(&urgent, false),
        Err(WireError::NotCompressible("an urgent pointer but no URG flag"))
    );
    let mut crowded = data_segment(1, 0, &[]);
    for i in 0..4 {
        crowded.options.sack_blocks.push(SackBlock { left: i, right: i });
    }
    assert_eq!(c.compress(&crowded, false), Err(WireError::OptionsTooLong(44)));
    // SYNs are refused by the header's own emission too.
    let repr = CompressedRepr {
        flags: TcpFlags::SYN,
        ..with_fields(None, None, None)
    };
    let mut buf = [0u8; 64];
    assert_eq!(
        repr.emit(&mut buf, SRC, DST),
        Err(WireError::NotCompressible("the SYN flag"))
    );
    // None of that changed the state: a first pure ACK still carries S.
    assert!(c.compress(&data_segment(1, 0, &[]), false).unwrap().seq.is_some());
}

#[test]
fn emit_errors_and_packets() {
    let repr = CompressedRepr {
        payload: b"abc",
        ..with_fields(Some(WindowAck { window: 1, ack: 2 }), None, None)
    };
    assert_eq!(repr.segment_len(), Ok(10 + 3));
    let mut small = [0u8; 12];
    assert_eq!(
        repr.emit(&mut small, SRC, DST),
        Err(WireError::BufferTooSmall {
            needed: 13,
            available: 12
        })
    );
    let mut buf = [0xaau8; 20];
    assert_eq!(repr.emit(&mut buf, SRC, DST), Ok(13));
    assert!(buf[13..].iter().all(|&b| b == 0xaa));
    assert_eq!(
        repr.emit(&mut buf, SRC, DST6),
        Err(WireError::AddressFamilyMismatch)
    );
    let mut packet = vec![1, 2, 3];
    assert_eq!(
        build_compressed_packet(SRC, DST6, 64, &repr, &mut packet),
        Err(WireError::AddressFamilyMismatch)
    );
    assert!(packet.is_empty());
    build_compressed_packet(SRC6, DST6, 9, &repr, &mut packet).unwrap();
    let (ip, segment) = IpRepr::parse(&packet).unwrap();
    assert_eq!(ip, IpRepr::new(SRC6, DST6, 105, 13, 9).unwrap());
    assert_eq!(CompressedRepr::parse(segment, SRC6, DST6, true), Ok(repr));
    // The longest header: every field and 40 bytes of options.
    let mut longest = CompressedRepr {
        flags: TcpFlags::ACK | TcpFlags::URG,
        urgent: 1,
        seq: Some(1),
        tsval: Some(1),
        tsecr: Some(1),
        ..repr
    };
    for i in 0..4 {
        longest.options.sack_blocks.push(SackBlock { left: i, right: i });
    }
    longest.options.snacks.push(Snack::default());
    assert_eq!(longest.options.encoded_len(), MAX_OPTIONS_LEN);
    assert_eq!(longest.header_len(), Ok(CompressedRepr::MAX_HEADER_LEN));
    // 38 bytes of options (no NOPs in OPTS): an even header, no pad.
    longest.options.snacks.clear();
    longest.options.scps_capabilities = Some(ScpsCapabilities::default());
    assert_eq!(longest.header_len(), Ok(CompressedRepr::MAX_HEADER_LEN - 2));
    assert_eq!(emit_vec(&longest, SRC, DST)[2] & 0x40, 0, "pad bit");
    // 37 bytes: the pad byte makes the header even.
    longest.options.scps_capabilities = None;
    longest.options.window_scale = Some(3);
    assert_eq!(longest.header_len(), Ok(CompressedRepr::MAX_HEADER_LEN - 2));
    let bytes = emit_vec(&longest, SRC, DST);
    assert_eq!(bytes[2] & 0x40, 0x40, "pad bit");
    assert_eq!(CompressedRepr::parse(&bytes, SRC, DST, true), Ok(longest));
}

/// A lost change of the acknowledgment number is repeated until the peer
/// acknowledges data sent after it; that protection rests on the
/// acknowledgments being true, which the second half shows by lying.
#[test]
fn lost_window_ack_change_is_repeated_until_acknowledged() {
    for lie in [false, true] {
        let iss = 0;
        let mut c = Compressor::new(id(CONN_ID), iss);
        let mut d = Decompressor::new(id(CONN_ID), SRC_PORT, DST_PORT, iss);
        let send =
            |c: &mut Compressor, seg: &TcpRepr<'static>| emit_vec(&c.compress(seg, false).unwrap(), SRC, DST);
        let s1 = data_segment(1, 100, b"one");
        let bytes = send(&mut c, &s1);
        let got = d.decompress(&bytes, SRC, DST).unwrap();
        assert_eq!(got, s1);
        c.on_ack_received(4);
        // The ack moves to 200 on a segment that is lost.
        let s2 = data_segment(4, 200, b"two");
        let _lost = send(&mut c, &s2);
        if lie {
            c.on_ack_received(7);
        }
        let s3 = data_segment(7, 200, b"three");
        let bytes = send(&mut c, &s3);
        let got = d.decompress(&bytes, SRC, DST).unwrap();
        if lie {
            // Told (falsely) that the peer had it, the compressor left it out.
            assert_eq!(got.ack, 100);
        } else {
            assert_eq!(got, s3);
        }
    }
}

/// After confirmation the pair is left out, but not for more than
/// `WINDOW_ACK_REFRESH_SEGMENTS - 1` segments in a row.
#[test]
fn window_ack_is_refreshed_periodically() {
    let mut c = Compressor::new(id(CONN_ID), 0);
    c.compress(&data_segment(1, 9, b"x"), false).unwrap();
    c.on_ack_received(2);
    let mut carried = Vec::new();
    for i in 0..3 * WINDOW_ACK_REFRESH_SEGMENTS {
        let seg = data_segment(2 + i, 9, b"y");
        carried.push(c.compress(&seg, false).unwrap().window_ack.is_some());
    }
    let n = WINDOW_ACK_REFRESH_SEGMENTS as usize;
    for (i, has) in carried.iter().enumerate() {
        assert_eq!(*has, i % n == n - 1, "segment {i}");
    }
    // Retransmissions always carry S and A.
    let again = c.compress(&data_segment(2, 9, b"y"), true).unwrap();
    assert!(again.seq.is_some() && again.window_ack.is_some());
}

/// A segment without room for A leaves it out: the receiver rebuilds it
/// with the last pair it received (nothing new for its TCP), the caller
/// learns that an acknowledgment is owed, and the new pair counts as held
/// only once bytes sent after that segment are acknowledged.
#[test]
fn a_segment_without_room_for_the_window_and_ack_leaves_them_out() {
    let mut c = Compressor::new(id(CONN_ID), 0);
    let mut d = Decompressor::new(id(CONN_ID), SRC_PORT, DST_PORT, 0);
    // (withheld, A carried, header bytes, acknowledgment rebuilt)
    let mut send = |c: &mut Compressor, seg: &TcpRepr<'_>, max: usize| {
        let out = c.compress_within(seg, false, max).unwrap();
        let bytes = emit_vec(&out.repr, SRC, DST);
        let rebuilt = d.decompress(&bytes, SRC, DST).unwrap().ack;
        let header_len = out.repr.header_len().unwrap();
        (
            out.window_ack_withheld,
            out.repr.window_ack.is_some(),
            header_len,
            rebuilt,
        )
    };
    // The pair (ack 9) goes and is confirmed.
    send(&mut c, &data_segment(1, 9, b"x"), usize::MAX);
    c.on_ack_received(2);
    // Ack 10 is news, but a 16-byte header is all there is room for: the
    // receiver keeps the pair it holds.
    assert_eq!(send(&mut c, &data_segment(2, 10, b"y"), 16), (true, false, 16, 9));
    assert!(c.window_ack_required(WindowAck {
        window: 65535,
        ack: 10
    }));
    // With room, the next segment carries it.
    assert_eq!(
        send(&mut c, &data_segment(3, 10, b"z"), usize::MAX),
        (false, true, 22, 10)
    );
    // An ACK of the segment that withheld it proves nothing; one of the
    // byte after it does.
    c.on_ack_received(3);
    assert!(c.window_ack_required(WindowAck {
        window: 65535,
        ack: 10
    }));
    c.on_ack_received(4);
    assert!(!c.window_ack_required(WindowAck {
        window: 65535,
        ack: 10
    }));
    // A retransmission or a refresh with no room goes without A and owes
    // nothing: the peer holds the pair.
    let out = c.compress_within(&data_segment(3, 10, b"z"), true, 16).unwrap();
    assert!(!out.window_ack_withheld && out.repr.window_ack.is_none() && out.repr.seq.is_some());
}

#[test]
fn record_boundary_and_snacks_survive() {
    let mut c = Compressor::new(id(CONN_ID), 0);
    let mut d = Decompressor::new(id(CONN_ID), SRC_PORT, DST_PORT, 0);
    let mut seg = data_segment(1, 5, b"end of record");
    seg.options.record_boundary = true;
    seg.options.snacks.push(Snack {
        hole_offset: 4,
        hole_size: 0x0101,
    });
    let compressed = c.compress(&seg, false).unwrap();
    assert!(compressed.record_boundary && !compressed.options.record_boundary);
    let bytes = emit_vec(&compressed, SRC, DST);
    // control 1: TS1 TS2 RB SNACK S A, and MORE for OPTS.
    assert_eq!(bytes[1], 0x80 | 0x40 | 0x20 | 0x10 | 0x08 | 0x02 | 0x01);
    assert_eq!(bytes[2] & 0x80, 0x80);
    // OPTS: the SNACK without the two NOPs TCP would pad it with (its
    // last bytes are 0x01 too, so they are not simply trimmed).
    let opts_at = 3 + 6 + 4 + 8;
    assert_eq!(bytes[opts_at], 6);
    assert_eq!(&bytes[opts_at + 1..opts_at + 7], [21, 6, 0, 4, 1, 1]);
    assert_eq!(bytes.len(), opts_at + 7 + 2 + seg.payload.len());
    assert_eq!(d.decompress(&bytes, SRC, DST), Ok(seg));
}

/// Every single-bit flip of a compressed segment is refused.
fn assert_flips_are_caught(bytes: &[u8], src: IpAddr, dst: IpAddr) {
    for bit in 0..bytes.len() * 8 {
        let mut flipped = bytes.to_vec();
        flipped[bit / 8] ^= 1 << (bit % 8);
        assert!(
            CompressedRepr::parse(&flipped, src, dst, true).is_err(),
            "flip of bit {bit} accepted"
        );
    }
}

// ---------------------------------------------------------------------------
// Random segments.

fn options() -> impl Strategy<Value = TcpOptions> {
    let block = (any::<u32>(), any::<u32>()).prop_map(|(left, right)| SackBlock { left, right });
    (
        prop::option::of(any::<u16>()),
        prop::option::of(any::<u8>()),
        any::<bool>(),
        prop::option::of((any::<u32>(), any::<u32>())),
        prop::option::of((any::<u8>(), any::<u8>())),
        prop::collection::vec(block, 0..=4),
        prop::collection::vec((any::<u16>(), any::<u16>()), 0..=6),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(mss, ws, sack_permitted, ts, caps, blocks, snacks, rb, ce)| {
            let mut opts = TcpOptions {
                mss,
                window_scale: ws,
                sack_permitted,
                timestamps: ts.map(|(tsval, tsecr)| Timestamps { tsval, tsecr }),
                scps_capabilities: caps.map(|(bitmap, id)| ScpsCapabilities::from_bitmap(bitmap, id)),
                record_boundary: rb,
                corruption_experienced: ce,
                ..TcpOptions::default()
            };
            // Add blocks and holes while they fit a TCP header.
            for b in blocks {
                let before = opts;
                opts.sack_blocks.push(b);
                if opts.encoded_len() > MAX_OPTIONS_LEN {
                    opts = before;
                }
            }
            for (hole_offset, hole_size) in snacks {
                let before = opts;
                opts.snacks.push(Snack {
                    hole_offset,
                    hole_size,
                });
                if opts.encoded_len() > MAX_OPTIONS_LEN {
                    opts = before;
                }
            }
            // What is still too long loses its SYN-only options.
            if opts.encoded_len() > MAX_OPTIONS_LEN {
                opts.mss = None;
                opts.window_scale = None;
                opts.scps_capabilities = None;
                opts.sack_permitted = false;
            }
            opts
        })
}

/// The fields of an arbitrary compressible segment (payload apart).
#[derive(Debug, Clone)]
struct Fields {
    seq: u32,
    ack: u32,
    flags: TcpFlags,
    window: u16,
    urgent: u16,
    options: TcpOptions,
}

impl Fields {
    fn repr<'a>(&self, payload: &'a [u8]) -> TcpRepr<'a> {
        TcpRepr {
            src_port: SRC_PORT,
            dst_port: DST_PORT,
            seq: self.seq,
            ack: self.ack,
            flags: self.flags,
            window: self.window,
            urgent: self.urgent,
            options: self.options,
            payload,
        }
    }
}

fn fields() -> impl Strategy<Value = Fields> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u16>(),
        any::<u16>(),
        any::<u16>(),
        options(),
    )
        .prop_map(|(seq, ack, flag_bits, window, urgent, options)| {
            let flags = TcpFlags::from_bits(flag_bits & COMPRESSIBLE_FLAGS.bits());
            let urgent = if flags.contains(TcpFlags::URG) { urgent } else { 0 };
            Fields {
                seq,
                ack,
                flags,
                window,
                urgent,
                options,
            }
        })
}

// ---------------------------------------------------------------------------
// A TCP-like sender: data, pure ACKs, retransmissions and a FIN, with its
// acknowledgment number, window and timestamps changing now and then, and
// the peer's cumulative acknowledgments coming back.

#[derive(Debug, Clone)]
enum Kind {
    Data { len: usize, push: bool },
    PureAck,
    Retransmit { len: usize },
    Fin,
}

#[derive(Debug, Clone)]
struct Step {
    kind: Kind,
    /// Our acknowledgment number moves on (the peer sent us data).
    ack_advance: Option<u32>,
    window: Option<u16>,
    tsecr_advance: Option<u32>,
    snack: Option<Snack>,
    sack: Option<SackBlock>,
    record_boundary: bool,
    urgent: Option<u16>,
    /// The peer's cumulative acknowledgment arrives after this segment.
    peer_acks: bool,
    /// This segment is lost on the link.
    lost: bool,
}

fn step(loss: f64) -> impl Strategy<Value = Step> {
    let kind = prop_oneof![
        5 => (1usize..300, any::<bool>()).prop_map(|(len, push)| Kind::Data { len, push }),
        4 => Just(Kind::PureAck),
        2 => (1usize..600).prop_map(|len| Kind::Retransmit { len }),
        1 => Just(Kind::Fin),
    ];
    (
        kind,
        prop::option::weighted(0.2, 1u32..5000),
        prop::option::weighted(0.1, any::<u16>()),
        prop::option::weighted(0.3, 0u32..3),
        prop::option::weighted(0.05, (any::<u16>(), any::<u16>())),
        prop::option::weighted(0.05, (any::<u32>(), any::<u32>())),
        prop::bool::weighted(0.1),
        prop::option::weighted(0.03, any::<u16>()),
        prop::bool::weighted(0.3),
        prop::bool::weighted(loss),
    )
        .prop_map(
            |(
                kind,
                ack_advance,
                window,
                tsecr_advance,
                snack,
                sack,
                record_boundary,
                urgent,
                peer_acks,
                lost,
            )| {
                Step {
                    kind,
                    ack_advance,
                    window,
                    tsecr_advance,
                    snack: snack.map(|(hole_offset, hole_size)| Snack {
                        hole_offset,
                        hole_size,
                    }),
                    sack: sack.map(|(left, right)| SackBlock { left, right }),
                    record_boundary,
                    urgent,
                    peer_acks,
                    lost,
                }
            },
        )
}

/// The bytes of the stream at `offset` (1 is the first after the SYN), the
/// same whenever they are sent.
fn stream_bytes(offset: u64, len: usize) -> Vec<u8> {
    (0..len as u64).map(|i| ((offset + i) * 31 % 251) as u8).collect()
}

/// What a run delivered.
#[derive(Debug, Default)]
struct Outcome {
    delivered: usize,
    refused: usize,
    /// Delivered segments that left out S or A.
    with_omissions: usize,
}

/// Runs `steps` through a compressor, a link that drops the segments marked
/// lost, and a decompressor; every segment the decompressor accepts must be
/// exactly the one sent. IPv6 when `v6`.
fn run_link(iss: u32, timestamps: bool, v6: bool, steps: &[Step]) -> Result<Outcome, TestCaseError> {
    let (src, dst) = if v6 { (SRC6, DST6) } else { (SRC, DST) };
    let mut c = Compressor::new(id(CONN_ID), iss);
    let mut d = Decompressor::new(id(CONN_ID), SRC_PORT, DST_PORT, iss);
    // Sender state, in offsets from the ISN.
    let (mut snd_una, mut snd_nxt) = (1u64, 1u64);
    let mut fin_at: Option<u64> = None;
    let (mut ack, mut window, mut tsval, mut tsecr) = (1u32, 4096u16, 1u32, 0u32);
    // Receiver: which offsets arrived.
    let mut received = vec![true]; // the SYN
    let mut outcome = Outcome::default();
    let wire = |offset: u64| iss.wrapping_add(offset as u32);

    for step in steps {
        ack = ack.wrapping_add(step.ack_advance.unwrap_or(0));
        window = step.window.unwrap_or(window);
        tsval = tsval.wrapping_add(1);
        tsecr = tsecr.wrapping_add(step.tsecr_advance.unwrap_or(0));
        let data_end = fin_at.unwrap_or(snd_nxt);
        // (start offset, payload length, FIN, retransmission)
        let (start, len, fin, retransmission) = match step.kind {
            Kind::Data { len, .. } if fin_at.is_none() => (snd_nxt, len, false, false),
            Kind::Fin if fin_at.is_none() => (snd_nxt, 0, true, false),
            Kind::Retransmit { len } if snd_una < snd_nxt => {
                let len = len.min((data_end.saturating_sub(snd_una)) as usize);
                let fin = fin_at.is_some_and(|f| snd_una + len as u64 == f);
                (snd_una, len, fin, true)
            }
            _ => (snd_nxt, 0, false, false),
        };
        let payload = stream_bytes(start, len);
        let mut flags = TcpFlags::ACK;
        if let Kind::Data { push: true, .. } = step.kind {
            flags.insert(TcpFlags::PSH);
        }
        if fin {
            flags.insert(TcpFlags::FIN);
        }
        let mut options = TcpOptions {
            timestamps: timestamps.then_some(Timestamps { tsval, tsecr }),
            record_boundary: step.record_boundary && len > 0,
            ..TcpOptions::default()
        };
        if let Some(s) = step.snack {
            options.snacks.push(s);
        }
        if let Some(b) = step.sack {
            options.sack_blocks.push(b);
        }
        let urgent = step.urgent.unwrap_or(0);
        if step.urgent.is_some() {
            flags.insert(TcpFlags::URG);
        }
        let segment = TcpRepr {
            src_port: SRC_PORT,
            dst_port: DST_PORT,
            seq: wire(start),
            ack,
            flags,
            window,
            urgent,
            options,
            payload: &payload,
        };
        let end = start + len as u64 + u64::from(fin);
        if !retransmission && end > snd_nxt {
            snd_nxt = end;
            if fin {
                fin_at = Some(start + len as u64);
            }
        }

        let compressed = c
            .compress(&segment, retransmission)
            .map_err(|e| TestCaseError::fail(e.to_string()))?;
        let bytes = emit_vec(&compressed, src, dst);
        prop_assert_eq!(CompressedRepr::parse(&bytes, src, dst, true), Ok(compressed));
        if !step.lost {
            outcome.delivered += 1;
            match d.decompress(&bytes, src, dst) {
                Ok(got) => {
                    prop_assert_eq!(got, segment);
                    if compressed.seq.is_none() || compressed.window_ack.is_none() {
                        outcome.with_omissions += 1;
                    }
                    if received.len() < end as usize {
                        received.resize(end as usize, false);
                    }
                    for slot in &mut received[start as usize..end as usize] {
                        *slot = true;
                    }
                }
                Err(_) => outcome.refused += 1,
            }
        }
        if step.peer_acks {
            let rcv_nxt = received.iter().position(|r| !r).unwrap_or(received.len()) as u64;
            c.on_ack_received(wire(rcv_nxt));
            snd_una = snd_una.max(rcv_nxt);
        }
    }
    Ok(outcome)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Arbitrary compressible segments, one after another through a pair,
    /// with arbitrary acknowledgment numbers fed back: without loss every
    /// segment comes out as it went in, through the bytes and the checksum.
    #[test]
    fn arbitrary_segments_round_trip(
        iss in any::<u32>(),
        segments in prop::collection::vec(
            (fields(), prop::collection::vec(any::<u8>(), 0..40), any::<bool>(), prop::option::of(any::<u32>())),
            1..40,
        ),
        v6 in any::<bool>(),
    ) {
        let (src, dst) = if v6 { (SRC6, DST6) } else { (SRC, DST) };
        let mut c = Compressor::new(id(CONN_ID), iss);
        let mut d = Decompressor::new(id(CONN_ID), SRC_PORT, DST_PORT, iss);
        for (f, payload, retransmission, peer_ack) in &segments {
            let tcp = f.repr(payload);
            let compressed = c.compress(&tcp, *retransmission).unwrap();
            let bytes = emit_vec(&compressed, src, dst);
            prop_assert_eq!(CompressedRepr::parse(&bytes, src, dst, true), Ok(compressed));
            prop_assert_eq!(d.decompress(&bytes, src, dst), Ok(tcp));
            if let Some(ack) = peer_ack {
                c.on_ack_received(*ack);
            }
        }
    }

    /// The TCP-like sender over a lossless link: everything arrives exact.
    #[test]
    fn tcp_like_traffic_round_trips(
        iss in any::<u32>(),
        timestamps in any::<bool>(),
        v6 in any::<bool>(),
        steps in prop::collection::vec(step(0.0), 1..150),
    ) {
        let outcome = run_link(iss, timestamps, v6, &steps)?;
        prop_assert_eq!(outcome.refused, 0);
        prop_assert_eq!(outcome.delivered, steps.len());
    }

    /// The TCP-like sender over a link losing about a third of the segments:
    /// each segment that arrives is rebuilt exactly or refused, never
    /// wrong. (With this compressor none is even refused.)
    #[test]
    fn lossy_link_never_yields_a_wrong_segment(
        iss in any::<u32>(),
        timestamps in any::<bool>(),
        v6 in any::<bool>(),
        steps in prop::collection::vec(step(0.35), 1..200),
    ) {
        let outcome = run_link(iss, timestamps, v6, &steps)?;
        prop_assert_eq!(outcome.refused, 0);
    }

    /// Every single-bit flip of a compressed segment fails the checksum (or
    /// the parse), over IPv4 and IPv6.
    #[test]
    fn flipped_bits_are_caught(
        f in fields(),
        payload in prop::collection::vec(any::<u8>(), 0..64),
        seq in any::<bool>(),
        window_ack in any::<bool>(),
        v6 in any::<bool>(),
    ) {
        let (src, dst) = if v6 { (SRC6, DST6) } else { (SRC, DST) };
        let tcp = f.repr(&payload);
        let mut c = Compressor::new(id(CONN_ID), 0);
        let mut compressed = c.compress(&tcp, false).unwrap();
        // Both with and without the fields a compressor may leave out.
        if !seq {
            compressed.seq = None;
        }
        if !window_ack {
            compressed.window_ack = None;
        }
        let bytes = emit_vec(&compressed, src, dst);
        prop_assert_eq!(CompressedRepr::parse(&bytes, src, dst, true), Ok(compressed));
        assert_flips_are_caught(&bytes, src, dst);
    }

    /// Arbitrary bytes never panic the parser or the decompressor.
    #[test]
    fn random_bytes_never_panic(
        bytes in prop::collection::vec(prop_oneof![Just(0u8), Just(0xffu8), any::<u8>()], 0..80),
    ) {
        let mut d = decompressor_after_syn_ack(1);
        let _ = peek_conn_id(&bytes);
        let _ = d.decompress(&bytes, SRC, DST);
        if let Ok(parsed) = CompressedRepr::parse(&bytes, SRC, DST, false) {
            let again = emit_vec(&parsed, SRC, DST);
            prop_assert_eq!(CompressedRepr::parse(&again, SRC, DST, true), Ok(parsed));
            let _ = d.reconstruct(&parsed);
        }
    }
}

/// The loss test is not vacuous: over a fixed script with losses, many
/// delivered segments leave out S or A. (That a false acknowledgment would
/// make a wrong segment is shown in
/// `lost_window_ack_change_is_repeated_until_acknowledged`.)
#[test]
fn loss_runs_exercise_omission() {
    let steps: Vec<Step> = (0..300)
        .map(|i| Step {
            kind: match i % 5 {
                0 | 1 => Kind::Data {
                    len: 100,
                    push: false,
                },
                2 => Kind::Retransmit { len: 100 },
                _ => Kind::PureAck,
            },
            ack_advance: (i % 17 == 0).then_some(10),
            window: (i % 23 == 0).then_some(1000 + i as u16),
            tsecr_advance: Some(1),
            snack: None,
            sack: None,
            record_boundary: false,
            urgent: None,
            peer_acks: i % 3 == 0,
            lost: i % 7 == 3,
        })
        .collect();
    let outcome = run_link(77, true, false, &steps).unwrap();
    assert_eq!(outcome.refused, 0);
    assert!(outcome.delivered > 250);
    assert!(outcome.with_omissions > outcome.delivered / 3, "{outcome:?}");
}

/// A connection opened on IP protocol 106 (the RI's standalone builds)
/// checksums its compressed segments over a pseudo-header holding 106, the
/// uncompressed protocol's number; one on TCP over 6. Both are accepted.
#[test]
fn the_checksum_covers_the_uncompressed_protocols_number() {
    let segment = with_fields(
        Some(WindowAck {
            window: 0x2000,
            ack: 77,
        }),
        Some(5),
        Some(6),
    );
    for protocol in [6u8, 106] {
        let mut packet = Vec::new();
        scps_proto::wire::build_compressed_packet_as(SRC, DST, protocol, 64, &segment, &mut packet).unwrap();
        let compressed = &packet[20..];
        let mut all = pseudo_header_v4(protocol, compressed.len());
        all.extend_from_slice(compressed);
        assert_eq!(
            internet_checksum(&all),
            0,
            "protocol {protocol} in the pseudo-header"
        );
        assert!(CompressedRepr::parse(compressed, SRC, DST, true).is_ok());
    }
}
