//! IPv4 header (RFC 791).

use std::net::Ipv4Addr;

use scps_node::checksum::Checksum;

use super::{Layer, WireError};

/// An IPv4 header without options, as we send it and as we understood a
/// received one (options of received headers are skipped).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    pub src: Ipv4Addr,
    pub dst: Ipv4Addr,
    pub protocol: u8,
    pub ttl: u8,
    /// DSCP (upper six bits) and ECN (lower two bits).
    pub dscp_ecn: u8,
    pub identification: u16,
    pub dont_fragment: bool,
    /// Length of what follows the header, in bytes.
    pub payload_len: usize,
}

impl Ipv4Repr {
    /// Length of the header we emit (no options).
    pub const HEADER_LEN: usize = 20;

    /// Parses a packet and returns the header and its payload.
    ///
    /// Checks the version, the header length (at least 20), the total length
    /// (at least the header, at most the buffer; bytes beyond it, such as
    /// link-layer padding, are ignored) and the header checksum. Rejects
    /// fragments (MF set or a fragment offset) with [`WireError::Fragmented`].
    /// Header options are skipped.
    ///
    /// The checks run in that order: a header too short for its IHL gives
    /// [`WireError::Truncated`]. The reserved flag bit is ignored.
    pub fn parse(packet: &[u8]) -> Result<(Ipv4Repr, &[u8]), WireError> {
        let Some((h, _)) = packet.split_first_chunk::<{ Self::HEADER_LEN }>() else {
            return Err(WireError::Truncated {
                layer: Layer::Ipv4,
                needed: Self::HEADER_LEN,
                available: packet.len(),
            });
        };
        // Constant indices into a 20-byte array: checked at compile time.
        let version = h[0] >> 4;
        if version != 4 {
            return Err(WireError::BadIpVersion(version));
        }
        let header_len = usize::from(h[0] & 0x0f) * 4;
        if header_len < Self::HEADER_LEN {
            return Err(WireError::BadIpv4HeaderLength(header_len));
        }
        let Some(header) = packet.get(..header_len) else {
            return Err(WireError::Truncated {
                layer: Layer::Ipv4,
                needed: header_len,
                available: packet.len(),
            });
        };
        let total = usize::from(u16::from_be_bytes([h[2], h[3]]));
        if total < header_len || total > packet.len() {
            return Err(WireError::BadIpv4TotalLength {
                total,
                header: header_len,
                available: packet.len(),
            });
        }
        if Checksum::of(header).finish() != 0 {
            return Err(WireError::BadChecksum { layer: Layer::Ipv4 });
        }
        let flags_fragment = u16::from_be_bytes([h[6], h[7]]);
        if flags_fragment & (FLAG_MF | FRAGMENT_OFFSET_MASK) != 0 {
            return Err(WireError::Fragmented);
        }
        let payload = packet.get(header_len..total).unwrap_or_default();
        let repr = Ipv4Repr {
            src: Ipv4Addr::new(h[12], h[13], h[14], h[15]),
            dst: Ipv4Addr::new(h[16], h[17], h[18], h[19]),
            protocol: h[9],
            ttl: h[8],
            dscp_ecn: h[1],
            identification: u16::from_be_bytes([h[4], h[5]]),
            dont_fragment: flags_fragment & FLAG_DF != 0,
            payload_len: total - header_len,
        };
        Ok((repr, payload))
    }

    /// Writes the 20-byte header with its checksum into `buf` and returns 20.
    ///
    /// Errors: [`WireError::PayloadTooLong`] when 20 + `payload_len` does not
    /// fit the 16-bit total length, [`WireError::BufferTooSmall`] when `buf`
    /// is shorter than 20 bytes. Bytes of `buf` beyond 20 are untouched.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let total = self
            .payload_len
            .checked_add(Self::HEADER_LEN)
            .and_then(|total| u16::try_from(total).ok())
            .ok_or(WireError::PayloadTooLong(self.payload_len))?;
        let available = buf.len();
        let Some((out, _)) = buf.split_first_chunk_mut::<{ Self::HEADER_LEN }>() else {
            return Err(WireError::BufferTooSmall {
                needed: Self::HEADER_LEN,
                available,
            });
        };
        let mut h = [0u8; Self::HEADER_LEN];
        h[0] = 0x45; // version 4, IHL 5
        h[1] = self.dscp_ecn;
        h[2..4].copy_from_slice(&total.to_be_bytes());
        h[4..6].copy_from_slice(&self.identification.to_be_bytes());
        let flags = if self.dont_fragment { FLAG_DF } else { 0 };
        h[6..8].copy_from_slice(&flags.to_be_bytes());
        h[8] = self.ttl;
        h[9] = self.protocol;
        // h[10..12]: checksum, zero while summing.
        h[12..16].copy_from_slice(&self.src.octets());
        h[16..20].copy_from_slice(&self.dst.octets());
        let mut sum = Checksum::new();
        sum.add_bytes(&h);
        h[10..12].copy_from_slice(&sum.finish().to_be_bytes());
        *out = h;
        Ok(Self::HEADER_LEN)
    }
}

const FLAG_DF: u16 = 0x4000;
const FLAG_MF: u16 = 0x2000;
const FRAGMENT_OFFSET_MASK: u16 = 0x1fff;

#[cfg(test)]
mod tests {
    use super::*;

    /// The widely used example header (a UDP packet of 0x73 bytes from
    /// 192.168.0.1 to 192.168.0.199, DF, TTL 64), checksum 0xb861.
    const EXAMPLE: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0,
        0xa8, 0x00, 0xc7,
    ];

    /// The IPv4 header of a real Linux SYN (identification 0xd5e6, checksum
    /// 0x66d3 as the kernel computed it).
    const LINUX_SYN_HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x3c, 0xd5, 0xe6, 0x40, 0x00, 0x40, 0x06, 0x66, 0xd3, 0x7f, 0x00, 0x00, 0x01, 0x7f,
        0x00, 0x00, 0x01,
    ];

    fn example_repr() -> Ipv4Repr {
        Ipv4Repr {
            src: Ipv4Addr::new(192, 168, 0, 1),
            dst: Ipv4Addr::new(192, 168, 0, 199),
            protocol: 17,
            ttl: 64,
            dscp_ecn: 0,
            identification: 0,
            dont_fragment: true,
            payload_len: 0x73 - 20,
        }
    }

    fn with_payload(header: &[u8]) -> Vec<u8> {
        let total = usize::from(u16::from_be_bytes([header[2], header[3]]));
        let mut packet = header.to_vec();
        packet.extend((0..total - header.len()).map(|i| i as u8));
        packet
    }

    /// Rewrites the header checksum after a test has altered the header.
    fn fix_checksum(packet: &mut [u8]) {
        let ihl = usize::from(packet[0] & 0x0f) * 4;
        packet[10] = 0;
        packet[11] = 0;
        let mut sum = Checksum::new();
        sum.add_bytes(&packet[..ihl]);
        let c = sum.finish().to_be_bytes();
        packet[10..12].copy_from_slice(&c);
    }

    #[test]
    fn parses_example_header() {
        let packet = with_payload(&EXAMPLE);
        let (repr, payload) = Ipv4Repr::parse(&packet).unwrap();
        assert_eq!(repr, example_repr());
        assert_eq!(payload, &packet[20..]);
    }

    #[test]
    fn emits_example_header() {
        let mut buf = [0xaau8; 24];
        assert_eq!(example_repr().emit(&mut buf), Ok(20));
        assert_eq!(buf[..20], EXAMPLE);
        assert_eq!(buf[20..], [0xaa; 4]);
    }

    #[test]
    fn linux_header_round_trips() {
        let packet = with_payload(&LINUX_SYN_HEADER);
        let (repr, payload) = Ipv4Repr::parse(&packet).unwrap();
        assert_eq!(repr.identification, 0xd5e6);
        assert_eq!(repr.protocol, 6);
        assert_eq!(repr.payload_len, 40);
        assert_eq!(payload.len(), 40);
        assert!(repr.dont_fragment);
        let mut buf = [0u8; 20];
        repr.emit(&mut buf).unwrap();
        assert_eq!(buf, LINUX_SYN_HEADER);
    }

    #[test]
    fn dscp_ecn_identification_and_no_df() {
        let repr = Ipv4Repr {
            dscp_ecn: 0xb9,
            identification: 0x1234,
            dont_fragment: false,
            ttl: 1,
            ..example_repr()
        };
        let mut packet = vec![0u8; 0x73];
        repr.emit(&mut packet).unwrap();
        assert_eq!(packet[1], 0xb9);
        assert_eq!(packet[4..8], [0x12, 0x34, 0x00, 0x00]);
        assert_eq!(Ipv4Repr::parse(&packet).unwrap().0, repr);
    }

    #[test]
    fn trailing_bytes_beyond_total_length_are_ignored() {
        let mut packet = with_payload(&EXAMPLE);
        packet.extend_from_slice(&[0xee; 6]);
        let (repr, payload) = Ipv4Repr::parse(&packet).unwrap();
        assert_eq!(repr.payload_len, 0x73 - 20);
        assert_eq!(payload.len(), 0x73 - 20);
    }

    #[test]
    fn header_options_are_skipped() {
        // IHL 6: one word of options (NOP NOP NOP EOL).
        let mut packet = vec![0x46, 0, 0, 30, 0, 0, 0x40, 0, 64, 6, 0, 0];
        packet.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2, 1, 1, 1, 0]);
        packet.extend_from_slice(&[1, 2, 3, 4, 5, 6]);
        fix_checksum(&mut packet);
        let (repr, payload) = Ipv4Repr::parse(&packet).unwrap();
        assert_eq!(repr.payload_len, 6);
        assert_eq!(payload, [1, 2, 3, 4, 5, 6]);
        assert_eq!(repr.dst, Ipv4Addr::new(10, 0, 0, 2));
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Ipv4Repr::parse(&EXAMPLE[..19]),
            Err(WireError::Truncated {
                layer: Layer::Ipv4,
                needed: 20,
                available: 19,
            })
        );
        // IHL 15 (60 bytes) in a 40-byte buffer.
        let mut packet = with_payload(&EXAMPLE);
        packet[0] = 0x4f;
        packet.truncate(40);
        assert_eq!(
            Ipv4Repr::parse(&packet),
            Err(WireError::Truncated {
                layer: Layer::Ipv4,
                needed: 60,
                available: 40,
            })
        );
    }

    #[test]
    fn bad_version() {
        let mut packet = with_payload(&EXAMPLE);
        packet[0] = 0x65;
        assert_eq!(Ipv4Repr::parse(&packet), Err(WireError::BadIpVersion(6)));
        packet[0] = 0x05;
        assert_eq!(Ipv4Repr::parse(&packet), Err(WireError::BadIpVersion(0)));
    }

    #[test]
    fn bad_header_length() {
        let mut packet = with_payload(&EXAMPLE);
        packet[0] = 0x44;
        assert_eq!(Ipv4Repr::parse(&packet), Err(WireError::BadIpv4HeaderLength(16)));
        packet[0] = 0x40;
        assert_eq!(Ipv4Repr::parse(&packet), Err(WireError::BadIpv4HeaderLength(0)));
    }

    #[test]
    fn bad_total_length() {
        let packet = with_payload(&EXAMPLE);
        // One byte short of the total length.
        assert_eq!(
            Ipv4Repr::parse(&packet[..0x72]),
            Err(WireError::BadIpv4TotalLength {
                total: 0x73,
                header: 20,
                available: 0x72,
            })
        );
        let mut short = packet.clone();
        short[2] = 0;
        short[3] = 19;
        fix_checksum(&mut short);
        assert_eq!(
            Ipv4Repr::parse(&short),
            Err(WireError::BadIpv4TotalLength {
                total: 19,
                header: 20,
                available: 0x73,
            })
        );
        // Exactly the header: an empty payload.
        short[3] = 20;
        fix_checksum(&mut short);
        let (repr, payload) = Ipv4Repr::parse(&short).unwrap();
        assert_eq!((repr.payload_len, payload.len()), (0, 0));
    }

    #[test]
    fn bad_checksum() {
        let mut packet = with_payload(&EXAMPLE);
        packet[8] = 63; // TTL changed, checksum not updated
        assert_eq!(
            Ipv4Repr::parse(&packet),
            Err(WireError::BadChecksum { layer: Layer::Ipv4 })
        );
        // Every single-bit error in the header is caught, whatever field.
        for bit in 0..160 {
            let mut packet = with_payload(&EXAMPLE);
            packet[bit / 8] ^= 0x80 >> (bit % 8);
            assert!(Ipv4Repr::parse(&packet).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn fragments_are_rejected() {
        let mut packet = with_payload(&EXAMPLE);
        packet[6] = 0x20; // MF
        fix_checksum(&mut packet);
        assert_eq!(Ipv4Repr::parse(&packet), Err(WireError::Fragmented));
        packet[6] = 0x40;
        packet[7] = 0x01; // offset 8 bytes
        fix_checksum(&mut packet);
        assert_eq!(Ipv4Repr::parse(&packet), Err(WireError::Fragmented));
        packet[6] = 0x80 | 0x40; // reserved bit: ignored
        packet[7] = 0;
        fix_checksum(&mut packet);
        assert_eq!(Ipv4Repr::parse(&packet).unwrap().0, example_repr());
    }

    #[test]
    fn emit_errors() {
        let mut repr = example_repr();
        let mut buf = [0u8; 20];
        repr.payload_len = 65515;
        assert_eq!(repr.emit(&mut buf), Ok(20));
        assert_eq!(buf[2..4], [0xff, 0xff]);
        repr.payload_len = 65516;
        assert_eq!(repr.emit(&mut buf), Err(WireError::PayloadTooLong(65516)));
        repr.payload_len = usize::MAX;
        assert_eq!(repr.emit(&mut buf), Err(WireError::PayloadTooLong(usize::MAX)));
        repr.payload_len = 0;
        assert_eq!(
            repr.emit(&mut buf[..19]),
            Err(WireError::BufferTooSmall {
                needed: 20,
                available: 19,
            })
        );
    }
}
