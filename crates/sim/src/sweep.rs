//! A scenario's runs, every point with each of its seeds, on several
//! threads, their records handed over in the order of the runs as soon as
//! those before them are done (so that a reader of `scps sim --json` sees
//! a steady, deterministic stream whatever the threads' pace).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use scps_config::{Point, Scenario};

use crate::{RunFailure, RunOptions, RunRecord, SimError, run_record_guarded};

/// One run to do: which point, which seed, where to capture.
#[derive(Debug, Clone)]
pub struct SweepRun<'a> {
    pub point: &'a Point,
    pub seed: u64,
    pub options: RunOptions,
}

/// Where a sweep's captures go: one file for a single run, numbered files
/// beside it for several.
#[derive(Debug, Clone, Copy)]
pub struct Captures<'a> {
    pub path: &'a Path,
    /// `NODE.INTERFACE`, or the default interface without it.
    pub at: Option<&'a str>,
}

/// Every point of `scenario` run `runs` times, seeds counting up from
/// `first_seed`, in the order the table lists them.
pub fn plan<'a>(
    scenario: &'a Scenario,
    runs: u32,
    first_seed: u64,
    captures: Option<Captures<'_>>,
) -> Vec<SweepRun<'a>> {
    let total = scenario.points.len() * runs as usize;
    scenario
        .points
        .iter()
        .flat_map(|point| (0..runs).map(move |run| (point, run)))
        .enumerate()
        .map(|(index, (point, run))| SweepRun {
            point,
            seed: first_seed.wrapping_add(u64::from(run)),
            options: RunOptions {
                capture: captures.map(|c| capture_path(c.path, index, total)),
                capture_at: captures.and_then(|c| c.at).map(str::to_owned),
                ..RunOptions::default()
            },
        })
        .collect()
}

/// `path` for a single run, else `path` with `-N` before the extension.
fn capture_path(path: &Path, index: usize, total: usize) -> PathBuf {
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

/// Why a sweep's captures cannot be made.
#[derive(Debug, thiserror::Error)]
pub enum CapturesError {
    #[error("--pcap {} is a directory: name a file", .0.display())]
    Directory(PathBuf),
    #[error("--pcap {} is not a regular file (a device, FIFO or socket): name a file", .0.display())]
    NotAFile(PathBuf),
    /// `--pcap-at` names an interface that a point's topology lacks.
    #[error(transparent)]
    Interface(#[from] scps_config::Error),
    #[error("cannot write capture {}", path.display())]
    Create {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

/// `--pcap` names a file: one that exists must be a regular file. A
/// device or FIFO would take a single run's capture somewhere it cannot
/// be read back, and for several runs the numbered names would be made
/// beside it (`/dev/full-0`...).
pub fn check_capture_path(path: &Path) -> Result<(), CapturesError> {
    match std::fs::metadata(path) {
        Ok(metadata) if metadata.is_dir() => Err(CapturesError::Directory(path.to_owned())),
        Ok(metadata) if !metadata.is_file() => Err(CapturesError::NotAFile(path.to_owned())),
        _ => Ok(()),
    }
}

impl Captures<'_> {
    /// Before any run of `plan` (of `scenario`) starts: the interface to
    /// capture at is in every point's topology, and each run's capture
    /// file can be written (it is made, empty).
    pub fn prepare(&self, scenario: &Scenario, plan: &[SweepRun<'_>]) -> Result<(), CapturesError> {
        if let Some(at) = self.at {
            for point in &scenario.points {
                point.topology.find("--pcap-at", at)?;
            }
        }
        for path in plan.iter().filter_map(|run| run.options.capture.as_ref()) {
            std::fs::File::create(path).map_err(|error| CapturesError::Create {
                path: path.clone(),
                error,
            })?;
        }
        Ok(())
    }
}

/// Why a sweep stopped before every run gave a record.
#[derive(Debug, thiserror::Error)]
pub enum SweepError<E> {
    #[error(transparent)]
    Failed(#[from] SweepFailure),
    /// Handing a record over failed (its reader has gone, say).
    #[error(transparent)]
    Deliver(E),
}

impl<E: From<SweepFailure>> SweepError<E> {
    /// The error to report: the reader's own as it came (so that a
    /// closed pipe is still seen as one), else the sweep's failure.
    pub fn into_reported(self) -> E {
        match self {
            SweepError::Failed(failure) => failure.into(),
            SweepError::Deliver(error) => error,
        }
    }
}

/// Why the runs of a sweep stopped, in the words a user reads.
#[derive(Debug, thiserror::Error)]
pub enum SweepFailure {
    /// A run could not be set up: the run, named so that it can be
    /// replayed, and its causes.
    #[error("run with seed {seed} at {point}")]
    Setup {
        seed: u64,
        point: String,
        #[source]
        error: SimError,
    },
    /// The simulator panicked in a run: a bug.
    #[error(
        "run with seed {seed} at {point} panicked: {message} (a bug: please report it with this command)"
    )]
    Panic {
        seed: u64,
        point: String,
        message: String,
    },
    /// A worker thread panicked outside a run.
    #[error("a simulation thread panicked")]
    Thread,
    /// A run was never started, and no failure before it says why.
    #[error("a run did not complete (an earlier run failed to start)")]
    Incomplete,
}

impl SweepFailure {
    fn of_run(run: &SweepRun<'_>, failure: RunFailure) -> SweepFailure {
        let (seed, point) = (run.seed, run.point.describe());
        match failure {
            RunFailure::Setup(error) => SweepFailure::Setup { seed, point, error },
            RunFailure::Panic(message) => SweepFailure::Panic { seed, point, message },
        }
    }
}

/// Whether every run of a sweep (or a bench) completed.
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

/// Who hands the records over, how many it has, and the error it failed
/// with, if it did.
struct Delivery<F, E> {
    delivered: usize,
    deliver: F,
    failed: Option<E>,
}

/// A run's outcome, once it has one.
type Slot = Mutex<Option<Result<RunRecord, SweepFailure>>>;

/// Runs `runs` on `workers` threads and returns their records in order.
/// `deliver` sees each record in that order as soon as those before it are
/// done. The first run that fails, or the first error of `deliver`, stops
/// the workers from starting more runs, and is what the sweep returns.
pub fn run_in_order<E: Send>(
    runs: &[SweepRun<'_>],
    workers: usize,
    deliver: impl FnMut(&RunRecord) -> Result<(), E> + Send,
) -> Result<Vec<RunRecord>, SweepError<E>> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let slots: Vec<Slot> = runs.iter().map(|_| Mutex::new(None)).collect();
    let delivery = Mutex::new(Delivery {
        delivered: 0,
        deliver,
        failed: None,
    });
    // Hands over the records ready in order; an error once `deliver` has
    // failed (it is not called again) or a thread panicked.
    let deliver_ready = || -> Result<(), ()> {
        let mut delivery = delivery.lock().map_err(|_| ())?;
        let Delivery {
            delivered,
            deliver,
            failed,
        } = &mut *delivery;
        if failed.is_some() {
            return Err(());
        }
        while let Some(slot) = slots.get(*delivered) {
            let slot = slot.lock().map_err(|_| ())?;
            let Some(Ok(record)) = slot.as_ref() else { break };
            if let Err(error) = deliver(record) {
                *failed = Some(error);
                return Err(());
            }
            *delivered += 1;
        }
        Ok(())
    };
    std::thread::scope(|scope| {
        // No more threads than runs.
        for _ in 0..workers.clamp(1, runs.len().max(1)) {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(run) = runs.get(index) else { return };
                    let outcome = run_record_guarded(run.point, run.seed, &run.options)
                        .map_err(|failure| SweepFailure::of_run(run, failure));
                    let failed = outcome.is_err();
                    if let Ok(mut slot) = slots[index].lock() {
                        *slot = Some(outcome);
                    }
                    if failed {
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                    if deliver_ready().is_err() {
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                }
            });
        }
    });
    if let Some(error) = delivery.into_inner().map_err(|_| SweepFailure::Thread)?.failed {
        return Err(SweepError::Deliver(error));
    }
    let mut records = Vec::with_capacity(runs.len());
    for slot in slots {
        match slot.into_inner().map_err(|_| SweepFailure::Thread)? {
            Some(Ok(record)) => records.push(record),
            Some(Err(failure)) => return Err(failure.into()),
            // Runs are started in order, so one never started comes after
            // the failure that stopped the workers.
            None => return Err(SweepFailure::Incomplete.into()),
        }
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_run_captures_to_the_path_given_and_several_to_numbered_files_beside_it() {
        let path = Path::new("/tmp/out/run.pcap");
        assert_eq!(capture_path(path, 0, 1), path);
        assert_eq!(capture_path(path, 2, 3), Path::new("/tmp/out/run-2.pcap"));
        assert_eq!(capture_path(Path::new("dump"), 1, 2), Path::new("dump-1"));
    }

    /// A directory of this test's own under the system's temporary one.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("scps-sweep-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn one_point() -> Scenario {
        let sets: Vec<_> = [
            "protocol=tcp-vj",
            "link.ber=0",
            "link.delay=3ms",
            "link.return.rate=115200bps",
        ]
        .iter()
        .map(|set| scps_config::sweep::parse_assignment(set).unwrap())
        .collect();
        Scenario::load("lowrate-leo-geo", &sets).unwrap()
    }

    #[test]
    fn a_capture_path_must_be_a_regular_file_or_none_yet() {
        let dir = scratch("check");
        assert_eq!(
            check_capture_path(&dir).unwrap_err().to_string(),
            format!("--pcap {} is a directory: name a file", dir.display())
        );
        assert_eq!(
            check_capture_path(Path::new("/dev/null"))
                .unwrap_err()
                .to_string(),
            "--pcap /dev/null is not a regular file (a device, FIFO or socket): name a file"
        );
        let file = dir.join("run.pcap");
        check_capture_path(&file).expect("a file yet to be made");
        std::fs::write(&file, b"").unwrap();
        check_capture_path(&file).expect("a regular file");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn captures_are_made_before_the_runs_at_an_interface_every_point_has() {
        let scenario = one_point();
        let dir = scratch("prepare");
        let path = dir.join("run.pcap");
        let captures = Captures {
            path: &path,
            at: None,
        };
        let runs = plan(&scenario, 2, 1, Some(captures));
        captures.prepare(&scenario, &runs).unwrap();
        assert!(dir.join("run-0.pcap").is_file() && dir.join("run-1.pcap").is_file());
        assert!(!path.exists(), "numbered files for several runs");

        let elsewhere = Captures {
            path: &path,
            at: Some("nowhere.eth0"),
        };
        let refused = elsewhere.prepare(&scenario, &plan(&scenario, 1, 1, Some(elsewhere)));
        assert!(matches!(refused, Err(CapturesError::Interface(_))), "{refused:?}");
        assert!(!path.exists(), "nothing is made for an interface refused");

        let unwritable = dir.join("no-such-dir").join("run.pcap");
        let captures = Captures {
            path: &unwritable,
            at: None,
        };
        let error = captures
            .prepare(&scenario, &plan(&scenario, 1, 1, Some(captures)))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("cannot write capture {}", unwritable.display())
        );
        assert!(
            std::error::Error::source(&error).is_some(),
            "the cause goes with it"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failed_run_is_named_by_its_seed_and_point_and_a_panic_as_a_bug() {
        let scenario = one_point();
        let runs = plan(&scenario, 1, 7, None);
        let point = runs[0].point.describe();
        let setup = SweepFailure::of_run(
            &runs[0],
            RunFailure::Setup(SimError::Config(
                scenario.points[0].topology.find("k", "x.y").unwrap_err(),
            )),
        );
        assert_eq!(setup.to_string(), format!("run with seed 7 at {point}"));
        assert!(std::error::Error::source(&setup).is_some(), "with its cause");
        let panic = SweepFailure::of_run(&runs[0], RunFailure::Panic("boom".into()));
        assert_eq!(
            panic.to_string(),
            format!("run with seed 7 at {point} panicked: boom (a bug: please report it with this command)")
        );
    }

    #[test]
    fn a_readers_error_is_reported_as_it_came_and_a_failure_in_its_words() {
        type Reported = Box<dyn std::error::Error + Send + Sync>;
        let reader: SweepError<Reported> = SweepError::Deliver(std::io::Error::other("gone").into());
        assert!(reader.into_reported().downcast::<std::io::Error>().is_ok());
        let failed: SweepError<Reported> = SweepFailure::Incomplete.into();
        assert_eq!(
            failed.into_reported().to_string(),
            "a run did not complete (an earlier run failed to start)"
        );
    }

    #[test]
    fn a_sweep_completes_when_no_run_failed() {
        assert_eq!(Completion::of(0, 4), Completion::All);
        assert_eq!(
            Completion::of(1, 4),
            Completion::SomeFailed { failed: 1, total: 4 }
        );
    }
}
