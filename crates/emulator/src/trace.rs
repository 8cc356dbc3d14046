//! Trace-driven operation: replay a timeline of changes from a file, and
//! record the changes applied to a running emulator as such a timeline.
//!
//! A timeline is one JSON object per line: a change (see `command.rs`)
//! with `at`, the time since the emulator's start. Blank lines and lines
//! starting with `#` are skipped. Times must not decrease.
//!
//! ```json
//! {"at": "10s", "op": "set", "keys": {"rate": "2Mbit", "delay": "300ms"}}
//! {"at": "20s", "op": "outage_start", "channel": 0}
//! {"at": "25.5s", "op": "outage_end", "channel": 0}
//! {"at": "30s", "op": "set", "direction": "return", "keys": {"ber": "1e-6"}}
//! ```
//!
//! A recording lists every change applied (from the control socket or a
//! replay) with its time, so replaying it repeats the session.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use scps_config::units::Time;
use serde::{Deserialize, Serialize};

use crate::Error;
use crate::bridge::Shared;
use crate::command::Change;
use crate::state::LinkState;

/// One line of a timeline.
#[derive(Debug, Clone, PartialEq, Deserialize)]
struct Entry {
    at: Time,
    #[serde(flatten)]
    change: Change,
}

#[derive(Serialize)]
struct RecordedEntry<'a> {
    at: String,
    #[serde(flatten)]
    change: &'a Change,
}

/// A line of a timeline that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// Line number in the file, from 1.
    pub line: usize,
    pub reason: String,
}

/// The bad lines of a timeline, one per line, for an error message.
pub(crate) fn list(bad: &[BadLine]) -> String {
    bad.iter()
        .map(|b| format!("\n  line {}: {}", b.line, b.reason))
        .collect()
}

/// A timeline, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    origin: String,
    /// (time, change, line number in the file)
    entries: Vec<(Duration, Change, usize)>,
}

impl Timeline {
    /// Reads every line: the entries that parse and keep the time order,
    /// the lines that do not, and how many lines hold an entry.
    fn read(text: &str, origin: &str) -> (Timeline, Vec<BadLine>, usize) {
        let mut entries: Vec<(Duration, Change, usize)> = Vec::new();
        let mut bad = Vec::new();
        let mut lines = 0;
        for (index, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            lines += 1;
            let number = index + 1;
            let entry: Entry = match serde_json::from_str(line) {
                Ok(entry) => entry,
                Err(e) => {
                    // serde_json places the error in the line alone, as
                    // "line 1": only the column tells.
                    let text = e.to_string();
                    let position = format!(" at line {} column {}", e.line(), e.column());
                    let reason = match text.strip_suffix(&position) {
                        Some(message) => format!("{message} (column {})", e.column()),
                        None => text,
                    };
                    bad.push(BadLine { line: number, reason });
                    continue;
                }
            };
            if let Some((previous, _, previous_line)) = entries.last()
                && entry.at.0 < *previous
            {
                bad.push(BadLine {
                    line: number,
                    reason: format!(
                        "at = {} is before line {previous_line}'s {}: times must not decrease",
                        entry.at,
                        Time(*previous)
                    ),
                });
                continue;
            }
            entries.push((entry.at.0, entry.change, number));
        }
        let timeline = Timeline {
            origin: origin.to_owned(),
            entries,
        };
        (timeline, bad, lines)
    }

    fn refuse(&self, mut bad: Vec<BadLine>, lines: usize) -> Result<(), Error> {
        if bad.is_empty() {
            return Ok(());
        }
        bad.sort_by_key(|b| b.line);
        Err(Error::Timeline {
            origin: self.origin.clone(),
            lines,
            bad,
        })
    }

    /// Parses a timeline. A file with any bad line is refused whole, the
    /// error listing every bad line with its number and reason.
    pub fn parse(text: &str, origin: &str) -> Result<Timeline, Error> {
        let (timeline, bad, lines) = Timeline::read(text, origin);
        timeline.refuse(bad, lines)?;
        Ok(timeline)
    }

    /// The entries that `state` would refuse, applied in turn to a copy of
    /// it (a refused change leaves the copy as it was).
    fn inapplicable(&self, state: &LinkState) -> Vec<BadLine> {
        let mut trial = state.clone();
        self.entries
            .iter()
            .filter_map(|(at, change, line)| {
                trial.apply(*at, change).err().map(|e| BadLine {
                    line: *line,
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    /// Applies every change to a copy of `state`, so that a timeline that
    /// would fail is refused before the emulator starts; the error lists
    /// every change that would fail.
    pub fn check(&self, state: &LinkState) -> Result<(), Error> {
        self.refuse(self.inapplicable(state), self.entries.len())
    }

    /// Reads a timeline file and checks it against `state`: refused whole
    /// if any line does not parse, breaks the time order or would fail,
    /// with every such line in the error.
    pub fn load(path: &Path, state: &LinkState) -> Result<Timeline, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            what: format!("read timeline {}", path.display()),
            source,
        })?;
        let (timeline, mut bad, lines) = Timeline::read(&text, &path.display().to_string());
        bad.extend(timeline.inapplicable(state));
        timeline.refuse(bad, lines)?;
        Ok(timeline)
    }

    /// How many changes it holds.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether it holds no change.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Writes applied changes to a file as a timeline.
#[derive(Debug)]
pub struct Recorder {
    out: Mutex<BufWriter<File>>,
}

impl Recorder {
    pub fn create(path: &Path) -> Result<Recorder, Error> {
        let file = File::create(path).map_err(|source| Error::Io {
            what: format!("create recording {}", path.display()),
            source,
        })?;
        Ok(Recorder {
            out: Mutex::new(BufWriter::new(file)),
        })
    }

    /// Appends `change`, applied at `at`, and flushes it (a recording must
    /// survive the emulator being killed).
    pub fn record(&self, at: Duration, change: &Change) {
        let entry = RecordedEntry {
            at: format!("{:.6}s", at.as_secs_f64()),
            change,
        };
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(line) = serde_json::to_string(&entry) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }
}

/// Applies a timeline in real time on a thread of its own.
#[derive(Debug)]
pub(crate) struct Replay {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Replay {
    pub(crate) fn start(timeline: Timeline, shared: Shared, recorder: Option<Arc<Recorder>>) -> Replay {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            for (at, change, line) in timeline.entries {
                // Sleeps until the entry's time unless told to stop.
                match stopped.recv_timeout(at.saturating_sub(shared.now())) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
                // Checked before the start; it can still fail if a control
                // command changed the state meanwhile (e.g. an outage
                // already forced by hand): the replay goes on.
                match shared.apply(&change) {
                    Ok(now) => {
                        if let Some(recorder) = &recorder {
                            recorder.record(now, &change);
                        }
                    }
                    Err(e) => tracing::warn!(
                        timeline = %timeline.origin,
                        line,
                        error = %e,
                        "timeline entry not applied"
                    ),
                }
            }
        });
        Replay {
            stop: Some(stop),
            thread: Some(thread),
        }
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::EmulatorConfig;

    fn state() -> LinkState {
        let config = EmulatorConfig::from_text(
            "[emulate]\nside_a = \"a0\"\nside_b = \"b0\"\n[link]\nrate = \"10Mbit\"\nchannels = 2\n",
            "test",
        )
        .unwrap();
        LinkState::new(&config).unwrap()
    }

    const GOOD: &str = "# a call drop on channel 1\n\
        {\"at\": \"1s\", \"op\": \"outage_start\", \"channel\": 1}\n\
        \n\
        {\"at\": \"2s\", \"op\": \"outage_end\", \"channel\": 1}\n";

    #[test]
    fn a_good_timeline_is_read_in_order() {
        let timeline = Timeline::parse(GOOD, "good").unwrap();
        assert_eq!(timeline.len(), 2);
        timeline.check(&state()).unwrap();
    }

    #[test]
    fn every_bad_line_is_reported_with_its_number_and_the_file_refused() {
        let dir = std::env::temp_dir().join(format!("scps-timeline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("bad.jsonl");
        std::fs::write(
            &path,
            "{\"at\": \"1s\", \"op\": \"set\", \"keys\": {\"rate\": \"2Mbit\"}}\n\
             {\"at\": \"2s\", \"op\": \"explode\"}\n\
             # a comment\n\
             {\"at\": \"3s\", \"op\": \"outage_start\", \"channel\": 7}\n\
             {\"at\": \"500ms\", \"op\": \"outage_end\"}\n\
             {\"at\": \"4s\", \"op\": \"set\", \"keys\": {\"ber\": \"1.5\"}}\n\
             not json\n\
             {\"at\": \"5s\", \"op\": \"outage_end\", \"channel\": 0}\n",
        )
        .unwrap();
        let error = Timeline::load(&path, &state()).unwrap_err();
        let Error::Timeline { lines, bad, .. } = &error else {
            panic!("{error}");
        };
        assert_eq!(*lines, 7);
        let numbers: Vec<usize> = bad.iter().map(|b| b.line).collect();
        assert_eq!(numbers, [2, 4, 5, 6, 7, 8], "{error}");
        let message = error.to_string();
        println!("{message}");
        assert!(message.starts_with(&format!(
            "{}: the timeline is refused, 6 of its 7 entries are bad:",
            path.display()
        )));
        for expected in [
            "line 2: unknown variant `explode`",
            "line 4: no channel 7: this link has 2 (0 to 1)",
            "line 5: at = 500ms is before line 4's 3s: times must not decrease",
            "line 6: ber: invalid bit-error rate \"1.5\"",
            "line 7: expected ident (column 2)",
            "line 8: channel 0 is not in a forced outage",
        ] {
            assert!(message.contains(expected), "{expected:?} not in {message}");
        }
        // Syntax alone, without a link to check against, finds the same
        // unparsable and out-of-order lines.
        let text = std::fs::read_to_string(&path).unwrap();
        let error = Timeline::parse(&text, "bad").unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("bad: the timeline is refused, 3 of its 7 entries are bad:")
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
