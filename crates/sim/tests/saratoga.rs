//! The `saratoga` label: the hosts run the Saratoga engine, and a bulk
//! workload is a put of generated files from the client to the server,
//! checked byte for byte when stored. Judged against the link's limit with
//! Saratoga's headers (IPv4, UDP, DATA's flags, session id and offset).

mod common;

use common::*;

/// geo-8mbit's link with `sets` pinned, under `saratoga`.
fn geo(sets: &[&str]) -> scps_config::Point {
    let mut all = vec!["protocol=\"saratoga\""];
    all.extend_from_slice(sets);
    let mut points = points("geo-8mbit", &all);
    assert_eq!(points.len(), 1, "one point");
    points.remove(0)
}

fn summary(result: &scps_sim::RunResult) -> String {
    format!(
        "{}: {} bytes in {:.2} s, {:.0} bit/s of {:.0} (ratio {:.3}), resent {}, drops {:?}",
        describe(result),
        result.bytes,
        result.duration_s,
        result.goodput_bps,
        result.limit_bps,
        result.ratio,
        result.retransmitted_bytes,
        result.endpoint_drops
    )
}

/// A run that completed with every byte checked.
fn completed(point: &scps_config::Point, bytes: u64) -> scps_sim::RunResult {
    let result = run(point, seed());
    let what = summary(&result);
    println!("{what}");
    assert_eq!(result.error, None, "{what}");
    assert_eq!(result.bytes, bytes, "every byte stored and checked: {what}");
    assert!(result.endpoint_drops.is_empty(), "{what}");
    result
}

#[test]
fn a_put_over_geo_at_ber_1e5_moves_at_the_limit_at_600ms_and_at_no_delay() {
    for rtt in ["600ms", "0ms"] {
        let point = geo(&[&format!("link.rtt=\"{rtt}\""), "link.ber=1e-5"]);
        // IPv4 20, UDP 8, DATA 12 (a 32-bit offset for 100 MB).
        assert_eq!(point.header_bytes, 40);
        let result = completed(&point, 100_000_000);
        let what = summary(&result);
        assert!(result.ratio >= 0.95, "{what}");
        // Every DATA frame lost to bit errors (about 11% at 1500 bytes) is
        // sent again, and little more: no congestion window, no timeouts.
        assert!(result.link.forward.dropped_bit_errors > 0, "{what}");
        let lost = result.link.forward.dropped_bit_errors as f64;
        let resent_frames = result.retransmitted_bytes as f64 / 1460.0;
        assert!(
            resent_frames >= lost * 0.95 && resent_frames <= lost * 1.1,
            "{what}"
        );
    }
}

#[test]
fn a_clean_put_at_no_delay_and_at_600ms_moves_at_the_limit() {
    for rtt in ["0ms", "600ms"] {
        let point = geo(&[&format!("link.rtt=\"{rtt}\""), "link.ber=0"]);
        let result = completed(&point, 100_000_000);
        let what = summary(&result);
        // The pacer's bucket starts full: the first 3000 bytes gain
        // a few milliseconds on the limit.
        assert!(result.ratio >= 0.95 && result.ratio <= 1.0001, "{what}");
        assert_eq!(result.retransmitted_bytes, 0, "{what}");
    }
}

#[test]
fn a_put_rides_out_a_one_minute_outage() {
    let point = geo(&[
        "link.rtt=\"600ms\"",
        "link.ber=1e-7",
        "workload.bytes=\"20MB\"",
        // A list in a list: one value of the sweep, not an axis.
        "link.outages=[[{start=\"10s\", duration=\"1min\"}]]",
    ]);
    let result = completed(&point, 20_000_000);
    let what = summary(&result);
    assert!(result.link.forward.dropped_outage > 0, "{what}");
    assert!(
        result.duration_s > 60.0 + 20.0,
        "the outage is in the time: {what}"
    );
    // What went into the outage is resent once it is over.
    assert!(result.retransmitted_bytes > 0, "{what}");
    // The sender's STATUS requests back off during the outage (to at most
    // a minute): the transfer resumes within one of them.
    assert!(result.duration_s < 20.0 * 8.0 / 7.0 + 60.0 + 75.0, "{what}");
}

#[test]
fn several_files_go_at_once_and_each_is_checked() {
    let one = completed(
        &geo(&["link.rtt=\"300ms\"", "link.ber=1e-5", "workload.bytes=\"20MB\""]),
        20_000_000,
    );
    let point = geo(&[
        "link.rtt=\"300ms\"",
        "link.ber=1e-5",
        "workload.bytes=\"20MB\"",
        "workload.files=7",
    ]);
    let many = completed(&point, 20_000_000);
    // Sent side by side at the same rate, they take about as long as one
    // file of them all.
    assert!(
        (many.duration_s - one.duration_s).abs() < 0.05 * one.duration_s,
        "{} against {}",
        summary(&many),
        summary(&one)
    );
}

#[test]
fn runs_repeat_bit_for_bit_with_their_seed() {
    let point = geo(&["link.rtt=\"100ms\"", "link.ber=1e-5", "workload.bytes=\"5MB\""]);
    let first = run(&point, seed());
    assert_eq!(first, run(&point, seed()), "{}", summary(&first));
    assert_ne!(first, run(&point, seed() + 1), "another seed, other losses");
}

#[test]
fn a_message_workload_is_refused_naming_the_key() {
    let sets = [
        "protocol=\"saratoga\"",
        "workload={kind=\"messages\", size=64, rate=\"2kbit\", duration=\"1min\"}",
    ]
    .map(|s| scps_config::sweep::parse_assignment(s).unwrap());
    let err = scps_config::Scenario::load("iridium-3ch", &sets)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("workload.kind = messages: bulk under saratoga"),
        "{err}"
    );
}

#[test]
fn a_capture_of_a_put_is_ipv4_udp_that_tshark_finds_sound() {
    let point = geo(&["link.rtt=\"100ms\"", "link.ber=1e-5", "workload.bytes=\"2MB\""]);
    let path = std::env::temp_dir().join(format!("scps-capture-saratoga-{}.pcap", std::process::id()));
    let options = scps_sim::RunOptions {
        capture: Some(path.clone()),
        ..scps_sim::RunOptions::default()
    };
    let result = scps_sim::run(&point, seed(), &options).expect("the run starts");
    assert_eq!(result.error, None, "{}", summary(&result));
    // UDP checksums checked too; port 7542 read as plain data (tshark
    // has no Saratoga dissector, and its heuristics would guess).
    let tshark = |filter: &str| {
        let args = [
            "-o",
            "udp.check_checksum:TRUE",
            "-d",
            "udp.port==7542,data",
            "-Y",
            filter,
        ];
        scps_testbed::tshark::tshark(&path, None, &args).lines().count()
    };
    let problems = "_ws.malformed || _ws.expert.severity >= error || ip.checksum.status == 2 \
                    || udp.checksum.status == 2";
    assert_eq!(tshark(problems), 0);
    let data = tshark("ip.src == 10.0.0.1 && udp.srcport == 7542 && udp.dstport == 7542 && ip.len == 1500");
    assert!(data > 1300, "full-sized DATA datagrams: {data}");
    let status = tshark("ip.src == 10.0.0.2 && udp.dstport == 7542");
    assert!(status > 0, "STATUS frames back: {status}");
    std::fs::remove_file(&path).ok();
}
