//! `scps bench merge`: the results of several benches' directories (the
//! shards of one sweep, typically) joined into one, with the captures
//! their records name, for one report.

use std::path::{Path, PathBuf};

use crate::figures;
use crate::plan::ScenarioInfo;
use crate::record::Record;
use crate::store::{Appender, RESULTS, Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error("merge: name the directories of the benches to join, then --out DIR")]
    NoDirs,
    #[error("merge: --out DIR, the directory of the joined results and report")]
    NoOut,
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

/// Where the merge of `dirs` goes: `out`, once both are named.
pub(crate) fn destination<'a>(dirs: &[PathBuf], out: Option<&'a Path>) -> Result<&'a Path, MergeError> {
    if dirs.is_empty() {
        return Err(MergeError::NoDirs);
    }
    out.ok_or(MergeError::NoOut)
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
        for capture in store.records.values().filter_map(|r| r.capture.as_ref()) {
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
pub fn scenarios_of<'a>(records: impl IntoIterator<Item = &'a Record>) -> Vec<ScenarioInfo> {
    // Each scenario with the swept values of each of its records.
    let mut by_scenario: Vec<(String, Vec<figures::Params>)> = Vec::new();
    for record in records {
        let name = record.run.scenario.as_str();
        let params = figures::params(record);
        match by_scenario.iter_mut().find(|(n, _)| n == name) {
            Some((_, points)) => points.push(params),
            None => by_scenario.push((name.to_owned(), vec![params])),
        }
    }
    by_scenario
        .into_iter()
        .map(|(name, points)| {
            // The records do not say the workload, unless it was swept.
            let description = scps_config::Scenario::load(&name, &[])
                .map(|s| s.description)
                .unwrap_or_default();
            ScenarioInfo::of_run(&name, description, None, points.iter().map(Vec::as_slice))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_needs_its_directories_and_where_they_go() {
        let (dirs, out) = ([PathBuf::from("shard-1")], Path::new("merged"));
        assert_eq!(
            destination(&[], Some(out)).unwrap_err().to_string(),
            "merge: name the directories of the benches to join, then --out DIR"
        );
        assert_eq!(
            destination(&dirs, None).unwrap_err().to_string(),
            "merge: --out DIR, the directory of the joined results and report"
        );
        assert_eq!(destination(&dirs, Some(out)).unwrap(), out);
    }
}
