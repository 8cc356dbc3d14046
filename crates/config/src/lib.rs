//! The one configuration schema of the project (DESIGN.md "Conventions"):
//! quantities in human units, links, TCP and SCPS-TP settings, and
//! scenarios with their sweeps. Everything is checked before anything runs;
//! an error names the key, the value and what is allowed.

mod error;
pub mod link;
pub mod protocol;
pub mod scenario;
pub mod stack;
pub mod sweep;
pub mod tcp;
pub mod topology;
pub mod units;
pub mod workload;

pub use error::{Error, deserialize};
pub use link::Direction;
pub use protocol::Protocol;
pub use scenario::{Point, Scenario};
pub use workload::{Fetches, MessageFlow, Workload};
