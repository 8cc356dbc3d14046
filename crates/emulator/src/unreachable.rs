//! Destination-unreachable reports from a circuit's router.
//!
//! A bundle's channel pinned to a circuit (`emulate.circuit_ports`) is as
//! a modem of its own behind a router: while the circuit's call is down,
//! that router has no way to the far end and answers a datagram for it
//! with ICMP destination unreachable (RFC 792 type 3 code 1, host
//! unreachable; RFC 4443 type 1 code 3, address unreachable), from its
//! address on the sender's side, as RFC 1812 4.3.2.4 has a router do. A
//! sender that listens for such reports (a bundle's channel does) takes
//! the channel out of its stripe at once, rather than after its probes go
//! unanswered for two probe intervals.
//!
//! The report quotes as much of the datagram as fits in 576 bytes (IPv4,
//! RFC 1812 4.3.2.3) or 1280 (IPv6, RFC 4443 2.4); none is made about a
//! datagram from an address that no report can go back to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use scps_node::checksum::Checksum;
use scps_node::ip_header::addresses;

/// IP protocol numbers of ICMP and ICMPv6.
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;
/// The longest report, whole.
const IPV4_REPORT_MAX: usize = 576;
const IPV6_REPORT_MAX: usize = 1280;
/// The least time between two reports about one circuit in one
/// direction: a router limits the rate of its ICMP errors (RFC 1812
/// 4.3.2.8), and one report is all a sender needs to act on.
pub(crate) const REPORT_GAP: Duration = Duration::from_millis(100);

/// A router's addresses on one side of the link: the sources of its
/// reports to hosts on that side.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouterAddresses {
    pub v4: Option<Ipv4Addr>,
    pub v6: Option<Ipv6Addr>,
}

/// The report of `router` about `datagram` (an IP packet it could not
/// forward), addressed to the datagram's source; `None` if the datagram
/// is not one a report can be made about, or the router has no address of
/// its family.
pub fn host_unreachable(datagram: &[u8], router: RouterAddresses) -> Option<Vec<u8>> {
    match addresses(datagram)? {
        (_, IpAddr::V4(source), IpAddr::V4(destination)) => {
            report_v4(datagram, source, destination, router.v4?)
        }
        (_, IpAddr::V6(source), IpAddr::V6(destination)) => {
            report_v6(datagram, source, destination, router.v6?)
        }
        _ => None,
    }
}

fn report_v4(datagram: &[u8], source: Ipv4Addr, destination: Ipv4Addr, router: Ipv4Addr) -> Option<Vec<u8>> {
    // No report to an address that is not one host's, nor about a
    // datagram to many (RFC 1812 4.3.2.7).
    if source.is_unspecified()
        || source.is_multicast()
        || source.is_broadcast()
        || destination.is_multicast()
        || destination.is_broadcast()
    {
        return None;
    }
    let quoted = &datagram[..datagram.len().min(IPV4_REPORT_MAX - 28)];
    let total = 28 + quoted.len();
    let mut report = Vec::with_capacity(total);
    report.extend_from_slice(&[0x45, 0xc0]);
    report.extend_from_slice(&(total as u16).to_be_bytes());
    // Identification, flags and fragment offset, time to live, protocol,
    // and the checksum filled in below.
    report.extend_from_slice(&[0, 0, 0, 0, 64, ICMP, 0, 0]);
    report.extend_from_slice(&router.octets());
    report.extend_from_slice(&source.octets());
    // Type 3 (destination unreachable), code 1 (host), checksum, unused.
    report.extend_from_slice(&[3, 1, 0, 0, 0, 0, 0, 0]);
    report.extend_from_slice(quoted);
    let header = checksum_of(&report[..20]);
    report[10..12].copy_from_slice(&header.to_be_bytes());
    let message = checksum_of(&report[20..]);
    report[22..24].copy_from_slice(&message.to_be_bytes());
    Some(report)
}

fn report_v6(datagram: &[u8], source: Ipv6Addr, destination: Ipv6Addr, router: Ipv6Addr) -> Option<Vec<u8>> {
    // RFC 4443 2.4 (e.3): none about a datagram to a multicast address.
    if source.is_unspecified() || source.is_multicast() || destination.is_multicast() {
        return None;
    }
    let quoted = &datagram[..datagram.len().min(IPV6_REPORT_MAX - 48)];
    let payload = 8 + quoted.len();
    let mut report = Vec::with_capacity(40 + payload);
    report.extend_from_slice(&[0x60, 0, 0, 0]);
    report.extend_from_slice(&(payload as u16).to_be_bytes());
    report.extend_from_slice(&[ICMPV6, 64]);
    report.extend_from_slice(&router.octets());
    report.extend_from_slice(&source.octets());
    // Type 1 (destination unreachable), code 3 (address), checksum,
    // unused.
    report.extend_from_slice(&[1, 3, 0, 0, 0, 0, 0, 0]);
    report.extend_from_slice(quoted);
    let mut sum =
        Checksum::pseudo_header(IpAddr::V6(router), IpAddr::V6(source), ICMPV6, payload as u32).ok()?;
    sum.add_bytes(&report[40..]);
    let message = sum.finish();
    report[42..44].copy_from_slice(&message.to_be_bytes());
    Some(report)
}

fn checksum_of(bytes: &[u8]) -> u16 {
    let mut sum = Checksum::new();
    sum.add_bytes(bytes);
    sum.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pinning::ipv4_udp;

    const ROUTER: RouterAddresses = RouterAddresses {
        v4: Some(Ipv4Addr::new(10, 0, 0, 1)),
        v6: Some(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1)),
    };

    fn datagram_v4(length: usize) -> Vec<u8> {
        let mut datagram = ipv4_udp(7001, 7001, length);
        datagram[12..16].copy_from_slice(&[10, 0, 0, 2]);
        datagram[16..20].copy_from_slice(&[10, 9, 0, 2]);
        datagram
    }

    fn datagram_v6(length: usize) -> Vec<u8> {
        let mut datagram = vec![0u8; length];
        datagram[0] = 0x60;
        datagram[6] = 17;
        datagram[8..24].copy_from_slice(&Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2).octets());
        datagram[24..40].copy_from_slice(&Ipv6Addr::new(0xfd09, 0, 0, 0, 0, 0, 0, 2).octets());
        datagram
    }

    /// The one's-complement sum of a checked region is all ones: its
    /// checksum over it, field included, is zero.
    fn sums_to_zero(bytes: &[u8]) -> bool {
        checksum_of(bytes) == 0
    }

    #[test]
    fn an_ipv4_report_goes_from_the_router_to_the_source_and_quotes_the_datagram() {
        let datagram = datagram_v4(100);
        let report = host_unreachable(&datagram, ROUTER).expect("a report");
        assert_eq!(report.len(), 128);
        assert_eq!(u16::from_be_bytes([report[2], report[3]]), 128);
        assert_eq!((report[0], report[8], report[9]), (0x45, 64, ICMP));
        assert_eq!(&report[12..16], &[10, 0, 0, 1]);
        assert_eq!(&report[16..20], &[10, 0, 0, 2]);
        assert_eq!((report[20], report[21]), (3, 1));
        assert_eq!(&report[28..], &datagram[..]);
        assert!(sums_to_zero(&report[..20]), "header checksum");
        assert!(sums_to_zero(&report[20..]), "ICMP checksum");
    }

    #[test]
    fn an_ipv6_report_goes_from_the_router_to_the_source_with_its_pseudo_header_checksum() {
        let datagram = datagram_v6(120);
        let report = host_unreachable(&datagram, ROUTER).expect("a report");
        assert_eq!(report.len(), 40 + 8 + 120);
        assert_eq!(u16::from_be_bytes([report[4], report[5]]), 128);
        assert_eq!((report[0], report[6], report[7]), (0x60, ICMPV6, 64));
        assert_eq!(&report[8..24], &ROUTER.v6.unwrap().octets());
        assert_eq!(&report[24..40], &datagram[8..24]);
        assert_eq!((report[40], report[41]), (1, 3));
        assert_eq!(&report[48..], &datagram[..]);
        let mut sum = Checksum::pseudo_header(
            IpAddr::V6(ROUTER.v6.unwrap()),
            IpAddr::from(<[u8; 16]>::try_from(&report[24..40]).unwrap()),
            ICMPV6,
            128,
        )
        .unwrap();
        sum.add_bytes(&report[40..]);
        assert_eq!(sum.finish(), 0, "ICMPv6 checksum");
    }

    #[test]
    fn a_long_datagram_is_quoted_up_to_the_report_s_limit() {
        let report = host_unreachable(&datagram_v4(1500), ROUTER).expect("a report");
        assert_eq!(report.len(), IPV4_REPORT_MAX);
        let report = host_unreachable(&datagram_v6(1500), ROUTER).expect("a report");
        assert_eq!(report.len(), IPV6_REPORT_MAX);
    }

    #[test]
    fn no_report_without_a_router_address_of_the_family_or_to_no_single_host() {
        let none = RouterAddresses::default();
        assert_eq!(host_unreachable(&datagram_v4(100), none), None);
        assert_eq!(host_unreachable(&datagram_v6(100), none), None);
        let mut broadcast = datagram_v4(100);
        broadcast[16..20].copy_from_slice(&[255; 4]);
        assert_eq!(host_unreachable(&broadcast, ROUTER), None);
        let mut from_nobody = datagram_v4(100);
        from_nobody[12..16].copy_from_slice(&[0; 4]);
        assert_eq!(host_unreachable(&from_nobody, ROUTER), None);
        let mut multicast = datagram_v6(100);
        multicast[24] = 0xff;
        assert_eq!(host_unreachable(&multicast, ROUTER), None);
    }

    #[test]
    fn a_truncated_datagram_gets_no_report_and_no_panic() {
        for length in 0..40 {
            let v4 = &datagram_v4(100)[..length];
            let v6 = &datagram_v6(100)[..length];
            assert_eq!(host_unreachable(v4, ROUTER).is_some(), length >= 20);
            assert_eq!(host_unreachable(v6, ROUTER), None);
        }
    }
}
