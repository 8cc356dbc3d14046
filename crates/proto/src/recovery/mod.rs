//! Loss detection and recovery: RTT estimation and the RTO (RFC 6298), the
//! SACK scoreboard (RFC 6675), and the recovery phase with NewReno's rules
//! for connections without SACK (RFC 6582).

pub(crate) mod prr;
pub(crate) mod reordering;
pub mod rtt;
pub(crate) mod scoreboard;

use prr::Prr;
use reordering::SenderReordering;

/// Where the sender stands with respect to loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// No loss being repaired.
    Open,
    /// Fast recovery (RFC 5681 3.2, RFC 6582, RFC 6675 section 5) until the
    /// cumulative ACK reaches `recovery_point`. `reduced`: the congestion
    /// controller cut its window for it (not when losses are put down to
    /// corruption).
    Fast { recovery_point: u64, reduced: bool },
    /// Retransmitting after a timeout, in slow start, until the cumulative
    /// ACK reaches `recovery_point` (RFC 6582 section 4.2 uses the same
    /// point to avoid a spurious fast retransmit after a timeout).
    Timeout { recovery_point: u64 },
}

/// Loss recovery state of one connection.
#[derive(Debug, Clone)]
pub(crate) struct Recovery {
    pub(crate) phase: Phase,
    /// Duplicate ACKs since the cumulative ACK last moved (RFC 5681 2; with
    /// SACK, ACKs that SACK new data, RFC 6675 section 2).
    pub(crate) dup_acks: u32,
    /// RFC 6582 "recover": fast retransmit is entered only when the
    /// cumulative ACK is above it.
    pub(crate) recover: u64,
    /// Window inflation of RFC 6582 3.2 steps 3-5, for connections without
    /// SACK; may go below zero after deflation.
    pub(crate) inflation: i64,
    /// RFC 6675 HighRxt for NextSeg rule 3: the end of the highest segment
    /// retransmitted by that rule in this recovery.
    pub(crate) high_rule3: u64,
    /// The first partial ACK of this recovery has reset the timer (RFC 6582
    /// section 3.2 step 5, the "impatient" variant).
    pub(crate) partial_ack_seen: bool,
    /// Proportional rate reduction of a SACK fast recovery that cut the
    /// window (RFC 6937); `None` otherwise.
    pub(crate) prr: Option<Prr>,
    /// The duplicate-ACK threshold the path's reordering calls for.
    pub(crate) reordering: SenderReordering,
}

impl Recovery {
    pub(crate) fn new() -> Recovery {
        Recovery {
            phase: Phase::Open,
            dup_acks: 0,
            recover: 0,
            inflation: 0,
            high_rule3: 0,
            partial_ack_seen: false,
            prr: None,
            reordering: SenderReordering::default(),
        }
    }

    pub(crate) fn in_fast_recovery(&self) -> bool {
        matches!(self.phase, Phase::Fast { .. })
    }

    /// Starts fast recovery: everything sent so far must be acknowledged
    /// before it ends.
    pub(crate) fn enter_fast(&mut self, highest_sent: u64, reduced: bool) {
        self.phase = Phase::Fast {
            recovery_point: highest_sent,
            reduced,
        };
        self.recover = highest_sent;
        self.high_rule3 = 0;
        self.partial_ack_seen = false;
        self.prr = None;
    }

    pub(crate) fn enter_timeout(&mut self, highest_sent: u64) {
        self.phase = Phase::Timeout {
            recovery_point: highest_sent,
        };
        self.recover = highest_sent;
        self.dup_acks = 0;
        self.inflation = 0;
        self.prr = None;
    }

    /// Leaves recovery if the cumulative ACK `una` covers the recovery
    /// point; returns the phase that ended.
    pub(crate) fn end_if_covered(&mut self, una: u64) -> Option<Phase> {
        let point = match self.phase {
            Phase::Open => return None,
            Phase::Fast { recovery_point, .. } | Phase::Timeout { recovery_point } => recovery_point,
        };
        if una < point {
            return None;
        }
        let ended = self.phase;
        self.phase = Phase::Open;
        self.inflation = 0;
        self.dup_acks = 0;
        self.prr = None;
        Some(ended)
    }

    /// Whether a fast retransmit may start: not already recovering and the
    /// cumulative ACK covers everything sent when the last recovery began
    /// (RFC 6582 section 3.2 step 2; `recover` here is the offset after the
    /// highest byte sent, so "covers more than recover" is `una >= recover`).
    pub(crate) fn may_enter_fast(&self, una: u64) -> bool {
        self.phase == Phase::Open && una >= self.recover
    }
}
