//! The route's token bucket: every packet a connection sends, whatever its
//! congestion control, fits within the route rate
//! (docs/spec/scps-tp-options.md, "Rate control"). The reference
//! implementation refills every 10 ms into a bucket of 5 × max(bytes per
//! interval, MTU). We refill continuously into
//! a bucket one interval deep, and let a packet go whenever the bucket is
//! not in debt, so that it may go into debt by one packet: a packet larger
//! than the bucket can always be sent, and no burst exceeds one interval
//! and one packet. The depth matters when the route rate is the line rate,
//! as it should be: a burst the bucket allows becomes a queue at the line
//! that never drains while the sender keeps pace. Five MTUs at 115.2
//! kbit/s are half a second added to every round trip; one MTU of ACKs at
//! 2400 bit/s is five seconds.
//!
//! Each packet is charged the bytes the link adds to it (PPP framing, for
//! example), so that the route rate can be the line rate itself: a rate
//! scaled down for full-sized packets lets a stream of small ones (the
//! ACKs of a narrow return link) overrun the line.
//!
//! Credit is kept in bit-nanoseconds (bits × 10⁹), so refilling at any rate
//! over any interval is exact integer arithmetic and never drifts.

use std::time::Duration;

use crate::time::Instant;

/// The reference implementation's refill interval, which sets the depth.
const REFILL_INTERVAL: Duration = Duration::from_millis(10);
const NANOS_PER_SECOND: i128 = 1_000_000_000;

#[derive(Debug, Clone)]
pub(crate) struct TokenBucket {
    rate_bps: i128,
    /// Bytes the link adds to every packet.
    framing_bytes: usize,
    /// Credit at `updated`, bit-nanoseconds; below zero after a packet
    /// larger than what the bucket held.
    credit: i128,
    capacity: i128,
    updated: Instant,
    /// Credit was lost to a full bucket since [`TokenBucket::take_idle`]
    /// was last called: the senders sent less than the rate allowed.
    idle: bool,
}

impl TokenBucket {
    /// A full bucket for `rate_bps` on a link that adds `framing_bytes` to
    /// every packet.
    pub(crate) fn new(rate_bps: u64, framing_bytes: u32, now: Instant) -> TokenBucket {
        let rate_bps = i128::from(rate_bps.max(1));
        let capacity = rate_bps * REFILL_INTERVAL.as_nanos() as i128;
        TokenBucket {
            rate_bps,
            framing_bytes: framing_bytes as usize,
            credit: capacity,
            capacity,
            updated: now,
            idle: false,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.as_nanos().saturating_sub(self.updated.as_nanos());
        let credit = self.credit + i128::from(elapsed) * self.rate_bps;
        self.idle |= credit > self.capacity;
        self.credit = credit.min(self.capacity);
        self.updated = self.updated.max(now);
    }

    /// Paces at `rate_bps` from `now` on, credit earned until now kept
    /// (within the new, shallower or deeper, bucket).
    pub(crate) fn set_rate(&mut self, now: Instant, rate_bps: u64) {
        self.refill(now);
        self.rate_bps = i128::from(rate_bps.max(1));
        self.capacity = self.rate_bps * REFILL_INTERVAL.as_nanos() as i128;
        self.credit = self.credit.min(self.capacity);
    }

    /// Whether credit overflowed since the last call: the senders had less
    /// to send than the rate allowed.
    pub(crate) fn take_idle(&mut self) -> bool {
        std::mem::take(&mut self.idle)
    }

    /// When the next packet may go: `now`, or the instant the bucket is
    /// out of debt.
    pub(crate) fn ready_at(&mut self, now: Instant) -> Instant {
        self.refill(now);
        if self.credit >= 0 {
            return now;
        }
        // Credit is below zero: the debt, rounded up to whole nanoseconds.
        let debt = self.credit.unsigned_abs();
        let wait_nanos = debt.div_ceil(self.rate_bps.unsigned_abs());
        now + Duration::from_nanos(u64::try_from(wait_nanos).unwrap_or(u64::MAX))
    }

    pub(crate) fn rate_bps(&self) -> u64 {
        self.rate_bps as u64
    }

    pub(crate) fn framing_bytes(&self) -> usize {
        self.framing_bytes
    }

    /// How long the link takes to carry a packet of `bytes` at the rate.
    pub(crate) fn time_of(&self, bytes: usize) -> Duration {
        let bits = ((bytes + self.framing_bytes) as i128) * 8 * NANOS_PER_SECOND;
        let nanos = bits / self.rate_bps;
        Duration::from_nanos(u64::try_from(nanos).unwrap_or(u64::MAX))
    }

    /// Takes the credit of a packet of `bytes` (IP header included) that
    /// is being sent, and of the link's framing around it.
    pub(crate) fn consume(&mut self, now: Instant, bytes: usize) {
        self.refill(now);
        self.credit -= ((bytes + self.framing_bytes) as i128) * 8 * NANOS_PER_SECOND;
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
        // 12 Mbit/s: 15000 bytes per 10 ms; ten 1500-byte packets empty
        // the bucket, an eleventh takes it into debt.
        let mut pacer = TokenBucket::new(12_000_000, 0, at_ms(0));
        for _ in 0..11 {
            assert_eq!(pacer.ready_at(at_ms(0)), at_ms(0));
            pacer.consume(at_ms(0), 1500);
        }
        assert_eq!(pacer.ready_at(at_ms(0)), at_ms(1));
        // At low rates the bucket is shallower than a packet: no burst.
        let mut slow = TokenBucket::new(115_200, 0, at_ms(0));
        slow.consume(at_ms(0), 1500);
        // 12000 bits less 10 ms of credit (1152 bits) at 115200 bit/s.
        assert_eq!(slow.ready_at(at_ms(0)), Instant::from_nanos(94_166_667));
    }

    #[test]
    fn framing_is_charged_per_packet() {
        // 2400 bit/s with 8 bytes of PPP framing: a 52-byte ACK occupies
        // the line for 60 bytes, 200 ms.
        let mut pacer = TokenBucket::new(2400, 8, Instant::ZERO);
        let mut now = Instant::ZERO;
        for _ in 0..100 {
            now = pacer.ready_at(now);
            pacer.consume(now, 52);
        }
        now = pacer.ready_at(now);
        // 100 × 60 bytes, less the full bucket's 10 ms, at 2400 bit/s.
        assert_eq!(now, at_ms(19_990));
    }

    #[test]
    fn a_rate_change_paces_what_follows_and_an_unused_rate_is_seen() {
        let mut pacer = TokenBucket::new(120_000, 0, Instant::ZERO);
        pacer.consume(Instant::ZERO, 1650); // 110 ms at 120 kbit/s, less 10
        assert!(!pacer.take_idle(), "a full bucket spent is not idle");
        assert_eq!(pacer.ready_at(Instant::ZERO), at_ms(100));
        // Halfway through the debt the rate doubles: the other half of it
        // takes 25 ms.
        pacer.set_rate(at_ms(50), 240_000);
        assert_eq!(pacer.ready_at(at_ms(50)), at_ms(75));
        // Left alone for a second, the bucket fills and overflows.
        assert_eq!(pacer.ready_at(at_ms(1075)), at_ms(1075));
        assert!(pacer.take_idle());
        assert!(!pacer.take_idle(), "taken");
    }

    #[test]
    fn a_million_packets_take_exactly_their_time() {
        // 115200 bit/s and 1000-byte packets: exactly 1/14.4 s each.
        let mut pacer = TokenBucket::new(115_200, 0, Instant::ZERO);
        let mut now = Instant::ZERO;
        pacer.consume(now, 144); // empty the bucket (10 ms, 144 bytes)
        for _ in 0..1_000_000 {
            now = pacer.ready_at(now);
            pacer.consume(now, 1000);
        }
        now = pacer.ready_at(now);
        let expected = Duration::from_secs_f64(1_000_000.0 * 8000.0 / 115_200.0);
        let drift = now.as_duration().abs_diff(expected);
        assert!(drift < Duration::from_micros(1), "drift {drift:?}");
    }
}
