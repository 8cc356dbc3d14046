//! What happens when a timer expires.

use super::timers::Timer;
use super::{Connection, ConnectionError, State};
use crate::config::Keepalive;
use crate::time::Instant;

impl Connection {
    /// Runs every timer due at `now`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(timer) = self.timers.take_expired(now) {
            match timer {
                Timer::Retransmit => self.on_retransmission_timeout(now),
                Timer::DelayedAck => self.ack.immediate = true,
                Timer::Persist => self.on_persist_timeout(now),
                Timer::Keepalive => self.on_keepalive_timeout(now),
                Timer::TimeWait => self.close_with(now, None),
                // Nothing to do but try sending again.
                Timer::Pacing => {}
                Timer::Snack => self.schedule_snack(now),
            }
        }
    }

    /// RFC 6298 5.4-5.6 and RFC 5681 3.1 (equation 4, the loss window).
    fn on_retransmission_timeout(&mut self, now: Instant) {
        if let Some(timeouts) = self.soft_errors.on_timeout() {
            self.close_with(now, Some(ConnectionError::Unreachable { timeouts }));
            return;
        }
        match self.state {
            State::SynSent | State::SynReceived => {
                let retransmissions = self.handshake.retransmissions;
                if retransmissions >= self.config.max_syn_retransmissions {
                    if self.handshake.passive {
                        self.released = true;
                    }
                    self.close_with(now, Some(ConnectionError::HandshakeTimedOut { retransmissions }));
                    return;
                }
                self.handshake.retransmissions += 1;
                self.rtt.back_off();
                self.handshake.syn_due = true;
            }
            State::Closed | State::TimeWait => {}
            _ => {
                let Some(front) = self.board.front() else {
                    if self.outage.is_some() {
                        self.send_outage_probe(now);
                    }
                    return;
                };
                let stalled_since = *self.stalled_since.get_or_insert(front.sent_at);
                // The user timeout holds in an outage too; the count of
                // retransmissions does not (outage probes never give up).
                let outage = self.outage.is_some();
                if self.user_timeout_passed(now, stalled_since)
                    || (!outage && self.consecutive_timeouts >= self.config.max_retransmissions)
                {
                    let error = ConnectionError::TimedOut {
                        retransmissions: self.consecutive_timeouts,
                        waited: now.saturating_since(stalled_since),
                    };
                    self.close_with(now, Some(error));
                    return;
                }
                if outage {
                    self.send_outage_probe(now);
                    self.cap_at_user_timeout(Timer::Retransmit);
                    return;
                }
                if self.consecutive_timeouts == 0 {
                    self.window_before_timeouts = Some((self.cc.window(), self.cc.ssthresh()));
                }
                self.consecutive_timeouts += 1;
                self.stats.timeouts += 1;
                self.events.push_back(super::Event::Timeout {
                    consecutive: self.consecutive_timeouts,
                });
                let flight = self.snd.nxt - self.snd.una;
                let repeated = self.consecutive_timeouts > 1;
                self.cc.on_timeout(now, flight, self.negotiated.smss, repeated);
                if self.negotiated.snack && self.recovery.dup_acks > 0 {
                    // The receiver is still acknowledging what arrives
                    // beyond the front, and with SNACK it names every hole
                    // it has: only the front segment, whose copies did not
                    // get through in time, is overdue. Going back N would
                    // resend a flight that arrived (RFC 6298 5.4 asks for
                    // the earliest segment only).
                    self.board.mark_front_lost(false);
                } else {
                    if repeated {
                        // Timeouts in a row although the SACKed data would
                        // let the ACK advance: the receiver may have
                        // discarded it (reneged, RFC 2018 section 8), so
                        // resend it all.
                        self.board.forget_sacks();
                    }
                    self.board.mark_all_lost();
                }
                self.recovery.enter_timeout(self.snd.nxt);
                self.force_retransmit = true;
                if self
                    .config
                    .outage
                    .after_timeouts
                    .is_some_and(|n| self.consecutive_timeouts >= n)
                {
                    // This retransmission is the first probe of the outage.
                    self.enter_outage(now, false);
                    self.force_retransmit = true;
                    self.cap_at_user_timeout(Timer::Retransmit);
                    return;
                }
                self.rtt.back_off();
                self.timers.set(Timer::Retransmit, now + self.rtt.rto());
                self.cap_at_user_timeout(Timer::Retransmit);
            }
        }
    }

    /// Whether data unacknowledged since `stalled_since` has outlived the
    /// user timeout.
    fn user_timeout_passed(&self, now: Instant, stalled_since: Instant) -> bool {
        self.config
            .user_timeout
            .is_some_and(|limit| now.saturating_since(stalled_since) >= limit)
    }

    /// Brings `timer` (retransmission or persist) forward to the user
    /// timeout of a connection that has stalled, so that a backed-off
    /// interval does not carry the connection past it.
    pub(crate) fn cap_at_user_timeout(&mut self, timer: Timer) {
        if let Some(limit) = self.config.user_timeout
            && let Some(stalled_since) = self.stalled_since
            && let Some(at) = self.timers.get(timer)
            && at > stalled_since + limit
        {
            self.timers.set(timer, stalled_since + limit);
        }
    }

    /// Time for a window probe, unless the peer has stopped answering them
    /// (RFC 1122 4.2.2.17 keeps the connection only while probes are
    /// acknowledged).
    fn on_persist_timeout(&mut self, now: Instant) {
        let unanswered = self.persist_unanswered;
        let stalled_since = self.stalled_since.unwrap_or(now);
        if unanswered >= self.config.max_retransmissions
            || (unanswered > 0 && self.user_timeout_passed(now, stalled_since))
        {
            let error = ConnectionError::TimedOut {
                retransmissions: unanswered,
                waited: now.saturating_since(self.stalled_since.unwrap_or(now)),
            };
            self.close_with(now, Some(error));
            return;
        }
        if unanswered == 0 {
            self.stalled_since = Some(now);
        }
        self.persist_due = true;
    }

    /// After a segment from the peer: when to probe it next. While data
    /// moves (`carried_data`, with `dead_after`), after half of
    /// `dead_after`; otherwise after keepalive's idle time, if any.
    pub(super) fn arm_keepalive(&mut self, now: Instant, carried_data: bool) {
        if !self.state.is_synchronized() {
            return;
        }
        // Data moves if the peer sent some, or if ours awaits its ACK.
        self.keepalive_busy = (carried_data || !self.board.is_empty()) && self.config.dead_after.is_some();
        match self.keepalive_schedule() {
            Some(probing) => self.timers.set(Timer::Keepalive, now + probing.idle),
            None => self.timers.stop(Timer::Keepalive),
        }
    }

    /// Our data goes out (new, or a window probe's octet): from now on the
    /// peer owes an answer, and under `dead_after` its silence counts from
    /// here if it did not already. Without this, data written after a
    /// quiet spell (or after the peer had acknowledged everything, as a
    /// receiver with a full window does) would wait on the retransmission
    /// count alone, minutes of backed-off timeouts, for a peer that died.
    pub(super) fn await_answer(&mut self, now: Instant) {
        let Some(dead_after) = self.config.dead_after else {
            return;
        };
        if self.keepalive_busy || !self.state.is_synchronized() {
            return;
        }
        self.keepalive_busy = true;
        self.silent_since = now;
        self.keepalive_probes = 0;
        self.timers.set(Timer::Keepalive, now + dead_after / 2);
    }

    /// The probing in force: while data moves, `dead_after`'s (probes
    /// starting at half of it, three a sixth apart, so that the last goes
    /// unanswered at `dead_after`) unless keepalive's gives up sooner;
    /// otherwise keepalive's.
    fn keepalive_schedule(&self) -> Option<Keepalive> {
        let busy = self
            .config
            .dead_after
            .filter(|_| self.keepalive_busy)
            .map(|dead_after| Keepalive {
                idle: dead_after / 2,
                interval: dead_after / 6,
                probes: 3,
            });
        let gives_up_after = |k: &Keepalive| k.idle + k.interval * k.probes;
        match (busy, self.config.keepalive) {
            (Some(busy), Some(idle)) if gives_up_after(&idle) < gives_up_after(&busy) => Some(idle),
            (busy, idle) => busy.or(idle),
        }
    }

    /// RFC 9293 3.8.4 / RFC 1122 4.2.3.6.
    fn on_keepalive_timeout(&mut self, now: Instant) {
        let Some(keepalive) = self.keepalive_schedule() else {
            return;
        };
        if !self.state.is_synchronized() || self.state == State::TimeWait {
            return;
        }
        if !self.board.is_empty() {
            // Data is outstanding: the retransmissions probe the peer,
            // and under `dead_after` its silence ends the connection.
            if let Some(dead_after) = self.config.dead_after.filter(|_| self.keepalive_busy) {
                let waited = now.saturating_since(self.silent_since);
                if waited >= dead_after {
                    let retransmissions = self.consecutive_timeouts;
                    self.close_with(
                        now,
                        Some(ConnectionError::TimedOut {
                            retransmissions,
                            waited,
                        }),
                    );
                    return;
                }
                self.timers.set(Timer::Keepalive, self.silent_since + dead_after);
                return;
            }
            self.timers.set(Timer::Keepalive, now + keepalive.interval);
            return;
        }
        if self.keepalive_probes >= keepalive.probes {
            let probes = self.keepalive_probes;
            self.close_with(now, Some(ConnectionError::KeepaliveTimedOut { probes }));
            return;
        }
        self.keepalive_probes += 1;
        self.keepalive_due = true;
        self.timers.set(Timer::Keepalive, now + keepalive.interval);
    }
}
