//! Which addresses a host can be: the one end of a TCP connection, or the
//! peer a UDP path sends to.

use std::net::{IpAddr, SocketAddr};

/// Whether `ip` is a single host's: not a multicast group, the limited
/// broadcast or the unspecified address. TCP is between two hosts (RFC
/// 1122 4.2.3.10: an open to a broadcast or multicast address is an
/// error, and a SYN to one is dropped). A subnet's broadcast address
/// cannot be told from a host's without the subnet; the host's routing
/// knows it.
pub fn is_host_address(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !(v4.is_multicast() || v4.is_broadcast() || v4.is_unspecified()),
        IpAddr::V6(v6) => !(v6.is_multicast() || v6.is_unspecified()),
    }
}

/// Whether `addr` is a host's address ([`is_host_address`]) and a port
/// one can send to (not 0).
pub fn is_host_socket(addr: SocketAddr) -> bool {
    addr.port() != 0 && is_host_address(addr.ip())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_broadcast_and_unspecified_are_no_host() {
        for ip in [
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "0.0.0.0",
            "ff02::1",
            "::",
        ] {
            assert!(!is_host_address(ip.parse().unwrap()), "{ip}");
        }
        for ip in ["10.0.0.1", "127.0.0.1", "192.0.2.255", "fd00::1", "::1"] {
            assert!(is_host_address(ip.parse().unwrap()), "{ip}");
        }
        assert!(!is_host_socket("10.0.0.1:0".parse().unwrap()));
        assert!(is_host_socket("10.0.0.1:7000".parse().unwrap()));
    }
}
