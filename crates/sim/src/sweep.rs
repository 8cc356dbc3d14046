//! A scenario's runs, every point with each of its seeds, on several
//! threads, their records handed over in the order of the runs as soon as
//! those before them are done (so that a reader of `scps sim --json` sees
//! a steady, deterministic stream whatever the threads' pace).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use scps_config::{Point, Scenario};

use crate::{RunFailure, RunOptions, RunRecord, run_record_guarded};

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

/// Why a sweep stopped before every run gave a record.
#[derive(Debug, thiserror::Error)]
pub enum SweepError<E> {
    /// A run could not be set up, or the simulator panicked in it (a
    /// bug): the run, named so that it can be replayed.
    #[error("run with seed {seed} at {point}: {failure}")]
    Run {
        seed: u64,
        point: String,
        failure: RunFailure,
    },
    /// Handing a record over failed (its reader has gone, say).
    #[error(transparent)]
    Deliver(E),
    /// A worker thread panicked outside a run.
    #[error("a simulation thread panicked")]
    Thread,
    /// A run was never started, and no failure before it says why.
    #[error("a run did not complete (an earlier run failed to start)")]
    Incomplete,
}

/// Who hands the records over, how many it has, and the error it failed
/// with, if it did.
struct Delivery<F, E> {
    delivered: usize,
    deliver: F,
    failed: Option<E>,
}

/// A run's outcome, once it has one.
type Slot<E> = Mutex<Option<Result<RunRecord, SweepError<E>>>>;

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
    let slots: Vec<Slot<E>> = runs.iter().map(|_| Mutex::new(None)).collect();
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
        for _ in 0..workers.max(1) {
            scope.spawn(|| {
                while !stop.load(Ordering::Relaxed) {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(run) = runs.get(index) else { return };
                    let outcome = run_record_guarded(run.point, run.seed, &run.options).map_err(|failure| {
                        SweepError::Run {
                            seed: run.seed,
                            point: run.point.describe(),
                            failure,
                        }
                    });
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
    if let Some(error) = delivery.into_inner().map_err(|_| SweepError::Thread)?.failed {
        return Err(SweepError::Deliver(error));
    }
    let mut records = Vec::with_capacity(runs.len());
    for slot in slots {
        match slot.into_inner().map_err(|_| SweepError::Thread)? {
            Some(Ok(record)) => records.push(record),
            Some(Err(error)) => return Err(error),
            // Runs are started in order, so one never started comes after
            // the failure that stopped the workers.
            None => return Err(SweepError::Incomplete),
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
}
