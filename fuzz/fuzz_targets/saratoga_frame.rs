//! Any Saratoga frame, and a directory listing, from arbitrary bytes:
//! parsing never panics, and what parses writes back to bytes that parse
//! to the same value. `Frame::parse` reaches every frame type's parser,
//! so one target covers them all.
#![no_main]

use libfuzzer_sys::fuzz_target;
use scps_saratoga::wire::{DirEntry, Frame};

fuzz_target!(|data: &[u8]| {
    if let Ok(frame) = Frame::parse(data) {
        let wire = frame.to_bytes().expect("a frame that was read can be written");
        assert_eq!(Frame::parse(&wire), Ok(frame), "written frame reads back");
    }
    // The same bytes as a directory listing (a directory transfer's contents).
    if let Ok(entries) = DirEntry::parse_listing(data) {
        let mut wire = Vec::new();
        DirEntry::emit_listing(&entries, &mut wire).expect("entries that were read can be written");
        assert_eq!(DirEntry::parse_listing(&wire), Ok(entries));
    }
});
