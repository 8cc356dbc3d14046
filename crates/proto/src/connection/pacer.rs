//! The route's token bucket: every packet a connection sends, whatever its
//! congestion control, fits within the route rate (spec/scps-tp.md "Rate
//! control"). The reference implementation refills every 10 ms into a
//! bucket of 5 × max(bytes per interval, MTU); we refill continuously into
//! a bucket of max(bytes per interval, MTU). The smaller depth matters when
//! the route rate is the line rate, as it should be: a burst the bucket
//! allows becomes a queue at the line that never drains while the sender
//! keeps pace, and five MTUs at 115.2 kbit/s are half a second of delay
//! added to every round trip.
//!
//! Credit is kept in bit-nanoseconds (bits × 10⁹), so refilling at any rate
//! over any interval is exact integer arithmetic and never drifts.

use std::time::Duration;

use crate::time::Instant;

/// The reference implementation's refill interval, which sets the depth.
const REFILL_INTERVAL: Duration = Duration::from_millis(10);
const NANOS_PER_SECOND: u128 = 1_000_000_000;

#[derive(Debug, Clone)]
pub(crate) struct Pacer {
    rate_bps: u128,
    /// Credit at `updated`, bit-nanoseconds.
    credit: u128,
    capacity: u128,
    updated: Instant,
}

impl Pacer {
    /// A full bucket for `rate_bps`, deep enough for a burst of `mtu`-byte
    /// packets as the reference implementation sizes it.
    pub(crate) fn new(rate_bps: u64, mtu: u16, now: Instant) -> Pacer {
        let rate_bps = u128::from(rate_bps.max(1));
        let bits_per_interval = rate_bps * REFILL_INTERVAL.as_nanos() / NANOS_PER_SECOND;
        let depth_bits = bits_per_interval.max(u128::from(mtu) * 8);
        let capacity = depth_bits * NANOS_PER_SECOND;
        Pacer {
            rate_bps,
            credit: capacity,
            capacity,
            updated: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = u128::from(now.as_nanos().saturating_sub(self.updated.as_nanos()));
        self.credit = (self.credit + elapsed * self.rate_bps).min(self.capacity);
        self.updated = self.updated.max(now);
    }

    fn cost(bytes: usize) -> u128 {
        bytes as u128 * 8 * NANOS_PER_SECOND
    }

    /// When a packet of `bytes` may go: `now`, or the instant the bucket
    /// will hold enough.
    pub(crate) fn ready_at(&mut self, now: Instant, bytes: usize) -> Instant {
        self.refill(now);
        // A packet larger than the bucket waits for a full bucket only.
        let cost = Self::cost(bytes).min(self.capacity);
        if self.credit >= cost {
            return now;
        }
        let wait_nanos = (cost - self.credit).div_ceil(self.rate_bps);
        now + Duration::from_nanos(u64::try_from(wait_nanos).unwrap_or(u64::MAX))
    }

    /// Takes the credit of a packet of `bytes` that is being sent (the
    /// bucket may go into debt for a packet larger than its depth).
    pub(crate) fn consume(&mut self, now: Instant, bytes: usize) {
        self.refill(now);
        self.credit = self.credit.saturating_sub(Self::cost(bytes));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_ms(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn a_full_bucket_sends_its_depth_then_paces_at_the_rate() {
        // 12 Mbit/s: 15000 bytes per 10 ms, 10 packets of 1500 bytes deep.
        let mut pacer = Pacer::new(12_000_000, 1500, at_ms(0));
        for _ in 0..10 {
            assert_eq!(pacer.ready_at(at_ms(0), 1500), at_ms(0));
            pacer.consume(at_ms(0), 1500);
        }
        assert_eq!(pacer.ready_at(at_ms(0), 1500), at_ms(1));
        // At low rates the bucket holds one MTU: no burst at all.
        let mut slow = Pacer::new(115_200, 1500, at_ms(0));
        slow.consume(at_ms(0), 1500);
        assert_eq!(slow.ready_at(at_ms(0), 720), at_ms(50));
    }

    #[test]
    fn a_million_packets_take_exactly_their_time() {
        // 115200 bit/s and 1000-byte packets: exactly 1/14.4 s each.
        let mut pacer = Pacer::new(115_200, 1500, Instant::ZERO);
        let mut now = Instant::ZERO;
        pacer.consume(now, 1500); // empty the bucket (one MTU deep)
        for _ in 0..1_000_000 {
            now = pacer.ready_at(now, 1000);
            pacer.consume(now, 1000);
        }
        let expected = Duration::from_secs_f64(1_000_000.0 * 8000.0 / 115_200.0);
        let drift = now.as_duration().abs_diff(expected);
        assert!(drift < Duration::from_micros(1), "drift {drift:?}");
    }
}
