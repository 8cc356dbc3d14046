//! `scps emulate --config FILE`, and `scps emulate ctl ...` to talk to a
//! running emulator.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Subcommand, ValueEnum};
use scps_emulator::command::keys_from_pairs;
use scps_emulator::run::{StopSignals, banner};
use scps_emulator::{Change, Directions, Emulator, EmulatorConfig, Query, Request};

#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "The configuration is `seed`, an `[emulate]` table (side_a, side_b, control, metrics, \
    replay, record, table) and the scenarios' `[link]` table: docs/configuration.md.\n\
    Run it inside the network namespace that joins the two sides (as root, or root in a user namespace)."
)]
pub struct EmulateArgs {
    /// The emulator's configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<EmulateCommand>,
}

#[derive(Debug, Subcommand)]
enum EmulateCommand {
    /// Change or query a running emulator through its control socket.
    Ctl(CtlArgs),
}

#[derive(Debug, Args)]
struct CtlArgs {
    /// The running emulator's control socket (`emulate.control`).
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    #[command(subcommand)]
    request: CtlRequest,
}

#[derive(Debug, Subcommand)]
enum CtlRequest {
    /// Set link keys (as in `[link]`: rate, delay, ber, jitter, buffer,
    /// shaper.rate, ...) on the running link.
    Set {
        /// One channel (0-based); all if absent.
        #[arg(long)]
        channel: Option<usize>,
        /// Which direction: forward (side a to b), return, or both.
        #[arg(long, default_value = "both", value_parser =
            PossibleValuesParser::new(Directions::NAMES).try_map(|name| name.parse::<Directions>()))]
        direction: Directions,
        /// KEY=VALUE, e.g. `rate=2Mbit delay=300ms ber=1e-6`.
        #[arg(required = true, value_name = "KEY=VALUE")]
        keys: Vec<String>,
    },
    /// Force an outage (drop the call) on a channel, or end it.
    Outage {
        #[arg(value_enum)]
        action: OutageAction,
        /// One channel (0-based); all if absent.
        #[arg(long)]
        channel: Option<usize>,
    },
    /// Counters per channel and direction; with `link.bond = "scheduler"`,
    /// each side's bond too.
    Stats {
        /// As JSON rather than a table.
        #[arg(long)]
        json: bool,
    },
    /// The counters in the Prometheus text format.
    Metrics,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum OutageAction {
    Start,
    End,
}

pub fn main(args: EmulateArgs) -> anyhow::Result<()> {
    match (args.command, args.config) {
        (Some(EmulateCommand::Ctl(ctl)), _) => control(ctl),
        (None, Some(config)) => run(&config),
        (None, None) => bail!("--config FILE is required"),
    }
}

/// Runs the emulator until SIGINT (Ctrl-C) or SIGTERM, then tears down.
fn run(path: &std::path::Path) -> anyhow::Result<()> {
    let config = EmulatorConfig::load(path)?;
    // Before any thread starts (see `block`).
    let signals = StopSignals::block()?;
    let emulator =
        Emulator::start(&config).with_context(|| format!("start the emulator of {}", path.display()))?;
    eprintln!("scps emulate: {}", banner(&config, emulator.metrics_address()));
    let signalled = signals.wait(&emulator)?;
    let stats = emulator.stats();
    emulator.stop().context("the packet loop failed")?;
    if signalled {
        eprintln!("scps emulate: {}", signals.stopped_by());
    }
    match writeln!(std::io::stdout().lock(), "{}", serde_json::to_string(&stats)?) {
        // The reader of the final figures has gone: nothing to tell it.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written.context("cannot write the emulator's figures"),
    }
}

fn control(ctl: CtlArgs) -> anyhow::Result<()> {
    let json = matches!(ctl.request, CtlRequest::Stats { json: true });
    let request = match ctl.request {
        CtlRequest::Set {
            channel,
            direction,
            keys,
        } => Request::Change(Change::Set {
            channel,
            direction,
            keys: keys_from_pairs(&keys)?,
        }),
        CtlRequest::Outage {
            action: OutageAction::Start,
            channel,
        } => Request::Change(Change::OutageStart { channel }),
        CtlRequest::Outage {
            action: OutageAction::End,
            channel,
        } => Request::Change(Change::OutageEnd { channel }),
        CtlRequest::Stats { .. } => Request::Query(Query::Stats),
        CtlRequest::Metrics => Request::Query(Query::Metrics),
    };
    let response = scps_emulator::request(&ctl.socket, &request)?;
    if let Some(error) = response.error {
        bail!("the emulator refused: {error}");
    }
    match response.write_to(json, &mut std::io::stdout().lock()) {
        // `scps emulate ctl stats | head`: the reader has what it wanted.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => result.context("cannot write the emulator's answer"),
    }
}
