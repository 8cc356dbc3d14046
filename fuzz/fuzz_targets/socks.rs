//! The gateway's SOCKS5 greeting, username/password and request parsers
//! (`scps_gateway::socks`) on arbitrary bytes from a client: a message
//! and its length, "more bytes needed", or an error naming what was
//! wrong, never a panic; a length never runs past the input.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_gateway::socks::{parse_credentials, parse_greeting, parse_request};

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((methods, len))) = parse_greeting(data) {
        assert!(len <= data.len() && methods.len() + 2 == len);
    }
    if let Ok(Some(given)) = parse_credentials(data) {
        assert!(given.len <= data.len() && given.name.len() + given.password.len() + 3 == given.len);
    }
    if let Ok(Some((_, len))) = parse_request(data) {
        assert!(len <= data.len());
    }
});
