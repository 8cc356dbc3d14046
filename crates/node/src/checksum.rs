//! The Internet checksum (RFC 1071) and the TCP pseudo-header (RFC 9293
//! section 3.1 for IPv4, RFC 8200 section 8.1 for IPv6): one for the
//! engine's wire formats (scps-proto) and every node or tool that writes
//! or checks IP, UDP or ICMP headers.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why a pseudo-header cannot be summed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PseudoHeaderError {
    #[error("source and destination addresses are of different IP versions")]
    AddressFamilyMismatch,
    #[error("payload of {0} bytes does not fit the IP length field")]
    PayloadTooLong(usize),
}

/// A running one's-complement sum.
///
/// Bytes are added in network order. Only the last slice given to
/// [`Checksum::add_bytes`] may have an odd length (it is padded with a zero
/// byte, as RFC 1071 prescribes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Checksum {
    sum: u64,
}

impl Checksum {
    pub fn new() -> Self {
        Checksum { sum: 0 }
    }

    /// The sum over `bytes` alone.
    pub fn of(bytes: &[u8]) -> Self {
        let mut sum = Checksum::new();
        sum.add_bytes(bytes);
        sum
    }

    /// The pseudo-header sum for an upper-layer packet of `upper_len` bytes.
    /// Errors if the two addresses are of different IP versions.
    ///
    /// IPv4 (RFC 9293 section 3.1): source, destination, a zero byte, the
    /// protocol and the 16-bit upper-layer length; a length above 65535
    /// cannot be expressed there and gives
    /// [`PseudoHeaderError::PayloadTooLong`].
    /// IPv6 (RFC 8200 section 8.1): source, destination, the 32-bit
    /// upper-layer length, three zero bytes and the next header.
    pub fn pseudo_header(
        src: IpAddr,
        dst: IpAddr,
        protocol: u8,
        upper_len: u32,
    ) -> Result<Self, PseudoHeaderError> {
        match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let len = u16::try_from(upper_len)
                    .map_err(|_| PseudoHeaderError::PayloadTooLong(upper_len as usize))?;
                Ok(Checksum::pseudo_header_v4(s, d, protocol, len))
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => Ok(Checksum::pseudo_header_v6(s, d, protocol, upper_len)),
            _ => Err(PseudoHeaderError::AddressFamilyMismatch),
        }
    }

    /// The IPv4 pseudo-header sum (RFC 9293 section 3.1), for callers that
    /// hold IPv4 addresses and a 16-bit length and so cannot fail.
    pub fn pseudo_header_v4(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, upper_len: u16) -> Self {
        let mut sum = Checksum::new();
        sum.add_bytes(&src.octets());
        sum.add_bytes(&dst.octets());
        sum.add_u16(u16::from(protocol));
        sum.add_u16(upper_len);
        sum
    }

    /// The IPv6 pseudo-header sum (RFC 8200 section 8.1).
    pub fn pseudo_header_v6(src: Ipv6Addr, dst: Ipv6Addr, protocol: u8, upper_len: u32) -> Self {
        let mut sum = Checksum::new();
        sum.add_bytes(&src.octets());
        sum.add_bytes(&dst.octets());
        sum.add_bytes(&upper_len.to_be_bytes());
        sum.add_u16(u16::from(protocol));
        sum
    }

    /// Adds `bytes` as big-endian 16-bit words.
    ///
    /// Eight bytes are summed at a time as one big-endian 64-bit word with
    /// end-around carry: since 2^16 ≡ 1 modulo 2^16 − 1, the one's-complement
    /// sum of 64-bit words folds to the same 16-bit sum as that of the 16-bit
    /// words (RFC 1071 section 2 (B) and (C)).
    pub fn add_bytes(&mut self, bytes: &[u8]) {
        // Two independent accumulators let the adds of neighbouring words
        // run in parallel.
        let mut a: u64 = 0;
        let mut b: u64 = 0;
        let (words, rest) = bytes.as_chunks::<8>();
        let (word_pairs, odd_word) = words.as_chunks::<2>();
        for [hi, lo] in word_pairs {
            a = add_carry(a, u64::from_be_bytes(*hi));
            b = add_carry(b, u64::from_be_bytes(*lo));
        }
        if let [word] = odd_word {
            a = add_carry(a, u64::from_be_bytes(*word));
        }
        let (pairs, rest) = rest.as_chunks::<2>();
        for pair in pairs {
            b = add_carry(b, u64::from(u16::from_be_bytes(*pair)));
        }
        if let [last] = rest {
            // An odd final byte is the high half of a word padded with zero.
            b = add_carry(b, u64::from(*last) << 8);
        }
        self.sum = add_carry(self.sum, add_carry(a, b));
    }

    pub fn add_u16(&mut self, value: u16) {
        self.sum = add_carry(self.sum, u64::from(value));
    }

    /// The checksum field value: the one's complement of the folded sum.
    pub fn finish(self) -> u16 {
        !fold(self.sum)
    }
}

/// One's-complement addition on 64 bits (end-around carry).
#[inline(always)]
fn add_carry(a: u64, b: u64) -> u64 {
    let (sum, carry) = a.overflowing_add(b);
    // After an overflow `sum` is at most 2^64 - 2, so adding 1 cannot overflow.
    sum + u64::from(carry)
}

/// Folds a 64-bit one's-complement sum to 16 bits.
fn fold(sum: u64) -> u16 {
    let mut s = (sum & 0xffff_ffff) + (sum >> 32); // < 2^33
    s = (s & 0xffff) + (s >> 16); // < 2^17 + 2^16
    s = (s & 0xffff) + (s >> 16); // < 2^16 + 2
    s = (s & 0xffff) + (s >> 16); // <= 0xffff
    s as u16
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    /// Straightforward RFC 1071 reference: 16-bit words into a u32, folded.
    fn reference(bytes: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for pair in bytes.chunks(2) {
            let word = match pair {
                [hi, lo] => u16::from_be_bytes([*hi, *lo]),
                [hi] => u16::from_be_bytes([*hi, 0]),
                _ => 0,
            };
            sum += u32::from(word);
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    fn checksum_of(bytes: &[u8]) -> u16 {
        Checksum::of(bytes).finish()
    }

    /// Deterministic pseudo-random bytes (xorshift), no dependency needed.
    fn noise(len: usize, mut state: u64) -> Vec<u8> {
        (0..len)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                (state >> 32) as u8
            })
            .collect()
    }

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: the words 0001 f203 f4f5 f6f7 sum to ddf2
        // (after end-around carry), so the checksum is its complement.
        let bytes = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(checksum_of(&bytes), !0xddf2);
        assert_eq!(checksum_of(&bytes), 0x220d);
    }

    #[test]
    fn ipv4_header_example() {
        // The widely used example header 4500 0073 0000 4000 4011 ____
        // c0a8 0001 c0a8 00c7, whose checksum is b861.
        let mut header = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01,
            0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum_of(&header), 0xb861);
        // Summed with its checksum in place, a header finishes as 0.
        header[10] = 0xb8;
        header[11] = 0x61;
        assert_eq!(checksum_of(&header), 0);
    }

    #[test]
    fn empty_and_zero_inputs() {
        assert_eq!(Checksum::new().finish(), 0xffff);
        assert_eq!(Checksum::default(), Checksum::new());
        assert_eq!(checksum_of(&[0; 64]), 0xffff);
        // All ones: every word is negative zero; the sum stays 0xffff.
        assert_eq!(checksum_of(&[0xff; 64]), 0x0000);
    }

    #[test]
    fn odd_final_byte_is_padded_with_zero() {
        assert_eq!(checksum_of(&[0xab]), !0xab00);
        assert_eq!(checksum_of(&[0x12, 0x34, 0xab]), !(0x1234 + 0xab00));
    }

    #[test]
    fn matches_reference_for_all_short_lengths_and_carry_heavy_data() {
        for len in 0..300 {
            for seed in [1u64, 0x9e37_79b9_7f4a_7c15, 42] {
                let bytes = noise(len, seed);
                assert_eq!(checksum_of(&bytes), reference(&bytes), "len {len} seed {seed}");
            }
            let ones = vec![0xffu8; len];
            assert_eq!(checksum_of(&ones), reference(&ones), "0xff * {len}");
            let high = vec![0xfeu8; len];
            assert_eq!(checksum_of(&high), reference(&high), "0xfe * {len}");
        }
        // Large enough for the 64-bit accumulators to wrap many times.
        let big = vec![0xffu8; 1 << 20];
        assert_eq!(checksum_of(&big), reference(&big));
        let big = noise(1 << 20, 7);
        assert_eq!(checksum_of(&big), reference(&big));
    }

    #[test]
    fn split_into_even_slices_gives_same_sum() {
        let bytes = noise(1500, 3);
        let whole = checksum_of(&bytes);
        for split in (0..=1500).step_by(2) {
            let (a, b) = bytes.split_at(split);
            let mut sum = Checksum::new();
            sum.add_bytes(a);
            sum.add_bytes(b);
            assert_eq!(sum.finish(), whole, "split at {split}");
        }
    }

    #[test]
    fn add_u16_equals_adding_its_bytes() {
        for value in [0u16, 1, 0x8000, 0xfffe, 0xffff, 0x1234] {
            let mut a = Checksum::new();
            a.add_bytes(&[9, 8, 7, 6]);
            a.add_u16(value);
            let mut b = Checksum::new();
            b.add_bytes(&[9, 8, 7, 6]);
            b.add_bytes(&value.to_be_bytes());
            assert_eq!(a.finish(), b.finish());
        }
    }

    #[test]
    fn pseudo_header_ipv4() {
        let src = IpAddr::V4(Ipv4Addr::new(192, 168, 0, 1));
        let dst = IpAddr::V4(Ipv4Addr::new(192, 168, 0, 199));
        // c0a8 + 0001 + c0a8 + 00c7 + 0006 + 03e8 = 0x18606 -> 0x8607.
        let sum = Checksum::pseudo_header(src, dst, 6, 1000).unwrap();
        assert_eq!(sum.finish(), !0x8607);
        assert_eq!(sum.finish(), 0x79f8);
        assert_eq!(
            Checksum::pseudo_header(src, dst, 6, 65536),
            Err(PseudoHeaderError::PayloadTooLong(65536))
        );
        assert!(Checksum::pseudo_header(src, dst, 6, 65535).is_ok());
    }

    #[test]
    fn pseudo_header_ipv6() {
        let src: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let dst: Ipv6Addr = "2001:db8::2".parse().unwrap();
        // 2001+0db8+0001 + 2001+0db8+0002 + 0000+03e8 + 0000+0006 = 0x5f63.
        let sum = Checksum::pseudo_header(src.into(), dst.into(), 6, 1000).unwrap();
        assert_eq!(sum.finish(), 0xa09c);
        assert_eq!(!0x5f63u16, 0xa09c);
        // The 32-bit length: 0x0001_0000 adds 1 in the high word.
        let big = Checksum::pseudo_header(src.into(), dst.into(), 6, 0x0001_03e8).unwrap();
        assert_eq!(big.finish(), 0xa09c - 1);
    }

    #[test]
    fn pseudo_header_rejects_mixed_families() {
        let v4 = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let v6 = IpAddr::V6(Ipv6Addr::LOCALHOST);
        assert_eq!(
            Checksum::pseudo_header(v4, v6, 6, 20),
            Err(PseudoHeaderError::AddressFamilyMismatch)
        );
        assert_eq!(
            Checksum::pseudo_header(v6, v4, 6, 20),
            Err(PseudoHeaderError::AddressFamilyMismatch)
        );
    }
}
