//! Which packets read from a TUN device belong on the link.
//!
//! The kernel also sends packets of its own out of the TUN devices (MLD
//! reports and router solicitations when they come up): they are not
//! traffic between the two sides, and a router would never forward them.
//! So a packet whose source or destination is link-local, multicast or
//! unspecified, or which is not IP at all, is set aside (and counted)
//! instead of being offered to the channel models.

use std::net::IpAddr;

use scps_node::ip_header::addresses;

/// Whether `packet` (an IP packet as read from a TUN device) can cross
/// the emulated link.
pub fn crosses_link(packet: &[u8]) -> bool {
    match addresses(packet) {
        Some((_, IpAddr::V4(source), IpAddr::V4(destination))) => {
            !(source.is_unspecified()
                || source.is_link_local()
                || destination.is_multicast()
                || destination.is_broadcast()
                || destination.is_link_local())
        }
        Some((_, IpAddr::V6(source), IpAddr::V6(destination))) => {
            !(source.is_unspecified()
                || source.is_unicast_link_local()
                || destination.is_multicast()
                || destination.is_unicast_link_local())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv6Addr;

    use super::*;

    fn v4(source: [u8; 4], destination: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0x45; 20];
        p[12..16].copy_from_slice(&source);
        p[16..20].copy_from_slice(&destination);
        p
    }

    fn v6(source: Ipv6Addr, destination: Ipv6Addr) -> Vec<u8> {
        let mut p = vec![0x60; 40];
        p[8..24].copy_from_slice(&source.octets());
        p[24..40].copy_from_slice(&destination.octets());
        p
    }

    #[test]
    fn only_routable_ip_crosses() {
        assert!(crosses_link(&v4([10, 99, 1, 2], [10, 99, 2, 2])));
        assert!(!crosses_link(&v4([10, 99, 1, 2], [224, 0, 0, 22])));
        assert!(!crosses_link(&v4([0, 0, 0, 0], [255, 255, 255, 255])));
        assert!(!crosses_link(&v4([169, 254, 1, 1], [10, 0, 0, 1])));
        let global = |h| Ipv6Addr::new(0xfd00, 0x99, 1, 0, 0, 0, 0, h);
        assert!(crosses_link(&v6(global(1), global(2))));
        assert!(!crosses_link(&v6(
            "fe80::1".parse().unwrap(),
            "ff02::16".parse().unwrap()
        )));
        assert!(!crosses_link(&v6(Ipv6Addr::UNSPECIFIED, global(2))));
        assert!(!crosses_link(&v6(global(1), "fe80::2".parse().unwrap())));
        assert!(!crosses_link(&[0x45; 19]));
        assert!(!crosses_link(&[]));
        assert!(!crosses_link(&[0x20; 60]));
    }
}
