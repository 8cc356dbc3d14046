//! Reading our captures with tshark, the check every packet path of ours
//! (simulator, TUN, UDP, the tools) must pass: tshark decodes them with no
//! malformed packet, no expert error and no bad checksum.
//!
//! Test support: tshark is required (`scripts/test-deps.sh` installs it), and a
//! missing or failing tshark panics with its own message.

use std::net::IpAddr;
use std::path::Path;
use std::process::Command;

/// A display filter for what tshark reports as wrong in a capture.
pub const PROBLEMS: &str = "_ws.malformed || _ws.expert.severity >= error || ip.checksum.status == 2 \
                            || tcp.checksum.status == 2";

/// Runs tshark on `capture` with IP and TCP checksum validation on, with
/// `args` added; returns its output. `data_port`, if given, is decoded as
/// plain data: random payload would otherwise now and then look like some
/// protocol to tshark's heuristics (Thrift, say) and be reported as a
/// malformed instance of it.
pub fn tshark(capture: &Path, data_port: Option<u16>, args: &[&str]) -> String {
    let mut command = Command::new("tshark");
    command
        .arg("-r")
        .arg(capture)
        .args(["-o", "ip.check_checksum:TRUE", "-o", "tcp.check_checksum:TRUE"]);
    if let Some(port) = data_port {
        command.args(["-d", &format!("tcp.port=={port},data")]);
    }
    let output = command
        .args(args)
        .output()
        .expect("tshark is installed (scripts/test-deps.sh installs it)");
    assert!(
        output.status.success(),
        "tshark failed on {}: {}",
        capture.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The packets of `capture` that match `filter`.
pub fn count(capture: &Path, data_port: Option<u16>, filter: &str) -> usize {
    tshark(capture, data_port, &["-Y", filter]).lines().count()
}

/// Asserts that tshark decodes more than `min_packets` packets of
/// `capture` and reports none of [`PROBLEMS`].
pub fn assert_clean(capture: &Path, data_port: Option<u16>, min_packets: usize) {
    let packets = tshark(capture, data_port, &[]).lines().count();
    assert!(
        packets > min_packets,
        "{packets} packets decoded in {}",
        capture.display()
    );
    let problems = tshark(capture, data_port, &["-Y", PROBLEMS]);
    assert!(
        problems.is_empty(),
        "tshark reports problems in {}:\n{problems}",
        capture.display()
    );
}

/// What tshark decodes in one SYN or SYN-ACK.
#[derive(Debug)]
pub struct Syn {
    pub src: IpAddr,
    pub ack: bool,
    /// Window-scale shift, SACK-permitted, TSval (each empty if absent).
    pub options: [String; 3],
    /// The SCPS capabilities vector (option kind 20), empty if absent.
    pub scps: String,
}

/// The SYNs and SYN-ACKs of `capture` as tshark decodes them
/// (`data_port` as in [`tshark`]).
pub fn syns(capture: &Path, data_port: Option<u16>) -> Vec<Syn> {
    let out = tshark(
        capture,
        data_port,
        &[
            "-Y",
            "tcp.flags.syn == 1",
            "-T",
            "fields",
            "-e",
            "ip.src",
            "-e",
            "ipv6.src",
            "-e",
            "tcp.flags.ack",
            "-e",
            "tcp.options.wscale.shift",
            "-e",
            "tcp.options.sack_perm",
            "-e",
            "tcp.options.timestamp.tsval",
            "-e",
            "tcp.options.scps.vector",
        ],
    );
    out.lines()
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 7, "tshark fields: {line:?}");
            let src = if f[0].is_empty() { f[1] } else { f[0] };
            Syn {
                src: src.parse().unwrap_or_else(|_| panic!("source address {src:?}")),
                ack: matches!(f[2], "1" | "True"),
                options: [f[3].to_owned(), f[4].to_owned(), f[5].to_owned()],
                scps: f[6].to_owned(),
            }
        })
        .collect()
}
