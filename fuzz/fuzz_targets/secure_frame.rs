//! The secure link's frame parser (`scps_secure::Frame::parse`) on
//! arbitrary bytes: a frame that parses has the length its type says.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_secure::Frame;

fuzz_target!(|data: &[u8]| {
    if let Ok(frame) = Frame::parse(data) {
        let expected = match frame {
            Frame::Initiation { noise, .. } => noise.len() + 8,
            Frame::Response { noise, .. } => noise.len() + 12,
            Frame::Data { sealed, .. } => sealed.len() + 16,
        };
        assert_eq!(expected, data.len());
    }
});
