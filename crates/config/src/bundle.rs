//! A real bundle (docs/bonding.md, "Real bundles"): one path over several UDP channels,
//! each its own local address and peer (a modem's circuit, a radio, an
//! interface of its own), striped by the bonding scheduler with the
//! `[link]` section's `bond_*` settings, as the simulator stripes its
//! circuits.
//!
//! A channel is written the same way on the command line and in a file:
//! `scps send --channel local=10.1.0.1:7000,peer=10.1.0.2:7000,rate=2400bps`
//! or, in a scenario file,
//!
//! ```toml
//! [bundle]
//! hook = "/usr/local/sbin/redial"   # run on every channel state change
//! [[bundle.channel]]
//! local = "10.1.0.1:7000"
//! peer = "10.1.0.2:7000"
//! rate = "2400bps"                  # the channel's nominal rate
//! device = "ppp0"                   # optional: leave by this interface
//! ```

use std::collections::HashSet;
use std::net::SocketAddr;
use std::str::FromStr;

use scps_bond::BondConfig;
use serde::Deserialize;

use crate::error::Error;
use crate::is_interface_name;
use crate::link::ChannelSpec;
use crate::units::Rate;

/// One channel of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BundleChannel {
    /// The UDP address this end binds for the channel.
    pub local: SocketAddr,
    /// The other end's address of the same channel.
    pub peer: SocketAddr,
    /// The channel's nominal rate (a modem's), which the scheduler's share
    /// starts from before its probes measure it.
    pub rate_bps: u64,
    /// The network interface the channel's datagrams leave by, whatever
    /// the routing table says (SO_BINDTODEVICE; needs CAP_NET_RAW).
    pub device: Option<String>,
}

/// A bundle as a real stack runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Bundle {
    pub channels: Vec<BundleChannel>,
    /// The scheduler's settings, with the channels' rates.
    pub bond: BondConfig,
    /// A command run (by `sh -c`) on each channel state change.
    pub hook: Option<String>,
}

/// A channel's keys, as a file or `--channel` writes them.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ChannelKeys {
    local: String,
    peer: String,
    rate: Rate,
    device: Option<String>,
}

/// The `[bundle]` section of a scenario file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct BundleSpec {
    #[serde(default)]
    channel: Vec<toml::Table>,
    hook: Option<String>,
}

const CHANNEL_FORM: &str = "local=ADDR:PORT,peer=ADDR:PORT,rate=RATE[,device=NAME]";

impl FromStr for BundleChannel {
    type Err = Error;

    /// Reads `local=ADDR:PORT,peer=ADDR:PORT,rate=RATE[,device=NAME]`.
    fn from_str(text: &str) -> Result<BundleChannel, Error> {
        let mut table = toml::Table::new();
        for pair in text.split(',') {
            let Some((key, value)) = pair.split_once('=') else {
                return Err(Error::invalid(
                    "--channel",
                    text,
                    format!("{CHANNEL_FORM}; {pair:?} is not KEY=VALUE"),
                ));
            };
            if table.insert(key.trim().to_owned(), value.trim().into()).is_some() {
                return Err(Error::invalid(
                    "--channel",
                    text,
                    format!("{CHANNEL_FORM}, each key once"),
                ));
            }
        }
        BundleChannel::from_table(table, "--channel")
    }
}

impl BundleChannel {
    fn from_table(table: toml::Table, key: &str) -> Result<BundleChannel, Error> {
        let keys: ChannelKeys = crate::deserialize(table).map_err(|e| in_key(e, key))?;
        let address = |name: &str, text: &str| {
            text.parse::<SocketAddr>().map_err(|_| {
                Error::invalid(
                    format!("{key}.{name}"),
                    text,
                    "an address and port, such as 10.1.0.1:7000 or [fd00::1]:7000",
                )
            })
        };
        let channel = BundleChannel {
            local: address("local", &keys.local)?,
            peer: address("peer", &keys.peer)?,
            rate_bps: keys.rate.bps(),
            device: keys.device,
        };
        if channel.local.is_ipv4() != channel.peer.is_ipv4() {
            return Err(Error::invalid(
                format!("{key}.peer"),
                channel.peer,
                format!("an address of the local one's IP version ({})", channel.local),
            ));
        }
        if !scps_node::is_host_socket(channel.peer) {
            return Err(Error::invalid(
                format!("{key}.peer"),
                channel.peer,
                "a host's address (not multicast, broadcast or unspecified) and a port above 0",
            ));
        }
        if channel.rate_bps < 8 {
            return Err(Error::invalid(
                format!("{key}.rate"),
                Rate(channel.rate_bps),
                "at least 8 bit/s",
            ));
        }
        if let Some(device) = channel.device.as_deref().filter(|d| !is_interface_name(d)) {
            return Err(Error::invalid(
                format!("{key}.device"),
                device,
                "a network interface's name (1 to 15 bytes, no '/', ':' or space)",
            ));
        }
        Ok(channel)
    }
}

/// Names a schema error's key under `key` (a `--channel` or a file's
/// `bundle.channel[i]`).
fn in_key(error: Error, key: &str) -> Error {
    let under = |inner: String| match inner.as_str() {
        // A key missing from the channel itself.
        "top level" => key.to_owned(),
        _ => format!("{key}.{inner}"),
    };
    match error {
        Error::Schema { key: inner, message } => Error::Schema {
            key: under(inner),
            message,
        },
        Error::Invalid {
            key: inner,
            value,
            allowed,
        } => Error::Invalid {
            key: under(inner),
            value,
            allowed,
        },
        other => other,
    }
}

impl BundleSpec {
    fn channels(&self) -> Result<Vec<BundleChannel>, Error> {
        self.channel
            .iter()
            .enumerate()
            .map(|(i, table)| BundleChannel::from_table(table.clone(), &format!("bundle.channel[{i}]")))
            .collect()
    }
}

/// The bundle a real stack runs on: the channels of the command line if
/// any, else those of the file's `[bundle]`; `None` when neither has
/// one. Refused: a section without channels, a channel given twice (the
/// same local address, or the same peer), more channels than the
/// scheduler numbers, scheduler settings out of range.
pub(crate) fn resolve(
    command_line: &[BundleChannel],
    spec: Option<&BundleSpec>,
    link: Option<&ChannelSpec>,
) -> Result<Option<Bundle>, Error> {
    let (channels, key) = match spec {
        _ if !command_line.is_empty() => (command_line.to_vec(), "--channel"),
        Some(spec) => (spec.channels()?, "bundle.channel"),
        None => return Ok(None),
    };
    if channels.is_empty() {
        return Err(Error::invalid(
            key,
            "none",
            "at least one channel: [[bundle.channel]] with local, peer and rate",
        ));
    }
    if channels.len() > scps_bond::config::MAX_CHANNELS {
        return Err(Error::invalid(key, channels.len(), "at most 255 channels"));
    }
    let mut locals = HashSet::new();
    let mut peers = HashSet::new();
    for channel in &channels {
        // Port 0 asks the kernel for a free one: never the same twice.
        if channel.local.port() != 0 && !locals.insert(channel.local) {
            return Err(Error::invalid(
                format!("{key}.local"),
                channel.local,
                "each channel its own local address",
            ));
        }
        if !peers.insert(channel.peer) {
            return Err(Error::invalid(
                format!("{key}.peer"),
                channel.peer,
                "each channel its own peer address",
            ));
        }
    }
    let rates = channels.iter().map(|c| c.rate_bps).collect();
    let mut bond = match link {
        Some(link) => link.scheduler_settings(rates)?,
        None => {
            let bond = BondConfig::new(rates);
            bond.check()
                .map_err(|e| Error::invalid(format!("bond {}", e.key), e.value, e.allowed))?;
            bond
        }
    };
    // It holds about a second of what the channels carry together (a
    // router's queue), at least the default.
    let total_bps: u64 = channels.iter().map(|c| c.rate_bps).sum();
    bond.hold_bytes = usize::try_from(total_bps / 8)
        .unwrap_or(usize::MAX)
        .clamp(bond.hold_bytes, 1 << 30);
    Ok(Some(Bundle {
        channels,
        bond,
        hook: spec.and_then(|s| s.hook.clone()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Direction;
    use crate::stack::{StackSettings, ToolKeepalive};

    const KEEPALIVE: ToolKeepalive = ToolKeepalive::Default(scps_proto::config::Keepalive {
        idle: std::time::Duration::from_secs(15),
        interval: std::time::Duration::from_secs(15),
        probes: 3,
    });

    fn resolve_file(text: &str, channels: &[BundleChannel]) -> Result<Option<Bundle>, Error> {
        let settings = StackSettings {
            file: Some(("test.toml", text)),
            label: None,
            sets: &[],
            keepalive: KEEPALIVE,
            channels,
        };
        settings
            .resolve(Direction::Forward, 1472)
            .map(|stack| stack.bundle)
    }

    fn refusal(text: &str) -> String {
        resolve_file(text, &[]).unwrap_err().to_string()
    }

    #[test]
    fn a_channel_reads_the_same_on_the_command_line_and_in_a_file() {
        let given: BundleChannel = "local=10.1.0.1:7000, peer=10.1.0.2:7000 ,rate=2400bps,device=ppp0"
            .parse()
            .unwrap();
        let expected = BundleChannel {
            local: "10.1.0.1:7000".parse().unwrap(),
            peer: "10.1.0.2:7000".parse().unwrap(),
            rate_bps: 2400,
            device: Some("ppp0".into()),
        };
        assert_eq!(given, expected);
        let file = "[link]\nbond_probe_interval = \"250ms\"\nbond_marginal_loss = 0.5\n\n[bundle]\nhook = \"redial\"\n\
                    [[bundle.channel]]\nlocal = \"10.1.0.1:7000\"\npeer = \"10.1.0.2:7000\"\nrate = \"2400bps\"\n\
                    device = \"ppp0\"\n[[bundle.channel]]\nlocal = \"10.1.1.1:7000\"\npeer = \"10.1.1.2:7000\"\n\
                    rate = \"9600bps\"\n";
        let bundle = resolve_file(file, &[]).unwrap().unwrap();
        assert_eq!(bundle.channels[0], expected);
        assert_eq!(bundle.hook.as_deref(), Some("redial"));
        assert_eq!(bundle.bond.channel_rates_bps, vec![2400, 9600]);
        assert_eq!(bundle.bond.probe_interval, std::time::Duration::from_millis(250));
        assert_eq!(bundle.bond.marginal.loss, 0.5);
        // The command line's channels replace the file's.
        let bundle = resolve_file(file, std::slice::from_ref(&expected))
            .unwrap()
            .unwrap();
        assert_eq!(bundle.channels, vec![expected]);
        assert_eq!(resolve_file("[tcp]\nnagle = false\n", &[]).unwrap(), None);
    }

    #[test]
    fn bad_channels_are_refused_naming_the_key() {
        let parse = |text: &str| text.parse::<BundleChannel>().unwrap_err().to_string();
        assert!(parse("local=10.1.0.1:7000").contains("--channel: missing field `peer`"));
        assert!(parse("local=10.1.0.1:7000,peer").contains("\"peer\" is not KEY=VALUE"));
        assert!(parse("local=a,local=b").contains("each key once"));
        assert!(
            parse("local=10.1.0.1:7000,peer=10.1.0.2:7000,rate=2400bps,speed=1")
                .contains("unknown field `speed`")
        );
        assert!(
            parse("local=10.1.0.1,peer=10.1.0.2:7000,rate=2400bps")
                .starts_with("--channel.local = 10.1.0.1:")
        );
        assert!(parse("local=10.1.0.1:7000,peer=10.1.0.2:0,rate=2400bps").contains("a port above 0"));
        for no_host in ["0.0.0.0:7000", "224.0.0.1:7000", "255.255.255.255:7000"] {
            let refusal = parse(&format!("local=10.1.0.1:7000,peer={no_host},rate=2400bps"));
            assert!(refusal.contains("a host's address (not multicast"), "{refusal}");
        }
        assert!(parse("local=10.1.0.1:7000,peer=10.1.0.2:7000,rate=4bps").contains("at least 8 bit/s"));
        assert!(
            parse("local=10.1.0.1:7000,peer=10.1.0.2:7000,rate=2400bps,device=a/b").contains("interface")
        );
        let channel = |local: &str, peer: &str| {
            format!("[[bundle.channel]]\nlocal = \"{local}\"\npeer = \"{peer}\"\nrate = \"2400bps\"\n")
        };
        assert!(refusal("[bundle]\n").contains("bundle.channel = none: at least one channel"));
        let twice = channel("10.1.0.1:7000", "10.1.0.2:7000") + &channel("10.1.0.3:7000", "10.1.0.2:7000");
        assert!(refusal(&twice).contains("bundle.channel.peer = 10.1.0.2:7000: each channel its own peer"));
        let twice = channel("10.1.0.1:7000", "10.1.0.2:7000") + &channel("10.1.0.1:7000", "10.1.0.4:7000");
        assert!(refusal(&twice).contains("bundle.channel.local = 10.1.0.1:7000: each channel its own local"));
        // The kernel picks a free port for each port 0: not the same twice.
        let any = channel("10.1.0.1:0", "10.1.0.2:7000") + &channel("10.1.0.1:0", "10.1.0.4:7000");
        assert!(resolve_file(&any, &[]).is_ok());
        let bad = channel("10.1.0.1:7000", "not-an-address");
        assert!(refusal(&bad).contains("bundle.channel[0].peer = not-an-address"));
        let settings = format!(
            "[link]\nbond_channel_queue = \"0s\"\n{}",
            channel("10.1.0.1:7000", "10.1.0.2:7000")
        );
        assert!(refusal(&settings).contains("link.bond_channel_queue"));
        // The framing the bond accounts for is the link's own key.
        let settings = format!(
            "[link]\nframing = 2000\n{}",
            channel("10.1.0.1:7000", "10.1.0.2:7000")
        );
        assert!(refusal(&settings).contains("link.framing = 2000: at most 1000 bytes"));
    }
}
