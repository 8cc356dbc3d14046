//! The secure link (`scps_secure`, docs/secure-link.md) on a real path:
//! its clocks, and a live view of what it counts. A UDP path with one
//! peer and each channel of a bundle seal every datagram with it and
//! open every datagram by it, so that nothing from anyone without the
//! far gateway's key reaches the engine, or the bond, or a parser.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use scps_proto::time::Instant;
use scps_secure::{Opened, SecureConfig, SecureLink, SecureStats, Unsealed};

use crate::error::NetError;

/// A path's secure link: its keys and settings, and where it reports.
#[derive(Debug, Clone)]
pub struct LinkSecurity {
    pub config: SecureConfig,
    pub monitor: SecureMonitor,
}

/// A live view of a secure link's figures, from any task (a gateway's
/// metrics).
#[derive(Debug, Clone, Default)]
pub struct SecureMonitor(Arc<Mutex<SecureStats>>);

impl SecureMonitor {
    pub fn stats(&self) -> SecureStats {
        self.lock().clone()
    }

    fn lock(&self) -> MutexGuard<'_, SecureStats> {
        // Figures a panic elsewhere left are still worth reading.
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A secure link with the path's clock.
#[derive(Debug)]
pub(crate) struct Secured {
    link: SecureLink,
    origin: tokio::time::Instant,
    monitor: SecureMonitor,
}

impl Secured {
    pub(crate) fn new(security: LinkSecurity) -> Result<Secured, NetError> {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        let link = SecureLink::new(security.config, Instant::ZERO, wall)
            .map_err(|e| NetError::PathFailed(format!("the secure link: {e}")))?;
        Ok(Secured {
            link,
            origin: tokio::time::Instant::now(),
            monitor: security.monitor,
        })
    }

    fn now(&self) -> Instant {
        Instant::from_duration(self.origin.elapsed())
    }

    pub(crate) fn is_up(&self) -> bool {
        self.link.is_up(self.now())
    }

    /// See [`SecureLink::seal`].
    pub(crate) fn seal(&mut self, packet: &[u8], out: &mut Vec<u8>, otherwise: Unsealed) -> bool {
        let now = self.now();
        self.link.seal(now, packet, out, otherwise)
    }

    /// See [`SecureLink::open`].
    pub(crate) fn open(&mut self, datagram: &[u8]) -> Opened<'_> {
        let now = self.now();
        self.link.open(now, datagram)
    }

    /// Runs the link's timers if they are due.
    pub(crate) fn handle_timeout(&mut self) {
        let now = self.now();
        if self.link.poll_timeout(now).is_some_and(|at| at <= now) {
            self.link.handle_timeout(now);
        }
    }

    /// The next datagram of the link's own for the peer.
    pub(crate) fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.link.poll_transmit()
    }

    /// When the link's timers are due next.
    pub(crate) fn deadline(&self) -> Option<tokio::time::Instant> {
        self.link
            .poll_timeout(self.now())
            .map(|at| self.origin + at.as_duration())
    }

    /// Shows the link's figures to the monitor, and says when the link
    /// first comes up (an operator's sign that the keys match).
    pub(crate) fn publish(&self) {
        let stats = self.link.stats();
        let mut shown = self.monitor.lock();
        if *shown != *stats {
            if let (None, Some(after)) = (shown.first_session_after, stats.first_session_after) {
                tracing::info!(
                    after_ms = after.as_millis() as u64,
                    "the secure link is up: the far gateway proved its key"
                );
            }
            *shown = stats.clone();
        }
    }
}

/// Sleeps until `deadline`, or for ever without one.
pub(crate) async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
