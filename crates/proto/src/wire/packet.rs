//! Whole IP packets carrying one TCP segment, the unit the engine exchanges
//! with its driver.

use std::net::IpAddr;

use super::{IPPROTO_TCP, IpRepr, MAX_OPTIONS_LEN, TcpRepr, WireError};

/// Builds an IPv4 or IPv6 packet (chosen by the address family) carrying
/// `tcp` into `buf`, replacing its contents. IPv4 packets have DF set.
///
/// The IP header is the one of [`IpRepr::new`] (identification, DSCP/ECN and
/// flow label 0). On error `buf` is left empty.
pub fn build_tcp_packet(
    src: IpAddr,
    dst: IpAddr,
    hop_limit: u8,
    tcp: &TcpRepr<'_>,
    buf: &mut Vec<u8>,
) -> Result<(), WireError> {
    build_segment_packet(src, dst, IPPROTO_TCP, hop_limit, tcp, buf)
}

/// [`build_tcp_packet`] with the segment carried as IP protocol `protocol`
/// (6, or 106 for the SCPS RI's standalone builds: the IP header and the
/// checksum's pseudo-header both hold it).
pub fn build_segment_packet(
    src: IpAddr,
    dst: IpAddr,
    protocol: u8,
    hop_limit: u8,
    tcp: &TcpRepr<'_>,
    buf: &mut Vec<u8>,
) -> Result<(), WireError> {
    buf.clear();
    let options_len = tcp.options.encoded_len();
    if options_len > MAX_OPTIONS_LEN {
        return Err(WireError::OptionsTooLong(options_len));
    }
    let ip = IpRepr::new(src, dst, protocol, tcp.segment_len(), hop_limit)?;
    build_ip_packet(&ip, tcp.segment_len(), buf, |segment| {
        tcp.emit_as(segment, src, dst, protocol)
    })
}

/// Writes `ip`'s header and, after it, `segment_len` bytes that `write`
/// fills into `buf`, replacing its contents; on error `buf` is left empty.
pub(crate) fn build_ip_packet(
    ip: &IpRepr,
    segment_len: usize,
    buf: &mut Vec<u8>,
    write: impl FnOnce(&mut [u8]) -> Result<usize, WireError>,
) -> Result<(), WireError> {
    let header_len = ip.header_len();
    buf.clear();
    buf.resize(header_len + segment_len, 0);
    let result = ip
        .emit(buf)
        .and_then(|_| write(buf.get_mut(header_len..).unwrap_or_default()));
    if let Err(err) = result {
        buf.clear();
        return Err(err);
    }
    Ok(())
}

/// Parses an IP packet and the TCP segment it carries, verifying both
/// checksums. A packet whose protocol is not TCP is returned with `None`.
///
/// "Both checksums": the IPv4 header checksum and the TCP checksum (IPv6
/// has no header checksum).
pub fn parse_tcp_packet(packet: &[u8]) -> Result<(IpRepr, Option<TcpRepr<'_>>), WireError> {
    let (ip, payload) = IpRepr::parse(packet)?;
    if ip.protocol() != IPPROTO_TCP {
        return Ok((ip, None));
    }
    let tcp = TcpRepr::parse(payload, ip.src(), ip.dst(), true)?;
    Ok((ip, Some(tcp)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Ipv4Repr, Layer, TcpFlags, TcpOptions, Timestamps};
    use std::net::Ipv4Addr;

    const LO4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

    /// A real Linux SYN over IPv4 loopback, as captured except for the TCP
    /// checksum: loopback leaves it offloaded (0xfe30); 0x0005 is the right
    /// value, computed independently.
    const LINUX_SYN: [u8; 60] = [
        0x45, 0x00, 0x00, 0x3c, 0xd5, 0xe6, 0x40, 0x00, 0x40, 0x06, 0x66, 0xd3, 0x7f, 0x00, 0x00, 0x01, 0x7f,
        0x00, 0x00, 0x01, 0xe3, 0xe4, 0xca, 0x0b, 0xa6, 0x31, 0xc3, 0x1a, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02,
        0xff, 0xd7, 0x00, 0x05, 0x00, 0x00, 0x02, 0x04, 0xff, 0xd7, 0x04, 0x02, 0x08, 0x0a, 0x8e, 0x62, 0xaa,
        0x5a, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x0a,
    ];

    /// What we build for the same SYN fields (identification 0, our option
    /// order); both checksums computed independently.
    const OUR_SYN: [u8; 60] = [
        0x45, 0x00, 0x00, 0x3c, 0x00, 0x00, 0x40, 0x00, 0x40, 0x06, 0x3c, 0xba, 0x7f, 0x00, 0x00, 0x01, 0x7f,
        0x00, 0x00, 0x01, 0xe3, 0xe4, 0xca, 0x0b, 0xa6, 0x31, 0xc3, 0x1a, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02,
        0xff, 0xd7, 0xf7, 0x0d, 0x00, 0x00, 0x02, 0x04, 0xff, 0xd7, 0x04, 0x02, 0x08, 0x0a, 0x8e, 0x62, 0xaa,
        0x5a, 0x00, 0x00, 0x00, 0x00, 0x03, 0x03, 0x0a, 0x01,
    ];

    /// An IPv6 data segment: 2001:db8::1 port 443 to 2001:db8::2 port 50000,
    /// ACK|PSH, timestamps, "hello"; TCP checksum computed independently.
    const OUR_V6_DATA: [u8; 77] = [
        0x60, 0x00, 0x00, 0x00, 0x00, 0x25, 0x06, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 1, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0x01, 0xbb, 0xc3, 0x50, 0, 0, 0, 1,
        0, 0, 0, 2, 0x80, 0x18, 0x02, 0x00, 0x10, 0x50, 0, 0, 8, 10, 0, 0, 0, 5, 0, 0, 0, 6, 1, 1, b'h',
        b'e', b'l', b'l', b'o',
    ];

    fn syn_repr() -> TcpRepr<'static> {
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

    fn v6_data_repr() -> TcpRepr<'static> {
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
            payload: b"hello",
        }
    }

    #[test]
    fn parses_real_linux_syn() {
        let (ip, tcp) = parse_tcp_packet(&LINUX_SYN).unwrap();
        let IpRepr::V4(v4) = ip else {
            panic!("not IPv4: {ip:?}")
        };
        assert_eq!(v4.identification, 0xd5e6);
        assert_eq!((ip.src(), ip.dst(), ip.payload_len()), (LO4, LO4, 40));
        assert_eq!(tcp, Some(syn_repr()));
    }

    #[test]
    fn offloaded_linux_checksum_is_rejected() {
        let mut packet = LINUX_SYN;
        packet[36] = 0xfe;
        packet[37] = 0x30;
        assert_eq!(
            parse_tcp_packet(&packet),
            Err(WireError::BadChecksum { layer: Layer::Tcp })
        );
    }

    #[test]
    fn builds_known_ipv4_syn() {
        let mut buf = vec![1, 2, 3]; // replaced, not appended to
        build_tcp_packet(LO4, LO4, 64, &syn_repr(), &mut buf).unwrap();
        assert_eq!(buf, OUR_SYN);
        let (ip, tcp) = parse_tcp_packet(&buf).unwrap();
        assert_eq!(ip, IpRepr::new(LO4, LO4, 6, 40, 64).unwrap());
        assert_eq!(tcp, Some(syn_repr()));
    }

    #[test]
    fn builds_known_ipv6_data_segment() {
        let src: IpAddr = "2001:db8::1".parse().unwrap();
        let dst: IpAddr = "2001:db8::2".parse().unwrap();
        let mut buf = Vec::new();
        build_tcp_packet(src, dst, 64, &v6_data_repr(), &mut buf).unwrap();
        assert_eq!(buf, OUR_V6_DATA);
        let (ip, tcp) = parse_tcp_packet(&buf).unwrap();
        assert_eq!(ip, IpRepr::new(src, dst, 6, 37, 64).unwrap());
        assert_eq!(tcp, Some(v6_data_repr()));
    }

    #[test]
    fn non_tcp_packet_is_returned_without_segment() {
        // The UDP example header with a payload of garbage.
        let mut packet = vec![
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01,
            0xc0, 0xa8, 0x00, 0xc7,
        ];
        packet.resize(0x73, 0xff);
        let (ip, tcp) = parse_tcp_packet(&packet).unwrap();
        assert_eq!(ip.protocol(), 17);
        assert_eq!(tcp, None);
        // A compressed SCPS segment (protocol 105) is not parsed as TCP either.
        let mut v6 = OUR_V6_DATA;
        v6[6] = crate::wire::IPPROTO_SCPS_COMPRESSED;
        let (ip, tcp) = parse_tcp_packet(&v6).unwrap();
        assert_eq!((ip.protocol(), tcp), (105, None));
    }

    #[test]
    fn ip_errors_come_first() {
        let mut packet = OUR_SYN;
        packet[8] = 1; // TTL changed without fixing the IPv4 checksum
        assert_eq!(
            parse_tcp_packet(&packet),
            Err(WireError::BadChecksum { layer: Layer::Ipv4 })
        );
        assert_eq!(
            parse_tcp_packet(&OUR_SYN[..59]),
            Err(WireError::BadIpv4TotalLength {
                total: 60,
                header: 20,
                available: 59,
            })
        );
        // The TCP checksum covers the addresses (pseudo-header).
        let mut v6 = OUR_V6_DATA;
        v6[39] = 3;
        assert_eq!(
            parse_tcp_packet(&v6),
            Err(WireError::BadChecksum { layer: Layer::Tcp })
        );
    }

    #[test]
    fn build_errors_leave_buffer_empty() {
        let v6: IpAddr = "::1".parse().unwrap();
        let mut buf = vec![9; 10];
        assert_eq!(
            build_tcp_packet(LO4, v6, 64, &syn_repr(), &mut buf),
            Err(WireError::AddressFamilyMismatch)
        );
        assert!(buf.is_empty());
        let mut too_many = syn_repr();
        too_many.options.scps_capabilities = Some(Default::default());
        too_many.options.record_boundary = true;
        too_many.options.corruption_experienced = true;
        too_many.options.snacks.push(Default::default());
        too_many.options.snacks.push(Default::default());
        // 19 + 4 + 2 + 2 + 12 = 39 bytes: fits.
        build_tcp_packet(LO4, LO4, 64, &too_many, &mut buf).unwrap();
        assert_eq!(buf.len(), 20 + 20 + 40);
        too_many.options.snacks.push(Default::default());
        assert_eq!(
            build_tcp_packet(LO4, LO4, 64, &too_many, &mut buf),
            Err(WireError::OptionsTooLong(48))
        );
        assert!(buf.is_empty());
        let big = vec![0u8; 65535 - 40 - 20 + 1];
        let long = TcpRepr {
            payload: &big,
            ..syn_repr()
        };
        assert_eq!(
            build_tcp_packet(LO4, LO4, 64, &long, &mut buf),
            Err(WireError::PayloadTooLong(65536 - 20))
        );
        assert!(buf.is_empty());
        // One byte less fits exactly.
        let fits = TcpRepr {
            payload: &big[1..],
            ..syn_repr()
        };
        build_tcp_packet(LO4, LO4, 64, &fits, &mut buf).unwrap();
        assert_eq!(buf.len(), 65535);
        let (ip, tcp) = parse_tcp_packet(&buf).unwrap();
        assert_eq!(ip.payload_len(), 65515);
        assert_eq!(tcp, Some(fits));
    }

    #[test]
    fn df_is_set_on_ipv4() {
        let mut buf = Vec::new();
        build_tcp_packet(LO4, LO4, 250, &syn_repr(), &mut buf).unwrap();
        let (ip, _) = Ipv4Repr::parse(&buf).unwrap();
        assert!(ip.dont_fragment);
        assert_eq!(ip.ttl, 250);
    }
}
