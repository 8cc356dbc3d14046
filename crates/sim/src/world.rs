//! The discrete-event world: a virtual clock, a queue of timed events,
//! nodes with interfaces (anything that is a [`Node`]: hosts running the
//! engine and applications, routers, and whatever comes next), links
//! that join two interfaces with a bundle of channel models each way,
//! and taps at interfaces that see what crosses them.
//!
//! Time jumps from event to event, so a 47-minute run or a week of
//! one-way delay costs only the events in it. Everything is deterministic:
//! events at the same instant run in the order they were scheduled.

use std::any::Any;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeSet, BinaryHeap};
use std::time::Duration;

use scps_channel::{Bundle, ChannelStats, Fate};
use scps_node::{InterfaceId, Node};
use scps_proto::time::Instant;
use scps_proto::{Endpoint, PathCapacity};

use crate::host::Host;
use scps_node::{Crossing, Tap, TapError};

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

/// A node the world can host: any [`Node`], which the world hands back by
/// its type ([`World::node`]).
pub trait SimNode: Node + Any {}
impl<N: Node + Any> SimNode for N {}

/// One interface of one node of the world.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct NodeInterface {
    pub node: NodeId,
    pub interface: InterfaceId,
}

/// A world that cannot be put together as asked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorldError {
    #[error("node {node} has no {interface} (it has {count})")]
    NoSuchInterface {
        node: NodeId,
        interface: InterfaceId,
        count: usize,
    },
    #[error("{interface} of node {node} is already on link {link}")]
    AlreadyLinked {
        node: NodeId,
        interface: InterfaceId,
        link: LinkId,
    },
    #[error("a link joins two interfaces, not {interface} of node {node} to itself")]
    Loopback { node: NodeId, interface: InterfaceId },
}

struct Slot {
    node: Box<dyn SimNode>,
    /// Indexed by interface.
    interfaces: Vec<InterfaceState>,
    /// Instants at which a wake-up of this node is already queued, so that
    /// none is queued twice (a wake-up that is no longer needed only costs
    /// one extra look).
    wakes: BTreeSet<Instant>,
}

/// What an interface is plugged into.
#[derive(Default)]
struct InterfaceState {
    /// The link, and which of its ends this is.
    link: Option<(LinkId, usize)>,
    taps: Vec<Box<dyn Tap>>,
}

struct Link {
    ends: [NodeInterface; 2],
    /// `directions[i]` carries packets sent by end `i`.
    directions: [Bundle; 2],
    /// Whether its ends are told its carrier, and what they were told
    /// last.
    carrier: Option<bool>,
}

impl Link {
    /// Up while both directions are: a circuit's call carries both ways
    /// or neither.
    fn carrier(&mut self, now: Duration) -> bool {
        self.directions.iter_mut().all(|d| d.is_up(now))
    }

    /// When either direction's state next changes.
    fn next_carrier_change(&mut self, now: Duration) -> Option<Duration> {
        self.directions
            .iter_mut()
            .flat_map(|d| d.channels_mut())
            .filter_map(|c| c.next_change(now))
            .min()
    }
}

enum Event {
    Arrive {
        to: NodeInterface,
        packet: Vec<u8>,
    },
    Wake {
        node: NodeId,
    },
    /// A reported link's state may change now.
    Carrier {
        link: LinkId,
    },
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
    nodes: Vec<Slot>,
    links: Vec<Link>,
    /// Packets sent by an interface on no link.
    unlinked_drops: u64,
    /// Packet buffers to reuse.
    spare: Vec<Vec<u8>>,
    /// Senders that pace by what a node below them carries.
    followers: Vec<Follower>,
}

/// A node whose sender paces by the capacity `source` publishes (a bond's
/// stripe), and the capacity it last saw.
struct Follower {
    source: NodeId,
    node: NodeId,
    capacity: PathCapacity,
    seen: Option<u64>,
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

    /// Packets that nodes sent by an interface on no link, and that went
    /// nowhere.
    pub fn unlinked_drops(&self) -> u64 {
        self.unlinked_drops
    }

    pub fn add_node(&mut self, node: impl SimNode) -> NodeId {
        let interfaces = (0..node.interface_count())
            .map(|_| InterfaceState::default())
            .collect();
        self.nodes.push(Slot {
            node: Box::new(node),
            interfaces,
            wakes: BTreeSet::from([Instant::ZERO]),
        });
        let id = self.nodes.len() - 1;
        // Every node gets a first look at time zero (applications start).
        self.schedule(Instant::ZERO, Event::Wake { node: id });
        id
    }

    /// Adds a host: `endpoint`, and the applications [`World::add_app`]
    /// gives it.
    pub fn add_host(&mut self, endpoint: Endpoint) -> NodeId {
        self.add_node(Host::new(endpoint))
    }

    /// Node `id` if it is an `N`.
    pub fn node<N: SimNode>(&self, id: NodeId) -> Option<&N> {
        let node: &dyn Any = &*self.nodes[id].node;
        node.downcast_ref()
    }

    pub fn node_mut<N: SimNode>(&mut self, id: NodeId) -> Option<&mut N> {
        let node: &mut dyn Any = &mut *self.nodes[id].node;
        node.downcast_mut()
    }

    /// # Panics
    /// If node `id` is not a host.
    pub fn add_app(&mut self, id: NodeId, app: Box<dyn App>) {
        self.host_mut(id).add_app(app);
    }

    /// The endpoint of host `id`.
    ///
    /// # Panics
    /// If node `id` is not a host.
    pub fn endpoint(&self, id: NodeId) -> &Endpoint {
        self.node::<Host>(id)
            .unwrap_or_else(|| panic!("node {id} is not a host (World::add_host adds one)"))
            .endpoint()
    }

    /// # Panics
    /// If node `id` is not a host.
    pub fn endpoint_mut(&mut self, id: NodeId) -> &mut Endpoint {
        self.host_mut(id).endpoint_mut()
    }

    fn host_mut(&mut self, id: NodeId) -> &mut Host {
        self.node_mut::<Host>(id)
            .unwrap_or_else(|| panic!("node {id} is not a host (World::add_host adds one)"))
    }

    /// The state of an interface, if the node has it.
    fn interface_state(&mut self, at: NodeInterface) -> Result<&mut InterfaceState, WorldError> {
        let interfaces = &mut self.nodes[at.node].interfaces;
        let count = interfaces.len();
        interfaces
            .get_mut(at.interface.index())
            .ok_or(WorldError::NoSuchInterface {
                node: at.node,
                interface: at.interface,
                count,
            })
    }

    /// Joins two interfaces: `a_to_b` carries what `a` sends.
    pub fn connect(
        &mut self,
        a: NodeInterface,
        b: NodeInterface,
        a_to_b: Bundle,
        b_to_a: Bundle,
    ) -> Result<LinkId, WorldError> {
        let id = self.links.len();
        for end in [a, b] {
            if let Some((link, _)) = self.interface_state(end)?.link {
                return Err(WorldError::AlreadyLinked {
                    node: end.node,
                    interface: end.interface,
                    link,
                });
            }
        }
        if a == b {
            return Err(WorldError::Loopback {
                node: a.node,
                interface: a.interface,
            });
        }
        self.interface_state(a)?.link = Some((id, 0));
        self.interface_state(b)?.link = Some((id, 1));
        self.links.push(Link {
            ends: [a, b],
            directions: [a_to_b, b_to_a],
            carrier: None,
        });
        Ok(id)
    }

    /// Tells `link`'s ends each time it goes down and comes back
    /// ([`Node::handle_carrier`]), as a modem tells its host: for links
    /// whose ends stripe over several (the bonding scheduler's circuits),
    /// as the round-robin striping of one link skips a circuit that is
    /// down.
    pub fn report_carrier(&mut self, link: LinkId) {
        let now = self.now.as_duration();
        let state = &mut self.links[link];
        state.carrier = Some(state.carrier(now));
        if let Some(at) = state.next_carrier_change(now) {
            self.schedule(Instant::from_duration(at), Event::Carrier { link });
        }
    }

    /// Puts `tap` at an interface: it sees what leaves and what arrives
    /// there from now on.
    pub fn tap(&mut self, at: NodeInterface, tap: Box<dyn Tap>) -> Result<(), WorldError> {
        self.interface_state(at)?.taps.push(tap);
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

    /// Finishes every tap; returns the first error of any.
    pub fn finish(&mut self) -> Result<(), TapError> {
        let mut first = Ok(());
        for state in self.nodes.iter_mut().flat_map(|n| &mut n.interfaces) {
            for tap in state.taps.drain(..) {
                if let Err(error) = tap.finish()
                    && first.is_ok()
                {
                    first = Err(error);
                }
            }
        }
        first
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
                Event::Arrive { to, packet } => {
                    self.observe(to, Crossing::Arriving, &packet);
                    self.nodes[to.node]
                        .node
                        .handle_packet(self.now, to.interface, &packet);
                    self.spare.push(packet);
                    self.process(to.node);
                }
                Event::Wake { node } => {
                    self.nodes[node].wakes.remove(&next.at);
                    self.process(node);
                }
                Event::Carrier { link } => self.carrier_changed(link),
            }
        }
    }

    /// `node` paces by `capacity`, which `source` sets: it looks again at
    /// once whenever the capacity rises ([`World::process`]).
    pub fn follow(&mut self, source: NodeId, node: NodeId, capacity: PathCapacity) {
        let seen = capacity.get();
        self.followers.push(Follower {
            source,
            node,
            capacity,
            seen,
        });
    }

    /// Everything a node does after an event (timers, applications),
    /// what it sends, and its next wake-up; and the same of the senders
    /// that follow it, if it now carries more.
    fn process(&mut self, id: NodeId) {
        self.run_node(id);
        // A sender waiting for its pacer's next slot at the old rate is
        // woken when what it follows carries more (a circuit back in a
        // bond's stripe), as a real driver's loop runs its endpoint again
        // after every event of the path under it. A capacity that falls
        // needs no wake: the sender finds it at its next slot.
        for index in 0..self.followers.len() {
            let follower = &mut self.followers[index];
            if follower.source != id {
                continue;
            }
            let now_carried = follower.capacity.get();
            let rose = now_carried > follower.seen;
            follower.seen = now_carried;
            if rose {
                let node = follower.node;
                self.run_node(node);
            }
        }
    }

    /// Everything one node does after an event, what it sends, and its
    /// next wake-up.
    fn run_node(&mut self, id: NodeId) {
        let now = self.now;
        self.nodes[id].node.handle_timeout(now);
        loop {
            let mut buf = self.spare.pop().unwrap_or_default();
            let Some(interface) = self.nodes[id].node.poll_transmit(now, &mut buf) else {
                self.spare.push(buf);
                break;
            };
            self.send(NodeInterface { node: id, interface }, buf);
        }
        let slot = &mut self.nodes[id];
        if let Some(at) = slot.node.poll_timeout().map(|at| at.max(now))
            && slot.wakes.insert(at)
        {
            self.schedule(at, Event::Wake { node: id });
        }
    }

    /// Tells `link`'s ends its carrier if it changed, and looks for the
    /// next change.
    fn carrier_changed(&mut self, link: LinkId) {
        let now = self.now;
        let state = &mut self.links[link];
        let up = state.carrier(now.as_duration());
        let next = state.next_carrier_change(now.as_duration());
        let ends = state.ends;
        if state.carrier.replace(up) != Some(up) {
            for end in ends {
                self.nodes[end.node].node.handle_carrier(now, end.interface, up);
                self.process(end.node);
            }
        }
        if let Some(at) = next {
            self.schedule(Instant::from_duration(at), Event::Carrier { link });
        }
    }

    fn send(&mut self, from: NodeInterface, mut packet: Vec<u8>) {
        let link = self.nodes[from.node]
            .interfaces
            .get(from.interface.index())
            .and_then(|a| a.link);
        let Some((link_id, end)) = link else {
            self.unlinked_drops += 1;
            self.spare.push(packet);
            return;
        };
        self.observe(from, Crossing::Leaving, &packet);
        let now = self.now;
        let link = &mut self.links[link_id];
        let to = link.ends[1 - end];
        let (_, fate) = link.directions[end].transmit(now.as_duration(), &mut packet);
        match fate {
            Fate::Delivered { at, .. } => {
                self.schedule(Instant::from_duration(at), Event::Arrive { to, packet });
            }
            Fate::Dropped(_) => self.spare.push(packet),
        }
    }

    /// Shows `packet` to the taps at `at`.
    fn observe(&mut self, at: NodeInterface, crossing: Crossing, packet: &[u8]) {
        for tap in &mut self.nodes[at.node].interfaces[at.interface.index()].taps {
            tap.packet(self.now, crossing, packet);
        }
    }
}
