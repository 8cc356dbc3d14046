//! A ten-minute outage in the middle of a transfer: survived when the
//! timers allow it, a clean, reported error when they do not.

mod common;

use common::*;

fn scenario(max_retransmissions: u32, rto_max: &str) -> String {
    scenario_with("tcp-vj", max_retransmissions, rto_max, "")
}

fn scenario_with(protocol: &str, max_retransmissions: u32, rto_max: &str, extra_tcp: &str) -> String {
    format!(
        r#"
name = "outage"
protocol = "{protocol}"
[link]
rate = "115200bps"
delay = "120ms"
buffer = "64KiB"
outages = [{{ start = "30s", duration = "10min" }}]
[workload]
kind = "bulk"
bytes = "1MiB"
[tcp]
recv_buffer = "64KiB"
send_buffer = "64KiB"
max_retransmissions = {max_retransmissions}
rto_max = "{rto_max}"
{extra_tcp}
"#
    )
}

#[test]
fn a_ten_minute_outage_is_survived_when_the_timers_allow_it() {
    // 15 retransmissions with backoff up to 120 s span about 18 minutes.
    let point = point_from(&scenario(15, "120s"));
    let result = run(&point, seed());
    let what = describe(&result);
    assert_eq!(result.error, None, "{what}");
    assert_eq!(result.bytes, 1 << 20);
    assert!(
        result.duration_s > 600.0,
        "the outage is in the transfer time: {what}"
    );
    assert!(result.link.forward.dropped_outage > 0, "{what}");
    assert!(
        result.timeouts >= 5,
        "backed-off retransmissions during the outage: {what}"
    );
    // The limit accounts for the time the link was down.
    assert!(
        result.limit_bps < 111_206.0 * 0.5,
        "{what}: limit {}",
        result.limit_bps
    );
}

#[test]
fn a_ten_minute_outage_ends_in_a_clear_error_when_the_timers_do_not_allow_it() {
    // 5 retransmissions with backoff up to 60 s give up after about a minute.
    let point = point_from(&scenario(5, "60s"));
    let result = run(&point, seed());
    let error = result.error.clone().unwrap_or_default();
    assert!(
        error.starts_with(
            "connection failed: connection timed out: no acknowledgment after 5 retransmissions"
        ),
        "{}: {error:?}",
        describe(&result)
    );
    assert!(result.bytes < 1 << 20, "not everything arrived");
    assert!(result.duration_s < 600.0, "gave up within the outage");
}

/// The transfer time of the same megabyte with no outage, seconds.
const CLEAN_TRANSFER_S: f64 = 76.5;

#[test]
fn an_scps_sender_rides_out_the_outage_with_probes_and_resumes_at_once() {
    // Timers that give up within a minute, as in the test above; outage
    // handling keeps the connection instead: after 3 timeouts in a row the
    // link is deemed down, and a probe goes every 2 s.
    for protocol in ["scps-vj", "scps-rate"] {
        let extra = r#"outage = { after_timeouts = 3, probe_interval = "2s" }"#;
        let point = point_from(&scenario_with(protocol, 5, "60s", extra));
        let result = run(&point, seed());
        let what = describe(&result);
        assert_eq!(result.error, None, "{what}");
        assert_eq!(result.bytes, 1 << 20, "{what}");
        // Resumed within a probe interval and a round trip of the link's
        // return, not after a backed-off timer or a slow start.
        let outage_s = 600.0;
        assert!(
            result.duration_s < CLEAN_TRANSFER_S + outage_s + 5.0,
            "{what}: {} s",
            result.duration_s
        );
        // While the link was down only probes went: one per 2 s, besides
        // the window in flight when it went (64 KiB, 46 segments) and the
        // first timeouts' retransmissions; not a flood at the link's rate
        // (5760 packets in ten minutes).
        let sent_into_outage = result.link.forward.dropped_outage;
        let bound = (outage_s / 2.0) as u64 + 46 + 5;
        assert!(
            sent_into_outage <= bound,
            "{what}: {sent_into_outage} packets sent into the outage, at most {bound} expected"
        );
        assert!(result.timeouts >= 3, "{what}");
    }
}
