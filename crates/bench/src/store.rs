//! The results of a bench in its directory: `results.jsonl`, one record
//! per finished run, appended as each finishes, so that a bench stopped
//! part way (Ctrl-C, a crash, a shard of an array job) keeps what it did
//! and a rerun with the same directory does only the rest. A record is
//! what `scps sim --json` prints for a run, with `id`, `world` and
//! `stack` added. An id ends with the fingerprint of the run's
//! configuration: a record of the same run (world, scenario, stack, swept
//! values, seed) of another configuration is not that run's, and the later
//! record of a run, whatever its configuration, replaces the earlier.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::ops::Bound;
use std::path::{Path, PathBuf};

use crate::plan::run_of;
use crate::record::Record;

pub const RESULTS: &str = "results.jsonl";

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {error}")]
    Io { path: PathBuf, error: std::io::Error },
    #[error("{path} line {line}: not a bench record ({error})")]
    Corrupt {
        path: PathBuf,
        line: usize,
        error: String,
    },
}

/// The records a directory holds, by id (a later record of a run wins,
/// of its configuration or of another).
#[derive(Debug, Default)]
pub struct Store {
    pub records: BTreeMap<String, Record>,
}

impl Store {
    /// What `dir` holds; nothing if it has no results yet. A line cut
    /// short by a stop mid-write, the file's last, is left out.
    pub fn load(dir: &Path) -> Result<Store, StoreError> {
        let path = dir.join(RESULTS);
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Store::default()),
            Err(error) => return Err(StoreError::Io { path, error }),
        };
        let lines: Vec<String> = BufReader::new(file)
            .lines()
            .collect::<Result<_, _>>()
            .map_err(|error| StoreError::Io {
                path: path.clone(),
                error,
            })?;
        let mut store = Store::default();
        for (i, line) in lines.iter().enumerate() {
            match serde_json::from_str::<Record>(line) {
                Ok(record) => store.insert(record.run.id.clone(), record),
                Err(_) if i + 1 == lines.len() => {}
                Err(error) => {
                    return Err(StoreError::Corrupt {
                        path,
                        line: i + 1,
                        error: error.to_string(),
                    });
                }
            }
        }
        Ok(store)
    }
}

impl Store {
    /// Keeps `record`, of the job with `id`, in place of any record of the
    /// same run (of this configuration or of another).
    pub fn insert(&mut self, id: String, record: Record) {
        let run = run_of(&id);
        let others: Vec<String> = self
            .records
            .range::<str, _>((Bound::Included(run), Bound::Unbounded))
            .map(|(other, _)| other)
            .take_while(|other| other.starts_with(run))
            .filter(|other| run_of(other) == run && **other != id)
            .cloned()
            .collect();
        for other in others {
            self.records.remove(&other);
        }
        self.records.insert(id, record);
    }

    /// How many of `jobs` have no record of their own configuration but
    /// one of another: their records are not theirs, and they run again.
    pub fn of_another_configuration(&self, jobs: &[&crate::plan::Job]) -> usize {
        jobs.iter()
            .filter(|job| !self.records.contains_key(&job.id))
            .filter(|job| {
                let run = run_of(&job.id);
                self.records
                    .range::<str, _>((Bound::Included(run), Bound::Unbounded))
                    .map(|(other, _)| other)
                    .take_while(|other| other.starts_with(run))
                    .any(|other| run_of(other) == run)
            })
            .count()
    }

    /// Whether the run with `id` in `world` needs no running again: it is
    /// recorded, and either completed or failed in the simulator (which
    /// would fail the same way again). A failed testbed run is run again.
    pub fn finished(&self, id: &str, world: crate::stack::World) -> bool {
        self.records
            .get(id)
            .is_some_and(|r| world == crate::stack::World::Sim || r.cause().is_none())
    }
}

/// Appends records to a directory's results.
#[derive(Debug)]
pub struct Appender {
    path: PathBuf,
    file: File,
}

impl Appender {
    pub fn open(dir: &Path) -> Result<Appender, StoreError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |error| StoreError::Io { path, error }
        };
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        let path = dir.join(RESULTS);
        let file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(io(&path))?;
        // A line a stop cut short would join the next record: cut it off.
        let contents = std::fs::read(&path).map_err(io(&path))?;
        let whole = contents.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if whole < contents.len() {
            file.set_len(whole as u64).map_err(io(&path))?;
        }
        Ok(Appender { path, file })
    }

    /// Writes one record, whole, on a line of its own.
    pub fn append(&mut self, record: &Record) -> Result<(), StoreError> {
        self.file
            .write_all(record.json_line().as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|error| StoreError::Io {
                path: self.path.clone(),
                error,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stack::World;

    fn record(id: &str, ratio: f64) -> Record {
        let mut record = Record::example(World::Sim, "t1-geo", "tcp-vj", serde_json::json!({}));
        record.run.id = id.into();
        record.figures_mut().ratio = ratio;
        record
    }

    fn ratio(store: &Store, id: &str) -> f64 {
        store.records[id].figures().expect("completed").ratio
    }

    #[test]
    fn records_come_back_by_id_and_a_torn_last_line_is_left_out() {
        let dir = std::env::temp_dir().join(format!("scps-bench-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut appender = Appender::open(&dir).unwrap();
        appender.append(&record("a", 0.5)).unwrap();
        appender.append(&record("b", 0.7)).unwrap();
        appender.append(&record("a", 0.6)).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join(RESULTS))
            .unwrap()
            .write_all(b"{\"id\": \"c\", \"rat")
            .unwrap();
        let store = Store::load(&dir).unwrap();
        assert_eq!(store.records.len(), 2);
        assert_eq!(ratio(&store, "a"), 0.6, "the later record wins");
        // Appending again first cuts the torn line off.
        Appender::open(&dir).unwrap().append(&record("c", 0.9)).unwrap();
        let store = Store::load(&dir).unwrap();
        assert_eq!(store.records.len(), 3);
        assert_eq!(ratio(&store, "c"), 0.9);
        // A bad line before the last is an error, naming where.
        std::fs::write(dir.join(RESULTS), "nonsense\n{\"id\":\"a\"}\n").unwrap();
        let err = Store::load(&dir).unwrap_err().to_string();
        assert!(
            err.ends_with("results.jsonl line 1: not a bench record (expected ident at line 1 column 2)"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_later_record_of_a_run_replaces_one_of_another_configuration() {
        let dir = std::env::temp_dir().join(format!("scps-bench-store-config-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let (a, b) = ("/config=00000000000000aa", "/config=00000000000000bb");
        let mut appender = Appender::open(&dir).unwrap();
        // Before fingerprints, then of two configurations, and another
        // run whose id begins as the first's.
        appender.append(&record("sim/x/seed=1", 0.1)).unwrap();
        appender
            .append(&record(&format!("sim/x/seed=10{a}"), 0.2))
            .unwrap();
        appender
            .append(&record(&format!("sim/x/seed=1{a}"), 0.3))
            .unwrap();
        appender
            .append(&record(&format!("sim/x/seed=1{b}"), 0.4))
            .unwrap();
        let store = Store::load(&dir).unwrap();
        let ids: Vec<&str> = store.records.keys().map(String::as_str).collect();
        assert_eq!(
            ids,
            [
                "sim/x/seed=1/config=00000000000000bb",
                "sim/x/seed=10/config=00000000000000aa",
            ]
        );
        // And back: the first configuration's again is the run's record.
        appender
            .append(&record(&format!("sim/x/seed=1{a}"), 0.5))
            .unwrap();
        let store = Store::load(&dir).unwrap();
        assert_eq!(store.records.len(), 2);
        assert_eq!(ratio(&store, &format!("sim/x/seed=1{a}")), 0.5);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
