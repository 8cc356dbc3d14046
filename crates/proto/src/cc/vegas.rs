//! TCP Vegas (Brakmo and Peterson, "TCP Vegas: end to end congestion
//! avoidance on a global Internet", IEEE JSAC 1995), the delay-based
//! controller of SCPS-TP (docs/spec/scps-tp-options.md, "Congestion
//! control, by name").
//!
//! Once per round trip the sender compares the rate it expects with the
//! window it has (window / base RTT) and the rate it gets (window / RTT):
//! the difference times the base RTT estimates the segments it has queued
//! in the network. Fewer than alpha: grow by one segment; more than beta:
//! shrink by one; slow start ends when more than gamma are queued. Losses
//! are not needed to find the path's capacity, which is why Vegas does
//! well where losses come from corruption.

use std::time::Duration;

use super::{AckEvent, CongestionAlgorithm, CongestionControl, half_flight, slow_start_increase};
use crate::config::VegasParams;
use crate::time::Instant;

#[derive(Debug, Clone)]
pub struct Vegas {
    cwnd: u64,
    ssthresh: u64,
    params: VegasParams,
    /// The current round: when it ends, and the smallest delivery RTT
    /// sampled in it.
    round_end: Option<Instant>,
    round_min_rtt: Option<Duration>,
}

impl Vegas {
    pub fn new(initial_window: u64, params: VegasParams) -> Vegas {
        Vegas {
            cwnd: initial_window,
            ssthresh: u64::MAX,
            params,
            round_end: None,
            round_min_rtt: None,
        }
    }

    /// Segments the window keeps queued in the network, by Vegas' estimate.
    fn queued_segments(&self, rtt: Duration, base_rtt: Duration, smss: u64) -> f64 {
        let rtt = rtt.as_secs_f64();
        if rtt <= 0.0 {
            return 0.0;
        }
        let window = self.cwnd as f64 / smss as f64;
        window * (rtt - base_rtt.as_secs_f64()).max(0.0) / rtt
    }

    /// The once-per-round adjustment.
    fn end_round(&mut self, rtt: Duration, base_rtt: Duration, ack: &AckEvent) {
        let queued = self.queued_segments(rtt, base_rtt, ack.smss);
        let smss = ack.smss;
        if self.cwnd < self.ssthresh {
            if queued > self.params.gamma {
                // Slow start overshot: stay here, grow linearly from now on.
                self.ssthresh = self.cwnd;
            }
            return;
        }
        if queued < self.params.alpha && ack.cwnd_limited {
            self.cwnd += smss;
        } else if queued > self.params.beta {
            self.cwnd = self.cwnd.saturating_sub(smss).max(2 * smss);
            // Below the threshold would read as slow start again.
            self.ssthresh = self.ssthresh.min(self.cwnd);
        }
    }
}

impl CongestionControl for Vegas {
    fn algorithm(&self) -> CongestionAlgorithm {
        CongestionAlgorithm::Vegas
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        self.ssthresh
    }

    fn on_ack(&mut self, ack: &AckEvent) {
        // The path's delay, not the time the receiver held its ACK: with
        // an ACK every k segments the timestamp sample would include up to
        // k - 1 segment times of it, read as queueing.
        if let Some(sample) = ack.delivery_rtt {
            self.round_min_rtt = Some(self.round_min_rtt.map_or(sample, |m| m.min(sample)));
        }
        if self.cwnd < self.ssthresh && ack.cwnd_limited {
            self.cwnd += slow_start_increase(ack);
        }
        let (Some(srtt), Some(base_rtt)) = (ack.srtt, ack.min_rtt) else {
            return;
        };
        match self.round_end {
            None => self.round_end = Some(ack.now + srtt),
            Some(end) if ack.now >= end => {
                if let Some(rtt) = self.round_min_rtt.take() {
                    self.end_round(rtt, base_rtt, ack);
                }
                self.round_end = Some(ack.now + srtt);
            }
            Some(_) => {}
        }
    }

    /// Vegas cuts the window by a quarter rather than half on a loss found
    /// by duplicate ACKs (Brakmo and Peterson, section 3.1).
    fn on_congestion_event(&mut self, _now: Instant, flight_size: u64, smss: u64) {
        self.ssthresh = (flight_size * 3 / 4).max(2 * smss);
        self.cwnd = self.ssthresh;
        self.round_end = None;
        self.round_min_rtt = None;
    }

    fn on_recovery_end(&mut self, _now: Instant, flight_size: u64, smss: u64) {
        self.cwnd = self.ssthresh.min(flight_size.max(smss) + smss);
    }

    fn on_timeout(&mut self, _now: Instant, flight_size: u64, smss: u64, repeated: bool) {
        if !repeated {
            self.ssthresh = half_flight(flight_size, smss);
        }
        self.cwnd = smss;
        self.round_end = None;
        self.round_min_rtt = None;
    }

    fn on_idle_restart(&mut self, restart_window: u64) {
        self.cwnd = self.cwnd.min(restart_window);
    }

    fn restore(&mut self, window: u64, ssthresh: u64) {
        self.cwnd = window;
        self.ssthresh = ssthresh;
        self.round_end = None;
        self.round_min_rtt = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMSS: u64 = 1000;

    fn ack(at_ms: u64, rtt_ms: u64, base_ms: u64) -> AckEvent {
        AckEvent {
            now: Instant::from_nanos(at_ms * 1_000_000),
            acked: SMSS,
            smss: SMSS,
            srtt: Some(Duration::from_millis(rtt_ms)),
            rtt_sample: Some(Duration::from_millis(rtt_ms)),
            delivery_rtt: Some(Duration::from_millis(rtt_ms)),
            paced: false,
            min_rtt: Some(Duration::from_millis(base_ms)),
            cwnd_limited: true,
            snd_una: 0,
            snd_nxt: 0,
        }
    }

    /// Runs one ACK per 10 ms for `rounds` rounds of 100 ms at a fixed RTT.
    fn run(cc: &mut Vegas, start_ms: u64, rounds: u64, rtt_ms: u64, base_ms: u64) -> u64 {
        let mut t = start_ms;
        for _ in 0..rounds * 10 {
            cc.on_ack(&ack(t, rtt_ms, base_ms));
            t += 10;
        }
        t
    }

    fn in_avoidance(cwnd_segments: u64) -> Vegas {
        let mut cc = Vegas::new(cwnd_segments * SMSS, VegasParams::default());
        cc.ssthresh = cc.cwnd;
        cc
    }

    #[test]
    fn grows_one_segment_per_round_while_little_is_queued() {
        // 20 segments, RTT equal to the base: nothing queued, below alpha.
        let mut cc = in_avoidance(20);
        run(&mut cc, 0, 5, 100, 100);
        // The first round only starts the clock; four rounds end after it.
        assert_eq!(cc.window(), 24 * SMSS);
    }

    #[test]
    fn shrinks_when_more_than_beta_is_queued_and_holds_in_between() {
        // 20 segments with RTT 150 against base 100: 20 * 50/150 = 6.7 > 5,
        // and 19 * 50/150 = 6.3. Rounds end at 150 and 300 ms.
        let mut cc = in_avoidance(20);
        run(&mut cc, 0, 4, 150, 100);
        assert_eq!(cc.window(), 18 * SMSS);
        // 18 segments with RTT 125: 18 * 25/125 = 3.6, between 3 and 5.
        let mut cc = in_avoidance(18);
        run(&mut cc, 0, 4, 125, 100);
        assert_eq!(cc.window(), 18 * SMSS);
    }

    #[test]
    fn the_receivers_ack_hold_is_not_read_as_queueing() {
        // ACKs every 11 segments: the timestamp samples run from the first
        // segment each ACK covers and include the hold (100 ms here), the
        // delivery RTT of the newest segment does not. Nothing is queued.
        let mut cc = in_avoidance(20);
        let mut t = 0;
        for _ in 0..50 {
            cc.on_ack(&AckEvent {
                rtt_sample: Some(Duration::from_millis(200)),
                ..ack(t, 100, 100)
            });
            t += 10;
        }
        assert_eq!(cc.window(), 24 * SMSS, "grows as on a path without the hold");
    }

    #[test]
    fn slow_start_ends_when_gamma_is_exceeded() {
        let mut cc = Vegas::new(10 * SMSS, VegasParams::default());
        // Queues build at once: 10+ segments with RTT twice the base; the
        // first round ends at 200 ms.
        run(&mut cc, 0, 3, 200, 100);
        assert!(cc.ssthresh() < u64::MAX, "slow start left");
        let exited_at = cc.window();
        assert_eq!(cc.ssthresh(), exited_at);
    }

    #[test]
    fn a_loss_costs_a_quarter_and_restore_puts_the_window_back() {
        let mut cc = in_avoidance(40);
        cc.on_congestion_event(Instant::ZERO, 40 * SMSS, SMSS);
        assert_eq!(cc.window(), 30 * SMSS);
        cc.on_timeout(Instant::ZERO, 30 * SMSS, SMSS, false);
        assert_eq!((cc.window(), cc.ssthresh()), (SMSS, 15 * SMSS));
        cc.restore(30 * SMSS, 30 * SMSS);
        assert_eq!(cc.window(), 30 * SMSS);
    }
}
