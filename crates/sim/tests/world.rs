//! The event loop itself: wake-ups are neither lost nor duplicated, any
//! node can join, and links are checked as they are made.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use scps_channel::{Bundle, ChannelConfig};
use scps_config::MessageFlow;
use scps_node::{InterfaceId, Route, Router};
use scps_proto::endpoint::INTERFACE;
use scps_proto::time::Instant;
use scps_proto::{Endpoint, EndpointConfig};
use scps_sim::apps::messages;
use scps_sim::world::WorldError;
use scps_sim::{NodeInterface, World};
use scps_workload_format::payload::Pattern;

#[test]
fn a_long_message_run_keeps_its_event_queue_small() {
    let (a, b): (IpAddr, IpAddr) = (
        Ipv4Addr::new(10, 0, 0, 1).into(),
        Ipv4Addr::new(10, 0, 0, 2).into(),
    );
    let mut world = World::new();
    let client = world.add_host(Endpoint::new(EndpointConfig::default(), [a]).unwrap());
    let server = world.add_host(Endpoint::new(EndpointConfig::default(), [b]).unwrap());
    let mut channel = ChannelConfig::new(1_000_000);
    channel.delay = Duration::from_millis(100);
    let eth0 = |node| NodeInterface {
        node,
        interface: INTERFACE,
    };
    world
        .connect(
            eth0(client),
            eth0(server),
            Bundle::new(vec![channel.clone()], 1).unwrap(),
            Bundle::new(vec![channel], 2).unwrap(),
        )
        .unwrap();
    let listen = SocketAddr::new(b, 5001);
    world.endpoint_mut(server).listen(listen, None).unwrap();
    let flow = MessageFlow {
        size: 64,
        rate_bps: 512_000,
    };
    let (client_app, server_app, progress) = messages::stream(
        listen,
        flow,
        None,
        Duration::from_secs(600),
        [Pattern::new(1), Pattern::new(2)],
    );
    world.add_app(client, Box::new(client_app));
    world.add_app(server, Box::new(server_app));
    let mut most_queued = 0;
    world.run(Instant::from_duration(Duration::from_secs(599)), |w| {
        most_queued = most_queued.max(w.events_queued());
        false
    });
    // 1000 messages a second in flight for 100 ms each way: a few hundred
    // packets; wake-ups must not add thousands of stale copies.
    assert!(most_queued < 1000, "{most_queued} events queued at once");
    assert!(progress.borrow().received[0].messages > 590_000);
}

#[test]
fn any_node_joins_the_world_and_what_goes_nowhere_is_counted() {
    let addr = |last| IpAddr::from(Ipv4Addr::new(10, 0, last, 1));
    let mut world = World::new();
    let host = world.add_host(Endpoint::new(EndpointConfig::default(), [addr(1)]).unwrap());
    // Interface 0 towards the host, 1 towards 10.0.2.0/24 (on no link).
    let routes = [("10.0.1.0/24", 0), ("10.0.2.0/24", 1)].map(|(prefix, interface)| Route {
        prefix: prefix.parse().unwrap(),
        interface: InterfaceId(interface),
    });
    let router = world.add_node(Router::new(2, routes).unwrap());
    let at = |node, interface| NodeInterface {
        node,
        interface: InterfaceId(interface),
    };
    let bundle = |seed| Bundle::new(vec![ChannelConfig::new(1_000_000)], seed).unwrap();
    assert_eq!(
        world.connect(at(host, 1), at(router, 0), bundle(1), bundle(2)),
        Err(WorldError::NoSuchInterface {
            node: host,
            interface: InterfaceId(1),
            count: 1
        })
    );
    assert_eq!(
        world.connect(at(router, 0), at(router, 0), bundle(1), bundle(2)),
        Err(WorldError::Loopback {
            node: router,
            interface: InterfaceId(0)
        })
    );
    let link = world
        .connect(at(host, 0), at(router, 0), bundle(1), bundle(2))
        .unwrap();
    assert_eq!(
        world.connect(at(router, 0), at(router, 1), bundle(1), bundle(2)),
        Err(WorldError::AlreadyLinked {
            node: router,
            interface: InterfaceId(0),
            link
        })
    );
    assert!(world.node::<Router>(router).is_some());
    assert!(world.node::<scps_sim::Host>(router).is_none());
    // The host's SYNs to 10.0.2.1 go to the router, which forwards them
    // by an interface on no link.
    let far = SocketAddr::new(addr(2), 5001);
    let now = Instant::ZERO;
    world.endpoint_mut(host).connect(now, far, None, None).unwrap();
    world.run(Instant::from_duration(Duration::from_secs(10)), |_| false);
    let forwarded = world.node::<Router>(router).unwrap().stats().forwarded;
    assert!(forwarded >= 3, "the SYN and its retransmissions: {forwarded}");
    assert_eq!(world.unlinked_drops(), forwarded);
    assert_eq!(world.channel_stats(link, 0)[0].packets_in, forwarded);
}

/// A node that only remembers the carrier changes it is told.
#[derive(Default)]
struct CarrierLog(Vec<(Instant, InterfaceId, bool)>);

impl scps_node::Node for CarrierLog {
    fn interface_count(&self) -> usize {
        2
    }
    fn handle_packet(&mut self, _: Instant, _: InterfaceId, _: &[u8]) {}
    fn poll_transmit(&mut self, _: Instant, _: &mut Vec<u8>) -> Option<InterfaceId> {
        None
    }
    fn poll_timeout(&mut self) -> Option<Instant> {
        None
    }
    fn handle_timeout(&mut self, _: Instant) {}
    fn handle_carrier(&mut self, now: Instant, interface: InterfaceId, up: bool) {
        self.0.push((now, interface, up));
    }
}

#[test]
fn a_link_whose_carrier_is_reported_tells_both_ends_each_change() {
    let secs = Duration::from_secs;
    let mut world = World::new();
    let (a, b) = (
        world.add_node(CarrierLog::default()),
        world.add_node(CarrierLog::default()),
    );
    let at = |node, interface| NodeInterface {
        node,
        interface: InterfaceId(interface),
    };
    // Down from 10 s to 20 s, and 15 s to 30 s one way only: a call is
    // down while either way is.
    let window = |start, duration| scps_channel::OutageWindow {
        start: secs(start),
        duration: secs(duration),
    };
    let bundle = |windows: Vec<scps_channel::OutageWindow>, seed| {
        let mut config = ChannelConfig::new(1_000_000);
        config.outages.scheduled = windows;
        Bundle::new(vec![config], seed).unwrap()
    };
    let reported = world
        .connect(
            at(a, 1),
            at(b, 1),
            bundle(vec![window(10, 10)], 1),
            bundle(vec![window(15, 15)], 2),
        )
        .unwrap();
    // A link not reported tells nobody.
    world
        .connect(
            at(a, 0),
            at(b, 0),
            bundle(vec![window(5, 1)], 3),
            bundle(vec![], 4),
        )
        .unwrap();
    world.report_carrier(reported);
    world.run(Instant::from_duration(secs(60)), |_| false);
    let expected = vec![
        (Instant::from_duration(secs(10)), InterfaceId(1), false),
        (Instant::from_duration(secs(30)), InterfaceId(1), true),
    ];
    for end in [a, b] {
        assert_eq!(world.node::<CarrierLog>(end).unwrap().0, expected);
    }
}
