//! Captures of the simulator are real pcap files: tshark reads them with
//! no malformed packets and no bad checksums, and shows our options.

mod common;

use std::path::PathBuf;

use common::*;
use scps_sim::{RunOptions, RunResult};

/// A run on lowrate-leo-geo at 120 ms and BER 1e-5 with `sets` pinned,
/// captured to a file named after `name`; it must complete.
fn captured_run(name: &str, sets: &[&str]) -> (RunResult, PathBuf) {
    let mut all = vec!["link.delay=120ms", "link.ber=1e-5", "link.return.rate=115200bps"];
    all.extend_from_slice(sets);
    let point = &points("lowrate-leo-geo", &all)[0];
    let path = std::env::temp_dir().join(format!("scps-capture-{name}-{}.pcap", std::process::id()));
    let options = RunOptions {
        capture: Some(path.clone()),
        ..RunOptions::default()
    };
    let result = scps_sim::run(point, seed(), &options).expect("the run starts");
    assert_eq!(result.error, None, "{}", describe(&result));
    (result, path)
}

#[test]
fn tshark_decodes_a_capture_without_errors() {
    let (result, path) = captured_run("tcp", &["protocol=tcp-vj", "workload.bytes=200KB"]);
    assert!(
        result.retransmitted_bytes > 0,
        "the capture should show repairs too"
    );

    let tshark = |args: &[&str]| scps_testbed::tshark::tshark(&path, None, args);
    scps_testbed::tshark::assert_clean(&path, None, 150);
    // The SYN shows window scaling, SACK-permitted and timestamps.
    let syn = tshark(&[
        "-Y",
        "tcp.flags.syn == 1 && tcp.flags.ack == 0",
        "-T",
        "fields",
        "-e",
        "tcp.options.wscale.shift",
        "-e",
        "tcp.options.sack_perm",
        "-e",
        "tcp.options.timestamp.tsval",
    ]);
    let fields: Vec<&str> = syn.trim().split('\t').collect();
    assert_eq!(fields.len(), 3, "{syn:?}");
    assert!(
        fields.iter().all(|f| !f.is_empty()),
        "options in the SYN: {syn:?}"
    );
    let sacks = tshark(&["-Y", "tcp.options.sack_le"]).lines().count();
    assert!(sacks > 0, "SACK blocks decoded");
    std::fs::remove_file(&path).ok();
}

#[test]
fn a_capture_with_compressed_headers_holds_protocol_105_packets() {
    let (_, path) = captured_run(
        "105",
        &[
            "protocol=scps-rate",
            "workload.bytes=200KB",
            "tcp.header_compression=true",
        ],
    );
    let count = |filter: &str| scps_testbed::tshark::count(&path, None, filter);
    // tshark has no dissector for protocol 105: it shows IP packets with
    // their payload, which is all there is to check there.
    let compressed = count("ip.proto == 105");
    assert!(compressed > 150, "{compressed} compressed packets");
    // Only the SYN and SYN-ACK travel as TCP.
    assert_eq!(count("ip.proto == 6"), count("tcp.flags.syn == 1"));
    assert_eq!(count("ip.proto != 6 && ip.proto != 105"), 0);
    assert_eq!(count("_ws.malformed || ip.checksum.status == 2"), 0);
    std::fs::remove_file(&path).ok();
}

#[test]
fn compressed_data_packets_fill_the_path_and_never_exceed_it_through_losses() {
    // docs/spec/compression.md, "The sizes that result": the RI's
    // compressed data segments carry 1464 bytes in a 1500-byte packet.
    // Ours do too, and nothing we send, first copy or repair, is larger
    // (the simulated link does not enforce an MTU: the capture is the
    // check). The applications check every
    // byte.
    let (result, path) = captured_run(
        "full",
        &[
            "protocol=scps-rate",
            "workload.bytes=300KB",
            "tcp.header_compression=true",
        ],
    );
    assert_eq!(result.bytes, 300_000, "{}", describe(&result));
    assert!(
        result.retransmitted_bytes > 0,
        "repairs happened: {}",
        describe(&result)
    );
    let count = |filter: &str| scps_testbed::tshark::count(&path, None, filter);
    assert_eq!(count("ip.len > 1500"), 0, "{}", describe(&result));
    // 300 kB in 1464-byte segments: 205 first copies and the repairs.
    let full = count("ip.proto == 105 && ip.len == 1500");
    assert!(full >= 200, "{full} full packets: {}", describe(&result));
    std::fs::remove_file(&path).ok();
}
