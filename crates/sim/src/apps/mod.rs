//! The applications of the workloads, and what they share with the run
//! that installed them.

pub mod bulk;
pub mod fetch;
pub mod messages;
mod stream;

pub use stream::{StreamReader, StreamWriter};
