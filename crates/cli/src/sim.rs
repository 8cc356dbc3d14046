//! `scps sim SCENARIO [--set KEY=VALUE]... [--runs N] [--seed S] [--json]`

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::{Context, bail};
use clap::Args;
use scps_config::sweep::parse_assignment;
use scps_config::{Point, Scenario};
use scps_sim::{RunFailure, RunOptions, RunRecord, RunResult};

use crate::table;

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

/// One run to do: which point, which seed, where to capture.
struct Job<'a> {
    point: &'a Point,
    seed: u64,
    capture: Option<PathBuf>,
    capture_at: Option<&'a str>,
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
    let total = scenario.points.len() * runs as usize;
    let jobs: Vec<Job> = scenario
        .points
        .iter()
        .flat_map(|point| (0..runs).map(move |run| (point, run)))
        .enumerate()
        .map(|(index, (point, run))| Job {
            point,
            seed: first_seed.wrapping_add(u64::from(run)),
            capture: args.pcap.as_ref().map(|path| capture_path(path, index, total)),
            capture_at: args.pcap_at.as_deref(),
        })
        .collect();
    // An interface that some point's topology does not have, or an
    // unwritable capture file, stops the command before any run starts.
    if let Some(at) = &args.pcap_at {
        for point in &scenario.points {
            point.topology.find("--pcap-at", at)?;
        }
    }
    for path in jobs.iter().filter_map(|job| job.capture.as_ref()) {
        std::fs::File::create(path).with_context(|| format!("cannot write capture {}", path.display()))?;
    }
    let workers = args.sweep.workers().clamp(1, jobs.len().max(1));
    let results: Vec<RunResult> = run_all(&jobs, workers, args.json)?
        .into_iter()
        .map(|record| record.totals)
        .collect();
    if !args.json {
        table::print(&scenario, &results, runs)?;
    }
    let failed = results.iter().filter(|r| r.error.is_some()).count();
    Ok(Completion::of(failed, results.len()))
}

/// Runs one job; a panic (a bug) becomes an error naming the run so that
/// it can be replayed.
fn run_one(job: &Job) -> anyhow::Result<RunRecord> {
    let options = RunOptions {
        capture: job.capture.clone(),
        capture_at: job.capture_at.map(str::to_owned),
        ..RunOptions::default()
    };
    let describe = || format!("run with seed {} at {}", job.seed, job.point.describe());
    match scps_sim::run_record_guarded(job.point, job.seed, &options) {
        Ok(record) => Ok(record),
        Err(RunFailure::Setup(error)) => Err(error).with_context(describe),
        Err(RunFailure::Panic(message)) => Err(anyhow::anyhow!(
            "{} panicked: {message} (a bug: please report it with this command)",
            describe()
        )),
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

/// `path` for a single run, else `path` with `-N` before the extension.
fn capture_path(path: &std::path::Path, index: usize, total: usize) -> PathBuf {
    if total == 1 {
        return path.to_owned();
    }
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{index}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{index}"),
    };
    path.with_file_name(name)
}

/// Runs every job on `workers` threads; with `json`, prints each result in
/// job order as soon as those before it are done.
fn run_all(jobs: &[Job], workers: usize, json: bool) -> anyhow::Result<Vec<RunRecord>> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<anyhow::Result<RunRecord>>>> =
        jobs.iter().map(|_| Mutex::new(None)).collect();
    let printed = Mutex::new(0usize);
    // The first error writing the results (a closed pipe), which stops
    // every worker and is what the command reports.
    let output_error: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let print_ready = || -> anyhow::Result<()> {
        let mut printed = printed
            .lock()
            .map_err(|_| anyhow::anyhow!("a simulation thread panicked"))?;
        let mut out = std::io::stdout().lock();
        while *printed < slots.len() {
            let slot = slots[*printed]
                .lock()
                .map_err(|_| anyhow::anyhow!("a simulation thread panicked"))?;
            match slot.as_ref() {
                Some(Ok(result)) => {
                    if json {
                        writeln!(out, "{}", serde_json::to_string(result)?)?;
                    }
                }
                Some(Err(_)) | None => break,
            }
            *printed += 1;
        }
        Ok(())
    };
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(job) = jobs.get(index) else { return };
                    let outcome = run_one(job);
                    let failed = outcome.is_err();
                    if let Ok(mut slot) = slots[index].lock() {
                        *slot = Some(outcome);
                    }
                    if failed {
                        return;
                    }
                    if let Err(error) = print_ready() {
                        if let Ok(mut first) = output_error.lock() {
                            first.get_or_insert(error);
                        }
                        return;
                    }
                }
            });
        }
    });
    if let Some(error) = output_error
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a simulation thread panicked"))?
    {
        return Err(error);
    }
    let mut results = Vec::with_capacity(jobs.len());
    for slot in slots {
        match slot
            .into_inner()
            .map_err(|_| anyhow::anyhow!("a simulation thread panicked"))?
        {
            Some(Ok(result)) => results.push(result),
            Some(Err(error)) => return Err(error),
            None => bail!("a run did not complete (an earlier run failed to start)"),
        }
    }
    Ok(results)
}
