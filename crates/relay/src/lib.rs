//! The sans-IO half of the gateway: what the real gateway (scps-gateway,
//! on tokio and the kernel) and the simulator share, with no sockets, no
//! clocks and no kernel.
//!
//! - [`relay`]: the relay between the two halves of a split connection,
//!   the LAN connection and the link connection;
//! - [`routes`]: which connections a gateway carries, and with what
//!   settings: the one decision every part of the gateway follows;
//! - [`node`]: the transparent gateway as a sans-IO node for the
//!   simulator, the same relay between two engine endpoints, deciding by
//!   the same routes.

pub mod node;
pub mod relay;
pub mod routes;

pub use relay::{Action, OpenFailure, Outcome, Relay, RelayConfig, Resource, Side};
pub use routes::{Carried, Decision, Route, RouteMatch, RouteTable, Routes};
