//! UDP over IPv4 and IPv6 read from arbitrary bytes: a packet is a
//! datagram or a named cause, never a panic; a datagram read wraps back
//! to a packet that reads the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_node::udp::{unwrap, wrap};

fuzz_target!(|data: &[u8]| {
    if let Ok(datagram) = unwrap(data) {
        let mut packet = Vec::new();
        wrap(datagram.src, datagram.dst, 0, datagram.payload, &mut packet).unwrap();
        assert_eq!(unwrap(&packet), Ok(datagram));
    }
});
