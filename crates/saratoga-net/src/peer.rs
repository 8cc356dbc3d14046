//! `PEER[:PATH]` as the Saratoga commands take it: `HOST`, `HOST:PORT`,
//! `[IPV6]` or `[IPV6]:PORT`, then optionally `:PATH`.
//!
//! After the host, a part made only of digits is the port; so a remote
//! name made only of digits needs the port before it (`host:7542:2024`).

use std::net::{SocketAddr, ToSocketAddrs};

/// The port Saratoga listens on (docs/spec/saratoga.md, "Transport").
pub const DEFAULT_PORT: u16 = 7542;

const FORM: &str = "HOST[:PORT][:PATH], with an IPv6 address in brackets ([::1]:7542:PATH)";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSpec {
    pub host: String,
    pub port: u16,
    pub path: Option<String>,
}

impl PeerSpec {
    /// The peer's address: the host resolved, its first IPv4 address
    /// kept if it has one (a server listens on `0.0.0.0:7542` unless told
    /// otherwise, and `localhost` often resolves to `::1` first).
    pub fn resolve(&self) -> anyhow::Result<SocketAddr> {
        let addrs: Vec<SocketAddr> = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(|e| anyhow::anyhow!("cannot resolve host {:?}: {e}", self.host))?
            .collect();
        addrs
            .iter()
            .find(|a| a.is_ipv4())
            .or(addrs.first())
            .copied()
            .ok_or_else(|| anyhow::anyhow!("host {:?} has no address", self.host))
    }
}

pub fn parse_peer(text: &str) -> Result<PeerSpec, String> {
    let (host, rest) = if let Some(bracketed) = text.strip_prefix('[') {
        let (host, rest) = bracketed
            .split_once(']')
            .ok_or_else(|| format!("{text:?}: an IPv6 address without its closing ']'; expected {FORM}"))?;
        if host.parse::<std::net::Ipv6Addr>().is_err() {
            return Err(format!(
                "{text:?}: {host:?} is not an IPv6 address; expected {FORM}"
            ));
        }
        if !rest.is_empty() && !rest.starts_with(':') {
            return Err(format!("{text:?}: expected ':' after ']'; expected {FORM}"));
        }
        (host, rest.strip_prefix(':'))
    } else {
        match text.split_once(':') {
            Some((host, rest)) => (host, Some(rest)),
            None => (text, None),
        }
    };
    // An IPv6 address without brackets splits at its first colon, which
    // leaves a colon first in the rest.
    if !text.starts_with('[') && rest.is_some_and(|r| r.starts_with(':')) {
        return Err(format!(
            "{text:?}: put an IPv6 address in brackets; expected {FORM}"
        ));
    }
    if host.is_empty() {
        return Err(format!("{text:?}: no host; expected {FORM}"));
    }
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let (port, path) = match rest {
        None => (None, None),
        Some(rest) => match rest.split_once(':') {
            Some((port, path)) if digits(port) => (Some(port), Some(path)),
            _ if digits(rest) => (Some(rest), None),
            _ => (None, Some(rest)),
        },
    };
    let port = match port {
        None => DEFAULT_PORT,
        Some(port) => port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("{text:?}: port {port}: expected 1 to 65535"))?,
    };
    if path == Some("") {
        return Err(format!("{text:?}: an empty PATH after ':'; expected {FORM}"));
    }
    Ok(PeerSpec {
        host: host.to_owned(),
        port,
        path: path.map(str::to_owned),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(host: &str, port: u16, path: Option<&str>) -> PeerSpec {
        PeerSpec {
            host: host.into(),
            port,
            path: path.map(Into::into),
        }
    }

    #[test]
    fn hosts_ports_and_paths_are_told_apart() {
        assert_eq!(parse_peer("sat"), Ok(spec("sat", 7542, None)));
        assert_eq!(parse_peer("10.0.0.2:9000"), Ok(spec("10.0.0.2", 9000, None)));
        assert_eq!(
            parse_peer("10.0.0.2:in/f.bin"),
            Ok(spec("10.0.0.2", 7542, Some("in/f.bin")))
        );
        assert_eq!(
            parse_peer("10.0.0.2:9000:f"),
            Ok(spec("10.0.0.2", 9000, Some("f")))
        );
        assert_eq!(parse_peer("h:9000:a:b"), Ok(spec("h", 9000, Some("a:b"))));
        assert_eq!(parse_peer("[::1]"), Ok(spec("::1", 7542, None)));
        assert_eq!(parse_peer("[::1]:7000"), Ok(spec("::1", 7000, None)));
        assert_eq!(parse_peer("[::1]:7000:/x"), Ok(spec("::1", 7000, Some("/x"))));
        assert_eq!(parse_peer("[fe80::1]:x"), Ok(spec("fe80::1", 7542, Some("x"))));
    }

    #[test]
    fn a_name_resolves_to_its_ipv4_address_first() {
        let localhost = parse_peer("localhost:9000").unwrap().resolve().unwrap();
        assert_eq!(localhost, "127.0.0.1:9000".parse().unwrap());
        let v6 = parse_peer("[::1]").unwrap().resolve().unwrap();
        assert_eq!(v6, "[::1]:7542".parse().unwrap());
    }

    #[test]
    fn bad_peers_are_named_with_the_form_expected() {
        for (text, says) in [
            ("[::1", "closing ']'"),
            ("[nope]:1", "not an IPv6 address"),
            ("[::1]x", "expected ':' after ']'"),
            (":7542", "no host"),
            ("h:0", "1 to 65535"),
            ("h:70000", "1 to 65535"),
            ("h:", "empty PATH"),
            ("::1", "brackets"),
            ("fe80::1", "brackets"),
        ] {
            let error = parse_peer(text).unwrap_err();
            assert!(error.contains(says), "{text}: {error}");
        }
    }
}
