//! One connection of a receiver, served to its end and reported; reset
//! instead on a failure (so that the sender learns) or on Ctrl-C.

use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use scps_workload::idle::IdleRead;
use scps_workload::report::Report;
use tokio::io::AsyncRead;

use super::session;
use crate::bundle::bundle_figures;
use crate::conn::Conn;
use crate::error_text::error_text;
use crate::progress::Counted;
use crate::{News, Tell};

/// How every connection is served.
pub struct Serving {
    /// The label of the path the stack runs over.
    pub path: &'static str,
    pub raw: bool,
    pub output: Option<PathBuf>,
    pub hello_timeout: Duration,
    pub idle_timeout: Duration,
    /// Our endpoint's counters, for each report's drops.
    pub endpoint: Option<scps_net::EndpointWatch>,
    /// Over a bundle: its channels, for each report.
    pub bundle: Option<scps_net::BundleMonitor>,
    /// Where each report goes.
    pub tell: Tell,
}

/// Serves one connection to its end and tells its report; on `stop`
/// (Ctrl-C) resets it instead, reporting how far it came. Returns whether
/// it failed.
pub async fn serve(
    conn: Conn,
    stack: String,
    serving: Arc<Serving>,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> anyhow::Result<bool> {
    let accepted = Instant::now();
    let abort = conn.abort_handle()?;
    let mut report = Report::start("recv", serving.path, stack, conn.peer());
    // The data read, for the report of a transfer that fails.
    let read = Arc::new(AtomicU64::new(0));
    // Held outside the select, so that on Ctrl-C the reset goes first
    // (dropped first, the connection would close on its own terms).
    let output = serving.output.as_deref();
    let reading = Reading {
        idle_timeout: serving.idle_timeout,
        read: read.clone(),
    };
    let tell = &serving.tell;
    let mut served = if serving.raw {
        Box::pin(session::serve_raw(conn, &mut report, output, reading, tell))
            as Pin<Box<dyn Future<Output = _> + Send>>
    } else {
        Box::pin(session::serve(
            conn,
            &mut report,
            output,
            serving.hello_timeout,
            reading,
            tell,
        ))
    };
    let failure = tokio::select! {
        result = &mut served => {
            drop(served);
            let failure = result.err().map(|err| error_text(&err));
            if failure.is_some() {
                // Stop the sender too: it learns by a reset.
                abort.abort();
            }
            failure
        }
        _ = stop.wait_for(|stop| *stop) => {
            abort.abort();
            drop(served);
            Some("interrupted: the connection was reset".to_owned())
        }
    };
    if let Some(failure) = failure {
        report.error = Some(failure);
        // What got through, and over what time: an interrupted transfer's
        // report says how far it came.
        report.set_bytes_before_failure(read.load(Ordering::Relaxed));
        if report.duration_s == 0.0 {
            report.set_moved(report.bytes, accepted);
        }
    }
    report.set_cpu();
    report.endpoint_drops = serving.endpoint.as_ref().map(|endpoint| {
        endpoint
            .stats()
            .drops
            .into_iter()
            .map(|(cause, n)| (cause.to_owned(), n))
            .collect()
    });
    report.bundle = serving.bundle.as_ref().map(bundle_figures);
    let failed = report.failed();
    tell(News::Report(Box::new(report)));
    Ok(failed)
}

/// How a connection's data is read: given up after `idle_timeout` without
/// a byte, and counted into `read`.
pub struct Reading {
    idle_timeout: Duration,
    read: Arc<AtomicU64>,
}

impl Reading {
    pub fn wrap<R: AsyncRead + Unpin>(self, inner: R) -> Counted<IdleRead<R>> {
        Counted::new(IdleRead::new(inner, self.idle_timeout), self.read)
    }
}
