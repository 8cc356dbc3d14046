//! Two-state (Gilbert-Elliott) burst errors: when the bad state holds.
//!
//! The bad periods are an alternating renewal process in time (see
//! `outage.rs`): good ~ Exponential(mean_good), bad ~
//! Exponential(mean_bad), good from time 0, from its own ChaCha stream.
//! A packet on the line during `[start, end)` is cut into segments of
//! constant state; each segment gets the share of the packet's bits that
//! its time is of the packet's.

use crate::config::BurstErrors;
use crate::outage::{DownLength, RenewalProcess};
use crate::time::to_ns;

/// ChaCha stream of the burst states (see `channel.rs`).
pub(crate) const BURST_STREAM: u64 = 3;

#[derive(Debug, Clone)]
pub(crate) struct BurstProcess {
    bad: Option<RenewalProcess>,
    bad_ber: f64,
}

impl BurstProcess {
    pub(crate) fn new(config: &BurstErrors, seed: u64) -> BurstProcess {
        BurstProcess {
            bad: RenewalProcess::new(
                config.mean_good,
                DownLength::Exponential(to_ns(config.mean_bad) as f64),
                seed,
                BURST_STREAM,
            ),
            bad_ber: config.ber,
        }
    }

    /// Splits `bits` sent during `[start, end)` ns into consecutive
    /// segments `(bits, bad)`, in order; calls `segment` for each.
    pub(crate) fn segments(&mut self, start: u64, end: u64, bits: u64, mut segment: impl FnMut(u64, bool)) {
        let Some(bad) = &mut self.bad else {
            segment(bits, false);
            return;
        };
        let span = end.saturating_sub(start);
        if span == 0 {
            segment(bits, bad.down_span(start).is_some());
            return;
        }
        let mut t = start;
        let mut given = 0u64;
        while t < end {
            let (state_end, is_bad) = match bad.down_span(t) {
                Some(down) => (down.end.min(end), true),
                None => (bad.next_start_after(t).map_or(end, |s| s.min(end)), false),
            };
            // Bits up to state_end, in proportion to time, rounded so that
            // the segments add up to `bits` exactly.
            let upto = if state_end >= end {
                bits
            } else {
                u64::try_from(u128::from(bits) * u128::from(state_end - start) / u128::from(span))
                    .unwrap_or(bits)
            };
            if upto > given {
                segment(upto - given, is_bad);
                given = upto;
            }
            t = state_end.max(t + 1);
        }
    }

    /// The bit-error rate of the bad state.
    pub(crate) fn bad_ber(&self) -> f64 {
        self.bad_ber
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn segments_cover_every_bit_once_and_follow_the_states() {
        let config = BurstErrors {
            mean_good: Duration::from_millis(10),
            mean_bad: Duration::from_millis(5),
            ber: 0.1,
        };
        let mut process = BurstProcess::new(&config, 9);
        let (mut bad_bits, mut all_bits) = (0u64, 0u64);
        // 1000 packets of 8000 bits, each 1 ms on the line.
        for k in 0..1000u64 {
            let mut total = 0;
            process.segments(k * 1_000_000, (k + 1) * 1_000_000, 8000, |bits, bad| {
                total += bits;
                if bad {
                    bad_bits += bits;
                }
            });
            assert_eq!(total, 8000, "packet {k}");
            all_bits += total;
        }
        // Bad a third of the time on average (one second is ~67 cycles).
        let share = bad_bits as f64 / all_bits as f64;
        assert!((0.15..0.55).contains(&share), "bad share {share}");
    }
}
