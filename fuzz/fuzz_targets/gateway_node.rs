//! The simulator's gateway (`scps_relay::node::GatewayNode`) fed
//! arbitrary packets on either interface: each is split, forwarded or
//! dropped and counted, never a panic; whatever it sends leaves by one of
//! its two interfaces. Its routes pass ssh and carry the rest.
#![no_main]

use std::sync::Arc;

use libfuzzer_sys::fuzz_target;
use scps_node::{InterfaceId, Node};
use scps_proto::Config;
use scps_proto::time::Instant;
use scps_relay::node::{GatewayNode, GatewayNodeConfig};
use scps_relay::{Carried, RelayConfig, Route, RouteMatch, RouteTable};

/// ssh passes, everything else is carried with `link`.
fn routes(link: Config) -> RouteTable {
    let all = Route::everything(Carried {
        engine: Arc::new(link),
        relay: RelayConfig {
            buffer: 4096,
            idle_timeout: None,
        },
    });
    let ssh = Route {
        name: "ssh".into(),
        matching: RouteMatch {
            source: None,
            destination: None,
            ports: (22, 22),
        },
        carried: None,
    };
    RouteTable::new(vec![ssh, all]).expect("ssh lies within everything")
}

fuzz_target!(|data: &[u8]| {
    let link = Config {
        scps: true,
        header_compression: true,
        ..Config::default()
    };
    let mut gateway = GatewayNode::new(
        GatewayNodeConfig {
            local: vec!["10.1.0.0/16".parse().unwrap(), "fd00:1::/64".parse().unwrap()],
            remote: vec!["10.2.0.0/16".parse().unwrap(), "fd00:2::/64".parse().unwrap()],
            lan: Config::default(),
            link: link.clone(),
            routes: routes(link),
        },
        7,
    )
    .unwrap();
    // The first byte picks the interface of each packet, the second its
    // length; the packets follow one another, a millisecond apart.
    let mut rest = data;
    let mut now = Instant::ZERO;
    let mut out = Vec::new();
    while let [interface, len, tail @ ..] = rest {
        let len = usize::from(*len).min(tail.len());
        let (packet, next) = tail.split_at(len);
        gateway.handle_packet(now, InterfaceId(u16::from(interface & 1)), packet);
        while let Some(leaves) = gateway.poll_transmit(now, &mut out) {
            assert!(leaves.0 < 2);
        }
        now = now + std::time::Duration::from_millis(1);
        gateway.handle_timeout(now);
        rest = next;
    }
});
