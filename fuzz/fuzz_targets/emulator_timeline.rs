//! `Timeline::parse` on arbitrary text, and a parsed timeline checked
//! against a small link: errors, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_emulator::{EmulatorConfig, LinkState, Timeline};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(timeline) = Timeline::parse(text, "fuzz") else { return };
    let config = EmulatorConfig::from_text(
        "[emulate]\nside_a = \"a\"\nside_b = \"b\"\n[link]\nrate = \"1Mbit\"\nchannels = 2\n",
        "fuzz",
    )
    .expect("valid");
    let _ = timeline.check(&LinkState::new(&config).expect("valid"));
});
