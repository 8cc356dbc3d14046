//! `scps sim SCENARIO [--set KEY=VALUE]... [--runs N] [--seed S] [--json]`

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use scps_config::Scenario;
use scps_config::sweep::parse_assignment;
use scps_sim::sweep::{self, Captures, SweepError};
use scps_sim::{RunRecord, RunResult};

pub use scps_sim::sweep::Completion;

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
        self.sets.iter().map(|s| Ok(parse_assignment(s)?)).collect()
    }

    /// Simulations to run at once: `--jobs`, else one per CPU.
    pub fn workers(&self) -> usize {
        self.jobs
            .map(usize::from)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    }
}

pub fn main(args: SimArgs) -> anyhow::Result<Completion> {
    if let Some(path) = &args.pcap {
        sweep::check_capture_path(path)?;
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
    if let Some(captures) = captures {
        captures.prepare(&scenario, &plan)?;
    }
    let json = args.json;
    let print = |record: &RunRecord| -> anyhow::Result<()> {
        if json {
            writeln!(std::io::stdout().lock(), "{}", serde_json::to_string(record)?)?;
        }
        Ok(())
    };
    let results: Vec<RunResult> = sweep::run_in_order(&plan, args.sweep.workers(), print)
        .map_err(SweepError::into_reported)?
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
