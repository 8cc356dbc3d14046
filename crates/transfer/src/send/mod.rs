//! A sender: connects to a receiver, runs a workload over the connection
//! and reports it, with the receiver's own report when the workload
//! brings one back.

mod choice;
mod session;

use std::net::SocketAddr;
use std::time::Instant;

use scps_workload::bulk::Source;
use scps_workload::hello::Hello;
use scps_workload::report::Report;
use tokio::signal::unix::Signal;

use crate::bundle::bundle_figures;
use crate::error_text::error_text;
use crate::progress::AckWatch;
use crate::{Stack, Tell};

pub use choice::WorkloadChoice;

/// What a sender sends.
#[derive(Debug, Clone)]
pub enum Workload {
    /// With `both_ways`, the receiver sends as many bytes back at once.
    Bulk { source: Source, both_ways: bool },
    /// Plain bytes to any listener: no hello, no digest, no report back.
    Raw(Source),
    /// A workload its hello names whole: message streams, echo, fetch.
    Named(Hello),
}

/// How a sender ended.
#[derive(Debug)]
pub enum Sent {
    /// The session ran, to its end or to an error its report gives.
    Report(Box<Report>),
    /// Interrupted before the connection was open.
    InterruptedConnecting,
    /// Interrupted during the session: the connection was reset, so that
    /// the receiver knows.
    Interrupted,
}

/// Connects to `to` on `stack` and runs `workload`, until it ends or
/// `interrupt` (Ctrl-C) comes. An error is one before the session: the
/// connection could not be opened.
pub async fn run(
    stack: &Stack,
    to: SocketAddr,
    workload: &Workload,
    interrupt: &mut Signal,
    tell: &Tell,
) -> anyhow::Result<Sent> {
    let start = Instant::now();
    let conn = tokio::select! {
        conn = stack.connect(to) => conn?,
        _ = interrupt.recv() => return Ok(Sent::InterruptedConnecting),
    };
    let mut report = Report::start("send", stack.path(), stack.label_of(&conn), conn.peer());
    let abort = conn.abort_handle()?;
    let acks = AckWatch::start(conn.abort_handle()?);
    // Held outside the select, so that on Ctrl-C the reset goes first: the
    // session, dropped first, would close the connection gracefully, and
    // the receiver could take that FIN for the end of the data.
    let mut running = Box::pin(session::run(conn, workload, &mut report, start, tell));
    tokio::select! {
        result = &mut running => {
            drop(running);
            if let Err(err) = result {
                report.error = Some(error_text(&err));
                report.set_bytes_before_failure(acks.acked(&abort));
                if report.duration_s == 0.0 {
                    report.set_moved(report.bytes, start);
                }
            }
            report.set_cpu();
            report.bundle = stack.bundle().as_ref().map(bundle_figures);
            Ok(Sent::Report(Box::new(report)))
        }
        _ = interrupt.recv() => {
            abort.abort();
            drop(running);
            Ok(Sent::Interrupted)
        }
    }
}
