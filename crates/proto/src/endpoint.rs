//! An endpoint: the connections of one host (or one gateway side), keyed by
//! their addresses; listening; answering segments that belong to nothing
//! (RFC 9293 3.10.7.1 and 3.10.7.2); and the drop counters for input that
//! is malformed or unwanted.
//!
//! Drivers feed it whole IP packets ([`Endpoint::handle_packet`]), take
//! packets out ([`Endpoint::poll_transmit`]) and wake it at
//! [`Endpoint::poll_timeout`]. Applications act on connections through
//! handles.
//!
//! # Transparent addressing
//!
//! Off by default, an endpoint answers only to its own addresses: anything
//! else is a counted `not_local` drop with no answer. A transparent
//! gateway (docs/architecture.md, "On a real network, through two
//! gateways") needs its link endpoint to act as
//! other hosts: [`EndpointConfig::transparent`] lists the prefixes it may
//! act as. Then:
//!
//! - [`Endpoint::listen_transparent`] accepts connections to any address
//!   in the prefixes it is given (all within those of the configuration),
//!   on one port or on every port, and answers as the SYN's destination;
//!   [`Endpoint::accept_transparent`] gives each connection with its
//!   addresses. Given no prefix it is refused: answering for every address
//!   takes an explicit `0.0.0.0/0` or `::/0`.
//! - [`Endpoint::connect`] may name a local address in those prefixes,
//!   such as a client's, as well as one of the endpoint's own.
//! - Segments to those addresses are handled as if they were ours: TCP
//!   and compressed (protocol 105) alike, a segment that belongs to no
//!   connection or listener answered with a reset from the address it was
//!   sent to (RFC 9293 3.10.7.1, see [`Endpoint::handle_packet`]).
//!
//! # SYN floods
//!
//! A listener holds at most [`EndpointConfig::backlog`] connections the
//! application has not accepted, handshaking ones included. Beyond that a
//! SYN is answered with a SYN cookie (`syn_cookies.rs`) and nothing is
//! kept: the ACK that completes the handshake rebuilds the connection.
//!
//! A SYN goes to the most specific listener that takes it: an ordinary
//! listener on its exact address and port; then, for an address of our
//! own, an ordinary listener on the unspecified address and its port
//! (ordinary wildcard listeners never answer as other hosts); then the
//! transparent listener whose prefix holding the address is longest, one
//! on the SYN's port before one on every port.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use scps_node::{IpPrefix, ShrinkWhenSparse, is_host_address, is_host_socket};

use crate::config::{Config, ConfigError, RateOrder};
use crate::connection::{
    Connection, ConnectionParams, ConnectionStats, Event, FourTuple, PathCapacity, RateBudget, State,
    StreamError, answer_budget, default_mss,
};
use crate::time::Instant;
use crate::wire::{
    IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_SCPS_COMPRESSED, IPPROTO_SCPS_TP, IPPROTO_TCP, IpRepr, TcpFlags,
    TcpOptions, TcpRepr, WireError, build_segment_packet, peek_conn_id,
};

mod compression_ids;
mod node;
#[cfg(test)]
mod slot_table_tests;
mod syn_cookies;
mod transparent;

use compression_ids::IdScope;
pub use node::INTERFACE;
pub use transparent::TransparentListenerId;

/// Identifies a connection of an endpoint. Handles of connections that are
/// gone are refused, never confused with new ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionHandle {
    index: u32,
    generation: u32,
}

#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// Configuration of connections opened without one of their own.
    pub connection: Config,
    /// Connections a listener holds that the application has not
    /// accepted yet, handshaking ones included.
    pub backlog: usize,
    /// Beyond the backlog, answer SYNs with SYN cookies (RFC 4987 3.6)
    /// rather than drop them.
    pub syn_cookies: bool,
    /// Take segments on IP protocol 106 as SCPS-TP, as the SCPS RI's
    /// standalone builds send them (docs/spec/scps-tp-options.md, "IP
    /// protocol numbers"), and answer each connection on the protocol it was
    /// opened on. Off by default: 106 is then dropped as `not_tcp`.
    /// Connections whose configuration says `ip_protocol = 106` turn it on.
    pub accept_protocol_106: bool,
    pub max_connections: usize,
    /// Key for initial sequence numbers and timestamp offsets (RFC 6528);
    /// a driver on a real network should pick it at random.
    pub secret: u64,
    /// Prefixes of addresses that are not the endpoint's own but that it
    /// may act as (transparent addressing, see the module's notes): empty
    /// by default, which turns transparent addressing off.
    pub transparent: Vec<IpPrefix>,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            connection: Config::default(),
            backlog: 128,
            syn_cookies: true,
            accept_protocol_106: false,
            max_connections: 65536,
            secret: 0x5c95_7a11_d00d_f00d,
            transparent: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    #[error("{0} is already in use")]
    AddressInUse(SocketAddr),
    #[error("no local address of the same IP version as {0}")]
    NoLocalAddress(SocketAddr),
    #[error(
        "{0} is not an address of this endpoint, nor in the prefixes it may act as \
         (EndpointConfig::transparent)"
    )]
    NotLocal(IpAddr),
    #[error(
        "a transparent listener needs the prefixes it answers for (0.0.0.0/0 or ::/0 for every \
         address); none was given"
    )]
    NoTransparentPrefixes,
    #[error("{0} is not within the prefixes this endpoint may act as (EndpointConfig::transparent)")]
    NotTransparent(IpPrefix),
    #[error("{prefix} on {} already has a transparent listener", ports(*port))]
    TransparentInUse { prefix: IpPrefix, port: Option<u16> },
    #[error("no free local port for {0}")]
    NoFreePort(SocketAddr),
    #[error(
        "{0} is not a host to connect to: a unicast address (not multicast, broadcast or \
         unspecified) and a port above 0"
    )]
    NotAHost(SocketAddr),
    #[error("too many connections (at most {0})")]
    TooManyConnections(usize),
    #[error("no such connection")]
    InvalidHandle,
    // The message is in this one's: not also its `source`, or a report of
    // the whole chain would say it twice.
    #[error("invalid configuration: {0}")]
    Config(ConfigError),
}

impl From<ConfigError> for EndpointError {
    fn from(error: ConfigError) -> EndpointError {
        EndpointError::Config(error)
    }
}

/// What the endpoint has seen and done, beyond its connections.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointStats {
    pub packets_received: u64,
    pub packets_sent: u64,
    /// Resets sent for segments that belonged to no connection.
    pub resets_sent: u64,
    /// SYNs answered with a SYN cookie (the backlog was full), and
    /// connections made from a valid cookie.
    pub syn_cookies_sent: u64,
    pub syn_cookies_accepted: u64,
    /// Destination-unreachable reports (ICMP, ICMPv6) about one of our
    /// connections, taken as soft errors.
    pub unreachable_reports: u64,
    /// Resets and SYN cookies not sent because [`MAX_ANSWERS_WAITING`]
    /// answers were already waiting (a flood).
    pub answers_not_sent: u64,
    /// ACKs in answer to a connection's unacceptable segments not sent
    /// because [`crate::ANSWERS_PER_SECOND`] had gone out this second
    /// (each connection's own bound is in its statistics).
    pub unacceptable_answers_over_budget: u64,
    /// Connections in TIME-WAIT that gave their tuple to a new one: the
    /// peer's SYN (RFC 6191), or an open of ours.
    pub time_wait_reused: u64,
    /// Packets dropped, by cause: wire errors by their label (for
    /// compressed segments too, e.g. `compressed_field_unknown` when a
    /// field cannot be reconstructed), and `not_tcp` (neither protocol 6
    /// nor 105), `not_local`, `no_such_interface` (handed in as a [`scps_node::Node`]
    /// on an interface other than [`INTERFACE`]), `backlog_full`, `too_many_connections`,
    /// `no_connection`, `no_compressed_connection` (a protocol-105 packet
    /// whose source address and connection id match no connection),
    /// `icmp_out_of_window` (a destination-unreachable report quoting a
    /// sequence number not in flight, RFC 5927), `accept_queue_full` (the
    /// ACK of a valid SYN cookie while the listener already holds its
    /// backlog of connections the application has not accepted), and
    /// what a driver's path dropped before the endpoint saw it
    /// ([`Endpoint::count_dropped_by_path`]: `frame_check` on the UDP path).
    pub drops: BTreeMap<&'static str, u64>,
}

impl EndpointStats {
    pub fn dropped(&self, cause: &str) -> u64 {
        self.drops.get(cause).copied().unwrap_or(0)
    }

    pub fn total_dropped(&self) -> u64 {
        self.drops.values().sum()
    }
}

/// What became of the ACK that may complete a SYN cookie's handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CookieAck {
    /// The connection is rebuilt and took the ACK.
    Accepted,
    /// The cookie is good but the listener holds too many connections
    /// waiting to be accepted: the ACK is dropped, the client tries again.
    QueueFull,
    /// No cookie of ours: answered like any stray ACK.
    NotOurs,
}

/// What a listener listens on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum ListenerKey {
    /// An ordinary listener: one address and port (or the unspecified
    /// address for all of ours).
    Address(SocketAddr),
    Transparent(TransparentListenerId),
}

/// Chooses the configuration of each connection a listener takes, from its
/// addresses and ports: a gateway's routes, each with settings of its own.
pub trait ConfigChooser: std::fmt::Debug + Send + Sync {
    /// The configuration for a SYN of `tuple` (local: the address it was
    /// sent to); `None` leaves the listener's own. What it returns must
    /// have passed [`Config::validate`].
    fn config_for(&self, tuple: &FourTuple) -> Option<Arc<Config>>;
}

#[derive(Debug)]
struct Listener {
    config: Arc<Config>,
    /// Overrides `config` connection by connection.
    chooser: Option<Arc<dyn ConfigChooser>>,
    /// Established connections waiting for `accept`.
    ready: VecDeque<ConnectionHandle>,
    /// Connections of this listener not yet accepted (handshaking or
    /// ready).
    pending: usize,
}

#[derive(Debug)]
struct Slot {
    generation: u32,
    /// Boxed: a slot left free holds a pointer's room, not a connection's.
    conn: Option<Box<Connection>>,
    /// In the ready queue.
    queued: bool,
    /// The wake-up last pushed on the timer heap.
    timeout: Option<Instant>,
    /// The listener it came from, until accepted.
    listener: Option<ListenerKey>,
}

#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    default_config: Arc<Config>,
    local_addrs: Vec<IpAddr>,
    slots: Vec<Slot>,
    /// Slots free below the table's end. They are taken lowest first, so
    /// that as connections end the free ones gather at the end, where the
    /// table is cut back ([`Endpoint::free_slot`]).
    free_slots: BTreeSet<u32>,
    /// The generation a slot made anew starts at: past that of every slot
    /// cut from the table, so that no stale handle matches it.
    generation_floor: u32,
    live: usize,
    by_tuple: HashMap<FourTuple, ConnectionHandle>,
    listeners: HashMap<ListenerKey, Listener>,
    /// Which transparent listener takes a SYN, by prefix.
    transparent_listeners: transparent::TransparentListeners,
    /// Connections that may have something to send, in turn.
    ready: VecDeque<ConnectionHandle>,
    /// Wake-ups, possibly stale (checked against the slot on use).
    timeouts: BinaryHeap<Reverse<(Instant, ConnectionHandle)>>,
    /// Answers to segments that belonged to no connection (resets, SYN
    /// cookies), already built; at most [`MAX_ANSWERS_WAITING`].
    stray_output: VecDeque<Vec<u8>>,
    events: VecDeque<(ConnectionHandle, Event)>,
    next_port: u16,
    stats: EndpointStats,
    /// Header compression ids, ours and our peers'.
    compression_ids: compression_ids::CompressionIds,
    /// When a SYN cookie last went out: cookies are only accepted for a
    /// while after one did, so that ACKs guessing at them are not tried
    /// when there was no flood.
    cookie_sent_at: Option<Instant>,
    /// The routes' rates, each shared by the connections on it.
    rate_budgets: HashMap<RateKey, RateBudget>,
    /// ACKs answering unacceptable segments, all connections together.
    answer_budget: scps_node::PerSecond,
    /// What the path under the endpoint says it carries, which every
    /// route's rate then follows.
    path_capacity: Option<PathCapacity>,
}

/// What makes two connections' routes one: the route, its rate (or
/// ceiling), whether it follows the path and from what floor, its framing
/// and the order of its turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct RateKey {
    route: u32,
    rate_bps: Option<u64>,
    auto_from_bps: Option<u64>,
    framing_bytes: u32,
    order: RateOrder,
}

const EPHEMERAL_PORTS: std::ops::RangeInclusive<u16> = 49152..=65535;

/// Answers to segments that belonged to no connection waiting to be sent:
/// beyond this a flood's answers are not built (and counted), so the queue
/// cannot grow with the flood when the driver sends slower than it
/// receives.
pub const MAX_ANSWERS_WAITING: usize = 512;

impl Endpoint {
    pub fn new(
        config: EndpointConfig,
        local_addrs: impl IntoIterator<Item = IpAddr>,
    ) -> Result<Endpoint, EndpointError> {
        config.connection.validate()?;
        Ok(Endpoint {
            default_config: Arc::new(config.connection.clone()),
            next_port: *EPHEMERAL_PORTS.start() + (config.secret % 16384) as u16,
            config,
            local_addrs: local_addrs.into_iter().collect(),
            slots: Vec::new(),
            free_slots: BTreeSet::new(),
            generation_floor: 0,
            live: 0,
            by_tuple: HashMap::new(),
            listeners: HashMap::new(),
            transparent_listeners: Default::default(),
            ready: VecDeque::new(),
            timeouts: BinaryHeap::new(),
            stray_output: VecDeque::new(),
            events: VecDeque::new(),
            stats: EndpointStats::default(),
            compression_ids: Default::default(),
            cookie_sent_at: None,
            rate_budgets: HashMap::new(),
            answer_budget: answer_budget(),
            path_capacity: None,
        })
    }

    /// Every route with a rate (configured or `auto`) paces no faster than
    /// `capacity` says the path under the endpoint carries, from `now` on:
    /// for a driver whose path knows it (a bundle of channels, some of
    /// which may be down).
    pub fn follow_path_capacity(&mut self, capacity: PathCapacity, now: Instant) {
        for budget in self.rate_budgets.values() {
            budget.follow(capacity.clone(), now);
        }
        self.path_capacity = Some(capacity);
    }

    pub fn stats(&self) -> &EndpointStats {
        &self.stats
    }

    pub fn local_addrs(&self) -> &[IpAddr] {
        &self.local_addrs
    }

    /// The configuration connections get unless they are given their own.
    pub fn default_config(&self) -> &Config {
        &self.default_config
    }

    /// Accepts connections to `local` (an address of ours or one the
    /// endpoint may act as, or unspecified for all of ours) with `config`,
    /// or the endpoint's default.
    pub fn listen(&mut self, local: SocketAddr, config: Option<Config>) -> Result<(), EndpointError> {
        if !local.ip().is_unspecified() && !self.acts_as(local.ip()) {
            return Err(EndpointError::NotLocal(local.ip()));
        }
        let key = ListenerKey::Address(local);
        if self.listeners.contains_key(&key) {
            return Err(EndpointError::AddressInUse(local));
        }
        let config = self.checked_config(config)?;
        self.add_listener(key, config);
        Ok(())
    }

    /// Accepts connections to any address in `prefixes` (each within
    /// [`EndpointConfig::transparent`]) on `port`, or on every port for
    /// `None`, answering as the address each SYN was sent to; with
    /// `config`, or the endpoint's default. One backlog
    /// ([`EndpointConfig::backlog`]) covers all its prefixes. See the
    /// module's notes for which listener takes a SYN when several could.
    pub fn listen_transparent(
        &mut self,
        prefixes: &[IpPrefix],
        port: Option<u16>,
        config: Option<Config>,
    ) -> Result<TransparentListenerId, EndpointError> {
        let config = self.checked_config(config)?;
        let id = self
            .transparent_listeners
            .add(&self.config.transparent, prefixes, port)?;
        self.add_listener(ListenerKey::Transparent(id), config);
        Ok(id)
    }

    fn add_listener(&mut self, key: ListenerKey, config: Arc<Config>) {
        self.listeners.insert(
            key,
            Listener {
                config,
                chooser: None,
                ready: VecDeque::new(),
                pending: 0,
            },
        );
    }

    /// Stops listening; connections already made are not affected.
    pub fn unlisten(&mut self, local: SocketAddr) {
        self.listeners.remove(&ListenerKey::Address(local));
    }

    /// Lets `chooser` pick the configuration of each connection the
    /// transparent listener takes from now on.
    pub fn choose_configs(&mut self, listener: TransparentListenerId, chooser: Arc<dyn ConfigChooser>) {
        if let Some(state) = self.listeners.get_mut(&ListenerKey::Transparent(listener)) {
            state.chooser = Some(chooser);
        }
    }

    /// Stops a transparent listener; connections already made are not
    /// affected.
    pub fn unlisten_transparent(&mut self, listener: TransparentListenerId) {
        self.transparent_listeners.remove(listener);
        self.listeners.remove(&ListenerKey::Transparent(listener));
    }

    /// The next established connection to `local`, if any.
    pub fn accept(&mut self, local: SocketAddr) -> Option<ConnectionHandle> {
        self.accept_from(ListenerKey::Address(local))
    }

    /// The next established connection of a transparent listener, if any,
    /// with its addresses: the local one is the address the client sent
    /// its SYN to, which the connection answers as.
    pub fn accept_transparent(
        &mut self,
        listener: TransparentListenerId,
    ) -> Option<(ConnectionHandle, FourTuple)> {
        let handle = self.accept_from(ListenerKey::Transparent(listener))?;
        let tuple = self.connection(handle)?.tuple();
        Some((handle, tuple))
    }

    fn accept_from(&mut self, key: ListenerKey) -> Option<ConnectionHandle> {
        let listener = self.listeners.get_mut(&key)?;
        let handle = listener.ready.pop_front()?;
        listener.pending = listener.pending.saturating_sub(1);
        if let Some(slot) = self.slot_mut(handle) {
            slot.listener = None;
        }
        Some(handle)
    }

    /// Whether the endpoint answers to `ip`: one of its own addresses, or
    /// one in the prefixes it may act as.
    fn acts_as(&self, ip: IpAddr) -> bool {
        self.local_addrs.contains(&ip) || transparent::is_enabled(&self.config.transparent, ip)
    }

    /// Opens a connection to `remote` from `local`: an address of ours, or
    /// one in the prefixes the endpoint may act as
    /// ([`EndpointConfig::transparent`]), and a port (0 for a free
    /// ephemeral one); by default the first local address of the right IP
    /// version and an ephemeral port.
    pub fn connect(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        local: Option<SocketAddr>,
        config: Option<Config>,
    ) -> Result<ConnectionHandle, EndpointError> {
        // RFC 1122 4.2.3.10: an open to a broadcast or multicast address
        // is an error.
        if !is_host_socket(remote) {
            return Err(EndpointError::NotAHost(remote));
        }
        let config = self.checked_config(config)?;
        if self.live >= self.config.max_connections {
            return Err(EndpointError::TooManyConnections(self.config.max_connections));
        }
        let local = match local {
            Some(local) if !self.acts_as(local.ip()) => return Err(EndpointError::NotLocal(local.ip())),
            Some(local) if local.port() == 0 => self.pick_port(now, local.ip(), remote)?,
            Some(local) => local,
            None => self.pick_local(now, remote)?,
        };
        let tuple = FourTuple { local, remote };
        if !self.free_for_open(now, &tuple) {
            return Err(EndpointError::AddressInUse(local));
        }
        if let Some(&old) = self.by_tuple.get(&tuple) {
            self.stats.time_wait_reused += 1;
            self.remove(old);
        }
        let params = self.params(now, tuple, config, true);
        let handle = self.insert(Connection::connect(params), None);
        self.after_event(handle, true);
        Ok(handle)
    }

    fn checked_config(&self, config: Option<Config>) -> Result<Arc<Config>, EndpointError> {
        match config {
            None => Ok(self.default_config.clone()),
            Some(config) => {
                config.validate()?;
                Ok(Arc::new(config))
            }
        }
    }

    fn pick_local(&mut self, now: Instant, remote: SocketAddr) -> Result<SocketAddr, EndpointError> {
        let ip = *self
            .local_addrs
            .iter()
            .find(|ip| ip.is_ipv4() == remote.is_ipv4())
            .ok_or(EndpointError::NoLocalAddress(remote))?;
        self.pick_port(now, ip, remote)
    }

    /// Whether an open of ours may take `tuple` at `now`: no connection
    /// holds it, or the one that does has been in TIME-WAIT long enough
    /// to give way (`connection/reuse.rs`).
    fn free_for_open(&self, now: Instant, tuple: &FourTuple) -> bool {
        self.by_tuple
            .get(tuple)
            .is_none_or(|&held| self.connection(held).is_some_and(|c| c.yields_to_open(now)))
    }

    /// A free ephemeral port on `ip` for a connection to `remote`
    /// ([`Endpoint::free_for_open`]).
    fn pick_port(
        &mut self,
        now: Instant,
        ip: IpAddr,
        remote: SocketAddr,
    ) -> Result<SocketAddr, EndpointError> {
        let span = u32::from(*EPHEMERAL_PORTS.end() - *EPHEMERAL_PORTS.start()) + 1;
        for _ in 0..span {
            let port = self.next_port;
            self.next_port = if port == *EPHEMERAL_PORTS.end() {
                *EPHEMERAL_PORTS.start()
            } else {
                port + 1
            };
            let local = SocketAddr::new(ip, port);
            if self.free_for_open(now, &FourTuple { local, remote })
                && !self.listeners.contains_key(&ListenerKey::Address(local))
            {
                return Ok(local);
            }
        }
        Err(EndpointError::NoFreePort(remote))
    }

    /// What a new connection starts with. `peer_offers_compression`: a
    /// listener's connection takes a compression id only if the SYN offers
    /// compression; an active open offers it if its configuration does.
    fn params(
        &mut self,
        now: Instant,
        tuple: FourTuple,
        config: Arc<Config>,
        peer_offers_compression: bool,
    ) -> ConnectionParams {
        let compression_id = (config.scps && config.header_compression && peer_offers_compression)
            .then(|| self.compression_ids.allocate(self.id_scope(&tuple)))
            .flatten();
        let rate_budget = self.rate_budget(now, &config);
        let key = tuple_hash(self.config.secret, &tuple);
        // RFC 6528: a keyed function of the addresses plus a 4 µs clock.
        let clock = (now.as_nanos() / 4000) as u32;
        ConnectionParams {
            now,
            tuple,
            config,
            iss: (key as u32).wrapping_add(clock),
            ts_offset: (key >> 32) as u32,
            compression_id,
            rate_budget,
        }
    }

    /// The budget of the route a connection with `config` is on, if it has
    /// a route rate. Budgets no connection draws on any more are dropped
    /// here, so the table holds the routes in use.
    fn rate_budget(&mut self, now: Instant, config: &Config) -> Option<RateBudget> {
        if config.rate_bps.is_none() && !config.rate_auto {
            return None;
        }
        self.rate_budgets.retain(|_, budget| budget.members() > 0);
        let key = RateKey {
            route: config.rate_route,
            rate_bps: config.rate_bps,
            auto_from_bps: config.rate_auto.then_some(config.rate_min_bps),
            framing_bytes: config.rate_framing_bytes,
            order: config.rate_order,
        };
        if let Some(budget) = self.rate_budgets.get(&key) {
            return Some(budget.clone());
        }
        let budget = RateBudget::for_config(config, now)?;
        if let Some(capacity) = &self.path_capacity {
            budget.follow(capacity.clone(), now);
        }
        self.rate_budgets.insert(key, budget.clone());
        Some(budget)
    }

    /// Where our compression id of a connection must be unique.
    fn id_scope(&self, tuple: &FourTuple) -> IdScope {
        if self.local_addrs.contains(&tuple.local.ip()) {
            IdScope::Peer(tuple.remote.ip())
        } else {
            IdScope::Source(tuple.local.ip())
        }
    }

    fn insert(&mut self, conn: Connection, listener: Option<ListenerKey>) -> ConnectionHandle {
        let tuple = conn.tuple();
        let index = match self.free_slots.pop_first() {
            Some(index) => index,
            None => {
                self.slots.push(Slot {
                    generation: self.generation_floor,
                    conn: None,
                    queued: false,
                    timeout: None,
                    listener: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        let slot = &mut self.slots[index as usize];
        slot.conn = Some(Box::new(conn));
        slot.listener = listener;
        slot.timeout = None;
        let handle = ConnectionHandle {
            index,
            generation: slot.generation,
        };
        self.by_tuple.insert(tuple, handle);
        self.live += 1;
        handle
    }

    fn slot_mut(&mut self, handle: ConnectionHandle) -> Option<&mut Slot> {
        self.slots
            .get_mut(handle.index as usize)
            .filter(|slot| slot.generation == handle.generation && slot.conn.is_some())
    }

    /// The connection behind `handle`, for inspection.
    pub fn connection(&self, handle: ConnectionHandle) -> Option<&Connection> {
        self.slots
            .get(handle.index as usize)
            .filter(|slot| slot.generation == handle.generation)
            .and_then(|slot| slot.conn.as_deref())
    }

    pub fn stats_of(&self, handle: ConnectionHandle) -> Option<ConnectionStats> {
        self.connection(handle).map(Connection::stats)
    }

    pub fn state(&self, handle: ConnectionHandle) -> Option<State> {
        self.connection(handle).map(Connection::state)
    }

    /// Runs `action` on the connection, then updates the endpoint's view
    /// of it (output, timers, events).
    fn with_connection<R>(
        &mut self,
        handle: ConnectionHandle,
        action: impl FnOnce(&mut Connection) -> R,
    ) -> Result<R, EndpointError> {
        let conn = self
            .slot_mut(handle)
            .and_then(|slot| slot.conn.as_mut())
            .ok_or(EndpointError::InvalidHandle)?;
        let result = action(conn);
        self.after_event(handle, true);
        Ok(result)
    }

    /// Hands a segment to the connection by `handle` (`None` if there is
    /// none), then holds its answer to the segment, if it was an
    /// unacceptable one, to the endpoint's budget (`unacceptable.rs`).
    fn segment_to_connection<R>(
        &mut self,
        now: Instant,
        handle: ConnectionHandle,
        handle_segment: impl FnOnce(&mut Connection) -> R,
    ) -> Option<R> {
        let (result, answers) = self
            .with_connection(handle, |c| {
                let result = handle_segment(c);
                (result, c.take_unacceptable_answer())
            })
            .ok()?;
        if answers && !self.answer_budget.take(now) {
            self.stats.unacceptable_answers_over_budget += 1;
            let _ = self.with_connection(handle, Connection::withdraw_unacceptable_answer);
        }
        Some(result)
    }

    pub fn send(&mut self, handle: ConnectionHandle, data: &[u8]) -> Result<usize, StreamError> {
        self.with_connection(handle, |c| c.send(data))
            .unwrap_or(Err(StreamError::SendClosed))
    }

    pub fn recv(&mut self, handle: ConnectionHandle, out: &mut [u8]) -> Result<usize, StreamError> {
        self.with_connection(handle, |c| c.recv(out)).unwrap_or(Ok(0))
    }

    /// See [`Connection::send_record`].
    pub fn send_record(&mut self, handle: ConnectionHandle, data: &[u8]) -> Result<usize, StreamError> {
        self.with_connection(handle, |c| c.send_record(data))
            .unwrap_or(Err(StreamError::SendClosed))
    }

    /// See [`Connection::end_record`].
    pub fn end_record(&mut self, handle: ConnectionHandle) -> Result<(), StreamError> {
        self.with_connection(handle, Connection::end_record)
            .unwrap_or(Err(StreamError::SendClosed))
    }

    /// See [`Connection::recv_record`].
    pub fn recv_record(
        &mut self,
        handle: ConnectionHandle,
        out: &mut [u8],
    ) -> Result<(usize, bool), StreamError> {
        self.with_connection(handle, |c| c.recv_record(out))
            .unwrap_or(Ok((0, false)))
    }

    pub fn shutdown(&mut self, handle: ConnectionHandle) -> Result<(), EndpointError> {
        self.with_connection(handle, Connection::shutdown)
    }

    pub fn close(&mut self, now: Instant, handle: ConnectionHandle) -> Result<(), EndpointError> {
        self.with_connection(handle, |c| c.close(now))
    }

    pub fn abort(&mut self, now: Instant, handle: ConnectionHandle) -> Result<(), EndpointError> {
        self.with_connection(handle, |c| c.abort(now))
    }

    /// Turns Nagle's algorithm on or off for one connection; data it held
    /// back goes out at the next transmit.
    pub fn set_nagle(&mut self, handle: ConnectionHandle, on: bool) -> Result<(), EndpointError> {
        self.with_connection(handle, |c| c.set_nagle(on))
    }

    /// Forgets the handle; the connection finishes whatever it is doing.
    pub fn release(&mut self, now: Instant, handle: ConnectionHandle) -> Result<(), EndpointError> {
        self.with_connection(handle, |c| c.release(now))
    }

    pub fn poll_event(&mut self) -> Option<(ConnectionHandle, Event)> {
        self.events.pop_front()
    }

    fn drop_packet(&mut self, cause: &'static str) {
        *self.stats.drops.entry(cause).or_insert(0) += 1;
    }

    /// Processes one received IP packet.
    ///
    /// A segment to an address the endpoint may act as
    /// ([`EndpointConfig::transparent`]) that belongs to no connection and
    /// no listener is answered with a reset from that address, as the host
    /// itself would answer (RFC 9293 3.10.7.1): the kernel steered it to us
    /// rather than to that host, so nobody else will answer, and silence
    /// would leave the sender retrying until its timers give up (minutes to
    /// hours with SCPS-TP's) where a reset ends the attempt at once, as a
    /// refusal. Segments to addresses neither ours nor enabled are dropped
    /// unanswered and counted as `not_local`; those to a multicast group
    /// or the broadcast address, or from an address that is no host's,
    /// as `not_unicast` and `bad_source`, even where a transparent prefix
    /// covers them (RFC 1122 4.2.3.10).
    pub fn handle_packet(&mut self, now: Instant, packet: &[u8]) {
        self.stats.packets_received += 1;
        let (ip, payload) = match IpRepr::parse(packet) {
            Ok(parsed) => parsed,
            Err(err) => return self.drop_packet(err.label()),
        };
        if ip.protocol() == IPPROTO_SCPS_COMPRESSED {
            return self.handle_compressed(now, ip.src(), ip.dst(), payload);
        }
        let protocol = ip.protocol();
        if protocol == IPPROTO_ICMP || protocol == IPPROTO_ICMPV6 {
            return self.handle_icmp(&ip, payload);
        }
        if protocol != IPPROTO_TCP && !(protocol == IPPROTO_SCPS_TP && self.accepts_protocol_106()) {
            return self.drop_packet("not_tcp");
        }
        let parsed = TcpRepr::parse_as(payload, ip.src(), ip.dst(), protocol, true).or_else(|err| {
            // Accept either number in a 106 segment's pseudo-header
            // (docs/spec/scps-tp-options.md, "IP protocol numbers").
            match err {
                WireError::BadChecksum { .. } if protocol == IPPROTO_SCPS_TP => {
                    TcpRepr::parse(payload, ip.src(), ip.dst(), true).map_err(|_| err)
                }
                _ => Err(err),
            }
        });
        let tcp = match parsed {
            Ok(tcp) => tcp,
            Err(err) => {
                if matches!(err, WireError::BadChecksum { .. }) && self.acts_as(ip.dst()) {
                    // The IP header is intact (its checksum held, or IPv6
                    // has none and the addresses are ours): the segment
                    // was damaged on the way from this peer.
                    self.corruption_experienced(ip.src());
                }
                return self.drop_packet(err.label());
            }
        };
        // RFC 1122 4.2.3.10: TCP is between two hosts. A segment to a
        // group (even one a transparent prefix covers) or from an address
        // no host sends from is dropped unanswered: a reset to it would
        // go to a group, or to nobody.
        if !is_host_address(ip.dst()) {
            return self.drop_packet("not_unicast");
        }
        if !is_host_address(ip.src()) {
            return self.drop_packet("bad_source");
        }
        let own = self.local_addrs.contains(&ip.dst());
        if !own && !transparent::is_enabled(&self.config.transparent, ip.dst()) {
            return self.drop_packet("not_local");
        }
        let tuple = FourTuple {
            local: SocketAddr::new(ip.dst(), tcp.dst_port),
            remote: SocketAddr::new(ip.src(), tcp.src_port),
        };
        if let Some(&handle) = self.by_tuple.get(&tuple)
            && self.connection(handle).is_some_and(|c| c.yields_to_syn(&tcp))
        {
            // RFC 6191: a new incarnation of a tuple in TIME-WAIT; the
            // listener takes the SYN below.
            self.stats.time_wait_reused += 1;
            self.remove(handle);
        }
        if let Some(&handle) = self.by_tuple.get(&tuple) {
            // Infallible: the map only holds live handles.
            self.segment_to_connection(now, handle, |c| c.handle_tcp_segment(now, &tcp));
            if tcp.flags.syn() {
                // A SYN-ACK (or a SYN in a simultaneous open) may have
                // brought the peer's compression id.
                self.register_compression(handle);
            }
            return;
        }
        match self.find_listener(tuple.local, own) {
            Some(listener) => self.segment_to_listener(now, listener, tuple, &tcp, protocol),
            None => self.segment_to_nothing(tuple, &tcp, protocol),
        }
    }

    /// An ICMP or ICMPv6 message: a destination-unreachable report about
    /// one of our connections is a soft error for it (RFC 1122 4.2.3.9);
    /// anything else is not ours to read.
    fn handle_icmp(&mut self, ip: &IpRepr, message: &[u8]) {
        let report = match crate::wire::icmp::parse_unreachable(ip, message) {
            Ok(Some(report)) => report,
            Ok(None) => return self.drop_packet("not_tcp"),
            Err(err) => return self.drop_packet(err.label()),
        };
        let tuple = FourTuple {
            local: report.src,
            remote: report.dst,
        };
        let Some(&handle) = self.by_tuple.get(&tuple).filter(|_| self.acts_as(ip.dst())) else {
            return self.drop_packet("no_connection");
        };
        match self.with_connection(handle, |c| c.report_unreachable_quoting(report.seq)) {
            Ok(true) => self.stats.unreachable_reports += 1,
            _ => self.drop_packet("icmp_out_of_window"),
        }
    }

    /// Whether segments on IP protocol 106 are taken as SCPS-TP: when the
    /// configuration says so, or when connections are opened on it.
    fn accepts_protocol_106(&self) -> bool {
        self.config.accept_protocol_106 || self.default_config.ip_protocol == IPPROTO_SCPS_TP
    }

    /// A listener's connection configuration for a SYN of `tuple` that
    /// came on `protocol`: the connection answers on the protocol it was
    /// opened on.
    fn listener_config(&self, listener: ListenerKey, tuple: &FourTuple, protocol: u8) -> Option<Arc<Config>> {
        let state = self.listeners.get(&listener)?;
        let chosen = state.chooser.as_ref().and_then(|c| c.config_for(tuple));
        let config = chosen.unwrap_or_else(|| state.config.clone());
        if config.ip_protocol == protocol {
            return Some(config);
        }
        Some(Arc::new(Config {
            ip_protocol: protocol,
            ..(*config).clone()
        }))
    }

    /// The listener that takes a SYN to `local` (`own`: an address of
    /// ours), the most specific first (see the module's notes).
    fn find_listener(&self, local: SocketAddr, own: bool) -> Option<ListenerKey> {
        let exact = ListenerKey::Address(local);
        if self.listeners.contains_key(&exact) {
            return Some(exact);
        }
        let any = ListenerKey::Address(SocketAddr::new(unspecified(local.ip()), local.port()));
        if own && self.listeners.contains_key(&any) {
            return Some(any);
        }
        self.transparent_listeners
            .find(local)
            .map(ListenerKey::Transparent)
    }

    /// A protocol-105 packet (docs/spec/compression.md): to the
    /// connection whose peer sends from `src` with the id in its first
    /// byte, which decompresses it and processes it as TCP input.
    fn handle_compressed(&mut self, now: Instant, src: IpAddr, dst: IpAddr, segment: &[u8]) {
        if !self.acts_as(dst) {
            return self.drop_packet("not_local");
        }
        let id = match peek_conn_id(segment) {
            Ok(id) => id,
            Err(err) => return self.drop_packet(err.label()),
        };
        let Some(handle) = self.compression_ids.find(dst, src, id) else {
            return self.drop_packet("no_compressed_connection");
        };
        // The table holds only live handles.
        let Some(result) = self.segment_to_connection(now, handle, |c| {
            c.handle_compressed_segment(now, segment, src, dst)
        }) else {
            return self.drop_packet("no_compressed_connection");
        };
        if let Err(err) = result {
            if matches!(err, WireError::BadChecksum { .. }) {
                // As for TCP: the IP header held, the segment was damaged
                // on the way from this peer.
                self.corruption_experienced(src);
            }
            self.drop_packet(err.label());
        }
    }

    /// Files the connection under the peer's compression id once it is
    /// known.
    fn register_compression(&mut self, handle: ConnectionHandle) {
        let Some(conn) = self.connection(handle) else {
            return;
        };
        if let (_, Some(peer_id)) = conn.compression_ids() {
            let tuple = conn.tuple();
            self.compression_ids
                .register_peer(tuple.local.ip(), tuple.remote.ip(), peer_id, handle);
        }
    }

    /// RFC 9293 3.10.7.2, LISTEN.
    fn segment_to_listener(
        &mut self,
        now: Instant,
        listener: ListenerKey,
        tuple: FourTuple,
        seg: &TcpRepr<'_>,
        protocol: u8,
    ) {
        if seg.flags.rst() {
            return self.drop_packet("no_connection");
        }
        if seg.flags.ack() {
            if !seg.flags.syn() {
                match self.accept_cookie(now, listener, tuple, seg, protocol) {
                    CookieAck::Accepted => return,
                    // The client retransmits its ACK (or data) and gets
                    // in once the application accepts.
                    CookieAck::QueueFull => return self.drop_packet("accept_queue_full"),
                    CookieAck::NotOurs => {}
                }
            }
            self.reply_reset(tuple, seg.ack, None, protocol);
            return self.drop_packet("no_connection");
        }
        if !seg.flags.syn() {
            return self.drop_packet("no_connection");
        }
        let (Some(state), Some(config)) = (
            self.listeners.get(&listener),
            self.listener_config(listener, &tuple, protocol),
        ) else {
            return;
        };
        if state.pending >= self.config.backlog {
            if self.config.syn_cookies {
                return self.send_cookie(now, config, tuple, seg);
            }
            return self.drop_packet("backlog_full");
        }
        if self.live >= self.config.max_connections {
            return self.drop_packet("too_many_connections");
        }
        let offers_compression = seg.options.scps_capabilities.is_some_and(|caps| caps.compression);
        let params = self.params(now, tuple, config, offers_compression);
        let handle = self.insert(Connection::accept(params, seg), Some(listener));
        self.register_compression(handle);
        if let Some(state) = self.listeners.get_mut(&listener) {
            state.pending += 1;
        }
        self.after_event(handle, true);
    }

    /// Answers a SYN with a SYN-ACK whose sequence number (and timestamp)
    /// carry what the connection will need, keeping nothing.
    fn send_cookie(&mut self, now: Instant, config: Arc<Config>, tuple: FourTuple, seg: &TcpRepr<'_>) {
        if self.answers_full() {
            return;
        }
        let peer_mss = seg.options.mss.unwrap_or_else(|| default_mss(tuple.remote));
        let (cookie, mss) = syn_cookies::make(self.config.secret, &tuple, seg.seq, peer_mss, now);
        let timestamps = config.timestamps && seg.options.timestamps.is_some();
        let mut options = seg.options;
        options.mss = Some(mss);
        options.scps_capabilities = None;
        if !timestamps {
            // Nowhere to keep them: offered neither.
            options.window_scale = None;
            options.sack_permitted = false;
        }
        let syn = TcpRepr {
            options,
            payload: &[],
            ..*seg
        };
        let mut params = self.params(now, tuple, config, false);
        params.iss = cookie;
        if timestamps {
            let bits = syn_cookies::options_bits(options.window_scale, options.sack_permitted);
            params.ts_offset = syn_cookies::offset_carrying(params.ts_offset, now, bits);
        }
        let mut packet = Vec::new();
        match Connection::accept(params, &syn).poll_transmit_packet(now, &mut packet) {
            Some(Ok(())) => {
                self.stray_output.push_back(packet);
                self.stats.syn_cookies_sent += 1;
                self.cookie_sent_at = Some(now);
            }
            Some(Err(err)) => self.drop_packet(err.label()),
            None => self.drop_packet("backlog_full"),
        }
    }

    /// The ACK completing a handshake we answered with a cookie: if the
    /// cookie is ours, for these addresses and recent, the connection is
    /// rebuilt from it and takes the ACK. Returns whether it was.
    fn accept_cookie(
        &mut self,
        now: Instant,
        listener: ListenerKey,
        tuple: FourTuple,
        seg: &TcpRepr<'_>,
        protocol: u8,
    ) -> CookieAck {
        let recent = self
            .cookie_sent_at
            .is_some_and(|at| now.saturating_since(at) <= 2 * syn_cookies::PERIOD);
        if !self.config.syn_cookies || !recent {
            return CookieAck::NotOurs;
        }
        let (cookie, peer_isn) = (seg.ack.wrapping_sub(1), seg.seq.wrapping_sub(1));
        let Some(mss) = syn_cookies::check(self.config.secret, &tuple, peer_isn, cookie, now) else {
            return CookieAck::NotOurs;
        };
        let Some(config) = self.listener_config(listener, &tuple, protocol) else {
            return CookieAck::NotOurs;
        };
        // Real clients completing handshakes (cookies cannot be forged
        // from spoofed addresses) must not pile up unaccepted either.
        let waiting = self.listeners.get(&listener).map_or(0, |l| l.ready.len());
        if waiting >= self.config.backlog || self.live >= self.config.max_connections {
            return CookieAck::QueueFull;
        }
        let timestamps = seg.options.timestamps.filter(|_| config.timestamps);
        let (window_scale, sack_permitted) = timestamps
            .map(|ts| syn_cookies::decode_options_bits(ts.tsecr))
            .unwrap_or((None, false));
        let syn = TcpRepr {
            seq: peer_isn,
            ack: 0,
            flags: TcpFlags::SYN,
            options: TcpOptions {
                mss: Some(mss),
                window_scale,
                sack_permitted,
                timestamps: timestamps.map(|ts| crate::wire::Timestamps { tsecr: 0, ..ts }),
                ..TcpOptions::default()
            },
            payload: &[],
            ..*seg
        };
        let mut params = self.params(now, tuple, config, false);
        params.iss = cookie;
        let sent_at = timestamps.map(|ts| syn_cookies::sent_at(now, params.ts_offset, ts.tsecr));
        let mut conn = Connection::accept(params, &syn);
        conn.syn_ack_already_sent(sent_at);
        let handle = self.insert(conn, Some(listener));
        if let Some(state) = self.listeners.get_mut(&listener) {
            state.pending += 1;
        }
        self.stats.syn_cookies_accepted += 1;
        self.segment_to_connection(now, handle, |c| c.handle_tcp_segment(now, seg));
        CookieAck::Accepted
    }

    /// RFC 9293 3.10.7.1, CLOSED: a reset unless the segment is one.
    fn segment_to_nothing(&mut self, tuple: FourTuple, seg: &TcpRepr<'_>, protocol: u8) {
        self.drop_packet("no_connection");
        if seg.flags.rst() {
            return;
        }
        if seg.flags.ack() {
            self.reply_reset(tuple, seg.ack, None, protocol);
        } else {
            let len = seg.sequence_len() as u32;
            self.reply_reset(tuple, 0, Some(seg.seq.wrapping_add(len)), protocol);
        }
    }

    /// Whether the queue of answers is full; if so the answer about to be
    /// built is counted as not sent.
    fn answers_full(&mut self) -> bool {
        let full = self.stray_output.len() >= MAX_ANSWERS_WAITING;
        if full {
            self.stats.answers_not_sent += 1;
        }
        full
    }

    /// Answers queued for segments that belonged to no connection (a
    /// driver that routes answers by where each segment came from watches
    /// this grow as it hands segments in).
    pub fn answers_waiting(&self) -> usize {
        self.stray_output.len()
    }

    /// A reset in answer to a segment that came on `protocol`, on the same.
    fn reply_reset(&mut self, tuple: FourTuple, seq: u32, ack: Option<u32>, protocol: u8) {
        if self.answers_full() {
            return;
        }
        let mut flags = TcpFlags::RST;
        if ack.is_some() {
            flags.insert(TcpFlags::ACK);
        }
        let reset = TcpRepr {
            src_port: tuple.local.port(),
            dst_port: tuple.remote.port(),
            seq,
            ack: ack.unwrap_or(0),
            flags,
            window: 0,
            urgent: 0,
            options: TcpOptions::default(),
            payload: &[],
        };
        let mut packet = Vec::new();
        let hop_limit = self.default_config.hop_limit;
        if build_segment_packet(
            tuple.local.ip(),
            tuple.remote.ip(),
            protocol,
            hop_limit,
            &reset,
            &mut packet,
        )
        .is_ok()
        {
            self.stray_output.push_back(packet);
            self.stats.resets_sent += 1;
        }
    }

    /// After anything happened to a connection: collect its events, queue
    /// it for output (with `requeue`), refresh its wake-up, forget it if it
    /// is finished.
    fn after_event(&mut self, handle: ConnectionHandle, requeue: bool) {
        let Some(slot) = self
            .slots
            .get_mut(handle.index as usize)
            .filter(|s| s.generation == handle.generation)
        else {
            return;
        };
        let Some(conn) = slot.conn.as_mut() else {
            return;
        };
        let mut became_ready = false;
        while let Some(event) = conn.poll_event() {
            if event == Event::Connected && slot.listener.is_some() {
                became_ready = true;
            }
            self.events.push_back((handle, event));
        }
        let timeout = conn.poll_timeout();
        let drained = conn.is_drained();
        if requeue && !slot.queued && !drained {
            slot.queued = true;
            self.ready.push_back(handle);
        }
        if timeout != slot.timeout {
            slot.timeout = timeout;
            if let Some(at) = timeout {
                self.timeouts.push(Reverse((at, handle)));
            }
        }
        let listener = slot.listener;
        if became_ready && let Some(state) = listener.and_then(|l| self.listeners.get_mut(&l)) {
            state.ready.push_back(handle);
        }
        if drained {
            self.remove(handle);
        }
    }

    fn remove(&mut self, handle: ConnectionHandle) {
        let Some(slot) = self.slot_mut(handle) else {
            return;
        };
        let Some(conn) = slot.conn.take() else {
            return;
        };
        let listener = slot.listener.take();
        slot.generation = slot.generation.wrapping_add(1);
        slot.timeout = None;
        slot.queued = false;
        let tuple = conn.tuple();
        self.by_tuple.remove(&tuple);
        let scope = self.id_scope(&tuple);
        self.compression_ids.release(
            scope,
            (tuple.local.ip(), tuple.remote.ip()),
            conn.compression_ids(),
            handle,
        );
        self.free_slot(handle.index);
        self.live -= 1;
        if let Some(state) = listener.and_then(|l| self.listeners.get_mut(&l)) {
            state.pending = state.pending.saturating_sub(1);
            state.ready.retain(|h| *h != handle);
        }
        // Events already queued for it are harmless: the handle is dead.
    }

    /// Frees slot `index`, and cuts the table back past every free slot at
    /// its end; then gives back the room of tables that a burst of
    /// connections grew and that are now mostly empty, so that a gateway
    /// quiet after ten thousand connections does not hold their memory.
    fn free_slot(&mut self, index: u32) {
        self.free_slots.insert(index);
        while let Some(&last) = self.free_slots.last()
            && last as usize + 1 == self.slots.len()
        {
            self.free_slots.pop_last();
            if let Some(slot) = self.slots.pop() {
                self.generation_floor = self.generation_floor.max(slot.generation);
            }
        }
        self.slots.shrink_when_sparse();
        self.by_tuple.shrink_when_sparse();
        self.timeouts.shrink_when_sparse();
        self.ready.shrink_when_sparse();
        self.events.shrink_when_sparse();
    }

    /// Writes the next packet to send into `buf`; false when there is none.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> bool {
        if let Some(packet) = self.stray_output.pop_front() {
            *buf = packet;
            self.stats.packets_sent += 1;
            return true;
        }
        while let Some(handle) = self.ready.pop_front() {
            let Some(slot) = self.slot_mut(handle) else {
                continue;
            };
            slot.queued = false;
            let Some(conn) = slot.conn.as_mut() else {
                continue;
            };
            match conn.poll_transmit_packet(now, buf) {
                Some(Ok(())) => {
                    self.stats.packets_sent += 1;
                    self.after_event(handle, true);
                    return true;
                }
                Some(Err(err)) => {
                    // Our own segment did not fit the wire format: a bug,
                    // counted rather than sent malformed.
                    self.drop_packet(err.label());
                    self.after_event(handle, true);
                }
                // Nothing to send: refresh timers and events, but leave it
                // out of the queue until something happens to it.
                None => self.after_event(handle, false),
            }
        }
        false
    }

    /// The earliest instant at which [`Endpoint::handle_timeout`] has work.
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        while let Some(&Reverse((at, handle))) = self.timeouts.peek() {
            let current = self.slot_mut(handle).and_then(|slot| slot.timeout);
            if current == Some(at) {
                return Some(at);
            }
            self.timeouts.pop();
        }
        None
    }

    /// Runs the timers of every connection due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(at) = self.poll_timeout() {
            if at > now {
                break;
            }
            let Some(Reverse((_, handle))) = self.timeouts.pop() else {
                break;
            };
            if let Some(slot) = self.slot_mut(handle) {
                slot.timeout = None;
            }
            let _ = self.with_connection(handle, |c| c.handle_timeout(now));
        }
    }

    /// The link layer learnt that packets from `peer` arrive corrupted
    /// (option kind 23, docs/spec/scps-tp-options.md): every SCPS-TP connection
    /// with it tells the peer with the option, so that the peer repairs its
    /// losses without slowing down. The endpoint calls this itself when a
    /// segment from a known peer fails its checksum.
    pub fn corruption_experienced(&mut self, peer: IpAddr) {
        self.for_connections_to(Some(peer), Connection::corruption_experienced);
    }

    /// The link layer says the link towards `peer` (every peer, for
    /// `None`) is down (docs/spec/scps-tp-options.md, "Link outages"): its connections
    /// stop sending data, probe at the configured interval, and are kept.
    pub fn link_down(&mut self, now: Instant, peer: Option<IpAddr>) {
        self.for_connections_to(peer, |c| c.link_down(now));
    }

    /// The link is back: connections in an outage probe at once and resume
    /// at their prior rate when the probe is answered.
    pub fn link_up(&mut self, now: Instant, peer: Option<IpAddr>) {
        self.for_connections_to(peer, |c| c.link_up(now));
    }

    fn for_connections_to(&mut self, peer: Option<IpAddr>, mut action: impl FnMut(&mut Connection)) {
        let handles: Vec<ConnectionHandle> = self
            .by_tuple
            .iter()
            .filter(|(tuple, _)| peer.is_none_or(|p| tuple.remote.ip() == p))
            .map(|(_, &handle)| handle)
            .collect();
        for handle in handles {
            let _ = self.with_connection(handle, &mut action);
        }
    }

    /// Counts `count` packets a driver's path dropped before they reached
    /// the endpoint (a failed frame check, say) under `cause`, with the
    /// endpoint's own drops.
    pub fn count_dropped_by_path(&mut self, cause: &'static str, count: u64) {
        if count > 0 {
            *self.stats.drops.entry(cause).or_default() += count;
        }
    }

    /// Whether a connection with these addresses is held, handshaking and
    /// closing ones included.
    pub fn has_connection(&self, tuple: &FourTuple) -> bool {
        self.by_tuple.contains_key(tuple)
    }

    /// The network reports `peer` (every peer for `None`) unreachable:
    /// a soft error for each connection to it (see
    /// [`Connection::report_unreachable`]).
    pub fn report_unreachable(&mut self, peer: Option<IpAddr>) {
        self.for_connections_to(peer, Connection::report_unreachable);
    }

    /// Connections currently held, handshaking and closing ones included.
    pub fn connection_count(&self) -> usize {
        self.live
    }
}

/// `port 80`, or `every port` for `None`.
fn ports(port: Option<u16>) -> String {
    port.map_or("every port".to_owned(), |p| format!("port {p}"))
}

fn unspecified(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
    }
}

/// A keyed mix of the connection's addresses (the F of RFC 6528). Not a
/// cryptographic PRF: enough to make sequence numbers unpredictable to an
/// off-path observer who does not know the secret, and fully reproducible
/// in simulation.
fn tuple_hash(secret: u64, tuple: &FourTuple) -> u64 {
    fn mix(mut z: u64) -> u64 {
        // splitmix64's finaliser.
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    let mut h = mix(secret);
    for addr in [tuple.local, tuple.remote] {
        let bits = match addr.ip() {
            IpAddr::V4(ip) => u128::from(u32::from(ip)),
            IpAddr::V6(ip) => u128::from(ip),
        };
        h = mix(h ^ (bits as u64));
        h = mix(h ^ ((bits >> 64) as u64));
        h = mix(h ^ u64::from(addr.port()));
    }
    h
}
