//! Segment arrival in the synchronized states and SYN-RECEIVED, in the
//! order RFC 9293 section 3.10.7.4 prescribes: sequence check (with PAWS,
//! RFC 7323 5.3), RST, SYN, ACK, text, FIN. RST and SYN handling follow
//! RFC 5961 (challenge ACKs), answered within the bounds of
//! `unacceptable.rs`.

use super::timers::Timer;
use super::{Connection, ConnectionError, State};
use crate::seq::{from_wire, ts_before};
use crate::time::Instant;
use crate::wire::TcpRepr;

/// RFC 7323 5.5: TS.Recent older than 24 days is no longer trusted.
const PAWS_IDLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(24 * 24 * 3600);

/// The verdict of the timestamp checks.
enum Paws {
    Pass,
    /// An old duplicate (RFC 7323 5.3 R1): acknowledged and dropped.
    Old,
    /// No timestamps although both sides agreed on them (RFC 7323 3.2).
    MissingTimestamps,
}

/// A reset we owe the peer for a segment that did not belong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResetReply {
    pub(crate) seq: u32,
    pub(crate) ack: Option<u32>,
}

impl Connection {
    /// Processes one segment addressed to this connection.
    pub fn handle_segment(&mut self, now: Instant, seg: &TcpRepr<'_>) {
        self.stats.segments_received += 1;
        match self.state {
            State::Closed => return,
            State::SynSent => return self.on_segment_syn_sent(now, seg),
            _ => {}
        }
        let nxt = self.rcv.nxt();
        let Some(seq) = from_wire(self.rcv.irs, seg.seq, nxt) else {
            self.reject(now, seg);
            return;
        };

        // First: PAWS and the sequence number.
        match self.paws(now, seg) {
            Paws::Pass => {}
            Paws::MissingTimestamps => {
                // RFC 7323 3.2: dropped without a word.
                self.stats.segments_rejected += 1;
                return;
            }
            Paws::Old => {
                self.reject_old_duplicate(seg);
                return;
            }
        }
        if !self.is_acceptable(seq, seg) {
            // A retransmitted SYN in SYN-RECEIVED means our SYN-ACK was lost.
            if self.state == State::SynReceived && seg.flags.syn() && !seg.flags.ack() && seq == 0 {
                self.handshake.syn_due = true;
                return;
            }
            self.reject(now, seg);
            // In TIME-WAIT the peer's FIN, already taken, is all that can
            // come back: our last ACK was lost. Restart 2 MSL (RFC 9293
            // 3.10.7.4, eighth).
            if self.state == State::TimeWait && seg.flags.fin() && !seg.flags.rst() {
                self.timers.set(Timer::TimeWait, now + self.config.time_wait);
            }
            return;
        }
        self.silent_since = now;
        self.keepalive_probes = 0;
        self.arm_keepalive(now, !seg.payload.is_empty());
        self.update_ts_recent(now, seq, seg);

        // Second: RST (RFC 5961 3.2: exact match resets, in-window
        // challenges).
        if seg.flags.rst() {
            if seq == nxt {
                self.on_reset(now);
            } else {
                self.answer_unacceptable(now, seg);
            }
            return;
        }

        // Fourth: SYN (RFC 5961 4.2: a challenge ACK, whatever the sequence
        // number). A passively opened SYN-RECEIVED returns to LISTEN,
        // which for us means forgetting the embryonic connection.
        if seg.flags.syn() {
            if self.state == State::SynReceived && self.handshake.passive {
                self.released = true;
                self.close_with(now, Some(ConnectionError::Reset));
            } else {
                self.answer_unacceptable(now, seg);
            }
            return;
        }

        // Fifth: ACK.
        if !seg.flags.ack() {
            return;
        }
        if self.state == State::SynReceived {
            let acceptable = from_wire(self.snd.iss, seg.ack, 1) == Some(1);
            if !acceptable {
                self.reply_reset(seg.ack, None);
                return;
            }
            self.snd.una = 1;
            self.snd.nxt = self.snd.nxt.max(1);
            self.snd.wl1 = seq;
            self.snd.wl2 = 1;
            self.snd.wnd = u64::from(seg.window) << self.negotiated.send_shift;
            self.snd.max_wnd = self.snd.wnd;
            self.establish(now);
        }
        if !self.process_ack(now, seq, seg) {
            return;
        }
        match self.state {
            State::FinWait1 if self.snd.fin_acked() => {
                self.state = State::FinWait2;
                self.linger_if_orphaned(now);
            }
            State::Closing if self.snd.fin_acked() => self.enter_time_wait(now),
            State::LastAck if self.snd.fin_acked() => {
                self.close_with(now, None);
                return;
            }
            State::TimeWait => return,
            _ => {}
        }

        // Sixth (URG) is not supported: urgent data is delivered inline.
        // Seventh and eighth: text and FIN.
        self.process_text(now, seg, seq);
    }

    /// RFC 9293 3.10.7.4, the four acceptability cases, against the
    /// window we advertised. A segment at RCV.NXT is accepted even with a
    /// zero window so that its ACK, RST or window can be processed (the
    /// "special allowance" of the same section); its data is then dropped
    /// for lack of room.
    fn is_acceptable(&self, seq: u64, seg: &TcpRepr<'_>) -> bool {
        let nxt = self.rcv.nxt();
        let wnd = self.rcv.adv_edge.saturating_sub(nxt);
        let len = seg.sequence_len() as u64;
        let in_window = |s: u64| nxt <= s && s < nxt + wnd;
        match (len, wnd) {
            (0, 0) => seq == nxt,
            (0, _) => in_window(seq),
            (_, 0) => seq == nxt,
            _ => in_window(seq) || in_window(seq + len - 1),
        }
    }

    /// RFC 7323 5.3 R1 (PAWS) and 3.2 (a segment without timestamps once
    /// they are in use). RSTs are exempt.
    fn paws(&mut self, now: Instant, seg: &TcpRepr<'_>) -> Paws {
        if !self.negotiated.timestamps || seg.flags.rst() {
            return Paws::Pass;
        }
        let Some(ts) = seg.options.timestamps else {
            return Paws::MissingTimestamps;
        };
        if now.saturating_since(self.ts.recent_at) > PAWS_IDLE_LIMIT {
            // R1 exception: a stale TS.Recent is replaced, not trusted.
            self.ts.recent = ts.tsval;
            self.ts.recent_at = now;
            return Paws::Pass;
        }
        if ts_before(ts.tsval, self.ts.recent) {
            Paws::Old
        } else {
            Paws::Pass
        }
    }

    /// RFC 7323 4.3 R3: remember the timestamp of the segment that the
    /// next ACK will acknowledge.
    fn update_ts_recent(&mut self, now: Instant, seq: u64, seg: &TcpRepr<'_>) {
        if let Some(ts) = seg.options.timestamps.filter(|_| self.negotiated.timestamps)
            && seq <= self.ack.last_sent
            && !ts_before(ts.tsval, self.ts.recent)
        {
            self.ts.recent = ts.tsval;
            self.ts.recent_at = now;
        }
    }

    /// An acceptable RST (RFC 9293 3.10.7.4 second).
    fn on_reset(&mut self, now: Instant) {
        match self.state {
            State::SynReceived if self.handshake.passive => {
                // Back to LISTEN: the application never saw it.
                self.released = true;
                self.close_with(now, Some(ConnectionError::Reset));
            }
            State::SynReceived => self.close_with(now, Some(ConnectionError::Refused)),
            State::Closing | State::LastAck | State::TimeWait => self.close_with(now, None),
            _ => self.close_with(now, Some(ConnectionError::Reset)),
        }
    }

    /// Queues a reset for the peer (for an unacceptable ACK in SYN-SENT or
    /// SYN-RECEIVED: `<SEQ=SEG.ACK><CTL=RST>`).
    pub(crate) fn reply_reset(&mut self, seq: u32, ack: Option<u32>) {
        self.pending_reset = Some(ResetReply { seq, ack });
    }
}
