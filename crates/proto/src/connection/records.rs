//! Records (docs/spec/scps-tp-options.md, "Record boundary, kind 22"; not negotiated):
//! the application may end a record after any byte it wrote; the segment
//! carrying the record's last byte carries the option, and the reader can
//! read record by record.
//!
//! Segments are cut at record ends, so a segment holds at most one
//! boundary and it is always its last byte: the option then says exactly
//! where the record ends, whatever the segment's size, and a
//! retransmission (which resends a segment as first sent, see the
//! scoreboard) carries it again. The receive buffer keeps boundaries by
//! stream offset, so out-of-order arrival keeps them too.

use super::Connection;
use super::StreamError;
use crate::wire::{TcpOptions, Timestamps};

impl Connection {
    /// Queues `data` as the rest of a record and ends the record once all
    /// of it has been taken: returns how much was taken, as
    /// [`Connection::send`] does; call again with what is left until it is
    /// all taken. With empty `data`, ends the record written so far.
    pub fn send_record(&mut self, data: &[u8]) -> Result<usize, StreamError> {
        let n = self.send(data)?;
        if n == data.len() {
            self.snd.buf.end_record();
        }
        Ok(n)
    }

    /// Ends a record after the last byte written. A record holds at least
    /// one byte: with nothing written since the last end, this does
    /// nothing.
    pub fn end_record(&mut self) -> Result<(), StreamError> {
        self.check_sendable()?;
        self.snd.buf.end_record();
        Ok(())
    }

    /// Reads received data into `out`, stopping at the end of a record:
    /// returns the bytes read and whether they finish a record (the peer
    /// marked a boundary after the last of them). Errors and the end of the
    /// stream are reported as by [`Connection::recv`], the end of the
    /// stream as `Ok((0, false))`.
    pub fn recv_record(&mut self, out: &mut [u8]) -> Result<(usize, bool), StreamError> {
        self.read_received(|buf| buf.read_record(out))
    }

    /// How long a segment of new data starting at sequence offset `seq`
    /// may be, given that `len` bytes would otherwise go: up to the next
    /// record end at most, so that the boundary ends the segment, and with
    /// room for the option beside the data within the MSS.
    pub(crate) fn cut_at_record_end(&self, seq: u64, len: u64) -> u64 {
        let start = seq - 1;
        let Some(end) = self.snd.buf.next_record_end(start) else {
            return len;
        };
        let to_end = end - start;
        if to_end > len {
            return len;
        }
        // Too long to carry the option as well: the record's last few
        // bytes go in a segment of their own.
        let room = self
            .negotiated
            .smss
            .saturating_sub(self.record_boundary_overhead())
            .max(1);
        to_end.min(room)
    }

    /// Whether the payload ending at stream offset `end` ends a record.
    pub(crate) fn ends_record(&self, payload_len: u64, end: u64) -> bool {
        payload_len > 0 && self.snd.buf.is_record_end(end)
    }

    /// Option bytes the record boundary adds to a data segment: none with
    /// timestamps (it fits their padding), a padded word without; none
    /// with header compression, where it is a control bit (RB).
    fn record_boundary_overhead(&self) -> u64 {
        if self.compression.in_force() {
            return 0;
        }
        let plain = TcpOptions {
            timestamps: self.negotiated.timestamps.then(Timestamps::default),
            ..TcpOptions::default()
        };
        let with_boundary = TcpOptions {
            record_boundary: true,
            ..plain
        };
        (with_boundary.encoded_len() - plain.encoded_len()) as u64
    }
}
