//! The segment size: the negotiated MSS, or, with `mss_adapt`, the payload
//! that maximises goodput for the corruption the sender observes (smaller
//! segments when bits are often hit; bounded by the path's MSS).
//!
//! The sender estimates the bit-error rate from its own retransmissions:
//! over each stretch of [`EPOCH_SEGMENTS`] segments' worth of new data, the
//! share of data bytes it had to send again is taken as the packet error
//! rate P of segments of the current size L = s + h, and converted to a
//! bit-error rate assuming independent bit errors, 1 - (1 - P)^(1 / 8L),
//! smoothed over epochs. (All losses count, congestion ones too: on the
//! paths this mode is for, corruption dominates; a congested path only
//! gets somewhat smaller segments.) The payload s then maximises
//!
//!   goodput(s) = s / (s + h) * (1 - BER)^(8 (s + h))
//!
//! where h is the header bytes of a data segment (IP, TCP, options, and
//! less with header compression: `Connection::segment_overhead_bytes`).
//! Setting the derivative of its logarithm to zero gives
//! h / (s (s + h)) = -8 ln(1 - BER), whose positive root is
//! s = (sqrt(h^2 + 4h / c) - h) / 2 with c = -8 ln(1 - BER); it is clamped
//! to [[`MIN_SEGMENT_BYTES`], MSS].
//!
//! Changing the size mid-connection keeps the sequence space and recovery
//! right because the scoreboard holds each segment as sent: a segment
//! sent at the old size is resent at that size (still within the MSS),
//! new data goes at the new one. SNACK offsets stay in their own unit,
//! which both ends compute alike from the SYNs
//! (`Connection::snack_unit`).

use super::Connection;

/// The smallest payload the adaptive mode uses, bytes.
pub(crate) const MIN_SEGMENT_BYTES: u64 = 256;
/// New data, in segments of the current size, between estimates.
const EPOCH_SEGMENTS: u64 = 64;
/// Weight of each epoch's estimate in the smoothed bit-error rate.
const EPOCH_WEIGHT: f64 = 0.25;

/// The sender's view of the path's bit-error rate.
#[derive(Debug, Default)]
pub(crate) struct SegmentSizer {
    /// Data bytes sent and resent when the current epoch began.
    epoch_sent: u64,
    epoch_retransmitted: u64,
    /// Smoothed estimate; `None` until the first epoch ends.
    ber: Option<f64>,
    /// The payload chosen, bytes; 0 until the first choice.
    size: u64,
}

/// The payload that maximises goodput at `ber` with `header` bytes per
/// segment (see the module documentation), before clamping.
pub(crate) fn best_payload(ber: f64, header: f64) -> f64 {
    if ber <= 0.0 {
        return f64::INFINITY;
    }
    let c = -8.0 * (-ber).ln_1p();
    ((header * header + 4.0 * header / c).sqrt() - header) / 2.0
}

impl Connection {
    /// Header bytes of a data segment: IP, then TCP with the options every
    /// segment carries (timestamps), or the compressed header once header
    /// compression is in force.
    pub(crate) fn segment_overhead_bytes(&self) -> u64 {
        let ip = super::handshake::ip_header_len(self.tuple.local) as u64;
        if self.compression.in_force() {
            // The window and acknowledgment are left out of most.
            return ip + super::compression::data_header_bytes(self.negotiated.timestamps);
        }
        let timestamps = if self.negotiated.timestamps {
            super::handshake::TIMESTAMPS_OVERHEAD
        } else {
            0
        };
        ip + 20 + timestamps
    }

    /// The payload of a full data segment now: the negotiated MSS, or the
    /// adaptive choice (updated here once an epoch of data has gone).
    pub(crate) fn segment_size(&mut self) -> u64 {
        let smss = self.negotiated.smss;
        if !self.config.mss_adapt {
            return smss;
        }
        let overhead = self.segment_overhead_bytes();
        let sizer = &mut self.sizer;
        let current = if sizer.size == 0 { smss } else { sizer.size };
        let sent = self.stats.bytes_sent - sizer.epoch_sent;
        if sent >= EPOCH_SEGMENTS * current {
            let resent = self.stats.bytes_retransmitted - sizer.epoch_retransmitted;
            let packet_error_rate = (resent as f64 / sent as f64).min(0.9);
            let bits = 8.0 * (current + overhead) as f64;
            let sample = -((-packet_error_rate).ln_1p() / bits).exp_m1();
            sizer.ber = Some(
                sizer
                    .ber
                    .map_or(sample, |b| (1.0 - EPOCH_WEIGHT) * b + EPOCH_WEIGHT * sample),
            );
            sizer.epoch_sent = self.stats.bytes_sent;
            sizer.epoch_retransmitted = self.stats.bytes_retransmitted;
        }
        let best = sizer
            .ber
            .map_or(f64::INFINITY, |ber| best_payload(ber, overhead as f64));
        sizer.size = (best.min(smss as f64) as u64).clamp(MIN_SEGMENT_BYTES.min(smss), smss);
        sizer.size
    }

    /// The payload of a full data segment as last chosen, for statistics.
    pub(crate) fn current_segment_size(&self) -> u64 {
        if self.config.mss_adapt && self.sizer.size > 0 {
            self.sizer.size
        } else {
            self.negotiated.smss
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goodput(s: f64, h: f64, ber: f64) -> f64 {
        s / (s + h) * (1.0 - ber).powf(8.0 * (s + h))
    }

    #[test]
    fn the_best_payload_maximises_goodput() {
        for (ber, h) in [(1e-5, 52.0), (1e-4, 52.0), (1e-5, 20.0), (3e-6, 40.0)] {
            let s = best_payload(ber, h);
            for other in [0.8 * s, 0.95 * s, 1.05 * s, 1.25 * s] {
                assert!(
                    goodput(s, h, ber) > goodput(other, h, ber),
                    "ber {ber}, h {h}: {s} vs {other}"
                );
            }
        }
        // BER 1e-5 with 52 header bytes: about 780 bytes.
        assert!((770.0..790.0).contains(&best_payload(1e-5, 52.0)));
        assert_eq!(best_payload(0.0, 52.0), f64::INFINITY);
    }

    #[test]
    fn cheaper_headers_mean_smaller_segments() {
        assert!(best_payload(1e-5, 20.0) < best_payload(1e-5, 52.0));
    }
}
