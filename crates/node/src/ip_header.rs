//! The little of an IP header that nodes and tools read: a packet's
//! protocol and addresses ([`addresses`]) and the length its header gives
//! it ([`ip_length`]), unchecked; and what a router reads and changes: the
//! checks of RFC 1812 5.2.2 (IPv4) and RFC 8200 (IPv6), the destination,
//! and the time to live, decremented with the header checksum updated in
//! place (RFC 1624). Transport headers are never looked at.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::checksum::Checksum;

/// A packet's transport protocol and addresses, if it is IP. For IPv6 the
/// protocol is the fixed header's next header: extension headers are not
/// followed.
pub fn addresses(packet: &[u8]) -> Option<(u8, IpAddr, IpAddr)> {
    match packet.first()? >> 4 {
        4 if packet.len() >= 20 => {
            let address = |at: usize| -> Option<IpAddr> {
                let bytes: [u8; 4] = packet.get(at..at + 4)?.try_into().ok()?;
                Some(IpAddr::from(bytes))
            };
            Some((packet[9], address(12)?, address(16)?))
        }
        6 if packet.len() >= 40 => {
            let address = |at: usize| -> Option<IpAddr> {
                let bytes: [u8; 16] = packet.get(at..at + 16)?.try_into().ok()?;
                Some(IpAddr::from(bytes))
            };
            Some((packet[6], address(8)?, address(24)?))
        }
        _ => None,
    }
}

/// The length an IP packet's header gives it (IPv4 total length, IPv6
/// fixed header plus payload length).
pub fn ip_length(packet: &[u8]) -> Option<usize> {
    match packet.first()? >> 4 {
        4 => Some(usize::from(u16::from_be_bytes([
            *packet.get(2)?,
            *packet.get(3)?,
        ]))),
        6 => Some(40 + usize::from(u16::from_be_bytes([*packet.get(4)?, *packet.get(5)?]))),
        _ => None,
    }
}

/// Checks `packet` as a router must before forwarding it, decrements its
/// TTL or hop limit, and returns its destination; or the cause of the
/// drop.
pub(crate) fn prepare_forward(packet: &mut [u8]) -> Result<IpAddr, &'static str> {
    match packet.first().map(|b| b >> 4) {
        Some(4) => forward_v4(packet),
        Some(6) => forward_v6(packet),
        Some(_) => Err("not_ip"),
        None => Err("truncated"),
    }
}

fn forward_v4(packet: &mut [u8]) -> Result<IpAddr, &'static str> {
    if packet.len() < 20 {
        return Err("truncated");
    }
    let header_len = usize::from(packet[0] & 0x0f) * 4;
    if header_len < 20 || header_len > packet.len() {
        return Err("bad_header_length");
    }
    let total_len = usize::from(u16::from_be_bytes([packet[2], packet[3]]));
    if total_len < header_len || total_len > packet.len() {
        return Err("bad_length");
    }
    if ones_complement_sum(&packet[..header_len]) != 0xffff {
        return Err("bad_checksum");
    }
    // RFC 1812 5.3.1: a packet whose TTL would reach zero is not
    // forwarded.
    let ttl = packet[8];
    if ttl <= 1 {
        return Err("ttl_expired");
    }
    let old_word = u16::from_be_bytes([packet[8], packet[9]]);
    packet[8] = ttl - 1;
    let new_word = u16::from_be_bytes([packet[8], packet[9]]);
    let checksum = u16::from_be_bytes([packet[10], packet[11]]);
    let updated = incremental_update(checksum, old_word, new_word);
    packet[10..12].copy_from_slice(&updated.to_be_bytes());
    Ok(IpAddr::V4(Ipv4Addr::new(
        packet[16], packet[17], packet[18], packet[19],
    )))
}

fn forward_v6(packet: &mut [u8]) -> Result<IpAddr, &'static str> {
    if packet.len() < 40 {
        return Err("truncated");
    }
    let payload_len = usize::from(u16::from_be_bytes([packet[4], packet[5]]));
    if 40 + payload_len > packet.len() {
        return Err("bad_length");
    }
    if packet[7] <= 1 {
        return Err("ttl_expired");
    }
    packet[7] -= 1;
    let mut dst = [0u8; 16];
    dst.copy_from_slice(&packet[24..40]);
    Ok(IpAddr::V6(Ipv6Addr::from(dst)))
}

/// The 16-bit one's complement sum of `data` (RFC 1071), folded: the
/// complement of its checksum; a header with a correct checksum sums to
/// 0xffff.
pub(crate) fn ones_complement_sum(data: &[u8]) -> u16 {
    !Checksum::of(data).finish()
}

/// RFC 1624 eqn. 3: the checksum after one 16-bit word changed from `old`
/// to `new`, HC' = ~(~HC + ~m + m').
fn incremental_update(checksum: u16, old: u16, new: u16) -> u16 {
    let mut sum = u32::from(!checksum) + u32::from(!old) + u32::from(new);
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn the_sum_is_that_of_the_16_bit_words(data in proptest::collection::vec(0u8.., 0..300)) {
            let mut sum: u32 = data
                .chunks(2)
                .map(|pair| u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)])))
                .sum();
            while sum > 0xffff {
                sum = (sum & 0xffff) + (sum >> 16);
            }
            proptest::prop_assert_eq!(ones_complement_sum(&data), sum as u16);
        }
    }

    /// A 20-byte IPv4 header with a correct checksum, then `payload`.
    pub(crate) fn ipv4(ttl: u8, dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
        let total = (20 + payload.len()) as u16;
        let mut p = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, ttl, 6, 0, 0, 10, 0, 0, 1];
        p[2..4].copy_from_slice(&total.to_be_bytes());
        p.extend_from_slice(&dst);
        let checksum = !ones_complement_sum(&p);
        p[10..12].copy_from_slice(&checksum.to_be_bytes());
        p.extend_from_slice(payload);
        p
    }

    #[test]
    fn ipv4_ttl_is_decremented_and_the_checksum_stays_right() {
        for ttl in [2u8, 64, 255] {
            let mut packet = ipv4(ttl, [10, 2, 0, 9], b"data");
            assert_eq!(prepare_forward(&mut packet), Ok("10.2.0.9".parse().unwrap()));
            assert_eq!(packet[8], ttl - 1);
            assert_eq!(ones_complement_sum(&packet[..20]), 0xffff, "ttl {ttl}");
        }
    }

    #[test]
    fn ipv4_packets_a_router_must_not_forward_are_named() {
        let good = ipv4(64, [10, 2, 0, 9], b"data");
        let mut expired = ipv4(1, [10, 2, 0, 9], b"");
        assert_eq!(prepare_forward(&mut expired), Err("ttl_expired"));
        let mut corrupt = good.clone();
        corrupt[12] ^= 1;
        assert_eq!(prepare_forward(&mut corrupt), Err("bad_checksum"));
        assert_eq!(prepare_forward(&mut good[..19].to_vec()), Err("truncated"));
        let mut short = good.clone();
        short.truncate(22);
        assert_eq!(prepare_forward(&mut short), Err("bad_length"));
        let mut ihl = good.clone();
        ihl[0] = 0x44;
        assert_eq!(prepare_forward(&mut ihl), Err("bad_header_length"));
        assert_eq!(prepare_forward(&mut [0x20u8; 40][..]), Err("not_ip"));
        assert_eq!(prepare_forward(&mut []), Err("truncated"));
    }

    #[test]
    fn ipv6_hop_limit_is_decremented() {
        let mut packet = vec![0u8; 44];
        packet[0] = 0x60;
        packet[5] = 4;
        packet[7] = 9;
        packet[24] = 0xfd;
        packet[39] = 2;
        assert_eq!(prepare_forward(&mut packet), Ok("fd00::2".parse().unwrap()));
        assert_eq!(packet[7], 8);
        packet[7] = 1;
        assert_eq!(prepare_forward(&mut packet), Err("ttl_expired"));
        packet[7] = 9;
        packet[5] = 5;
        assert_eq!(prepare_forward(&mut packet), Err("bad_length"));
    }
}
