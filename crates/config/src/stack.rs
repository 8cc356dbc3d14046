//! The engine configuration of a real stack (`scps send`, `scps recv`):
//! the scenarios' protocol labels, `[tcp]` and `[stacks.LABEL]` tables and
//! `--set` keys, so that whatever the simulator measures can be switched
//! on over a real path with the same keys, defaults and errors.
//!
//! A scenario file may be given whole: its `[tcp]` and `[stacks.LABEL]`
//! configure the stack, and its `[link]`, if any, gives the route rate an
//! SCPS stack paces at, as in the simulator. What describes only a
//! simulation (the workload, runs, seeds, topology) is read and ignored:
//! the tools take their workload from their own options.

use std::collections::BTreeMap;

use scps_proto::config::Keepalive;
use serde::Deserialize;
use serde::de::IgnoredAny;
use toml::Value;

use crate::bundle::{self, Bundle, BundleChannel, BundleSpec};
use crate::error::Error;
use crate::link::{ChannelSpec, Direction};
use crate::protocol::Protocol;
use crate::scenario::{engine_tcp, with_route};
use crate::sweep::Sweep;
use crate::tcp::{TcpSpec, validate};

/// The label a real stack runs without `--stack` or `protocol`: today's
/// behaviour of the tools (SCPS-TP offered, NewReno, paced only where a
/// route rate is known).
pub const DEFAULT_PROTOCOL: Protocol = Protocol::ScpsVj;

/// The keys `--set` may give a real stack: the rest of a scenario
/// describes a simulation.
const SETTABLE: &str = "protocol, tcp.KEY, stacks.LABEL.KEY or link.KEY";

/// A scenario document as a real stack reads it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // the simulation's keys are read only to be accepted
struct StackSpec {
    protocol: Option<String>,
    #[serde(default)]
    tcp: TcpSpec,
    #[serde(default)]
    stacks: BTreeMap<String, TcpSpec>,
    link: Option<ChannelSpec>,
    /// A real path of several channels (`crate::bundle`).
    bundle: Option<BundleSpec>,
    // A simulation's keys, accepted so that any scenario file serves.
    name: Option<IgnoredAny>,
    description: Option<IgnoredAny>,
    seed: Option<IgnoredAny>,
    runs: Option<IgnoredAny>,
    time_limit: Option<IgnoredAny>,
    workload: Option<IgnoredAny>,
    limit: Option<IgnoredAny>,
    topology: Option<IgnoredAny>,
    gateway: Option<IgnoredAny>,
}

/// What a real stack runs with.
#[derive(Debug, Clone, PartialEq)]
pub struct RealStack {
    pub protocol: Protocol,
    pub config: scps_proto::Config,
    /// The bundle of channels the stack runs on, if one is given.
    pub bundle: Option<Bundle>,
    /// A key (`recv_buffer` or `recv_buffer_auto`, in `[tcp]` or the
    /// label's `[stacks.LABEL]`) says how the receive buffer is sized:
    /// a tool that autotunes its buffer by default leaves it as keyed.
    pub recv_buffer_keyed: bool,
}

/// The keepalive of a tool: its default, or what its own option says (which
/// a `keepalive` key may not then contradict).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ToolKeepalive {
    Default(Keepalive),
    Given(Keepalive),
}

impl ToolKeepalive {
    /// The keepalive, whichever way it was set.
    pub fn keepalive(self) -> Keepalive {
        match self {
            ToolKeepalive::Default(k) | ToolKeepalive::Given(k) => k,
        }
    }
}

/// Where the settings of a real stack come from.
#[derive(Debug, Clone)]
pub struct StackSettings<'a> {
    /// A scenario file's path and text.
    pub file: Option<(&'a str, &'a str)>,
    /// `--stack LABEL`.
    pub label: Option<&'a str>,
    /// `--set KEY=VALUE`, in order.
    pub sets: &'a [(String, Value)],
    /// The tool's keepalive (`--keepalive`), under `tcp.keepalive`.
    pub keepalive: ToolKeepalive,
    /// `--channel`, in order: a bundle, over the file's `[bundle]`.
    pub channels: &'a [BundleChannel],
}

impl StackSettings<'_> {
    /// The engine configuration of a stack whose data goes `direction` on
    /// the file's link (a sender's forward, a receiver's return), on a
    /// path whose packets hold at most `path_mtu` bytes unless `link.mtu`
    /// says otherwise.
    pub fn resolve(&self, direction: Direction, path_mtu: u16) -> Result<RealStack, Error> {
        let (origin, text) = self.file.unwrap_or(("the command line", ""));
        self.resolve_document(text, origin, direction, path_mtu)
            .map_err(|e| match self.file {
                Some((path, _)) => e.in_file(path),
                None => e,
            })
    }

    fn resolve_document(
        &self,
        text: &str,
        origin: &str,
        direction: Direction,
        path_mtu: u16,
    ) -> Result<RealStack, Error> {
        let mut sweep = Sweep::parse(text, origin)?;
        for (key, value) in self.sets {
            let root = key.split('.').next().unwrap_or_default();
            if !matches!(root, "protocol" | "tcp" | "stacks" | "link") {
                return Err(Error::invalid(
                    "--set",
                    key,
                    format!("{SETTABLE}: the workload is given by the command's own options"),
                ));
            }
            sweep.set(key, value.clone())?;
        }
        if let Some(label) = self.label {
            sweep.set("protocol", Value::String(label.to_owned()))?;
        }
        let mut points = sweep.points()?;
        if points.len() != 1 {
            let axes: Vec<&str> = sweep
                .axes
                .iter()
                .filter(|(_, values)| values.len() > 1)
                .map(|(key, _)| key.as_str())
                .collect();
            return Err(Error::invalid(
                "sweep",
                axes.join(", "),
                format!(
                    "one point for a real stack, this is {}: pin each swept key with --set KEY=VALUE",
                    points.len()
                ),
            ));
        }
        let spec: StackSpec = crate::deserialize(points.remove(0).document)?;
        let protocol = match &spec.protocol {
            Some(label) => label.parse()?,
            None => DEFAULT_PROTOCOL,
        };
        let on_a_host: Vec<&str> = Protocol::ALL
            .iter()
            .filter(|p| !p.through_gateways() && !p.is_saratoga())
            .map(|p| p.label())
            .collect();
        if protocol.is_saratoga() {
            return Err(Error::invalid(
                "protocol",
                protocol,
                format!(
                    "a TCP stack ({}): saratoga is not TCP, and runs only in the simulator so far",
                    on_a_host.join(", ")
                ),
            ));
        }
        if let Some(across) = protocol.across_gateways() {
            return Err(Error::invalid(
                "protocol",
                protocol,
                format!(
                    "a stack this host runs itself ({}): {protocol} is two gateways splitting the \
                     connection; for real, run `scps gateway` with protocol = \"{across}\" in its [engine] \
                     (docs/gateway.md)",
                    on_a_host.join(", ")
                ),
            ));
        }
        // A link with a rate is a route to pace at; `link.mtu` alone only
        // sizes the packets.
        let link = match &spec.link {
            Some(link) if link.rate.is_some() => Some(link.resolve()?),
            _ => None,
        };
        let mtu = match &spec.link {
            Some(link) if link.mtu.is_some() => link.checked_mtu()?,
            _ => path_mtu,
        };
        let sizes_receive_buffer =
            |tcp: &TcpSpec| tcp.recv_buffer.is_some() || tcp.recv_buffer_auto.is_some();
        let recv_buffer_keyed = sizes_receive_buffer(&spec.tcp)
            || spec
                .stacks
                .get(protocol.label())
                .is_some_and(sizes_receive_buffer);
        let keys_keepalive = spec.tcp.keepalive.is_some()
            || spec
                .stacks
                .get(protocol.label())
                .is_some_and(|stack| stack.keepalive.is_some());
        let keepalive = match self.keepalive {
            ToolKeepalive::Given(_) if keys_keepalive => {
                return Err(Error::invalid(
                    "--keepalive",
                    "given",
                    "either --keepalive or a keepalive key (tcp.keepalive), not both",
                ));
            }
            tool => tool.keepalive(),
        };
        // A transfer that makes no progress is given up as soon as an idle
        // connection whose peer went silent would be (a `user_timeout`
        // key may say otherwise).
        let base = scps_proto::Config {
            mtu,
            keepalive: Some(keepalive),
            user_timeout: Some(keepalive.silence_kept()),
            ..scps_proto::Config::default()
        };
        let mut config = engine_tcp(protocol, &spec.tcp, &spec.stacks, base)?;
        if let Some(link) = &link {
            config = with_route(config, protocol, link, direction);
        }
        if protocol == Protocol::ScpsRate && config.rate_bps.is_none() && !config.rate_auto {
            return Err(Error::invalid(
                "tcp.rate",
                "none",
                "a rate for scps-rate, which sends at the route rate: --set tcp.rate=RATE (or =auto to measure the \
                 path), or a scenario file whose [link] has the route's rate",
            ));
        }
        validate(&config, "tcp")?;
        let bundle = bundle::resolve(self.channels, spec.bundle.as_ref(), spec.link.as_ref())?;
        Ok(RealStack {
            protocol,
            config,
            bundle,
            recv_buffer_keyed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::parse_assignment;
    use scps_proto::cc::CongestionAlgorithm;
    use scps_proto::config::LossSource;

    fn sets(texts: &[&str]) -> Vec<(String, Value)> {
        texts.iter().map(|t| parse_assignment(t).unwrap()).collect()
    }

    const KEEPALIVE: Keepalive = Keepalive {
        idle: std::time::Duration::from_secs(15),
        interval: std::time::Duration::from_secs(15),
        probes: 3,
    };

    fn resolve_with(
        file: Option<&str>,
        label: Option<&str>,
        assignments: &[&str],
        keepalive: ToolKeepalive,
    ) -> Result<RealStack, Error> {
        let sets = sets(assignments);
        StackSettings {
            file: file.map(|text| ("test.toml", text)),
            label,
            sets: &sets,
            keepalive,
            channels: &[],
        }
        .resolve(Direction::Forward, 1472)
    }

    fn resolve(file: Option<&str>, label: Option<&str>, assignments: &[&str]) -> Result<RealStack, Error> {
        resolve_with(file, label, assignments, ToolKeepalive::Default(KEEPALIVE))
    }

    #[test]
    fn the_tools_keepalive_unless_a_key_says_otherwise_but_not_both() {
        let default = resolve(None, None, &[]).unwrap();
        assert_eq!(default.config.keepalive, Some(KEEPALIVE));
        let off = resolve(None, None, &["tcp.keepalive=\"off\""]).unwrap();
        assert_eq!(off.config.keepalive, None);
        let both = resolve_with(
            None,
            None,
            &["tcp.keepalive=\"off\""],
            ToolKeepalive::Given(KEEPALIVE),
        );
        assert!(
            both.unwrap_err()
                .to_string()
                .starts_with("--keepalive = given: either --keepalive or"),
        );
    }

    #[test]
    fn a_transfer_without_progress_is_given_up_like_a_silent_idle_peer() {
        let default = resolve(None, None, &[]).unwrap();
        assert_eq!(
            default.config.user_timeout,
            Some(KEEPALIVE.idle + KEEPALIVE.interval * KEEPALIVE.probes)
        );
        let keyed = resolve(None, None, &["tcp.user_timeout=\"10min\""]).unwrap();
        assert_eq!(
            keyed.config.user_timeout,
            Some(std::time::Duration::from_secs(600))
        );
        let off = resolve(None, None, &["tcp.user_timeout=\"off\""]).unwrap();
        assert_eq!(off.config.user_timeout, None);
        let zero = resolve(None, None, &["tcp.user_timeout=\"0s\""]).unwrap_err();
        assert!(zero.to_string().contains("user_timeout"), "{zero}");
    }

    #[test]
    fn without_settings_the_default_label_on_the_paths_mtu() {
        let stack = resolve(None, None, &[]).unwrap();
        assert_eq!(stack.protocol, DEFAULT_PROTOCOL);
        assert_eq!(stack.config.congestion, CongestionAlgorithm::NewReno);
        assert!(stack.config.scps);
        assert_eq!(stack.config.rate_bps, None, "no route rate is known");
        assert_eq!(stack.config.mtu, 1472);
    }

    #[test]
    fn scps_rate_needs_a_rate_or_auto() {
        let err = resolve(None, Some("scps-rate"), &[]).unwrap_err();
        assert!(err.to_string().contains("=auto to measure the path"), "{err}");
        let auto = resolve(None, Some("scps-rate"), &["tcp.rate=\"auto\""]).unwrap();
        assert!(auto.config.rate_auto);
        assert_eq!(auto.config.rate_bps, None);
    }

    #[test]
    fn labels_and_keys_reach_the_engine() {
        let stack = resolve(
            None,
            Some("scps-rate"),
            &[
                "tcp.rate=8Mbit",
                "tcp.loss_source=corruption",
                "tcp.recv_buffer=4MiB",
                "link.mtu=1200",
            ],
        )
        .unwrap();
        assert_eq!(stack.config.congestion, CongestionAlgorithm::Rate);
        assert_eq!(stack.config.rate_bps, Some(8_000_000));
        assert_eq!(stack.config.loss_source, LossSource::Corruption);
        assert_eq!(stack.config.recv_buffer, 4 << 20);
        assert_eq!(stack.config.mtu, 1200);
        let plain = resolve(None, Some("tcp-vj"), &[]).unwrap();
        assert!(!plain.config.scps);
    }

    #[test]
    fn keys_that_size_the_receive_buffer_are_told_apart() {
        let keyed = |file, assignments: &[&str]| {
            resolve(file, Some("scps-vj"), assignments)
                .unwrap()
                .recv_buffer_keyed
        };
        assert!(!keyed(None, &[]));
        assert!(!keyed(None, &["tcp.recv_buffer_max=\"8MiB\""]), "a maximum alone");
        assert!(keyed(None, &["tcp.recv_buffer=\"1MiB\""]));
        assert!(keyed(None, &["tcp.recv_buffer_auto=false"]));
        assert!(keyed(Some("[stacks.scps-vj]\nrecv_buffer = \"1MiB\"\n"), &[]));
        assert!(
            !keyed(Some("[stacks.tcp-vj]\nrecv_buffer = \"1MiB\"\n"), &[]),
            "another label's"
        );
    }

    #[test]
    fn a_scenario_file_gives_its_tcp_stacks_and_route_rate() {
        let scenario = crate::scenario::BUILTIN
            .iter()
            .find(|(name, _)| *name == "geo-8mbit")
            .unwrap()
            .1;
        let pinned = ["link.ber=1e-5", "link.rtt=600ms"];
        let stack = resolve(Some(scenario), Some("scps-rate"), &pinned).unwrap();
        assert_eq!(stack.config.rate_bps, Some(8_000_000), "the [link]'s rate");
        let point = crate::Scenario::from_text(
            scenario,
            "geo-8mbit",
            &sets(&["link.ber=1e-5", "link.rtt=600ms", "protocol=scps-rate"]),
        )
        .unwrap();
        let simulated = point.points[0].engine_config(Direction::Forward);
        let on_this_path = scps_proto::Config {
            mtu: 1472,
            keepalive: Some(KEEPALIVE),
            user_timeout: Some(KEEPALIVE.silence_kept()),
            ..simulated
        };
        assert_eq!(
            stack.config, on_this_path,
            "the simulator's sender, on this path's MTU"
        );
    }

    #[test]
    fn nonsense_is_refused_naming_the_key() {
        /// A file, a label, assignments, and the error's start.
        type Case<'a> = (Option<&'a str>, Option<&'a str>, &'a [&'a str], &'a str);
        let cases: [Case; 9] = [
            (
                None,
                None,
                &["link.mtu=70000"],
                "link.mtu = 70000: 576 to 65535 bytes",
            ),
            (
                None,
                Some("scps-fast"),
                &[],
                "protocol = \"scps-fast\": one of tcp-vj",
            ),
            (None, None, &["tcp.speed=5"], "tcp.speed: unknown field `speed`"),
            (
                None,
                None,
                &["workload.bytes=1MB"],
                "--set = workload.bytes: protocol, tcp.KEY",
            ),
            (
                None,
                Some("scps-rate"),
                &[],
                "tcp.rate = none: a rate for scps-rate",
            ),
            (
                None,
                Some("gw-scps-rate"),
                &[],
                "protocol = gw-scps-rate: a stack this host runs itself (tcp-vj, tcp-cubic, scps-vj, \
                 scps-vegas, scps-rate): gw-scps-rate is two gateways splitting the connection; for \
                 real, run `scps gateway` with protocol = \"scps-rate\"",
            ),
            (
                None,
                Some("saratoga"),
                &[],
                "protocol = saratoga: a TCP stack (tcp-vj, tcp-cubic, scps-vj, scps-vegas, scps-rate): \
                 saratoga is not TCP, and runs only in the simulator so far",
            ),
            (
                Some("[sweep]\n\"link.ber\" = [0, 1e-5]\n[link]\nrate = \"8Mbit\"\n"),
                None,
                &[],
                "test.toml: sweep = link.ber: one point for a real stack, this is 2",
            ),
            (
                Some("nmae = \"x\"\n"),
                None,
                &[],
                "test.toml: nmae: unknown field `nmae`",
            ),
        ];
        for (file, label, assignments, expected) in cases {
            let err = resolve(file, label, assignments).unwrap_err().to_string();
            assert!(err.starts_with(expected), "{assignments:?}: {err}");
        }
    }
}
