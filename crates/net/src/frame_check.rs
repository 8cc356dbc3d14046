//! The UDP path's frame check: a CRC-32C (Castagnoli, RFC 3720 B.4) of
//! each encapsulated IP packet, carried in the 4 bytes after it in the
//! datagram, big-endian.
//!
//! TCP's 16-bit ones'-complement checksum misses damage that a real link's
//! frame check would catch (two flipped bits of opposite sense in one
//! column, two swapped 16-bit words): over a damaging path about one
//! transfer in seven delivered bad data (docs/BENCHMARKS.md, "Damaged
//! data past the 16-bit checksum"). A datagram whose CRC does not match is
//! dropped and counted, and TCP repairs the loss.
//!
//! The trailer lies past the IP packet's own length, where IP parsers
//! ignore it, so a peer that does not know it still reads our packets; a
//! datagram from such a peer, exactly one IP packet long, is taken as it
//! is. One with more bytes than its IP length and no matching CRC is
//! damaged.

use scps_node::ip_header::ip_length;

/// Bytes of the trailer.
pub const TRAILER_BYTES: usize = 4;

/// What a received datagram holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checked<'a> {
    /// An IP packet whose trailer matched (the trailer removed).
    Intact(&'a [u8]),
    /// An IP packet without a trailer, from a peer that sends none.
    Unchecked(&'a [u8]),
    /// Neither: damaged on the way, or not one IP packet.
    Damaged,
}

/// Appends `packet` and its trailer to `out`.
pub fn append(packet: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(packet);
    out.extend_from_slice(&crc32c::crc32c(packet).to_be_bytes());
}

/// Checks a received datagram.
pub fn check(datagram: &[u8]) -> Checked<'_> {
    let ip_len = ip_length(datagram);
    if ip_len == Some(datagram.len()) {
        return Checked::Unchecked(datagram);
    }
    let Some(split) = datagram.len().checked_sub(TRAILER_BYTES) else {
        return Checked::Damaged;
    };
    let (packet, trailer) = datagram.split_at(split);
    let carried = u32::from_be_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    if ip_len == Some(packet.len()) && crc32c::crc32c(packet) == carried {
        Checked::Intact(packet)
    } else {
        Checked::Damaged
    }
}

/// Checks a datagram every one of which carries the trailer, whatever it
/// holds (a bundle's channels, where both ends are ours and not every
/// datagram is an IP packet): what it carries, or `None` if damaged.
pub fn check_sealed(datagram: &[u8]) -> Option<&[u8]> {
    let split = datagram.len().checked_sub(TRAILER_BYTES)?;
    let (payload, trailer) = datagram.split_at(split);
    let carried = u32::from_be_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
    (crc32c::crc32c(payload) == carried).then_some(payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An IPv4 header of `len` bytes in total, and its payload.
    fn ipv4(len: u16) -> Vec<u8> {
        let mut packet = vec![0u8; usize::from(len)];
        packet[0] = 0x45;
        packet[2..4].copy_from_slice(&len.to_be_bytes());
        for (i, byte) in packet.iter_mut().enumerate().skip(20) {
            *byte = i as u8;
        }
        packet
    }

    #[test]
    fn the_crc_is_castagnolis() {
        // RFC 3720 B.4's check value.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }

    #[test]
    fn a_packet_with_its_trailer_comes_back_intact() {
        let packet = ipv4(100);
        let mut datagram = Vec::new();
        append(&packet, &mut datagram);
        assert_eq!(datagram.len(), 104);
        assert_eq!(check(&datagram), Checked::Intact(&packet[..]));
    }

    #[test]
    fn damage_the_internet_checksum_cannot_see_is_caught() {
        let packet = ipv4(100);
        let mut datagram = Vec::new();
        append(&packet, &mut datagram);
        // Two 16-bit words swapped: the ones'-complement sum is the same.
        datagram.swap(40, 42);
        datagram.swap(41, 43);
        assert_eq!(check(&datagram), Checked::Damaged);
        // A flipped bit anywhere, the trailer included.
        for bit in 0..datagram.len() * 8 {
            let mut damaged = Vec::new();
            append(&packet, &mut damaged);
            damaged[bit / 8] ^= 1 << (bit % 8);
            assert_ne!(check(&damaged), Checked::Intact(&packet[..]), "bit {bit}");
        }
    }

    #[test]
    fn a_packet_without_a_trailer_is_taken_as_it_is() {
        let packet = ipv4(60);
        assert_eq!(check(&packet), Checked::Unchecked(&packet[..]));
        let mut ipv6 = vec![0u8; 48];
        ipv6[0] = 0x60;
        ipv6[5] = 8;
        assert_eq!(check(&ipv6), Checked::Unchecked(&ipv6[..]));
    }

    #[test]
    fn anything_else_is_damaged() {
        assert_eq!(check(&[]), Checked::Damaged);
        assert_eq!(check(&[0x45, 0, 0]), Checked::Damaged);
        assert_eq!(check(b"not an IP packet at all"), Checked::Damaged);
        let mut padded = ipv4(60);
        padded.extend_from_slice(&[0, 0, 0, 0]);
        assert_eq!(
            check(&padded),
            Checked::Damaged,
            "four bytes that are not its CRC"
        );
    }
}
