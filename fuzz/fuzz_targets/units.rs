#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_config::units::{format_duration, parse_ber, parse_duration, Bytes, Rate};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(rate) = text.parse::<Rate>() {
        assert_eq!(rate.to_string().parse::<Rate>(), Ok(rate), "{text:?}");
    }
    if let Ok(size) = text.parse::<Bytes>() {
        assert_eq!(size.to_string().parse::<Bytes>(), Ok(size), "{text:?}");
    }
    if let Ok(duration) = parse_duration(text) {
        // Formatting keeps whole units exactly; fractions to the nanosecond.
        let again = parse_duration(&format_duration(duration)).expect("formatted durations parse");
        assert!(again.abs_diff(duration).as_nanos() <= 1, "{text:?}");
    }
    let _ = parse_ber(text);
    let _ = scps_config::sweep::parse_assignment(text);
});
