//! The test applications of `scps send` and `scps recv` on real byte
//! streams, as a library so that the tools, the bench and the gateway's
//! tests share one definition of each: the Iridium
//! paper's message streams and a ttcp-like bulk transfer, whatever stack
//! carries them (ours or the kernel's TCP).
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
//!
//! The messages themselves, the streams' content and their figures are
//! shared with the simulator (`scps_workload_format`): one format and one
//! computation in virtual time and on real links.

pub mod bulk;
pub mod files;
pub mod hello;
pub mod idle;
pub mod messages;
pub mod report;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Wall-clock time since the Unix epoch, in nanoseconds: the messages'
/// send timestamps. Latency across two hosts is only as good as their
/// clock synchronisation; within one host (namespaces) it is exact.
pub fn wall_nanos() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}
