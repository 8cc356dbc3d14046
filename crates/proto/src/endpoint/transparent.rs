//! Transparent addressing (docs/gateway.md): the addresses an
//! endpoint may act as beyond its own, and the transparent listeners that
//! answer for whole prefixes of them.
//!
//! A gateway's link endpoint needs both halves: on the client's side it
//! opens SCPS-TP *from the client's address* to the server's, and on the
//! server's side it accepts connections to any server in its routed
//! prefixes and answers as that server. The kernel steers those prefixes'
//! packets into the gateway's TUN device, so they reach the endpoint
//! although none of the addresses is its own.
//!
//! Off by default: only [`EndpointConfig::transparent`](super::EndpointConfig::transparent)
//! turns it on, for the prefixes it lists.

use std::net::{IpAddr, SocketAddr};

use scps_node::IpPrefix;

use super::EndpointError;

/// Identifies a transparent listener of an endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransparentListenerId(u32);

/// One prefix of a transparent listener, on one port or on every port.
#[derive(Debug, Clone, Copy)]
struct Entry {
    prefix: IpPrefix,
    port: Option<u16>,
    listener: TransparentListenerId,
}

impl Entry {
    /// The most specific first: the longest prefix, then one port before
    /// every port (as a router picks the longest matching route).
    fn specificity(&self) -> (u8, bool) {
        (self.prefix.len(), self.port.is_some())
    }
}

/// The transparent listeners' prefixes, most specific first.
#[derive(Debug, Default)]
pub(super) struct TransparentListeners {
    entries: Vec<Entry>,
    next_id: u32,
}

impl TransparentListeners {
    /// Registers a listener for `prefixes` on `port` (every port for
    /// `None`). Refused if no prefix is given (answering for every address
    /// must be asked for with `0.0.0.0/0` or `::/0`), if a prefix lies
    /// outside those the endpoint may act as, or if another transparent
    /// listener already has the same prefix and port.
    pub(super) fn add(
        &mut self,
        enabled: &[IpPrefix],
        prefixes: &[IpPrefix],
        port: Option<u16>,
    ) -> Result<TransparentListenerId, EndpointError> {
        if prefixes.is_empty() {
            return Err(EndpointError::NoTransparentPrefixes);
        }
        if let Some(&outside) = prefixes.iter().find(|p| !enabled.iter().any(|e| covers(e, p))) {
            return Err(EndpointError::NotTransparent(outside));
        }
        if let Some(taken) = self
            .entries
            .iter()
            .find(|e| e.port == port && prefixes.contains(&e.prefix))
        {
            return Err(EndpointError::TransparentInUse {
                prefix: taken.prefix,
                port,
            });
        }
        let listener = TransparentListenerId(self.next_id);
        self.next_id = self.next_id.wrapping_add(1);
        for &prefix in prefixes {
            let entry = Entry {
                prefix,
                port,
                listener,
            };
            // Stable: among equally specific entries (disjoint prefixes of
            // one length), the order does not matter.
            let at = self
                .entries
                .partition_point(|e| e.specificity() >= entry.specificity());
            self.entries.insert(at, entry);
        }
        Ok(listener)
    }

    pub(super) fn remove(&mut self, listener: TransparentListenerId) {
        self.entries.retain(|e| e.listener != listener);
    }

    /// The most specific transparent listener for a segment to `local`.
    pub(super) fn find(&self, local: SocketAddr) -> Option<TransparentListenerId> {
        self.entries
            .iter()
            .find(|e| e.prefix.contains(local.ip()) && e.port.is_none_or(|p| p == local.port()))
            .map(|e| e.listener)
    }
}

/// Whether `ip` lies in one of the prefixes the endpoint may act as.
pub(super) fn is_enabled(enabled: &[IpPrefix], ip: IpAddr) -> bool {
    enabled.iter().any(|prefix| prefix.contains(ip))
}

/// Whether every address of `inner` lies in `outer`.
fn covers(outer: &IpPrefix, inner: &IpPrefix) -> bool {
    outer.len() <= inner.len() && outer.contains(inner.network())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(text: &str) -> IpPrefix {
        text.parse().unwrap()
    }

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn the_most_specific_listener_wins_longest_prefix_first_then_one_port() {
        let enabled = [prefix("10.0.0.0/8")];
        let mut listeners = TransparentListeners::default();
        let every_port = listeners.add(&enabled, &[prefix("10.0.0.0/8")], None).unwrap();
        let port_80 = listeners
            .add(&enabled, &[prefix("10.0.0.0/8")], Some(80))
            .unwrap();
        let narrow = listeners.add(&enabled, &[prefix("10.1.0.0/16")], None).unwrap();
        assert_eq!(listeners.find(addr("10.2.3.4:22")), Some(every_port));
        assert_eq!(listeners.find(addr("10.2.3.4:80")), Some(port_80));
        assert_eq!(
            listeners.find(addr("10.1.3.4:80")),
            Some(narrow),
            "the /16 before the /8"
        );
        assert_eq!(listeners.find(addr("11.0.0.1:80")), None);
        listeners.remove(narrow);
        assert_eq!(listeners.find(addr("10.1.3.4:80")), Some(port_80));
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let enabled = [prefix("10.0.0.0/8"), prefix("fd00::/8")];
        let mut listeners = TransparentListeners::default();
        assert_eq!(
            listeners.add(&enabled, &[], None),
            Err(EndpointError::NoTransparentPrefixes)
        );
        assert_eq!(
            listeners.add(&enabled, &[prefix("10.0.0.0/8"), prefix("0.0.0.0/0")], None),
            Err(EndpointError::NotTransparent(prefix("0.0.0.0/0"))),
            "wider than what the endpoint may act as"
        );
        listeners.add(&enabled, &[prefix("fd00::/16")], Some(80)).unwrap();
        assert_eq!(
            listeners.add(&enabled, &[prefix("10.0.0.0/24"), prefix("fd00::/16")], Some(80)),
            Err(EndpointError::TransparentInUse {
                prefix: prefix("fd00::/16"),
                port: Some(80)
            })
        );
        assert!(
            listeners.add(&enabled, &[prefix("fd00::/16")], Some(81)).is_ok(),
            "another port"
        );
        assert!(
            listeners.add(&[], &[prefix("10.0.0.0/8")], None).is_err(),
            "off by default"
        );
    }
}
