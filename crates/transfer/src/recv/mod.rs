//! A receiver: accepts connections, serves each (the workload its sender's
//! hello names, or plain bytes) and reports it, up to a limit at once,
//! until Ctrl-C or, serving once, the first connection's end.

mod connection;
mod session;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::bail;
use scps_workload::files;
use tokio::signal::unix::Signal;

use crate::bundle::bundle_figures;
use crate::{News, Stack, Tell};

use connection::Serving;

/// How a receiver serves.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The port to accept connections on (0: one the system chooses).
    pub port: u16,
    /// Plain bytes from any TCP client: no hello, no digest, no report
    /// back.
    pub raw: bool,
    /// Where a bulk transfer's bytes are kept: the file appears only once
    /// complete and verified.
    pub output: Option<PathBuf>,
    /// Connections served at once; one more is reset at once.
    pub max_connections: u16,
    /// A connection whose sender has not named its workload this long
    /// after it opened is reset.
    pub hello_timeout: Duration,
    /// A connection on which nothing arrives this long is reset.
    pub idle_timeout: Duration,
    /// Serve one connection, then end with its status.
    pub once: bool,
}

/// How a receiver ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    /// Serving once, the connection completed.
    Complete,
    /// Serving once, the connection failed (its report says why).
    Failed,
    /// Interrupted (Ctrl-C); `reset` connections were being served, and
    /// were reset with no partial file kept.
    Interrupted { reset: usize },
}

/// Serves connections on `stack` until `interrupt` (Ctrl-C) or, with
/// `once`, the first connection's end, telling `tell` where it listens
/// and each connection's report.
pub async fn serve(
    stack: &Stack,
    options: &ServeOptions,
    interrupt: &mut Signal,
    tell: &Tell,
) -> anyhow::Result<Served> {
    let acceptor = stack.listen(options.port)?;
    // Scripts (and the tests) read this first, to learn the ports.
    tell(News::Listening {
        path: stack.path(),
        port: acceptor.port(),
        udp: stack.udp_addr(),
        channels: stack.bundle().as_ref().map(bundle_figures),
    });
    if let Some(output) = &options.output {
        for stale in files::remove_stale_partials(output) {
            tell(News::StaleRemoved(stale));
        }
    }
    let serving = Arc::new(Serving {
        path: stack.path(),
        raw: options.raw,
        output: options.output.clone(),
        hello_timeout: options.hello_timeout,
        idle_timeout: options.idle_timeout,
        endpoint: stack.watch(),
        bundle: stack.bundle(),
        tell: tell.clone(),
    });
    let slots = Arc::new(tokio::sync::Semaphore::new(usize::from(options.max_connections)));
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let mut connections = tokio::task::JoinSet::new();
    let served = loop {
        let conn = tokio::select! {
            conn = acceptor.accept() => conn?,
            _ = interrupt.recv() => break None,
            // Reap served connections as they end.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tell(News::Refused {
                peer: conn.peer(),
                serving: options.max_connections,
            });
            conn.abort_handle()?.abort();
            continue;
        };
        let label = stack.label_of(&conn);
        let served = connection::serve(conn, label, serving.clone(), stopped.clone());
        connections.spawn(async move {
            let _slot = slot;
            served.await
        });
        if options.once {
            break tokio::select! {
                done = connections.join_next() => match done {
                    Some(Ok(Ok(false))) | None => Some(Served::Complete),
                    Some(Ok(Ok(true))) => Some(Served::Failed),
                    Some(Ok(Err(error))) => return Err(error),
                    Some(Err(error)) => bail!("serving the connection stopped: {error}"),
                },
                _ = interrupt.recv() => None,
            };
        }
    };
    Ok(match served {
        Some(served) => served,
        None => {
            stop.send_replace(true);
            let reset = connections.len();
            while connections.join_next().await.is_some() {}
            Served::Interrupted { reset }
        }
    })
}
