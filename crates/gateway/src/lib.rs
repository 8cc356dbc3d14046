//! The gateway (DESIGN.md "The gateway"): two of them split each TCP
//! connection, kernel TCP on each LAN side and SCPS-TP across the link,
//! so that applications never know they are there.
//!
//! This crate is the gateway as a library; `scps gateway` only parses its
//! arguments and wires it up. Built so far: the sans-IO [`relay`] between
//! the two halves of a split connection, the piece the real gateway and
//! the simulator's gateway nodes share.

pub mod relay;

pub use relay::{Action, OpenFailure, Outcome, Relay, RelayConfig, Side};
