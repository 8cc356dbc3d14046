//! The receiving end of a session, and the end that asks (get, list,
//! delete): repeats its REQUEST until answered, writes DATA at its offset
//! into a partial file (or a listing in memory), reports holes in STATUS
//! when asked and on its own timer while any remain, and finishes when it
//! holds every byte and the checksum matches.
//!
//! A receiver whose partial file already holds data (it restarted
//! mid-transfer) says so in its first STATUS, so the sender re-sends only
//! what is missing.
//!
//! It fails once it has made no progress (its METADATA, new bytes, its
//! answer) for the inactivity timeout, however much the peer sends: a
//! peer answering a GET with a bare SUCCESS would otherwise have it
//! repeat its REQUEST for ever.

use std::time::Duration;

use scps_node::Instant;

use super::config::Config;
use super::event::{Event, FailReason, Operation, TransferId};
use super::outbox::Outbox;
use super::ranges::RangeSet;
use super::sender::stuck_for;
use super::store::{PartialId, Store, StoreError, checksum_of};
use crate::wire::{
    Checksum, Data, DirEntry, ErrorCode, Frame, Hole, Metadata, Status, TransferType, progress_to_wire,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Waiting for the answer to our REQUEST (METADATA, or a STATUS for
    /// a delete or an error).
    Requesting,
    Receiving,
    /// Finished; still answers requests for STATUS with the final one
    /// until the linger ends.
    Done {
        until: Instant,
    },
}

#[derive(Debug)]
pub(crate) struct Receiver {
    pub id: TransferId,
    pub operation: Operation,
    /// Store name to write (a file), or the name asked for.
    name: String,
    request: Option<Vec<u8>>,
    state: State,
    size: u64,
    checksum: Checksum,
    /// A directory listing being received, in memory.
    listing: Option<Vec<u8>>,
    have: RangeSet,
    last_offset: u64,
    /// Whether the peer has sent anything for the session.
    heard: bool,
    /// When the peer was last heard from (or the start), and when the
    /// transfer last advanced.
    last_heard: Instant,
    last_progress: Instant,
    next_timer: Option<Instant>,
    interval: Duration,
    /// Progress last reported in an event.
    reported: u64,
    pub removed: bool,
    /// The error code the transfer was aborted with, told to the peer.
    pub refused: Option<ErrorCode>,
    /// Whether the store holds its partial file open (from the METADATA
    /// until the file is committed or discarded).
    partial_open: bool,
    succeeded: bool,
}

impl Receiver {
    /// A receiver that asks first: `request` is the REQUEST frame.
    pub fn requesting(
        now: Instant,
        id: TransferId,
        operation: Operation,
        name: &str,
        request: Vec<u8>,
        config: &Config,
        out: &mut Outbox,
    ) -> Receiver {
        out.control.push_back((id.peer, request.clone()));
        out.event(Event::Started {
            id,
            operation,
            name: name.to_owned(),
            size: 0,
        });
        Receiver {
            request: Some(request),
            state: State::Requesting,
            next_timer: Some(now + config.status_interval),
            ..Receiver::new(now, id, operation, name, config)
        }
    }

    /// A receiver for a transfer a peer starts (its METADATA came first).
    pub fn incoming(now: Instant, id: TransferId, name: &str, config: &Config) -> Receiver {
        Receiver::new(now, id, Operation::Receive, name, config)
    }

    fn new(now: Instant, id: TransferId, operation: Operation, name: &str, config: &Config) -> Receiver {
        Receiver {
            id,
            operation,
            name: name.to_owned(),
            request: None,
            state: State::Requesting,
            size: 0,
            checksum: Checksum::None,
            listing: None,
            have: RangeSet::new(),
            last_offset: 0,
            heard: false,
            last_heard: now,
            last_progress: now,
            next_timer: None,
            interval: config.status_interval,
            reported: 0,
            removed: false,
            refused: None,
            partial_open: false,
            succeeded: false,
        }
    }

    /// The partial file it leaves open in the store, once removed without
    /// its file (failed, timed out, displaced): the store may close it.
    pub fn partial_left(&self) -> Option<&str> {
        (self.removed && self.partial_open).then_some(self.name.as_str())
    }

    /// Whether the file (or listing, or delete) came whole since this was
    /// last asked: the peer is one that answers from where it says it is.
    pub fn take_success(&mut self) -> bool {
        std::mem::take(&mut self.succeeded)
    }

    /// When the peer was last heard from.
    pub fn last_heard(&self) -> Instant {
        self.last_heard
    }

    /// Ends a transfer a peer started to make room for another: the
    /// sender hears "receiver not interested".
    pub fn displace(&mut self, out: &mut Outbox) {
        self.abort(ErrorCode::RX_NOT_INTERESTED, FailReason::Displaced, out);
    }

    /// Whether it waits for the METADATA that answers its REQUEST for data
    /// (not a delete's): DATA that comes before it is kept by the engine,
    /// to be written once it comes.
    pub fn awaiting_metadata(&self) -> bool {
        self.state == State::Requesting && self.operation != Operation::Delete
    }

    /// The store name this receiver writes, while it may still write it.
    pub fn writing(&self) -> Option<&str> {
        let file = !matches!(self.operation, Operation::List | Operation::Delete);
        (file && !matches!(self.state, State::Done { .. }) && !self.removed).then_some(self.name.as_str())
    }

    pub fn handle_metadata<S: Store>(
        &mut self,
        now: Instant,
        metadata: &Metadata,
        config: &Config,
        store: &mut S,
        out: &mut Outbox,
    ) {
        let takes_data = matches!(
            self.operation,
            Operation::Get | Operation::GetDelete | Operation::List | Operation::Receive
        );
        if !takes_data {
            // A delete asked for no data: nothing a METADATA announces for
            // its session is stored.
            *out.stats.refused.entry("unrequested_metadata").or_default() += 1;
            out.send(
                self.id.peer,
                &Frame::Status(Status::error(self.id.session, ErrorCode::BAD_REQUEST)),
            );
            return;
        }
        self.heard(now, config);
        if self.state != State::Requesting {
            // A repeat: the sender did not hear that it arrived.
            self.send_status(true, self.last_offset, config, out);
            return;
        }
        self.size = metadata.entry.size;
        self.checksum = metadata.checksum;
        let listing = self.operation == Operation::List;
        if listing != (metadata.transfer_type == TransferType::Directory) {
            self.abort(
                ErrorCode::BAD_REQUEST,
                FailReason::Peer(ErrorCode::BAD_REQUEST),
                out,
            );
            return;
        }
        if listing {
            if self.size > config.max_listing_bytes {
                self.abort(
                    ErrorCode::FILE_TOO_BIG,
                    FailReason::BadListing(format!("{} bytes", self.size)),
                    out,
                );
                return;
            }
            self.listing = Some(vec![0; self.size as usize]);
        } else if self.size > config.max_file_bytes {
            *out.stats.refused.entry("file_too_big").or_default() += 1;
            self.abort(
                ErrorCode::FILE_TOO_BIG,
                FailReason::Store(StoreError::TooBig(format!(
                    "{} bytes, more than max_file_bytes",
                    self.size
                ))),
                out,
            );
            return;
        } else {
            let id = PartialId {
                size: self.size,
                mtime: metadata.entry.mtime,
                checksum: metadata.checksum,
            };
            match store.open_partial(&self.name, &id) {
                Ok(ranges) => {
                    self.have = ranges.into_iter().collect();
                    self.partial_open = true;
                }
                Err(error) => {
                    self.abort(store_code(&error), FailReason::Store(error), out);
                    return;
                }
            }
        }
        self.state = State::Receiving;
        self.last_progress = now;
        // Reports start now, DATA or not: a sender that lost every frame
        // (or, like Vallona, never asks) still hears what is missing.
        self.next_timer = Some(now + self.interval);
        if self.operation == Operation::Receive {
            out.event(Event::Started {
                id: self.id,
                operation: self.operation,
                name: self.name.clone(),
                size: self.size,
            });
        }
        let resumed = self.have.len();
        if resumed > 0 {
            out.event(Event::Resumed {
                id: self.id,
                bytes: resumed,
            });
            self.send_status(true, self.last_offset, config, out);
        }
        self.check_complete(now, config, store, out);
    }

    pub fn handle_data<S: Store>(
        &mut self,
        now: Instant,
        data: &Data<'_>,
        config: &Config,
        store: &mut S,
        out: &mut Outbox,
    ) {
        self.heard(now, config);
        if self.state != State::Receiving {
            // Before the METADATA, the STATUS says it is missing (so the
            // sender sends it; the engine keeps the DATA meanwhile); once
            // done, it is the final one again.
            if data.request_status {
                self.send_status(false, data.offset, config, out);
            }
            return;
        }
        let end = data.offset.saturating_add(data.payload.len() as u64);
        if end > self.size {
            *out.stats.malformed.entry("beyond_end").or_default() += 1;
            return;
        }
        let range = data.offset..end;
        let new = self.have.gaps(range.clone());
        let fresh: u64 = new.iter().map(|r| r.end - r.start).sum();
        out.stats.data_bytes_received += data.payload.len() as u64;
        out.stats.duplicate_bytes_received += data.payload.len() as u64 - fresh;
        for piece in new {
            let bytes =
                &data.payload[(piece.start - data.offset) as usize..(piece.end - data.offset) as usize];
            let written = match &mut self.listing {
                Some(listing) => {
                    listing[piece.start as usize..piece.end as usize].copy_from_slice(bytes);
                    Ok(())
                }
                None => store.write_partial(&self.name, piece.start, bytes),
            };
            if let Err(error) = written {
                if matches!(error, StoreError::NoSpace(_)) {
                    // What it took is given back, or the disk stays full.
                    let _ = store.discard_partial(&self.name);
                    self.partial_open = false;
                }
                self.abort(store_code(&error), FailReason::Store(error), out);
                return;
            }
            self.have.insert(piece);
        }
        if fresh > 0 {
            self.last_progress = now;
        }
        self.last_offset = data.offset;
        if self.check_complete(now, config, store, out) {
            return;
        }
        if data.request_status {
            self.send_status(false, data.offset, config, out);
        }
    }

    /// A STATUS to the asking end: the answer to a delete, or an error.
    pub fn handle_status(&mut self, now: Instant, status: &Status, config: &Config, out: &mut Outbox) {
        // Not progress, nor a reason to repeat the REQUEST sooner: only an
        // error or a delete's answer ends the wait.
        self.last_heard = now;
        self.heard = true;
        if matches!(self.state, State::Done { .. }) {
            return;
        }
        if !status.error.is_success() {
            self.finish(now, config);
            out.event(Event::Failed {
                id: self.id,
                reason: FailReason::Peer(status.error),
            });
        } else if self.operation == Operation::Delete {
            self.finish(now, config);
            self.succeeded = true;
            out.event(Event::Completed {
                id: self.id,
                operation: Operation::Delete,
                name: self.name.clone(),
                size: 0,
            });
        }
    }

    fn heard(&mut self, now: Instant, config: &Config) {
        self.heard = true;
        self.last_heard = now;
        self.interval = config.status_interval;
        if self.state == State::Receiving {
            self.next_timer = Some(now + self.interval);
        }
    }

    fn finish(&mut self, now: Instant, config: &Config) {
        self.state = State::Done {
            until: now + config.inactivity_timeout,
        };
        self.next_timer = None;
        self.request = None;
    }

    /// Fails the transfer and tells the sender why.
    fn abort(&mut self, code: ErrorCode, reason: FailReason, out: &mut Outbox) {
        self.removed = true;
        self.refused = Some(code);
        out.send(self.id.peer, &Frame::Status(Status::error(self.id.session, code)));
        out.event(Event::Failed { id: self.id, reason });
    }

    /// Finishes if every byte is here: verifies, commits, reports.
    fn check_complete<S: Store>(
        &mut self,
        now: Instant,
        config: &Config,
        store: &mut S,
        out: &mut Outbox,
    ) -> bool {
        if self.state != State::Receiving || self.have.prefix() < self.size {
            return false;
        }
        let verified = match &self.listing {
            Some(listing) => Ok(Checksum::of(self.checksum.kind(), listing)),
            None => checksum_of(self.checksum.kind(), self.size, |offset, buf| {
                store.read_partial(&self.name, offset, buf)
            }),
        };
        let verified = match verified {
            Ok(sum) if sum == self.checksum => Ok(()),
            Ok(_) => Err((ErrorCode::UNSPECIFIED, FailReason::ChecksumMismatch)),
            Err(error) => Err((store_code(&error), FailReason::Store(error))),
        };
        let committed = verified.and_then(|()| match self.listing.take() {
            Some(listing) => DirEntry::parse_listing(&listing)
                .map(|entries| Event::Listing {
                    id: self.id,
                    dir: self.name.clone(),
                    entries,
                })
                .map_err(|error| (ErrorCode::BAD_PACKET, FailReason::BadListing(error.to_string()))),
            None => store
                .commit(&self.name)
                .map(|()| Event::Completed {
                    id: self.id,
                    operation: self.operation,
                    name: self.name.clone(),
                    size: self.size,
                })
                .map_err(|error| (store_code(&error), FailReason::Store(error))),
        });
        match committed {
            Ok(event) => {
                self.partial_open = false;
                self.succeeded = true;
                self.finish(now, config);
                // Sent unasked: it lists no hole, which is all the sender needs.
                self.send_status(true, self.last_offset, config, out);
                out.event(event);
            }
            Err((code, reason)) => {
                if self.operation != Operation::List {
                    let _ = store.discard_partial(&self.name);
                    self.partial_open = false;
                }
                self.abort(code, reason, out);
            }
        }
        true
    }

    fn send_status(&mut self, voluntary: bool, in_response_to: u64, config: &Config, out: &mut Outbox) {
        let descriptor = super::descriptor_for(self.size.max(in_response_to));
        let mut status = Status {
            descriptor,
            session: self.id.session,
            timestamp: None,
            metadata_received: self.state != State::Requesting,
            all_holes: true,
            voluntary,
            error: ErrorCode::SUCCESS,
            progress: progress_to_wire(self.have.prefix()),
            in_response_to,
            holes: Vec::new(),
        };
        let prefix = self.have.prefix();
        if prefix > self.reported {
            self.reported = prefix;
            out.event(Event::Progress {
                id: self.id,
                bytes: prefix,
                size: self.size,
            });
        }
        if status.metadata_received {
            let room = config.max_datagram.saturating_sub(8 + 2 * descriptor.byte_len());
            let max_holes = (room / (2 * descriptor.byte_len())).max(1);
            let gaps = self.have.gaps(0..self.size);
            status.all_holes = gaps.len() <= max_holes;
            status.holes = gaps
                .into_iter()
                .take(max_holes)
                .filter_map(Hole::from_range)
                .collect();
        }
        out.send(self.id.peer, &Frame::Status(status));
    }

    pub fn poll_timeout(&self, config: &Config) -> Option<Instant> {
        match self.state {
            State::Done { until } => Some(until),
            _ => {
                let deadline = self.last_progress + config.inactivity_timeout;
                Some(self.next_timer.map_or(deadline, |t| t.min(deadline)))
            }
        }
    }

    pub fn handle_timeout(&mut self, now: Instant, config: &Config, out: &mut Outbox) {
        if let State::Done { until } = self.state {
            self.removed = now >= until;
            return;
        }
        if let Some(stuck) = stuck_for(now, self.last_progress, config) {
            let reason = match self.heard {
                true => FailReason::Stalled(stuck),
                false => FailReason::Timeout(now.saturating_since(self.last_heard)),
            };
            self.removed = true;
            out.event(Event::Failed { id: self.id, reason });
            return;
        }
        if self.next_timer.is_none_or(|at| at > now) {
            return;
        }
        match (&self.request, self.state) {
            (Some(request), State::Requesting) => out.control.push_back((self.id.peer, request.clone())),
            (_, State::Receiving) => self.send_status(true, self.last_offset, config, out),
            _ => {}
        }
        // Saturating: any interval the configuration allows is safe.
        self.interval = self.interval.saturating_mul(2).min(config.status_interval_max);
        self.next_timer = Some(now + self.interval);
    }
}

/// The STATUS error code for a store's refusal.
pub(crate) fn store_code(error: &StoreError) -> ErrorCode {
    match error {
        StoreError::NotFound(_) => ErrorCode::FILE_NOT_FOUND,
        StoreError::Denied(_) => ErrorCode::ACCESS_DENIED,
        // The drafts have no code of their own for a full disk: the file
        // is too big for the room there is.
        StoreError::TooBig(_) | StoreError::NoSpace(_) => ErrorCode::FILE_TOO_BIG,
        StoreError::Io(_) => ErrorCode::UNSPECIFIED,
    }
}
