//! How much a segment may carry beside the header it needs, so that its
//! packet never exceeds the path's: the MSS plus the IP and TCP fixed
//! headers (RFC 9293 3.7.1), 1500 bytes on an Ethernet-sized path.
//!
//! The SMSS assumes the header most data segments have: a TCP header with
//! the timestamps option, or, with header compression in force, the RI's
//! data header (docs/spec/compression.md: control 0x62, 16 bytes
//! with timestamps, 1464 payload bytes in a 1500-byte packet). A segment
//! that needs more carries less:
//!
//! - a compressed segment that must carry the window and acknowledgment
//!   number (A, 6 bytes: the pair changed and the peer does not hold it
//!   yet, as on a connection with data both ways), or a FIN (2 bytes:
//!   the second control byte and its pad): new data is sized for them when
//!   it is first sent ([`Connection::payload_room`]);
//! - the corruption-experienced report, while one is owed;
//! - SNACKs, SACK blocks: only as many as fit beside the payload
//!   ([`OptionRoom`]); the others wait for the next ACK, which has room.
//!
//! A retransmission resends exactly the segment the scoreboard recorded,
//! sized for the header it needed when first sent. Its header may need
//! more at resend time: the pair may have changed since, and a
//! retransmission normally carries A. The compressor then leaves A out for
//! room (`Compressor::compress_within`) and, if the peer does not hold the
//! pair, the ACK obligation stays, so a pure ACK carries it. Nothing else
//! a retransmission carries can grow: the FIN was counted when the segment
//! was recorded, the record boundary is a control bit, options only go
//! where they fit. So a resent segment fits the path too, without keeping
//! every recorded segment 6 bytes short of what the RI sends.

use super::Connection;
use super::compression::data_header_len;
use crate::seq::to_wire;
use crate::wire::{MAX_OPTIONS_LEN, TcpOptions, Timestamps, WindowAck};

/// Room for options in a segment being built.
#[derive(Debug, Clone, Copy)]
pub(crate) enum OptionRoom {
    /// A TCP header: options of at most this many bytes, padding included.
    Tcp { bytes: u64 },
    /// A compressed header of at most `header_bytes`, with A and the FIN
    /// as the segment will have them.
    Compressed {
        header_bytes: u64,
        timestamps: bool,
        window_ack: bool,
        fin: bool,
    },
}

impl OptionRoom {
    /// Whether a segment may carry `options` (timestamps and record
    /// boundary included, as a TCP header has them).
    pub(crate) fn fits(&self, options: &TcpOptions) -> bool {
        if options.encoded_len() > MAX_OPTIONS_LEN {
            return false;
        }
        match *self {
            OptionRoom::Tcp { bytes } => options.encoded_len() as u64 <= bytes,
            OptionRoom::Compressed {
                header_bytes,
                timestamps,
                window_ack,
                fin,
            } => data_header_len(timestamps, window_ack, fin, options) <= header_bytes,
        }
    }
}

impl Connection {
    /// The window and acknowledgment number a segment sent now carries.
    fn next_window_ack(&self) -> WindowAck {
        WindowAck {
            window: self.window_to_advertise().0,
            ack: to_wire(self.rcv.irs, self.rcv.nxt()),
        }
    }

    /// The options every data segment carries: the timestamps, when in
    /// use, and the corruption report while one is owed (it goes with the
    /// next segment that has room, and a new segment makes room).
    fn options_owed(&self) -> TcpOptions {
        TcpOptions {
            timestamps: self.negotiated.timestamps.then(Timestamps::default),
            corruption_experienced: self.corruption_report_due,
            ..TcpOptions::default()
        }
    }

    /// The largest payload a segment of new data sent now may carry, with
    /// a FIN if `fin`: the SMSS less the header it needs beyond what the
    /// SMSS assumes (see the module documentation). Never below one byte,
    /// whatever MSS the peer offered.
    pub(crate) fn payload_room(&self, fin: bool) -> u64 {
        let owed = self.options_owed();
        let assumed = TcpOptions {
            timestamps: owed.timestamps,
            ..TcpOptions::default()
        };
        let extra = if self.compression.in_force() {
            let timestamps = self.negotiated.timestamps;
            let window_ack = self.compression.window_ack_required(self.next_window_ack());
            data_header_len(timestamps, window_ack, fin, &owed)
                .saturating_sub(data_header_len(timestamps, false, false, &assumed))
        } else {
            // A FIN is a flag in a TCP header: it costs nothing.
            (owed.encoded_len() - assumed.encoded_len()) as u64
        };
        self.negotiated.smss.saturating_sub(extra).max(1)
    }

    /// The room for options in a segment being built with `payload_len`
    /// bytes (and a FIN if `fin`) whose header carries `base` anyway
    /// (timestamps, record boundary).
    pub(crate) fn option_room(&self, payload_len: u64, fin: bool, base: &TcpOptions) -> OptionRoom {
        if self.compression.in_force() {
            return OptionRoom::Compressed {
                header_bytes: (self.compressed_segment_limit() as u64).saturating_sub(payload_len),
                timestamps: self.negotiated.timestamps,
                // As `compress_within` will decide: A if the peer does not
                // hold the pair, so that options never crowd it out.
                window_ack: self.compression.window_ack_required(self.next_window_ack()),
                fin,
            };
        }
        // The MSS counts options and payload (RFC 6691); what the base
        // options leave of their padding is free.
        OptionRoom::Tcp {
            bytes: self
                .negotiated
                .mss
                .saturating_sub(payload_len)
                .max(base.encoded_len() as u64),
        }
    }
}
