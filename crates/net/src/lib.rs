//! Real I/O for the engine: [`Net`] runs a `scps_proto::Endpoint` on a tokio
//! runtime over a real packet path, and hands out [`Stream`]s (AsyncRead and
//! AsyncWrite) and [`Listener`]s on top of it.
//!
//! Three paths carry the engine's IP packets (docs/spec/README.md,
//! "Carrying IP packets"):
//!
//! - [`TunPath`], *routed*: the endpoint owns a TUN device and the kernel
//!   routes packets to and from it, so its peers can be any host, kernel TCP
//!   included (needs `CAP_NET_ADMIN`, or a user namespace);
//! - [`UdpPath`], *UDP-encapsulated*: each IP packet rides in one UDP
//!   datagram to the peer, with a CRC-32C after it ([`frame_check`]); no
//!   privileges needed;
//! - [`BundlePath`], *bonded*: several UDP channels, each with its own
//!   local address and peer, striped by the bonding scheduler
//!   (`scps_bond`) with per-channel probes.
//!
//! A node that speaks UDP itself (Saratoga's) is hosted by [`NodeHost`]
//! over [`UdpSocketsPath`]: kernel UDP sockets, whose datagrams it sees as
//! the IP/UDP packets that carried them.
//!
//! The driver sleeps until a packet arrives, the application acts, or the
//! engine's next wake-up (`Endpoint::poll_timeout`) comes: it never polls.
//!
//! Off by default, an endpoint can also stand in for other hosts, as a
//! transparent gateway does: [`Net::listen_transparent`] answers as
//! whichever address in its prefixes a client dialled, and
//! [`Net::connect_from`] opens a connection from a chosen address.
//!
//! [`tcp_info`] asks the kernel what it knows of one of its own TCP
//! connections, so that tools can report kernel TCP beside ours.

mod clock;
mod driver;
mod error;
pub mod frame_check;
mod net;
mod node_host;
mod path;
mod shared;
mod stream;
pub mod tcp_info;
mod transparent;

pub use driver::{HostStats, InterfaceStats};
pub use error::NetError;
pub use net::{EndpointWatch, Net, NetOptions, NetStats};
pub use node_host::{HostOptions, NodeHost};
pub use path::{
    BoxedPath, BundleChannelAddrs, BundleEvent, BundleMonitor, BundlePath, BundleReport, DynPath,
    LinkSecurity, PacketPath, RecvBatch, SecureMonitor, SendErrors, StrangerCount, TunPath, UdpPath,
    UdpSocketsPath, open_bundle,
};
pub use stream::{AbortHandle, Listener, Stream};
pub use transparent::TransparentListener;
