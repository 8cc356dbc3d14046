//! Token-bucket shaper, computed analytically.
//!
//! Time is measured in line *ticks* (see [`crate::serializer`]): one tick is
//! `1 / line_rate` ns, so that packet boundaries on the line are exact
//! integers. Tokens are counted in units of `1 / (1e9 * line_rate)` bit, so
//! that a refill rate of `rate_bps` bit/s is exactly `rate_bps` units per
//! tick: the bucket is exact too and cannot drift from its nominal rate.
//!
//! All arithmetic saturates: absurd (but valid) configurations give absurd
//! (but well-defined) times instead of panics.

use crate::time::NANOS_PER_SEC;

#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    /// Units gained per tick (= shaper rate in bit/s).
    fill: i128,
    /// Units per byte of packet.
    per_byte: i128,
    /// Bucket size in units.
    capacity: i128,
    /// Level at tick `at`. Negative after a packet larger than the bucket.
    level: i128,
    at: u128,
}

impl TokenBucket {
    /// A full bucket at tick 0.
    pub(crate) fn new(rate_bps: u64, burst_bytes: u64, line_rate_bps: u64) -> Self {
        // 8 * 1e9 * line_rate < 1.5e29: fits easily in i128.
        let per_byte = 8 * i128::from(NANOS_PER_SEC) * i128::from(line_rate_bps);
        let capacity = i128::from(burst_bytes).saturating_mul(per_byte);
        TokenBucket {
            fill: i128::from(rate_bps),
            per_byte,
            capacity,
            level: capacity,
            at: 0,
        }
    }

    fn level_at(&self, t: u128) -> i128 {
        if t <= self.at {
            return self.level;
        }
        let dt = i128::try_from(t - self.at).unwrap_or(i128::MAX);
        self.level
            .saturating_add(dt.saturating_mul(self.fill))
            .min(self.capacity)
    }

    /// Tokens a packet of `len` bytes must find in the bucket: `len` bytes,
    /// or a full bucket if the packet is larger than the bucket (otherwise
    /// it could never leave).
    fn need(&self, len: u64) -> i128 {
        i128::from(len).saturating_mul(self.per_byte).min(self.capacity)
    }

    /// Earliest tick `>= from` at which a packet of `len` bytes may start.
    pub(crate) fn ready_at(&self, len: u64, from: u128) -> u128 {
        let need = self.need(len);
        let level = self.level_at(from);
        if level >= need {
            return from;
        }
        // Positive: level < need.
        let deficit = u128::try_from(need.saturating_sub(level)).unwrap_or(0);
        // fill > 0 for a validated shaper; `max(1)` keeps this total anyway.
        let fill = u128::try_from(self.fill).unwrap_or(1).max(1);
        from.saturating_add(deficit.div_ceil(fill))
    }

    /// Removes the tokens of a packet of `len` bytes starting at tick `t`.
    pub(crate) fn take(&mut self, t: u128, len: u64) {
        let level = self.level_at(t);
        self.level = level.saturating_sub(i128::from(len).saturating_mul(self.per_byte));
        self.at = self.at.max(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Line at 1 bit/s makes a tick a nanosecond: easy numbers.
    fn bucket(rate_bps: u64, burst: u64) -> TokenBucket {
        TokenBucket::new(rate_bps, burst, 1)
    }

    #[test]
    fn full_bucket_lets_burst_through_then_waits_for_refill() {
        // 8 bit/s = 1 byte per second = 1 byte per 1e9 ticks.
        let mut b = bucket(8, 10);
        assert_eq!(b.ready_at(10, 0), 0);
        b.take(0, 10);
        // Empty now: 4 bytes need 4 seconds.
        assert_eq!(b.ready_at(4, 0), 4 * NANOS_PER_SEC as u128);
        b.take(4 * NANOS_PER_SEC as u128, 4);
        // Refill stops at the capacity.
        assert_eq!(b.level_at(u128::from(u64::MAX)), b.capacity);
    }

    #[test]
    fn oversized_packet_waits_for_full_bucket_and_goes_into_debt() {
        let mut b = bucket(8, 10);
        b.take(0, 10);
        let t = b.ready_at(25, 0);
        assert_eq!(t, 10 * NANOS_PER_SEC as u128);
        b.take(t, 25);
        // 15 bytes of debt plus 1 byte needed: 16 seconds later.
        assert_eq!(b.ready_at(1, t), t + 16 * NANOS_PER_SEC as u128);
    }
}
