//! The transparent mode's nftables rules, as the script `nft -f -` reads
//! (plumbing.rs says what they do). One `inet` table holds both address
//! families; each rule that matches addresses or hands a connection to
//! TPROXY is written once per family the gateway carries.

use scps_node::IpPrefix;
use scps_relay::RouteTable;
use scps_relay::routes::{Family, RouteMatch};

use super::plumbing::Plumbing;

/// The IP protocol of compressed SCPS-TP headers.
const IPPROTO_SCPS_COMPRESSED: u8 = 105;

/// nftables' words for a family: its address match and its `nfproto`.
fn keyword(family: Family) -> &'static str {
    match family {
        Family::V4 => "ip",
        Family::V6 => "ip6",
    }
}

fn nfproto(family: Family) -> &'static str {
    match family {
        Family::V4 => "ipv4",
        Family::V6 => "ipv6",
    }
}

/// `{ a, b }` of the prefixes of `family`.
fn set(prefixes: &[IpPrefix], family: Family) -> String {
    let members: Vec<String> = prefixes
        .iter()
        .filter(|p| Family::of(p.network()) == family)
        .map(IpPrefix::to_string)
        .collect();
    format!("{{ {} }}", members.join(", "))
}

/// `ip saddr PREFIX ` for a prefix; nothing for any address.
fn address_match(family: Family, field: &str, prefix: Option<IpPrefix>) -> String {
    prefix.map_or_else(String::new, |p| format!("{} {field} {p} ", keyword(family)))
}

/// ` tcp dport FIRST-LAST` for a range that restricts; nothing for all
/// ports.
fn port_match(field: &str, (first, last): (u16, u16)) -> String {
    match (first, last) {
        (1, 65535) => String::new(),
        (first, last) if first == last => format!(" tcp {field} {first}"),
        (first, last) => format!(" tcp {field} {first}-{last}"),
    }
}

/// The rules of one route in one family.
struct RouteRules {
    /// Its clients' packets from the LAN: taken by the gateway, or let
    /// through.
    intercept: String,
    /// Its servers' answers from the LAN, to clients on the far side: let
    /// through if it passes, left to `intercept` if it carries.
    answer: String,
    /// Its packets both ways from the link: steered into the engine, or
    /// let through.
    steering: String,
}

/// The rules of one route in one family: its interception, the answers of
/// its servers on the LAN, and its steering (the connections its clients
/// open, and the answers to them, which come back from the server's port).
fn route_rules(plumbing: &Plumbing, matching: &RouteMatch, carried: bool, family: Family) -> RouteRules {
    let RouteMatch {
        source,
        destination,
        ports,
    } = *matching;
    let (mark, steer) = (plumbing.mark, plumbing.steer_mark());
    let (take, steer_to) = if carried {
        (
            format!(
                "tproxy {} to :{} meta mark set {mark:#x} accept",
                keyword(family),
                plumbing.port
            ),
            format!("meta mark set {steer:#x} accept"),
        )
    } else {
        ("accept".to_owned(), "accept".to_owned())
    };
    let proto = nfproto(family);
    let client_to_server = format!(
        "meta nfproto {proto} {}{}meta l4proto tcp{}",
        address_match(family, "saddr", source),
        address_match(family, "daddr", destination),
        port_match("dport", ports)
    );
    let server_to_client = format!(
        "meta nfproto {proto} {}{}meta l4proto tcp{}",
        address_match(family, "saddr", destination),
        address_match(family, "daddr", source),
        port_match("sport", ports)
    );
    let intercept = format!("\t\t{client_to_server} {take}\n");
    let answer = format!(
        "\t\t{server_to_client} {}\n",
        if carried { "return" } else { "accept" }
    );
    let mut steering = format!("\t\t{client_to_server} {steer_to}\n");
    if server_to_client != client_to_server {
        steering.push_str(&format!("\t\t{server_to_client} {steer_to}\n"));
    }
    RouteRules {
        intercept,
        answer,
        steering,
    }
}

/// The script of `routes`, each route's rules in the table's order (the
/// order its decision tries them). It flushes the table first, so that
/// installing it again replaces the rules in one transaction (a reload of
/// the routes).
pub(super) fn script(plumbing: &Plumbing, routes: &RouteTable) -> String {
    let table = plumbing.nft_table();
    let lan = &plumbing.lan;
    let (mark, steer) = (plumbing.mark, plumbing.steer_mark());
    let families = plumbing.families();
    let mut prerouting = format!(
        "\t\ttype filter hook prerouting priority mangle; policy accept;\n\
         \t\tiifname \"{lan}\" meta l4proto tcp socket transparent 1 meta mark set {mark:#x} accept\n"
    );
    for &family in &families {
        let ip = keyword(family);
        let local = set(&plumbing.local, family);
        let remote = set(&plumbing.remote, family);
        prerouting.push_str(&format!(
            "\t\tiifname \"{lan}\" meta l4proto tcp {ip} saddr {local} {ip} daddr {remote} jump intercept\n"
        ));
        if let Some((link, _)) = plumbing.steering() {
            prerouting.push_str(&format!(
                "\t\tiifname \"{link}\" meta l4proto {IPPROTO_SCPS_COMPRESSED} {ip} saddr {remote} {ip} daddr {local} \
                 meta mark set {steer:#x} accept\n\
                 \t\tiifname \"{link}\" meta l4proto tcp {ip} saddr {remote} {ip} daddr {local} jump steer\n"
            ));
        }
    }
    // A LAN packet from a local host to a remote one is either a client's
    // or a server's answer to a client across the link. Only a SYN without
    // ACK is surely a client's: any other segment is first read as an
    // answer, and the route that matches it as one decides; if that route
    // passes, so does the segment (the gateway holds no connection of
    // it). Otherwise the packet is read as a client's: as
    // `RouteTable::decide_segment` reads it.
    let mut intercept = String::from("\t\ttcp flags & (syn | ack) != syn jump answers\n");
    let (mut answers, mut steering) = (String::new(), String::new());
    for route in routes.routes() {
        for &family in route.matching.families() {
            if families.contains(&family) {
                let rules = route_rules(plumbing, &route.matching, route.carried.is_some(), family);
                intercept.push_str(&rules.intercept);
                answers.push_str(&rules.answer);
                steering.push_str(&rules.steering);
            }
        }
    }
    // No steering, no chain: a bundle's link packets never reach the
    // kernel's prerouting (plumbing.rs).
    let steer_chain = match plumbing.steering() {
        Some(_) => format!("\tchain steer {{\n{steering}\t}}\n"),
        None => String::new(),
    };
    format!(
        "table inet {table} {{}}\n\
         flush table inet {table}\n\
         table inet {table} {{\n\
         \tchain prerouting {{\n{prerouting}\t}}\n\
         \tchain answers {{\n{answers}\t}}\n\
         \tchain intercept {{\n{intercept}\t}}\n\
         {steer_chain}\
         }}\n"
    )
}

/// The rules against the decision they are written from: a small reader
/// of the rules this module writes runs sample segments through them, as
/// the kernel would, and the verdicts must be what the route table
/// decides for the accept path and the far side.
#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::net::SocketAddr;
    use std::sync::Arc;

    use scps_proto::{Config, ConfigChooser, FourTuple};
    use scps_relay::{Carried, Decision, RelayConfig, Route};

    use super::*;
    use crate::transparent::LinkPath;

    /// What the kernel does with a segment.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Verdict {
        /// Handed to the interception listener (TPROXY).
        Intercepted,
        /// Routed into the TUN device, to the link endpoint.
        Steered,
        /// Routed on as by a plain router.
        Passed,
    }

    /// A segment as the rules see it.
    struct Segment {
        arrives_on: &'static str,
        from: SocketAddr,
        to: SocketAddr,
        /// A SYN without ACK.
        opening: bool,
    }

    /// The chains of a script: each rule as its words.
    fn chains(script: &str) -> BTreeMap<String, Vec<Vec<String>>> {
        let mut chains = BTreeMap::new();
        let mut current: Option<(String, Vec<Vec<String>>)> = None;
        for line in script.lines() {
            let line = line.trim();
            if let Some(name) = line.strip_prefix("chain ") {
                current = Some((name.trim_end_matches(" {").to_owned(), Vec::new()));
            } else if line == "}" {
                if let Some((name, rules)) = current.take() {
                    chains.insert(name, rules);
                }
            } else if let Some((_, rules)) = &mut current
                && !line.starts_with("type ")
            {
                let words = line.replace(',', " ");
                rules.push(words.split_whitespace().map(str::to_owned).collect());
            }
        }
        chains
    }

    /// Whether the addresses of a match (a prefix, or a set of them)
    /// hold `address`; the words after the set are returned.
    fn addresses(words: &[String], address: std::net::IpAddr) -> (bool, &[String]) {
        let holds = |word: &String| word.parse::<IpPrefix>().unwrap().contains(address);
        if words[0] == "{" {
            let end = words.iter().position(|w| w == "}").unwrap();
            (words[1..end].iter().any(holds), &words[end + 1..])
        } else {
            (holds(&words[0]), &words[1..])
        }
    }

    fn port_within(range: &str, port: u16) -> bool {
        let (first, last) = range.split_once('-').unwrap_or((range, range));
        (first.parse().unwrap()..=last.parse().unwrap()).contains(&port)
    }

    /// Whether a rule's matches hold for `segment`, and its verdict words.
    fn matches<'a>(rule: &'a [String], segment: &Segment) -> Option<&'a [String]> {
        let family = Family::of(segment.from.ip());
        let mut words = rule;
        loop {
            let rest = match words.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                ["iifname", name, ..] => (name.trim_matches('"') == segment.arrives_on, &words[2..]),
                ["meta", "l4proto", protocol, ..] => (protocol == "tcp", &words[3..]),
                ["meta", "nfproto", wanted, ..] => (wanted == nfproto(family), &words[3..]),
                ["socket", "transparent", "1", ..] => (false, &words[3..]),
                ["tcp", "flags", "&", "(syn", "|", "ack)", "!=", "syn", ..] => {
                    (!segment.opening, &words[8..])
                }
                ["tcp", "dport", range, ..] => (port_within(range, segment.to.port()), &words[3..]),
                ["tcp", "sport", range, ..] => (port_within(range, segment.from.port()), &words[3..]),
                [ip, "saddr", ..] if ip == keyword(family) => addresses(&words[2..], segment.from.ip()),
                [ip, "daddr", ..] if ip == keyword(family) => addresses(&words[2..], segment.to.ip()),
                ["ip" | "ip6", "saddr" | "daddr", ..] => return None,
                _ => return Some(words),
            };
            if !rest.0 {
                return None;
            }
            words = rest.1;
        }
    }

    /// The verdict of `chain` for `segment`; `None` if it returns.
    fn run(chains: &BTreeMap<String, Vec<Vec<String>>>, chain: &str, segment: &Segment) -> Option<Verdict> {
        for rule in &chains[chain] {
            let Some(verdict) = matches(rule, segment) else {
                continue;
            };
            match verdict.iter().map(String::as_str).collect::<Vec<_>>()[..] {
                ["jump", next] => {
                    if let Some(verdict) = run(chains, next, segment) {
                        return Some(verdict);
                    }
                }
                ["return"] => return None,
                ["accept"] => return Some(Verdict::Passed),
                ["tproxy", ..] => return Some(Verdict::Intercepted),
                ["meta", "mark", "set", mark, "accept"] => {
                    assert_eq!(mark, "0x5d", "only steering marks a link packet");
                    return Some(Verdict::Steered);
                }
                _ => panic!("a rule this reader does not know: {rule:?}"),
            }
        }
        None
    }

    fn route(
        name: &str,
        source: &str,
        destination: &str,
        ports: (u16, u16),
        rate_route: Option<u32>,
    ) -> Route {
        let prefix = |text: &str| (text != "*").then(|| text.parse().unwrap());
        Route {
            name: name.into(),
            matching: RouteMatch {
                source: prefix(source),
                destination: prefix(destination),
                ports,
            },
            carried: rate_route.map(|rate_route| Carried {
                engine: Arc::new(Config {
                    rate_route,
                    ..Config::default()
                }),
                relay: RelayConfig {
                    buffer: 4096 * rate_route as usize,
                    idle_timeout: None,
                },
            }),
        }
    }

    #[test]
    fn the_rules_the_accept_path_and_the_far_side_decide_alike_for_nested_routes() {
        // Each route lies within those after it (in the table's order) that
        // it overlaps: one host's ssh is carried within ssh, which passes
        // within everything, which is carried.
        let table = RouteTable::new(vec![
            route("all", "*", "*", (1, 65535), Some(1)),
            route("ssh", "*", "*", (22, 22), None),
            route(
                "one host's ssh",
                "10.99.1.7/32",
                "10.99.4.0/24",
                (22, 22),
                Some(3),
            ),
            route("ftp to the station", "*", "10.99.4.0/24", (20, 21), Some(4)),
            route("web of the clients", "10.99.1.0/24", "*", (8000, 8999), None),
        ])
        .unwrap();
        let names: Vec<&str> = table.routes().iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "one host's ssh",
                "web of the clients",
                "ftp to the station",
                "ssh",
                "all"
            ]
        );
        let plumbing = Plumbing {
            lan: "lan0".into(),
            link: LinkPath::Routed {
                link: "sat0".into(),
                tun: "scpsgw0".into(),
            },
            local: ["10.99.1.0/24", "fd00:99:1::/64"]
                .map(|p| p.parse().unwrap())
                .to_vec(),
            remote: ["10.99.4.0/24", "10.98.0.0/16", "fd00:99:4::/64"]
                .map(|p| p.parse().unwrap())
                .to_vec(),
            port: 7301,
            mark: 0x5c,
            table: 153,
        };
        let chains = chains(&script(&plumbing, &table));
        // The interception tries the routes in the table's order, each in
        // the families it can match.
        let takes: Vec<&str> = chains["intercept"][1..]
            .iter()
            .map(|rule| rule.last().unwrap().as_str())
            .collect();
        assert_eq!(takes.len(), 1 + 1 + 1 + 2 + 2, "{takes:?}");
        let local = |address: std::net::IpAddr| plumbing.local.iter().any(|p| p.contains(address));
        // Connections opened from either side: client, server, and the
        // route that decides.
        let samples = [
            ("10.99.1.5:40000", "10.99.4.2:80", Some("all")),
            ("10.99.1.5:40001", "10.99.4.2:21", Some("ftp to the station")),
            ("10.99.1.5:40002", "10.98.0.9:21", Some("all")),
            ("10.99.1.5:40003", "10.99.4.2:22", None),
            ("10.99.1.7:40004", "10.99.4.2:22", Some("one host's ssh")),
            ("10.99.1.7:40005", "10.98.0.9:22", None),
            ("10.99.1.5:40006", "10.99.4.2:8080", None),
            ("10.99.4.2:40007", "10.99.1.5:22", None),
            ("10.99.4.2:40008", "10.99.1.5:80", Some("all")),
            ("10.98.0.9:40009", "10.99.1.7:22", None),
            ("10.99.4.2:40010", "10.99.1.5:8080", Some("all")),
            ("[fd00:99:1::5]:40011", "[fd00:99:4::2]:22", None),
            ("[fd00:99:1::5]:40012", "[fd00:99:4::2]:443", Some("all")),
            ("[fd00:99:4::2]:40013", "[fd00:99:1::5]:21", Some("all")),
        ];
        for (client, server, expected) in samples {
            let (client, server): (SocketAddr, SocketAddr) =
                (client.parse().unwrap(), server.parse().unwrap());
            let decision = table.decide(client.ip(), server);
            let route = match decision {
                Decision::Carried { route, .. } => Some(route),
                Decision::PassThrough => None,
            };
            assert_eq!(route, expected, "{client} to {server}");
            let carried = decision.is_carried();
            let at = |arrives_on, from, to, opening| {
                let segment = Segment {
                    arrives_on,
                    from,
                    to,
                    opening,
                };
                run(&chains, "prerouting", &segment).unwrap_or(Verdict::Passed)
            };
            let taken = |verdict| if carried { verdict } else { Verdict::Passed };
            if local(client.ip()) {
                // The client's gateway: its SYN and its later segments are
                // intercepted if carried, the server's answers from the
                // link steered; each LAN segment as the table reads one.
                for opening in [true, false] {
                    let verdict = at("lan0", client, server, opening);
                    assert_eq!(verdict, taken(Verdict::Intercepted), "{client} to {server}");
                    let read = table.decide_segment(client, server, opening).is_carried();
                    assert_eq!(read, carried, "{client} to {server}");
                }
                assert_eq!(at("sat0", server, client, false), taken(Verdict::Steered));
            } else {
                // The server's gateway: the client's segments from the link
                // are steered if carried, and the link connection then takes
                // its route's settings; a passed server's answers pass.
                for opening in [true, false] {
                    let verdict = at("sat0", client, server, opening);
                    assert_eq!(verdict, taken(Verdict::Steered), "{client} to {server}");
                }
                let chosen = table.config_for(&FourTuple {
                    local: server,
                    remote: client,
                });
                let settings = match decision {
                    Decision::Carried { settings, .. } => Some(settings.engine.clone()),
                    Decision::PassThrough => None,
                };
                assert_eq!(chosen, settings, "{client} to {server}");
                if !carried {
                    assert_eq!(at("lan0", server, client, false), Verdict::Passed);
                    assert!(!table.decide_segment(server, client, false).is_carried());
                }
            }
        }
    }
}
