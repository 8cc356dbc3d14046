//! IPv6 header (RFC 8200).

use std::net::Ipv6Addr;

use super::{Layer, WireError};

/// An IPv6 header as we send it (no extension headers) and as we understood
/// a received one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv6Repr {
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    /// The upper-layer protocol: for a received packet, the next header
    /// after any hop-by-hop, routing and destination-options headers.
    pub next_header: u8,
    pub hop_limit: u8,
    pub traffic_class: u8,
    /// 20 bits.
    pub flow_label: u32,
    /// Length of the upper-layer payload (after extension headers), in bytes.
    pub payload_len: usize,
}

impl Ipv6Repr {
    /// Length of the header we emit.
    pub const HEADER_LEN: usize = 40;

    /// Parses a packet and returns the header and the upper-layer payload.
    ///
    /// Checks the version and that the payload length fits the buffer (bytes
    /// beyond it are ignored). Skips hop-by-hop (0), routing (43) and
    /// destination-options (60) headers; a fragment header (44) gives
    /// [`WireError::Fragmented`].
    ///
    /// An extension header running past the payload length gives
    /// [`WireError::Truncated`] (layer IPv6, lengths counted from the start
    /// of the packet, `available` being 40 + the payload length). Jumbograms
    /// (payload length 0 with a jumbo option) are not supported: their
    /// payload is taken to be empty.
    pub fn parse(packet: &[u8]) -> Result<(Ipv6Repr, &[u8]), WireError> {
        let Some((h, after_header)) = packet.split_first_chunk::<{ Self::HEADER_LEN }>() else {
            return Err(WireError::Truncated {
                layer: Layer::Ipv6,
                needed: Self::HEADER_LEN,
                available: packet.len(),
            });
        };
        // Constant indices into a 40-byte array: checked at compile time.
        let version = h[0] >> 4;
        if version != 6 {
            return Err(WireError::BadIpVersion(version));
        }
        let first_word = u32::from_be_bytes([h[0], h[1], h[2], h[3]]);
        let payload_len = usize::from(u16::from_be_bytes([h[4], h[5]]));
        let Some(mut payload) = after_header.get(..payload_len) else {
            return Err(WireError::BadIpv6PayloadLength {
                payload: payload_len,
                available: after_header.len(),
            });
        };
        let mut next_header = h[6];
        // Each extension header is at least 8 bytes, so this ends.
        loop {
            match next_header {
                EXT_HOP_BY_HOP | EXT_ROUTING | EXT_DESTINATION_OPTIONS => {}
                EXT_FRAGMENT => return Err(WireError::Fragmented),
                _ => break,
            }
            let consumed = Self::HEADER_LEN + (payload_len - payload.len());
            let truncated = |needed: usize| WireError::Truncated {
                layer: Layer::Ipv6,
                needed: consumed + needed,
                available: Self::HEADER_LEN + payload_len,
            };
            let [next, ext_len, ..] = *payload else {
                return Err(truncated(2));
            };
            let len = (usize::from(ext_len) + 1) * 8;
            let Some((_, rest)) = payload.split_at_checked(len) else {
                return Err(truncated(len));
            };
            next_header = next;
            payload = rest;
        }
        let repr = Ipv6Repr {
            src: Ipv6Addr::from(*sub16(h, 8)),
            dst: Ipv6Addr::from(*sub16(h, 24)),
            next_header,
            hop_limit: h[7],
            traffic_class: (first_word >> 20) as u8,
            flow_label: first_word & FLOW_LABEL_MASK,
            payload_len: payload.len(),
        };
        Ok((repr, payload))
    }

    /// Writes the 40-byte header into `buf` and returns 40.
    ///
    /// The payload length field is `payload_len` ([`WireError::PayloadTooLong`]
    /// above 65535); only the low 20 bits of `flow_label` are sent.
    /// [`WireError::BufferTooSmall`] when `buf` is shorter than 40 bytes.
    /// Bytes of `buf` beyond 40 are untouched.
    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        let payload_len =
            u16::try_from(self.payload_len).map_err(|_| WireError::PayloadTooLong(self.payload_len))?;
        let available = buf.len();
        let Some((out, _)) = buf.split_first_chunk_mut::<{ Self::HEADER_LEN }>() else {
            return Err(WireError::BufferTooSmall {
                needed: Self::HEADER_LEN,
                available,
            });
        };
        let first_word =
            (6u32 << 28) | (u32::from(self.traffic_class) << 20) | (self.flow_label & FLOW_LABEL_MASK);
        let mut h = [0u8; Self::HEADER_LEN];
        h[0..4].copy_from_slice(&first_word.to_be_bytes());
        h[4..6].copy_from_slice(&payload_len.to_be_bytes());
        h[6] = self.next_header;
        h[7] = self.hop_limit;
        h[8..24].copy_from_slice(&self.src.octets());
        h[24..40].copy_from_slice(&self.dst.octets());
        *out = h;
        Ok(Self::HEADER_LEN)
    }
}

/// The 16 bytes of `h` from `start`, which must be at most 24.
fn sub16(h: &[u8; Ipv6Repr::HEADER_LEN], start: usize) -> &[u8; 16] {
    h.get(start..)
        .and_then(|rest| rest.first_chunk::<16>())
        .unwrap_or(&[0; 16])
}

const FLOW_LABEL_MASK: u32 = 0x000f_ffff;
const EXT_HOP_BY_HOP: u8 = 0;
const EXT_ROUTING: u8 = 43;
const EXT_FRAGMENT: u8 = 44;
const EXT_DESTINATION_OPTIONS: u8 = 60;

#[cfg(test)]
mod tests {
    use super::*;

    /// The IPv6 header of a real Linux SYN on loopback (flow label 0xd808f,
    /// 40 payload bytes of TCP, hop limit 64, ::1 to ::1).
    const LINUX_SYN_HEADER: [u8; 40] = [
        0x60, 0x0d, 0x80, 0x8f, 0x00, 0x28, 0x06, 0x40, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
    ];

    fn linux_repr() -> Ipv6Repr {
        Ipv6Repr {
            src: Ipv6Addr::LOCALHOST,
            dst: Ipv6Addr::LOCALHOST,
            next_header: 6,
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0xd808f,
            payload_len: 40,
        }
    }

    /// A header with `next_header` and the given payload.
    fn packet(next_header: u8, payload: &[u8]) -> Vec<u8> {
        let repr = Ipv6Repr {
            next_header,
            payload_len: payload.len(),
            ..linux_repr()
        };
        let mut packet = vec![0u8; 40];
        repr.emit(&mut packet).unwrap();
        packet.extend_from_slice(payload);
        packet
    }

    #[test]
    fn parses_and_emits_linux_header() {
        let mut packet = LINUX_SYN_HEADER.to_vec();
        packet.extend_from_slice(&[7; 40]);
        let (repr, payload) = Ipv6Repr::parse(&packet).unwrap();
        assert_eq!(repr, linux_repr());
        assert_eq!(payload, [7; 40]);
        let mut buf = [0xaau8; 44];
        assert_eq!(repr.emit(&mut buf), Ok(40));
        assert_eq!(buf[..40], LINUX_SYN_HEADER);
        assert_eq!(buf[40..], [0xaa; 4]);
    }

    #[test]
    fn traffic_class_and_flow_label_positions() {
        let repr = Ipv6Repr {
            traffic_class: 0xab,
            flow_label: 0x12345,
            src: "2001:db8::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
            payload_len: 0,
            ..linux_repr()
        };
        let mut buf = [0u8; 40];
        repr.emit(&mut buf).unwrap();
        assert_eq!(buf[..4], [0x6a, 0xb1, 0x23, 0x45]);
        assert_eq!(buf[8..10], [0x20, 0x01]);
        assert_eq!(buf[39], 2);
        assert_eq!(Ipv6Repr::parse(&buf), Ok((repr, &[][..])));
        // Only 20 bits of flow label are sent.
        let wide = Ipv6Repr {
            flow_label: 0xfff0_0001,
            ..repr
        };
        wide.emit(&mut buf).unwrap();
        assert_eq!(buf[..4], [0x6a, 0xb0, 0x00, 0x01]);
    }

    #[test]
    fn trailing_bytes_are_ignored() {
        let mut p = packet(6, &[1, 2, 3]);
        p.extend_from_slice(&[9; 5]);
        let (repr, payload) = Ipv6Repr::parse(&p).unwrap();
        assert_eq!(repr.payload_len, 3);
        assert_eq!(payload, [1, 2, 3]);
    }

    #[test]
    fn skips_extension_headers() {
        let mut payload = Vec::new();
        // Hop-by-hop, 8 bytes (PadN), next: destination options.
        payload.extend_from_slice(&[60, 0, 1, 4, 0, 0, 0, 0]);
        // Destination options, 16 bytes, next: routing.
        payload.extend_from_slice(&[43, 1, 1, 12]);
        payload.extend_from_slice(&[0; 12]);
        // Routing, 8 bytes, segments left 0, next: TCP.
        payload.extend_from_slice(&[6, 0, 0, 0, 0, 0, 0, 0]);
        payload.extend_from_slice(b"tcp segment");
        let p = packet(0, &payload);
        let (repr, upper) = Ipv6Repr::parse(&p).unwrap();
        assert_eq!(repr.next_header, 6);
        assert_eq!(repr.payload_len, 11);
        assert_eq!(upper, b"tcp segment");
        // An extension header followed by no upper-layer bytes at all.
        let p = packet(60, &[59, 0, 1, 4, 0, 0, 0, 0]);
        let (repr, upper) = Ipv6Repr::parse(&p).unwrap();
        assert_eq!((repr.next_header, repr.payload_len, upper.len()), (59, 0, 0));
    }

    #[test]
    fn fragment_header_is_rejected() {
        assert_eq!(
            Ipv6Repr::parse(&packet(44, &[6, 0, 0, 1, 0, 0, 0, 1, 1, 2])),
            Err(WireError::Fragmented)
        );
        // Also behind a hop-by-hop header.
        assert_eq!(
            Ipv6Repr::parse(&packet(0, &[44, 0, 1, 4, 0, 0, 0, 0, 6, 0, 0, 1, 0, 0, 0, 1])),
            Err(WireError::Fragmented)
        );
    }

    #[test]
    fn truncated() {
        assert_eq!(
            Ipv6Repr::parse(&LINUX_SYN_HEADER[..39]),
            Err(WireError::Truncated {
                layer: Layer::Ipv6,
                needed: 40,
                available: 39,
            })
        );
        // Destination options claiming 16 bytes inside an 8-byte payload.
        assert_eq!(
            Ipv6Repr::parse(&packet(60, &[6, 1, 0, 0, 0, 0, 0, 0])),
            Err(WireError::Truncated {
                layer: Layer::Ipv6,
                needed: 56,
                available: 48,
            })
        );
        // A second extension header cut after its first byte.
        assert_eq!(
            Ipv6Repr::parse(&packet(0, &[43, 0, 1, 4, 0, 0, 0, 0, 6])),
            Err(WireError::Truncated {
                layer: Layer::Ipv6,
                needed: 50,
                available: 49,
            })
        );
        // Bytes beyond the payload length do not count.
        let mut p = packet(43, &[6, 0, 0, 0]);
        p.extend_from_slice(&[0; 4]);
        assert!(matches!(
            Ipv6Repr::parse(&p),
            Err(WireError::Truncated {
                layer: Layer::Ipv6,
                ..
            })
        ));
    }

    #[test]
    fn bad_version() {
        let mut p = packet(6, &[]);
        p[0] = 0x40;
        assert_eq!(Ipv6Repr::parse(&p), Err(WireError::BadIpVersion(4)));
    }

    #[test]
    fn payload_length_beyond_buffer() {
        let p = packet(6, &[1, 2, 3, 4]);
        assert_eq!(
            Ipv6Repr::parse(&p[..43]),
            Err(WireError::BadIpv6PayloadLength {
                payload: 4,
                available: 3,
            })
        );
    }

    #[test]
    fn emit_errors() {
        let mut repr = linux_repr();
        let mut buf = [0u8; 40];
        repr.payload_len = 65535;
        assert_eq!(repr.emit(&mut buf), Ok(40));
        repr.payload_len = 65536;
        assert_eq!(repr.emit(&mut buf), Err(WireError::PayloadTooLong(65536)));
        repr.payload_len = 0;
        assert_eq!(
            repr.emit(&mut buf[..39]),
            Err(WireError::BufferTooSmall {
                needed: 40,
                available: 39,
            })
        );
    }
}
