//! Control requests as the socket receives them: any line parses or not,
//! and any change applies whole or is refused, without a panic; the link
//! keeps carrying packets either way.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use scps_emulator::{Direction, EmulatorConfig, LinkState, Request};

fuzz_target!(|data: &[u8]| {
    let Ok(request) = serde_json::from_slice::<Request>(data) else { return };
    let config = EmulatorConfig::from_text(
        "[emulate]\nside_a = \"a\"\nside_b = \"b\"\n[link]\nrate = \"1Mbit\"\nchannels = 2\n",
        "fuzz",
    )
    .expect("valid");
    let mut link = LinkState::new(&config).expect("valid");
    if let Request::Change(change) = request {
        let _ = link.apply(Duration::from_millis(5), &change);
    }
    link.offer(Direction::Forward, Duration::from_millis(6), vec![0x45; 100]);
    let _ = link.stats(Duration::from_millis(7));
});
