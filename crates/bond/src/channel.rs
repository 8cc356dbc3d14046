//! One channel of a bond as its sender sees it: what it was given, what
//! its probes' answers say it delivered, how long they took, and whether
//! it is in use.

use std::collections::VecDeque;
use std::time::Duration;

use scps_proto::recovery::rtt::RttEstimator;

use crate::loss::LossMeter;

/// Whether a channel carries data. Serialized as its [`name`](ChannelState::name).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelState {
    /// In the stripe.
    Up,
    /// Its probes go unanswered: out of the stripe until one is answered.
    Down,
    /// Marginal (far worse than its peers): probes only, until it
    /// recovers.
    Standby,
}

impl ChannelState {
    pub fn name(self) -> &'static str {
        match self {
            ChannelState::Up => "up",
            ChannelState::Down => "down",
            ChannelState::Standby => "standby",
        }
    }
}

/// A probe on its way.
#[derive(Debug, Clone, Copy)]
struct Outstanding {
    seq: u32,
    sent_at: Duration,
    /// Bytes given to the channel up to and including the probe.
    sent_bytes: u64,
    /// The same, with the link's framing of each datagram.
    sent_line_bytes: u64,
    /// Datagrams given to the channel up to and including the probe.
    sent_datagrams: u64,
    /// Whether the bond kept the channel full when it left (its queue at
    /// the bond's bound, and more waiting for it).
    full: bool,
    /// How long the bond believed it would wait behind what the channel
    /// held: what its round trip should exceed the least one by.
    waited: Duration,
}

/// The last answered probe: the start of the next delivery sample.
#[derive(Debug, Clone, Copy)]
struct Answered {
    arrived_at: Duration,
    sent_bytes: u64,
    sent_line_bytes: u64,
    sent_datagrams: u64,
    received: u64,
}

/// Probes remembered while unanswered; older ones are given up.
const OUTSTANDING: usize = 64;
/// Weight of a new sample in a smoothed figure.
const GAIN: f64 = 0.25;
/// The pace a channel is given at, as a share of its estimated rate, one
/// probe interval after the other (BBR's cycle): a quarter more for one
/// interval, so that a channel that can carry more shows it, a quarter
/// less for the next, to drain what that queued if it could not.
const PACING_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Delivery samples the estimate is the largest of: a channel that
/// carries less than it did is believed within this many answers.
const SAMPLES: usize = 10;
/// Answers a delivery sample spans at most: the bytes received over
/// several probe intervals, of which a jittery channel's arrivals stretch
/// and squeeze each alone.
const SPAN: usize = 4;
/// Answers a channel gives before the bond corrects its account of the
/// channel's queue by them.
const SETTLING_ANSWERS: u32 = 4;
/// Full-sized packets a delivery sample spans at least, at the configured
/// rate.
const SAMPLE_PACKETS: f64 = 4.0;

#[derive(Debug, Clone)]
pub(crate) struct Channel {
    pub state: ChannelState,
    /// The configured rate: the estimate starts here, and stays within a
    /// factor of it.
    nominal_bps: f64,
    /// What the channel delivers, bit/s, as measured.
    pub rate_bps: f64,
    /// When what it was given will have left at its rate.
    pub free_at: Duration,
    pub sent_bytes: u64,
    /// What it was given with the link's framing of each datagram: the
    /// line time it took.
    sent_line_bytes: u64,
    /// The datagrams it was given: what its loss is measured on.
    sent_datagrams: u64,
    /// The link's framing of each datagram (`BondConfig::framing_bytes`).
    framing_bytes: u64,
    pub next_probe_at: Duration,
    /// How often it is probed (less often than configured if it is slow).
    pub probe_interval: Duration,
    /// How often it is probed while down: as configured, however slow it
    /// is (it carries nothing else then), so that a circuit that is back
    /// is found within that, not within a slow channel's long interval.
    down_probe_interval: Duration,
    next_seq: u32,
    outstanding: VecDeque<Outstanding>,
    last: Option<Answered>,
    pub last_answer_at: Duration,
    /// Its round trips (RFC 6298's smoothing, as the engine's, and the
    /// least since it came up).
    rtt: RttEstimator,
    /// Where it is in [`PACING_GAINS`].
    phase: usize,
    /// Its latest delivery rates while full, bit/s: the estimate is their
    /// largest.
    samples: VecDeque<f64>,
    /// Its latest answers while full: a sample spans them.
    full_answers: VecDeque<Answered>,
    /// The share of the bytes given to it that did not arrive.
    loss: LossMeter,
    /// Answers since it last changed state: how much its figures are
    /// worth.
    pub answers: u32,
    /// A channel on standby stays there until then at least.
    pub standby_until: Duration,
    /// How long its next standby lasts at least: doubled each time it is
    /// put back on standby soon after coming back.
    pub standby_hold: Duration,
    /// When it last came back into the stripe.
    pub up_since: Duration,
    /// When it last went down, and what it was before.
    pub down_since: Duration,
    pub before_down: ChannelState,
    /// Whether it is down because something said so (its carrier, its
    /// socket, a router's report), not for want of answers: the call it
    /// was on is gone, however soon it is back.
    pub down_reported: bool,
    /// Its state changes since the bond started, and how many of them
    /// took it down or on standby: kept here so that a report needs no
    /// log of the events (the emulator logs them and keeps none).
    pub changes: u64,
    pub went_down: u64,
    pub went_standby: u64,
    /// How much longer than the bond reckoned its last probe took,
    /// seconds, and the smoothed change of that from probe to probe.
    last_surprise: f64,
    surprise_deviation: f64,
    /// When the bond last corrected its account of the channel's queue.
    corrected_at: Duration,
    /// The least round trip of its probes since it came up, each less the
    /// time its answer waited at the far end (see [`Channel::base_rtt`]).
    least_rtt: Option<Duration>,
    /// The least round trip of the call before, until this one's first
    /// answer: a redialled circuit's delay is about its last call's.
    last_call_rtt: Option<Duration>,
}

impl Channel {
    pub fn new(
        nominal_bps: u64,
        framing_bytes: u32,
        probe_interval: Duration,
        down_probe_interval: Duration,
        now: Duration,
        first_probe: Duration,
        hold: Duration,
    ) -> Channel {
        Channel {
            probe_interval,
            down_probe_interval,
            state: ChannelState::Up,
            nominal_bps: nominal_bps as f64,
            rate_bps: nominal_bps as f64,
            free_at: now,
            sent_bytes: 0,
            sent_line_bytes: 0,
            sent_datagrams: 0,
            framing_bytes: u64::from(framing_bytes),
            next_probe_at: first_probe,
            next_seq: 0,
            outstanding: VecDeque::new(),
            last: None,
            last_answer_at: now,
            rtt: fresh_rtt(),
            phase: 0,
            samples: VecDeque::new(),
            full_answers: VecDeque::new(),
            loss: LossMeter::default(),
            answers: 0,
            standby_until: now,
            standby_hold: hold,
            up_since: now,
            down_since: now,
            down_reported: false,
            before_down: ChannelState::Up,
            changes: 0,
            went_down: 0,
            went_standby: 0,
            last_surprise: 0.0,
            surprise_deviation: 0.0,
            corrected_at: now,
            least_rtt: None,
            last_call_rtt: None,
        }
    }

    /// How long an answer may take before its absence means something:
    /// the smoothed round trip and four times its variation (RFC 6298's
    /// retransmission timeout), so that a jittery or queued channel is not
    /// taken for a dead one.
    pub fn answer_timeout(&self) -> Duration {
        self.rtt.rto()
    }

    /// The share of the bytes given to it lately that did not arrive.
    pub fn loss(&self) -> f64 {
        self.loss.share()
    }

    /// The least its loss may be, given how many datagrams it is measured
    /// on (see [`LossMeter::least_share`]).
    pub fn least_loss(&self) -> f64 {
        self.loss.least_share()
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.rtt.srtt()
    }

    /// Its round trip without a queue, as far as its answers since it
    /// came up tell (a path's delay does not change while a call lasts; a
    /// queue does), without the time the answers waited at the far end
    /// (a queue of the other direction's). Back from an outage before its
    /// first answer (its carrier back), the last call's.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.least_rtt.or(self.last_call_rtt)
    }

    /// Its delay, as channels are judged against each other by it: its
    /// least round trip since it came up (a queue, even one that lasts,
    /// is not delay), but at least a quarter of its smoothed one. The
    /// least of a jittery channel's round trips falls with every sample:
    /// at the far end of a saturated iridium-3ch bond, the landline's
    /// (1.2 s on average) came to 0.02 s within the hour, and Iridium
    /// circuits of 1.5 s went on standby for being eight times that.
    pub fn delay(&self) -> Option<Duration> {
        let least = self.least_rtt?;
        Some(least.max(self.rtt.srtt()? / 4))
    }

    /// The state it returns to from down: on standby if it was when it
    /// went down and its rest is not out (a redialled circuit is the same
    /// circuit), else up.
    pub fn state_when_back(&self, now: Duration) -> ChannelState {
        if self.before_down == ChannelState::Standby && now < self.standby_until {
            ChannelState::Standby
        } else {
            ChannelState::Up
        }
    }

    /// How long what it holds takes to leave at its rate.
    pub fn backlog(&self, now: Duration) -> Duration {
        self.free_at.saturating_sub(now)
    }

    /// When a packet of `len` bytes given now would have left.
    pub fn finish(&self, now: Duration, len: usize) -> Duration {
        self.free_at.max(now) + self.transmission(len)
    }

    /// When a packet of `len` bytes given now would arrive: when it
    /// leaves, and half the channel's least round trip (nothing more while
    /// it is unknown).
    pub fn arrival(&self, now: Duration, len: usize) -> Duration {
        self.finish(now, len) + self.base_rtt().unwrap_or_default() / 2
    }

    fn transmission(&self, len: usize) -> Duration {
        // A channel believed at its configured rate has nothing to find
        // out, and pacing its peers unevenly would reorder what they
        // carry: the cycle runs only while it is believed slower.
        let gain = if self.rate_bps < self.nominal_bps * 0.95 {
            PACING_GAINS[self.phase]
        } else {
            1.0
        };
        let line_bytes = len as u64 + self.framing_bytes;
        Duration::from_secs_f64(line_bytes as f64 * 8.0 / (self.rate_bps * gain))
    }

    /// Accounts `len` bytes given to the channel at `now`.
    pub fn give(&mut self, now: Duration, len: usize) {
        self.free_at = self.free_at.max(now) + self.transmission(len);
        self.sent_bytes += len as u64;
        self.sent_line_bytes += len as u64 + self.framing_bytes;
        self.sent_datagrams += 1;
    }

    /// A probe of `len` bytes leaves now: its sequence number. The
    /// channel is full if it holds half the bond's bound, `queue`, and
    /// the bond has more waiting (`waiting`).
    pub fn probe_sent(&mut self, now: Duration, len: usize, queue: Duration, waiting: bool) -> u32 {
        let waited = self.backlog(now);
        let full = waiting && waited >= queue / 2;
        self.give(now, len);
        let seq = self.next_seq;
        self.next_seq = self.next_seq.wrapping_add(1);
        if self.outstanding.len() == OUTSTANDING {
            self.outstanding.pop_front();
        }
        self.outstanding.push_back(Outstanding {
            seq,
            sent_at: now,
            sent_bytes: self.sent_bytes,
            sent_line_bytes: self.sent_line_bytes,
            sent_datagrams: self.sent_datagrams,
            full,
            waited,
        });
        let interval = if self.state == ChannelState::Down {
            self.down_probe_interval
        } else {
            self.probe_interval
        };
        self.next_probe_at = (self.next_probe_at + interval).max(now);
        self.phase = (self.phase + 1) % PACING_GAINS.len();
        seq
    }

    /// The answer to probe `seq` arrived at `now`, the far end having
    /// received `received` bytes on the channel by then (nothing if no such
    /// probe is on its way: see [`Channel::awaits`]); its answer waited
    /// `held` at the far end before it left.
    pub fn answered(&mut self, now: Duration, seq: u32, received: u64, held: Duration) {
        let Some(index) = self.outstanding.iter().position(|o| o.seq == seq) else {
            return;
        };
        let probe = self.outstanding[index];
        // Older probes were lost, or their answers were: their bytes show
        // in the next sample's loss.
        self.outstanding.drain(..=index);
        let rtt = now.saturating_sub(probe.sent_at);
        // An answer cannot have waited longer than it took: a far end that
        // says so is wrong, and its figure is not used.
        if let Some(unheld) = rtt.checked_sub(held) {
            self.correct_backlog(now, &probe, unheld);
            self.least_rtt = Some(self.least_rtt.map_or(unheld, |least| least.min(unheld)));
        }
        self.rtt.on_sample(rtt);
        if let Some(last) = self.last
            && probe.sent_bytes > last.sent_bytes
            && received >= last.received
        {
            // Everything given before the probe arrived before it (a
            // channel keeps order), or was lost.
            self.loss.sample(
                probe.sent_bytes - last.sent_bytes,
                received - last.received,
                probe.sent_datagrams - last.sent_datagrams,
            );
        }
        let answer = Answered {
            arrived_at: now,
            sent_bytes: probe.sent_bytes,
            sent_line_bytes: probe.sent_line_bytes,
            sent_datagrams: probe.sent_datagrams,
            received,
        };
        // Answers arrive as their probes did, a return trip later: the
        // bytes received between two of them over the time between them
        // is what the channel delivered. A channel given less than it
        // carries delivers what it was given, which says nothing of its
        // rate: only answers to probes sent while the bond kept it full
        // count. (A long round trip is no sign of a full channel: a
        // lightly used, jittery one has them, and taking them for one
        // drove such a channel's estimate down to a sixty-fourth of its
        // rate.)
        if probe.full {
            // A sample spans at least `SPAN` answers and the time of a few
            // full-sized packets at the configured rate: a 2400 bit/s
            // circuit takes 5 s for a 1500-byte packet, and a shorter
            // sample sees one packet or none.
            let least = Duration::from_secs_f64(SAMPLE_PACKETS * 1500.0 * 8.0 / self.nominal_bps);
            while self.full_answers.len() > SPAN
                && self
                    .full_answers
                    .get(1)
                    .is_some_and(|next| now.saturating_sub(next.arrived_at) >= least)
            {
                self.full_answers.pop_front();
            }
            if let Some(first) = self.full_answers.front()
                && received >= first.received
                && now.saturating_sub(first.arrived_at) >= least
                && now > first.arrived_at
            {
                // The far end counts the datagrams' bytes; the line also
                // carried their framing, in the share the bond gave it.
                let framed = match probe.sent_bytes.checked_sub(first.sent_bytes) {
                    Some(given) if given > 0 => {
                        (probe.sent_line_bytes - first.sent_line_bytes) as f64 / given as f64
                    }
                    _ => 1.0,
                };
                let delivered = (received - first.received) as f64 * framed * 8.0
                    / (now - first.arrived_at).as_secs_f64();
                if self.samples.len() == SAMPLES {
                    self.samples.pop_front();
                }
                self.samples.push_back(delivered);
                let largest = self.samples.iter().copied().fold(0.0, f64::max);
                // Never above the configured (line) rate.
                self.rate_bps = largest.clamp(self.nominal_bps / 64.0, self.nominal_bps);
            }
            if self.full_answers.len() == OUTSTANDING {
                self.full_answers.pop_front();
            }
            self.full_answers.push_back(answer);
        } else {
            // A sample spans busy time only.
            self.full_answers.clear();
        }
        self.last = Some(answer);
        self.last_answer_at = now;
        self.answers += 1;
    }

    /// Puts the bond's account of what the channel holds right by what a
    /// probe found: its round trip (`rtt`, less the time its answer waited
    /// at the far end) above the least one is the wait it had behind the
    /// channel's queue. A rate believed a little too high (per-packet
    /// framing the bond cannot see, answers bunched by jitter) leaves a
    /// queue in the modem that the bond's account never shows, and every
    /// packet sent there arrives that much later than the bond reckons:
    /// out of order, and late. Only what two probes in a row agree on
    /// beyond twice the usual change from one to the next counts (jitter
    /// alone is no queue), and only once: probes sent before the last
    /// correction saw the queue it already corrected.
    fn correct_backlog(&mut self, now: Duration, probe: &Outstanding, rtt: Duration) {
        let Some(base) = self.base_rtt() else {
            return;
        };
        let surprise = rtt.as_secs_f64() - base.as_secs_f64() - probe.waited.as_secs_f64();
        // Jitter changes the surprise from one probe to the next, and so
        // does an answer held up on its way back; a queue the account
        // misses shows in consecutive probes alike, and only what they
        // agree on beyond the usual change is corrected.
        let previous = std::mem::replace(&mut self.last_surprise, surprise);
        let deviation = (surprise - previous).abs();
        self.surprise_deviation += (deviation - self.surprise_deviation) * GAIN;
        // Until a few answers have shown how much the surprise varies,
        // any of it may be jitter.
        if probe.sent_at < self.corrected_at || self.answers < SETTLING_ANSWERS {
            return;
        }
        let agreed = if surprise > 0.0 && previous > 0.0 {
            surprise.min(previous)
        } else if surprise < 0.0 && previous < 0.0 {
            surprise.max(previous)
        } else {
            return;
        };
        let beyond = agreed.abs() - 2.0 * self.surprise_deviation;
        if beyond <= 0.0 {
            return;
        }
        // What the channel held beyond the account when the probe left it
        // is still there, on top of everything given since, unless the
        // account has been idle for longer (the real queue drained too).
        let beyond = Duration::from_secs_f64(beyond);
        self.free_at = if agreed > 0.0 {
            self.free_at + beyond
        } else {
            self.free_at.saturating_sub(beyond)
        };
        self.corrected_at = now;
    }

    /// Whether probe `seq` is on its way (an answer to it is news).
    pub fn awaits(&self, seq: u32) -> bool {
        self.outstanding.iter().any(|o| o.seq == seq)
    }

    /// Forgets the probes on their way: their answers will be stale.
    pub fn forget_probes(&mut self) {
        self.outstanding.clear();
    }

    /// Moves to `state` at `now`. After an outage (`after_outage`: down
    /// long enough to have been a dropped call, not lost probes) its
    /// figures start again: what was sent into the dead channel says
    /// nothing of its quality. Otherwise they go on (a channel whose
    /// probes go unanswered now and then is losing them).
    /// The bond calls it for changes only (`to` is never the state it is
    /// in), so each call counts as one.
    pub fn set_state(&mut self, now: Duration, state: ChannelState, after_outage: bool) {
        self.changes += 1;
        match state {
            ChannelState::Up => self.up_since = now,
            ChannelState::Down => {
                // What it was given before a silence and lost in it is
                // told by the silence: as loss too, the first answer
                // after 0.3 s of silence on a busy loopback bundle took
                // its measure to 42% and put it on standby as it came
                // back.
                self.last = None;
                self.down_since = now;
                self.down_reported = false;
                self.before_down = self.state;
                self.went_down += 1;
                self.next_probe_at = self.next_probe_at.min(now + self.down_probe_interval);
            }
            ChannelState::Standby => self.went_standby += 1,
        }
        if state != ChannelState::Up {
            self.free_at = now;
        }
        if after_outage {
            self.rate_bps = self.nominal_bps;
            self.loss = LossMeter::default();
            self.answers = 0;
            self.last = None;
            self.full_answers.clear();
            self.samples.clear();
            self.rtt = fresh_rtt();
            self.last_call_rtt = self.least_rtt.or(self.last_call_rtt);
            self.least_rtt = None;
            self.last_surprise = 0.0;
            self.surprise_deviation = 0.0;
        }
        self.state = state;
    }
}

/// A round-trip estimator with no sample: its timeout is zero until the
/// first (the bond's own `down_after_intervals` rules until then), and
/// then the smoothed round trip and four times its variation, with no
/// floor and no ceiling short of an hour.
fn fresh_rtt() -> RttEstimator {
    RttEstimator::new(
        Duration::ZERO,
        Duration::ZERO,
        Duration::from_secs(3600),
        Duration::ZERO,
    )
}
