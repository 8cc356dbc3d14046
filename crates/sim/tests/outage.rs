//! A ten-minute outage in the middle of a transfer: survived when the
//! timers allow it, a clean, reported error when they do not.

mod common;

use common::*;

fn scenario(max_retransmissions: u32, rto_max: &str) -> String {
    format!(
        r#"
name = "outage"
protocol = "tcp-vj"
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
