//! The explicit modes' link request: in a port forward or behind the
//! SOCKS5 server, the link connection does not carry the destination in
//! its addresses (it runs between the two gateways over UDP
//! encapsulation), so its first bytes name it, and the far gateway's
//! first byte back says whether it reached it. The format is ours and
//! documented in docs/gateway.md ("The link request"):
//!
//! ```text
//! request:  version (1) | kind (1) | address | port (2, big-endian)
//!           kind 1: IPv4, 4 bytes; kind 4: IPv6, 16 bytes;
//!           kind 3: a name, 1 length byte (1 to 255) then the name,
//!           resolved at the far side
//! reply:    version (1) | status (1)
//! ```
//!
//! Version 1. The kinds are SOCKS5's address types, so a SOCKS5 request
//! maps onto one field for field. Anything after a request or a reply is
//! the relayed stream.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use scps_relay::OpenFailure;

pub const VERSION: u8 = 1;

const KIND_IPV4: u8 = 1;
const KIND_NAME: u8 = 3;
const KIND_IPV6: u8 = 4;

/// The longest request: a 255-byte name.
pub const MAX_REQUEST: usize = 2 + 1 + 255 + 2;

/// Where the far gateway is asked to connect.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Destination {
    Address(SocketAddr),
    /// A host name and port, resolved at the far side.
    Name(String, u16),
}

impl std::fmt::Display for Destination {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Destination::Address(addr) => write!(f, "{addr}"),
            Destination::Name(name, port) => write!(f, "{name}:{port}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("link request version {0}, expected {VERSION}")]
    Version(u8),
    #[error("link request address kind {0}: expected 1 (IPv4), 3 (name) or 4 (IPv6)")]
    Kind(u8),
    #[error("link request with an empty name")]
    EmptyName,
    #[error("link request name is not a host name (letters, digits, '-', '.', '_')")]
    BadName,
    #[error("link reply status {0} is not one of ours")]
    Status(u8),
}

impl Destination {
    /// The request naming this destination.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = vec![VERSION];
        let port = match self {
            Destination::Address(SocketAddr::V4(addr)) => {
                out.push(KIND_IPV4);
                out.extend_from_slice(&addr.ip().octets());
                addr.port()
            }
            Destination::Address(SocketAddr::V6(addr)) => {
                out.push(KIND_IPV6);
                out.extend_from_slice(&addr.ip().octets());
                addr.port()
            }
            Destination::Name(name, port) => {
                out.push(KIND_NAME);
                // Names are checked to fit where they are made (the
                // configuration, the SOCKS5 request: at most 255 bytes).
                let name = &name.as_bytes()[..name.len().min(255)];
                out.push(name.len() as u8);
                out.extend_from_slice(name);
                *port
            }
        };
        out.extend_from_slice(&port.to_be_bytes());
        out
    }

    /// Parses a request at the start of `bytes`: the destination and the
    /// request's length, `None` while more bytes are needed.
    pub fn parse(bytes: &[u8]) -> Result<Option<(Destination, usize)>, RequestError> {
        let Some(&version) = bytes.first() else {
            return Ok(None);
        };
        if version != VERSION {
            return Err(RequestError::Version(version));
        }
        Ok(Destination::parse_address(&bytes[1..])?.map(|(destination, len)| (destination, 1 + len)))
    }

    /// Parses the address part of a request at the start of `bytes`
    /// (kind, address, port: the layout of SOCKS5's too): the destination
    /// and the part's length, `None` while more bytes are needed.
    pub fn parse_address(bytes: &[u8]) -> Result<Option<(Destination, usize)>, RequestError> {
        let Some(&kind) = bytes.first() else {
            return Ok(None);
        };
        let (address_len, start) = match kind {
            KIND_IPV4 => (4, 1),
            KIND_IPV6 => (16, 1),
            KIND_NAME => match bytes.get(1) {
                None => return Ok(None),
                Some(0) => return Err(RequestError::EmptyName),
                Some(&len) => (usize::from(len), 2),
            },
            other => return Err(RequestError::Kind(other)),
        };
        let end = start + address_len + 2;
        let Some(request) = bytes.get(..end) else {
            return Ok(None);
        };
        let address = &request[start..start + address_len];
        let port = u16::from_be_bytes([request[end - 2], request[end - 1]]);
        let destination = match kind {
            KIND_IPV4 => {
                let octets: [u8; 4] = address.try_into().unwrap_or_default();
                Destination::Address(SocketAddr::new(IpAddr::V4(Ipv4Addr::from(octets)), port))
            }
            KIND_IPV6 => {
                let octets: [u8; 16] = address.try_into().unwrap_or_default();
                Destination::Address(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(octets)), port))
            }
            _ => Destination::Name(host_name(address)?, port),
        };
        Ok(Some((destination, end)))
    }
}

/// `bytes` as a host name, if it is one (RFC 1123 letters, digits and
/// hyphens, dots between labels, and the underscore many names use).
pub fn host_name(bytes: &[u8]) -> Result<String, RequestError> {
    if bytes.is_empty() {
        return Err(RequestError::EmptyName);
    }
    let allowed = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_');
    if !bytes.iter().all(allowed) {
        return Err(RequestError::BadName);
    }
    Ok(bytes.iter().map(|&b| char::from(b)).collect())
}

/// What the far gateway answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Connected = 0,
    Refused = 1,
    TimedOut = 2,
    Unreachable = 3,
    /// No route of the far gateway allows this destination.
    NotAllowed = 4,
    /// The request was malformed.
    BadRequest = 5,
    /// The name did not resolve.
    NameNotFound = 6,
}

impl Status {
    /// The status that tells a client gateway of `failure`.
    pub fn of_failure(failure: OpenFailure) -> Status {
        match failure {
            OpenFailure::Refused => Status::Refused,
            OpenFailure::TimedOut => Status::TimedOut,
            // The link request has no status for a far gateway out of
            // room: its client learns only that the destination was not
            // reached (the far gateway counts the cause).
            OpenFailure::Unreachable | OpenFailure::OutOf(_) => Status::Unreachable,
            OpenFailure::NotAllowed => Status::NotAllowed,
        }
    }

    /// What a client gateway makes of a status: `None` for connected.
    pub fn failure(self) -> Option<OpenFailure> {
        match self {
            Status::Connected => None,
            Status::Refused => Some(OpenFailure::Refused),
            Status::TimedOut => Some(OpenFailure::TimedOut),
            Status::NotAllowed => Some(OpenFailure::NotAllowed),
            Status::Unreachable | Status::BadRequest | Status::NameNotFound => Some(OpenFailure::Unreachable),
        }
    }

    pub fn encode(self) -> [u8; 2] {
        [VERSION, self as u8]
    }

    /// Parses a reply at the start of `bytes`; `None` while more bytes
    /// are needed.
    pub fn parse(bytes: &[u8]) -> Result<Option<Status>, RequestError> {
        let Some(reply) = bytes.get(..2) else {
            if let Some(&version) = bytes.first()
                && version != VERSION
            {
                return Err(RequestError::Version(version));
            }
            return Ok(None);
        };
        if reply[0] != VERSION {
            return Err(RequestError::Version(reply[0]));
        }
        Ok(Some(match reply[1] {
            0 => Status::Connected,
            1 => Status::Refused,
            2 => Status::TimedOut,
            3 => Status::Unreachable,
            4 => Status::NotAllowed,
            5 => Status::BadRequest,
            6 => Status::NameNotFound,
            other => return Err(RequestError::Status(other)),
        }))
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Status::Connected => "connected",
            Status::Refused => "refused",
            Status::TimedOut => "timed out",
            Status::Unreachable => "unreachable",
            Status::NotAllowed => "not allowed by the far gateway's routes",
            Status::BadRequest => "malformed request",
            Status::NameNotFound => "name not found",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn destination() -> impl Strategy<Value = Destination> {
        prop_oneof![
            (any::<[u8; 4]>(), any::<u16>()).prop_map(|(ip, port)| Destination::Address(SocketAddr::new(
                Ipv4Addr::from(ip).into(),
                port
            ))),
            (any::<[u8; 16]>(), any::<u16>()).prop_map(|(ip, port)| Destination::Address(SocketAddr::new(
                Ipv6Addr::from(ip).into(),
                port
            ))),
            ("[a-z0-9._-]{1,255}", any::<u16>()).prop_map(|(name, port)| Destination::Name(name, port)),
        ]
    }

    proptest! {
        /// Built then parsed, a request gives back its destination and
        /// length, with the stream after it left alone; every prefix of
        /// it asks for more.
        #[test]
        fn requests_parse_back(destination in destination(), after in proptest::collection::vec(any::<u8>(), 0..8)) {
            let mut bytes = destination.encode();
            let len = bytes.len();
            for cut in 0..len {
                prop_assert_eq!(Destination::parse(&bytes[..cut]), Ok(None));
            }
            bytes.extend_from_slice(&after);
            prop_assert_eq!(Destination::parse(&bytes), Ok(Some((destination, len))));
        }

        /// Any bytes: an answer or an error, never a panic, and an answer
        /// no longer than the input.
        #[test]
        fn any_bytes_are_handled(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(Some((_, len))) = Destination::parse(&bytes) {
                prop_assert!(len <= bytes.len() && len <= MAX_REQUEST);
            }
            let _ = Status::parse(&bytes);
        }
    }

    #[test]
    fn malformed_requests_and_replies_say_what_is_wrong() {
        assert_eq!(Destination::parse(&[2, 1]), Err(RequestError::Version(2)));
        assert_eq!(Destination::parse(&[1, 2, 0]), Err(RequestError::Kind(2)));
        assert_eq!(
            Destination::parse(&[1, 3, 0, 0, 80]),
            Err(RequestError::EmptyName)
        );
        assert_eq!(
            Destination::parse(&[1, 3, 3, b'a', b' ', b'b', 0, 80]),
            Err(RequestError::BadName)
        );
        assert_eq!(Status::parse(&[1, 9]), Err(RequestError::Status(9)));
        assert_eq!(Status::parse(&[7]), Err(RequestError::Version(7)));
        assert_eq!(Status::parse(&[1]), Ok(None));
        for status in [Status::Connected, Status::Refused, Status::NameNotFound] {
            assert_eq!(Status::parse(&status.encode()), Ok(Some(status)));
        }
    }
}
