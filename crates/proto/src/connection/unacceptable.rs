//! Answers to segments that fail the acceptability tests, bounded so that
//! they cannot feed a loop.
//!
//! RFC 9293 3.10.7.4 answers an unacceptable segment with an ACK, and RFC
//! 5961 answers a RST or SYN inside the window with a "challenge" ACK.
//! Two ends that disagree about the sequence space (one took a forged
//! segment the other never sent) answer each other's answers for ever:
//! an ACK storm. Linux bounds this with `tcp_invalid_ratelimit` (one
//! answer per 500 ms per connection to segments without data) and
//! `tcp_challenge_ack_limit` (a global budget per second); we do both,
//! the global budget being the endpoint's ([`ANSWERS_PER_SECOND`]).
//!
//! A segment carrying data is always answered: it is not part of an ACK
//! loop, and its sender may be retransmitting because our ACKs were lost.
//! Nor is an old duplicate by its timestamp (RFC 7323's PAWS): what
//! reordering or a retransmission brings late. Our answer carries our
//! newest timestamp, which the peer takes, so it cannot feed a loop; and
//! on a path that reorders (a bundle striped round-robin) each ACK
//! overtaken by a later one is one, and the answers are what the two ends
//! exchanged before the bounds (with one answer per 500 ms instead, CUBIC
//! over circuits of 0.8 to 2 s resent 133 kB of 2 MB for reordering
//! rather than 4 kB). These two count against the endpoint's budget only.
//!
//! Bounding the answers stops the storm but leaves the connection stuck:
//! the peer's ACKs acknowledge data we never sent, and every segment of
//! it is dropped. That cannot happen on a connection in step (SND.NXT
//! never moves back here), so after [`DESYNC_LIMIT`] such segments in a
//! row the connection is reset, with the peer's own ACK number as the
//! reset's sequence number (`<SEQ=SEG.ACK><CTL=RST>`, the form RFC 9293
//! uses for an unacceptable ACK before synchronization): the peer's
//! RCV.NXT, which it accepts as an exact match (RFC 5961 3.2). Both ends
//! then end the connection and the applications learn it by a reset.
//! While it counts them, our answers are not held to the interval, so
//! that the exchange that shows the ends out of step ends in the reset
//! even on a link of no delay (where the interval would otherwise stop it
//! after one answer each way, leaving the connection stuck).

use std::time::Duration;

use scps_node::PerSecond;

use super::{Connection, ConnectionError};
use crate::time::Instant;
use crate::wire::TcpRepr;

/// At most one answer to segments without data in this interval, per
/// connection (Linux's `tcp_invalid_ratelimit` default).
pub(crate) const ANSWER_INTERVAL: Duration = Duration::from_millis(500);

/// Answers to unacceptable segments the endpoint sends per second, all
/// connections together (Linux's `tcp_challenge_ack_limit` default).
pub const ANSWERS_PER_SECOND: u32 = 1000;

/// Segments in a row acknowledging data never sent before the connection
/// is deemed desynchronized and reset: the peer's ACK of the forged data,
/// and its answer to ours (on a link of no delay the peer's interval lets
/// no more through).
pub const DESYNC_LIMIT: u32 = 2;

/// The state of the answers; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct Answers {
    /// When a segment without data was last answered.
    answered_at: Option<Instant>,
    /// The ACK due now answers an unacceptable segment: the endpoint's
    /// budget may withdraw it.
    pending: bool,
    /// Segments in a row whose ACK acknowledged data never sent.
    acks_of_unsent: u32,
    /// Answers not sent for the interval or the endpoint's budget.
    pub(crate) suppressed: u64,
}

/// The endpoint's budget of answers, shared by its connections.
pub(crate) fn answer_budget() -> PerSecond {
    PerSecond::new(ANSWERS_PER_SECOND)
}

impl Connection {
    /// Counts a segment that failed the acceptability tests and answers it
    /// with an ACK, if the bounds above allow (a RST is never answered).
    pub(super) fn reject(&mut self, now: Instant, seg: &TcpRepr<'_>) {
        self.stats.segments_rejected += 1;
        if !seg.flags.rst() {
            self.answer_unacceptable(now, seg);
        }
    }

    /// Counts an old duplicate by its timestamp (RFC 7323 5.3 R1) and
    /// answers it, within the endpoint's budget only (see the module's
    /// documentation).
    pub(super) fn reject_old_duplicate(&mut self, seg: &TcpRepr<'_>) {
        self.stats.segments_rejected += 1;
        if !seg.flags.rst() && !self.ack.immediate {
            self.answers.pending = true;
            self.ack.immediate = true;
        }
    }

    /// Owes the peer an ACK telling it where we are, in answer to `seg`
    /// (an unacceptable segment, or a RST or SYN inside the window).
    pub(super) fn answer_unacceptable(&mut self, now: Instant, seg: &TcpRepr<'_>) {
        if self.ack.immediate {
            // An ACK goes out anyway.
            return;
        }
        let carries_data = !seg.payload.is_empty() && !seg.flags.syn();
        // While the peer acknowledges data never sent, each answer draws
        // the peer's next, which counts towards the reset: bounded by
        // [`DESYNC_LIMIT`], not by the interval (the peer's own interval
        // paces the exchange).
        let probing_desync = self.answers.acks_of_unsent > 0;
        if !carries_data && !probing_desync {
            if self
                .answers
                .answered_at
                .is_some_and(|at| now.saturating_since(at) < ANSWER_INTERVAL)
            {
                self.answers.suppressed += 1;
                return;
            }
            self.answers.answered_at = Some(now);
            self.answers.pending = true;
        }
        self.ack.immediate = true;
    }

    /// `seg`, acceptable by its sequence number, acknowledges data never
    /// sent: answered as RFC 9293 asks, and after [`DESYNC_LIMIT`] in a
    /// row the connection is reset.
    pub(super) fn ack_of_unsent(&mut self, now: Instant, seg: &TcpRepr<'_>) {
        self.answers.acks_of_unsent += 1;
        if self.answers.acks_of_unsent < DESYNC_LIMIT {
            self.reject(now, seg);
            return;
        }
        self.stats.segments_rejected += 1;
        self.reply_reset(seg.ack, None);
        self.close_with(
            now,
            Some(ConnectionError::Desynchronized {
                acks: self.answers.acks_of_unsent,
            }),
        );
    }

    /// An ACK within what we sent arrived: the two ends are in step.
    pub(super) fn ack_in_step(&mut self) {
        self.answers.acks_of_unsent = 0;
    }

    /// Whether the ACK due now answers an unacceptable segment (asked once
    /// per segment handed in, for the endpoint's budget).
    pub(crate) fn take_unacceptable_answer(&mut self) -> bool {
        std::mem::take(&mut self.answers.pending)
    }

    /// The endpoint's budget is spent: the answer is not sent.
    pub(crate) fn withdraw_unacceptable_answer(&mut self) {
        self.ack.immediate = false;
        self.answers.suppressed += 1;
    }
}
