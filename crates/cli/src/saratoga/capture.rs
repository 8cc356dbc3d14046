//! `--pcap FILE`: every datagram in and out written as the IP/UDP packet
//! it travelled in (link type RAW), so that tshark decodes Saratoga on
//! port 7542. The IP header and the checksum come from `scps-proto`'s
//! wire module; only the 8-byte UDP header (RFC 768) is written here.

use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use scps_node::checksum::Checksum;
use scps_pcap::{Capture, CaptureError};
use scps_proto::wire::IpRepr;

const IPPROTO_UDP: u8 = 17;
const UDP_HEADER_LEN: usize = 8;
/// The hop limit written in the captured headers (the kernel's default).
const HOP_LIMIT: u8 = 64;

#[derive(Debug)]
pub struct PacketCapture {
    capture: Capture,
    packet: Vec<u8>,
}

impl PacketCapture {
    pub fn create(path: &Path) -> Result<PacketCapture, CaptureError> {
        Ok(PacketCapture {
            capture: Capture::create(path)?,
            packet: Vec::new(),
        })
    }

    /// Records `payload` sent from `src` to `dst`, stamped with the wall
    /// clock. A datagram too long for one IP packet is left out.
    pub fn record(&mut self, src: SocketAddr, dst: SocketAddr, payload: &[u8]) -> Result<(), CaptureError> {
        if !udp_packet(src, dst, payload, &mut self.packet) {
            return Ok(());
        }
        let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
        self.capture.record(timestamp, &self.packet)
    }

    pub fn finish(self) -> Result<(), CaptureError> {
        self.capture.finish()
    }
}

/// Writes the IP packet carrying `payload` from `src` to `dst` in one UDP
/// datagram into `buf`; false when the addresses are of two families or
/// the payload does not fit.
fn udp_packet(src: SocketAddr, dst: SocketAddr, payload: &[u8], buf: &mut Vec<u8>) -> bool {
    let udp_len = UDP_HEADER_LEN + payload.len();
    let Ok(udp_len16) = u16::try_from(udp_len) else {
        return false;
    };
    let Ok(ip) = IpRepr::new(src.ip(), dst.ip(), IPPROTO_UDP, udp_len, HOP_LIMIT) else {
        return false;
    };
    let header_len = ip.header_len();
    buf.clear();
    buf.resize(header_len + udp_len, 0);
    if ip.emit(buf).is_err() {
        return false;
    }
    let udp = &mut buf[header_len..];
    udp[0..2].copy_from_slice(&src.port().to_be_bytes());
    udp[2..4].copy_from_slice(&dst.port().to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len16.to_be_bytes());
    udp[UDP_HEADER_LEN..].copy_from_slice(payload);
    let Ok(mut sum) = Checksum::pseudo_header(src.ip(), dst.ip(), IPPROTO_UDP, udp_len as u32) else {
        return false;
    };
    sum.add_bytes(udp);
    // RFC 768: a computed zero is sent as all ones (zero means "none").
    let checksum = match sum.finish() {
        0 => 0xffff,
        value => value,
    };
    udp[6..8].copy_from_slice(&checksum.to_be_bytes());
    true
}

/// The address our packets to `peer` leave from, for a socket bound to
/// `local`: `local` itself, or when it is a wildcard the address the
/// kernel routes from (asked with a connected socket, which sends nothing).
pub fn source_towards(local: SocketAddr, peer: SocketAddr) -> SocketAddr {
    if !local.ip().is_unspecified() {
        return local;
    }
    let any: IpAddr = match peer {
        SocketAddr::V4(_) => std::net::Ipv4Addr::UNSPECIFIED.into(),
        SocketAddr::V6(_) => std::net::Ipv6Addr::UNSPECIFIED.into(),
    };
    let routed = std::net::UdpSocket::bind((any, 0))
        .and_then(|socket| socket.connect(peer).and_then(|()| socket.local_addr()));
    SocketAddr::new(routed.map_or(any, |addr| addr.ip()), local.port())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_udp_checksum_verifies_for_both_families() {
        for (src, dst) in [
            ("10.0.0.1:40000", "10.0.0.2:7542"),
            ("[fd00::1]:40000", "[fd00::2]:7542"),
        ] {
            let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
            let mut buf = Vec::new();
            assert!(udp_packet(src, dst, b"odd length", &mut buf));
            let (ip, udp) = IpRepr::parse(&buf).unwrap();
            assert_eq!((ip.protocol(), udp.len()), (IPPROTO_UDP, 18));
            assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 7542);
            let mut sum = Checksum::pseudo_header(src.ip(), dst.ip(), IPPROTO_UDP, 18).unwrap();
            sum.add_bytes(udp);
            assert_eq!(sum.finish(), 0, "{src} -> {dst}");
        }
        let mixed = udp_packet(
            "10.0.0.1:1".parse().unwrap(),
            "[::1]:1".parse().unwrap(),
            b"",
            &mut Vec::new(),
        );
        assert!(!mixed);
    }
}
