//! One channel of a bond as its sender sees it: what it was given, what
//! its probes' answers say it delivered, how long they took, and whether
//! it is in use.

use std::collections::VecDeque;
use std::time::Duration;

/// Whether a channel carries data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
    /// Whether the channel was kept full when it left (its queue at the
    /// bond's bound): what it then delivers is what it can carry.
    full: bool,
}

/// The last answered probe: the start of the next delivery sample.
#[derive(Debug, Clone, Copy)]
struct Answered {
    arrived_at: Duration,
    sent_bytes: u64,
    received: u64,
}

/// Probes remembered while unanswered; older ones are given up.
const OUTSTANDING: usize = 64;
/// Weight of a new sample in the smoothed loss and rate.
const GAIN: f64 = 0.25;
/// The pace a channel is given at, as a share of its estimated rate, one
/// probe interval after the other (BBR's cycle): a quarter more for one
/// interval, so that a channel that can carry more shows it, a quarter
/// less for the next, to drain what that queued if it could not.
const PACING_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Delivery samples the estimate is the largest of: a channel that
/// carries less than it did is believed within this many answers.
const SAMPLES: usize = 10;

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
    pub next_probe_at: Duration,
    next_seq: u32,
    outstanding: VecDeque<Outstanding>,
    last: Option<Answered>,
    pub last_answer_at: Duration,
    pub srtt: Option<Duration>,
    /// Where it is in [`PACING_GAINS`].
    phase: usize,
    /// Its latest delivery rates, bit/s: the estimate is their largest.
    samples: VecDeque<f64>,
    /// Its latest round trips: the least of them is its round trip with
    /// the least queue.
    rtts: VecDeque<Duration>,
    /// Share of the bytes given to it that did not arrive, smoothed.
    pub loss: f64,
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
}

impl Channel {
    pub fn new(nominal_bps: u64, now: Duration, first_probe: Duration, hold: Duration) -> Channel {
        Channel {
            state: ChannelState::Up,
            nominal_bps: nominal_bps as f64,
            rate_bps: nominal_bps as f64,
            free_at: now,
            sent_bytes: 0,
            next_probe_at: first_probe,
            next_seq: 0,
            outstanding: VecDeque::new(),
            last: None,
            last_answer_at: now,
            srtt: None,
            phase: 0,
            samples: VecDeque::new(),
            rtts: VecDeque::new(),
            loss: 0.0,
            answers: 0,
            standby_until: now,
            standby_hold: hold,
            up_since: now,
            down_since: now,
            before_down: ChannelState::Up,
        }
    }

    /// Its round trip without a queue, as far as its latest answers tell.
    pub fn base_rtt(&self) -> Option<Duration> {
        self.rtts.iter().min().copied()
    }

    /// How long what it holds takes to leave at its rate.
    pub fn backlog(&self, now: Duration) -> Duration {
        self.free_at.saturating_sub(now)
    }

    /// When a packet of `len` bytes given now would have left.
    pub fn finish(&self, now: Duration, len: usize) -> Duration {
        self.free_at.max(now) + self.transmission(len)
    }

    fn transmission(&self, len: usize) -> Duration {
        let pace = self.rate_bps * PACING_GAINS[self.phase];
        Duration::from_secs_f64(len as f64 * 8.0 / pace)
    }

    /// Accounts `len` bytes given to the channel at `now`.
    pub fn give(&mut self, now: Duration, len: usize) {
        self.free_at = self.free_at.max(now) + self.transmission(len);
        self.sent_bytes += len as u64;
    }

    /// A probe of `len` bytes leaves now: its sequence number. The
    /// channel is full if the bond keeps `queue` of sending in it.
    pub fn probe_sent(&mut self, now: Duration, len: usize, interval: Duration, queue: Duration) -> u32 {
        let full = self.backlog(now) >= queue / 2;
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
            full,
        });
        self.next_probe_at = (self.next_probe_at + interval).max(now);
        self.phase = (self.phase + 1) % PACING_GAINS.len();
        seq
    }

    /// The answer to probe `seq` arrived at `now`, the far end having
    /// received `received` bytes on the channel by then; false if no such
    /// probe is on its way (a duplicate, or one given up).
    pub fn answered(&mut self, now: Duration, seq: u32, received: u64) -> bool {
        let Some(index) = self.outstanding.iter().position(|o| o.seq == seq) else {
            return false;
        };
        let probe = self.outstanding[index];
        // Older probes were lost, or their answers were: their bytes show
        // in the next sample's loss.
        self.outstanding.drain(..=index);
        let rtt = now.saturating_sub(probe.sent_at);
        self.srtt = Some(match self.srtt {
            None => rtt,
            Some(srtt) => srtt.mul_f64(1.0 - GAIN) + rtt.mul_f64(GAIN),
        });
        if self.rtts.len() == SAMPLES {
            self.rtts.pop_front();
        }
        self.rtts.push_back(rtt);
        if let Some(last) = self.last
            && probe.sent_bytes > last.sent_bytes
            && received >= last.received
        {
            // Everything given before the probe arrived before it (a
            // channel keeps order), or was lost.
            let sent = (probe.sent_bytes - last.sent_bytes) as f64;
            let arrived = (received - last.received) as f64;
            let loss = (1.0 - arrived / sent).clamp(0.0, 1.0);
            self.loss = self.loss * (1.0 - GAIN) + loss * GAIN;
            // Answers arrive as their probes did, a return trip later:
            // their spacing is the probes' arrival spacing.
            let elapsed = now.saturating_sub(last.arrived_at).as_secs_f64();
            if elapsed > 0.0 {
                let delivered = arrived * 8.0 / elapsed;
                // A channel given less than it carries delivers what it
                // was given: that says nothing of its rate, unless more
                // than believed.
                if probe.full || delivered > self.rate_bps {
                    if self.samples.len() == SAMPLES {
                        self.samples.pop_front();
                    }
                    self.samples.push_back(delivered);
                    let largest = self.samples.iter().copied().fold(0.0, f64::max);
                    self.rate_bps = largest.clamp(self.nominal_bps / 64.0, self.nominal_bps * 2.0);
                }
            }
        }
        self.last = Some(Answered {
            arrived_at: now,
            sent_bytes: probe.sent_bytes,
            received,
        });
        self.last_answer_at = now;
        self.answers += 1;
        true
    }

    /// Moves to `state` at `now`. After an outage (`after_outage`: down
    /// long enough to have been a dropped call, not lost probes) its
    /// figures start again: what was sent into the dead channel says
    /// nothing of its quality. Otherwise they go on (a channel whose
    /// probes go unanswered now and then is losing them).
    pub fn set_state(&mut self, now: Duration, state: ChannelState, after_outage: bool) {
        match state {
            ChannelState::Up => self.up_since = now,
            ChannelState::Down => {
                self.down_since = now;
                self.before_down = self.state;
            }
            ChannelState::Standby => {}
        }
        if state != ChannelState::Up {
            self.free_at = now;
        }
        if after_outage {
            self.loss = 0.0;
            self.answers = 0;
            self.last = None;
            self.rtts.clear();
        }
        self.state = state;
    }
}
