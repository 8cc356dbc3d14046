//! Saratoga: rate-based, NACK-repaired file delivery over UDP
//! (docs/spec/saratoga.md; the IETF Internet-Draft
//! draft-wood-tsvwg-saratoga-22).
//!
//! [`wire`] reads and writes the five frames to the byte. The transfer
//! [`engine`] is sans-IO like `scps-proto`: it takes `(now, datagram)` and
//! `(now)` and gives back datagrams and its next wake-up, never touching
//! a socket, a thread or a clock; files come and go through a
//! [`engine::Store`]. As a [`node::SaratogaNode`] it is a node of one
//! interface carrying IP/UDP packets, for the simulator and any driver
//! of nodes (on kernel sockets, `scps-saratoga-net`).
//!
//! What is not implemented (yet):
//!
//! - BEACON frames are read and written but neither sent nor acted on by
//!   the engine; peers are addressed directly.
//! - Timestamps are carried as the drafts' 16 opaque bytes and not used;
//!   UDP-Lite, streams and bundles are flags only; PUT+DELETE is answered
//!   like PUT; 128-bit descriptors are refused.
//! - Rate adaptation (the congestion-control companion draft): the rate
//!   is fixed per engine.
//! - The sender settles what arrived assuming an in-order path; a path
//!   that reorders costs re-sent bytes (counted), not transfers.
//! - The node ([`node::SaratogaNode`]) neither fragments nor reassembles,
//!   and reads no IPv6 extension headers.
//! - A session is named by the peer's address and id: a GET we asked for
//!   and a PUT the same peer starts with the same id would collide (our
//!   ids count up from [`engine::Config::first_session`], skipping those
//!   in use or remembered with that peer).
//! - A put asks with a PUT REQUEST first ([`engine::Engine::put_requested`])
//!   or goes blind ([`engine::Engine::put`]); whether Vallona answers a PUT
//!   REQUEST is not known here, so a put to it may have to go blind.

pub mod engine;
pub mod node;
pub mod wire;
