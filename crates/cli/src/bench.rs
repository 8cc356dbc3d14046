//! `scps bench [SCENARIO...] [--set KEY=VALUE]... [--runs N] [--world W]
//! [--json] [--markdown] [--out DIR] [--shard K/N]`, and `scps bench
//! merge DIR... --out DIR`.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use scps_bench::figures;
use scps_bench::plan::{DEFAULT_MAX_RUNS, ScenarioInfo};
use scps_bench::progress::Progress;
use scps_bench::report::{self, Provenance};
use scps_bench::{Appender, Plan, Record, Request, Store, World, run, table};
use scps_config::sweep::parse_assignment;

use crate::sim::Completion;

#[derive(Debug, Args)]
#[command(
    after_help = "Stacks (--set protocol=...): linux-cubic, linux-bbr, linux-reno (Linux's TCP; the \
    simulator runs its model of CUBIC and of Reno), tcp-vj, tcp-cubic, scps-vj, scps-vegas, scps-rate (our stack \
    end to end), gw-scps-vj, gw-scps-vegas, gw-scps-rate (hosts on TCP, two gateways on our stack).\n\
    `scps bench merge DIR... --out DIR` joins the results of shards into one report.\n\
    Scenario keys: docs/configuration.md; figures and the commands behind them: docs/BENCHMARKS.md."
)]
pub struct BenchArgs {
    /// Built-in scenarios (lowrate-leo-geo, geo-8mbit, t1-geo, iridium-3ch,
    /// complex-35ws) or scenario files; `merge DIR...` instead joins the
    /// results of several benches' directories.
    #[arg(value_name = "SCENARIO")]
    scenarios: Vec<String>,
    /// Pin a key of every scenario (dotted path), as `scps sim --set`;
    /// `protocol` takes stacks: `--set 'protocol=["linux-cubic","gw-scps-rate"]'`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Runs per point (default: the scenario's `runs`); run i uses seed S + i.
    #[arg(long)]
    runs: Option<u32>,
    /// First seed (default: the scenario's `seed`).
    #[arg(long)]
    seed: Option<u64>,
    /// Where the runs happen.
    #[arg(long, value_enum, default_value = "sim")]
    world: WorldChoice,
    /// Print each run's record as one JSON object per line (the fields of
    /// `scps sim --json`, with `id`, `world` and `stack`) instead of tables.
    #[arg(long, conflicts_with = "markdown")]
    json: bool,
    /// Print the tables as Markdown (for docs/BENCHMARKS.md).
    #[arg(long)]
    markdown: bool,
    /// The directory of the results and the report (default:
    /// bench-results/TIMESTAMP). A directory that holds results already is
    /// resumed: its finished runs are not run again.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run only slice K of N disjoint slices of the sweep (an array job's
    /// task); `scps bench merge` joins the slices' directories.
    #[arg(long, value_name = "K/N")]
    shard: Option<String>,
    /// Refuse a sweep of more runs than this.
    #[arg(long, default_value_t = DEFAULT_MAX_RUNS)]
    max_runs: usize,
    /// Simulations to run at once (default: the number of CPUs).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
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
    let worlds = match args.world {
        WorldChoice::Sim => vec![World::Sim],
        WorldChoice::Testbed | WorldChoice::Both => anyhow::bail!(
            "--world {}: the testbed world of the bench is not built yet (issue 14); run the simulator's \
             (--world sim), or the testbed's gateway benchmark, scripts/bench-gateway.sh",
            if args.world == WorldChoice::Both {
                "both"
            } else {
                "testbed"
            }
        ),
    };
    if args.scenarios.is_empty() {
        anyhow::bail!(
            "no scenario: the quick default (geo-8mbit in the testbed) comes with the testbed world; name \
             scenarios, such as `scps bench geo-8mbit`"
        );
    }
    let request = Request {
        scenarios: args.scenarios.clone(),
        sets: args
            .sets
            .iter()
            .map(|s| parse_assignment(s))
            .collect::<Result<_, _>>()?,
        runs: args.runs,
        seed: args.seed,
        worlds,
        shard: args.shard.as_deref().map(str::parse).transpose()?,
        max_runs: args.max_runs,
    };
    let plan = Plan::new(&request)?;
    let out = args.out.clone().unwrap_or_else(default_out);
    let store = Store::load(&out)?;
    let mut appender = Appender::open(&out)?;
    let workers = args
        .jobs
        .map(usize::from)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let todo = plan
        .jobs
        .iter()
        .filter(|j| !store.records.contains_key(&j.id))
        .count();
    let mut stdout = std::io::stdout().lock();
    if args.json {
        // Runs done before, resumed: their records first.
        for record in plan.jobs.iter().filter_map(|j| store.records.get(&j.id)) {
            print_record(&mut stdout, record)?;
        }
    }
    let mut progress = Progress::new(todo);
    let mut printing = Ok(());
    let executed = run::execute(
        &plan.jobs,
        &store,
        &mut appender,
        workers,
        |job| run::run_sim(job, &out),
        |record| {
            progress.tick();
            if args.json && printing.is_ok() {
                printing = print_record(&mut stdout, record);
            }
        },
    )?;
    progress.finish();
    printing?;
    if executed.skipped > 0 {
        eprintln!(
            "scps bench: {} runs were in {} already, {} ran now",
            executed.skipped,
            out.display(),
            executed.ran
        );
    }
    let store = Store::load(&out)?;
    let records: Vec<&Record> = plan
        .jobs
        .iter()
        .filter_map(|j| store.records.get(&j.id))
        .collect();
    finish(&out, &plan.scenarios, &records, &args, &mut stdout)
}

/// Writes the report, prints the tables (unless `--json`), and says how
/// it went.
fn finish(
    out: &Path,
    scenarios: &[ScenarioInfo],
    records: &[&Record],
    args: &BenchArgs,
    stdout: &mut impl Write,
) -> anyhow::Result<Completion> {
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    report::write(
        out,
        scenarios,
        records,
        &Provenance::here(command, env!("CARGO_PKG_VERSION")),
    )
    .with_context(|| format!("cannot write the report in {}", out.display()))?;
    if !args.json {
        for scenario in scenarios {
            let rows = figures::rows(
                records
                    .iter()
                    .copied()
                    .filter(|r| figures::text(r, "scenario") == Some(scenario.name.as_str())),
            );
            if rows.is_empty() {
                continue;
            }
            let cells = table::cells(&rows);
            if args.markdown {
                // One scenario's table goes under its own heading in a
                // document; several are told apart.
                if scenarios.len() > 1 {
                    write!(stdout, "**{}**: {}\n\n", scenario.name, scenario.description)?;
                }
                write!(stdout, "{}", table::markdown(&cells))?;
            } else {
                write!(
                    stdout,
                    "{}: {}\n{}",
                    scenario.name,
                    scenario.description,
                    table::text(&cells)
                )?;
            }
        }
    }
    eprintln!("scps bench: report in {}", out.join("index.html").display());
    let failed = records.iter().filter(|r| figures::error(r).is_some()).count();
    Ok(match failed {
        0 => Completion::All,
        failed => Completion::SomeFailed {
            failed,
            total: records.len(),
        },
    })
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
    let mut merged = Store::default();
    for dir in dirs {
        let dir = Path::new(dir);
        if !dir.join(scps_bench::store::RESULTS).exists() {
            anyhow::bail!(
                "merge: {} holds no bench results ({})",
                dir.display(),
                scps_bench::store::RESULTS
            );
        }
        let store = Store::load(dir)?;
        // The captures the records name come along.
        for capture in store.records.values().filter_map(|r| figures::text(r, "capture")) {
            let (from, to) = (dir.join(capture), out.join(capture));
            if from != to && from.exists() {
                std::fs::create_dir_all(to.parent().unwrap_or(out))?;
                std::fs::copy(&from, &to).with_context(|| format!("cannot copy {}", from.display()))?;
            }
        }
        merged.records.extend(store.records);
    }
    let mut appender = Appender::open(out)?;
    let existing = Store::load(out)?;
    for (id, record) in &merged.records {
        if existing.records.get(id) != Some(record) {
            appender.append(record)?;
        }
    }
    let store = Store::load(out)?;
    let records: Vec<&Record> = store.records.values().collect();
    let mut scenarios: Vec<ScenarioInfo> = Vec::new();
    for record in &records {
        let name = figures::text(record, "scenario").unwrap_or_default();
        if !scenarios.iter().any(|s| s.name == name) {
            let description = scps_config::Scenario::load(name, &[])
                .map(|s| s.description)
                .unwrap_or_default();
            scenarios.push(ScenarioInfo {
                name: name.to_owned(),
                description,
            });
        }
    }
    finish(out, &scenarios, &records, args, &mut std::io::stdout().lock())
}

fn print_record(out: &mut impl Write, record: &Record) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, record)?;
    writeln!(out)
}

/// `bench-results/YYYYMMDDTHHMMSSZ`, from the clock.
fn default_out() -> PathBuf {
    PathBuf::from("bench-results").join(report::utc_now().replace(['-', ':'], ""))
}
