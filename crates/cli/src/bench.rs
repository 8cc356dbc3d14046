//! `scps bench [SCENARIO...] [--set KEY=VALUE]... [--runs N] [--world W]
//! [--json] [--markdown] [--out DIR] [--shard K/N]`, and `scps bench
//! merge DIR... --out DIR`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use scps_bench::plan::DEFAULT_MAX_RUNS;
use scps_bench::progress::Progress;
use scps_bench::report;
use scps_bench::table;
use scps_bench::{
    BenchOutcome, BenchRequest, Event, Invocation, Observer, ObserverError, Record, Request, World,
};
use scps_config::sweep::parse_assignment;

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
    #[arg(long, default_value_t = DEFAULT_MAX_RUNS, value_parser = at_least_one_run)]
    max_runs: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum WorldChoice {
    Sim,
    Testbed,
    Both,
}

pub fn main(args: BenchArgs) -> anyhow::Result<Completion> {
    if args.scenarios.first().map(String::as_str) == Some("merge") {
        return merge(&args);
    }
    let request = BenchRequest {
        request: request(&args)?,
        out: args.out.clone().unwrap_or_else(default_out),
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
        match event {
            Event::Planned(plan) => {
                scps_bench::prerequisites::ensure(&plan.jobs, |what| eprintln!("scps bench: {what}"))?;
                if plan.jobs.iter().any(|j| j.world == World::Testbed) {
                    enter_a_user_namespace_unless_root()?;
                }
            }
            // Runs done before, resumed: their records first.
            Event::Resumed(record) if self.json => print_record(self.stdout, record)?,
            Event::Resumed(_) => {}
            Event::Starting { runs } => self.progress = Some(Progress::new(runs)),
            Event::Replaced { count, dir } => {
                let (results, are) = if count == 1 {
                    ("result", "is")
                } else {
                    ("results", "are")
                };
                eprintln!(
                    "scps bench: {count} {results} in {} {are} of another configuration (another --set, an edited \
                     scenario): run again",
                    dir.display()
                );
            }
            Event::Recorded(record) => {
                if let Some(progress) = &mut self.progress {
                    progress.tick();
                }
                if self.json && self.printing.is_ok() {
                    self.printing = print_record(self.stdout, record);
                }
            }
            Event::RunsDone { ran, skipped, dir } => {
                if let Some(progress) = &self.progress {
                    progress.finish();
                }
                std::mem::replace(&mut self.printing, Ok(()))?;
                if skipped > 0 {
                    eprintln!(
                        "scps bench: {skipped} runs were in {} already, {ran} ran now",
                        dir.display()
                    );
                }
            }
        }
        Ok(())
    }

    fn testbed_starting(&mut self) -> Result<PathBuf, ObserverError> {
        stop_cleanly_when_interrupted()?;
        Ok(std::env::current_exe().context("cannot find the scps binary to run in the testbed")?)
    }
}

/// The command as typed and this program's version, for the report.
fn invocation() -> Invocation {
    Invocation {
        command: std::env::args().collect::<Vec<_>>().join(" "),
        version: env!("CARGO_PKG_VERSION").to_owned(),
    }
}

/// The scenarios, settings and worlds the arguments ask for; without a
/// scenario, the quick default: geo-8mbit at 600 ms, BER 0 and 1e-5, 10 MB
/// over Linux's CUBIC and BBR directly and through the gateways' `rate`
/// and `vegas` stacks, in the testbed.
fn request(args: &BenchArgs) -> anyhow::Result<Request> {
    let quick = args.scenarios.is_empty();
    let worlds = match args.world.unwrap_or(if quick {
        WorldChoice::Testbed
    } else {
        WorldChoice::Sim
    }) {
        WorldChoice::Sim => vec![World::Sim],
        WorldChoice::Testbed => vec![World::Testbed],
        WorldChoice::Both => vec![World::Sim, World::Testbed],
    };
    let (scenarios, mut sets) = if quick {
        let sets = QUICK_SETS
            .iter()
            .map(|s| parse_assignment(s))
            .collect::<Result<Vec<_>, _>>()?;
        (vec!["geo-8mbit".to_owned()], sets)
    } else {
        (args.scenarios.clone(), Vec::new())
    };
    sets.extend(args.sweep.assignments()?);
    Ok(Request {
        scenarios,
        sets,
        runs: args.sweep.runs,
        seed: args.sweep.seed,
        worlds,
        shard: args.shard.as_deref().map(str::parse).transpose()?,
        max_runs: args.max_runs,
    })
}

/// The quick default's settings of geo-8mbit (`--set` goes over them).
const QUICK_SETS: [&str; 4] = [
    "link.rtt=600ms",
    "link.ber=[0, 1e-5]",
    "workload.bytes=10MB",
    "protocol=[\"linux-cubic\", \"linux-bbr\", \"gw-scps-rate\", \"gw-scps-vegas\"]",
];

/// Prints the tables (unless `--json`), where the report is, and the
/// headlines; how the runs went.
fn print(outcome: &BenchOutcome, args: &BenchArgs, stdout: &mut impl Write) -> anyhow::Result<Completion> {
    let mut headlines = Vec::new();
    if !args.json {
        for scenario in &outcome.scenarios {
            let (Some(tables), info) = (&scenario.tables, &scenario.scenario) else {
                continue;
            };
            headlines.extend(tables.headline.clone());
            if args.markdown {
                // One scenario's table goes under its own heading in a
                // document; several are told apart.
                if outcome.scenarios.len() > 1 {
                    write!(stdout, "**{}**: {}\n\n", info.name, info.as_run)?;
                }
                write!(stdout, "{}", table::markdown(&tables.runs))?;
            } else {
                write!(
                    stdout,
                    "{}, as run: {}\n(the scenario in full: {})\n{}",
                    info.name,
                    info.as_run,
                    info.description,
                    table::text(&tables.runs)
                )?;
            }
            if tables.worlds.len() > 1 {
                let rendered = if args.markdown {
                    format!(
                        "\nThe two worlds, point by point:\n\n{}",
                        table::markdown(&tables.worlds)
                    )
                } else {
                    format!("the two worlds, point by point:\n{}", table::text(&tables.worlds))
                };
                write!(stdout, "{rendered}")?;
            }
        }
    }
    eprintln!("scps bench: report in {}", outcome.report.display());
    // The run's outcome in a sentence, last, where a reader's eye lands
    // (a terminal's: Markdown goes into documents table by table).
    for headline in headlines.into_iter().filter(|_| !args.markdown) {
        writeln!(stdout, "\n{headline}")?;
    }
    Ok(Completion::of(outcome.failed, outcome.runs))
}

/// `scps bench merge DIR... --out DIR`: every record of the directories
/// (a later directory's record of a run wins) and their captures, in one
/// report.
fn merge(args: &BenchArgs) -> anyhow::Result<Completion> {
    let dirs = &args.scenarios[1..];
    if dirs.is_empty() {
        anyhow::bail!("merge: name the directories of the benches to join, then --out DIR");
    }
    let Some(out) = &args.out else {
        anyhow::bail!("merge: --out DIR, the directory of the joined results and report");
    };
    let dirs: Vec<PathBuf> = dirs.iter().map(PathBuf::from).collect();
    let outcome = scps_bench::merge_dirs(&dirs, out, &invocation())?;
    print(&outcome, args, &mut std::io::stdout().lock())
}

/// On Ctrl-C (or SIGTERM), ends the bench at once with status 130, its
/// runs' control sockets removed; the programs it started die with it
/// (their parent-death signal) and the records written so far stay, for a
/// rerun to resume. The handler is set whatever the disposition this
/// process inherited: a bench started from a shell that ignores SIGINT
/// (a background job, `nohup`) still stops on it.
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

/// The environment variable a bench re-executed in a user namespace of
/// its own carries, so that it does not try again.
const IN_USER_NAMESPACE: &str = "SCPS_BENCH_IN_USER_NAMESPACE";

/// Without root, runs this command again as root of a user namespace of
/// its own (`unshare --user --map-root-user`), where the testbed may make
/// its namespaces; returns only as root (or with the reason it cannot).
fn enter_a_user_namespace_unless_root() -> anyhow::Result<()> {
    if nix::unistd::geteuid().is_root() {
        return Ok(());
    }
    if std::env::var_os(IN_USER_NAMESPACE).is_some() {
        anyhow::bail!(
            "the testbed needs root or a user namespace, and this user namespace is not root in itself"
        );
    }
    use std::os::unix::process::CommandExt;
    let me = std::env::current_exe().context("cannot find the scps binary")?;
    let error = std::process::Command::new("unshare")
        .args(["--user", "--map-root-user", "--net", "--"])
        .arg(me)
        .args(std::env::args_os().skip(1))
        .env(IN_USER_NAMESPACE, "1")
        .exec();
    Err(anyhow::anyhow!(
        "the testbed needs root, or a user namespace of its own, and `unshare --user --map-root-user` could not \
         run: {error}"
    ))
}

fn print_record(out: &mut impl Write, record: &Record) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, record)?;
    writeln!(out)
}

/// `--max-runs`: a bound that lets at least one run through.
fn at_least_one_run(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("0 would refuse every sweep: at least 1".into()),
        Ok(runs) => Ok(runs),
        Err(e) => Err(format!("{text:?}: {e}")),
    }
}

/// `bench-results/YYYYMMDDTHHMMSSZ`, from the clock.
fn default_out() -> PathBuf {
    PathBuf::from("bench-results").join(report::utc_now().replace(['-', ':'], ""))
}
