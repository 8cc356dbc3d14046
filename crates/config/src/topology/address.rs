//! An interface's address as `ip addr` writes it: the address and the
//! length of the prefix it is on (`10.1.0.1/24`), so that one value gives
//! both the node's own address and the network its link reaches.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use scps_node::IpPrefix;
use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct InterfaceAddress {
    pub address: IpAddr,
    /// The network the interface is on: the address with the bits past
    /// the prefix length cleared.
    pub prefix: IpPrefix,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid interface address {0:?}: expected ADDRESS/LENGTH, such as 10.1.0.1/24 or fd00::1/64")]
pub struct AddressError(String);

impl FromStr for InterfaceAddress {
    type Err = AddressError;

    fn from_str(text: &str) -> Result<InterfaceAddress, AddressError> {
        let error = || AddressError(text.to_owned());
        let (address, len) = text.split_once('/').ok_or_else(error)?;
        let address: IpAddr = address.parse().map_err(|_| error())?;
        if len.is_empty() || !len.bytes().all(|b| b.is_ascii_digit()) {
            return Err(error());
        }
        let len: u8 = len.parse().map_err(|_| error())?;
        let prefix = IpPrefix::containing(address, len).ok_or_else(error)?;
        Ok(InterfaceAddress { address, prefix })
    }
}

impl TryFrom<String> for InterfaceAddress {
    type Error = AddressError;
    fn try_from(text: String) -> Result<InterfaceAddress, AddressError> {
        text.parse()
    }
}

impl fmt::Display for InterfaceAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.address, self.prefix.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_gives_the_host_and_its_network() {
        let a: InterfaceAddress = "10.1.0.7/24".parse().unwrap();
        assert_eq!(a.address, "10.1.0.7".parse::<IpAddr>().unwrap());
        assert_eq!(a.prefix.to_string(), "10.1.0.0/24");
        assert_eq!(a.to_string(), "10.1.0.7/24");
        let b: InterfaceAddress = "fd00::1/64".parse().unwrap();
        assert_eq!(b.prefix.to_string(), "fd00::/64");
    }

    #[test]
    fn malformed_addresses_are_refused() {
        for bad in [
            "",
            "10.1.0.7",
            "10.1.0.7/",
            "10.1.0.7/33",
            "10.1.0/24",
            "10.1.0.7/+4",
            "x/8",
            "fd00::1/129",
        ] {
            let err = bad.parse::<InterfaceAddress>().unwrap_err();
            assert!(err.to_string().contains("ADDRESS/LENGTH"), "{bad:?}: {err}");
        }
    }

    proptest::proptest! {
        #[test]
        fn what_is_written_reads_back(bits: u32, len in 0u8..=32) {
            let text = format!("{}/{len}", std::net::Ipv4Addr::from(bits));
            let a: InterfaceAddress = text.parse().unwrap();
            proptest::prop_assert_eq!(a.to_string(), text);
            proptest::prop_assert!(a.prefix.contains(a.address));
        }
    }
}
