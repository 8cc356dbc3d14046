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
use crate::stack::{Stack, World};
use crate::store::{Appender, Record, Store, StoreError};

/// The record of a job that could not give figures: what it was, and why.
fn failed(job: &Job, why: String) -> Record {
    let mut record = identity(job);
    describe(&mut record, job);
    record.insert("error".into(), why.into());
    record
}

/// The fields a bench adds to a run's own.
pub(crate) fn identity(job: &Job) -> Record {
    let mut record = Record::new();
    record.insert("id".into(), job.id.clone().into());
    record.insert("world".into(), job.world.name().into());
    record.insert("stack".into(), job.stack.name().into());
    record
}

/// What run a record is of, as the simulator's records say it: scenario,
/// protocol (what ran: in the testbed, Linux's TCP is itself), params
/// (the stack as the user named it) and seed.
pub(crate) fn describe(record: &mut Record, job: &Job) {
    let params = job
        .point
        .params
        .iter()
        .map(|(k, v)| (k.clone(), serde_json::to_value(v).unwrap_or(Value::Null)))
        .collect();
    let ran = match (job.world, job.stack) {
        (World::Testbed, Stack::Linux(_)) => job.stack.name(),
        _ => job.point.protocol.label().to_owned(),
    };
    record.insert("scenario".into(), job.point.scenario.clone().into());
    record.insert("protocol".into(), ran.into());
    record.insert("params".into(), Value::Object(params));
    record.insert("seed".into(), job.seed.into());
    name_the_stack(record, job);
}

/// A record's `params.protocol` is the stack the user asked for
/// (`linux-bbr`), not the label of what stands in for it (the simulator
/// runs `tcp-cubic` for `linux-cubic`).
fn name_the_stack(record: &mut Record, job: &Job) {
    if let Some(Value::Object(params)) = record.get_mut("params")
        && params.contains_key("protocol")
    {
        params.insert("protocol".into(), job.stack.name().into());
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

/// Runs a simulator job for a bench in `dir`: the record `scps sim
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
            format!("cannot make {}: {error}", dir.join("captures").display()),
        );
    }
    let options = RunOptions {
        capture: capture.as_ref().map(|c| dir.join(c)),
        capture_snaplen: Some(CAPTURE_SNAPLEN),
        ..RunOptions::default()
    };
    let replay = || format!("(replay: scps sim {} --seed {})", job.point.scenario, job.seed);
    match scps_sim::run_record_guarded(&job.point, job.seed, &options) {
        Ok(run) => {
            let mut record = identity(job);
            if let Value::Object(fields) = serde_json::to_value(&run).expect("a run record serialises") {
                record.extend(fields);
            }
            name_the_stack(&mut record, job);
            if let Some(capture) = capture {
                record.insert("capture".into(), capture.to_string_lossy().into_owned().into());
            }
            record
        }
        Err(RunFailure::Setup(error)) => {
            failed(job, format!("the run could not start: {error} {}", replay()))
        }
        Err(RunFailure::Panic(message)) => failed(
            job,
            format!("the simulator panicked: {message} (a bug) {}", replay()),
        ),
    }
}

/// What [`execute`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Executed {
    /// Jobs run now.
    pub ran: usize,
    /// Jobs whose records the directory already held.
    pub skipped: usize,
    /// Jobs of `ran` whose run the directory held a record of, but of
    /// another configuration (another `--set`, an edited scenario).
    pub replaced: usize,
}

/// The jobs `store` has no finished run of.
pub fn to_do<'a>(jobs: &'a [Job], store: &Store) -> Vec<&'a Job> {
    jobs.iter().filter(|j| !store.finished(&j.id, j.world)).collect()
}

/// Runs the jobs whose records `store` lacks with `run` on `workers`
/// threads, appending each record as it is done (to the directory and to
/// `store`) and handing it to `done`. A record of another configuration
/// is not the job's: the job runs again, and a line on standard error
/// says how many did so.
pub fn execute(
    jobs: &[Job],
    store: &mut Store,
    appender: &mut Appender,
    workers: usize,
    run: impl Fn(&Job) -> Record + Sync,
    mut done: impl FnMut(&Record),
) -> Result<Executed, StoreError> {
    let todo = to_do(jobs, store);
    let skipped = jobs.len() - todo.len();
    let replaced = store.of_another_configuration(&todo);
    if replaced > 0 {
        let (results, are) = if replaced == 1 {
            ("result", "is")
        } else {
            ("results", "are")
        };
        eprintln!(
            "scps bench: {replaced} {results} in {} {are} of another configuration (another --set, an edited \
             scenario): run again",
            appender.dir().display()
        );
    }
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
            if let Err(error) = appender.append(&record) {
                // Stop the workers: what they would run could not be kept.
                *stop.lock().expect("no worker panics holding it") = true;
                outcome = Err(error);
                break;
            }
            done(&record);
            store.insert(id, record);
        }
    });
    outcome.map(|()| Executed {
        ran: todo.len(),
        skipped,
        replaced,
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

    /// Runs `jobs` in `dir` as `scps bench` does: what it did, and the
    /// figure of bytes of each job's record.
    fn bench(dir: &Path, jobs: &[Job]) -> (Executed, Vec<Value>) {
        let mut store = Store::load(dir).unwrap();
        let mut appender = Appender::open(dir).unwrap();
        let executed = execute(
            jobs,
            &mut store,
            &mut appender,
            2,
            |job| run_sim(job, dir),
            |_| {},
        )
        .unwrap();
        let bytes = jobs
            .iter()
            .map(|j| store.records[&j.id]["bytes"].clone())
            .collect();
        (executed, bytes)
    }

    #[test]
    fn a_record_names_the_stack_the_user_asked_for_and_what_stood_in_for_it() {
        let dir = std::env::temp_dir().join(format!("scps-bench-label-{}", std::process::id()));
        let job = &jobs_of("linux-cubic", "100KB")[0];
        let record = run_sim(job, &dir);
        assert_eq!(record["params"]["protocol"], "linux-cubic", "{record:?}");
        assert_eq!(record["protocol"], "tcp-cubic", "the simulator's model of it ran");
        let mut described = Record::new();
        describe(&mut described, job);
        assert_eq!(described["params"]["protocol"], "linux-cubic");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_record_of_another_configuration_is_not_resumed_but_run_again() {
        let dir = std::env::temp_dir().join(format!("scps-bench-run-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (small, large) = (jobs("100KB"), jobs("200KB"));
        let (ran, bytes) = bench(&dir, &small);
        assert_eq!((ran.ran, ran.skipped, ran.replaced), (1, 0, 0));
        assert_eq!(bytes, [100_000]);
        let (ran, bytes) = bench(&dir, &small);
        assert_eq!((ran.ran, ran.skipped, ran.replaced), (0, 1, 0), "resumed");
        // The same run of 200 kB: not the record of 100 kB.
        let (ran, bytes_now) = bench(&dir, &large);
        assert_eq!((ran.ran, ran.skipped, ran.replaced), (1, 0, 1));
        assert_eq!(bytes_now, [200_000]);
        assert_eq!(bytes, [100_000]);
        let store = Store::load(&dir).unwrap();
        assert_eq!(
            store.records.len(),
            1,
            "the directory's record of the run is the later"
        );
        assert_eq!(store.records[&large[0].id]["bytes"], 200_000);
        assert_eq!(bench(&dir, &large).0.ran, 0, "and resumed as such");
        // Back to 100 kB: its record was replaced, so it runs again.
        let (ran, bytes) = bench(&dir, &small);
        assert_eq!((ran.ran, ran.replaced), (1, 1));
        assert_eq!(bytes, [100_000]);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
