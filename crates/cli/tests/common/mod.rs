//! Shared by the tests of `scps send` and `scps recv`: reading their
//! captures with tshark.

#![allow(dead_code)] // each test file uses its own part

use std::path::Path;

/// The port the tests' receivers listen on.
pub const PORT: u16 = 5001;

/// tshark on `capture`, the tests' port decoded as plain data
/// (`scps_testbed::tshark::tshark`).
pub fn tshark(capture: &Path, args: &[&str]) -> String {
    scps_testbed::tshark::tshark(capture, Some(PORT), args)
}

/// Asserts that the capture holds more than `min_packets` packets and that
/// tshark finds nothing malformed and no bad checksum in it.
pub fn assert_capture_clean(capture: &Path, min_packets: usize) {
    scps_testbed::tshark::assert_clean(capture, Some(PORT), min_packets);
}

/// The SYN and SYN-ACK of the capture, each as (is a SYN-ACK, carries the
/// SCPS capabilities option, kind 20, as tshark decodes it).
pub fn syns(capture: &Path) -> Vec<(bool, bool)> {
    tshark(
        capture,
        &[
            "-Y",
            "tcp.flags.syn == 1",
            "-T",
            "fields",
            "-e",
            "tcp.flags.ack",
            "-e",
            "tcp.options.scps.vector",
        ],
    )
    .lines()
    .map(|line| {
        let (ack, scps) = line.split_once('\t').unwrap_or((line, ""));
        (matches!(ack, "1" | "True"), !scps.is_empty())
    })
    .collect()
}
