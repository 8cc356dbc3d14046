//! One direction of one circuit: the models chained in order
//! (buffer and line, outage, bit errors, delay).
//!
//! # Randomness
//!
//! Each random process has its own generator: `ChaCha8Rng::seed_from_u64(seed)`
//! switched to its own stream (bit errors 0, jitter 1, call drops 2,
//! burst states 3, early drops 4). So
//! turning jitter on does not move where bit errors fall, and the call
//! drops are the same whatever traffic is sent. The bit-error stream is
//! advanced by every packet that goes on the line (lost to an outage or
//! not) and jitter is drawn for each of them, so each process depends only
//! on the sequence of packets accepted by the buffer.

use std::time::Duration;

use crate::bit_errors::{BitErrors, flip};
use crate::burst::BurstProcess;
use crate::config::{ChannelConfig, ConfigError, ErrorMode, Qdisc};
use crate::delay::DelayModel;
use crate::outage::OutageProcess;
use crate::red::Red;
use crate::serializer::Serializer;
use crate::stats::ChannelStats;
use crate::time::{from_ns, to_ns};

/// The early-drop state of `config`'s queue discipline, if it has one.
fn red_of(config: &ChannelConfig, seed: u64) -> Option<Red> {
    match config.qdisc {
        Qdisc::DropTail => None,
        Qdisc::Red(red) => Some(Red::new(red, seed)),
    }
}

/// What became of a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fate {
    /// It arrives at the far end at `at` (same epoch as `now`);
    /// `flipped_bits` > 0 only in [`ErrorMode::Corrupt`], or in
    /// [`ErrorMode::FrameCheck`] when the check missed the damage.
    Delivered {
        /// Arrival time of the last bit at the far end.
        at: Duration,
        /// Bits flipped in the packet on its way.
        flipped_bits: u32,
    },
    /// It is lost.
    Dropped(DropCause),
}

/// Why a packet was lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropCause {
    /// The drop-tail buffer was full.
    Buffer,
    /// It carried bit errors (error mode Drop), or bit errors its frame
    /// check found.
    BitErrors,
    /// Its transmission overlapped an outage.
    Outage,
}

/// One direction of one circuit. See the crate documentation for the model.
#[derive(Debug, Clone)]
pub struct Channel {
    config: ChannelConfig,
    seed: u64,
    outage_seed: u64,
    line: Serializer,
    outages: OutageProcess,
    errors: BitErrors,
    burst: Option<BurstProcess>,
    red: Option<Red>,
    delay: DelayModel,
    stats: ChannelStats,
    /// The bits flipped in the packet being sent (kept for its frame
    /// check).
    flipped: Vec<u64>,
}

impl Channel {
    /// Validates `config` and builds the channel; `seed` fixes every random
    /// process.
    pub fn new(config: ChannelConfig, seed: u64) -> Result<Channel, ConfigError> {
        Channel::with_outage_seed(config, seed, seed)
    }

    /// Like [`Channel::new`], but the call drops come from `outage_seed`:
    /// the two directions of one circuit share it, so a dropped call takes
    /// both down at once, while their bit errors and jitter stay
    /// independent.
    pub fn with_outage_seed(
        config: ChannelConfig,
        seed: u64,
        outage_seed: u64,
    ) -> Result<Channel, ConfigError> {
        config.validate()?;
        Ok(Channel {
            line: Serializer::new(&config),
            outages: OutageProcess::new(&config.outages, outage_seed)?,
            errors: BitErrors::new(config.ber, seed),
            burst: config.burst.as_ref().map(|b| BurstProcess::new(b, seed)),
            red: red_of(&config, seed),
            delay: DelayModel::new(config.delay, config.jitter, config.allow_reordering, seed),
            stats: ChannelStats::default(),
            flipped: Vec::new(),
            config,
            seed,
            outage_seed,
        })
    }

    /// Takes a new configuration from now on (the live emulator's
    /// parameter changes). What is on the line stays: the line is busy
    /// until the same instant and waiting packets keep their slots; the
    /// random streams carry on, and the call drops are those of the new
    /// parameters with the same seed. Forced outages and counters stay. On
    /// error nothing changes.
    pub fn reconfigure(&mut self, config: ChannelConfig) -> Result<(), ConfigError> {
        config.validate()?;
        let mut outages = OutageProcess::new(&config.outages, self.outage_seed)?;
        outages.keep_forced_from(&self.outages);
        self.outages = outages;
        self.line.reconfigure(&config);
        self.errors.set_ber(config.ber);
        self.burst = config.burst.as_ref().map(|b| BurstProcess::new(b, self.seed));
        self.red = red_of(&config, self.seed);
        self.delay
            .reconfigure(config.delay, config.jitter, config.allow_reordering);
        self.config = config;
        Ok(())
    }

    /// Offers `packet` (a whole IP packet) at `now`. In
    /// [`ErrorMode::Corrupt`] the errored bits are flipped in place.
    ///
    /// `now` should not decrease from call to call (the buffer forgets
    /// packets once `now` passes their start); the outage process answers
    /// correctly in any order.
    pub fn transmit(&mut self, now: Duration, packet: &mut [u8]) -> Fate {
        let now_ns = to_ns(now);
        let len = u64::try_from(packet.len()).unwrap_or(u64::MAX);
        self.stats.offered(len);

        if let Some(red) = &mut self.red
            && !red.admit(self.line.backlog_bytes(now_ns))
        {
            self.stats.dropped_buffer += 1;
            self.stats.dropped_early += 1;
            return Fate::Dropped(DropCause::Buffer);
        }
        let Some(slot) = self.line.offer(now_ns, len) else {
            self.stats.dropped_buffer += 1;
            return Fate::Dropped(DropCause::Buffer);
        };
        let queued = slot.start.saturating_sub(self.line.ticks(now_ns));
        self.stats.transmitted(from_ns(self.line.ceil_ns(queued)));

        // Outage intervals are whole nanoseconds, so flooring the start and
        // ceiling the end preserves exactly whether the packet overlaps one.
        let start_ns = self.line.floor_ns(slot.start);
        let end_ns = self.line.ceil_ns(slot.end);
        let lost_to_outage = self.outages.overlaps_down(start_ns, end_ns);

        let corrupt = self.config.error_mode != ErrorMode::Drop && !lost_to_outage;
        let bits = len.saturating_mul(8);
        let mut errors = 0;
        let mut offset = 0;
        let (errors_model, good_ber) = (&mut self.errors, self.config.ber);
        let flipped = &mut self.flipped;
        flipped.clear();
        let mut pass = |segment_bits: u64, ber: f64| {
            errors_model.set_ber(ber);
            errors += errors_model.pass(segment_bits, |bit| {
                if corrupt {
                    flip(packet, offset + bit);
                    flipped.push(offset + bit);
                }
            });
            offset += segment_bits;
        };
        match &mut self.burst {
            Some(burst) => {
                let bad_ber = burst.bad_ber();
                burst.segments(start_ns, end_ns, bits, |segment_bits, bad| {
                    pass(segment_bits, if bad { bad_ber } else { good_ber })
                });
            }
            None => pass(bits, good_ber),
        }
        let arrival = self.delay.arrival(end_ns);

        if lost_to_outage {
            self.stats.dropped_outage += 1;
            return Fate::Dropped(DropCause::Outage);
        }
        let discarded = errors > 0
            && match self.config.error_mode {
                ErrorMode::Drop => true,
                ErrorMode::Corrupt => false,
                ErrorMode::FrameCheck(check) => check.detects(packet, &self.flipped),
            };
        if discarded {
            self.stats.dropped_bit_errors += 1;
            return Fate::Dropped(DropCause::BitErrors);
        }
        let at = self.delay.deliver(arrival);
        self.stats.delivered(len, errors);
        Fate::Delivered {
            at: from_ns(at),
            flipped_bits: u32::try_from(errors).unwrap_or(u32::MAX),
        }
    }

    /// Records a packet of `len` bytes given to this channel while it is
    /// down and lost without going on the line (used by [`crate::Bundle`]
    /// when no channel is up).
    pub(crate) fn refuse_down(&mut self, len: u64) -> Fate {
        self.stats.offered(len);
        self.stats.dropped_outage += 1;
        Fate::Dropped(DropCause::Outage)
    }

    /// Whether the link is up at `now`.
    pub fn is_up(&mut self, now: Duration) -> bool {
        self.outages.is_up(now)
    }

    /// Next instant after `now` at which the link goes up or down.
    pub fn next_change(&mut self, now: Duration) -> Option<Duration> {
        self.outages.next_change(now)
    }

    /// IP bytes accepted but not yet on the line at `now`.
    pub fn backlog_bytes(&mut self, now: Duration) -> u64 {
        self.line.backlog_bytes(to_ns(now))
    }

    /// First instant at which the line has finished every accepted packet.
    pub fn idle_at(&self) -> Duration {
        from_ns(self.line.free_at_ns())
    }

    /// The outage process (e.g. for its expected availability).
    pub fn outages(&self) -> &OutageProcess {
        &self.outages
    }

    /// The outage process, to force outages by hand
    /// ([`OutageProcess::force_down`]).
    pub fn outages_mut(&mut self) -> &mut OutageProcess {
        &mut self.outages
    }

    /// Counters so far.
    pub fn stats(&self) -> &ChannelStats {
        &self.stats
    }

    /// The configuration the channel was built with.
    pub fn config(&self) -> &ChannelConfig {
        &self.config
    }

    /// The seed the channel was built with.
    pub fn seed(&self) -> u64 {
        self.seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivered_at_end_plus_delay() {
        let mut config = ChannelConfig::new(1_000_000);
        config.delay = Duration::from_millis(100);
        let mut ch = Channel::new(config, 0).expect("valid");
        let fate = ch.transmit(Duration::from_secs(1), &mut [0u8; 125]);
        assert_eq!(
            fate,
            Fate::Delivered {
                at: Duration::from_millis(1101),
                flipped_bits: 0
            }
        );
        assert_eq!(ch.idle_at(), Duration::from_millis(1001));
        assert_eq!(ch.stats().packets_delivered, 1);
        assert_eq!(ch.stats().bytes_delivered, 125);
    }

    #[test]
    fn invalid_config_is_refused() {
        let err = Channel::new(ChannelConfig::new(0), 0).expect_err("rate 0");
        assert_eq!(err.field(), Some("rate_bps"));
    }
}
