//! The simulator's gateways honour a scenario's `[[route]]`s, in the
//! syntax of `scps gateway`'s file: a connection a route carries is split
//! at the gateways and crosses the link with the route's engine, one that
//! passes crosses both gateways untouched, end to end, and both deliver
//! every byte, checked.

mod common;

use common::{TWO_CLIENTS_BEHIND_ROUTERS as TWO_CLIENTS, describe, seed};
use scps_sim::{GatewayFigures, RunOptions, RunRecord};

/// a's transfers are carried at a rate of their own, a quarter of the
/// link's; b's pass.
const ROUTES: &str = r#"
[[route]]
name = "a's transfers"
source = "10.1.0.0/24"
ports = "5001"
buffer = "512KiB"
[route.engine.tcp]
rate = "500kbit"
[[route]]
name = "b's"
ports = "5002"
pass = true
"#;

/// The connections a gateway split, however they ended.
fn splits(gateway: &GatewayFigures) -> u64 {
    gateway.closed + gateway.reset + gateway.open as u64
}

fn record(text: &str) -> RunRecord {
    let point = common::point_from(text);
    scps_sim::run_record(&point, seed(), &RunOptions::default()).expect("the run starts")
}

#[test]
fn a_carried_connection_is_split_with_its_routes_engine_and_a_passed_one_runs_end_to_end() {
    let routed = record(&format!("{TWO_CLIENTS}{ROUTES}"));
    let totals = &routed.totals;
    assert_eq!(totals.error, None, "{}", describe(totals));
    assert_eq!(totals.bytes, 2_000_000, "both clients' megabyte, checked");
    let [a, b] = [&routed.clients[0], &routed.clients[1]];
    assert_eq!((a.name.as_str(), b.name.as_str()), ("a", "b"));
    for client in [a, b] {
        assert_eq!(client.error, None, "{client:?}");
        assert_eq!(client.bytes, 1_000_000, "{client:?}");
    }
    // One connection split at each gateway, a's (closed, or still closing
    // when the run stopped).
    let [gw_a, gw_b] = [&routed.gateways[0], &routed.gateways[1]];
    for gateway in [gw_a, gw_b] {
        assert_eq!((splits(gateway), gateway.open_failed), (1, 0), "{gateway:?}");
    }
    println!(
        "a carried at {:.0} bit/s, resending {} bytes (gwA {}); b passed at {:.0} bit/s, resending {} bytes",
        a.goodput_bps,
        a.retransmitted_bytes,
        gw_a.link_retransmitted_bytes,
        b.goodput_bps,
        b.retransmitted_bytes
    );
    // a's TCP ends at gwA, on a LAN without errors: nothing to resend; the
    // link's bit errors are gwA's to repair. b's TCP crosses the link and
    // resends what the bit errors took itself.
    assert_eq!(a.retransmitted_bytes, 0, "{a:?}");
    assert!(gw_a.link_retransmitted_bytes > 0, "{gw_a:?}");
    assert!(b.retransmitted_bytes > 0, "{b:?}");
    // a's link connection is paced at its route's 500 kbit/s.
    assert!(a.goodput_bps <= 500_000.0 && a.goodput_bps > 400_000.0, "{a:?}");

    // Without routes the gateways carry both, at the link's rate.
    let everything = record(TWO_CLIENTS);
    assert_eq!(everything.totals.error, None, "{}", describe(&everything.totals));
    for gateway in &everything.gateways {
        assert_eq!(splits(gateway), 2, "{gateway:?}");
    }
    let [a, b] = [&everything.clients[0], &everything.clients[1]];
    assert_eq!((a.retransmitted_bytes, b.retransmitted_bytes), (0, 0));
    assert!(a.goodput_bps > 500_000.0, "{a:?}");
}

#[test]
fn routes_are_checked_as_the_gateways_are() {
    let error = |routes: &str| {
        scps_config::Scenario::from_text(&format!("{TWO_CLIENTS}{routes}"), "test", &[])
            .unwrap_err()
            .to_string()
    };
    let cases = [
        (
            "[[route]]\nsource = \"10.1.0.0/24\"\n[[route]]\nports = \"5001\"\n",
            "route = route[0] and route[1]: routes that do not overlap, or one within the other",
        ),
        (
            "[[route]]\npass = true\nbuffer = \"1MB\"\n",
            "route[0].pass = true: a route that passes",
        ),
        (
            "[[route]]\n[route.engine]\nprotocol = \"tcp-cubic\"\n",
            "route[0].engine.protocol = \"tcp-cubic\": what the gateways run across the link: scps-vj, \
             scps-vegas, scps-rate",
        ),
        (
            "[[route]]\n[route.engine.link]\nrate = \"1Mbit\"\n",
            "route[0].engine.link: unknown field `link`, expected `protocol` or `tcp`",
        ),
        ("[[route]]\nbuffer = \"100\"\n", "route[0].buffer = 100"),
    ];
    for (routes, expected) in cases {
        let error = error(routes);
        assert!(error.contains(expected), "expected {expected:?} in: {error}");
    }
    let end_to_end = scps_config::Scenario::from_text(
        &format!("{}{ROUTES}", TWO_CLIENTS.replace("gw-scps-rate", "scps-rate")),
        "test",
        &[],
    )
    .unwrap_err()
    .to_string();
    assert!(
        end_to_end.contains("route = 2 routes: routes choose what the gateways of a gw- label carry"),
        "{end_to_end}"
    );
}
