//! Receive-buffer autotuning (`Config::recv_buffer_auto`): dynamic
//! right-sizing of the window we offer, after Fisk and Feng's "Dynamic
//! right-sizing in TCP" and the receive-buffer moderation Linux applies
//! between its `tcp_rmem` default and maximum.
//!
//! A window smaller than the path's bandwidth-delay product caps a
//! transfer at window / RTT whatever the sender does; one far larger
//! costs memory on every connection. So the connection starts with the
//! configured buffer and measures, once per round trip, how many bytes
//! the application read in it: that is what the path and the sender
//! delivered and the application kept up with. A window of twice that
//! lets the sender keep the path full through a round of loss recovery;
//! a sender still in slow start doubles its rate every round trip and
//! uses the window we offer now a round trip from now, so the growth the
//! reads showed over their best round before is allowed for as well.
//! While holes are repaired (a lossy link's retransmissions take a round
//! trip or more each), the window must also cover the data that arrived
//! past them and waits: the most held past holes in the round is added.
//! And if in the round the peer's data (in order or not) reached the
//! right edge advertised as the round began while the application kept
//! up (it left less than half the buffer unread), the window is what held
//! the peer back, and what it could send is not seen: the need is at
//! least twice the buffer, as a sender's window doubles in slow start to
//! find the path's. The buffer grows when the need exceeds it, up to
//! `recv_buffer_max`; it never shrinks, so the right edge already
//! advertised never moves left.
//!
//! A round also ends as soon as the application has read up to the
//! right edge advertised when it began, if the window was open then (at
//! least half the buffer): the peer filled what was offered in less than
//! a round trip and the application kept up, so the window is what holds
//! the transfer back, and waiting out the round trip would only delay the
//! growth. A round in which the application read nothing grows nothing:
//! the buffer of an application that does not read stays as it is, and
//! the window closes as it fills. A round that ran long (the sender or
//! the application paused) is scaled to one round trip before it counts.
//!
//! The round trip is the receiver's own estimate: with timestamps, the
//! time from one of our segments to the first full data segment echoing
//! its timestamp (RFC 7323's round-trip measurement, made by the data's
//! receiver), smoothed; without them, the RTT estimator's (for a pure
//! receiver, the handshake's sample). Storage is taken only as data fills
//! the buffer (`ring.rs`), so a large maximum costs memory only when the
//! data needs it.

use std::time::Duration;

use super::Connection;
use crate::time::Instant;
use crate::wire::TcpRepr;

/// Segments of room added to twice a round's bytes, for the variation of
/// rounds.
const SLACK_SEGMENTS: u64 = 16;

/// A segment of at least this payload (or the connection's full
/// segment, if smaller) counts as full for round-trip samples: RFC 9293's
/// default IPv4 MSS.
const FULL_SEGMENT_MIN: u64 = 536;

/// Weight of a new sample in the smoothed round trip (RFC 6298's alpha).
const RTT_GAIN: u32 = 8;

/// Samples longer than this are not round trips (a timestamp echoed from
/// long ago, after an idle time).
const RTT_SAMPLE_MAX: Duration = Duration::from_secs(60);

/// The autotuning state of a connection's receiving side.
#[derive(Debug, Clone, Default)]
pub(crate) struct Autotune {
    /// The current measurement round; `None` before the first in-order
    /// data.
    round: Option<Round>,
    /// The most bytes per round trip the application has read so far.
    best: u64,
    /// The receiver's round trip, smoothed, from timestamps.
    rtt: Option<Duration>,
    /// The timestamp of ours the last sample's segment echoed.
    last_echo: Option<u32>,
    /// When in-order data last arrived.
    last_arrival: Instant,
}

/// A measurement round.
#[derive(Debug, Clone, Copy)]
struct Round {
    /// When it began.
    start: Instant,
    /// The stream offset the application had read to by then.
    read: u64,
    /// The right edge advertised as it began, as a stream offset.
    edge: u64,
    /// The window was at least half the buffer as it began: the
    /// application had kept up.
    open: bool,
    /// The most bytes held past holes in it: from the first hole to the
    /// end of the data received out of order.
    held: u64,
    /// Data (in order or not) reached `edge` while the application had
    /// left less than half the buffer unread.
    filled: bool,
}

impl Autotune {
    /// For a buffer of `recv_buffer` bytes: the reads' growth counts from
    /// a quarter of it, what a buffer of that size serves per round trip
    /// with twice the margin for a sender that doubles its rate.
    pub(crate) fn new(recv_buffer: usize) -> Autotune {
        Autotune {
            best: recv_buffer as u64 / 4,
            ..Autotune::default()
        }
    }

    /// Takes a round-trip sample.
    fn sample(&mut self, sample: Duration) {
        self.rtt = Some(match self.rtt {
            None => sample,
            Some(rtt) => rtt - rtt / RTT_GAIN + sample / RTT_GAIN,
        });
    }
}

/// The buffer a round of `per_round` bytes read calls for, after a best
/// round of `best`: twice the round and some segments of `segment` bytes,
/// grown by the reads' growth over the best round (at most doubled, as a
/// sender in slow start at most doubles its rate in a round trip).
fn buffer_needed(per_round: u64, best: u64, segment: u64) -> u64 {
    let base = 2 * per_round + SLACK_SEGMENTS * segment;
    let growth = per_round.saturating_sub(best).min(best.max(1));
    base + (u128::from(base) * u128::from(growth) / u128::from(best.max(1))) as u64
}

impl Connection {
    /// A segment with data arrived: with timestamps, the time since the
    /// segment of ours it echoes went out is a round trip of the
    /// receiver's. Only the first segment echoing a timestamp is taken
    /// (the others of its flight waited behind it), and only a full one:
    /// a window probe or the sliver of a nearly closed window went when
    /// the sender's persist timer or our window let it, not a round trip
    /// after what it echoes.
    pub(crate) fn sample_receive_rtt(&mut self, now: Instant, seg: &TcpRepr<'_>) {
        let full = seg.payload.len() as u64 >= self.negotiated.smss.min(FULL_SEGMENT_MIN);
        if !self.config.recv_buffer_auto || !self.negotiated.timestamps || !full {
            return;
        }
        let Some(ts) = seg.options.timestamps.filter(|ts| ts.tsecr != 0) else {
            return;
        };
        if self.rcv.tune.last_echo == Some(ts.tsecr) {
            return;
        }
        self.rcv.tune.last_echo = Some(ts.tsecr);
        // Our clock ticks in milliseconds; a reply within the tick
        // counts as one.
        let elapsed = self.ts_now(now).wrapping_sub(ts.tsecr);
        let sample = Duration::from_millis(u64::from(elapsed.max(1)));
        if sample <= RTT_SAMPLE_MAX {
            self.rcv.tune.sample(sample);
        }
    }

    /// The receiver's round trip: the timestamps' estimate, else the RTT
    /// estimator's.
    fn receive_rtt(&self) -> Option<Duration> {
        self.rcv.tune.rtt.or_else(|| self.rtt.srtt())
    }

    /// Data arrived at `now`: the span held past holes is noted, and if
    /// the data made bytes readable (`in_order`) the round may end.
    pub(crate) fn tune_on_arrival(&mut self, now: Instant, in_order: bool) {
        if !self.config.recv_buffer_auto {
            return;
        }
        let held = self.rcv.buf.held_past_holes();
        let received_end = self.rcv.buf.contiguous_end() + held;
        let kept_up = 2 * self.rcv.buf.readable() <= self.rcv.buf.capacity();
        let smss = self.negotiated.smss;
        if let Some(round) = &mut self.rcv.tune.round {
            round.held = round.held.max(held);
            // The peer has sent (nearly, RFC 9293 3.8.6.2.1) to the right
            // edge advertised as the round began, and not because the
            // application left the buffer full.
            round.filled |= kept_up && received_end + smss > round.edge;
        }
        if in_order {
            self.rcv.tune.last_arrival = now;
            self.consider_round_end(now);
        }
    }

    /// The application read: the round may end (the time is that of the
    /// last arrival, by when what was read had come).
    pub(crate) fn tune_after_read(&mut self) {
        if self.config.recv_buffer_auto {
            self.consider_round_end(self.rcv.tune.last_arrival);
        }
    }

    /// The round ends if a round trip has passed since it began, or if
    /// the application has read up to the right edge advertised as it
    /// began (the peer filled the window sooner); the buffer grows if
    /// what the application read in the round calls for more.
    fn consider_round_end(&mut self, now: Instant) {
        let read = self.rcv.buf.read_offset();
        let Some(rtt) = self.receive_rtt().filter(|rtt| !rtt.is_zero()) else {
            return;
        };
        let Some(round) = self.rcv.tune.round else {
            self.begin_round(now, read);
            return;
        };
        let elapsed = now.saturating_since(round.start);
        let copied = read - round.read;
        // The sender leaves less than a segment of the window unused
        // rather than send a sliver (RFC 9293 3.8.6.2.1).
        let read_to_edge = round.open && read + self.negotiated.smss > round.edge;
        if elapsed < rtt && !read_to_edge {
            return;
        }
        // A round that ran long is scaled to one round trip; a window
        // filled sooner counts as it is (the round trip would have
        // carried more).
        let per_round = if elapsed >= rtt {
            (u128::from(copied) * rtt.as_nanos() / elapsed.as_nanos()) as u64
        } else {
            copied
        };
        let best = self.rcv.tune.best;
        self.rcv.tune.best = best.max(per_round);
        // A round in which the application read nothing grows nothing.
        if copied > 0 {
            // While holes are repaired the window holds what arrived past
            // them as well as a round trip's new data. Never past the
            // maximum, nor past what the window field can say (a peer
            // that does not scale windows sees 64 KiB at most).
            let expressible = 65535u64 << self.negotiated.recv_shift;
            let mut needed = buffer_needed(per_round, best, self.negotiated.smss).saturating_add(round.held);
            if round.filled {
                // The window held the peer back: what it could send is
                // not seen, so the buffer doubles, as a window probes in
                // slow start.
                needed = needed.max(2 * self.rcv.buf.capacity() as u64);
            }
            let needed = needed.min(expressible);
            let target = usize::try_from(needed)
                .unwrap_or(usize::MAX)
                .min(self.config.recv_buffer_limit());
            if target > self.rcv.buf.capacity() {
                self.rcv.buf.grow(target);
            }
        }
        self.begin_round(now, read);
    }

    /// A round begins, the application having read to stream offset
    /// `read`. Its edge is the one last advertised, which the peer has or
    /// will have within half a round trip: a buffer just grown is offered
    /// by our next segment, and data reaching the old edge in the round
    /// shows that the window held the peer back until then, as a sender's
    /// window in slow start keeps doubling on the ACKs of the round before.
    fn begin_round(&mut self, now: Instant, read: u64) {
        self.rcv.tune.round = Some(Round {
            start: now,
            read,
            // The SYN takes sequence offset 0.
            edge: self.rcv.adv_edge.saturating_sub(1),
            open: 2 * self.receive_window() >= self.rcv.buf.capacity() as u64,
            held: self.rcv.buf.held_past_holes(),
            filled: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_steady_round_needs_twice_its_bytes_and_some_segments() {
        assert_eq!(buffer_needed(100_000, 100_000, 1448), 200_000 + 16 * 1448);
        // Below the best round nothing grows (the caller does not ask).
        assert_eq!(buffer_needed(100_000, 120_000, 1448), 200_000 + 16 * 1448);
    }

    #[test]
    fn growing_reads_are_allowed_for_up_to_a_doubling() {
        let base = 2 * 200_000 + 16 * 1000;
        assert_eq!(buffer_needed(200_000, 100_000, 1000), 2 * base, "doubled");
        assert_eq!(
            buffer_needed(150_000, 100_000, 1000),
            (2 * 150_000 + 16_000) * 3 / 2
        );
        assert_eq!(
            buffer_needed(1_000_000, 100_000, 1000),
            2 * (2 * 1_000_000 + 16_000),
            "at most a doubling"
        );
    }

    #[test]
    fn the_round_trip_is_smoothed() {
        let mut tune = Autotune::new(256 << 10);
        assert_eq!(tune.best, 64 << 10);
        tune.sample(Duration::from_millis(600));
        assert_eq!(tune.rtt, Some(Duration::from_millis(600)));
        tune.sample(Duration::from_millis(1400));
        assert_eq!(tune.rtt, Some(Duration::from_millis(700)));
    }
}
