//! Channel bonding as sans-IO code (docs/bonding.md): one path striped over
//! several channels (modems, circuits, UDP paths) in proportion to what
//! each delivers, with light probes on every channel so that a channel
//! that dropped its call is taken out of the stripe within two probe
//! intervals, and one far worse than its peers (a marginal circuit, which
//! round-robin keeps feeding) is put on standby until it recovers. No
//! sockets, no clocks: the caller gives the time, the packets and what
//! arrives on each channel, and puts on each channel what the bond gives
//! back; the simulator and the real paths run the same code.

mod bond;
mod channel;
pub mod config;
mod loss;
pub mod node;
mod report;
pub mod wire;

pub use bond::{Bond, BondStats, ChannelReport, Event, Full};
pub use channel::ChannelState;
pub use config::{BondConfig, ConfigError, MarginalThresholds};
pub use node::BondNode;
pub use report::{BondChannelFigures, BondFigures};
