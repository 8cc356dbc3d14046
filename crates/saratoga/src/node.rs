//! The engine as a [`Node`] (docs/architecture.md, "The node contract"):
//! one interface that carries whole IP packets, each holding one UDP
//! datagram of Saratoga. The same node runs in the simulator (one IPv4
//! address, port [`PORT`]) and on kernel sockets, hosted like any other
//! node by `scps-net` (`UdpSocketsPath`: the addresses and ports the
//! sockets are bound to, IPv4 and IPv6, a wildcard among them).
//!
//! A peer is answered from the address and port it was last heard at;
//! one not heard yet, from the first of the node's of its family.
//! Packets for another address or port, or that are not well-formed UDP
//! over IP, are counted by cause and dropped.
//!
//! The engine is reached through [`SaratogaNode::engine`] and
//! [`SaratogaNode::engine_mut`] to start transfers and drain its events.

use std::collections::{BTreeMap, HashMap};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use scps_node::udp::{self, UdpChecksum};
use scps_node::{Instant, InterfaceId, Node};

use crate::engine::{Config, ConfigError, Engine, Store};

/// Saratoga's UDP port (docs/spec/saratoga.md, "Transport").
pub const PORT: u16 = 7542;

/// Where peers were heard is kept at least this many entries before the
/// table is swept of peers silent for longer than the engine's
/// inactivity timeout (whose transfers have failed by then).
const ROUTES_BEFORE_SWEEP: usize = 1024;

/// What the node dropped, by cause: the checks of [`udp::unwrap`],
/// `not_ours` (another address), `wrong_port`, `ipv6_peer` or `ipv4_peer`
/// (a datagram the engine addressed to a peer of a family the node has
/// no address of) and `too_large`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeStats {
    pub packets_in: u64,
    pub packets_out: u64,
    pub dropped: BTreeMap<&'static str, u64>,
}

#[derive(Debug)]
pub struct SaratogaNode<S: Store> {
    engine: Engine<S>,
    /// The addresses and ports the node answers at; an unspecified
    /// address (a wildcard socket's) stands for every address of its
    /// family.
    locals: Vec<SocketAddr>,
    /// Whether where each peer was heard must be kept: see
    /// [`needs_routes`].
    keeps_routes: bool,
    /// The address each peer was last heard at, and when.
    routes: HashMap<SocketAddr, (SocketAddr, Instant)>,
    /// The size of `routes` after its last sweep.
    routes_swept_at: usize,
    /// The IPv4 identification of the next packet.
    next_id: u16,
    /// Whether the UDP checksums of packets are computed and checked.
    checksum: UdpChecksum,
    stats: NodeStats,
}

impl<S: Store> SaratogaNode<S> {
    /// An engine of `config` with `store`, at `address` and port [`PORT`].
    /// The engine's datagrams carry IPv4 and UDP headers below them, which
    /// its pacer must count: `config.datagram_overhead` should be at least
    /// [`udp::IPV4_UDP_HEADER_LEN`].
    pub fn new(config: Config, store: S, address: Ipv4Addr) -> Result<SaratogaNode<S>, ConfigError> {
        let engine = Engine::new(config, store)?;
        Ok(SaratogaNode::hosting(
            engine,
            vec![SocketAddr::new(address.into(), PORT)],
        ))
    }

    /// `engine`, answering at `locals` (addresses and ports, IPv4 or
    /// IPv6; an unspecified address stands for every one of its family).
    pub fn hosting(engine: Engine<S>, locals: Vec<SocketAddr>) -> SaratogaNode<S> {
        SaratogaNode {
            engine,
            keeps_routes: needs_routes(&locals, UdpChecksum::Computed),
            locals,
            routes: HashMap::new(),
            routes_swept_at: 0,
            next_id: 0,
            checksum: UdpChecksum::Computed,
            stats: NodeStats::default(),
        }
    }

    /// Leaves the UDP checksums of the packets it sends zero, and does
    /// not check those of the packets it receives: for a node whose
    /// packets only pass between it and kernel sockets, which compute
    /// and check the real ones, when no capture shows them.
    pub fn without_checksums(mut self) -> SaratogaNode<S> {
        self.checksum = UdpChecksum::Zero;
        self.keeps_routes = needs_routes(&self.locals, self.checksum);
        self
    }

    /// The addresses and ports the node answers at.
    pub fn locals(&self) -> &[SocketAddr] {
        &self.locals
    }

    pub fn engine(&self) -> &Engine<S> {
        &self.engine
    }

    pub fn engine_mut(&mut self) -> &mut Engine<S> {
        &mut self.engine
    }

    pub fn stats(&self) -> &NodeStats {
        &self.stats
    }

    fn drop_packet(&mut self, cause: &'static str) {
        *self.stats.dropped.entry(cause).or_default() += 1;
    }

    /// Whether `dst` is one of the node's addresses and ports; if not,
    /// the cause of the drop.
    fn is_ours(&self, dst: SocketAddr) -> Result<(), &'static str> {
        let mut address_ours = false;
        for local in &self.locals {
            let wildcard = local.ip().is_unspecified() && local.is_ipv4() == dst.is_ipv4();
            if local.ip() == dst.ip() || wildcard {
                if local.port() == dst.port() {
                    return Ok(());
                }
                address_ours = true;
            }
        }
        Err(if address_ours { "wrong_port" } else { "not_ours" })
    }

    /// `peer` was heard at `local`, at `now`.
    fn heard(&mut self, now: Instant, peer: SocketAddr, local: SocketAddr) {
        self.routes.insert(peer, (local, now));
        if self.routes.len() > 2 * self.routes_swept_at.max(ROUTES_BEFORE_SWEEP) {
            let lifetime: Duration = self.engine.config().inactivity_timeout;
            self.routes
                .retain(|_, (_, heard)| now.saturating_since(*heard) <= lifetime);
            self.routes_swept_at = self.routes.len();
        }
    }

    /// The address and port `peer` is answered from.
    fn source(&self, peer: SocketAddr) -> Option<SocketAddr> {
        if let Some((local, _)) = self.routes.get(&peer) {
            return Some(*local);
        }
        self.locals
            .iter()
            .find(|local| local.is_ipv4() == peer.is_ipv4())
            .copied()
    }
}

/// Whether a node at `locals` must remember the address each peer was
/// heard at (a map insertion per packet): when a family has several
/// addresses, since the answer must leave from the one the peer used; and
/// with a wildcard whose checksums are computed, since the real address
/// is part of the UDP checksum. A wildcard without checksums answers from
/// the wildcard itself: the socket behind it picks the address.
fn needs_routes(locals: &[SocketAddr], checksum: UdpChecksum) -> bool {
    let several_of_a_family = |v4: bool| locals.iter().filter(|l| l.is_ipv4() == v4).count() > 1;
    let wildcard = locals.iter().any(|local| local.ip().is_unspecified());
    several_of_a_family(true) || several_of_a_family(false) || (wildcard && checksum == UdpChecksum::Computed)
}

impl<S: Store> Node for SaratogaNode<S> {
    fn interface_count(&self) -> usize {
        1
    }

    fn handle_packet(&mut self, now: Instant, _interface: InterfaceId, packet: &[u8]) {
        self.stats.packets_in += 1;
        let read = match self.checksum {
            UdpChecksum::Computed => udp::unwrap(packet),
            UdpChecksum::Zero => udp::read_headers(packet),
        };
        let datagram = match read {
            Ok(datagram) => datagram,
            Err(cause) => return self.drop_packet(cause),
        };
        if let Err(cause) = self.is_ours(datagram.dst) {
            return self.drop_packet(cause);
        }
        if self.keeps_routes {
            self.heard(now, datagram.src, datagram.dst);
        }
        self.engine.handle_datagram(now, datagram.src, datagram.payload);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        while let Some((peer, datagram)) = self.engine.poll_transmit(now) {
            let Some(src) = self.source(peer) else {
                self.drop_packet(match peer {
                    SocketAddr::V4(_) => "ipv4_peer",
                    SocketAddr::V6(_) => "ipv6_peer",
                });
                continue;
            };
            if udp::wrap_with(src, peer, self.next_id, self.checksum, &datagram, buf).is_none() {
                self.drop_packet("too_large");
                continue;
            }
            self.next_id = self.next_id.wrapping_add(1);
            self.stats.packets_out += 1;
            return Some(InterfaceId(0));
        }
        None
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.engine.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.engine.handle_timeout(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_are_kept_only_where_the_answer_depends_on_them() {
        let locals = |list: &[&str]| {
            list.iter()
                .map(|l| l.parse().unwrap())
                .collect::<Vec<SocketAddr>>()
        };
        let one_each = locals(&["10.0.0.1:7542", "[fd00::1]:7542"]);
        assert!(!needs_routes(&one_each, UdpChecksum::Computed));
        let two_v6 = locals(&["10.0.0.1:7542", "[fd00::1]:7542", "[fd00::2]:7542"]);
        assert!(needs_routes(&two_v6, UdpChecksum::Zero));
        let wildcard = locals(&["0.0.0.0:7542"]);
        assert!(needs_routes(&wildcard, UdpChecksum::Computed));
        assert!(!needs_routes(&wildcard, UdpChecksum::Zero));
    }
    use crate::engine::{Event, MemoryStore};

    fn node(last: u8) -> SaratogaNode<MemoryStore> {
        let config = Config {
            rate_bps: 0,
            ..Config::default()
        };
        SaratogaNode::new(config, MemoryStore::new(), Ipv4Addr::new(10, 0, 0, last)).unwrap()
    }

    /// Hands every packet each node sends to the other, at once, until
    /// neither has anything to do.
    fn exchange(a: &mut SaratogaNode<MemoryStore>, b: &mut SaratogaNode<MemoryStore>) {
        let mut now = Instant::ZERO;
        let mut buf = Vec::new();
        for _ in 0..10_000 {
            a.handle_timeout(now);
            while a.poll_transmit(now, &mut buf).is_some() {
                b.handle_packet(now, InterfaceId(0), &buf);
            }
            b.handle_timeout(now);
            while b.poll_transmit(now, &mut buf).is_some() {
                a.handle_packet(now, InterfaceId(0), &buf);
            }
            let Some(next) = a.poll_timeout().into_iter().chain(b.poll_timeout()).min() else {
                return;
            };
            if a.engine().active() + b.engine().active() == 0 {
                return;
            }
            now = next.max(now);
        }
    }

    #[test]
    fn a_put_crosses_between_two_nodes_in_ip_packets() {
        let (mut a, mut b) = (node(1), node(2));
        let contents: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        a.engine_mut().store_mut().insert("f", contents.clone(), 0);
        let to = b.locals()[0];
        a.engine_mut().put(Instant::ZERO, to, "f", "g").unwrap();
        exchange(&mut a, &mut b);
        assert_eq!(b.engine().store().contents("g"), Some(&contents[..]));
        let completed =
            std::iter::from_fn(|| b.engine_mut().poll_event()).any(|e| matches!(e, Event::Completed { .. }));
        assert!(completed);
        assert!(a.stats().packets_out > 68 && a.stats().dropped.is_empty());
        assert_eq!(b.stats().packets_in, a.stats().packets_out);
    }

    #[test]
    fn what_is_not_saratoga_for_this_node_is_counted_and_dropped() {
        let mut b = node(2);
        let mut packet = Vec::new();
        let from: SocketAddr = "10.0.0.1:7542".parse().unwrap();
        udp::wrap(from, "10.0.0.3:7542".parse().unwrap(), 0, b"x", &mut packet).unwrap();
        b.handle_packet(Instant::ZERO, InterfaceId(0), &packet);
        udp::wrap(from, "10.0.0.2:53".parse().unwrap(), 0, b"x", &mut packet).unwrap();
        b.handle_packet(Instant::ZERO, InterfaceId(0), &packet);
        b.handle_packet(Instant::ZERO, InterfaceId(0), &packet[..packet.len() - 1]);
        // For us, but no Saratoga frame: the engine counts it.
        udp::wrap(from, "10.0.0.2:7542".parse().unwrap(), 0, b"x", &mut packet).unwrap();
        b.handle_packet(Instant::ZERO, InterfaceId(0), &packet);
        let dropped: Vec<_> = b.stats().dropped.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(dropped, [("bad_length", 1), ("not_ours", 1), ("wrong_port", 1)]);
        assert_eq!(b.engine().stats().malformed.values().sum::<u64>(), 1);
        assert_eq!(b.engine().stats().datagrams_in, 1);
    }

    /// A node answering at `locals`, of an engine that paces nothing.
    fn at(locals: &[&str]) -> SaratogaNode<MemoryStore> {
        let config = Config {
            rate_bps: 0,
            ..Config::default()
        };
        let engine = Engine::new(config, MemoryStore::new()).unwrap();
        SaratogaNode::hosting(engine, locals.iter().map(|a| a.parse().unwrap()).collect())
    }

    /// A packet of a listing request from `from` to `to`.
    fn request(from: &str, to: &str) -> Vec<u8> {
        let mut asking = at(&[from]);
        asking.engine_mut().list(Instant::ZERO, to.parse().unwrap(), "");
        let mut packet = Vec::new();
        asking.poll_transmit(Instant::ZERO, &mut packet).unwrap();
        packet
    }

    /// Where the answer to `packet` comes from and goes to.
    fn answer(node: &mut SaratogaNode<MemoryStore>, packet: &[u8]) -> (SocketAddr, SocketAddr) {
        node.handle_packet(Instant::ZERO, InterfaceId(0), packet);
        let mut out = Vec::new();
        node.poll_transmit(Instant::ZERO, &mut out).unwrap();
        let datagram = udp::unwrap(&out).unwrap();
        (datagram.src, datagram.dst)
    }

    #[test]
    fn a_peer_is_answered_from_the_address_and_port_it_was_heard_at() {
        // Wildcards of both families and a second port, as sockets bound
        // to them would be.
        let mut node = at(&["0.0.0.0:7542", "[::]:7542", "127.0.0.1:9000"]);
        let v4 = request("127.0.0.5:4000", "127.0.0.1:7542");
        let v6 = request("[::1]:4000", "[::1]:7542");
        let other_port = request("127.0.0.6:4000", "127.0.0.1:9000");
        let local = |s: &str| s.parse::<SocketAddr>().unwrap();
        assert_eq!(
            answer(&mut node, &v4),
            (local("127.0.0.1:7542"), local("127.0.0.5:4000"))
        );
        assert_eq!(answer(&mut node, &v6), (local("[::1]:7542"), local("[::1]:4000")));
        assert_eq!(
            answer(&mut node, &other_port),
            (local("127.0.0.1:9000"), local("127.0.0.6:4000"))
        );
        assert_eq!(node.stats().dropped, BTreeMap::new());
    }

    #[test]
    fn a_peer_of_a_family_the_node_has_no_address_of_is_not_sent_to() {
        let mut node = at(&["10.0.0.2:7542"]);
        node.engine_mut()
            .list(Instant::ZERO, "[fd00::1]:7542".parse().unwrap(), "");
        assert!(node.poll_transmit(Instant::ZERO, &mut Vec::new()).is_none());
        let dropped: Vec<_> = node.stats().dropped.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(dropped, [("ipv6_peer", 1)]);
        // Nor is a packet to an address of that family taken.
        node.handle_packet(
            Instant::ZERO,
            InterfaceId(0),
            &request("[::1]:4000", "[::1]:7542"),
        );
        assert_eq!(node.stats().dropped.get("not_ours"), Some(&1));
    }

    #[test]
    fn where_peers_were_heard_is_forgotten_once_they_are_long_silent() {
        let mut node = at(&["0.0.0.0:7542"]);
        let hear = |node: &mut SaratogaNode<MemoryStore>, now: Instant, peers: std::ops::Range<usize>| {
            let mut packet = Vec::new();
            for i in peers {
                let peer = SocketAddr::from(([10, 0, (i >> 8) as u8, i as u8], 4000));
                udp::wrap(peer, "127.0.0.1:7542".parse().unwrap(), 0, b"x", &mut packet).unwrap();
                node.handle_packet(now, InterfaceId(0), &packet);
            }
        };
        hear(&mut node, Instant::ZERO, 0..2 * ROUTES_BEFORE_SWEEP);
        assert_eq!(node.routes.len(), 2 * ROUTES_BEFORE_SWEEP);
        // One more, once the others have been silent past the engine's
        // inactivity timeout: the table is swept of them.
        let later = Instant::ZERO + node.engine().config().inactivity_timeout + Duration::from_secs(1);
        hear(
            &mut node,
            later,
            2 * ROUTES_BEFORE_SWEEP..2 * ROUTES_BEFORE_SWEEP + 1,
        );
        assert_eq!(node.routes.len(), 1);
    }

    #[test]
    fn a_node_without_checksums_sends_none_and_checks_none() {
        let mut asking = at(&["[fd00::1]:7542"]).without_checksums();
        let mut answering = at(&["[fd00::2]:7542"]).without_checksums();
        let to = answering.locals()[0];
        asking.engine_mut().list(Instant::ZERO, to, "");
        let mut packet = Vec::new();
        asking.poll_transmit(Instant::ZERO, &mut packet).unwrap();
        // The UDP checksum, after the 40-byte IPv6 header: none.
        assert_eq!(packet[46..48], [0, 0]);
        answering.handle_packet(Instant::ZERO, InterfaceId(0), &packet);
        assert!(answering.stats().dropped.is_empty());
        assert_eq!(answering.engine().stats().datagrams_in, 1);
        // A node that checks them refuses it, as IPv6 requires.
        let mut checking = at(&["[fd00::2]:7542"]);
        checking.handle_packet(Instant::ZERO, InterfaceId(0), &packet);
        assert_eq!(checking.stats().dropped.get("bad_udp_checksum"), Some(&1));
    }
}
