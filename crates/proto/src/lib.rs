//! Sans-IO SCPS-TP.
//!
//! Nothing in this crate touches a socket, a thread or a wall clock: the
//! caller hands in packets and the current [`time::Instant`], and takes out
//! packets to send and the next instant it wants to be woken. The same code
//! therefore runs in the simulator (virtual time), in the testbed and on real
//! networks.

pub use scps_node::time;
pub mod wire;

pub mod cc;
pub mod config;
pub mod connection;
pub mod endpoint;
pub mod recovery;
mod seq;

pub use config::Config;
pub use connection::{
    ANSWERS_PER_SECOND, Connection, ConnectionError, ConnectionStats, DESYNC_LIMIT, Event, FourTuple,
    PathCapacity, REUSE_AFTER, State, StreamError,
};
pub use endpoint::{
    ConfigChooser, ConnectionHandle, Endpoint, EndpointConfig, EndpointError, EndpointStats,
    MAX_ANSWERS_WAITING, TransparentListenerId,
};
/// The prefixes of transparent addressing ([`EndpointConfig::transparent`]).
pub use scps_node::IpPrefix;
