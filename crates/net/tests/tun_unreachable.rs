//! ICMP on the routed path: our stack, in the namespace `ours`, connects to
//! an address that namespace has no route to; its kernel answers SYNs with
//! ICMP network-unreachables back through the TUN device, and the connect
//! fails as unreachable after three of them instead of every SYN
//! retransmission the engine allows.
//!
//! As root (CI) it runs as it is; otherwise it runs itself again in a user
//! namespace of its own.

mod common;

use std::time::{Duration, Instant};

use common::*;
use scps_net::{NetError, NetOptions};

#[test]
fn a_connect_to_an_unroutable_address_fails_as_unreachable() {
    if common::netns::in_user_namespace("a_connect_to_an_unroutable_address_fails_as_unreachable") {
        return;
    }
    let topology = Topology::new();
    let mut options = NetOptions::default();
    options.endpoint.connection.rto_initial = Duration::from_millis(200);
    options.endpoint.connection.rto_min = Duration::from_millis(200);
    let ours = start_our_stack(&topology, Topology::our_prefixes(), options, |net| async move {
        let started = Instant::now();
        let nowhere = "10.66.0.1:80".parse().unwrap();
        let err = net.connect(nowhere).await.unwrap_err();
        let reports = net.endpoint_stats().unreachable_reports;
        (err, started.elapsed(), reports)
    });
    let (err, took, reports) = ours.join().expect("our client");
    match &err {
        NetError::Connection { source, .. } => assert!(
            matches!(source, scps_proto::ConnectionError::Unreachable { .. }),
            "{err}"
        ),
        other => panic!("expected an unreachable peer, got {other:?}"),
    }
    assert!(reports >= 3, "{reports} ICMP reports taken");
    // The kernel rate-limits its ICMP to about one a second per host, so
    // some SYNs draw none: given up after about 6 s of SYN timeouts (200
    // ms doubling), not at the 20 s connect limit.
    assert!(took < Duration::from_secs(15), "{took:?}");
}
