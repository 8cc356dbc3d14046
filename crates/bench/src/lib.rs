//! `scps bench`: the papers' experiments as sweeps of stacks, in the
//! simulator and in the testbed (network namespaces, the live emulator,
//! real programs), recorded run by run so that a
//! bench can stop and resume or run in shards, and shown as a table and
//! as a report in the manner of the papers.

pub mod figures;
pub mod headline;
pub mod merge;
pub mod plan;
pub mod prerequisites;
pub mod progress;
pub mod record;
pub mod report;
pub mod run;
pub mod session;
mod shown;
pub mod stack;
pub mod store;
pub mod table;
pub mod testbed;

pub use plan::{Job, Plan, PlanError, Request, Shard};
pub use record::Record;
pub use session::{
    BenchError, BenchOutcome, BenchRequest, Event, Invocation, Observer, ObserverError, ScenarioOutcome,
    Tables, execute, merge_dirs,
};
pub use stack::{Stack, World};
