//! Where a UDP path without a fixed peer (a receiver) sends each packet:
//! the outer address the packet's connection was last heard from.
//!
//! A peer is learned per connection, by its full 4-tuple, and only from a
//! packet the endpoint took as part of a connection (one it had, or one
//! the packet opened): two senders behind one inner address (two
//! `scps send` on one host, or hosts behind one NAT) are two connections
//! with two outer addresses, and a flood of datagrams that open nothing
//! teaches nothing. Entries are forgotten with their connections, so the
//! table never holds more than the endpoint's connections, however many
//! datagrams arrive.
//!
//! A packet that opened nothing may still be answered (a reset to a SYN
//! for a closed port, so the sender hears "refused" at once; a SYN cookie):
//! the sources of the latest packets the endpoint answered are kept, a
//! fixed number of them, the oldest forgotten first. The endpoint queues
//! at most `scps_proto::MAX_ANSWERS_WAITING` answers, fewer than this
//! keeps, so every answer waiting has its address.
//!
//! Packets without ports (compressed headers, IP protocol 105) go to the
//! outer address their inner destination was last heard from on a
//! connection.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};

use scps_node::ShrinkWhenSparse;
use scps_proto::FourTuple;
use scps_proto::wire::{IPPROTO_SCPS_TP, IPPROTO_TCP, IpRepr};

/// Sources of packets that opened nothing but were answered, kept to
/// send the answers: more than the endpoint's answers waiting.
pub(crate) const STRAYS: usize = 2 * scps_proto::MAX_ANSWERS_WAITING;

#[derive(Debug, Default)]
pub(crate) struct UdpPeers {
    /// Each connection's peer, by the connection's addresses as the
    /// endpoint sees them (local: ours).
    connections: HashMap<FourTuple, SocketAddr>,
    /// By inner peer address, for packets without ports: derived from
    /// `connections`.
    by_address: HashMap<IpAddr, SocketAddr>,
    /// Where to answer the latest answered packets that belonged to no
    /// connection, each with the number of the packet that taught it.
    strays: HashMap<FourTuple, (SocketAddr, u64)>,
    /// Those packets' addresses and numbers, oldest first, to forget the
    /// oldest (an entry a later packet of the same addresses replaced is
    /// left alone).
    stray_order: VecDeque<(FourTuple, u64)>,
    /// Numbers the stray packets.
    strays_heard: u64,
}

impl UdpPeers {
    /// Records that `packet`, which the endpoint has just handled, came
    /// from `from`; `is_connection` says whether the endpoint now has a
    /// connection with those addresses, `answered` whether it queued an
    /// answer to a packet that belongs to none.
    pub(crate) fn learn(
        &mut self,
        packet: &[u8],
        from: SocketAddr,
        is_connection: impl Fn(&FourTuple) -> bool,
        answered: bool,
    ) {
        let Some(tuple) = IpRepr::parse(packet)
            .ok()
            .and_then(|(ip, payload)| tcp_tuple(&ip, payload, Direction::In))
        else {
            return;
        };
        if self.connections.get(&tuple) == Some(&from) {
            // The usual case, a packet of a connection already known: the
            // table is right as it is.
            return;
        }
        if is_connection(&tuple) {
            self.connections.insert(tuple, from);
            self.by_address.insert(tuple.remote.ip(), from);
        } else if answered {
            self.remember_stray(tuple, from);
        }
    }

    fn remember_stray(&mut self, tuple: FourTuple, from: SocketAddr) {
        // A flow heard again from where it was heard lately needs no new
        // entry (a node hosted on a path without a fixed peer hears every
        // packet of its flows as strays): refreshed once every half a
        // table of other strays, it cannot age out while it flows.
        if let Some(&(known, heard)) = self.strays.get(&tuple)
            && known == from
            && self.strays_heard - heard < (STRAYS / 2) as u64
        {
            return;
        }
        if self.stray_order.len() == STRAYS
            && let Some((oldest, heard)) = self.stray_order.pop_front()
            && self
                .strays
                .get(&oldest)
                .is_some_and(|&(_, latest)| latest == heard)
        {
            self.strays.remove(&oldest);
        }
        self.strays_heard += 1;
        self.strays.insert(tuple, (from, self.strays_heard));
        self.stray_order.push_back((tuple, self.strays_heard));
    }

    /// Where `packet`, leaving the endpoint, must go, if known.
    pub(crate) fn destination(&self, packet: &[u8]) -> Option<SocketAddr> {
        let (ip, payload) = IpRepr::parse(packet).ok()?;
        match tcp_tuple(&ip, payload, Direction::Out) {
            Some(tuple) => self
                .connections
                .get(&tuple)
                .or_else(|| self.strays.get(&tuple).map(|(from, _)| from))
                .copied(),
            None => self.by_address.get(&ip.dst()).copied(),
        }
    }

    /// Forgets the peers of connections the endpoint no longer has.
    pub(crate) fn forget(&mut self, is_connection: impl Fn(&FourTuple) -> bool) {
        self.connections.retain(|tuple, _| is_connection(tuple));
        self.connections.shrink_when_sparse();
        self.by_address.clear();
        for (tuple, &from) in &self.connections {
            self.by_address.insert(tuple.remote.ip(), from);
        }
        self.by_address.shrink_when_sparse();
    }

    /// The inner addresses of the connections whose peer is at the outer
    /// address `ip` (one per connection: the same address may repeat).
    pub(crate) fn remotes_at(&self, ip: IpAddr) -> impl Iterator<Item = IpAddr> + '_ {
        self.connections
            .iter()
            .filter(move |(_, outer)| outer.ip() == ip)
            .map(|(tuple, _)| tuple.remote.ip())
    }

    /// Peers held: connections and strays.
    pub(crate) fn len(&self) -> usize {
        self.connections.len() + self.strays.len()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Direction {
    /// Arriving: the source is the remote end.
    In,
    /// Leaving: the destination is the remote end.
    Out,
}

/// The TCP connection a plain (uncompressed) TCP packet belongs to, as
/// the endpoint sees it (SCPS-TP on protocol 106 too); `None` for
/// anything else.
fn tcp_tuple(ip: &IpRepr, payload: &[u8], direction: Direction) -> Option<FourTuple> {
    if ip.protocol() != IPPROTO_TCP && ip.protocol() != IPPROTO_SCPS_TP {
        return None;
    }
    let ports = payload.get(..4)?;
    let src = SocketAddr::new(ip.src(), u16::from_be_bytes([ports[0], ports[1]]));
    let dst = SocketAddr::new(ip.dst(), u16::from_be_bytes([ports[2], ports[3]]));
    Some(match direction {
        Direction::In => FourTuple {
            local: dst,
            remote: src,
        },
        Direction::Out => FourTuple {
            local: src,
            remote: dst,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IP packet of `protocol` from `src` to `dst` whose payload
    /// starts with the ports (all the table reads of a TCP header).
    fn packet(protocol: u8, src: &str, dst: &str) -> Vec<u8> {
        let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
        let ip = IpRepr::new(src.ip(), dst.ip(), protocol, 20, 64).unwrap();
        let mut packet = vec![0u8; ip.header_len() + 20];
        let header = ip.emit(&mut packet).unwrap();
        packet[header..header + 2].copy_from_slice(&src.port().to_be_bytes());
        packet[header + 2..header + 4].copy_from_slice(&dst.port().to_be_bytes());
        packet
    }

    fn tcp_packet(src: &str, dst: &str) -> Vec<u8> {
        packet(IPPROTO_TCP, src, dst)
    }

    fn outer(port: u16) -> SocketAddr {
        SocketAddr::from(([192, 0, 2, 1], port))
    }

    #[test]
    fn two_connections_from_one_inner_address_keep_their_own_peers() {
        let mut peers = UdpPeers::default();
        let a_in = tcp_packet("127.0.0.1:40000", "127.0.0.1:5001");
        let b_in = tcp_packet("127.0.0.1:40001", "127.0.0.1:5001");
        peers.learn(&a_in, outer(1000), |_| true, false);
        peers.learn(&b_in, outer(2000), |_| true, false);
        let a_out = tcp_packet("127.0.0.1:5001", "127.0.0.1:40000");
        let b_out = tcp_packet("127.0.0.1:5001", "127.0.0.1:40001");
        assert_eq!(peers.destination(&a_out), Some(outer(1000)));
        assert_eq!(peers.destination(&b_out), Some(outer(2000)));
    }

    #[test]
    fn answered_packets_that_open_nothing_are_answered_but_not_kept() {
        let mut peers = UdpPeers::default();
        for port in 0..10 * STRAYS as u16 {
            let packet = tcp_packet(&format!("10.0.0.1:{}", 1024 + port), "127.0.0.1:5001");
            peers.learn(&packet, outer(port), |_| false, true);
        }
        assert_eq!(peers.len(), STRAYS, "strays are bounded");
        // The latest can still be answered (a reset), the first cannot.
        let last = 10 * STRAYS as u16 - 1;
        let reply = tcp_packet("127.0.0.1:5001", &format!("10.0.0.1:{}", 1024 + last));
        assert_eq!(peers.destination(&reply), Some(outer(last)));
        let reply = tcp_packet("127.0.0.1:5001", "10.0.0.1:1024");
        assert_eq!(peers.destination(&reply), None);
    }

    #[test]
    fn packets_neither_of_a_connection_nor_answered_are_not_kept() {
        let mut peers = UdpPeers::default();
        let packet = tcp_packet("10.0.0.1:1024", "127.0.0.1:5001");
        peers.learn(&packet, outer(1), |_| false, false);
        assert_eq!(peers.len(), 0);
    }

    #[test]
    fn the_table_gives_back_its_room_once_a_burst_of_connections_is_forgotten() {
        let mut peers = UdpPeers::default();
        for port in 0..10_000u16 {
            let packet = tcp_packet(&format!("10.0.0.1:{}", 1024 + port), "127.0.0.1:5001");
            peers.learn(&packet, outer(port), |_| true, false);
        }
        let full = peers.connections.capacity();
        peers.forget(|_| false);
        assert!(
            peers.connections.capacity() < full / 50,
            "{} of {full} kept",
            peers.connections.capacity()
        );
    }

    #[test]
    fn peers_are_forgotten_with_their_connections() {
        let mut peers = UdpPeers::default();
        let a = tcp_packet("10.0.0.1:40000", "127.0.0.1:5001");
        let b = tcp_packet("10.0.0.2:40000", "127.0.0.1:5001");
        peers.learn(&a, outer(1), |_| true, false);
        peers.learn(&b, outer(2), |_| true, false);
        let gone: SocketAddr = "10.0.0.1:40000".parse().unwrap();
        peers.forget(|tuple| tuple.remote != gone);
        assert_eq!(peers.len(), 1);
        assert_eq!(
            peers.destination(&tcp_packet("127.0.0.1:5001", "10.0.0.1:40000")),
            None
        );
        assert_eq!(
            peers.destination(&tcp_packet("127.0.0.1:5001", "10.0.0.2:40000")),
            Some(outer(2))
        );
    }

    #[test]
    fn what_is_not_tcp_teaches_nothing() {
        let mut peers = UdpPeers::default();
        let udp = packet(17, "10.0.0.1:40000", "127.0.0.1:5001");
        peers.learn(&udp, outer(1), |_| true, true);
        peers.learn(b"not a packet", outer(2), |_| true, true);
        assert_eq!(peers.len(), 0);
    }
}
