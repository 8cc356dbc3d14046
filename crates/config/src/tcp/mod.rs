//! The `[tcp]` schema: per-connection settings of the engine, in human
//! units. Every key is optional; what is left out keeps the engine's
//! default (see `scps_proto::Config`). The congestion control is not
//! here: the protocol label of a run chooses it. The keys themselves are
//! declared in `keys`, each once with its documentation.

mod keys;
mod setting;

use scps_proto::Config;
use serde::Deserialize;
use serde::de::{self, Deserializer};

use crate::error::Error;
use crate::units::{Rate, Time};

pub use keys::{KEYS, TcpSpec};

/// One `[tcp]` key: its name, the engine settings (`scps_proto::Config`
/// fields) it writes, and its row of the reference table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    pub key: &'static str,
    pub settings: &'static [&'static str],
    pub default: &'static str,
    pub range: &'static str,
    pub meaning: &'static str,
}

/// Engine settings no `[tcp]` key writes, with the reason: how a user
/// reaches each instead.
pub const SETTINGS_WITHOUT_KEY: &[(&str, &str)] = &[
    (
        "mtu",
        "the path's: `link.mtu` in a scenario, the device or route for real",
    ),
    (
        "congestion",
        "the protocol label chooses it (`tcp-vj`, `scps-vegas`, `scps-rate`...)",
    ),
    (
        "scps",
        "the protocol label chooses it: SCPS labels offer the capabilities",
    ),
    ("dead_after", "derived from `keepalive` by the real tools"),
    ("rate_route", "a gateway numbers its routes itself"),
];

/// The `[tcp]` reference table of docs/configuration.md, in Markdown, as
/// `KEYS` declares it.
pub fn reference_table() -> String {
    let mut table = String::from("| key | default | range | meaning |\n|---|---|---|---|\n");
    for key in KEYS {
        let cell = |text: &str| {
            if text.is_empty() {
                String::new()
            } else {
                format!(" {text}")
            }
        };
        table.push_str(&format!(
            "| `{}` |{} |{} |{} |\n",
            key.key,
            cell(key.default),
            cell(key.range),
            cell(key.meaning)
        ));
    }
    table
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

/// Checks a finished engine configuration, naming the key under `prefix`.
pub fn validate(config: &Config, prefix: &str) -> Result<(), Error> {
    config.validate().map_err(|e| {
        // Named by the key that writes the engine's field, where they differ.
        let key = KEYS
            .iter()
            .find(|key| key.settings.contains(&e.field))
            .map_or(e.field, |key| key.key);
        Error::invalid(format!("{prefix}.{key}"), e.value, e.allowed)
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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

    #[test]
    fn a_label_may_give_the_ceiling_of_an_auto_rate_set_for_all() {
        let mut config = Config::default();
        toml::from_str::<TcpSpec>("rate = \"auto\"")
            .unwrap()
            .apply(&mut config, "tcp")
            .unwrap();
        assert_eq!((config.rate_auto, config.rate_bps), (true, None));
        toml::from_str::<TcpSpec>("rate_max = \"5Mbit\"")
            .unwrap()
            .apply(&mut config, "stacks.scps-rate")
            .unwrap();
        assert_eq!((config.rate_auto, config.rate_bps), (true, Some(5_000_000)));
    }

    #[test]
    fn nested_keys_and_switches_keep_what_they_do_not_name() {
        let spec: TcpSpec = toml::from_str(
            "outage = { after_timeouts = 4 }\nvegas = { beta = 7 }\nuser_timeout = \"90s\"\nsnack_repeat = \"2s\"",
        )
        .unwrap();
        let mut config = Config::default();
        spec.apply(&mut config, "tcp").unwrap();
        let defaults = Config::default();
        assert_eq!(config.outage.after_timeouts, Some(4));
        assert_eq!(config.outage.probe_interval, defaults.outage.probe_interval);
        assert_eq!(
            (config.vegas.alpha, config.vegas.beta, config.vegas.gamma),
            (defaults.vegas.alpha, 7.0, defaults.vegas.gamma)
        );
        assert_eq!(config.user_timeout, Some(Duration::from_secs(90)));
        assert_eq!(config.snack_repeat, Some(Duration::from_secs(2)));
        let off: TcpSpec =
            toml::from_str("outage = { after_timeouts = \"off\" }\nuser_timeout = false").unwrap();
        off.apply(&mut config, "tcp").unwrap();
        assert_eq!((config.outage.after_timeouts, config.user_timeout), (None, None));
    }

    #[test]
    fn an_engine_field_is_refused_by_the_name_of_its_key() {
        let spec: TcpSpec = toml::from_str("initial_window = 5000").unwrap();
        let mut config = Config::default();
        spec.apply(&mut config, "stacks.tcp-vj").unwrap();
        let err = validate(&config, "stacks.tcp-vj").unwrap_err();
        assert!(
            err.to_string()
                .starts_with("stacks.tcp-vj.initial_window = 5000: "),
            "{err}"
        );
    }

    #[test]
    fn the_reference_table_has_a_row_per_key() {
        let table = reference_table();
        assert_eq!(table.lines().count(), KEYS.len() + 2);
        assert!(
            table.contains("| `window_scaling` | `true` | | RFC 7323 window scaling |\n"),
            "{table}"
        );
    }
}
