//! A Saratoga STATUS frame from arbitrary bytes: parsing never panics, and
//! a frame that parses writes back to bytes that parse to the same frame.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_saratoga::wire::{Frame, Status};

fuzz_target!(|data: &[u8]| {
    if let Ok(frame) = Status::parse(data) {
        let mut wire = Vec::new();
        frame
            .emit(&mut wire)
            .expect("a frame that was read can be written");
        assert_eq!(Status::parse(&wire), Ok(frame), "written frame reads back");
    }
    if let Ok(frame) = Frame::parse(data) {
        let wire = frame.to_bytes().expect("a frame that was read can be written");
        assert_eq!(Frame::parse(&wire), Ok(frame));
    }
});
