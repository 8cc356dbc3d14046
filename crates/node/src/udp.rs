//! UDP over IPv4 (RFC 768, RFC 791) for nodes that speak UDP themselves,
//! such as the Saratoga engine: a datagram wrapped in the two headers
//! with their lengths and checksums, and a packet checked and unwrapped.
//! The checks are what a host's stack makes before it delivers a
//! datagram; a packet that fails one is named by its cause, for a node to
//! count and drop.

use std::net::{Ipv4Addr, SocketAddrV4};

use crate::ip_header::ones_complement_sum;

/// IPv4 header without options (20 bytes) and UDP header (8).
pub const IPV4_UDP_HEADER_LEN: usize = 28;

const UDP: u8 = 17;
const TTL: u8 = 64;

/// Writes `payload` from `src` to `dst` into `out` (replacing what it
/// held) as one IPv4 packet; `id` is its identification field. `None` if
/// the packet would exceed 65535 bytes.
pub fn wrap_v4(
    src: SocketAddrV4,
    dst: SocketAddrV4,
    id: u16,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> Option<()> {
    let udp_len = u16::try_from(8 + payload.len()).ok()?;
    let total = udp_len.checked_add(20)?;
    out.clear();
    // Version 4, 5 words; no TOS; total length; id; don't fragment.
    out.extend_from_slice(&[0x45, 0]);
    out.extend_from_slice(&total.to_be_bytes());
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&[0x40, 0, TTL, UDP, 0, 0]);
    out.extend_from_slice(&src.ip().octets());
    out.extend_from_slice(&dst.ip().octets());
    let header_checksum = !ones_complement_sum(&out[..20]);
    out[10..12].copy_from_slice(&header_checksum.to_be_bytes());
    out.extend_from_slice(&src.port().to_be_bytes());
    out.extend_from_slice(&dst.port().to_be_bytes());
    out.extend_from_slice(&udp_len.to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(payload);
    let checksum = match !udp_sum(*src.ip(), *dst.ip(), &out[20..]) {
        // RFC 768: a computed zero is sent as all ones (zero means none).
        0 => 0xffff,
        sum => sum,
    };
    out[26..28].copy_from_slice(&checksum.to_be_bytes());
    Some(())
}

/// A UDP datagram found in an IPv4 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram<'a> {
    pub src: SocketAddrV4,
    pub dst: SocketAddrV4,
    pub payload: &'a [u8],
}

/// The UDP datagram `packet` carries, checked: IPv4 header length, total
/// length and checksum; not a fragment; UDP length and checksum (a zero
/// checksum is none, RFC 768). Bytes past the IP total length (a link's
/// padding) are ignored. Otherwise the cause of the drop.
pub fn unwrap_v4(packet: &[u8]) -> Result<Datagram<'_>, &'static str> {
    match packet.first().map(|b| b >> 4) {
        None => return Err("truncated"),
        Some(4) => {}
        Some(_) => return Err("not_ipv4"),
    }
    if packet.len() < 20 {
        return Err("truncated");
    }
    let header_len = usize::from(packet[0] & 0x0f) * 4;
    if header_len < 20 || header_len > packet.len() {
        return Err("bad_header_length");
    }
    let total = usize::from(u16::from_be_bytes([packet[2], packet[3]]));
    if total < header_len || total > packet.len() {
        return Err("bad_length");
    }
    if ones_complement_sum(&packet[..header_len]) != 0xffff {
        return Err("bad_checksum");
    }
    if packet[9] != UDP {
        return Err("not_udp");
    }
    // More fragments, or an offset: we never fragment, and do not reassemble.
    if u16::from_be_bytes([packet[6], packet[7]]) & 0x3fff != 0 {
        return Err("fragment");
    }
    let ip = |at: usize| Ipv4Addr::new(packet[at], packet[at + 1], packet[at + 2], packet[at + 3]);
    let (src_ip, dst_ip) = (ip(12), ip(16));
    let udp = &packet[header_len..total];
    if udp.len() < 8 {
        return Err("truncated");
    }
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if udp_len < 8 || udp_len > udp.len() {
        return Err("bad_udp_length");
    }
    let udp = &udp[..udp_len];
    if u16::from_be_bytes([udp[6], udp[7]]) != 0 && udp_sum(src_ip, dst_ip, udp) != 0xffff {
        return Err("bad_udp_checksum");
    }
    let port = |at: usize| u16::from_be_bytes([udp[at], udp[at + 1]]);
    Ok(Datagram {
        src: SocketAddrV4::new(src_ip, port(0)),
        dst: SocketAddrV4::new(dst_ip, port(2)),
        payload: &udp[8..],
    })
}

/// The one's complement sum of the pseudo-header of RFC 768 and `udp`
/// (header and payload), folded.
fn udp_sum(src: Ipv4Addr, dst: Ipv4Addr, udp: &[u8]) -> u16 {
    let mut pseudo = [0u8; 12];
    pseudo[..4].copy_from_slice(&src.octets());
    pseudo[4..8].copy_from_slice(&dst.octets());
    pseudo[9] = UDP;
    pseudo[10..].copy_from_slice(&(udp.len() as u16).to_be_bytes());
    let sum = u32::from(ones_complement_sum(&pseudo)) + u32::from(ones_complement_sum(udp));
    ((sum & 0xffff) + (sum >> 16)) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddrV4 {
        s.parse().unwrap()
    }

    #[test]
    fn a_wrapped_datagram_unwraps_to_itself() {
        let (src, dst) = (addr("10.0.0.1:40000"), addr("10.0.0.2:7542"));
        for len in [0, 1, 7, 1472] {
            let payload: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let mut packet = vec![9; 3];
            wrap_v4(src, dst, 5, &payload, &mut packet).unwrap();
            assert_eq!(packet.len(), IPV4_UDP_HEADER_LEN + len);
            assert_eq!(ones_complement_sum(&packet[..20]), 0xffff);
            let datagram = unwrap_v4(&packet).unwrap();
            assert_eq!(
                (datagram.src, datagram.dst, datagram.payload),
                (src, dst, &payload[..])
            );
        }
    }

    #[test]
    fn the_udp_checksum_covers_the_pseudo_header_in_one_sum() {
        // Summed in one pass over pseudo-header, header and payload (odd
        // length, padded with a zero byte), as RFC 768 defines it.
        let payload = b"odd length";
        let (src, dst) = (addr("192.168.1.10:53535"), addr("8.8.8.8:53"));
        let mut packet = Vec::new();
        wrap_v4(src, dst, 0, &payload[..9], &mut packet).unwrap();
        let udp = &packet[20..];
        let mut whole = Vec::new();
        whole.extend_from_slice(&src.ip().octets());
        whole.extend_from_slice(&dst.ip().octets());
        whole.extend_from_slice(&[0, UDP]);
        whole.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        whole.extend_from_slice(udp);
        assert_eq!(ones_complement_sum(&whole), 0xffff);
        assert_eq!(&udp[4..6], &17u16.to_be_bytes());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_read_as_a_datagram_or_a_cause(bytes in proptest::collection::vec(0u8.., 0..80)) {
            // Seeded with a real header half the time, so that the checks
            // past the first are reached.
            let mut packet = Vec::new();
            wrap_v4(addr("10.0.0.1:1"), addr("10.0.0.2:2"), 0, &bytes, &mut packet).unwrap();
            let mixed: Vec<u8> = packet.iter().zip(bytes.iter().cycle()).map(|(p, b)| p ^ (b & 1)).collect();
            for input in [&bytes[..], &mixed[..]] {
                if let Ok(datagram) = unwrap_v4(input) {
                    let mut again = Vec::new();
                    wrap_v4(datagram.src, datagram.dst, 0, datagram.payload, &mut again).unwrap();
                    proptest::prop_assert_eq!(unwrap_v4(&again), Ok(datagram));
                }
            }
        }
    }

    #[test]
    fn damaged_or_unrelated_packets_are_named() {
        let mut good = Vec::new();
        wrap_v4(addr("10.0.0.1:1"), addr("10.0.0.2:7542"), 1, b"data", &mut good).unwrap();
        let damaged = |at: usize| {
            let mut p = good.clone();
            p[at] ^= 0x10;
            unwrap_v4(&p).map(|_| ())
        };
        assert_eq!(damaged(12), Err("bad_checksum"));
        assert_eq!(damaged(29), Err("bad_udp_checksum"));
        assert_eq!(unwrap_v4(&good[..10]).map(|_| ()), Err("truncated"));
        assert_eq!(unwrap_v4(&[]).map(|_| ()), Err("truncated"));
        assert_eq!(unwrap_v4(&good[..good.len() - 1]).map(|_| ()), Err("bad_length"));
        assert_eq!(unwrap_v4(&[0x60; 48]).map(|_| ()), Err("not_ipv4"));
        // Padding after the packet is no part of it.
        let mut padded = good.clone();
        padded.extend_from_slice(&[0; 6]);
        assert_eq!(unwrap_v4(&padded).unwrap().payload, b"data");
        // No checksum at all is allowed.
        let mut unchecked = good.clone();
        unchecked[26..28].fill(0);
        assert_eq!(unwrap_v4(&unchecked).unwrap().payload, b"data");
        // A TCP packet, a fragment, a UDP length past the packet: each with
        // the IP checksum made right again.
        let reseal = |mut p: Vec<u8>| {
            p[10..12].fill(0);
            let sum = !ones_complement_sum(&p[..20]);
            p[10..12].copy_from_slice(&sum.to_be_bytes());
            unwrap_v4(&p).map(|_| ())
        };
        let mut tcp = good.clone();
        tcp[9] = 6;
        assert_eq!(reseal(tcp), Err("not_udp"));
        let mut fragment = good.clone();
        fragment[6] = 0x20;
        assert_eq!(reseal(fragment), Err("fragment"));
        let mut long = good.clone();
        long[25] = 200;
        assert_eq!(unwrap_v4(&long).map(|_| ()), Err("bad_udp_length"));
    }
}
