//! IP prefixes (`10.1.0.0/16`, `fd00::/8`): what routes, transparent
//! listeners and gateway rules match destinations against.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::str::FromStr;

/// A network: an address whose bits past `len` are zero, and the length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IpPrefix {
    network: IpAddr,
    len: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PrefixError {
    #[error("{0:?}: expected ADDRESS/LENGTH, such as 10.1.0.0/16 or fd00::/8")]
    Syntax(String),
    #[error("{text:?}: prefix length {len} is too long for {family} (at most {max})")]
    TooLong {
        text: String,
        family: &'static str,
        len: u8,
        max: u8,
    },
    #[error("{text:?}: bits are set past the prefix length; the network is {network}")]
    HostBits { text: String, network: IpPrefix },
}

impl IpPrefix {
    /// The prefix of length `len` that contains `addr` (bits past `len`
    /// cleared); `None` if `len` is too long for the address family.
    pub fn containing(addr: IpAddr, len: u8) -> Option<IpPrefix> {
        let network = match addr {
            IpAddr::V4(v4) => {
                if len > 32 {
                    return None;
                }
                IpAddr::V4(Ipv4Addr::from(u32::from(v4) & mask32(len)))
            }
            IpAddr::V6(v6) => {
                if len > 128 {
                    return None;
                }
                IpAddr::V6(Ipv6Addr::from(u128::from(v6) & mask128(len)))
            }
        };
        Some(IpPrefix { network, len })
    }

    /// The prefix holding `addr` alone (/32 or /128).
    pub fn host(addr: IpAddr) -> IpPrefix {
        let len = if addr.is_ipv4() { 32 } else { 128 };
        IpPrefix { network: addr, len }
    }

    pub fn network(&self) -> IpAddr {
        self.network
    }

    pub fn len(&self) -> u8 {
        self.len
    }

    /// Whether this is a default route (`0.0.0.0/0` or `::/0`).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Whether `addr` lies in the prefix (never across address families).
    pub fn contains(&self, addr: IpAddr) -> bool {
        match (self.network, addr) {
            (IpAddr::V4(net), IpAddr::V4(a)) => u32::from(a) & mask32(self.len) == u32::from(net),
            (IpAddr::V6(net), IpAddr::V6(a)) => u128::from(a) & mask128(self.len) == u128::from(net),
            _ => false,
        }
    }

    /// Whether the two prefixes share any address.
    pub fn overlaps(&self, other: &IpPrefix) -> bool {
        self.contains(other.network) || other.contains(self.network)
    }
}

fn mask32(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

fn mask128(len: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0)
}

impl FromStr for IpPrefix {
    type Err = PrefixError;

    /// `ADDRESS/LENGTH` with no bits set past the length, as `ip route`
    /// wants them, or a bare address for that address alone.
    fn from_str(text: &str) -> Result<IpPrefix, PrefixError> {
        let syntax = || PrefixError::Syntax(text.to_owned());
        let (addr, len) = match text.split_once('/') {
            Some((addr, len)) => {
                let len: u8 = len
                    .parse()
                    .ok()
                    .filter(|_| len.bytes().all(|b| b.is_ascii_digit()))
                    .ok_or_else(syntax)?;
                (addr.parse::<IpAddr>().map_err(|_| syntax())?, len)
            }
            None => {
                let addr: IpAddr = text.parse().map_err(|_| syntax())?;
                return Ok(IpPrefix::host(addr));
            }
        };
        let (family, max) = if addr.is_ipv4() {
            ("IPv4", 32)
        } else {
            ("IPv6", 128)
        };
        let prefix = IpPrefix::containing(addr, len).ok_or_else(|| PrefixError::TooLong {
            text: text.to_owned(),
            family,
            len,
            max,
        })?;
        if prefix.network != addr {
            return Err(PrefixError::HostBits {
                text: text.to_owned(),
                network: prefix,
            });
        }
        Ok(prefix)
    }
}

impl fmt::Display for IpPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> IpPrefix {
        text.parse().unwrap()
    }

    #[test]
    fn parses_and_prints_both_families() {
        assert_eq!(p("10.1.0.0/16").to_string(), "10.1.0.0/16");
        assert_eq!(p("fd00::/8").to_string(), "fd00::/8");
        assert_eq!(p("0.0.0.0/0").to_string(), "0.0.0.0/0");
        assert_eq!(p("10.1.2.3").to_string(), "10.1.2.3/32");
        assert_eq!(p("fd00::1").to_string(), "fd00::1/128");
    }

    #[test]
    fn bad_prefixes_say_what_is_wrong() {
        let err = "10.1.0.1/16".parse::<IpPrefix>().unwrap_err();
        assert!(err.to_string().contains("the network is 10.1.0.0/16"), "{err}");
        let err = "10.1.0.0/33".parse::<IpPrefix>().unwrap_err();
        assert!(err.to_string().contains("at most 32"), "{err}");
        let err = "fd00::/129".parse::<IpPrefix>().unwrap_err();
        assert!(err.to_string().contains("at most 128"), "{err}");
        for bad in [
            "",
            "10.1.0.0/",
            "10.1.0/16",
            "10.1.0.0/+8",
            "10.1.0.0/16/2",
            "x/8",
        ] {
            assert!(
                matches!(bad.parse::<IpPrefix>(), Err(PrefixError::Syntax(_))),
                "{bad:?} should be a syntax error"
            );
        }
    }

    #[test]
    fn containment_respects_length_and_family() {
        let net = p("10.1.0.0/16");
        assert!(net.contains("10.1.255.7".parse().unwrap()));
        assert!(!net.contains("10.2.0.1".parse().unwrap()));
        assert!(!net.contains("::ffff:10.1.0.1".parse().unwrap()));
        assert!(p("0.0.0.0/0").contains("192.0.2.1".parse().unwrap()));
        assert!(!p("0.0.0.0/0").contains("fd00::1".parse().unwrap()));
        assert!(p("::/0").contains("fd00::1".parse().unwrap()));
        assert!(p("fd00::/8").contains("fdff::1".parse().unwrap()));
        assert!(!p("fd00::/8").contains("fe00::1".parse().unwrap()));
        assert!(p("10.1.0.0/16").overlaps(&p("10.1.2.0/24")));
        assert!(!p("10.1.0.0/16").overlaps(&p("10.2.0.0/16")));
    }

    proptest::proptest! {
        #[test]
        fn the_network_of_a_prefix_parses_back(bits: u128, len in 0u8..=128) {
            let prefix = IpPrefix::containing(IpAddr::V6(Ipv6Addr::from(bits)), len).unwrap();
            proptest::prop_assert_eq!(prefix.to_string().parse::<IpPrefix>(), Ok(prefix));
            proptest::prop_assert!(prefix.contains(IpAddr::V6(Ipv6Addr::from(bits))));
        }

        #[test]
        fn an_ipv4_prefix_contains_exactly_its_addresses(net: u32, len in 0u8..=32, addr: u32) {
            let prefix = IpPrefix::containing(IpAddr::V4(Ipv4Addr::from(net)), len).unwrap();
            let same_top_bits = len == 0 || (net ^ addr) >> (32 - u32::from(len)) == 0;
            proptest::prop_assert_eq!(prefix.contains(IpAddr::V4(Ipv4Addr::from(addr))), same_top_bits);
        }
    }
}
