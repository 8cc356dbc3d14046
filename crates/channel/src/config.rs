//! Configuration of one direction of one circuit, and its validation.
//!
//! Units are in the field names (bit/s, bytes) or carried by `Duration`.
//! `validate` is the single gate: every configuration it accepts can be run
//! by the models without panicking, whatever packets and times follow.

use std::time::Duration;

/// One direction of one circuit. See the crate documentation for the model.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelConfig {
    /// Line rate in bit/s (> 0). With a shaper the line clocks at
    /// `min(rate_bps, shaper.ceiling_bps)`.
    pub rate_bps: u64,
    /// Optional token-bucket shaper in front of the line.
    pub shaper: Option<ShaperConfig>,
    /// Drop-tail buffer in bytes (>= 1): IP bytes of packets accepted but
    /// not yet started on the line.
    pub buffer_bytes: u64,
    /// Per-packet link overhead in bytes (PPP/HDLC framing, ATM cells...):
    /// occupies the line but is not exposed to bit errors.
    pub framing_bytes: u32,
    /// One-way propagation delay, added after the last bit leaves the line.
    pub delay: Duration,
    /// Random variation of the one-way delay.
    pub jitter: Jitter,
    /// If false, a packet never arrives before the previously delivered one.
    pub allow_reordering: bool,
    /// Bit-error rate: probability that any single bit is flipped, in [0, 1).
    pub ber: f64,
    /// What a bit error does to a packet.
    pub error_mode: ErrorMode,
    /// Two-state (Gilbert-Elliott) burst errors: `ber` applies in the good
    /// state, `burst.ber` in the bad one.
    pub burst: Option<BurstErrors>,
    /// How the buffer decides what to drop.
    pub qdisc: Qdisc,
    /// When the link is down.
    pub outages: OutageConfig,
}

impl ChannelConfig {
    /// An ideal line of `rate_bps`: unbounded buffer, no framing, no delay,
    /// no jitter, no errors, no outages. Adjust the public fields from here.
    pub fn new(rate_bps: u64) -> Self {
        ChannelConfig {
            rate_bps,
            shaper: None,
            buffer_bytes: u64::MAX,
            framing_bytes: 0,
            delay: Duration::ZERO,
            jitter: Jitter::None,
            allow_reordering: false,
            ber: 0.0,
            error_mode: ErrorMode::Drop,
            burst: None,
            qdisc: Qdisc::DropTail,
            outages: OutageConfig::default(),
        }
    }

    /// Checks every field; the error names the first offending field, its
    /// value and what is allowed.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.rate_bps == 0 {
            return Err(ConfigError::out_of_range("rate_bps", 0, "> 0 bit/s"));
        }
        if self.buffer_bytes == 0 {
            return Err(ConfigError::out_of_range("buffer_bytes", 0, ">= 1 byte"));
        }
        // `contains` is false for NaN, so NaN is rejected too.
        if !(0.0..1.0).contains(&self.ber) {
            return Err(ConfigError::out_of_range("ber", self.ber, "0 <= ber < 1"));
        }
        if let Some(shaper) = &self.shaper {
            shaper.validate()?;
        }
        if let Some(burst) = &self.burst {
            burst.validate()?;
        }
        if let Qdisc::Red(red) = &self.qdisc {
            red.validate(self.buffer_bytes)?;
        }
        self.outages.validate()
    }

    /// The bit-error rate that, applied uniformly, loses as many packets
    /// of `len_bytes` in the long run as this channel: `ber` itself, or
    /// with burst errors the rate whose PER is the time-weighted mean of
    /// the two states' (for packets short against the states' sojourns).
    pub fn effective_ber(&self, len_bytes: usize) -> f64 {
        let Some(burst) = &self.burst else { return self.ber };
        let bad = burst.bad_fraction();
        let per = (1.0 - bad) * crate::packet_error_rate(self.ber, len_bytes)
            + bad * crate::packet_error_rate(burst.ber, len_bytes);
        if len_bytes == 0 || per <= 0.0 {
            return 0.0;
        }
        // Inverse of PER(L) = 1 - (1 - ber)^(8 L).
        -((-per).ln_1p() / (8.0 * len_bytes as f64)).exp_m1()
    }

    /// The rate at which the line clocks bits out: the shaper's ceiling
    /// caps the physical rate.
    pub fn line_rate_bps(&self) -> u64 {
        match &self.shaper {
            Some(s) => self.rate_bps.min(s.ceiling_bps),
            None => self.rate_bps,
        }
    }
}

/// Token-bucket shaper (like Linux HTB/TBF): long-run `rate_bps`, bursts of
/// up to `burst_bytes` at `ceiling_bps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShaperConfig {
    /// Token refill rate in bit/s (> 0).
    pub rate_bps: u64,
    /// Peak rate in bit/s (>= rate_bps).
    pub ceiling_bps: u64,
    /// Bucket size in bytes (>= 1). The bucket starts full.
    pub burst_bytes: u64,
}

impl ShaperConfig {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.rate_bps == 0 {
            return Err(ConfigError::out_of_range("shaper.rate_bps", 0, "> 0 bit/s"));
        }
        if self.ceiling_bps < self.rate_bps {
            return Err(ConfigError::OutOfRange {
                field: "shaper.ceiling_bps",
                value: self.ceiling_bps.to_string(),
                allowed: format!(">= shaper.rate_bps ({} bit/s)", self.rate_bps),
            });
        }
        if self.burst_bytes == 0 {
            return Err(ConfigError::out_of_range("shaper.burst_bytes", 0, ">= 1 byte"));
        }
        Ok(())
    }
}

/// Two-state burst errors (Gilbert-Elliott): the channel alternates
/// between a good state, where each bit is in error with the channel's
/// `ber`, and a bad state (a fade), where it is with `ber`. Sojourns are
/// exponential, in time (so the states do not depend on the traffic), and
/// the channel starts good at time 0. A packet's bits are spread evenly
/// over its time on the line, each with the error rate of the state at
/// its moment.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BurstErrors {
    /// Mean time in the good state (> 0).
    pub mean_good: Duration,
    /// Mean time in the bad state (> 0).
    pub mean_bad: Duration,
    /// Bit-error rate in the bad state, in [0, 1).
    pub ber: f64,
}

impl BurstErrors {
    fn validate(&self) -> Result<(), ConfigError> {
        for (field, value) in [
            ("burst.mean_good", self.mean_good),
            ("burst.mean_bad", self.mean_bad),
        ] {
            if value.is_zero() {
                return Err(ConfigError::out_of_range(field, "0s", "> 0"));
            }
        }
        if !(0.0..1.0).contains(&self.ber) {
            return Err(ConfigError::out_of_range("burst.ber", self.ber, "0 <= ber < 1"));
        }
        Ok(())
    }

    /// Long-run fraction of time in the bad state.
    pub fn bad_fraction(&self) -> f64 {
        let bad = self.mean_bad.as_secs_f64();
        bad / (bad + self.mean_good.as_secs_f64())
    }
}

/// Queue discipline of the buffer in front of the line.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Qdisc {
    /// Refuse a packet only when it does not fit.
    #[default]
    DropTail,
    /// Random early detection (Floyd and Jacobson 1993; RFC 2309): drop
    /// early, with a probability rising with the average queue, so that
    /// senders slow down before the buffer overflows.
    Red(RedConfig),
}

/// Parameters of [`Qdisc::Red`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RedConfig {
    /// Below this average backlog (bytes) nothing is dropped early.
    pub min_bytes: u64,
    /// At or above this average backlog every packet is dropped; between
    /// the two the probability rises linearly up to `max_probability`.
    pub max_bytes: u64,
    /// Drop probability as the average reaches `max_bytes`, in (0, 1].
    pub max_probability: f64,
    /// Weight of each new sample in the average backlog, in (0, 1].
    pub weight: f64,
}

impl RedConfig {
    fn validate(&self, buffer_bytes: u64) -> Result<(), ConfigError> {
        if self.min_bytes >= self.max_bytes {
            return Err(ConfigError::OutOfRange {
                field: "qdisc.min_bytes",
                value: self.min_bytes.to_string(),
                allowed: format!("< qdisc.max_bytes ({})", self.max_bytes),
            });
        }
        if self.max_bytes > buffer_bytes {
            return Err(ConfigError::OutOfRange {
                field: "qdisc.max_bytes",
                value: self.max_bytes.to_string(),
                allowed: format!("<= buffer_bytes ({buffer_bytes})"),
            });
        }
        if !(self.max_probability > 0.0 && self.max_probability <= 1.0) {
            return Err(ConfigError::out_of_range(
                "qdisc.max_probability",
                self.max_probability,
                "0 < p <= 1",
            ));
        }
        if !(self.weight > 0.0 && self.weight <= 1.0) {
            return Err(ConfigError::out_of_range(
                "qdisc.weight",
                self.weight,
                "0 < weight <= 1",
            ));
        }
        Ok(())
    }
}

/// Random variation added to the one-way delay. The total delay is
/// truncated at zero.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Jitter {
    /// Constant delay.
    #[default]
    None,
    /// Uniform in `[-amount, +amount]`.
    Uniform(Duration),
    /// Normal with mean 0 and this standard deviation.
    Normal(Duration),
}

/// What a bit error does to the packet that carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorMode {
    /// The packet is lost: an ideal link frame check, which misses
    /// nothing, discards it.
    #[default]
    Drop,
    /// The errored bits are flipped and the packet is delivered (no link
    /// frame check; the transport checksum has to notice, and the 16-bit
    /// Internet checksum misses some patterns).
    Corrupt,
    /// The bits are flipped and a real frame check sequence over the
    /// packet decides: frames it finds damaged are discarded, the rare
    /// damage it cannot see is delivered.
    FrameCheck(FrameCheck),
}

/// The frame check sequences of HDLC-framed links (RFC 1662 appendix C).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameCheck {
    /// The 16-bit FCS, PPP's default (CRC-CCITT).
    Fcs16,
    /// The 32-bit FCS (the CRC-32 of Ethernet too).
    Fcs32,
}

/// When the link is down: scheduled windows and random call drops,
/// combined (down if either says down).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OutageConfig {
    /// Windows `[start, start + duration)`; they may overlap.
    pub scheduled: Vec<OutageWindow>,
    /// Random call drops with redial.
    pub call_drops: Option<CallDrops>,
}

impl OutageConfig {
    /// Checks the call-drop parameters (windows need no check: any set of
    /// windows, overlapping or empty, is meaningful).
    pub fn validate(&self) -> Result<(), ConfigError> {
        match &self.call_drops {
            Some(drops) => drops.validate(),
            None => Ok(()),
        }
    }

    /// Long-run fraction of time the call-drop process is up (1 without
    /// call drops). Scheduled windows are not included: see
    /// [`OutageConfig::scheduled_up_fraction`].
    pub fn call_drop_availability(&self) -> f64 {
        self.call_drops.as_ref().map_or(1.0, CallDrops::availability)
    }

    /// Fraction of `[0, run_length)` not covered by any scheduled window
    /// (overlaps counted once). 1 for an empty run.
    pub fn scheduled_up_fraction(&self, run_length: Duration) -> f64 {
        let run = crate::time::to_ns(run_length);
        if run == 0 {
            return 1.0;
        }
        let down: u64 = crate::outage::merge_windows(&self.scheduled)
            .iter()
            .map(|w| w.end.min(run).saturating_sub(w.start.min(run)))
            .sum();
        1.0 - down as f64 / run as f64
    }
}

/// A scheduled outage `[start, start + duration)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutageWindow {
    /// First instant the link is down.
    pub start: Duration,
    /// How long it stays down (zero means no outage).
    pub duration: Duration,
}

/// Random call drops: up periods ~ Exponential(`mean_interval`), each
/// followed by a redial ~ Uniform[`redial_min`, `redial_max`] during which
/// the link is down. The first up period starts at time 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallDrops {
    /// Mean time between the end of one redial and the next drop (> 0).
    pub mean_interval: Duration,
    /// Shortest time to get the circuit back.
    pub redial_min: Duration,
    /// Longest time to get the circuit back (>= redial_min).
    pub redial_max: Duration,
}

impl CallDrops {
    fn validate(&self) -> Result<(), ConfigError> {
        if self.mean_interval.is_zero() {
            return Err(ConfigError::out_of_range(
                "outages.call_drops.mean_interval",
                format!("{:?}", self.mean_interval),
                "> 0",
            ));
        }
        if self.redial_min > self.redial_max {
            return Err(ConfigError::OutOfRange {
                field: "outages.call_drops.redial_min",
                value: format!("{:?}", self.redial_min),
                allowed: format!("<= outages.call_drops.redial_max ({:?})", self.redial_max),
            });
        }
        Ok(())
    }

    /// Mean redial (down) time: the midpoint of the uniform range.
    pub fn mean_redial(&self) -> Duration {
        // Average without overflow: min + (max - min) / 2.
        self.redial_min + (self.redial_max.saturating_sub(self.redial_min)) / 2
    }

    /// Long-run availability of a renewal process alternating up and down
    /// periods: mean_up / (mean_up + mean_down).
    pub fn availability(&self) -> f64 {
        let up = self.mean_interval.as_secs_f64();
        let down = self.mean_redial().as_secs_f64();
        if up + down == 0.0 {
            return 1.0;
        }
        up / (up + down)
    }
}

/// A configuration that cannot be run. Each variant names the field, the
/// offending value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A field outside its allowed range.
    #[error("invalid channel configuration: `{field}` = {value}; allowed: {allowed}")]
    OutOfRange {
        /// Dotted path of the field, e.g. `shaper.burst_bytes`.
        field: &'static str,
        /// The rejected value, as text.
        value: String,
        /// What the field accepts.
        allowed: String,
    },
    /// A bundle was given no channels.
    #[error("invalid bundle: `channels` is empty; allowed: at least one channel")]
    EmptyBundle,
    /// One channel of a bundle is invalid.
    #[error("invalid bundle: channels[{index}]: {source}")]
    BundleChannel {
        /// Index of the channel in the bundle.
        index: usize,
        /// What is wrong with it.
        source: Box<ConfigError>,
    },
}

impl ConfigError {
    fn out_of_range(field: &'static str, value: impl ToString, allowed: &str) -> Self {
        ConfigError::OutOfRange {
            field,
            value: value.to_string(),
            allowed: allowed.to_string(),
        }
    }

    /// The offending field, seen through bundle wrapping.
    pub fn field(&self) -> Option<&'static str> {
        match self {
            ConfigError::OutOfRange { field, .. } => Some(field),
            ConfigError::EmptyBundle => None,
            ConfigError::BundleChannel { source, .. } => source.field(),
        }
    }
}
