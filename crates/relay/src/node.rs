//! A transparent gateway as a sans-IO node ([`scps_node::Node`]), for the
//! simulator: the real gateway's relay (relay.rs) between a LAN
//! connection and a link connection, each on an engine endpoint of its
//! own, with no sockets, no clocks and no kernel.
//!
//! Interface 0 faces the LAN, interface 1 the link. TCP between a local
//! and a remote prefix that a route carries (routes.rs) is split: the LAN
//! endpoint answers LAN clients as the remote servers they dial and opens
//! connections to LAN servers from the remote clients' addresses, the
//! link endpoint does the same towards the far gateway, each link
//! connection with its route's engine, and a relay with its route's
//! buffer joins each pair. Everything else (other protocols, other
//! addresses, the connections of routes that pass) is forwarded by a
//! router, local prefixes to the LAN and the rest to the link, as the
//! real gateway leaves it to the kernel.
//!
//! A segment goes to an endpoint if the endpoint holds its connection;
//! one that no connection holds is read as the real gateway's
//! interception reads it ([`RouteTable::decide_segment`]), on either
//! side: the connections a route carries start with a SYN it decides.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use scps_node::ip_header::addresses;
use scps_node::router::{Route, Router, RouterError};
use scps_node::{InterfaceId, IpPrefix, Node};
use scps_proto::time::Instant;
use scps_proto::{
    Config, ConnectionError, ConnectionHandle, ConnectionStats, Endpoint, EndpointConfig, EndpointError,
    Event, FourTuple, PathCapacity, StreamError, TransparentListenerId,
};

use crate::relay::{OpenFailure, Outcome, Relay, Side};
use crate::routes::{Decision, RouteTable};

const LAN: InterfaceId = InterfaceId(0);
const LINK: InterfaceId = InterfaceId(1);
const IPPROTO_TCP: u8 = 6;
const IPPROTO_SCPS_COMPRESSED: u8 = 105;

/// What a gateway node is built from.
#[derive(Debug, Clone)]
pub struct GatewayNodeConfig {
    /// The prefixes on its LAN side, and beyond the far gateway.
    pub local: Vec<IpPrefix>,
    pub remote: Vec<IpPrefix>,
    /// The LAN connections' engine (TCP as the hosts run it).
    pub lan: Config,
    /// The link endpoint's own engine (SCPS-TP): what answers a segment
    /// that none of its connections holds. Each link connection runs its
    /// route's.
    pub link: Config,
    /// Which connections are split, each link connection's engine and
    /// each relay's buffer.
    pub routes: RouteTable,
}

/// How the gateway's split connections ended, and what it forwarded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GatewayNodeStats {
    pub closed: u64,
    pub reset: u64,
    pub open_failed: u64,
    pub idle: u64,
    /// Split connections the endpoints refused to open.
    pub not_opened: u64,
    /// Connections split, by the name of the route that carries them.
    pub carried: BTreeMap<String, u64>,
    /// SYNs forwarded untouched: those of connections that pass through.
    pub passed_syns: u64,
    /// What the link connections that ended did to recover losses.
    pub link_recovery: Recovery,
}

/// What connections did to recover losses, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recovery {
    pub bytes_retransmitted: u64,
    pub timeouts: u64,
}

impl Recovery {
    fn add(&mut self, stats: &ConnectionStats) {
        self.bytes_retransmitted += stats.bytes_retransmitted;
        self.timeouts += stats.timeouts;
    }
}

/// One split connection: the relay and the two connections it joins.
#[derive(Debug)]
struct Split {
    relay: Relay,
    lan: ConnectionHandle,
    link: ConnectionHandle,
    /// The side the relay opens (the other one was accepted).
    opening: Side,
}

impl Split {
    fn handle(&self, side: Side) -> ConnectionHandle {
        match side {
            Side::Lan => self.lan,
            Side::Link => self.link,
        }
    }
}

#[derive(Debug)]
pub struct GatewayNode {
    lan: Endpoint,
    link: Endpoint,
    lan_listener: TransparentListenerId,
    link_listener: TransparentListenerId,
    local: Vec<IpPrefix>,
    remote: Vec<IpPrefix>,
    routes: Arc<RouteTable>,
    router: Router,
    splits: Vec<Split>,
    /// Which endpoint `poll_transmit` asks first, in turn.
    lan_first: bool,
    buf: Vec<u8>,
    stats: GatewayNodeStats,
}

#[derive(Debug, thiserror::Error)]
pub enum GatewayNodeError {
    #[error("an endpoint of the gateway: {0}")]
    Endpoint(#[from] EndpointError),
    #[error("the gateway's forwarding: {0}")]
    Router(#[from] RouterError),
}

impl GatewayNode {
    /// A gateway whose endpoints take `secret`s of their own (for their
    /// initial sequence numbers).
    pub fn new(config: GatewayNodeConfig, secret: u64) -> Result<GatewayNode, GatewayNodeError> {
        let everything: Vec<IpPrefix> = config.local.iter().chain(&config.remote).copied().collect();
        let endpoint = |connection: &Config, secret| {
            Endpoint::new(
                EndpointConfig {
                    connection: connection.clone(),
                    transparent: everything.clone(),
                    secret,
                    ..EndpointConfig::default()
                },
                [],
            )
        };
        let mut lan = endpoint(&config.lan, secret)?;
        let mut link = endpoint(&config.link, secret.rotate_left(17) ^ 0x5c)?;
        let lan_listener = lan.listen_transparent(&config.remote, None, None)?;
        let link_listener = link.listen_transparent(&config.local, None, None)?;
        // The far side's choice: a link connection it takes gets its
        // route's engine from the SYN on.
        let routes = Arc::new(config.routes);
        link.choose_configs(link_listener, routes.clone());
        let forwarding = config
            .local
            .iter()
            .map(|&prefix| Route {
                prefix,
                interface: LAN,
            })
            .chain(["0.0.0.0/0", "::/0"].iter().map(|any| Route {
                prefix: any.parse().expect("a default prefix"),
                interface: LINK,
            }));
        Ok(GatewayNode {
            lan,
            link,
            lan_listener,
            link_listener,
            router: Router::new(2, forwarding)?,
            local: config.local,
            remote: config.remote,
            routes,
            splits: Vec::new(),
            lan_first: true,
            buf: vec![0; 64 * 1024],
            stats: GatewayNodeStats::default(),
        })
    }

    pub fn stats(&self) -> &GatewayNodeStats {
        &self.stats
    }

    /// What all its link connections, ended or not, did to recover losses
    /// across the link.
    pub fn link_recovery(&self) -> Recovery {
        let mut recovery = self.stats.link_recovery;
        for split in &self.splits {
            if let Some(stats) = self.link.stats_of(split.link) {
                recovery.add(&stats);
            }
        }
        recovery
    }

    /// Split connections held now.
    pub fn splits(&self) -> usize {
        self.splits.len()
    }

    pub fn lan_endpoint(&self) -> &Endpoint {
        &self.lan
    }

    pub fn link_endpoint(&self) -> &Endpoint {
        &self.link
    }

    /// The link side's route rates follow what the path under it says it
    /// carries (a bundle's channels that are up), from `now` on.
    pub fn follow_path_capacity(&mut self, capacity: PathCapacity, now: Instant) {
        self.link.follow_path_capacity(capacity, now);
    }

    fn endpoint(&mut self, side: Side) -> &mut Endpoint {
        match side {
            Side::Lan => &mut self.lan,
            Side::Link => &mut self.link,
        }
    }

    /// Whether a packet that came in on `interface` is for the side's
    /// endpoint: TCP (or compressed SCPS-TP on the link, which only split
    /// connections send) between the side's own prefixes and the other's,
    /// of a connection the endpoint holds or, if it holds none, one that
    /// the routes carry.
    fn is_split(&mut self, interface: InterfaceId, packet: &[u8]) -> bool {
        let Some((protocol, src, dst)) = addresses(packet) else {
            return false;
        };
        let within = |prefixes: &[IpPrefix], ip| prefixes.iter().any(|p| p.contains(ip));
        let between = if interface == LAN {
            within(&self.local, src) && within(&self.remote, dst)
        } else {
            within(&self.remote, src) && within(&self.local, dst)
        };
        match protocol {
            IPPROTO_TCP if between => {}
            IPPROTO_SCPS_COMPRESSED => return between && interface == LINK,
            _ => return false,
        }
        // A header too short to read: the endpoint drops it.
        let Some((from, to, opening)) = tcp_segment(packet, src, dst) else {
            return true;
        };
        // The routes first: a scan of a short table, where the endpoint's
        // lookup hashes; with the table that carries everything (any
        // scenario without routes) it is the answer for every packet.
        if self.routes.decide_segment(from, to, opening).is_carried() {
            return true;
        }
        let endpoint = if interface == LAN { &self.lan } else { &self.link };
        let tuple = FourTuple {
            local: to,
            remote: from,
        };
        if endpoint.has_connection(&tuple) {
            return true;
        }
        if opening {
            self.stats.passed_syns += 1;
        }
        false
    }

    /// Takes the connections the listeners completed, reads the
    /// endpoints' events, and moves bytes until nothing more moves.
    fn drive(&mut self, now: Instant) {
        self.accept(now, Side::Lan);
        self.accept(now, Side::Link);
        self.read_events(now, Side::Lan);
        self.read_events(now, Side::Link);
        let mut i = 0;
        while i < self.splits.len() {
            self.move_bytes(now, i);
            if let Some(outcome) = self.splits[i].relay.outcome() {
                let split = self.splits.swap_remove(i);
                self.count(outcome);
                if let Some(stats) = self.link.stats_of(split.link) {
                    self.stats.link_recovery.add(&stats);
                }
                let _ = self.lan.release(now, split.lan);
                let _ = self.link.release(now, split.link);
            } else {
                i += 1;
            }
        }
    }

    /// Connections accepted on `side`, each with its other half opened.
    fn accept(&mut self, now: Instant, side: Side) {
        loop {
            let accepted = match side {
                Side::Lan => self.lan.accept_transparent(self.lan_listener),
                Side::Link => self.link.accept_transparent(self.link_listener),
            };
            let Some((handle, tuple)) = accepted else {
                return;
            };
            // The accepted connection answered as the server the client
            // dialled; the other half is opened from the client's address.
            let (client, server) = (tuple.remote, tuple.local);
            let other = side.other();
            let routes = self.routes.clone();
            let Decision::Carried { route, settings } = routes.decide(client.ip(), server) else {
                // Its SYN was let in by a route that carries it: a table
                // that cannot change says so again.
                self.stats.not_opened += 1;
                let _ = self.endpoint(side).abort(now, handle);
                continue;
            };
            // The link connection with its route's engine (one accepted
            // on the link has it already), the LAN one with the LAN's.
            let engine = (other == Side::Link).then(|| Config::clone(&settings.engine));
            match self.endpoint(other).connect(now, server, Some(client), engine) {
                Ok(opened) => {
                    let (lan, link) = match side {
                        Side::Lan => (handle, opened),
                        Side::Link => (opened, handle),
                    };
                    self.splits.push(Split {
                        relay: Relay::new(now, settings.relay, side),
                        lan,
                        link,
                        opening: other,
                    });
                    // Counted by name; the name is copied only the first time.
                    match self.stats.carried.get_mut(route) {
                        Some(count) => *count += 1,
                        None => {
                            self.stats.carried.insert(route.to_owned(), 1);
                        }
                    }
                }
                Err(_) => {
                    self.stats.not_opened += 1;
                    let _ = self.endpoint(side).abort(now, handle);
                }
            }
        }
    }

    /// The events that concern the relays: the opening side connected or
    /// failed, a side failed.
    fn read_events(&mut self, now: Instant, side: Side) {
        while let Some((handle, event)) = self.endpoint(side).poll_event() {
            let Some(split) = self.splits.iter_mut().find(|s| s.handle(side) == handle) else {
                continue;
            };
            let opening = split.opening == side && split.relay.is_opening();
            match event {
                Event::Connected if opening => split.relay.opened(now),
                Event::Closed(Some(error)) if opening => split.relay.open_failed(open_failure(error)),
                Event::Closed(Some(_)) => split.relay.failed(side),
                _ => {}
            }
        }
    }

    /// Reads what the relay has room for and writes what it holds, both
    /// sides, and carries out its actions, until nothing moves.
    fn move_bytes(&mut self, now: Instant, index: usize) {
        loop {
            let mut moved = false;
            for side in [Side::Lan, Side::Link] {
                moved |= self.read_side(now, index, side);
                moved |= self.write_side(now, index, side);
            }
            while let Some(action) = self.splits[index].relay.poll_action() {
                moved = true;
                let (side, reset) = match action {
                    crate::relay::Action::Shutdown(side) => (side, false),
                    crate::relay::Action::Reset(side) => (side, true),
                };
                let handle = self.splits[index].handle(side);
                let endpoint = self.endpoint(side);
                let _ = if reset {
                    endpoint.abort(now, handle)
                } else {
                    endpoint.shutdown(handle)
                };
            }
            if !moved {
                return;
            }
        }
    }

    fn read_side(&mut self, now: Instant, index: usize, side: Side) -> bool {
        let split = &self.splits[index];
        // No room once the side has ended, too.
        let room = split.relay.read_room(side).min(self.buf.len());
        if room == 0 || !connected_side(split, side) {
            return false;
        }
        let handle = split.handle(side);
        let mut buf = std::mem::take(&mut self.buf);
        let read = self.endpoint(side).recv(handle, &mut buf[..room]);
        let split = &mut self.splits[index];
        let moved = match read {
            Ok(0) => {
                split.relay.ended(side);
                true
            }
            Ok(n) => {
                split.relay.received(now, side, &buf[..n]);
                true
            }
            Err(StreamError::WouldBlock) => false,
            Err(_) => {
                split.relay.failed(side);
                true
            }
        };
        self.buf = buf;
        moved
    }

    fn write_side(&mut self, now: Instant, index: usize, side: Side) -> bool {
        let GatewayNode {
            lan, link, splits, ..
        } = self;
        let split = &mut splits[index];
        if split.relay.to_write(side).is_empty() || !connected_side(split, side) {
            return false;
        }
        let endpoint = match side {
            Side::Lan => lan,
            Side::Link => link,
        };
        match endpoint.send(split.handle(side), split.relay.to_write(side)) {
            Ok(0) | Err(StreamError::WouldBlock) => false,
            Ok(n) => {
                split.relay.wrote(now, side, n);
                true
            }
            Err(_) => {
                split.relay.failed(side);
                true
            }
        }
    }

    fn count(&mut self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Closed => &mut self.stats.closed,
            Outcome::Reset(_) => &mut self.stats.reset,
            Outcome::OpenFailed(_) => &mut self.stats.open_failed,
            Outcome::Idle => &mut self.stats.idle,
        };
        *counter += 1;
    }
}

/// Whether `side` of the split can be read and written: the accepted
/// side always, the opening side once open.
fn connected_side(split: &Split, side: Side) -> bool {
    side != split.opening || !split.relay.is_opening()
}

fn open_failure(error: ConnectionError) -> OpenFailure {
    match error {
        ConnectionError::Refused => OpenFailure::Refused,
        ConnectionError::HandshakeTimedOut { .. } => OpenFailure::TimedOut,
        _ => OpenFailure::Unreachable,
    }
}

/// A TCP segment's ends, and whether it is a SYN without ACK (one that
/// opens a connection), if its header can be read. IPv6 extension headers
/// are not followed, as [`addresses`] does not.
fn tcp_segment(
    packet: &[u8],
    src: std::net::IpAddr,
    dst: std::net::IpAddr,
) -> Option<(SocketAddr, SocketAddr, bool)> {
    const SYN: u8 = 0x02;
    const ACK: u8 = 0x10;
    let header = match src {
        // An IPv4 header shorter than its fixed part is malformed.
        std::net::IpAddr::V4(_) => Some(usize::from(packet.first()? & 0x0f) * 4).filter(|&h| h >= 20)?,
        std::net::IpAddr::V6(_) => 40,
    };
    let tcp = packet.get(header..header + 14)?;
    let port = |at: usize| u16::from_be_bytes([tcp[at], tcp[at + 1]]);
    let opening = tcp[13] & (SYN | ACK) == SYN;
    Some((
        SocketAddr::new(src, port(0)),
        SocketAddr::new(dst, port(2)),
        opening,
    ))
}

impl Node for GatewayNode {
    fn interface_count(&self) -> usize {
        2
    }

    fn handle_packet(&mut self, now: Instant, interface: InterfaceId, packet: &[u8]) {
        if !self.is_split(interface, packet) {
            self.router.handle_packet(now, interface, packet);
            return;
        }
        if interface == LAN {
            self.lan.handle_packet(now, packet);
        } else {
            self.link.handle_packet(now, packet);
        }
        self.drive(now);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        if let Some(interface) = self.router.poll_transmit(now, buf) {
            return Some(interface);
        }
        // In turn, so that neither side's output waits on the other's.
        self.lan_first = !self.lan_first;
        let order = if self.lan_first { [LAN, LINK] } else { [LINK, LAN] };
        for interface in order {
            let endpoint = if interface == LAN {
                &mut self.lan
            } else {
                &mut self.link
            };
            if endpoint.poll_transmit(now, buf) {
                // Sending may free room in a relay's buffer.
                self.drive(now);
                return Some(interface);
            }
        }
        None
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        let relays = self.splits.iter().filter_map(|s| s.relay.poll_timeout());
        [
            self.lan.poll_timeout(),
            self.link.poll_timeout(),
            self.router.poll_timeout(),
        ]
        .into_iter()
        .flatten()
        .chain(relays)
        .min()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.router.handle_timeout(now);
        self.lan.handle_timeout(now);
        self.link.handle_timeout(now);
        for split in &mut self.splits {
            split.relay.handle_timeout(now);
        }
        self.drive(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relay::RelayConfig;
    use crate::routes::{Carried, Route, RouteMatch};

    /// An IPv4 packet of `protocol` from `src` to `dst` with a valid
    /// header checksum and a few bytes of payload.
    fn ipv4(protocol: u8, src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        with_payload(protocol, src, dst, &[0; 8])
    }

    /// A TCP SYN from `src` to `dst` (the TCP checksum left out: only
    /// the gateway's choice is looked at).
    fn syn((src, sport): ([u8; 4], u16), (dst, dport): ([u8; 4], u16)) -> Vec<u8> {
        let mut tcp = [0; 20];
        tcp[..2].copy_from_slice(&sport.to_be_bytes());
        tcp[2..4].copy_from_slice(&dport.to_be_bytes());
        tcp[12] = 0x50;
        tcp[13] = 0x02;
        with_payload(IPPROTO_TCP, src, dst, &tcp)
    }

    fn with_payload(protocol: u8, src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let total = (20 + payload.len()) as u16;
        let mut packet = vec![0x45, 0];
        packet.extend_from_slice(&total.to_be_bytes());
        packet.extend_from_slice(&[0, 0, 0, 0, 64, protocol, 0, 0]);
        packet.extend_from_slice(&src);
        packet.extend_from_slice(&dst);
        packet.extend_from_slice(payload);
        let sum = packet[..20]
            .chunks(2)
            .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
            .sum::<u32>();
        let folded = (sum & 0xffff) + (sum >> 16);
        packet[10..12].copy_from_slice(&(!(folded as u16)).to_be_bytes());
        packet
    }

    fn link() -> Config {
        Config {
            scps: true,
            ..Config::default()
        }
    }

    fn carried() -> Carried {
        Carried {
            engine: Arc::new(link()),
            relay: RelayConfig {
                buffer: 4096,
                idle_timeout: None,
            },
        }
    }

    fn node_with(routes: RouteTable) -> GatewayNode {
        GatewayNode::new(
            GatewayNodeConfig {
                local: vec!["10.1.0.0/16".parse().unwrap()],
                remote: vec!["10.2.0.0/16".parse().unwrap()],
                lan: Config::default(),
                link: link(),
                routes,
            },
            1,
        )
        .unwrap()
    }

    fn node() -> GatewayNode {
        node_with(RouteTable::carrying_everything(carried()))
    }

    #[test]
    fn a_syn_that_a_route_passes_is_forwarded_and_one_it_carries_reaches_the_endpoint() {
        let ssh = Route {
            name: "ssh".into(),
            matching: RouteMatch {
                source: None,
                destination: None,
                ports: (22, 22),
            },
            carried: None,
        };
        let mut gateway = node_with(RouteTable::new(vec![ssh, Route::everything(carried())]).unwrap());
        let (now, mut out) = (Instant::ZERO, Vec::new());
        let client = ([10, 1, 0, 2], 40000);
        gateway.handle_packet(now, LAN, &syn(client, ([10, 2, 0, 2], 22)));
        assert_eq!(gateway.poll_transmit(now, &mut out), Some(LINK), "forwarded");
        assert_eq!(gateway.stats().passed_syns, 1);
        assert_eq!(gateway.lan_endpoint().stats().packets_received, 0);
        gateway.handle_packet(now, LAN, &syn(client, ([10, 2, 0, 2], 80)));
        assert_eq!(gateway.lan_endpoint().stats().packets_received, 1, "taken");
        assert_eq!(gateway.stats().passed_syns, 1);
        // From the link, a SYN to a local server is read the same way.
        gateway.handle_packet(now, LINK, &syn(([10, 2, 0, 2], 40000), ([10, 1, 0, 2], 22)));
        assert_eq!(gateway.poll_transmit(now, &mut out), Some(LAN), "forwarded");
        assert_eq!(gateway.link_endpoint().stats().packets_received, 0);
        assert_eq!(gateway.stats().passed_syns, 2);
    }

    #[test]
    fn what_is_not_split_is_forwarded_local_prefixes_to_the_lan_the_rest_to_the_link() {
        let mut gateway = node();
        let now = Instant::ZERO;
        let mut out = Vec::new();
        const UDP: u8 = 17;
        const ICMP: u8 = 1;
        for (from, protocol, src, dst, leaves) in [
            (LAN, UDP, [10, 1, 0, 2], [10, 2, 0, 2], LINK),
            (LINK, ICMP, [10, 2, 0, 2], [10, 1, 0, 2], LAN),
            // TCP, but not between the two sides' prefixes.
            (LAN, IPPROTO_TCP, [10, 1, 0, 2], [192, 0, 2, 1], LINK),
        ] {
            gateway.handle_packet(now, from, &ipv4(protocol, src, dst));
            assert_eq!(gateway.poll_transmit(now, &mut out), Some(leaves));
            assert_eq!(&out[16..20], &dst, "forwarded as it was");
        }
        assert_eq!(gateway.poll_transmit(now, &mut out), None);
        assert_eq!(
            gateway.lan_endpoint().stats().packets_received,
            0,
            "no endpoint saw them"
        );
        assert_eq!(gateway.link_endpoint().stats().packets_received, 0);
    }
}
