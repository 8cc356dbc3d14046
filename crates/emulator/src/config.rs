//! The emulator's configuration file: the scenarios' `[link]` schema, a
//! seed, and an `[emulate]` table saying where the emulator sits.
//!
//! ```toml
//! seed = 1
//! [emulate]
//! side_a = "a0"          # towards the client: a -> b is the forward direction
//! side_b = "b0"          # towards the server
//! control = "/run/scps-emulate.sock"   # optional
//! metrics = "127.0.0.1:9464"           # optional
//! circuit_ports = [7001, 7002]          # optional: a bundle's channels, one per circuit
//! [link]
//! rate = "8Mbit"
//! delay = "300ms"
//! ```
//!
//! Times in the link (scheduled outages) count from the emulator's start.

use std::net::SocketAddr;
use std::path::PathBuf;

use scps_config::Error;
use scps_config::link::{ChannelSpec, CircuitSpec, Link};
use serde::Deserialize;

/// Routing tables the emulator uses unless told otherwise: side a's
/// packets are looked up in this one, side b's in the next.
pub const DEFAULT_TABLE: u32 = 23_000;

/// Where the emulator sits and how it is reached.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmulateSpec {
    /// Interface towards side a (the client): what arrives here goes the
    /// forward way.
    pub side_a: String,
    /// Interface towards side b (the server).
    pub side_b: String,
    /// Unix socket for live control (`scps emulate ctl`).
    pub control: Option<PathBuf>,
    /// Address for Prometheus metrics over HTTP (`GET /metrics`).
    pub metrics: Option<SocketAddr>,
    /// A timeline of changes to replay (JSON lines, see `trace.rs`).
    pub replay: Option<PathBuf>,
    /// Where to record every change applied, as a replayable timeline.
    pub record: Option<PathBuf>,
    /// First of the two routing tables used to steer the sides.
    pub table: Option<u32>,
    /// A UDP port per circuit: a datagram to or from one rides its circuit
    /// alone (the channels of a bundle the hosts run themselves, see
    /// `pinning.rs`).
    #[serde(default)]
    pub circuit_ports: Vec<u16>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileSpec {
    seed: Option<u64>,
    emulate: EmulateSpec,
    link: ChannelSpec,
}

/// A checked configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct EmulatorConfig {
    pub emulate: EmulateSpec,
    /// Seed of every random process of the link.
    pub seed: u64,
    /// Largest IP packet.
    pub mtu: u16,
    /// Per circuit, the keys of both directions (for live changes).
    pub circuits: Vec<CircuitSpec>,
    /// The channel models they resolve to.
    pub link: Link,
}

/// Interface names: what Linux accepts (IFNAMSIZ - 1 bytes, no `/`,
/// whitespace or `:`).
fn check_interface(key: &str, name: &str) -> Result<(), Error> {
    if scps_config::is_interface_name(name) {
        Ok(())
    } else {
        Err(Error::invalid(
            key,
            format!("{name:?}"),
            "an interface name of 1 to 15 characters without '/', ':' or spaces",
        ))
    }
}

/// `emulate.circuit_ports`: none, or one port per circuit, each its own
/// and none 0.
fn check_circuit_ports(ports: &[u16], circuits: usize) -> Result<(), Error> {
    let key = "emulate.circuit_ports";
    let shown = || format!("{ports:?}");
    if !ports.is_empty() && ports.len() != circuits {
        let allowed = format!("one UDP port per circuit of the link ({circuits})");
        return Err(Error::invalid(key, shown(), allowed));
    }
    let mut seen = std::collections::HashSet::new();
    if ports.iter().any(|&port| port == 0 || !seen.insert(port)) {
        return Err(Error::invalid(
            key,
            shown(),
            "ports of 1 to 65535, each circuit its own",
        ));
    }
    Ok(())
}

impl EmulatorConfig {
    /// Reads and checks the file at `path`.
    pub fn load(path: &std::path::Path) -> Result<EmulatorConfig, Error> {
        let origin = path.display().to_string();
        let text = scps_config::text_file::read_config_text(path).map_err(|e| Error::Syntax {
            origin: origin.clone(),
            message: format!("cannot read it: {e}"),
        })?;
        EmulatorConfig::from_text(&text, &origin).map_err(|e| e.in_file(&origin))
    }

    /// Parses and checks a configuration; `origin` names it in errors.
    pub fn from_text(text: &str, origin: &str) -> Result<EmulatorConfig, Error> {
        let document: toml::Table = text
            .parse()
            .map_err(|e: toml::de::Error| Error::syntax(origin, text, &e))?;
        let spec: FileSpec = scps_config::deserialize(document)?;
        check_interface("emulate.side_a", &spec.emulate.side_a)?;
        check_interface("emulate.side_b", &spec.emulate.side_b)?;
        if spec.emulate.side_a == spec.emulate.side_b {
            return Err(Error::invalid(
                "emulate.side_b",
                format!("{:?}", spec.emulate.side_b),
                "an interface other than side_a",
            ));
        }
        if let Some(table) = spec.emulate.table
            && (table == 0
                || (252..=255).contains(&(table + 1))
                || (252..=255).contains(&table)
                || table > 0xffff_fff0)
        {
            return Err(Error::invalid(
                "emulate.table",
                table,
                "1 to 4294967280, the next one included, but not 252 to 255 (the kernel's own tables)",
            ));
        }
        let link = spec.link.resolve()?;
        let (mtu, circuits) = spec.link.circuits()?;
        check_circuit_ports(&spec.emulate.circuit_ports, circuits.len())?;
        Ok(EmulatorConfig {
            emulate: spec.emulate,
            seed: spec.seed.unwrap_or(1),
            mtu,
            circuits,
            link,
        })
    }

    /// The first routing table of the two.
    pub fn table(&self) -> u32 {
        self.emulate.table.unwrap_or(DEFAULT_TABLE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
        seed = 7
        [emulate]
        side_a = "a0"
        side_b = "b0"
        [link]
        rate = "2400bps"
        channels = 3
        call_drop_interval = "188s"
        redial_min = "55s"
        redial_max = "60s"
        [[link.channel]]
        rate = "4800bps"
        [link.return]
        delay = "1s"
    "#;

    #[test]
    fn the_link_schema_of_the_scenarios_describes_the_emulated_link() {
        let config = EmulatorConfig::from_text(GOOD, "test").unwrap();
        assert_eq!(config.seed, 7);
        assert_eq!(config.link.forward.len(), 3);
        assert_eq!(config.link.forward[0].rate_bps, 4800);
        assert_eq!(config.link.forward[1].rate_bps, 2400);
        assert_eq!(config.link.reverse[2].delay, std::time::Duration::from_secs(1));
        assert_eq!(config.circuits[1].key, "link.channel[1]");
        assert_eq!(config.table(), DEFAULT_TABLE);
    }

    #[test]
    fn mistakes_name_the_key_and_what_is_allowed() {
        let cases = [
            (
                GOOD.replace("\"b0\"", "\"a0\""),
                "emulate.side_b = \"a0\": an interface other than side_a",
            ),
            (
                GOOD.replace("\"b0\"", "\"much-too-long-name\""),
                "emulate.side_b = \"much-too-long-name\": an interface name of 1 to 15 characters",
            ),
            (
                GOOD.replace("channels = 3", "channels = 99"),
                "link.channels = 99: 1 to 64 parallel circuits",
            ),
            (
                GOOD.replace("rate = \"2400bps\"", "rate = \"2400Bps\""),
                "link.rate: invalid rate \"2400Bps\"",
            ),
            (
                GOOD.replace("seed = 7", "seed = 7\nspeed = 1"),
                ": unknown field `speed`",
            ),
            (
                GOOD.replace("side_b = \"b0\"", "side_b = \"b0\"\ntable = 254"),
                "emulate.table = 254: 1 to 4294967280",
            ),
            (
                GOOD.replace(
                    "channels = 3",
                    "channels = 3\nbond = \"scheduler\"\nbond_down_after = 0",
                ),
                "link.bond_down_after = 0: 1 to 100 probe intervals",
            ),
            (
                GOOD.replace("side_b = \"b0\"", "side_b = \"b0\"\ncircuit_ports = [7001, 7002]"),
                "emulate.circuit_ports = [7001, 7002]: one UDP port per circuit of the link (3)",
            ),
            (
                GOOD.replace(
                    "side_b = \"b0\"",
                    "side_b = \"b0\"\ncircuit_ports = [7001, 7002, 7001]",
                ),
                "emulate.circuit_ports = [7001, 7002, 7001]: ports of 1 to 65535, each circuit its own",
            ),
            (
                GOOD.replace(
                    "side_b = \"b0\"",
                    "side_b = \"b0\"\ncircuit_ports = [0, 7002, 7003]",
                ),
                "emulate.circuit_ports = [0, 7002, 7003]: ports of 1 to 65535",
            ),
            (
                GOOD.replace(
                    "side_b = \"b0\"",
                    "side_b = \"b0\"\ncircuit_ports = [7001, 7002, 70000]",
                ),
                "emulate.circuit_ports",
            ),
        ];
        for (text, expected) in cases {
            let error = EmulatorConfig::from_text(&text, "test").unwrap_err().to_string();
            assert!(
                error.starts_with(expected) || error.contains(expected),
                "{error}\nexpected {expected}"
            );
        }
    }
}
