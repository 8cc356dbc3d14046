use std::time::Duration;

use scps_node::InterfaceId;

use super::*;
use crate::Scenario;
use crate::sweep::parse_assignment;

/// Client, router, link, router, server.
const DOC: &str = r#"
name = "two-routers"
protocol = "tcp-vj"
[link]
rate = "2Mbit"
rtt = "200ms"
[workload]
kind = "bulk"
bytes = "1MB"

[topology.nodes.client]
kind = "host"
role = "client"
interfaces = { eth0 = "10.1.0.1/24" }

[topology.nodes.r1]
kind = "router"
interfaces = { lan = "10.1.0.254/24", sat = "10.9.0.1/30" }
routes = { "10.2.0.0/24" = "sat" }

[topology.nodes.r2]
kind = "router"
interfaces = { lan = "10.2.0.254/24", sat = "10.9.0.2/30" }
routes = { "10.1.0.0/24" = "sat" }

[topology.nodes.server]
kind = "host"
role = "server"
interfaces = { eth0 = "10.2.0.1/24" }

[topology.links.client-lan]
ends = ["client.eth0", "r1.lan"]

[topology.links.sat]
ends = ["r1.sat", "r2.sat"]
model = "link"

[topology.links.server-lan]
ends = ["r2.lan", "server.eth0"]
"#;

fn load(extra: &str, sets: &[&str]) -> Result<Scenario, Error> {
    let sets: Vec<_> = sets.iter().map(|s| parse_assignment(s).unwrap()).collect();
    Scenario::from_text(&format!("{DOC}{extra}"), "test", &sets)
}

fn topology(extra: &str, sets: &[&str]) -> Topology {
    load(extra, sets).unwrap().points.remove(0).topology
}

/// The error of a bad topology: it must start with `expected`.
#[track_caller]
fn refused(extra: &str, sets: &[&str], expected: &str) {
    let err = load(extra, sets).unwrap_err().to_string();
    // A list given with --set is a sweep axis, which the error names first.
    let err = err
        .split_once("]: ")
        .filter(|_| err.starts_with("at "))
        .map_or(err.as_str(), |(_, e)| e);
    assert!(
        err.starts_with(expected),
        "expected {expected:?}\n     got {err:?}"
    );
}

#[test]
fn nodes_interfaces_links_and_routes_resolve_in_order_of_name() {
    let t = topology("", &[]);
    let names: Vec<&str> = t.nodes.iter().map(|n| n.name.as_str()).collect();
    assert_eq!(names, ["client", "r1", "r2", "server"]);
    assert_eq!(t.server, 3);
    assert_eq!(t.clients().collect::<Vec<_>>(), [0]);
    assert_eq!(t.links[t.stressed].name, "sat");
    assert_eq!(t.describe(t.links[t.stressed].ends[0]), "r1.sat");
    assert_eq!(t.host_address(3), "10.2.0.1".parse::<IpAddr>().unwrap());
    let NodeKind::Router { routes } = &t.nodes[1].kind else {
        panic!("r1 is a router");
    };
    // Connected networks (lan is interface 0, sat 1), then the configured.
    let routes: Vec<(String, u16)> = routes
        .iter()
        .map(|r| (r.prefix.to_string(), r.interface.0))
        .collect();
    assert_eq!(
        routes,
        [
            ("10.1.0.0/24".to_owned(), 0),
            ("10.9.0.0/30".to_owned(), 1),
            ("10.2.0.0/24".to_owned(), 1)
        ]
    );
    let LinkModel::Lan(lan) = &t.links[0].model else {
        panic!("client-lan is a LAN");
    };
    assert_eq!(
        (lan.rate_bps, lan.delay),
        (1_000_000_000, Duration::from_micros(50))
    );
    assert_eq!(
        t.find("--pcap-at", "r2.lan"),
        Ok(NodeInterface {
            node: 2,
            interface: InterfaceId(0)
        })
    );
}

#[test]
fn without_a_topology_a_scenario_is_two_hosts_on_its_link() {
    let doc = DOC.split("[topology").next().unwrap();
    let scenario = Scenario::from_text(doc, "test", &[]).unwrap();
    assert_eq!(scenario.points[0].topology, Topology::two_hosts());
    let t = Topology::two_hosts();
    assert_eq!(t.describe(t.links[0].ends[0]), "client.eth0");
    assert_eq!(t.links[0].model, LinkModel::Stressed);
}

#[test]
fn topology_keys_take_set_and_sweeps_like_any_other() {
    let scenario = load(
        "[topology.lans.slow]\nrate = \"10Mbit\"\n",
        &[
            "topology.links.server-lan.model=[\"lan\", \"slow\"]",
            "topology.lans.lan.delay=1ms",
        ],
    )
    .unwrap();
    assert_eq!(scenario.points.len(), 2);
    let lan = |point: usize, link: usize| match &scenario.points[point].topology.links[link].model {
        LinkModel::Lan(c) => (c.rate_bps, c.delay),
        LinkModel::Stressed => panic!("a LAN"),
    };
    assert_eq!(lan(0, 2), (1_000_000_000, Duration::from_millis(1)));
    // A LAN table's keys go over the default LAN's.
    assert_eq!(lan(1, 2), (10_000_000, Duration::from_micros(50)));
    let moved = topology("", &["topology.nodes.server.interfaces.eth0=10.2.0.9/24"]);
    assert_eq!(moved.host_address(3), "10.2.0.9".parse::<IpAddr>().unwrap());
}

#[test]
fn an_interface_on_no_link_is_refused_naming_node_and_interface() {
    refused(
        "",
        &["topology.nodes.r1.interfaces.spare=10.5.0.1/24"],
        "topology.nodes.r1.interfaces.spare = 10.5.0.1/24: an interface on a link: no link has it",
    );
}

#[test]
fn an_interface_on_two_links_is_refused() {
    refused(
        "[topology.links.x]\nends = [\"r1.lan\", \"r2.lan\"]\n",
        &[],
        "topology.links.x.ends = r1.lan: an interface on one link only: r1.lan is on link client-lan too",
    );
    refused(
        "[topology.links.x]\nends = [\"r1.lan\", \"r1.lan\"]\n",
        &[],
        "topology.links.x.ends = r1.lan: two different interfaces",
    );
}

#[test]
fn two_nodes_claiming_one_address_are_refused() {
    refused(
        "",
        &["topology.nodes.server.interfaces.eth0=10.1.0.1/24"],
        "topology.nodes.server.interfaces.eth0 = 10.1.0.1/24: an address of its own: client.eth0 has 10.1.0.1 too",
    );
}

#[test]
fn routes_to_missing_interfaces_or_networks_reached_twice_are_refused() {
    refused(
        "",
        &["topology.nodes.r1.routes={\"10.2.0.0/24\" = \"sta\"}"],
        "topology.nodes.r1.routes.\"10.2.0.0/24\" = sta: an interface of this router: lan, sat",
    );
    refused(
        "",
        &["topology.nodes.r1.routes={\"10.2.0.1/24\" = \"sat\"}"],
        "topology.nodes.r1.routes.\"10.2.0.1/24\" = 10.2.0.1/24: \"10.2.0.1/24\": bits are set past the prefix length",
    );
    refused(
        "",
        &["topology.nodes.r1.routes={\"10.1.0.0/24\" = \"sat\"}"],
        "topology.nodes.r1.routes.\"10.1.0.0/24\" = sat: one way to 10.1.0.0/24: \
         topology.nodes.r1.interfaces.lan leads there by another interface",
    );
}

#[test]
fn links_naming_missing_nodes_or_interfaces_are_refused() {
    refused(
        "",
        &["topology.links.sat.ends=[[\"r1.sat\", \"r3.sat\"]]"],
        "topology.links.sat.ends = r3.sat: an interface of a node; there is no node \"r3\" (nodes: client, r1, r2, server)",
    );
    refused(
        "",
        &["topology.links.sat.ends=[[\"r1.sat\", \"r2.wan\"]]"],
        "topology.links.sat.ends = r2.wan: an interface of r2; it has no \"wan\" (interfaces: lan, sat)",
    );
    refused(
        "",
        &["topology.links.sat.ends=[[\"r1.sat\", \"r2\"]]"],
        "topology.links.sat.ends = r2: NODE.INTERFACE",
    );
    refused(
        "",
        &["topology.links.sat.model=leo"],
        "topology.links.sat.model = leo: \"link\" (the scenario's [link]) or a LAN model: lan",
    );
}

#[test]
fn the_workload_needs_one_server_and_some_client() {
    let allowed = "exactly one host with role = \"server\" and at least one with role = \"client\"";
    refused(
        "",
        &["topology.nodes.server.role=client"],
        &format!("topology.nodes = no server host: {allowed}"),
    );
    refused(
        "",
        &["topology.nodes.client.role=server"],
        &format!("topology.nodes = servers client, server: {allowed}"),
    );
    let no_client = DOC.replace("role = \"client\"", "role = \"server\"").replace(
        "[topology.nodes.server]\nkind = \"host\"\nrole = \"server\"\ninterfaces = { eth0 = \"10.2.0.1/24\" }",
        "",
    );
    let err = Scenario::from_text(&no_client, "test", &[])
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!("topology.nodes = no client host: {allowed}")),
        "{err}"
    );
    let no_role = DOC.replace("role = \"client\"\n", "");
    let err = Scenario::from_text(&no_role, "test", &[])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "topology.nodes.client.role = missing: \"client\" or \"server\" for a host"
    );
    refused(
        "",
        &["topology.nodes.client.interfaces.eth1=10.1.0.2/24"],
        "topology.nodes.client.interfaces = 2 interfaces: exactly one interface (a host is one endpoint)",
    );
}

#[test]
fn exactly_one_link_is_the_stressed_one() {
    refused(
        "",
        &["topology.links.sat.model=lan"],
        "topology.links = none with model = \"link\": exactly one link using the scenario's [link]",
    );
    refused(
        "",
        &["topology.links.client-lan.model=link"],
        "topology.links = client-lan, sat with model = \"link\"",
    );
}

#[test]
fn paths_must_reach_the_server_and_back_across_the_stressed_link_forward() {
    refused(
        "",
        &["topology.nodes.r1.routes={}"],
        "topology.nodes.r1.routes = 10.2.0.1: a route to every host r1 forwards to: client sends to 10.2.0.1 through it, and it has none",
    );
    // r2 sends the server's packets back to r1, which sends them to r2.
    refused(
        "",
        &["topology.nodes.r2.routes={\"10.1.0.0/24\" = \"sat\", \"10.2.0.1/32\" = \"sat\"}"],
        "topology.nodes.r1.routes = 10.2.0.1: routes without a loop: the packets of client to 10.2.0.1 go \
         client -> r1 -> r2 -> r1 and round again",
    );
    refused(
        "",
        &["topology.links.sat.ends=[[\"r2.sat\", \"r1.sat\"]]"],
        "topology.links.sat.ends = [r2.sat, r1.sat]: the stressed link once on the way from each client to the server, \
         from its first end ([link]) and back from its second ([link.return]); on the way client to server, \
         it crosses it from its second end to its first",
    );
    refused(
        "",
        &["tcp.hop_limit=2"],
        "tcp.hop_limit = 2: more than the 2 routers on the way client to server, or every packet expires",
    );
    assert_eq!(topology("", &["tcp.hop_limit=3"]).nodes.len(), 4);
}

#[test]
fn a_client_beside_the_server_would_not_cross_the_stressed_link() {
    refused(
        "[topology.nodes.near]\nkind = \"host\"\nrole = \"client\"\ninterfaces = { eth0 = \"10.2.1.1/24\" }\n\
         [topology.links.near-lan]\nends = [\"near.eth0\", \"r2.lan2\"]\n",
        &["topology.nodes.r2.interfaces.lan2=10.2.1.254/24"],
        "topology.links.sat.ends = [r1.sat, r2.sat]: the stressed link once on the way from each client to the server, \
         from its first end ([link]) and back from its second ([link.return]); on the way near to server, \
         it does not cross it",
    );
}

#[test]
fn bad_names_keys_and_lan_tables_are_refused() {
    refused(
        "",
        &["topology.nodes.r1.role=client"],
        "topology.nodes.r1.role = set: only for a host",
    );
    refused(
        "",
        &["topology.nodes.client.routes={}"],
        "topology.nodes.client.routes = set: only for a router",
    );
    refused(
        "",
        &["topology.nodes.r1.via=lan"],
        "topology.nodes.r1.via: unknown field `via`",
    );
    refused(
        "",
        &["topology.nodes.r1.kind=switch"],
        "topology.nodes.r1.kind: unknown variant `switch`, expected `host` or `router`",
    );
    refused(
        "",
        &["topology.nodes.r1.interfaces.lan=10.1.0.254"],
        "topology.nodes.r1.interfaces.lan: invalid interface address \"10.1.0.254\"",
    );
    refused(
        "[topology.nodes.\"a.b\"]\nkind = \"router\"\ninterfaces = { x = \"10.7.0.1/24\" }\n",
        &[],
        "topology.nodes.a.b = \"a.b\": a name without dots",
    );
    refused(
        "",
        &["topology.lans.lan.mtu=9000"],
        "topology.lans.lan.mtu = set: only allowed directly in [link]",
    );
    refused(
        "",
        &["topology.lans.link.rate=1Mbit"],
        "topology.lans.link = a table: a LAN model named other than \"link\"",
    );
    refused(
        "",
        &["topology.lans.lan.buffer=1000"],
        "topology.lans.lan.buffer = 1000B: at least the MTU (1500 bytes)",
    );
}
