//! Soft errors (RFC 1122 4.2.3.9, RFC 5461): a destination-unreachable
//! report about the peer does not end a connection by itself (the route
//! may come back), but a peer that keeps failing is given up sooner than
//! its retransmissions alone would: once several retransmission timeouts
//! since the peer last acknowledged anything each followed such a report,
//! the connection ends with
//! [`ConnectionError::Unreachable`](super::ConnectionError::Unreachable)
//! (a sender whose receiver was killed once retransmitted for 11 minutes
//! into ICMP port-unreachables).

use super::Connection;

/// Retransmission timeouts without progress, each after an unreachable
/// report, that end the connection. Not necessarily in a row: routers
/// rate-limit their ICMP (Linux sends a host about one a second), so
/// some retransmissions draw none.
pub(crate) const GIVE_UP_AFTER: u32 = 3;

#[derive(Debug, Default)]
pub(crate) struct SoftErrors {
    /// A report arrived since the last retransmission timeout.
    reported: bool,
    /// Timeouts since the last progress that followed a report.
    failing: u32,
}

impl SoftErrors {
    /// At a retransmission timeout: the timeouts since the last progress
    /// that followed a report, if they are enough to give up.
    pub(crate) fn on_timeout(&mut self) -> Option<u32> {
        self.failing += u32::from(self.reported);
        self.reported = false;
        (self.failing >= GIVE_UP_AFTER).then_some(self.failing)
    }

    /// The peer acknowledged something: it is reachable after all.
    pub(crate) fn progress(&mut self) {
        self.failing = 0;
        self.reported = false;
    }
}

impl Connection {
    /// The network reports the peer unreachable (what a path learns of an
    /// ICMP destination-unreachable, without the segment it quoted).
    pub fn report_unreachable(&mut self) {
        self.soft_errors.reported = true;
    }

    /// A destination-unreachable report quoting our segment with sequence
    /// number `seq`: taken only if that names data in flight, from the
    /// oldest unacknowledged byte to the next to send (RFC 5927 4.1), so
    /// that a forged report must guess the sequence space as well as the
    /// addresses. Returns whether it was taken.
    pub fn report_unreachable_quoting(&mut self, seq: u32) -> bool {
        let una = crate::seq::to_wire(self.snd.iss, self.snd.una);
        let nxt = crate::seq::to_wire(self.snd.iss, self.snd.nxt);
        let in_flight = seq.wrapping_sub(una) <= nxt.wrapping_sub(una);
        if in_flight {
            self.report_unreachable();
        }
        in_flight
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeouts_until_given_up(reported_before: impl Fn(u32) -> bool) -> Option<u32> {
        let mut errors = SoftErrors::default();
        (1..=20).find(|&timeout| {
            errors.reported = reported_before(timeout);
            errors.on_timeout().is_some()
        })
    }

    #[test]
    fn a_peer_that_keeps_failing_is_given_up_at_its_third_report() {
        assert_eq!(timeouts_until_given_up(|_| true), Some(GIVE_UP_AFTER));
        // Timeouts without a report (a rate-limited router) do not count.
        assert_eq!(timeouts_until_given_up(|t| t != 2), Some(GIVE_UP_AFTER + 1));
        assert_eq!(timeouts_until_given_up(|t| t % 2 == 0), Some(2 * GIVE_UP_AFTER));
        assert_eq!(timeouts_until_given_up(|_| false), None);
    }

    #[test]
    fn progress_forgets_the_reports() {
        let mut errors = SoftErrors::default();
        for _ in 0..GIVE_UP_AFTER - 1 {
            errors.reported = true;
            assert_eq!(errors.on_timeout(), None);
        }
        errors.progress();
        errors.reported = true;
        assert_eq!(errors.on_timeout(), None, "counted afresh");
    }
}
