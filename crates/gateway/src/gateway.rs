//! A running gateway in the explicit modes: its link endpoint (our stack
//! over UDP encapsulation), the far gateway's listener for link
//! connections when it allows any destination, and a listener per port
//! forward. Each split connection is one task running the relay; the
//! gateway logs how each ended and counts them.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use scps_net::{Net, NetError, NetOptions, UdpPath};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use crate::config::{Forward, GatewayConfig};
use crate::explicit::{FarConfig, relay_to_far, serve_link};
use crate::relay::Outcome;

/// How long a stopping gateway lets its link connections finish closing.
const LINGER: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("the link endpoint: {0}")]
    Link(#[from] NetError),
    #[error("cannot listen on {listen} for the forward to {to}: {source}")]
    Listen {
        listen: SocketAddr,
        to: String,
        source: std::io::Error,
    },
}

/// Split connections by how they ended, since the start.
#[derive(Debug, Default)]
pub struct Counters {
    pub closed: AtomicU64,
    pub reset: AtomicU64,
    pub refused: AtomicU64,
    pub idle: AtomicU64,
    /// Link connections the far gateway turned down (malformed, not
    /// allowed, destination unreachable).
    pub turned_down: AtomicU64,
}

impl Counters {
    fn count(&self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Closed => &self.closed,
            Outcome::Reset(_) => &self.reset,
            Outcome::OpenFailed(_) => &self.refused,
            Outcome::Idle => &self.idle,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs the gateway of `config` until `shutdown` completes; what it
/// counted. Listening sockets and the link endpoint are set up before
/// anything is accepted: any failure there is returned at once.
pub async fn run(
    config: GatewayConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<Arc<Counters>, GatewayError> {
    let path = UdpPath::bind(config.udp, config.peer)?;
    let mut options = NetOptions::default();
    options.endpoint.connection = config.engine.config.clone();
    let net = Arc::new(Net::start(path, options)?);
    let counters = Arc::new(Counters::default());
    let mut tasks = JoinSet::new();
    if !config.allowed.rules.is_empty() {
        let local = SocketAddr::new(config.udp.ip(), config.link_port);
        let listener = net.listen(local)?;
        tracing::info!(%local, rules = config.allowed.rules.len(), "taking link connections");
        let far = Arc::new(FarConfig {
            allowed: config.allowed.clone(),
            connect_timeout: config.connect_timeout,
            relay: config.relay,
        });
        let counters = counters.clone();
        tasks.spawn(async move {
            let mut relays = JoinSet::new();
            while let Ok(link) = listener.accept().await {
                let (far, counters) = (far.clone(), counters.clone());
                let peer = link.peer_addr();
                relays.spawn(async move {
                    match serve_link(link, &far).await {
                        Ok(outcome) => {
                            tracing::info!(%peer, %outcome, "link connection ended");
                            counters.count(outcome);
                        }
                        Err(err) => {
                            tracing::info!(%peer, %err, "link connection turned down");
                            counters.turned_down.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
                while relays.try_join_next().is_some() {}
            }
        });
    }
    if let Some(far) = config.far_link() {
        for forward in &config.forwards {
            let listener =
                TcpListener::bind(forward.listen)
                    .await
                    .map_err(|source| GatewayError::Listen {
                        listen: forward.listen,
                        to: forward.to.to_string(),
                        source,
                    })?;
            tracing::info!(listen = %forward.listen, to = %forward.to, "forwarding");
            tasks.spawn(serve_forward(
                listener,
                forward.clone(),
                net.clone(),
                far,
                config.clone(),
                counters.clone(),
            ));
        }
    }
    shutdown.await;
    tracing::info!("stopping");
    tasks.shutdown().await;
    if let Ok(net) = Arc::try_unwrap(net) {
        net.close(LINGER).await?;
    }
    Ok(counters)
}

async fn serve_forward(
    listener: TcpListener,
    forward: Forward,
    net: Arc<Net>,
    far: SocketAddr,
    config: GatewayConfig,
    counters: Arc<Counters>,
) {
    let mut relays = JoinSet::new();
    loop {
        let (lan, client) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(err) => {
                // Out of descriptors, for one: the next accept may work.
                tracing::warn!(listen = %forward.listen, %err, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let _ = lan.set_nodelay(true);
        let (net, to, counters) = (net.clone(), forward.to.clone(), counters.clone());
        let relay = config.relay;
        relays.spawn(async move {
            let outcome = relay_to_far(net, far, lan, to.clone(), relay).await;
            tracing::info!(%client, %to, %outcome, "connection ended");
            counters.count(outcome);
        });
        while relays.try_join_next().is_some() {}
    }
}
