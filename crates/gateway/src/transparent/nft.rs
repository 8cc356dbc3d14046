//! The transparent mode's nftables rules, as the script `nft -f -` reads
//! (plumbing.rs says what they do). One `inet` table holds both address
//! families; each rule that matches addresses or hands a connection to
//! TPROXY is written once per family the gateway carries.

use scps_node::IpPrefix;

use super::plumbing::Plumbing;
use crate::routes::{Family, RouteMatch};

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

/// The script. It flushes the table first, so that installing it again
/// replaces the rules in one transaction (a reload of the routes).
pub(super) fn script(plumbing: &Plumbing) -> String {
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
    // it). Otherwise the packet is read as a client's.
    let mut intercept = String::from("\t\ttcp flags & (syn | ack) != syn jump answers\n");
    let (mut answers, mut steering) = (String::new(), String::new());
    for (matching, carried) in &plumbing.routes {
        for family in matching.families() {
            if families.contains(&family) {
                let rules = route_rules(plumbing, matching, *carried, family);
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
