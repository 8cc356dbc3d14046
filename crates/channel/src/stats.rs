//! Counters of one channel. Every offered packet ends in exactly one of
//! delivered / dropped_buffer / dropped_bit_errors / dropped_outage.

use std::time::Duration;

/// Upper bounds (inclusive) of the buckets of the queueing-delay histogram,
/// 1-2.5-5 steps from 100 us (an idle line at hundreds of Mbit/s) to 60 s
/// (a full buffer on the slowest links of the scenarios); one more bucket
/// takes what lies above the last bound. Fixed, so that histograms of
/// different channels and runs add up.
pub const QUEUE_DELAY_BOUNDS: [Duration; 18] = [
    Duration::from_micros(100),
    Duration::from_micros(250),
    Duration::from_micros(500),
    Duration::from_millis(1),
    Duration::from_micros(2500),
    Duration::from_millis(5),
    Duration::from_millis(10),
    Duration::from_millis(25),
    Duration::from_millis(50),
    Duration::from_millis(100),
    Duration::from_millis(250),
    Duration::from_millis(500),
    Duration::from_secs(1),
    Duration::from_millis(2500),
    Duration::from_secs(5),
    Duration::from_secs(10),
    Duration::from_secs(25),
    Duration::from_secs(60),
];

/// What happened to the packets offered to a channel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChannelStats {
    /// Packets offered.
    pub packets_in: u64,
    /// IP bytes offered.
    pub bytes_in: u64,
    /// Packets delivered (corrupted ones included).
    pub packets_delivered: u64,
    /// IP bytes delivered.
    pub bytes_delivered: u64,
    /// Packets that went on the line (accepted by the buffer), whatever
    /// became of them afterwards.
    pub packets_transmitted: u64,
    /// Refused by the buffer (full, or dropped early by RED).
    pub dropped_buffer: u64,
    /// Of those, dropped early by RED.
    pub dropped_early: u64,
    /// Lost to bit errors (error mode Drop).
    pub dropped_bit_errors: u64,
    /// Lost because their transmission overlapped an outage.
    pub dropped_outage: u64,
    /// Delivered with at least one flipped bit (error mode Corrupt).
    pub packets_corrupted: u64,
    /// Bits flipped in delivered packets.
    pub bits_flipped: u64,
    /// Sum over transmitted packets of (transmission start - offer time).
    pub queue_delay_total: Duration,
    /// Largest such queueing delay.
    pub queue_delay_max: Duration,
    /// Transmitted packets by queueing delay: entry `i` counts the delays
    /// up to `QUEUE_DELAY_BOUNDS[i]` and above the bound before it; the
    /// last entry, those above every bound.
    pub queue_delay_histogram: [u64; QUEUE_DELAY_BOUNDS.len() + 1],
}

impl ChannelStats {
    pub(crate) fn offered(&mut self, len: u64) {
        self.packets_in += 1;
        self.bytes_in = self.bytes_in.saturating_add(len);
    }

    pub(crate) fn transmitted(&mut self, delay: Duration) {
        self.packets_transmitted += 1;
        self.queue_delay_total = self.queue_delay_total.saturating_add(delay);
        self.queue_delay_max = self.queue_delay_max.max(delay);
        self.queue_delay_histogram[QUEUE_DELAY_BOUNDS.partition_point(|bound| *bound < delay)] += 1;
    }

    pub(crate) fn delivered(&mut self, len: u64, flipped: u64) {
        self.packets_delivered += 1;
        self.bytes_delivered = self.bytes_delivered.saturating_add(len);
        if flipped > 0 {
            self.packets_corrupted += 1;
            self.bits_flipped = self.bits_flipped.saturating_add(flipped);
        }
    }

    /// Mean queueing delay of transmitted packets (zero if none).
    pub fn queue_delay_mean(&self) -> Duration {
        match u32::try_from(self.packets_transmitted) {
            Ok(0) => Duration::ZERO,
            Ok(n) => self.queue_delay_total / n,
            Err(_) => Duration::try_from_secs_f64(
                self.queue_delay_total.as_secs_f64() / self.packets_transmitted as f64,
            )
            .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_delays_fall_in_the_bucket_of_their_upper_bound() {
        let mut stats = ChannelStats::default();
        for micros in [0, 100, 101, 24_000, 25_000, 25_001, 61_000_000] {
            stats.transmitted(Duration::from_micros(micros));
        }
        let mut expected = [0u64; QUEUE_DELAY_BOUNDS.len() + 1];
        expected[0] = 2; // 0 and 100 us: up to 100 us
        expected[1] = 1; // 101 us: up to 250 us
        expected[7] = 2; // 24 and 25 ms: up to 25 ms
        expected[8] = 1; // 25.001 ms: up to 50 ms
        expected[18] = 1; // 61 s: above every bound
        assert_eq!(stats.queue_delay_histogram, expected);
        assert_eq!(
            stats.queue_delay_histogram.iter().sum::<u64>(),
            stats.packets_transmitted
        );
    }
}
