//! Destination-unreachable reports (ICMP type 3, RFC 792; ICMPv6 type 1,
//! RFC 4443) about a segment we sent: the connection they concern, from
//! the IP header and the first 8 bytes of the segment they quote. A soft
//! error for that connection (RFC 1122 4.2.3.9, RFC 5461).
//!
//! The quoted packet is truncated by design, so its header is read field
//! by field rather than parsed whole. "Fragmentation needed" (IPv4 code 4)
//! is path MTU discovery's, not an unreachable peer, and is not reported.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use scps_node::checksum::Checksum;

use super::{IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_SCPS_TP, IPPROTO_TCP, IpRepr, Layer, WireError};

const DESTINATION_UNREACHABLE_V4: u8 = 3;
const FRAGMENTATION_NEEDED: u8 = 4;
const DESTINATION_UNREACHABLE_V6: u8 = 1;
/// Type, code, checksum and the 4 unused bytes before the quoted packet.
const ICMP_HEADER: usize = 8;

/// The segment a destination-unreachable report quotes: its addresses as
/// we sent it (`src` ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unreachable {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    /// The quoted segment's sequence number: a report is believed only
    /// if it names data in flight (RFC 5927 4.1).
    pub seq: u32,
    /// The ICMP code (what was unreachable: network, host, port, ...).
    pub code: u8,
}

/// Reads an ICMP or ICMPv6 message that `ip` carries: the quoted segment
/// of a destination-unreachable report about TCP or SCPS-TP (protocol 6
/// or 106), `None` for any other message, an error for a malformed one or
/// one whose checksum fails.
pub fn parse_unreachable(ip: &IpRepr, message: &[u8]) -> Result<Option<Unreachable>, WireError> {
    let truncated = |needed| WireError::Truncated {
        layer: Layer::Icmp,
        needed,
        available: message.len(),
    };
    if message.len() < ICMP_HEADER {
        return Err(truncated(ICMP_HEADER));
    }
    let (kind, code) = (message[0], message[1]);
    let wanted = match ip {
        IpRepr::V4(_) => {
            ip.protocol() == IPPROTO_ICMP
                && kind == DESTINATION_UNREACHABLE_V4
                && code != FRAGMENTATION_NEEDED
        }
        IpRepr::V6(_) => ip.protocol() == IPPROTO_ICMPV6 && kind == DESTINATION_UNREACHABLE_V6,
    };
    if !wanted {
        return Ok(None);
    }
    let mut sum = match ip {
        IpRepr::V4(_) => Checksum::new(),
        IpRepr::V6(_) => {
            let len = u32::try_from(message.len()).map_err(|_| WireError::PayloadTooLong(message.len()))?;
            Checksum::pseudo_header(ip.src(), ip.dst(), IPPROTO_ICMPV6, len)?
        }
    };
    sum.add_bytes(message);
    if sum.finish() != 0 {
        return Err(WireError::BadChecksum { layer: Layer::Icmp });
    }
    let quoted = &message[ICMP_HEADER..];
    let (protocol, src, dst, header_len) = match ip {
        IpRepr::V4(_) => {
            let header = quoted.get(..20).ok_or(truncated(ICMP_HEADER + 20))?;
            let header_len = usize::from(header[0] & 0x0f) * 4;
            if header[0] >> 4 != 4 || header_len < 20 {
                return Ok(None);
            }
            let src = Ipv4Addr::new(header[12], header[13], header[14], header[15]);
            let dst = Ipv4Addr::new(header[16], header[17], header[18], header[19]);
            (header[9], IpAddr::V4(src), IpAddr::V4(dst), header_len)
        }
        IpRepr::V6(_) => {
            let header = quoted.get(..40).ok_or(truncated(ICMP_HEADER + 40))?;
            if header[0] >> 4 != 6 {
                return Ok(None);
            }
            let address = |at: usize| {
                let mut octets = [0u8; 16];
                octets.copy_from_slice(&header[at..at + 16]);
                IpAddr::V6(Ipv6Addr::from(octets))
            };
            (header[6], address(8), address(24), 40)
        }
    };
    if protocol != IPPROTO_TCP && protocol != IPPROTO_SCPS_TP {
        return Ok(None);
    }
    // Ports and sequence number: the first 8 bytes of the segment, all
    // that RFC 792 promises a report quotes.
    let tcp = quoted
        .get(header_len..header_len + 8)
        .ok_or(truncated(ICMP_HEADER + header_len + 8))?;
    Ok(Some(Unreachable {
        src: SocketAddr::new(src, u16::from_be_bytes([tcp[0], tcp[1]])),
        dst: SocketAddr::new(dst, u16::from_be_bytes([tcp[2], tcp[3]])),
        seq: u32::from_be_bytes([tcp[4], tcp[5], tcp[6], tcp[7]]),
        code,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{TcpFlags, TcpRepr, build_tcp_packet};

    /// A SYN we sent from `src` to `dst`.
    fn our_syn(src: &str, dst: &str) -> Vec<u8> {
        let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
        let syn = TcpRepr {
            src_port: src.port(),
            dst_port: dst.port(),
            seq: 1,
            ack: 0,
            flags: TcpFlags::SYN,
            window: 1000,
            urgent: 0,
            options: Default::default(),
            payload: &[],
        };
        let mut packet = Vec::new();
        build_tcp_packet(src.ip(), dst.ip(), 64, &syn, &mut packet).unwrap();
        packet
    }

    /// The report `router` sends to `to` about `quoted`: type, code, the
    /// quoted packet's header and 8 bytes, the checksum.
    fn report(router: IpAddr, to: IpAddr, kind: u8, code: u8, quoted: &[u8]) -> (IpRepr, Vec<u8>) {
        let ip_header = if router.is_ipv4() { 20 } else { 40 };
        let mut message = vec![kind, code, 0, 0, 0, 0, 0, 0];
        message.extend_from_slice(&quoted[..ip_header + 8]);
        let protocol = if router.is_ipv4() {
            IPPROTO_ICMP
        } else {
            IPPROTO_ICMPV6
        };
        let mut sum = match router {
            IpAddr::V4(_) => Checksum::new(),
            IpAddr::V6(_) => Checksum::pseudo_header(router, to, protocol, message.len() as u32).unwrap(),
        };
        sum.add_bytes(&message);
        message[2..4].copy_from_slice(&sum.finish().to_be_bytes());
        let ip = IpRepr::new(router, to, protocol, message.len(), 64).unwrap();
        (ip, message)
    }

    #[test]
    fn an_unreachable_report_names_the_connection_it_quotes() {
        let syn = our_syn("10.0.0.1:40000", "10.9.9.9:80");
        let router = "10.0.0.254".parse().unwrap();
        let (ip, message) = report(router, "10.0.0.1".parse().unwrap(), 3, 1, &syn);
        let found = parse_unreachable(&ip, &message).unwrap().unwrap();
        assert_eq!(found.src, "10.0.0.1:40000".parse().unwrap());
        assert_eq!(found.dst, "10.9.9.9:80".parse().unwrap());
        assert_eq!(found.code, 1);
        let syn = our_syn("[fd00::1]:40000", "[fd09::9]:80");
        let (ip, message) = report(
            "fd00::fe".parse().unwrap(),
            "fd00::1".parse().unwrap(),
            1,
            4,
            &syn,
        );
        let found = parse_unreachable(&ip, &message).unwrap().unwrap();
        assert_eq!(found.dst, "[fd09::9]:80".parse().unwrap());
    }

    #[test]
    fn other_messages_are_not_reports() {
        let syn = our_syn("10.0.0.1:40000", "10.9.9.9:80");
        let router = "10.0.0.254".parse().unwrap();
        let ours = "10.0.0.1".parse().unwrap();
        for (kind, code) in [(3, FRAGMENTATION_NEEDED), (11, 0), (0, 0), (8, 0)] {
            let (ip, message) = report(router, ours, kind, code, &syn);
            assert_eq!(
                parse_unreachable(&ip, &message),
                Ok(None),
                "type {kind} code {code}"
            );
        }
    }

    #[test]
    fn damaged_or_short_reports_are_errors() {
        let syn = our_syn("10.0.0.1:40000", "10.9.9.9:80");
        let (ip, mut message) = report(
            "10.0.0.254".parse().unwrap(),
            "10.0.0.1".parse().unwrap(),
            3,
            3,
            &syn,
        );
        message[30] ^= 1;
        assert_eq!(
            parse_unreachable(&ip, &message),
            Err(WireError::BadChecksum { layer: Layer::Icmp })
        );
        assert!(matches!(
            parse_unreachable(&ip, &[3, 3, 0]),
            Err(WireError::Truncated {
                layer: Layer::Icmp,
                ..
            })
        ));
    }
}
