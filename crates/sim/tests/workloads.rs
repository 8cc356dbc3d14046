//! Message streams and file fetches produce the figures their scenarios
//! report.

mod common;

use common::*;

#[test]
fn a_light_message_stream_gets_its_offered_rate_with_latency_above_the_delay() {
    let point = &points(
        "iridium-3ch",
        &["workload.rate=1024bps", "workload.duration=10min"],
    )[0];
    let result = run(point, seed());
    let what = describe(&result);
    assert_eq!(result.error, None, "{what}");
    let figures = &result.messages.as_ref().expect("message figures").forward;
    assert_eq!(figures.offered_bps, 1024.0);
    assert!(
        (figures.actual_bps - 1024.0).abs() < 20.0,
        "{what}: actual {}",
        figures.actual_bps
    );
    // One way is 0.6 to 1.55 s on average: latency includes it.
    assert!(
        figures.latency_p50_s > 0.6,
        "{what}: p50 {}",
        figures.latency_p50_s
    );
    assert!(figures.latency_p95_s >= figures.latency_p50_s && figures.latency_max_s >= figures.latency_p95_s);
    assert!(figures.messages > 1000, "{what}");
}

#[test]
fn two_way_streams_report_both_directions() {
    let point = &points(
        "iridium-3ch",
        &[
            "workload.rate=2048bps",
            "workload.duration=10min",
            "workload.two_way=true",
            "workload.reverse_size=32",
            "workload.reverse_rate=1024bps",
        ],
    )[0];
    let result = run(point, seed());
    let what = describe(&result);
    assert_eq!(result.error, None, "{what}");
    let messages = result.messages.as_ref().expect("message figures");
    let reverse = messages.reverse.as_ref().expect("reverse flow");
    assert_eq!(reverse.offered_bps, 1024.0);
    assert!(reverse.actual_bps > 900.0, "{what}: {reverse:?}");
    assert!(
        messages.forward.actual_bps > 1800.0,
        "{what}: {:?}",
        messages.forward
    );
}

/// A clean 2 Mbit/s link of `rtt` carrying interactive echo of 64-byte
/// messages at 8 kbit/s for a minute, over `protocol`, Nagle's algorithm
/// as `nagle` says at the hosts and at the gateways of a `gw-` label.
fn echo_point(protocol: &str, rtt: &str, nagle: bool) -> scps_config::Point {
    point_from(&format!(
        r#"
        name = "echo"
        protocol = "{protocol}"
        [tcp]
        nagle = {nagle}
        [gateway]
        nagle = {nagle}
        [link]
        rate = "2Mbit"
        rtt = "{rtt}"
        [workload]
        kind = "echo"
        size = 64
        rate = "8kbps"
        duration = "60s"
        "#
    ))
}

#[test]
fn interactive_echo_measures_the_round_trip_of_every_message() {
    for protocol in ["tcp-cubic", "scps-rate", "gw-scps-rate"] {
        let result = run(&echo_point(protocol, "200ms", false), seed());
        let what = describe(&result);
        assert_eq!(result.error, None, "{what}");
        let figures = &result.messages.as_ref().expect("message figures").forward;
        assert_eq!(figures.offered_bps, 8000.0, "{what}");
        // Each message's latency is a round trip, not one way: above the
        // link's 200 ms, by less than the messages' own transmission and
        // the wait of a message sent just before its echo (Nagle is off).
        assert!(
            figures.latency_p50_s > 0.2 && figures.latency_p50_s < 0.21,
            "{what}: {figures:?}"
        );
        // All but those still on their way back when the window closed.
        assert!(
            figures.messages >= 930 && figures.messages <= 938,
            "{what}: {figures:?}"
        );
        assert!(result.retransmitted_bytes == 0, "{what}");
    }
    // The round trip follows the link's.
    let longer = run(&echo_point("scps-rate", "600ms", false), seed());
    let figures = &longer.messages.as_ref().expect("message figures").forward;
    assert!(
        figures.latency_p50_s > 0.6 && figures.latency_p50_s < 0.61,
        "{figures:?}"
    );
    // With Nagle's algorithm on, an echo waits while the one before it is
    // unacknowledged: up to a round trip more.
    let nagle = run(&echo_point("tcp-cubic", "200ms", true), seed());
    let figures = &nagle.messages.as_ref().expect("message figures").forward;
    assert!(figures.latency_p95_s > 0.3, "{figures:?}");
}

#[test]
fn every_planned_fetch_completes_over_a_clean_link() {
    let point = &points("complex-35ws", &["link.ber=1e-9", "workload.duration=5min"])[0];
    let result = run(point, seed());
    let what = describe(&result);
    assert_eq!(result.error, None, "{what}");
    let fetches = result.fetches.as_ref().expect("fetch figures");
    assert!(fetches.fetches > 30, "{what}: {fetches:?}");
    assert_eq!(fetches.fetches_failed, 0);
    // Each fetch needs at least the handshake and one round trip: 2.8 s.
    assert!(fetches.download_p50_s > 2.8, "{what}: {fetches:?}");
}

#[test]
fn fetch_figures_count_the_servers_connections_and_an_empty_plan_is_an_error() {
    let point = &points("complex-35ws", &["link.ber=1e-5", "workload.duration=5min"])[0];
    let result = run(point, seed());
    let what = describe(&result);
    // The files flow from the server: its repairs are what count.
    assert!(
        result.retransmitted_bytes > 10_000,
        "{what}: {}",
        result.retransmitted_bytes
    );
    assert!(result.fast_recoveries + result.timeouts > 0, "{what}");

    let empty = &points(
        "complex-35ws",
        &["workload.interval=1000h", "workload.duration=1s"],
    )[0];
    let result = run(empty, seed());
    let error = result.error.clone().unwrap_or_default();
    assert!(
        error.starts_with("no fetch was planned"),
        "{}: {error}",
        describe(&result)
    );
}

#[test]
fn a_bulk_transfer_is_timed_to_its_last_byte_not_to_the_fin() {
    let point = &points(
        "lowrate-leo-geo",
        &[
            "protocol=tcp-vj",
            "link.delay=120ms",
            "link.ber=0",
            "link.return.rate=115200bps",
            "workload.bytes=100KB",
        ],
    )[0];
    let result = run(point, seed());
    // 100 kB at 115200 bit/s with PPP framing and the handshake: the FIN's
    // extra round trip would add 0.24 s.
    let ideal = 100_000.0 * 8.0 / 115_200.0 * (1508.0 / 1448.0);
    assert!(
        result.duration_s < ideal + 0.6,
        "{}: {}",
        describe(&result),
        result.duration_s
    );
}
