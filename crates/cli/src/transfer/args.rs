//! Options shared by `scps send` and `scps recv`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use scps_config::units::parse_duration;

use scps_config::bundle::BundleChannel;
use scps_config::stack::ToolKeepalive;

use scps_transfer::{DEFAULT_BACKLOG, EngineOptions, StackOptions, Transport, keepalive_every};

#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Our stack on this TUN device (created, and removed on exit), routed
    /// by the kernel; needs --addr. Needs CAP_NET_ADMIN.
    #[arg(long, value_name = "NAME", group = "path")]
    pub tun: Option<String>,
    /// With --tun: an address of our stack and the prefix routed to the
    /// device, e.g. 10.9.0.2/24 or fd09::2/64 (repeatable).
    #[arg(long = "addr", value_name = "ADDRESS/PREFIX", value_parser = parse_prefix, requires = "tun")]
    pub addrs: Vec<(IpAddr, u8)>,
    /// The kernel's TCP instead of our stack, to measure it the same way;
    /// `--tcp=CONTROLLER` sets its congestion control (TCP_CONGESTION:
    /// cubic, bbr, reno, or another the kernel lists in
    /// /proc/sys/net/ipv4/tcp_available_congestion_control), else the
    /// system's default.
    #[arg(
        long,
        group = "path",
        value_name = "CONTROLLER",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = ""
    )]
    pub tcp: Option<String>,
    /// With --udp: how packets are wrapped: `scps` (ours: the IP packet and
    /// a CRC-32C of it) or `ri` (the SCPS RI's: an IPv4 packet carrying
    /// SCPS-TP as IP protocol 106, alone in the datagram; a sender binds
    /// UDP port 7168 unless --udp-bind says otherwise).
    #[arg(long, value_name = "KIND")]
    pub encapsulation: Option<Encapsulation>,
    /// Our stack on a bundle of UDP channels striped by the bonding
    /// scheduler: one channel per --channel,
    /// `local=ADDR:PORT,peer=ADDR:PORT,rate=RATE[,device=NAME]` (its
    /// nominal rate; `device` sends it by that interface). The scheduler's
    /// settings are the `link.bond_*` keys (--set or --config).
    #[arg(long = "channel", value_name = "SPEC", value_parser = parse_channel, group = "path")]
    pub channels: Vec<BundleChannel>,
    /// Our stack on the bundle of --config's [bundle] section.
    #[arg(long, group = "path", requires = "config")]
    pub bundle: bool,
    /// With a bundle: run this command (`sh -c`) on every channel state
    /// change, with SCPS_BUNDLE_CHANNEL, _LOCAL, _PEER, _FROM, _TO and _WHY
    /// in its environment (a modem manager redials a marginal circuit);
    /// over --config's `bundle.hook`.
    #[arg(long, value_name = "COMMAND")]
    pub bundle_hook: Option<String>,
    /// Write every packet of our stack to this pcap file (link type RAW).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<PathBuf>,
    /// A scenario file whose `[tcp]`, `[stacks.LABEL]` and `[link]` (the
    /// route rate SCPS stacks pace at) configure our stack as `scps sim`
    /// configures its hosts; what describes only a simulation (workload,
    /// runs) is ignored. docs/configuration.md has the keys.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Our stack's protocol label: tcp-vj (plain TCP), tcp-cubic, scps-vj
    /// (the default: SCPS-TP offered, NewReno), scps-vegas or scps-rate
    /// (no congestion control: sends at the route rate).
    #[arg(long, value_name = "LABEL")]
    pub stack: Option<String>,
    /// A key of the scenarios' schema for our stack, as `scps sim --set`
    /// takes it: tcp.KEY (e.g. tcp.rate=8Mbit, tcp.recv_buffer=4MiB,
    /// tcp.header_compression=true, tcp.loss_source=corruption),
    /// stacks.LABEL.KEY, link.KEY (link.mtu; a link with a rate is a route
    /// SCPS stacks pace at) or protocol. Repeatable. Unless a key gives
    /// tcp.recv_buffer or tcp.recv_buffer_auto, our stack's receive buffer
    /// starts at 256KiB and grows with what is read per round trip, up to
    /// tcp.recv_buffer_max (16MiB); tcp.recv_buffer_auto=false keeps it
    /// fixed.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Probe an idle connection after this long without a segment from the
    /// peer, every this long again, and give up after 3 unanswered probes
    /// (RFC 1122 4.2.3.6 keepalive, on either stack): a peer that vanished
    /// mid-transfer ends the test with an error instead of a wait forever.
    /// Default 15s; for our stack, `tcp.keepalive` may say it instead.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_time)]
    pub keepalive: Option<Duration>,
    /// One JSON object (the field names of `scps sim --json`) instead of
    /// text.
    #[arg(long)]
    pub json: bool,
}

/// The tools' keepalive unless `--keepalive` or `tcp.keepalive` says.
const DEFAULT_KEEPALIVE: Duration = Duration::from_secs(15);

impl CommonArgs {
    pub fn stack_options(&self, connect_timeout: Duration) -> StackOptions {
        StackOptions {
            pcap: self.pcap.clone(),
            engine: EngineOptions {
                config: self.config.clone(),
                stack: self.stack.clone(),
                sets: self.sets.clone(),
                channels: self.channels.clone(),
                keepalive: match self.keepalive {
                    Some(every) => ToolKeepalive::Given(keepalive_every(every)),
                    None => ToolKeepalive::Default(keepalive_every(DEFAULT_KEEPALIVE)),
                },
            },
            connect_timeout,
            backlog: DEFAULT_BACKLOG,
        }
    }

    /// Our stack on a bundle, if --channel or --bundle says so.
    pub fn bundle_transport(&self) -> Option<Transport> {
        (!self.channels.is_empty() || self.bundle).then(|| Transport::Bundle {
            hook: self.bundle_hook.clone(),
        })
    }

    /// Whether the kernel's TCP carries the test.
    pub fn kernel(&self) -> bool {
        self.tcp.is_some()
    }

    /// The kernel's TCP, with the congestion control `--tcp=CONTROLLER`
    /// names (bare `--tcp`: the system's default).
    pub fn kernel_transport(&self) -> Transport {
        Transport::Tcp {
            congestion: self.tcp.clone().filter(|name| !name.is_empty()),
        }
    }

    /// How `--encapsulation` wraps the UDP path's packets.
    pub fn encapsulation(&self) -> scps_transfer::Encapsulation {
        match self.encapsulation.unwrap_or_default() {
            Encapsulation::Scps => scps_transfer::Encapsulation::Scps,
            Encapsulation::Ri => scps_transfer::Encapsulation::Ri,
        }
    }
}

/// `--encapsulation`: how the UDP path wraps our packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Encapsulation {
    /// Ours: the IP packet and a CRC-32C of it.
    #[default]
    Scps,
    /// The SCPS RI's: an IPv4 packet carrying SCPS-TP as IP protocol 106,
    /// alone in the datagram, UDP port 7168 both ways
    /// (docs/spec/scps-tp-options.md, "The RI's UDP encapsulation").
    Ri,
}

pub fn parse_prefix(text: &str) -> Result<(IpAddr, u8), String> {
    let (addr, prefix) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?}: expected ADDRESS/PREFIX, such as 10.9.0.2/24 or fd09::2/64"))?;
    let addr: IpAddr = addr.parse().map_err(|e| format!("{addr:?}: {e}"))?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix: u8 = prefix
        .parse()
        .ok()
        .filter(|p| *p <= max)
        .ok_or_else(|| format!("prefix length {prefix:?}: expected 0 to {max}"))?;
    Ok((addr, prefix))
}

/// A host's address and port to send to: `scps send`'s receiver and
/// `--udp` peer (a group or the broadcast address is no peer of TCP's).
pub fn parse_host_socket(text: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = text.parse().map_err(|e| format!("{text:?}: {e}"))?;
    if !scps_node::is_host_socket(addr) {
        return Err(format!(
            "{addr}: expected a host's address (not multicast, broadcast or unspecified) and a port above 0"
        ));
    }
    Ok(addr)
}

/// A local UDP address to bind: one of this host's, or the unspecified
/// address for any (a group's would wait for datagrams no peer sends).
pub fn parse_bind_socket(text: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = text.parse().map_err(|e| format!("{text:?}: {e}"))?;
    if !(scps_node::is_host_address(addr.ip()) || addr.ip().is_unspecified()) {
        return Err(format!(
            "{addr}: expected an address of this host, or 0.0.0.0 or [::] for any (not a multicast group or the broadcast address)"
        ));
    }
    Ok(addr)
}

fn parse_channel(text: &str) -> Result<BundleChannel, String> {
    text.parse().map_err(|e: scps_config::Error| e.to_string())
}

pub fn parse_time(text: &str) -> Result<Duration, String> {
    parse_duration(text).map_err(|e| e.to_string())
}

fn parse_positive_time(text: &str) -> Result<Duration, String> {
    match parse_time(text)? {
        zero if zero.is_zero() => Err(format!("{text:?}: expected a duration above 0")),
        time => Ok(time),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefixes_parse_and_bad_ones_are_named() {
        assert_eq!(parse_prefix("10.9.0.2/24"), Ok(("10.9.0.2".parse().unwrap(), 24)));
        assert_eq!(parse_prefix("fd09::2/64"), Ok(("fd09::2".parse().unwrap(), 64)));
        assert!(parse_prefix("10.9.0.2").unwrap_err().contains("ADDRESS/PREFIX"));
        assert!(parse_prefix("10.9.0.2/33").unwrap_err().contains("0 to 32"));
        assert!(parse_prefix("10.9.0/24").is_err());
    }
}
