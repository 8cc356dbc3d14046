//! The bond: one path over several channels, as a sans-IO node. The
//! sending side stripes packets over the channels that are up, each packet
//! by the channel that would deliver it first (its departure at the
//! channel's measured rate, and half the channel's least round trip: so
//! each carries in proportion to what it delivers, and packets arrive in
//! order), and gives no channel more than `channel_queue` of sending
//! beyond what it has sent, and as much more as it is quicker than the
//! slowest; what no channel can take yet waits in the bond. Every channel
//! is probed every `probe_interval`; the far end answers each probe on
//! the channel it came by, saying how many bytes it has received there.
//! From the answers the sender learns each channel's round trip, loss and
//! delivery rate, marks a channel down when `down_after_intervals` pass
//! without an answer, up again when one comes, and puts on standby a
//! channel far worse than its peers (never the last one carrying data).
//! Both ends run the same node: each answers the other's probes.

use std::collections::VecDeque;
use std::time::Duration;

use crate::channel::{Channel, ChannelState};
use crate::config::{BondConfig, ConfigError};
use crate::wire::{ANSWER_LEN, Frame, FrameError, PROBE_LEN, Probe, is_control};

/// The share of a channel its probes and answers take at most: a slow
/// channel is probed less often than configured (a 2400 bit/s circuit
/// probed every second would spend a sixth of itself on them). What they
/// take, data does not get when the stripe is full: at 2% (every 10 s at
/// 2400 bit/s) iridium-3ch's circuits carried 0.954 of the limit at
/// saturation over sixteen seeds, at 1% 0.961 (0.964 since). The price: a channel that
/// goes silent with no carrier to say so and no router to report it
/// (ICMP) is down after two intervals, 40 s at 2400 bit/s rather than 20,
/// and its round trip takes `min_answers` of them to judge (its loss
/// takes what a few answers cover: see [`Judging`]).
const CONTROL_SHARE: f64 = 0.01;

/// What a channel carries each probe interval for the bond: its probe and
/// its answer to the far end's, with a few bytes of the link's framing
/// each.
const CONTROL_BYTES: usize = PROBE_LEN + ANSWER_LEN + 2 * 8;

/// Over how long the bond asks its senders to let what it holds drain
/// (see [`Bond::sender_rate_bps`]): the time its hold takes at the
/// stripe's rate, over this, is the share it asks less.
const HOLD_DRAIN: Duration = Duration::from_secs(2);
/// The most the bond asks less than its stripe carries.
const MAX_HOLD_CUT: f64 = 0.25;

/// How often a channel of `rate_bps` is probed: as configured, or less
/// often if its probes would take more than [`CONTROL_SHARE`] of it.
fn probe_interval(configured: Duration, rate_bps: u64) -> Duration {
    let least = (CONTROL_BYTES * 8) as f64 / (CONTROL_SHARE * rate_bps as f64);
    configured.max(Duration::from_secs_f64(least))
}

/// A channel changed state.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub at: Duration,
    pub channel: usize,
    pub from: ChannelState,
    pub to: ChannelState,
    /// Why, for a log line.
    pub why: String,
}

/// What a bond counted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BondStats {
    /// Packets dropped because every channel was full and the bond's own
    /// queue too.
    pub dropped_full: u64,
    /// Control frames that could not be read, and why the latest was not.
    pub bad_frames: u64,
    pub last_bad_frame: Option<FrameError>,
    /// Answers that came on another channel than their probe left by (the
    /// channels are crossed somewhere), or for a channel we do not have.
    pub misrouted_answers: u64,
    /// Answers to no probe on its way (late, or duplicated).
    pub stale_answers: u64,
}

/// A channel as reported.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelReport {
    pub state: ChannelState,
    pub rate_bps: f64,
    pub srtt: Option<Duration>,
    pub loss: f64,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// State changes since the bond started; of them, how many took it
    /// down and on standby.
    pub changes: u64,
    pub went_down: u64,
    pub went_standby: u64,
}

/// What a channel is judged for against its peers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Judging {
    /// Whether it is marginal (to go on standby): by the thresholds as
    /// configured, its loss only where its measure leaves no doubt (see
    /// [`LossMeter::least_share`]: a marginal circuit is out as soon as a
    /// handful of its datagrams show it, a clean one never on a single
    /// loss), its delay only after `min_answers` answers (each is one
    /// jittered round trip).
    Marginal,
    /// Whether it is still marginal (to come back): by halfway thresholds,
    /// on whatever it has measured.
    Recovered,
}

/// Why a channel is marginal: far worse than the best of its peers.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Marginal {
    Loss { loss: f64, best: f64 },
    RoundTrip { rtt: Duration, best: Duration },
}

impl std::fmt::Display for Marginal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Marginal::Loss { loss, best } => write!(
                f,
                "it loses {:.1}% of its bytes, its best peer {:.1}%",
                loss * 100.0,
                best * 100.0
            ),
            Marginal::RoundTrip { rtt, best } => write!(
                f,
                "its round trip is {:.2} s beyond its queue, its best peer's {:.2} s",
                rtt.as_secs_f64(),
                best.as_secs_f64()
            ),
        }
    }
}

#[derive(Debug, Clone)]
pub struct Bond {
    config: BondConfig,
    channels: Vec<Channel>,
    /// Bytes received on each channel (what answers tell the far end).
    received: Vec<u64>,
    /// Packets waiting for a channel, and their bytes.
    held: VecDeque<Vec<u8>>,
    held_bytes: usize,
    /// Answers to send, each with the probe it answers and what had
    /// arrived by then: built when they leave, with how long they wait.
    answers: VecDeque<(usize, Probe, u64)>,
    events: VecDeque<Event>,
    stats: BondStats,
    /// The clock origin of the probes' timestamps.
    epoch: Duration,
}

/// A packet the bond could not take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the bond's queue is full: every channel has {0:?} of sending queued")]
pub struct Full(pub Duration);

impl Bond {
    /// A bond started at `now`, every channel up until its probes say
    /// otherwise; the first probes are spread over one interval.
    pub fn new(config: BondConfig, now: Duration) -> Result<Bond, ConfigError> {
        config.check()?;
        let count = config.channel_rates_bps.len();
        let channels = config
            .channel_rates_bps
            .iter()
            .enumerate()
            .map(|(index, rate)| {
                let interval = probe_interval(config.probe_interval, *rate);
                let first = now + interval * index as u32 / count as u32;
                let hold = interval * config.marginal.min_answers * 2;
                Channel::new(
                    *rate,
                    config.framing_bytes,
                    interval,
                    config.probe_interval,
                    now,
                    first,
                    hold,
                )
            })
            .collect();
        Ok(Bond {
            channels,
            received: vec![0; count],
            held: VecDeque::new(),
            held_bytes: 0,
            answers: VecDeque::new(),
            events: VecDeque::new(),
            stats: BondStats::default(),
            epoch: now,
            config,
        })
    }

    /// A packet to carry: it leaves by [`Bond::poll_transmit`].
    pub fn send(&mut self, packet: Vec<u8>) -> Result<(), Full> {
        if self.held_bytes + packet.len() > self.config.hold_bytes {
            self.stats.dropped_full += 1;
            return Err(Full(self.config.channel_queue));
        }
        self.held_bytes += packet.len();
        self.held.push_back(packet);
        Ok(())
    }

    /// The next datagram to put on a channel now, if any: answers first,
    /// then probes that are due, then data a channel can take.
    pub fn poll_transmit(&mut self, now: Duration) -> Option<(usize, Vec<u8>)> {
        self.find_down(now);
        self.reinstate_rested(now);
        if let Some((channel, probe, received)) = self.answers.pop_front() {
            let held = self.channels[channel].backlog(now);
            let held_us = u32::try_from(held.as_micros()).unwrap_or(u32::MAX);
            let answer = Frame::Answer {
                probe,
                received,
                held_us,
            }
            .to_bytes();
            self.channels[channel].give(now, answer.len());
            return Some((channel, answer));
        }
        if let Some(index) = self.channels.iter().position(|c| c.next_probe_at <= now) {
            let queue = self.config.channel_queue;
            let waiting = !self.held.is_empty();
            let channel = &mut self.channels[index];
            let seq = channel.probe_sent(now, PROBE_LEN, queue, waiting);
            let probe = Probe {
                channel: index as u8,
                seq,
                sent_ns: self.clock_ns(now),
            };
            return Some((index, Frame::Probe(probe).to_bytes()));
        }
        let len = self.held.front()?.len();
        let index = self.best_channel(now, len)?;
        let packet = self.held.pop_front()?;
        self.held_bytes -= packet.len();
        self.channels[index].give(now, len);
        Some((index, packet))
    }

    /// The up channel by which a packet of `len` bytes would arrive
    /// soonest, if one can take it now: packets then arrive about in the
    /// order they came, whatever the channels' delays, and the transport
    /// does not take the reordering for loss.
    fn best_channel(&self, now: Duration, len: usize) -> Option<usize> {
        let (index, channel) = self.soonest_arrival(now, len)?;
        (channel.backlog(now) <= self.queue_allowed(channel)).then_some(index)
    }

    /// The up channel by which a packet of `len` bytes would arrive
    /// soonest. A channel carries data once it has answered a probe: until
    /// the bond knows its delay it cannot tell when what it sends there
    /// arrives, and packets it sent blind would arrive out of order.
    fn soonest_arrival(&self, now: Duration, len: usize) -> Option<(usize, &Channel)> {
        self.channels
            .iter()
            .enumerate()
            .filter(|(_, c)| c.state == ChannelState::Up && c.base_rtt().is_some())
            .min_by_key(|(_, c)| c.arrival(now, len))
    }

    /// How much sending `channel` may hold: `channel_queue`, and as much
    /// more as it is quicker than the slowest channel in the stripe (what
    /// it holds then still arrives no later than by the slowest, which
    /// is kept busy too).
    fn queue_allowed(&self, channel: &Channel) -> Duration {
        let one_way = |c: &Channel| c.base_rtt().unwrap_or_default() / 2;
        let slowest = self
            .channels
            .iter()
            .filter(|c| c.state == ChannelState::Up)
            .map(one_way)
            .max()
            .unwrap_or_default();
        self.config.channel_queue + slowest.saturating_sub(one_way(channel))
    }

    /// A datagram arrived on `channel`: the IP packet it carries, if it
    /// is data; control frames are handled here.
    pub fn handle(&mut self, now: Duration, channel: usize, datagram: Vec<u8>) -> Option<Vec<u8>> {
        let Some(received) = self.received.get_mut(channel) else {
            self.stats.misrouted_answers += 1;
            return None;
        };
        *received += datagram.len() as u64;
        let received = *received;
        if !is_control(&datagram) {
            return Some(datagram);
        }
        match Frame::parse(&datagram) {
            Err(error) => {
                self.stats.bad_frames += 1;
                self.stats.last_bad_frame = Some(error);
            }
            Ok(Frame::Probe(probe)) => {
                self.answers.push_back((channel, probe, received));
            }
            Ok(Frame::Answer {
                probe,
                received,
                held_us,
            }) => {
                let held = Duration::from_micros(u64::from(held_us));
                self.answered(now, channel, probe, received, held)
            }
        }
        None
    }

    fn answered(&mut self, now: Duration, channel: usize, probe: Probe, received: u64, held: Duration) {
        if usize::from(probe.channel) != channel {
            self.stats.misrouted_answers += 1;
            return;
        }
        if !self.channels[channel].awaits(probe.seq) {
            self.stats.stale_answers += 1;
            return;
        }
        // Back first, then the sample: a channel back from an outage
        // starts its figures afresh, with this answer as their first.
        let state = &self.channels[channel];
        if state.state == ChannelState::Down {
            // Its figures go on after answers lost now and then; they
            // start afresh after an outage: one something reported (a
            // dropped call, a router's report), or as long as a dropped
            // call takes to notice twice over. (On a 2400 bit/s circuit,
            // probed every 20 s, that is 80 s, longer than a redial: a
            // channel a router reported down, back after 55 s, kept the
            // loss of the call before and went on standby at once.)
            let outage =
                state.down_reported || now.saturating_sub(state.down_since) > self.silence(state) * 2;
            let back = state.state_when_back(now);
            self.change(now, channel, back, "its probes are answered again".into(), outage);
        }
        self.channels[channel].answered(now, probe.seq, received, held);
        self.judge(now, channel);
    }

    /// Puts `channel` on standby if it is far worse than its peers.
    fn judge(&mut self, now: Duration, index: usize) {
        let channel = &self.channels[index];
        if channel.state != ChannelState::Up {
            return;
        }
        if let Some(why) = self.worse_than_peers(index, Judging::Marginal) {
            let hold = channel.standby_hold;
            // Back on standby soon after coming back: it stays longer.
            let next_hold = if now.saturating_sub(channel.up_since) < hold * 4 {
                (hold * 2).min(Duration::from_secs(3600))
            } else {
                hold
            };
            let channel = &mut self.channels[index];
            channel.standby_until = now + hold;
            channel.standby_hold = next_hold;
            self.change(now, index, ChannelState::Standby, why.to_string(), false);
        }
    }

    /// Why channel `index` is marginal against the best of the other
    /// channels in the stripe, or still is (see [`Judging`]); `None` when
    /// it is not, or has no peer to be judged against.
    fn worse_than_peers(&self, index: usize, judging: Judging) -> Option<Marginal> {
        let thresholds = &self.config.marginal;
        let peers = || {
            self.channels
                .iter()
                .enumerate()
                .filter(move |(i, c)| *i != index && c.state == ChannelState::Up)
                .map(|(_, c)| c)
        };
        let best_loss = peers().map(Channel::loss).reduce(f64::min)?;
        let channel = &self.channels[index];
        let (strictness, loss, delay_measured) = match judging {
            Judging::Marginal => (
                1.0,
                channel.least_loss(),
                channel.answers >= thresholds.min_answers,
            ),
            Judging::Recovered => (0.5, channel.loss(), true),
        };
        let scaled = |ratio: f64| 1.0 + (ratio - 1.0) * strictness;
        if loss >= thresholds.loss * strictness && loss >= scaled(thresholds.loss_ratio) * best_loss {
            return Some(Marginal::Loss {
                loss: channel.loss(),
                best: best_loss,
            });
        }
        if !delay_measured {
            return None;
        }
        // Their delays (see `Channel::delay`), the judged one's less the
        // queue the bond allows a channel (a slow channel's queue adds to
        // its round trip more); against peers as well measured (one just
        // back has a round trip or two, maybe a jittery circuit's
        // luckiest).
        let best_rtt = peers()
            .filter(|c| c.answers >= thresholds.min_answers)
            .filter_map(Channel::delay)
            .min()?;
        let rtt = channel.delay()?.saturating_sub(self.config.channel_queue);
        (rtt.as_secs_f64() >= scaled(thresholds.rtt_ratio) * best_rtt.as_secs_f64())
            .then_some(Marginal::RoundTrip { rtt, best: best_rtt })
    }

    /// Channels on standby that have rested and look well again, back in
    /// the stripe; and any on standby when none other carries data.
    fn reinstate_rested(&mut self, now: Duration) {
        let usable = |bond: &Bond| bond.channels.iter().any(|c| c.state == ChannelState::Up);
        for index in 0..self.channels.len() {
            let channel = &self.channels[index];
            if channel.state != ChannelState::Standby {
                continue;
            }
            if !usable(self) {
                self.change(
                    now,
                    index,
                    ChannelState::Up,
                    "no other channel carries data".into(),
                    false,
                );
            } else if now >= channel.standby_until
                && self.worse_than_peers(index, Judging::Recovered).is_none()
            {
                self.change(now, index, ChannelState::Up, "it has recovered".into(), false);
            }
        }
    }

    /// Channels whose last answer is too long ago, down.
    fn find_down(&mut self, now: Duration) {
        for index in 0..self.channels.len() {
            let channel = &self.channels[index];
            if channel.state != ChannelState::Down && now >= channel.last_answer_at + self.silence(channel) {
                let why = format!(
                    "no answer for {:.1} s",
                    (now - channel.last_answer_at).as_secs_f64()
                );
                self.change(now, index, ChannelState::Down, why, false);
            }
        }
    }

    /// How long a channel may go without an answer before it is down:
    /// `down_after_intervals` probe intervals, or longer when its answers
    /// take longer (see `Channel::answer_timeout`).
    fn silence(&self, channel: &Channel) -> Duration {
        (channel.probe_interval * self.config.down_after_intervals).max(channel.answer_timeout())
    }

    /// The channel's socket or device failed: it is down until its probes
    /// are answered again.
    pub fn channel_failed(&mut self, now: Duration, channel: usize, why: String) {
        let Some(state) = self.channels.get_mut(channel) else {
            return;
        };
        // The answers of probes sent before it failed would say it was
        // alive then, not now: they are taken as stale.
        state.forget_probes();
        if state.state != ChannelState::Down {
            self.change(now, channel, ChannelState::Down, why, false);
        }
        self.channels[channel].down_reported = true;
    }

    /// The channel's carrier changed, as its modem's carrier detect (or a
    /// PPP link going down) tells: lost, the channel is down at once (what
    /// it holds is lost with the call, and nothing more is sent into it);
    /// back, it is in the stripe at once ([`Bond::carrier_back`]).
    pub fn carrier(&mut self, now: Duration, channel: usize, up: bool) {
        if up {
            self.carrier_back(now, channel);
        } else {
            self.channel_failed(now, channel, "its carrier was lost".into());
        }
    }

    /// The channel's carrier is back (its modem has a call again): a new
    /// call, in the stripe at once with its figures afresh (its delay the
    /// last call's until its first answer, see `Channel::base_rtt`), and
    /// probed now rather than at its next interval. Waiting for the
    /// probe's answer instead left each redialled Iridium circuit idle
    /// for a round trip, about 3 s: on iridium-3ch's 24 drops a run, 1%
    /// of what the circuits carry. A carrier that comes back on a circuit
    /// that delivers nothing costs what the bond gives it until the
    /// probes' silence takes it down again.
    pub fn carrier_back(&mut self, now: Duration, channel: usize) {
        let Some(state) = self.channels.get_mut(channel) else {
            return;
        };
        state.next_probe_at = state.next_probe_at.min(now);
        if state.state == ChannelState::Down {
            // Its silence counts from now: the probes of the call before
            // were answered by nothing.
            state.last_answer_at = now;
            let back = state.state_when_back(now);
            self.change(now, channel, back, "its carrier is back".into(), true);
        }
    }

    fn change(&mut self, now: Duration, channel: usize, to: ChannelState, why: String, after_outage: bool) {
        let from = self.channels[channel].state;
        self.channels[channel].set_state(now, to, after_outage);
        self.events.push_back(Event {
            at: now,
            channel,
            from,
            to,
            why,
        });
    }

    /// When the bond next has something to do.
    pub fn next_wake(&self, now: Duration) -> Option<Duration> {
        if !self.answers.is_empty() {
            return Some(now);
        }
        let probes = self.channels.iter().map(|c| c.next_probe_at);
        // When a channel is down unless an answer comes (a channel on
        // standby comes back on an answer, which a probe brings).
        let deadlines = self
            .channels
            .iter()
            .filter(|c| c.state != ChannelState::Down)
            .map(|c| c.last_answer_at + self.silence(c));
        // When the channel the next packet would go by can take it.
        let room = self.held.front().and_then(|packet| {
            let (_, channel) = self.soonest_arrival(now, packet.len())?;
            Some(
                channel
                    .free_at
                    .saturating_sub(self.queue_allowed(channel))
                    .max(now),
            )
        });
        probes.chain(deadlines).chain(room).min()
    }

    /// What the stripe carries for its senders now, bit/s: the measured
    /// rates of the channels in it, less what the bond's own probes and
    /// answers take of each (a sender paced at the channels' whole rate
    /// would queue that much in the bond).
    pub fn up_rate_bps(&self) -> u64 {
        self.carried_bps() as u64
    }

    /// What a sender that follows the stripe should pace at: what it
    /// carries, less a share while the bond holds packets no channel can
    /// take yet. Paced at exactly what the channels carry, a sender keeps
    /// whatever queue once formed (after a burst, an outage, a wrong
    /// estimate): nothing drains it. Held here, small packets stay small
    /// and every one costs its headers and framing; held in the sender,
    /// they go out together in fuller segments. So the bond asks for a
    /// little less, by the time its hold takes to drain over
    /// [`HOLD_DRAIN`], at most [`MAX_HOLD_CUT`] less, until it holds
    /// nothing.
    pub fn sender_rate_bps(&self) -> u64 {
        let carried = self.carried_bps();
        if carried <= 0.0 {
            return 0;
        }
        let standing = self.held_bytes as f64 * 8.0 / carried;
        let cut = (standing / HOLD_DRAIN.as_secs_f64()).min(MAX_HOLD_CUT);
        (carried * (1.0 - cut)) as u64
    }

    fn carried_bps(&self) -> f64 {
        self.channels
            .iter()
            .filter(|c| c.state == ChannelState::Up)
            .map(|c| {
                let control_bps = (CONTROL_BYTES * 8) as f64 / c.probe_interval.as_secs_f64();
                (c.rate_bps - control_bps).max(0.0)
            })
            .sum()
    }

    /// State changes since last asked, oldest first.
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    pub fn stats(&self) -> &BondStats {
        &self.stats
    }

    pub fn channel_count(&self) -> usize {
        self.channels.len()
    }

    /// Each channel's state and figures.
    pub fn channels(&self) -> Vec<ChannelReport> {
        self.channels
            .iter()
            .zip(&self.received)
            .map(|(c, received)| ChannelReport {
                state: c.state,
                rate_bps: c.rate_bps,
                srtt: c.srtt(),
                loss: c.loss(),
                sent_bytes: c.sent_bytes,
                received_bytes: *received,
                changes: c.changes,
                went_down: c.went_down,
                went_standby: c.went_standby,
            })
            .collect()
    }

    /// Nanoseconds since the bond started: the probes' clock.
    fn clock_ns(&self, now: Duration) -> u64 {
        u64::try_from(now.saturating_sub(self.epoch).as_nanos()).unwrap_or(u64::MAX)
    }
}
