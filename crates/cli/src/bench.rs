//! `scps bench [SCENARIO...] [--set KEY=VALUE]... [--runs N] [--world W]
//! [--json] [--markdown] [--out DIR] [--shard K/N]`, and `scps bench
//! merge DIR... --out DIR`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use scps_bench::plan::{DEFAULT_MAX_RUNS, max_runs_of};
use scps_bench::progress::Progress;
use scps_bench::{BenchOutcome, BenchRequest, Event, Invocation, Observer, ObserverError, Request, World};
use scps_testbed::user_namespace;

use crate::sim::{Completion, SweepArgs};

#[derive(Debug, Args)]
#[command(
    after_help = "Stacks (--set protocol=...): linux-cubic, linux-bbr, linux-reno (Linux's TCP; the \
    simulator runs its model of CUBIC and of Reno), tcp-vj, tcp-cubic, scps-vj, scps-vegas, scps-rate (our stack \
    end to end), gw-scps-vj, gw-scps-vegas, gw-scps-rate (hosts on TCP, two gateways on our stack), \
    saratoga (Saratoga file delivery, bulk workloads, simulator only).\n\
    `scps bench merge DIR... --out DIR` joins the results of shards into one report.\n\
    Scenario keys: docs/configuration.md; figures and the commands behind them: docs/BENCHMARKS.md."
)]
pub struct BenchArgs {
    /// Built-in scenarios (lowrate-leo-geo, geo-8mbit, t1-geo, iridium-3ch,
    /// complex-35ws) or scenario files; `merge DIR...` instead joins the
    /// results of several benches' directories.
    #[arg(value_name = "SCENARIO")]
    scenarios: Vec<String>,
    /// `--set` pins a key of every scenario; `protocol` takes stacks
    /// (below).
    #[command(flatten)]
    sweep: SweepArgs,
    /// Where the runs happen: the simulator (virtual time), the testbed
    /// (network namespaces and the live emulator, real time; as root or in
    /// a user namespace of its own), or both. Default: sim, or testbed for
    /// the quick default.
    #[arg(long, value_enum)]
    world: Option<WorldChoice>,
    /// Print each run's record as one JSON object per line (the fields of
    /// `scps sim --json`, with `id`, `world` and `stack`) instead of tables.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print the tables as Markdown (for docs/BENCHMARKS.md).
    #[arg(long)]
    markdown: bool,
    /// The directory of the results and the report (default:
    /// bench-results/TIMESTAMP). A directory that holds results already is
    /// resumed: its finished runs of the same configuration (the same
    /// scenario text and `--set`s) are not run again.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only slice K of N disjoint slices of the sweep (an array job's
    /// task); `scps bench merge` joins the slices' directories.
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// Refuse a sweep of more runs than this (at least 1).
    #[arg(long, default_value_t = DEFAULT_MAX_RUNS, value_parser = max_runs_of)]
    max_runs: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum WorldChoice {
    Sim,
    Testbed,
    Both,
}

impl WorldChoice {
    fn worlds(self) -> Vec<World> {
        match self {
            WorldChoice::Sim => vec![World::Sim],
            WorldChoice::Testbed => vec![World::Testbed],
            WorldChoice::Both => vec![World::Sim, World::Testbed],
        }
    }
}

pub fn main(args: BenchArgs) -> anyhow::Result<Completion> {
    if args.scenarios.first().map(String::as_str) == Some("merge") {
        return merge(&args);
    }
    let request = BenchRequest {
        request: Request::asked(
            &args.scenarios,
            args.sweep.assignments()?,
            args.sweep.runs,
            args.sweep.seed,
            args.world.map(WorldChoice::worlds),
            args.shard.as_deref(),
            args.max_runs,
        )?,
        out: args.out.clone().unwrap_or_else(BenchRequest::default_out),
        workers: args.sweep.workers(),
        invocation: invocation(),
    };
    let mut stdout = std::io::stdout().lock();
    let mut terminal = Terminal {
        json: args.json,
        stdout: &mut stdout,
        progress: None,
        printing: Ok(()),
    };
    let outcome = scps_bench::execute(&request, &mut terminal)?;
    print(&outcome, &args, &mut stdout)
}

/// What the user sees of a bench as it runs: a progress line, with
/// `--json` each record as it is written, and what a rerun resumes.
struct Terminal<'a, W: Write> {
    json: bool,
    stdout: &'a mut W,
    progress: Option<Progress>,
    /// The first failure to print a record: the runs go on, and the bench
    /// stops with it once they are done.
    printing: std::io::Result<()>,
}

impl<W: Write> Observer for Terminal<'_, W> {
    fn event(&mut self, event: Event<'_>) -> Result<(), ObserverError> {
        let note = event.note();
        match event {
            Event::Planned(plan) => {
                scps_bench::prerequisites::ensure(&plan.jobs, |what| eprintln!("scps bench: {what}"))?;
                if plan.jobs.iter().any(|j| j.world == World::Testbed) {
                    user_namespace::enter_unless_root()?;
                }
            }
            // Runs done before, resumed: their records first.
            Event::Resumed(record) if self.json => self.stdout.write_all(record.json_line().as_bytes())?,
            Event::Resumed(_) | Event::Replaced { .. } => {}
            Event::Starting { runs } => self.progress = Some(Progress::new(runs)),
            Event::Recorded(record) => {
                if let Some(progress) = &mut self.progress {
                    progress.tick();
                }
                if self.json && self.printing.is_ok() {
                    self.printing = self.stdout.write_all(record.json_line().as_bytes());
                }
            }
            Event::RunsDone { .. } => {
                if let Some(progress) = &self.progress {
                    progress.finish();
                }
                std::mem::replace(&mut self.printing, Ok(()))?;
            }
        }
        if let Some(note) = note {
            eprintln!("scps bench: {note}");
        }
        Ok(())
    }

    fn testbed_starting(&mut self) -> Result<PathBuf, ObserverError> {
        stop_cleanly_when_interrupted()?;
        Ok(std::env::current_exe().context("cannot find the scps binary to run in the testbed")?)
    }
}

/// On Ctrl-C (or SIGTERM), ends the bench at once with status 130, its
/// runs' control sockets removed; the programs it started die with it
/// (their parent-death signal) and the records written so far stay, for a
/// rerun to resume. The handler is set whatever the disposition this
/// process inherited: a bench started from a shell that ignores SIGINT (a
/// background job, `nohup`) still stops on it.
fn stop_cleanly_when_interrupted() -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .context("cannot start the signal watcher")?;
    let (mut interrupt, mut terminate) = runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        Ok::<_, std::io::Error>((signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?))
    })?;
    std::thread::spawn(move || {
        runtime.block_on(async {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        });
        scps_bench::testbed::remove_sockets();
        eprintln!("scps bench: interrupted; the runs recorded so far are kept, and a rerun resumes");
        std::process::exit(130);
    });
    Ok(())
}

/// The command as typed and this program's version, for the report.
fn invocation() -> Invocation {
    Invocation::of_this_process(env!("CARGO_PKG_VERSION"))
}

/// Prints the tables (unless `--json`), where the report is, and last,
/// where a reader's eye lands, the headlines (on a terminal: Markdown
/// goes into documents table by table); how the runs went.
fn print(outcome: &BenchOutcome, args: &BenchArgs, stdout: &mut impl Write) -> anyhow::Result<Completion> {
    if !args.json {
        write!(stdout, "{}", outcome.tables(args.markdown))?;
    }
    eprintln!("scps bench: report in {}", outcome.report.display());
    for headline in outcome.headlines().filter(|_| !args.json && !args.markdown) {
        writeln!(stdout, "\n{headline}")?;
    }
    Ok(Completion::of(outcome.failed, outcome.runs))
}

/// `scps bench merge DIR... --out DIR`: every record of the directories
/// (a later directory's record of a run wins) and their captures, in one
/// report.
fn merge(args: &BenchArgs) -> anyhow::Result<Completion> {
    let dirs: Vec<PathBuf> = args.scenarios[1..].iter().map(PathBuf::from).collect();
    let outcome = scps_bench::merge_dirs(&dirs, args.out.as_deref(), &invocation())?;
    print(&outcome, args, &mut std::io::stdout().lock())
}
