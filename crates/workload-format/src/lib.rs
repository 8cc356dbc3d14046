//! The formats the workloads share in virtual time and on real links:
//! the simulator's applications (scps-sim) and `scps send`/`scps recv`
//! (scps-workload) write, check and report the same bytes and figures.
//!
//! - [`payload`]: stream content both ends compute, checked byte for
//!   byte;
//! - [`message`]: the timestamped messages of a message stream;
//! - [`figures`]: a message stream's figures and the percentiles they
//!   are made of.

pub mod figures;
pub mod message;
pub mod payload;
