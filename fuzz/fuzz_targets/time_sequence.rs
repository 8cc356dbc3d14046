//! The bench report's capture reader (`scps_bench::report::sequence`) on
//! arbitrary bytes: a capture that is not pcap, cut short or holding
//! packets of any shape gives segments or an error, never a panic; every
//! segment it finds lies at a time and offset that are numbers.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_bench::report::sequence::segments_in;

fuzz_target!(|data: &[u8]| {
    if let Ok(segments) = segments_in(data) {
        for segment in segments {
            assert!(segment.time.is_finite() && segment.offset.is_finite());
            assert!(segment.offset >= 0.0);
        }
    }
});
