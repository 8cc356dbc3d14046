//! Drop-tail queue in front of the line, plus the optional shaper.
//!
//! Nothing is simulated step by step: when a packet is offered its start
//! and end of transmission are computed at once,
//! `start = max(now, line free, tokens sufficient)`, `end = start + bits / rate`.
//!
//! # Exact time: ticks
//!
//! Serialisation times are rarely whole nanoseconds (1500 bytes at 7 Mbit/s
//! is 1 714 285.714… ns). Rounding each packet would drift by up to a
//! nanosecond per packet. So the line keeps time in *ticks* of
//! `1 / line_rate` ns: a packet of `b` bits then lasts exactly `b * 1e9`
//! ticks, and `now` in ns is `now * line_rate` ticks. Both fit in `u128`
//! for any `u64` rate and any `u64` nanosecond time. Times leave this module
//! rounded once: starts down and ends up to the nanosecond, which is exactly
//! right for testing overlap with integer-nanosecond outage intervals.
//!
//! # Drop-tail
//!
//! The buffer holds packets that have been accepted but have not started
//! by `now`; a packet is refused if those bytes plus its own exceed
//! `buffer_bytes` (IP bytes; framing is added by the line, not stored).
//! A packet that starts at once still counts itself, so a packet larger
//! than the buffer is always refused: size the buffer to at least one MTU.

use std::collections::VecDeque;

use crate::config::ChannelConfig;
use crate::time::NANOS_PER_SEC;
use crate::token_bucket::TokenBucket;

/// When a packet occupies the line, in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) start: u128,
    pub(crate) end: u128,
}

#[derive(Debug, Clone)]
pub(crate) struct Serializer {
    line_rate: u128,
    buffer_bytes: u64,
    framing_bytes: u64,
    /// Tick at which the last accepted packet leaves the line.
    free_at: u128,
    /// (start tick, len) of accepted packets that had not started when they
    /// were offered, in start order; popped once `now` reaches their start.
    waiting: VecDeque<(u128, u64)>,
    waiting_bytes: u64,
    bucket: Option<TokenBucket>,
}

impl Serializer {
    pub(crate) fn new(config: &ChannelConfig) -> Self {
        // validate() guarantees a rate > 0; max(1) keeps divisions total.
        let line_rate = config.line_rate_bps().max(1);
        Serializer {
            line_rate: u128::from(line_rate),
            buffer_bytes: config.buffer_bytes,
            framing_bytes: u64::from(config.framing_bytes),
            free_at: 0,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            bucket: config
                .shaper
                .map(|s| TokenBucket::new(s.rate_bps, s.burst_bytes, line_rate)),
        }
    }

    /// Takes a new configuration while keeping the line's state: the line
    /// stays busy until the same instant and packets waiting keep their
    /// start times (to the nanosecond). A new shaper starts with a full
    /// bucket.
    pub(crate) fn reconfigure(&mut self, config: &ChannelConfig) {
        let mut next = Serializer::new(config);
        next.free_at = next.ticks(self.ceil_ns(self.free_at));
        next.waiting = self
            .waiting
            .iter()
            .map(|&(start, len)| (next.ticks(self.floor_ns(start)), len))
            .collect();
        next.waiting_bytes = self.waiting_bytes;
        *self = next;
    }

    pub(crate) fn ticks(&self, ns: u64) -> u128 {
        // (2^64 - 1)^2 < 2^128: cannot overflow.
        u128::from(ns) * self.line_rate
    }

    pub(crate) fn floor_ns(&self, ticks: u128) -> u64 {
        u64::try_from(ticks / self.line_rate).unwrap_or(u64::MAX)
    }

    pub(crate) fn ceil_ns(&self, ticks: u128) -> u64 {
        u64::try_from(ticks.div_ceil(self.line_rate)).unwrap_or(u64::MAX)
    }

    /// Line occupancy of a packet of `len` bytes: (len + framing) * 8 bits
    /// of 1e9 ticks each.
    fn serialization_ticks(&self, len: u64) -> u128 {
        u128::from(len.saturating_add(self.framing_bytes)).saturating_mul(8 * u128::from(NANOS_PER_SEC))
    }

    fn forget_started(&mut self, now: u128) {
        while let Some(&(start, len)) = self.waiting.front() {
            if start > now {
                break;
            }
            self.waiting.pop_front();
            self.waiting_bytes -= len;
        }
    }

    /// Bytes waiting (accepted, not started) at `now_ns`.
    pub(crate) fn backlog_bytes(&mut self, now_ns: u64) -> u64 {
        let now = self.ticks(now_ns);
        self.forget_started(now);
        self.waiting_bytes
    }

    /// First nanosecond at which the line is idle.
    pub(crate) fn free_at_ns(&self) -> u64 {
        self.ceil_ns(self.free_at)
    }

    /// Accepts a packet of `len` bytes offered at `now_ns` and returns when
    /// it occupies the line, or `None` if the buffer refuses it.
    pub(crate) fn offer(&mut self, now_ns: u64, len: u64) -> Option<Slot> {
        let now = self.ticks(now_ns);
        self.forget_started(now);
        if self.waiting_bytes.saturating_add(len) > self.buffer_bytes {
            return None;
        }
        let mut start = now.max(self.free_at);
        if let Some(bucket) = &mut self.bucket {
            start = bucket.ready_at(len, start);
            bucket.take(start, len);
        }
        let end = start.saturating_add(self.serialization_ticks(len));
        self.free_at = end;
        if start > now {
            self.waiting.push_back((start, len));
            // Cannot overflow: checked against buffer_bytes above.
            self.waiting_bytes += len;
        }
        Some(Slot { start, end })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ShaperConfig;

    #[test]
    fn back_to_back_packets_are_exactly_spaced() {
        let mut config = ChannelConfig::new(8_000_000);
        config.framing_bytes = 10;
        let mut s = Serializer::new(&config);
        // (1000 + 10) * 8 bits at 8 Mbit/s = 1.01 ms.
        for k in 0..10u64 {
            let slot = s.offer(0, 1000).expect("unbounded buffer");
            assert_eq!(s.floor_ns(slot.start), k * 1_010_000);
            assert_eq!(s.ceil_ns(slot.end), (k + 1) * 1_010_000);
        }
    }

    #[test]
    fn fractional_times_round_once() {
        // 1500 bytes at 7 Mbit/s = 1_714_285.714... ns.
        let mut s = Serializer::new(&ChannelConfig::new(7_000_000));
        let first = s.offer(0, 1500).expect("accepted");
        let second = s.offer(0, 1500).expect("accepted");
        assert_eq!(s.ceil_ns(first.end), 1_714_286);
        assert_eq!(s.floor_ns(second.start), 1_714_285);
        assert_eq!(s.ceil_ns(second.end), 3_428_572);
    }

    #[test]
    fn shaper_limits_line_to_ceiling() {
        let mut config = ChannelConfig::new(100_000_000);
        config.shaper = Some(ShaperConfig {
            rate_bps: 1_000_000,
            ceiling_bps: 2_000_000,
            burst_bytes: 1_000_000,
        });
        let mut s = Serializer::new(&config);
        let slot = s.offer(0, 1000).expect("accepted");
        assert_eq!(s.ceil_ns(slot.end), 4_000_000);
    }

    #[test]
    fn reconfiguring_keeps_the_line_busy_and_the_queue() {
        let mut s = Serializer::new(&ChannelConfig::new(8_000_000));
        for _ in 0..3 {
            s.offer(0, 1000);
        }
        s.reconfigure(&ChannelConfig::new(1_000_000));
        assert_eq!(s.free_at_ns(), 3_000_000);
        assert_eq!(s.backlog_bytes(0), 2000);
        // The next packet follows the queue at the new rate: 8 ms.
        let slot = s.offer(0, 1000).expect("accepted");
        assert_eq!(s.floor_ns(slot.start), 3_000_000);
        assert_eq!(s.ceil_ns(slot.end), 11_000_000);
    }

    #[test]
    fn backlog_counts_only_packets_not_started() {
        let mut s = Serializer::new(&ChannelConfig::new(8_000_000));
        for _ in 0..3 {
            s.offer(0, 1000);
        }
        // Packet 0 started at 0; packets 1 and 2 wait.
        assert_eq!(s.backlog_bytes(0), 2000);
        assert_eq!(s.backlog_bytes(1_000_000), 1000);
        assert_eq!(s.backlog_bytes(2_000_000), 0);
        assert_eq!(s.free_at_ns(), 3_000_000);
    }
}
