//! `Ipv6Repr::parse` on arbitrary bytes; what parses re-emits (without
//! extension headers) and parses back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_proto::wire::Ipv6Repr;

fuzz_target!(|data: &[u8]| {
    let Ok((repr, payload)) = Ipv6Repr::parse(data) else {
        return;
    };
    assert_eq!(payload.len(), repr.payload_len);
    assert!(repr.flow_label < 1 << 20);
    let mut packet = vec![0u8; Ipv6Repr::HEADER_LEN + payload.len()];
    assert_eq!(repr.emit(&mut packet), Ok(Ipv6Repr::HEADER_LEN));
    packet[Ipv6Repr::HEADER_LEN..].copy_from_slice(payload);
    assert_eq!(Ipv6Repr::parse(&packet), Ok((repr, payload)));
});
