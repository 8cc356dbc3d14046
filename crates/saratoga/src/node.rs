//! The engine as a [`Node`] (docs/architecture.md, "The node contract"):
//! one interface that
//! carries whole IPv4 packets, each holding one UDP datagram of Saratoga.
//! Datagrams the engine sends leave from this node's address and port
//! [`PORT`]; packets for another address or port, or that are not
//! well-formed UDP over IPv4, are counted by cause and dropped.
//!
//! The engine is reached through [`SaratogaNode::engine`] and
//! [`SaratogaNode::engine_mut`] to start transfers and drain its events.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};

use scps_node::udp;
use scps_node::{Instant, InterfaceId, Node};

use crate::engine::{Config, ConfigError, Engine, Store};

/// Saratoga's UDP port (docs/spec/saratoga.md, "Transport").
pub const PORT: u16 = 7542;

/// What the node dropped, by cause: the IPv4/UDP checks of
/// [`udp::unwrap_v4`], `not_ours` (another address), `wrong_port`,
/// `ipv6_peer` (a datagram the engine addressed to an IPv6 peer) and
/// `too_large`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeStats {
    pub packets_in: u64,
    pub packets_out: u64,
    pub dropped: BTreeMap<&'static str, u64>,
}

#[derive(Debug)]
pub struct SaratogaNode<S: Store> {
    engine: Engine<S>,
    address: Ipv4Addr,
    /// The IPv4 identification of the next packet.
    next_id: u16,
    stats: NodeStats,
}

impl<S: Store> SaratogaNode<S> {
    /// An engine of `config` with `store`, at `address`. The engine's
    /// datagrams carry IPv4 and UDP headers below them, which its pacer
    /// must count: `config.datagram_overhead` should be at least
    /// [`udp::IPV4_UDP_HEADER_LEN`].
    pub fn new(config: Config, store: S, address: Ipv4Addr) -> Result<SaratogaNode<S>, ConfigError> {
        Ok(SaratogaNode {
            engine: Engine::new(config, store)?,
            address,
            next_id: 0,
            stats: NodeStats::default(),
        })
    }

    /// Where peers reach this engine.
    pub fn socket_addr(&self) -> SocketAddr {
        SocketAddr::V4(SocketAddrV4::new(self.address, PORT))
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
}

impl<S: Store> Node for SaratogaNode<S> {
    fn interface_count(&self) -> usize {
        1
    }

    fn handle_packet(&mut self, now: Instant, _interface: InterfaceId, packet: &[u8]) {
        self.stats.packets_in += 1;
        let datagram = match udp::unwrap_v4(packet) {
            Ok(datagram) => datagram,
            Err(cause) => return self.drop_packet(cause),
        };
        if *datagram.dst.ip() != self.address {
            return self.drop_packet("not_ours");
        }
        if datagram.dst.port() != PORT {
            return self.drop_packet("wrong_port");
        }
        self.engine
            .handle_datagram(now, SocketAddr::V4(datagram.src), datagram.payload);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        let src = SocketAddrV4::new(self.address, PORT);
        while let Some((peer, datagram)) = self.engine.poll_transmit(now) {
            let SocketAddr::V4(dst) = peer else {
                self.drop_packet("ipv6_peer");
                continue;
            };
            if udp::wrap_v4(src, dst, self.next_id, &datagram, buf).is_none() {
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
        let to = b.socket_addr();
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
        let from: SocketAddrV4 = "10.0.0.1:7542".parse().unwrap();
        udp::wrap_v4(from, "10.0.0.3:7542".parse().unwrap(), 0, b"x", &mut packet).unwrap();
        b.handle_packet(Instant::ZERO, InterfaceId(0), &packet);
        udp::wrap_v4(from, "10.0.0.2:53".parse().unwrap(), 0, b"x", &mut packet).unwrap();
        b.handle_packet(Instant::ZERO, InterfaceId(0), &packet);
        b.handle_packet(Instant::ZERO, InterfaceId(0), &packet[..packet.len() - 1]);
        // For us, but no Saratoga frame: the engine counts it.
        udp::wrap_v4(from, "10.0.0.2:7542".parse().unwrap(), 0, b"x", &mut packet).unwrap();
        b.handle_packet(Instant::ZERO, InterfaceId(0), &packet);
        let dropped: Vec<_> = b.stats().dropped.iter().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(dropped, [("bad_length", 1), ("not_ours", 1), ("wrong_port", 1)]);
        assert_eq!(b.engine().stats().malformed.values().sum::<u64>(), 1);
        assert_eq!(b.engine().stats().datagrams_in, 1);
    }
}
