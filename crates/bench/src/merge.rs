//! `scps bench merge`: the results of several benches' directories (the
//! shards of one sweep, typically) joined into one, with the captures
//! their records name, for one report.

use std::path::{Path, PathBuf};

use crate::figures;
use crate::plan::ScenarioInfo;
use crate::store::{Appender, RESULTS, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("merge: {0} holds no bench results ({RESULTS})")]
    NoResults(PathBuf),
    #[error("merge: cannot copy {from} to {to}: {error}")]
    Copy {
        from: PathBuf,
        to: PathBuf,
        error: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Adds every record of `dirs` to `out` (a later directory's record of a
/// run over an earlier one's, of its configuration or of another; records
/// `out` holds already are kept, not written twice) and copies the
/// captures they name; what `out` holds after.
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Store, MergeError> {
    let mut merged = Store::default();
    for dir in dirs {
        if !dir.join(RESULTS).exists() {
            return Err(MergeError::NoResults(dir.clone()));
        }
        let store = Store::load(dir)?;
        for capture in store.records.values().filter_map(|r| figures::text(r, "capture")) {
            let (from, to) = (dir.join(capture), out.join(capture));
            if from != to && from.exists() {
                let copied = std::fs::create_dir_all(to.parent().unwrap_or(out))
                    .and_then(|()| std::fs::copy(&from, &to));
                if let Err(error) = copied {
                    return Err(MergeError::Copy { from, to, error });
                }
            }
        }
        for (id, record) in store.records {
            merged.insert(id, record);
        }
    }
    let mut appender = Appender::open(out)?;
    let mut joined = Store::load(out)?;
    for (id, record) in merged.records {
        if joined.records.get(&id) != Some(&record) {
            appender.append(&record)?;
            joined.insert(id, record);
        }
    }
    Ok(joined)
}

/// The scenarios records are of, in the order they come, described as
/// their files describe them (a scenario file that is gone has no
/// description).
pub fn scenarios_of<'a>(records: impl IntoIterator<Item = &'a crate::store::Record>) -> Vec<ScenarioInfo> {
    let mut scenarios: Vec<ScenarioInfo> = Vec::new();
    for record in records {
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
    scenarios
}
