//! Options shared by `scps send` and `scps recv`.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use clap::Args;
use scps_config::bundle::BundleChannel;
use scps_config::units::parse_positive_duration;
use scps_node::address_text::parse_address_prefix;
use scps_transfer::{DEFAULT_BACKLOG, EngineOptions, PathChoice, StackOptions, tool_keepalive};

#[derive(Debug, Args)]
pub struct CommonArgs {
    /// Our stack on this TUN device (created, and removed on exit), routed
    /// by the kernel; needs --addr. Needs CAP_NET_ADMIN.
    #[arg(long, value_name = "NAME", group = "path")]
    pub tun: Option<String>,
    /// With --tun: an address of our stack and the prefix routed to the
    /// device, e.g. 10.9.0.2/24 or fd09::2/64 (repeatable).
    #[arg(long = "addr", value_name = "ADDRESS/PREFIX", value_parser = parse_address_prefix, requires = "tun")]
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
    #[arg(long = "channel", value_name = "SPEC", value_parser = BundleChannel::from_str, group = "path")]
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
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub keepalive: Option<Duration>,
    /// One JSON object (the field names of `scps sim --json`) instead of
    /// text.
    #[arg(long)]
    pub json: bool,
}

impl CommonArgs {
    pub fn stack_options(&self, connect_timeout: Duration) -> StackOptions {
        StackOptions {
            pcap: self.pcap.clone(),
            engine: EngineOptions {
                config: self.config.clone(),
                stack: self.stack.clone(),
                sets: self.sets.clone(),
                channels: self.channels.clone(),
                keepalive: tool_keepalive(self.keepalive),
            },
            connect_timeout,
            backlog: DEFAULT_BACKLOG,
        }
    }

    /// The path chosen, with a sender's `--udp-bind`: `udp` is `--udp`.
    pub fn path(&self, udp: Option<SocketAddr>, udp_bind: Option<SocketAddr>) -> PathChoice {
        PathChoice {
            udp,
            udp_bind,
            tun: self.tun.clone(),
            addrs: self.addrs.clone(),
            tcp: self.tcp.clone(),
            encapsulation: self.encapsulation.map(|kind| match kind {
                Encapsulation::Scps => scps_transfer::Encapsulation::Scps,
                Encapsulation::Ri => scps_transfer::Encapsulation::Ri,
            }),
            bundle: self.bundle || !self.channels.is_empty(),
            bundle_hook: self.bundle_hook.clone(),
        }
    }
}

/// `--encapsulation`: how the UDP path wraps our packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Encapsulation {
    /// Ours: the IP packet and a CRC-32C of it.
    Scps,
    /// The SCPS RI's: an IPv4 packet carrying SCPS-TP as IP protocol 106,
    /// alone in the datagram, UDP port 7168 both ways
    /// (docs/spec/scps-tp-options.md, "The RI's UDP encapsulation").
    Ri,
}
