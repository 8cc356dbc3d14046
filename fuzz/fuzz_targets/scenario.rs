#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_config::Scenario;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Scenario::from_text(text, "fuzz", &[]);
    }
});
