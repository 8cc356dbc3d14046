//! `scps saratoga`: Saratoga file delivery over real UDP (docs/saratoga.md),
//! a server of one directory, and put, get, ls and rm against one. The
//! options, and what is printed; `scps-saratoga-net` does the rest.

use std::path::PathBuf;
use std::time::Duration;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand};
use scps_config::units::{Bytes, Rate, parse_duration, parse_positive_duration};
use scps_saratoga::engine::Config;
use scps_saratoga::wire::ChecksumKind;
use scps_saratoga_net::client::{Client, Request};
use scps_saratoga_net::peer::{PeerSpec, parse_peer};
use scps_saratoga_net::progress::Progress;
use scps_saratoga_net::serve::{self, Server};
use scps_saratoga_net::{Ended, Settings, Told};

use crate::transfer::{Outcome, interrupts};

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
    #[arg(long, value_name = "KIND", default_value = "md5", value_parser =
        PossibleValuesParser::new(ChecksumKind::NAMES).try_map(|name| name.parse::<ChecksumKind>()))]
    checksum: ChecksumKind,
    /// A transfer whose peer is silent (or makes no progress) this long
    /// fails; it must exceed the round trip and the longest outage to
    /// ride out, and the 1 s between status requests.
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "30s")]
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
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "24h")]
    keep_partials: Duration,
    /// Partial files kept take at most this much disk; the oldest go first.
    #[arg(long, value_name = "SIZE", default_value = "4GB")]
    partials_budget: Bytes,
    #[command(flatten)]
    engine: EngineArgs,
}

/// The socket and the engine of a client (put, get, ls, rm).
#[derive(Debug, Args)]
struct ClientArgs {
    /// Send from, and be answered on, this UDP port. By default 7542 when
    /// it is free, since some peers answer only to port 7542 whatever
    /// port a request came from; else (a server on this host holds it)
    /// one the system picks, saying so. 0: always one the system picks.
    #[arg(long, value_name = "PORT")]
    local_port: Option<u16>,
    #[command(flatten)]
    engine: EngineArgs,
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
}

#[derive(Debug, Args)]
struct LsArgs {
    /// HOST[:PORT][:DIR]; an IPv6 address in brackets.
    #[arg(value_parser = parse_peer, value_name = "PEER[:DIR]")]
    peer: PeerSpec,
    #[command(flatten)]
    client: ClientArgs,
}

#[derive(Debug, Args)]
struct RmArgs {
    /// HOST[:PORT]:PATH, the file to delete; an IPv6 address in brackets.
    #[arg(value_parser = parse_peer, value_name = "PEER:PATH")]
    peer: PeerSpec,
    #[command(flatten)]
    client: ClientArgs,
}

impl EngineArgs {
    fn settings(&self) -> Settings {
        Settings {
            rate_bps: self.rate.bps(),
            checksum: self.checksum,
            timeout: self.timeout,
            pcap: self.pcap.clone(),
        }
    }
}

pub fn main(args: SaratogaArgs) -> anyhow::Result<Outcome> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| anyhow::anyhow!("cannot start the runtime: {e}"))?;
    runtime.block_on(run(args.command))
}

async fn run(command: SaratogaCommand) -> anyhow::Result<Outcome> {
    let mut stop = interrupts()?;
    let (request, peer, args) = match command {
        SaratogaCommand::Serve(args) => return serve(&args, &mut stop).await,
        SaratogaCommand::Put(a) => (
            Request::Put {
                file: a.file,
                blind: a.blind,
            },
            a.peer,
            a.client,
        ),
        SaratogaCommand::Get(a) => (
            Request::Get {
                file: a.file,
                force: a.force,
            },
            a.peer,
            a.client,
        ),
        SaratogaCommand::Ls(a) => (Request::List, a.peer, a.client),
        SaratogaCommand::Rm(a) => (Request::Delete, a.peer, a.client),
    };
    let client = Client {
        peer,
        local_port: args.local_port,
        settings: args.engine.settings(),
    };
    let watch = &mut Progress::on_stderr(request.command());
    let (report, ended) = client.run(&request, &mut stop, watch).await?;
    report.told(ended, args.engine.json).into_iter().for_each(tell);
    Ok(match ended {
        Ended::Complete => Outcome::Complete,
        Ended::Failed => Outcome::Failed,
        Ended::Interrupted => Outcome::Interrupted,
    })
}

/// A line on standard output, or a note on standard error.
fn tell(told: Told) {
    match told {
        Told::Output(line) => println!("{line}"),
        Told::Note(line) => eprintln!("{line}"),
    }
}

async fn serve(args: &ServeArgs, stop: &mut tokio::signal::unix::Signal) -> anyhow::Result<Outcome> {
    let server = Server {
        dir: args.dir.clone(),
        listen: args.listen.clone(),
        max_receives: args.max_receives,
        max_receives_per_peer: args.max_receives_per_peer,
        keep_partials: args.keep_partials,
        partials_budget: args.partials_budget.0,
        settings: args.engine.settings(),
    };
    let stats = server.run(stop, |news| tell(news.told(args.engine.json))).await?;
    eprintln!("{}", serve::stopped(&stats));
    // Ctrl-C is how a server is meant to stop.
    Ok(Outcome::Complete)
}
