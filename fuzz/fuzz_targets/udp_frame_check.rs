//! `scps_net::frame_check::check` on arbitrary datagrams, as the UDP path
//! receives them: a packet is accepted only as the datagram's first bytes,
//! with its CRC-32C when it carries one; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_net::frame_check::{Checked, TRAILER_BYTES, append, check};

fuzz_target!(|data: &[u8]| {
    match check(data) {
        Checked::Intact(packet) => {
            assert_eq!(packet.len() + TRAILER_BYTES, data.len());
            let mut again = Vec::new();
            append(packet, &mut again);
            assert_eq!(again, data, "the trailer is the packet's CRC");
        }
        Checked::Unchecked(packet) => assert_eq!(packet, data),
        Checked::Damaged => {}
    }
});
