//! The relay between the two connections a gateway splits a TCP
//! connection into: the LAN connection (kernel TCP to the application) and
//! the link connection (SCPS-TP across the link). Sans-IO, like the
//! engine: it is told what was read from each side, what was written, and
//! what happened to each connection, and says what to write, when to
//! half-close or reset a side, and how much may be read next. The tokio
//! side only moves bytes and events (scps-gateway's `pump.rs`); the
//! simulator's gateway nodes run this same relay.
//!
//! What it keeps, whatever the order of events:
//!
//! - **every byte read from one side is written to the other, once, in
//!   order**, or that side is reset: never acknowledged and then lost;
//! - **back-pressure**: at most `buffer` bytes wait in each direction; a
//!   side is read only while there is room, so a slow or stalled link
//!   closes the LAN sender's window instead of growing a queue;
//! - **half-close**: an end of stream on one side becomes a shutdown of
//!   the other once everything before it has been written;
//! - **resets and refusals**: a reset or an error on one side resets the
//!   other; a far end that refuses, or never answers, resets the side
//!   that was already open (an application must not read an accepted
//!   connection that closes cleanly as an empty reply);
//! - **idle timeout**: no byte either way for that long resets both.

use std::collections::VecDeque;
use std::time::Duration;

use scps_node::Instant;

/// One of the relay's two connections.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// Kernel TCP to the application.
    Lan,
    /// SCPS-TP across the link.
    Link,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Lan => Side::Link,
            Side::Link => Side::Lan,
        }
    }

    fn index(self) -> usize {
        match self {
            Side::Lan => 0,
            Side::Link => 1,
        }
    }
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Lan => "LAN",
            Side::Link => "link",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RelayConfig {
    /// Bytes waiting at most in each direction (read from one side, not
    /// yet written to the other): the route's bandwidth-delay product,
    /// capped.
    pub buffer: usize,
    /// No byte either way for this long resets both sides; `None`: never.
    pub idle_timeout: Option<Duration>,
}

/// Why the side being opened could not be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenFailure {
    /// The far end answered with a reset.
    Refused,
    /// The far end never answered.
    TimedOut,
    /// The network said the far end cannot be reached (ICMP).
    Unreachable,
    /// The far gateway does not let its link connections reach it.
    NotAllowed,
    /// This gateway had no room to open it.
    OutOf(Resource),
}

/// What a gateway can run out of while opening a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// Local ports for the far end's address (the link's engine, or the
    /// kernel's).
    LocalPorts,
    /// File descriptors (the open-file limit).
    Descriptors,
}

impl std::fmt::Display for OpenFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            OpenFailure::Refused => "refused",
            OpenFailure::TimedOut => "timed out",
            OpenFailure::Unreachable => "unreachable",
            OpenFailure::NotAllowed => "not allowed by the far gateway",
            OpenFailure::OutOf(Resource::LocalPorts) => "not opened: no free local port",
            OpenFailure::OutOf(Resource::Descriptors) => "not opened: out of file descriptors",
        })
    }
}

/// What the I/O side must do to a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// No more bytes will be written to this side: half-close it (FIN).
    Shutdown(Side),
    /// Abort this side with a reset (or cancel its opening).
    Reset(Side),
}

/// How a relay ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Both directions ended with a clean end of stream.
    Closed,
    /// This side was reset or failed; the other was reset.
    Reset(Side),
    /// The side being opened could not be; the open one was reset.
    OpenFailed(OpenFailure),
    /// Nothing moved for the idle timeout; both were reset.
    Idle,
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Outcome::Closed => f.write_str("closed"),
            Outcome::Reset(side) => write!(f, "reset on the {side} side"),
            Outcome::OpenFailed(failure) => write!(f, "far end {failure}"),
            Outcome::Idle => f.write_str("idle timeout"),
        }
    }
}

/// One direction: bytes read from one side for the other.
#[derive(Debug, Default)]
struct Direction {
    waiting: VecDeque<u8>,
    /// The side read from has ended its stream.
    ended: bool,
    /// The side written to has been told no more is coming.
    shut_down: bool,
    /// Bytes written to the destination side.
    moved: u64,
}

#[derive(Debug)]
pub struct Relay {
    config: RelayConfig,
    /// `directions[i]` carries bytes read from the side of index `i`.
    directions: [Direction; 2],
    /// The side still being opened, until it is.
    opening: Option<Side>,
    actions: VecDeque<Action>,
    outcome: Option<Outcome>,
    last_activity: Instant,
}

impl Relay {
    /// A relay whose `open` side is connected and whose other side is
    /// being opened (at the client's gateway the LAN connection was
    /// accepted and the link one is being opened; at the server's, the
    /// other way round).
    pub fn new(now: Instant, config: RelayConfig, open: Side) -> Relay {
        Relay {
            config,
            directions: Default::default(),
            opening: Some(open.other()),
            actions: VecDeque::new(),
            outcome: None,
            last_activity: now,
        }
    }

    /// The side being opened is connected.
    pub fn opened(&mut self, now: Instant) {
        if self.outcome.is_none() {
            self.opening = None;
            self.last_activity = now;
            self.shut_down_ended();
        }
    }

    /// Whether the side being opened is still being opened.
    pub fn is_opening(&self) -> bool {
        self.opening.is_some()
    }

    /// The side being opened could not be: the open side is reset.
    pub fn open_failed(&mut self, failure: OpenFailure) {
        if let Some(opening) = self.opening
            && self.outcome.is_none()
        {
            self.abort(Outcome::OpenFailed(failure), &[opening.other()]);
        }
    }

    /// How many bytes may be read from `side` now: the room left in the
    /// direction it feeds (zero once it has ended, or the relay has).
    pub fn read_room(&self, side: Side) -> usize {
        let direction = &self.directions[side.index()];
        if self.outcome.is_some() || direction.ended {
            return 0;
        }
        self.config.buffer.saturating_sub(direction.waiting.len())
    }

    /// `bytes` were read from `side`; returns how many the relay took (at
    /// most [`Relay::read_room`]: read no more than that).
    pub fn received(&mut self, now: Instant, side: Side, bytes: &[u8]) -> usize {
        let taken = bytes.len().min(self.read_room(side));
        self.directions[side.index()].waiting.extend(&bytes[..taken]);
        if taken > 0 {
            self.last_activity = now;
        }
        taken
    }

    /// `side` ended its stream (a FIN): the other side is shut down once
    /// everything read before it has been written.
    pub fn ended(&mut self, side: Side) {
        if self.outcome.is_none() {
            self.directions[side.index()].ended = true;
            self.shut_down_ended();
        }
    }

    /// `side` was reset, or failed (a write or read error, the link's
    /// timers gave up): the other side is reset, what waited is dropped.
    pub fn failed(&mut self, side: Side) {
        if self.outcome.is_none() {
            self.abort(Outcome::Reset(side), &[side.other()]);
        }
    }

    /// The bytes waiting to be written to `side` (a first part of them):
    /// empty while `side` is being opened or once the relay has ended.
    pub fn to_write(&self, side: Side) -> &[u8] {
        if self.outcome.is_some() || self.opening == Some(side) {
            return &[];
        }
        self.directions[side.other().index()].waiting.as_slices().0
    }

    /// `count` bytes of [`Relay::to_write`] were written to `side`.
    pub fn wrote(&mut self, now: Instant, side: Side, count: usize) {
        let direction = &mut self.directions[side.other().index()];
        let count = count.min(direction.waiting.len());
        direction.waiting.drain(..count);
        direction.moved += count as u64;
        if count > 0 {
            self.last_activity = now;
        }
        self.shut_down_ended();
    }

    /// The next thing the I/O side must do to a connection.
    pub fn poll_action(&mut self) -> Option<Action> {
        self.actions.pop_front()
    }

    /// When [`Relay::handle_timeout`] has work: the idle deadline.
    pub fn poll_timeout(&self) -> Option<Instant> {
        match (self.outcome, self.config.idle_timeout) {
            (None, Some(idle)) => Some(self.last_activity + idle),
            _ => None,
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        if self.poll_timeout().is_some_and(|deadline| now >= deadline) {
            self.abort(Outcome::Idle, &[Side::Lan, Side::Link]);
        }
    }

    /// How the relay ended, once it has: both connections may then be
    /// closed (after the actions still queued).
    pub fn outcome(&self) -> Option<Outcome> {
        self.outcome
    }

    /// Bytes written to `side` so far (read from the other).
    pub fn bytes_to(&self, side: Side) -> u64 {
        self.directions[side.other().index()].moved
    }

    /// Bytes waiting in each direction: towards `side`.
    pub fn waiting_for(&self, side: Side) -> usize {
        self.directions[side.other().index()].waiting.len()
    }

    /// Shuts down each side whose source has ended and whose bytes are
    /// all written; ends the relay when both are.
    fn shut_down_ended(&mut self) {
        for to in [Side::Lan, Side::Link] {
            let direction = &mut self.directions[to.other().index()];
            if direction.ended
                && direction.waiting.is_empty()
                && !direction.shut_down
                && self.opening != Some(to)
            {
                direction.shut_down = true;
                self.actions.push_back(Action::Shutdown(to));
            }
        }
        if self.directions.iter().all(|d| d.shut_down) {
            self.outcome.get_or_insert(Outcome::Closed);
        }
    }

    fn abort(&mut self, outcome: Outcome, reset: &[Side]) {
        self.outcome = Some(outcome);
        for direction in &mut self.directions {
            direction.waiting = VecDeque::new();
        }
        self.actions.extend(reset.iter().map(|&side| Action::Reset(side)));
    }
}
