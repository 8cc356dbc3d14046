//! What to send next, and building it: at most one segment per call, in
//! priority order: resets, SYN, retransmissions (RFC 6675 NextSeg rule 1),
//! new data (rule 2, with Nagle and sender SWS avoidance), probes, ACKs.

use super::timers::Timer;
use super::window_use::HeldBy;
use super::{Connection, Paced, State};
use crate::recovery::scoreboard::Segment;
use crate::seq::to_wire;
use crate::time::Instant;
use crate::wire::{TcpFlags, TcpOptions, TcpRepr, Timestamps};

/// The next segment, decided before it is built.
#[derive(Debug, Clone, Copy)]
enum Plan {
    Reset {
        seq: u32,
        ack: Option<u32>,
    },
    Syn,
    Retransmit(usize),
    /// `short`: less than a full segment could have carried (Nagle).
    NewData {
        len: u64,
        fin: bool,
        short: bool,
    },
    WindowProbe,
    Keepalive,
    Ack,
}

impl Connection {
    /// The next segment to send, if any. Call until it returns `None`.
    /// The route's token bucket is charged when the segment is made into a
    /// packet (see `compression.rs`), whose size depends on compression.
    pub(crate) fn poll_transmit(&mut self, now: Instant) -> Option<TcpRepr<'_>> {
        let plan = self.plan(now)?;
        Some(self.build(now, plan))
    }

    fn plan(&mut self, now: Instant) -> Option<Plan> {
        if let Some(reply) = self.pending_reset.take() {
            return Some(Plan::Reset {
                seq: reply.seq,
                ack: reply.ack,
            });
        }
        if self.send_reset {
            // RFC 9293 3.10.5 ABORT: <SEQ=SND.NXT><CTL=RST>.
            self.send_reset = false;
            return Some(Plan::Reset {
                seq: to_wire(self.snd.iss, self.snd.nxt),
                ack: None,
            });
        }
        match self.state {
            State::Closed => return None,
            State::SynSent => return self.handshake.syn_due.then_some(Plan::Syn),
            State::SynReceived if self.handshake.syn_due => return Some(Plan::Syn),
            State::Established | State::CloseWait | State::FinWait1 | State::Closing | State::LastAck => {
                let owed = (self.force_retransmit, self.snack_owed);
                let mut held_by_pacer = false;
                if let Some(plan) = self.next_data_segment(now) {
                    if self.pacer_admits(now, Paced::Data) {
                        return Some(plan);
                    }
                    // Not yet: what was owed stays owed.
                    (self.force_retransmit, self.snack_owed) = owed;
                    held_by_pacer = true;
                }
                // Nothing more goes out now. Whether the congestion window is
                // what holds data back, rather than the application, the
                // peer's window, the route's rate, Nagle or silly window
                // avoidance, decides over the round if ACKs may grow it
                // (see `window_use.rs`).
                let held_by = if held_by_pacer {
                    HeldBy::Pacer
                } else if self.waiting_for_congestion_window() {
                    HeldBy::Window
                } else {
                    HeldBy::Other
                };
                self.window_use
                    .on_output_stopped(self.snd.una, self.snd.nxt, self.board.pipe(), held_by);
                if self.persist_due {
                    return Some(Plan::WindowProbe);
                }
            }
            _ => {}
        }
        if self.keepalive_due {
            return Some(Plan::Keepalive);
        }
        // A pure ACK waits for the route's rate like anything else. While
        // it waits, what it will say keeps up with what arrives, so a
        // narrow return link gets fewer, fuller ACKs instead of a queue of
        // stale ones (the ACK thinning the Wang paper asks of asymmetric
        // links).
        (self.ack.immediate && self.pacer_admits(now, Paced::Ack)).then_some(Plan::Ack)
    }

    /// The next segment carrying data: a retransmission (NextSeg rules 1
    /// and 3 of RFC 6675) or new data (rule 2).
    fn next_data_segment(&mut self, now: Instant) -> Option<Plan> {
        if self.outage.is_some() {
            // Only the probe the timer asked for.
            return self
                .force_retransmit
                .then(|| self.next_retransmission())
                .flatten()
                .map(Plan::Retransmit);
        }
        if let Some(index) = self.next_retransmission() {
            return Some(Plan::Retransmit(index));
        }
        if let Some(plan) = self.next_new_data(now) {
            return Some(plan);
        }
        self.next_rescue_retransmission().map(Plan::Retransmit)
    }

    /// Whether the route's token bucket lets the next packet go now; if
    /// not, the pacing timer is set for when it will.
    fn pacer_admits(&mut self, now: Instant, paced: Paced) -> bool {
        let backlog = self.snd.buf.held() as u64;
        let Some(pacer) = self.pacer.as_mut() else {
            return true;
        };
        let ready = pacer.ready_at(now, paced, backlog);
        if ready <= now {
            return true;
        }
        self.timers.set(Timer::Pacing, ready);
        false
    }

    /// Bytes the congestion window allows beyond what is in the pipe,
    /// with NewReno's inflation (RFC 6582) and limited transmit (RFC 3042)
    /// for connections without SACK; in a SACK recovery that cut the
    /// window, what proportional rate reduction allows (RFC 6937).
    fn congestion_allowance(&self) -> u64 {
        if let Some(prr) = &self.recovery.prr {
            return prr.allowance(self.board.pipe(), self.cc.ssthresh(), self.negotiated.smss);
        }
        let mut window = self.cc.window() as i64;
        if !self.negotiated.sack {
            if self.recovery.in_fast_recovery() {
                window += self.recovery.inflation;
            } else if self.config.limited_transmit && self.recovery.dup_acks < self.dup_threshold() {
                window += i64::from(self.recovery.dup_acks.min(2)) * self.negotiated.smss as i64;
            }
        }
        (window.max(0) as u64).saturating_sub(self.board.pipe())
    }

    fn next_retransmission(&mut self) -> Option<usize> {
        let Some(index) = self.board.next_lost() else {
            // Whatever was to be forced out has been acknowledged since.
            self.force_retransmit = false;
            self.snack_owed = 0;
            return None;
        };
        if self.force_retransmit {
            self.force_retransmit = false;
            self.snack_owed = self.snack_owed.saturating_sub(1);
            return Some(index);
        }
        if self.snack_owed > 0 {
            self.snack_owed -= 1;
            return Some(index);
        }
        let len = self.board.get(index)?.len();
        (self.congestion_allowance() >= len.min(self.negotiated.smss)).then_some(index)
    }

    /// Data is waiting (new, or lost and not yet resent) and the congestion
    /// window has no room for a segment of it.
    fn waiting_for_congestion_window(&self) -> bool {
        let waiting = self.snd.nxt < self.snd.data_end() || self.board.has_lost_pending();
        waiting && self.congestion_allowance() < self.negotiated.smss
    }

    /// RFC 6675 NextSeg rule 3: in SACK recovery with nothing lost nor new
    /// to send, a hole below the highest SACKed segment that does not yet
    /// meet the loss rule is resent if the window allows.
    fn next_rescue_retransmission(&mut self) -> Option<usize> {
        if !self.negotiated.sack || !self.recovery.in_fast_recovery() {
            return None;
        }
        // Room first: the search is only worth it when a segment can go.
        if self.congestion_allowance() < self.negotiated.smss {
            return None;
        }
        let Some(index) = self
            .board
            .next_unsacked_below_high_sacked(self.recovery.high_rule3)
        else {
            // Nothing to rescue below the highest SACK: no need to look
            // again until new SACKs raise it.
            self.recovery.high_rule3 = self.board.high_sacked();
            return None;
        };
        self.recovery.high_rule3 = self.board.get(index)?.end;
        Some(index)
    }

    fn next_new_data(&mut self, now: Instant) -> Option<Plan> {
        let start = self.snd.nxt;
        let data_end = self.snd.data_end();
        let unsent = data_end.saturating_sub(start);
        let fin_pending = self.snd.fin_queued && !self.snd.fin_sent();
        if unsent == 0 && !fin_pending {
            return None;
        }
        let window_room = (self.snd.una + self.snd.wnd).saturating_sub(start);
        if unsent == 0 {
            // A FIN alone needs one sequence number of window, not cwnd;
            // without it, the persist timer probes for the window.
            if window_room > 0 {
                return Some(Plan::NewData {
                    len: 0,
                    fin: true,
                    short: true,
                });
            }
            self.arm_persist_if_idle(now);
            return None;
        }
        if self.board.is_empty()
            && self.config.slow_start_after_idle
            && now.saturating_since(self.snd.last_send) > self.rtt.rto()
        {
            // RFC 5681 4.1: after an idle period, at most the restart window.
            self.cc.on_idle_restart(self.initial_window());
        }
        // A full segment: the SMSS (or the adaptive choice), less any
        // header this one needs beyond what the SMSS assumes.
        let full = self.segment_size().min(self.payload_room(false));
        let want = self.cut_at_record_end(start, unsent.min(full));
        let congestion_room = self.congestion_allowance();
        let len = want.min(window_room).min(congestion_room);
        if len < want {
            if congestion_room < want {
                return None;
            }
            // Sender SWS avoidance (RFC 9293 3.8.6.2.1): a partial segment
            // only if it is at least half the largest window offered. With
            // nothing in flight to bring an ACK, the persist timer probes.
            if len == 0 || len < self.snd.max_wnd / 2 {
                self.arm_persist_if_idle(now);
                return None;
            }
        }
        // Nagle (RFC 9293 3.7.4) with Minshall's refinement, as Linux has
        // it: a small segment waits only while an earlier small segment is
        // unacknowledged, so the tail of a bulk write is not held for an
        // RTT. Finishing the stream is never held.
        // The end of a record is not held either: the application said
        // it is complete, and nothing may join it in its segment.
        let small_in_flight = self.snd.small_segment_end > self.snd.una;
        let ends_record = self.ends_record(len, start - 1 + len);
        if len < full && self.config.nagle && small_in_flight && !self.snd.fin_queued && !ends_record {
            return None;
        }
        // The FIN goes with the last data only if it fits the window too
        // (as Linux does), and its header the path (a compressed header
        // spends 2 bytes on it); otherwise it follows on its own.
        let fin =
            fin_pending && start + len == data_end && len < window_room && len <= self.payload_room(true);
        Some(Plan::NewData {
            len,
            fin,
            short: len < full,
        })
    }

    /// With nothing in flight to bring an ACK, only the persist timer will
    /// learn that the peer's window opened.
    fn arm_persist_if_idle(&mut self, now: Instant) {
        if self.board.is_empty() && !self.timers.is_armed(Timer::Persist) {
            self.timers.set(Timer::Persist, now + self.persist_interval());
        }
    }

    fn build(&mut self, now: Instant, plan: Plan) -> TcpRepr<'_> {
        let mut flags = TcpFlags::ACK;
        let mut seq = self.snd.nxt;
        // Stream offset and length of the payload.
        let mut payload = (0u64, 0u64);
        match plan {
            Plan::Reset { seq, ack } => return self.build_reset(seq, ack),
            Plan::Syn => return self.build_syn(now),
            Plan::Retransmit(index) => {
                let Segment { start, end, fin, .. } = self
                    .board
                    .get(index)
                    .cloned()
                    .unwrap_or_else(|| Segment::new(0, 0, false, now));
                seq = start;
                payload = (start - 1, end - start - u64::from(fin));
                if fin {
                    flags.insert(TcpFlags::FIN);
                }
                self.board.retransmitted(index, now);
                self.stats.segments_retransmitted += 1;
                self.stats.bytes_retransmitted += payload.1;
                if index == 0 && self.recovery.in_fast_recovery() && self.timers.is_armed(Timer::Retransmit) {
                    // The oldest segment just went again: give its copy a
                    // full RTO before judging it lost too (as Linux
                    // re-arms on retransmitting the head); otherwise a
                    // hole found late times out while its repair is still
                    // in flight.
                    self.timers.set(Timer::Retransmit, now + self.rtt.rto());
                } else {
                    self.arm_retransmit_if_idle(now);
                }
            }
            Plan::NewData { len, fin, short } => {
                payload = (seq - 1, len);
                self.send_new(now, len, fin, short);
                if fin {
                    flags.insert(TcpFlags::FIN);
                }
                if len > 0 && seq + len == self.snd.data_end() {
                    flags.insert(TcpFlags::PSH);
                }
                self.arm_retransmit_if_idle(now);
            }
            Plan::WindowProbe => {
                // RFC 9293 3.8.6.1: one octet of new data, or the
                // outstanding one again; the persist timer, not the
                // retransmission timer, repeats it.
                self.persist_due = false;
                self.persist_probes += 1;
                self.persist_unanswered += 1;
                let front_data = self
                    .board
                    .front()
                    .map(|f| (f.start, f.end - f.start - u64::from(f.fin)))
                    .filter(|&(_, len)| len > 0);
                if let Some((start, _)) = front_data {
                    seq = start;
                    payload = (start - 1, 1);
                    self.board.retransmitted(0, now);
                } else if !self.board.is_empty() || self.snd.data_end() <= self.snd.nxt {
                    // Only a FIN is waiting: no octet to probe with. An old
                    // sequence number draws an ACK carrying the window, as
                    // a keepalive does.
                    seq = self.snd.una.saturating_sub(1);
                } else {
                    // As much as a small window takes (the SWS override
                    // timeout of RFC 9293 3.8.6.2.1), at least one octet.
                    let window_room = (self.snd.una + self.snd.wnd).saturating_sub(seq);
                    let len = (self.snd.data_end() - seq)
                        .min(self.payload_room(false))
                        .min(window_room)
                        .max(1);
                    let len = self.cut_at_record_end(seq, len);
                    payload = (seq - 1, len);
                    self.send_new(now, len, false, len < self.current_segment_size());
                }
                self.timers.stop(Timer::Retransmit);
                self.timers.set(Timer::Persist, now + self.persist_interval());
                self.cap_at_user_timeout(Timer::Persist);
            }
            Plan::Keepalive => {
                // RFC 9293 3.8.4: SEG.SEQ = SND.NXT - 1, no data.
                self.keepalive_due = false;
                seq = self.snd.una.saturating_sub(1);
            }
            Plan::Ack => {}
        }
        let payload_len = payload.1 as usize;
        let record_end = self.ends_record(payload.1, payload.0 + payload.1);
        if record_end {
            flags.insert(TcpFlags::PSH);
        }
        let options = self.segment_options(now, payload.1, record_end, flags.fin());
        self.stats.snacks_sent += options.snacks.len() as u64;
        let window = self.window_field();
        let ack = self.note_ack_sent();
        if self.corruption_report_due {
            // It did not fit beside this segment's data: an ACK owes it.
            self.ack.immediate = true;
        }
        self.stats.segments_sent += 1;
        if let Some(prr) = self.recovery.prr.as_mut() {
            prr.on_sent(payload.1);
        }
        self.snd
            .buf
            .copy_to_vec(payload.0, payload_len, &mut self.scratch);
        TcpRepr {
            src_port: self.tuple.local.port(),
            dst_port: self.tuple.remote.port(),
            seq: to_wire(self.snd.iss, seq),
            ack,
            flags,
            window,
            urgent: 0,
            options,
            payload: &self.scratch[..payload_len],
        }
    }

    /// Records `len` new bytes (and a FIN) as sent; `short`: less than a
    /// full segment (Nagle).
    fn send_new(&mut self, now: Instant, len: u64, fin: bool, short: bool) {
        let start = self.snd.nxt;
        let end = start + len + u64::from(fin);
        if short {
            self.snd.small_segment_end = end;
        }
        self.board.push(Segment::new(start, end, fin, now));
        self.await_answer(now);
        self.snd.nxt = end;
        self.snd.last_send = now;
        self.stats.bytes_sent += len;
    }

    /// RFC 6298 5.1: start the timer when data goes out and it is not
    /// running.
    fn arm_retransmit_if_idle(&mut self, now: Instant) {
        if !self.timers.is_armed(Timer::Retransmit) && !self.timers.is_armed(Timer::Persist) {
            self.timers.set(Timer::Retransmit, now + self.rtt.rto());
        }
    }

    fn build_reset(&mut self, seq: u32, ack: Option<u32>) -> TcpRepr<'_> {
        self.stats.segments_sent += 1;
        let mut flags = TcpFlags::RST;
        if ack.is_some() {
            flags.insert(TcpFlags::ACK);
        }
        TcpRepr {
            src_port: self.tuple.local.port(),
            dst_port: self.tuple.remote.port(),
            seq,
            ack: ack.unwrap_or(0),
            flags,
            window: 0,
            urgent: 0,
            options: TcpOptions::default(),
            payload: &[],
        }
    }

    /// Our SYN (SYN-SENT) or SYN-ACK (SYN-RECEIVED).
    fn build_syn(&mut self, now: Instant) -> TcpRepr<'_> {
        self.handshake.syn_due = false;
        self.handshake.syn_sent_at = now;
        self.snd.nxt = self.snd.nxt.max(1);
        self.timers.set(Timer::Retransmit, now + self.rtt.rto());
        self.stats.segments_sent += 1;
        let answering = self.state == State::SynReceived;
        let (flags, ack) = if answering {
            self.ack.last_sent = 1;
            self.ack.immediate = false;
            (TcpFlags::SYN | TcpFlags::ACK, to_wire(self.rcv.irs, 1))
        } else {
            (TcpFlags::SYN, 0)
        };
        TcpRepr {
            src_port: self.tuple.local.port(),
            dst_port: self.tuple.remote.port(),
            seq: self.snd.iss,
            ack,
            flags,
            window: self.syn_window(),
            urgent: 0,
            options: self.syn_options(now),
            payload: &[],
        }
    }

    /// Timestamps, the record boundary if the payload ends a record, the
    /// corruption report if one is owed, the SNACKs due, and as many SACK
    /// blocks as fit beside `payload_len` bytes of data (and a FIN if
    /// `fin`) within the path's packet and the 40 option bytes
    /// (`header_room.rs`). What does not fit waits for the next segment
    /// with room. At most two SNACKs go in a segment when SACK is in use,
    /// so that SACK blocks still fit; the other holes due follow in the
    /// next ACKs.
    fn segment_options(&mut self, now: Instant, payload_len: u64, record_end: bool, fin: bool) -> TcpOptions {
        let mut options = TcpOptions {
            record_boundary: record_end,
            timestamps: self.negotiated.timestamps.then(|| Timestamps {
                tsval: self.ts_now(now),
                tsecr: self.ts.recent,
            }),
            ..TcpOptions::default()
        };
        let room = self.option_room(payload_len, fin, &options);
        let fits = |trial: &TcpOptions| room.fits(trial);
        let reported = TcpOptions {
            corruption_experienced: true,
            ..options
        };
        if self.corruption_report_due && fits(&reported) && self.take_corruption_report() {
            options = reported;
            self.stats.corruption_reports_sent += 1;
        }
        if self.negotiated.snack && self.rcv.buf.has_holes() {
            let most = if self.negotiated.sack { 2 } else { 6 };
            let count = (0..=most)
                .rev()
                .find(|&n| {
                    let mut trial = options;
                    (0..n).for_each(|_| {
                        trial.snacks.push(Default::default());
                    });
                    fits(&trial)
                })
                .unwrap_or(0);
            options.snacks = self.take_due_snacks(now, count);
        }
        if self.negotiated.sack && self.rcv.buf.has_holes() {
            for count in (1..=4).rev() {
                let mut trial = options;
                trial.sack_blocks = self.sack_blocks(count);
                if fits(&trial) {
                    return trial;
                }
            }
        }
        options
    }

    /// The window field for a non-SYN segment; moves the advertised edge.
    fn window_field(&mut self) -> u16 {
        let (field, edge) = self.window_to_advertise();
        self.rcv.adv_edge = self.rcv.adv_edge.max(edge);
        field
    }

    /// The window field a non-SYN segment sent now carries, and the right
    /// edge it advertises.
    pub(crate) fn window_to_advertise(&self) -> (u16, u64) {
        let nxt = self.rcv.nxt();
        let shift = self.negotiated.recv_shift;
        // RCV.NXT never passes the advertised edge (text is trimmed to it);
        // the max keeps that an invariant rather than an assumption.
        let edge = self.next_window_edge().max(nxt);
        let field = ((edge - nxt) >> shift).min(65535);
        (field as u16, nxt + (field << shift))
    }

    /// Every segment after the SYN acknowledges RCV.NXT: the pending ACK
    /// obligation is met.
    fn note_ack_sent(&mut self) -> u32 {
        let nxt = self.rcv.nxt();
        self.ack.last_sent = nxt;
        self.ack.unacked_segments = 0;
        self.ack.immediate = false;
        self.timers.stop(Timer::DelayedAck);
        to_wire(self.rcv.irs, nxt)
    }

    /// RFC 3390's initial window unless the configuration names one.
    pub(crate) fn initial_window(&self) -> u64 {
        super::handshake::initial_window(&self.config, self.negotiated.smss)
    }
}
