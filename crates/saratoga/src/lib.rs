//! Saratoga: rate-based, NACK-repaired file delivery over UDP
//! (spec/saratoga.md; IETF drafts draft-wood-tsvwg-saratoga).
//!
//! [`wire`] reads and writes the five frames to the byte. The transfer
//! [`engine`] is sans-IO like `scps-proto`: it takes `(now, datagram)` and
//! `(now)` and gives back datagrams and its next wake-up, never touching
//! a socket, a thread or a clock; files come and go through a
//! [`engine::Store`].

pub mod engine;
pub mod wire;
