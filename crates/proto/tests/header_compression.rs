//! Header compression on the endpoint (IP protocol 105, offered by a bit
//! of the SCPS capabilities option; docs/spec/compression.md): negotiation
//! in the SYNs, whole transfers between two endpoints of ours with every
//! segment after the SYNs compressed, recovery after lost compressed
//! segments, and the drops a segment that cannot be reconstructed costs.

mod harness;

use std::net::SocketAddr;
use std::time::Duration;

use harness::pair::{A6, B6, Exchanged, Pair, data, exchange};
use harness::{Harness, OURS, PEER_ISS, Seg, THEIRS};
use scps_proto::wire::{
    CompressedRepr, IPPROTO_SCPS_COMPRESSED, IPPROTO_TCP, IpRepr, ScpsCapabilities, Snack, TcpFlags,
    TcpOptions, WindowAck, build_compressed_packet,
};
use scps_proto::{Config, ConnectionHandle};

fn compressing() -> Config {
    Config {
        scps: true,
        header_compression: true,
        ..Config::default()
    }
}

fn offer(connection_id: u8) -> ScpsCapabilities {
    ScpsCapabilities {
        snack1: true,
        compression: true,
        connection_id,
        ..ScpsCapabilities::default()
    }
}

#[test]
fn our_syn_offers_compression_with_an_id_only_when_configured() {
    let mut h = Harness::new(compressing());
    h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let caps = h.one().options.scps_capabilities.expect("SCPS offered");
    assert!(caps.compression, "{caps:?}");
    assert_ne!(caps.connection_id, 0, "an id from 1 to 255");

    // SCPS without compression: the bit clear and id 0, as the spec says.
    let mut h = Harness::new(Config {
        header_compression: false,
        ..compressing()
    });
    h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    let caps = h.one().options.scps_capabilities.expect("SCPS offered");
    assert!(!caps.compression && caps.connection_id == 0, "{caps:?}");

    // Compression is an SCPS capability: without SCPS, nothing is offered.
    let mut h = Harness::new(Config {
        scps: false,
        ..compressing()
    });
    h.ep.connect(h.now, THEIRS, Some(OURS), None).unwrap();
    assert_eq!(h.one().options.scps_capabilities, None);
}

#[test]
fn connections_to_one_peer_get_different_ids() {
    let mut h = Harness::new(compressing());
    let mut ids = Vec::new();
    for port in 40000..40010 {
        let local = SocketAddr::new(OURS.ip(), port);
        h.ep.connect(h.now, THEIRS, Some(local), None).unwrap();
        ids.push(h.one().options.scps_capabilities.unwrap().connection_id);
    }
    let mut distinct = ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(distinct.len(), ids.len(), "ids {ids:?}");
}

/// A SYN from the scripted peer to our listener, offering `caps`.
fn peer_syn(caps: Option<ScpsCapabilities>) -> Seg {
    let mut syn = Seg::new(TcpFlags::SYN, PEER_ISS - 1).mss(1460).ts(1, 0);
    syn.options.scps_capabilities = caps;
    syn
}

#[test]
fn a_syn_ack_offers_compression_only_if_the_syn_did_with_a_valid_id() {
    for (caps, expected) in [
        (Some(offer(9)), true),
        (Some(offer(0)), false),
        (Some(ScpsCapabilities::default()), false),
        (None, false),
    ] {
        let mut h = Harness::new(compressing());
        h.ep.listen(OURS, None).unwrap();
        h.send(&peer_syn(caps));
        let syn_ack = h.one();
        assert!(syn_ack.has(TcpFlags::SYN) && syn_ack.has(TcpFlags::ACK));
        let ours = syn_ack.options.scps_capabilities;
        assert_eq!(
            ours.is_some_and(|c| c.compression && c.connection_id != 0),
            expected,
            "peer offered {caps:?}, we answered {ours:?}"
        );
    }
}

/// The id the scripted peer announces.
const PEER_ID: u8 = 9;

/// Our listener after the scripted peer's SYN offering compression with
/// `PEER_ID`; returns the harness and our SYN-ACK.
fn listener_with_compressing_peer() -> (Harness, Seg) {
    let mut h = Harness::new(compressing());
    h.ep.listen(OURS, None).unwrap();
    h.send(&peer_syn(Some(offer(PEER_ID))));
    let syn_ack = h.one();
    assert!(syn_ack.options.scps_capabilities.is_some_and(|c| c.compression));
    (h, syn_ack)
}

/// The scripted peer's compressed segment: its handshake ACK when
/// `window_ack` is given, else the same leaving out the window and
/// acknowledgment number.
fn peer_compressed(id: u8, window_ack: Option<WindowAck>, payload: &[u8]) -> Vec<u8> {
    let segment = CompressedRepr {
        conn_id: id,
        flags: TcpFlags::ACK,
        urgent: 0,
        window_ack,
        seq: Some(PEER_ISS),
        tsval: Some(2),
        tsecr: Some(0),
        record_boundary: false,
        options: TcpOptions::default(),
        payload,
    };
    let mut packet = Vec::new();
    build_compressed_packet(THEIRS.ip(), OURS.ip(), 64, &segment, &mut packet).unwrap();
    packet
}

#[test]
fn compressed_segments_that_cannot_be_used_are_dropped_and_counted_by_cause() {
    let (mut h, _) = listener_with_compressing_peer();
    // Our decompressor has seen only the peer's SYN: a segment without the
    // window and acknowledgment number cannot be reconstructed.
    let packet = peer_compressed(PEER_ID, None, b"");
    h.ep.handle_packet(h.now, &packet);
    assert_eq!(h.ep.stats().dropped("compressed_field_unknown"), 1);

    // An id the peer never announced.
    let packet = peer_compressed(PEER_ID + 1, None, b"");
    h.ep.handle_packet(h.now, &packet);
    assert_eq!(h.ep.stats().dropped("no_compressed_connection"), 1);

    // A damaged one.
    let mut packet = peer_compressed(PEER_ID, None, b"x");
    *packet.last_mut().unwrap() ^= 0x20;
    h.ep.handle_packet(h.now, &packet);
    assert_eq!(h.ep.stats().dropped("bad_checksum"), 1);

    // A truncated one: the control byte says a sequence number follows.
    let packet = peer_compressed(PEER_ID, None, b"");
    let (ip, _) = IpRepr::parse(&packet).unwrap();
    let mut short = packet[..ip.header_len() + 4].to_vec();
    fix_ip_length(&mut short);
    h.ep.handle_packet(h.now, &short);
    assert_eq!(h.ep.stats().dropped("truncated"), 1);
    assert_eq!(h.ep.stats().total_dropped(), 4, "{:?}", h.ep.stats().drops);
    assert_eq!(h.ep.accept(OURS), None, "none of them completed the handshake");
}

/// Rewrites the IPv4 total length and header checksum of a packet cut
/// short.
fn fix_ip_length(packet: &mut [u8]) {
    let len = packet.len() as u16;
    packet[2..4].copy_from_slice(&len.to_be_bytes());
    packet[10..12].copy_from_slice(&[0, 0]);
    let mut sum: u32 = 0;
    for word in packet[..20].chunks(2) {
        sum += u32::from(u16::from_be_bytes([word[0], word[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    packet[10..12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
}

#[test]
fn a_compressed_handshake_ack_completes_the_handshake_and_counts() {
    let (mut h, syn_ack) = listener_with_compressing_peer();
    let window_ack = WindowAck {
        window: 65535,
        ack: syn_ack.seq.wrapping_add(1),
    };
    let packet = peer_compressed(PEER_ID, Some(window_ack), b"hello");
    h.ep.handle_packet(h.now, &packet);
    assert_eq!(h.ep.stats().total_dropped(), 0, "{:?}", h.ep.stats().drops);
    let conn = h.ep.accept(OURS).expect("established by the compressed ACK");
    assert_eq!(h.read(conn), b"hello");
    let stats = h.ep.stats_of(conn).unwrap();
    assert!(stats.header_compression);
    assert_eq!(stats.compressed_segments_received, 1);
    assert_eq!(stats.decompression_failures, 0);
}

/// Header bytes of the segments sent one way (`to_b`) in a log, by kind:
/// (data segments, pure ACKs); SYNs and FINs left out.
fn header_sizes(log: &[(bool, Vec<u8>)], to_b: bool) -> (Vec<usize>, Vec<usize>) {
    let (mut data, mut acks) = (Vec::new(), Vec::new());
    for (_, packet) in log.iter().filter(|(dir, _)| *dir == to_b) {
        let (ip, segment) = IpRepr::parse(packet).unwrap();
        let (header, payload, fin) = match ip.protocol() {
            IPPROTO_SCPS_COMPRESSED => {
                let c = CompressedRepr::parse(segment, ip.src(), ip.dst(), true).unwrap();
                (segment.len() - c.payload.len(), c.payload.len(), c.flags.fin())
            }
            IPPROTO_TCP => {
                let t = scps_proto::wire::TcpRepr::parse(segment, ip.src(), ip.dst(), true).unwrap();
                if t.flags.syn() {
                    continue;
                }
                (segment.len() - t.payload.len(), t.payload.len(), t.flags.fin())
            }
            other => panic!("protocol {other} on the wire"),
        };
        if fin {
            continue;
        }
        if payload > 0 { &mut data } else { &mut acks }.push(header);
    }
    (data, acks)
}

fn most_common(sizes: &[usize]) -> usize {
    let mut counts = std::collections::BTreeMap::new();
    for &s in sizes {
        *counts.entry(s).or_insert(0) += 1;
    }
    counts
        .into_iter()
        .max_by_key(|&(_, n)| n)
        .map(|(s, _)| s)
        .unwrap_or(0)
}

#[test]
fn every_segment_after_the_syns_travels_compressed_over_ipv4_and_ipv6() {
    for (a, b) in [(harness::pair::A, harness::pair::B), (A6, B6)] {
        let mut pair = Pair::with_addresses(compressing(), Duration::from_millis(40), a, b);
        pair.record = true;
        let (to_b, to_a) = (data(200_000, 1), data(100_000, 2));
        let Exchanged { at_a, at_b, ca, cb } = exchange(&mut pair, &to_b, &to_a);
        assert!(at_b == to_b && at_a == to_a, "content differs ({a})");
        let mut compressed = [0u64; 2];
        for (to_b, packet) in &pair.log {
            let (ip, _) = IpRepr::parse(packet).unwrap();
            let syn = ip.protocol() == IPPROTO_TCP
                && scps_proto::wire::parse_tcp_packet(packet)
                    .unwrap()
                    .1
                    .is_some_and(|t| t.flags.syn());
            assert!(
                syn || ip.protocol() == IPPROTO_SCPS_COMPRESSED,
                "protocol {} for a segment that is not a SYN ({a})",
                ip.protocol()
            );
            if !syn {
                compressed[usize::from(!to_b)] += 1;
            }
        }
        let (sa, sb) = (pair.a.stats_of(ca).unwrap(), pair.b.stats_of(cb).unwrap());
        assert!(sa.header_compression && sb.header_compression);
        assert_eq!(sa.compressed_segments_sent, compressed[0], "({a})");
        assert_eq!(sb.compressed_segments_sent, compressed[1], "({a})");
        assert_eq!(
            sb.compressed_segments_received, compressed[0],
            "a lossless link ({a})"
        );
        assert_eq!(sa.compressed_segments_received, compressed[1], "({a})");
        assert_eq!(pair.a.stats().total_dropped() + pair.b.stats().total_dropped(), 0);
    }
}

#[test]
fn headers_shrink_from_32_to_16_bytes_per_data_segment_and_18_per_ack() {
    let mut sizes = Vec::new();
    for header_compression in [false, true] {
        let config = Config {
            header_compression,
            ..compressing()
        };
        let mut pair = Pair::new(config, Duration::from_millis(40));
        pair.record = true;
        let to_b = data(500_000, 3);
        let Exchanged { at_b, .. } = exchange(&mut pair, &to_b, b"");
        assert!(at_b == to_b, "content differs");
        let (data_headers, _) = header_sizes(&pair.log, true);
        let (_, ack_headers) = header_sizes(&pair.log, false);
        let wire_bytes: usize = pair.log.iter().map(|(_, p)| p.len()).sum();
        println!(
            "compression {header_compression}: {} data segments, header {} bytes (mean {:.2}); {} pure ACKs, \
             header {} bytes (mean {:.2}); {wire_bytes} bytes of IPv4 packets both ways",
            data_headers.len(),
            most_common(&data_headers),
            data_headers.iter().sum::<usize>() as f64 / data_headers.len() as f64,
            ack_headers.len(),
            most_common(&ack_headers),
            ack_headers.iter().sum::<usize>() as f64 / ack_headers.len() as f64,
        );
        sizes.push((most_common(&data_headers), most_common(&ack_headers)));
    }
    // TCP with timestamps: 20 + 12. Compressed (spec "Compressed header"):
    // id, control 0x62 or 0x66, sequence number, both timestamps, checksum
    // on data; an ACK has the window and acknowledgment number instead of
    // the sequence number (control 0x61).
    assert_eq!(sizes, vec![(32, 32), (16, 18)]);
}

#[test]
fn losing_the_first_compressed_segments_after_the_handshake_is_repaired() {
    // Each way, the first three compressed segments are lost: A's
    // handshake ACK and first data, B's first ACKs. Every later header
    // must still be reconstructed right.
    for lost in [1, 3, 6] {
        let mut pair = Pair::new(
            Config {
                rto_min: Duration::from_millis(200),
                ..compressing()
            },
            Duration::from_millis(30),
        );
        let mut seen = [0u64; 2];
        pair.lose(move |to_b, _, packet| {
            let (ip, _) = IpRepr::parse(packet).unwrap();
            if ip.protocol() != IPPROTO_SCPS_COMPRESSED {
                return false;
            }
            let n = &mut seen[usize::from(!to_b)];
            *n += 1;
            *n <= lost
        });
        let (to_b, to_a) = (data(100_000, 4), data(60_000, 5));
        let Exchanged { at_a, at_b, ca, cb } = exchange(&mut pair, &to_b, &to_a);
        assert!(at_b == to_b && at_a == to_a, "content differs ({lost} lost)");
        let (sa, sb) = (pair.a.stats_of(ca).unwrap(), pair.b.stats_of(cb).unwrap());
        assert!(sa.header_compression && sb.header_compression);
        assert_eq!(
            sa.decompression_failures + sb.decompression_failures,
            0,
            "a loss never leaves a header the receiver cannot rebuild ({lost} lost)"
        );
    }
}

/// A small deterministic generator for the random losses (splitmix64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[test]
fn random_losses_both_ways_are_repaired_and_every_byte_checked() {
    let seed = std::env::var("SCPS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(7);
    println!("seed {seed} (SCPS_SEED replays)");
    for (a, b) in [(harness::pair::A, harness::pair::B), (A6, B6)] {
        for sack in [true, false] {
            let mut pair = Pair::with_addresses(
                Config {
                    sack,
                    rto_min: Duration::from_millis(200),
                    ..compressing()
                },
                Duration::from_millis(25),
                a,
                b,
            );
            let mut rng = Rng(seed);
            // About 4% of packets each way, data, ACKs and FINs alike.
            pair.lose(move |_, _, _| rng.next() % 100 < 4);
            let (to_b, to_a) = (data(400_000, 6), data(200_000, 7));
            let Exchanged { at_a, at_b, ca, cb } = exchange(&mut pair, &to_b, &to_a);
            let what = format!("seed {seed}, {a}, sack {sack}");
            assert!(at_b == to_b && at_a == to_a, "content differs ({what})");
            let (sa, sb) = (pair.a.stats_of(ca).unwrap(), pair.b.stats_of(cb).unwrap());
            assert!(sa.bytes_retransmitted > 0, "losses happened ({what})");
            assert_eq!(
                sa.decompression_failures + sb.decompression_failures,
                0,
                "({what}) drops {:?} {:?}",
                pair.a.stats().drops,
                pair.b.stats().drops
            );
        }
    }
}

#[test]
fn plain_tcp_peers_and_addresses_are_unaffected() {
    // One side compresses, the other does not offer it: plain segments.
    let mut pair = Pair::new(compressing(), Duration::from_millis(10));
    pair.b = scps_proto::Endpoint::new(
        scps_proto::EndpointConfig {
            connection: Config {
                scps: true,
                ..Config::default()
            },
            ..Default::default()
        },
        [pair.server],
    )
    .unwrap();
    pair.record = true;
    let to_b = data(50_000, 8);
    let Exchanged { at_b, ca, .. } = exchange(&mut pair, &to_b, b"");
    assert!(at_b == to_b);
    assert!(!pair.a.stats_of(ca).unwrap().header_compression);
    assert!(
        pair.log
            .iter()
            .all(|(_, p)| IpRepr::parse(p).unwrap().0.protocol() == IPPROTO_TCP)
    );
}

/// A connection between our listener at `ours` and a scripted RI-like peer
/// at `theirs`, both offering SNACK and compression, the peer also MSS 1460
/// and timestamps (in force if our configuration offers them too). Every segment after the SYNs travels compressed; the peer's
/// carry the window and acknowledgment number, so our decompressor never
/// needs to infer them.
struct CompressingPeer {
    h: Harness,
    ours: SocketAddr,
    theirs: SocketAddr,
    /// Our initial sequence number.
    our_iss: u32,
    /// The peer's timestamp clock, and our latest TSval (echoed), when
    /// timestamps are in force.
    timestamps: bool,
    peer_ts: u32,
    our_ts: u32,
}

/// A segment we sent, decompressed as far as the peer needs.
struct OurSegment {
    /// Sequence number, relative to the first byte after our SYN; a pure
    /// ACK may leave it out.
    offset: Option<u32>,
    payload: Vec<u8>,
    snacks: Vec<Snack>,
    /// The IP packet's length, bytes.
    packet_len: usize,
    /// The A field, if the header carried it.
    window_ack: Option<WindowAck>,
    fin: bool,
}

impl CompressingPeer {
    /// The connection, established, with our side's handle.
    fn connect(config: Config, ours: SocketAddr, theirs: SocketAddr) -> (CompressingPeer, ConnectionHandle) {
        let mut h = Harness::at(config, ours.ip());
        h.ep.listen(ours, None).unwrap();
        h.send_from(theirs, ours, &peer_syn(Some(offer(PEER_ID))));
        let mut buf = Vec::new();
        assert!(h.ep.poll_transmit(h.now, &mut buf), "a SYN-ACK");
        let syn_ack = scps_proto::wire::parse_tcp_packet(&buf).unwrap().1.unwrap();
        assert!(syn_ack.flags.syn() && syn_ack.options.scps_capabilities.is_some_and(|c| c.compression));
        let mut peer = CompressingPeer {
            our_iss: syn_ack.seq,
            timestamps: syn_ack.options.timestamps.is_some(),
            our_ts: syn_ack.options.timestamps.map_or(0, |ts| ts.tsval),
            peer_ts: 1,
            h,
            ours,
            theirs,
        };
        peer.send(0, b"", 0, &[]);
        let conn = peer.h.ep.accept(ours).expect("established by the compressed ACK");
        let stats = peer.h.ep.stats_of(conn).unwrap();
        assert!(stats.header_compression && stats.snack, "{stats:?}");
        assert_eq!(stats.timestamps, peer.timestamps);
        (peer, conn)
    }

    /// The peer sends `payload` at `offset` in its stream, acknowledging
    /// our first `acked` bytes and naming `snacks`.
    fn send(&mut self, offset: u32, payload: &[u8], acked: u32, snacks: &[Snack]) {
        let mut options = TcpOptions::default();
        for &snack in snacks {
            options.snacks.push(snack);
        }
        self.peer_ts += 1;
        let segment = CompressedRepr {
            conn_id: PEER_ID,
            flags: TcpFlags::ACK,
            urgent: 0,
            window_ack: Some(WindowAck {
                window: 65535,
                ack: self.our_iss.wrapping_add(1 + acked),
            }),
            seq: Some(PEER_ISS.wrapping_add(offset)),
            tsval: self.timestamps.then_some(self.peer_ts),
            tsecr: self.timestamps.then_some(self.our_ts),
            record_boundary: false,
            options,
            payload,
        };
        let mut packet = Vec::new();
        build_compressed_packet(self.theirs.ip(), self.ours.ip(), 64, &segment, &mut packet).unwrap();
        self.h.ep.handle_packet(self.h.now, &packet);
    }

    /// Everything we send now, each segment compressed.
    fn output(&mut self) -> Vec<OurSegment> {
        let (mut out, mut buf) = (Vec::new(), Vec::new());
        while self.h.ep.poll_transmit(self.h.now, &mut buf) {
            let (ip, segment) = IpRepr::parse(&buf).unwrap();
            assert_eq!(ip.protocol(), IPPROTO_SCPS_COMPRESSED);
            assert_eq!((ip.src(), ip.dst()), (self.ours.ip(), self.theirs.ip()));
            let c = CompressedRepr::parse(segment, ip.src(), ip.dst(), true).unwrap();
            self.our_ts = c.tsval.unwrap_or(self.our_ts);
            out.push(OurSegment {
                offset: c.seq.map(|seq| seq.wrapping_sub(self.our_iss.wrapping_add(1))),
                payload: c.payload.to_vec(),
                snacks: c.options.snacks.as_slice().to_vec(),
                packet_len: buf.len(),
                window_ack: c.window_ack,
                fin: c.flags.fin(),
            });
        }
        out
    }
}

fn snack(hole_offset: u16, hole_size: u16) -> Snack {
    Snack {
        hole_offset,
        hole_size,
    }
}

const OURS6: SocketAddr = SocketAddr::new(A6, 40000);
const THEIRS6: SocketAddr = SocketAddr::new(B6, 80);

#[test]
fn with_compression_our_receiver_names_holes_in_units_of_the_payload_the_sender_sends() {
    // docs/spec/snack.md: units of the sender's maximum payload, which
    // with compressed headers (16 bytes with timestamps, 8 without) is the
    // MSS plus the 20-byte TCP header less those: 1464 bytes over IPv4 (MSS
    // 1460), 1444 over IPv6 (our MSS offer, 1440, is the smaller), 1472
    // without timestamps. The SMSS, what a TCP header leaves, is the MSS
    // less 12 bytes of timestamps option, when in force.
    let no_timestamps = Config {
        timestamps: false,
        ..compressing()
    };
    for (config, ours, theirs, unit, smss) in [
        (compressing(), OURS, THEIRS, 1464, 1448),
        (compressing(), OURS6, THEIRS6, 1444, 1428),
        (no_timestamps, OURS, THEIRS, 1472, 1460),
    ] {
        // The RI's full segments fill the compressed unit; a sender that
        // leaves the room compression frees unused sends SMSS-sized ones.
        // Either way the unit is the largest payload the sender has sent:
        // segments 1 and 3 are missing, one unit at the ACK point and one
        // two units past it.
        for segment_bytes in [unit, smss] {
            let expected = [snack(0, 1), snack(2, 1)];
            let (mut p, conn) = CompressingPeer::connect(config.clone(), ours, theirs);
            p.output();
            let stream = data(5 * segment_bytes as usize, 11);
            let mut named = Vec::new();
            for i in [0, 2, 4] {
                let at = i * segment_bytes;
                p.send(at, &stream[at as usize..(at + segment_bytes) as usize], 0, &[]);
                named.extend(p.output().into_iter().flat_map(|s| s.snacks));
            }
            assert_eq!(named, expected, "{segment_bytes}-byte segments from {theirs}");
            assert_eq!(p.h.ep.stats_of(conn).unwrap().snacks_sent, 2);
            // The repairs fill the holes: the stream reads back whole.
            for i in [1, 3] {
                let at = i * segment_bytes;
                p.send(at, &stream[at as usize..(at + segment_bytes) as usize], 0, &[]);
            }
            assert!(p.h.read(conn) == stream, "content differs");
        }
    }
}

#[test]
fn with_compression_our_sender_resends_what_an_ri_snack_names_in_its_units() {
    for (ours, theirs, unit) in [(OURS, THEIRS, 1464), (OURS6, THEIRS6, 1444)] {
        let config = Config {
            initial_window_segments: 10,
            ..compressing()
        };
        let (mut p, conn) = CompressingPeer::connect(config, ours, theirs);
        p.output();
        let stream = data(20 * unit as usize, 12);
        assert_eq!(p.h.ep.send(conn, &stream).unwrap(), stream.len());
        // The first flight carries A (the peer does not hold our window and
        // acknowledgment number yet), 6 bytes less payload each.
        let first = p.output();
        assert_eq!(first.len(), 10, "the initial window of 10 segments");
        let carried: u32 = first.iter().map(|s| s.payload.len() as u32).sum();
        assert!(first.iter().all(|s| s.payload.len() as u32 == unit - 6));
        // Once the peer acknowledges them, our segments are one unit each.
        p.send(0, b"", carried, &[]);
        let sent = p.output();
        let lens: Vec<_> = sent.iter().map(|s| s.payload.len() as u32).collect();
        // 20 units less the first flight: 10 units and the 60 bytes the
        // first flight left.
        let mut expected = vec![unit; 10];
        expected.push(60);
        assert_eq!(lens, expected, "our segments are the SNACK unit");
        // The peer holds the first of them and names one unit past the ACK
        // point, two units long: exactly our second and third segments.
        p.send(0, b"", carried + unit, &[snack(1, 2)]);
        let resent: Vec<_> = p.output().into_iter().filter(|s| !s.payload.is_empty()).collect();
        assert_eq!(resent.len(), 2, "two segments resent from {ours}");
        for (k, segment) in resent.iter().enumerate() {
            let at = carried + (2 + k as u32) * unit;
            assert_eq!(segment.offset, Some(at));
            assert!(
                segment.payload == stream[at as usize..(at + unit) as usize],
                "its bytes"
            );
        }
        assert_eq!(p.h.ep.stats_of(conn).unwrap().snacked_segments, 2);
    }
}

/// The path's packet size in these tests: our MTU, 1500 bytes (IPv4 and
/// IPv6 alike; over IPv6 our MSS offer, 1440, is the smaller).
const PATH_PACKET_BYTES: usize = 1500;

/// The paths of the scripted peer: (configuration, our address, theirs,
/// payload of a full compressed segment with the RI's header).
fn compressed_paths() -> [(Config, SocketAddr, SocketAddr, u32); 3] {
    let no_timestamps = Config {
        timestamps: false,
        ..compressing()
    };
    [
        (compressing(), OURS, THEIRS, 1464),
        (no_timestamps, OURS, THEIRS, 1472),
        (compressing(), OURS6, THEIRS6, 1444),
    ]
}

/// Sends all we have to the peer, which acknowledges everything it has
/// received after each flight (lossless, in order); returns what we sent.
fn flights_to_peer(p: &mut CompressingPeer, peer_offset: u32) -> Vec<OurSegment> {
    let mut all = Vec::new();
    let mut acked = 0;
    loop {
        let flight = p.output();
        if flight.is_empty() {
            return all;
        }
        for segment in &flight {
            if let Some(at) = segment.offset {
                acked = acked.max(at + segment.payload.len() as u32 + u32::from(segment.fin));
            }
        }
        p.send(peer_offset, b"", acked, &[]);
        all.extend(flight);
    }
}

/// Checks that every byte `segments` carry is the byte of `stream` at its
/// offset; returns how many bytes of the stream they cover.
fn assert_carry(segments: &[OurSegment], stream: &[u8], what: &str) -> usize {
    let mut covered = vec![false; stream.len()];
    for segment in segments {
        let Some(at) = segment.offset else { continue };
        let at = at as usize;
        let end = at + segment.payload.len();
        assert!(
            segment.payload == stream[at..end],
            "content differs at {at} ({what})"
        );
        covered[at..end].fill(true);
    }
    covered.iter().filter(|&&c| c).count()
}

#[test]
fn a_bulk_write_fills_every_compressed_packet_to_the_path_size_and_no_more() {
    // docs/spec/compression.md, "The sizes that result": the RI's data
    // segments carry 1464 bytes under a 16-byte header in a 1500-byte
    // packet. Ours do too once the peer holds our window and
    // acknowledgment number; before that (the first flight) they carry A
    // and 6 bytes less.
    for (config, ours, theirs, unit) in compressed_paths() {
        let what = format!("{theirs}, timestamps {}", config.timestamps);
        let (mut p, conn) = CompressingPeer::connect(config, ours, theirs);
        p.output();
        // A whole number of units: the FIN cannot ride on the last one.
        let stream = data(40 * unit as usize, 13);
        assert_eq!(p.h.ep.send(conn, &stream).unwrap(), stream.len());
        p.h.ep.shutdown(conn).unwrap();
        let sent = flights_to_peer(&mut p, 0);
        assert_eq!(assert_carry(&sent, &stream, &what), stream.len(), "({what})");
        assert!(sent.iter().any(|s| s.fin), "the FIN went ({what})");
        let largest = sent.iter().map(|s| s.packet_len).max().unwrap();
        assert_eq!(largest, PATH_PACKET_BYTES, "never more than the path ({what})");
        let data: Vec<_> = sent.iter().filter(|s| !s.payload.is_empty()).collect();
        let (last, full) = data.split_last().unwrap();
        assert!(
            full.iter().all(|s| s.packet_len == PATH_PACKET_BYTES),
            "every data packet but the last fills the path ({what}): {:?}",
            data.iter().map(|s| s.packet_len).collect::<Vec<_>>()
        );
        assert!(last.packet_len <= PATH_PACKET_BYTES);
        let ri_like = full
            .iter()
            .filter(|s| s.window_ack.is_none() && s.payload.len() as u32 == unit)
            .count();
        assert!(
            ri_like * 10 >= full.len() * 6,
            "{ri_like} of {} data segments carry {unit} bytes under the RI's header ({what})",
            full.len()
        );
        assert_eq!(p.h.ep.stats_of(conn).unwrap().smss, u64::from(unit), "({what})");
    }
}

/// Our steady bulk transfer to the peer, every segment one unit without
/// A, and what remains to send of `stream` (from the returned offset).
fn steady_transfer(p: &mut CompressingPeer, conn: ConnectionHandle, stream: &[u8], unit: u32) -> u32 {
    assert_eq!(p.h.ep.send(conn, stream).unwrap(), stream.len());
    // The first flight carries A; the peer's acknowledgment confirms it.
    let first = p.output();
    let acked: u32 = first.iter().map(|s| s.payload.len() as u32).sum();
    p.send(0, b"", acked, &[]);
    let steady = p.output();
    assert!(
        steady.len() >= 4
            && steady
                .iter()
                .all(|s| s.window_ack.is_none() && s.payload.len() as u32 == unit),
        "steady full segments"
    );
    acked
}

#[test]
fn a_data_segment_that_must_carry_the_acknowledgment_still_fits_the_path() {
    for (config, ours, theirs, unit) in compressed_paths() {
        let what = format!("{theirs}, timestamps {}", config.timestamps);
        let (mut p, conn) = CompressingPeer::connect(config, ours, theirs);
        p.output();
        let stream = data(80 * unit as usize, 14);
        let acked = steady_transfer(&mut p, conn, &stream, unit);
        // The peer sends data: our acknowledgment number changes, and our
        // next segments must carry it (A, 6 bytes) until the peer confirms.
        p.send(0, &data(50, 15), acked + 2 * unit, &[]);
        let sent = p.output();
        let with_ack: Vec<_> = sent
            .iter()
            .filter(|s| s.window_ack.is_some_and(|wa| wa.ack == PEER_ISS.wrapping_add(50)))
            .collect();
        assert!(!with_ack.is_empty(), "the new acknowledgment went ({what})");
        assert!(
            with_ack
                .iter()
                .all(|s| s.payload.len() as u32 == unit - 6 && s.packet_len == PATH_PACKET_BYTES),
            "6 bytes less payload, still a full packet ({what}): {:?}",
            with_ack
                .iter()
                .map(|s| (s.payload.len(), s.packet_len))
                .collect::<Vec<_>>()
        );
        assert!(sent.iter().all(|s| s.packet_len <= PATH_PACKET_BYTES), "({what})");
        assert!(assert_carry(&sent, &stream, &what) > 0);
    }
}

#[test]
fn a_full_segment_resent_after_the_acknowledgment_changed_still_fits_the_path() {
    for (config, ours, theirs, unit) in compressed_paths() {
        let what = format!("{theirs}, timestamps {}", config.timestamps);
        let (mut p, conn) = CompressingPeer::connect(config, ours, theirs);
        p.output();
        let stream = data(80 * unit as usize, 16);
        let acked = steady_transfer(&mut p, conn, &stream, unit);
        // The peer sends data and names our first full segment lost: it is
        // resent as recorded, one unit, and there is no room for the new
        // acknowledgment beside it.
        p.send(0, &data(50, 17), acked, &[snack(0, 1)]);
        let sent = p.output();
        let resent = sent.iter().find(|s| s.offset == Some(acked)).expect("the resend");
        assert_eq!(resent.payload.len() as u32, unit, "({what})");
        assert!(resent.payload == stream[acked as usize..(acked + unit) as usize]);
        assert!(
            resent.packet_len <= PATH_PACKET_BYTES,
            "{} bytes ({what})",
            resent.packet_len
        );
        assert!(resent.window_ack.is_none(), "({what})");
        // So a segment after it carries the acknowledgment.
        assert!(
            sent.iter()
                .any(|s| s.window_ack.is_some_and(|wa| wa.ack == PEER_ISS.wrapping_add(50))),
            "the new acknowledgment followed ({what})"
        );
        assert!(sent.iter().all(|s| s.packet_len <= PATH_PACKET_BYTES), "({what})");
    }
}

#[test]
fn segments_longer_than_the_mss_we_offered_are_accepted_from_a_compressing_peer() {
    // The RI fills its packets under a compressed header: 1464 or 1472
    // payload bytes, more than the MSS we offered (1460) and our SMSS
    // without compression (1448 with timestamps).
    for (config, ours, theirs, unit) in compressed_paths() {
        let what = format!("{theirs}, timestamps {}", config.timestamps);
        let (mut p, conn) = CompressingPeer::connect(config, ours, theirs);
        p.output();
        let stream = data(4 * unit as usize, 18);
        for chunk in stream.chunks(unit as usize) {
            let at = (chunk.as_ptr() as usize - stream.as_ptr() as usize) as u32;
            p.send(at, chunk, 0, &[]);
        }
        assert!(p.h.read(conn) == stream, "content differs ({what})");
        let stats = p.h.ep.stats_of(conn).unwrap();
        assert_eq!(stats.compressed_segments_received, 1 + 4, "({what})");
        assert_eq!(p.h.ep.stats().total_dropped(), 0, "({what})");
    }
}
