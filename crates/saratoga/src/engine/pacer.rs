//! The token bucket DATA is paced with, driven by the `now` it is handed
//! (no clock of its own).
//!
//! Credit is kept in bit·nanoseconds (bits × 10⁹), so refilling at any
//! rate over any interval is exact integer arithmetic. Control frames are
//! charged too but never wait: they may take the credit below zero, and
//! DATA then waits for it to come back.

use scps_node::Instant;

const NANOS: i128 = 1_000_000_000;

#[derive(Debug, Clone)]
pub struct Pacer {
    rate_bps: u64,
    burst_bits: i128,
    credit: i128,
    last: Option<Instant>,
}

impl Pacer {
    /// `rate_bps` 0 paces nothing (line rate).
    pub fn new(rate_bps: u64, burst_bytes: u64) -> Pacer {
        let burst_bits = i128::from(burst_bytes) * 8;
        Pacer {
            rate_bps,
            burst_bits,
            credit: burst_bits * NANOS,
            last: None,
        }
    }

    fn refill(&mut self, now: Instant) {
        if let Some(last) = self.last {
            let elapsed = i128::from(now.as_nanos().saturating_sub(last.as_nanos()));
            self.credit = (self.credit + elapsed * i128::from(self.rate_bps)).min(self.burst_bits * NANOS);
        }
        self.last = Some(self.last.map_or(now, |last| last.max(now)));
    }

    /// Whether `bytes` may be sent at `now`.
    pub fn ready(&mut self, now: Instant, bytes: usize) -> bool {
        if self.rate_bps == 0 {
            return true;
        }
        self.refill(now);
        self.credit >= cost(bytes)
    }

    /// Charges `bytes` sent at `now`.
    pub fn charge(&mut self, now: Instant, bytes: usize) {
        if self.rate_bps == 0 {
            return;
        }
        self.refill(now);
        self.credit -= cost(bytes);
    }

    /// When `bytes` may be sent, if not now.
    pub fn ready_at(&self, bytes: usize) -> Option<Instant> {
        if self.rate_bps == 0 {
            return None;
        }
        let missing = cost(bytes) - self.credit;
        let last = self.last?;
        if missing <= 0 {
            return None;
        }
        let rate = i128::from(self.rate_bps);
        let wait = (missing + rate - 1) / rate;
        Some(last + std::time::Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX)))
    }
}

fn cost(bytes: usize) -> i128 {
    bytes as i128 * 8 * NANOS
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_bucket_sends_at_its_rate() {
        // 8000 bit/s: one 100-byte frame every 100 ms after a one-frame burst.
        let mut pacer = Pacer::new(8_000, 100);
        let mut now = Instant::ZERO;
        let mut sent = 0;
        while now < Instant::from_duration(Duration::from_secs(10)) {
            if pacer.ready(now, 100) {
                pacer.charge(now, 100);
                sent += 1;
            } else {
                now = pacer.ready_at(100).unwrap();
            }
        }
        assert!((100..=101).contains(&sent), "{sent} frames in 10 s");
        let mut unpaced = Pacer::new(0, 0);
        assert!(unpaced.ready(Instant::ZERO, 1 << 20));
        assert_eq!(unpaced.ready_at(1), None);
    }

    #[test]
    fn control_frames_borrow_and_data_waits() {
        let mut pacer = Pacer::new(8_000, 100);
        let now = Instant::ZERO;
        pacer.charge(now, 300);
        assert!(!pacer.ready(now, 100));
        assert_eq!(
            pacer.ready_at(100),
            Some(Instant::from_duration(Duration::from_millis(300)))
        );
    }
}
