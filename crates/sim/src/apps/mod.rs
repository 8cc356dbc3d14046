//! The applications of the workloads, and what they share with the run
//! that installed them.

pub mod bulk;
pub mod fetch;
pub mod messages;
pub mod shared_link;
mod stream;

pub use stream::{StreamReader, StreamWriter};
