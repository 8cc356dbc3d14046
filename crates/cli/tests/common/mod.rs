//! Shared by the tests of `scps send` and `scps recv`: reading their
//! captures with tshark.

#![allow(dead_code)] // each test file uses its own part

use std::path::Path;
use std::process::Command;

/// The port the tests' receivers listen on.
pub const PORT: u16 = 5001;

/// Runs tshark on `capture` with checksum validation on; returns its
/// output. The tests' port is decoded as plain data: random payload would
/// otherwise now and then look like some protocol to tshark's heuristics
/// and be reported as a malformed instance of it.
pub fn tshark(capture: &Path, args: &[&str]) -> String {
    let output = Command::new("tshark")
        .arg("-r")
        .arg(capture)
        .args(["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"])
        .args(["-d", &format!("tcp.port=={PORT},data")])
        .args(args)
        .output()
        .expect("tshark is installed (.ci/run installs it)");
    assert!(
        output.status.success(),
        "tshark failed on {}: {}",
        capture.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Asserts that the capture holds more than `min_packets` packets and that
/// tshark finds nothing malformed and no bad checksum in it.
pub fn assert_capture_clean(capture: &Path, min_packets: usize) {
    let packets = tshark(capture, &[]).lines().count();
    assert!(
        packets > min_packets,
        "{packets} packets in {}",
        capture.display()
    );
    let problems = tshark(
        capture,
        &[
            "-Y",
            "_ws.malformed || _ws.expert.severity >= error || ip.checksum.status == 2 \
             || tcp.checksum.status == 2",
        ],
    );
    assert!(
        problems.is_empty(),
        "tshark reports problems in {}:\n{problems}",
        capture.display()
    );
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
