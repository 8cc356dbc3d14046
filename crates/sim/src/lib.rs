//! The simulator: a discrete-event world in virtual time where endpoints of
//! the engine talk over the channel models, running the scenario
//! workloads (bulk transfers, message streams, file fetches). Runs are
//! deterministic: the same point and seed give the same result, bit for
//! bit.

pub mod apps;
mod build;
pub mod host;
pub mod ideal;
pub mod record;
pub mod result;
pub mod run;
mod saratoga;
mod summary;
pub mod sweep;
mod tally;
pub mod world;

pub use build::SERVER_PORT;
pub use host::Host;
pub use record::{GatewayFigures, RunRecord};
pub use result::RunResult;
pub use run::{RunFailure, RunOptions, SimError, run, run_record, run_record_guarded};
pub use scps_channel::derive_seed;
pub use summary::{padded_columns, rate, summary};
pub use world::{App, NodeInterface, Outcome, World};
