//! The ACK field of an arriving segment, seen from the sending side:
//! window updates (RFC 9293 3.10.7.4), SACK (RFC 2018), RTT samples
//! (RFC 6298, RFC 7323 4), congestion control, duplicate ACKs and entry to
//! fast recovery (RFC 5681 3.2, RFC 6582, RFC 6675 5).

use std::ops::Range;
use std::time::Duration;

use super::timers::Timer;
use super::{Connection, Event};
use crate::cc::AckEvent;
use crate::recovery::Phase;
use crate::recovery::prr::Prr;
use crate::recovery::scoreboard::Acked;
use crate::seq::{from_wire, ts_before};
use crate::time::Instant;
use crate::wire::TcpRepr;

impl Connection {
    /// Processes the ACK of an acceptable segment whose sequence offset is
    /// `seq`. Returns false when the segment must be dropped.
    pub(crate) fn process_ack(&mut self, now: Instant, seq: u64, seg: &TcpRepr<'_>) -> bool {
        let una = self.snd.una;
        let Some(ack) = from_wire(self.snd.iss, seg.ack, una) else {
            self.reject(now, seg);
            return false;
        };
        // RFC 9293: an ACK for something not yet sent gets an ACK and is
        // dropped (and, repeated, shows the ends out of step:
        // `unacceptable.rs`). RFC 5961 5.2: one older than the largest
        // window the peer ever offered gets an ACK too.
        if ack > self.snd.nxt {
            self.ack_of_unsent(now, seg);
            return false;
        }
        self.ack_in_step();
        if ack + self.snd.max_wnd.max(1) < una {
            self.reject(now, seg);
            return false;
        }
        if ack < una {
            // An old duplicate ACK: ignore the field, keep the text.
            return true;
        }
        // The peer answers: whatever the link layer last said, it is up.
        self.end_outage(now);
        // The peer is alive: probes it answered do not count against it.
        if self.persist_unanswered > 0 {
            self.persist_unanswered = 0;
            self.stalled_since = None;
        }

        let window = u64::from(seg.window) << self.negotiated.send_shift;
        let window_changed = window != self.snd.wnd;
        if seg.options.corruption_experienced {
            self.on_corruption_reported(now);
        }
        let sacked_before = self.board.sacked_bytes();
        let (counts_before, newest_before) =
            (self.board.delivered_and_lost(), self.board.delivered_sent_at());
        let newly_sacked = self.take_sack_blocks(seg);
        let snacked = self.take_snacks(now, ack, seg.options.snacks.as_slice());
        // SND.WL1/SND.WL2: only a newer segment may change the window.
        if self.snd.wl1 < seq || (self.snd.wl1 == seq && self.snd.wl2 <= ack) {
            let reopened = self.snd.wnd == 0 && window > 0;
            self.snd.wnd = window;
            self.snd.wl1 = seq;
            self.snd.wl2 = ack;
            self.snd.max_wnd = self.snd.max_wnd.max(window);
            if reopened {
                self.on_window_reopened();
            }
        }

        let mut restart_rto = false;
        if ack > una {
            restart_rto = self.on_new_ack(now, ack, seg);
        } else if self.is_duplicate_ack(seg, window_changed, newly_sacked) {
            self.recovery.dup_acks += 1;
            if self.recovery.in_fast_recovery() && !self.negotiated.sack {
                // RFC 6582 3.2 step 4: inflate by one segment per dup ACK.
                self.recovery.inflation += self.negotiated.smss as i64;
            }
            self.resend_front_if_overdue(now);
        }
        if let Some(prr) = self.recovery.prr.as_mut() {
            // RFC 6937 DeliveredData: the cumulative ACK's advance plus the
            // change in SACKed bytes (which falls as SACKed data is
            // acknowledged).
            let sacked_after = self.board.sacked_bytes();
            prr.on_delivered((self.snd.una - una + sacked_after).saturating_sub(sacked_before));
        }
        self.detect_losses(now, snacked > 0);
        self.report_delivery(now, counts_before, newest_before);
        self.arm_sending_timers(now, restart_rto);
        true
    }

    /// Tells the route's pacer what this ACK says the path delivered and
    /// lost, and the RTT of the newest segment that arrived with it (sent
    /// once, and newer than any before: its arrival sent the ACK, so the
    /// receiver's hold is not in it).
    fn report_delivery(
        &mut self,
        now: Instant,
        (delivered_before, lost_before): (u64, u64),
        newest_before: Option<Instant>,
    ) {
        let Some(pacer) = self.pacer.as_mut() else {
            return;
        };
        let (delivered, lost) = self.board.delivered_and_lost();
        let newest = self.board.delivered_sent_at();
        let rtt = newest
            .filter(|_| newest > newest_before)
            .map(|sent| now.saturating_since(sent));
        pacer.on_delivery(now, delivered - delivered_before, lost - lost_before, rtt);
    }

    /// Converts the SACK blocks of `seg` to offsets and marks the
    /// scoreboard; returns the bytes newly SACKed.
    fn take_sack_blocks(&mut self, seg: &TcpRepr<'_>) -> u64 {
        if !self.negotiated.sack || seg.options.sack_blocks.is_empty() {
            return 0;
        }
        let (iss, una, nxt) = (self.snd.iss, self.snd.una, self.snd.nxt);
        let mut ranges: [Range<u64>; 4] = Default::default();
        let mut count = 0;
        for block in seg.options.sack_blocks.as_slice() {
            let left = from_wire(iss, block.left, una);
            let right = from_wire(iss, block.right, una);
            // Blocks below the cumulative ACK (D-SACK, RFC 2883) or beyond
            // what was sent are ignored.
            if let (Some(left), Some(right)) = (left, right)
                && una <= left
                && left < right
                && right <= nxt
            {
                ranges[count] = left..right;
                count += 1;
            }
        }
        self.board.sack(&ranges[..count])
    }

    /// RFC 5681 section 2 "duplicate acknowledgment"; with SACK, RFC 6675
    /// section 2: an ACK that SACKs data not SACKed before.
    fn is_duplicate_ack(&self, seg: &TcpRepr<'_>, window_changed: bool, newly_sacked: u64) -> bool {
        if self.board.is_empty() || self.snd.wnd == 0 {
            return false;
        }
        if self.negotiated.sack {
            return newly_sacked > 0;
        }
        seg.payload.is_empty() && !seg.flags.syn() && !seg.flags.fin() && !window_changed
    }

    /// The cumulative ACK moved to `ack`. Returns whether the retransmission
    /// timer should restart.
    fn on_new_ack(&mut self, now: Instant, ack: u64, seg: &TcpRepr<'_>) -> bool {
        let smss = self.negotiated.smss;
        // How far the front segment was overtaken, if it was resent (the
        // one case Eifel detection reads it): the SACKed span above it in
        // full-sized segments, or the SACKed segments, whichever is more.
        // A stream of small messages overtakes a segment by many segments
        // and few full-sized ones' worth of bytes (and the loss rule
        // counts segments).
        let overtaken_by = if self.board.front().is_some_and(|s| s.first_resend.is_some()) {
            let span = self
                .board
                .high_sacked()
                .saturating_sub(self.snd.una)
                .div_ceil(smss);
            span.max(self.board.sacked_segments() as u64)
        } else {
            0
        };
        let acked = self.board.ack(ack);
        self.check_spurious(seg, &acked, overtaken_by);
        self.snd.una = ack;
        self.snd.buf.release_to(ack - 1);
        let data_acked = acked.bytes - u64::from(acked.fin);
        self.stats.bytes_acked += data_acked;

        // Without timestamps, an ACK covering a retransmission is ambiguous
        // even for the segments it covers that were sent once (Karn's rule,
        // RFC 6298 section 3): no sample.
        let ambiguous = acked.retransmitted && !self.negotiated.timestamps;
        let sample = self
            .rtt_sample(now, seg, acked.rtt_sample_from)
            .filter(|_| !ambiguous);
        if let Some(sample) = sample {
            self.rtt.on_sample(sample);
        }
        self.consecutive_timeouts = 0;
        self.stalled_since = None;
        self.soft_errors.progress();
        self.recovery.dup_acks = 0;
        if let Some((window, ssthresh)) = self.window_before_timeouts.take()
            && self.losses_are_corruption(now)
        {
            // The timeouts were not congestion: resume at the prior rate.
            self.cc.restore(window, ssthresh);
        }

        let mut restart_rto = true;
        let flight = self.snd.nxt - self.snd.una;
        match self.recovery.phase {
            Phase::Fast { .. } | Phase::Timeout { .. } => {
                if let Some(ended) = self.recovery.end_if_covered(ack) {
                    if matches!(ended, Phase::Fast { reduced: true, .. }) {
                        self.cc.on_recovery_end(now, flight, smss);
                    }
                } else if self.recovery.in_fast_recovery() {
                    restart_rto = self.on_partial_ack(now, &acked);
                } else {
                    // Slow start continues after a timeout (RFC 5681 3.1).
                    self.grow_window(now, &acked, sample);
                }
            }
            Phase::Open => self.grow_window(now, &acked, sample),
        }
        if self.want_writable && self.snd.buf.free() > 0 && self.state.can_send_data() {
            self.want_writable = false;
            self.events.push_back(Event::Writable);
        }
        restart_rto
    }

    /// A partial ACK during fast recovery; returns whether the
    /// retransmission timer restarts. With SACK the scoreboard already says
    /// what to resend, and the timer restarts as on any new ACK (RFC 6298
    /// 5.3). Without SACK, NewReno (RFC 6582 3.2 step 5) retransmits the
    /// next hole at once and deflates the window, and restarts the timer on
    /// the first partial ACK only (the "impatient" variant), so that a long
    /// recovery falls back to it.
    fn on_partial_ack(&mut self, now: Instant, acked: &Acked) -> bool {
        if self.negotiated.sack {
            return true;
        }
        // The ACK was sent when the newest segment it covers arrived, or
        // earlier: it cannot tell of a copy of the front sent after that.
        self.resend_front(now, acked.newest_sent_at);
        let acked = acked.bytes;
        self.recovery.inflation -= acked as i64;
        if acked >= self.negotiated.smss {
            self.recovery.inflation += self.negotiated.smss as i64;
        }
        let first = !self.recovery.partial_ack_seen;
        self.recovery.partial_ack_seen = true;
        first
    }

    fn grow_window(&mut self, now: Instant, acked: &Acked, rtt_sample: Option<Duration>) {
        let delivery_rtt = acked
            .rtt_sample_from
            .filter(|_| !acked.retransmitted)
            .map(|sent| now.saturating_since(sent));
        let event = AckEvent {
            now,
            acked: acked.bytes,
            delivery_rtt,
            paced: self.pacer.is_some(),
            smss: self.negotiated.smss,
            srtt: self.rtt.srtt(),
            rtt_sample,
            min_rtt: self.rtt.min_rtt(),
            cwnd_limited: self
                .window_use
                .window_limited(self.cc.window(), self.cc.ssthresh()),
            snd_una: self.snd.una,
            snd_nxt: self.snd.nxt,
        };
        self.cc.on_ack(&event);
    }

    /// An RTT sample: from the echoed timestamp when timestamps are in use
    /// (RFC 7323 section 4), else from a segment sent once (Karn's rule,
    /// RFC 6298 section 3).
    fn rtt_sample(&self, now: Instant, seg: &TcpRepr<'_>, sent_once_at: Option<Instant>) -> Option<Duration> {
        if self.negotiated.timestamps {
            let ts = seg.options.timestamps?;
            let elapsed_ms = self.ts_now(now).wrapping_sub(ts.tsecr);
            // A value from the future or older than 2^31 ms is no sample.
            return (elapsed_ms < 1 << 31).then(|| Duration::from_millis(u64::from(elapsed_ms)));
        }
        sent_once_at.map(|sent| now.saturating_since(sent))
    }

    /// Eifel detection (RFC 3522, recovery/reordering.rs): the ACK that
    /// covers a retransmitted front segment echoes a timestamp older than
    /// its first copy, so it was sent on the original's arrival, which
    /// `overtaken_by` segments SACKed above it had overtaken.
    fn check_spurious(&mut self, seg: &TcpRepr<'_>, acked: &Acked, overtaken_by: u64) {
        let (Some(first_copy_at), Some(ts)) = (acked.front_first_resent_at, seg.options.timestamps) else {
            return;
        };
        if self.negotiated.timestamps && ts_before(ts.tsecr, self.ts_now(first_copy_at)) {
            self.recovery.reordering.on_spurious(overtaken_by);
            self.stats.spurious_retransmissions += 1;
        }
    }

    /// The duplicate-ACK threshold: the configured one, or more once
    /// spurious retransmissions showed the path reorders.
    pub(crate) fn dup_threshold(&self) -> u32 {
        self.recovery.reordering.dup_threshold(self.config.dup_threshold)
    }

    /// Marks losses and, when they call for it, enters fast recovery
    /// (RFC 5681 3.2 steps 1-2, RFC 6582 3.2 step 2, RFC 6675 5 step 4);
    /// a SNACK (`snacked`) calls for it at once.
    fn detect_losses(&mut self, now: Instant, snacked: bool) {
        let smss = self.negotiated.smss;
        if self.negotiated.sack {
            self.board.mark_lost_by_sack(self.dup_threshold(), smss);
        }
        // Without SACK only cumulative ACKs tell of arrivals, and a copy
        // they overtake is acknowledged with them, so nothing is marked;
        // the call still retires the record of copies that arrived.
        let reorder_margin = self.config.snack_delay.max(self.config.clock_granularity);
        let resent_lost = self.board.mark_overtaken_retransmissions(reorder_margin);
        self.stats.lost_retransmissions += resent_lost as u64;
        if !self.recovery.may_enter_fast(self.snd.una) || self.board.is_empty() {
            return;
        }
        let by_dup_acks = self.recovery.dup_acks >= self.dup_threshold();
        let by_sack = self.negotiated.sack && self.board.has_lost_pending();
        if !(by_dup_acks || by_sack || snacked) {
            return;
        }
        let flight = self.snd.nxt - self.snd.una;
        // Losses put down to corruption are repaired without slowing down
        // (docs/spec/scps-tp-options.md, "Corruption experienced, kind 23").
        let reduce = !self.losses_are_corruption(now);
        if reduce {
            self.cc.on_congestion_event(now, flight, smss);
        }
        self.recovery.enter_fast(self.snd.nxt, reduce);
        if reduce && self.negotiated.sack {
            self.recovery.prr = Some(Prr::start(flight));
        }
        // The first unacknowledged segment goes again at once, whatever
        // the window (RFC 5681 3.2 step 2, RFC 6675 5 step 4.3); after a
        // SNACK, the first segment it named.
        if snacked {
            self.force_retransmit = true;
        } else {
            self.resend_front(now, None);
        }
        if !self.negotiated.sack {
            self.recovery.inflation = i64::from(self.dup_threshold()) * smss as i64;
        }
        self.stats.fast_recoveries += 1;
    }

    /// Resends the first unacknowledged segment at once, whatever the
    /// window, unless a copy of it is already on its way: a SNACK, or an
    /// earlier partial ACK, sent it too recently for the ACK that calls for
    /// it now to know of it (`news_sent_by`: see
    /// [`crate::recovery::scoreboard::Scoreboard::front_copy_in_flight`]).
    fn resend_front(&mut self, now: Instant, news_sent_by: Option<Instant>) {
        if !self
            .board
            .front_copy_in_flight(now, self.copy_answer_age(), news_sent_by)
        {
            self.board.mark_front_lost(true);
            self.force_retransmit = true;
        }
    }

    /// A duplicate ACK that comes more than a round trip, and a reordering
    /// window of a quarter of the smallest RTT (RACK's, RFC 8985 6.2),
    /// after the front segment's latest transmission left was sent after
    /// it should have arrived: that transmission was lost. With SNACK and
    /// without SACK nothing else tells the sender so once the receiver has
    /// named the hole its last time (it repeats a SNACK a bounded number of
    /// times), or when its SNACKs named other data (a receiver counting
    /// in another unit) and recovery, already entered, leaves duplicate
    /// ACKs unanswered; the retransmission timer, backed off, would hold
    /// the window behind the hole for seconds. (With SACK the time-order
    /// rule of RACK finds lost copies.)
    fn resend_front_if_overdue(&mut self, now: Instant) {
        if !self.negotiated.snack || self.negotiated.sack {
            return;
        }
        let (Some(srtt), Some(min_rtt)) = (self.rtt.srtt(), self.rtt.min_rtt()) else {
            return;
        };
        let answer_due = srtt + (min_rtt / 4).max(self.config.clock_granularity);
        if self.board.front_overdue(now, answer_due) {
            self.board.mark_front_lost(false);
            self.force_retransmit = true;
        }
    }

    /// The peer's window opened after we were probing it: bytes sent as
    /// probes were most likely dropped for lack of room; send them again
    /// first rather than waiting for duplicate ACKs.
    fn on_window_reopened(&mut self) {
        self.timers.stop(Timer::Persist);
        if self.persist_probes > 0 && self.board.mark_front_lost(false) {
            self.force_retransmit = true;
        }
        self.persist_probes = 0;
    }

    /// Keeps exactly one of the retransmission and persist timers running
    /// while something is outstanding (RFC 6298 5.2-5.3, RFC 9293 3.8.6.1).
    pub(crate) fn arm_sending_timers(&mut self, now: Instant, restart_rto: bool) {
        if !self.state.is_synchronized() {
            return;
        }
        let unsent = self.snd.nxt < self.snd.data_end() || (self.snd.fin_queued && !self.snd.fin_sent());
        if self.snd.wnd == 0 && (unsent || !self.board.is_empty()) {
            self.timers.stop(Timer::Retransmit);
            if !self.timers.is_armed(Timer::Persist) {
                self.timers.set(Timer::Persist, now + self.persist_interval());
            }
            return;
        }
        self.timers.stop(Timer::Persist);
        if self.board.is_empty() {
            self.timers.stop(Timer::Retransmit);
        } else if restart_rto || !self.timers.is_armed(Timer::Retransmit) {
            self.timers.set(Timer::Retransmit, now + self.rtt.rto());
        }
    }

    /// The persist interval: the RTO, doubled per unanswered probe, within
    /// the configured bounds.
    pub(crate) fn persist_interval(&self) -> Duration {
        let factor = 1u32 << self.persist_probes.min(16);
        self.rtt
            .rto()
            .saturating_mul(factor)
            .clamp(self.config.persist_min, self.config.persist_max)
    }
}
