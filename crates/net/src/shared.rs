//! What the driver and a node's users share: the node under one lock
//! ([`Shared`]), and for an endpoint ([`State`]) the wakers of tasks
//! waiting on its connections. One lock guards both, so a task that finds
//! nothing to do registers its waker before the driver can process the
//! packet that would have woken it.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::task::Waker;
use std::time::Duration;

use scps_node::{InterfaceId, ShrinkWhenSparse};
use scps_proto::time::Instant;
use scps_proto::{ConnectionHandle, Endpoint, EndpointStats, Event, State as ConnState};
use tokio::sync::Notify;

use crate::clock::Clock;
use crate::driver::Guest;
use crate::path::{BoxedPath, PacketPath};

/// How often the path forgets the peers of closed connections: what it
/// holds meanwhile is bounded by the connections of one interval.
const FORGET_INTERVAL: Duration = Duration::from_secs(1);

#[derive(Debug)]
pub(crate) struct Shared<G = State> {
    state: Mutex<G>,
    pub(crate) clock: Clock,
    /// The application acted: the driver has output or timers to look at.
    pub(crate) wake_driver: Notify,
    /// The driver finished a round (for tasks waiting for connections to
    /// finish closing).
    pub(crate) progress: Notify,
}

#[derive(Debug, Default)]
struct Waiters {
    read: Option<Waker>,
    write: Option<Waker>,
}

#[derive(Debug)]
pub(crate) struct State {
    pub(crate) endpoint: Endpoint,
    waiters: HashMap<ConnectionHandle, Waiters>,
    /// Each connection's span in the log, from its first event to its end.
    spans: HashMap<ConnectionHandle, tracing::Span>,
    accept_waiters: Vec<Waker>,
    /// Connections the application let go, which may still be closing.
    closing: Vec<ConnectionHandle>,
    /// Why the driver stopped, once it has.
    pub(crate) stopped: Option<String>,
    /// When the path next forgets what it learned for connections that
    /// are gone.
    forget_at: Instant,
    /// The endpoint's drops by cause as last logged.
    drops_logged: BTreeMap<&'static str, u64>,
}

impl<G> Shared<G> {
    pub(crate) fn new(guest: G, clock: Clock) -> Shared<G> {
        Shared {
            state: Mutex::new(guest),
            clock,
            wake_driver: Notify::new(),
            progress: Notify::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, G> {
        // A panic while holding the lock leaves the endpoint as consistent
        // as the engine's own calls leave it; carry on rather than cascade.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl State {
    pub(crate) fn new(endpoint: Endpoint) -> State {
        State {
            endpoint,
            waiters: HashMap::new(),
            spans: HashMap::new(),
            accept_waiters: Vec::new(),
            closing: Vec::new(),
            stopped: None,
            forget_at: Instant::ZERO,
            drops_logged: BTreeMap::new(),
        }
    }

    /// Wakes the tasks concerned by the endpoint's pending events.
    pub(crate) fn dispatch_events(&mut self) {
        while let Some((handle, event)) = self.endpoint.poll_event() {
            self.log_event(handle, &event);
            if let Some(waiters) = self.waiters.get_mut(&handle) {
                let wake_read = matches!(event, Event::Readable | Event::Closed(_) | Event::Connected);
                let wake_write = matches!(event, Event::Writable | Event::Closed(_) | Event::Connected);
                if wake_read && let Some(w) = waiters.read.take() {
                    w.wake();
                }
                if wake_write && let Some(w) = waiters.write.take() {
                    w.wake();
                }
            }
            if event == Event::Connected {
                for waker in self.accept_waiters.drain(..) {
                    waker.wake();
                }
            }
        }
    }

    pub(crate) fn track(&mut self, handle: ConnectionHandle) {
        self.waiters.entry(handle).or_default();
    }

    /// Logs what happened to a connection in a span with its addresses,
    /// kept from its first event to its end.
    fn log_event(&mut self, handle: ConnectionHandle, event: &Event) {
        if matches!(event, Event::Readable | Event::Writable) {
            // The data path's events, many a second: nothing to log.
            return;
        }
        let endpoint = &self.endpoint;
        let span = self
            .spans
            .entry(handle)
            .or_insert_with(|| match endpoint.connection(handle) {
                Some(c) => {
                    let t = c.tuple();
                    tracing::info_span!("connection", local = %t.local, remote = %t.remote)
                }
                None => tracing::Span::none(),
            });
        span.in_scope(|| match event {
            Event::Connected => tracing::debug!("connected"),
            Event::Closed(None) => tracing::debug!("closed"),
            // At `info`: a transfer's report says it too.
            Event::Closed(Some(error)) => tracing::info!(%error, "closed with an error"),
            Event::Timeout { consecutive } => tracing::debug!(consecutive, "retransmission timeout"),
            Event::OutageStarted { signalled } => tracing::info!(signalled, "link outage"),
            Event::OutageEnded => tracing::info!("link back"),
            Event::Readable | Event::Writable => {}
        });
        if matches!(event, Event::Closed(_)) {
            self.spans.remove(&handle);
            self.spans.shrink_when_sparse();
        }
    }

    pub(crate) fn wait_read(&mut self, handle: ConnectionHandle, waker: &Waker) {
        self.waiters.entry(handle).or_default().read = Some(waker.clone());
    }

    pub(crate) fn wait_write(&mut self, handle: ConnectionHandle, waker: &Waker) {
        self.waiters.entry(handle).or_default().write = Some(waker.clone());
    }

    pub(crate) fn wait_accept(&mut self, waker: &Waker) {
        if !self.accept_waiters.iter().any(|w| w.will_wake(waker)) {
            self.accept_waiters.push(waker.clone());
        }
    }

    /// The application let `handle` go; it finishes closing on its own.
    pub(crate) fn let_go(&mut self, handle: ConnectionHandle) {
        self.waiters.remove(&handle);
        self.waiters.shrink_when_sparse();
        // Those that finished are dropped each time the list fills its
        // room, so that it holds the connections still closing, not every
        // one a long-running endpoint ever let go.
        if self.closing.len() == self.closing.capacity() {
            self.forget_closed();
        }
        self.closing.push(handle);
    }

    /// Drops from `closing` the connections that finished closing.
    fn forget_closed(&mut self) {
        let endpoint = &self.endpoint;
        self.closing.retain(|&handle| {
            endpoint
                .state(handle)
                .is_some_and(|s| !matches!(s, ConnState::TimeWait | ConnState::Closed))
        });
        self.closing.shrink_when_sparse();
    }

    /// Whether every connection the application let go has finished its
    /// exchange with the peer (TIME-WAIT counts as finished: only the
    /// peer's retransmitted FIN could still need us).
    pub(crate) fn all_closed(&mut self) -> bool {
        self.forget_closed();
        self.closing.is_empty()
    }

    /// The driver stopped: every waiting task learns it.
    fn stop(&mut self, reason: String) {
        tracing::debug!(%reason, "driver stopped");
        self.stopped = Some(reason);
        for waiters in self.waiters.values_mut() {
            for waker in [waiters.read.take(), waiters.write.take()].into_iter().flatten() {
                waker.wake();
            }
        }
        for waker in self.accept_waiters.drain(..) {
            waker.wake();
        }
    }
}

/// The endpoint as the driver's guest: its UDP peers are learned per
/// connection, its events wake the streams.
impl Guest for State {
    fn handle_packet(
        &mut self,
        now: Instant,
        _interface: InterfaceId,
        packet: &[u8],
        source: Option<SocketAddr>,
        path: &mut BoxedPath,
    ) {
        let answers = self.endpoint.answers_waiting();
        self.endpoint.handle_packet(now, packet);
        if let Some(source) = source {
            let endpoint = &self.endpoint;
            let answered = endpoint.answers_waiting() > answers;
            path.heard(packet, source, |tuple| endpoint.has_connection(tuple), answered);
        }
    }

    fn path_news(&mut self, _interface: InterfaceId, unreachable: Vec<Option<IpAddr>>, damaged: u64) {
        for peer in unreachable {
            match peer {
                Some(peer) => tracing::debug!(%peer, "reported unreachable"),
                None => tracing::debug!("the path's peer reported unreachable"),
            }
            self.endpoint.report_unreachable(peer);
        }
        self.endpoint.count_dropped_by_path("frame_check", damaged);
    }

    fn handle_timeout(&mut self, now: Instant, paths: &mut [BoxedPath]) {
        self.endpoint.handle_timeout(now);
        if now >= self.forget_at {
            let endpoint = &self.endpoint;
            for path in paths {
                path.forget_closed(|tuple| endpoint.has_connection(tuple));
            }
            self.forget_at = now + FORGET_INTERVAL;
        }
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        self.endpoint.poll_transmit(now, buf).then_some(InterfaceId(0))
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        self.endpoint.poll_timeout()
    }

    fn end_of_round(&mut self) {
        self.dispatch_events();
        log_new_drops(&mut self.drops_logged, self.endpoint.stats());
    }

    fn stopped(&mut self, reason: String) {
        self.stop(reason);
    }
}

/// Logs the endpoint's drops since they were `logged`, by cause (a flood of
/// bad packets is a line per cause and batch, at `debug`).
fn log_new_drops(logged: &mut BTreeMap<&'static str, u64>, stats: &EndpointStats) {
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

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use scps_proto::EndpointConfig;

    use super::*;

    #[test]
    fn the_list_of_connections_let_go_holds_only_those_still_closing() {
        let endpoint = Endpoint::new(EndpointConfig::default(), ["10.0.0.1".parse().unwrap()]).unwrap();
        let mut state = State::new(endpoint);
        let server: SocketAddr = "10.0.0.2:80".parse().unwrap();
        let mut packet = Vec::new();
        for _ in 0..10_000 {
            let handle = state.endpoint.connect(Instant::ZERO, server, None, None).unwrap();
            state.track(handle);
            state.endpoint.abort(Instant::ZERO, handle).unwrap();
            state.endpoint.release(Instant::ZERO, handle).unwrap();
            while state.endpoint.poll_transmit(Instant::ZERO, &mut packet) {}
            state.let_go(handle);
        }
        assert!(state.closing.len() <= 128, "{} kept", state.closing.len());
        assert!(
            state.closing.capacity() <= 256,
            "{} of room",
            state.closing.capacity()
        );
        assert!(state.all_closed());
    }
}
