//! UDP over IPv4 read from arbitrary bytes: a packet is a datagram or a
//! named cause, never a panic; a datagram read wraps back to a packet
//! that reads the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_node::udp::{unwrap_v4, wrap_v4};

fuzz_target!(|data: &[u8]| {
    if let Ok(datagram) = unwrap_v4(data) {
        let mut packet = Vec::new();
        wrap_v4(datagram.src, datagram.dst, 0, datagram.payload, &mut packet).unwrap();
        assert_eq!(unwrap_v4(&packet), Ok(datagram));
    }
});
