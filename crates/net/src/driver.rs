//! The driver: one tokio task per hosted node that moves packets between
//! the node and its paths (one per interface), runs the node's timers, and
//! lets the tasks that use the node know it has moved on. It sleeps until
//! a packet arrives on any path, a user of the node acts, or the node's
//! next wake-up comes: it never polls.
//!
//! One loop for every kind of node: what a kind needs beyond packets and
//! time (an endpoint's UDP peers learned per connection, its events waking
//! streams) is its [`Guest`] implementation. [`crate::Net`] hosts an
//! endpoint on one path, [`crate::NodeHost`] any `scps_node::Node` on
//! several.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::task::Poll;

use scps_node::InterfaceId;
use scps_proto::time::Instant;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::error::NetError;
use crate::path::{BoxedPath, PacketPath, RecvBatch};
use crate::shared::Shared;

/// Packets handled per turn of the loop before output is flushed: large
/// enough to amortise the lock and the wake-ups, small enough that ACKs
/// are not held back behind a long burst.
const BATCH: usize = 64;

/// What the driver hosts, under the lock it shares with the node's users.
pub(crate) trait Guest: Send + 'static {
    /// `packet` arrived on `interface` (from `source`, on paths whose
    /// packets have one), which `path` carries.
    fn handle_packet(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        packet: &[u8],
        source: Option<SocketAddr>,
        path: &mut BoxedPath,
    );

    /// What the path of `interface` found since last asked: peers
    /// reported unreachable, packets dropped as damaged.
    fn path_news(&mut self, interface: InterfaceId, unreachable: Vec<Option<IpAddr>>, damaged: u64);

    /// Runs what is due at `now`.
    fn handle_timeout(&mut self, now: Instant, paths: &mut [BoxedPath]);

    /// The next packet to send and its interface, as `Node::poll_transmit`.
    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId>;

    fn poll_timeout(&mut self) -> Option<Instant>;

    /// The driver finished handling a batch of packets or timers.
    fn end_of_round(&mut self) {}

    /// The driver has stopped, for `reason`: users waiting must learn it.
    fn stopped(&mut self, reason: String);
}

/// What the driver counted at one interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterfaceStats {
    pub packets_in: u64,
    pub packets_out: u64,
    /// Packets the path dropped as damaged (the UDP frame check).
    pub damaged: u64,
    /// Packets the path had nowhere to send (UDP without a known peer).
    pub unroutable: u64,
    /// Peers whose addresses the path held at the end.
    pub peers_held: usize,
}

/// What the driver counted, per interface.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostStats {
    pub interfaces: Vec<InterfaceStats>,
    /// Packets the node gave for an interface it does not have (a bug in
    /// the node), dropped.
    pub misdirected: u64,
}

/// Starts the driver of `shared`'s guest over `paths` (interface `i` on
/// `paths[i]`); it runs until `stop` is notified or a path fails.
pub(crate) fn spawn<G: Guest>(
    shared: Arc<Shared<G>>,
    paths: Vec<BoxedPath>,
    stop: Arc<Notify>,
) -> JoinHandle<Result<HostStats, NetError>> {
    tokio::spawn(run(shared, paths, stop))
}

async fn run<G: Guest>(
    shared: Arc<Shared<G>>,
    paths: Vec<BoxedPath>,
    stop: Arc<Notify>,
) -> Result<HostStats, NetError> {
    let interfaces = paths.len();
    let mut driver = Driver {
        shared: shared.clone(),
        batches: (0..interfaces).map(|_| RecvBatch::new()).collect(),
        out: vec![Vec::new(); interfaces],
        spare: Vec::new(),
        stats: HostStats {
            interfaces: vec![InterfaceStats::default(); interfaces],
            misdirected: 0,
        },
        paths,
    };
    let result = driver.run(&stop).await;
    let reason = match &result {
        Ok(()) => "the node was closed".to_owned(),
        Err(err) => err.to_string(),
    };
    shared.lock().stopped(reason);
    shared.progress.notify_waiters();
    let mut finished = Ok(());
    for path in &mut driver.paths {
        finished = finished.and(path.finish());
    }
    result?;
    finished?;
    for (stats, path) in driver.stats.interfaces.iter_mut().zip(&driver.paths) {
        stats.unroutable = path.unroutable();
        stats.peers_held = path.peers_held();
    }
    Ok(driver.stats)
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// Waits until one of the paths has received: its index, and how the
/// receiving went. The others' receptions are dropped unfinished, which
/// every path allows (their `recv` only waits for readiness, then reads).
async fn any_received(paths: &mut [BoxedPath], batches: &mut [RecvBatch]) -> (usize, Result<(), NetError>) {
    let mut receptions: Vec<_> = paths
        .iter_mut()
        .zip(batches.iter_mut())
        .map(|(path, batch)| path.dyn_recv(batch))
        .collect();
    std::future::poll_fn(|cx| {
        for (i, reception) in receptions.iter_mut().enumerate() {
            if let Poll::Ready(result) = reception.as_mut().poll(cx) {
                return Poll::Ready((i, result));
            }
        }
        Poll::Pending
    })
    .await
}

struct Driver<G> {
    shared: Arc<Shared<G>>,
    paths: Vec<BoxedPath>,
    batches: Vec<RecvBatch>,
    /// Packets taken from the node, per interface, sent after the lock is
    /// released.
    out: Vec<Vec<Vec<u8>>>,
    /// Buffers of packets sent, for the next ones.
    spare: Vec<Vec<u8>>,
    stats: HostStats,
}

impl<G: Guest> Driver<G> {
    async fn run(&mut self, stop: &Notify) -> Result<(), NetError> {
        loop {
            let (sent, wake_at) = self.flush().await?;
            self.take_news();
            self.shared.progress.notify_waiters();
            if sent == BATCH {
                // More output may be waiting: take it before sleeping, but
                // let arrived packets in first.
                self.try_recv_except(None)?;
                self.receive();
                continue;
            }
            let deadline = wake_at.map(|at| self.shared.clock.deadline(at));
            tokio::select! {
                biased;
                _ = stop.notified() => {
                    // What the node's users did last (a FIN, a reset)
                    // still goes out.
                    while self.flush().await?.0 == BATCH {}
                    return Ok(());
                }
                (received_on, result) = any_received(&mut self.paths, &mut self.batches) => {
                    result?;
                    // The other paths may have packets too: none waits
                    // behind a busy one.
                    self.try_recv_except(Some(received_on))?;
                    self.receive();
                }
                _ = self.shared.wake_driver.notified() => {}
                _ = sleep_until(deadline) => {}
            }
        }
    }

    /// Takes what has already arrived on every path but `except` (whose
    /// batch holds what it just received).
    fn try_recv_except(&mut self, except: Option<usize>) -> Result<(), NetError> {
        for (i, (path, batch)) in self.paths.iter_mut().zip(&mut self.batches).enumerate() {
            if Some(i) != except {
                path.try_recv(batch)?;
            }
        }
        Ok(())
    }

    /// Hands what the paths found out (on receiving or on sending) to the
    /// guest.
    fn take_news(&mut self) {
        let mut guest = None;
        for (i, path) in self.paths.iter_mut().enumerate() {
            let unreachable = path.take_unreachable();
            let damaged = path.take_damaged();
            if unreachable.is_empty() && damaged == 0 {
                continue;
            }
            self.stats.interfaces[i].damaged += damaged;
            guest
                .get_or_insert_with(|| self.shared.lock())
                .path_news(interface(i), unreachable, damaged);
        }
    }

    /// Hands the packets received to the guest.
    fn receive(&mut self) {
        self.take_news();
        if self.batches.iter().all(RecvBatch::is_empty) {
            return;
        }
        let mut guest = self.shared.lock();
        let now = self.shared.clock.now();
        for (i, (path, batch)) in self.paths.iter_mut().zip(&mut self.batches).enumerate() {
            for (packet, source) in batch.packets() {
                self.stats.interfaces[i].packets_in += 1;
                guest.handle_packet(now, interface(i), packet, source, path);
            }
            batch.clear();
        }
        guest.end_of_round();
    }

    /// Runs due timers, sends up to a batch of the node's packets, and
    /// returns how many were sent and when the node next wants to run.
    async fn flush(&mut self) -> Result<(usize, Option<Instant>), NetError> {
        let now = self.shared.clock.now();
        let (count, wake_at) = {
            let mut guest = self.shared.lock();
            guest.handle_timeout(now, &mut self.paths);
            let mut count = 0;
            while count < BATCH {
                let mut buf = self.spare.pop().unwrap_or_else(|| Vec::with_capacity(2048));
                let Some(leaving) = guest.poll_transmit(now, &mut buf) else {
                    self.spare.push(buf);
                    break;
                };
                count += 1;
                match self.out.get_mut(leaving.index()) {
                    Some(queue) => queue.push(buf),
                    None => {
                        self.stats.misdirected += 1;
                        tracing::warn!(%leaving, interfaces = self.paths.len(), "packet for a missing interface dropped");
                        self.spare.push(buf);
                    }
                }
            }
            guest.end_of_round();
            (count, guest.poll_timeout())
        };
        for (i, (path, queue)) in self.paths.iter_mut().zip(&mut self.out).enumerate() {
            if queue.is_empty() {
                continue;
            }
            path.send(queue).await?;
            self.stats.interfaces[i].packets_out += queue.len() as u64;
            self.spare.append(queue);
        }
        Ok((count, wake_at))
    }
}

fn interface(index: usize) -> InterfaceId {
    InterfaceId(u16::try_from(index).unwrap_or(u16::MAX))
}
