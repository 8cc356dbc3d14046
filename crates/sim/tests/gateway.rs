//! The gateway in the simulator: client, gwA, link, gwB, server, where
//! each gateway is the real gateway's sans-IO relay between two engine
//! endpoints (`scps_relay::node`). A bulk transfer's content arrives
//! whole through the split connection, both gateways count it closed, and
//! across a geostationary link with bit errors the split (SCPS-TP paced
//! at the link rate across, TCP on each LAN) does many times better than
//! the same TCP end to end: the gateways' reason to exist, measured in
//! virtual time, deterministically. Routes choose what the gateways
//! split, and with what engine; what they pass crosses them untouched.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scps_channel::{Bundle, ChannelConfig};
use scps_node::ip_header::addresses;
use scps_node::tap::{Crossing, Tap, TapError};
use scps_node::{InterfaceId, IpPrefix};
use scps_proto::cc::CongestionAlgorithm;
use scps_proto::config::LossSource;
use scps_proto::endpoint::INTERFACE;
use scps_proto::time::Instant;
use scps_proto::{Config, Endpoint, EndpointConfig};
use scps_relay::node::{GatewayNode, GatewayNodeConfig};
use scps_relay::{Carried, RelayConfig, Route, RouteMatch, RouteTable};
use scps_sim::apps::bulk;
use scps_sim::{NodeInterface, World};
use scps_workload_format::payload::Pattern;

const BYTES: u64 = 4_000_000;
const LINK_RATE: u64 = 8_000_000;

fn prefix(text: &str) -> IpPrefix {
    text.parse().unwrap()
}

/// The LAN hosts' TCP: CUBIC with buffers a Linux host would grow to.
fn lan_tcp() -> Config {
    Config {
        congestion: CongestionAlgorithm::Cubic,
        send_buffer: 4 << 20,
        recv_buffer: 6 << 20,
        ..Config::default()
    }
}

/// The link connections': SCPS-TP paced at the link's rate, losses taken
/// for corruption.
fn link_scps() -> Config {
    Config {
        scps: true,
        congestion: CongestionAlgorithm::Rate,
        rate_bps: Some(LINK_RATE),
        loss_source: LossSource::Corruption,
        send_buffer: 4 << 20,
        recv_buffer: 6 << 20,
        ..Config::default()
    }
}

fn gateway(local: &str, remote: &str, secret: u64, routes: RouteTable) -> GatewayNode {
    GatewayNode::new(
        GatewayNodeConfig {
            local: vec![prefix(local)],
            remote: vec![prefix(remote)],
            lan: lan_tcp(),
            link: link_scps(),
            routes,
        },
        secret,
    )
    .unwrap()
}

/// What the gateways carry without routes: everything, with
/// [`link_scps`] and a relay buffer of a megabyte.
fn carrying_everything() -> RouteTable {
    RouteTable::carrying_everything(Carried {
        engine: Arc::new(link_scps()),
        relay: RelayConfig {
            buffer: 1 << 20,
            idle_timeout: None,
        },
    })
}

/// A LAN: no delay, a gigabit.
fn lan(seed: u64) -> Bundle {
    Bundle::new(vec![ChannelConfig::new(1_000_000_000)], seed).unwrap()
}

/// The geostationary link, one way: 8 Mbit/s, 300 ms, bit errors.
fn geo(seed: u64, ber: f64) -> Bundle {
    let mut channel = ChannelConfig::new(LINK_RATE);
    channel.delay = Duration::from_millis(300);
    channel.ber = ber;
    channel.buffer_bytes = 1_500_000;
    Bundle::new(vec![channel], seed).unwrap()
}

fn host(world: &mut World, address: &str) -> usize {
    let address: IpAddr = address.parse().unwrap();
    let endpoint = Endpoint::new(
        EndpointConfig {
            connection: lan_tcp(),
            secret: u64::from(address.to_string().len() as u32) * 7919,
            ..EndpointConfig::default()
        },
        [address],
    )
    .unwrap();
    world.add_host(endpoint)
}

fn at(node: usize, interface: u16) -> NodeInterface {
    NodeInterface {
        node,
        interface: InterfaceId(interface),
    }
}

/// The world of a transfer, through the gateways or end to end: the
/// client's and the server's nodes, and the gateways'.
fn world(through_gateways: bool, ber: f64) -> (World, usize, usize, Option<(usize, usize)>) {
    world_with(through_gateways.then(carrying_everything), ber)
}

/// The world of a transfer through gateways that both carry `routes`, or
/// end to end without.
fn world_with(routes: Option<RouteTable>, ber: f64) -> (World, usize, usize, Option<(usize, usize)>) {
    let mut world = World::new();
    let client = host(&mut world, "10.1.0.2");
    let server = host(&mut world, "10.2.0.2");
    let eth0 = |node| NodeInterface {
        node,
        interface: INTERFACE,
    };
    let gateways = if let Some(routes) = routes {
        let a = world.add_node(gateway("10.1.0.0/16", "10.2.0.0/16", 11, routes.clone()));
        let b = world.add_node(gateway("10.2.0.0/16", "10.1.0.0/16", 23, routes));
        world.connect(eth0(client), at(a, 0), lan(1), lan(2)).unwrap();
        world
            .connect(at(a, 1), at(b, 1), geo(3, ber), geo(4, ber))
            .unwrap();
        world.connect(at(b, 0), eth0(server), lan(5), lan(6)).unwrap();
        Some((a, b))
    } else {
        world
            .connect(eth0(client), eth0(server), geo(3, ber), geo(4, ber))
            .unwrap();
        None
    };
    (world, client, server, gateways)
}

const SERVER: &str = "10.2.0.2:5001";

/// Runs the transfer, through the gateways or end to end; the virtual
/// time it took, and the world (to look at the gateways).
fn transfer(through_gateways: bool, ber: f64) -> (Duration, World, Option<(usize, usize)>) {
    let (mut world, client, server, gateways) = world(through_gateways, ber);
    let to: SocketAddr = SERVER.parse().unwrap();
    let (sender, receiver, progress) = bulk::transfer(to, BYTES, false, Pattern::new(1), Pattern::new(2));
    world.endpoint_mut(server).listen(to, None).unwrap();
    world.add_app(server, Box::new(receiver));
    world.add_app(client, Box::new(sender));
    world.run(Instant::from_duration(Duration::from_secs(3600)), |_| {
        progress.borrow().is_done(false)
    });
    let progress = progress.borrow();
    assert_eq!(progress.error, None, "the content arrived whole and in order");
    let finished = progress.finished[0].expect("the transfer finished");
    let took = finished.as_duration() - progress.started.unwrap().as_duration();
    (took, world, gateways)
}

#[test]
fn a_transfer_through_two_gateway_nodes_arrives_whole_and_each_split_is_counted() {
    let (took, mut world, gateways) = transfer(true, 0.0);
    let (a, b) = gateways.unwrap();
    // Let the closing handshakes finish.
    let until = world.now() + Duration::from_secs(30);
    world.run(until, |_| false);
    for gateway in [a, b] {
        let node: &GatewayNode = world.node(gateway).unwrap();
        assert_eq!(node.stats().closed, 1, "{:?}", node.stats());
        assert_eq!(node.splits(), 0, "nothing held after the end");
    }
    let goodput = BYTES as f64 * 8.0 / took.as_secs_f64();
    println!(
        "through the gateways, BER 0: {took:?}, {:.3} Mbit/s",
        goodput / 1e6
    );
    assert!(goodput < LINK_RATE as f64, "no faster than the link");
}

#[test]
fn across_bit_errors_the_split_connection_beats_tcp_end_to_end() {
    let (split, _, _) = transfer(true, 1e-5);
    let (direct, _, _) = transfer(false, 1e-5);
    println!("BER 1e-5: through the gateways {split:?}, end to end {direct:?}");
    assert!(
        direct > split * 5,
        "the split connection is at least five times as fast: {split:?} against {direct:?}"
    );
}

#[test]
fn a_refusal_at_the_server_reaches_the_client_as_a_reset() {
    // Nothing listens on the server: gwB's LAN connection is refused, and
    // the client, whose connection gwA accepted, must see a reset.
    let (mut world, client, _, gateways) = world(true, 0.0);
    let to: SocketAddr = SERVER.parse().unwrap();
    let (sender, _, progress) = bulk::transfer(to, BYTES, false, Pattern::new(1), Pattern::new(2));
    world.add_app(client, Box::new(sender));
    world.run(Instant::from_duration(Duration::from_secs(60)), |_| {
        progress.borrow().error.is_some()
    });
    let error = progress.borrow().error.clone().unwrap_or_default();
    assert!(error.contains("reset"), "{error}");
    let (a, b) = gateways.unwrap();
    let until = world.now() + Duration::from_secs(10);
    world.run(until, |_| false);
    let stats = |g| world.node::<GatewayNode>(g).unwrap().stats().clone();
    assert_eq!(stats(b).open_failed, 1, "gwB met the refusal: {:?}", stats(b));
    assert_eq!(
        stats(a).reset,
        1,
        "gwA passed the link's reset on: {:?}",
        stats(a)
    );
}

#[test]
fn eight_connections_on_one_rate_route_share_it_evenly() {
    // Eight transfers at once through the pair: the link connections at
    // gwA draw on one budget, the route's rate, in turns.
    let (mut world, client, server, _) = world(true, 0.0);
    let each = 2_000_000;
    let mut transfers = Vec::new();
    for i in 0..8u16 {
        let to: SocketAddr = format!("10.2.0.2:{}", 5001 + i).parse().unwrap();
        let (sender, receiver, progress) = bulk::transfer(to, each, false, Pattern::new(1), Pattern::new(2));
        world.endpoint_mut(server).listen(to, None).unwrap();
        world.add_app(server, Box::new(receiver));
        world.add_app(client, Box::new(sender));
        transfers.push(progress);
    }
    world.run(Instant::from_duration(Duration::from_secs(600)), |_| {
        transfers.iter().all(|p| p.borrow().is_done(false))
    });
    let finished: Vec<f64> = transfers
        .iter()
        .map(|p| {
            let p = p.borrow();
            assert_eq!(p.error, None);
            p.finished[0].expect("finished").as_duration().as_secs_f64()
        })
        .collect();
    let (first, last) = (
        finished.iter().copied().fold(f64::MAX, f64::min),
        finished.iter().copied().fold(0.0, f64::max),
    );
    let goodput = 8.0 * each as f64 * 8.0 / last;
    println!(
        "eight transfers end between {first:.2} s and {last:.2} s: {:.3} Mbit/s",
        goodput / 1e6
    );
    assert!(last - first < 0.02 * last, "evenly: {finished:?}");
    assert!(
        goodput > 0.85 * LINK_RATE as f64,
        "the route kept busy: {goodput}"
    );
}

/// The packets a tap saw: compressed SCPS-TP, and TCP by the server's
/// port (the lower of the two).
#[derive(Debug, Default)]
struct Seen {
    compressed: usize,
    tcp_by_port: BTreeMap<u16, usize>,
}

struct Counting(Arc<Mutex<Seen>>);

impl Tap for Counting {
    fn packet(&mut self, _: Instant, _: Crossing, packet: &[u8]) {
        let mut seen = self.0.lock().unwrap();
        match addresses(packet) {
            Some((105, _, _)) => seen.compressed += 1,
            Some((6, _, _)) => {
                let port = |at: usize| u16::from_be_bytes([packet[at], packet[at + 1]]);
                *seen.tcp_by_port.entry(port(20).min(port(22))).or_default() += 1;
            }
            _ => {}
        }
    }

    fn finish(self: Box<Self>) -> Result<(), TapError> {
        Ok(())
    }
}

#[test]
fn a_route_splits_its_connections_with_its_engine_and_another_passes_them_end_to_end() {
    // Both gateways: port 5001 carried by a route whose link engine
    // compresses headers (the gateways' own does not), ssh passed.
    let compressing = Carried {
        engine: Arc::new(Config {
            header_compression: true,
            ..link_scps()
        }),
        relay: RelayConfig {
            buffer: 256 << 10,
            idle_timeout: None,
        },
    };
    let route = |name: &str, port, carried| Route {
        name: name.into(),
        matching: RouteMatch {
            source: None,
            destination: Some(prefix("10.2.0.0/16")),
            ports: (port, port),
        },
        carried,
    };
    let routes = RouteTable::new(vec![
        route("bulk", 5001, Some(compressing)),
        route("ssh", 22, None),
    ])
    .unwrap();
    let (mut world, client, server, gateways) = world_with(Some(routes), 0.0);
    let (a, b) = gateways.unwrap();
    let seen = Arc::new(Mutex::new(Seen::default()));
    world.tap(at(a, 1), Box::new(Counting(seen.clone()))).unwrap();
    let each = 1_000_000;
    let transfers: Vec<_> = ["10.2.0.2:5001", "10.2.0.2:22"]
        .into_iter()
        .map(|to| {
            let to: SocketAddr = to.parse().unwrap();
            let (sender, receiver, progress) =
                bulk::transfer(to, each, false, Pattern::new(1), Pattern::new(2));
            world.endpoint_mut(server).listen(to, None).unwrap();
            world.add_app(server, Box::new(receiver));
            world.add_app(client, Box::new(sender));
            progress
        })
        .collect();
    world.run(Instant::from_duration(Duration::from_secs(600)), |_| {
        transfers.iter().all(|p| p.borrow().is_done(false))
    });
    for progress in &transfers {
        let progress = progress.borrow();
        assert_eq!(progress.error, None, "the content arrived whole and in order");
        assert!(progress.finished[0].is_some(), "the transfer finished");
    }
    let until = world.now() + Duration::from_secs(30);
    world.run(until, |_| false);
    for gateway in [a, b] {
        let stats = world.node::<GatewayNode>(gateway).unwrap().stats();
        assert_eq!(
            stats.carried,
            BTreeMap::from([("bulk".to_owned(), 1)]),
            "only the bulk transfer is split: {stats:?}"
        );
        assert_eq!(stats.closed, 1, "{stats:?}");
        assert!(stats.passed_syns >= 1, "ssh's SYN crossed: {stats:?}");
    }
    // On the link: the bulk transfer's data compressed, both gateways
    // running its route's engine; ssh's as the client's TCP sent it.
    let seen = seen.lock().unwrap();
    let segments = each as usize / 1460;
    println!("on the link: {seen:?}");
    assert!(seen.compressed > segments, "{seen:?}");
    assert!(seen.tcp_by_port[&22] > segments, "{seen:?}");
    assert!(seen.tcp_by_port[&5001] < 10, "only its handshake: {seen:?}");
}
