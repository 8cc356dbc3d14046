//! Addresses as a user writes them in an option: an address with the
//! prefix routed to it, a host to send to, a local address to bind.

use std::net::{AddrParseError, IpAddr, SocketAddr};

use crate::host_address::{is_host_address, is_host_socket};

/// Text that is not the address asked for, or an address that cannot
/// serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddressTextError {
    #[error("{0:?}: expected ADDRESS/PREFIX, such as 10.9.0.2/24 or fd09::2/64")]
    NoPrefix(String),
    #[error("{text:?}: {error}")]
    Syntax { text: String, error: AddrParseError },
    #[error("prefix length {text:?}: expected 0 to {max}")]
    PrefixLength { text: String, max: u8 },
    #[error("{0}: expected a host's address (not multicast, broadcast or unspecified) and a port above 0")]
    NotHost(SocketAddr),
    #[error(
        "{0}: expected an address of this host, or 0.0.0.0 or [::] for any (not a multicast group or the broadcast address)"
    )]
    NotLocal(SocketAddr),
}

/// An address and the length of the prefix routed to it, `10.9.0.2/24` or
/// `fd09::2/64`: the address keeps its host bits (unlike an [`IpPrefix`]).
///
/// [`IpPrefix`]: crate::IpPrefix
pub fn parse_address_prefix(text: &str) -> Result<(IpAddr, u8), AddressTextError> {
    let (addr, prefix) = text
        .split_once('/')
        .ok_or_else(|| AddressTextError::NoPrefix(text.into()))?;
    let addr: IpAddr = addr.parse().map_err(|error| AddressTextError::Syntax {
        text: addr.into(),
        error,
    })?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    let prefix = prefix
        .parse()
        .ok()
        .filter(|p| *p <= max)
        .ok_or_else(|| AddressTextError::PrefixLength {
            text: prefix.into(),
            max,
        })?;
    Ok((addr, prefix))
}

fn parse_socket(text: &str) -> Result<SocketAddr, AddressTextError> {
    text.parse().map_err(|error| AddressTextError::Syntax {
        text: text.into(),
        error,
    })
}

/// A host's address and port to send to ([`is_host_socket`]): a group or
/// the broadcast address is no peer of TCP's.
pub fn parse_host_socket(text: &str) -> Result<SocketAddr, AddressTextError> {
    let addr = parse_socket(text)?;
    match is_host_socket(addr) {
        true => Ok(addr),
        false => Err(AddressTextError::NotHost(addr)),
    }
}

/// A local address to bind: one of this host's, or the unspecified address
/// for any (a group's would wait for datagrams no peer sends).
pub fn parse_bind_socket(text: &str) -> Result<SocketAddr, AddressTextError> {
    let addr = parse_socket(text)?;
    match is_host_address(addr.ip()) || addr.ip().is_unspecified() {
        true => Ok(addr),
        false => Err(AddressTextError::NotLocal(addr)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal<T: std::fmt::Debug>(result: Result<T, AddressTextError>) -> String {
        result.unwrap_err().to_string()
    }

    #[test]
    fn prefixes_parse_and_bad_ones_are_named() {
        assert_eq!(
            parse_address_prefix("10.9.0.2/24"),
            Ok(("10.9.0.2".parse().unwrap(), 24))
        );
        assert_eq!(
            parse_address_prefix("fd09::2/128"),
            Ok(("fd09::2".parse().unwrap(), 128))
        );
        assert_eq!(
            refusal(parse_address_prefix("10.9.0.2")),
            "\"10.9.0.2\": expected ADDRESS/PREFIX, such as 10.9.0.2/24 or fd09::2/64"
        );
        assert_eq!(
            refusal(parse_address_prefix("10.9.0.2/33")),
            "prefix length \"33\": expected 0 to 32"
        );
        assert_eq!(
            refusal(parse_address_prefix("fd09::2/x")),
            "prefix length \"x\": expected 0 to 128"
        );
        assert_eq!(
            refusal(parse_address_prefix("10.9.0/24")),
            "\"10.9.0\": invalid IP address syntax"
        );
    }

    #[test]
    fn hosts_to_send_to_have_a_port_and_are_no_group() {
        assert_eq!(
            parse_host_socket("192.0.2.7:5001"),
            Ok("192.0.2.7:5001".parse().unwrap())
        );
        assert_eq!(
            parse_host_socket("[fd00::7]:5001"),
            Ok("[fd00::7]:5001".parse().unwrap())
        );
        for text in [
            "224.0.0.1:5001",
            "255.255.255.255:5001",
            "0.0.0.0:5001",
            "192.0.2.7:0",
        ] {
            assert_eq!(
                refusal(parse_host_socket(text)),
                format!(
                    "{text}: expected a host's address (not multicast, broadcast or unspecified) and a port above 0"
                )
            );
        }
        assert_eq!(
            refusal(parse_host_socket("192.0.2.7")),
            "\"192.0.2.7\": invalid socket address syntax"
        );
    }

    #[test]
    fn addresses_to_bind_are_this_hosts_or_any() {
        for text in ["0.0.0.0:7168", "[::]:0", "127.0.0.1:0", "10.0.0.1:7000"] {
            assert_eq!(parse_bind_socket(text), Ok(text.parse().unwrap()));
        }
        for text in ["239.1.1.1:7168", "255.255.255.255:7168", "[ff02::1]:7168"] {
            assert_eq!(
                refusal(parse_bind_socket(text)),
                format!(
                    "{text}: expected an address of this host, or 0.0.0.0 or [::] for any (not a multicast group or the broadcast address)"
                )
            );
        }
        assert_eq!(
            refusal(parse_bind_socket("localhost:80")),
            "\"localhost:80\": invalid socket address syntax"
        );
    }
}
