//! The secure link between two gateways (docs/secure-link.md), sans-IO:
//! what a path between two of our gateways wraps around every datagram,
//! so that only the far gateway can put packets on the link, nothing it
//! sent can be read, altered or replayed, and a rekey loses nothing.
//!
//! - [`keys`]: Curve25519 static keys in base64;
//! - [`frame`]: the three messages on the wire;
//! - `replay.rs`: the window of counters taken;
//! - `session.rs`: one session's keys and counters;
//! - [`link`]: the handshakes, sessions and rekeys, driven like the
//!   engine: datagrams and instants in, datagrams and a wake-up out.

pub mod frame;
pub mod keys;
pub mod link;
mod replay;
mod session;

pub use frame::{Frame, FrameError, OVERHEAD};
pub use keys::{KeyError, PrivateKey, PublicKey};
pub use link::{
    AuthFailure, HELD_PACKETS, INITIATIONS_PER_SECOND, Opened, REKEY_AFTER, REKEY_AFTER_BYTES, SecureConfig,
    SecureError, SecureLink, SecureStats, Unsealed,
};
pub use replay::WINDOW as REPLAY_WINDOW;

pub(crate) use link::noise_params;
