//! The gateway in the simulator: client, gwA, link, gwB, server, where
//! each gateway is the real gateway's sans-IO relay between two engine
//! endpoints (`scps_relay::node`). A bulk transfer's content arrives
//! whole through the split connection, both gateways count it closed, and
//! across a geostationary link with bit errors the split (SCPS-TP paced
//! at the link rate across, TCP on each LAN) does many times better than
//! the same TCP end to end: the gateways' reason to exist, measured in
//! virtual time, deterministically.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use scps_channel::{Bundle, ChannelConfig};
use scps_node::{InterfaceId, IpPrefix};
use scps_proto::cc::CongestionAlgorithm;
use scps_proto::config::LossSource;
use scps_proto::endpoint::INTERFACE;
use scps_proto::time::Instant;
use scps_proto::{Config, Endpoint, EndpointConfig};
use scps_relay::RelayConfig;
use scps_relay::node::{GatewayNode, GatewayNodeConfig};
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

fn gateway(local: &str, remote: &str, secret: u64) -> GatewayNode {
    GatewayNode::new(
        GatewayNodeConfig {
            local: vec![prefix(local)],
            remote: vec![prefix(remote)],
            lan: lan_tcp(),
            link: link_scps(),
            relay: RelayConfig {
                buffer: 1 << 20,
                idle_timeout: None,
            },
        },
        secret,
    )
    .unwrap()
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
    let mut world = World::new();
    let client = host(&mut world, "10.1.0.2");
    let server = host(&mut world, "10.2.0.2");
    let eth0 = |node| NodeInterface {
        node,
        interface: INTERFACE,
    };
    let gateways = if through_gateways {
        let a = world.add_node(gateway("10.1.0.0/16", "10.2.0.0/16", 11));
        let b = world.add_node(gateway("10.2.0.0/16", "10.1.0.0/16", 23));
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
