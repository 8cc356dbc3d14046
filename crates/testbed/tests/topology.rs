//! Topologies carry packets where their routes say, and only there.

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use scps_testbed::{EMU, Testbed, Topology, ipv4, ipv6};

/// Sends one datagram from `from` (bound in node `from.0`) to `dest`, and
/// says whether the socket bound at `to.1` in node `to.0` received it
/// within two seconds (the first IPv6 packet over a new path may wait
/// about a second for neighbour discovery).
fn datagram_arrives(
    testbed: &Testbed,
    from: (&str, SocketAddr),
    to: (&str, SocketAddr),
    dest: SocketAddr,
) -> bool {
    let bind = to.1;
    let receiver = testbed
        .node(to.0)
        .unwrap()
        .run(move || UdpSocket::bind(bind))
        .expect("bind receiver");
    receiver.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let bind = from.1;
    let sender = testbed
        .node(from.0)
        .unwrap()
        .run(move || UdpSocket::bind(bind))
        .expect("bind sender");
    sender.send_to(b"across the testbed", dest).expect("send");
    let mut buf = [0u8; 64];
    match receiver.recv_from(&mut buf) {
        Ok((n, peer)) => {
            assert_eq!(&buf[..n], b"across the testbed");
            assert_eq!(peer.ip(), from.1.ip());
            true
        }
        Err(_) => false,
    }
}

fn crosses(testbed: &Testbed, from: (&str, SocketAddr), to: (&str, SocketAddr)) -> bool {
    datagram_arrives(testbed, from, to, to.1)
}

#[test]
fn gateways_topology_routes_both_families() {
    let testbed = Testbed::build(Topology::with_gateways()).expect("build");
    let client4 = SocketAddr::new(ipv4(1, 2).into(), 40000);
    let server4 = SocketAddr::new(ipv4(4, 2).into(), 40001);
    assert!(crosses(&testbed, ("client", client4), ("server", server4)));
    assert!(crosses(&testbed, ("server", server4), ("client", client4)));
    let client6 = SocketAddr::new(ipv6(1, 2).into(), 40000);
    let server6 = SocketAddr::new(ipv6(4, 2).into(), 40001);
    assert!(crosses(&testbed, ("client", client6), ("server", server6)));
    assert!(crosses(&testbed, ("server", server6), ("client", client6)));
    assert_eq!(testbed.address("server").unwrap(), server4.ip());
    // Sent to another port: the receiver must not see it.
    let elsewhere = SocketAddr::new(ipv4(4, 2).into(), 40009);
    assert!(!datagram_arrives(
        &testbed,
        ("client", client4),
        ("server", server4),
        elsewhere
    ));
}

#[test]
fn direct_topology_has_three_nodes_and_runs_commands_inside() {
    let testbed = Testbed::build(Topology::direct()).expect("build");
    let emu = testbed.node(EMU).unwrap();
    let links = emu.ip(&["-br", "addr"]).unwrap();
    assert!(links.contains("a0@") && links.contains("10.99.1.1/24"), "{links}");
    assert!(links.contains("b0@") && links.contains("10.99.2.1/24"), "{links}");
    let ids: Vec<String> = ["client", EMU, "server"]
        .iter()
        .map(|n| testbed.node(n).unwrap().namespace_id().unwrap())
        .collect();
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2] && ids[0] != ids[2],
        "{ids:?}"
    );
    let err = testbed.node("gwA").unwrap_err();
    assert_eq!(err.to_string(), "no node \"gwA\" in this testbed");
    let err = testbed
        .node("client")
        .unwrap()
        .ip(&["route", "add", "bogus"])
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("in node client: `ip route add bogus` failed"),
        "{err}"
    );
    let client4 = SocketAddr::new(ipv4(1, 2).into(), 40000);
    let server4 = SocketAddr::new(ipv4(2, 2).into(), 40001);
    assert!(crosses(&testbed, ("client", client4), ("server", server4)));
}
