//! Loss attribution (docs/spec/scps-tp-options.md, "The default source of
//! loss" and "Corruption experienced, kind 23"): whether the losses a sender sees come from
//! congestion, so that it must slow down, or from corruption, so that it
//! must only repair them. Each route has a default; the peer can say that
//! it is experiencing corruption with option kind 23, which holds for two
//! round trips or until it says so again.

use std::time::Duration;

use super::Connection;
use crate::config::LossSource;
use crate::time::Instant;

impl Connection {
    /// Whether losses seen now are put down to corruption.
    pub(crate) fn losses_are_corruption(&self, now: Instant) -> bool {
        self.config.loss_source == LossSource::Corruption
            || self.corruption_reported_until.is_some_and(|until| now < until)
    }

    /// The link layer learnt that packets from the peer arrive corrupted:
    /// tell the peer with the next segment, if it speaks SCPS-TP.
    pub fn corruption_experienced(&mut self) {
        if self.negotiated.scps && self.state.is_synchronized() {
            self.corruption_report_due = true;
            self.ack.immediate = true;
        }
    }

    /// Whether the segment being built carries the option (once per
    /// report).
    pub(crate) fn take_corruption_report(&mut self) -> bool {
        std::mem::take(&mut self.corruption_report_due)
    }

    /// The peer reported corruption: losses are corruption for two round
    /// trips from now.
    pub(crate) fn on_corruption_reported(&mut self, now: Instant) {
        if !self.negotiated.scps {
            return;
        }
        let rtt = self.rtt.srtt().unwrap_or(self.rtt.rto());
        self.corruption_reported_until = Some(now + rtt.saturating_mul(2).max(Duration::from_millis(1)));
        self.stats.corruption_reports_received += 1;
    }
}
