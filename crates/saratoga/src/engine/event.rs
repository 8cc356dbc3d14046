//! What an engine tells its user: transfers starting, progressing,
//! ending; and the counters it keeps.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use super::store::StoreError;
use crate::wire::{DirEntry, ErrorCode};

/// Which end of a session this engine is, for the user: the engine itself
/// keys sessions by peer and id alone (see the engine's notes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    /// We send the data (a put, or a get served).
    Sender,
    /// We receive the data, or asked for something (get, list, delete).
    Receiver,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TransferId {
    pub peer: SocketAddr,
    pub session: u32,
    pub role: Role,
}

/// What a transfer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Put,
    Get,
    GetDelete,
    Delete,
    List,
    /// A peer's GET (or GET+DELETE) we serve.
    Serve,
    /// A peer's directory listing request we serve.
    ServeList,
    /// A file a peer sends us.
    Receive,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// A transfer began. `size` is 0 for a request, whose size is not
    /// known until its METADATA comes (a get's receiving end then says
    /// nothing more until Progress).
    Started {
        id: TransferId,
        operation: Operation,
        name: String,
        size: u64,
    },
    /// Bytes known to be at the receiver from the start without a gap.
    Progress {
        id: TransferId,
        bytes: u64,
        size: u64,
    },
    /// A receiver found this much of the file already stored and resumes
    /// after it.
    Resumed {
        id: TransferId,
        bytes: u64,
    },
    Completed {
        id: TransferId,
        operation: Operation,
        name: String,
        size: u64,
    },
    Listing {
        id: TransferId,
        dir: String,
        entries: Vec<DirEntry>,
    },
    Failed {
        id: TransferId,
        reason: FailReason,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FailReason {
    #[error("the peer answered with error {0}")]
    Peer(ErrorCode),
    /// Nothing came from the peer for this transfer, for this long since
    /// it started: the peer is unreachable, or does not speak Saratoga.
    #[error("the peer was silent for {0:?}")]
    Timeout(Duration),
    /// The peer answered, but the transfer made no progress (no more
    /// bytes acknowledged, no other holes, no new data) for this long,
    /// whether the peer fell silent or kept sending.
    #[error("no progress for {0:?}: the peer answered, but the transfer did not advance")]
    Stalled(Duration),
    /// A sender's peer answered (a REQUEST, or with a STATUS) but sent no
    /// STATUS acknowledging the whole file: `acked` bytes of `size` were
    /// acknowledged from the start, and no more for `stuck`. The file may
    /// or may not be stored there; only such a STATUS would say.
    #[error(
        "the peer answered, but sent no status covering the file: {acked} of {size} bytes acknowledged, none more for {stuck:?}"
    )]
    Unacknowledged { acked: u64, size: u64, stuck: Duration },
    /// A STATUS for the session acknowledged bytes past the end of the
    /// file sent (`progress`, as on the wire, in either reading of it):
    /// it is about another transfer, such as one the peer finished
    /// earlier under the same session id, and says nothing of this one.
    #[error(
        "the peer's status reaches byte {progress} of a {size}-byte file: it is about another transfer (an earlier session with the same id?)"
    )]
    ForeignStatus { progress: u64, size: u64 },
    #[error("the file's checksum does not match the one sent")]
    ChecksumMismatch,
    #[error("store: {0}")]
    Store(StoreError),
    #[error("directory listing: {0}")]
    BadListing(String),
    /// Ended to make room for a peer that had completed a transfer before,
    /// every place being taken (`Config::max_receivers`).
    #[error("ended to make room for a known peer's transfer (every place was taken)")]
    Displaced,
}

/// Counters, for reports and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub datagrams_in: u64,
    pub datagrams_out: u64,
    /// Malformed frames dropped, by [`crate::wire::WireError::cause`].
    pub malformed: BTreeMap<&'static str, u64>,
    /// Frames for no session we know.
    pub unknown_session: u64,
    /// DATA payload bytes dropped for want of their session or of its
    /// METADATA (lost, or this end restarted): the sender sends them again.
    pub orphan_data_bytes: u64,
    /// DATA payload bytes dropped because their session was refused
    /// (answered with its error code, not sent again).
    pub refused_data_bytes: u64,
    /// DATA payload bytes that came before their METADATA in a known
    /// session and were kept for it ([`super::Config::max_early_data_bytes`]).
    pub early_data_bytes: u64,
    /// Such DATA payload bytes dropped: beyond that bound, or kept for a
    /// session that ended without its METADATA.
    pub early_data_dropped_bytes: u64,
    pub data_frames_sent: u64,
    /// DATA payload bytes sent, first sends and re-sends.
    pub data_bytes_sent: u64,
    pub data_bytes_resent: u64,
    pub data_bytes_received: u64,
    /// DATA payload bytes that arrived for ranges already held.
    pub duplicate_bytes_received: u64,
    pub status_sent: u64,
    pub status_received: u64,
    /// Sessions peers started that were refused, by cause (the limits of
    /// [`super::Config`]; `after_refusal`: a METADATA repeated for a
    /// session already refused).
    pub refused: BTreeMap<&'static str, u64>,
    /// Past sessions forgotten early to keep that memory within
    /// [`super::Config::max_remembered`].
    pub forgotten: u64,
}
