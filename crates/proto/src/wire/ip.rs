//! Either IP version, for code that does not care which.

use std::net::IpAddr;

use super::{Ipv4Repr, Ipv6Repr, Layer, WireError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpRepr {
    V4(Ipv4Repr),
    V6(Ipv6Repr),
}

impl IpRepr {
    /// A header for sending `payload_len` bytes of `protocol` from `src` to
    /// `dst`: TTL or hop limit `hop_limit`, DF set on IPv4, identification 0,
    /// DSCP/ECN and flow label 0.
    ///
    /// Errors: [`WireError::AddressFamilyMismatch`] when the addresses are of
    /// different versions, [`WireError::PayloadTooLong`] when `payload_len`
    /// does not fit the header's length field (so that [`IpRepr::emit`] of
    /// the result cannot fail for that reason).
    pub fn new(
        src: IpAddr,
        dst: IpAddr,
        protocol: u8,
        payload_len: usize,
        hop_limit: u8,
    ) -> Result<IpRepr, WireError> {
        match (src, dst) {
            (IpAddr::V4(src), IpAddr::V4(dst)) => {
                if payload_len > usize::from(u16::MAX) - Ipv4Repr::HEADER_LEN {
                    return Err(WireError::PayloadTooLong(payload_len));
                }
                Ok(IpRepr::V4(Ipv4Repr {
                    src,
                    dst,
                    protocol,
                    ttl: hop_limit,
                    dscp_ecn: 0,
                    identification: 0,
                    dont_fragment: true,
                    payload_len,
                }))
            }
            (IpAddr::V6(src), IpAddr::V6(dst)) => {
                if payload_len > usize::from(u16::MAX) {
                    return Err(WireError::PayloadTooLong(payload_len));
                }
                Ok(IpRepr::V6(Ipv6Repr {
                    src,
                    dst,
                    next_header: protocol,
                    hop_limit,
                    traffic_class: 0,
                    flow_label: 0,
                    payload_len,
                }))
            }
            _ => Err(WireError::AddressFamilyMismatch),
        }
    }

    /// Parses either version, chosen by the first nibble.
    ///
    /// An empty packet gives [`WireError::Truncated`] with layer IPv4.
    pub fn parse(packet: &[u8]) -> Result<(IpRepr, &[u8]), WireError> {
        match packet.first().map(|b| b >> 4) {
            None => Err(WireError::Truncated {
                layer: Layer::Ipv4,
                needed: Ipv4Repr::HEADER_LEN,
                available: 0,
            }),
            Some(4) => Ipv4Repr::parse(packet).map(|(ip, payload)| (IpRepr::V4(ip), payload)),
            Some(6) => Ipv6Repr::parse(packet).map(|(ip, payload)| (IpRepr::V6(ip), payload)),
            Some(version) => Err(WireError::BadIpVersion(version)),
        }
    }

    pub fn src(&self) -> IpAddr {
        match self {
            IpRepr::V4(ip) => IpAddr::V4(ip.src),
            IpRepr::V6(ip) => IpAddr::V6(ip.src),
        }
    }

    pub fn dst(&self) -> IpAddr {
        match self {
            IpRepr::V4(ip) => IpAddr::V4(ip.dst),
            IpRepr::V6(ip) => IpAddr::V6(ip.dst),
        }
    }

    pub fn protocol(&self) -> u8 {
        match self {
            IpRepr::V4(ip) => ip.protocol,
            IpRepr::V6(ip) => ip.next_header,
        }
    }

    pub fn payload_len(&self) -> usize {
        match self {
            IpRepr::V4(ip) => ip.payload_len,
            IpRepr::V6(ip) => ip.payload_len,
        }
    }

    /// Length of the header [`IpRepr::emit`] writes.
    pub fn header_len(&self) -> usize {
        match self {
            IpRepr::V4(_) => Ipv4Repr::HEADER_LEN,
            IpRepr::V6(_) => Ipv6Repr::HEADER_LEN,
        }
    }

    pub fn emit(&self, buf: &mut [u8]) -> Result<usize, WireError> {
        match self {
            IpRepr::V4(ip) => ip.emit(buf),
            IpRepr::V6(ip) => ip.emit(buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const A4: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
    const B4: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
    const A6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1));
    const B6: IpAddr = IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2));

    #[test]
    fn new_ipv4() {
        let ip = IpRepr::new(A4, B4, 6, 100, 250).unwrap();
        assert_eq!(
            ip,
            IpRepr::V4(Ipv4Repr {
                src: Ipv4Addr::new(10, 0, 0, 1),
                dst: Ipv4Addr::new(10, 0, 0, 2),
                protocol: 6,
                ttl: 250,
                dscp_ecn: 0,
                identification: 0,
                dont_fragment: true,
                payload_len: 100,
            })
        );
        assert_eq!((ip.src(), ip.dst(), ip.protocol()), (A4, B4, 6));
        assert_eq!((ip.payload_len(), ip.header_len()), (100, 20));
    }

    #[test]
    fn new_ipv6() {
        let ip = IpRepr::new(A6, B6, 105, 7, 3).unwrap();
        assert_eq!(
            ip,
            IpRepr::V6(Ipv6Repr {
                src: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1),
                dst: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 2),
                next_header: 105,
                hop_limit: 3,
                traffic_class: 0,
                flow_label: 0,
                payload_len: 7,
            })
        );
        assert_eq!((ip.src(), ip.dst(), ip.protocol()), (A6, B6, 105));
        assert_eq!((ip.payload_len(), ip.header_len()), (7, 40));
    }

    #[test]
    fn new_errors() {
        assert_eq!(
            IpRepr::new(A4, B6, 6, 0, 64),
            Err(WireError::AddressFamilyMismatch)
        );
        assert_eq!(
            IpRepr::new(A6, B4, 6, 0, 64),
            Err(WireError::AddressFamilyMismatch)
        );
        assert!(IpRepr::new(A4, B4, 6, 65515, 64).is_ok());
        assert_eq!(
            IpRepr::new(A4, B4, 6, 65516, 64),
            Err(WireError::PayloadTooLong(65516))
        );
        assert!(IpRepr::new(A6, B6, 6, 65535, 64).is_ok());
        assert_eq!(
            IpRepr::new(A6, B6, 6, 65536, 64),
            Err(WireError::PayloadTooLong(65536))
        );
    }

    #[test]
    fn emit_and_parse_both_versions() {
        for (src, dst) in [(A4, B4), (A6, B6)] {
            let ip = IpRepr::new(src, dst, 17, 3, 9).unwrap();
            let mut buf = vec![0u8; ip.header_len() + 3];
            assert_eq!(ip.emit(&mut buf), Ok(ip.header_len()));
            buf[ip.header_len()..].copy_from_slice(b"abc");
            assert_eq!(IpRepr::parse(&buf), Ok((ip, &b"abc"[..])));
        }
    }

    #[test]
    fn parse_dispatch_errors() {
        assert_eq!(
            IpRepr::parse(&[]),
            Err(WireError::Truncated {
                layer: Layer::Ipv4,
                needed: 20,
                available: 0,
            })
        );
        assert_eq!(IpRepr::parse(&[0x50; 60]), Err(WireError::BadIpVersion(5)));
        assert_eq!(IpRepr::parse(&[0xf0]), Err(WireError::BadIpVersion(15)));
        assert_eq!(
            IpRepr::parse(&[0x60; 10]),
            Err(WireError::Truncated {
                layer: Layer::Ipv6,
                needed: 40,
                available: 10,
            })
        );
        assert_eq!(
            IpRepr::parse(&[0x45; 10]),
            Err(WireError::Truncated {
                layer: Layer::Ipv4,
                needed: 20,
                available: 10,
            })
        );
    }
}
