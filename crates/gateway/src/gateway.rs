//! A running gateway: in the explicit modes its link endpoint (our stack
//! over UDP encapsulation), the far gateway's listener for link
//! connections when it allows any destination, and a listener per port
//! forward; in the transparent mode, `transparent/`. Each split connection is one task running the relay; the
//! gateway logs how each ended and counts them, and lists those it holds
//! (`registry.rs`) for the control socket and the metrics.
//!
//! The explicit modes have no routes: their connections are shown on the
//! route `forward:LISTEN` or `socks:LISTEN` (the listener that took them)
//! at the client gateway, and `far` at the far gateway.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use scps_net::{BoxedPath, BundleMonitor, Net, NetError, NetOptions};
use scps_relay::{RelayConfig, Routes};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::clients::Refusal;
use crate::config::{ExplicitLink, Forward, GatewayConfig, Socks};
use crate::control::{About, ControlError, ControlSocket, GatewayIdentity};
use crate::counters::ConnectionLimit;
pub use crate::counters::Counters;
use crate::counters::{Relays, accept_admitted, accept_client};
use crate::descriptors;
use crate::explicit::{FarConfig, FarLink, relay_to_far_listed, serve_link_listed};
use crate::handshakes::{Full, Handshakes};
use crate::pump::Connection;
use crate::registry::LiveConnections;
use crate::security::{LinkWatch, Security, bundle_link, udp_link};
use crate::socks;
use crate::transparent::{self, Installed, PlainHosts, Relaying, TransparentError};

/// How long a destination that answered only without the SCPS
/// capabilities option is remembered as one.
const PLAIN_HOSTS_REMEMBERED: Duration = Duration::from_secs(600);

/// How long a stopping gateway lets its link connections finish closing.
const LINGER: Duration = Duration::from_secs(5);

/// How long a stopping gateway waits for its relays, dropped, to count
/// their connections.
const STOP_COUNTING: Duration = Duration::from_secs(5);

/// The route of the connections a far gateway of the explicit modes takes.
const FAR_ROUTE: &str = "far";

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    // The causes are part of each message (and not sources, which the
    // command would print a second time).
    #[error("the link endpoint: {0}")]
    Link(NetError),
    #[error("the transparent mode: {0}")]
    Transparent(TransparentError),
    #[error("{0} cannot change without a restart")]
    Fixed(&'static str),
    #[error("cannot install the new routes' rules (the running ones are kept): {0}")]
    Rules(transparent::PlumbingError),
    #[error("cannot listen on {listen} for the forward to {to}: {error}")]
    Listen {
        listen: SocketAddr,
        to: String,
        error: std::io::Error,
    },
    #[error("{0}")]
    Control(ControlError),
    #[error("cannot serve the metrics on {listen} (metrics.listen): {error}")]
    Metrics {
        listen: SocketAddr,
        error: std::io::Error,
    },
}

/// A gateway that runs: its endpoints, the tasks serving its listeners,
/// and the transparent mode's kernel plumbing while installed.
#[derive(Debug)]
pub struct Gateway {
    /// The configuration it runs: what a reload may not change is checked
    /// against it.
    config: GatewayConfig,
    /// The transparent mode's routes, replaced by a reload.
    routes: Option<Routes>,
    counters: Arc<Counters>,
    /// The split connections held, and the bytes of those that ended.
    live: Arc<LiveConnections>,
    tasks: JoinSet<()>,
    endpoints: Vec<Arc<Net>>,
    installed: Option<Installed>,
    control: Option<ControlSocket>,
    metrics: Option<SocketAddr>,
}

impl Gateway {
    /// Starts the gateway of `config`. Endpoints, listening sockets and the
    /// transparent mode's kernel plumbing are set up before anything is
    /// accepted, so that once this returns the gateway serves; any failure
    /// there is returned at once, with what was installed removed.
    pub async fn start(config: GatewayConfig) -> Result<Gateway, GatewayError> {
        let limit = fit_to_descriptors(&config);
        let counters = Arc::new(Counters::new(limit.limit as usize));
        let live = Arc::new(LiveConnections::default());
        let mut tasks = JoinSet::new();
        // The operator's sockets first: a gateway that cannot have them
        // stops before it takes any connection.
        let control = match &config.control {
            Some(control) => {
                let about = About {
                    identity: GatewayIdentity::of_this_process(&config.origin, &config.modes()),
                    limit,
                };
                ControlSocket::start(control, Some(about), (counters.clone(), live.clone()), &mut tasks)
                    .map_err(GatewayError::Control)?
            }
            None => None,
        };
        // The link's bundle, if it rides one (the explicit modes' link or
        // the transparent mode's: the configuration gives it to one), watched
        // from the start by the metrics.
        let bundle = config.engine.bundle.as_ref().map(|_| BundleMonitor::default());
        let watch = LinkWatch::default();
        let metrics = match &config.metrics {
            Some(metrics) => Some(
                crate::metrics::start(
                    metrics,
                    counters.clone(),
                    live.clone(),
                    bundle.clone(),
                    (&config.security, &watch),
                    &mut tasks,
                )
                .await
                .map_err(|error| GatewayError::Metrics {
                    listen: metrics.listen,
                    error,
                })?,
            ),
            None => None,
        };
        announce_security(&config);
        let mut endpoints = Vec::new();
        if let Some(link) = &config.link {
            endpoints.push(
                start_explicit(
                    link,
                    bundle.clone(),
                    &config,
                    &watch,
                    &counters,
                    &live,
                    &mut tasks,
                )
                .await?,
            );
        }
        let mut installed = None;
        let mut routes = None;
        if let Some(plumbing) = &config.transparent {
            let table = Routes::new(config.routes.clone());
            routes = Some(table.clone());
            let relaying = Relaying {
                routes: table,
                connect_timeout: config.connect_timeout,
                counters: counters.clone(),
                live: live.clone(),
                plain_hosts: Arc::new(PlainHosts::new(PLAIN_HOSTS_REMEMBERED)),
            };
            let (guard, net) = transparent::start(
                plumbing.clone(),
                &config.engine.config,
                config.capture.clone(),
                (bundle, &config.security, &watch),
                relaying,
                &mut tasks,
            )
            .map_err(GatewayError::Transparent)?;
            installed = Some(guard);
            endpoints.push(net);
        }
        tracing::info!(
            control = control.as_ref().map(|c| c.path().display().to_string()),
            metrics = metrics.map(|m| m.to_string()),
            "ready"
        );
        Ok(Gateway {
            config,
            routes,
            counters,
            live,
            tasks,
            endpoints,
            installed,
            control,
            metrics,
        })
    }

    /// Takes the routes of `new` (SIGHUP): connections that are open keep
    /// the settings they started with, new ones follow the new routes.
    /// Refused, with everything left as it runs, if `new` changes anything
    /// else or its rules cannot be installed. Returns the number of routes.
    pub fn reload(&mut self, new: GatewayConfig) -> Result<usize, GatewayError> {
        if let Some(part) = self.config.fixed_change(&new) {
            return Err(GatewayError::Fixed(part));
        }
        if let Some(installed) = &self.installed {
            installed
                .replace_routes(&new.routes)
                .map_err(GatewayError::Rules)?;
        }
        if let Some(routes) = &self.routes {
            routes.replace(new.routes.clone());
        }
        let count = new.routes.routes().len();
        tracing::info!(routes = count, "routes reloaded");
        self.config = new;
        Ok(count)
    }

    /// What it has counted so far.
    pub fn counters(&self) -> &Arc<Counters> {
        &self.counters
    }

    /// Its split connections, held and ended: what they relayed stays
    /// readable once the gateway has stopped.
    pub fn live_connections(&self) -> Arc<LiveConnections> {
        self.live.clone()
    }

    /// Where its control socket listens, if it has one.
    pub fn control_socket(&self) -> Option<&std::path::Path> {
        self.control.as_ref().map(ControlSocket::path)
    }

    /// Where its metrics are served, if they are (the port chosen when
    /// `metrics.listen` gave 0).
    pub fn metrics_address(&self) -> Option<SocketAddr> {
        self.metrics
    }

    /// Stops it: interception off, listeners and relays ended, endpoints
    /// closed; what it counted.
    pub async fn stop(mut self) -> Result<Arc<Counters>, GatewayError> {
        tracing::info!("stopping");
        // Interception off first: nothing new reaches a listener that is
        // gone.
        drop(self.installed.take());
        self.tasks.shutdown().await;
        // The relays those tasks held end as the runtime drops them, each
        // counting its connection: the counts are read once all have.
        let _ = tokio::time::timeout(STOP_COUNTING, self.counters.wait_active_below(1)).await;
        drop(self.control.take());
        for net in self.endpoints.drain(..) {
            if let Ok(net) = Arc::try_unwrap(net) {
                net.close(LINGER).await.map_err(GatewayError::Link)?;
            }
        }
        Ok(self.counters)
    }
}

/// The explicit modes: the link endpoint over UDP, the far gateway's
/// listener if it allows any destination, a listener per forward.
async fn start_explicit(
    link: &ExplicitLink,
    bundle_monitor: Option<BundleMonitor>,
    config: &GatewayConfig,
    watch: &LinkWatch,
    counters: &Arc<Counters>,
    live: &Arc<LiveConnections>,
    tasks: &mut JoinSet<()>,
) -> Result<Arc<Net>, GatewayError> {
    let path: BoxedPath = match &config.engine.bundle {
        Some(bundle) => Box::new(
            bundle_link(
                bundle,
                bundle_monitor.unwrap_or_default(),
                &config.security,
                watch,
            )
            .map_err(GatewayError::Link)?,
        ),
        None => Box::new(udp_link(link.udp, link.peer, &config.security, watch).map_err(GatewayError::Link)?),
    };
    let mut options = NetOptions {
        capture: config.capture.as_ref().map(|file| {
            // Beside the transparent mode's capture, if both run.
            match &config.transparent {
                Some(_) => file.with_extension("explicit.pcap"),
                None => file.clone(),
            }
        }),
        ..NetOptions::default()
    };
    options.endpoint.connection = config.engine.config.clone();
    let net = Arc::new(Net::start(path, options).map_err(GatewayError::Link)?);
    if !config.allowed.rules.is_empty() {
        let local = SocketAddr::new(link.udp.ip(), link.port);
        let listener = net.listen(local).map_err(GatewayError::Link)?;
        tracing::info!(%local, rules = config.allowed.rules.len(), "taking link connections");
        let far = Arc::new(FarConfig {
            allowed: config.allowed.clone(),
            connect_timeout: config.connect_timeout,
            relay: config.relay,
        });
        tasks.spawn(serve_far(listener, far, counters.clone(), live.clone()));
    }
    if let Some(far) = config.far_link() {
        let far = FarLink {
            net: net.clone(),
            far,
            connect_timeout: config.connect_timeout,
        };
        for forward in &config.forwards {
            let listener = TcpListener::bind(forward.listen)
                .await
                .map_err(|error| GatewayError::Listen {
                    listen: forward.listen,
                    to: forward.to.to_string(),
                    error,
                })?;
            tracing::info!(listen = %forward.listen, to = %forward.to, "forwarding");
            tasks.spawn(serve_forward(
                listener,
                forward.clone(),
                far.clone(),
                config.relay,
                counters.clone(),
                live.clone(),
            ));
        }
        // One set of places for the handshakes of every SOCKS5 server.
        let handshakes = Handshakes::new(config.handshakes);
        for socks in &config.socks {
            let listener = TcpListener::bind(socks.listen)
                .await
                .map_err(|error| GatewayError::Listen {
                    listen: socks.listen,
                    to: "SOCKS5 clients' destinations".to_owned(),
                    error,
                })?;
            tracing::info!(listen = %socks.listen, authenticated = socks.users.is_some(), "SOCKS5 server");
            tasks.spawn(serve_socks(
                listener,
                socks.clone(),
                (far.clone(), config.relay),
                handshakes.clone(),
                counters.clone(),
                live.clone(),
            ));
        }
    }
    Ok(net)
}

/// The connection limit of `config` (`relay.max_connections`, lowered by
/// `relay.memory`), lowered if the open-file limit (raised first to its
/// hard limit) has no room for that many; says so.
fn fit_to_descriptors(config: &GatewayConfig) -> ConnectionLimit {
    let open_files = descriptors::raise_open_file_limit();
    let settings = config.limit_settings;
    let limit = ConnectionLimit::new(
        settings.max_connections,
        settings.memory,
        settings.buffer,
        open_files.now,
    );
    let configured = config.max_connections;
    if (limit.limit as usize) < configured {
        tracing::warn!(
            open_file_limit = open_files.now,
            raised_from = open_files.found,
            configured,
            lowered_to = limit.limit,
            "the open-file limit has no room for relay.max_connections: the limit is lowered (raise \
             LimitNOFILE, or ulimit -n, to hold more)"
        );
    } else {
        tracing::info!(
            open_file_limit = open_files.now,
            raised_from = open_files.found,
            max_connections = configured,
            "the open-file limit holds the connection limit"
        );
    }
    limit
}

/// Says at start how the link to the far gateway is protected: an
/// operator who asked for a plain link is told what that means.
fn announce_security(config: &GatewayConfig) {
    match &config.security {
        Security::Noise(keys) => tracing::info!(
            key_file = %keys.key_file.display(),
            public_key = %keys.private_key.public_key(),
            peer_public_key = %keys.peer_public_key,
            "the link to the far gateway is authenticated and encrypted (link.security = \"noise\")"
        ),
        Security::None => {
            let taken_from = match (&config.link, &config.transparent) {
                (Some(link), _) => link
                    .peer
                    .map(|peer| format!("datagrams are taken from {peer} alone")),
                (None, Some(plumbing)) => plumbing.steering().map(|(link, _)| {
                    format!(
                        "its packets carry the applications' addresses, so whatever arrives on {link} from \
                         the remote prefixes is taken"
                    )
                }),
                (None, None) => None,
            };
            tracing::warn!(
                taken_from = taken_from
                    .as_deref()
                    .unwrap_or("each channel takes its peer's datagrams alone"),
                "link.security = \"none\": the link to the far gateway is NOT authenticated or encrypted; \
                 anyone who can send on it can reach the far side's servers through this gateway"
            );
        }
    }
}

async fn serve_far(
    listener: scps_net::Listener,
    far: Arc<FarConfig>,
    counters: Arc<Counters>,
    live: Arc<LiveConnections>,
) {
    let mut relays = Relays::default();
    while let Ok(link) = relays.reap_until(listener.accept()).await {
        let peer = link.peer_addr();
        let Some(permit) = counters.admit(FAR_ROUTE, peer) else {
            link.abort();
            continue;
        };
        let (far, counters) = (far.clone(), counters.clone());
        let listing = live.list(peer, FAR_ROUTE);
        relays.spawn(async move {
            match serve_link_listed(link, &far, &listing).await {
                Ok(outcome) => {
                    tracing::info!(%peer, %outcome, "link connection ended");
                    permit.end(outcome);
                }
                Err(err) => {
                    tracing::info!(%peer, %err, "link connection turned down");
                    counters.turned_down.fetch_add(1, Ordering::Relaxed);
                    permit.end_counted_elsewhere();
                }
            }
        });
    }
}

async fn serve_forward(
    listener: TcpListener,
    forward: Forward,
    far: FarLink,
    relay: RelayConfig,
    counters: Arc<Counters>,
    live: Arc<LiveConnections>,
) {
    let route = format!("forward:{}", forward.listen);
    let mut relays = Relays::default();
    loop {
        let (lan, client, permit) = relays
            .reap_until(accept_admitted(&listener, (&route, &forward.clients), &counters))
            .await;
        let listing = live.list(client, route.as_str());
        let (far, to) = (far.clone(), forward.to.clone());
        relays.spawn(async move {
            let outcome = relay_to_far_listed(far, lan, to.clone(), relay, &listing).await;
            tracing::info!(%client, %to, %outcome, "connection ended");
            permit.end(outcome);
        });
    }
}

/// The SOCKS5 server on `listener`: each client allowed in takes a place
/// among the handshakes (`handshakes.rs`), and one among the split
/// connections only once its handshake is done, so that handshakes left
/// unfinished cannot fill the places real connections need.
async fn serve_socks(
    listener: TcpListener,
    server: Socks,
    (far, relay): (FarLink, RelayConfig),
    handshakes: Arc<Handshakes>,
    counters: Arc<Counters>,
    live: Arc<LiveConnections>,
) {
    let route = format!("socks:{}", server.listen);
    let server = Arc::new(server);
    let mut relays = Relays::default();
    loop {
        let (mut lan, client) = relays
            .reap_until(accept_client(&listener, (&route, &server.clients), &counters))
            .await;
        let place = match handshakes.begin(client.ip()) {
            Ok(place) => place,
            Err(full) => {
                let (refusal, detail) = match full {
                    Full::Source => (
                        Refusal::SourceHandshakes,
                        "its source has its share of handshakes under way",
                    ),
                    Full::Total => (Refusal::AllHandshakes, "every place for a handshake is held"),
                };
                counters.turn_away(&route, client, refusal, detail);
                lan.reset();
                continue;
            }
        };
        let (far, counters, server, route, live) = (
            far.clone(),
            counters.clone(),
            server.clone(),
            route.clone(),
            live.clone(),
        );
        let deadline = handshakes.limits().timeout;
        relays.spawn(async move {
            let handshake = socks::read_handshake(&mut lan, server.users.as_ref(), deadline).await;
            // The handshake's place is given back as soon as it ends, not
            // held for the relay.
            drop(place);
            let destination = match handshake {
                Ok(destination) => destination,
                Err(refusal) => return socks_refused(&counters, (&route, client), refusal),
            };
            let Some(permit) = counters.admit(&route, client) else {
                return socks::refuse(lan).await;
            };
            let listing = live.list(client, route.as_str());
            match socks::relay(lan, destination, far, relay, &listing).await {
                Ok(outcome) => {
                    tracing::info!(%client, %outcome, "SOCKS5 connection ended");
                    permit.end(outcome);
                }
                Err(refusal) => {
                    socks_refused(&counters, (&route, client), refusal);
                    permit.end_counted_elsewhere();
                }
            }
        });
    }
}

/// Counts, and logs, a SOCKS5 client that was not relayed.
fn socks_refused(counters: &Counters, (route, client): (&str, SocketAddr), refusal: socks::SocksRefusal) {
    match refusal {
        socks::SocksRefusal::NotAuthenticated(error) => {
            counters.turn_away(route, client, Refusal::NotAuthenticated, &error.to_string());
        }
        socks::SocksRefusal::Slow(_) => {
            tracing::info!(%client, %refusal, "SOCKS5 handshake timed out");
            counters.handshake_timed_out.fetch_add(1, Ordering::Relaxed);
        }
        refusal => {
            tracing::info!(%client, %refusal, "SOCKS5 request not relayed");
            counters.socks_refused.fetch_add(1, Ordering::Relaxed);
        }
    }
}
