//! The [`Transport`] of a transfer from its user's choices of path (the
//! options `scps send` and `scps recv` share), with the refusals of
//! choices that name no path or give an option the path cannot use.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use anyhow::bail;

use crate::transport::{Encapsulation, RI_UDP_PORT, Transport};

/// Which end of a transfer the path is for: `--udp` names the peer's UDP
/// address to a sender, the address to receive on to a receiver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Sender,
    Receiver,
}

impl Role {
    /// How the options' refusals write `--udp`'s value.
    fn udp_value(self) -> &'static str {
        match self {
            Role::Sender => "PEER:PORT",
            Role::Receiver => "ADDR:PORT",
        }
    }
}

/// What a user chose for the path, option by option: `--udp`,
/// `--udp-bind` (a sender's), `--tun` with its `--addr`s, `--tcp[=CONTROLLER]`
/// (`Some("")` when bare), `--encapsulation`, a bundle (`--channel` or
/// `--bundle`) with its `--bundle-hook`.
#[derive(Debug, Clone, Default)]
pub struct PathChoice {
    pub udp: Option<SocketAddr>,
    pub udp_bind: Option<SocketAddr>,
    pub tun: Option<String>,
    pub addrs: Vec<(IpAddr, u8)>,
    pub tcp: Option<String>,
    pub encapsulation: Option<Encapsulation>,
    pub bundle: bool,
    pub bundle_hook: Option<String>,
}

impl PathChoice {
    /// The transport these choices name for `role`, or why they name none.
    /// The options are exclusive (the parser holds them to one path); a
    /// bundle goes before UDP, UDP before TUN, TUN before the kernel's TCP.
    pub fn transport(&self, role: Role) -> anyhow::Result<Transport> {
        let udp = role.udp_value();
        if self.udp.is_none() && self.tun.is_none() && self.tcp.is_none() && !self.bundle {
            bail!(
                "choose a path: --udp {udp}, --channel SPEC (repeated), --bundle, --tun NAME --addr ADDRESS/PREFIX, or --tcp"
            );
        }
        if self.udp_bind.is_some() && self.udp.is_none() {
            // A parser's `requires` cannot say this of an option of a group
            // of alternatives: said plainly rather than ignored.
            bail!("--udp-bind binds the UDP path: it needs --udp {udp}");
        }
        if self.encapsulation.is_some() && self.udp.is_none() {
            bail!("--encapsulation wraps the UDP path's packets: it needs --udp {udp}");
        }
        let encapsulation = self.encapsulation.unwrap_or_default();
        Ok(if self.bundle {
            Transport::Bundle {
                hook: self.bundle_hook.clone(),
            }
        } else if let Some(udp) = self.udp {
            match role {
                Role::Sender => Transport::Udp {
                    bind: self.udp_bind.unwrap_or_else(|| any_address(udp, encapsulation)),
                    peer: Some(udp),
                    encapsulation,
                },
                Role::Receiver => Transport::Udp {
                    bind: udp,
                    peer: None,
                    encapsulation,
                },
            }
        } else if let Some(name) = &self.tun {
            Transport::Tun {
                name: name.clone(),
                addrs: self.addrs.clone(),
            }
        } else {
            Transport::Tcp {
                congestion: self.tcp.clone().filter(|name| !name.is_empty()),
            }
        })
    }
}

/// A sender's UDP address unless `--udp-bind` says: any of the peer's
/// family, on the port the system chooses, or on the RI's port for its
/// encapsulation (which uses that port both ways).
fn any_address(peer: SocketAddr, encapsulation: Encapsulation) -> SocketAddr {
    let port = match encapsulation {
        Encapsulation::Ri => RI_UDP_PORT,
        Encapsulation::Scps => 0,
    };
    match peer {
        SocketAddr::V4(_) => SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), port),
        SocketAddr::V6(_) => SocketAddr::new(Ipv6Addr::UNSPECIFIED.into(), port),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refusal(choice: &PathChoice, role: Role) -> String {
        format!("{:#}", choice.transport(role).unwrap_err())
    }

    fn udp(addr: &str) -> PathChoice {
        PathChoice {
            udp: Some(addr.parse().unwrap()),
            ..PathChoice::default()
        }
    }

    #[test]
    fn no_path_is_refused_naming_what_udp_takes_for_each_role() {
        let none = PathChoice {
            addrs: vec![("10.9.0.2".parse().unwrap(), 24)],
            bundle_hook: Some("true".into()),
            ..PathChoice::default()
        };
        assert_eq!(
            refusal(&none, Role::Sender),
            "choose a path: --udp PEER:PORT, --channel SPEC (repeated), --bundle, --tun NAME --addr ADDRESS/PREFIX, or --tcp"
        );
        assert_eq!(
            refusal(&none, Role::Receiver),
            "choose a path: --udp ADDR:PORT, --channel SPEC (repeated), --bundle, --tun NAME --addr ADDRESS/PREFIX, or --tcp"
        );
    }

    #[test]
    fn udp_options_without_udp_are_refused() {
        let bind = PathChoice {
            tcp: Some(String::new()),
            udp_bind: Some("0.0.0.0:7000".parse().unwrap()),
            ..PathChoice::default()
        };
        assert_eq!(
            refusal(&bind, Role::Sender),
            "--udp-bind binds the UDP path: it needs --udp PEER:PORT"
        );
        let wrapped = PathChoice {
            tun: Some("scps0".into()),
            encapsulation: Some(Encapsulation::Ri),
            ..PathChoice::default()
        };
        assert_eq!(
            refusal(&wrapped, Role::Sender),
            "--encapsulation wraps the UDP path's packets: it needs --udp PEER:PORT"
        );
        assert_eq!(
            refusal(&wrapped, Role::Receiver),
            "--encapsulation wraps the UDP path's packets: it needs --udp ADDR:PORT"
        );
    }

    #[test]
    fn a_sender_binds_any_address_of_the_peers_family_unless_told() {
        let bound = |choice: PathChoice| match choice.transport(Role::Sender).unwrap() {
            Transport::Udp {
                bind,
                peer,
                encapsulation,
            } => (bind, peer, encapsulation),
            other => panic!("{other:?}"),
        };
        let peer: SocketAddr = "192.0.2.7:7168".parse().unwrap();
        assert_eq!(
            bound(udp("192.0.2.7:7168")),
            ("0.0.0.0:0".parse().unwrap(), Some(peer), Encapsulation::Scps)
        );
        assert_eq!(bound(udp("[fd00::7]:7168")).0, "[::]:0".parse().unwrap());
        let ri = PathChoice {
            encapsulation: Some(Encapsulation::Ri),
            ..udp("192.0.2.7:7168")
        };
        assert_eq!(
            bound(ri.clone()),
            ("0.0.0.0:7168".parse().unwrap(), Some(peer), Encapsulation::Ri)
        );
        let told = PathChoice {
            udp_bind: Some("127.0.0.1:9000".parse().unwrap()),
            ..ri
        };
        assert_eq!(bound(told).0, "127.0.0.1:9000".parse().unwrap());
    }

    #[test]
    fn a_receiver_binds_its_udp_address_and_learns_its_peer() {
        let ri = PathChoice {
            encapsulation: Some(Encapsulation::Ri),
            ..udp("0.0.0.0:7168")
        };
        assert!(matches!(
            ri.transport(Role::Receiver).unwrap(),
            Transport::Udp { bind, peer: None, encapsulation: Encapsulation::Ri }
                if bind == "0.0.0.0:7168".parse().unwrap()
        ));
    }

    #[test]
    fn bundles_tun_devices_and_the_kernels_tcp_are_carried_as_chosen() {
        for role in [Role::Sender, Role::Receiver] {
            let bundle = PathChoice {
                bundle: true,
                bundle_hook: Some("redial".into()),
                ..PathChoice::default()
            };
            assert!(matches!(
                bundle.transport(role).unwrap(),
                Transport::Bundle { hook: Some(hook) } if hook == "redial"
            ));
            let addrs = vec![("fd09::2".parse().unwrap(), 64)];
            let tun = PathChoice {
                tun: Some("scps0".into()),
                addrs: addrs.clone(),
                ..PathChoice::default()
            };
            assert!(matches!(
                tun.transport(role).unwrap(),
                Transport::Tun { name, addrs: a } if name == "scps0" && a == addrs
            ));
            let bare = PathChoice {
                tcp: Some(String::new()),
                ..PathChoice::default()
            };
            assert!(matches!(
                bare.transport(role).unwrap(),
                Transport::Tcp { congestion: None }
            ));
            let bbr = PathChoice {
                tcp: Some("bbr".into()),
                ..PathChoice::default()
            };
            assert!(matches!(
                bbr.transport(role).unwrap(),
                Transport::Tcp { congestion: Some(c) } if c == "bbr"
            ));
        }
    }
}
