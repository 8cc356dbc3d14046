//! The transparent mode (docs/gateway.md): LAN connections are
//! intercepted with TPROXY and carried across the link as SCPS-TP over
//! the gateway's TUN device, or a bundle of UDP channels to the far
//! gateway (`[engine.bundle]`), **with the applications' own addresses
//! and ports**, so that the far side can be any standard SCPS gateway
//! (over the TUN device; a bundle's far side is ours, with the mirror
//! bundle); link connections to the local prefixes are taken over
//! (answered as the server they were sent to) and continued to the server
//! with kernel TCP from the client's address.
//!
//! Each gateway of a pair runs the same mode with its own view: `local`
//! the prefixes on its LAN side, `remote` those beyond the far gateway.

mod nft;
mod plain_hosts;
mod plumbing;
mod sockets;

use std::sync::Arc;
use std::time::Duration;

pub use plain_hosts::PlainHosts;
pub use plumbing::{Installed, LinkPath, Plumbing, PlumbingError};
use scps_net::{BoxedPath, BundleMonitor, Net, NetError, NetOptions, TunPath};
use scps_relay::{Decision, OpenFailure, Routes, Side};
use tokio::task::JoinSet;

use crate::clients::Clients;
use crate::counters::{Counters, Relays, accept_admitted};
use crate::pump::{net_open_failure, open_failure, pump};
use crate::registry::LiveConnections;
use crate::security::{LinkWatch, Security, bundle_link, udp_link};

/// The TUN device's MTU: an Ethernet link's.
const TUN_MTU: u16 = 1500;

#[derive(Debug, thiserror::Error)]
pub enum TransparentError {
    // The causes are part of each message (and not sources, which the
    // command would print a second time).
    #[error("cannot create the TUN device {tun}: {error}")]
    Tun { tun: String, error: NetError },
    #[error("cannot open the link's bundle of channels ([engine.bundle]): {error}")]
    Bundle { error: NetError },
    #[error("cannot open the secure link on {udp} (link.udp): {error}")]
    Tunnel {
        udp: std::net::SocketAddr,
        error: NetError,
    },
    /// `link` says where the endpoint runs: its TUN device or the bundle.
    #[error("the link endpoint on {link}: {error}")]
    Endpoint { link: String, error: NetError },
    #[error(
        "IP_TRANSPARENT refused ({error}): the transparent mode needs CAP_NET_ADMIN (root, or a user namespace of its own)"
    )]
    NotPermitted { error: std::io::Error },
    #[error("cannot open the interception listener on port {port}: {error}")]
    Listener { port: u16, error: std::io::Error },
    #[error(transparent)]
    Plumbing(#[from] PlumbingError),
}

/// What a transparent gateway's relays share.
#[derive(Debug, Clone)]
pub struct Relaying {
    /// Which connections are carried, each route with its engine settings
    /// and relay buffer.
    pub routes: Routes,
    pub connect_timeout: Duration,
    pub counters: Arc<Counters>,
    /// The split connections held now, each with its route's name.
    pub live: Arc<LiveConnections>,
    pub plain_hosts: Arc<PlainHosts>,
}

/// Starts the transparent mode: the link's path (the TUN device, or the
/// bundle's channels reporting to `bundle_monitor`) and its endpoint, the
/// listeners, then the kernel's interception and steering (last, so that
/// nothing is intercepted before it can be served). The accept loops run
/// in `tasks`; the returned guard removes the plumbing when dropped, and
/// the endpoint is for the caller to close.
pub fn start(
    plumbing: Plumbing,
    engine: &scps_proto::Config,
    capture: Option<std::path::PathBuf>,
    (bundle_monitor, security, watch): (Option<BundleMonitor>, &Security, &LinkWatch),
    relaying: Relaying,
    tasks: &mut JoinSet<()>,
) -> Result<(Installed, Arc<Net>), TransparentError> {
    plumbing.check_settings()?;
    sockets::check_transparent().map_err(|error| TransparentError::NotPermitted { error })?;
    let (path, on): (BoxedPath, String) = match &plumbing.link {
        LinkPath::Routed { tun, .. } => {
            let path = TunPath::create(tun, &[], TUN_MTU).map_err(|error| TransparentError::Tun {
                tun: tun.clone(),
                error,
            })?;
            (Box::new(path), tun.clone())
        }
        LinkPath::Bundle(bundle) => {
            let path = bundle_link(bundle, bundle_monitor.unwrap_or_default(), security, watch)
                .map_err(|error| TransparentError::Bundle { error })?;
            (Box::new(path), "the bundle of channels".to_owned())
        }
        LinkPath::Tunnel { udp, peer } => {
            let path = udp_link(*udp, *peer, security, watch)
                .map_err(|error| TransparentError::Tunnel { udp: *udp, error })?;
            (Box::new(path), format!("the secure link on {udp}"))
        }
    };
    let mut options = NetOptions {
        connect_timeout: relaying.connect_timeout,
        capture,
        ..NetOptions::default()
    };
    options.endpoint.connection = engine.clone();
    options.endpoint.transparent = plumbing.local.clone();
    let endpoint_error = |error| TransparentError::Endpoint {
        link: on.clone(),
        error,
    };
    let net = Arc::new(Net::start(path, options).map_err(endpoint_error)?);
    let link_listener = net
        .listen_transparent(&plumbing.local, None)
        .map_err(endpoint_error)?;
    // The far side's choice: a link connection gets its route's engine
    // from its SYN on (the table in force then).
    link_listener.choose_configs(Arc::new(relaying.routes.clone()));
    let lan_listeners = plumbing
        .families()
        .into_iter()
        .map(|family| {
            sockets::intercepting_listener(family, plumbing.port).map_err(|error| {
                TransparentError::Listener {
                    port: plumbing.port,
                    error,
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    // The rules from the table the listeners decide by.
    let installed = plumbing.install(&relaying.routes.current())?;
    for lan_listener in lan_listeners {
        tasks.spawn(intercept(lan_listener, net.clone(), relaying.clone()));
    }
    tasks.spawn(take_over(link_listener, relaying));
    Ok((installed, net))
}

/// LAN connections to remote servers: each carried across the link from
/// the client's own address and port.
async fn intercept(listener: tokio::net::TcpListener, net: Arc<Net>, relaying: Relaying) {
    let mut relays = Relays::default();
    loop {
        // The interception's rules choose its clients: any that reach it.
        let (lan, client, permit) = relays
            .reap_until(accept_admitted(
                &listener,
                ("transparent", &Clients::Any),
                &relaying.counters,
            ))
            .await;
        let server = match lan.local_addr() {
            Ok(server) => server,
            Err(err) => {
                tracing::warn!(%client, %err, "the intercepted connection has no destination");
                continue;
            }
        };
        let table = relaying.routes.current();
        let Decision::Carried { route, settings } = table.decide(client.ip(), server) else {
            no_route(&relaying.counters, client, server);
            crate::pump::Connection::reset(lan);
            continue;
        };
        let (route, relay, engine) = (route.to_owned(), settings.relay, settings.engine.clone());
        let listing = relaying.live.list(client, route.as_str());
        listing.set_destination(server);
        let (net, relaying) = (net.clone(), relaying.clone());
        relays.spawn(async move {
            let opening = {
                let (relaying, listing) = (relaying.clone(), &listing);
                async move {
                    let link = open_link(&net, client, server, &engine, &relaying).await?;
                    listing.link_opened(&link);
                    Ok(link)
                }
            };
            let outcome = pump(relay, Side::Lan, lan, opening, listing.progress()).await;
            tracing::info!(%client, %server, %route, %outcome, "connection ended");
            permit.end(outcome);
        });
    }
}

/// The link connection of an intercepted one, with the SCPS capabilities
/// option unless the server is known to answer only without it; a SYN
/// with it that gets no answer or a reset is tried again without it.
async fn open_link(
    net: &Net,
    client: std::net::SocketAddr,
    server: std::net::SocketAddr,
    engine: &scps_proto::Config,
    relaying: &Relaying,
) -> Result<scps_net::Stream, OpenFailure> {
    let failed = |err: &NetError| {
        tracing::info!(%client, %server, %err, "the link connection did not open");
        net_open_failure(err)
    };
    if !relaying.plain_hosts.is_plain(server.ip()) {
        match net.connect_from_with(client, server, engine.clone()).await {
            Ok(link) => return Ok(link),
            Err(err) if unanswered_or_reset(&err) => {
                tracing::info!(%client, %server, %err, "trying again without the SCPS capabilities option");
                relaying
                    .counters
                    .plain_retries
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            Err(err) => return Err(failed(&err)),
        }
    }
    let config = scps_proto::Config {
        scps: false,
        ..engine.clone()
    };
    match net.connect_from_with(client, server, config).await {
        Ok(link) => {
            relaying.plain_hosts.remember(server.ip());
            Ok(link)
        }
        Err(err) => Err(failed(&err)),
    }
}

/// Whether a connection failed in its handshake, for want of an answer or
/// by a reset (what a host that rejects the SCPS option does).
fn unanswered_or_reset(err: &NetError) -> bool {
    use scps_proto::ConnectionError;
    matches!(
        err,
        NetError::ConnectTimedOut { .. }
            | NetError::Connection {
                source: ConnectionError::Refused | ConnectionError::HandshakeTimedOut { .. },
                ..
            }
    )
}

/// Link connections to local servers: each answered as its server and
/// continued with kernel TCP from the client's address.
async fn take_over(listener: scps_net::TransparentListener, relaying: Relaying) {
    let mut relays = Relays::default();
    while let Ok(link) = relays.reap_until(listener.accept()).await {
        let (client, server) = (link.peer_addr(), link.local_addr());
        let Some(permit) = relaying.counters.admit("transparent link", client) else {
            link.abort();
            continue;
        };
        let table = relaying.routes.current();
        let Decision::Carried { route, settings } = table.decide(client.ip(), server) else {
            no_route(&relaying.counters, client, server);
            link.abort();
            continue;
        };
        let (route, relay) = (route.to_owned(), settings.relay);
        let listing = relaying.live.list(client, route.as_str());
        listing.set_destination(server);
        listing.link_opened(&link);
        let relaying = relaying.clone();
        relays.spawn(async move {
            let timeout = relaying.connect_timeout;
            let opening = async move {
                match tokio::time::timeout(timeout, sockets::connect_from(client.ip(), server)).await {
                    Ok(Ok(lan)) => Ok(lan),
                    Ok(Err(err)) => {
                        tracing::info!(%client, %server, %err, "the server did not answer");
                        Err(open_failure(&err))
                    }
                    Err(_) => Err(OpenFailure::TimedOut),
                }
            };
            let outcome = pump(relay, Side::Link, link, opening, listing.progress()).await;
            tracing::info!(%client, %server, %route, %outcome, "connection ended");
            permit.end(outcome);
        });
    }
}

/// A connection that reached the gateway although no route carries it:
/// reset, never relayed.
fn no_route(counters: &Counters, client: std::net::SocketAddr, server: std::net::SocketAddr) {
    counters
        .no_route
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tracing::info!(%client, %server, "no route carries the connection: reset");
}
