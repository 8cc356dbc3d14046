//! `EmulatorConfig::from_text` on arbitrary text: an error or a
//! configuration whose link builds, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_emulator::{EmulatorConfig, LinkState};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Ok(config) = EmulatorConfig::from_text(text, "fuzz") {
        LinkState::new(&config).expect("a checked configuration builds");
    }
});
