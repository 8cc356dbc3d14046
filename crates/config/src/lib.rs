//! The one configuration schema of the project (docs/configuration.md):
//! quantities in human units, links, TCP and SCPS-TP settings, and
//! scenarios with their sweeps. Everything is checked before anything runs;
//! an error names the key, the value and what is allowed.

pub mod bundle;
mod error;
pub mod gateways;
pub mod link;
pub mod protocol;
pub mod routes;
pub mod scenario;
pub mod stack;
pub mod sweep;
pub mod tcp;
pub mod text_file;
pub mod topology;
pub mod units;
pub mod workload;

pub use error::{Error, deserialize};
pub use link::Direction;
pub use protocol::Protocol;
pub use scenario::{Point, Scenario};
pub use workload::{Fetches, MessageFlow, Workload};

/// Whether Linux takes `name` for a network interface: 1 to 15 bytes
/// (IFNAMSIZ less its terminator), not `.` or `..`, no `/`, `:` or
/// whitespace.
pub fn is_interface_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 15
        && name != "."
        && name != ".."
        && !name.chars().any(|c| c == '/' || c == ':' || c.is_whitespace())
}
