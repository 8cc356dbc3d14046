//! `TcpOptions::parse` on arbitrary bytes; what parses and fits a header
//! re-emits and parses back the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_proto::wire::{MAX_OPTIONS_LEN, TcpOptions, WireError};

fuzz_target!(|data: &[u8]| {
    let Ok(opts) = TcpOptions::parse(data) else {
        return;
    };
    let mut buf = [0u8; MAX_OPTIONS_LEN];
    match opts.emit(&mut buf) {
        Ok(n) => assert_eq!(TcpOptions::parse(&buf[..n]), Ok(opts)),
        Err(WireError::OptionsTooLong(n)) => {
            // Only possible from more than 40 input bytes.
            assert!(data.len() > MAX_OPTIONS_LEN, "{n} bytes from {data:?}");
        }
        Err(e) => panic!("unexpected {e:?}"),
    }
});
