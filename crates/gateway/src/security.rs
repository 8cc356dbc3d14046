//! `link.security`: how the link between two gateways is protected
//! (docs/secure-link.md). By default, `noise`: the gateways authenticate
//! each other by their static keys and seal every datagram. `none` keeps
//! the plain SCPS-TP wire a standard SCPS gateway speaks, and takes link
//! packets only from the configured far gateway.

use std::path::{Path, PathBuf};
use std::time::Duration;

use scps_config::Error;
use scps_config::bundle::Bundle;
use scps_config::units::{Bytes, Time};
use scps_net::{BundleMonitor, BundlePath, LinkSecurity, NetError, SecureMonitor, StrangerCount, UdpPath};
use scps_secure::{PrivateKey, PublicKey, SecureConfig};

use crate::keys::read_private_key;

/// The keys and settings of the secure link.
#[derive(Debug, Clone, PartialEq)]
pub struct NoiseKeys {
    /// Where the private key was read from (for messages).
    pub key_file: PathBuf,
    pub private_key: PrivateKey,
    pub peer_public_key: PublicKey,
    pub rekey_after: Duration,
    pub rekey_after_bytes: u64,
}

/// How the link is protected.
#[derive(Debug, Clone, PartialEq)]
pub enum Security {
    Noise(NoiseKeys),
    /// Plain SCPS-TP, filtered by the far gateway's address.
    None,
}

/// What the gateway's links to the far gateway report, for its metrics:
/// the secure link's figures, or what a plain link took from no one it
/// knows.
#[derive(Debug, Clone, Default)]
pub struct LinkWatch {
    pub secure: SecureMonitor,
    pub strangers: StrangerCount,
}

/// `link.security` and its keys, as the file gives them.
#[derive(Debug, Default)]
pub(crate) struct SecuritySpec<'a> {
    pub(crate) security: Option<&'a str>,
    pub(crate) private_key_file: Option<&'a str>,
    pub(crate) peer_public_key: Option<&'a str>,
    pub(crate) rekey_after: Option<Time>,
    pub(crate) rekey_after_bytes: Option<Bytes>,
}

impl Security {
    /// Reads the keys `spec` names, a relative key file from `dir` (the
    /// configuration file's directory).
    pub(crate) fn resolve(spec: &SecuritySpec<'_>, dir: &Path) -> Result<Security, Error> {
        match spec.security.unwrap_or("noise") {
            "noise" => {}
            "none" => {
                for (key, given) in [
                    ("link.private_key_file", spec.private_key_file.is_some()),
                    ("link.peer_public_key", spec.peer_public_key.is_some()),
                    ("link.rekey_after", spec.rekey_after.is_some()),
                    ("link.rekey_after_bytes", spec.rekey_after_bytes.is_some()),
                ] {
                    if given {
                        return Err(Error::invalid(
                            key,
                            "set",
                            "nothing with link.security = \"none\": the link is not sealed (remove it, or the \
                             security line for the default, \"noise\")",
                        ));
                    }
                }
                return Ok(Security::None);
            }
            other => {
                return Err(Error::invalid(
                    "link.security",
                    other,
                    "\"noise\" (the default: the gateways authenticate each other and seal every datagram) or \
                     \"none\" (plain SCPS-TP, for a standard SCPS gateway at the far end)",
                ));
            }
        }
        let Some(file) = spec.private_key_file else {
            return Err(Error::invalid(
                "link.private_key_file",
                "(none)",
                "this gateway's private key file, which `scps gateway keygen FILE` makes (or link.security = \
                 \"none\" for plain SCPS-TP)",
            ));
        };
        let key_file = dir.join(file);
        let private_key = read_private_key(&key_file)
            .map_err(|e| Error::invalid("link.private_key_file", file, e.to_string()))?;
        let Some(peer) = spec.peer_public_key else {
            return Err(Error::invalid(
                "link.peer_public_key",
                "(none)",
                "the far gateway's public key, which its `scps gateway keygen` printed (or `scps gateway pubkey \
                 ITS_KEY_FILE` prints)",
            ));
        };
        let peer_public_key = PublicKey::from_base64(peer).map_err(|e| {
            Error::invalid(
                "link.peer_public_key",
                peer,
                format!("the far gateway's public key, 44 characters of base64 ({e})"),
            )
        })?;
        if peer_public_key == private_key.public_key() {
            return Err(Error::invalid(
                "link.peer_public_key",
                peer,
                "the far gateway's public key, and this is this gateway's own: give each gateway a key of \
                 its own and each the other's public key",
            ));
        }
        let rekey_after = spec.rekey_after.map_or(scps_secure::REKEY_AFTER, |t| t.0);
        if rekey_after < Duration::from_secs(1) {
            return Err(Error::invalid(
                "link.rekey_after",
                Time(rekey_after),
                "at least 1s (a rekey needs a round trip)",
            ));
        }
        let rekey_after_bytes = spec
            .rekey_after_bytes
            .map_or(scps_secure::REKEY_AFTER_BYTES, |b| b.0);
        if rekey_after_bytes < 1 << 20 {
            return Err(Error::invalid(
                "link.rekey_after_bytes",
                rekey_after_bytes,
                "at least 1 MiB",
            ));
        }
        Ok(Security::Noise(NoiseKeys {
            key_file,
            private_key,
            peer_public_key,
            rekey_after,
            rekey_after_bytes,
        }))
    }

    /// Bytes each link datagram adds to the packet it carries: the secure
    /// link's header and tag, or the plain path's frame check.
    pub fn framing_bytes(&self) -> usize {
        match self {
            Security::Noise(_) => scps_secure::OVERHEAD,
            Security::None => scps_net::frame_check::TRAILER_BYTES,
        }
    }

    /// The secure link of a path, reporting to `monitor`; `None` for a
    /// plain link.
    pub fn link_security(&self, monitor: &SecureMonitor) -> Option<LinkSecurity> {
        let Security::Noise(keys) = self else {
            return None;
        };
        Some(LinkSecurity {
            config: SecureConfig {
                rekey_after: keys.rekey_after,
                rekey_after_bytes: keys.rekey_after_bytes,
                ..SecureConfig::new(keys.private_key.clone(), keys.peer_public_key)
            },
            monitor: monitor.clone(),
        })
    }
}

/// The link's UDP path from `udp` to the far gateway's `peer`: sealed by
/// the secure link, or plain and taking the peer's datagrams alone (a
/// plain link has a peer: the configuration asks for one).
pub(crate) fn udp_link(
    udp: std::net::SocketAddr,
    peer: Option<std::net::SocketAddr>,
    security: &Security,
    watch: &LinkWatch,
) -> Result<UdpPath, NetError> {
    let path = UdpPath::bind(udp, peer)?;
    match security.link_security(&watch.secure) {
        Some(sealed) => path.secured(sealed),
        None => path.only_from_peer(watch.strangers.clone()),
    }
}

/// The link's bundle of channels, each channel's datagrams sealed by the
/// secure link, or plain (each channel's socket takes its peer's
/// datagrams alone).
pub(crate) fn bundle_link(
    bundle: &Bundle,
    monitor: BundleMonitor,
    security: &Security,
    watch: &LinkWatch,
) -> Result<BundlePath, NetError> {
    let path = scps_net::open_bundle(bundle, monitor)?;
    match security.link_security(&watch.secure) {
        Some(sealed) => path.secured(sealed),
        None => Ok(path),
    }
}
