//! Who a listener of the gateway serves (docs/gateway.md "No relay for
//! strangers"): a port forward, a SOCKS5 server or the metrics endpoint
//! serves the clients of its allow-list (`clients`), or, without one,
//! anyone who can reach it where that is only this host (a loopback
//! listener), anyone who authenticates (SOCKS5's users), or anyone at all
//! where the configuration says so in as many words (`allow_any_client =
//! true`). A listener that would serve strangers otherwise is refused at
//! start; each client turned away is counted by cause and logged at most
//! once a minute per source and cause.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use scps_config::Error;
use scps_node::IpPrefix;

/// How often one source's refusals for one cause are logged at most.
const LOG_EVERY: Duration = Duration::from_secs(60);
/// Sources remembered for that at most: beyond, the oldest are forgotten
/// (and may be logged again).
const SOURCES_REMEMBERED: usize = 4096;

/// The clients a listener serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clients {
    /// Any client that reaches it.
    Any,
    /// Clients whose address is in one of these prefixes.
    Prefixes(Vec<IpPrefix>),
}

impl Clients {
    pub fn admits(&self, client: IpAddr) -> bool {
        match self {
            Clients::Any => true,
            Clients::Prefixes(prefixes) => prefixes.iter().any(|p| p.contains(canonical(client))),
        }
    }
}

/// An IPv4 client of an IPv6 socket comes as `::ffff:a.b.c.d`.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// What a listener's section says about its clients, as written.
#[derive(Debug, Default)]
pub(crate) struct ClientsSpec<'a> {
    pub(crate) clients: Option<&'a [String]>,
    pub(crate) allow_any_client: bool,
    /// The listener authenticates its clients (SOCKS5 with users).
    pub(crate) authenticated: bool,
}

impl ClientsSpec<'_> {
    /// The clients the listener `section` (`forward[0]`, `socks[1]`,
    /// `metrics`) on `listen` serves; a listener that would serve anyone
    /// on a network with neither an allow-list nor authentication, unless
    /// `allow_any_client` says so, is refused naming it.
    pub(crate) fn resolve(&self, section: &str, listen: SocketAddr) -> Result<Clients, Error> {
        if let Some(texts) = self.clients {
            if self.allow_any_client {
                return Err(Error::invalid(
                    format!("{section}.allow_any_client"),
                    true,
                    format!("either {section}.clients or allow_any_client, not both"),
                ));
            }
            if texts.is_empty() {
                return Err(Error::invalid(
                    format!("{section}.clients"),
                    "[]",
                    "at least one prefix of the clients it serves (10.1.0.0/16, fd00:1::/64)",
                ));
            }
            let prefixes = texts
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    text.parse::<IpPrefix>().map_err(|e| {
                        Error::invalid(
                            format!("{section}.clients[{i}]"),
                            text,
                            format!("a prefix of the clients it serves, such as 10.1.0.0/16 ({e})"),
                        )
                    })
                })
                .collect::<Result<Vec<_>, Error>>()?;
            return Ok(Clients::Prefixes(prefixes));
        }
        if self.allow_any_client || self.authenticated || listen.ip().is_loopback() {
            return Ok(Clients::Any);
        }
        Err(Error::invalid(
            format!("{section}.listen"),
            listen,
            format!(
                "a listener that does not serve anyone who reaches it: a loopback address, or \
                 {section}.clients (the prefixes of the clients it serves){}; or, if serving anyone \
                 is meant, {section}.allow_any_client = true",
                if section.starts_with("socks") {
                    format!(", or {section}.users_file (RFC 1929 names and passwords)")
                } else {
                    String::new()
                }
            ),
        ))
    }
}

/// Why a client was turned away before anything was relayed for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// Its address is not in the listener's allow-list.
    NotAllowed,
    /// SOCKS5: it did not offer, or failed, username/password
    /// authentication.
    NotAuthenticated,
    /// Its source already has its share of handshakes under way
    /// (`relay.max_handshakes_per_source`).
    SourceHandshakes,
    /// All the places for handshakes are held (`relay.max_handshakes`).
    AllHandshakes,
    /// The gateway holds as many split connections as it may
    /// (`relay.max_connections`, or what `relay.memory` allows).
    ConnectionLimit,
    /// No free local port to open a connection from.
    NoLocalPort,
    /// Out of file descriptors (the open-file limit).
    NoDescriptors,
}

impl Refusal {
    pub fn name(self) -> &'static str {
        match self {
            Refusal::NotAllowed => "client_not_allowed",
            Refusal::NotAuthenticated => "client_not_authenticated",
            Refusal::SourceHandshakes => "handshakes_of_source",
            Refusal::AllHandshakes => "handshakes_full",
            Refusal::ConnectionLimit => "over_limit",
            Refusal::NoLocalPort => "no_local_port",
            Refusal::NoDescriptors => "no_descriptors",
        }
    }

    /// Whether the cause lies with the client (logged once per source),
    /// or with the gateway's state (logged once whoever meets it).
    fn is_the_clients(self) -> bool {
        match self {
            Refusal::NotAllowed | Refusal::NotAuthenticated | Refusal::SourceHandshakes => true,
            Refusal::AllHandshakes
            | Refusal::ConnectionLimit
            | Refusal::NoLocalPort
            | Refusal::NoDescriptors => false,
        }
    }
}

/// Says whether a refusal is news: the first of its cause in
/// [`LOG_EVERY`], from its source if the cause is the client's.
#[derive(Debug, Default)]
pub struct RefusalLog {
    logged: Mutex<HashMap<(Refusal, Option<IpAddr>), Instant>>,
}

impl RefusalLog {
    /// Logs (at most once a minute per cause, and per source for a cause
    /// that is the client's) that `client` (if known) was turned away by
    /// `listener` for `refusal`.
    pub fn refused(&self, listener: &str, client: Option<SocketAddr>, refusal: Refusal, detail: &str) {
        let now = Instant::now();
        let news = {
            let mut logged = self.logged.lock().unwrap_or_else(|p| p.into_inner());
            let key = (
                refusal,
                client.filter(|_| refusal.is_the_clients()).map(|c| c.ip()),
            );
            let news = logged
                .get(&key)
                .is_none_or(|at| now.duration_since(*at) >= LOG_EVERY);
            if news {
                if logged.len() >= SOURCES_REMEMBERED {
                    logged.retain(|_, at| now.duration_since(*at) < LOG_EVERY);
                    if logged.len() >= SOURCES_REMEMBERED {
                        logged.clear();
                    }
                }
                logged.insert(key, now);
            }
            news
        };
        if news {
            tracing::warn!(
                listener,
                client = client.map(|c| c.to_string()),
                cause = refusal.name(),
                detail,
                "turned away (logged once a minute per cause, and per source for the client's own; all are counted)"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(clients: Option<&[String]>, allow_any_client: bool, authenticated: bool) -> ClientsSpec<'_> {
        ClientsSpec {
            clients,
            allow_any_client,
            authenticated,
        }
    }

    #[test]
    fn a_listener_on_a_network_needs_an_allow_list_authentication_or_words() {
        let open: SocketAddr = "0.0.0.0:1080".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:1080".parse().unwrap();
        assert_eq!(
            spec(None, false, false).resolve("socks[0]", local),
            Ok(Clients::Any)
        );
        let refused = spec(None, false, false)
            .resolve("socks[0]", open)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("socks[0].listen = 0.0.0.0:1080") && refused.contains("allow_any_client = true"),
            "{refused}"
        );
        assert_eq!(
            spec(None, true, false).resolve("forward[0]", open),
            Ok(Clients::Any)
        );
        assert_eq!(
            spec(None, false, true).resolve("socks[0]", open),
            Ok(Clients::Any)
        );
        let listed = ["10.1.0.0/16".to_owned(), "fd00:1::/64".to_owned()];
        let clients = spec(Some(&listed), false, false)
            .resolve("metrics", open)
            .unwrap();
        assert!(clients.admits("10.1.2.3".parse().unwrap()));
        assert!(
            clients.admits("::ffff:10.1.2.3".parse().unwrap()),
            "an IPv4 client of an IPv6 socket"
        );
        assert!(clients.admits("fd00:1::5".parse().unwrap()));
        assert!(!clients.admits("10.2.0.1".parse().unwrap()));
        let bad = ["10.1.0.0/33".to_owned()];
        let err = spec(Some(&bad), false, false)
            .resolve("forward[1]", open)
            .unwrap_err()
            .to_string();
        assert!(err.contains("forward[1].clients[0] = 10.1.0.0/33"), "{err}");
        let err = spec(Some(&listed), true, false)
            .resolve("socks[0]", open)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("either socks[0].clients or allow_any_client"),
            "{err}"
        );
    }
}
