//! TCP segment (RFC 9293 section 3.1).

use std::fmt;
use std::net::IpAddr;

use scps_node::checksum::Checksum;

use super::{IPPROTO_TCP, Layer, MAX_OPTIONS_LEN, TcpOptions, WireError};

/// The TCP control bits.
#[derive(Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct TcpFlags(u16);

impl TcpFlags {
    pub const FIN: TcpFlags = TcpFlags(0x001);
    pub const SYN: TcpFlags = TcpFlags(0x002);
    pub const RST: TcpFlags = TcpFlags(0x004);
    pub const PSH: TcpFlags = TcpFlags(0x008);
    pub const ACK: TcpFlags = TcpFlags(0x010);
    pub const URG: TcpFlags = TcpFlags(0x020);
    pub const ECE: TcpFlags = TcpFlags(0x040);
    pub const CWR: TcpFlags = TcpFlags(0x080);
    /// The obsolete ECN nonce bit (RFC 3540, historic), kept so that it
    /// round-trips.
    pub const NS: TcpFlags = TcpFlags(0x100);

    pub const fn empty() -> TcpFlags {
        TcpFlags(0)
    }

    /// From the 9 low bits of the header's flag field; other bits dropped.
    pub const fn from_bits(bits: u16) -> TcpFlags {
        TcpFlags(bits & 0x1ff)
    }

    pub const fn bits(self) -> u16 {
        self.0
    }

    pub const fn contains(self, other: TcpFlags) -> bool {
        self.0 & other.0 == other.0
    }

    pub const fn union(self, other: TcpFlags) -> TcpFlags {
        TcpFlags(self.0 | other.0)
    }

    pub fn insert(&mut self, other: TcpFlags) {
        self.0 |= other.0;
    }

    pub fn remove(&mut self, other: TcpFlags) {
        self.0 &= !other.0;
    }

    pub fn fin(self) -> bool {
        self.contains(TcpFlags::FIN)
    }

    pub fn syn(self) -> bool {
        self.contains(TcpFlags::SYN)
    }

    pub fn rst(self) -> bool {
        self.contains(TcpFlags::RST)
    }

    pub fn psh(self) -> bool {
        self.contains(TcpFlags::PSH)
    }

    pub fn ack(self) -> bool {
        self.contains(TcpFlags::ACK)
    }
}

impl std::ops::BitOr for TcpFlags {
    type Output = TcpFlags;
    fn bitor(self, rhs: TcpFlags) -> TcpFlags {
        self.union(rhs)
    }
}

impl fmt::Debug for TcpFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const NAMES: [(TcpFlags, &str); 9] = [
            (TcpFlags::SYN, "SYN"),
            (TcpFlags::FIN, "FIN"),
            (TcpFlags::RST, "RST"),
            (TcpFlags::PSH, "PSH"),
            (TcpFlags::ACK, "ACK"),
            (TcpFlags::URG, "URG"),
            (TcpFlags::ECE, "ECE"),
            (TcpFlags::CWR, "CWR"),
            (TcpFlags::NS, "NS"),
        ];
        let mut first = true;
        for (flag, name) in NAMES {
            if self.contains(flag) {
                if !first {
                    f.write_str("|")?;
                }
                f.write_str(name)?;
                first = false;
            }
        }
        if first {
            f.write_str("-")?;
        }
        Ok(())
    }
}

/// A TCP segment, header fields decoded, payload borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TcpRepr<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq: u32,
    /// The acknowledgment field as it is on the wire (meaningful only with
    /// the ACK flag).
    pub ack: u32,
    pub flags: TcpFlags,
    /// The window field as it is on the wire (unscaled).
    pub window: u16,
    pub urgent: u16,
    pub options: TcpOptions,
    pub payload: &'a [u8],
}

impl<'a> TcpRepr<'a> {
    pub const MIN_HEADER_LEN: usize = 20;

    /// Parses a segment carried from `src` to `dst`. With `verify_checksum`
    /// the checksum over the pseudo-header (protocol 6) must be right.
    /// Checks the data offset (at least 20, within the segment) and parses
    /// the options.
    ///
    /// The checksum is verified before anything else is believed, so a
    /// corrupted header gives [`WireError::BadChecksum`] rather than some
    /// other error. Addresses of different IP versions give
    /// [`WireError::AddressFamilyMismatch`] whether or not the checksum is
    /// verified. The three reserved header bits are ignored.
    pub fn parse(
        segment: &'a [u8],
        src: IpAddr,
        dst: IpAddr,
        verify_checksum: bool,
    ) -> Result<TcpRepr<'a>, WireError> {
        Self::parse_as(segment, src, dst, IPPROTO_TCP, verify_checksum)
    }

    /// [`TcpRepr::parse`] for a segment carried as IP protocol `protocol`,
    /// whose number the checksum's pseudo-header holds (106 for the SCPS
    /// RI's standalone builds, docs/spec/scps-tp-options.md, "IP protocol numbers").
    pub fn parse_as(
        segment: &'a [u8],
        src: IpAddr,
        dst: IpAddr,
        protocol: u8,
        verify_checksum: bool,
    ) -> Result<TcpRepr<'a>, WireError> {
        if src.is_ipv4() != dst.is_ipv4() {
            return Err(WireError::AddressFamilyMismatch);
        }
        let Some((fixed, _)) = segment.split_first_chunk::<20>() else {
            return Err(WireError::Truncated {
                layer: Layer::Tcp,
                needed: Self::MIN_HEADER_LEN,
                available: segment.len(),
            });
        };
        if verify_checksum {
            let len = u32::try_from(segment.len()).map_err(|_| WireError::PayloadTooLong(segment.len()))?;
            let mut sum = Checksum::pseudo_header(src, dst, protocol, len)?;
            sum.add_bytes(segment);
            // Summed over everything including the checksum field, a right
            // segment folds to 0xFFFF, i.e. finishes as 0 (RFC 1071).
            if sum.finish() != 0 {
                return Err(WireError::BadChecksum { layer: Layer::Tcp });
            }
        }
        // Constant indices into a 20-byte array: checked at compile time.
        let h = fixed;
        let off_flags = h[12];
        let header_len = usize::from(off_flags >> 4) * 4;
        if header_len < Self::MIN_HEADER_LEN {
            return Err(WireError::BadTcpDataOffset(header_len));
        }
        let Some((header, payload)) = segment.split_at_checked(header_len) else {
            return Err(WireError::BadTcpDataOffset(header_len));
        };
        let options = TcpOptions::parse(header.get(Self::MIN_HEADER_LEN..).unwrap_or_default())?;
        Ok(TcpRepr {
            src_port: u16::from_be_bytes([h[0], h[1]]),
            dst_port: u16::from_be_bytes([h[2], h[3]]),
            seq: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
            ack: u32::from_be_bytes([h[8], h[9], h[10], h[11]]),
            flags: TcpFlags::from_bits(u16::from_be_bytes([off_flags & 0x01, h[13]])),
            window: u16::from_be_bytes([h[14], h[15]]),
            urgent: u16::from_be_bytes([h[18], h[19]]),
            options,
            payload,
        })
    }

    /// Header length including the padded options.
    ///
    /// This is the length [`TcpRepr::emit`] would write, which for a parsed
    /// segment may differ from the header length it arrived with (padding,
    /// unknown options and option order are not kept). It exceeds 60 when
    /// the options do not fit a header.
    pub fn header_len(&self) -> usize {
        Self::MIN_HEADER_LEN + self.options.encoded_len()
    }

    /// Header plus payload.
    pub fn segment_len(&self) -> usize {
        self.header_len().saturating_add(self.payload.len())
    }

    /// Sequence space the segment occupies: payload plus one each for SYN
    /// and FIN (RFC 9293 section 3.4).
    pub fn sequence_len(&self) -> usize {
        self.payload
            .len()
            .saturating_add(usize::from(self.flags.syn()) + usize::from(self.flags.fin()))
    }

    /// Writes header, options and payload into `buf` with the checksum for
    /// the pseudo-header of `src` and `dst`; returns the segment length.
    ///
    /// Errors: [`WireError::OptionsTooLong`] when the options exceed 40
    /// bytes, [`WireError::BufferTooSmall`] when `buf` is shorter than
    /// [`TcpRepr::segment_len`], [`WireError::AddressFamilyMismatch`], and
    /// [`WireError::PayloadTooLong`] when the segment length does not fit
    /// the pseudo-header (16 bits for IPv4, 32 for IPv6). Bytes of `buf`
    /// beyond the segment are untouched.
    pub fn emit(&self, buf: &mut [u8], src: IpAddr, dst: IpAddr) -> Result<usize, WireError> {
        self.emit_as(buf, src, dst, IPPROTO_TCP)
    }

    /// [`TcpRepr::emit`] for a segment carried as IP protocol `protocol`
    /// (the number in the checksum's pseudo-header).
    pub fn emit_as(
        &self,
        buf: &mut [u8],
        src: IpAddr,
        dst: IpAddr,
        protocol: u8,
    ) -> Result<usize, WireError> {
        let options_len = self.options.encoded_len();
        if options_len > MAX_OPTIONS_LEN {
            return Err(WireError::OptionsTooLong(options_len));
        }
        let header_len = Self::MIN_HEADER_LEN + options_len;
        let total = header_len.saturating_add(self.payload.len());
        let len32 = u32::try_from(total).map_err(|_| WireError::PayloadTooLong(total))?;
        // Checks the families (and the IPv4 length) before writing anything.
        let mut sum = Checksum::pseudo_header(src, dst, protocol, len32)?;
        let available = buf.len();
        let out = buf.get_mut(..total).ok_or(WireError::BufferTooSmall {
            needed: total,
            available,
        })?;
        let (header, payload) = out.split_at_mut(header_len);
        let (fixed, options) = header.split_at_mut(Self::MIN_HEADER_LEN);
        let [off_flags_hi, flags_lo] = self.flags.bits().to_be_bytes();
        // header_len <= 60, so the data offset fits its 4 bits.
        let data_offset = (header_len / 4) as u8;
        let mut fields = [0u8; Self::MIN_HEADER_LEN];
        fields[0..2].copy_from_slice(&self.src_port.to_be_bytes());
        fields[2..4].copy_from_slice(&self.dst_port.to_be_bytes());
        fields[4..8].copy_from_slice(&self.seq.to_be_bytes());
        fields[8..12].copy_from_slice(&self.ack.to_be_bytes());
        fields[12] = (data_offset << 4) | (off_flags_hi & 0x01);
        fields[13] = flags_lo;
        fields[14..16].copy_from_slice(&self.window.to_be_bytes());
        // fields[16..18]: checksum, zero while summing.
        fields[18..20].copy_from_slice(&self.urgent.to_be_bytes());
        fixed.copy_from_slice(&fields);
        self.options.emit(options)?;
        payload.copy_from_slice(self.payload);
        sum.add_bytes(out);
        let checksum = sum.finish().to_be_bytes();
        if let Some(field) = out.get_mut(16..18) {
            field.copy_from_slice(&checksum);
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{SackBlock, Timestamps};
    use std::net::{Ipv4Addr, Ipv6Addr};

    const LO4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
    const LO6: IpAddr = IpAddr::V6(Ipv6Addr::LOCALHOST);

    /// A real Linux SYN captured on loopback (127.0.0.1 -> 127.0.0.1). On
    /// loopback the kernel leaves the checksum offloaded: the field holds
    /// the pseudo-header sum 0xfe30, not a valid checksum.
    const LINUX_SYN_OFFLOADED: [u8; 40] = [
        0xe3, 0xe4, 0xca, 0x0b, 0xa6, 0x31, 0xc3, 0x1a, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xff, 0xd7, 0xfe,
        0x30, 0x00, 0x00, 0x02, 0x04, 0xff, 0xd7, 0x04, 0x02, 0x08, 0x0a, 0x8e, 0x62, 0xaa, 0x5a, 0x00, 0x00,
        0x00, 0x00, 0x01, 0x03, 0x03, 0x0a,
    ];
    /// The right checksum of that SYN, computed independently (Python).
    const LINUX_SYN_CHECKSUM: u16 = 0x0005;

    fn linux_syn() -> [u8; 40] {
        let mut seg = LINUX_SYN_OFFLOADED;
        seg[16..18].copy_from_slice(&LINUX_SYN_CHECKSUM.to_be_bytes());
        seg
    }

    fn linux_syn_repr() -> TcpRepr<'static> {
        TcpRepr {
            src_port: 58340,
            dst_port: 51723,
            seq: 0xa631_c31a,
            ack: 0,
            flags: TcpFlags::SYN,
            window: 65495,
            urgent: 0,
            options: TcpOptions {
                mss: Some(65495),
                window_scale: Some(10),
                sack_permitted: true,
                timestamps: Some(Timestamps {
                    tsval: 0x8e62_aa5a,
                    tsecr: 0,
                }),
                ..TcpOptions::default()
            },
            payload: &[],
        }
    }

    fn data_segment(payload: &[u8]) -> TcpRepr<'_> {
        TcpRepr {
            src_port: 443,
            dst_port: 50000,
            seq: 1,
            ack: 2,
            flags: TcpFlags::ACK | TcpFlags::PSH,
            window: 512,
            urgent: 0,
            options: TcpOptions {
                timestamps: Some(Timestamps { tsval: 5, tsecr: 6 }),
                ..TcpOptions::default()
            },
            payload,
        }
    }

    fn emit_vec(repr: &TcpRepr<'_>, src: IpAddr, dst: IpAddr) -> Vec<u8> {
        let mut buf = vec![0u8; repr.segment_len()];
        assert_eq!(repr.emit(&mut buf, src, dst), Ok(buf.len()));
        buf
    }

    #[test]
    fn parses_real_linux_syn() {
        let seg = linux_syn();
        assert_eq!(TcpRepr::parse(&seg, LO4, LO4, true), Ok(linux_syn_repr()));
    }

    #[test]
    fn offloaded_checksum_is_caught_only_when_verifying() {
        assert_eq!(
            TcpRepr::parse(&LINUX_SYN_OFFLOADED, LO4, LO4, true),
            Err(WireError::BadChecksum { layer: Layer::Tcp })
        );
        assert_eq!(
            TcpRepr::parse(&LINUX_SYN_OFFLOADED, LO4, LO4, false),
            Ok(linux_syn_repr())
        );
        // The right checksum for other addresses is wrong for these.
        let other = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));
        assert_eq!(
            TcpRepr::parse(&linux_syn(), LO4, other, true),
            Err(WireError::BadChecksum { layer: Layer::Tcp })
        );
    }

    #[test]
    fn emits_linux_syn_fields_with_known_checksum() {
        // Same SYN, our option order (window scale then a NOP at the end);
        // checksum 0xf70d computed independently.
        let expected: [u8; 40] = [
            0xe3, 0xe4, 0xca, 0x0b, 0xa6, 0x31, 0xc3, 0x1a, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xff, 0xd7,
            0xf7, 0x0d, 0x00, 0x00, 0x02, 0x04, 0xff, 0xd7, 0x04, 0x02, 0x08, 0x0a, 0x8e, 0x62, 0xaa, 0x5a,
            0x00, 0x00, 0x00, 0x00, 0x03, 0x03, 0x0a, 0x01,
        ];
        let repr = linux_syn_repr();
        assert_eq!(repr.header_len(), 40);
        assert_eq!(emit_vec(&repr, LO4, LO4), expected);
    }

    #[test]
    fn emits_ipv6_data_segment_with_known_checksum() {
        let src: IpAddr = "2001:db8::1".parse().unwrap();
        let dst: IpAddr = "2001:db8::2".parse().unwrap();
        let repr = data_segment(b"hello");
        let expected: [u8; 37] = [
            0x01, 0xbb, 0xc3, 0x50, 0, 0, 0, 1, 0, 0, 0, 2, 0x80, 0x18, 0x02, 0x00, 0x10, 0x50, 0, 0, 8, 10,
            0, 0, 0, 5, 0, 0, 0, 6, 1, 1, b'h', b'e', b'l', b'l', b'o',
        ];
        assert_eq!(emit_vec(&repr, src, dst), expected);
        assert_eq!(TcpRepr::parse(&expected, src, dst, true), Ok(repr));
    }

    #[test]
    fn all_nine_flags_round_trip() {
        let all = [
            TcpFlags::FIN,
            TcpFlags::SYN,
            TcpFlags::RST,
            TcpFlags::PSH,
            TcpFlags::ACK,
            TcpFlags::URG,
            TcpFlags::ECE,
            TcpFlags::CWR,
            TcpFlags::NS,
        ]
        .into_iter()
        .fold(TcpFlags::empty(), |a, b| a | b);
        assert_eq!(all.bits(), 0x1ff);
        let mut repr = data_segment(b"");
        repr.flags = all;
        let seg = emit_vec(&repr, LO6, LO6);
        assert_eq!(seg[12], 0x80 | 0x01); // data offset 8, NS
        assert_eq!(seg[13], 0xff);
        assert_eq!(TcpRepr::parse(&seg, LO6, LO6, true), Ok(repr));
        // Each flag lands on its own bit.
        for (flag, byte, bit) in [
            (TcpFlags::FIN, 13, 0x01),
            (TcpFlags::SYN, 13, 0x02),
            (TcpFlags::RST, 13, 0x04),
            (TcpFlags::PSH, 13, 0x08),
            (TcpFlags::ACK, 13, 0x10),
            (TcpFlags::URG, 13, 0x20),
            (TcpFlags::ECE, 13, 0x40),
            (TcpFlags::CWR, 13, 0x80),
            (TcpFlags::NS, 12, 0x01),
        ] {
            repr.flags = flag;
            let seg = emit_vec(&repr, LO4, LO4);
            assert_eq!(seg[12] & 0x0f, if byte == 12 { bit } else { 0 }, "{flag:?}");
            assert_eq!(seg[13], if byte == 13 { bit } else { 0 }, "{flag:?}");
            assert_eq!(TcpRepr::parse(&seg, LO4, LO4, true).unwrap().flags, flag);
        }
    }

    #[test]
    fn reserved_bits_are_ignored() {
        let mut seg = linux_syn();
        seg[12] |= 0x0e;
        let repr = TcpRepr::parse(&seg, LO4, LO4, false).unwrap();
        assert_eq!(repr.flags, TcpFlags::SYN);
    }

    #[test]
    fn urgent_and_payload() {
        let payload: Vec<u8> = (0..=255).collect();
        let mut repr = data_segment(&payload);
        repr.flags.insert(TcpFlags::URG);
        repr.urgent = 0xbeef;
        let seg = emit_vec(&repr, LO4, LO4);
        assert_eq!(&seg[18..20], [0xbe, 0xef]);
        assert_eq!(&seg[32..], payload.as_slice());
        let parsed = TcpRepr::parse(&seg, LO4, LO4, true).unwrap();
        assert_eq!(parsed, repr);
        assert_eq!(parsed.payload.as_ptr(), seg[32..].as_ptr());
    }

    #[test]
    fn checksum_zero_and_ffff_are_equivalent() {
        // Choose the last payload word so that the checksum comes out 0x0000.
        let seg = emit_vec(&data_segment(&[0; 4]), LO4, LO4);
        let mut payload = [0u8; 4];
        payload[2..4].copy_from_slice(&seg[16..18]);
        let repr = data_segment(&payload);
        let mut seg = emit_vec(&repr, LO4, LO4);
        assert_eq!(&seg[16..18], [0, 0]);
        assert_eq!(TcpRepr::parse(&seg, LO4, LO4, true), Ok(repr));
        // The other representation of zero verifies too.
        seg[16] = 0xff;
        seg[17] = 0xff;
        assert_eq!(TcpRepr::parse(&seg, LO4, LO4, true), Ok(repr));
        // But no other value does.
        seg[17] = 0xfe;
        assert_eq!(
            TcpRepr::parse(&seg, LO4, LO4, true),
            Err(WireError::BadChecksum { layer: Layer::Tcp })
        );
    }

    #[test]
    fn truncated_segment() {
        assert_eq!(
            TcpRepr::parse(&linux_syn()[..19], LO4, LO4, false),
            Err(WireError::Truncated {
                layer: Layer::Tcp,
                needed: 20,
                available: 19,
            })
        );
        assert_eq!(
            TcpRepr::parse(&[], LO4, LO4, true),
            Err(WireError::Truncated {
                layer: Layer::Tcp,
                needed: 20,
                available: 0,
            })
        );
    }

    #[test]
    fn bad_data_offset() {
        let mut seg = linux_syn();
        seg[12] = 0x40 | (seg[12] & 0x0f); // 16 bytes
        assert_eq!(
            TcpRepr::parse(&seg, LO4, LO4, false),
            Err(WireError::BadTcpDataOffset(16))
        );
        seg[12] = 0xb0; // 44 bytes, the segment has 40
        assert_eq!(
            TcpRepr::parse(&seg, LO4, LO4, false),
            Err(WireError::BadTcpDataOffset(44))
        );
        seg[12] = 0x00;
        assert_eq!(
            TcpRepr::parse(&seg, LO4, LO4, false),
            Err(WireError::BadTcpDataOffset(0))
        );
        // With verification a corrupted offset is a checksum error first.
        assert_eq!(
            TcpRepr::parse(&seg, LO4, LO4, true),
            Err(WireError::BadChecksum { layer: Layer::Tcp })
        );
        // A shorter offset moves option bytes into the payload.
        seg[12] = 0x50;
        let repr = TcpRepr::parse(&seg, LO4, LO4, false).unwrap();
        assert_eq!(repr.options, TcpOptions::default());
        assert_eq!(repr.payload, &linux_syn()[20..]);
    }

    #[test]
    fn option_errors_propagate() {
        let mut seg = linux_syn();
        seg[21] = 5; // MSS length 5
        assert_eq!(
            TcpRepr::parse(&seg, LO4, LO4, false),
            Err(WireError::BadOptionLength { kind: 2, len: 5 })
        );
        seg[21] = 30; // runs past the header
        assert_eq!(
            TcpRepr::parse(&seg, LO4, LO4, false),
            Err(WireError::OptionOverrun { kind: 2 })
        );
    }

    #[test]
    fn address_family_mismatch() {
        assert_eq!(
            TcpRepr::parse(&linux_syn(), LO4, LO6, true),
            Err(WireError::AddressFamilyMismatch)
        );
        assert_eq!(
            TcpRepr::parse(&linux_syn(), LO6, LO4, false),
            Err(WireError::AddressFamilyMismatch)
        );
        let mut buf = [0u8; 64];
        assert_eq!(
            linux_syn_repr().emit(&mut buf, LO4, LO6),
            Err(WireError::AddressFamilyMismatch)
        );
    }

    #[test]
    fn emit_errors() {
        let mut repr = linux_syn_repr();
        let mut small = [0u8; 39];
        assert_eq!(
            repr.emit(&mut small, LO4, LO4),
            Err(WireError::BufferTooSmall {
                needed: 40,
                available: 39,
            })
        );
        for i in 0..3 {
            repr.options.sack_blocks.push(SackBlock { left: i, right: i });
        }
        let mut buf = [0u8; 100];
        assert_eq!(repr.emit(&mut buf, LO4, LO4), Err(WireError::OptionsTooLong(48)));
        let big = vec![0u8; 65535 - 20 + 1];
        let repr = TcpRepr {
            payload: &big,
            options: TcpOptions::default(),
            ..linux_syn_repr()
        };
        let mut buf = vec![0u8; big.len() + 20];
        assert_eq!(
            repr.emit(&mut buf, LO4, LO4),
            Err(WireError::PayloadTooLong(65536))
        );
        // IPv6's pseudo-header length has 32 bits.
        assert_eq!(repr.emit(&mut buf, LO6, LO6), Ok(65536));
    }

    #[test]
    fn emit_leaves_the_rest_of_the_buffer_alone() {
        let repr = data_segment(b"xyz");
        let mut buf = [0xaau8; 64];
        let n = repr.emit(&mut buf, LO4, LO4).unwrap();
        assert_eq!(n, 35);
        assert!(buf[n..].iter().all(|&b| b == 0xaa));
    }

    #[test]
    fn lengths() {
        let repr = data_segment(b"hello");
        assert_eq!(repr.header_len(), 32);
        assert_eq!(repr.segment_len(), 37);
        assert_eq!(repr.sequence_len(), 5);
        let mut syn_fin = linux_syn_repr();
        assert_eq!(syn_fin.sequence_len(), 1);
        syn_fin.flags.insert(TcpFlags::FIN);
        syn_fin.payload = b"ab";
        assert_eq!(syn_fin.sequence_len(), 4);
        syn_fin.flags.remove(TcpFlags::SYN);
        assert_eq!(syn_fin.sequence_len(), 3);
        assert_eq!(
            TcpRepr {
                options: TcpOptions::default(),
                ..repr
            }
            .header_len(),
            20
        );
    }

    #[test]
    fn flags_helpers_and_debug() {
        let f = TcpFlags::SYN | TcpFlags::ACK;
        assert!(f.syn() && f.ack() && !f.fin() && !f.rst() && !f.psh());
        assert_eq!(format!("{f:?}"), "SYN|ACK");
        assert_eq!(format!("{:?}", TcpFlags::empty()), "-");
        assert_eq!(TcpFlags::from_bits(0xffff).bits(), 0x1ff);
    }
}
