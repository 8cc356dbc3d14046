//! When in-order data is acknowledged: every `ack_every` segments or when
//! the delayed-ACK timer expires (RFC 1122 4.2.3.2, RFC 5681 4.2), or, in
//! the adaptive mode, every k segments with k chosen from what the path can
//! carry.
//!
//! The adaptive mode follows Wang and Wang ("Experimental study of channel
//! delay impact on throughput performance of TCP and its extensions in
//! space", 2005; its conclusion: "a mechanism making the data receiver
//! adjust adaptively its ACK frequency based on the estimation of RTT")
//! and RFC 3449 (4.1 and 5.2.1: on a narrow return link, fewer ACKs, each
//! covering more data). k is the largest of
//!
//! - the configured `ack_every` (the floor);
//! - the RTT term: segments arriving per RTT over [`ACKS_PER_RTT`], so that a
//!   long path with many segments in flight still gets about that many
//!   ACKs per round trip (the clock the sender runs on) and no more;
//! - the return-link term: the smallest k for which the ACKs of the
//!   measured forward segment rate take at most [`RETURN_SHARE`] of the
//!   return link's rate, when it is known;
//!
//! bounded by [`MAX_ACK_EVERY`] and by a quarter of the receive window in
//! segments, so that the sender's window always moves several times per
//! window of data. Everything that is news to the sender is still
//! acknowledged at once (a new hole, a filled hole, a duplicate, a FIN, a
//! segment with PSH); data that only extends what is held beyond a hole
//! counts like in-order data when the sender has SACK or SNACK (see
//! [`Connection::may_wait_to_ack`]). The delayed-ACK timer restarts with
//! each segment, so it fires when the data stops: a stalled sender is
//! never left waiting for the k-th segment.

use std::time::Duration;

use super::Connection;
use super::timers::Timer;
use crate::time::Instant;

/// ACKs per round trip the RTT term aims at.
const ACKS_PER_RTT: f64 = 8.0;
/// Share of the return link's rate the ACKs may take, counting each at
/// its largest (full option space): the rest stays free for SNACK repeats,
/// window updates and the peer's own data, and the route's pacer holds no
/// queue of ACKs, so what they say is fresh. (Chosen on lowrate-leo-geo
/// with a 2400 bit/s return link while the pacer still let ACKs overrun
/// it: shares of 1/2, 1/3, 0.3 and 1/4 gave scps-rate 0.86, 0.92, 0.94
/// and 0.94 of the physical limit; docs/configuration.md, "Why these
/// defaults", says why the policy is off by default.)
const RETURN_SHARE: f64 = 1.0 / 4.0;
/// No more segments than this per ACK, whatever the terms say.
pub(crate) const MAX_ACK_EVERY: u32 = 16;
/// Shortest interval over which the arrival rate is measured.
const MIN_RATE_INTERVAL: Duration = Duration::from_millis(100);

/// The forward segment rate as the receiver sees it, measured over
/// intervals of about one RTT and smoothed.
#[derive(Debug, Default)]
pub(crate) struct ArrivalRate {
    interval_start: Option<Instant>,
    interval_segments: u64,
    /// Segments per second, smoothed (1/4 weight per interval).
    segments_per_s: Option<f64>,
}

impl ArrivalRate {
    fn on_segment(&mut self, now: Instant, interval: Duration) {
        // An interval counts the segments after the one that opened it.
        let Some(start) = self.interval_start else {
            self.interval_start = Some(now);
            return;
        };
        self.interval_segments += 1;
        let elapsed = now.saturating_since(start);
        if elapsed >= interval.max(MIN_RATE_INTERVAL) {
            let sample = self.interval_segments as f64 / elapsed.as_secs_f64();
            self.segments_per_s = Some(self.segments_per_s.map_or(sample, |r| 0.75 * r + 0.25 * sample));
            self.interval_start = Some(now);
            self.interval_segments = 0;
        }
    }
}

/// What the adaptive choice of k depends on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AckBudget {
    /// The configured `ack_every`.
    pub(crate) floor: u32,
    pub(crate) segments_per_s: Option<f64>,
    pub(crate) srtt: Option<Duration>,
    /// Bits of one ACK on the return link.
    pub(crate) ack_bits: f64,
    pub(crate) return_rate_bps: Option<u64>,
    /// Full-sized segments the receive buffer holds.
    pub(crate) window_segments: u64,
}

impl AckBudget {
    /// Segments per ACK (see the module documentation).
    pub(crate) fn ack_every(&self) -> u32 {
        let Some(rate) = self.segments_per_s.filter(|r| *r > 0.0) else {
            return self.floor;
        };
        let by_rtt = self
            .srtt
            .map_or(0.0, |rtt| (rate * rtt.as_secs_f64() / ACKS_PER_RTT).floor());
        let by_return_link = self.return_rate_bps.map_or(0.0, |bps| {
            (rate * self.ack_bits / (RETURN_SHARE * bps as f64)).ceil()
        });
        let wanted = by_rtt.max(by_return_link).min(f64::from(MAX_ACK_EVERY)) as u32;
        let most = (self.window_segments / 4).clamp(1, u64::from(MAX_ACK_EVERY)) as u32;
        wanted.min(most).max(self.floor)
    }
}

impl Connection {
    /// Whether out-of-order data may wait for the k-th segment: in the
    /// adaptive policy, when it only extends the data held past a hole
    /// (no new hole, none filled) and the sender learns of holes other
    /// than by counting duplicate ACKs: SACK (RFC 6675 counts the SACKed
    /// bytes, which one ACK covering k segments reports as well as k ACKs)
    /// or SNACK. On a narrow return link those ACKs are most of the
    /// traffic while a hole is being repaired. Not while a hole whose
    /// SNACKs went unanswered is left to duplicate ACKs.
    pub(crate) fn may_wait_to_ack(&self, extends_held: bool) -> bool {
        self.config.ack_adaptive
            && extends_held
            && (self.negotiated.sack || self.negotiated.snack)
            && !self.rcv.holes.any_fallen_back()
    }

    /// Data arrived that need not be acknowledged at once: acknowledge
    /// now, or let the delayed-ACK timer (or the next segments) do it.
    pub(crate) fn on_data_that_may_wait(&mut self, now: Instant, push: bool) {
        self.ack.unacked_segments += 1;
        let Some(delay) = self.config.delayed_ack else {
            self.ack.immediate = true;
            return;
        };
        if !self.config.ack_adaptive {
            if self.ack.unacked_segments >= self.config.ack_every {
                self.ack.immediate = true;
            } else if !self.timers.is_armed(Timer::DelayedAck) {
                self.timers.set(Timer::DelayedAck, now + delay);
            }
            return;
        }
        let interval = self.rtt.srtt().unwrap_or(MIN_RATE_INTERVAL);
        self.ack.arrivals.on_segment(now, interval);
        let every = self.adaptive_ack_every();
        self.ack.every = every;
        if push || self.ack.unacked_segments >= every {
            self.ack.immediate = true;
        } else {
            // Restarted by each segment: it fires when the data stops.
            self.timers.set(Timer::DelayedAck, now + delay);
        }
    }

    fn adaptive_ack_every(&self) -> u32 {
        let segment_bytes = u64::from(super::handshake::our_mss(&self.config, self.tuple.local)).max(1);
        // While holes are repaired, ACKs carry SACK blocks and SNACKs
        // beside the timestamps: count the full option space, and the
        // link's framing if the route has some.
        let ack_bytes = super::handshake::ip_header_len(self.tuple.local)
            + 20
            + crate::wire::MAX_OPTIONS_LEN
            + self.config.rate_framing_bytes as usize;
        AckBudget {
            floor: self.config.ack_every,
            segments_per_s: self.ack.arrivals.segments_per_s,
            srtt: self.rtt.srtt(),
            ack_bits: (8 * ack_bytes) as f64,
            return_rate_bps: self.config.ack_return_rate_bps.or(self.config.rate_bps),
            window_segments: self.rcv.buf.capacity() as u64 / segment_bytes,
        }
        .ack_every()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> AckBudget {
        AckBudget {
            floor: 2,
            segments_per_s: Some(9.6),
            srtt: Some(Duration::from_millis(350)),
            ack_bits: 640.0,
            return_rate_bps: None,
            window_segments: 45,
        }
    }

    #[test]
    fn a_narrow_return_link_thins_the_acks() {
        // 115200 bit/s of 1500-byte packets forward: 9.6 segments/s. One
        // ACK of 80 bytes per 2 would take 3072 bit/s of a 2400 bit/s
        // return link.
        let narrow = AckBudget {
            return_rate_bps: Some(2400),
            ..budget()
        };
        assert_eq!(narrow.ack_every(), 11, "at most a quarter of the return link");
        let wide = AckBudget {
            return_rate_bps: Some(115_200),
            ..budget()
        };
        assert_eq!(wide.ack_every(), 2, "the floor");
    }

    #[test]
    fn a_long_round_trip_thins_the_acks_within_the_window() {
        // 8 Mbit/s of 1500-byte packets, 600 ms: 400 segments per RTT.
        let long = AckBudget {
            segments_per_s: Some(666.0),
            srtt: Some(Duration::from_millis(600)),
            window_segments: 1400,
            ..budget()
        };
        assert_eq!(long.ack_every(), MAX_ACK_EVERY);
        let small_window = AckBudget {
            window_segments: 20,
            ..long
        };
        assert_eq!(small_window.ack_every(), 5, "a quarter of the window");
        let tiny_window = AckBudget {
            window_segments: 3,
            ..long
        };
        assert_eq!(tiny_window.ack_every(), 2, "never below the floor");
    }

    #[test]
    fn without_a_measured_rate_the_floor_holds() {
        let unknown = AckBudget {
            segments_per_s: None,
            return_rate_bps: Some(100),
            ..budget()
        };
        assert_eq!(unknown.ack_every(), 2);
    }
}
