//! SNACK, selective negative acknowledgment (docs/spec/snack.md;
//! CCSDS 714.0-B, the SNACK option): the receiver names the holes in what
//! it holds as soon as it sees them (after a configurable delay that lets
//! reordering settle, and once more while a hole persists); the sender
//! resends the named ranges at once instead of waiting for duplicate ACKs.
//!
//! Holes are named in units of the data sender's maximum segment payload
//! (the MSS less the options in use), counted from the segment's
//! acknowledgment number, the size rounded up. The receiver takes that
//! unit to be the largest payload the sender has sent in one segment
//! ([`Connection::snack_unit_for_peer_data`]), which is what the sender
//! reads them in ([`Connection::snack_unit`]).
//!
//! Peers read the unit differently: some count in their own segment size
//! rather than the data sender's. The sender therefore also reads a SNACK
//! in the peer's unit when the two differ ([`Connection::take_snacks`]);
//! and the receiver does not rely on SNACKs being answered at all: a hole
//! named four times and still open a repeat interval later is named no
//! more and left to duplicate ACKs, as plain TCP repairs it
//! ([`HoleTracker::fall_back`]).

use std::ops::Range;
use std::time::Duration;

use super::Connection;
use super::timers::Timer;
use crate::config::SnackAnswer;
use crate::recovery::reordering::ReceiverReordering;
use crate::recovery::rtt::RttEstimator;
use crate::recovery::scoreboard::RangeFit;
use crate::seq::ts_before;
use crate::time::Instant;
use crate::wire::{OptionList, Snack};

/// Times a hole is named: once, and again each time its repair is overdue
/// (a repair can be lost too; the SCPS RI also repeats up to 3 times). A
/// hole still open a repeat interval after its last naming falls back to
/// duplicate ACKs: the sender either lost every repair or does not answer
/// SNACKs as we name them, and SNACKs that go unanswered must not be all a
/// receiver does until the user timeout.
const NAMINGS: u32 = 4;

/// A hole the receiver knows of, in stream offsets.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Hole {
    range: Range<u64>,
    seen_at: Instant,
    /// The newest timestamp received when the hole appeared: a segment
    /// that fills it and is no newer was sent before what overtook it.
    newest_tsval_then: Option<u32>,
    first_named_at: Option<Instant>,
    named_at: Option<Instant>,
    times_named: u32,
    /// Named [`NAMINGS`] times and still open: no longer named; left to
    /// duplicate ACKs.
    fallen_back: bool,
}

/// The holes of the receive buffer, with when each was seen and named.
#[derive(Debug)]
pub(crate) struct HoleTracker {
    holes: Vec<Hole>,
    /// The previous list's allocation, for the next refresh.
    spare: Vec<Hole>,
    /// Time from naming a hole once to its filling, smoothed with its
    /// variation as RFC 6298 does for the RTT: the round trip a SNACK
    /// really takes, queues and the serialisation of the resent data
    /// included, which the handshake's RTT sample does not see. Its
    /// timeout is when a repair is overdue.
    response: RttEstimator,
    /// The newest timestamp (TSval) received, if the peer sends them.
    newest_tsval: Option<u32>,
    /// How long reordering keeps holes open.
    reordering: ReceiverReordering,
    /// The largest payload the peer has sent in one segment.
    largest_payload: u64,
    /// Holes that fell back to duplicate ACKs, in all.
    fallbacks: u64,
}

impl Default for HoleTracker {
    fn default() -> Self {
        HoleTracker {
            holes: Vec::new(),
            spare: Vec::new(),
            // Bounds that never bind: the repeat interval is only ever
            // read once a sample has been taken.
            response: RttEstimator::new(Duration::MAX, Duration::ZERO, Duration::MAX, Duration::ZERO),
            newest_tsval: None,
            reordering: ReceiverReordering::default(),
            largest_payload: 0,
            fallbacks: 0,
        }
    }
}

impl HoleTracker {
    /// Brings the tracked holes in line with the buffer: filled holes go,
    /// new ones are stamped `now`, a hole that shrank or split keeps the
    /// history of the hole it came from. `tsval` is the timestamp of the
    /// segment that changed it, if it had one.
    fn refresh(&mut self, now: Instant, contiguous_end: u64, held: &[Range<u64>], tsval: Option<u32>) {
        self.reordering.expire(now);
        if let Some(tsval) = tsval
            && self.newest_tsval.is_none_or(|newest| ts_before(newest, tsval))
        {
            self.newest_tsval = Some(tsval);
        }
        // Both lists are in order and the buffer only fills, so one walk
        // pairs each gap with the old hole it came from (runs per segment
        // received out of order: no allocation, the old list is reused).
        let old = std::mem::replace(&mut self.holes, std::mem::take(&mut self.spare));
        let mut i = 0;
        // Whether old[i] has passed its history on to a gap.
        let mut inherited = false;
        let mut from = contiguous_end;
        for range in held {
            if range.start > from {
                let gap = from..range.start;
                while old.get(i).is_some_and(|h| h.range.end <= gap.start) {
                    if !inherited {
                        self.filled(now, &old[i], tsval);
                    }
                    i += 1;
                    inherited = false;
                }
                let hole = match old.get(i) {
                    Some(previous) if previous.range.start < gap.end => {
                        inherited = true;
                        Hole {
                            range: gap,
                            ..previous.clone()
                        }
                    }
                    _ => Hole {
                        range: gap,
                        seen_at: now,
                        newest_tsval_then: self.newest_tsval,
                        first_named_at: None,
                        named_at: None,
                        times_named: 0,
                        fallen_back: false,
                    },
                };
                self.holes.push(hole);
            }
            from = from.max(range.end);
        }
        for (k, hole) in old.iter().enumerate().skip(i) {
            if !(k == i && inherited) {
                self.filled(now, hole, tsval);
            }
        }
        self.spare = old;
        self.spare.clear();
    }

    /// `hole` is gone, filled by a segment stamped `tsval`. By an original
    /// (stamped no later than the newest segment when the hole appeared),
    /// how long it lasted is a sample of the path's reordering; by a
    /// repair of a hole named once, how long the repair took is a sample
    /// of the SNACK round trip (a hole named again tells only that one
    /// repair was lost, as Karn's rule has it for RTT samples).
    fn filled(&mut self, now: Instant, hole: &Hole, tsval: Option<u32>) {
        if let (Some(tsval), Some(then)) = (tsval, hole.newest_tsval_then)
            && !ts_before(then, tsval)
        {
            self.reordering.on_sample(now, now.saturating_since(hole.seen_at));
        } else if let (Some(named_at), 1) = (hole.named_at, hole.times_named) {
            self.response.on_sample(now.saturating_since(named_at));
        }
    }

    /// When `hole` is next due: to be named after the delay once seen,
    /// then a repeat interval after each naming (the last of which is due
    /// to fall back); never once it has fallen back.
    fn due_at(hole: &Hole, delay: Duration, repeat: Duration) -> Option<Instant> {
        match hole.named_at {
            _ if hole.fallen_back => None,
            None => Some(hole.seen_at + delay),
            Some(at) => Some(at + repeat),
        }
    }

    fn next_due(&self, delay: Duration, repeat: Duration) -> Option<Instant> {
        self.holes
            .iter()
            .filter_map(|h| Self::due_at(h, delay, repeat))
            .min()
    }

    /// `hole`'s SNACKs went unanswered: name it no more, and acknowledge
    /// every segment out of order at once while it lasts, so that a sender
    /// that repairs on duplicate ACKs (RFC 5681 3.2) gets them.
    fn fall_back(hole: &mut Hole, fallbacks: &mut u64) {
        hole.fallen_back = true;
        *fallbacks += 1;
    }

    /// Some hole is left to duplicate ACKs.
    pub(crate) fn any_fallen_back(&self) -> bool {
        self.holes.iter().any(|h| h.fallen_back)
    }

    pub(crate) fn fallbacks(&self) -> u64 {
        self.fallbacks
    }

    /// A segment with `len` bytes of payload arrived.
    pub(crate) fn on_payload(&mut self, len: usize) {
        self.largest_payload = self.largest_payload.max(len as u64);
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.holes.is_empty()
    }
}

impl Connection {
    /// The receive buffer changed: update the holes, and make sure an ACK
    /// goes out when one is due to be named (now or by the SNACK timer).
    pub(crate) fn refresh_holes(&mut self, now: Instant, tsval: Option<u32>) {
        if !self.negotiated.snack {
            return;
        }
        let (end, held) = (self.rcv.buf.contiguous_end(), self.rcv.buf.out_of_order());
        let tsval = tsval.filter(|_| self.negotiated.timestamps);
        self.rcv.holes.refresh(now, end, held, tsval);
        self.schedule_snack(now);
    }

    /// Arms the SNACK timer for the next hole due, or asks for an ACK now.
    pub(crate) fn schedule_snack(&mut self, now: Instant) {
        match self.rcv.holes.next_due(self.snack_delay(), self.snack_repeat()) {
            Some(at) if at <= now => {
                self.ack.immediate = true;
                self.timers.stop(Timer::Snack);
            }
            Some(at) => self.timers.set(Timer::Snack, at),
            None => self.timers.stop(Timer::Snack),
        }
    }

    /// How long a hole waits before it is named: the configured delay, or
    /// longer once holes were seen filled by late originals.
    pub(crate) fn snack_delay(&self) -> Duration {
        self.rcv
            .holes
            .reordering
            .snack_delay(self.config.snack_delay, self.config.clock_granularity)
    }

    /// How long a named hole may persist before it is named again (or,
    /// named its last time, falls back to duplicate ACKs): the configured
    /// `snack_repeat`, or else the measured SNACK round trip with four
    /// times its variation, once measured; before that the RTT with a
    /// quarter's margin. Every repair that is lost costs this long, and
    /// while it is the oldest hole it holds the window. A repeat that
    /// comes too early costs little: the sender resends only copies older
    /// than a round trip (see [`Connection::copy_answer_age`]).
    fn snack_repeat(&self) -> Duration {
        let granularity = self.config.clock_granularity;
        let response = &self.rcv.holes.response;
        let repeat = match (self.config.snack_repeat, response.srtt()) {
            (Some(fixed), _) => fixed,
            // A quarter of the round trip at least beside the variation:
            // a repeat that leaves just before the repair arrives crosses
            // it and is news of nothing.
            (None, Some(srtt)) => srtt + (response.rttvar() * 4).max(srtt / 4).max(granularity),
            (None, None) => self.rtt.srtt().unwrap_or(self.rtt.rto()) * 5 / 4,
        };
        // Never a burst of repeats, however short the path.
        repeat.max(granularity)
    }

    /// The unit our SNACK offsets and sizes count in when we name holes in
    /// what the peer sent (docs/spec/snack.md, "Units": the data sender's
    /// maximum segment payload): the largest payload the peer has sent in
    /// one segment, as Wireshark's dissector reads SNACKs too; before any
    /// data, what the SYNs settled (the smaller MSS offer less the options
    /// in use). A peer's segments may be smaller than ours (a narrower
    /// path on its side) or larger (it fills our MSS offer when its own
    /// was smaller).
    pub(crate) fn snack_unit_for_peer_data(&self) -> u64 {
        match self.rcv.holes.largest_payload {
            0 => self.negotiated.smss,
            largest => largest,
        }
    }

    /// The unit in which the standard has the peer name holes in our data
    /// (docs/spec/snack.md, "Units"):
    /// our maximum segment payload, the largest we have sent (what the
    /// peer sees of it), else the SMSS. With header compression in force
    /// the SMSS is the payload of a packet of the path's size under the
    /// RI's compressed data header: 1464 bytes on a 1500-byte path with
    /// timestamps, 1472 without (the IP header, 20 or 40 bytes, is in both
    /// packets alike, so this holds for IPv4 and IPv6).
    ///
    /// A segment that needs more header (A, a FIN, options) carries less,
    /// so a hole is not always on the unit grid: see
    /// `Scoreboard::mark_range_lost`.
    pub(crate) fn snack_unit(&self) -> u64 {
        match self.board.largest_payload() {
            0 => self.negotiated.smss,
            largest => largest,
        }
    }

    /// Up to `max` SNACK options for the holes due at `now`, nearest the
    /// ACK point first; the holes are recorded as named. A hole due after
    /// its last naming falls back instead.
    pub(crate) fn take_due_snacks(&mut self, now: Instant, max: usize) -> OptionList<Snack, 6> {
        let mut snacks = OptionList::default();
        if !self.negotiated.snack || self.rcv.holes.is_empty() || max == 0 {
            return snacks;
        }
        let (delay, repeat) = (self.snack_delay(), self.snack_repeat());
        let unit = self.snack_unit_for_peer_data();
        let ack_point = self.rcv.buf.contiguous_end();
        let tracker = &mut self.rcv.holes;
        for hole in &mut tracker.holes {
            if HoleTracker::due_at(hole, delay, repeat).is_none_or(|at| at > now) {
                continue;
            }
            if hole.times_named >= NAMINGS {
                HoleTracker::fall_back(hole, &mut tracker.fallbacks);
                continue;
            }
            if snacks.len() == max.min(OptionList::<Snack, 6>::CAPACITY) {
                continue;
            }
            let Some(snack) = name_hole(&hole.range, ack_point, unit) else {
                // Beyond what the option can say; the SACK blocks and the
                // retransmission timer still cover it.
                continue;
            };
            snacks.push(snack);
            hole.first_named_at.get_or_insert(now);
            hole.named_at = Some(now);
            hole.times_named += 1;
        }
        self.schedule_snack(now);
        snacks
    }

    /// How old a retransmitted copy must be before news of its segment's
    /// absence may be news of the copy's loss, rather than older news that
    /// crossed it: a round trip, the smoothed RTT. A receiver may name a
    /// hole again at any cadence (the SCPS RI repeats it with its next
    /// ACKs); a repeat that left it before the copy arrived reaches us
    /// within a round trip of the copy's leaving, queues and pacing
    /// included, which the smallest RTT seen leaves out.
    pub(crate) fn copy_answer_age(&self) -> Duration {
        self.rtt.srtt().unwrap_or(self.rtt.rto())
    }

    /// The SNACKs of an arriving segment whose acknowledgment offset is
    /// `ack`: marks the named data lost. Returns how many segments now
    /// await retransmission because of them.
    ///
    /// A SNACK is read in our unit, as the standard has it; and, when the
    /// peer's own segments show a different maximum payload, in that unit
    /// as well, since some peers count in their own: of that second
    /// reading only the segments wholly inside are taken, so that a peer
    /// which counts in ours costs at most a segment that was not lost.
    pub(crate) fn take_snacks(&mut self, now: Instant, ack: u64, snacks: &[Snack]) -> usize {
        if !self.negotiated.snack || self.config.snack_answer == SnackAnswer::Ignore {
            return 0;
        }
        let ours = self.snack_unit();
        // The peer's own unit is known only from the data it has sent.
        let theirs = Some(self.rcv.holes.largest_payload).filter(|&unit| unit > 0 && unit != ours);
        // Off by one unit: the faulty peer `snack_answer` imitates.
        let skew = u64::from(self.config.snack_answer == SnackAnswer::NextUnit);
        // The receiver named the hole some time ago; a copy sent since may
        // have reached it.
        let min_age = self.copy_answer_age();
        let reorder_margin = self.config.snack_delay;
        let mut marked = 0;
        for snack in snacks {
            let offset = u64::from(snack.hole_offset) + skew;
            let size = u64::from(snack.hole_size);
            let second = theirs.map(|unit| (unit, RangeFit::Inside));
            for (unit, fit) in std::iter::once((ours, RangeFit::Overlapping)).chain(second) {
                let start = (ack + offset * unit).max(self.snd.una);
                let end = (ack + (offset + size) * unit).min(self.snd.nxt);
                if start < end {
                    marked += self
                        .board
                        .mark_range_lost(start..end, fit, now, min_age, reorder_margin);
                }
            }
        }
        self.stats.snacked_segments += marked as u64;
        // Named segments go at once, whatever the window: the receiver
        // asked for exactly these (the route's rate still paces them).
        self.snack_owed += marked;
        marked
    }
}

/// The SNACK naming `hole`, in `unit`s counted from `ack_point`: offset
/// rounded down and size up, so that the units cover the hole. `None` when
/// the option's 16-bit fields cannot say it.
fn name_hole(hole: &Range<u64>, ack_point: u64, unit: u64) -> Option<Snack> {
    let offset_units = (hole.start - ack_point) / unit;
    let first = ack_point + offset_units * unit;
    let size_units = (hole.end - first).div_ceil(unit);
    Some(Snack {
        hole_offset: u16::try_from(offset_units).ok()?,
        hole_size: u16::try_from(size_units).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn holes_keep_their_history_as_they_shrink_split_and_fill() {
        let mut t = HoleTracker::default();
        t.refresh(at(0), 100, std::slice::from_ref(&(200..300)), None);
        assert_eq!(t.holes.len(), 1);
        t.holes[0].named_at = Some(at(5));
        // The hole 100..200 split by data at 150..160, and a new one beyond.
        t.refresh(at(10), 100, &[150..160, 200..300, 400..500], None);
        let ranges: Vec<_> = t.holes.iter().map(|h| h.range.clone()).collect();
        assert_eq!(ranges, vec![100..150, 160..200, 300..400]);
        assert_eq!(t.holes[0].named_at, Some(at(5)));
        assert_eq!(t.holes[1].named_at, Some(at(5)));
        assert_eq!((t.holes[2].seen_at, t.holes[2].named_at), (at(10), None));
        // The first holes filled.
        t.refresh(at(20), 300, std::slice::from_ref(&(400..500)), None);
        assert_eq!(t.holes.len(), 1);
        assert_eq!(t.holes[0].seen_at, at(10));
    }

    #[test]
    fn only_holes_named_once_time_the_snack_round_trip() {
        let mut t = HoleTracker::default();
        t.refresh(at(0), 0, &[100..200, 300..400], None);
        for hole in &mut t.holes {
            hole.named_at = Some(at(10));
            hole.times_named = 1;
        }
        // The second hole was named again: its first repair was lost.
        t.holes[1].named_at = Some(at(600));
        t.holes[1].times_named = 2;
        // Both fill at 700 ms: a 690 ms sample from the first hole only
        // (the second's 90 ms since its last naming, or 690 ms since its
        // first, would say nothing true of one round trip).
        t.refresh(at(700), 400, &[], None);
        assert_eq!(t.response.srtt(), Some(Duration::from_millis(690)));
        t.refresh(at(700), 400, std::slice::from_ref(&(500..600)), None);
        t.holes[0].named_at = Some(at(710));
        t.holes[0].times_named = 1;
        // A second clean sample, 700 ms, is smoothed in (RFC 6298 gains).
        t.refresh(at(1410), 600, &[], None);
        assert_eq!(t.response.srtt(), Some(Duration::from_micros(691_250)));
    }

    #[test]
    fn a_hole_filled_by_an_original_is_reordering_and_by_a_repair_is_not() {
        let mut t = HoleTracker::default();
        // A segment stamped 1000 arrives beyond the hole 100..200.
        t.refresh(at(0), 100, std::slice::from_ref(&(200..300)), Some(1000));
        t.holes[0].named_at = Some(at(5));
        t.holes[0].times_named = 1;
        // Filled 400 ms later by a segment stamped 990: sent before the one
        // that overtook it, so an original, late: reordering, not repair.
        t.refresh(at(400), 300, &[], Some(990));
        assert_eq!(t.reordering.samples, 1);
        assert_eq!(t.response.srtt(), None);
        assert_eq!(
            t.reordering.snack_delay(Duration::ZERO, Duration::from_millis(1)),
            Duration::from_millis(501)
        );
        // Another hole, filled by a segment stamped after it appeared: a
        // repair, which times the SNACK round trip instead.
        t.refresh(at(500), 300, std::slice::from_ref(&(400..500)), Some(1500));
        t.holes[0].named_at = Some(at(505));
        t.holes[0].times_named = 1;
        t.refresh(at(900), 500, &[], Some(1890));
        assert_eq!(t.reordering.samples, 1);
        assert_eq!(t.response.srtt(), Some(Duration::from_millis(395)));
        // Without timestamps nothing tells them apart: no reordering sample.
        t.refresh(at(1000), 500, std::slice::from_ref(&(600..700)), None);
        t.refresh(at(1400), 700, &[], None);
        assert_eq!(t.reordering.samples, 1);
    }

    #[test]
    fn a_hole_is_due_after_the_delay_then_a_repeat_later_then_falls_back() {
        let delay = Duration::from_millis(50);
        let repeat = Duration::from_millis(400);
        let mut t = HoleTracker::default();
        t.refresh(at(0), 0, std::slice::from_ref(&(100..200)), None);
        assert_eq!(t.next_due(delay, repeat), Some(at(50)));
        t.holes[0].named_at = Some(at(50));
        t.holes[0].times_named = 1;
        assert_eq!(t.next_due(delay, repeat), Some(at(450)));
        // Named its last time: due once more, to fall back, then never.
        t.holes[0].times_named = NAMINGS;
        assert_eq!(t.next_due(delay, repeat), Some(at(450)));
        let mut fallbacks = 0;
        HoleTracker::fall_back(&mut t.holes[0], &mut fallbacks);
        assert_eq!(t.next_due(delay, repeat), None);
        assert!(t.any_fallen_back());
        // A hole that splits keeps its state: both halves are left alone.
        t.refresh(at(500), 0, &[20..30, 100..300], None);
        assert_eq!(t.holes.len(), 2);
        assert!(t.holes.iter().all(|h| h.fallen_back));
    }
}
