//! The gateway's link request and reply (`scps_gateway::request`) on
//! arbitrary bytes from a client gateway: a destination and its length,
//! "more bytes needed", or an error naming what was wrong, never a panic;
//! an accepted request encodes back to the bytes it was read from.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_gateway::request::{Destination, MAX_REQUEST, Status};

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((destination, len))) = Destination::parse(data) {
        assert!(len <= data.len() && len <= MAX_REQUEST);
        assert_eq!(destination.encode(), &data[..len]);
    }
    if let Ok(Some(status)) = Status::parse(data) {
        assert_eq!(status.encode(), data[..2]);
    }
});
