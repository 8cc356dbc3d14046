//! The split connections a gateway holds now, for `scps status` and the
//! metrics (docs/gateway.md "Operations"). Each relay task lists its
//! connection when it starts (the client and the route; the destination
//! and the link connection once known) and its [`Listing`], a guard,
//! takes it off the list when the task ends, whichever way it ends. The
//! pump publishes the connection's state and the bytes it relayed through
//! atomics ([`Progress`]), so that relaying takes no lock: the list's
//! lock is taken when a connection starts, when it ends, and by each
//! reader.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// The shortest time over which a link connection's send rate is
/// measured (see [`RateMeter`]).
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// Where a split connection is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Its second connection is being opened (before that, in the
    /// explicit modes, the SOCKS5 handshake or the link request is read).
    Opening,
    /// Both connections are open and bytes flow either way.
    Relaying,
    /// A side has been shut down (half-closed) or reset: the relay is
    /// ending.
    Closing,
}

impl State {
    pub const ALL: [State; 3] = [State::Opening, State::Relaying, State::Closing];

    pub fn name(self) -> &'static str {
        match self {
            State::Opening => "opening",
            State::Relaying => "relaying",
            State::Closing => "closing",
        }
    }

    fn from_index(index: u8) -> State {
        State::ALL
            .get(usize::from(index))
            .copied()
            .unwrap_or(State::Closing)
    }
}

/// Bytes relayed each way: read from the LAN connection and written to
/// the link connection, and the other way round.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relayed {
    pub lan_to_link: u64,
    pub link_to_lan: u64,
}

impl std::ops::AddAssign for Relayed {
    fn add_assign(&mut self, other: Relayed) {
        self.lan_to_link += other.lan_to_link;
        self.link_to_lan += other.link_to_lan;
    }
}

/// What the pump of one split connection publishes as it goes, for other
/// tasks to read.
#[derive(Debug, Default)]
pub struct Progress {
    /// A [`State`]'s index in [`State::ALL`].
    state: AtomicU8,
    lan_to_link: AtomicU64,
    link_to_lan: AtomicU64,
}

impl Progress {
    pub fn publish(&self, state: State, relayed: Relayed) {
        self.state.store(state as u8, Ordering::Relaxed);
        self.lan_to_link.store(relayed.lan_to_link, Ordering::Relaxed);
        self.link_to_lan.store(relayed.link_to_lan, Ordering::Relaxed);
    }

    pub fn state(&self) -> State {
        State::from_index(self.state.load(Ordering::Relaxed))
    }

    pub fn relayed(&self) -> Relayed {
        Relayed {
            lan_to_link: self.lan_to_link.load(Ordering::Relaxed),
            link_to_lan: self.link_to_lan.load(Ordering::Relaxed),
        }
    }
}

/// One split connection as `scps status` shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnectionStatus {
    /// The application's client; at a far gateway of the explicit modes,
    /// which never learns it, the client gateway's end of the link
    /// connection.
    pub client: SocketAddr,
    /// Where the connection goes (`ADDRESS:PORT` or `NAME:PORT`), once
    /// known: a SOCKS5 client names it in its handshake, a link
    /// connection in its request.
    pub destination: Option<String>,
    pub route: String,
    pub state: State,
    /// Time since the gateway took the connection.
    pub age_s: f64,
    pub lan_to_link_bytes: u64,
    pub link_to_lan_bytes: u64,
    /// The link connection's figures, while it is open.
    pub link: Option<LinkFigures>,
}

/// A link connection's figures, from its engine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkFigures {
    /// Data sent (new and again), in bit/s, measured over the time since
    /// the previous reading (at least 1 s; at the first reading, since
    /// the connection opened).
    pub send_rate_bps: u64,
    /// The smoothed round-trip time, once measured.
    pub srtt_s: Option<f64>,
    pub cwnd_bytes: u64,
    /// Data bytes sent again so far.
    pub retransmitted_bytes: u64,
}

/// The connections of one route, summed up for the metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteFigures {
    /// Split connections held now, by state, in the order of
    /// [`State::ALL`].
    pub held: [u64; 3],
    /// Bytes relayed since the gateway started: the connections that
    /// ended and those held now.
    pub relayed: Relayed,
    /// Data bytes the route's link connections have sent again since the
    /// gateway started: those that ended and those open now.
    pub link_resent_bytes: u64,
    /// The link connections open now, which the figures below are of.
    pub links: u64,
    pub retransmitted_bytes: u64,
    pub send_rate_bps: u64,
    srtt_sum_s: f64,
    srtt_measured: u64,
    cwnd_sum_bytes: u64,
}

impl RouteFigures {
    /// The mean smoothed RTT of the link connections that have one.
    pub fn srtt_mean_s(&self) -> Option<f64> {
        (self.srtt_measured > 0).then(|| self.srtt_sum_s / self.srtt_measured as f64)
    }

    /// The mean congestion window of the link connections.
    pub fn cwnd_mean_bytes(&self) -> Option<f64> {
        (self.links > 0).then(|| self.cwnd_sum_bytes as f64 / self.links as f64)
    }

    fn add(&mut self, connection: &ConnectionStatus) {
        self.held[connection.state as usize] += 1;
        self.relayed += Relayed {
            lan_to_link: connection.lan_to_link_bytes,
            link_to_lan: connection.link_to_lan_bytes,
        };
        if let Some(link) = &connection.link {
            self.links += 1;
            self.retransmitted_bytes += link.retransmitted_bytes;
            self.link_resent_bytes += link.retransmitted_bytes;
            self.send_rate_bps += link.send_rate_bps;
            self.cwnd_sum_bytes += link.cwnd_bytes;
            if let Some(srtt) = link.srtt_s {
                self.srtt_sum_s += srtt;
                self.srtt_measured += 1;
            }
        }
    }
}

/// What the connections of a route that ended did.
#[derive(Debug, Clone, Copy, Default)]
struct Ended {
    relayed: Relayed,
    link_resent_bytes: u64,
}

/// The split connections held now, and the bytes relayed by those that
/// ended, by route.
#[derive(Debug, Default)]
pub struct LiveConnections {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    /// By the order they were listed in.
    live: BTreeMap<u64, Arc<Entry>>,
    /// What the connections that ended did, by route: the metrics'
    /// byte counts must not fall when a connection ends.
    ended: BTreeMap<String, Ended>,
}

#[derive(Debug)]
struct Entry {
    client: SocketAddr,
    route: String,
    since: Instant,
    destination: OnceLock<String>,
    link: OnceLock<Link>,
    progress: Progress,
}

/// A listed connection's link connection.
#[derive(Debug)]
struct Link {
    handle: scps_net::AbortHandle,
    meter: Mutex<RateMeter>,
}

impl LiveConnections {
    /// Lists a connection from `client` on `route`; it stays listed until
    /// the returned guard is dropped.
    pub fn list(self: &Arc<Self>, client: SocketAddr, route: impl Into<String>) -> Listing {
        let entry = Arc::new(Entry::new(client, route.into()));
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        inner.live.insert(id, entry.clone());
        Listing {
            entry,
            list: Some((self.clone(), id)),
        }
    }

    /// The connections held now, oldest first.
    pub fn connections(&self) -> Vec<ConnectionStatus> {
        self.sample().0
    }

    /// Bytes relayed each way since the start, every route together.
    pub fn relayed(&self) -> Relayed {
        let mut total = Relayed::default();
        for figures in self.routes().into_values() {
            total += figures.relayed;
        }
        total
    }

    /// Every route that has had a connection, with its figures.
    pub fn routes(&self) -> BTreeMap<String, RouteFigures> {
        self.connections_and_routes().1
    }

    /// The connections held now and every route's figures, from one
    /// reading of them (each reading of a link connection's figures takes
    /// its endpoint's lock).
    pub fn connections_and_routes(&self) -> (Vec<ConnectionStatus>, BTreeMap<String, RouteFigures>) {
        let (connections, ended) = self.sample();
        let mut routes: BTreeMap<String, RouteFigures> = ended
            .into_iter()
            .map(|(route, ended)| {
                let figures = RouteFigures {
                    relayed: ended.relayed,
                    link_resent_bytes: ended.link_resent_bytes,
                    ..RouteFigures::default()
                };
                (route, figures)
            })
            .collect();
        for connection in &connections {
            routes
                .entry(connection.route.clone())
                .or_default()
                .add(connection);
        }
        (connections, routes)
    }

    /// The connections held now and what the ended ones relayed, taken
    /// together under the lock (a connection is in one or the other) and
    /// read after it: reading a link connection's figures locks its
    /// endpoint, which the list's lock must not wait on.
    fn sample(&self) -> (Vec<ConnectionStatus>, BTreeMap<String, Ended>) {
        let (entries, ended) = {
            let inner = self.lock();
            let entries: Vec<Arc<Entry>> = inner.live.values().cloned().collect();
            (entries, inner.ended.clone())
        };
        let now = Instant::now();
        let connections = entries.iter().map(|entry| entry.status(now)).collect();
        (connections, ended)
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Entry {
    fn new(client: SocketAddr, route: String) -> Entry {
        Entry {
            client,
            route,
            since: Instant::now(),
            destination: OnceLock::new(),
            link: OnceLock::new(),
            progress: Progress::default(),
        }
    }

    fn status(&self, now: Instant) -> ConnectionStatus {
        let relayed = self.progress.relayed();
        ConnectionStatus {
            client: self.client,
            destination: self.destination.get().cloned(),
            route: self.route.clone(),
            state: self.progress.state(),
            // To the millisecond: finer says nothing to an operator.
            age_s: now.saturating_duration_since(self.since).as_millis() as f64 / 1e3,
            lan_to_link_bytes: relayed.lan_to_link,
            link_to_lan_bytes: relayed.link_to_lan,
            link: self.link.get().and_then(|link| link.figures(now)),
        }
    }
}

impl Link {
    /// The figures of the link connection, while its endpoint holds it.
    fn figures(&self, now: Instant) -> Option<LinkFigures> {
        let stats = self.handle.stats()?;
        let sent = stats.bytes_sent + stats.bytes_retransmitted;
        let send_rate_bps = self
            .meter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .reading(now, sent);
        Some(LinkFigures {
            send_rate_bps,
            srtt_s: stats.srtt.map(|srtt| srtt.as_secs_f64()),
            cwnd_bytes: stats.cwnd,
            retransmitted_bytes: stats.bytes_retransmitted,
        })
    }
}

/// One split connection's place in [`LiveConnections`]; dropping it takes
/// the connection off the list, its bytes counted with its route's.
#[derive(Debug)]
pub struct Listing {
    entry: Arc<Entry>,
    /// The list and the place in it; `None` for a connection no list
    /// holds.
    list: Option<(Arc<LiveConnections>, u64)>,
}

impl Listing {
    /// A listing in no list, for a relay whose caller keeps none (the
    /// library's plain entry points, for tests and other programs).
    pub fn unlisted() -> Listing {
        Listing {
            entry: Arc::new(Entry::new(SocketAddr::from(([0, 0, 0, 0], 0)), String::new())),
            list: None,
        }
    }

    /// What the pump publishes.
    pub fn progress(&self) -> &Progress {
        &self.entry.progress
    }

    /// The connection's destination, once known (the first one given
    /// stays).
    pub fn set_destination(&self, destination: impl Display) {
        let _ = self.entry.destination.set(destination.to_string());
    }

    /// The link connection, once open: its figures are read from now on.
    pub fn link_opened(&self, link: &scps_net::Stream) {
        let _ = self.entry.link.set(Link {
            handle: link.abort_handle(),
            meter: Mutex::new(RateMeter::new(Instant::now())),
        });
    }
}

impl Drop for Listing {
    fn drop(&mut self) {
        if let Some((list, id)) = self.list.take() {
            let mut inner = list.lock();
            inner.live.remove(&id);
            // The link connection's last figures: its abort handle keeps
            // them once the endpoint has let it go (a reset one goes at
            // once).
            let link_resent_bytes = self
                .entry
                .link
                .get()
                .and_then(|link| link.handle.stats())
                .map_or(0, |stats| stats.bytes_retransmitted);
            let ended = inner.ended.entry(self.entry.route.clone()).or_default();
            ended.relayed += self.entry.progress.relayed();
            ended.link_resent_bytes += link_resent_bytes;
        }
    }
}

/// A link connection's send rate, from its count of bytes sent read now
/// and then: the first reading measures from the connection's opening;
/// each later one, from the reading that last measured, if that was at
/// least [`RATE_WINDOW`] ago (otherwise it gives that rate again), so
/// that readers close together (a scrape and a `scps status`) do not
/// shrink the window to nothing.
#[derive(Debug)]
struct RateMeter {
    at: Instant,
    sent: u64,
    rate_bps: Option<u64>,
}

impl RateMeter {
    fn new(opened: Instant) -> RateMeter {
        RateMeter {
            at: opened,
            sent: 0,
            rate_bps: None,
        }
    }

    /// The rate in bit/s, `sent` bytes having been sent in all by `now`.
    fn reading(&mut self, now: Instant, sent: u64) -> u64 {
        let elapsed = now.saturating_duration_since(self.at);
        let due = match self.rate_bps {
            None => !elapsed.is_zero(),
            Some(_) => elapsed >= RATE_WINDOW,
        };
        if due {
            let bits = sent.saturating_sub(self.sent) as f64 * 8.0;
            self.rate_bps = Some((bits / elapsed.as_secs_f64()) as u64);
            self.at = now;
            self.sent = sent;
        }
        self.rate_bps.unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_listing_shows_what_its_pump_publishes_until_dropped() {
        let live = Arc::new(LiveConnections::default());
        let first = live.list(addr("10.1.0.5:40000"), "bulk");
        let second = live.list(addr("10.1.0.6:40001"), "bulk");
        let other = live.list(addr("10.1.0.7:40002"), "ssh");
        first.set_destination(addr("10.2.0.9:21"));
        first.set_destination("ignored: the first destination stays");
        first.progress().publish(
            State::Relaying,
            Relayed {
                lan_to_link: 1000,
                link_to_lan: 20,
            },
        );
        second.progress().publish(
            State::Closing,
            Relayed {
                lan_to_link: 5,
                link_to_lan: 7,
            },
        );

        let connections = live.connections();
        assert_eq!(connections.len(), 3);
        let shown = &connections[0];
        assert_eq!(shown.client, addr("10.1.0.5:40000"), "oldest first");
        assert_eq!(shown.destination.as_deref(), Some("10.2.0.9:21"));
        assert_eq!((shown.route.as_str(), shown.state), ("bulk", State::Relaying));
        assert_eq!((shown.lan_to_link_bytes, shown.link_to_lan_bytes), (1000, 20));
        assert_eq!(shown.link, None, "no link connection yet");
        assert_eq!(connections[2].state, State::Opening, "until the pump says");
        assert_eq!(connections[2].destination, None);

        let routes = live.routes();
        let bulk = &routes["bulk"];
        assert_eq!(bulk.held, [0, 1, 1]);
        assert_eq!(
            bulk.relayed,
            Relayed {
                lan_to_link: 1005,
                link_to_lan: 27
            }
        );
        assert_eq!(
            (bulk.links, bulk.srtt_mean_s(), bulk.cwnd_mean_bytes()),
            (0, None, None)
        );
        assert_eq!(routes["ssh"].held, [1, 0, 0]);

        drop(first);
        drop(other);
        let connections = live.connections();
        assert_eq!(connections.len(), 1, "off the list once dropped");
        assert_eq!(connections[0].client, addr("10.1.0.6:40001"));
        let routes = live.routes();
        assert_eq!(routes["bulk"].held, [0, 0, 1]);
        assert_eq!(
            routes["bulk"].relayed,
            Relayed {
                lan_to_link: 1005,
                link_to_lan: 27
            },
            "an ended connection's bytes stay counted with its route's"
        );
        assert_eq!(
            routes["ssh"].held,
            [0, 0, 0],
            "a route that had connections stays"
        );
        drop(second);
        assert!(live.connections().is_empty());
    }

    #[test]
    fn an_unlisted_relay_is_in_no_list() {
        let live = Arc::new(LiveConnections::default());
        let unlisted = Listing::unlisted();
        unlisted.progress().publish(State::Relaying, Relayed::default());
        drop(unlisted);
        assert!(live.connections().is_empty() && live.routes().is_empty());
    }

    #[test]
    fn the_send_rate_is_measured_over_a_second_or_more() {
        let opened = Instant::now();
        let mut meter = RateMeter::new(opened);
        let at = |ms: u64| opened + Duration::from_millis(ms);
        assert_eq!(
            meter.reading(at(500), 50_000),
            800_000,
            "the first reading: since the opening"
        );
        assert_eq!(
            meter.reading(at(900), 1_000_000),
            800_000,
            "too soon after: the same rate"
        );
        assert_eq!(
            meter.reading(at(1500), 175_000),
            1_000_000,
            "125 000 bytes in the second since the last measure"
        );
        assert_eq!(meter.reading(at(3500), 175_000), 0, "nothing sent since");
    }
}
