//! The retransmission queue with its SACK scoreboard (RFC 6675 sections 3
//! and 4).
//!
//! Every segment sent and not yet cumulatively acknowledged is kept with its
//! boundaries, so a retransmission resends exactly what was sent. Each one
//! is marked SACKed, lost, and retransmitted-since-lost; the "pipe" of RFC
//! 6675 (bytes believed to be in the network) is kept up to date as the
//! marks change instead of being recomputed by a scan.

use std::collections::VecDeque;
use std::ops::Range;
use std::time::Duration;

use crate::time::Instant;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Segment {
    /// Sequence offsets; `end` counts the FIN if the segment carries one.
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) fin: bool,
    /// Time of the latest transmission.
    pub(crate) sent_at: Instant,
    pub(crate) transmissions: u32,
    pub(crate) sacked: bool,
    pub(crate) lost: bool,
    /// Retransmitted since it was last marked lost.
    pub(crate) retransmitted: bool,
    /// Last marked lost on news from the receiver (SACKs above it,
    /// duplicate ACKs, a SNACK), not for want of news (a timeout, an
    /// outage).
    pub(crate) lost_on_news: bool,
    /// When it was first retransmitted, and whether on news: Eifel
    /// detection compares the timestamp an ACK echoes with the first
    /// copy's (a later one, a SNACK repeated, would make the first copy's
    /// arrival look like the original's), and only a copy sent on news
    /// shows reordering when it proves needless (connection/ack.rs
    /// `check_spurious`).
    pub(crate) first_resend: Option<(Instant, bool)>,
}

impl Segment {
    pub(crate) fn new(start: u64, end: u64, fin: bool, now: Instant) -> Segment {
        Segment {
            start,
            end,
            fin,
            sent_at: now,
            transmissions: 1,
            sacked: false,
            lost: false,
            retransmitted: false,
            lost_on_news: false,
            first_resend: None,
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Lost and waiting for a retransmission.
    fn awaits_retransmission(&self) -> bool {
        self.lost && !self.retransmitted && !self.sacked
    }

    /// This segment's share of the pipe (RFC 6675 SetPipe): its original
    /// transmission unless deemed lost, plus its retransmission if any.
    fn pipe_share(&self) -> u64 {
        if self.sacked {
            return 0;
        }
        let original = if self.lost { 0 } else { self.len() };
        let retransmission = if self.retransmitted { self.len() } else { 0 };
        original + retransmission
    }
}

/// What a cumulative acknowledgment removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Acked {
    /// Sequence space newly acknowledged (data and FIN).
    pub(crate) bytes: u64,
    /// Send time of the newest acknowledged segment that was sent only
    /// once: a valid RTT sample under Karn's rule.
    pub(crate) rtt_sample_from: Option<Instant>,
    /// Some acknowledged segment had been retransmitted.
    pub(crate) retransmitted: bool,
    /// Send time of the newest transmission among the acknowledged
    /// segments: the ACK was sent no later than that one arrived.
    pub(crate) newest_sent_at: Option<Instant>,
    pub(crate) fin: bool,
    /// When the segment at the front was first retransmitted, if that was
    /// on news of its loss and it was not SACKed: the ACK was sent on the
    /// arrival of that segment, the original or a copy, and its timestamp
    /// echo tells which (connection/ack.rs `check_spurious`).
    pub(crate) front_first_resent_at: Option<Instant>,
}

/// Which segments a range named lost takes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RangeFit {
    /// Those wholly inside, or, when none is, those it overlaps.
    Overlapping,
    /// Only those wholly inside.
    Inside,
}

#[derive(Debug, Default)]
pub(crate) struct Scoreboard {
    segments: VecDeque<Segment>,
    pipe: u64,
    sacked_bytes: u64,
    /// Segments marked lost and not retransmitted since.
    lost_pending: usize,
    /// End of the highest SACKed segment, 0 if none.
    high_sacked: u64,
    /// Every segment ending at or below this offset has been judged by the
    /// SACK loss rule.
    loss_judged_to: u64,
    /// No segment starting below this offset awaits retransmission: where
    /// the search for the next one resumes, so that a recovery costs a walk
    /// of the queue, not a walk per segment sent.
    pending_from: u64,
    /// The latest send time of a segment known to have arrived (SACKed or
    /// acknowledged) that was sent only once, so that the arrival was
    /// that transmission's: any copy sent before it on the same path has
    /// had its chance to arrive (the idea of RACK, RFC 8985).
    delivered_sent_at: Option<Instant>,
    /// Retransmissions in the order they were sent, as (start, send time):
    /// each is judged lost once a later transmission is known to have
    /// arrived (`mark_overtaken_retransmissions`).
    resent: VecDeque<(u64, Instant)>,
    /// Bytes known to have arrived (SACKed or acknowledged) since the
    /// connection began, and copies judged lost (but not by a timeout):
    /// what a rate that follows the path measures
    /// (connection/auto_rate.rs).
    delivered: u64,
    lost: u64,
    /// The most data one segment has carried: the unit a receiver that
    /// measures our segments names holes in (connection/snack.rs).
    largest_payload: u64,
}

impl Scoreboard {
    pub(crate) fn largest_payload(&self) -> u64 {
        self.largest_payload
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    pub(crate) fn front(&self) -> Option<&Segment> {
        self.segments.front()
    }

    pub(crate) fn get(&self, index: usize) -> Option<&Segment> {
        self.segments.get(index)
    }

    /// Bytes believed to be in the network (RFC 6675 "pipe").
    pub(crate) fn pipe(&self) -> u64 {
        self.pipe
    }

    pub(crate) fn sacked_bytes(&self) -> u64 {
        self.sacked_bytes
    }

    /// How many segments are SACKed: all of them lie above the first
    /// unacknowledged one, which they overtook if it was sent before them.
    pub(crate) fn sacked_segments(&self) -> usize {
        self.segments.iter().filter(|s| s.sacked).count()
    }

    pub(crate) fn high_sacked(&self) -> u64 {
        self.high_sacked
    }

    pub(crate) fn has_lost_pending(&self) -> bool {
        self.lost_pending > 0
    }

    /// Bytes delivered and copies judged lost, since the connection
    /// began.
    pub(crate) fn delivered_and_lost(&self) -> (u64, u64) {
        (self.delivered, self.lost)
    }

    /// The latest send time of a segment sent once and known to have
    /// arrived.
    pub(crate) fn delivered_sent_at(&self) -> Option<Instant> {
        self.delivered_sent_at
    }

    /// Applies `change` to segment `index`, keeping the counters right.
    fn update(&mut self, index: usize, change: impl FnOnce(&mut Segment)) {
        let Some(seg) = self.segments.get_mut(index) else {
            return;
        };
        let (pipe_before, sacked_before, pending_before) =
            (seg.pipe_share(), seg.sacked, seg.awaits_retransmission());
        change(seg);
        let (pipe_after, sacked_after, pending_after) =
            (seg.pipe_share(), seg.sacked, seg.awaits_retransmission());
        let len = seg.len();
        if sacked_after && !sacked_before {
            self.delivered += len;
        }
        if pending_after && !pending_before {
            // One more copy judged lost.
            self.lost += len;
            self.pending_from = self.pending_from.min(seg.start);
        }
        self.pipe = self.pipe - pipe_before + pipe_after;
        if sacked_after && !sacked_before {
            self.sacked_bytes += len;
        }
        if pending_after != pending_before {
            if pending_after {
                self.lost_pending += 1;
            } else {
                self.lost_pending -= 1;
            }
        }
    }

    /// Records a first transmission; segments must follow each other.
    pub(crate) fn push(&mut self, segment: Segment) {
        debug_assert!(self.segments.back().is_none_or(|last| last.end == segment.start));
        self.pipe += segment.pipe_share();
        self.largest_payload = self.largest_payload.max(segment.len() - u64::from(segment.fin));
        self.segments.push_back(segment);
    }

    /// Records a retransmission of segment `index`. A segment resent
    /// before it was deemed lost (RFC 6675 NextSeg rule 3, a window probe)
    /// counts twice in the pipe, its original and its copy, as SetPipe has
    /// it.
    pub(crate) fn retransmitted(&mut self, index: usize, now: Instant) {
        self.update(index, |seg| {
            seg.sent_at = now;
            seg.transmissions += 1;
            seg.retransmitted = true;
            seg.first_resend
                .get_or_insert((now, seg.lost && seg.lost_on_news));
        });
        if let Some(seg) = self.segments.get(index) {
            self.resent.push_back((seg.start, now));
        }
    }

    /// Lost retransmissions (the time-ordered rule of RACK, RFC 8985 6.2):
    /// a retransmission still neither SACKed nor acknowledged when a
    /// segment sent more than `reorder_margin` after it is known to have
    /// arrived was lost too. RFC 6675 alone cannot tell, and leaves the
    /// repair to the retransmission timer: on a long path that costs a
    /// timeout per lost copy, and a timeout resends the whole flight.
    /// Returns how many segments now await retransmission again.
    pub(crate) fn mark_overtaken_retransmissions(&mut self, reorder_margin: Duration) -> usize {
        let Some(delivered_sent_at) = self.delivered_sent_at else {
            return 0;
        };
        let mut marked = 0;
        while let Some(&(start, sent_at)) = self.resent.front() {
            if sent_at + reorder_margin >= delivered_sent_at {
                break;
            }
            self.resent.pop_front();
            let index = self.segments.partition_point(|seg| seg.start < start);
            let outstanding = self.segments.get(index).is_some_and(|seg| {
                seg.start == start && seg.sent_at == sent_at && seg.retransmitted && !seg.sacked
            });
            if outstanding {
                self.update(index, |seg| {
                    seg.lost = true;
                    seg.retransmitted = false;
                });
                marked += 1;
            }
        }
        marked
    }

    /// Removes everything below sequence offset `una` (a cumulative ACK).
    pub(crate) fn ack(&mut self, una: u64) -> Acked {
        let mut acked = Acked::default();
        while let Some(front) = self.segments.front() {
            if front.start >= una {
                break;
            }
            if front.end > una {
                // Acknowledged part-way (the peer trimmed it to its window):
                // keep the rest as a shorter segment.
                let cut = una - front.start;
                self.update(0, |seg| {
                    seg.start = una;
                });
                if self.segments[0].sacked {
                    self.sacked_bytes -= cut;
                } else {
                    self.delivered += cut;
                }
                acked.bytes += cut;
                break;
            }
            let Some(seg) = self.segments.pop_front() else {
                break;
            };
            if let (0, false, Some((at, true))) = (acked.bytes, seg.sacked, seg.first_resend) {
                acked.front_first_resent_at = Some(at);
            }
            self.pipe -= seg.pipe_share();
            if seg.sacked {
                self.sacked_bytes -= seg.len();
            } else {
                self.delivered += seg.len();
            }
            if seg.awaits_retransmission() {
                self.lost_pending -= 1;
            }
            acked.bytes += seg.len();
            acked.fin |= seg.fin;
            acked.newest_sent_at = acked.newest_sent_at.max(Some(seg.sent_at));
            if seg.transmissions == 1 {
                acked.rtt_sample_from = Some(seg.sent_at);
                self.delivered_sent_at = self.delivered_sent_at.max(Some(seg.sent_at));
            } else {
                acked.retransmitted = true;
            }
        }
        if self.segments.is_empty() {
            self.high_sacked = 0;
            self.resent.clear();
        }
        acked
    }

    /// Index of the first segment ending after `offset`.
    fn index_after(&self, offset: u64) -> usize {
        self.segments.partition_point(|seg| seg.end <= offset)
    }

    /// Marks the segments wholly inside `blocks` as SACKed; returns the
    /// number of bytes newly SACKed.
    pub(crate) fn sack(&mut self, blocks: &[Range<u64>]) -> u64 {
        let before = self.sacked_bytes;
        for block in blocks {
            let mut index = self.index_after(block.start);
            while let Some(seg) = self.segments.get(index) {
                if seg.start >= block.end {
                    break;
                }
                if seg.start >= block.start && seg.end <= block.end && !seg.sacked {
                    self.high_sacked = self.high_sacked.max(seg.end);
                    if seg.transmissions == 1 {
                        self.delivered_sent_at = self.delivered_sent_at.max(Some(seg.sent_at));
                    }
                    self.update(index, |seg| seg.sacked = true);
                }
                index += 1;
            }
        }
        self.sacked_bytes - before
    }

    /// RFC 6675 IsLost(): a segment is lost once `dup_threshold` SACKed
    /// segments, or more than `(dup_threshold - 1) * smss` SACKed bytes,
    /// lie above it. Marks every such segment not yet judged; returns how
    /// many became lost.
    pub(crate) fn mark_lost_by_sack(&mut self, dup_threshold: u32, smss: u64) -> usize {
        if self.high_sacked <= self.loss_judged_to {
            return 0;
        }
        // Walk down from the highest SACKed segment until enough SACKed
        // data lies above: everything below that point is lost.
        let mut index = self.index_after(self.high_sacked.saturating_sub(1));
        let (mut sacked_segments, mut sacked_bytes) = (0u32, 0u64);
        let boundary = loop {
            let Some(seg) = self.segments.get(index) else {
                return 0;
            };
            if seg.end <= self.loss_judged_to {
                return 0;
            }
            if sacked_segments >= dup_threshold || sacked_bytes > u64::from(dup_threshold - 1) * smss {
                break seg.end;
            }
            if seg.sacked {
                sacked_segments += 1;
                sacked_bytes += seg.len();
            }
            if index == 0 {
                return 0;
            }
            index -= 1;
        };
        let mut marked = 0;
        let mut i = self.index_after(self.loss_judged_to);
        while let Some(seg) = self.segments.get(i) {
            if seg.end > boundary {
                break;
            }
            if !seg.sacked && !seg.lost {
                self.update(i, |seg| {
                    seg.lost = true;
                    seg.lost_on_news = true;
                });
                marked += 1;
            }
            i += 1;
        }
        self.loss_judged_to = boundary;
        marked
    }

    /// A SNACK named `range` as missing at the receiver (docs/spec/snack.md):
    /// the segments inside it that are not SACKed are lost.
    /// The receiver names holes in whole units counted from its ACK point,
    /// rounded outwards, so every lost segment lies wholly inside the range
    /// it names; once a segment shorter than the unit has shifted the
    /// segments off that grid, the range also reaches part-way into the
    /// segments either side, which arrived. Those are marked only when no
    /// segment lies wholly inside (a hole the receiver trimmed part-way).
    /// A segment already resent is resent again only once its copy is
    /// known lost too: a segment sent more than `reorder_margin` after the
    /// copy has arrived, or the copy went out at least `min_age` ago. So a
    /// SNACK that crossed the copy on its way does not send it twice.
    /// Returns how many segments now await retransmission that did not
    /// before.
    /// With [`RangeFit::Inside`] only segments wholly inside count, ever
    /// (a reading of the SNACK that may not be the peer's).
    pub(crate) fn mark_range_lost(
        &mut self,
        range: Range<u64>,
        fit: RangeFit,
        now: Instant,
        min_age: Duration,
        reorder_margin: Duration,
    ) -> usize {
        // From the segment holding the range's first byte to the one
        // holding its last.
        let overlapping = self.index_after(range.start)..=self.index_after(range.end - 1);
        let inside = |seg: &Segment| range.start <= seg.start && seg.end <= range.end;
        let any_inside = fit == RangeFit::Inside
            || overlapping
                .clone()
                .any(|i| self.segments.get(i).is_some_and(inside));
        let mut marked = 0;
        let delivered_sent_at = self.delivered_sent_at;
        for index in overlapping {
            let Some(seg) = self.segments.get(index) else {
                break;
            };
            if any_inside && !inside(seg) {
                continue;
            }
            let overtaken = delivered_sent_at.is_some_and(|d| seg.sent_at + reorder_margin < d);
            let copy_lost = overtaken || now.saturating_since(seg.sent_at) >= min_age;
            let resend = !seg.sacked && !seg.awaits_retransmission() && (!seg.retransmitted || copy_lost);
            if resend {
                self.update(index, |seg| {
                    seg.lost = true;
                    seg.retransmitted = false;
                    seg.lost_on_news = true;
                });
                marked += 1;
            }
        }
        marked
    }

    /// Marks the first unacknowledged segment lost (fast retransmit after
    /// duplicate ACKs or NewReno partial ACKs, `on_news`; or a timer's).
    /// Returns false if it already was lost and not retransmitted, or
    /// there is none.
    pub(crate) fn mark_front_lost(&mut self, on_news: bool) -> bool {
        match self.segments.front() {
            Some(seg) if !seg.sacked && !seg.awaits_retransmission() => {
                self.update(0, |seg| {
                    seg.lost = true;
                    seg.retransmitted = false;
                    seg.lost_on_news = on_news;
                });
                true
            }
            _ => false,
        }
    }

    /// When the latest copy of the first unacknowledged segment left, if
    /// that copy is a retransmission still counted in flight.
    fn front_copy_sent_at(&self) -> Option<Instant> {
        self.segments
            .front()
            .filter(|seg| seg.transmissions > 1 && !seg.awaits_retransmission())
            .map(|seg| seg.sent_at)
    }

    /// Whether the first unacknowledged segment was resent less than
    /// `min_age` ago, or no earlier than `news_sent_by` (the newest
    /// transmission the ACK at hand can have been caused by; a copy sent
    /// in the same burst follows it on the wire, being higher in
    /// sequence): its copy may still arrive.
    pub(crate) fn front_copy_in_flight(
        &self,
        now: Instant,
        min_age: Duration,
        news_sent_by: Option<Instant>,
    ) -> bool {
        self.front_copy_sent_at().is_some_and(|sent| {
            now.saturating_since(sent) < min_age || news_sent_by.is_some_and(|news| sent >= news)
        })
    }

    /// Whether the first unacknowledged segment's latest transmission, the
    /// original or a copy, left at least `answer_due` ago (and it does not
    /// already await retransmission).
    pub(crate) fn front_overdue(&self, now: Instant, answer_due: Duration) -> bool {
        self.segments
            .front()
            .filter(|seg| !seg.awaits_retransmission())
            .is_some_and(|seg| now.saturating_since(seg.sent_at) >= answer_due)
    }

    /// A retransmission timeout: every segment not SACKed is deemed lost,
    /// retransmissions included (RFC 6675 section 5.1, RFC 5681 3.1).
    pub(crate) fn mark_all_lost(&mut self) {
        // For want of news, not because the path lost them.
        let lost = self.lost;
        for i in 0..self.segments.len() {
            if !self.segments[i].sacked {
                self.update(i, |seg| {
                    seg.lost = true;
                    seg.retransmitted = false;
                    seg.lost_on_news = false;
                });
            }
        }
        self.loss_judged_to = self.segments.back().map_or(0, |seg| seg.end);
        self.lost = lost;
    }

    /// Index of the first segment lost and not yet retransmitted (NextSeg
    /// rule 1 of RFC 6675).
    pub(crate) fn next_lost(&mut self) -> Option<usize> {
        if self.lost_pending == 0 {
            return None;
        }
        let from = self.index_after(self.pending_from);
        let found = (from..self.segments.len()).find(|&i| self.segments[i].awaits_retransmission());
        if let Some(i) = found {
            self.pending_from = self.segments[i].start;
        }
        found
    }

    /// NextSeg rule 3 of RFC 6675: the first segment below the highest
    /// SACKed one that is neither SACKed nor retransmitted, starting at or
    /// after `from`.
    pub(crate) fn next_unsacked_below_high_sacked(&self, from: u64) -> Option<usize> {
        let start = self.index_after(from);
        (start..self.segments.len())
            .take_while(|&i| self.segments[i].end <= self.high_sacked)
            .find(|&i| {
                let seg = &self.segments[i];
                !seg.sacked && !seg.retransmitted && seg.start >= from
            })
    }

    /// Clears all SACK marks (the receiver reneged, RFC 2018 section 8).
    pub(crate) fn forget_sacks(&mut self) {
        for i in 0..self.segments.len() {
            if self.segments[i].sacked {
                let len = self.segments[i].len();
                self.update(i, |seg| seg.sacked = false);
                self.sacked_bytes -= len;
            }
        }
        self.high_sacked = 0;
        self.loss_judged_to = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 100;

    /// `n` full segments from sequence offset 1.
    fn board(n: u64) -> Scoreboard {
        let mut board = Scoreboard::default();
        for i in 0..n {
            board.push(Segment::new(1 + i * MSS, 1 + (i + 1) * MSS, false, Instant::ZERO));
        }
        board
    }

    fn seg_range(i: u64) -> Range<u64> {
        1 + i * MSS..1 + (i + 1) * MSS
    }

    #[test]
    fn a_snacked_range_is_resent_and_again_only_once_its_copy_is_lost() {
        let mut b = board(6);
        let sacked = seg_range(3);
        b.sack(std::slice::from_ref(&sacked));
        // Segments 1 to 4 named; 3 is SACKed and stays.
        let named = seg_range(1).start..seg_range(4).end;
        let rtt = Duration::from_millis(100);
        let margin = Duration::ZERO;
        let mark = |b: &mut Scoreboard, at: Instant| {
            b.mark_range_lost(named.clone(), RangeFit::Overlapping, at, rtt, margin)
        };
        assert_eq!(mark(&mut b, Instant::ZERO), 3);
        assert_eq!(b.pipe(), 200, "segments 0 and 5 remain in flight");
        assert_eq!(mark(&mut b, Instant::ZERO), 0, "already pending");
        b.retransmitted(1, Instant::ZERO);
        let soon = Instant::ZERO + rtt / 2;
        assert_eq!(mark(&mut b, soon), 0, "its copy is in flight");
        assert_eq!(mark(&mut b, Instant::ZERO + rtt), 1, "its copy was lost too");
        assert_eq!(b.next_lost(), Some(1));
        // A copy overtaken by a later segment that arrived is lost, however
        // young.
        b.retransmitted(1, soon);
        let later = soon + rtt / 10;
        b.push(Segment::new(seg_range(6).start, seg_range(6).end, false, later));
        assert_eq!(mark(&mut b, later), 0, "nothing sent after it has arrived yet");
        b.sack(std::slice::from_ref(&seg_range(6)));
        assert_eq!(mark(&mut b, later), 1);
    }

    #[test]
    fn a_snack_off_the_segment_grid_marks_only_what_lies_inside_it() {
        // A 40-byte segment has shifted the rest off the receiver's grid of
        // 100-byte units: segments start at 41, 141, 241...
        let mut b = Scoreboard::default();
        b.push(Segment::new(1, 41, false, Instant::ZERO));
        for i in 0..5 {
            b.push(Segment::new(
                41 + i * MSS,
                41 + (i + 1) * MSS,
                false,
                Instant::ZERO,
            ));
        }
        let rtt = Duration::from_millis(100);
        // The segment at 141..241 is missing; from an ACK point of 41 the
        // receiver names it as units 1 and 2 (141 rounded down to 101 and
        // up to 301), which reach into both neighbours.
        assert_eq!(
            b.mark_range_lost(
                101..301,
                RangeFit::Overlapping,
                Instant::ZERO,
                rtt,
                Duration::ZERO
            ),
            1
        );
        assert_eq!(b.next_lost(), Some(2));
        assert_eq!(b.get(2).map(|s| s.start), Some(141));
        // A hole the receiver trimmed part-way (it holds 241..260 of the
        // next segment) lies inside no segment: the one it belongs to goes.
        assert_eq!(
            b.mark_range_lost(
                260..301,
                RangeFit::Overlapping,
                Instant::ZERO,
                rtt,
                Duration::ZERO
            ),
            1
        );
        assert_eq!(b.get(3).map(|s| (s.start, s.lost)), Some((241, true)));
        // Read as a second guess at the peer's unit, the same trimmed range
        // takes nothing: no segment lies wholly inside it.
        assert_eq!(
            b.mark_range_lost(360..401, RangeFit::Inside, Instant::ZERO, rtt, Duration::ZERO),
            0
        );
        assert_eq!(
            b.mark_range_lost(330..460, RangeFit::Inside, Instant::ZERO, rtt, Duration::ZERO),
            1
        );
        assert_eq!(b.get(4).map(|s| (s.start, s.lost)), Some((341, true)));
    }

    #[test]
    fn a_front_copy_is_in_flight_while_younger_than_the_rtt_or_than_the_news() {
        let mut b = board(3);
        let rtt = Duration::from_millis(100);
        let at = |ms: u64| Instant::ZERO + Duration::from_millis(ms);
        assert!(!b.front_copy_in_flight(at(0), rtt, None), "never resent");
        b.mark_front_lost(true);
        assert!(!b.front_copy_in_flight(at(0), rtt, None), "lost, not yet resent");
        b.retransmitted(0, at(10));
        assert!(b.front_copy_in_flight(at(50), rtt, None));
        assert!(!b.front_copy_in_flight(at(110), rtt, None));
        // An ACK caused by a segment sent before the copy, or with it in
        // one burst, cannot tell of the copy, however late it comes.
        assert!(b.front_copy_in_flight(at(500), rtt, Some(at(10))));
        assert!(!b.front_copy_in_flight(at(500), rtt, Some(at(11))));
    }

    #[test]
    fn the_record_of_retransmissions_is_retired_by_cumulative_acks_alone() {
        // No SACK: a copy that arrived is retired once later data is
        // acknowledged, so the record stays as long as the flight at most.
        let mut b = board(6);
        let (t1, t2) = (Instant::from_nanos(1_000_000), Instant::from_nanos(2_000_000));
        b.retransmitted(0, t1);
        b.push(Segment::new(seg_range(6).start, seg_range(6).end, false, t2));
        b.push(Segment::new(seg_range(7).start, seg_range(7).end, false, t2));
        b.ack(seg_range(6).end);
        assert_eq!(
            b.mark_overtaken_retransmissions(Duration::ZERO),
            0,
            "it was acknowledged"
        );
        assert!(b.resent.is_empty());
    }

    #[test]
    fn pipe_follows_sacks_losses_and_retransmissions() {
        let mut b = board(10);
        assert_eq!(b.pipe(), 1000);
        let block = seg_range(2).start..seg_range(4).end;
        assert_eq!(b.sack(std::slice::from_ref(&block)), 300);
        assert_eq!(b.pipe(), 700);
        // Three SACKed segments above 0 and 1: both are lost.
        assert_eq!(b.mark_lost_by_sack(3, MSS), 2);
        assert_eq!(b.pipe(), 500);
        assert_eq!(b.next_lost(), Some(0));
        b.retransmitted(0, Instant::ZERO);
        assert_eq!(b.pipe(), 600);
        assert_eq!(b.next_lost(), Some(1));
        let acked = b.ack(seg_range(1).end);
        assert_eq!(acked.bytes, 200);
        assert!(acked.retransmitted);
        assert_eq!(
            b.pipe(),
            500,
            "segment 1 was lost, never resent: it was not in the pipe"
        );
        assert_eq!(b.sacked_bytes(), 300);
    }

    #[test]
    fn fewer_sacked_segments_than_dupthresh_mark_nothing() {
        let mut b = board(10);
        b.sack(&[seg_range(5)]);
        assert_eq!(b.mark_lost_by_sack(3, MSS), 0);
        b.sack(&[seg_range(7)]);
        assert_eq!(b.mark_lost_by_sack(3, MSS), 0);
        b.sack(&[seg_range(9)]);
        // Three SACKed segments above 0..=4; 6 has only two above it.
        assert_eq!(b.mark_lost_by_sack(3, MSS), 5);
        assert_eq!(b.next_lost(), Some(0));
        assert!(!b.get(6).unwrap().lost);
    }

    #[test]
    fn partial_acks_shorten_the_front_segment() {
        let mut b = board(2);
        let acked = b.ack(51);
        assert_eq!(acked.bytes, 50);
        assert_eq!(b.front().unwrap().start, 51);
        assert_eq!(b.pipe(), 150);
    }

    #[test]
    fn karn_rtt_sample_only_from_segments_sent_once() {
        let mut b = board(3);
        b.retransmitted(2, Instant::from_nanos(5));
        let acked = b.ack(seg_range(1).end);
        assert_eq!(acked.rtt_sample_from, Some(Instant::ZERO));
        let acked = b.ack(seg_range(2).end);
        assert_eq!(acked.rtt_sample_from, None);
    }

    #[test]
    fn timeout_marks_everything_but_sacked_lost() {
        let mut b = board(4);
        b.sack(&[seg_range(3)]);
        b.mark_front_lost(true);
        b.retransmitted(0, Instant::ZERO);
        b.mark_all_lost();
        assert_eq!(b.pipe(), 0);
        assert_eq!(b.next_lost(), Some(0), "the retransmission is deemed lost too");
        assert_eq!((0..4).filter(|&i| b.get(i).unwrap().lost).count(), 3);
    }

    #[test]
    fn reneging_forgets_sack_marks() {
        let mut b = board(4);
        b.sack(&[seg_range(1), seg_range(2)]);
        b.forget_sacks();
        assert_eq!(b.sacked_bytes(), 0);
        assert_eq!(b.pipe(), 400);
        assert_eq!(b.high_sacked(), 0);
    }
}
