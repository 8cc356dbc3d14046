//! The driver: one tokio task per endpoint that moves packets between the
//! path and the engine, runs the engine's timers, and wakes the
//! application's tasks. It sleeps until a packet arrives, the application
//! acts or the engine's next wake-up comes.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use scps_pcap::Capture;
use scps_proto::{Endpoint, EndpointConfig, EndpointStats};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::error::NetError;
use crate::path::{Captured, PacketPath, RecvBatch};
use crate::shared::Shared;
use crate::stream::{Listener, Stream};

/// Packets handled per turn of the loop before output is flushed: large
/// enough to amortise the lock and the wake-ups, small enough that ACKs
/// are not held back behind a long burst.
const BATCH: usize = 64;

/// How often the path forgets the peers of closed connections: what it
/// holds meanwhile is bounded by the connections of one interval.
const FORGET_INTERVAL: Duration = Duration::from_secs(1);

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
    driver: Option<JoinHandle<Result<NetStats, NetError>>>,
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
        let endpoint = Endpoint::new(options.endpoint, path.local_addrs())?;
        let capture = options.capture.as_deref().map(Capture::create).transpose()?;
        let clock = Clock::start();
        let shared = Arc::new(Shared::new(endpoint, clock));
        let stop = Arc::new(Notify::new());
        // Captured or not, one driver: the capture is a layer of the path.
        let driver = match capture {
            Some(capture) => tokio::spawn(run(
                shared.clone(),
                Captured::new(path, capture, clock),
                stop.clone(),
            )),
            None => tokio::spawn(run(shared.clone(), path, stop.clone())),
        };
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
        self.open(remote, None).await
    }

    /// Opens a connection to `remote` from `local` and waits for the
    /// handshake: `local` is one of our addresses or, for a transparent
    /// gateway, one in the prefixes the endpoint may act as
    /// ([`EndpointConfig::transparent`]), such as the address of the client
    /// it stands in for; port 0 picks a free ephemeral port. The kernel
    /// must route the peer's answers to `local` back to this path.
    pub async fn connect_from(&self, local: SocketAddr, remote: SocketAddr) -> Result<Stream, NetError> {
        self.open(remote, Some(local)).await
    }

    async fn open(&self, remote: SocketAddr, local: Option<SocketAddr>) -> Result<Stream, NetError> {
        let now = self.shared.clock.now();
        let handle = {
            let mut state = self.shared.lock();
            let handle = state.endpoint.connect(now, remote, local, None)?;
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
        match self.driver.take() {
            Some(driver) => driver
                .await
                .map_err(|e| NetError::PathFailed(format!("the driver task failed: {e}")))?,
            None => Err(NetError::DriverStopped),
        }
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

/// The driver task. Returns the counters when stopped, or the path's error.
async fn run<P: PacketPath>(shared: Arc<Shared>, path: P, stop: Arc<Notify>) -> Result<NetStats, NetError> {
    let mut driver = Driver {
        shared: shared.clone(),
        path,
        counters: NetStats::default(),
        out: (0..BATCH).map(|_| Vec::with_capacity(2048)).collect(),
        received: RecvBatch::new(),
        forget_at: scps_proto::time::Instant::ZERO,
        drops_logged: Default::default(),
    };
    let result = driver.run(&stop).await;
    let reason = match &result {
        Ok(()) => "the endpoint was closed".to_owned(),
        Err(err) => err.to_string(),
    };
    shared.lock().stop(reason);
    shared.progress.notify_waiters();
    let finished = driver.path.finish();
    result?;
    finished?;
    let mut stats = driver.counters;
    stats.endpoint = shared.lock().endpoint.stats().clone();
    stats.unroutable = driver.path.unroutable();
    stats.peers_held = driver.path.peers_held();
    Ok(stats)
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

struct Driver<P> {
    shared: Arc<Shared>,
    path: P,
    counters: NetStats,
    /// Packets taken from the engine, sent after the lock is released.
    out: Vec<Vec<u8>>,
    received: RecvBatch,
    /// When the path next forgets what it learned for connections that
    /// are gone.
    forget_at: scps_proto::time::Instant,
    /// The endpoint's drops by cause as last logged.
    drops_logged: std::collections::BTreeMap<&'static str, u64>,
}

impl<P: PacketPath> Driver<P> {
    async fn run(&mut self, stop: &Notify) -> Result<(), NetError> {
        loop {
            let (sent, wake_at) = self.flush().await?;
            self.report_unreachable();
            self.shared.progress.notify_waiters();
            if sent == BATCH {
                // More output may be waiting: take it before sleeping, but
                // let arrived packets in first.
                self.path.try_recv(&mut self.received)?;
                self.receive();
                continue;
            }
            let deadline = wake_at.map(|at| self.shared.clock.deadline(at));
            tokio::select! {
                biased;
                _ = stop.notified() => {
                    // What the application did last (a FIN, a reset) still
                    // goes out.
                    while self.flush().await?.0 == BATCH {}
                    return Ok(());
                }
                received = self.path.recv(&mut self.received) => {
                    received?;
                    self.receive();
                }
                _ = self.shared.wake_driver.notified() => {}
                _ = sleep_until(deadline) => {}
            }
        }
    }

    /// Hands the peers the path found unreachable (on receiving or on
    /// sending) to the engine.
    fn report_unreachable(&mut self) {
        let unreachable = self.path.take_unreachable();
        if unreachable.is_empty() {
            return;
        }
        let mut state = self.shared.lock();
        for peer in unreachable {
            match peer {
                Some(peer) => tracing::debug!(%peer, "reported unreachable"),
                None => tracing::debug!("the path's peer reported unreachable"),
            }
            state.endpoint.report_unreachable(peer);
        }
    }

    /// Hands the packets received to the engine.
    fn receive(&mut self) {
        self.report_unreachable();
        let damaged = self.path.take_damaged();
        if self.received.is_empty() && damaged == 0 {
            return;
        }
        let mut state = self.shared.lock();
        state.endpoint.count_dropped_by_path("frame_check", damaged);
        let now = self.shared.clock.now();
        for (packet, source) in self.received.packets() {
            self.counters.packets_in += 1;
            let answers = state.endpoint.answers_waiting();
            state.endpoint.handle_packet(now, packet);
            if let Some(source) = source {
                let endpoint = &state.endpoint;
                let answered = endpoint.answers_waiting() > answers;
                self.path
                    .heard(packet, source, |tuple| endpoint.has_connection(tuple), answered);
            }
        }
        state.dispatch_events();
        log_new_drops(&mut self.drops_logged, state.endpoint.stats());
    }

    /// Runs due timers, sends up to a batch of the engine's packets, and
    /// returns how many were sent and when the engine next wants to run.
    async fn flush(&mut self) -> Result<(usize, Option<scps_proto::time::Instant>), NetError> {
        let now = self.shared.clock.now();
        let (count, wake_at) = {
            let mut state = self.shared.lock();
            state.endpoint.handle_timeout(now);
            if now >= self.forget_at {
                let endpoint = &state.endpoint;
                self.path.forget_closed(|tuple| endpoint.has_connection(tuple));
                self.forget_at = now + FORGET_INTERVAL;
            }
            let mut count = 0;
            while count < BATCH && state.endpoint.poll_transmit(now, &mut self.out[count]) {
                count += 1;
            }
            state.dispatch_events();
            (count, state.endpoint.poll_timeout())
        };
        self.path.send(&self.out[..count]).await?;
        self.counters.packets_out += count as u64;
        Ok((count, wake_at))
    }
}

/// Logs the endpoint's drops since they were `logged`, by cause (a flood of
/// bad packets is a line per cause and batch, at `debug`).
fn log_new_drops(
    logged: &mut std::collections::BTreeMap<&'static str, u64>,
    stats: &scps_proto::EndpointStats,
) {
    if stats.total_dropped() == logged.values().sum::<u64>() {
        return;
    }
    for (&cause, &count) in &stats.drops {
        let before = logged.insert(cause, count).unwrap_or(0);
        if count > before {
            tracing::debug!(cause, dropped = count - before, total = count, "packets dropped");
        }
    }
}
