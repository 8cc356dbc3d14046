//! The compressed header itself: parsing into a plain [`CompressedRepr`]
//! and emission back, without any per-connection context
//! (docs/spec/compression.md, "The layout").

use std::io::Write;
use std::net::IpAddr;

use scps_node::checksum::Checksum;

use crate::wire::tcp_options::KIND_NOP;
use crate::wire::{
    IPPROTO_SCPS_COMPRESSED, IPPROTO_SCPS_TP, IPPROTO_TCP, IpRepr, Layer, MAX_OPTIONS_LEN, TcpFlags,
    TcpOptions, WireError,
};

// Control byte 1.
const C1_MORE: u8 = 0x80;
const C1_TS1: u8 = 0x40;
const C1_TS2: u8 = 0x20;
const C1_RB: u8 = 0x10;
const C1_SNACK: u8 = 0x08;
const C1_PUSH: u8 = 0x04;
const C1_S: u8 = 0x02;
const C1_A: u8 = 0x01;
// Control byte 2; 0x08 and 0x02 are unassigned.
const C2_OPTS: u8 = 0x80;
const C2_PAD: u8 = 0x40;
const C2_URG: u8 = 0x20;
const C2_ACKR: u8 = 0x10;
const C2_RST: u8 = 0x04;
const C2_FIN: u8 = 0x01;

/// Bytes of the checksum field, the last of the header.
const CHECKSUM_LEN: usize = 2;

/// The TCP flags a compressed header has bits for; the others (SYN, ECE,
/// CWR, NS) cannot travel compressed.
pub const COMPRESSIBLE_FLAGS: TcpFlags = TcpFlags::FIN
    .union(TcpFlags::RST)
    .union(TcpFlags::PSH)
    .union(TcpFlags::ACK)
    .union(TcpFlags::URG);

/// Window and acknowledgment number: they travel together (the A bit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowAck {
    /// The window field as on the wire (unscaled).
    pub window: u16,
    pub ack: u32,
}

/// A segment with a compressed header, the fields it carries decoded,
/// payload borrowed. A field that is `None` is absent from the header (the
/// receiver infers it from its context, see [`super::Decompressor`]).
///
/// Layout bits (MORE, PAD) and the checksum are not kept: [`Self::emit`]
/// chooses them. The unassigned bits 0x08 and 0x02 of control byte 2 are
/// ignored on receipt and sent as zero, as the reserved bits of a TCP header
/// are (and as the RI does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressedRepr<'a> {
    /// The id the sender announced in its SCPS capabilities option.
    pub conn_id: u8,
    /// A subset of [`COMPRESSIBLE_FLAGS`]. ACK is on unless the header sets
    /// ACKR; PSH, RST, FIN and URG have a bit each.
    pub flags: TcpFlags,
    /// The urgent pointer, carried only with URG (zero without it).
    pub urgent: u16,
    /// A bit.
    pub window_ack: Option<WindowAck>,
    /// S bit.
    pub seq: Option<u32>,
    /// TS1 bit: the RFC 7323 TSval.
    pub tsval: Option<u32>,
    /// TS2 bit: the RFC 7323 TSecr.
    pub tsecr: Option<u32>,
    /// RB bit: end of record (the record boundary option, kind 22).
    pub record_boundary: bool,
    /// The options travelling in the OPTS field, in TCP option format
    /// (SNACK, SACK and any other). Timestamps and record boundary may be
    /// here too, though a compressor puts them in their own fields.
    ///
    /// The SNACK bit of control byte 1 says "OPTS carries a SNACK option":
    /// [`Self::emit`] sets it exactly when `options.snacks` is not empty,
    /// and [`Self::parse`] refuses a header that sets it without one
    /// (`WireError::SnackBitWithoutSnack`). A SNACK without the bit is
    /// accepted: the RI never sets the bit.
    pub options: TcpOptions,
    pub payload: &'a [u8],
}

/// What [`CompressedRepr::emit`] writes, decided before writing anything.
struct Layout {
    control1: u8,
    control2: Option<u8>,
    /// The OPTS bytes (the options without the NOP padding TCP needs).
    options: [u8; MAX_OPTIONS_LEN],
    options_len: usize,
    header_len: usize,
}

impl<'a> CompressedRepr<'a> {
    /// The longest header [`Self::emit`] writes: connection id, both
    /// control bytes, every field, 40 option bytes with their length byte,
    /// and the checksum. (The pad byte only makes an odd length even; this
    /// one is even.)
    pub const MAX_HEADER_LEN: usize = 3 + 2 + 6 + 4 + 8 + 1 + MAX_OPTIONS_LEN + CHECKSUM_LEN;

    /// Parses a compressed segment (the bytes after the IP header of a
    /// protocol-105 packet) carried from `src` to `dst`.
    ///
    /// With `verify_checksum` the checksum is checked over the pseudo-header
    /// with protocol 6 or, failing that, 105 (see [`Self::emit`] for what it
    /// covers), as soon as the control bits have told where it is: only a
    /// truncation is reported before a bad checksum, and the options are
    /// decoded after it.
    ///
    /// Errors: [`WireError::BadChecksum`], [`WireError::Truncated`] when a
    /// field the control bits announce runs past the end,
    /// [`WireError::OptionsTooLong`] for an option length above 40 (no TCP
    /// header could hold the options), the errors of [`TcpOptions::parse`]
    /// for the OPTS bytes, [`WireError::SnackBitWithoutSnack`], and
    /// [`WireError::AddressFamilyMismatch`].
    pub fn parse(
        segment: &'a [u8],
        src: IpAddr,
        dst: IpAddr,
        verify_checksum: bool,
    ) -> Result<CompressedRepr<'a>, WireError> {
        if src.is_ipv4() != dst.is_ipv4() {
            return Err(WireError::AddressFamilyMismatch);
        }
        let mut r = Reader {
            bytes: segment,
            pos: 0,
        };
        let [conn_id, c1] = r.take()?;
        let c2 = if c1 & C1_MORE != 0 { r.take::<1>()?[0] } else { 0 };
        let urgent = if c2 & C2_URG != 0 {
            u16::from_be_bytes(r.take()?)
        } else {
            0
        };
        let window_ack = if c1 & C1_A != 0 {
            let [w0, w1, a0, a1, a2, a3] = r.take()?;
            Some(WindowAck {
                window: u16::from_be_bytes([w0, w1]),
                ack: u32::from_be_bytes([a0, a1, a2, a3]),
            })
        } else {
            None
        };
        let seq = r.take_u32_if(c1 & C1_S != 0)?;
        let tsval = r.take_u32_if(c1 & C1_TS1 != 0)?;
        let tsecr = r.take_u32_if(c1 & C1_TS2 != 0)?;
        let raw_options = if c2 & C2_OPTS != 0 {
            let [len] = r.take()?;
            Some(r.take_slice(usize::from(len))?)
        } else {
            None
        };
        if c2 & C2_PAD != 0 {
            r.take::<1>()?;
        }
        let checksum_at = r.pos;
        let checksum = u16::from_be_bytes(r.take()?);
        if verify_checksum {
            verify_checksum_of(segment, checksum_at, checksum, src, dst)?;
        }
        let options = match raw_options {
            Some(raw) if raw.len() > MAX_OPTIONS_LEN => return Err(WireError::OptionsTooLong(raw.len())),
            Some(raw) => TcpOptions::parse(raw)?,
            None => TcpOptions::default(),
        };
        if c1 & C1_SNACK != 0 && options.snacks.is_empty() {
            return Err(WireError::SnackBitWithoutSnack);
        }
        let mut flags = TcpFlags::empty();
        for (set, flag) in [
            (c2 & C2_ACKR == 0, TcpFlags::ACK),
            (c1 & C1_PUSH != 0, TcpFlags::PSH),
            (c2 & C2_RST != 0, TcpFlags::RST),
            (c2 & C2_FIN != 0, TcpFlags::FIN),
            (c2 & C2_URG != 0, TcpFlags::URG),
        ] {
            if set {
                flags.insert(flag);
            }
        }
        Ok(CompressedRepr {
            conn_id,
            flags,
            urgent,
            window_ack,
            seq,
            tsval,
            tsecr,
            record_boundary: c1 & C1_RB != 0,
            options,
            payload: segment.get(r.pos..).unwrap_or_default(),
        })
    }

    /// Header length [`Self::emit`] writes, checksum included.
    ///
    /// Errors as [`Self::emit`] for flags and options.
    pub fn header_len(&self) -> Result<usize, WireError> {
        Ok(self.layout()?.header_len)
    }

    /// Header plus payload.
    pub fn segment_len(&self) -> Result<usize, WireError> {
        Ok(self.header_len()?.saturating_add(self.payload.len()))
    }

    /// Writes the header and payload into `buf`; returns the segment length.
    ///
    /// The fields go in the standard's order (docs/spec/compression.md); OPTS holds the options in
    /// TCP format without NOP padding (as the RI sends them). A header of
    /// odd length gets one more byte, as the RI does: the PAD byte if the
    /// second control byte is present anyway, else the second control byte
    /// itself (MORE set, all zero), so that the payload starts at an even
    /// offset.
    ///
    /// The checksum is the Internet checksum over a pseudo-header (source,
    /// destination, protocol 6 as the standard requires, and the length of the
    /// compressed segment: header plus payload), then the compressed header
    /// with its checksum field zeroed, then the payload. That is what the RI
    /// computes (its header sum stops before the checksum field, which is
    /// the same as summing the field as zero).
    ///
    /// Errors: [`WireError::NotCompressible`] for flags outside
    /// [`COMPRESSIBLE_FLAGS`], [`WireError::OptionsTooLong`],
    /// [`WireError::BufferTooSmall`], [`WireError::AddressFamilyMismatch`],
    /// [`WireError::PayloadTooLong`] when the length does not fit an IPv4
    /// pseudo-header. Bytes of `buf` beyond the segment are untouched.
    pub fn emit(&self, buf: &mut [u8], src: IpAddr, dst: IpAddr) -> Result<usize, WireError> {
        let layout = self.layout()?;
        self.write(&layout, buf, src, dst, IPPROTO_TCP)
    }

    fn layout(&self) -> Result<Layout, WireError> {
        check_compressible(self.flags)?;
        let mut options = [0u8; MAX_OPTIONS_LEN];
        let options_len = if self.options == TcpOptions::default() {
            0
        } else {
            let padded = self.options.emit(&mut options)?;
            unpadded_len(options.get(..padded).unwrap_or_default())
        };
        let flags = self.flags;
        let mut c1 = 0;
        for (set, bit) in [
            (self.tsval.is_some(), C1_TS1),
            (self.tsecr.is_some(), C1_TS2),
            (self.record_boundary, C1_RB),
            (!self.options.snacks.is_empty(), C1_SNACK),
            (flags.psh(), C1_PUSH),
            (self.seq.is_some(), C1_S),
            (self.window_ack.is_some(), C1_A),
        ] {
            if set {
                c1 |= bit;
            }
        }
        let mut c2 = 0;
        for (set, bit) in [
            (options_len > 0, C2_OPTS),
            (flags.contains(TcpFlags::URG), C2_URG),
            (!flags.ack(), C2_ACKR),
            (flags.rst(), C2_RST),
            (flags.fin(), C2_FIN),
        ] {
            if set {
                c2 |= bit;
            }
        }
        let mut control2 = (c2 != 0).then_some(c2);
        let mut header_len = 2
            + usize::from(control2.is_some())
            + if flags.contains(TcpFlags::URG) { 2 } else { 0 }
            + if self.window_ack.is_some() { 6 } else { 0 }
            + [self.seq, self.tsval, self.tsecr].iter().flatten().count() * 4
            + if options_len > 0 { 1 + options_len } else { 0 }
            + CHECKSUM_LEN;
        if header_len % 2 == 1 {
            control2 = Some(match control2 {
                Some(c2) => c2 | C2_PAD,
                None => 0,
            });
            header_len += 1;
        }
        if control2.is_some() {
            c1 |= C1_MORE;
        }
        Ok(Layout {
            control1: c1,
            control2,
            options,
            options_len,
            header_len,
        })
    }

    /// Writes the segment with its checksum over a pseudo-header holding
    /// `tp_protocol`, the uncompressed protocol's number (6, or 106 for a
    /// connection opened on it).
    fn write(
        &self,
        layout: &Layout,
        buf: &mut [u8],
        src: IpAddr,
        dst: IpAddr,
        tp_protocol: u8,
    ) -> Result<usize, WireError> {
        let total = layout.header_len.saturating_add(self.payload.len());
        let len32 = u32::try_from(total).map_err(|_| WireError::PayloadTooLong(total))?;
        // Checks the families (and the IPv4 length) before writing anything.
        let mut sum = Checksum::pseudo_header(src, dst, tp_protocol, len32)?;
        let available = buf.len();
        let out = buf.get_mut(..total).ok_or(WireError::BufferTooSmall {
            needed: total,
            available,
        })?;
        let (header, payload) = out.split_at_mut(layout.header_len);
        // `header` has exactly the length the layout counted, so none of
        // these writes can run short.
        let too_small = |_| WireError::BufferTooSmall {
            needed: total,
            available,
        };
        let mut w: &mut [u8] = header;
        w.write_all(&[self.conn_id, layout.control1]).map_err(too_small)?;
        if let Some(c2) = layout.control2 {
            w.write_all(&[c2]).map_err(too_small)?;
        }
        if self.flags.contains(TcpFlags::URG) {
            w.write_all(&self.urgent.to_be_bytes()).map_err(too_small)?;
        }
        if let Some(wa) = self.window_ack {
            w.write_all(&wa.window.to_be_bytes()).map_err(too_small)?;
            w.write_all(&wa.ack.to_be_bytes()).map_err(too_small)?;
        }
        for field in [self.seq, self.tsval, self.tsecr].into_iter().flatten() {
            w.write_all(&field.to_be_bytes()).map_err(too_small)?;
        }
        if layout.options_len > 0 {
            // At most 40, so it fits its byte.
            w.write_all(&[layout.options_len as u8]).map_err(too_small)?;
            w.write_all(layout.options.get(..layout.options_len).unwrap_or_default())
                .map_err(too_small)?;
        }
        if layout.control2.is_some_and(|c2| c2 & C2_PAD != 0) {
            w.write_all(&[0]).map_err(too_small)?;
        }
        // The checksum field, zero while summing.
        w.write_all(&[0; CHECKSUM_LEN]).map_err(too_small)?;
        payload.copy_from_slice(self.payload);
        sum.add_bytes(out);
        let checksum = sum.finish().to_be_bytes();
        let field_at = layout.header_len - CHECKSUM_LEN;
        if let Some(field) = out.get_mut(field_at..layout.header_len) {
            field.copy_from_slice(&checksum);
        }
        Ok(total)
    }
}

/// The connection id of a compressed segment (its first byte), to find the
/// decompressor for it: demultiplex by source address and this id
/// (docs/spec/compression.md, "Demultiplexing and connection ids").
/// Nothing else is checked.
pub fn peek_conn_id(segment: &[u8]) -> Result<u8, WireError> {
    segment.first().copied().ok_or(WireError::Truncated {
        layer: Layer::Compressed,
        needed: 1,
        available: 0,
    })
}

/// Builds an IPv4 or IPv6 packet of protocol 105 carrying `segment` into
/// `buf`, replacing its contents; the companion of
/// [`crate::wire::build_tcp_packet`] (same IP header, DF set on IPv4). On
/// error `buf` is left empty.
pub fn build_compressed_packet(
    src: IpAddr,
    dst: IpAddr,
    hop_limit: u8,
    segment: &CompressedRepr<'_>,
    buf: &mut Vec<u8>,
) -> Result<(), WireError> {
    build_compressed_packet_as(src, dst, IPPROTO_TCP, hop_limit, segment, buf)
}

/// [`build_compressed_packet`] for a connection whose uncompressed
/// segments travel as `tp_protocol` (106 from the RI's standalone builds):
/// the number the checksum's pseudo-header holds (the uncompressed
/// protocol's number: docs/spec/compression.md, "The checksum").
pub fn build_compressed_packet_as(
    src: IpAddr,
    dst: IpAddr,
    tp_protocol: u8,
    hop_limit: u8,
    segment: &CompressedRepr<'_>,
    buf: &mut Vec<u8>,
) -> Result<(), WireError> {
    buf.clear();
    let layout = segment.layout()?;
    let segment_len = layout.header_len.saturating_add(segment.payload.len());
    let ip = IpRepr::new(src, dst, IPPROTO_SCPS_COMPRESSED, segment_len, hop_limit)?;
    crate::wire::packet::build_ip_packet(&ip, segment_len, buf, |out| {
        segment.write(&layout, out, src, dst, tp_protocol)
    })
}

/// Refuses flags a compressed header has no bit for.
pub(super) fn check_compressible(flags: TcpFlags) -> Result<(), WireError> {
    if flags.syn() {
        // Spec: compressed headers are "never on SYNs".
        return Err(WireError::NotCompressible("the SYN flag"));
    }
    if !COMPRESSIBLE_FLAGS.contains(flags) {
        return Err(WireError::NotCompressible("an ECE, CWR or NS flag"));
    }
    Ok(())
}

/// Checks `checksum`, found at offset `field_at` of `segment`, over the
/// pseudo-header with the uncompressed protocol's number, 6 (or 106 from
/// the RI's standalone builds), or 105, which some senders use
/// (docs/spec/compression.md, "The checksum").
fn verify_checksum_of(
    segment: &[u8],
    field_at: usize,
    checksum: u16,
    src: IpAddr,
    dst: IpAddr,
) -> Result<(), WireError> {
    let len = u32::try_from(segment.len()).map_err(|_| WireError::PayloadTooLong(segment.len()))?;
    for protocol in [IPPROTO_TCP, IPPROTO_SCPS_COMPRESSED, IPPROTO_SCPS_TP] {
        let mut sum = Checksum::pseudo_header(src, dst, protocol, len)?;
        sum.add_bytes(segment);
        if field_at % 2 == 1 {
            // A header of odd length (never ours, never the RI's) puts the
            // field across two 16-bit words, where the sum above counted it
            // byte-swapped. Take that out and count it as the sender did,
            // whole (one's-complement a - b is a + !b, RFC 1071).
            sum.add_u16(!checksum.swap_bytes());
            sum.add_u16(checksum);
        }
        // Summed over everything including the checksum, a right segment
        // finishes as 0 (RFC 1071).
        if sum.finish() == 0 {
            return Ok(());
        }
    }
    Err(WireError::BadChecksum {
        layer: Layer::Compressed,
    })
}

/// Length of `options` as [`TcpOptions::emit`] wrote them, without the NOPs
/// it pads with: it writes the options back to back and NOPs only after the
/// last one, so the first NOP found at an option boundary starts the
/// padding. (Trimming trailing 0x01 bytes would be wrong: the last option's
/// data may end in one.)
fn unpadded_len(options: &[u8]) -> usize {
    let mut pos = 0;
    while let Some(&kind) = options.get(pos) {
        if kind == KIND_NOP {
            break;
        }
        // Every option emit writes has a length byte of at least 2.
        let len = options.get(pos + 1).copied().unwrap_or(0);
        if len < 2 {
            break;
        }
        pos += usize::from(len);
    }
    pos.min(options.len())
}

/// Reads a compressed header field by field.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn truncated(&self, len: usize) -> WireError {
        WireError::Truncated {
            layer: Layer::Compressed,
            needed: self.pos.saturating_add(len),
            available: self.bytes.len(),
        }
    }

    fn take_slice(&mut self, len: usize) -> Result<&'a [u8], WireError> {
        let end = self.pos.saturating_add(len);
        let slice = self.bytes.get(self.pos..end).ok_or_else(|| self.truncated(len))?;
        self.pos = end;
        Ok(slice)
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let chunk = self
            .bytes
            .get(self.pos..)
            .and_then(|rest| rest.first_chunk::<N>())
            .ok_or_else(|| self.truncated(N))?;
        self.pos += N;
        Ok(*chunk)
    }

    fn take_u32_if(&mut self, present: bool) -> Result<Option<u32>, WireError> {
        if !present {
            return Ok(None);
        }
        Ok(Some(u32::from_be_bytes(self.take()?)))
    }
}
