//! `scps send` and `scps recv`: the test applications of the Iridium paper
//! (message streams) and a ttcp-like bulk transfer, over our stack (routed
//! through a TUN device, or UDP-encapsulated) or over the kernel's TCP, so
//! that one tool measures both.
//!
//! On the wire, after the connection opens (see `hello.rs` for the exact
//! formats):
//!
//! - the sender writes a hello line naming the workload;
//! - bulk: the sender writes the bytes, then their SHA-256; the receiver
//!   checks the digest;
//! - messages: each end writes timestamped messages at its offered rate for
//!   the test window, then an end marker;
//! - the receiver then writes its report (one JSON line, the fields of
//!   `--json`) and closes, so the sender prints both ends' figures; the
//!   sender closes last (its kernel socket, if any, still open, still
//!   tells its retransmissions: see `scps_net::tcp_info`).

pub mod args;
pub mod bulk;
pub mod conn;
pub mod files;
pub mod hello;
pub mod idle;
pub mod kernel_congestion;
pub mod messages;
pub mod progress;
pub mod report;
pub mod stack;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;

/// Wall-clock time since the Unix epoch, in nanoseconds: the messages'
/// send timestamps. Latency across two hosts is only as good as their
/// clock synchronisation; within one host (namespaces) it is exact.
pub fn wall_nanos() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

/// Ctrl-C (SIGINT), from the moment this is called on. A
/// `tokio::signal::ctrl_c()` future per `select!` would only listen from
/// its first poll, and a signal that came before (while a busy transfer
/// was still being polled, say) would be lost.
pub fn interrupts() -> anyhow::Result<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .context("cannot listen for Ctrl-C (SIGINT)")
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
            eprintln!("scps: {error:#}");
            2
        }
    })
}
