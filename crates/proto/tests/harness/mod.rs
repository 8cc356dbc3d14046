//! A scripted peer for segment-by-segment tests of the engine.
//!
//! The test plays the remote TCP by hand: it builds each segment the peer
//! sends, feeds it to an [`Endpoint`] as an IP packet, and reads back what
//! the endpoint emits, parsed. Time is virtual and only moves when the
//! test says so.

#![allow(dead_code)]

pub mod pair;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use scps_proto::time::Instant;
use scps_proto::wire::{
    SackBlock, ScpsCapabilities, TcpFlags, TcpOptions, TcpRepr, Timestamps, build_tcp_packet,
    parse_tcp_packet,
};
use scps_proto::{Config, ConnectionHandle, Endpoint, EndpointConfig, Event};

pub const OURS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)), 40000);
pub const THEIRS: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 80);
/// The peer's initial sequence number in the fixtures.
pub const PEER_ISS: u32 = 10_000;

/// A segment as the test writes or reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seg {
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    pub window: u16,
    pub options: TcpOptions,
    pub payload: Vec<u8>,
}

impl From<&TcpRepr<'_>> for Seg {
    fn from(tcp: &TcpRepr<'_>) -> Seg {
        Seg {
            seq: tcp.seq,
            ack: tcp.ack,
            flags: tcp.flags,
            window: tcp.window,
            options: tcp.options,
            payload: tcp.payload.to_vec(),
        }
    }
}

impl Seg {
    /// The segment between these ports, as the wire module takes it.
    pub fn repr(&self, src_port: u16, dst_port: u16) -> TcpRepr<'_> {
        TcpRepr {
            src_port,
            dst_port,
            seq: self.seq,
            ack: self.ack,
            flags: self.flags,
            window: self.window,
            urgent: 0,
            options: self.options,
            payload: &self.payload,
        }
    }

    pub fn new(flags: TcpFlags, seq: u32) -> Seg {
        Seg {
            seq,
            ack: 0,
            flags,
            window: 65535,
            options: TcpOptions::default(),
            payload: Vec::new(),
        }
    }

    /// An ACK-flagged segment.
    pub fn ack(seq: u32, ack: u32) -> Seg {
        Seg::new(TcpFlags::ACK, seq).with_ack(ack)
    }

    pub fn with_ack(mut self, ack: u32) -> Seg {
        self.flags.insert(TcpFlags::ACK);
        self.ack = ack;
        self
    }

    pub fn flag(mut self, flag: TcpFlags) -> Seg {
        self.flags.insert(flag);
        self
    }

    pub fn window(mut self, window: u16) -> Seg {
        self.window = window;
        self
    }

    pub fn payload(mut self, data: &[u8]) -> Seg {
        self.payload = data.to_vec();
        self
    }

    pub fn ts(mut self, tsval: u32, tsecr: u32) -> Seg {
        self.options.timestamps = Some(Timestamps { tsval, tsecr });
        self
    }

    pub fn mss(mut self, mss: u16) -> Seg {
        self.options.mss = Some(mss);
        self
    }

    pub fn wscale(mut self, shift: u8) -> Seg {
        self.options.window_scale = Some(shift);
        self
    }

    pub fn sack_permitted(mut self) -> Seg {
        self.options.sack_permitted = true;
        self
    }

    pub fn sack(mut self, blocks: &[(u32, u32)]) -> Seg {
        for &(left, right) in blocks {
            self.options.sack_blocks.push(SackBlock { left, right });
        }
        self
    }

    /// Sequence space the segment occupies.
    pub fn len(&self) -> u32 {
        self.payload.len() as u32 + u32::from(self.flags.syn()) + u32::from(self.flags.fin())
    }

    pub fn has(&self, flag: TcpFlags) -> bool {
        self.flags.contains(flag)
    }

    pub fn sack_blocks(&self) -> Vec<(u32, u32)> {
        self.options
            .sack_blocks
            .as_slice()
            .iter()
            .map(|b| (b.left, b.right))
            .collect()
    }
}

pub struct Harness {
    pub ep: Endpoint,
    pub now: Instant,
}

impl Harness {
    pub fn new(config: Config) -> Harness {
        Harness::at(config, OURS.ip())
    }

    /// An endpoint at `address` ([`Harness::output`] expects [`OURS`]; tests
    /// at other addresses read `ep.poll_transmit` themselves).
    pub fn at(config: Config, address: IpAddr) -> Harness {
        let endpoint_config = EndpointConfig {
            connection: config,
            ..EndpointConfig::default()
        };
        Harness {
            ep: Endpoint::new(endpoint_config, [address]).expect("valid test configuration"),
            now: Instant::from_duration(Duration::from_secs(1000)),
        }
    }

    /// Delivers a segment from THEIRS to OURS.
    pub fn send(&mut self, seg: &Seg) {
        self.send_from(THEIRS, OURS, seg);
    }

    pub fn send_from(&mut self, from: SocketAddr, to: SocketAddr, seg: &Seg) {
        let repr = seg.repr(from.port(), to.port());
        let mut packet = Vec::new();
        build_tcp_packet(from.ip(), to.ip(), 64, &repr, &mut packet).expect("test segment fits");
        self.ep.handle_packet(self.now, &packet);
    }

    /// Everything the endpoint wants to send now, parsed.
    pub fn output(&mut self) -> Vec<Seg> {
        self.output_addressed()
            .into_iter()
            .map(|(from, to, seg)| {
                assert_eq!(from.ip(), OURS.ip(), "source address");
                assert_eq!(to.ip(), THEIRS.ip(), "destination address");
                seg
            })
            .collect()
    }

    /// Everything the endpoint wants to send now (uncompressed TCP), each
    /// segment with its source and destination.
    pub fn output_addressed(&mut self) -> Vec<(SocketAddr, SocketAddr, Seg)> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        while self.ep.poll_transmit(self.now, &mut buf) {
            let (ip, tcp) = parse_tcp_packet(&buf).expect("the engine emits valid packets");
            let tcp = tcp.expect("the engine emits TCP");
            out.push((
                SocketAddr::new(ip.src(), tcp.src_port),
                SocketAddr::new(ip.dst(), tcp.dst_port),
                Seg::from(&tcp),
            ));
        }
        out
    }

    /// Exactly one segment must be emitted now; it is returned.
    pub fn one(&mut self) -> Seg {
        let mut out = self.output();
        assert_eq!(out.len(), 1, "expected one segment, got {out:#?}");
        out.remove(0)
    }

    pub fn nothing(&mut self) {
        let out = self.output();
        assert!(out.is_empty(), "expected no segment, got {out:#?}");
    }

    /// Moves virtual time forward and runs due timers.
    pub fn advance(&mut self, by: Duration) {
        self.now += by;
        self.ep.handle_timeout(self.now);
    }

    /// Moves to the next wake-up the endpoint asked for; returns how far.
    pub fn advance_to_timeout(&mut self) -> Duration {
        let at = self.ep.poll_timeout().expect("a timer is armed");
        let waited = at - self.now;
        self.now = at;
        self.ep.handle_timeout(self.now);
        waited
    }

    pub fn events(&mut self) -> Vec<(ConnectionHandle, Event)> {
        std::iter::from_fn(|| self.ep.poll_event()).collect()
    }

    /// Reads everything readable from `handle`.
    pub fn read(&mut self, handle: ConnectionHandle) -> Vec<u8> {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = self.ep.recv(handle, &mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        all
    }
}

/// A connection we opened (active open) to a peer that offered MSS 1460,
/// window scale, SACK and timestamps; established, the peer's ACK of our
/// SYN-ACK seen.
pub struct Established {
    pub h: Harness,
    pub conn: ConnectionHandle,
    /// Our next sequence number on the wire.
    pub snd_nxt: u32,
    /// The peer's next sequence number.
    pub rcv_nxt: u32,
    /// The peer's timestamp clock; tests bump it as they like.
    pub peer_ts: u32,
    /// Our latest TSval seen.
    pub our_ts: u32,
}

/// Which options the scripted peer offers in its SYN-ACK.
#[derive(Debug, Clone, Copy)]
pub struct PeerOffer {
    pub mss: u16,
    pub wscale: Option<u8>,
    pub sack: bool,
    pub timestamps: bool,
    pub window: u16,
    /// The SCPS capabilities option in the SYN-ACK.
    pub scps: Option<ScpsCapabilities>,
    /// Time between our SYN and the SYN-ACK.
    pub rtt: Duration,
}

impl Default for PeerOffer {
    fn default() -> Self {
        PeerOffer {
            mss: 1460,
            wscale: Some(0),
            sack: true,
            timestamps: true,
            window: 65535,
            scps: None,
            rtt: Duration::ZERO,
        }
    }
}

impl Established {
    pub fn new(config: Config) -> Established {
        Established::with_offer(config, PeerOffer::default())
    }

    pub fn with_offer(config: Config, offer: PeerOffer) -> Established {
        let mut h = Harness::new(config);
        let conn = h.ep.connect(h.now, THEIRS, Some(OURS), None).expect("connect");
        let syn = h.one();
        assert!(syn.has(TcpFlags::SYN) && !syn.has(TcpFlags::ACK));
        let mut syn_ack = Seg::new(TcpFlags::SYN, PEER_ISS)
            .with_ack(syn.seq.wrapping_add(1))
            .mss(offer.mss)
            .window(offer.window);
        if let Some(shift) = offer.wscale {
            syn_ack = syn_ack.wscale(shift);
        }
        if offer.sack {
            syn_ack = syn_ack.sack_permitted();
        }
        let our_ts = syn.options.timestamps.map_or(0, |t| t.tsval);
        if offer.timestamps {
            syn_ack = syn_ack.ts(1, our_ts);
        }
        syn_ack.options.scps_capabilities = offer.scps;
        h.advance(offer.rtt);
        h.send(&syn_ack);
        let ack = h.one();
        assert_eq!(ack.flags, TcpFlags::ACK, "handshake completes with a pure ACK");
        assert_eq!(ack.ack, PEER_ISS + 1);
        let events = h.events();
        assert!(
            events.contains(&(conn, Event::Connected)),
            "connected event: {events:?}"
        );
        Established {
            h,
            conn,
            snd_nxt: syn.seq.wrapping_add(1),
            rcv_nxt: PEER_ISS + 1,
            peer_ts: 1,
            our_ts,
        }
    }

    /// A segment from the peer at its current sequence number, acking
    /// `ack`, with a fresh timestamp if timestamps are in use.
    pub fn peer_segment(&mut self, ack: u32) -> Seg {
        self.peer_ts += 1;
        let mut seg = Seg::ack(self.rcv_nxt, ack);
        if self.timestamps() {
            seg = seg.ts(self.peer_ts, self.our_ts);
        }
        seg
    }

    pub fn timestamps(&self) -> bool {
        self.h.ep.stats_of(self.conn).is_some_and(|s| s.timestamps)
    }

    /// Writes `data` on our side.
    pub fn write(&mut self, data: &[u8]) -> usize {
        self.h.ep.send(self.conn, data).expect("send")
    }

    /// Everything we emit now; remembers our latest TSval.
    pub fn output(&mut self) -> Vec<Seg> {
        let out = self.h.output();
        if let Some(ts) = out.iter().rev().find_map(|s| s.options.timestamps) {
            self.our_ts = ts.tsval;
        }
        out
    }

    pub fn one(&mut self) -> Seg {
        let mut out = self.output();
        assert_eq!(out.len(), 1, "expected one segment, got {out:#?}");
        out.remove(0)
    }

    pub fn stats(&self) -> scps_proto::ConnectionStats {
        self.h.ep.stats_of(self.conn).expect("connection exists")
    }
}

/// `n` bytes of a recognisable pattern.
pub fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
}
