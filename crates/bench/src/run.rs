//! Running a plan's jobs: the simulator's on every core at once, each
//! record appended to the directory's results the moment it is done (a
//! bench stopped part way keeps them), jobs already there skipped.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use scps_sim::{RunFailure, RunOptions};
use serde_json::Value;

use crate::plan::Job;
use crate::record::{Cause, Identity, Outcome, Record};
use crate::stack::{Stack, World};
use crate::store::{Appender, Store, StoreError};

/// The record of a job that could not give figures: what it was, and why.
fn failed(job: &Job, cause: Cause) -> Record {
    Record {
        run: identity(job),
        outcome: Outcome::failed(cause),
        capture: None,
        wall_s: None,
    }
}

/// What run a record is of, as the simulator's records say it: its id,
/// world and stack, then scenario, protocol (what ran: in the testbed,
/// Linux's TCP is itself), params and seed. A record's `params.protocol`
/// is the stack the user asked for (`linux-bbr`), not the label of what
/// stands in for it (the simulator runs `tcp-cubic` for `linux-cubic`).
pub(crate) fn identity(job: &Job) -> Identity {
    let mut params: serde_json::Map<String, Value> = job
        .point
        .params
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
        .collect();
    if let Some(protocol) = params.get_mut("protocol") {
        *protocol = job.stack.name().into();
    }
    let ran = match (job.world, job.stack) {
        (World::Testbed, Stack::Linux(_)) => job.stack.name(),
        _ => job.point.protocol.label().to_owned(),
    };
    Identity {
        id: job.id.clone(),
        world: job.world,
        stack: job.stack.name(),
        scenario: job.point.scenario.clone(),
        protocol: ran,
        params,
        seed: job.seed,
    }
}

/// A file name for what belongs to the job with `id`.
pub(crate) fn file_name(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-.=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Bytes of each packet a bench's captures keep: the IP and TCP headers
/// with their options, which a time-sequence graph needs.
pub(crate) const CAPTURE_SNAPLEN: u32 = 80;

/// Where a job's capture goes, relative to the bench's directory.
pub fn capture_path(job: &Job) -> PathBuf {
    Path::new("captures").join(format!("{}.pcap", file_name(&job.id)))
}

/// Runs a simulator job for a bench in `dir`: the figures `scps sim
/// --json` prints, with the bench's fields (and `capture`, the file of its
/// capture if it has one); a run that cannot start or that panics (a bug)
/// is a failed record naming how to replay it.
pub fn run_sim(job: &Job, dir: &Path) -> Record {
    let capture = job.capture.then(|| capture_path(job));
    if capture.is_some()
        && let Err(error) = std::fs::create_dir_all(dir.join("captures"))
    {
        return failed(
            job,
            Cause::Setup(format!("cannot make {}: {error}", dir.join("captures").display())),
        );
    }
    let options = RunOptions {
        capture: capture.as_ref().map(|c| dir.join(c)),
        capture_snaplen: Some(CAPTURE_SNAPLEN),
        ..RunOptions::default()
    };
    let replay = || format!("(replay: scps sim {} --seed {})", job.point.scenario, job.seed);
    match scps_sim::run_record_guarded(&job.point, job.seed, &options) {
        Ok(run) => Record {
            run: identity(job),
            outcome: outcome_of(&run),
            capture: capture.map(|c| c.to_string_lossy().into_owned()),
            wall_s: None,
        },
        Err(RunFailure::Setup(error)) => failed(
            job,
            Cause::Setup(format!("the run could not start: {error} {}", replay())),
        ),
        Err(RunFailure::Panic(message)) => failed(
            job,
            Cause::Panic(format!("the simulator panicked: {message} (a bug) {}", replay())),
        ),
    }
}

/// How a simulator run went, from its record: its figures, or its error
/// with what it measured.
fn outcome_of(run: &scps_sim::RunRecord) -> Outcome {
    let Ok(Value::Object(mut fields)) = serde_json::to_value(run) else {
        unreachable!("a run record serialises as an object");
    };
    // What the run is of, the bench's identity says.
    for key in ["scenario", "protocol", "params", "seed"] {
        fields.shift_remove(key);
    }
    serde_json::from_value(Value::Object(fields)).expect("a run record's figures read as an outcome")
}

/// What [`execute`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Executed {
    /// Jobs run now.
    pub ran: usize,
    /// Jobs whose records the directory already held.
    pub skipped: usize,
}

/// The jobs `store` has no finished run of.
pub fn to_do<'a>(jobs: &'a [Job], store: &Store) -> Vec<&'a Job> {
    jobs.iter().filter(|j| !store.finished(&j.id, j.world)).collect()
}

/// Runs the jobs whose records `store` lacks with `run` on `workers`
/// threads, appending each record as it is done (to the directory and to
/// `store`) and handing it to `done`. A record of another configuration
/// is not the job's: the job runs again. An error appending a record, or
/// from `done`, stops the workers and is returned once the runs under way
/// end.
pub fn execute<E: From<StoreError>>(
    jobs: &[Job],
    store: &mut Store,
    appender: &mut Appender,
    workers: usize,
    run: impl Fn(&Job) -> Record + Sync,
    mut done: impl FnMut(&Record) -> Result<(), E>,
) -> Result<Executed, E> {
    let todo = to_do(jobs, store);
    let skipped = jobs.len() - todo.len();
    let next = AtomicUsize::new(0);
    let (sender, receiver) = mpsc::channel::<(String, Record)>();
    let stop = Mutex::new(false);
    let mut outcome = Ok(());
    std::thread::scope(|scope| {
        for _ in 0..workers.clamp(1, todo.len().max(1)) {
            let sender = sender.clone();
            let (next, todo, stop, run) = (&next, &todo, &stop, &run);
            scope.spawn(move || {
                loop {
                    if *stop.lock().expect("no worker panics holding it") {
                        return;
                    }
                    let Some(job) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    if sender.send((job.id.clone(), run(job))).is_err() {
                        return;
                    }
                }
            });
        }
        drop(sender);
        for (id, record) in receiver {
            let kept = appender.append(&record).map_err(E::from).and_then(|()| {
                let told = done(&record);
                store.insert(id, record);
                told
            });
            if let Err(error) = kept {
                // Stop the workers: what they would run could not be kept,
                // or whoever is told no longer wants it.
                *stop.lock().expect("no worker panics holding it") = true;
                outcome = Err(error);
                break;
            }
        }
    });
    outcome.map(|()| Executed {
        ran: todo.len(),
        skipped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{DEFAULT_MAX_RUNS, Plan, Request};
    use crate::stack::World;
    use scps_config::sweep::parse_assignment;

    /// geo-8mbit's Saratoga at 600 ms, BER 0, of `bytes`: one short run.
    fn jobs(bytes: &str) -> Vec<Job> {
        jobs_of("saratoga", bytes)
    }

    /// geo-8mbit's `stack` at 600 ms, BER 0, of `bytes`: one short run.
    fn jobs_of(stack: &str, bytes: &str) -> Vec<Job> {
        let sets = [
            &format!("protocol={stack}"),
            "link.rtt=600ms",
            "link.ber=0",
            &format!("workload.bytes={bytes}"),
        ];
        let request = Request {
            scenarios: vec!["geo-8mbit".to_owned()],
            sets: sets.iter().map(|s| parse_assignment(s).unwrap()).collect(),
            runs: None,
            seed: None,
            worlds: vec![World::Sim],
            shard: None,
            max_runs: DEFAULT_MAX_RUNS,
        };
        Plan::new(&request).unwrap().jobs
    }

    /// Runs `jobs` in `dir` as `scps bench` does: how many ran, were
    /// skipped and replaced a record of another configuration, and the
    /// figure of bytes of each job's record.
    fn bench(dir: &Path, jobs: &[Job]) -> ((usize, usize, usize), Vec<u64>) {
        let mut store = Store::load(dir).unwrap();
        let mut appender = Appender::open(dir).unwrap();
        let replaced = store.of_another_configuration(&to_do(jobs, &store));
        let executed = execute(
            jobs,
            &mut store,
            &mut appender,
            2,
            |job| run_sim(job, dir),
            |_| Ok::<(), StoreError>(()),
        )
        .unwrap();
        let bytes = jobs.iter().map(|j| bytes_of(&store, &j.id)).collect();
        ((executed.ran, executed.skipped, replaced), bytes)
    }

    fn bytes_of(store: &Store, id: &str) -> u64 {
        store.records[id].figures().expect("completed").bytes
    }

    #[test]
    fn a_record_names_the_stack_the_user_asked_for_and_what_stood_in_for_it() {
        let dir = std::env::temp_dir().join(format!("scps-bench-label-{}", std::process::id()));
        let job = &jobs_of("linux-cubic", "100KB")[0];
        let record = run_sim(job, &dir);
        assert_eq!(record.run.params["protocol"], "linux-cubic", "{record:?}");
        assert_eq!(
            record.run.protocol, "tcp-cubic",
            "the simulator's model of it ran"
        );
        assert_eq!(record.run, identity(job), "as a record that failed says it");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_simulator_run_that_cannot_finish_is_failed_with_what_it_measured() {
        let dir = std::env::temp_dir().join(format!("scps-bench-unfinished-{}", std::process::id()));
        let mut job = jobs_of("tcp-vj", "1MB").remove(0);
        job.point.time_limit = std::time::Duration::from_secs(2);
        let record = run_sim(&job, &dir);
        assert!(
            matches!(record.cause(), Some(Cause::TimedOut(m)) if m.starts_with("not finished within")),
            "{record:?}"
        );
        let Outcome::Failed { measured, .. } = &record.outcome else {
            unreachable!()
        };
        assert!(
            measured.contains_key("bytes") && measured.contains_key("link"),
            "{measured:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_record_of_another_configuration_is_not_resumed_but_run_again() {
        let dir = std::env::temp_dir().join(format!("scps-bench-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (small, large) = (jobs("100KB"), jobs("200KB"));
        let (ran, bytes) = bench(&dir, &small);
        assert_eq!(ran, (1, 0, 0));
        assert_eq!(bytes, [100_000]);
        let (ran, bytes) = bench(&dir, &small);
        assert_eq!(ran, (0, 1, 0), "resumed");
        // The same run of 200 kB: not the record of 100 kB.
        let (ran, bytes_now) = bench(&dir, &large);
        assert_eq!(ran, (1, 0, 1));
        assert_eq!(bytes_now, [200_000]);
        assert_eq!(bytes, [100_000]);
        let store = Store::load(&dir).unwrap();
        assert_eq!(
            store.records.len(),
            1,
            "the directory's record of the run is the later"
        );
        assert_eq!(bytes_of(&store, &large[0].id), 200_000);
        assert_eq!(bench(&dir, &large).0.0, 0, "and resumed as such");
        // Back to 100 kB: its record was replaced, so it runs again.
        let (ran, bytes) = bench(&dir, &small);
        assert_eq!((ran.0, ran.2), (1, 1));
        assert_eq!(bytes, [100_000]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
