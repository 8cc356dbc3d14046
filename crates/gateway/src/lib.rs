//! The gateway (docs/gateway.md; docs/architecture.md, "On a real network,
//! through two gateways"): two of them split each TCP
//! connection, kernel TCP on each LAN side and SCPS-TP across the link,
//! so that applications never know they are there.
//!
//! This crate is the gateway as a library; `scps gateway` only parses its
//! arguments and wires it up. Built so far:
//!
//! - [`pump`]: runs the sans-IO relay (scps-relay, shared with the
//!   simulator's gateway nodes) on tokio between a kernel socket and a
//!   stream of ours;
//! - [`request`] and [`explicit`]: the explicit modes' link connections
//!   (no root): the request naming the destination, the client gateway's
//!   half and the far gateway's; [`socks`], the SOCKS5 server;
//! - [`transparent`]: the transparent mode's kernel plumbing (TPROXY,
//!   policy routing into a TUN device) and its relays, all deciding by
//!   one route table (scps-relay's `routes`, read from `[[route]]` by
//!   scps-config's);
//! - [`config`] and [`gateway`]: `scps gateway --config FILE`, and
//!   [`run`], how that command runs one until a signal stops it;
//! - operations: [`counters`], [`registry`] (the split connections held
//!   now), `metrics.rs` (Prometheus over HTTP, `http.rs`) and [`control`]
//!   (the socket `scps status` asks), the last two served by `exchange.rs`,
//!   and [`netns`] (the network namespace a gateway says it runs in).
//!
//! The gateway as a sans-IO node for the simulator is in scps-relay too,
//! with the routes it decides by.

pub mod clients;
pub mod config;
pub mod control;
pub mod counters;
pub mod descriptors;
pub mod exchange;
pub mod explicit;
pub mod gateway;
pub mod handshakes;
pub mod http;
pub mod keys;
mod metrics;
pub mod netns;
pub mod pump;
pub mod registry;
pub mod request;
pub mod run;
pub mod security;
pub mod socks;
pub mod status;
pub mod transparent;
