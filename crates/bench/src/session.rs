//! A bench from request to report in one call: the plan made, the runs
//! its directory lacks run (the simulator's on every core, then the
//! testbed's one at a time), each recorded as it ends, and the report
//! written; or the results of several benches' directories merged into
//! one report. What happens on the way goes to an [`Observer`], which
//! shows it as it likes and readies the process for the testbed.

use std::path::{Path, PathBuf};

use crate::merge::{self, MergeError};
use crate::plan::{Job, Plan, PlanError, Request, ScenarioInfo};
use crate::record::Record;
use crate::report::{self, Provenance};
use crate::run::{self, Executed};
use crate::stack::World;
use crate::store::{Appender, Store, StoreError};
use crate::testbed::TestbedWorld;
use crate::{figures, headline, table};

/// A bench to run.
#[derive(Debug, Clone)]
pub struct BenchRequest {
    pub request: Request,
    /// The directory of the results and the report; one that holds
    /// results already is resumed.
    pub out: PathBuf,
    /// Simulator runs at once.
    pub workers: usize,
    pub invocation: Invocation,
}

impl BenchRequest {
    /// Where a bench's results go unless told:
    /// `bench-results/YYYYMMDDTHHMMSSZ`, from the clock.
    pub fn default_out() -> PathBuf {
        PathBuf::from("bench-results").join(report::utc_now().replace(['-', ':'], ""))
    }
}

/// What made a report, for its provenance.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// The command as typed.
    pub command: String,
    /// The version of the program.
    pub version: String,
}

impl Invocation {
    /// This process's command line, and `version`, the program's.
    pub fn of_this_process(version: &str) -> Invocation {
        Invocation {
            command: std::env::args().collect::<Vec<_>>().join(" "),
            version: version.to_owned(),
        }
    }
}

/// What a bench tells its observer, in the order it happens.
#[derive(Debug)]
pub enum Event<'a> {
    /// The plan is made and nothing is written yet: the observer readies
    /// what its runs need (the testbed's programs, root), or refuses.
    Planned(&'a Plan),
    /// A record of the plan's runs that the directory held already: each
    /// in the plan's order, before any run.
    Resumed(&'a Record),
    /// The runs the directory lacks are about to start.
    Starting { runs: usize },
    /// Records in `dir` of runs about to start but of another
    /// configuration (another `--set`, an edited scenario): the runs run
    /// again.
    Replaced { count: usize, dir: &'a Path },
    /// A run has ended and is recorded.
    Recorded(&'a Record),
    /// Every run is done: how many ran now and how many `dir` held.
    RunsDone {
        ran: usize,
        skipped: usize,
        dir: &'a Path,
    },
}

/// An observer's reason to stop a bench.
pub type ObserverError = Box<dyn std::error::Error + Send + Sync>;

/// Whoever follows a bench.
pub trait Observer {
    /// Something happened; an error stops the bench (after the runs under
    /// way, for [`Event::Recorded`]) and is the bench's.
    fn event(&mut self, event: Event<'_>) -> Result<(), ObserverError>;

    /// The testbed's runs are about to start (the simulator's have
    /// ended): ready this process for them (an interrupt should stop them
    /// cleanly) and name the `scps` binary whose programs they run. An
    /// error stops the bench before they start.
    fn testbed_starting(&mut self) -> Result<PathBuf, ObserverError>;
}

#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error(transparent)]
    Plan(#[from] PlanError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Merge(#[from] MergeError),
    /// The testbed could not be built.
    #[error("{0}")]
    Testbed(String),
    #[error("cannot write the report in {}", dir.display())]
    Report {
        dir: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// The observer stopped the bench.
    #[error("{0}")]
    Observer(#[source] ObserverError),
}

/// What a bench gives: its report's page, its tables and how its runs
/// went.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOutcome {
    /// The report's page (`index.html`).
    pub report: PathBuf,
    /// Each scenario of the plan (or of the merged records).
    pub scenarios: Vec<ScenarioOutcome>,
    /// The runs the report is of, and how many of them failed.
    pub runs: usize,
    pub failed: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioOutcome {
    pub scenario: ScenarioInfo,
    /// `None` when no record is of the scenario (a shard may hold none).
    pub tables: Option<Tables>,
}

/// A scenario's tables, as cells (a header line first), and its headline.
#[derive(Debug, Clone, PartialEq)]
pub struct Tables {
    /// A line per point, stack and world ([`table::cells`]).
    pub runs: Vec<Vec<String>>,
    /// The two worlds point by point ([`table::worlds`]): a header only
    /// when no point ran in both.
    pub worlds: Vec<Vec<String>>,
    pub headline: Option<String>,
}

/// Runs the bench `request` asks for: plans it, runs what its directory
/// lacks, and writes the report of the plan's runs.
pub fn execute(request: &BenchRequest, observer: &mut impl Observer) -> Result<BenchOutcome, BenchError> {
    let plan = Plan::new(&request.request)?;
    tell(observer, Event::Planned(&plan))?;
    let out = request.out.as_path();
    let mut store = Store::load(out)?;
    let mut appender = Appender::open(out)?;
    let runs = run::to_do(&plan.jobs, &store).len();
    for record in plan.jobs.iter().filter_map(|j| store.records.get(&j.id)) {
        tell(observer, Event::Resumed(record))?;
    }
    tell(observer, Event::Starting { runs })?;
    let (sim_jobs, testbed_jobs): (Vec<Job>, Vec<Job>) =
        plan.jobs.iter().cloned().partition(|j| j.world == World::Sim);
    let mut executed = run_in(
        &sim_jobs,
        (&mut store, &mut appender, out),
        request.workers,
        |job| run::run_sim(job, out),
        observer,
    )?;
    if !run::to_do(&testbed_jobs, &store).is_empty() {
        let scps = observer.testbed_starting().map_err(BenchError::Observer)?;
        let testbed = TestbedWorld::new(scps, out).map_err(BenchError::Testbed)?;
        let on_testbed = run_in(
            &testbed_jobs,
            (&mut store, &mut appender, out),
            1,
            |job| testbed.run(job),
            observer,
        )?;
        executed.ran += on_testbed.ran;
        executed.skipped += on_testbed.skipped;
    } else {
        executed.skipped += testbed_jobs.len();
    }
    tell(
        observer,
        Event::RunsDone {
            ran: executed.ran,
            skipped: executed.skipped,
            dir: out,
        },
    )?;
    let records: Vec<&Record> = plan
        .jobs
        .iter()
        .filter_map(|j| store.records.get(&j.id))
        .collect();
    report_of(out, &plan.scenarios, &records, &request.invocation)
}

/// Joins the records of `dirs` (a later directory's record of a run
/// wins) and their captures in `out`, and writes the report of all `out`
/// then holds; both must be named.
pub fn merge_dirs(
    dirs: &[PathBuf],
    out: Option<&Path>,
    invocation: &Invocation,
) -> Result<BenchOutcome, BenchError> {
    let out = merge::destination(dirs, out)?;
    let store = merge::merge(dirs, out)?;
    let records: Vec<&Record> = store.records.values().collect();
    let scenarios = merge::scenarios_of(records.iter().copied());
    report_of(out, &scenarios, &records, invocation)
}

/// Runs `jobs` (of one world) with `run` on `workers` threads, telling
/// `observer` first of the records they replace and then of each run.
fn run_in(
    jobs: &[Job],
    (store, appender, dir): (&mut Store, &mut Appender, &Path),
    workers: usize,
    run: impl Fn(&Job) -> Record + Sync,
    observer: &mut impl Observer,
) -> Result<Executed, BenchError> {
    let replaced = store.of_another_configuration(&run::to_do(jobs, store));
    if replaced > 0 {
        tell(observer, Event::Replaced { count: replaced, dir })?;
    }
    run::execute(jobs, store, appender, workers, run, |record| {
        tell(observer, Event::Recorded(record))
    })
}

fn tell(observer: &mut impl Observer, event: Event<'_>) -> Result<(), BenchError> {
    observer.event(event).map_err(BenchError::Observer)
}

/// Writes the report of `records` in `out`; the tables and headline of
/// each of `scenarios`.
fn report_of(
    out: &Path,
    scenarios: &[ScenarioInfo],
    records: &[&Record],
    invocation: &Invocation,
) -> Result<BenchOutcome, BenchError> {
    let provenance = Provenance::here(invocation.command.clone(), &invocation.version);
    report::write(out, scenarios, records, &provenance).map_err(|error| BenchError::Report {
        dir: out.to_owned(),
        error,
    })?;
    let scenarios = scenarios
        .iter()
        .map(|scenario| {
            let rows = figures::rows(
                records
                    .iter()
                    .copied()
                    .filter(|r| r.run.scenario == scenario.name),
            );
            let tables = (!rows.is_empty()).then(|| Tables {
                runs: table::cells(&rows),
                worlds: table::worlds(&rows),
                headline: headline::of_scenario(&scenario.name, &rows),
            });
            ScenarioOutcome {
                scenario: scenario.clone(),
                tables,
            }
        })
        .collect();
    Ok(BenchOutcome {
        report: out.join("index.html"),
        scenarios,
        runs: records.len(),
        failed: records.iter().filter(|r| r.cause().is_some()).count(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_go_by_default_under_the_time_the_bench_began() {
        let out = BenchRequest::default_out();
        let stamp = out.strip_prefix("bench-results").unwrap().to_str().unwrap();
        assert_eq!(stamp.len(), "YYYYMMDDTHHMMSSZ".len(), "{stamp}");
        assert_eq!((&stamp[8..9], &stamp[15..]), ("T", "Z"), "{stamp}");
        assert!(
            stamp[..8]
                .chars()
                .chain(stamp[9..15].chars())
                .all(|c| c.is_ascii_digit())
        );
    }
}
