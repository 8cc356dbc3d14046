//! The gateway's configuration file (`scps gateway --config FILE`,
//! documented in docs/gateway.md "Configuration"). Everything is checked
//! before anything starts: an unknown key, a malformed address, prefix or
//! port range, a value out of range, or a gateway with nothing to do is an
//! error naming the key, the value and what is allowed.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use scps_config::bundle::Bundle;
use scps_config::routes::{RouteSpec, address_prefix, check_buffer, port_range};
use scps_config::stack::{RealStack, StackSettings, ToolKeepalive};
use scps_config::units::{Bytes, Time};
use scps_config::{Direction, Error};
use scps_node::IpPrefix;
use scps_proto::config::Keepalive;
use scps_relay::{Carried, RelayConfig, RouteTable};
use serde::Deserialize;

use crate::clients::{Clients, ClientsSpec};
use crate::explicit::{AllowRule, Allowed};
use crate::handshakes::HandshakeLimits;
use crate::request::{Destination, host_name};
use crate::security::{Security, SecuritySpec};
use crate::socks::Users;
use crate::transparent::{LinkPath, Plumbing};

/// The link port a far gateway takes link connections on, unless
/// `link.port` says.
pub const DEFAULT_LINK_PORT: u16 = 7200;

/// A SOCKS5 server's port on loopback unless `socks.listen` says.
const DEFAULT_SOCKS_PORT: u16 = 1080;

/// Bytes waiting at most in each direction of a relay, unless
/// `relay.buffer` says: 8 Mbit/s for 1 s.
const DEFAULT_BUFFER: u64 = 1 << 20;
/// Split connections at once, and the memory of their buffers, unless
/// `relay.max_connections` and `relay.memory` say.
const DEFAULT_MAX_CONNECTIONS: usize = 4096;
const DEFAULT_MEMORY: u64 = 1 << 30;
const DEFAULT_IDLE: Duration = Duration::from_secs(2 * 3600);
/// A far gateway silent this long while data moves is dead
/// (`relay.link_dead_after`): its applications are reset rather than left
/// waiting on a peer that is gone.
const DEFAULT_LINK_DEAD_AFTER: Duration = Duration::from_secs(60);
const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(20);

/// The transparent mode's defaults: its TUN device, the interception
/// listener's port, the firewall mark and the first routing table.
const DEFAULT_TUN: &str = "scps-gw";
const DEFAULT_INTERCEPT_PORT: u16 = 7301;
const DEFAULT_MARK: u32 = 0x5c;
const DEFAULT_TABLE: u32 = 153;

/// The link connections' keepalive unless `[engine.tcp]` says: a far
/// gateway that is gone is found after 20 minutes of silence, long enough
/// for a link's outages of a few minutes (the Iridium paper's dropped
/// calls) not to end the connections that cross it.
const LINK_KEEPALIVE: Keepalive = Keepalive {
    idle: Duration::from_secs(600),
    interval: Duration::from_secs(60),
    probes: 10,
};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GatewaySpec {
    link: Option<LinkSpec>,
    transparent: Option<TransparentSpec>,
    engine: Option<toml::Table>,
    #[serde(default)]
    relay: RelaySpec,
    #[serde(default)]
    forward: Vec<ForwardSpec>,
    #[serde(default)]
    socks: Vec<SocksSpec>,
    #[serde(default)]
    allow: Vec<AllowSpec>,
    #[serde(default)]
    route: Vec<RouteSpec<toml::Table>>,
    metrics: Option<MetricsSpec>,
    control: Option<ControlSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricsSpec {
    listen: String,
    clients: Option<Vec<String>>,
    #[serde(default)]
    allow_any_client: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ControlSpec {
    socket: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LinkSpec {
    /// Without `[engine.bundle]`: the one UDP socket the link rides in.
    udp: Option<String>,
    peer: Option<String>,
    port: Option<u16>,
    security: Option<String>,
    private_key_file: Option<String>,
    peer_public_key: Option<String>,
    rekey_after: Option<Time>,
    rekey_after_bytes: Option<Bytes>,
}

impl LinkSpec {
    fn security(&self) -> SecuritySpec<'_> {
        SecuritySpec {
            security: self.security.as_deref(),
            private_key_file: self.private_key_file.as_deref(),
            peer_public_key: self.peer_public_key.as_deref(),
            rekey_after: self.rekey_after,
            rekey_after_bytes: self.rekey_after_bytes,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct TransparentSpec {
    lan: String,
    /// The interface the link's packets are routed out of: required
    /// without `[engine.bundle]`, refused with it (as `tun`).
    link: Option<String>,
    tun: Option<String>,
    local: Vec<String>,
    remote: Vec<String>,
    port: Option<u16>,
    mark: Option<u32>,
    table: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RelaySpec {
    buffer: Option<Bytes>,
    max_connections: Option<usize>,
    memory: Option<Bytes>,
    idle_timeout: Option<Time>,
    connect_timeout: Option<Time>,
    link_dead_after: Option<Time>,
    handshake_timeout: Option<Time>,
    max_handshakes: Option<usize>,
    max_handshakes_per_source: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ForwardSpec {
    listen: String,
    to: String,
    clients: Option<Vec<String>>,
    #[serde(default)]
    allow_any_client: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SocksSpec {
    listen: Option<String>,
    clients: Option<Vec<String>>,
    users_file: Option<String>,
    #[serde(default)]
    allow_any_client: bool,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AllowSpec {
    prefix: String,
    ports: Option<String>,
}

/// A port forward: LAN connections to `listen` from `clients` are carried
/// to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forward {
    pub listen: SocketAddr,
    pub to: Destination,
    pub clients: Clients,
}

/// A SOCKS5 server: on `listen`, for `clients`, who authenticate as one
/// of `users` if it has any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Socks {
    pub listen: SocketAddr,
    pub clients: Clients,
    pub users: Option<Users>,
}

/// The metrics endpoint: on `listen`, for `clients`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metrics {
    pub listen: SocketAddr,
    pub clients: Clients,
}

/// The explicit modes' link: SCPS-TP over UDP between the gateways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExplicitLink {
    /// The UDP socket the link rides in.
    pub udp: SocketAddr,
    /// The far gateway's UDP socket (needed to forward).
    pub peer: Option<SocketAddr>,
    pub port: u16,
}

/// The control socket (`scps status`): where it listens, and whether the
/// gateway may run without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlConfig {
    pub socket: std::path::PathBuf,
    /// The path was asked for (`control.socket`, `--control`): a gateway
    /// that cannot listen there does not start. The default path is taken
    /// if it can be: a gateway finding it held by another, or not
    /// writable, runs without a control socket and says so.
    pub required: bool,
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// The explicit modes' link, if the gateway has forwards or allow
    /// rules.
    pub link: Option<ExplicitLink>,
    /// How every link of the gateway to the far one is protected
    /// (`link.security` and its keys).
    pub security: Security,
    /// The transparent mode's interfaces, prefixes and kernel plumbing.
    pub transparent: Option<Plumbing>,
    /// What the transparent mode carries, and how: `[[route]]`, or one
    /// route carrying every connection with `[engine]` and `[relay]`.
    pub routes: RouteTable,
    pub engine: RealStack,
    pub relay: RelayConfig,
    /// Split connections held at once: `relay.max_connections`, or fewer
    /// if `relay.memory` cannot hold that many connections' two buffers.
    pub max_connections: usize,
    /// What `max_connections` is the least of, as configured.
    pub limit_settings: LimitSettings,
    /// How long the far gateway waits for a destination to answer.
    pub connect_timeout: Duration,
    /// The SOCKS5 handshakes' deadline and places (`relay.handshake_timeout`,
    /// `relay.max_handshakes`, `relay.max_handshakes_per_source`).
    pub handshakes: HandshakeLimits,
    pub forwards: Vec<Forward>,
    /// The SOCKS5 servers.
    pub socks: Vec<Socks>,
    /// What this gateway, as the far one, lets link connections reach.
    pub allowed: Allowed,
    /// Capture the link connections' packets here (`scps gateway
    /// --pcap`; not a key of the file).
    pub capture: Option<std::path::PathBuf>,
    /// Where the Prometheus metrics are served (`metrics.listen`), and to
    /// whom.
    pub metrics: Option<Metrics>,
    /// The control socket: `control.socket`, or what `scps gateway` makes
    /// of `--control` and the default; none in a gateway of the library
    /// that was given none.
    pub control: Option<ControlConfig>,
    /// Where the configuration was read from: the `origin` it was parsed
    /// as (the file's path, for `scps gateway`).
    pub origin: String,
}

/// `relay.max_connections` and `relay.memory` as configured (or their
/// defaults), and the largest relay buffer a connection may have
/// (`relay.buffer`, or a route's if larger), two of which each connection
/// holds: [`GatewayConfig::max_connections`] is the lesser of the first
/// and what the memory holds of those buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitSettings {
    pub max_connections: usize,
    pub memory: u64,
    pub buffer: u64,
}

impl GatewayConfig {
    /// Reads `text`, the file `origin`.
    pub fn parse(text: &str, origin: &str) -> Result<GatewayConfig, Error> {
        let table: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| Error::syntax(origin, text, &e))?;
        let spec: GatewaySpec = scps_config::deserialize(table).map_err(|e| e.in_file(origin))?;
        checked(spec, origin).map_err(|e| e.in_file(origin))
    }

    /// The modes it runs, as `scps status` names them: `transparent`,
    /// `forward` (`[[forward]]`), `socks` (`[[socks]]`) and `far` (the far
    /// gateway of the explicit modes, taking link connections by its
    /// `[[allow]]` rules).
    pub fn modes(&self) -> Vec<&'static str> {
        [
            (self.transparent.is_some(), "transparent"),
            (!self.forwards.is_empty(), "forward"),
            (!self.socks.is_empty(), "socks"),
            (!self.allowed.rules.is_empty(), "far"),
        ]
        .into_iter()
        .filter_map(|(runs, mode)| runs.then_some(mode))
        .collect()
    }

    /// The first part of the configuration that a reload cannot change
    /// and `new` changes, named as in the file. A reload replaces the
    /// transparent mode's routes (with `[engine]` and `relay.buffer`
    /// under them); the rest is opened, bound or installed once, at the
    /// start.
    pub fn fixed_change(&self, new: &GatewayConfig) -> Option<&'static str> {
        fn explicit_engine(c: &GatewayConfig) -> Option<(&RealStack, RelayConfig)> {
            c.link.as_ref().map(|_| (&c.engine, c.relay))
        }
        [
            // First: a bundle changes the link's addresses (explicit) or
            // path (transparent) too, and this names the cause.
            (self.engine.bundle != new.engine.bundle, "[engine.bundle]"),
            (self.security != new.security, "link.security and its keys"),
            (self.link != new.link, "[link]"),
            (self.transparent != new.transparent, "[transparent]"),
            (self.forwards != new.forwards, "[[forward]]"),
            (self.socks != new.socks, "[[socks]]"),
            (self.allowed != new.allowed, "[[allow]]"),
            (
                self.max_connections != new.max_connections,
                "relay.max_connections and relay.memory",
            ),
            (
                self.connect_timeout != new.connect_timeout,
                "relay.connect_timeout",
            ),
            (
                self.handshakes != new.handshakes,
                "relay.handshake_timeout, max_handshakes and max_handshakes_per_source",
            ),
            (self.metrics != new.metrics, "[metrics]"),
            (self.control != new.control, "control.socket"),
            (
                explicit_engine(self) != explicit_engine(new),
                "[engine] and [relay] of the explicit modes' link",
            ),
        ]
        .into_iter()
        .find_map(|(changed, part)| changed.then_some(part))
    }

    /// Where a client gateway reaches the far one's link connections.
    pub fn far_link(&self) -> Option<SocketAddr> {
        let link = self.link.as_ref()?;
        link.peer.map(|peer| SocketAddr::new(peer.ip(), link.port))
    }
}

fn checked(spec: GatewaySpec, origin: &str) -> Result<GatewayConfig, Error> {
    let forwards = spec
        .forward
        .iter()
        .enumerate()
        .map(|(i, forward)| {
            let section = format!("forward[{i}]");
            let listen = socket_addr(&format!("{section}.listen"), &forward.listen)?;
            Ok(Forward {
                listen,
                to: destination(&format!("{section}.to"), &forward.to)?,
                clients: ClientsSpec {
                    clients: forward.clients.as_deref(),
                    allow_any_client: forward.allow_any_client,
                    authenticated: false,
                }
                .resolve(&section, listen)?,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let dir = std::path::Path::new(origin)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let socks = spec
        .socks
        .iter()
        .enumerate()
        .map(|(i, socks)| socks_server(i, socks, dir))
        .collect::<Result<Vec<_>, Error>>()?;
    let mut listening = BTreeSet::new();
    let listeners = forwards
        .iter()
        .map(|f| ("forward", f.listen))
        .chain(socks.iter().map(|s| ("socks", s.listen)));
    for (i, (section, listen)) in listeners.enumerate() {
        if !listening.insert(listen) {
            let index = if section == "forward" {
                i
            } else {
                i - forwards.len()
            };
            return Err(Error::invalid(
                format!("{section}[{index}].listen"),
                listen,
                "an address no other forward or SOCKS server listens on",
            ));
        }
    }
    let carries = !forwards.is_empty() || !socks.is_empty();
    // The client gateway's data goes forward on the link, the far
    // gateway's back.
    let direction = if !carries {
        Direction::Reverse
    } else {
        Direction::Forward
    };
    let no_link = LinkSpec {
        udp: None,
        peer: None,
        port: None,
        security: None,
        private_key_file: None,
        peer_public_key: None,
        rekey_after: None,
        rekey_after_bytes: None,
    };
    let link_spec = spec.link.as_ref().unwrap_or(&no_link);
    let explicit = carries || !spec.allow.is_empty();

    if explicit && spec.link.is_none() {
        return Err(Error::invalid(
            "link",
            "(none)",
            "a [link] with the UDP socket the explicit modes' link connections ride in, which \
             [[forward]], [[socks]] and [[allow]] need",
        ));
    }
    let security = Security::resolve(&link_spec.security(), dir)?;
    let carriage = Carriage::of(&spec, link_spec, &security);
    let (engine, engine_link) = engine(
        spec.engine.clone(),
        &format!("{origin} [engine]"),
        direction,
        carriage,
    )?;
    // The bundle is one link's: the explicit modes' or the transparent
    // mode's (each opens its channels' sockets, which one process cannot
    // bind twice).
    if explicit && engine.bundle.is_some() && spec.transparent.is_some() {
        return Err(Error::invalid(
            "engine.bundle",
            "set",
            "the channels of one link, and with both the explicit modes and a [transparent] section the \
             gateway has two: run the mode whose link rides the bundle in a gateway of its own",
        ));
    }
    if !explicit && spec.transparent.is_none() && engine.bundle.is_some() {
        return Err(Error::invalid(
            "engine.bundle",
            "set",
            "a link to carry: the explicit modes' ([[forward]], [[socks]], [[allow]]) or a [transparent] \
             section's",
        ));
    }
    let link = explicit
        .then(|| explicit_link(link_spec, engine.bundle.as_ref(), &security))
        .transpose()?;
    let transparent = spec
        .transparent
        .as_ref()
        .map(|section| transparent(section, engine.bundle.as_ref(), &security, link_spec))
        .transpose()?;
    if link.is_some()
        && transparent
            .as_ref()
            .is_some_and(|t| matches!(t.link, LinkPath::Tunnel { .. }))
    {
        return Err(Error::invalid(
            "link.udp",
            link_spec.udp.as_deref().unwrap_or_default(),
            "one link's socket, and the explicit modes and the [transparent] section's secure link would \
             both ride it: run the explicit modes in a gateway of their own",
        ));
    }
    let routed = transparent
        .as_ref()
        .is_some_and(|t| matches!(t.link, LinkPath::Routed { .. }));
    if link.is_none()
        && routed
        && let Some(udp) = &link_spec.udp
    {
        return Err(Error::invalid(
            "link.udp",
            udp,
            "a socket for the explicit modes ([[forward]], [[socks]], [[allow]]) or the secure link: the \
             plain transparent link is routed out of transparent.link, and nothing rides this one",
        ));
    }
    if link.is_none() && transparent.is_none() && spec.link.as_ref().is_some_and(|l| l.udp.is_some()) {
        return Err(Error::invalid(
            "forward, socks, allow, transparent",
            "(none)",
            "at least one [[forward]] or [[socks]] (to carry connections to the far gateway), one \
             [[allow]] (to take them from a client gateway) or a [transparent] section",
        ));
    }
    if carries && link.as_ref().is_some_and(|l| l.peer.is_none()) {
        return Err(Error::invalid(
            "link.peer",
            "(none)",
            "the far gateway's UDP address, which a forward or a SOCKS server needs",
        ));
    }
    let rules = spec
        .allow
        .iter()
        .enumerate()
        .map(|(i, allow)| allow_rule(i, allow))
        .collect::<Result<Vec<_>, Error>>()?;
    if !carries && rules.is_empty() && transparent.is_none() {
        return Err(Error::invalid(
            "forward, socks, allow, transparent",
            "(none)",
            "at least one [[forward]] or [[socks]] (to carry connections to the far gateway), one \
             [[allow]] (to take them from a client gateway) or a [transparent] section",
        ));
    }
    let buffer = match spec.relay.buffer {
        Some(buffer) => buffer.0,
        None => default_buffer(engine_link),
    };
    check_buffer("relay.buffer", buffer)?;
    let idle_timeout = match spec.relay.idle_timeout {
        Some(Time(d)) if d.is_zero() => None,
        Some(Time(d)) => Some(d),
        None => Some(DEFAULT_IDLE),
    };
    let relay = RelayConfig {
        buffer: buffer as usize,
        idle_timeout,
    };
    // Without routes, one carries everything with [engine], sized for the
    // transparent mode's link (which, beside the explicit modes, is not
    // theirs). Only the transparent mode has routes.
    let route_carriage = match spec.transparent {
        Some(_) => Carriage::of_routes(&spec, link_spec, &security),
        None => carriage,
    };
    let carrying = if route_carriage == carriage {
        engine.config.clone()
    } else {
        self::engine(
            spec.engine.clone(),
            &format!("{origin} [engine]"),
            direction,
            route_carriage,
        )?
        .0
        .config
    };
    let routes = route_table(&spec, origin, direction, carrying, relay, route_carriage)?;
    let max_connections = spec.relay.max_connections.unwrap_or(DEFAULT_MAX_CONNECTIONS);
    if max_connections == 0 {
        return Err(Error::invalid("relay.max_connections", 0, "at least 1"));
    }
    // Room for the largest buffers any connection may have.
    let buffer = buffer.max(routes.largest_buffer() as u64);
    let memory = spec.relay.memory.map_or(DEFAULT_MEMORY, |m| m.0);
    let fits = memory / (2 * buffer);
    if fits == 0 {
        return Err(Error::invalid(
            "relay.memory",
            memory,
            format!(
                "at least two relay buffers ({} bytes) for one connection",
                2 * buffer
            ),
        ));
    }
    let limit_settings = LimitSettings {
        max_connections,
        memory,
        buffer,
    };
    let max_connections = max_connections.min(usize::try_from(fits).unwrap_or(usize::MAX));
    let connect_timeout = spec
        .relay
        .connect_timeout
        .map_or(DEFAULT_CONNECT_TIMEOUT, |t| t.0);
    if connect_timeout.is_zero() {
        return Err(Error::invalid("relay.connect_timeout", "0s", "a time above zero"));
    }
    let handshakes = handshake_limits(&spec.relay)?;
    Ok(GatewayConfig {
        link,
        security,
        transparent,
        routes,
        engine,
        relay,
        max_connections,
        limit_settings,
        connect_timeout,
        handshakes,
        forwards,
        socks,
        allowed: Allowed { rules },
        capture: None,
        metrics: spec.metrics.as_ref().map(metrics).transpose()?,
        control: spec.control.as_ref().map(control).transpose()?,
        origin: origin.to_owned(),
    })
}

/// The handshakes' deadline and places, each above zero.
fn handshake_limits(relay: &RelaySpec) -> Result<HandshakeLimits, Error> {
    let defaults = HandshakeLimits::default();
    let timeout = relay.handshake_timeout.map_or(defaults.timeout, |t| t.0);
    if timeout.is_zero() {
        return Err(Error::invalid(
            "relay.handshake_timeout",
            "0s",
            "a time above zero",
        ));
    }
    let at_least_one = |key: &str, value: Option<usize>, default: usize| match value {
        Some(0) => Err(Error::invalid(key, 0, "at least 1")),
        value => Ok(value.unwrap_or(default)),
    };
    Ok(HandshakeLimits {
        timeout,
        total: at_least_one("relay.max_handshakes", relay.max_handshakes, defaults.total)?,
        per_source: at_least_one(
            "relay.max_handshakes_per_source",
            relay.max_handshakes_per_source,
            defaults.per_source,
        )?,
    })
}

/// What carrying the engine's packets to the far gateway adds to each,
/// which its packet size and its route rate's accounting must leave room
/// for.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Carriage {
    /// The largest packet of the engine: an Ethernet MTU less what the
    /// link adds (nothing on the transparent mode's routed link, whose
    /// packets go out of `transparent.link` as the engine wrote them).
    path_mtu: u16,
    /// Bytes each packet costs on the link beyond itself, charged to the
    /// route's rate: the outer IP and UDP headers and the link's framing
    /// when the packets ride UDP between the gateways, none on the routed
    /// link (a bundle's scheduler accounts for its channels itself).
    framing_bytes: u32,
    /// How long a link connection waits on a far gateway that falls
    /// silent while data moves (`relay.link_dead_after`; `None`: until
    /// the keepalive's much longer idle time).
    dead_after: Option<Duration>,
}

impl Carriage {
    /// `[engine]`'s: the explicit modes' link, if the gateway has those
    /// modes, else the transparent mode's.
    fn of(spec: &GatewaySpec, link_spec: &LinkSpec, security: &Security) -> Carriage {
        let explicit = !spec.forward.is_empty() || !spec.socks.is_empty() || !spec.allow.is_empty();
        Carriage::riding(spec, link_spec, security, explicit)
    }

    /// The transparent mode's routes': its link, also in a gateway that
    /// has the explicit modes (whose link is another: UDP to the far
    /// gateway, where the transparent one is routed).
    fn of_routes(spec: &GatewaySpec, link_spec: &LinkSpec, security: &Security) -> Carriage {
        Carriage::riding(spec, link_spec, security, false)
    }

    /// The explicit modes' link if `explicit`, else the transparent
    /// mode's.
    fn riding(spec: &GatewaySpec, link_spec: &LinkSpec, security: &Security, explicit: bool) -> Carriage {
        let bundled = spec
            .engine
            .as_ref()
            .is_some_and(|engine| engine.contains_key("bundle"));
        let tunnel = !explicit && spec.transparent.is_some() && *security != Security::None;
        // The transparent mode's plain link: the engine's packets leave
        // its TUN device and `transparent.link` as they are, nothing
        // around them, as a standard SCPS gateway's do.
        let routed = !explicit && !bundled && !tunnel;
        let outer = match link_spec
            .udp
            .as_deref()
            .and_then(|udp| udp.parse::<SocketAddr>().ok())
        {
            Some(SocketAddr::V6(_)) => 48,
            _ => 28,
        };
        let added = if routed {
            0
        } else {
            outer + security.framing_bytes()
        };
        Carriage {
            path_mtu: (1500 - added) as u16,
            framing_bytes: if !bundled && (explicit || tunnel) {
                added as u32
            } else {
                0
            },
            dead_after: match spec.relay.link_dead_after {
                Some(Time(d)) if d.is_zero() => None,
                Some(Time(d)) => Some(d),
                None => Some(DEFAULT_LINK_DEAD_AFTER),
            },
        }
    }
}

/// SOCKS5 server `i`: on loopback (127.0.0.1:1080) unless it says, its
/// users read from `users_file` (relative to `dir`, the configuration's
/// directory; refused if others may read it).
fn socks_server(i: usize, spec: &SocksSpec, dir: &std::path::Path) -> Result<Socks, Error> {
    let section = format!("socks[{i}]");
    let listen = match &spec.listen {
        Some(text) => socket_addr(&format!("{section}.listen"), text)?,
        None => SocketAddr::from(([127, 0, 0, 1], DEFAULT_SOCKS_PORT)),
    };
    let users = spec
        .users_file
        .as_deref()
        .map(|file| {
            let key = format!("{section}.users_file");
            let text = crate::keys::read_secret(&dir.join(file))
                .map_err(|e| Error::invalid(&key, file, e.to_string()))?;
            Users::parse(&text).map_err(|e| {
                Error::invalid(
                    &key,
                    file,
                    format!("a file of NAME:PASSWORD lines, one a user (RFC 1929): {e}"),
                )
            })
        })
        .transpose()?;
    let clients = ClientsSpec {
        clients: spec.clients.as_deref(),
        allow_any_client: spec.allow_any_client,
        authenticated: users.is_some(),
    }
    .resolve(&section, listen)?;
    Ok(Socks {
        listen,
        clients,
        users,
    })
}

fn metrics(spec: &MetricsSpec) -> Result<Metrics, Error> {
    let listen = socket_addr("metrics.listen", &spec.listen)?;
    let clients = ClientsSpec {
        clients: spec.clients.as_deref(),
        allow_any_client: spec.allow_any_client,
        authenticated: false,
    }
    .resolve("metrics", listen)?;
    Ok(Metrics { listen, clients })
}

/// The longest path a Unix socket's address holds (`sun_path`, less its
/// terminating zero).
const MAX_SOCKET_PATH: usize = 107;

fn control(spec: &ControlSpec) -> Result<ControlConfig, Error> {
    if spec.socket.is_empty() || spec.socket.len() > MAX_SOCKET_PATH || spec.socket.contains('\0') {
        return Err(Error::invalid(
            "control.socket",
            &spec.socket,
            format!("the path of a Unix socket, 1 to {MAX_SOCKET_PATH} bytes"),
        ));
    }
    Ok(ControlConfig {
        socket: spec.socket.clone().into(),
        required: true,
    })
}

/// A relay buffer of one bandwidth-delay product of the route's `link`
/// (rate and RTT), as the simulator's gateways size theirs;
/// [`DEFAULT_BUFFER`] when it is unknown.
fn default_buffer(link: Option<(u64, Duration)>) -> u64 {
    link.map_or(DEFAULT_BUFFER, |(rate, rtt)| {
        scps_config::gateways::bdp_buffer(rate, rtt)
    })
}

/// The link's rate in `[engine]`, if it gives one.
fn link_rate(engine: &toml::Table) -> Option<u64> {
    let rate = engine.get("link")?.get("rate")?.as_str()?;
    rate.parse::<scps_config::units::Rate>().ok().map(|rate| rate.0)
}

/// The link's RTT in `[engine]`, if it gives one (checked with the rest of
/// the table by the engine's resolution).
fn link_rtt(engine: &toml::Table) -> Option<Duration> {
    let rtt = engine.get("link")?.get("rtt")?.as_str()?;
    scps_config::units::parse_duration(rtt).ok()
}

/// The link connections' engine: `[engine]` is a scenario document
/// (`protocol`, `[engine.tcp]`, `[engine.link]`, ...) read as `scps send
/// --config` reads one; `within` names it in errors.
/// Buffers of a route whose keys do not size them follow its link
/// (`scps_config::gateways::link_engine_buffer`, as the simulator's
/// gateways): when `[engine.link]` gives the route's rate and RTT.
/// Returns the engine and that link's rate and RTT, if known: the
/// engine's rate, or, when that is `auto` (measured, not configured),
/// `[engine.link]`'s.
fn engine(
    table: Option<toml::Table>,
    within: &str,
    direction: Direction,
    carriage: Carriage,
) -> Result<(RealStack, Option<(u64, Duration)>), Error> {
    let (rtt, link_rate) = (
        table.as_ref().and_then(link_rtt),
        table.as_ref().and_then(link_rate),
    );
    let sized = |key: &str| {
        let Some(table) = &table else {
            return false;
        };
        let in_tcp = table.get("tcp").and_then(|t| t.get(key)).is_some();
        let in_stacks = table
            .get("stacks")
            .and_then(toml::Value::as_table)
            .is_some_and(|stacks| stacks.values().any(|stack| stack.get(key).is_some()));
        in_tcp || in_stacks
    };
    let (send_sized, recv_sized) = (sized("send_buffer"), sized("recv_buffer"));
    let text = table.map(|t| t.to_string()).unwrap_or_default();
    let settings = StackSettings {
        file: Some((within, &text)),
        label: None,
        sets: &[],
        keepalive: ToolKeepalive::Default(LINK_KEEPALIVE),
        channels: &[],
    };
    let mut stack = settings.resolve(direction, carriage.path_mtu)?;
    stack.config.rate_framing_bytes += carriage.framing_bytes;
    stack.config.dead_after = carriage.dead_after;
    let rate = if stack.config.rate_auto {
        link_rate.or(stack.config.rate_bps)
    } else {
        stack.config.rate_bps
    };
    let link = rate.zip(rtt);
    if let Some((rate, rtt)) = link {
        let size = scps_config::gateways::link_engine_buffer(rate, rtt);
        if !send_sized {
            stack.config.send_buffer = size;
        }
        if !recv_sized {
            stack.config.recv_buffer = size;
        }
    }
    Ok((stack, link))
}

/// The transparent mode's routes: `[[route]]`, each with `[engine]`
/// under its own `engine` keys and a buffer from its own rate and RTT; or,
/// without any, one route carrying every connection with `engine` and
/// `relay`.
fn route_table(
    spec: &GatewaySpec,
    origin: &str,
    direction: Direction,
    engine: scps_proto::Config,
    relay: RelayConfig,
    carriage: Carriage,
) -> Result<RouteTable, Error> {
    if spec.route.is_empty() {
        return Ok(RouteTable::carrying_everything(Carried {
            engine: Arc::new(engine),
            relay,
        }));
    }
    if spec.transparent.is_none() {
        return Err(Error::invalid(
            "route",
            format!("{} routes", spec.route.len()),
            "routes choose what the transparent mode carries: add a [transparent] section (the \
             explicit modes' destinations are their [[forward]], [[socks]] and [[allow]])",
        ));
    }
    scps_config::routes::route_table(&spec.route, |i, route| {
        carried(i, route, spec, origin, direction, relay, carriage)
    })
}

/// How route `i` carries: with `[engine]` under its own `engine` keys, and
/// its own buffer, else `relay.buffer`, else one of its rate and RTT.
fn carried(
    i: usize,
    route: &RouteSpec<toml::Table>,
    spec: &GatewaySpec,
    origin: &str,
    direction: Direction,
    relay: RelayConfig,
    carriage: Carriage,
) -> Result<Carried, Error> {
    if route
        .engine
        .as_ref()
        .is_some_and(|table| table.contains_key("bundle"))
    {
        return Err(Error::invalid(
            format!("{origin} route[{i}].engine.bundle"),
            "set",
            "not a route's: a bundle carries the gateway's link, which all routes ride (the \
             top-level [engine.bundle])",
        ));
    }
    let table = merged(
        spec.engine.clone().unwrap_or_default(),
        route.engine.clone().unwrap_or_default(),
    );
    let (engine, link) = engine(
        Some(table),
        &format!("{origin} route[{i}].engine"),
        direction,
        carriage,
    )?;
    let buffer = match route.buffer {
        Some(buffer) => buffer.0,
        None => match spec.relay.buffer {
            Some(buffer) => buffer.0,
            None => default_buffer(link),
        },
    };
    check_buffer(&format!("route[{i}].buffer"), buffer)?;
    Ok(Carried {
        engine: Arc::new(engine.config),
        relay: RelayConfig {
            buffer: buffer as usize,
            ..relay
        },
    })
}

/// `over`'s keys laid over `base`'s, table within table.
fn merged(mut base: toml::Table, over: toml::Table) -> toml::Table {
    for (key, value) in over {
        match (base.get_mut(&key), value) {
            (Some(toml::Value::Table(inner)), toml::Value::Table(value)) => {
                *inner = merged(std::mem::take(inner), value);
            }
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
    base
}

/// The explicit link: one UDP socket (`link.udp`, `link.peer`), or the
/// channels of `[engine.bundle]`, the first of which gives the link's
/// addresses (the far gateway's is the peer of our first channel: both
/// list their channels in the same order).
fn explicit_link(
    spec: &LinkSpec,
    bundle: Option<&Bundle>,
    security: &Security,
) -> Result<ExplicitLink, Error> {
    let bundled = "not with [engine.bundle]: its channels say where the link rides";
    let (udp, peer) = match (bundle, &spec.udp, &spec.peer) {
        (Some(_), Some(udp), _) => return Err(Error::invalid("link.udp", udp, bundled)),
        (Some(_), _, Some(peer)) => return Err(Error::invalid("link.peer", peer, bundled)),
        (Some(bundle), None, None) => (bundle.channels[0].local, Some(bundle.channels[0].peer)),
        (None, None, _) => {
            return Err(Error::invalid(
                "link.udp",
                "(none)",
                "the UDP socket the link rides in, or the channels of [engine.bundle]",
            ));
        }
        (None, Some(udp), peer) => (
            socket_addr("link.udp", udp)?,
            peer.as_deref().map(far_gateway).transpose()?,
        ),
    };
    if let Some(peer) = peer.filter(|peer| peer.is_ipv4() != udp.is_ipv4()) {
        return Err(Error::invalid(
            "link.peer",
            peer,
            format!("an address of link.udp's IP version ({udp})"),
        ));
    }
    if peer.is_none() && *security == Security::None {
        return Err(Error::invalid(
            "link.peer",
            "(none)",
            "the far gateway's UDP address: with link.security = \"none\" the link takes datagrams from \
             it alone (or remove the security line: the secure link learns where its authenticated peer is)",
        ));
    }
    Ok(ExplicitLink {
        udp,
        peer,
        port: match spec.port {
            Some(0) => return Err(Error::invalid("link.port", 0, "a port from 1 to 65535")),
            Some(port) => port,
            None => DEFAULT_LINK_PORT,
        },
    })
}

/// The transparent mode's section, checked: interface names the kernel
/// takes, IPv4 prefixes, local and remote apart, tables clear of the
/// kernel's own (252 to 255); its link riding `bundle`'s channels, the
/// secure link's UDP tunnel between `link.udp` and `link.peer` (its
/// packets keep the applications' addresses inside it), or, plain
/// (`link.security = "none"`), routed out of `transparent.link` through
/// the TUN device.
fn transparent(
    spec: &TransparentSpec,
    bundle: Option<&Bundle>,
    security: &Security,
    link_spec: &LinkSpec,
) -> Result<Plumbing, Error> {
    let lan = interface("transparent.lan", &spec.lan)?;
    let secure = matches!(security, Security::Noise(_));
    let link = match (bundle, &spec.link) {
        (Some(bundle), None) => {
            // The channels name their addresses (and devices); as the
            // explicit link's `link.udp`, the keys of a routed link would
            // say something that is not so.
            if let Some(tun) = &spec.tun {
                return Err(Error::invalid(
                    "transparent.tun",
                    tun,
                    "not with [engine.bundle]: the link rides its channels, not a TUN device",
                ));
            }
            for (key, given) in [("link.udp", &link_spec.udp), ("link.peer", &link_spec.peer)] {
                if let Some(value) = given {
                    return Err(Error::invalid(
                        key,
                        value,
                        "not with [engine.bundle]: its channels say where the link rides",
                    ));
                }
            }
            LinkPath::Bundle(bundle.clone())
        }
        (Some(_), Some(link)) => {
            return Err(Error::invalid(
                "transparent.link",
                link,
                "not with [engine.bundle]: its channels say where the link rides",
            ));
        }
        (None, _) if secure => {
            let routed = "not with the secure link, whose datagrams go between link.udp and link.peer as the \
                          kernel routes them (it and transparent.tun are the plain, routed link's: \
                          link.security = \"none\")";
            if let Some(link) = &spec.link {
                return Err(Error::invalid("transparent.link", link, routed));
            }
            if let Some(tun) = &spec.tun {
                return Err(Error::invalid("transparent.tun", tun, routed));
            }
            let Some(udp) = &link_spec.udp else {
                return Err(Error::invalid(
                    "link.udp",
                    "(none)",
                    "the UDP socket the secure link to the far gateway rides in, such as 0.0.0.0:7100 (with \
                     link.peer, the far gateway's)",
                ));
            };
            let udp = socket_addr("link.udp", udp)?;
            let peer = link_spec.peer.as_deref().map(far_gateway).transpose()?;
            if let Some(peer) = peer.filter(|peer| peer.is_ipv4() != udp.is_ipv4()) {
                return Err(Error::invalid(
                    "link.peer",
                    peer,
                    format!("an address of link.udp's IP version ({udp})"),
                ));
            }
            LinkPath::Tunnel { udp, peer }
        }
        (None, None) => {
            return Err(Error::invalid(
                "transparent.link",
                "(none)",
                "the interface the plain link rides (link.security = \"none\"), or the channels of \
                 [engine.bundle]",
            ));
        }
        (None, Some(link)) => {
            let link = interface("transparent.link", link)?;
            let tun = interface("transparent.tun", spec.tun.as_deref().unwrap_or(DEFAULT_TUN))?;
            if lan == link {
                return Err(Error::invalid(
                    "transparent.link",
                    &link,
                    "an interface other than transparent.lan",
                ));
            }
            LinkPath::Routed { link, tun }
        }
    };
    let local = prefixes("transparent.local", &spec.local)?;
    let remote = prefixes("transparent.remote", &spec.remote)?;
    for (i, r) in remote.iter().enumerate() {
        if let Some(l) = local
            .iter()
            .find(|l| l.contains(r.network()) || r.contains(l.network()))
        {
            return Err(Error::invalid(
                format!("transparent.remote[{i}]"),
                r,
                format!("a prefix apart from the local ones ({l} overlaps it)"),
            ));
        }
    }
    if !remote.iter().any(|r| {
        local
            .iter()
            .any(|l| l.network().is_ipv4() == r.network().is_ipv4())
    }) {
        return Err(Error::invalid(
            "transparent.remote",
            format!(
                "[{}]",
                remote
                    .iter()
                    .map(IpPrefix::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            "prefixes of a family that transparent.local has too (IPv4 or IPv6 end to end)",
        ));
    }
    let port = match spec.port {
        Some(0) => return Err(Error::invalid("transparent.port", 0, "a port from 1 to 65535")),
        Some(port) => port,
        None => DEFAULT_INTERCEPT_PORT,
    };
    let mark = spec.mark.unwrap_or(DEFAULT_MARK);
    if mark == 0 || mark == u32::MAX {
        return Err(Error::invalid(
            "transparent.mark",
            mark,
            "a firewall mark from 1 to 0xfffffffe (it and the next are used)",
        ));
    }
    let table = spec.table.unwrap_or(DEFAULT_TABLE);
    if !(1..=250).contains(&table) {
        return Err(Error::invalid(
            "transparent.table",
            table,
            "a routing table from 1 to 250 (it and the next are used; 252 to 255 are the kernel's)",
        ));
    }
    Ok(Plumbing {
        lan,
        link,
        local,
        remote,
        port,
        mark,
        table,
    })
}

/// An interface name the kernel accepts and that can stand in the
/// nftables script as it is (letters, digits, '-', '_', '.': no quotes).
fn interface(key: &str, name: &str) -> Result<String, Error> {
    let ok = scps_config::is_interface_name(name)
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(name.to_owned())
    } else {
        Err(Error::invalid(
            key,
            name,
            "an interface name: 1 to 15 letters, digits, '-', '_' or '.'",
        ))
    }
}

fn prefixes(key: &str, texts: &[String]) -> Result<Vec<IpPrefix>, Error> {
    if texts.is_empty() {
        return Err(Error::invalid(key, "[]", "at least one address prefix"));
    }
    texts
        .iter()
        .enumerate()
        .map(|(i, text)| address_prefix(&format!("{key}[{i}]"), text))
        .collect()
}

fn socket_addr(key: &str, text: &str) -> Result<SocketAddr, Error> {
    text.parse().map_err(|_| {
        Error::invalid(
            key,
            text,
            "an address and port, such as 192.0.2.1:7100 or [2001:db8::1]:7100",
        )
    })
}

/// `link.peer`: the far gateway's UDP socket, a host's.
fn far_gateway(text: &str) -> Result<SocketAddr, Error> {
    let peer = socket_addr("link.peer", text)?;
    if !scps_node::is_host_socket(peer) {
        return Err(Error::invalid(
            "link.peer",
            text,
            "the far gateway's address (not multicast, broadcast or unspecified) and a port above 0",
        ));
    }
    Ok(peer)
}

/// `ADDRESS:PORT`, or `NAME:PORT` resolved at the far side.
fn destination(key: &str, text: &str) -> Result<Destination, Error> {
    const ALLOWED: &str = "a host's address and port (10.1.0.5:22, [2001:db8::5]:22) or a host name and port (files.example:22)";
    if let Ok(addr) = text.parse::<SocketAddr>() {
        if !scps_node::is_host_socket(addr) {
            return Err(Error::invalid(key, text, ALLOWED));
        }
        return Ok(Destination::Address(addr));
    }
    let (name, port) = text
        .rsplit_once(':')
        .ok_or_else(|| Error::invalid(key, text, ALLOWED))?;
    let port: u16 = port.parse().map_err(|_| Error::invalid(key, text, ALLOWED))?;
    if port == 0 || name.len() > 255 || name.parse::<IpAddr>().is_ok() {
        return Err(Error::invalid(key, text, ALLOWED));
    }
    let name = host_name(name.as_bytes()).map_err(|_| Error::invalid(key, text, ALLOWED))?;
    Ok(Destination::Name(name, port))
}

fn allow_rule(i: usize, allow: &AllowSpec) -> Result<AllowRule, Error> {
    let prefix = address_prefix(&format!("allow[{i}].prefix"), &allow.prefix)?;
    let ports = match &allow.ports {
        None => (1, 65535),
        Some(text) => port_range(&format!("allow[{i}].ports"), text)?,
    };
    Ok(AllowRule { prefix, ports })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A far gateway of the explicit modes, its link secured (the
    /// default) with the keys of [`keys`].
    const FAR: &str = r#"
        [link]
        udp = "0.0.0.0:7100"
        private_key_file = "@KEY"
        peer_public_key = "@PEER"
        [[allow]]
        prefix = "10.1.0.0/16"
        ports = "22"
    "#;

    /// A private key file of mode 0600 and another gateway's public key,
    /// made once for the tests.
    fn keys() -> &'static (String, String) {
        static KEYS: std::sync::OnceLock<(String, String)> = std::sync::OnceLock::new();
        KEYS.get_or_init(|| {
            let dir = std::env::temp_dir().join(format!("scps-gateway-config-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let file = dir.join("gw.key");
            crate::keys::keygen(&file).unwrap();
            let peer = scps_secure::PrivateKey::generate().unwrap().public_key();
            (file.display().to_string(), peer.to_string())
        })
    }

    /// Parses `text` as the file gw.toml, its `@KEY` and `@PEER` the
    /// test keys.
    fn parse(text: &str) -> Result<GatewayConfig, String> {
        let (file, peer) = keys();
        let text = text.replace("@KEY", file).replace("@PEER", peer);
        GatewayConfig::parse(&text, "gw.toml").map_err(|e| e.to_string())
    }

    #[test]
    fn a_far_gateway_and_a_client_gateway_parse_with_their_defaults() {
        let far = parse(FAR).unwrap();
        assert_eq!(far.link.as_ref().unwrap().port, DEFAULT_LINK_PORT);
        assert_eq!(far.allowed.rules[0].ports, (22, 22));
        assert!(far.allowed.allows("10.1.2.3:22".parse().unwrap()));
        assert!(!far.allowed.allows("10.1.2.3:23".parse().unwrap()));
        assert!(!far.allowed.allows("10.2.0.1:22".parse().unwrap()));
        assert_eq!(far.relay.buffer, DEFAULT_BUFFER as usize);
        assert_eq!(far.relay.idle_timeout, Some(DEFAULT_IDLE));
        assert_eq!(far.engine.config.dead_after, Some(DEFAULT_LINK_DEAD_AFTER));
        assert_eq!(
            far.max_connections, 512,
            "1 GiB holds 512 connections of two 1 MiB buffers"
        );
        let client = parse(
            r#"
            [link]
            udp = "0.0.0.0:7100"
            peer = "192.0.2.2:7100"
            port = 7300
            security = "none"
            [engine]
            protocol = "scps-rate"
            [engine.link]
            rate = "8Mbit"
            [relay]
            buffer = "4MB"
            idle_timeout = "0s"
            link_dead_after = "0s"
            [[forward]]
            listen = "127.0.0.1:2222"
            to = "10.1.0.5:22"
            [[forward]]
            listen = "127.0.0.1:8080"
            to = "files.example:80"
            "#,
        )
        .unwrap();
        assert_eq!(client.far_link(), Some("192.0.2.2:7300".parse().unwrap()));
        assert_eq!(client.engine.protocol, scps_config::Protocol::ScpsRate);
        assert_eq!(client.relay.buffer, 4_000_000, "relay.buffer wins");
        let sized = parse(&FAR.replace(
            "[[allow]]",
            "[engine]\nprotocol = \"scps-rate\"\n[engine.link]\nrate = \"8Mbit\"\nrtt = \"600ms\"\n[[allow]]",
        ))
        .unwrap();
        assert_eq!(sized.relay.buffer, 600_000, "8 Mbit/s for 600 ms");
        let fast = parse(&FAR.replace(
            "[[allow]]",
            "[engine.link]\nrate = \"10Gbit\"\nrtt = \"600ms\"\n[[allow]]",
        ))
        .unwrap();
        assert_eq!(fast.relay.buffer, 16 << 20, "capped");
        assert_eq!(client.relay.idle_timeout, None, "0s turns the idle timeout off");
        assert_eq!(client.engine.config.dead_after, None, "0s leaves it to keepalive");
        assert_eq!(
            (far.metrics, far.control.as_ref()),
            (None, None),
            "both off unless asked for"
        );
        let operated = parse(&format!(
            "{FAR}\n[metrics]\nlisten = \"127.0.0.1:9464\"\n[control]\nsocket = \"/run/gw.sock\"\n"
        ))
        .unwrap();
        assert_eq!(
            operated.metrics,
            Some(Metrics {
                listen: "127.0.0.1:9464".parse().unwrap(),
                clients: Clients::Any
            })
        );
        assert_eq!(
            operated.control,
            Some(ControlConfig {
                socket: "/run/gw.sock".into(),
                required: true
            })
        );
        assert_eq!(
            client.forwards[1].to,
            Destination::Name("files.example".into(), 80)
        );
    }

    #[test]
    fn bad_configurations_name_the_key_the_value_and_what_is_allowed() {
        let cases = [
            (
                FAR.replace("udp = ", "udp_socket = "),
                "unknown field `udp_socket`",
            ),
            (
                FAR.replace("0.0.0.0:7100", "0.0.0.0"),
                "link.udp = 0.0.0.0: an address and port",
            ),
            (
                FAR.replace(
                    "udp = \"0.0.0.0:7100\"",
                    "udp = \"0.0.0.0:7100\"\npeer = \"224.0.0.9:7100\"",
                ),
                "link.peer = 224.0.0.9:7100: the far gateway's address (not multicast",
            ),
            (
                FAR.replace(
                    "udp = \"0.0.0.0:7100\"",
                    "udp = \"0.0.0.0:7100\"\npeer = \"192.0.2.2:0\"",
                ),
                "link.peer = 192.0.2.2:0: the far gateway's address",
            ),
            (
                FAR.replace(
                    "udp = \"0.0.0.0:7100\"",
                    "udp = \"0.0.0.0:7100\"\npeer = \"[2001:db8::1]:7100\"",
                ),
                "link.peer = [2001:db8::1]:7100: an address of link.udp's IP version (0.0.0.0:7100)",
            ),
            (
                FAR.replace("10.1.0.0/16", "10.1.0.0/33"),
                "allow[0].prefix = 10.1.0.0/33",
            ),
            (
                FAR.replace("\"22\"", "\"30-20\""),
                "allow[0].ports = 30-20: a port or a range",
            ),
            (FAR.replace("\"22\"", "\"0\""), "allow[0].ports = 0"),
            (
                FAR.replace(
                    "[[allow]]\n        prefix = \"10.1.0.0/16\"\n        ports = \"22\"",
                    "",
                ),
                "at least one [[forward]]",
            ),
            (
                format!("[[allow]]{}", FAR.split_once("[[allow]]").unwrap().1),
                "link = (none): a [link]",
            ),
            (
                format!("{FAR}\n[[forward]]\nlisten = \"127.0.0.1:2222\"\nto = \"10.1.0.5:22\""),
                "link.peer = (none): the far gateway's UDP address",
            ),
            (format!("{FAR}\n[link2]\n"), "unknown field `link2`"),
            (
                format!("{FAR}\n[relay]\nbuffer = \"10\""),
                "relay.buffer = 10: from 4096 bytes",
            ),
            (
                format!("{FAR}\n[relay]\nmemory = \"1MB\""),
                "relay.memory = 1000000: at least two relay buffers",
            ),
            (
                format!("{FAR}\n[relay]\nmax_connections = 0"),
                "relay.max_connections = 0",
            ),
            (
                format!("{FAR}\n[relay]\nhandshake_timeout = \"0s\""),
                "relay.handshake_timeout = 0s",
            ),
            (
                format!("{FAR}\n[relay]\nmax_handshakes_per_source = 0"),
                "relay.max_handshakes_per_source = 0",
            ),
            (format!("{FAR}\n[engine]\nprotocol = \"tcp-fast\""), "tcp-fast"),
            (
                format!(
                    "{FAR}\n[engine.bundle]\n[[engine.bundle.channel]]\nlocal = \"10.1.0.1:7000\"\n\
                     peer = \"10.1.0.2:7000\"\nrate = \"2400bps\""
                ),
                "link.udp = 0.0.0.0:7100: not with [engine.bundle]",
            ),
            (
                format!("{FAR}\n[[forward]]\nlisten = \"127.0.0.1:1\"\nto = \"bad name:22\""),
                "forward[0].to = bad name:22",
            ),
            (
                format!("{FAR}\n[[forward]]\nlisten = \"127.0.0.1:1\"\nto = \"224.0.0.1:22\""),
                "forward[0].to = 224.0.0.1:22: a host's address and port",
            ),
            (
                format!("{FAR}\n[metrics]\nlisten = \"localhost\""),
                "metrics.listen = localhost: an address and port",
            ),
            (
                format!("{FAR}\n[metrics]\naddress = \"127.0.0.1:9464\""),
                "unknown field `address`",
            ),
            (
                format!("{FAR}\n[control]\nsocket = \"\""),
                "control.socket = : the path of a Unix socket",
            ),
            (
                format!("{FAR}\n[control]\nsocket = \"/run/{}\"", "x".repeat(120)),
                "1 to 107 bytes",
            ),
            (
                format!("{FAR}\n[control]\npath = \"/run/gw.sock\""),
                "unknown field `path`",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(&text).unwrap_err();
            assert!(err.contains(expected), "expected {expected:?} in: {err}");
            assert!(err.starts_with("gw.toml"), "names the file: {err}");
        }
        let duplicate = r#"
            [link]
            udp = "0.0.0.0:7100"
            peer = "192.0.2.2:7100"
            [[forward]]
            listen = "127.0.0.1:2222"
            to = "10.1.0.5:22"
            [[forward]]
            listen = "127.0.0.1:2222"
            to = "10.1.0.6:22"
        "#;
        let err = parse(duplicate).unwrap_err();
        assert!(err.contains("forward[1].listen = 127.0.0.1:2222"), "{err}");
    }

    #[test]
    fn the_link_is_secured_by_default_and_plain_only_when_asked() {
        let far = parse(FAR).unwrap();
        let Security::Noise(keys) = &far.security else {
            panic!("secured by default: {:?}", far.security);
        };
        assert_eq!(keys.peer_public_key.to_string(), super::tests::keys().1);
        assert_eq!(keys.rekey_after, scps_secure::REKEY_AFTER);
        let tuned = parse(&FAR.replace(
            "[[allow]]",
            "rekey_after = \"30s\"\nrekey_after_bytes = \"1GiB\"\n[[allow]]",
        ))
        .unwrap();
        let Security::Noise(keys) = &tuned.security else {
            panic!("secured");
        };
        assert_eq!(
            (keys.rekey_after, keys.rekey_after_bytes),
            (Duration::from_secs(30), 1 << 30)
        );
        assert_eq!(far.fixed_change(&tuned), Some("link.security and its keys"));
        // Sealed packets carry 32 bytes of the link's framing: the engine's
        // packets are 28 bytes smaller than on a plain link.
        let plain = parse(
            "[link]\nudp = \"0.0.0.0:7100\"\npeer = \"192.0.2.2:7100\"\nsecurity = \"none\"\n\
             [[allow]]\nprefix = \"10.1.0.0/16\"\n",
        )
        .unwrap();
        assert_eq!(plain.security, Security::None);
        assert_eq!(plain.engine.config.mtu - far.engine.config.mtu, 28);
        // The transparent mode's secure link: a UDP tunnel, no TUN device.
        let tunnel = parse(
            "[link]\nudp = \"0.0.0.0:7100\"\npeer = \"192.0.2.2:7100\"\nprivate_key_file = \"@KEY\"\n\
             peer_public_key = \"@PEER\"\n[transparent]\nlan = \"lan0\"\nlocal = [\"10.99.1.0/24\"]\n\
             remote = [\"10.99.4.0/24\"]\n",
        )
        .unwrap();
        let plumbing = tunnel.transparent.as_ref().unwrap();
        assert_eq!(
            plumbing.link,
            LinkPath::Tunnel {
                udp: "0.0.0.0:7100".parse().unwrap(),
                peer: Some("192.0.2.2:7100".parse().unwrap())
            }
        );
        assert_eq!(plumbing.steering(), None, "nothing steered into a TUN device");
        assert!(tunnel.link.is_none(), "no explicit modes");
    }

    #[test]
    fn bad_security_settings_name_the_key_and_what_to_do() {
        let (file, _) = keys();
        let own = crate::keys::read_private_key(std::path::Path::new(file))
            .unwrap()
            .public_key()
            .to_string();
        let exposed = std::env::temp_dir().join(format!("scps-gateway-exposed-{}.key", std::process::id()));
        std::fs::write(
            &exposed,
            format!("{}\n", scps_secure::PrivateKey::generate().unwrap().to_base64()),
        )
        .unwrap();
        std::fs::set_permissions(&exposed, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
        let transparent_tail =
            "[transparent]\nlan = \"lan0\"\nlocal = [\"10.99.1.0/24\"]\nremote = [\"10.99.4.0/24\"]\n";
        let cases = [
            (FAR.replace("private_key_file = \"@KEY\"\n", ""), "link.private_key_file = (none): this gateway's private key file, which `scps gateway keygen FILE` makes".to_owned()),
            (FAR.replace("peer_public_key = \"@PEER\"\n", ""), "link.peer_public_key = (none): the far gateway's public key".to_owned()),
            (FAR.replace("@PEER", "not a key"), "link.peer_public_key = not a key: the far gateway's public key, 44 characters of base64".to_owned()),
            (FAR.replace("@PEER", &own), "and this is this gateway's own".to_owned()),
            (FAR.replace("@KEY", "/nonexistent/gw.key"), "link.private_key_file = /nonexistent/gw.key: /nonexistent/gw.key: No such file".to_owned()),
            (FAR.replace("@KEY", &exposed.display().to_string()), "(mode 0644): a secret must be its owner's alone".to_owned()),
            (FAR.replace("[[allow]]", "security = \"tls\"\n[[allow]]"), "link.security = tls: \"noise\" (the default".to_owned()),
            (FAR.replace("[[allow]]", "rekey_after = \"0s\"\n[[allow]]"), "link.rekey_after = 0ns: at least 1s".to_owned()),
            (FAR.replace("[[allow]]", "rekey_after_bytes = \"1KB\"\n[[allow]]"), "link.rekey_after_bytes = 1000: at least 1 MiB".to_owned()),
            (FAR.replace("[[allow]]", "security = \"none\"\n[[allow]]"), "link.private_key_file = set: nothing with link.security = \"none\"".to_owned()),
            (
                "[link]\nudp = \"0.0.0.0:7100\"\nsecurity = \"none\"\n[[allow]]\nprefix = \"10.1.0.0/16\"\n".to_owned(),
                "link.peer = (none): the far gateway's UDP address: with link.security = \"none\" the link takes datagrams from it alone".to_owned(),
            ),
            (
                format!("[link]\nprivate_key_file = \"@KEY\"\npeer_public_key = \"@PEER\"\n{transparent_tail}"),
                "link.udp = (none): the UDP socket the secure link to the far gateway rides in".to_owned(),
            ),
            (
                format!("[link]\nudp = \"0.0.0.0:7100\"\nprivate_key_file = \"@KEY\"\npeer_public_key = \"@PEER\"\n{transparent_tail}link = \"sat0\"\n"),
                "transparent.link = sat0: not with the secure link".to_owned(),
            ),
            (
                format!("[link]\nudp = \"0.0.0.0:7100\"\nprivate_key_file = \"@KEY\"\npeer_public_key = \"@PEER\"\n[[allow]]\nprefix = \"10.1.0.0/16\"\n{transparent_tail}"),
                "link.udp = 0.0.0.0:7100: one link's socket, and the explicit modes and the [transparent] section's secure link would both ride it".to_owned(),
            ),
            (
                TRANSPARENT.replace("security = \"none\"", "security = \"none\"\nudp = \"0.0.0.0:7100\""),
                "link.udp = 0.0.0.0:7100: a socket for the explicit modes".to_owned(),
            ),
        ];
        for (text, expected) in cases {
            let err = parse(&text).unwrap_err();
            assert!(err.contains(&expected), "expected {expected:?} in: {err}");
        }
    }

    #[test]
    fn the_metrics_and_control_sockets_cannot_change_on_a_reload() {
        let running = parse(FAR).unwrap();
        let with = |table: &str| parse(&format!("{FAR}\n{table}")).unwrap();
        assert_eq!(running.fixed_change(&parse(FAR).unwrap()), None);
        assert_eq!(
            running.fixed_change(&with("[metrics]\nlisten = \"127.0.0.1:9464\"")),
            Some("[metrics]")
        );
        assert_eq!(
            running.fixed_change(&with("[control]\nsocket = \"/run/gw.sock\"")),
            Some("control.socket")
        );
    }

    /// A transparent gateway on a plain, routed link.
    const TRANSPARENT: &str = r#"
        [link]
        security = "none"
        [transparent]
        lan = "lan0"
        link = "sat0"
        local = ["10.99.1.0/24"]
        remote = ["10.99.4.0/24", "10.98.0.0/16"]
    "#;

    #[test]
    fn a_transparent_gateway_parses_with_its_defaults() {
        let config = parse(TRANSPARENT).unwrap();
        let plumbing = config.transparent.unwrap();
        assert_eq!(
            plumbing.link,
            LinkPath::Routed {
                link: "sat0".into(),
                tun: DEFAULT_TUN.into()
            }
        );
        assert_eq!((plumbing.port, plumbing.mark, plumbing.table), (7301, 0x5c, 153));
        assert_eq!(plumbing.remote.len(), 2);
        assert!(config.link.is_none(), "no explicit link needed");
    }

    #[test]
    fn the_routed_link_s_packets_fill_the_ethernet_mtu_and_the_explicit_link_s_leave_room() {
        // The routed link adds nothing to the engine's packets: 1500
        // bytes, MSS 1460, as a standard SCPS gateway's on Ethernet, for
        // [engine] and the routes alike.
        let engines = |config: &GatewayConfig| -> Vec<u16> {
            config
                .routes
                .routes()
                .iter()
                .filter_map(|route| route.carried.as_ref().map(|c| c.engine.mtu))
                .collect()
        };
        let routed = parse(TRANSPARENT).unwrap();
        assert_eq!(routed.engine.config.mtu, 1500);
        assert_eq!(engines(&routed), [1500]);
        let with_routes = parse(&format!(
            "{TRANSPARENT}\n[[route]]\nports = \"22\"\n[route.engine.tcp]\nsack = false\n[[route]]\n"
        ))
        .unwrap();
        assert_eq!(engines(&with_routes), [1500, 1500]);
        // `link.mtu` still says otherwise.
        let smaller = parse(&format!("{TRANSPARENT}\n[engine.link]\nmtu = 1400\n")).unwrap();
        assert_eq!(engines(&smaller), [1400]);
        // Beside a port forward, whose packets ride UDP with the plain
        // link's frame check (28 + 4 bytes): [engine] is the forward's,
        // the routes the routed link's, which charge no framing either.
        let both = parse(
            r#"
            [link]
            security = "none"
            udp = "0.0.0.0:7100"
            peer = "192.0.2.2:7100"
            [transparent]
            lan = "lan0"
            link = "sat0"
            local = ["10.99.1.0/24"]
            remote = ["10.99.4.0/24"]
            [[forward]]
            listen = "127.0.0.1:2222"
            to = "10.99.4.2:22"
        "#,
        )
        .unwrap();
        assert_eq!(both.engine.config.mtu, 1468);
        assert_eq!(engines(&both), [1500]);
        let carried = both.routes.routes()[0].carried.as_ref().unwrap();
        assert_eq!(carried.engine.rate_framing_bytes, 0);
        // The secure link seals each packet in a UDP datagram.
        let sealed = parse(
            r#"
            [link]
            udp = "0.0.0.0:7100"
            peer = "192.0.2.2:7100"
            private_key_file = "@KEY"
            peer_public_key = "@PEER"
            [transparent]
            lan = "lan0"
            local = ["10.99.1.0/24"]
            remote = ["10.99.4.0/24"]
        "#,
        )
        .unwrap();
        let sealed_mtu = 1500 - 28 - scps_secure::OVERHEAD as u16;
        assert_eq!(sealed.engine.config.mtu, sealed_mtu);
        assert_eq!(engines(&sealed), [sealed_mtu]);
    }

    #[test]
    fn bad_transparent_sections_name_the_key() {
        let cases = [
            (
                TRANSPARENT.replace("\"sat0\"", "\"lan0\""),
                "transparent.link = lan0: an interface other than",
            ),
            (
                TRANSPARENT.replace("\"sat0\"", "\"a very long name\""),
                "transparent.link = a very long name",
            ),
            (
                TRANSPARENT.replace("10.98.0.0/16", "10.99.0.0/16"),
                "transparent.remote[1] = 10.99.0.0/16",
            ),
            (
                TRANSPARENT.replace("10.98.0.0/16", "fd00::/8/9"),
                "transparent.remote[1] = fd00::/8/9: an address prefix",
            ),
            (
                TRANSPARENT.replace("[\"10.99.1.0/24\"]", "[]"),
                "transparent.local = []",
            ),
            (format!("{TRANSPARENT}table = 251\n"), "transparent.table = 251"),
            (
                TRANSPARENT.replace("[\"10.99.4.0/24\", \"10.98.0.0/16\"]", "[\"fd00:4::/64\"]"),
                "transparent.remote = [fd00:4::/64]: prefixes of a family that transparent.local has too",
            ),
            (format!("{TRANSPARENT}mark = 0\n"), "transparent.mark = 0"),
            (format!("{TRANSPARENT}tproxy = true\n"), "unknown field `tproxy`"),
        ];
        for (text, expected) in cases {
            let err = parse(&text).unwrap_err();
            assert!(err.contains(expected), "expected {expected:?} in: {err}");
        }
    }

    /// A transparent gateway whose link rides two channels, with no
    /// `transparent.link` (the channels say where the link rides).
    fn transparent_bundled(channels: &str) -> String {
        format!(
            "{}[engine]\nprotocol = \"scps-vj\"\n{channels}",
            TRANSPARENT.replace("link = \"sat0\"", "")
        )
    }

    const TWO_CHANNELS: &str = "[[engine.bundle.channel]]\nlocal = \"10.99.2.2:7001\"\n\
        peer = \"10.99.3.2:7001\"\nrate = \"20Mbit\"\n\
        [[engine.bundle.channel]]\nlocal = \"10.99.2.3:7002\"\npeer = \"10.99.3.3:7002\"\n\
        rate = \"2Mbit\"\ndevice = \"sat0\"\n";

    #[test]
    fn a_transparent_gateway_carries_its_bundle_as_its_link() {
        let config = parse(&transparent_bundled(TWO_CHANNELS)).unwrap();
        assert!(config.link.is_none(), "no explicit link");
        let plumbing = config.transparent.as_ref().unwrap();
        let LinkPath::Bundle(bundle) = &plumbing.link else {
            panic!("the link rides the bundle: {:?}", plumbing.link);
        };
        let channels: Vec<(String, String, u64, Option<&str>)> = bundle
            .channels
            .iter()
            .map(|c| {
                (
                    c.local.to_string(),
                    c.peer.to_string(),
                    c.rate_bps,
                    c.device.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            channels,
            [
                ("10.99.2.2:7001".into(), "10.99.3.2:7001".into(), 20_000_000, None),
                (
                    "10.99.2.3:7002".into(),
                    "10.99.3.3:7002".into(),
                    2_000_000,
                    Some("sat0")
                ),
            ]
        );
        assert_eq!(
            bundle.bond.channel_rates_bps,
            [20_000_000, 2_000_000],
            "the scheduler's rates"
        );
        assert_eq!(
            config.engine.bundle.as_ref(),
            Some(bundle),
            "the one bundle of [engine]"
        );
        assert_eq!(plumbing.steering(), None, "nothing to steer into a TUN device");
        let script = plumbing.nft_script(&config.routes);
        assert!(
            script.contains("jump intercept"),
            "the LAN is intercepted:\n{script}"
        );
        assert!(!script.contains("steer"), "no steering:\n{script}");
        // A reload may not change the bundle, and says which key.
        let other = parse(&transparent_bundled(&TWO_CHANNELS.replace("7002", "7003"))).unwrap();
        assert_eq!(config.fixed_change(&other), Some("[engine.bundle]"));
        assert_eq!(
            config.fixed_change(&parse(&transparent_bundled(TWO_CHANNELS)).unwrap()),
            None
        );
    }

    #[test]
    fn bad_bundles_of_a_transparent_gateway_name_the_key() {
        let one = "[[engine.bundle.channel]]\nlocal = \"10.99.2.2:7001\"\npeer = \"10.99.3.2:7001\"\n\
                   rate = \"2400bps\"\n";
        let cases = [
            (
                format!("{TRANSPARENT}{one}"),
                "transparent.link = sat0: not with [engine.bundle]".to_owned(),
            ),
            (
                transparent_bundled(one).replace("[transparent]\n", "[transparent]\ntun = \"gw0\"\n"),
                "transparent.tun = gw0: not with [engine.bundle]".to_owned(),
            ),
            (
                TRANSPARENT.replace("link = \"sat0\"", ""),
                "transparent.link = (none): the interface the plain link rides (link.security = \"none\"), or the channels of [engine.bundle]"
                    .to_owned(),
            ),
            (
                format!("{}[[allow]]\nprefix = \"10.1.0.0/16\"\n", transparent_bundled(one)),
                "engine.bundle = set: the channels of one link".to_owned(),
            ),
            (
                transparent_bundled(&one.replace("10.99.3.2:7001", "10.99.3.2")),
                "bundle.channel[0].peer = 10.99.3.2: an address and port".to_owned(),
            ),
            (
                transparent_bundled(&format!("{one}{}", one.replace("10.99.2.2", "10.99.2.3"))),
                "bundle.channel.peer = 10.99.3.2:7001: each channel its own peer".to_owned(),
            ),
            (
                transparent_bundled(&one.replace("2400bps", "4bps")),
                "at least 8 bit/s".to_owned(),
            ),
            (
                transparent_bundled("[engine.bundle]\n"),
                "bundle.channel = none: at least one channel".to_owned(),
            ),
        ];
        for (text, expected) in cases {
            let err = parse(&text).unwrap_err();
            assert!(err.contains(&expected), "expected {expected:?} in: {err}");
            assert!(err.starts_with("gw.toml"), "names the file: {err}");
        }
    }

    const ROUTES: &str = r#"
        [engine]
        protocol = "scps-rate"
        [engine.link]
        rate = "8Mbit"
        rtt = "600ms"
        [[route]]
        name = "bulk"
        destination = "10.99.4.0/24"
        ports = "20-21"
        [route.engine.link]
        rate = "680kbit"
        [[route]]
        name = "ssh"
        ports = "22"
        pass = true
        [[route]]
        name = "rest"
    "#;

    #[test]
    fn a_route_of_the_transparent_mode_refuses_a_bundle_of_its_own() {
        let text = format!(
            "{TRANSPARENT}[[route]]\nname = \"all\"\n[[route.engine.bundle.channel]]\nlocal = \"127.0.0.1:7001\"\n\
             peer = \"127.0.0.2:7001\"\nrate = \"2400bps\"\n"
        );
        let error = parse(&text).unwrap_err().to_string();
        assert!(
            error.contains(
                "route[0].engine.bundle = set: not a route's: a bundle carries the gateway's link, which \
                 all routes ride (the top-level [engine.bundle])"
            ),
            "{error}"
        );
    }

    #[test]
    fn routes_take_the_engine_with_their_own_keys_over_it() {
        let config = parse(&format!("{TRANSPARENT}{ROUTES}")).unwrap();
        let table = &config.routes;
        let names: Vec<&str> = table.routes().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["bulk", "ssh", "rest"], "most specific first");
        let client: IpAddr = "10.99.1.5".parse().unwrap();
        let (name, bulk) = carried_by(table, client, "10.99.4.2:21").unwrap();
        assert_eq!(name, "bulk");
        assert_eq!(bulk.engine.rate_bps, Some(680_000), "the route's own rate");
        assert_eq!(
            bulk.engine.congestion,
            scps_proto::cc::CongestionAlgorithm::Rate,
            "[engine]'s protocol"
        );
        assert_eq!(bulk.engine.rate_route, 1, "its own budget");
        assert_eq!(
            bulk.relay.buffer,
            256 << 10,
            "680 kbit/s for 600 ms, raised to the floor"
        );
        let (_, rest) = carried_by(table, client, "10.99.4.2:80").unwrap();
        assert_eq!(
            (rest.engine.rate_bps, rest.engine.rate_route),
            (Some(8_000_000), 3)
        );
        assert_eq!(rest.relay.buffer, 600_000, "8 Mbit/s for 600 ms");
        assert_eq!(
            (rest.engine.send_buffer, rest.engine.recv_buffer),
            (2_400_000, 2_400_000),
            "the link engine's buffers: four products, as the simulator's gateways"
        );
        assert!(carried_by(table, client, "10.99.4.2:22").is_none(), "ssh passes");
        let default = parse(TRANSPARENT).unwrap();
        assert_eq!(
            default.routes.routes().len(),
            1,
            "without routes, one carries everything"
        );
    }

    /// What the one route of an 8 Mbit/s, 600 ms `scps-rate` engine with
    /// `[engine.tcp]` keys `tcp` carries a web connection with.
    fn carried_at_8mbit(tcp: &str) -> Carried {
        let config = parse(&format!(
            "{TRANSPARENT}[engine]\nprotocol = \"scps-rate\"\n[engine.link]\nrate = \"8Mbit\"\nrtt = \"600ms\"\n\
             [engine.tcp]\n{tcp}\n"
        ))
        .unwrap();
        let client: IpAddr = "10.99.1.5".parse().unwrap();
        let (_, carried) = carried_by(&config.routes, client, "10.99.4.2:80").unwrap();
        carried.clone()
    }

    /// The route that carries a connection from `client` to `server`, and
    /// its settings; `None` if it passes.
    fn carried_by<'a>(table: &'a RouteTable, client: IpAddr, server: &str) -> Option<(&'a str, &'a Carried)> {
        match table.decide(client, server.parse().unwrap()) {
            scps_relay::Decision::Carried { route, settings } => Some((route, settings)),
            scps_relay::Decision::PassThrough => None,
        }
    }

    #[test]
    fn buffers_a_key_sizes_are_kept() {
        let carried = carried_at_8mbit("recv_buffer = \"6MiB\"");
        assert_eq!(carried.engine.recv_buffer, 6 << 20, "the key's");
        assert_eq!(carried.engine.send_buffer, 2_400_000, "the link's");
    }

    #[test]
    fn a_route_whose_rate_is_auto_is_not_told_the_links_rate_but_sized_for_it() {
        let carried = carried_at_8mbit("rate = \"auto\"");
        assert!(carried.engine.rate_auto);
        assert_eq!(carried.engine.rate_bps, None, "measured, not configured");
        assert_eq!(
            (
                carried.engine.send_buffer,
                carried.engine.recv_buffer,
                carried.relay.buffer
            ),
            (2_400_000, 2_400_000, 600_000),
            "sized for the link's 8 Mbit/s for 600 ms as a fixed rate's would be"
        );
    }

    #[test]
    fn bad_routes_name_the_key() {
        let with = |routes: &str| format!("{TRANSPARENT}{routes}");
        let cases = [
            (
                with("[[route]]\nsource = \"10.99.1.0/24\"\n[[route]]\ndestination = \"10.99.4.0/24\"\n"),
                "route = route[0] and route[1]: routes that do not overlap, or one within the other",
            ),
            (
                with("[[route]]\nports = \"22\"\n[[route]]\nports = \"22\"\n"),
                "route = route[0] and route[1]",
            ),
            (
                with("[[route]]\npass = true\nbuffer = \"1MB\"\n"),
                "route[0].pass = true: a route that passes",
            ),
            (
                with("[[route]]\nsource = \"fd00::/8\"\ndestination = \"10.99.4.0/24\"\n"),
                "route[0].destination = 10.99.4.0/24: a prefix of the source's family (fd00::/8)",
            ),
            (with("[[route]]\nports = \"9-1\"\n"), "route[0].ports = 9-1"),
            (with("[[route]]\nbuffer = \"100\"\n"), "route[0].buffer = 100"),
            (
                with("[[route]]\nname = \"a\"\nports = \"1\"\n[[route]]\nname = \"a\"\nports = \"2\"\n"),
                "a name of its own",
            ),
            (
                with("[[route]]\n[route.engine]\nprotocol = \"tcp-fast\"\n"),
                "route[0].engine",
            ),
            (with("[[route]]\nport = \"22\"\n"), "unknown field `port`"),
            (
                format!("{FAR}\n[[route]]\nports = \"22\"\n"),
                "route = 1 routes: routes choose what the transparent mode carries",
            ),
        ];
        for (text, expected) in cases {
            let err = parse(&text).unwrap_err();
            assert!(err.contains(expected), "expected {expected:?} in: {err}");
        }
    }
}
