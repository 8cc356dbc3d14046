//! A progress line on standard error for long benches: runs done, the
//! time taken and an estimate of the time left; nothing when standard
//! error is not a terminal (a log, a batch job).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    shown: bool,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        Progress {
            total,
            done: 0,
            started: Instant::now(),
            shown: std::io::stderr().is_terminal(),
        }
    }

    /// One more run done.
    pub fn tick(&mut self) {
        self.done += 1;
        if !self.shown {
            return;
        }
        let elapsed = self.started.elapsed();
        let left = elapsed.mul_f64((self.total - self.done.min(self.total)) as f64 / self.done as f64);
        const WIDTH: usize = 30;
        let filled = WIDTH * self.done / self.total.max(1);
        eprint!(
            "\r[{}{}] {}/{} runs, {} so far, about {} left ",
            "#".repeat(filled),
            " ".repeat(WIDTH - filled),
            self.done,
            self.total,
            clock(elapsed),
            clock(left)
        );
        let _ = std::io::stderr().flush();
    }

    /// Clears the line.
    pub fn finish(&self) {
        if self.shown && self.done > 0 {
            eprint!("\r{}\r", " ".repeat(100));
        }
    }
}

/// `1h02m`, `3m20s`, `45s`.
fn clock(duration: Duration) -> String {
    let s = duration.as_secs();
    match s {
        s if s >= 3600 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s if s >= 60 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{s}s"),
    }
}
