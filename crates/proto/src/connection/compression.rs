//! Header compression on a connection (docs/spec/compression.md; the
//! negotiation, bit 0x10 and the conn id byte of the SCPS capabilities
//! option: docs/spec/scps-tp-options.md).
//!
//! Each side offers the compression bit with an id of its own (1..255,
//! chosen by the endpoint); compression is in force only if both SYNs set
//! it. From then on every segment the connection sends, except SYNs, is an
//! IP protocol 105 packet whose header carries our id, and the peer's
//! compressed segments, carrying its id, are demultiplexed to us by the
//! endpoint. The codec and the reasoning about which fields may be left
//! out are in [`crate::wire::compressed`]; here are the two contexts, fed
//! with what the connection sends and receives, and the counters.

use std::net::IpAddr;
use std::num::NonZeroU8;

use super::Connection;
use crate::time::Instant;
use crate::wire::{
    CompressedRepr, Compressor, Decompressor, TcpFlags, TcpOptions, TcpRepr, WindowAck, WireError,
    build_compressed_packet_as, build_segment_packet,
};

/// What a compressed segment for a connection without compression is.
const NOT_IN_FORCE: WireError =
    WireError::NotCompressible("a connection that did not negotiate header compression");

/// Bytes of the compressed header of a full data segment as the RI sends
/// it (docs/spec/compression.md, "The sizes that result": id, control byte 1, sequence
/// number, both timestamps when in use, checksum; control 0x62 with
/// timestamps, the window and acknowledgment number left out): 16 bytes
/// with timestamps, 8 without.
pub(crate) fn data_header_bytes(timestamps: bool) -> u64 {
    data_header_len(timestamps, false, false, &TcpOptions::default())
}

/// Bytes of the compressed header our compressor gives a segment with data
/// (or a FIN): the sequence number and, when in use, both timestamps
/// always; the window and acknowledgment number if `window_ack`; the
/// second control byte and the pad a FIN costs if `fin`; `options` in OPTS
/// (timestamps and the record boundary go in their own fields and bits,
/// so they cost nothing here). Counted by the codec itself; options a
/// header cannot hold count as `u64::MAX`.
pub(crate) fn data_header_len(timestamps: bool, window_ack: bool, fin: bool, options: &TcpOptions) -> u64 {
    let mut flags = TcpFlags::ACK;
    if fin {
        flags.insert(TcpFlags::FIN);
    }
    let header = CompressedRepr {
        conn_id: 1,
        flags,
        urgent: 0,
        window_ack: window_ack.then_some(WindowAck { window: 0, ack: 0 }),
        seq: Some(0),
        tsval: timestamps.then_some(0),
        tsecr: timestamps.then_some(0),
        record_boundary: false,
        options: TcpOptions {
            timestamps: None,
            record_boundary: false,
            ..*options
        },
        payload: &[],
    };
    header.header_len().map_or(u64::MAX, |len| len as u64)
}

/// Compression state of a connection.
#[derive(Debug, Default)]
pub(crate) struct HeaderCompression {
    /// The id we offer (and, once in force, put in our compressed headers);
    /// `None` when the configuration does not offer compression or the
    /// endpoint had no id free.
    our_id: Option<NonZeroU8>,
    /// Both SYNs set the bit: the contexts of the two directions.
    contexts: Option<Box<Contexts>>,
    counters: CompressionCounters,
}

#[derive(Debug)]
struct Contexts {
    compressor: Compressor,
    decompressor: Decompressor,
}

/// What the statistics report.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CompressionCounters {
    pub(crate) segments_sent: u64,
    pub(crate) segments_received: u64,
    /// Compressed segments for this connection that could not be parsed or
    /// reconstructed (dropped).
    pub(crate) failures: u64,
}

impl HeaderCompression {
    pub(crate) fn offering(our_id: Option<NonZeroU8>) -> HeaderCompression {
        HeaderCompression {
            our_id,
            ..HeaderCompression::default()
        }
    }

    /// The id to put in our SCPS capabilities option when we offer
    /// compression.
    pub(crate) fn our_id(&self) -> Option<NonZeroU8> {
        self.our_id
    }

    pub(crate) fn in_force(&self) -> bool {
        self.contexts.is_some()
    }

    pub(crate) fn counters(&self) -> CompressionCounters {
        self.counters
    }

    /// Whether a segment carrying `window_ack` must send A (see
    /// [`Compressor::window_ack_required`]); false when not in force.
    pub(crate) fn window_ack_required(&self, window_ack: WindowAck) -> bool {
        self.contexts
            .as_ref()
            .is_some_and(|contexts| contexts.compressor.window_ack_required(window_ack))
    }
}

impl Connection {
    /// The ids of header compression: ours when we offer it, and the
    /// peer's once compression is in force (the endpoint demultiplexes
    /// compressed segments by it).
    pub fn compression_ids(&self) -> (Option<NonZeroU8>, Option<NonZeroU8>) {
        (self.compression.our_id, self.negotiated.compression)
    }

    /// Compression comes into force on the peer's SYN (or SYN-ACK) if both
    /// sides set the bit (`negotiated.compression`, settled with the other
    /// options before this is called).
    pub(crate) fn start_header_compression(&mut self, syn: &TcpRepr<'_>) {
        let (Some(our_id), Some(peer_id)) = (self.compression.our_id, self.negotiated.compression) else {
            return;
        };
        let mut decompressor = Decompressor::new(
            peer_id,
            self.tuple.remote.port(),
            self.tuple.local.port(),
            syn.seq,
        );
        // The SYN-ACK carries the peer's first window and acknowledgment
        // number, and timestamps: what an RI peer's first compressed
        // segments may leave out.
        decompressor.observe(syn);
        self.compression.contexts = Some(Box::new(Contexts {
            compressor: Compressor::new(our_id, self.snd.iss),
            decompressor,
        }));
    }

    /// Processes an uncompressed segment (IP protocol 6) for this
    /// connection. With compression in force it also teaches the contexts:
    /// a peer may send some segments uncompressed (its handshake ACK, say),
    /// and what it acknowledges tells the compressor what it holds, however
    /// the acknowledgment travelled. A SYN is not taught: a retransmitted
    /// SYN-ACK carries the window and acknowledgment number of the
    /// handshake, older than what the peer's compressor assumes we hold.
    pub fn handle_tcp_segment(&mut self, now: Instant, seg: &TcpRepr<'_>) {
        if let Some(contexts) = self.compression.contexts.as_mut()
            && !seg.flags.syn()
        {
            contexts.decompressor.observe(seg);
            if seg.flags.ack() {
                contexts.compressor.on_ack_received(seg.ack);
            }
        }
        self.handle_segment(now, seg);
    }

    /// Processes a compressed segment (the bytes after the IP header of a
    /// protocol-105 packet from `src` to `dst`) that the endpoint found
    /// for this connection by the peer's id.
    ///
    /// Errors, the segment dropped and counted: the errors of
    /// [`Decompressor::decompress`] (a bad checksum, a truncated or
    /// malformed header, a field that cannot be reconstructed), and
    /// [`WireError::NotCompressible`] when compression is not in force.
    pub fn handle_compressed_segment(
        &mut self,
        now: Instant,
        segment: &[u8],
        src: IpAddr,
        dst: IpAddr,
    ) -> Result<(), WireError> {
        let Some(contexts) = self.compression.contexts.as_mut() else {
            return Err(NOT_IN_FORCE);
        };
        let seg = match contexts.decompressor.decompress(segment, src, dst) {
            Ok(seg) => seg,
            Err(err) => {
                self.compression.counters.failures += 1;
                return Err(err);
            }
        };
        if seg.flags.ack() {
            // What the peer acknowledges came through its decompressor:
            // the compressor's evidence of what the peer holds.
            contexts.compressor.on_ack_received(seg.ack);
        }
        self.compression.counters.segments_received += 1;
        self.handle_segment(now, &seg);
        Ok(())
    }

    /// Writes the next segment as an IP packet into `buf`: protocol 105
    /// once compression is in force (SYNs excepted), else protocol 6.
    /// `None` when there is nothing to send; an error when our own segment
    /// does not fit the wire format (a bug, for the endpoint to count).
    ///
    /// The packet's real size is taken from the route's token bucket
    /// (SYNs and resets are not paced).
    ///
    /// With compression in force no segment carrying data ever goes
    /// uncompressed: compression comes into force with the peer's SYN,
    /// before any data can go, and only SYNs (ours carry none) take the
    /// uncompressed path. That matters: the SMSS is then the compressed
    /// payload, which a TCP header would carry over the path's MTU.
    pub fn poll_transmit_packet(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Result<(), WireError>> {
        let (src, dst) = (self.tuple.local.ip(), self.tuple.remote.ip());
        let (hop_limit, protocol) = (self.config.hop_limit, self.config.ip_protocol);
        let in_force = self.compression.in_force();
        let segment_limit = self.compressed_segment_limit();
        let seg = self.poll_transmit(now)?;
        let paced = !seg.flags.syn() && !seg.flags.rst();
        let payload_len = seg.payload.len();
        let compress = in_force && !seg.flags.syn();
        let built = if compress {
            // The payload borrows the connection's scratch buffer: take it
            // out so that the compressor can be borrowed beside it.
            let header = TcpRepr { payload: &[], ..seg };
            let scratch = std::mem::take(&mut self.scratch);
            let seg = TcpRepr {
                payload: scratch.get(..payload_len).unwrap_or_default(),
                ..header
            };
            let max_header_len = segment_limit.saturating_sub(payload_len);
            let built = self.compress_into(&seg, max_header_len, (src, dst, protocol, hop_limit), buf);
            self.scratch = scratch;
            built
        } else {
            build_segment_packet(src, dst, protocol, hop_limit, &seg, buf)
        };
        if built.is_ok()
            && paced
            && let Some(pacer) = self.pacer.as_mut()
        {
            pacer.consume(now, buf.len(), payload_len);
        }
        Some(built)
    }

    /// The longest compressed segment, header and payload, a packet of the
    /// path's size holds: an uncompressed segment of the MSS with its
    /// 20-byte TCP header (RFC 9293 3.7.1: the MSS leaves out the IP and
    /// TCP fixed headers).
    pub(crate) fn compressed_segment_limit(&self) -> usize {
        self.negotiated.mss as usize + TcpRepr::MIN_HEADER_LEN
    }

    /// Compresses `seg` with a header of at most `max_header_len` bytes
    /// (the segment was sized for the header it needs: `header_room.rs`;
    /// only an A the segment has no room for is left out here) and builds
    /// the packet from `(src, dst, hop limit)`.
    fn compress_into(
        &mut self,
        seg: &TcpRepr<'_>,
        max_header_len: usize,
        (src, dst, protocol, hop_limit): (IpAddr, IpAddr, u8, u8),
        buf: &mut Vec<u8>,
    ) -> Result<(), WireError> {
        let Some(contexts) = self.compression.contexts.as_mut() else {
            return Err(NOT_IN_FORCE);
        };
        // docs/spec/compression.md: S and A whenever in doubt, as on every
        // retransmission (A only if there is room: see
        // `Compressor::compress_within`).
        let retransmission = contexts.compressor.resends(seg);
        let compressed = contexts
            .compressor
            .compress_within(seg, retransmission, max_header_len)?;
        build_compressed_packet_as(src, dst, protocol, hop_limit, &compressed.repr, buf)?;
        self.compression.counters.segments_sent += 1;
        if compressed.window_ack_withheld {
            // The connection counted the acknowledgment as sent with this
            // segment; it was not: an ACK that carries it follows.
            self.ack.immediate = true;
        }
        Ok(())
    }
}
