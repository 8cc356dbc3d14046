//! What a gateway counts, and how many split connections it holds at
//! once: each one holds up to two relay buffers, so the limit (from
//! `relay.max_connections` and `relay.memory`) bounds the gateway's
//! memory. A connection beyond it is turned away at once (a LAN
//! connection reset, a link connection aborted), counted and logged,
//! never queued.
//!
//! The counts live here once: the Prometheus metrics (`metrics.rs`),
//! `scps status` and the summary a stopping gateway prints all read
//! them through [`Counters::snapshot`].

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use scps_relay::{OpenFailure, Outcome, Resource};
use serde::{Deserialize, Serialize};

use crate::clients::{Clients, Refusal, RefusalLog};
use crate::descriptors::{Spare, out_of_descriptors};
use crate::pump::Connection;

/// The relay tasks one listener started (each holds its own place, a
/// [`Permit`], and counts its end through it). A task that ended keeps
/// its allocation, as large as its future, until it is reaped: those are
/// reaped while the listener waits for its next connection, so that the
/// memory of a burst's connections is given back when they end, not when
/// the next one comes.
#[derive(Debug, Default)]
pub(crate) struct Relays(tokio::task::JoinSet<()>);

impl Relays {
    pub(crate) fn spawn(&mut self, relay: impl Future<Output = ()> + Send + 'static) {
        self.0.spawn(relay);
    }

    /// Waits for `next` (the listener's next connection), reaping the
    /// relays that end meanwhile.
    pub(crate) async fn reap_until<T>(&mut self, next: impl Future<Output = T>) -> T {
        let mut next = std::pin::pin!(next);
        loop {
            tokio::select! {
                value = &mut next => return value,
                Some(_) = self.0.join_next(), if !self.0.is_empty() => {}
            }
        }
    }
}

/// The pause after a failed accept (out of descriptors, for one) before
/// the next.
pub(crate) const ACCEPT_RETRY: std::time::Duration = std::time::Duration::from_millis(100);

/// The next LAN connection on `listener` (named `name` in logs) from one
/// of `clients`: one from anyone else is reset, counted and logged
/// (`clients.rs`).
pub(crate) async fn accept_client(
    listener: &tokio::net::TcpListener,
    (name, clients): (&str, &Clients),
    counters: &Counters,
) -> (tokio::net::TcpStream, std::net::SocketAddr) {
    loop {
        match listener.accept().await {
            Ok((lan, client)) if !clients.admits(client.ip()) => {
                counters.turn_away(name, client, Refusal::NotAllowed, "not in the listener's clients");
                lan.reset();
            }
            Ok((lan, client)) => {
                let _ = lan.set_nodelay(true);
                return (lan, client);
            }
            Err(err) if out_of_descriptors(&err) => match counters.spare.turn_away_one(listener).await {
                Some(client) => counters.turn_away(
                    name,
                    client,
                    Refusal::NoDescriptors,
                    "out of file descriptors (the open-file limit): connection reset",
                ),
                None => tokio::time::sleep(ACCEPT_RETRY).await,
            },
            Err(err) => {
                tracing::warn!(%err, "accept failed");
                tokio::time::sleep(ACCEPT_RETRY).await;
            }
        }
    }
}

/// [`accept_client`], with a place among the split connections the
/// gateway holds: one beyond the limit is reset at once.
pub(crate) async fn accept_admitted(
    listener: &tokio::net::TcpListener,
    (name, clients): (&str, &Clients),
    counters: &Arc<Counters>,
) -> (tokio::net::TcpStream, std::net::SocketAddr, Permit) {
    loop {
        let (lan, client) = accept_client(listener, (name, clients), counters).await;
        match counters.admit(name, client) {
            Some(permit) => return (lan, client, permit),
            None => lan.reset(),
        }
    }
}

#[derive(Debug)]
pub struct Counters {
    /// Split connections by how they ended, since the start.
    pub closed: AtomicU64,
    pub reset: AtomicU64,
    pub refused: AtomicU64,
    pub idle: AtomicU64,
    /// Link connections the far gateway turned down (malformed, not
    /// allowed, destination unreachable).
    pub turned_down: AtomicU64,
    /// Connections turned away because the gateway held its limit.
    pub over_limit: AtomicU64,
    /// Connections reset because no route carries them (the interception
    /// or steering of a table that a reload has just replaced, or a link
    /// connection the far side sent that no route of ours covers).
    pub no_route: AtomicU64,
    /// Link connections opened again without the SCPS capabilities
    /// option after an attempt with it got no answer or a reset.
    pub plain_retries: AtomicU64,
    /// SOCKS5 requests not relayed (malformed, or the far end could not
    /// be reached), each answered with SOCKS5's reply where it has one.
    pub socks_refused: AtomicU64,
    /// Clients turned away by a listener before anything was relayed for
    /// them: not in its allow-list, or not authenticated (SOCKS5).
    pub client_not_allowed: AtomicU64,
    pub client_not_authenticated: AtomicU64,
    /// SOCKS5 clients refused before their handshake began: their source
    /// had its share of handshakes under way, or all the places were
    /// held (`handshakes.rs`).
    pub handshakes_of_source: AtomicU64,
    pub handshakes_full: AtomicU64,
    /// SOCKS5 clients that did not finish their handshake within the
    /// deadline.
    pub handshake_timed_out: AtomicU64,
    /// Connections this gateway could not open, or accept, for want of a
    /// local port or a file descriptor.
    pub no_local_port: AtomicU64,
    pub no_descriptors: AtomicU64,
    refusal_log: RefusalLog,
    /// Kept for turning a connection away when descriptors run out.
    spare: Spare,
    active: AtomicUsize,
    limit: usize,
    /// Woken each time a place is given back.
    released: tokio::sync::Notify,
}

/// One split connection's place among those the gateway holds; given
/// back when dropped. The connection's end is counted through it
/// ([`Permit::end`]); one dropped before its end was counted (its relay
/// ended by the gateway stopping, which closes its sockets with a reset)
/// is counted reset, so that every connection held is counted once.
#[derive(Debug)]
pub struct Permit {
    counters: Arc<Counters>,
    counted: bool,
}

impl Permit {
    /// The connection ended so: counted, and its place given back.
    pub(crate) fn end(mut self, outcome: Outcome) {
        self.counters.count(outcome);
        self.counted = true;
    }

    /// The connection ended in a way counted elsewhere (a link
    /// connection turned down, a SOCKS5 request not relayed).
    pub(crate) fn end_counted_elsewhere(mut self) {
        self.counted = true;
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        if !self.counted {
            self.counters.reset.fetch_add(1, Ordering::Relaxed);
        }
        self.counters.active.fetch_sub(1, Ordering::Relaxed);
        self.counters.released.notify_waiters();
    }
}

impl Counters {
    /// Counters for a gateway that holds at most `limit` split
    /// connections at once.
    pub fn new(limit: usize) -> Counters {
        Counters {
            closed: AtomicU64::new(0),
            reset: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            idle: AtomicU64::new(0),
            turned_down: AtomicU64::new(0),
            over_limit: AtomicU64::new(0),
            no_route: AtomicU64::new(0),
            socks_refused: AtomicU64::new(0),
            client_not_allowed: AtomicU64::new(0),
            client_not_authenticated: AtomicU64::new(0),
            handshakes_of_source: AtomicU64::new(0),
            handshakes_full: AtomicU64::new(0),
            handshake_timed_out: AtomicU64::new(0),
            no_local_port: AtomicU64::new(0),
            no_descriptors: AtomicU64::new(0),
            refusal_log: RefusalLog::default(),
            spare: Spare::default(),
            plain_retries: AtomicU64::new(0),
            active: AtomicUsize::new(0),
            limit,
            released: tokio::sync::Notify::new(),
        }
    }

    /// A place for one more split connection, from `client` on
    /// `listener`, or `None` (counted, and logged once a minute) at the
    /// limit.
    pub fn admit(self: &Arc<Self>, listener: &str, client: std::net::SocketAddr) -> Option<Permit> {
        let admitted = self
            .active
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |active| {
                (active < self.limit).then_some(active + 1)
            })
            .is_ok();
        if admitted {
            return Some(Permit {
                counters: self.clone(),
                counted: false,
            });
        }
        let detail = format!("{} split connections held, the limit", self.limit);
        self.turn_away(listener, client, Refusal::ConnectionLimit, &detail);
        None
    }

    /// Counts `client`, turned away by `listener` for `refusal`, and logs
    /// it if it is news (once a minute per cause, and per source for a
    /// cause that is the client's).
    pub(crate) fn turn_away(
        &self,
        listener: &str,
        client: std::net::SocketAddr,
        refusal: Refusal,
        detail: &str,
    ) {
        self.note_refusal(listener, Some(client), refusal, detail);
    }

    /// Counts a refusal under its cause, and logs it if it is news.
    fn note_refusal(
        &self,
        listener: &str,
        client: Option<std::net::SocketAddr>,
        refusal: Refusal,
        detail: &str,
    ) {
        let counter = match refusal {
            Refusal::NotAllowed => &self.client_not_allowed,
            Refusal::NotAuthenticated => &self.client_not_authenticated,
            Refusal::SourceHandshakes => &self.handshakes_of_source,
            Refusal::AllHandshakes => &self.handshakes_full,
            Refusal::ConnectionLimit => &self.over_limit,
            Refusal::NoLocalPort => &self.no_local_port,
            Refusal::NoDescriptors => &self.no_descriptors,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.refusal_log.refused(listener, client, refusal, detail);
    }

    /// Split connections held now.
    pub fn active(&self) -> usize {
        self.active.load(Ordering::Relaxed)
    }

    /// Waits until fewer than `count` split connections are held.
    pub async fn wait_active_below(&self, count: usize) {
        loop {
            let released = self.released.notified();
            tokio::pin!(released);
            released.as_mut().enable();
            if self.active() < count {
                return;
            }
            released.await;
        }
    }

    fn count(&self, outcome: Outcome) {
        let counter = match outcome {
            Outcome::Closed => &self.closed,
            Outcome::Reset(_) => &self.reset,
            Outcome::OpenFailed(OpenFailure::OutOf(resource)) => {
                // Not the far end's doing: counted under its cause.
                let refusal = match resource {
                    Resource::LocalPorts => Refusal::NoLocalPort,
                    Resource::Descriptors => Refusal::NoDescriptors,
                };
                return self.note_refusal("relay", None, refusal, "a connection could not be opened");
            }
            Outcome::OpenFailed(_) => &self.refused,
            Outcome::Idle => &self.idle,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The limit of split connections held at once.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Every count, read now.
    pub fn snapshot(&self) -> CountersSnapshot {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        CountersSnapshot {
            held: self.active() as u64,
            limit: self.limit as u64,
            closed: get(&self.closed),
            reset: get(&self.reset),
            refused: get(&self.refused),
            idle: get(&self.idle),
            over_limit: get(&self.over_limit),
            no_route: get(&self.no_route),
            turned_down: get(&self.turned_down),
            socks_refused: get(&self.socks_refused),
            client_not_allowed: get(&self.client_not_allowed),
            client_not_authenticated: get(&self.client_not_authenticated),
            handshakes_of_source: get(&self.handshakes_of_source),
            handshakes_full: get(&self.handshakes_full),
            handshake_timed_out: get(&self.handshake_timed_out),
            no_local_port: get(&self.no_local_port),
            no_descriptors: get(&self.no_descriptors),
            plain_retries: get(&self.plain_retries),
        }
    }

    /// One line for the operator: every count.
    pub fn summary(&self) -> String {
        self.snapshot().summary()
    }
}

/// What sets the limit of split connections held at once (`counters.limit`
/// in the status): the least of `relay.max_connections`, the connections
/// `relay.memory` holds at two relay buffers each, and those the open-file
/// limit leaves room for (one descriptor each, `descriptors.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnectionLimit {
    /// The limit: the least of the three.
    pub limit: u64,
    /// `relay.max_connections`, or its default.
    pub max_connections: u64,
    /// `relay.memory`, or its default.
    pub memory_bytes: u64,
    /// The largest relay buffer a connection may have (`relay.buffer`, or
    /// a route's if larger): each connection holds two, one each way.
    pub buffer_bytes: u64,
    /// `memory_bytes / (2 × buffer_bytes)`.
    pub memory_allows: u64,
    /// The open-file limit the gateway runs with (raised to the hard
    /// limit at start), and the connections it leaves room for beside the
    /// descriptors kept for everything else.
    pub open_file_limit: u64,
    pub descriptors_allow: u64,
}

impl ConnectionLimit {
    /// The limit of `max_connections` and `memory` at two `buffer`s per
    /// connection, within the open-file limit `open_file_limit`.
    pub fn new(max_connections: usize, memory: u64, buffer: u64, open_file_limit: u64) -> ConnectionLimit {
        let memory_allows = memory / (2 * buffer.max(1));
        let descriptors_allow = crate::descriptors::connections_within(open_file_limit) as u64;
        let max_connections = max_connections as u64;
        ConnectionLimit {
            limit: max_connections.min(memory_allows).min(descriptors_allow),
            max_connections,
            memory_bytes: memory,
            buffer_bytes: buffer,
            memory_allows,
            open_file_limit,
            descriptors_allow,
        }
    }

    /// Says which of the three sets the limit, and what the others are:
    /// `the most relay.memory = 1024 MiB allows at 2 × 586 KiB per
    /// connection; relay.max_connections = 4096`.
    pub fn explain(&self) -> String {
        let memory = format!(
            "relay.memory = {} allows {} at 2 × {} per connection",
            size(self.memory_bytes, 20, "MiB"),
            self.memory_allows,
            size(self.buffer_bytes, 10, "KiB")
        );
        let max_connections = format!("relay.max_connections = {}", self.max_connections);
        if self.descriptors_allow < self.max_connections.min(self.memory_allows) {
            format!(
                "the most the open-file limit of {} descriptors leaves room for, {} kept for the rest; {max_connections}, \
                 {memory}",
                self.open_file_limit,
                crate::descriptors::RESERVED
            )
        } else if self.memory_allows < self.max_connections {
            format!(
                "the most relay.memory = {} allows at 2 × {} per connection; {max_connections}",
                size(self.memory_bytes, 20, "MiB"),
                size(self.buffer_bytes, 10, "KiB")
            )
        } else {
            format!("{max_connections}; {memory}")
        }
    }
}

/// `bytes` in the unit of `2^shift` bytes named `unit`: whole, or to three
/// significant figures or more.
fn size(bytes: u64, shift: u32, unit: &str) -> String {
    let value = bytes as f64 / (1u64 << shift) as f64;
    if bytes.is_multiple_of(1 << shift) {
        format!("{} {unit}", bytes >> shift)
    } else if value < 10.0 {
        format!("{value:.2} {unit}")
    } else {
        format!("{value:.1} {unit}")
    }
}

/// The counts of [`Counters`] at one moment, as `scps status --json`
/// gives them: split connections held now and the limit, connections
/// ended by outcome, and refusals by cause, each since the start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountersSnapshot {
    pub held: u64,
    pub limit: u64,
    pub closed: u64,
    pub reset: u64,
    pub refused: u64,
    pub idle: u64,
    pub over_limit: u64,
    pub no_route: u64,
    pub turned_down: u64,
    pub socks_refused: u64,
    /// Clients a listener turned away: not in its allow-list, or not
    /// authenticated (SOCKS5).
    #[serde(default)]
    pub client_not_allowed: u64,
    #[serde(default)]
    pub client_not_authenticated: u64,
    /// SOCKS5 handshakes refused (their source's share held, or all the
    /// places), and those that missed their deadline.
    #[serde(default)]
    pub handshakes_of_source: u64,
    #[serde(default)]
    pub handshakes_full: u64,
    #[serde(default)]
    pub handshake_timed_out: u64,
    /// Connections not opened, or not accepted, for want of a local port
    /// or a file descriptor.
    #[serde(default)]
    pub no_local_port: u64,
    #[serde(default)]
    pub no_descriptors: u64,
    pub plain_retries: u64,
}

impl CountersSnapshot {
    /// One line for the operator: every count since the start.
    pub fn summary(&self) -> String {
        format!(
            "connections closed {}, reset {}, refused at the far end {}, idle {}, turned away at the limit {}, \
             reset for want of a route {}, link connections turned down {}, SOCKS5 requests not relayed {}, \
             retried without SCPS {}, clients not allowed {}, clients not authenticated {}, \
             handshakes refused for their source {}, handshakes refused with every place held {}, \
             handshakes timed out {}, out of local ports {}, out of file descriptors {}",
            self.closed,
            self.reset,
            self.refused,
            self.idle,
            self.over_limit,
            self.no_route,
            self.turned_down,
            self.socks_refused,
            self.plain_retries,
            self.client_not_allowed,
            self.client_not_authenticated,
            self.handshakes_of_source,
            self.handshakes_full,
            self.handshake_timed_out,
            self.no_local_port,
            self.no_descriptors,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn relays_that_end_are_reaped_while_the_listener_waits_for_the_next() {
        let mut relays = Relays::default();
        let (end, ended) = tokio::sync::watch::channel(false);
        for _ in 0..100 {
            let mut ended = ended.clone();
            relays.spawn(async move {
                let _ = ended.wait_for(|ended| *ended).await;
            });
        }
        // The burst ends, and no connection follows it: the listener
        // waits (here for a time that, with the clock paused, passes only
        // once nothing else is left to run).
        end.send(true).unwrap();
        let no_next_connection = tokio::time::sleep(std::time::Duration::from_secs(3600));
        relays.reap_until(no_next_connection).await;
        assert_eq!(relays.0.len(), 0, "every ended relay reaped, its memory freed");
    }

    #[test]
    fn the_limit_is_explained_by_what_sets_it() {
        // relay.memory: 1 GiB at 2 × 600 kB.
        let memory = ConnectionLimit::new(4096, 1 << 30, 600_000, 1 << 20);
        assert_eq!((memory.limit, memory.memory_allows), (894, 894));
        assert_eq!(
            memory.explain(),
            "the most relay.memory = 1024 MiB allows at 2 × 585.9 KiB per connection; relay.max_connections = 4096"
        );
        // relay.max_connections, below what the memory allows.
        let configured = ConnectionLimit::new(512, 1 << 30, 1 << 19, 1 << 20);
        assert_eq!(configured.limit, 512);
        assert_eq!(
            configured.explain(),
            "relay.max_connections = 512; relay.memory = 1024 MiB allows 1024 at 2 × 512 KiB per connection"
        );
        // The open-file limit, below both.
        let descriptors = ConnectionLimit::new(4096, 1 << 30, 1 << 19, 1024);
        assert_eq!(descriptors.limit, 768);
        assert_eq!(
            descriptors.explain(),
            "the most the open-file limit of 1024 descriptors leaves room for, 256 kept for the rest; \
             relay.max_connections = 4096, relay.memory = 1024 MiB allows 1024 at 2 × 512 KiB per connection"
        );
        let odd = ConnectionLimit::new(10, 1_000_000, 4096, 1 << 20);
        assert!(
            odd.explain()
                .contains("relay.memory = 0.95 MiB allows 122 at 2 × 4 KiB"),
            "{}",
            odd.explain()
        );
    }

    #[test]
    fn a_connection_is_counted_once_by_its_end_and_reset_if_dropped_before_it() {
        let counters = Arc::new(Counters::new(4));
        let client: std::net::SocketAddr = "10.0.0.1:5000".parse().unwrap();
        counters.admit("test", client).unwrap().end(Outcome::Closed);
        counters.admit("test", client).unwrap().end_counted_elsewhere();
        // Its relay dropped by a stopping gateway, its sockets reset.
        drop(counters.admit("test", client).unwrap());
        let counts = counters.snapshot();
        assert_eq!((counts.closed, counts.reset, counters.active()), (1, 1, 0));
    }

    #[test]
    fn the_limit_turns_away_the_one_too_many_and_frees_a_place_on_drop() {
        let counters = Arc::new(Counters::new(2));
        let client: std::net::SocketAddr = "10.0.0.1:5000".parse().unwrap();
        let first = counters.admit("test", client).unwrap();
        let _second = counters.admit("test", client).unwrap();
        assert!(counters.admit("test", client).is_none());
        assert_eq!(counters.over_limit.load(Ordering::Relaxed), 1);
        assert_eq!(counters.active(), 2);
        drop(first);
        assert_eq!(counters.active(), 1);
        assert!(
            counters.admit("test", client).is_some(),
            "a place freed is taken again"
        );
        assert!(counters.summary().contains("turned away at the limit 1"));
        let snapshot = counters.snapshot();
        assert_eq!((snapshot.held, snapshot.limit, snapshot.over_limit), (1, 2, 1));
    }
}
