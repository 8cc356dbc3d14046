//! What an ideal sender of one ordered message stream achieves over a
//! point's forward channels: the reference a message stream's latency is
//! judged against (its rate is judged against `Point::limit_bps`).
//!
//! The ideal sender runs on the very channel models of a simulation with
//! the same seed (same call drops, same kind of jitter), and knows
//! everything a sender could know at the time, nothing later:
//!
//! - every channel's queue exactly, and whether it is up (the carrier);
//!   it puts a packet only on an idle line, so no buffer ever drops;
//! - which channel would deliver the oldest waiting message first by its
//!   queue, line rate and mean delay ("earliest expected arrival"); the
//!   jitter to come it cannot know, and it sends nothing twice. It gives
//!   a channel a message only once it would arrive there no later than by
//!   a full packet started at once on the slowest channel up: a backlog
//!   waits in one queue, in order, for whichever channel frees first;
//! - each loss the moment it happens: a packet cut by a dropped call goes
//!   again from the instant the call drops, one hit by bit errors from the
//!   end of its transmission (no round trip to learn of either).
//!
//! Every packet carries the waiting messages, oldest first, up to the
//! MTU, behind `header_bytes` of header (the limit's header). The receiver
//! hands messages over in order, so a message's latency is the time from
//! its offered instant until it and every message before it have
//! arrived.
//!
//! With [`Copies::IntoIdleLines`] it may also send a message twice: a
//! line that falls idle with nothing to send takes the oldest messages
//! in flight that it would bring sooner, by its mean delay, than they will
//! arrive where they went (which this sender knows, as no real one
//! could); the receiver keeps the first copy. That bounds what sending
//! twice "when there is room" could buy.
//!
//! This is a reference, not a proof: a sender that guessed the jitter, or
//! chose channels otherwise than by earliest expected arrival, could beat
//! it now and then. It says what a good scheduler with perfect knowledge
//! of the queues gets from these channels.

use std::collections::{BTreeSet, VecDeque};
use std::time::Duration;

use scps_channel::{Bundle, Channel, ConfigError, DropCause, Fate, derive_seed};
use scps_config::scenario::Point;
use scps_config::workload::Workload;

use scps_workload_format::figures::percentile;

/// What the ideal sender's receiver gets of the messages offered during
/// the window: the latency of each (all of them arrive, some after the
/// window), and the rate of those it has by the window's end (as a
/// stack's actual rate counts them).
#[derive(Debug, Clone, PartialEq)]
pub struct IdealLatency {
    pub messages: usize,
    pub p50_s: f64,
    pub p95_s: f64,
    pub actual_bps: f64,
}

/// Whether the ideal sender sends a message more than once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Copies {
    /// Each message once (again only if it was lost).
    #[default]
    Once,
    /// Also a second copy into line time that would otherwise go idle.
    IntoIdleLines,
}

/// Why a point has no ideal latency.
#[derive(Debug, thiserror::Error)]
pub enum IdealError {
    #[error("the ideal sender runs only message workloads of one client, not this point's")]
    NotOneMessageStream,
    #[error("the point's channels: {0}")]
    Channel(#[from] ConfigError),
    #[error(
        "a packet of at most {packet} bytes (the MTU) cannot carry a {message}-byte message behind a {header}-byte header"
    )]
    MessageTooLarge {
        message: usize,
        header: usize,
        packet: usize,
    },
    #[error("the channels never come up again to carry message {0}")]
    NeverUp(usize),
}

/// The ideal sender's latency over `point`'s forward channels, with the
/// channels a simulation of `seed` builds (seeds as in `build.rs`).
pub fn ordered_stream_latency(point: &Point, seed: u64) -> Result<IdealLatency, IdealError> {
    ordered_stream_latency_with(point, seed, Copies::Once)
}

/// As [`ordered_stream_latency`], with or without second copies.
pub fn ordered_stream_latency_with(
    point: &Point,
    seed: u64,
    copies: Copies,
) -> Result<IdealLatency, IdealError> {
    let (flow, window) = match &point.workload {
        Workload::Messages {
            forward, duration, ..
        } if point.topology.clients().count() == 1 => (*forward, *duration),
        _ => return Err(IdealError::NotOneMessageStream),
    };
    let header = point.header_bytes as usize;
    // The scenario checks that every channel's buffer holds an MTU.
    let packet = usize::from(point.link.mtu);
    if header + flow.size > packet || flow.size == 0 {
        return Err(IdealError::MessageTooLarge {
            message: flow.size,
            header,
            packet,
        });
    }
    let bundle = Bundle::with_outage_seed(
        point.link.forward.clone(),
        derive_seed(seed, 1),
        derive_seed(seed, 3),
    )?;
    let offered: Vec<Duration> = (0u32..)
        .map(|i| flow.interval() * i)
        .take_while(|&at| at < window)
        .collect();
    let sender = IdealSender {
        channels: bundle.channels().to_vec(),
        header,
        per_packet: (packet - header) / flow.size,
        size: flow.size,
        copies,
    };
    let arrivals = sender.deliver(&offered)?;
    // The receiver hands a message over once it and all before it have
    // arrived: a time that never goes back.
    let handed_over: Vec<Duration> = arrivals
        .iter()
        .scan(Duration::ZERO, |latest, &arrived| {
            *latest = (*latest).max(arrived);
            Some(*latest)
        })
        .collect();
    let mut latencies: Vec<Duration> = handed_over
        .iter()
        .zip(&offered)
        .map(|(&got, &at)| got - at)
        .collect();
    let in_window = handed_over.partition_point(|&got| got <= window);
    Ok(IdealLatency {
        messages: latencies.len(),
        p50_s: percentile(&mut latencies, 50.0),
        p95_s: percentile(&mut latencies, 95.0),
        actual_bps: (in_window * flow.size * 8) as f64 / window.as_secs_f64(),
    })
}

struct IdealSender {
    channels: Vec<Channel>,
    header: usize,
    /// Messages one packet carries at most.
    per_packet: usize,
    size: usize,
    copies: Copies,
}

/// The arrival of a message no copy of which is on its way yet.
const NOT_SENT: Duration = Duration::MAX;

/// Where the messages are: offered and not yet given a channel, given one
/// and waiting for its line, lost and waiting to go again.
#[derive(Default)]
struct Backlog {
    unassigned: BTreeSet<usize>,
    /// Per channel, the messages it will send, oldest first.
    assigned: Vec<VecDeque<usize>>,
    /// Lost messages, each with the instant the sender learns of it.
    lost: Vec<(Duration, usize)>,
}

impl IdealSender {
    /// When each message (offered at `offered[i]`) arrives (its first
    /// copy).
    fn deliver(mut self, offered: &[Duration]) -> Result<Vec<Duration>, IdealError> {
        let mut arrivals = vec![NOT_SENT; offered.len()];
        // Every message before this one has arrived.
        let mut oldest_in_flight = 0;
        let mut backlog = Backlog {
            assigned: vec![VecDeque::new(); self.channels.len()],
            ..Backlog::default()
        };
        let mut next_new = 0;
        let mut now = Duration::ZERO;
        loop {
            while next_new < offered.len() && offered[next_new] <= now {
                backlog.unassigned.insert(next_new);
                next_new += 1;
            }
            // A lost copy goes again only if no other copy is on its way.
            backlog.lost.retain(|&(_, message)| arrivals[message] == NOT_SENT);
            let (due, later) = backlog.lost.iter().partition(|&&(at, _)| at <= now);
            backlog.lost = later;
            backlog
                .unassigned
                .extend(due.into_iter().map(|(_, message): (Duration, usize)| message));
            for (channel, queue) in self.channels.iter_mut().zip(&mut backlog.assigned) {
                if !channel.is_up(now) {
                    backlog.unassigned.extend(queue.drain(..));
                }
            }
            while let Some(&message) = backlog.unassigned.first() {
                let Some(channel) = self.earliest_expected_arrival(now, &backlog.assigned) else {
                    break;
                };
                if self.commit_at(now, channel, &backlog.assigned) > now {
                    break;
                }
                backlog.unassigned.pop_first();
                backlog.assigned[channel].push_back(message);
            }
            for channel in 0..self.channels.len() {
                if self.channels[channel].idle_at() > now || backlog.assigned[channel].is_empty() {
                    continue;
                }
                let queue = &mut backlog.assigned[channel];
                let batch: Vec<usize> = queue.drain(..queue.len().min(self.per_packet)).collect();
                match self.send(now, channel, batch.len()) {
                    Ok(at) => batch.iter().for_each(|&m| arrivals[m] = arrivals[m].min(at)),
                    Err(learnt) => backlog.lost.extend(batch.iter().map(|&m| (learnt, m))),
                }
            }
            while oldest_in_flight < next_new && arrivals[oldest_in_flight] <= now {
                oldest_in_flight += 1;
            }
            let copying = self.copies == Copies::IntoIdleLines && oldest_in_flight < next_new;
            if copying && backlog.unassigned.is_empty() {
                self.send_copies(now, &backlog, &mut arrivals[oldest_in_flight..next_new]);
            }
            match self.next_event(now, &backlog, offered.get(next_new).copied(), copying) {
                Some(next) => now = next,
                None if next_new == offered.len() && backlog.is_empty() => return Ok(arrivals),
                None => return Err(IdealError::NeverUp(backlog.oldest().unwrap_or(next_new))),
            }
        }
    }

    /// Gives each up line that is idle with nothing to send a copy of the
    /// oldest messages of `in_flight` (their arrivals, oldest first) that
    /// it would bring sooner, by its mean delay; a copy that arrives
    /// sooner stands as the message's arrival, a lost one is forgotten.
    fn send_copies(&mut self, now: Duration, backlog: &Backlog, in_flight: &mut [Duration]) {
        for channel in 0..self.channels.len() {
            let line = &mut self.channels[channel];
            if !line.is_up(now) || line.idle_at() > now || !backlog.assigned[channel].is_empty() {
                continue;
            }
            let sooner = now + self.line_time(channel, 1) + self.channels[channel].config().delay;
            let late: Vec<usize> = (0..in_flight.len())
                .filter(|&m| in_flight[m] != NOT_SENT && in_flight[m] > sooner)
                .take(self.per_packet)
                .collect();
            if late.is_empty() {
                continue;
            }
            if let Ok(at) = self.send(now, channel, late.len()) {
                late.iter().for_each(|&m| in_flight[m] = in_flight[m].min(at));
            }
        }
    }

    /// Line time of `messages` messages on `channel`, in as few packets
    /// as carry them.
    fn line_time(&self, channel: usize, messages: usize) -> Duration {
        let config = self.channels[channel].config();
        let packets = messages.div_ceil(self.per_packet);
        let bytes = packets * (self.header + config.framing_bytes as usize) + messages * self.size;
        Duration::from_secs_f64(bytes as f64 * 8.0 / config.rate_bps as f64)
    }

    /// The up channel that would deliver one more message first, behind
    /// the messages already given to it, by its line rate and mean delay.
    fn earliest_expected_arrival(&mut self, now: Duration, assigned: &[VecDeque<usize>]) -> Option<usize> {
        let up: Vec<usize> = (0..self.channels.len())
            .filter(|&c| self.channels[c].is_up(now))
            .collect();
        up.into_iter().min_by_key(|&c| {
            let channel = &self.channels[c];
            channel.idle_at().max(now) + self.line_time(c, assigned[c].len() + 1) + channel.config().delay
        })
    }

    /// From when one more message may be given to `channel`: once it
    /// would arrive there no later than by a full packet started at once
    /// on the slowest channel up. Given sooner, a backlog would be dealt
    /// out to the channels' queues, in order within each but not across
    /// them, where a channel coming back after a dropped call could not
    /// take any of it.
    fn commit_at(&mut self, now: Duration, channel: usize, assigned: &[VecDeque<usize>]) -> Duration {
        let slowest = self
            .channels
            .iter_mut()
            .filter_map(|c| c.is_up(now).then(|| c.config().delay))
            .max()
            .unwrap_or_default();
        let line = &self.channels[channel];
        let arrival =
            line.idle_at() + self.line_time(channel, assigned[channel].len() + 1) + line.config().delay;
        arrival.saturating_sub(slowest + self.line_time(channel, self.per_packet))
    }

    /// Puts a packet of `messages` messages on `channel` at `now`: its
    /// arrival, or the instant the sender learns it was lost.
    fn send(&mut self, now: Duration, channel: usize, messages: usize) -> Result<Duration, Duration> {
        let mut packet = vec![0; self.header + messages * self.size];
        let line = &mut self.channels[channel];
        match line.transmit(now, &mut packet) {
            Fate::Delivered { at, .. } => Ok(at),
            Fate::Dropped(DropCause::Outage) => {
                let dropped = line.next_change(now).unwrap_or(now);
                Err(dropped.min(line.idle_at()).max(now))
            }
            Fate::Dropped(DropCause::BitErrors | DropCause::Buffer) => Err(line.idle_at().max(now)),
        }
    }

    /// The next instant anything can change: a message offered, a lost
    /// one free to go again, a line with messages for it falling idle, a
    /// channel going down or up while messages wait (or, `copying`, while
    /// any are in flight). `None` if nothing will.
    fn next_event(
        &mut self,
        now: Duration,
        backlog: &Backlog,
        next_offered: Option<Duration>,
        copying: bool,
    ) -> Option<Duration> {
        let mut events: Vec<Duration> = next_offered.into_iter().collect();
        events.extend(backlog.lost.iter().map(|&(at, _)| at));
        for index in 0..self.channels.len() {
            let waiting = !backlog.unassigned.is_empty();
            if waiting && self.channels[index].is_up(now) {
                events.push(self.commit_at(now, index, &backlog.assigned));
            }
            let channel = &mut self.channels[index];
            if !backlog.assigned[index].is_empty() || copying {
                events.push(channel.idle_at());
            }
            if !backlog.assigned[index].is_empty() || waiting || copying {
                events.extend(channel.next_change(now));
            }
        }
        events.into_iter().filter(|&at| at > now).min()
    }
}

impl Backlog {
    fn is_empty(&self) -> bool {
        self.unassigned.is_empty() && self.lost.is_empty() && self.assigned.iter().all(VecDeque::is_empty)
    }

    /// The oldest message not yet sent.
    fn oldest(&self) -> Option<usize> {
        let assigned = self.assigned.iter().filter_map(|q| q.front().copied());
        let lost = self.lost.iter().map(|&(_, m)| m);
        self.unassigned.iter().copied().chain(assigned).chain(lost).min()
    }
}
