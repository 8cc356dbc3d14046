//! The `[tcp]` schema: per-connection settings of the engine, in human
//! units. Every key is optional; what is left out keeps the engine's
//! default (see `scps_proto::Config`). The congestion control is not
//! here: the protocol label of a run chooses it.

use std::time::Duration;

use scps_proto::Config;
use scps_proto::config::{Keepalive, LossSource, RateOrder, SnackAnswer};
use serde::Deserialize;
use serde::de::{self, Deserializer};

use crate::error::Error;
use crate::units::{Bytes, Rate, Time};

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    pub send_buffer: Option<Bytes>,
    pub recv_buffer: Option<Bytes>,
    /// Receive-buffer autotuning: the buffer starts at `recv_buffer` and
    /// grows with what the application reads per round trip.
    pub recv_buffer_auto: Option<bool>,
    /// The most an autotuned receive buffer grows to.
    pub recv_buffer_max: Option<Bytes>,
    pub window_scaling: Option<bool>,
    pub timestamps: Option<bool>,
    pub sack: Option<bool>,
    /// Segments; 0 for RFC 3390's formula.
    pub initial_window: Option<u32>,
    pub rto_initial: Option<Time>,
    pub rto_min: Option<Time>,
    pub rto_max: Option<Time>,
    pub clock_granularity: Option<Time>,
    pub rto_margin_min: Option<Time>,
    pub max_retransmissions: Option<u32>,
    pub max_syn_retransmissions: Option<u32>,
    /// A delay, or "off" to acknowledge every segment at once.
    pub delayed_ack: Option<Switch<Time>>,
    pub ack_every: Option<u32>,
    /// The adaptive ACK policy on or off.
    pub ack_adaptive: Option<bool>,
    /// The rate of the link ACKs return on, for the adaptive policy.
    pub ack_return_rate: Option<Rate>,
    pub nagle: Option<bool>,
    /// Segments sized for the observed bit-error rate.
    pub mss_adapt: Option<bool>,
    /// Keepalive settings, or "off".
    pub keepalive: Option<Switch<KeepaliveSpec>>,
    /// How long data may stay unacknowledged before the connection fails
    /// (RFC 5482's user timeout), or "off".
    pub user_timeout: Option<Switch<Time>>,
    pub persist_min: Option<Time>,
    pub persist_max: Option<Time>,
    pub time_wait: Option<Time>,
    pub dup_threshold: Option<u32>,
    pub limited_transmit: Option<bool>,
    pub slow_start_after_idle: Option<bool>,
    pub hop_limit: Option<u8>,
    /// IP protocol of uncompressed segments: 6, or 106 as the SCPS RI's
    /// standalone builds send them.
    pub ip_protocol: Option<u8>,
    // SCPS-TP (whether the capabilities are offered is the protocol
    // label's choice).
    pub snack: Option<bool>,
    pub snack_delay: Option<Time>,
    /// How long a named hole persists before it is named again: a fixed
    /// interval instead of the measured SNACK round trip.
    pub snack_repeat: Option<Time>,
    /// "resend" (SCPS-TP), or "ignore" / "next-unit" to behave like a
    /// faulty peer in interoperation tests.
    pub snack_answer: Option<SnackAnswerSpec>,
    /// Offer header compression (IP protocol 105) in the SCPS capabilities.
    pub header_compression: Option<bool>,
    /// The route rate all sending is paced within, or "auto" to pace at
    /// what the path is measured to carry (then `rate_max` is its
    /// ceiling); SCPS stacks default to the link's rate in their
    /// direction.
    pub rate: Option<RouteRateSpec>,
    /// The least an "auto" rate falls to.
    pub rate_min: Option<Rate>,
    /// The most an "auto" rate rises to.
    pub rate_max: Option<Rate>,
    /// Bytes of link framing the pacer charges per packet.
    pub rate_framing: Option<u32>,
    /// "congestion" or "corruption".
    pub loss_source: Option<LossSourceSpec>,
    /// "turns" or "shortest": the order in which the connections sharing
    /// the route's rate send.
    pub rate_order: Option<RateOrderSpec>,
    pub vegas: Option<VegasSpec>,
    pub outage: Option<OutageSpec>,
}

/// A route rate: a figure, or "auto".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteRateSpec {
    Fixed(Rate),
    Auto,
}

impl<'de> Deserialize<'de> for RouteRateSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = toml::Value::deserialize(d)?;
        if value.as_str() == Some("auto") {
            return Ok(RouteRateSpec::Auto);
        }
        Rate::deserialize(value)
            .map(RouteRateSpec::Fixed)
            .map_err(|e| de::Error::custom(format!("{e}, or \"auto\"")))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateOrderSpec {
    Turns,
    Shortest,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SnackAnswerSpec {
    Resend,
    Ignore,
    NextUnit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LossSourceSpec {
    Congestion,
    Corruption,
}

#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VegasSpec {
    pub alpha: Option<f64>,
    pub beta: Option<f64>,
    pub gamma: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutageSpec {
    /// Timeouts in a row that mean the link is down, or "off".
    pub after_timeouts: Option<Switch<u32>>,
    pub probe_interval: Option<Time>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeepaliveSpec {
    pub idle: Time,
    pub interval: Time,
    pub probes: u32,
}

/// A setting that can also be switched off with `"off"` (or `false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Switch<T> {
    Off,
    On(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Switch<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Buffer the value: it is either the word "off", false, or a T.
        let value = toml::Value::deserialize(d)?;
        match &value {
            toml::Value::String(s) if s == "off" => return Ok(Switch::Off),
            toml::Value::Boolean(false) => return Ok(Switch::Off),
            _ => {}
        }
        T::deserialize(value).map(Switch::On).map_err(de::Error::custom)
    }
}

impl<T: Copy> Switch<T> {
    fn on(self) -> Option<T> {
        match self {
            Switch::Off => None,
            Switch::On(t) => Some(t),
        }
    }
}

impl TcpSpec {
    /// Writes the settings given into `config`; sizes that do not fit are
    /// refused naming the key under `prefix`.
    pub fn apply(&self, config: &mut Config, prefix: &str) -> Result<(), Error> {
        let size = |key: &str, b: Bytes| {
            usize::try_from(b.0).map_err(|_| Error::invalid(format!("{prefix}.{key}"), b, "at most 1GiB"))
        };
        let time = |t: Option<Time>, default: Duration| t.map_or(default, |t| t.0);
        if let Some(b) = self.send_buffer {
            config.send_buffer = size("send_buffer", b)?;
        }
        if let Some(b) = self.recv_buffer {
            config.recv_buffer = size("recv_buffer", b)?;
        }
        config.recv_buffer_auto = self.recv_buffer_auto.unwrap_or(config.recv_buffer_auto);
        if let Some(b) = self.recv_buffer_max {
            config.recv_buffer_max = size("recv_buffer_max", b)?;
        }
        config.window_scaling = self.window_scaling.unwrap_or(config.window_scaling);
        config.timestamps = self.timestamps.unwrap_or(config.timestamps);
        config.sack = self.sack.unwrap_or(config.sack);
        config.initial_window_segments = self.initial_window.unwrap_or(config.initial_window_segments);
        config.rto_initial = time(self.rto_initial, config.rto_initial);
        config.rto_min = time(self.rto_min, config.rto_min);
        config.rto_max = time(self.rto_max, config.rto_max);
        config.clock_granularity = time(self.clock_granularity, config.clock_granularity);
        config.rto_margin_min = time(self.rto_margin_min, config.rto_margin_min);
        config.max_retransmissions = self.max_retransmissions.unwrap_or(config.max_retransmissions);
        config.max_syn_retransmissions = self
            .max_syn_retransmissions
            .unwrap_or(config.max_syn_retransmissions);
        if let Some(delay) = self.delayed_ack {
            config.delayed_ack = delay.on().map(|t| t.0);
        }
        config.ack_every = self.ack_every.unwrap_or(config.ack_every);
        config.ack_adaptive = self.ack_adaptive.unwrap_or(config.ack_adaptive);
        if let Some(rate) = self.ack_return_rate {
            config.ack_return_rate_bps = Some(rate.0);
        }
        config.nagle = self.nagle.unwrap_or(config.nagle);
        config.mss_adapt = self.mss_adapt.unwrap_or(config.mss_adapt);
        if let Some(keepalive) = self.keepalive {
            config.keepalive = keepalive.on().map(|k| Keepalive {
                idle: k.idle.0,
                interval: k.interval.0,
                probes: k.probes,
            });
        }
        if let Some(limit) = self.user_timeout {
            config.user_timeout = limit.on().map(|t| t.0);
        }
        config.persist_min = time(self.persist_min, config.persist_min);
        config.persist_max = time(self.persist_max, config.persist_max);
        config.time_wait = time(self.time_wait, config.time_wait);
        config.dup_threshold = self.dup_threshold.unwrap_or(config.dup_threshold);
        config.limited_transmit = self.limited_transmit.unwrap_or(config.limited_transmit);
        config.slow_start_after_idle = self.slow_start_after_idle.unwrap_or(config.slow_start_after_idle);
        config.hop_limit = self.hop_limit.unwrap_or(config.hop_limit);
        config.ip_protocol = self.ip_protocol.unwrap_or(config.ip_protocol);
        config.snack = self.snack.unwrap_or(config.snack);
        config.snack_delay = time(self.snack_delay, config.snack_delay);
        if let Some(repeat) = self.snack_repeat {
            config.snack_repeat = Some(repeat.0);
        }
        if let Some(answer) = self.snack_answer {
            config.snack_answer = match answer {
                SnackAnswerSpec::Resend => SnackAnswer::Resend,
                SnackAnswerSpec::Ignore => SnackAnswer::Ignore,
                SnackAnswerSpec::NextUnit => SnackAnswer::NextUnit,
            };
        }
        config.header_compression = self.header_compression.unwrap_or(config.header_compression);
        match self.rate {
            Some(RouteRateSpec::Fixed(rate)) => {
                config.rate_bps = Some(rate.0);
                config.rate_auto = false;
            }
            Some(RouteRateSpec::Auto) => {
                config.rate_auto = true;
                config.rate_bps = self.rate_max.map(|r| r.0);
            }
            None => {}
        }
        if let Some(rate) = self.rate_min {
            config.rate_min_bps = rate.0;
        }
        if let Some(max) = self.rate_max.filter(|_| !config.rate_auto) {
            return Err(Error::invalid(
                format!("{prefix}.rate_max"),
                max.0,
                "a ceiling for rate = \"auto\" only (a fixed rate is its own ceiling)",
            ));
        }
        config.rate_framing_bytes = self.rate_framing.unwrap_or(config.rate_framing_bytes);
        if let Some(order) = self.rate_order {
            config.rate_order = match order {
                RateOrderSpec::Turns => RateOrder::Turns,
                RateOrderSpec::Shortest => RateOrder::Shortest,
            };
        }
        if let Some(source) = self.loss_source {
            config.loss_source = match source {
                LossSourceSpec::Congestion => LossSource::Congestion,
                LossSourceSpec::Corruption => LossSource::Corruption,
            };
        }
        if let Some(v) = self.vegas {
            config.vegas.alpha = v.alpha.unwrap_or(config.vegas.alpha);
            config.vegas.beta = v.beta.unwrap_or(config.vegas.beta);
            config.vegas.gamma = v.gamma.unwrap_or(config.vegas.gamma);
        }
        if let Some(outage) = self.outage {
            if let Some(after) = outage.after_timeouts {
                config.outage.after_timeouts = after.on();
            }
            config.outage.probe_interval = time(outage.probe_interval, config.outage.probe_interval);
        }
        Ok(())
    }
}

/// Checks a finished engine configuration, naming the key under `prefix`.
pub fn validate(config: &Config, prefix: &str) -> Result<(), Error> {
    config.validate().map_err(|e| {
        // The engine's field names are the schema's, except one.
        let key = match e.field {
            "initial_window_segments" => "initial_window",
            field => field,
        };
        Error::invalid(format!("{prefix}.{key}"), e.value, e.allowed)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_override_engine_defaults() {
        let spec: TcpSpec = toml::from_str(
            r#"
            recv_buffer = "64KiB"
            initial_window = 3
            rto_min = "800ms"
            delayed_ack = "off"
            keepalive = { idle = "2h", interval = "75s", probes = 9 }
            "#,
        )
        .unwrap();
        let mut config = Config::default();
        spec.apply(&mut config, "tcp").unwrap();
        assert_eq!(config.recv_buffer, 65536);
        assert_eq!(config.initial_window_segments, 3);
        assert_eq!(config.rto_min, Duration::from_millis(800));
        assert_eq!(config.delayed_ack, None);
        assert_eq!(config.keepalive.unwrap().probes, 9);
        assert_eq!(config.send_buffer, Config::default().send_buffer, "untouched");
    }

    #[test]
    fn receive_buffer_autotuning_is_off_unless_asked_and_bounded() {
        let mut config = Config::default();
        TcpSpec::default().apply(&mut config, "tcp").unwrap();
        assert!(!config.recv_buffer_auto, "off by default");
        let spec: TcpSpec = toml::from_str("recv_buffer_auto = true\nrecv_buffer_max = \"32MiB\"").unwrap();
        spec.apply(&mut config, "tcp").unwrap();
        assert!(config.recv_buffer_auto);
        assert_eq!(config.recv_buffer_max, 32 << 20);
        validate(&config, "tcp").unwrap();
        let below: TcpSpec = toml::from_str("recv_buffer = \"1MiB\"\nrecv_buffer_max = \"512KiB\"").unwrap();
        below.apply(&mut config, "stacks.scps-vj").unwrap();
        let err = validate(&config, "stacks.scps-vj").unwrap_err();
        assert_eq!(
            err.to_string(),
            "stacks.scps-vj.recv_buffer_max = 524288: at least recv_buffer (autotuning only grows the buffer)"
        );
    }

    #[test]
    fn out_of_range_values_name_the_key() {
        let spec: TcpSpec = toml::from_str("recv_buffer = \"100KB\"\nwindow_scaling = false").unwrap();
        let mut config = Config::default();
        spec.apply(&mut config, "stacks.tcp-vj").unwrap();
        let err = validate(&config, "stacks.tcp-vj").unwrap_err();
        assert_eq!(
            err.to_string(),
            "stacks.tcp-vj.recv_buffer = 100000: at most 65535 bytes without window scaling"
        );
        let bad = toml::from_str::<TcpSpec>("delayed_ack = \"soon\"").unwrap_err();
        assert!(bad.to_string().contains("invalid duration \"soon\""), "{bad}");
    }

    #[test]
    fn the_adaptive_ack_policy_needs_delayed_acks() {
        let spec: TcpSpec =
            toml::from_str("ack_adaptive = true\nack_return_rate = \"2400bps\"\nack_every = 3").unwrap();
        let mut config = Config::default();
        spec.apply(&mut config, "tcp").unwrap();
        assert!(config.ack_adaptive);
        assert_eq!(config.ack_return_rate_bps, Some(2400));
        assert_eq!(config.ack_every, 3);
        validate(&config, "tcp").unwrap();
        config.delayed_ack = None;
        let err = validate(&config, "tcp").unwrap_err();
        assert_eq!(
            err.to_string(),
            "tcp.ack_adaptive = true: off when delayed_ack is off (the adaptive policy delays ACKs)"
        );
    }

    #[test]
    fn a_route_rate_can_follow_the_path_within_bounds() {
        let spec: TcpSpec =
            toml::from_str("rate = \"auto\"\nrate_min = \"9600bps\"\nrate_max = \"10Mbit\"").unwrap();
        let mut config = Config::default();
        spec.apply(&mut config, "tcp").unwrap();
        assert!(config.rate_auto);
        assert_eq!((config.rate_min_bps, config.rate_bps), (9600, Some(10_000_000)));
        validate(&config, "tcp").unwrap();
        // A fixed rate after it turns it back into a fixed rate.
        let fixed: TcpSpec = toml::from_str("rate = \"2Mbit\"").unwrap();
        fixed.apply(&mut config, "stacks.scps-rate").unwrap();
        assert!(!config.rate_auto);
        assert_eq!(config.rate_bps, Some(2_000_000));
        // A ceiling belongs to "auto" only; a floor above it is refused.
        let err = toml::from_str::<TcpSpec>("rate = \"2Mbit\"\nrate_max = \"3Mbit\"")
            .unwrap()
            .apply(&mut Config::default(), "tcp")
            .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("tcp.rate_max = 3000000: a ceiling for rate = \"auto\" only"),
            "{err}"
        );
        let mut config = Config::default();
        toml::from_str::<TcpSpec>("rate = \"auto\"\nrate_min = \"2Mbit\"\nrate_max = \"1Mbit\"")
            .unwrap()
            .apply(&mut config, "tcp")
            .unwrap();
        let err = validate(&config, "tcp").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("tcp.rate_min = 2000000: 100 bit/s up to the route rate"),
            "{err}"
        );
        let bad = toml::from_str::<TcpSpec>("rate = \"fast\"").unwrap_err();
        assert!(bad.to_string().contains("or \"auto\""), "{bad}");
    }
}
