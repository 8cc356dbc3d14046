//! `Ipv4Repr::parse` on arbitrary bytes; what parses re-emits (without
//! header options) and parses back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_proto::wire::Ipv4Repr;

fuzz_target!(|data: &[u8]| {
    let Ok((repr, payload)) = Ipv4Repr::parse(data) else {
        return;
    };
    assert_eq!(payload.len(), repr.payload_len);
    let mut packet = vec![0u8; Ipv4Repr::HEADER_LEN + payload.len()];
    assert_eq!(repr.emit(&mut packet), Ok(Ipv4Repr::HEADER_LEN));
    packet[Ipv4Repr::HEADER_LEN..].copy_from_slice(payload);
    assert_eq!(Ipv4Repr::parse(&packet), Ok((repr, payload)));
});
