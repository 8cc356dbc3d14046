//! Any node (`scps_node::Node`: a router, the Saratoga engine, and later
//! the gateway's relay and the bonding layer) on real packet paths, one
//! per interface, of any kinds side by side: a TUN device on one
//! interface and a UDP channel on the other is a router between a routed
//! network and an encapsulated link. The driver is the one [`crate::Net`]
//! runs on.
//!
//! A path with a fixed peer is what an interface of a node usually is
//! (one end of a link). A UDP path without one answers where each TCP
//! flow was last heard from, for the latest flows only: a node has no
//! connections for the path to learn peers by.
//!
//! A node that speaks UDP itself (the Saratoga engine's) runs on
//! [`crate::UdpSocketsPath`], kernel sockets whose datagrams it sees as
//! the IP/UDP packets that carried them.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use scps_node::{InterfaceId, Node};
use scps_proto::time::Instant;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::clock::Clock;
use crate::driver::{self, Guest, HostStats};
use crate::error::NetError;
use crate::net::capture_layer;
use crate::path::{BoxedPath, PacketPath};
use crate::shared::Shared;

/// What [`NodeHost::start`] may add around the paths.
#[derive(Debug, Clone, Default)]
pub struct HostOptions {
    /// Record every packet in and out of an interface in a pcap file.
    pub captures: Vec<(InterfaceId, PathBuf)>,
}

/// A node running on real packet paths; see the module documentation.
#[derive(Debug)]
pub struct NodeHost<N> {
    shared: Arc<Shared<Hosted<N>>>,
    stop: Arc<Notify>,
    driver: Option<JoinHandle<Result<HostStats, NetError>>>,
}

/// The node as the driver's guest.
#[derive(Debug)]
struct Hosted<N> {
    node: N,
    stopped: Option<String>,
}

impl<N: Node + Send + 'static> NodeHost<N> {
    /// Starts the driver on the current tokio runtime: interface `i` of the
    /// node sends and receives on `paths[i]`.
    pub fn start(node: N, paths: Vec<BoxedPath>, options: HostOptions) -> Result<NodeHost<N>, NetError> {
        let interfaces = node.interface_count();
        if paths.len() != interfaces {
            return Err(NetError::InterfacesMismatch {
                interfaces,
                paths: paths.len(),
            });
        }
        let clock = Clock::start();
        let mut paths: Vec<Option<BoxedPath>> = paths.into_iter().map(Some).collect();
        for (interface, file) in &options.captures {
            let Some(slot) = paths.get_mut(interface.index()) else {
                return Err(NetError::NoSuchInterface {
                    interface: *interface,
                    interfaces,
                });
            };
            if let Some(path) = slot.take() {
                *slot = Some(capture_layer(path, file, clock)?);
            }
        }
        let shared = Arc::new(Shared::new(Hosted { node, stopped: None }, clock));
        let stop = Arc::new(Notify::new());
        let driver = driver::spawn(
            shared.clone(),
            paths.into_iter().flatten().collect(),
            stop.clone(),
        );
        Ok(NodeHost {
            shared,
            stop,
            driver: Some(driver),
        })
    }

    /// Runs `f` on the node (to read its counters, or to change it: the
    /// driver looks at it again straight after).
    pub fn with<R>(&self, f: impl FnOnce(&mut N) -> R) -> R {
        let result = f(&mut self.shared.lock().node);
        self.shared.wake_driver.notify_one();
        result
    }

    /// The driver's clock: the instant the node is at now (for calls into
    /// it through [`NodeHost::with`] that take one).
    pub fn now(&self) -> Instant {
        self.shared.clock.now()
    }

    /// Waits until `check` finds what it looks for in the node, looking
    /// again each time the driver has moved packets or run timers;
    /// [`NetError::DriverStopped`] if the driver stops first.
    pub async fn wait_for<R>(&self, mut check: impl FnMut(&mut N) -> Option<R>) -> Result<R, NetError> {
        loop {
            let progress = self.shared.progress.notified();
            tokio::pin!(progress);
            progress.as_mut().enable();
            {
                let mut hosted = self.shared.lock();
                if let Some(found) = check(&mut hosted.node) {
                    return Ok(found);
                }
                if hosted.stopped.is_some() {
                    return Err(NetError::DriverStopped);
                }
            }
            progress.await;
        }
    }

    /// Stops the driver (what the node still had to send goes out first)
    /// and writes out the captures: what was counted at each interface.
    pub async fn stop(mut self) -> Result<HostStats, NetError> {
        self.stop.notify_one();
        match self.driver.take() {
            Some(driver) => driver
                .await
                .map_err(|e| NetError::PathFailed(format!("the driver task failed: {e}")))?,
            None => Err(NetError::DriverStopped),
        }
    }
}

impl<N> Drop for NodeHost<N> {
    fn drop(&mut self) {
        if let Some(driver) = self.driver.take() {
            driver.abort();
        }
    }
}

impl<N: Node + Send + 'static> Guest for Hosted<N> {
    fn handle_packet(
        &mut self,
        now: Instant,
        interface: InterfaceId,
        packet: &[u8],
        source: Option<SocketAddr>,
        path: &mut BoxedPath,
    ) {
        self.node.handle_packet(now, interface, packet);
        if let Some(source) = source {
            // No connections to learn by: keep the source among the latest
            // flows heard, so that what goes back to it finds its way.
            path.heard(packet, source, |_| false, true);
        }
    }

    fn path_news(&mut self, interface: InterfaceId, unreachable: Vec<Option<IpAddr>>, damaged: u64) {
        if !unreachable.is_empty() {
            tracing::debug!(%interface, reports = unreachable.len(), "peers reported unreachable");
        }
        if damaged > 0 {
            tracing::debug!(%interface, damaged, "damaged packets dropped");
        }
    }

    fn handle_timeout(&mut self, now: Instant, _paths: &mut [BoxedPath]) {
        self.node.handle_timeout(now);
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        self.node.poll_transmit(now, buf)
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.node.poll_timeout()
    }

    fn stopped(&mut self, reason: String) {
        tracing::debug!(%reason, "node host stopped");
        self.stopped = Some(reason);
    }
}
