//! The event loop itself: wake-ups are neither lost nor duplicated.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use scps_channel::{Bundle, ChannelConfig};
use scps_config::MessageFlow;
use scps_proto::endpoint::INTERFACE;
use scps_proto::time::Instant;
use scps_proto::{Endpoint, EndpointConfig};
use scps_sim::apps::messages;
use scps_sim::payload::Pattern;
use scps_sim::{NodeInterface, World};

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
