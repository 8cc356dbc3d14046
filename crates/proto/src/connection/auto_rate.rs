//! A route rate that follows the path (`rate = "auto"`).
//!
//! A configured route rate is right only while the link is what it was
//! configured for: on a bundle of circuits that drop calls, or a link whose
//! rate is changed under it, a sender pacing at the configured rate fills
//! the link's queue while the link is slower, and wastes it while the link
//! is faster. Here the route's connections measure instead what the path
//! carries, as BBR's delivery-rate sampling does, and pace at that.
//!
//! The measure is taken over rounds of the smallest RTT: the bytes the path
//! delivered in the round (acknowledged or SACKed) over the round's length,
//! scaled by what the route's packets cost on the wire (headers and
//! framing) per byte of payload, and by the share of what it carries that
//! the link corrupts. That share is learnt from the losses of rounds
//! without a queue: on a link that corrupts packets the sender must keep
//! the link full, not slow down by the error rate
//! (docs/spec/scps-tp-options.md, "Corruption experienced, kind 23"). What
//! tells congestion apart is the queue: the smallest delivery RTT of the
//! last quarter of a round, above the smallest ever by more than the path's
//! jitter explains, is a queue standing at the bottleneck, and so is a
//! round that carries well short of what the round before sent; the rate
//! the path delivered meanwhile, if short of what was sent, is the
//! bottleneck's rate.
//!
//! The phases are BBR's, simplified: *startup* doubles the rate each round
//! until the measure stops growing or a queue forms; *drain* sends at half
//! the measured rate for as long as the queue it found takes to empty;
//! *cruise* sends at the measured rate, and one round in eight at 5/4 of it,
//! so that a faster path is found: a probe carried in full without a queue
//! goes on probing round after round, which follows a rate step up within
//! a few rounds, and a queue seen while cruising takes the measure down to
//! what was carried and drains, which follows a step down within two.
//!
//! A round in which the route sent less than its rate allowed (the bucket
//! overflowed: the application had nothing to send) may raise the measure
//! but not lower it. A round in which nothing was acknowledged says
//! nothing, and leaves the rate as it was: through an outage the route
//! keeps the rate it had, and resumes at it.

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Instant;

/// Gains on the measured rate: startup's doubles what is delivered each
/// round trip although the measure lags a round behind (BBR's 2/ln 2).
const STARTUP_GAIN: f64 = 2.89;
const DRAIN_GAIN: f64 = 0.5;
const PROBE_GAIN: f64 = 1.25;
/// Rounds of a cruise cycle; the first probes. Eight, as BBR's gain
/// cycle: every probe risks a queue (a link shaped by a token bucket lets
/// a probe, or the burst after a lull, through faster than its rate, and
/// the probe that follows that measure overshoots), and with a probe every
/// four rounds gateways at BER 1e-5 on geo-8mbit carried 0.904 of the
/// limit over sixteen seeds, against 0.917 with eight.
const CYCLE_ROUNDS: u8 = 8;
/// Startup ends after this many rounds without the measure growing by
/// [`STARTUP_GROWTH`].
const STARTUP_STALL_ROUNDS: u8 = 2;
const STARTUP_GROWTH: f64 = 1.25;
/// A measure this far above the rate (most of a probe's gain, delivered
/// without a queue) means the path may be faster still: probing goes on
/// round after round, a quarter more each, until it finds no more.
const STEP_UP: f64 = 1.15;
/// A queue is standing when the last quarter round's smallest RTT exceeds
/// the smallest ever by this share of it, or by [`MIN_QUEUE_DELAY`],
/// whichever is more.
const QUEUE_SHARE: u32 = 8;
const MIN_QUEUE_DELAY: Duration = Duration::from_millis(5);
/// Nor is a delay within this many times the path's jitter a queue: on a
/// link whose delay varies by seconds (an Iridium call), RTTs above the
/// smallest are the rule.
const JITTER_MARGIN: f64 = 2.0;
/// ... up to this share of the smallest RTT: losses and their repair make
/// successive RTTs differ too, and a queue must still show.
const JITTER_SHARE_MAX: u32 = 2;
/// The smallest RTT is replaced by a round's after this long without a
/// sample as small (the path may have changed), as BBR forgets its own.
const MIN_RTT_LIFETIME: Duration = Duration::from_secs(10);
/// Rounds before the first RTT sample, and never shorter than this.
const MIN_ROUND: Duration = Duration::from_millis(10);
/// A round that carries less than this share of what was sent the round
/// before, and of the path's rate, shows a queue building.
const SHORT_OF_SENT: f64 = 0.8;
/// A path that carried this share of what was sent has carried it all
/// (what was sent is measured from marks a quarter apart).
const CARRIED_ALL: f64 = 0.9;
/// Quarter ends at which what was sent is kept: three rounds' worth.
const SENT_MARKS: usize = 12;
/// A round lasts until it has carried this many of the largest packets,
/// up to this many times its length.
const MIN_ROUND_PACKETS: u64 = 4;
const MAX_ROUND_STRETCH: u32 = 8;
/// Measures of the last rounds kept: the rate is the largest of them.
const RECENT_ROUNDS: usize = 4;
/// The weight of a round in the corruption share, and the most it may be
/// (beyond it the link carries too little for a rate to mean much).
const CORRUPTION_GAIN: f64 = 0.25;
const MAX_CORRUPTION: f64 = 0.5;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Phase {
    Startup {
        best_bps: f64,
        stalled_rounds: u8,
    },
    Drain {
        until: Instant,
    },
    Cruise {
        round: u8,
    },
    /// Probing round after round, as long as each probe finds more.
    ProbeUp {
        stalled_rounds: u8,
    },
}

impl Phase {
    fn gain(self) -> f64 {
        match self {
            Phase::Startup { .. } => STARTUP_GAIN,
            Phase::Drain { .. } => DRAIN_GAIN,
            Phase::Cruise { round: 0 } | Phase::ProbeUp { .. } => PROBE_GAIN,
            Phase::Cruise { .. } => 1.0,
        }
    }
}

/// One round's counts.
#[derive(Debug, Clone, Copy)]
struct Round {
    start: Instant,
    /// Payload bytes delivered (acknowledged or SACKed) and judged lost.
    delivered: u64,
    lost: u64,
    /// The quarter of the round the latest ACK fell in.
    quarter: usize,
    /// When the current quarter began, and what it delivered and lost:
    /// startup's measure (a round's being too far behind), and what a
    /// queue seen in it is judged by.
    quarter_start: Instant,
    quarter_delivered: u64,
    quarter_lost: u64,
    /// The smallest delivery RTT sampled in the current quarter, and in
    /// the quarter before it.
    quarter_min_rtt: Option<Duration>,
    last_quarter_min_rtt: Option<Duration>,
    /// The smallest of all the round's samples.
    min_rtt: Option<Duration>,
    /// The route sent less than its rate allowed at some time in it.
    idle: bool,
}

impl Round {
    fn new(start: Instant) -> Round {
        Round {
            start,
            delivered: 0,
            lost: 0,
            quarter: 0,
            quarter_start: start,
            quarter_delivered: 0,
            quarter_lost: 0,
            quarter_min_rtt: None,
            last_quarter_min_rtt: None,
            min_rtt: None,
            idle: false,
        }
    }

    /// The smallest RTT of the latest quarter that has a sample.
    fn recent_min_rtt(&self) -> Option<Duration> {
        self.quarter_min_rtt.or(self.last_quarter_min_rtt)
    }
}

/// The route's measured rate and the phase of its search.
#[derive(Debug, Clone)]
pub(crate) struct AutoRate {
    min_bps: f64,
    max_bps: f64,
    /// The first flight, bytes: until a round is measured the rate is one
    /// such flight per RTT.
    start_bytes: u64,
    /// What the path carries, bit/s on the wire, as last measured.
    path_bps: f64,
    /// Measures of the last rounds, newest last.
    recent: Vec<f64>,
    phase: Phase,
    /// The smallest delivery RTT and when it was sampled.
    min_rtt: Option<(Duration, Instant)>,
    /// The latest delivery RTT, and how much successive ones differ.
    last_rtt: Option<Duration>,
    jitter: Duration,
    /// The round before the current one was idle: what the current one
    /// delivers was sent then.
    last_round_idle: bool,
    /// Only segments sent from this time on tell of the queue: those sent
    /// before the last drain ended met the queue it was draining.
    queue_news_from: Instant,
    round: Round,
    /// The share of what the link carries that it corrupts.
    corruption: f64,
    /// Bytes sent on the wire (headers and framing) and payload bytes
    /// sent, since the route began: their ratio turns payload delivered
    /// into the wire rate that carried it.
    sent_bytes: u64,
    payload_bytes: u64,
    /// The count of bytes sent at each of the last quarters' ends: what
    /// was sent since a time, which a drain must take out of the queue.
    sent_marks: VecDeque<(Instant, u64)>,
    /// The largest payload a packet has carried.
    largest_payload: u64,
}

impl AutoRate {
    /// A route starting at a flight of `start_bytes` per RTT (before the
    /// first RTT is measured, per second: RFC 6298's first RTO), kept
    /// within `min_bps..=max_bps`.
    pub(crate) fn new(start_bytes: u64, min_bps: u64, max_bps: u64, now: Instant) -> AutoRate {
        let (min_bps, max_bps) = (min_bps as f64, max_bps.max(min_bps) as f64);
        AutoRate {
            min_bps,
            max_bps,
            start_bytes,
            path_bps: (start_bytes as f64 * 8.0).clamp(min_bps, max_bps),
            recent: Vec::with_capacity(RECENT_ROUNDS),
            phase: Phase::Startup {
                best_bps: 0.0,
                stalled_rounds: 0,
            },
            min_rtt: None,
            last_rtt: None,
            jitter: Duration::ZERO,
            last_round_idle: false,
            queue_news_from: now,
            round: Round::new(now),
            corruption: 0.0,
            sent_bytes: 0,
            payload_bytes: 0,
            sent_marks: VecDeque::with_capacity(SENT_MARKS),
            largest_payload: 0,
        }
    }

    /// The rate to pace at now, bit/s.
    pub(crate) fn pacing_bps(&self) -> u64 {
        (self.path_bps * self.phase.gain()).clamp(self.min_bps, self.max_bps) as u64
    }

    /// The path's rate as last measured, bit/s on the wire.
    pub(crate) fn path_bps(&self) -> u64 {
        self.path_bps as u64
    }

    /// Whether data has gone on the route: the measure needs it.
    pub(crate) fn has_sent_data(&self) -> bool {
        self.payload_bytes > 0
    }

    /// A packet of `wire_bytes` (headers and framing) carrying `payload`
    /// bytes was sent.
    pub(crate) fn on_sent(&mut self, wire_bytes: usize, payload: usize) {
        self.sent_bytes += wire_bytes as u64;
        self.payload_bytes += payload as u64;
        self.largest_payload = self.largest_payload.max(payload as u64);
    }

    /// The bucket could have sent more than it was asked to.
    pub(crate) fn on_idle(&mut self) {
        self.round.idle = true;
    }

    /// An ACK told of payload bytes `delivered` and `lost`, and, if it
    /// covered a segment sent once that arrived with it, its RTT.
    pub(crate) fn on_ack(&mut self, now: Instant, delivered: u64, lost: u64, rtt: Option<Duration>) {
        let round_length = self.round_length();
        let quarter =
            (now.saturating_since(self.round.start).as_nanos() * 4 / round_length.as_nanos()) as usize;
        if quarter != self.round.quarter {
            self.end_quarter(now, quarter);
        }
        if let Some(rtt) = rtt {
            self.sample_rtt(now, rtt);
        }
        self.round.delivered += delivered;
        self.round.lost += lost;
        self.round.quarter_delivered += delivered;
        self.round.quarter_lost += lost;
        if let Phase::Drain { until } = self.phase
            && now >= until
        {
            self.phase = Phase::Cruise { round: 1 };
        }
        let elapsed = now.saturating_since(self.round.start);
        // A round measures a few packets at least: on a link of a few
        // kbit/s a round trip carries one or two, and a measure of one
        // packet or two is mostly the luck of when they fell.
        let measurable = self.measurable(self.round.delivered + self.round.lost);
        if elapsed >= round_length && (measurable || elapsed >= round_length * MAX_ROUND_STRETCH) {
            self.end_round(now);
        }
    }

    /// Startup multiplies what it sends each round, and looks at each
    /// quarter round: its rate rises with what the quarter carried, and a
    /// queue it has built is drained as soon as a quarter shows it.
    fn end_quarter(&mut self, now: Instant, quarter: usize) {
        let round = &mut self.round;
        let (delivered, lost) = (round.quarter_delivered, round.quarter_lost);
        let quarter_start = round.quarter_start;
        let elapsed = now.saturating_since(quarter_start);
        round.quarter = quarter;
        round.quarter_start = now;
        round.quarter_delivered = 0;
        round.quarter_lost = 0;
        round.last_quarter_min_rtt = round.quarter_min_rtt.take();
        // A quarter's measure counts if it saw a few packets.
        let measurable = self.measurable(delivered + lost);
        if self.sent_marks.len() == SENT_MARKS {
            self.sent_marks.pop_front();
        }
        self.sent_marks.push_back((now, self.sent_bytes));
        let queue = self.queue_delay();
        match self.phase {
            Phase::Startup { .. } => {
                if let Some(delay) = queue {
                    self.drain(now, delay);
                } else if let Some(rate) = self.wire_rate(delivered + lost, elapsed) {
                    self.path_bps = self.path_bps.max(rate.clamp(self.min_bps, self.max_bps));
                }
            }
            Phase::Cruise { .. } | Phase::ProbeUp { .. } if !self.round.idle => {
                // A queue seen in a quarter is acted on at once: after a
                // step down, every moment at the old rate adds to it.
                let carrying = self
                    .wire_rate(delivered, elapsed)
                    .filter(|_| delivered > 0 && measurable)
                    .map(|rate| rate / (1.0 - self.corruption));
                if let (Some(delay), Some(carrying)) = (queue, carrying) {
                    self.congested(now, carrying, delay, quarter_start);
                }
            }
            _ => {}
        }
    }

    /// A queue of `delay` stood while the path carried `measured` (from
    /// `since` until now). Drains what the queue holds. If the path carried
    /// less than was sent a round before (what it carried was sent then),
    /// that is its rate now; if it carried all of it, the rate stands: what
    /// is sent at a rate is carried at that rate, and would otherwise take
    /// the rate down with every queue seen (or jitter taken for one).
    fn congested(&mut self, now: Instant, measured: f64, delay: Duration, since: Instant) {
        let length = self.round_length();
        let sent = self.sent_bps(earlier(since, length), earlier(now, length));
        if sent.is_none_or(|sent| measured < CARRIED_ALL * sent) {
            self.recent.clear();
            self.remember(measured);
        }
        self.drain(now, delay);
    }

    /// The rate sent on the wire between two instants, from the marks of
    /// the quarters' ends nearest before them, if they are far enough
    /// apart to tell.
    fn sent_bps(&self, from: Instant, to: Instant) -> Option<f64> {
        let ((from_mark, sent_from), (to_mark, sent_to)) = (self.mark_before(from)?, self.mark_before(to)?);
        let elapsed = to_mark.saturating_since(from_mark);
        (elapsed * 2 >= to.saturating_since(from) && !elapsed.is_zero())
            .then(|| (sent_to - sent_from) as f64 * 8.0 / elapsed.as_secs_f64())
    }

    /// The latest quarter's end at or before `at`, with the bytes sent by
    /// then.
    fn mark_before(&self, at: Instant) -> Option<(Instant, u64)> {
        self.sent_marks
            .iter()
            .rev()
            .find(|(mark, _)| *mark <= at)
            .copied()
    }

    /// The rate on the wire that carried `payload` bytes in `elapsed`.
    fn wire_rate(&self, payload: u64, elapsed: Duration) -> Option<f64> {
        if self.payload_bytes == 0 || elapsed.is_zero() {
            return None;
        }
        let wire_per_payload = self.sent_bytes as f64 / self.payload_bytes as f64;
        Some(payload as f64 * 8.0 * wire_per_payload / elapsed.as_secs_f64())
    }

    /// Whether `carried` bytes are enough packets to measure by.
    fn measurable(&self, carried: u64) -> bool {
        carried >= MIN_ROUND_PACKETS * self.largest_payload
    }

    fn round_length(&self) -> Duration {
        self.min_rtt.map_or(MIN_ROUND, |(rtt, _)| rtt.max(MIN_ROUND))
    }

    fn sample_rtt(&mut self, now: Instant, rtt: Duration) {
        if self.min_rtt.is_none() && self.recent.is_empty() {
            let flight_bps = self.start_bytes as f64 * 8.0 / rtt.max(MIN_ROUND).as_secs_f64();
            self.path_bps = flight_bps.clamp(self.min_bps, self.max_bps);
        }
        if self.min_rtt.is_none_or(|(min, _)| rtt <= min) {
            self.min_rtt = Some((rtt, now));
        }
        if let Some(last) = self.last_rtt.replace(rtt) {
            // RFC 3550's interarrival jitter, over successive RTTs: a
            // queue that grows moves them little, a jittery path much.
            let step = rtt.abs_diff(last).as_secs_f64();
            let jitter = self.jitter.as_secs_f64();
            self.jitter = Duration::from_secs_f64(jitter + (step - jitter) / 16.0);
        }
        self.round.min_rtt = Some(self.round.min_rtt.map_or(rtt, |min| min.min(rtt)));
        let sent_at = earlier(now, rtt);
        if sent_at >= self.queue_news_from {
            self.round.quarter_min_rtt = Some(self.round.quarter_min_rtt.map_or(rtt, |min| min.min(rtt)));
        }
    }

    /// The queue standing at the bottleneck at the end of the round, as a
    /// delay, if one stands.
    fn queue_delay(&self) -> Option<Duration> {
        let (min_rtt, _) = self.min_rtt?;
        let delay = self.round.recent_min_rtt()?.saturating_sub(min_rtt);
        let jitter = self.jitter.mul_f64(JITTER_MARGIN).min(min_rtt / JITTER_SHARE_MAX);
        let threshold = (min_rtt / QUEUE_SHARE).max(MIN_QUEUE_DELAY).max(jitter);
        (delay > threshold).then_some(delay)
    }

    fn end_round(&mut self, now: Instant) {
        let round = self.round;
        let queue = self.queue_delay();
        self.round = Round::new(now);
        // What a round delivers was sent a round before: either round's
        // idleness makes its measure the application's.
        let sent_idle = std::mem::replace(&mut self.last_round_idle, round.idle);
        let idle = round.idle || sent_idle;
        if let (Some((_, at)), Some(round_min)) = (self.min_rtt, round.min_rtt)
            && now.saturating_since(at) > MIN_RTT_LIFETIME
        {
            // Not seen again for long: the path may have changed. The
            // round's smallest, not one sample, which may have queued.
            self.min_rtt = Some((round_min, now));
        }
        let elapsed = now.saturating_since(round.start);
        let (Some(delivered), Some(carried)) = (
            self.wire_rate(round.delivered, elapsed)
                .filter(|_| round.delivered > 0),
            self.wire_rate(round.delivered + round.lost, elapsed),
        ) else {
            // Nothing arrived: no news of the path (an outage, or nothing
            // sent). The rate stays.
            return;
        };
        let measured = match self.phase {
            // Before the link's corruption is learnt, what it lost counts
            // as carried, so that startup grows as fast on a noisy link;
            // a queue overflowing ends startup anyway.
            Phase::Startup { .. } => carried,
            _ => delivered / (1.0 - self.corruption),
        };
        // An idle round measures the application, not the path: it may
        // show the path is faster, never that it is slower.
        let counts = !idle || measured > self.path_bps;
        match self.phase {
            Phase::Startup {
                best_bps,
                stalled_rounds,
            } => {
                if counts {
                    self.remember(measured);
                }
                let (best_bps, stalled_rounds) = if measured >= best_bps * STARTUP_GROWTH {
                    (measured, 0)
                } else if counts {
                    (best_bps, stalled_rounds + 1)
                } else {
                    (best_bps, stalled_rounds)
                };
                self.phase = Phase::Startup {
                    best_bps,
                    stalled_rounds,
                };
                if let Some(delay) = queue {
                    self.drain(now, delay);
                } else if stalled_rounds >= STARTUP_STALL_ROUNDS {
                    self.phase = Phase::Cruise { round: 1 };
                }
            }
            Phase::Drain { .. } => {}
            Phase::Cruise { .. } | Phase::ProbeUp { .. } => {
                let backlog = queue.or_else(|| self.queue_built(&round, carried));
                if let Some(delay) = backlog.filter(|_| !idle) {
                    self.congested(now, measured, delay, round.start);
                    return;
                }
                let before = self.path_bps;
                if counts {
                    if matches!(self.phase, Phase::Cruise { .. }) {
                        self.learn_corruption(&round);
                    }
                    self.remember(measured);
                }
                let grew = measured > before * STEP_UP;
                self.phase = match self.phase {
                    Phase::Cruise { .. } | Phase::ProbeUp { .. } if grew => {
                        Phase::ProbeUp { stalled_rounds: 0 }
                    }
                    Phase::Cruise { round } => Phase::Cruise {
                        round: (round + 1) % CYCLE_ROUNDS,
                    },
                    // The measure lags a round: two without growth end it.
                    Phase::ProbeUp { stalled_rounds } if stalled_rounds >= 1 => Phase::Cruise { round: 1 },
                    Phase::ProbeUp { stalled_rounds } => Phase::ProbeUp {
                        stalled_rounds: stalled_rounds + 1,
                    },
                    other => other,
                };
            }
        }
    }

    /// The queue a round shows by carrying well short of what was sent the
    /// round before (what it carries was sent then), as a delay: after the
    /// path slows down, before any RTT shows the queue (a drain's end
    /// leaves the RTTs blind for a round trip and the queue), the bytes
    /// sent and not carried are in it.
    fn queue_built(&self, round: &Round, carried_bps: f64) -> Option<Duration> {
        let length = self.round_length();
        let sent_bps = self.sent_bps(earlier(round.start, length), round.start)?;
        let short = carried_bps < SHORT_OF_SENT * sent_bps && carried_bps < SHORT_OF_SENT * self.path_bps;
        short.then(|| length.mul_f64((sent_bps - carried_bps) / carried_bps))
    }

    /// Learns from a round without a queue what share of what the link
    /// carries it corrupts.
    fn learn_corruption(&mut self, round: &Round) {
        let carried = (round.delivered + round.lost) as f64;
        let share = round.lost as f64 / carried;
        self.corruption += CORRUPTION_GAIN * (share - self.corruption);
        self.corruption = self.corruption.clamp(0.0, MAX_CORRUPTION);
    }

    /// Keeps `measured` among the recent rounds' measures; the path's rate
    /// is the largest of them.
    fn remember(&mut self, measured: f64) {
        if self.recent.len() == RECENT_ROUNDS {
            self.recent.remove(0);
        }
        self.recent.push(measured);
        let largest = self.recent.iter().copied().fold(0.0, f64::max);
        self.path_bps = largest.clamp(self.min_bps, self.max_bps);
    }

    /// Sends below the path's rate until the queue has emptied: the queue
    /// of `delay` seen, and what was sent beyond the path's rate (as
    /// measured now) since the packet that showed it left, a round trip
    /// and that queue ago.
    fn drain(&mut self, now: Instant, delay: Duration) {
        let seen_at = earlier(now, self.round_length() + delay);
        let excess_seconds = self
            .mark_before(seen_at)
            .or(self.sent_marks.front().copied())
            .map_or(0.0, |(at, sent)| {
                let elapsed = now.saturating_since(at).as_secs_f64();
                let sent_bits = (self.sent_bytes - sent) as f64 * 8.0;
                (sent_bits - self.path_bps * elapsed).max(0.0) / self.path_bps
            });
        let queue_seconds = delay.as_secs_f64() + excess_seconds;
        let seconds = queue_seconds / (1.0 - DRAIN_GAIN);
        let until = now + Duration::from_secs_f64(seconds);
        self.phase = Phase::Drain { until };
        self.queue_news_from = until;
        self.round.quarter_min_rtt = None;
        self.round.last_quarter_min_rtt = None;
    }
}

/// `by` before `at`, or the start of time.
fn earlier(at: Instant, by: Duration) -> Instant {
    Instant::from_nanos(
        at.as_nanos()
            .saturating_sub(u64::try_from(by.as_nanos()).unwrap_or(u64::MAX)),
    )
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;

    const PACKET: u64 = 1500;

    /// xorshift64: the tests' random numbers, from a seed they print.
    struct Xorshift(u64);

    impl Xorshift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }

        /// In [0, 1).
        fn fraction(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// A sender that always has data, paced by an [`AutoRate`], through a
    /// bottleneck of a rate that may change, a drop-tail buffer, random
    /// corruption, and a fixed propagation RTT; every packet that arrives
    /// is acknowledged at once. Packets are all payload, so the wire rate
    /// is the payload rate.
    struct Path {
        rate_bps: Box<dyn Fn(Instant) -> f64>,
        rtt: Duration,
        buffer_bytes: u64,
        corruption: f64,
        seed: u64,
    }

    /// What happened, sampled every round trip of the path.
    struct Trace {
        /// (time, pacing rate, queue delay at the bottleneck).
        samples: Vec<(Instant, u64, Duration)>,
        delivered_bytes: u64,
        /// When the buffer last overflowed.
        last_drop: Instant,
    }

    impl Path {
        fn run(&self, auto: &mut AutoRate, until: Instant) -> Trace {
            let mut random = Xorshift(self.seed);
            let mut now = Instant::ZERO;
            let mut next_send = Instant::ZERO;
            // The bottleneck's last departure, and the ACKs on their way:
            // (arrival at the sender, send time, delivered).
            let mut line_free = Instant::ZERO;
            let mut acks: VecDeque<(Instant, Instant, bool)> = VecDeque::new();
            let mut lost_unreported = 0;
            let mut trace = Trace {
                samples: Vec::new(),
                delivered_bytes: 0,
                last_drop: Instant::ZERO,
            };
            let mut next_sample = Instant::ZERO;
            while now < until {
                let ack_due = acks.front().map_or(Instant::FAR_FUTURE, |a| a.0);
                now = next_send.min(ack_due);
                if now == ack_due {
                    let (_, sent, delivered) = acks.pop_front().unwrap();
                    if !delivered {
                        lost_unreported += PACKET;
                        continue;
                    }
                    trace.delivered_bytes += PACKET;
                    let lost = std::mem::take(&mut lost_unreported);
                    auto.on_ack(now, PACKET, lost, Some(now.saturating_since(sent)));
                    continue;
                }
                auto.on_sent(PACKET as usize, PACKET as usize);
                let one_way = self.rtt / 2;
                let at_line = now + one_way / 2;
                let rate = (self.rate_bps)(at_line);
                let queue = line_free.saturating_since(at_line);
                let queued_bytes = (queue.as_secs_f64() * rate / 8.0) as u64;
                if now >= next_sample {
                    trace.samples.push((now, auto.pacing_bps(), queue));
                    next_sample = now + self.rtt;
                }
                if queued_bytes + PACKET > self.buffer_bytes {
                    trace.last_drop = now;
                    // Judged lost when the next packet's ACK comes back.
                    acks.push_back((now + self.rtt + queue, now, false));
                } else {
                    // Served at the rate of the moment its service begins.
                    let start = line_free.max(at_line);
                    let service = Duration::from_secs_f64(PACKET as f64 * 8.0 / (self.rate_bps)(start));
                    line_free = start + service;
                    let corrupted = random.fraction() < self.corruption;
                    let arrival = line_free + one_way / 2;
                    acks.push_back((arrival + one_way, now, !corrupted));
                }
                next_send = now + Duration::from_secs_f64(PACKET as f64 * 8.0 / auto.pacing_bps() as f64);
            }
            trace
        }
    }

    fn geo(rate_bps: impl Fn(Instant) -> f64 + 'static, corruption: f64) -> Path {
        Path {
            rate_bps: Box::new(rate_bps),
            rtt: Duration::from_millis(600),
            buffer_bytes: 1_000_000,
            corruption,
            seed: 0x5eed_1234_abcd,
        }
    }

    fn at_secs(s: u64) -> Instant {
        Instant::from_nanos(s * 1_000_000_000)
    }

    fn auto_rate() -> AutoRate {
        AutoRate::new(14_600, 100, 100_000_000_000, Instant::ZERO)
    }

    /// The mean pacing rate and the largest queue between `from` and `to`.
    fn between(trace: &Trace, from: Instant, to: Instant) -> (f64, Duration) {
        let window: Vec<_> = trace.samples.iter().filter(|s| s.0 >= from && s.0 < to).collect();
        let mean = window.iter().map(|s| s.1 as f64).sum::<f64>() / window.len() as f64;
        let peak = window.iter().map(|s| s.2).max().unwrap_or_default();
        (mean, peak)
    }

    #[test]
    fn finds_the_rate_of_a_clean_path_and_keeps_its_queue_short() {
        let path = geo(|_| 8e6, 0.0);
        let mut auto = auto_rate();
        let trace = path.run(&mut auto, at_secs(60));
        let (mean, peak) = between(&trace, at_secs(20), at_secs(60));
        eprintln!(
            "seed {:#x}: mean pacing {mean:.0} bit/s, peak queue {peak:?}",
            path.seed
        );
        assert!((0.97 * 8e6..=1.1 * 8e6).contains(&mean), "mean pacing {mean}");
        assert!(peak < Duration::from_millis(400), "peak queue {peak:?}");
        // Carried: all but the first seconds' climb.
        let goodput = trace.delivered_bytes as f64 * 8.0 / 60.0;
        assert!(goodput > 0.9 * 8e6, "goodput {goodput}");
    }

    #[test]
    fn corruption_does_not_slow_it_down() {
        // 10% of packets corrupted: the line must stay as busy as without.
        let path = geo(|_| 8e6, 0.1);
        let mut auto = auto_rate();
        let trace = path.run(&mut auto, at_secs(60));
        let (mean, _) = between(&trace, at_secs(20), at_secs(60));
        eprintln!("seed {:#x}: mean pacing {mean:.0} bit/s", path.seed);
        assert!(
            mean > 0.95 * 8e6,
            "paced at {mean} on an 8 Mbit/s line that corrupts 10%"
        );
        assert!(
            trace.last_drop < at_secs(10),
            "the queue overflowed at {:?}, after startup",
            trace.last_drop
        );
    }

    #[test]
    fn follows_a_rate_step_down_and_up_within_a_few_round_trips() {
        // 8 Mbit/s, 4 from 30 s, 8 again from 60 s.
        let rate = |t: Instant| {
            if (at_secs(30)..at_secs(60)).contains(&t) {
                4e6
            } else {
                8e6
            }
        };
        let path = geo(rate, 0.0);
        let mut auto = auto_rate();
        let trace = path.run(&mut auto, at_secs(90));
        // Down: within 5 round trips (3 s) the pacing is within 10% of 4.
        let (after_down, peak_down) = between(&trace, at_secs(33), at_secs(60));
        // Up: within 8 round trips (under 5 s).
        let (after_up, _) = between(&trace, at_secs(65), at_secs(90));
        eprintln!(
            "seed {:#x}: {after_down:.0} after the step down (peak queue {peak_down:?}), {after_up:.0} after the step up",
            path.seed
        );
        assert!(
            (3.8e6..=4.4e6).contains(&after_down),
            "after the step down: {after_down}"
        );
        assert!(
            peak_down < Duration::from_millis(1200),
            "queue after the step down: {peak_down:?}"
        );
        assert!(after_up > 7.6e6, "after the step up: {after_up}");
    }

    #[test]
    fn an_outage_keeps_the_rate_and_an_idle_sender_does_not_lower_it() {
        let mut auto = auto_rate();
        let path = geo(|_| 8e6, 0.0);
        path.run(&mut auto, at_secs(30));
        let before = auto.path_bps();
        assert!(before > 7_500_000, "found {before}");
        // Thirty seconds without an ACK, then ACKs of a trickle from an
        // application with little to send.
        let mut now = at_secs(60);
        for _ in 0..100 {
            auto.on_idle();
            auto.on_sent(1500, 1500);
            auto.on_ack(now, 1500, 0, Some(Duration::from_millis(600)));
            now += Duration::from_millis(100);
        }
        assert_eq!(auto.path_bps(), before, "kept through the outage and the trickle");
    }

    #[test]
    fn a_jittery_path_that_carries_all_it_is_sent_keeps_its_rate() {
        // An Iridium call: 7200 bit/s, round trips of 3 to 6 s in no order.
        // Every packet sent is delivered; the RTTs above the smallest are
        // jitter, not a queue, and must not take the rate down.
        let seed: u64 = 0x1d1d_1d1d;
        eprintln!("seed {seed:#x}");
        let mut random = Xorshift(seed);
        let mut auto = AutoRate::new(4380, 100, 7200, Instant::ZERO);
        let mut now = Instant::ZERO;
        let mut in_flight: VecDeque<Instant> = VecDeque::new();
        let until = at_secs(3600);
        let mut lowest_after_ten_minutes = u64::MAX;
        while now < until {
            // Send at the pacing rate, 1500-byte packets; the path carries
            // 7200 bit/s, so anything paced below it arrives.
            auto.on_sent(1500, 1448);
            in_flight.push_back(now);
            let gap = Duration::from_secs_f64(1500.0 * 8.0 / auto.pacing_bps().min(7200) as f64);
            now += gap;
            while let Some(&sent) = in_flight.front() {
                let rtt = Duration::from_millis(3000 + random.next() % 3000);
                if sent + Duration::from_secs(6) > now {
                    break;
                }
                in_flight.pop_front();
                auto.on_ack(now, 1448, 0, Some(rtt));
            }
            if now > at_secs(600) {
                lowest_after_ten_minutes = lowest_after_ten_minutes.min(auto.path_bps());
            }
        }
        // Measures of a packet or two a round wander (4.7 to 7.2 kbit/s
        // here); what must not happen is the ratchet that took the rate
        // to 100 bit/s, each jitter taken for a queue lowering the rate to
        // what was sent at the rate before.
        eprintln!("lowest rate after ten minutes: {lowest_after_ten_minutes} bit/s");
        assert!(
            lowest_after_ten_minutes > 3600,
            "the rate fell to {lowest_after_ten_minutes} bit/s on a path that carried all it was sent"
        );
    }

    #[test]
    fn stays_within_its_bounds() {
        let mut auto = AutoRate::new(14_600, 1_000_000, 2_000_000, Instant::ZERO);
        let trace = geo(|_| 8e6, 0.0).run(&mut auto, at_secs(30));
        assert!(
            trace
                .samples
                .iter()
                .all(|s| (1_000_000..=2_000_000).contains(&s.1))
        );
        assert_eq!(auto.pacing_bps(), 2_000_000);
    }
}
