//! `scps send` and `scps recv`: the options they share, the reports and
//! exit statuses; `scps-transfer` runs the stacks and the sessions.

pub mod args;

use anyhow::Context;

/// Ctrl-C (SIGINT), from the moment this is called on. A
/// `tokio::signal::ctrl_c()` future per `select!` would only listen from
/// its first poll, and a signal that came before (while a busy transfer
/// was still being polled, say) would be lost.
pub fn interrupts() -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("cannot listen for Ctrl-C (SIGINT)")
}

/// Writes a report to standard output. A reader that has gone (`scps send
/// | head -n 1`) is no error; any other failure to write is said.
pub fn print_report(report: &scps_workload::report::Report, json: bool) {
    use std::io::Write;
    let written = writeln!(std::io::stdout().lock(), "{}", report.render(json));
    if let Err(error) = written
        && error.kind() != std::io::ErrorKind::BrokenPipe
    {
        eprintln!("scps: cannot write the report: {error}");
    }
}

/// Exit status of `scps send` and `scps recv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Everything arrived and checked.
    Complete,
    /// The transfer failed or did not verify (reported).
    Failed,
    /// Ctrl-C.
    Interrupted,
}

/// The exit status: 0 complete, 1 failed (reported), 2 could not run
/// (bad input, no such device...), 130 interrupted.
pub fn exit(outcome: anyhow::Result<Outcome>) -> std::process::ExitCode {
    std::process::ExitCode::from(match outcome {
        Ok(Outcome::Complete) => 0,
        Ok(Outcome::Failed) => 1,
        Ok(Outcome::Interrupted) => 130,
        Err(error) => {
            eprintln!("scps: {}", scps_transfer::error_text::error_text(&error));
            2
        }
    })
}
