//! No congestion control (SCPS-TP's `rate`, docs/spec/scps-tp-options.md,
//! "Congestion control, by name"): the window never limits sending; the route's token bucket
//! does. Loss never shrinks the rate.
//!
//! A retransmission timeout is not read as loss but as a sign that the peer
//! may be gone: until something is acknowledged again the sender probes
//! with one segment instead of resending its whole flight at the route rate
//! (a rate-based sender whose peer has gone must stop: UDP tunnels that
//! went on resending have flooded links at many times their rate).

use super::{AckEvent, CongestionAlgorithm, CongestionControl};
use crate::time::Instant;

/// The window reported when nothing limits it: far beyond any receive
/// window (at most 2^30 bytes), yet safe to add to.
const UNLIMITED: u64 = 1 << 40;

#[derive(Debug, Clone)]
pub struct RateBased {
    /// One segment while probing after a timeout, else unlimited.
    cwnd: u64,
}

impl RateBased {
    pub fn new() -> RateBased {
        RateBased { cwnd: UNLIMITED }
    }
}

impl Default for RateBased {
    fn default() -> Self {
        RateBased::new()
    }
}

impl CongestionControl for RateBased {
    fn algorithm(&self) -> CongestionAlgorithm {
        CongestionAlgorithm::Rate
    }

    fn window(&self) -> u64 {
        self.cwnd
    }

    fn ssthresh(&self) -> u64 {
        UNLIMITED
    }

    fn on_ack(&mut self, _ack: &AckEvent) {
        // The peer answers: probing is over.
        self.cwnd = UNLIMITED;
    }

    fn on_congestion_event(&mut self, _now: Instant, _flight_size: u64, _smss: u64) {}

    fn on_recovery_end(&mut self, _now: Instant, _flight_size: u64, _smss: u64) {
        self.cwnd = UNLIMITED;
    }

    fn on_timeout(&mut self, _now: Instant, _flight_size: u64, smss: u64, _repeated: bool) {
        self.cwnd = smss;
    }

    fn on_idle_restart(&mut self, _restart_window: u64) {}

    fn restore(&mut self, _window: u64, _ssthresh: u64) {
        self.cwnd = UNLIMITED;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn losses_never_shrink_the_window_and_a_timeout_probes_until_acked() {
        let mut cc = RateBased::new();
        cc.on_congestion_event(Instant::ZERO, 1 << 20, 1000);
        assert_eq!(cc.window(), UNLIMITED);
        cc.on_timeout(Instant::ZERO, 1 << 20, 1000, false);
        assert_eq!(cc.window(), 1000, "one probe segment while the peer is silent");
        cc.on_ack(&AckEvent {
            now: Instant::ZERO,
            acked: 1000,
            smss: 1000,
            srtt: None,
            rtt_sample: None,
            delivery_rtt: None,
            paced: false,
            min_rtt: None,
            cwnd_limited: false,
            snd_una: 0,
            snd_nxt: 0,
        });
        assert_eq!(cc.window(), UNLIMITED);
    }
}
