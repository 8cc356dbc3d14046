//! CUBIC congestion control (RFC 9438), as Linux runs it by default.
//!
//! Windows are kept in bytes; the cubic function is evaluated in segments
//! as the RFC writes it. The initial slow start ends early by HyStart++
//! (RFC 9406), as Linux's CUBIC leaves it by HyStart.

use std::time::Duration;

use super::hystart::{HyStart, Step};
use super::{AckEvent, CongestionAlgorithm, CongestionControl, slow_start_increase};
use crate::time::Instant;

/// RFC 9438 section 5.1: C = 0.4 (segments per second cubed).
const C: f64 = 0.4;
/// RFC 9438 section 4.6: multiplicative decrease factor.
const BETA: f64 = 0.7;
/// RFC 9438 section 4.3: the Reno-friendly additive increase.
const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

#[derive(Debug, Clone)]
pub struct Cubic {
    cwnd: u64,
    ssthresh: u64,
    /// Window before the last reduction, segments (W_max).
    w_max: f64,
    /// The current congestion-avoidance epoch, begun at the first ACK in
    /// congestion avoidance after a reduction.
    epoch: Option<Epoch>,
    /// RFC 9438 4.8: after a timeout, the next epoch starts with K = 0 and
    /// W_max equal to the window at its start.
    after_timeout: bool,
    hystart: HyStart,
}

#[derive(Debug, Clone, Copy)]
struct Epoch {
    start: Instant,
    /// Seconds the cubic function takes to return to W_max (K).
    k: f64,
    /// The Reno-friendly estimate, segments (W_est).
    w_est: f64,
}

impl Cubic {
    pub fn new(initial_window: u64) -> Cubic {
        Cubic {
            cwnd: initial_window,
            ssthresh: u64::MAX,
            w_max: 0.0,
            epoch: None,
            after_timeout: false,
            hystart: HyStart::new(),
        }
    }

    /// RFC 9438 equation (1), segments.
    fn w_cubic(&self, k: f64, t: f64) -> f64 {
        C * (t - k).powi(3) + self.w_max
    }

    fn start_epoch(&mut self, now: Instant, cwnd_segments: f64) -> Epoch {
        if self.after_timeout || self.w_max < cwnd_segments {
            self.w_max = cwnd_segments;
            self.after_timeout = false;
        }
        // RFC 9438 equation (2), with cwnd_epoch the window at the start.
        let k = ((self.w_max - cwnd_segments) / C).cbrt();
        let epoch = Epoch {
            start: now,
            k,
            w_est: cwnd_segments,
        };
        self.epoch = Some(epoch);
        epoch
    }

    fn reduce(&mut self, smss: u64) {
        let cwnd_segments = self.cwnd as f64 / smss as f64;
        // RFC 9438 4.7, fast convergence.
        self.w_max = if cwnd_segments < self.w_max {
            cwnd_segments * (1.0 + BETA) / 2.0
        } else {
            cwnd_segments
        };
        // RFC 9438 4.6 applies beta to cwnd (as Linux does), not to the
        // flight size, which would punish application-limited senders.
        self.ssthresh = ((self.cwnd as f64 * BETA) as u64).max(2 * smss);
        self.epoch = None;
        self.hystart.stop();
    }
}

impl CongestionControl for Cubic {
    fn algorithm(&self) -> CongestionAlgorithm {
        CongestionAlgorithm::Cubic
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
            match self.hystart.on_ack(ack, slow_start_increase(ack)) {
                Step::Grow(increase) => self.cwnd += increase,
                Step::Exit => self.ssthresh = self.cwnd,
            }
            return;
        }
        let smss = ack.smss as f64;
        let cwnd_segments = self.cwnd as f64 / smss;
        let mut epoch = match self.epoch {
            Some(epoch) => epoch,
            None => self.start_epoch(ack.now, cwnd_segments),
        };
        let t = ack.now.saturating_since(epoch.start).as_secs_f64();
        let rtt = ack.srtt.unwrap_or(Duration::from_millis(100)).as_secs_f64();
        let acked_segments = ack.acked as f64 / smss;

        // RFC 9438 4.3: the Reno-friendly estimate; alpha becomes 1 once
        // the estimate passes W_max.
        let alpha = if epoch.w_est >= self.w_max { 1.0 } else { ALPHA };
        epoch.w_est += alpha * acked_segments / cwnd_segments;
        self.epoch = Some(epoch);

        let next = if self.w_cubic(epoch.k, t) < epoch.w_est {
            epoch.w_est
        } else {
            // RFC 9438 4.4 and 4.5: grow towards W_cubic(t + RTT), bounded
            // to between the current window and 1.5 times it.
            let target = self
                .w_cubic(epoch.k, t + rtt)
                .clamp(cwnd_segments, 1.5 * cwnd_segments);
            cwnd_segments + (target - cwnd_segments) * acked_segments / cwnd_segments
        };
        self.cwnd = ((next * smss) as u64).max(self.cwnd);
    }

    fn on_congestion_event(&mut self, _now: Instant, _flight_size: u64, smss: u64) {
        self.reduce(smss);
        self.cwnd = self.ssthresh;
    }

    fn on_recovery_end(&mut self, _now: Instant, _flight_size: u64, _smss: u64) {
        // The window was set to ssthresh when recovery began and did not
        // grow during it.
        self.cwnd = self.cwnd.min(self.ssthresh);
    }

    fn on_timeout(&mut self, _now: Instant, _flight_size: u64, smss: u64, repeated: bool) {
        if !repeated {
            self.reduce(smss);
        }
        self.epoch = None;
        self.cwnd = smss;
        self.after_timeout = true;
    }

    fn on_idle_restart(&mut self, restart_window: u64) {
        self.cwnd = self.cwnd.min(restart_window);
        self.epoch = None;
    }

    fn restore(&mut self, window: u64, ssthresh: u64) {
        self.cwnd = window;
        self.ssthresh = ssthresh;
        self.epoch = None;
        self.after_timeout = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMSS: u64 = 1000;

    fn ack_at(secs: f64, acked: u64) -> AckEvent {
        AckEvent {
            now: Instant::from_duration(Duration::from_secs_f64(secs)),
            acked,
            smss: SMSS,
            srtt: Some(Duration::from_millis(100)),
            rtt_sample: Some(Duration::from_millis(100)),
            delivery_rtt: Some(Duration::from_millis(100)),
            paced: false,
            min_rtt: Some(Duration::from_millis(100)),
            cwnd_limited: true,
            snd_una: 0,
            snd_nxt: 0,
        }
    }

    #[test]
    fn loss_reduces_by_beta_and_the_window_returns_to_w_max_after_k() {
        let mut cc = Cubic::new(100 * SMSS);
        cc.on_congestion_event(Instant::ZERO, 100 * SMSS, SMSS);
        assert_eq!(cc.window(), 70 * SMSS);
        // K = cbrt((100 - 70) / 0.4) = 4.217 s. Feed a window's worth of
        // ACKs every 100 ms and check the window is near W_max at K.
        let k = (30.0f64 / C).cbrt();
        let mut t = 0.0;
        while t < k - 0.1 {
            let cwnd = cc.window();
            cc.on_ack(&ack_at(t, cwnd));
            t += 0.1;
        }
        let segments = cc.window() as f64 / SMSS as f64;
        assert!(
            (97.0..=101.0).contains(&segments),
            "window {segments} segments at K should be near W_max 100"
        );
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_losses_come_early() {
        let mut cc = Cubic::new(100 * SMSS);
        cc.on_congestion_event(Instant::ZERO, 0, SMSS);
        cc.on_congestion_event(Instant::ZERO, 0, SMSS);
        // Second loss at 70 < W_max 100: W_max = 70 * 1.7 / 2 = 59.5.
        assert!((cc.w_max - 59.5).abs() < 1e-9);
        assert_eq!(cc.window(), 49 * SMSS);
    }

    #[test]
    fn growth_is_at_least_reno_friendly() {
        // With a tiny W_max gap the cubic term is flat at first; the
        // Reno-friendly estimate must still add about alpha segments per RTT.
        let mut cc = Cubic::new(10 * SMSS);
        cc.on_congestion_event(Instant::ZERO, 0, SMSS);
        let before = cc.window();
        for i in 0..10 {
            let cwnd = cc.window();
            cc.on_ack(&ack_at(0.001 * f64::from(i), cwnd / 10));
        }
        assert!(cc.window() > before, "window must grow in congestion avoidance");
    }

    #[test]
    fn timeout_restarts_from_one_segment() {
        let mut cc = Cubic::new(50 * SMSS);
        cc.on_timeout(Instant::ZERO, 50 * SMSS, SMSS, false);
        assert_eq!((cc.window(), cc.ssthresh()), (SMSS, 35 * SMSS));
        cc.on_timeout(Instant::ZERO, SMSS, SMSS, true);
        assert_eq!(
            (cc.window(), cc.ssthresh()),
            (SMSS, 35 * SMSS),
            "held on a repeated timeout"
        );
        cc.on_ack(&ack_at(0.1, SMSS));
        assert_eq!(cc.window(), 2 * SMSS, "slow start after a timeout");
    }
}
