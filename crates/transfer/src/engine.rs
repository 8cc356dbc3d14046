//! What configures the engine of our stack, and the keepalive both stacks
//! run.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use scps_config::Direction;
use scps_config::bundle::BundleChannel;
use scps_config::stack::{RealStack, StackSettings, ToolKeepalive};
use scps_config::sweep::parse_assignment;
use scps_proto::config::Keepalive;

/// The scenarios' schema (a configuration file, a protocol label,
/// `KEY=VALUE` assignments), the channels of a bundle, and the tool's
/// keepalive.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    pub config: Option<PathBuf>,
    pub stack: Option<String>,
    pub sets: Vec<String>,
    pub channels: Vec<BundleChannel>,
    pub keepalive: ToolKeepalive,
}

/// Unanswered keepalive probes after which a connection is given up.
const KEEPALIVE_PROBES: u32 = 3;

/// The tools' keepalive unless `--keepalive` or `tcp.keepalive` says.
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(15);

/// Keepalive probes every `every` after as long idle, 3 of them.
pub fn keepalive_every(every: Duration) -> Keepalive {
    Keepalive {
        idle: every,
        interval: every,
        probes: KEEPALIVE_PROBES,
    }
}

/// The tool's keepalive: probes every `given` (`--keepalive`), else every
/// 15 s unless a key of the configuration says otherwise.
pub fn tool_keepalive(given: Option<Duration>) -> ToolKeepalive {
    match given {
        Some(every) => ToolKeepalive::Given(keepalive_every(every)),
        None => ToolKeepalive::Default(keepalive_every(DEFAULT_KEEPALIVE)),
    }
}

impl EngineOptions {
    /// Whether anything here configures our stack beyond its defaults.
    pub(crate) fn given(&self) -> bool {
        self.config.is_some() || self.stack.is_some() || !self.sets.is_empty()
    }

    /// Our stack's configuration, sending its data `direction`, on a path
    /// of `path_mtu` unless `link.mtu` says otherwise. Unless a key sizes
    /// the receive buffer, it is autotuned: it starts at `recv_buffer`
    /// and grows with what the application reads per round trip, up to
    /// `recv_buffer_max`, so that a receiver keeps up with a long fat
    /// path without being told its size (`tcp.recv_buffer_auto=false`
    /// keeps the fixed buffer).
    pub(crate) fn resolve(&self, direction: Direction, path_mtu: u16) -> anyhow::Result<RealStack> {
        let text = match &self.config {
            Some(path) => Some(
                scps_config::text_file::read_config_text(path)
                    .with_context(|| format!("cannot read --config {}", path.display()))?,
            ),
            None => None,
        };
        let origin = self.config.as_ref().map(|p| p.display().to_string());
        let sets = self
            .sets
            .iter()
            .map(|text| parse_assignment(text))
            .collect::<Result<Vec<_>, _>>()?;
        let settings = StackSettings {
            file: origin.as_deref().zip(text.as_deref()),
            label: self.stack.as_deref(),
            sets: &sets,
            keepalive: self.keepalive,
            channels: &self.channels,
        };
        let mut stack = settings.resolve(direction, path_mtu)?;
        if !stack.recv_buffer_keyed && stack.config.window_scaling {
            stack.config.recv_buffer_auto = true;
            scps_config::tcp::validate(&stack.config, "tcp")?;
        }
        Ok(stack)
    }

    /// The keepalive either stack runs.
    pub(crate) fn keepalive(&self) -> Keepalive {
        self.keepalive.keepalive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_keepalive_is_given_or_every_15_s_three_probes() {
        let every = |seconds| Keepalive {
            idle: Duration::from_secs(seconds),
            interval: Duration::from_secs(seconds),
            probes: 3,
        };
        assert_eq!(tool_keepalive(None), ToolKeepalive::Default(every(15)));
        assert_eq!(
            tool_keepalive(Some(Duration::from_secs(4))),
            ToolKeepalive::Given(every(4))
        );
    }
}
