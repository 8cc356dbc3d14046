//! The sans-IO half of the gateway: what the real gateway (scps-gateway,
//! on tokio and the kernel) and the simulator share, with no sockets, no
//! clocks and no kernel.
//!
//! - [`relay`]: the relay between the two halves of a split connection,
//!   the LAN connection and the link connection;
//! - [`node`]: the transparent gateway as a sans-IO node for the
//!   simulator, the same relay between two engine endpoints.

pub mod node;
pub mod relay;

pub use relay::{Action, OpenFailure, Outcome, Relay, RelayConfig, Resource, Side};
