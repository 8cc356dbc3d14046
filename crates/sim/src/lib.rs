//! The simulator: a discrete-event world in virtual time where endpoints of
//! the engine talk over the channel models, running the scenario
//! workloads (bulk transfers, message streams, file fetches). Runs are
//! deterministic: the same point and seed give the same result, bit for
//! bit.

pub mod apps;
pub mod message;
pub mod payload;
pub mod result;
pub mod run;
pub mod world;

pub use result::RunResult;
pub use run::{RunOptions, SimError, derive_seed, run};
pub use world::{App, Outcome, World};
