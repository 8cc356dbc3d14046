//! The receiving side: segment text and FIN (RFC 9293 3.10.7.4 seventh and
//! eighth), when to acknowledge (RFC 1122 4.2.3.2, RFC 5681 4.2), the SACK
//! blocks to report (RFC 2018 section 4) and the window to advertise, with
//! receiver-side silly window avoidance (RFC 9293 3.8.6.2.2).

use super::{Connection, State};
use crate::seq::to_wire;
use crate::time::Instant;
use crate::wire::{OptionList, SackBlock, TcpRepr};

/// How many recent out-of-order ranges we remember for SACK reporting.
const RECENT_RANGES: usize = 4;

impl Connection {
    /// Stores the text of an acceptable segment whose sequence offset is
    /// `seq`, and processes its FIN. Only what lies within the window we
    /// advertised is kept, the FIN included (RFC 9293 3.10.7.4, first): the
    /// buffer may have more room, but the peer must not be able to move
    /// RCV.NXT past the edge we offered.
    pub(crate) fn process_text(&mut self, now: Instant, seg: &TcpRepr<'_>, seq: u64) {
        // Data begins after the SYN if the segment carries one. A segment
        // claiming the SYN's place without a SYN has no data there.
        let mut first = seq + u64::from(seg.flags.syn());
        let mut payload = seg.payload;
        if first == 0 {
            payload = payload.get(1..).unwrap_or_default();
            first = 1;
        }
        let window_end = self.rcv.adv_edge;
        let fits = usize::try_from(window_end.saturating_sub(first)).unwrap_or(usize::MAX);
        let trimmed = payload.len() > fits;
        let payload = &payload[..payload.len().min(fits)];
        if trimmed {
            // Refused for lack of window (a zero-window probe, say): the
            // ACK tells the peer where the window stands.
            self.ack.immediate = true;
        }
        if !payload.is_empty() {
            self.sample_receive_rtt(now, seg);
            // A boundary marks the end of the segment as sent: not if the
            // window cut that off.
            let record_end = seg.options.record_boundary && !trimmed;
            let tsval = seg.options.timestamps.map(|ts| ts.tsval);
            self.receive_payload(now, first, payload, record_end, seg.flags.psh(), tsval);
            if self.state == State::Closed {
                return;
            }
        }
        if seg.flags.fin() && !trimmed {
            let fin = first + payload.len() as u64;
            if fin < window_end {
                self.rcv.fin.get_or_insert(fin);
            }
            // Taken now, or waiting behind a hole: either way, say so at
            // once (RFC 5681 4.2 for the out-of-order case).
            self.ack.immediate = true;
        }
        self.take_fin_if_reached(now);
    }

    fn receive_payload(
        &mut self,
        now: Instant,
        first_data_seq: u64,
        payload: &[u8],
        record_end: bool,
        push: bool,
        tsval: Option<u32>,
    ) {
        if !self.state.can_receive_data() {
            // RFC 9293: text after the peer's FIN is ignored.
            return;
        }
        let start = first_data_seq - 1;
        let end = start + payload.len() as u64;
        if self.released && end > self.rcv.buf.contiguous_end() {
            // Nobody will read it: tell the peer (RFC 1122 4.2.2.13).
            self.abort(now);
            return;
        }
        self.rcv.holes.on_payload(payload.len());
        let had_holes = self.rcv.buf.has_holes();
        let ranges_before = self.rcv.buf.out_of_order().len();
        let stored = self.rcv.buf.insert(start, payload);
        if record_end {
            self.rcv.buf.mark_record_end(end);
        }
        if stored.out_of_order {
            self.remember_out_of_order(start, end);
        }
        if stored.out_of_order || had_holes {
            self.refresh_holes(now, tsval);
        }
        if stored.advanced > 0 {
            self.signal_readable();
        }
        self.tune_on_arrival(now, stored.advanced > 0);
        // RFC 5681 4.2: out-of-order data, data filling a hole, and
        // duplicates are acknowledged at once; in-order data may wait (and
        // in the adaptive policy, data that only extends what is held past
        // a hole).
        let extends_held = stored.out_of_order && self.rcv.buf.out_of_order().len() == ranges_before;
        if (stored.out_of_order || had_holes || stored.advanced == 0) && !self.may_wait_to_ack(extends_held) {
            self.ack.immediate = true;
            return;
        }
        self.on_data_that_may_wait(now, push);
    }

    fn remember_out_of_order(&mut self, start: u64, end: u64) {
        let recent = &mut self.rcv.recent_out_of_order;
        recent.retain(|r| r.end < start || r.start > end);
        recent.push_front(start..end);
        recent.truncate(RECENT_RANGES);
    }

    /// Takes the peer's FIN once everything before it has arrived.
    fn take_fin_if_reached(&mut self, now: Instant) {
        let Some(fin) = self.rcv.fin else {
            return;
        };
        if self.rcv.fin_received || self.rcv.nxt() != fin {
            return;
        }
        self.rcv.fin_received = true;
        self.ack.immediate = true;
        self.signal_readable_always();
        match self.state {
            State::SynReceived | State::Established => self.state = State::CloseWait,
            State::FinWait1 if self.snd.fin_acked() => self.enter_time_wait(now),
            State::FinWait1 => self.state = State::Closing,
            State::FinWait2 => self.enter_time_wait(now),
            _ => {}
        }
    }

    /// End of stream is news even if data was signalled and not read yet.
    fn signal_readable_always(&mut self) {
        self.readable_signalled = false;
        self.signal_readable();
    }

    /// Up to `max` SACK blocks: the ranges holding the most recently
    /// received out-of-order data first, then any others (RFC 2018 4).
    pub(crate) fn sack_blocks(&self, max: usize) -> OptionList<SackBlock, 4> {
        let mut blocks = OptionList::default();
        if !self.negotiated.sack || !self.rcv.buf.has_holes() || max == 0 {
            return blocks;
        }
        let held = self.rcv.buf.out_of_order();
        let mut chosen: [usize; 4] = [usize::MAX; 4];
        let mut count = 0;
        let recent_first = self
            .rcv
            .recent_out_of_order
            .iter()
            .filter_map(|r| held.iter().position(|h| h.start <= r.start && r.start < h.end));
        let others = (0..held.len()).rev();
        for index in recent_first.chain(others) {
            if count == max.min(4) {
                break;
            }
            if !chosen[..count].contains(&index) {
                chosen[count] = index;
                count += 1;
            }
        }
        for &index in &chosen[..count] {
            let range = &held[index];
            blocks.push(SackBlock {
                left: to_wire(self.rcv.irs, 1 + range.start),
                right: to_wire(self.rcv.irs, 1 + range.end),
            });
        }
        blocks
    }

    /// The right edge to advertise now: the old one, unless the buffer
    /// allows moving it by at least min(buffer / 2, MSS) (receiver SWS
    /// avoidance); limited to what the scaled window field can express.
    pub(crate) fn next_window_edge(&self) -> u64 {
        let nxt = self.rcv.nxt();
        let shift = self.negotiated.recv_shift;
        let expressible = nxt + (65535u64 << shift);
        // After a FIN, RCV.NXT is one past the buffer's reach.
        let possible = (1 + self.rcv.buf.limit()).min(expressible).max(nxt);
        let old = self.rcv.adv_edge;
        let threshold = (self.rcv.buf.capacity() as u64 / 2).min(u64::from(self.our_mss()));
        if possible < old + threshold {
            return old;
        }
        // Round down to what the field can say exactly, never moving left.
        (nxt + (((possible - nxt) >> shift) << shift)).max(old)
    }

    /// The window currently offered to the peer, bytes.
    pub(crate) fn receive_window(&self) -> u64 {
        self.rcv.adv_edge.saturating_sub(self.rcv.nxt())
    }

    /// After the application read: if the window it frees would double
    /// what the peer may send, tell the peer now rather than at the next
    /// ACK (a window update, RFC 1122 4.2.3.3).
    pub(crate) fn consider_window_update(&mut self, window_before: u64) {
        if !self.state.can_receive_data() {
            return;
        }
        let offered = self.next_window_edge().saturating_sub(self.rcv.nxt());
        if offered > window_before && offered >= 2 * window_before.max(1) {
            self.ack.immediate = true;
        }
    }

    fn our_mss(&self) -> u16 {
        super::handshake::our_mss(&self.config, self.tuple.local)
    }
}
