//! `scps sim SCENARIO [--set KEY=VALUE]... [--runs N] [--seed S] [--json]`

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use scps_config::Scenario;
use scps_config::sweep::parse_assignment;
use scps_sim::sweep::{self, Captures, SweepError};
use scps_sim::{RunFailure, RunRecord, RunResult};

#[derive(Debug, Args)]
#[command(
    after_help = "Scenario keys, with their units, defaults and ranges: docs/configuration.md.\n\
    Figures and the commands behind them: docs/BENCHMARKS.md."
)]
pub struct SimArgs {
    /// A built-in scenario (lowrate-leo-geo, geo-8mbit, t1-geo,
    /// iridium-3ch, complex-35ws) or the path of a scenario file.
    scenario: String,
    #[command(flatten)]
    sweep: SweepArgs,
    /// One JSON object per run and per line, instead of a table.
    #[arg(long)]
    json: bool,
    /// Capture what leaves and arrives at one interface (the client's, or
    /// for a `gw-` label gwA's on the stressed link, unless `--pcap-at`
    /// says) into this pcap file (for several runs, `-N`
    /// is added before the extension).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// The interface `--pcap` captures at, as the scenario's topology
    /// names it (`r1.sat`); default: the first client's.
    #[arg(long, value_name = "NODE.INTERFACE", requires = "pcap")]
    pcap_at: Option<String>,
}

/// What `scps sim` and `scps bench` take of a sweep: its keys, runs,
/// seeds, and how many simulations run at once.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Pin a key of the scenario (dotted path), e.g. `link.delay=120ms`,
    /// `protocol=tcp-vj`; a list (`link.ber=[0,1e-5]`) makes a sweep axis.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Runs per point (default: the scenario's `runs`, else 1); run i
    /// uses seed S + i.
    #[arg(long)]
    pub runs: Option<u32>,
    /// First seed (default: the scenario's `seed`, else 1).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Simulations to run at once (default: the number of CPUs).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    pub jobs: Option<u16>,
}

impl SweepArgs {
    /// `--set`s, parsed, in order.
    pub fn assignments(&self) -> anyhow::Result<scps_bench::plan::Sets> {
        Ok(self
            .sets
            .iter()
            .map(|s| parse_assignment(s))
            .collect::<Result<Vec<_>, _>>()?)
    }

    /// Simulations to run at once: `--jobs`, else one per CPU.
    pub fn workers(&self) -> usize {
        self.jobs
            .map(usize::from)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

/// Whether every run completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    All,
    SomeFailed { failed: usize, total: usize },
}

impl Completion {
    /// Of `total` runs, `failed` did not complete.
    pub fn of(failed: usize, total: usize) -> Completion {
        match failed {
            0 => Completion::All,
            failed => Completion::SomeFailed { failed, total },
        }
    }
}

pub fn main(args: SimArgs) -> anyhow::Result<Completion> {
    if let Some(path) = &args.pcap {
        check_capture_path(path)?;
    }
    let scenario = Scenario::load(&args.scenario, &args.sweep.assignments()?)?;
    let runs = args.sweep.runs.unwrap_or(scenario.runs);
    scenario.check_runs("--runs", runs)?;
    let first_seed = args.sweep.seed.unwrap_or(scenario.seed);
    let captures = args.pcap.as_deref().map(|path| Captures {
        path,
        at: args.pcap_at.as_deref(),
    });
    let plan = sweep::plan(&scenario, runs, first_seed, captures);
    // An interface that some point's topology does not have, or an
    // unwritable capture file, stops the command before any run starts.
    if let Some(at) = &args.pcap_at {
        for point in &scenario.points {
            point.topology.find("--pcap-at", at)?;
        }
    }
    for path in plan.iter().filter_map(|run| run.options.capture.as_ref()) {
        std::fs::File::create(path).with_context(|| format!("cannot write capture {}", path.display()))?;
    }
    let workers = args.sweep.workers().clamp(1, plan.len().max(1));
    let json = args.json;
    let print = |record: &RunRecord| -> anyhow::Result<()> {
        if json {
            writeln!(std::io::stdout().lock(), "{}", serde_json::to_string(record)?)?;
        }
        Ok(())
    };
    let results: Vec<RunResult> = sweep::run_in_order(&plan, workers, print)
        .map_err(explain)?
        .into_iter()
        .map(|record| record.totals)
        .collect();
    if !json {
        write!(
            std::io::stdout().lock(),
            "{}",
            scps_sim::summary(&scenario, &results, runs)
        )?;
    }
    let failed = results.iter().filter(|r| r.error.is_some()).count();
    Ok(Completion::of(failed, results.len()))
}

/// A sweep's failure as the command says it: a run that could not be set
/// up with its causes, a panic as the bug it is.
fn explain(error: SweepError<anyhow::Error>) -> anyhow::Error {
    match error {
        SweepError::Run {
            seed,
            point,
            failure: RunFailure::Setup(error),
        } => anyhow::Error::new(error).context(format!("run with seed {seed} at {point}")),
        SweepError::Run {
            seed,
            point,
            failure: RunFailure::Panic(message),
        } => anyhow::anyhow!(
            "run with seed {seed} at {point} panicked: {message} (a bug: please report it with this command)"
        ),
        SweepError::Deliver(error) => error,
        other @ (SweepError::Thread | SweepError::Incomplete) => anyhow::anyhow!("{other}"),
    }
}

/// `--pcap` names a file: one that exists must be a regular file. A
/// device or FIFO would take a single run's capture somewhere it cannot
/// be read back, and for several runs the numbered names would be made
/// beside it (`/dev/full-0`...).
fn check_capture_path(path: &std::path::Path) -> anyhow::Result<()> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => {
            anyhow::bail!("--pcap {} is a directory: name a file", path.display())
        }
        Ok(metadata) if !metadata.is_file() => anyhow::bail!(
            "--pcap {} is not a regular file (a device, FIFO or socket): name a file",
            path.display()
        ),
        _ => Ok(()),
    }
}
