//! Sequence numbers: 32 bits on the wire, 64-bit offsets inside the engine.
//!
//! Inside a connection every sequence number is an offset from the initial
//! sequence number of its direction (ISS for what we send, IRS for what we
//! receive): the SYN is offset 0, the first data byte offset 1, and a FIN the
//! offset after the last data byte. Offsets never wrap, which removes the
//! modular comparisons of RFC 9293 section 3.4 from the rest of the code;
//! they are converted at the edge, relative to a reference offset known to be
//! within 2^31 of the value (RFC 9293 requires windows below 2^30).

/// The wire sequence number of `offset`.
pub(crate) fn to_wire(initial: u32, offset: u64) -> u32 {
    // Truncation is the point: the wire carries the offset modulo 2^32.
    initial.wrapping_add(offset as u32)
}

/// The offset nearest to `reference` whose wire form is `wire`, or `None`
/// if that would lie before the initial sequence number.
pub(crate) fn from_wire(initial: u32, wire: u32, reference: u64) -> Option<u64> {
    let reference_wire = to_wire(initial, reference);
    let delta = i64::from(wire.wrapping_sub(reference_wire) as i32);
    reference.checked_add_signed(delta)
}

/// RFC 7323 timestamps compare modulo 2^32: true if `a` is before `b`.
pub(crate) fn ts_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_survive_wrapping_of_the_wire_number() {
        let iss = u32::MAX - 10;
        for offset in [0u64, 1, 10, 11, 12, 5_000_000_000] {
            let wire = to_wire(iss, offset);
            assert_eq!(from_wire(iss, wire, offset), Some(offset));
            // A reference up to 2^31 away still finds the same offset.
            assert_eq!(from_wire(iss, wire, offset + (1 << 30)), Some(offset));
        }
    }

    #[test]
    fn wire_numbers_before_the_initial_number_have_no_offset() {
        assert_eq!(from_wire(1000, 990, 5), None);
        assert_eq!(from_wire(1000, 1003, 5), Some(3));
    }

    #[test]
    fn timestamp_order_is_modular() {
        assert!(ts_before(u32::MAX, 1));
        assert!(!ts_before(1, u32::MAX));
        assert!(!ts_before(7, 7));
    }
}
