//! Per-connection compression state: what a header may leave out depends on
//! what the receiver can infer (docs/spec/compression.md, "What a header
//! may leave out": a segment whose fields cannot be reconstructed is
//! dropped and counted, so a sender that is not sure the receiver holds a
//! field sends it).
//!
//! The [`Decompressor`] infers an absent field from what it has received:
//!
//! - sequence number: the end of the highest sequence space received
//!   (sequence number plus payload plus one for FIN or SYN), starting from
//!   the peer's SYN. Highest rather than last, so that a retransmission of
//!   old data does not move it back.
//! - window and acknowledgment number: the last pair received.
//! - TSval, TSecr: the last value received (only for the RI's forms that
//!   carry one timestamp; we send both or neither).
//!
//! The [`Compressor`] leaves a field out only when it knows the peer's
//! decompressor holds the right value, whatever was lost on the way. Its
//! evidence is the peer's acknowledgments ([`Compressor::on_ack_received`]):
//! the peer's TCP acknowledges only bytes that came through the
//! decompressor. The argument assumes that every segment of the connection
//! after the SYNs travels compressed, and that the link loses segments but
//! does not reorder them (as a point-to-point space link does);
//! [`WINDOW_ACK_REFRESH_SEGMENTS`] bounds the damage if it does reorder.

use std::num::NonZeroU8;

use super::header::{CompressedRepr, WindowAck, check_compressible};
// The modular "a is before b" of RFC 7323 timestamps is also the order of
// sequence numbers (RFC 9293 section 3.4).
use crate::seq::ts_before as seq_before;
use crate::wire::{MAX_OPTIONS_LEN, TcpFlags, TcpOptions, TcpRepr, Timestamps, WireError};

/// At most this many segments in a row leave out the window and
/// acknowledgment number: the next one carries them even when the peer is
/// known to hold them. Loss alone never needs it (see [`Compressor`]); it
/// bounds how long a decompressor stays wrong if an old segment overtakes
/// newer ones, or if the peer's context was disturbed (the RI keys its
/// contexts by source address only). 8 costs 6 bytes every 8 segments,
/// under one byte per segment.
pub const WINDOW_ACK_REFRESH_SEGMENTS: u32 = 8;

/// The sending side of header compression for one connection.
///
/// Field policy ([`Compressor::compress`]):
///
/// - **S** (sequence number) is sent on every segment with payload, FIN or
///   RST, and on every retransmission. A pure ACK leaves it out only when
///   its sequence number is the end of everything sent, the peer has
///   acknowledged everything sent (so the peer's decompressor, which infers
///   the end of the highest sequence space it received, has exactly this
///   value), and the previous segment sent had the same sequence number
///   (the RI's decompressor infers the last sequence number received).
/// - **A** (window and acknowledgment number) is sent when either value
///   differs from the last pair sent, until the peer acknowledges a byte
///   first sent after the change: every segment sent since the change
///   carried the new pair, so that acknowledgment proves the peer's
///   decompressor received it (and, without reordering, nothing older
///   since). Also on every retransmission and at least every
///   [`WINDOW_ACK_REFRESH_SEGMENTS`] segments, room permitting (see
///   [`Compressor::compress_within`]: a full data segment has none).
/// - **TS1, TS2**: both, whenever the segment has timestamps.
/// - **RB**: the record boundary option; every other option goes in OPTS.
///
/// A data segment of a one-way transfer with timestamps therefore has a
/// 16-byte header (control 0x62, or 0x66 with PSH) and a pure ACK 18 bytes
/// (0x61), against 32 bytes of TCP header with timestamps.
#[derive(Debug, Clone)]
pub struct Compressor {
    conn_id: NonZeroU8,
    /// End of the highest sequence space sent (modular order).
    highest_end_sent: u32,
    /// Highest acknowledgment number received from the peer, never beyond
    /// `highest_end_sent`.
    peer_acked: u32,
    /// Sequence number of the last segment compressed.
    last_seq: Option<u32>,
    window_ack: Option<SentWindowAck>,
    /// Segments compressed since the last one that carried A.
    without_window_ack: u32,
}

/// The window and acknowledgment number last sent, and whether the peer's
/// decompressor is known to hold them.
#[derive(Debug, Clone, Copy)]
struct SentWindowAck {
    value: WindowAck,
    /// Sequence numbers from here on were first sent after `value` began to
    /// travel, on segments that all carried it.
    first_new_seq: u32,
    /// The peer acknowledged beyond `first_new_seq`.
    confirmed: bool,
}

impl Compressor {
    /// State for a connection whose compressed headers carry `conn_id` (the
    /// id we announced in our SCPS capabilities option) and whose SYN had
    /// sequence number `initial_seq`.
    ///
    /// The peer's decompressor starts from our SYN, so the first byte after
    /// it (`initial_seq + 1`) counts as acknowledged from the start.
    pub fn new(conn_id: NonZeroU8, initial_seq: u32) -> Compressor {
        let next = initial_seq.wrapping_add(1);
        Compressor {
            conn_id,
            highest_end_sent: next,
            peer_acked: next,
            last_seq: None,
            window_ack: None,
            without_window_ack: 0,
        }
    }

    pub fn conn_id(&self) -> NonZeroU8 {
        self.conn_id
    }

    /// Whether `segment` resends sequence space sent before (data or a FIN
    /// starting below the end of the highest sent): what
    /// [`Compressor::compress`] calls a retransmission. A keepalive or an
    /// ACK occupies no sequence space and is never one.
    pub fn resends(&self, segment: &TcpRepr<'_>) -> bool {
        segment.sequence_len() > 0 && seq_before(segment.seq, self.highest_end_sent)
    }

    /// Records an acknowledgment number received from the peer (on any
    /// segment with ACK, compressed or not). Values that acknowledge
    /// nothing new, or data never sent, are ignored.
    pub fn on_ack_received(&mut self, ack: u32) {
        if !seq_before(self.peer_acked, ack) || seq_before(self.highest_end_sent, ack) {
            return;
        }
        self.peer_acked = ack;
        if let Some(sent) = &mut self.window_ack
            && seq_before(sent.first_new_seq, ack)
        {
            sent.confirmed = true;
        }
    }

    /// Whether a segment carrying `window_ack` must send A: the peer's
    /// decompressor is not known to hold that pair. (A may also be sent
    /// when this is false: on retransmissions and as a periodic refresh.)
    pub fn window_ack_required(&self, window_ack: WindowAck) -> bool {
        !self
            .window_ack
            .is_some_and(|sent| sent.confirmed && sent.value == window_ack)
    }

    /// The compressed form of `segment`, leaving out what the peer can infer
    /// (see [`Compressor`]). `retransmission`: the segment resends data or a
    /// FIN sent before (S and A are then always included).
    ///
    /// The state is updated as if the result were sent; a result that is
    /// not sent is no worse than one lost on the link.
    ///
    /// Errors (state unchanged): [`WireError::NotCompressible`] for a SYN
    /// (the caller sends SYNs uncompressed), for ECE, CWR or NS, and for an
    /// urgent pointer without URG; [`WireError::OptionsTooLong`] for options
    /// a TCP header could not carry.
    pub fn compress<'a>(
        &mut self,
        segment: &TcpRepr<'a>,
        retransmission: bool,
    ) -> Result<CompressedRepr<'a>, WireError> {
        Ok(self.compress_within(segment, retransmission, usize::MAX)?.repr)
    }

    /// As [`Compressor::compress`], with a header of at most
    /// `max_header_len` bytes if leaving out A (6 bytes) gets it there: a
    /// data segment sized to fill the path's packet with the RI's minimal
    /// header (docs/spec/compression.md: 16 bytes and 1464 payload bytes in
    /// a 1500-byte packet) has no room for it. Everything else is the
    /// caller's to fit.
    ///
    /// Leaving A out of a segment never makes it wrong at the receiver: the
    /// decompressor puts back the last pair it received, which tells the
    /// peer's TCP nothing new (an older acknowledgment and the window that
    /// went with it; our window's right edge never moves left). When the
    /// peer did not hold the pair ([`Compressed::window_ack_withheld`]), the
    /// caller owes it an acknowledgment that carries it (a pure ACK always
    /// has room). The pair last sent then counts as confirmed only once the
    /// peer acknowledges a byte first sent after this segment, so that the
    /// proof of [`Compressor`] (every segment since carried the pair) still
    /// holds.
    ///
    /// A refresh or a retransmission that cannot carry A goes without it:
    /// the peer holds the pair already, by the same proof.
    pub fn compress_within<'a>(
        &mut self,
        segment: &TcpRepr<'a>,
        retransmission: bool,
        max_header_len: usize,
    ) -> Result<Compressed<'a>, WireError> {
        check_compressible(segment.flags)?;
        if segment.urgent != 0 && !segment.flags.contains(TcpFlags::URG) {
            return Err(WireError::NotCompressible("an urgent pointer but no URG flag"));
        }
        let options_len = segment.options.encoded_len();
        if options_len > MAX_OPTIONS_LEN {
            return Err(WireError::OptionsTooLong(options_len));
        }
        let flags = segment.flags;
        let pure_ack = segment.payload.is_empty() && !flags.fin() && !flags.rst() && !retransmission;
        let seq_inferable = pure_ack
            && segment.seq == self.highest_end_sent
            && self.peer_acked == self.highest_end_sent
            && self.last_seq == Some(segment.seq);
        let window_ack = WindowAck {
            window: segment.window,
            ack: segment.ack,
        };
        let window_ack_inferable = !retransmission
            && self.without_window_ack + 1 < WINDOW_ACK_REFRESH_SEGMENTS
            && !self.window_ack_required(window_ack);

        let timestamps = segment.options.timestamps;
        let options = TcpOptions {
            timestamps: None,
            record_boundary: false,
            ..segment.options
        };
        let mut compressed = CompressedRepr {
            conn_id: self.conn_id.get(),
            flags,
            urgent: segment.urgent,
            window_ack: (!window_ack_inferable).then_some(window_ack),
            seq: (!seq_inferable).then_some(segment.seq),
            tsval: timestamps.map(|ts| ts.tsval),
            tsecr: timestamps.map(|ts| ts.tsecr),
            record_boundary: segment.options.record_boundary,
            options,
            payload: segment.payload,
        };
        let mut withheld = false;
        if compressed.window_ack.is_some() && compressed.header_len()? > max_header_len {
            compressed.window_ack = None;
            withheld = self.window_ack_required(window_ack);
        }

        if compressed.window_ack.is_none() {
            self.without_window_ack += 1;
        } else {
            self.without_window_ack = 0;
            if self.window_ack.is_none_or(|sent| sent.value != window_ack) {
                self.window_ack = Some(SentWindowAck {
                    value: window_ack,
                    first_new_seq: self.highest_end_sent,
                    confirmed: false,
                });
            }
        }
        let end = sequence_end(segment);
        if seq_before(self.highest_end_sent, end) {
            self.highest_end_sent = end;
        }
        if withheld && let Some(sent) = &mut self.window_ack {
            // The peer may acknowledge this segment's bytes without having
            // received the pair: only bytes first sent after it prove it.
            sent.first_new_seq = self.highest_end_sent;
            sent.confirmed = false;
        }
        self.last_seq = Some(segment.seq);
        Ok(Compressed {
            repr: compressed,
            window_ack_withheld: withheld,
        })
    }
}

/// What [`Compressor::compress_within`] made of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Compressed<'a> {
    pub repr: CompressedRepr<'a>,
    /// A was left out for room although the peer does not hold the pair:
    /// an acknowledgment carrying it is owed.
    pub window_ack_withheld: bool,
}

/// The receiving side of header compression for the segments one peer
/// sends on one connection: keep one per (peer address, peer's connection
/// id), as the standard demultiplexes (docs/spec/compression.md).
#[derive(Debug, Clone)]
pub struct Decompressor {
    peer_conn_id: NonZeroU8,
    /// Source port of the segments (the peer's).
    src_port: u16,
    /// Destination port of the segments (ours).
    dst_port: u16,
    /// End of the highest sequence space received (modular order).
    highest_end: u32,
    window_ack: Option<WindowAck>,
    tsval: Option<u32>,
    tsecr: Option<u32>,
}

impl Decompressor {
    /// State for the segments a peer sends from `src_port` to `dst_port`
    /// with connection id `peer_conn_id` (announced in its SCPS
    /// capabilities option), after a SYN with sequence number
    /// `peer_initial_seq`.
    pub fn new(peer_conn_id: NonZeroU8, src_port: u16, dst_port: u16, peer_initial_seq: u32) -> Decompressor {
        Decompressor {
            peer_conn_id,
            src_port,
            dst_port,
            highest_end: peer_initial_seq.wrapping_add(1),
            window_ack: None,
            tsval: None,
            tsecr: None,
        }
    }

    /// Learns from an uncompressed segment the peer sent on this connection
    /// (its SYN-ACK, or its handshake ACK if that came uncompressed): feed
    /// it every such segment. The RI's data segments never carry the window
    /// and acknowledgment number, so they come from whatever carried them
    /// last.
    pub fn observe(&mut self, segment: &TcpRepr<'_>) {
        if segment.flags.ack() {
            self.window_ack = Some(WindowAck {
                window: segment.window,
                ack: segment.ack,
            });
        }
        self.remember(segment);
    }

    /// Parses `segment` (the bytes after the IP header, checksum verified)
    /// and rebuilds the TCP segment; see [`Decompressor::reconstruct`].
    pub fn decompress<'a>(
        &mut self,
        segment: &'a [u8],
        src: std::net::IpAddr,
        dst: std::net::IpAddr,
    ) -> Result<TcpRepr<'a>, WireError> {
        let compressed = CompressedRepr::parse(segment, src, dst, true)?;
        self.reconstruct(&compressed)
    }

    /// Rebuilds the TCP segment from a parsed compressed one, each absent
    /// field from this context, and updates the context.
    ///
    /// Errors (context unchanged; the caller drops and counts the segment):
    /// [`WireError::ConnectionIdMismatch`],
    /// [`WireError::CompressedFieldUnknown`] when a field is absent and the
    /// context has never received it, [`WireError::OptionsTooLong`] when the
    /// options with the timestamps and record boundary added would not fit
    /// a TCP header.
    pub fn reconstruct<'a>(&mut self, compressed: &CompressedRepr<'a>) -> Result<TcpRepr<'a>, WireError> {
        if compressed.conn_id != self.peer_conn_id.get() {
            return Err(WireError::ConnectionIdMismatch {
                expected: self.peer_conn_id.get(),
                got: compressed.conn_id,
            });
        }
        let window_ack =
            compressed
                .window_ack
                .or(self.window_ack)
                .ok_or(WireError::CompressedFieldUnknown(
                    "window and acknowledgment number",
                ))?;
        let mut options = compressed.options;
        if compressed.tsval.is_some() || compressed.tsecr.is_some() {
            let tsval = compressed
                .tsval
                .or(self.tsval)
                .ok_or(WireError::CompressedFieldUnknown("timestamp value (TSval)"))?;
            let tsecr = compressed
                .tsecr
                .or(self.tsecr)
                .ok_or(WireError::CompressedFieldUnknown("timestamp echo reply (TSecr)"))?;
            options.timestamps = Some(Timestamps { tsval, tsecr });
        }
        options.record_boundary |= compressed.record_boundary;
        let options_len = options.encoded_len();
        if options_len > MAX_OPTIONS_LEN {
            return Err(WireError::OptionsTooLong(options_len));
        }
        let segment = TcpRepr {
            src_port: self.src_port,
            dst_port: self.dst_port,
            seq: compressed.seq.unwrap_or(self.highest_end),
            ack: window_ack.ack,
            flags: compressed.flags,
            window: window_ack.window,
            urgent: compressed.urgent,
            options,
            payload: compressed.payload,
        };
        // Whether or not the ACK flag is on: the compressor tracks the pair
        // it sent, not its meaning.
        self.window_ack = Some(window_ack);
        self.remember(&segment);
        Ok(segment)
    }

    /// The context every received segment updates: sequence end and
    /// timestamps.
    fn remember(&mut self, segment: &TcpRepr<'_>) {
        let end = sequence_end(segment);
        if seq_before(self.highest_end, end) {
            self.highest_end = end;
        }
        if let Some(ts) = segment.options.timestamps {
            self.tsval = Some(ts.tsval);
            self.tsecr = Some(ts.tsecr);
        }
    }
}

/// The sequence number after the segment (RFC 9293 section 3.4).
fn sequence_end(segment: &TcpRepr<'_>) -> u32 {
    // Modulo 2^32, as sequence numbers are.
    segment.seq.wrapping_add(segment.sequence_len() as u32)
}
