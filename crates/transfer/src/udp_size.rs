//! How large a packet of ours a UDP path carries: the route's MTU less
//! what the encapsulation puts around each packet.

use std::net::SocketAddr;

use crate::transport::Encapsulation;

/// Bytes around an encapsulated packet: the outer IP and UDP headers, and
/// in ours the frame check's trailer.
pub fn udp_overhead(outer: SocketAddr, encapsulation: Encapsulation) -> u16 {
    let headers = if outer.is_ipv4() { 20 + 8 } else { 40 + 8 };
    match encapsulation {
        Encapsulation::Scps => headers + scps_net::frame_check::TRAILER_BYTES as u16,
        Encapsulation::Ri => headers,
    }
}

/// The largest packet of ours the UDP path carries: what the route to
/// `peer` takes in one IP packet (the kernel refuses a larger datagram
/// rather than fragment it), less the outer headers; without a known
/// route, what one UDP datagram holds.
pub fn udp_inner_limit(peer: Option<SocketAddr>, overhead: u16) -> u16 {
    const LARGEST_IP_PACKET: u16 = u16::MAX;
    let route_mtu = peer
        .filter(SocketAddr::is_ipv4)
        .and_then(|peer| {
            let probe = std::net::UdpSocket::bind("0.0.0.0:0").ok()?;
            probe.connect(peer).ok()?;
            nix::sys::socket::getsockopt(&probe, nix::sys::socket::sockopt::IpMtu).ok()
        })
        .and_then(|mtu| u16::try_from(mtu).ok())
        .unwrap_or(LARGEST_IP_PACKET);
    route_mtu - overhead
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overhead_is_the_outer_headers_and_our_trailer() {
        let v4: SocketAddr = "192.0.2.1:7168".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::1]:7168".parse().unwrap();
        assert_eq!(udp_overhead(v4, Encapsulation::Ri), 28);
        assert_eq!(udp_overhead(v6, Encapsulation::Ri), 48);
        assert_eq!(udp_overhead(v4, Encapsulation::Scps), 28 + 4);
        assert_eq!(udp_overhead(v6, Encapsulation::Scps), 48 + 4);
    }

    #[test]
    fn without_a_route_the_limit_is_what_one_datagram_holds() {
        assert_eq!(udp_inner_limit(None, 32), u16::MAX - 32);
        // The loopback's route takes the loopback device's MTU (65536 on
        // Linux, more than one IP packet holds).
        let loopback = "127.0.0.1:9".parse().ok();
        assert_eq!(udp_inner_limit(loopback, 32), u16::MAX - 32);
    }
}
