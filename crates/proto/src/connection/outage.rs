//! Link outages (docs/spec/scps-tp-options.md, "Link outages"): when the link layer says
//! the link is down, or when retransmission timeouts in a row show it, the
//! connection stops backing off and stops sending data, probes at a fixed
//! interval, and is kept however long the outage lasts. The first
//! acknowledgment afterwards resumes sending at the rate before the outage,
//! not from slow start; what was in flight when the link went is resent.
//!
//! A rate-based sender thus never retransmits blindly at its full rate
//! into a dead link, as UDP tunnels that do have flooded links at many
//! times their nominal rate.

use super::Connection;
use super::timers::Timer;
use crate::time::Instant;

/// An outage in progress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Outage {
    pub(crate) since: Instant,
    /// Declared by the link layer rather than inferred from timeouts.
    pub(crate) signalled: bool,
}

impl Connection {
    /// Whether the connection is holding its data back for an outage.
    pub fn in_outage(&self) -> bool {
        self.outage.is_some()
    }

    /// The link layer says the link is down.
    pub fn link_down(&mut self, now: Instant) {
        if !self.state.is_synchronized() || self.outage.is_some() {
            return;
        }
        if self.consecutive_timeouts == 0 {
            self.window_before_timeouts = Some((self.cc.window(), self.cc.ssthresh()));
        }
        self.enter_outage(now, true);
    }

    /// The link layer says the link is back: probe at once; sending resumes
    /// when the probe is answered.
    pub fn link_up(&mut self, now: Instant) {
        if self.outage.is_some() {
            self.send_outage_probe(now);
        }
    }

    /// Enters outage handling. `window_before_timeouts` holds the window
    /// to resume at.
    pub(crate) fn enter_outage(&mut self, now: Instant, signalled: bool) {
        self.outage = Some(Outage {
            since: now,
            signalled,
        });
        self.stats.outages += 1;
        self.events.push_back(super::Event::OutageStarted { signalled });
        self.force_retransmit = false;
        self.snack_owed = 0;
        if self.timers.is_armed(Timer::Retransmit) || !self.board.is_empty() {
            self.timers
                .set(Timer::Retransmit, now + self.config.outage.probe_interval);
        }
    }

    /// The retransmission timer during an outage: one probe (the oldest
    /// unacknowledged segment, or a keepalive-like segment that draws an
    /// ACK), no backoff, no giving up.
    pub(crate) fn send_outage_probe(&mut self, now: Instant) {
        if self.board.mark_front_lost(false) || self.board.has_lost_pending() {
            self.force_retransmit = true;
        } else {
            self.keepalive_due = true;
        }
        self.stats.outage_probes += 1;
        self.timers
            .set(Timer::Retransmit, now + self.config.outage.probe_interval);
    }

    /// Something acceptable arrived from the peer during an outage: the
    /// link is back. Everything unacknowledged and not SACKed goes again,
    /// at the window from before the outage.
    pub(crate) fn end_outage(&mut self, now: Instant) {
        if self.outage.take().is_none() {
            return;
        }
        self.events.push_back(super::Event::OutageEnded);
        if let Some((window, ssthresh)) = self.window_before_timeouts.take() {
            self.cc.restore(window, ssthresh);
        }
        self.consecutive_timeouts = 0;
        self.stalled_since = None;
        self.rtt.reset_backoff();
        if !self.board.is_empty() {
            self.board.mark_all_lost();
            self.recovery.enter_timeout(self.snd.nxt);
            self.force_retransmit = true;
            self.timers.set(Timer::Retransmit, now + self.rtt.rto());
        }
    }
}
