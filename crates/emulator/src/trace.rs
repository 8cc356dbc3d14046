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
use crate::bridge::{Shared, lock};
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

/// A timeline, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    origin: String,
    /// (time, change, line number in the file)
    entries: Vec<(Duration, Change, usize)>,
}

impl Timeline {
    /// Parses a timeline; errors name the file and line.
    pub fn parse(text: &str, origin: &str) -> Result<Timeline, Error> {
        let mut entries: Vec<(Duration, Change, usize)> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at_line = |message: String| Error::Trace {
                origin: origin.to_owned(),
                line: number + 1,
                message,
            };
            let entry: Entry = serde_json::from_str(line).map_err(|e| at_line(e.to_string()))?;
            if let Some((previous, _, _)) = entries.last()
                && entry.at.0 < *previous
            {
                return Err(at_line(format!(
                    "at = {} is before the previous line's {}",
                    entry.at,
                    Time(*previous)
                )));
            }
            entries.push((entry.at.0, entry.change, number + 1));
        }
        Ok(Timeline {
            origin: origin.to_owned(),
            entries,
        })
    }

    /// Reads a timeline file.
    pub fn load(path: &Path) -> Result<Timeline, Error> {
        let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
            what: format!("read timeline {}", path.display()),
            source,
        })?;
        Timeline::parse(&text, &path.display().to_string())
    }

    /// Applies every change to a copy of `state`, so that a timeline that
    /// would fail is refused before the emulator starts.
    pub fn check(&self, state: &LinkState) -> Result<(), Error> {
        let mut trial = state.clone();
        for (at, change, line) in &self.entries {
            trial.apply(*at, change).map_err(|e| Error::Trace {
                origin: self.origin.clone(),
                line: *line,
                message: e.to_string(),
            })?;
        }
        Ok(())
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
                let now = shared.now();
                // Checked before the start; it can still fail if a control
                // command changed the state meanwhile (e.g. an outage
                // already forced by hand): the replay goes on.
                match lock(&shared.state).apply(now, &change) {
                    Ok(()) => {
                        if let Some(recorder) = &recorder {
                            recorder.record(now, &change);
                        }
                    }
                    Err(e) => eprintln!("scps emulate: {} line {line} not applied: {e}", timeline.origin),
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
