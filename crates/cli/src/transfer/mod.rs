//! `scps send` and `scps recv`: the options they share, what they say and
//! their exit statuses; `scps-transfer` runs the stacks and the sessions.

pub mod args;

use std::io::Write;
use std::sync::Arc;

pub use scps_transfer::{Outcome, interrupts};
use scps_transfer::{Said, Tell};

/// Says `said`: a line on standard error, a report on standard output. A
/// reader of the reports that has gone (`scps send | head -n 1`) is no
/// error; any other failure to write one is said.
pub fn say(said: Said, json: bool) {
    match said {
        Said::Nothing => {}
        Said::Line(line) => eprintln!("{line}"),
        Said::Report(report) => {
            let written = writeln!(std::io::stdout().lock(), "{}", report.render(json));
            if let Err(error) = written
                && error.kind() != std::io::ErrorKind::BrokenPipe
            {
                eprintln!("scps: cannot write the report: {error}");
            }
        }
    }
}

/// Says what a transfer tells as it runs.
pub fn teller(json: bool) -> Tell {
    Arc::new(move |news| say(news.said(), json))
}

/// The exit status: that of the outcome, or 2 when the transfer could not
/// run (bad input, no such device...).
pub fn exit(outcome: anyhow::Result<Outcome>) -> std::process::ExitCode {
    std::process::ExitCode::from(match outcome {
        Ok(outcome) => outcome.status(),
        Err(error) => {
            eprintln!("scps: {}", scps_transfer::error_text::error_text(&error));
            2
        }
    })
}
