//! Which stack carries a transfer, over which path.

use std::net::{IpAddr, SocketAddr};

#[derive(Debug, Clone)]
pub enum Transport {
    /// Our stack, each IP packet in a UDP datagram; `peer` is the other
    /// end's UDP address (a receiver learns it from what arrives).
    Udp {
        bind: SocketAddr,
        peer: Option<SocketAddr>,
        encapsulation: Encapsulation,
    },
    /// Our stack on a bundle of UDP channels (those of the engine's
    /// options, or of the configuration's `[bundle]`), with a hook
    /// command over the configuration's.
    Bundle { hook: Option<String> },
    /// Our stack on TUN device `name`, answering to `addrs` (each routed to
    /// the device with its prefix).
    Tun { name: String, addrs: Vec<(IpAddr, u8)> },
    /// The kernel's TCP, with this congestion controller (the system's
    /// default if none).
    Tcp { congestion: Option<String> },
}

/// How the UDP path wraps our packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Encapsulation {
    /// Ours: each packet followed by its frame check
    /// (`scps_net::frame_check`, a CRC-32C).
    #[default]
    Scps,
    /// The SCPS RI's, to interoperate with it: IPv4 only, SCPS-TP as IP
    /// protocol 106, no trailer, [`RI_UDP_PORT`] at both ends
    /// (docs/spec/scps-tp-options.md, "The RI's UDP encapsulation").
    Ri,
}

/// The UDP port of the SCPS RI's encapsulation, both ways.
pub const RI_UDP_PORT: u16 = 7168;

impl Transport {
    /// The label of results: which stack, over which path.
    pub fn label(&self) -> &'static str {
        match self {
            Transport::Udp { .. } => "scps-udp",
            Transport::Bundle { .. } => "scps-bundle",
            Transport::Tun { .. } => "scps-tun",
            Transport::Tcp { .. } => "tcp",
        }
    }
}
