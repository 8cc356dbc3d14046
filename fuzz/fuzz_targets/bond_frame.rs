//! The bonding layer's control frame parser: a frame that parses writes
//! back as read. (A bond fed datagrams: `bond_channels`.)
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_bond::wire::{Frame, is_control};

fuzz_target!(|data: &[u8]| {
    if is_control(data)
        && let Ok(frame) = Frame::parse(data)
    {
        assert_eq!(frame.to_bytes(), data, "a frame writes back as read");
    }
});
