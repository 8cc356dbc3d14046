//! Reusing a four-tuple that a closed connection still holds in
//! TIME-WAIT, so that a gateway carrying thousands of short connections
//! a second is not held up by 2 MSL per tuple:
//!
//! - **a SYN from the peer** (RFC 6191): a new incarnation is taken at
//!   once when the SYN cannot belong to the old one, its timestamp newer
//!   than the last one seen there (or, equal, with a sequence number past
//!   the old one's last), or, without timestamps, its sequence number past
//!   the old one's last;
//! - **an open of ours** to the same tuple: once the old connection has
//!   been in TIME-WAIT for [`REUSE_AFTER`], its timestamps' clock has moved
//!   on (a millisecond tick, and the offset of a tuple never changes), so
//!   the peer, if it still holds the tuple in TIME-WAIT, takes the new SYN
//!   by the rule above.
//!
//! Either way only a connection its application has released gives way:
//! one still held keeps its tuple until it is released or TIME-WAIT ends.

use std::time::Duration;

use super::timers::Timer;
use super::{Connection, State};
use crate::seq::{to_wire, ts_before};
use crate::time::Instant;
use crate::wire::TcpRepr;

/// How long an open of ours waits before it reuses a tuple in TIME-WAIT:
/// the timestamps' clock has ticked many times by then (Linux's
/// `tcp_tw_reuse` waits as long).
pub const REUSE_AFTER: Duration = Duration::from_secs(1);

impl Connection {
    /// Whether `syn`, from the peer of this connection's tuple, opens a new
    /// connection in place of this one (RFC 6191 section 2): only while
    /// this one is in TIME-WAIT.
    pub fn yields_to_syn(&self, syn: &TcpRepr<'_>) -> bool {
        if self.state != State::TimeWait
            || !self.released
            || !syn.flags.syn()
            || syn.flags.ack()
            || syn.flags.rst()
        {
            return false;
        }
        // Sequence numbers compare modulo 2^32 as timestamps do.
        let seq_past_old = ts_before(to_wire(self.rcv.irs, self.rcv.nxt()), syn.seq);
        let new_timestamps = syn.options.timestamps.filter(|_| self.config.timestamps);
        match (self.negotiated.timestamps, new_timestamps) {
            (true, Some(ts)) => {
                ts_before(self.ts.recent, ts.tsval) || (ts.tsval == self.ts.recent && seq_past_old)
            }
            (false, Some(_)) => true,
            (_, None) => seq_past_old,
        }
    }

    /// Whether an open of ours may take this connection's tuple: it has
    /// been in TIME-WAIT for [`REUSE_AFTER`] at `now`.
    pub fn yields_to_open(&self, now: Instant) -> bool {
        let Some(ends) = self.timers.get(Timer::TimeWait) else {
            return false;
        };
        let entered = Instant::from_nanos(
            ends.as_nanos()
                .saturating_sub(self.config.time_wait.as_nanos() as u64),
        );
        self.state == State::TimeWait && self.released && now.saturating_since(entered) >= REUSE_AFTER
    }
}
