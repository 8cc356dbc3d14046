//! Van Jacobson congestion control as RFC 5681 states it: slow start,
//! congestion avoidance, halving on loss; with NewReno's exit from recovery
//! (RFC 6582 section 3.2 step 3).

use super::{AckEvent, CongestionAlgorithm, CongestionControl, half_flight, slow_start_increase};
use crate::time::Instant;

#[derive(Debug, Clone)]
pub struct NewReno {
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acknowledged since the window last grew in congestion
    /// avoidance (RFC 5681 3.1, the byte-counting form of equation 3).
    acked_in_avoidance: u64,
}

impl NewReno {
    pub fn new(initial_window: u64) -> NewReno {
        NewReno {
            cwnd: initial_window,
            // RFC 5681 3.1: "arbitrarily high".
            ssthresh: u64::MAX,
            acked_in_avoidance: 0,
        }
    }
}

impl CongestionControl for NewReno {
    fn algorithm(&self) -> CongestionAlgorithm {
        CongestionAlgorithm::NewReno
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        if !ack.cwnd_limited {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += slow_start_increase(ack);
            return;
        }
        self.acked_in_avoidance += ack.acked;
        if self.acked_in_avoidance >= self.cwnd {
            self.acked_in_avoidance -= self.cwnd;
            self.cwnd += ack.smss;
        }
    }

    fn on_congestion_event(&mut self, _now: Instant, flight_size: u64, smss: u64) {
        self.ssthresh = half_flight(flight_size, smss);
        self.cwnd = self.ssthresh;
        self.acked_in_avoidance = 0;
    }

    fn on_recovery_end(&mut self, _now: Instant, flight_size: u64, smss: u64) {
        // RFC 6582 3.2 step 3, option (1): deflate to ssthresh but no more
        // than one segment above what is in flight, to avoid a burst.
        self.cwnd = self.ssthresh.min(flight_size.max(smss) + smss);
    }

    fn on_timeout(&mut self, _now: Instant, flight_size: u64, smss: u64, repeated: bool) {
        if !repeated {
            self.ssthresh = half_flight(flight_size, smss);
        }
        self.cwnd = smss;
        self.acked_in_avoidance = 0;
    }

    fn on_idle_restart(&mut self, restart_window: u64) {
        self.cwnd = self.cwnd.min(restart_window);
    }

    fn restore(&mut self, window: u64, ssthresh: u64) {
        self.cwnd = window;
        self.ssthresh = ssthresh;
        self.acked_in_avoidance = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMSS: u64 = 1000;

    fn ack(acked: u64) -> AckEvent {
        AckEvent {
            now: Instant::ZERO,
            acked,
            smss: SMSS,
            srtt: None,
            rtt_sample: None,
            delivery_rtt: None,
            paced: false,
            min_rtt: None,
            cwnd_limited: true,
            snd_una: 0,
            snd_nxt: 0,
        }
    }

    #[test]
    fn slow_start_then_one_segment_per_window() {
        let mut cc = NewReno::new(2 * SMSS);
        cc.on_ack(&ack(2 * SMSS));
        assert_eq!(cc.window(), 4 * SMSS);
        cc.on_congestion_event(Instant::ZERO, 8 * SMSS, SMSS);
        assert_eq!((cc.window(), cc.ssthresh()), (4 * SMSS, 4 * SMSS));
        for _ in 0..3 {
            cc.on_ack(&ack(SMSS));
        }
        assert_eq!(cc.window(), 4 * SMSS);
        cc.on_ack(&ack(SMSS));
        assert_eq!(cc.window(), 5 * SMSS, "a window's worth of ACKs adds one segment");
    }

    #[test]
    fn a_stretch_ack_grows_slow_start_by_two_segments_unless_the_sender_paces() {
        let mut cc = NewReno::new(2 * SMSS);
        cc.on_ack(&ack(8 * SMSS));
        assert_eq!(cc.window(), 4 * SMSS, "RFC 3465: at most L = 2 segments");
        let mut cc = NewReno::new(2 * SMSS);
        cc.on_ack(&AckEvent {
            paced: true,
            ..ack(8 * SMSS)
        });
        assert_eq!(cc.window(), 10 * SMSS, "no burst to fear: counted in full");
    }

    #[test]
    fn application_limited_acks_do_not_grow_the_window() {
        let mut cc = NewReno::new(2 * SMSS);
        cc.on_ack(&AckEvent {
            cwnd_limited: false,
            snd_una: 0,
            snd_nxt: 0,
            ..ack(2 * SMSS)
        });
        assert_eq!(cc.window(), 2 * SMSS);
    }

    #[test]
    fn timeout_collapses_to_one_segment_and_halves_the_flight() {
        let mut cc = NewReno::new(10 * SMSS);
        cc.on_timeout(Instant::ZERO, 8 * SMSS, SMSS, false);
        assert_eq!((cc.window(), cc.ssthresh()), (SMSS, 4 * SMSS));
        cc.on_timeout(Instant::ZERO, 8 * SMSS, SMSS, true);
        assert_eq!(
            (cc.window(), cc.ssthresh()),
            (SMSS, 4 * SMSS),
            "held on a repeated timeout"
        );
    }

    #[test]
    fn recovery_exit_avoids_a_burst() {
        let mut cc = NewReno::new(10 * SMSS);
        cc.on_congestion_event(Instant::ZERO, 10 * SMSS, SMSS);
        cc.on_recovery_end(Instant::ZERO, SMSS, SMSS);
        assert_eq!(cc.window(), 2 * SMSS);
        cc.on_congestion_event(Instant::ZERO, 10 * SMSS, SMSS);
        cc.on_recovery_end(Instant::ZERO, 9 * SMSS, SMSS);
        assert_eq!(cc.window(), 5 * SMSS);
    }
}
