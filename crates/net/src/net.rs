//! An endpoint of the engine on a real packet path: [`Net`] starts the
//! driver (`driver.rs`) with the endpoint as its guest, and hands out
//! streams and listeners that share the endpoint with it.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use scps_pcap::PcapTap;
use scps_proto::{Endpoint, EndpointConfig, EndpointStats};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::driver::{self, HostStats};
use crate::error::NetError;
use crate::path::{BoxedPath, PacketPath, Tapped};
use crate::shared::{Shared, State};
use crate::stream::{Listener, Stream};

#[derive(Debug, Clone)]
pub struct NetOptions {
    pub endpoint: EndpointConfig,
    /// Record every packet in and out of the endpoint here.
    pub capture: Option<PathBuf>,
    /// How long [`Net::connect`] waits for the handshake before giving up
    /// (the engine's own SYN retransmission limit may end it sooner).
    pub connect_timeout: Duration,
}

impl Default for NetOptions {
    fn default() -> Self {
        NetOptions {
            endpoint: EndpointConfig::default(),
            capture: None,
            connect_timeout: Duration::from_secs(20),
        }
    }
}

/// What the driver counted, beyond the endpoint's own figures.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NetStats {
    pub endpoint: EndpointStats,
    pub packets_in: u64,
    pub packets_out: u64,
    /// Packets the path had nowhere to send (UDP without a known peer).
    pub unroutable: u64,
    /// Peers whose addresses the path held at the end (UDP without a
    /// fixed peer: one per connection, and the latest packets that opened
    /// none, to answer them).
    pub peers_held: usize,
}

/// Reads an endpoint's counters (packets, drops by cause, SYN cookies)
/// from any task; see [`Net::watch`].
#[derive(Debug, Clone)]
pub struct EndpointWatch {
    shared: Arc<Shared>,
}

impl EndpointWatch {
    pub fn stats(&self) -> EndpointStats {
        self.shared.lock().endpoint.stats().clone()
    }
}

/// An endpoint of the engine running on a real packet path.
#[derive(Debug)]
pub struct Net {
    shared: Arc<Shared>,
    stop: Arc<Notify>,
    driver: Option<JoinHandle<Result<HostStats, NetError>>>,
    connect_timeout: Duration,
}

impl Net {
    /// Starts the driver on the current tokio runtime.
    pub fn start(path: impl PacketPath, mut options: NetOptions) -> Result<Net, NetError> {
        if options.endpoint.secret == EndpointConfig::default().secret {
            // RFC 6528: initial sequence numbers must not be predictable
            // off-path; on a real network the key is random.
            options.endpoint.secret = random_secret();
        }
        let mut endpoint = Endpoint::new(options.endpoint, path.local_addrs())?;
        let clock = Clock::start();
        if let Some(capacity) = path.capacity() {
            endpoint.follow_path_capacity(capacity, clock.now());
        }
        let mut path: BoxedPath = Box::new(path);
        if let Some(capture) = &options.capture {
            // Captured or not, one driver: the capture is a layer of the
            // path.
            path = capture_layer(path, capture, clock)?;
        }
        let shared = Arc::new(Shared::new(State::new(endpoint), clock));
        let stop = Arc::new(Notify::new());
        let driver = driver::spawn(shared.clone(), vec![path], stop.clone());
        Ok(Net {
            shared,
            stop,
            driver: Some(driver),
            connect_timeout: options.connect_timeout,
        })
    }

    pub(crate) fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    pub fn local_addrs(&self) -> Vec<IpAddr> {
        self.shared.lock().endpoint.local_addrs().to_vec()
    }

    pub fn endpoint_stats(&self) -> EndpointStats {
        self.shared.lock().endpoint.stats().clone()
    }

    /// The connections the endpoint holds now, open or closing.
    pub fn connection_count(&self) -> usize {
        self.shared.lock().endpoint.connection_count()
    }

    /// A handle that reads the endpoint's counters from any task.
    pub fn watch(&self) -> EndpointWatch {
        EndpointWatch {
            shared: self.shared.clone(),
        }
    }

    /// Accepts connections to `local` (unspecified address: any of ours).
    pub fn listen(&self, local: SocketAddr) -> Result<Listener, NetError> {
        self.shared.lock().endpoint.listen(local, None)?;
        Ok(Listener::new(self.shared.clone(), local))
    }

    /// Opens a connection to `remote` from one of our addresses and an
    /// ephemeral port, and waits for the handshake.
    pub async fn connect(&self, remote: SocketAddr) -> Result<Stream, NetError> {
        self.open(remote, None, None).await
    }

    /// Opens a connection to `remote` from `local` and waits for the
    /// handshake: `local` is one of our addresses or, for a transparent
    /// gateway, one in the prefixes the endpoint may act as
    /// ([`EndpointConfig::transparent`]), such as the address of the client
    /// it stands in for; port 0 picks a free ephemeral port. The kernel
    /// must route the peer's answers to `local` back to this path.
    pub async fn connect_from(&self, local: SocketAddr, remote: SocketAddr) -> Result<Stream, NetError> {
        self.open(remote, Some(local), None).await
    }

    /// As [`Net::connect_from`], the connection configured by `config`
    /// instead of the endpoint's default (a gateway retrying without the
    /// SCPS capabilities option, for one).
    pub async fn connect_from_with(
        &self,
        local: SocketAddr,
        remote: SocketAddr,
        config: scps_proto::Config,
    ) -> Result<Stream, NetError> {
        self.open(remote, Some(local), Some(config)).await
    }

    /// The configuration of connections not given their own.
    pub fn connection_config(&self) -> scps_proto::Config {
        self.shared.lock().endpoint.default_config().clone()
    }

    async fn open(
        &self,
        remote: SocketAddr,
        local: Option<SocketAddr>,
        config: Option<scps_proto::Config>,
    ) -> Result<Stream, NetError> {
        let now = self.shared.clock.now();
        let handle = {
            let mut state = self.shared.lock();
            let handle = state.endpoint.connect(now, remote, local, config)?;
            state.track(handle);
            handle
        };
        self.shared.wake_driver.notify_one();
        // The stream owns the connection from here: dropped on failure, it
        // is closed.
        let stream = Stream::new(self.shared.clone(), handle);
        let handshake = std::future::poll_fn(|cx| {
            let mut state = self.shared.lock();
            if state.stopped.is_some() {
                return std::task::Poll::Ready(Err(NetError::DriverStopped));
            }
            let connection = state.endpoint.connection(handle);
            if let Some(source) = connection.and_then(|c| c.error()) {
                return std::task::Poll::Ready(Err(NetError::Connection { remote, source }));
            }
            if connection.is_some_and(|c| c.state().is_synchronized()) {
                return std::task::Poll::Ready(Ok(()));
            }
            state.wait_write(handle, cx.waker());
            std::task::Poll::Pending
        });
        match tokio::time::timeout(self.connect_timeout, handshake).await {
            Ok(Ok(())) => Ok(stream),
            Ok(Err(err)) => Err(err),
            Err(_) => {
                stream.abort();
                Err(NetError::ConnectTimedOut {
                    remote,
                    waited: self.connect_timeout,
                })
            }
        }
    }

    /// Waits (at most `linger`) until every connection the application let
    /// go has finished closing, then stops the driver and writes out the
    /// capture. Streams the application still holds are not waited for.
    pub async fn close(mut self, linger: Duration) -> Result<NetStats, NetError> {
        let _ = tokio::time::timeout(linger, async {
            loop {
                let progress = self.shared.progress.notified();
                if self.shared.lock().all_closed() {
                    return;
                }
                progress.await;
            }
        })
        .await;
        self.stop.notify_one();
        let host = match self.driver.take() {
            Some(driver) => driver
                .await
                .map_err(|e| NetError::PathFailed(format!("the driver task failed: {e}")))??,
            None => return Err(NetError::DriverStopped),
        };
        let path = host.interfaces.first().cloned().unwrap_or_default();
        Ok(NetStats {
            endpoint: self.shared.lock().endpoint.stats().clone(),
            packets_in: path.packets_in,
            packets_out: path.packets_out,
            unroutable: path.unroutable,
            peers_held: path.peers_held,
        })
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        if let Some(driver) = self.driver.take() {
            driver.abort();
        }
    }
}

fn random_secret() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    // std's hasher keys come from the operating system's random source.
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    hasher.finish()
}

/// Wraps `path` in a capture to `file`, stamped with the wall clock.
pub(crate) fn capture_layer(path: BoxedPath, file: &Path, clock: Clock) -> Result<BoxedPath, NetError> {
    let tap = PcapTap::create(file)?.with_epoch(clock.wall_at_start());
    Ok(Box::new(Tapped::new(path, Box::new(tap), clock)))
}
