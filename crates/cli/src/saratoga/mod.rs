//! `scps saratoga`: Saratoga file delivery over real UDP (docs/saratoga.md),
//! the sans-IO engine of `scps-saratoga` hosted by [`host::Host`]: a
//! server of one directory, and put, get, ls and rm against one.

mod capture;
mod client;
mod host;
mod local_port;
mod peer;
mod report;
mod serve;
mod store;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand};
use scps_config::units::{Bytes, Rate};
use scps_saratoga::engine::{Config, ConfigError};
use scps_saratoga::wire::ChecksumKind;

use crate::transfer::Outcome;
use crate::transfer::args::parse_time;
use peer::{PeerSpec, parse_peer};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    scps saratoga serve /srv/outbox\n  \
    scps saratoga put report.bin 192.0.2.7:inbox/report.bin --rate 8Mbit\n  \
    scps saratoga get '[2001:db8::7]:7542:logs/today.log'\n  \
    scps saratoga ls 192.0.2.7:logs\n\
    Beacons are not sent (the engine does not send them): give peers by address.\n\
    A client sends from UDP port 7542 when it is free (some peers answer only\n\
    to that port), else from one the system picks, saying so (--local-port).\n\
    docs/saratoga.md has the details.")]
pub struct SaratogaArgs {
    #[command(subcommand)]
    command: SaratogaCommand,
}

#[derive(Debug, Subcommand)]
enum SaratogaCommand {
    /// Serve the files below DIR (GET, PUT, DELETE, listings) until
    /// Ctrl-C, one line per transfer started, completed or failed. No
    /// beacons are sent (not implemented in the engine).
    Serve(ServeArgs),
    /// Send FILE to a Saratoga server, as PATH there (default: FILE's
    /// name): a PUT REQUEST first, unless --blind. It succeeds only on a
    /// STATUS from the server acknowledging the whole file.
    Put(PutArgs),
    /// Fetch PATH from a Saratoga server into FILE (default: PATH's last
    /// component, here); FILE appears only once complete and verified.
    Get(GetArgs),
    /// List a directory of a Saratoga server (default: its top).
    Ls(LsArgs),
    /// Delete PATH on a Saratoga server.
    Rm(RmArgs),
}

/// Options of the engine and the report, for every subcommand.
#[derive(Debug, Args)]
struct EngineArgs {
    /// DATA is paced at this rate, datagrams' IP and UDP headers counted
    /// (`8Mbit`, `2400bps`, `1Gbit`; at most `1000Gbit`): what put and
    /// serve send; a get's data comes at the server's rate.
    #[arg(long, value_name = "RATE", default_value = "100Mbit")]
    rate: Rate,
    /// The checksum sent with each file (put, and files served), which
    /// the receiver verifies before the file appears: md5, crc32
    /// (cheaper), sha1 or none.
    #[arg(long, value_name = "KIND", default_value = "md5")]
    checksum: Checksum,
    /// A transfer whose peer is silent (or makes no progress) this long
    /// fails; it must exceed the round trip and the longest outage to
    /// ride out, and the 1 s between status requests.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_time, default_value = "30s")]
    timeout: Duration,
    /// Write every datagram in and out, as IP/UDP packets, to this pcap
    /// file (link type RAW).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// JSON instead of text (field names of `scps sim --json`).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// The directory served: nothing above it is read, written or listed.
    dir: PathBuf,
    /// Listen on this UDP address (repeatable; `[::]:7542` for IPv6).
    #[arg(long = "listen", value_name = "ADDR:PORT", default_value = "0.0.0.0:7542")]
    listen: Vec<std::net::SocketAddr>,
    /// Files received at once, from all peers; more are refused
    /// ("receiver not interested"), except that a peer that completed a
    /// transfer with this server in the last day takes the place of a
    /// stranger's transfer, the one silent longest.
    #[arg(long, value_name = "N", default_value_t = Config::default().max_receivers)]
    max_receives: usize,
    /// Files received at once from one address.
    #[arg(long, value_name = "N", default_value_t = Config::default().max_receivers_per_peer)]
    max_receives_per_peer: usize,
    /// The partial file of a failed or abandoned transfer is kept this
    /// long for the same file to resume from, then removed.
    #[arg(long, value_name = "DURATION", value_parser = parse_time, default_value = "24h")]
    keep_partials: Duration,
    /// Partial files kept take at most this much disk; the oldest go first.
    #[arg(long, value_name = "SIZE", default_value = "4GB")]
    partials_budget: Bytes,
    #[command(flatten)]
    engine: EngineArgs,
}

/// The socket of a client (put, get, ls, rm).
#[derive(Debug, Args)]
struct ClientArgs {
    /// Send from, and be answered on, this UDP port. By default 7542 when
    /// it is free, since some peers answer only to port 7542 whatever
    /// port a request came from; else (a server on this host holds it)
    /// one the system picks, saying so. 0: always one the system picks.
    #[arg(long, value_name = "PORT")]
    local_port: Option<u16>,
}

#[derive(Debug, Args)]
struct PutArgs {
    /// The file to send.
    file: PathBuf,
    /// HOST[:PORT][:PATH]; an IPv6 address in brackets; port 7542 unless
    /// given; PATH is the name there (default: FILE's name).
    #[arg(value_parser = parse_peer, value_name = "PEER[:PATH]")]
    peer: PeerSpec,
    /// A blind put: no PUT REQUEST first (by default one asks the peer
    /// to take PATH before anything else is sent), the METADATA and DATA
    /// at once. The receiver names the file from the METADATA alone (ours
    /// keeps only its last component). For a peer that does not answer a
    /// PUT REQUEST.
    #[arg(long)]
    blind: bool,
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Debug, Args)]
struct GetArgs {
    /// HOST[:PORT]:PATH, the file to fetch; an IPv6 address in brackets.
    #[arg(value_parser = parse_peer, value_name = "PEER:PATH")]
    peer: PeerSpec,
    /// Where to write it (default: PATH's last component, here; inside
    /// FILE if it is a directory).
    file: Option<PathBuf>,
    /// Replace FILE if it exists.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Debug, Args)]
struct LsArgs {
    /// HOST[:PORT][:DIR]; an IPv6 address in brackets.
    #[arg(value_parser = parse_peer, value_name = "PEER[:DIR]")]
    peer: PeerSpec,
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    engine: EngineArgs,
}

#[derive(Debug, Args)]
struct RmArgs {
    /// HOST[:PORT]:PATH, the file to delete; an IPv6 address in brackets.
    #[arg(value_parser = parse_peer, value_name = "PEER:PATH")]
    peer: PeerSpec,
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    engine: EngineArgs,
}

/// The checksums a METADATA frame may carry (docs/spec/saratoga.md).
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Checksum {
    None,
    Crc32,
    Md5,
    Sha1,
}

impl From<Checksum> for ChecksumKind {
    fn from(checksum: Checksum) -> ChecksumKind {
        match checksum {
            Checksum::None => ChecksumKind::None,
            Checksum::Crc32 => ChecksumKind::Crc32,
            Checksum::Md5 => ChecksumKind::Md5,
            Checksum::Sha1 => ChecksumKind::Sha1,
        }
    }
}

fn parse_positive_time(text: &str) -> Result<Duration, String> {
    match parse_time(text)? {
        zero if zero.is_zero() => Err(format!("{text:?}: expected a duration above 0")),
        time => Ok(time),
    }
}

/// IPv6 and UDP headers (IPv4's are 28 bytes).
const IPV6_UDP_OVERHEAD: u64 = 48;

impl EngineArgs {
    /// The engine's configuration, for peers of `ipv6` or not.
    fn config(&self, ipv6: bool) -> Config {
        let defaults = Config::default();
        let rate_bps = self.rate.bps();
        // The host sleeps on the runtime's timer, whose grain is a
        // millisecond: the bucket holds 2 ms of the rate, or a paced
        // sender could not keep up with its rate.
        let burst_bytes = (rate_bps / 8 / 500).max(defaults.burst_bytes);
        let (datagram_overhead, max_datagram) = match ipv6 {
            false => (defaults.datagram_overhead, defaults.max_datagram),
            true => (IPV6_UDP_OVERHEAD, 1500 - IPV6_UDP_OVERHEAD as usize),
        };
        Config {
            rate_bps,
            burst_bytes,
            datagram_overhead,
            max_datagram,
            inactivity_timeout: self.timeout,
            checksum: self.checksum.into(),
            // A peer remembers finished sessions by id: a process of ours
            // starting at the same id as the last would be taken for it.
            first_session: rand::random(),
            ..defaults
        }
    }
}

/// The engine's refusal of the settings the options made (a `--rate` or
/// `--timeout` out of its range), naming the options.
fn settings_refused(error: ConfigError) -> anyhow::Error {
    anyhow::anyhow!("the transfer's settings (from --rate, --timeout): {error}")
}

pub fn main(args: SaratogaArgs) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the runtime: {e}"))?;
    match args.command {
        SaratogaCommand::Serve(args) => runtime.block_on(serve::run(args)),
        SaratogaCommand::Put(args) => runtime.block_on(client::put(args)),
        SaratogaCommand::Get(args) => runtime.block_on(client::get(args)),
        SaratogaCommand::Ls(args) => runtime.block_on(client::ls(args)),
        SaratogaCommand::Rm(args) => runtime.block_on(client::rm(args)),
    }
}
