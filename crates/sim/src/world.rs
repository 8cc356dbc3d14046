//! The discrete-event world: a virtual clock, a queue of timed events,
//! nodes that each run one endpoint of the engine and some applications,
//! and links whose two directions are bundles of channel models.
//!
//! Time jumps from event to event, so a 47-minute run or a week of
//! one-way delay costs only the events in it. Everything is deterministic:
//! events at the same instant run in the order they were scheduled.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap};
use std::path::Path;

use scps_channel::{Bundle, ChannelStats, Fate};
use scps_proto::Endpoint;
use scps_proto::time::Instant;

use scps_pcap::{Capture, CaptureError};

pub type NodeId = usize;
pub type LinkId = usize;

/// An application on a node: it is polled whenever anything happens on
/// its node, and may ask to be woken at an instant of its own.
pub trait App {
    fn poll(&mut self, now: Instant, endpoint: &mut Endpoint);
    fn next_wake(&self) -> Option<Instant> {
        None
    }
}

struct Node {
    endpoint: Endpoint,
    apps: Vec<Box<dyn App>>,
    /// The node's one interface: which link, and which end of it.
    attachment: Option<(LinkId, usize)>,
    /// Instants at which a wake-up of this node is already queued, so that
    /// none is queued twice (a wake-up that is no longer needed only costs
    /// one extra look).
    wakes: BTreeSet<Instant>,
}

struct Link {
    /// The nodes at ends 0 and 1.
    ends: [NodeId; 2],
    /// `directions[i]` carries packets sent by end `i`.
    directions: [Bundle; 2],
    /// A capture at end 0's interface: what it sends, and what reaches it.
    capture: Option<Capture>,
}

enum Event {
    Arrive { node: NodeId, packet: Vec<u8> },
    Wake { node: NodeId },
}

struct Scheduled {
    at: Instant,
    seq: u64,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// Why [`World::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The condition held.
    Done,
    /// The next event lies beyond the time limit.
    TimeLimit,
    /// Nothing is left to happen and the condition does not hold.
    Quiet,
}

#[derive(Default)]
pub struct World {
    now: Instant,
    queue: BinaryHeap<Reverse<Scheduled>>,
    seq: u64,
    nodes: Vec<Node>,
    links: Vec<Link>,
    /// Packet buffers to reuse.
    spare: Vec<Vec<u8>>,
    /// The first capture error: the run goes on, the error is reported.
    capture_error: Option<CaptureError>,
}

impl std::fmt::Debug for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("World")
            .field("now", &self.now)
            .field("nodes", &self.nodes.len())
            .field("links", &self.links.len())
            .field("queued", &self.queue.len())
            .finish()
    }
}

impl World {
    pub fn new() -> World {
        World::default()
    }

    pub fn now(&self) -> Instant {
        self.now
    }

    /// Events waiting in the queue.
    pub fn events_queued(&self) -> usize {
        self.queue.len()
    }

    pub fn add_node(&mut self, endpoint: Endpoint) -> NodeId {
        self.nodes.push(Node {
            endpoint,
            apps: Vec::new(),
            attachment: None,
            wakes: BTreeSet::from([Instant::ZERO]),
        });
        let id = self.nodes.len() - 1;
        // Every node gets a first look at time zero (applications start).
        self.schedule(Instant::ZERO, Event::Wake { node: id });
        id
    }

    pub fn add_app(&mut self, node: NodeId, app: Box<dyn App>) {
        self.nodes[node].apps.push(app);
    }

    pub fn endpoint(&self, node: NodeId) -> &Endpoint {
        &self.nodes[node].endpoint
    }

    pub fn endpoint_mut(&mut self, node: NodeId) -> &mut Endpoint {
        &mut self.nodes[node].endpoint
    }

    /// Joins `a` and `b`: `a_to_b` carries what `a` sends. Each node has
    /// one interface; all it sends goes on its link.
    pub fn connect(&mut self, a: NodeId, b: NodeId, a_to_b: Bundle, b_to_a: Bundle) -> LinkId {
        let id = self.links.len();
        self.links.push(Link {
            ends: [a, b],
            directions: [a_to_b, b_to_a],
            capture: None,
        });
        self.nodes[a].attachment = Some((id, 0));
        self.nodes[b].attachment = Some((id, 1));
        id
    }

    /// Captures the traffic of `link` at its first node's interface.
    pub fn capture(&mut self, link: LinkId, path: &Path) -> Result<(), CaptureError> {
        self.links[link].capture = Some(Capture::create(path)?);
        Ok(())
    }

    /// Channel statistics of `link` in the direction sent by end `end`.
    pub fn channel_stats(&self, link: LinkId, end: usize) -> Vec<ChannelStats> {
        self.links[link].directions[end]
            .channels()
            .iter()
            .map(|c| c.stats().clone())
            .collect()
    }

    /// Flushes captures; returns the first capture error of the run.
    pub fn finish(&mut self) -> Result<(), CaptureError> {
        for link in &mut self.links {
            if let Some(capture) = link.capture.take() {
                capture.finish()?;
            }
        }
        self.capture_error.take().map_or(Ok(()), Err)
    }

    fn schedule(&mut self, at: Instant, event: Event) {
        self.seq += 1;
        self.queue.push(Reverse(Scheduled {
            at,
            seq: self.seq,
            event,
        }));
    }

    /// Runs events until `done` holds, nothing is left, or the next event
    /// is later than `limit`.
    pub fn run(&mut self, limit: Instant, mut done: impl FnMut(&World) -> bool) -> Outcome {
        loop {
            if done(self) {
                return Outcome::Done;
            }
            let Some(Reverse(next)) = self.queue.pop() else {
                return Outcome::Quiet;
            };
            if next.at > limit {
                self.queue.push(Reverse(next));
                self.now = limit;
                return Outcome::TimeLimit;
            }
            self.now = next.at;
            match next.event {
                Event::Arrive { node, packet } => {
                    self.record(node, &packet);
                    self.nodes[node].endpoint.handle_packet(self.now, &packet);
                    self.spare.push(packet);
                    self.process(node);
                }
                Event::Wake { node } => {
                    self.nodes[node].wakes.remove(&next.at);
                    self.process(node);
                }
            }
        }
    }

    /// Everything a node does after an event: timers, applications,
    /// output, and its next wake-up.
    fn process(&mut self, id: NodeId) {
        let now = self.now;
        let node = &mut self.nodes[id];
        node.endpoint.handle_timeout(now);
        for app in &mut node.apps {
            app.poll(now, &mut node.endpoint);
        }
        // Applications watch connection state; the event queue is for
        // drivers that sleep on it, so it is emptied here.
        while node.endpoint.poll_event().is_some() {}
        loop {
            let mut buf = self.spare.pop().unwrap_or_default();
            if !self.nodes[id].endpoint.poll_transmit(now, &mut buf) {
                self.spare.push(buf);
                break;
            }
            self.send(id, buf);
        }
        let node = &mut self.nodes[id];
        let next = node
            .apps
            .iter()
            .filter_map(|app| app.next_wake())
            .chain(node.endpoint.poll_timeout())
            .min();
        if let Some(at) = next.map(|at| at.max(now))
            && node.wakes.insert(at)
        {
            self.schedule(at, Event::Wake { node: id });
        }
    }

    fn send(&mut self, from: NodeId, mut packet: Vec<u8>) {
        let Some((link_id, end)) = self.nodes[from].attachment else {
            self.spare.push(packet);
            return;
        };
        self.record(from, &packet);
        let now = self.now;
        let link = &mut self.links[link_id];
        let to = link.ends[1 - end];
        let (_, fate) = link.directions[end].transmit(now.as_duration(), &mut packet);
        match fate {
            Fate::Delivered { at, .. } => {
                self.schedule(Instant::from_duration(at), Event::Arrive { node: to, packet });
            }
            Fate::Dropped(_) => self.spare.push(packet),
        }
    }

    /// Records `packet` if `node` is the captured end of its link.
    fn record(&mut self, node: NodeId, packet: &[u8]) {
        let Some((link_id, 0)) = self.nodes[node].attachment else {
            return;
        };
        if let Some(capture) = self.links[link_id].capture.as_mut()
            && let Err(err) = capture.record(self.now.as_duration(), packet)
        {
            self.capture_error.get_or_insert(err);
            self.links[link_id].capture = None;
        }
    }
}
