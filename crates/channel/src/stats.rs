//! Counters of one channel. Every offered packet ends in exactly one of
//! delivered / dropped_buffer / dropped_bit_errors / dropped_outage.

use std::time::Duration;

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
