//! The transfers of `scps send` and `scps recv`: the test applications of
//! `scps-workload` over a connection of our stack (routed through a TUN
//! device, UDP-encapsulated, or on a bundle of UDP channels) or of the
//! kernel's TCP, so that one tool measures both.
//!
//! [`Stack`] starts either stack from a [`Transport`] and
//! [`StackOptions`], and connects or listens; [`send::run`] runs a
//! sender's session on one connection and [`recv::serve`] serves a
//! receiver's connections, each with its report. The options of the
//! `scps` binary choose a [`PathChoice`] and a [`send::WorkloadChoice`],
//! which give the transport and the workload or refuse; what [`News`],
//! [`send::Sent`] and [`recv::Served`] tell is [`Said`] here, and ends
//! in an [`Outcome`].

mod acceptor;
mod bundle;
mod conn;
mod engine;
pub mod error_text;
mod kernel;
mod kernel_congestion;
mod path_choice;
mod progress;
pub mod recv;
mod runtime;
mod said;
pub mod send;
mod stack;
mod transport;
mod udp_size;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use scps_workload::report::{BundleChannelFigures, Report};

pub use acceptor::Acceptor;
pub use conn::{Abort, Conn};
pub use engine::{EngineOptions, keepalive_every, tool_keepalive};
pub use path_choice::{PathChoice, Role};
pub use runtime::{interrupts, runtime};
pub use said::{Outcome, Said};
pub use stack::{DEFAULT_BACKLOG, Stack, StackOptions};
pub use transport::{Encapsulation, RI_UDP_PORT, Transport};

/// What a transfer tells its user while it runs, beside its result.
#[derive(Debug)]
pub enum News {
    /// A receiver accepts connections on `port` of its stack, carried by
    /// `path` (a label of [`Transport`]): over the UDP address `udp`, or
    /// over a bundle's `channels`.
    Listening {
        path: &'static str,
        port: u16,
        udp: Option<SocketAddr>,
        channels: Option<Vec<BundleChannelFigures>>,
    },
    /// A receiver removed this partial file of an output, left by a
    /// receiver that is gone.
    StaleRemoved(PathBuf),
    /// A receiver reset a connection from `peer`: it serves as many as it
    /// may already (`serving`).
    Refused { peer: String, serving: u16 },
    /// A receiver served a connection: its report.
    Report(Box<Report>),
    /// A figure of a connection is not known, and why.
    Unknown(String),
}

/// Where a transfer sends its [`News`], from any task.
pub type Tell = Arc<dyn Fn(News) + Send + Sync>;
