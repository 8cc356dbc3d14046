//! What a client of `scps saratoga` shows while it runs: its notes, and
//! on a terminal how far the transfer got, one line rewritten in place.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use crate::client::Watch;

/// The progress line is rewritten at most this often.
const EVERY: Duration = Duration::from_millis(200);

/// A [`Watch`] writing to standard error, or to any writer.
#[derive(Debug)]
pub struct Progress<W: Write> {
    out: W,
    /// The command's name (`put`), which starts each note.
    operation: &'static str,
    /// Whether to show the progress line (the notes always are).
    enabled: bool,
    start: Instant,
    /// When the progress line was last written.
    shown: Option<Instant>,
}

impl Progress<std::io::Stderr> {
    /// Notes on standard error, and the progress line too when it is a
    /// terminal.
    pub fn on_stderr(operation: &'static str) -> Self {
        let enabled = std::io::stderr().is_terminal();
        Progress::new(std::io::stderr(), operation, enabled)
    }
}

impl<W: Write> Progress<W> {
    pub fn new(out: W, operation: &'static str, enabled: bool) -> Self {
        Progress {
            out,
            operation,
            enabled,
            start: Instant::now(),
            shown: None,
        }
    }

    /// `progress` as of `now`: the line is written if enabled and
    /// [`EVERY`] has passed since it last was.
    fn progress_at(&mut self, bytes: u64, size: u64, now: Instant) {
        let due = self.shown.is_none_or(|at| now.duration_since(at) >= EVERY);
        if !self.enabled || !due {
            return;
        }
        self.shown = Some(now);
        let secs = now.duration_since(self.start).as_secs_f64().max(1e-9);
        // Standard error that cannot be written leaves no one to tell.
        let _ = write!(
            self.out,
            "\r{bytes} of {size} bytes ({:.0}%), {:.2} Mbit/s   ",
            100.0 * bytes as f64 / size.max(1) as f64,
            bytes as f64 * 8.0 / secs / 1e6
        );
    }
}

impl<W: Write> Watch for Progress<W> {
    fn note(&mut self, text: &str) {
        let _ = writeln!(self.out, "scps saratoga {}: {text}", self.operation);
    }

    fn progress(&mut self, bytes: u64, size: u64) {
        self.progress_at(bytes, size, Instant::now());
    }

    /// Ends the progress line, if one was shown.
    fn ended(&mut self) {
        if self.shown.is_some() {
            let _ = writeln!(self.out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(progress: &Progress<Vec<u8>>) -> &str {
        std::str::from_utf8(&progress.out).unwrap()
    }

    #[test]
    fn notes_name_the_command() {
        let mut progress = Progress::new(Vec::new(), "put", false);
        progress.note("port 7542 is taken");
        progress.ended();
        assert_eq!(shown(&progress), "scps saratoga put: port 7542 is taken\n");
    }

    #[test]
    fn the_line_is_rewritten_at_most_every_200_ms_and_ended_once_shown() {
        let mut progress = Progress::new(Vec::new(), "get", true);
        let start = progress.start;
        progress.progress_at(250_000, 1_000_000, start + Duration::from_secs(1));
        progress.progress_at(500_000, 1_000_000, start + Duration::from_millis(1100));
        assert_eq!(
            shown(&progress),
            "\r250000 of 1000000 bytes (25%), 2.00 Mbit/s   "
        );
        progress.progress_at(1_000_000, 1_000_000, start + Duration::from_secs(2));
        progress.ended();
        assert_eq!(
            shown(&progress),
            "\r250000 of 1000000 bytes (25%), 2.00 Mbit/s   \
             \r1000000 of 1000000 bytes (100%), 4.00 Mbit/s   \n"
        );
    }

    #[test]
    fn off_a_terminal_only_the_notes_are_shown() {
        let mut progress = Progress::new(Vec::new(), "get", false);
        let start = progress.start;
        progress.progress_at(1, 2, start + Duration::from_secs(1));
        progress.ended();
        assert_eq!(shown(&progress), "");
    }
}
