//! What a bond is configured with, checked before it starts.

use std::time::Duration;

/// A bond's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct BondConfig {
    /// Each channel's rate, bit/s, as configured (a modem's nominal rate):
    /// the estimate its share starts from, before answers measure it.
    pub channel_rates_bps: Vec<u64>,
    /// How often each channel is probed: a slow one less often while it
    /// is in use (its probes take at most 1% of it), a down one always as
    /// configured (it carries nothing else).
    pub probe_interval: Duration,
    /// A channel is down once this many probe intervals pass without an
    /// answer on it (2: "within two probe intervals of its last answer"),
    /// or its retransmission timeout (smoothed round trip and four times
    /// its variation) if longer: a jittery or queued channel is not dead.
    pub down_after_intervals: u32,
    /// How much a channel is given beyond what it has sent, in time at its
    /// rate: its queue (in a modem, a socket) stays this short.
    pub channel_queue: Duration,
    /// Bytes the bond holds while every channel is full; beyond, a packet
    /// is dropped and counted (a router's queue).
    pub hold_bytes: usize,
    /// Bytes the link below adds to each datagram (PPP's framing): line
    /// time the bond cannot see in what it sends, and which its account
    /// of each channel's queue and its delivery samples must count, or a
    /// channel of small packets holds a queue the account never shows.
    pub framing_bytes: u32,
    pub marginal: MarginalThresholds,
}

/// When a channel is worse enough than its peers to be put on standby.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MarginalThresholds {
    /// A channel losing at least this share of its bytes (beyond doubt:
    /// its measure over the datagrams it was given, less twice its
    /// standard error)...
    pub loss: f64,
    /// ...and this many times the share the best usable peer loses, is
    /// marginal.
    pub loss_ratio: f64,
    /// A channel whose delay (its least round trip since it came up, but
    /// at least a quarter of its smoothed one) is this many times the
    /// best usable peer's is marginal.
    pub rtt_ratio: f64,
    /// Answers a channel, and a peer it is judged against, need since
    /// they came up before it is judged by its delay (each answer is one
    /// round trip, jittered).
    pub min_answers: u32,
}

impl Default for MarginalThresholds {
    fn default() -> MarginalThresholds {
        MarginalThresholds {
            loss: 0.1,
            loss_ratio: 4.0,
            rtt_ratio: 8.0,
            min_answers: 8,
        }
    }
}

impl BondConfig {
    /// A bond of channels of these rates with the default settings.
    pub fn new(channel_rates_bps: Vec<u64>) -> BondConfig {
        BondConfig {
            channel_rates_bps,
            probe_interval: Duration::from_secs(1),
            down_after_intervals: 2,
            channel_queue: Duration::from_millis(500),
            hold_bytes: 64 * 1024,
            framing_bytes: 0,
            marginal: MarginalThresholds::default(),
        }
    }
}

/// The most framing a bond counts per datagram (as a route's pacer):
/// more than any link layer adds.
pub const MAX_FRAMING_BYTES: u32 = 1000;

/// The most channels a bond takes (a channel's index is one byte on the
/// wire).
pub const MAX_CHANNELS: usize = 255;

/// A setting out of range, named.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("bond {key} = {value}: {allowed}")]
pub struct ConfigError {
    pub key: &'static str,
    pub value: String,
    pub allowed: &'static str,
}

impl BondConfig {
    pub fn check(&self) -> Result<(), ConfigError> {
        let error = |key, value: String, allowed| Err(ConfigError { key, value, allowed });
        let channels = self.channel_rates_bps.len();
        if !(1..=MAX_CHANNELS).contains(&channels) {
            return error("channels", channels.to_string(), "1 to 255 channels");
        }
        if let Some(rate) = self.channel_rates_bps.iter().find(|r| **r < 8) {
            return error("rate", format!("{rate}bps"), "at least 8 bit/s for every channel");
        }
        if !(Duration::from_millis(10)..=Duration::from_secs(3600)).contains(&self.probe_interval) {
            return error(
                "probe_interval",
                format!("{:?}", self.probe_interval),
                "10ms to 1h",
            );
        }
        if !(1..=100).contains(&self.down_after_intervals) {
            return error(
                "down_after",
                self.down_after_intervals.to_string(),
                "1 to 100 probe intervals",
            );
        }
        if self.channel_queue.is_zero() || self.channel_queue > Duration::from_secs(60) {
            return error(
                "channel_queue",
                format!("{:?}", self.channel_queue),
                "above 0 and at most 60s",
            );
        }
        if !(1500..=1 << 30).contains(&self.hold_bytes) {
            return error("hold", self.hold_bytes.to_string(), "1500 bytes to 1 GiB");
        }
        if self.framing_bytes > MAX_FRAMING_BYTES {
            return error("framing", self.framing_bytes.to_string(), "at most 1000 bytes");
        }
        let marginal = &self.marginal;
        if !(marginal.loss > 0.0 && marginal.loss < 1.0) {
            return error("marginal_loss", marginal.loss.to_string(), "above 0 and below 1");
        }
        if !(marginal.loss_ratio >= 1.0 && marginal.loss_ratio.is_finite()) {
            return error(
                "marginal_loss_ratio",
                marginal.loss_ratio.to_string(),
                "at least 1",
            );
        }
        if !(marginal.rtt_ratio >= 1.0 && marginal.rtt_ratio.is_finite()) {
            return error("marginal_rtt_ratio", marginal.rtt_ratio.to_string(), "at least 1");
        }
        if !(1..=1000).contains(&marginal.min_answers) {
            return error(
                "marginal_min_answers",
                marginal.min_answers.to_string(),
                "1 to 1000",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_out_of_range_are_named() {
        assert_eq!(BondConfig::new(vec![2400; 3]).check(), Ok(()));
        let message = |config: BondConfig| config.check().unwrap_err().to_string();
        assert_eq!(
            message(BondConfig::new(vec![])),
            "bond channels = 0: 1 to 255 channels"
        );
        assert_eq!(
            message(BondConfig::new(vec![2400, 0])),
            "bond rate = 0bps: at least 8 bit/s for every channel"
        );
        let mut config = BondConfig::new(vec![2400]);
        config.marginal.loss = 1.5;
        assert_eq!(message(config), "bond marginal_loss = 1.5: above 0 and below 1");
        let mut config = BondConfig::new(vec![2400]);
        config.probe_interval = Duration::ZERO;
        assert!(message(config).starts_with("bond probe_interval = 0ns"));
        let mut config = BondConfig::new(vec![2400]);
        config.down_after_intervals = 0;
        assert!(message(config).starts_with("bond down_after = 0"));
        let mut config = BondConfig::new(vec![2400]);
        config.framing_bytes = 1001;
        assert_eq!(message(config), "bond framing = 1001: at most 1000 bytes");
    }
}
