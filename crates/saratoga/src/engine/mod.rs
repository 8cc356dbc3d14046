//! The sans-IO transfer engine: every session with every peer, one pacer.
//!
//! Drive it like any node: hand in datagrams with
//! [`Engine::handle_datagram`], call [`Engine::handle_timeout`] when
//! [`Engine::poll_timeout`] says, drain [`Engine::poll_transmit`] and
//! [`Engine::poll_event`]. It never reads a clock: `now` is always given.
//!
//! Sessions are keyed by the peer's address and the session id alone (a
//! frame does not say which end picked the id, so a session we started
//! and one the peer started with the same id would collide; ours count up
//! from [`Config::first_session`], so that an id comes back only after
//! 2³² sessions, and skip ids in use or remembered with that host).
//! METADATA and DATA go to the receiving end, STATUS to the sending end
//! (or, as an error or a delete's answer, to the end that asked).
//!
//! A session we started (a put, or a request of ours) is also found by a
//! frame from another port of the peer's host than the one we sent to:
//! some peers of the drafts' era send from an ephemeral port and listen
//! on 7542 alone. We go on sending to the address we started with.
//!
//! ```
//! use scps_node::Instant;
//! use scps_saratoga::engine::{Config, Engine, Event, MemoryStore};
//!
//! let (a_addr, b_addr) = ("10.0.0.1:7542".parse().unwrap(), "10.0.0.2:7542".parse().unwrap());
//! let mut a = Engine::new(Config::default(), MemoryStore::new()).unwrap();
//! let mut b = Engine::new(Config::default(), MemoryStore::new()).unwrap();
//! a.store_mut().insert("report.txt", b"hello".to_vec(), 0);
//! let mut now = Instant::ZERO;
//! a.put_requested(now, b_addr, "report.txt", "inbox/report.txt").unwrap();
//! // A lossless link with no delay: hand each datagram straight over,
//! // until neither has more to say at `now`.
//! while b.store().contents("inbox/report.txt").is_none() {
//!     let mut quiet = false;
//!     while !quiet {
//!         quiet = true;
//!         while let Some((_, datagram)) = a.poll_transmit(now) {
//!             b.handle_datagram(now, a_addr, &datagram);
//!             quiet = false;
//!         }
//!         while let Some((_, datagram)) = b.poll_transmit(now) {
//!             a.handle_datagram(now, b_addr, &datagram);
//!             quiet = false;
//!         }
//!     }
//!     now = a.poll_timeout().into_iter().chain(b.poll_timeout()).min().unwrap().max(now);
//!     a.handle_timeout(now);
//!     b.handle_timeout(now);
//! }
//! assert!(std::iter::from_fn(|| b.poll_event()).any(|e| matches!(e, Event::Completed { .. })));
//! ```
//!
//! Frames for no session: a METADATA starts a transfer into the store (a
//! put from the peer); a DATA is answered with a STATUS saying the
//! METADATA is missing, so that the sender re-sends it (this is how a
//! receiver restarted mid-transfer finds the transfer again and resumes
//! from its partial file); a STATUS is answered with the error STATUS
//! "unknown session id", unless it is itself an error. Malformed frames
//! are counted by cause in [`Stats::malformed`] and dropped.
//!
//! DATA that comes before the METADATA of a session already known (a
//! PUT REQUEST we accepted, or a REQUEST of ours not yet answered) is
//! answered the same way but kept, within
//! [`Config::max_early_data_bytes`], and written once the METADATA comes:
//! a sender that never re-sends still finishes.
//!
//! A session refused (its PUT REQUEST or METADATA answered with an error,
//! or its receive aborted) stays refused while it is remembered: its
//! METADATA is answered with the same code and starts nothing, its DATA
//! is dropped ([`Stats::refused_data_bytes`]) and answered with the code.
//! A PUT of a name the store refuses, or of a directory, is refused at
//! the REQUEST, before anything is stored.

mod config;
mod disk;
mod early;
mod event;
mod expiring;
mod outbox;
mod pacer;
mod ranges;
mod receiver;
mod sender;
mod store;

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use scps_node::Instant;

pub use config::{Config, ConfigError, KNOWN_PEER_FOR};
pub use disk::{DiskStore, PARTIAL_DIR};
pub use event::{Event, FailReason, Operation, Role, Stats, TransferId};
use store::checksum_of;
pub use store::{FileInfo, ListEntry, MemoryStore, PartialId, Store, StoreError, safe_name};

use crate::wire::{
    Checksum, Data, Descriptor, DirEntry, EntryKind, ErrorCode, Frame, Metadata, Request, RequestType,
    Status, TransferType,
};
use early::EarlyData;
use expiring::Expiring;
use outbox::Outbox;
use pacer::Pacer;
use receiver::{Receiver, store_code};
use sender::{Outgoing, Sender, Source};

type Key = (SocketAddr, u32);

/// The descriptor for frames about a file of `size` bytes: never less than
/// 32 bits, because at 16 bits Vallona's 4 stray STATUS bytes make a whole
/// hole pair (see `wire::Status`), and Vallona answers in our width.
pub fn descriptor_for(size: u64) -> Descriptor {
    Descriptor::fitting(size).max(Descriptor::D32)
}

/// Saratoga transfers to and from any number of peers.
#[derive(Debug)]
pub struct Engine<S: Store> {
    config: Config,
    store: S,
    pacer: Pacer,
    senders: BTreeMap<Key, Sender>,
    receivers: BTreeMap<Key, Receiver>,
    out: Outbox,
    /// Sessions for which we answered a DATA with "metadata missing", and when.
    orphans: Expiring<Instant>,
    /// Requests answered, or sends finished: a repeat gets the same
    /// answer (or none) instead of a second transfer.
    answered: Expiring<ErrorCode>,
    /// Names PUT REQUESTs asked for, until their METADATA comes.
    put_names: Expiring<String>,
    /// Peers that completed a transfer with us, by address: they may take
    /// the place of a stranger's transfer when every place is taken.
    known_peers: Expiring<(), IpAddr>,
    /// DATA of known sessions that came before their METADATA.
    early: EarlyData,
    next_session: u32,
    /// The sender that sent last, for round robin.
    last_sender: Option<Key>,
}

impl<S: Store> Engine<S> {
    /// An engine over `store`, if `config` passes [`Config::validate`]: a
    /// setting it cannot make progress with is refused here, naming the
    /// field, rather than found as a stall half an hour later.
    pub fn new(config: Config, store: S) -> Result<Engine<S>, ConfigError> {
        config.validate()?;
        Ok(Engine {
            pacer: Pacer::new(config.rate_bps, config.burst_bytes),
            next_session: config.first_session,
            orphans: Expiring::new(config.max_remembered),
            answered: Expiring::new(config.max_remembered),
            put_names: Expiring::new(config.max_remembered),
            known_peers: Expiring::new(config.max_remembered),
            early: EarlyData::new(config.max_early_data_bytes),
            config,
            store,
            senders: BTreeMap::new(),
            receivers: BTreeMap::new(),
            out: Outbox::default(),
            last_sender: None,
        })
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    pub fn store_mut(&mut self) -> &mut S {
        &mut self.store
    }

    pub fn stats(&self) -> &Stats {
        &self.out.stats
    }

    /// Transfers in progress.
    pub fn active(&self) -> usize {
        self.senders.len() + self.receivers.len()
    }

    /// The next id of ours, skipping those of sessions in progress or
    /// remembered with `peer`'s host, from any of its ports (answered
    /// requests and finished sends, PUT REQUESTs waiting for their
    /// METADATA): a peer may know a session by its id alone. Rare enough
    /// (once per transfer of ours) to look through them all.
    fn session_id(&mut self, peer: SocketAddr) -> u32 {
        loop {
            let id = self.next_session;
            self.next_session = self.next_session.wrapping_add(1);
            let with_peer = |key: &Key| key.1 == id && key.0.ip() == peer.ip();
            let taken = self.senders.keys().any(with_peer)
                || self.receivers.keys().any(with_peer)
                || self.answered.keys().any(with_peer)
                || self.put_names.keys().any(with_peer);
            if !taken {
                return id;
            }
        }
    }

    /// Sends the store's file `local` to `peer`, to be stored as `remote`,
    /// asking first with a PUT REQUEST naming `remote`: the METADATA and
    /// DATA go once the peer accepts it (a refusal fails the put before
    /// anything is sent), and a receiver names the file from the REQUEST,
    /// directories and all.
    pub fn put_requested(
        &mut self,
        now: Instant,
        peer: SocketAddr,
        local: &str,
        remote: &str,
    ) -> Result<TransferId, StoreError> {
        self.start_put(now, peer, local, remote, true)
    }

    /// A blind put: like [`Engine::put_requested`] but without the
    /// REQUEST, the METADATA and DATA at once (the drafts allow it; `scps
    /// saratoga put --blind`). A receiver names the file from the METADATA
    /// alone: ours, and others, keep only its last component.
    pub fn put(
        &mut self,
        now: Instant,
        peer: SocketAddr,
        local: &str,
        remote: &str,
    ) -> Result<TransferId, StoreError> {
        self.start_put(now, peer, local, remote, false)
    }

    fn start_put(
        &mut self,
        now: Instant,
        peer: SocketAddr,
        local: &str,
        remote: &str,
        ask_first: bool,
    ) -> Result<TransferId, StoreError> {
        if remote.is_empty() || remote.contains('\0') {
            return Err(StoreError::Denied(format!("remote name {remote:?}")));
        }
        let info = self.store.info(local)?;
        if info.is_dir {
            return Err(StoreError::Denied(format!("{local} is a directory")));
        }
        let checksum = checksum_of(self.config.checksum, info.size, |at, buf| {
            self.store.read_at(local, at, buf)
        })?;
        let session = self.session_id(peer);
        let id = TransferId {
            peer,
            session,
            role: Role::Sender,
        };
        let entry = DirEntry::file(remote, info.size, DirEntry::time_from_unix(info.mtime));
        let ask = if ask_first {
            let mut bytes = Vec::new();
            Request::new(RequestType::Put, session, remote)
                .emit(&mut bytes)
                .map_err(|_| StoreError::Denied(format!("remote name {remote:?}")))?;
            Some(bytes)
        } else {
            None
        };
        let outgoing = Outgoing {
            operation: Operation::Put,
            source: Source::File(local.to_owned()),
            entry,
            checksum,
            delete_after: false,
            ask,
        };
        let sender = Sender::start(now, id, outgoing, &self.config, &mut self.out);
        self.senders.insert((peer, session), sender);
        Ok(id)
    }

    /// Fetches `remote` from `peer` into the store as `local`. A `local`
    /// the store must refuse ([`safe_name`]), or one a transfer already
    /// writes (names compared as the store sees them: `/in/f` is `in/f`),
    /// makes this one fail at once.
    pub fn get(&mut self, now: Instant, peer: SocketAddr, remote: &str, local: &str) -> TransferId {
        self.request(now, peer, RequestType::Get, Operation::Get, remote, local)
    }

    /// Like [`Engine::get`], and the peer deletes its file once we have it.
    pub fn get_delete(&mut self, now: Instant, peer: SocketAddr, remote: &str, local: &str) -> TransferId {
        self.request(
            now,
            peer,
            RequestType::GetDelete,
            Operation::GetDelete,
            remote,
            local,
        )
    }

    /// Asks `peer` to delete `remote`.
    pub fn delete(&mut self, now: Instant, peer: SocketAddr, remote: &str) -> TransferId {
        self.request(now, peer, RequestType::Delete, Operation::Delete, remote, remote)
    }

    /// Asks `peer` for the listing of directory `dir` (an [`Event::Listing`]).
    pub fn list(&mut self, now: Instant, peer: SocketAddr, dir: &str) -> TransferId {
        self.request(now, peer, RequestType::GetDir, Operation::List, dir, dir)
    }

    fn request(
        &mut self,
        now: Instant,
        peer: SocketAddr,
        request_type: RequestType,
        operation: Operation,
        remote: &str,
        local: &str,
    ) -> TransferId {
        let session = self.session_id(peer);
        let id = TransferId {
            peer,
            session,
            role: Role::Receiver,
        };
        let request = Request::new(request_type, session, remote);
        let mut bytes = Vec::new();
        let checked = if request.emit(&mut bytes).is_err() {
            // A name holding a NUL cannot be asked for.
            Err(StoreError::Denied(format!("remote name {remote:?}")))
        } else if matches!(operation, Operation::Get | Operation::GetDelete) {
            self.writable(local)
        } else {
            Ok(local.to_owned())
        };
        match checked {
            Ok(local) => {
                let receiver =
                    Receiver::requesting(now, id, operation, &local, bytes, &self.config, &mut self.out);
                self.receivers.insert((peer, session), receiver);
            }
            Err(error) => self.out.event(Event::Failed {
                id,
                reason: FailReason::Store(error),
            }),
        }
        id
    }

    /// `local` as the store names it, if a fetch may write it: a name the
    /// store accepts, and no transfer already writing it.
    fn writable(&self, local: &str) -> Result<String, StoreError> {
        let name = safe_name(local).filter(|name| !name.is_empty()).ok_or_else(|| {
            StoreError::Denied(format!(
                "local name {local:?}: empty, or with a . or .. component, a NUL or a backslash"
            ))
        })?;
        if self.writing(&name) {
            return Err(StoreError::Denied(format!("{name} is being received")));
        }
        Ok(name)
    }

    /// A datagram from `from` arrived at `now`.
    pub fn handle_datagram(&mut self, now: Instant, from: SocketAddr, datagram: &[u8]) {
        self.out.stats.datagrams_in += 1;
        match Frame::parse(datagram) {
            Err(error) => *self.out.stats.malformed.entry(error.cause()).or_default() += 1,
            Ok(Frame::Beacon(_)) => {}
            Ok(Frame::Request(request)) => self.serve(now, from, &request),
            Ok(Frame::Metadata(metadata)) => self.on_metadata(now, from, &metadata),
            Ok(Frame::Data(data)) => self.on_data(now, from, &data),
            Ok(Frame::Status(status)) => self.on_status(now, from, &status),
        }
        self.reap(now);
    }

    fn on_metadata(&mut self, now: Instant, from: SocketAddr, metadata: &Metadata) {
        let key = self.key_for(from, metadata.session, false);
        if !self.receivers.contains_key(&key) {
            if let Some(code) = self.refused_code(&key) {
                // The session was refused (its PUT REQUEST, or its first
                // METADATA): a repeat must not start it under another name.
                return self.refuse(from, metadata.session, "after_refusal", code);
            }
            // A put from the peer, named by its PUT REQUEST if one came,
            // else by the METADATA name's last component: never
            // directories from it (Vallona sends its full local path).
            // The REQUEST's name is kept until a receiver takes it: a
            // METADATA refused for now (a limit, a name in use) and sent
            // again must not fall back to the last component.
            let requested = self.put_names.get(&key).cloned();
            let name =
                requested.or_else(|| safe_name(metadata.entry.name.rsplit('/').next().unwrap_or_default()));
            let name = match (metadata.transfer_type, name) {
                (TransferType::File, Some(name)) => match self.receivable(&name) {
                    Ok(()) => name,
                    Err(code) => return self.answer(now, from, metadata.session, code),
                },
                (TransferType::File, None) => {
                    return self.answer(now, from, metadata.session, ErrorCode::ACCESS_DENIED);
                }
                _ => return self.send_code(from, metadata.session, ErrorCode::RX_NOT_INTERESTED),
            };
            if self.writing(&name) {
                return self.send_code(from, metadata.session, ErrorCode::FILE_IN_USE);
            }
            // Any datagram can start a receive: bounded, in number (per
            // address and in all) and size.
            if let Err(cause) = self.make_room_for_receive(from.ip()) {
                return self.refuse(from, metadata.session, cause, ErrorCode::RX_NOT_INTERESTED);
            }
            if metadata.entry.size > self.config.max_file_bytes {
                return self.refuse(from, metadata.session, "file_too_big", ErrorCode::FILE_TOO_BIG);
            }
            let id = TransferId {
                peer: from,
                session: metadata.session,
                role: Role::Receiver,
            };
            self.orphans.remove(&key);
            self.put_names.remove(&key);
            self.receivers
                .insert(key, Receiver::incoming(now, id, &name, &self.config));
        }
        if let Some(receiver) = self.receivers.get_mut(&key) {
            receiver.handle_metadata(now, metadata, &self.config, &mut self.store, &mut self.out);
            let pieces = self.early.take(&key);
            let receiving = !receiver.removed && !receiver.awaiting_metadata();
            for (offset, payload) in pieces {
                if !receiving {
                    self.out.stats.early_data_dropped_bytes += payload.len() as u64;
                    continue;
                }
                // As it came, but asking nothing: it was answered then.
                let data = Data {
                    descriptor: descriptor_for(metadata.entry.size),
                    transfer_type: metadata.transfer_type,
                    request_status: false,
                    end_of_data: false,
                    session: metadata.session,
                    timestamp: None,
                    offset,
                    payload: &payload,
                };
                receiver.handle_data(now, &data, &self.config, &mut self.store, &mut self.out);
            }
        }
    }

    /// The session a frame from `from` naming `session` is for: the one
    /// keyed by that address, else a receiving end we started (a request
    /// of ours) with the same host, or if `senders` a put of ours. Some
    /// peers answer from another port than the one they listen on, which
    /// we sent to; see the module's notes.
    fn key_for(&self, from: SocketAddr, session: u32, senders: bool) -> Key {
        let exact = (from, session);
        if self.receivers.contains_key(&exact) || (senders && self.senders.contains_key(&exact)) {
            return exact;
        }
        let same_host = |key: &&Key| key.1 == session && key.0.ip() == from.ip();
        let asking = self
            .receivers
            .iter()
            .filter(|(_, r)| r.operation != Operation::Receive)
            .map(|(key, _)| key);
        let putting = self
            .senders
            .iter()
            .filter(|(_, s)| senders && s.operation == Operation::Put)
            .map(|(key, _)| key);
        asking.chain(putting).find(same_host).copied().unwrap_or(exact)
    }

    /// Whether a transfer from `peer` may start: within its address's
    /// share, and within the total, if need be in the place of the
    /// transfer of a peer never known to complete one that has been
    /// silent longest (if `peer` is known). Else the cause of the refusal.
    fn make_room_for_receive(&mut self, peer: IpAddr) -> Result<(), &'static str> {
        // A put from a peer, still writing its file.
        fn incoming(receiver: &Receiver) -> bool {
            receiver.operation == Operation::Receive && receiver.writing().is_some()
        }
        let mut from_peer = 0;
        let mut total = 0;
        for receiver in self.receivers.values().filter(|r| incoming(r)) {
            total += 1;
            from_peer += usize::from(receiver.id.peer.ip() == peer);
        }
        if from_peer >= self.config.max_receivers_per_peer {
            return Err("too_many_from_peer");
        }
        if total < self.config.max_receivers {
            return Ok(());
        }
        if !self.known_peers.contains_key(&peer) {
            return Err("too_many_receivers");
        }
        let known = &self.known_peers;
        let stranger = self
            .receivers
            .values_mut()
            .filter(|r| incoming(r) && !known.contains_key(&r.id.peer.ip()))
            .min_by_key(|r| r.last_heard());
        match stranger {
            Some(receiver) => {
                receiver.displace(&mut self.out);
                *self.out.stats.refused.entry("displaced").or_default() += 1;
                Ok(())
            }
            None => Err("too_many_receivers"),
        }
    }

    /// Whether a file may be received as `name`: one the store refuses to
    /// look at (a name in its partial files' directory, a link leading
    /// out), or a directory, is refused before anything is stored, not
    /// once its data has come.
    fn receivable(&self, name: &str) -> Result<(), ErrorCode> {
        if name.is_empty() {
            return Err(ErrorCode::ACCESS_DENIED);
        }
        match self.store.info(name) {
            Ok(info) if info.is_dir => Err(ErrorCode::ACCESS_DENIED),
            Err(error @ StoreError::Denied(_)) => Err(store_code(&error)),
            // A new file (or one to replace): the store has the last word
            // when the data is written and committed.
            _ => Ok(()),
        }
    }

    /// The error a session of the peer's was refused with, if it was.
    fn refused_code(&self, key: &Key) -> Option<ErrorCode> {
        self.answered.get(key).copied().filter(|code| !code.is_success())
    }

    /// Whether a transfer under way writes the store name `name` (two
    /// must not share a partial file).
    fn writing(&self, name: &str) -> bool {
        self.receivers.values().any(|r| r.writing() == Some(name))
    }

    /// Refuses a session a peer starts, counting why.
    fn refuse(&mut self, peer: SocketAddr, session: u32, cause: &'static str, code: ErrorCode) {
        *self.out.stats.refused.entry(cause).or_default() += 1;
        self.send_code(peer, session, code);
    }

    /// Sends a STATUS that carries only `code`: a refusal, an error, or a
    /// delete's result.
    fn send_code(&mut self, peer: SocketAddr, session: u32, code: ErrorCode) {
        self.out.send(peer, &Frame::Status(Status::error(session, code)));
    }

    fn on_data(&mut self, now: Instant, from: SocketAddr, data: &Data<'_>) {
        let key = self.key_for(from, data.session, false);
        if let Some(receiver) = self.receivers.get_mut(&key) {
            if receiver.awaiting_metadata() {
                self.early
                    .keep(key, data.offset, data.payload, &mut self.out.stats);
            }
            receiver.handle_data(now, data, &self.config, &mut self.store, &mut self.out);
            return;
        }
        let refused = self.refused_code(&key);
        if refused.is_some() {
            self.out.stats.refused_data_bytes += data.payload.len() as u64;
        } else if self.put_names.contains_key(&key) {
            // A PUT REQUEST we accepted opened the session: its METADATA
            // is on its way, or lost and asked for again below.
            self.early
                .keep(key, data.offset, data.payload, &mut self.out.stats);
        } else {
            self.out.stats.unknown_session += 1;
            self.out.stats.orphan_data_bytes += data.payload.len() as u64;
        }
        let due = self.orphans.get(&key).is_none_or(|last| {
            data.request_status || now.saturating_since(*last) >= self.config.status_interval
        });
        if due {
            let until = now + self.config.inactivity_timeout;
            if self.orphans.insert(key, now, until) {
                self.out.stats.forgotten += 1;
            }
            if let Some(code) = refused {
                // Not "metadata missing": that would have the sender
                // send its METADATA again, for a session already refused.
                return self.send_code(from, data.session, code);
            }
            let mut status = Status::error(data.session, ErrorCode::SUCCESS);
            status.metadata_received = false;
            status.voluntary = !data.request_status;
            status.descriptor = descriptor_for(data.offset);
            status.in_response_to = data.offset;
            self.out.send(from, &Frame::Status(status));
        }
    }

    fn on_status(&mut self, now: Instant, from: SocketAddr, status: &Status) {
        self.out.stats.status_received += 1;
        let key = self.key_for(from, status.session, true);
        if let Some(sender) = self.senders.get_mut(&key) {
            sender.handle_status(now, status, &self.config, &mut self.store, &mut self.out);
        } else if let Some(receiver) = self.receivers.get_mut(&key) {
            receiver.handle_status(now, status, &self.config, &mut self.out);
        } else if !self.answered.contains_key(&key) {
            self.out.stats.unknown_session += 1;
            if status.error.is_success() {
                self.send_code(from, status.session, ErrorCode::UNKNOWN_ID);
            }
        }
    }

    /// Answers a peer's REQUEST.
    fn serve(&mut self, now: Instant, from: SocketAddr, request: &Request) {
        let key = (from, request.session);
        if let Some(sender) = self.senders.get_mut(&key) {
            // A repeat: our METADATA may have been lost.
            sender.resend_metadata(&mut self.out);
            return;
        }
        if let Some(code) = self.answered.get(&key) {
            // A repeat: the answer was lost (a success is repeated only
            // where it is the whole answer; a finished GET's is its data).
            let whole = matches!(
                request.request_type,
                RequestType::Delete | RequestType::Put | RequestType::PutDelete
            );
            if !code.is_success() || whole {
                let code = *code;
                self.send_code(from, request.session, code);
            }
            return;
        }
        // An engine that takes no transfer from peers (a client's, whose
        // socket may be the well-known port) grants no request at all.
        if self.config.max_receivers == 0 && self.config.max_served == 0 {
            return self.refuse(from, request.session, "serves_no_one", ErrorCode::ACCESS_DENIED);
        }
        let Some(name) = safe_name(&request.name) else {
            self.answer(now, from, request.session, ErrorCode::ACCESS_DENIED);
            return;
        };
        let serving = matches!(
            request.request_type,
            RequestType::Get | RequestType::GetDelete | RequestType::GetDir
        );
        let served = self
            .senders
            .values()
            .filter(|s| matches!(s.operation, Operation::Serve | Operation::ServeList))
            .count();
        if serving && served >= self.config.max_served {
            // Not remembered: the peer may ask again once one is done.
            return self.refuse(from, request.session, "too_many_served", ErrorCode::CANNOT_SEND);
        }
        let id = TransferId {
            peer: from,
            session: request.session,
            role: Role::Sender,
        };
        let result = match request.request_type {
            RequestType::NoAction => return,
            // Ready to receive under that name: the peer's METADATA
            // starts the transfer.
            RequestType::Put | RequestType::PutDelete => self.receivable(&name).and_then(|()| {
                let until = now + self.config.inactivity_timeout;
                if self.put_names.insert(key, name, until) {
                    self.out.stats.forgotten += 1;
                }
                Err(ErrorCode::SUCCESS)
            }),
            RequestType::Delete => Err(match self.store.delete(&name) {
                Ok(()) => ErrorCode::SUCCESS,
                Err(StoreError::Io(_)) => ErrorCode::DID_NOT_DELETE,
                Err(error) => store_code(&error),
            }),
            RequestType::Get | RequestType::GetDelete => self.serve_file(now, id, &name, request),
            RequestType::GetDir => self.serve_listing(now, id, &name),
        };
        if let Err(code) = result {
            self.answer(now, from, request.session, code);
        }
    }

    fn answer(&mut self, now: Instant, peer: SocketAddr, session: u32, code: ErrorCode) {
        let until = now + self.config.inactivity_timeout;
        if self.answered.insert((peer, session), code, until) {
            self.out.stats.forgotten += 1;
        }
        self.send_code(peer, session, code);
    }

    fn serve_file(
        &mut self,
        now: Instant,
        id: TransferId,
        name: &str,
        request: &Request,
    ) -> Result<(), ErrorCode> {
        let info = self.store.info(name).map_err(|e| store_code(&e))?;
        if info.is_dir {
            return Err(ErrorCode::ACCESS_DENIED);
        }
        let checksum = checksum_of(self.config.checksum, info.size, |at, buf| {
            self.store.read_at(name, at, buf)
        })
        .map_err(|e| store_code(&e))?;
        let entry = DirEntry::file(name, info.size, DirEntry::time_from_unix(info.mtime));
        let outgoing = Outgoing {
            operation: Operation::Serve,
            source: Source::File(name.to_owned()),
            entry,
            checksum,
            delete_after: request.request_type == RequestType::GetDelete,
            ask: None,
        };
        let sender = Sender::start(now, id, outgoing, &self.config, &mut self.out);
        self.senders.insert((id.peer, id.session), sender);
        Ok(())
    }

    fn serve_listing(&mut self, now: Instant, id: TransferId, dir: &str) -> Result<(), ErrorCode> {
        // No code says "not a directory": a GETDIR of a file is a request
        // of the wrong type for its name, which the asking end can name.
        if !self.store.info(dir).map_err(|e| store_code(&e))?.is_dir {
            return Err(ErrorCode::BAD_REQUEST);
        }
        let entries = self.store.list(dir).map_err(|e| store_code(&e))?;
        let entries: Vec<DirEntry> = entries
            .into_iter()
            .map(|entry| DirEntry {
                kind: if entry.info.is_dir {
                    EntryKind::Directory
                } else {
                    EntryKind::File
                },
                ..DirEntry::file(
                    &entry.name,
                    entry.info.size,
                    DirEntry::time_from_unix(entry.info.mtime),
                )
            })
            .collect();
        let mut listing = Vec::new();
        DirEntry::emit_listing(&entries, &mut listing).map_err(|_| ErrorCode::BAD_PACKET)?;
        let checksum = Checksum::of(self.config.checksum, &listing);
        let entry = DirEntry {
            kind: EntryKind::Directory,
            ..DirEntry::file(dir, listing.len() as u64, 0)
        };
        let outgoing = Outgoing {
            operation: Operation::ServeList,
            source: Source::Listing(listing),
            entry,
            checksum,
            delete_after: false,
            ask: None,
        };
        let sender = Sender::start(now, id, outgoing, &self.config, &mut self.out);
        self.senders.insert((id.peer, id.session), sender);
        Ok(())
    }

    /// The next datagram to send and where to, if any is due at `now`.
    pub fn poll_transmit(&mut self, now: Instant) -> Option<(SocketAddr, Vec<u8>)> {
        let overhead = self.config.datagram_overhead as usize;
        if let Some((peer, bytes)) = self.out.control.pop_front() {
            self.pacer.charge(now, bytes.len() + overhead);
            self.out.stats.datagrams_out += 1;
            return Some((peer, bytes));
        }
        // Round robin over the senders with DATA to send.
        let keys: Vec<Key> = self.senders.keys().copied().collect();
        let start = self
            .last_sender
            .and_then(|last| keys.iter().position(|k| *k > last))
            .unwrap_or(0);
        for key in keys[start..].iter().chain(&keys[..start]) {
            let Some(sender) = self.senders.get_mut(key) else {
                continue;
            };
            let Some(len) = sender.next_len(&self.config) else {
                continue;
            };
            if !self.pacer.ready(now, len + overhead) {
                return None;
            }
            match sender.next_data(now, &self.config, &self.store, &mut self.out) {
                Ok(Some(bytes)) => {
                    self.pacer.charge(now, bytes.len() + overhead);
                    self.out.stats.datagrams_out += 1;
                    self.last_sender = Some(*key);
                    return Some((key.0, bytes));
                }
                Ok(None) => {}
                Err(reason) => sender.fail(reason, &mut self.out),
            }
        }
        self.reap(now);
        None
    }

    /// The earliest instant [`Engine::handle_timeout`] or
    /// [`Engine::poll_transmit`] has work, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        // When the largest next frame may go, whichever sender is next may
        // (waking for the smallest could find the next one still held).
        let paced = self
            .senders
            .values()
            .filter_map(|s| s.next_len(&self.config))
            .max()
            .and_then(|len| self.pacer.ready_at(len + self.config.datagram_overhead as usize));
        let timers = self
            .senders
            .values()
            .filter_map(|s| s.poll_timeout(&self.config))
            .chain(
                self.receivers
                    .values()
                    .filter_map(|r| r.poll_timeout(&self.config)),
            );
        paced
            .into_iter()
            .chain(timers)
            .chain(self.answered.next_expiry())
            .chain(self.put_names.next_expiry())
            .min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        for sender in self.senders.values_mut() {
            sender.handle_timeout(now, &self.config, &mut self.out);
        }
        for receiver in self.receivers.values_mut() {
            receiver.handle_timeout(now, &self.config, &mut self.out);
        }
        self.orphans.expire(now);
        self.answered.expire(now);
        self.put_names.expire(now);
        self.reap(now);
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.out.events.pop_front()
    }

    /// Drops finished sessions; a finished send is remembered a while.
    fn reap(&mut self, now: Instant) {
        let until = now + self.config.inactivity_timeout;
        let known_until = now + KNOWN_PEER_FOR;
        self.known_peers.expire(now);
        let (answered, stats, known, store) = (
            &mut self.answered,
            &mut self.out.stats,
            &mut self.known_peers,
            &mut self.store,
        );
        self.senders.retain(|key, sender| {
            if sender.take_success() {
                known.insert(key.0.ip(), (), known_until);
            }
            if sender.done && answered.insert(*key, ErrorCode::SUCCESS, until) {
                stats.forgotten += 1;
            }
            !sender.done
        });
        self.receivers.retain(|key, receiver| {
            if receiver.take_success() {
                known.insert(key.0.ip(), (), known_until);
            }
            if let Some(name) = receiver.partial_left() {
                store.close_partial(name);
            }
            // A session failed with an error code stays refused: its
            // METADATA and DATA still coming get that code again.
            if receiver.removed
                && let Some(code) = receiver.refused
                && answered.insert(*key, code, until)
            {
                stats.forgotten += 1;
            }
            !receiver.removed
        });
        if !self.early.is_empty() {
            // What early DATA waits for: a receiver's METADATA, or that of
            // a PUT REQUEST accepted, still remembered and not refused since.
            let (receivers, put_names, answered) = (&self.receivers, &self.put_names, &self.answered);
            let waiting = |key: &Key| match receivers.get(key) {
                Some(receiver) => receiver.awaiting_metadata(),
                None => put_names.contains_key(key) && answered.get(key).is_none_or(|code| code.is_success()),
            };
            self.early.retain(waiting, &mut self.out.stats);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Descriptor;

    fn peer() -> SocketAddr {
        "10.0.0.9:7542".parse().unwrap()
    }

    /// Hands `frame` to `engine` from [`peer`]; the error codes of the
    /// STATUS frames it answers with.
    fn answer(engine: &mut Engine<MemoryStore>, frame: Frame<'_>) -> Vec<ErrorCode> {
        answer_from(engine, Instant::ZERO, peer(), frame)
            .into_iter()
            .map(|(_, code)| code)
            .collect()
    }

    /// Hands `frame` to `engine` from `from` at `now`; where each STATUS
    /// it sends goes, and its error code.
    fn answer_from(
        engine: &mut Engine<MemoryStore>,
        now: Instant,
        from: SocketAddr,
        frame: Frame<'_>,
    ) -> Vec<(SocketAddr, ErrorCode)> {
        engine.handle_datagram(now, from, &frame.to_bytes().unwrap());
        std::iter::from_fn(|| engine.poll_transmit(now))
            .filter_map(|(to, bytes)| match Frame::parse(&bytes) {
                Ok(Frame::Status(status)) => Some((to, status.error)),
                _ => None,
            })
            .collect()
    }

    fn metadata(session: u32, name: &str, size: u64) -> Frame<'static> {
        Frame::Metadata(Metadata {
            descriptor: descriptor_for(size),
            transfer_type: TransferType::File,
            terminated: false,
            udp_lite: false,
            session,
            checksum: Checksum::None,
            entry: DirEntry::file(name, size, 0),
        })
    }

    fn data(session: u32, payload: &[u8]) -> Frame<'_> {
        Frame::Data(Data {
            descriptor: Descriptor::D32,
            transfer_type: TransferType::File,
            request_status: true,
            end_of_data: false,
            session,
            timestamp: None,
            offset: 0,
            payload,
        })
    }

    fn started(engine: &mut Engine<MemoryStore>) -> bool {
        std::iter::from_fn(|| engine.poll_event()).any(|e| matches!(e, Event::Started { .. }))
    }

    #[test]
    fn a_session_whose_receive_was_aborted_stays_refused() {
        let mut engine = Engine::new(Config::default(), MemoryStore::new()).unwrap();
        let put = Frame::Request(Request::new(RequestType::Put, 7, "in/x"));
        assert_eq!(answer(&mut engine, put), [ErrorCode::SUCCESS]);
        // More than the store holds: the receive starts, then is aborted.
        let too_big = metadata(7, "x", MemoryStore::MAX_FILE + 1);
        assert_eq!(answer(&mut engine, too_big), [ErrorCode::FILE_TOO_BIG]);
        // Sent again (smaller): the session was refused, and is still;
        // nothing is received, under its name nor the METADATA's.
        assert_eq!(
            answer(&mut engine, metadata(7, "x", 5)),
            [ErrorCode::FILE_TOO_BIG]
        );
        assert_eq!(answer(&mut engine, data(7, b"hello")), [ErrorCode::FILE_TOO_BIG]);
        assert!(!started(&mut engine));
        assert_eq!(engine.store().partial_ranges("x"), None);
        assert_eq!(engine.store().partial_ranges("in/x"), None);
        assert_eq!(engine.stats().refused.get("after_refusal"), Some(&1));
        assert_eq!(engine.stats().refused_data_bytes, 5);
        assert_eq!(engine.stats().orphan_data_bytes, 0);
        assert_eq!(engine.active(), 0);
    }

    #[test]
    fn a_put_of_a_denied_name_or_a_directory_is_refused_at_its_request() {
        let mut engine = Engine::new(Config::default(), MemoryStore::new()).unwrap();
        engine.store_mut().insert("dir/a", b"a".to_vec(), 0);
        engine.store_mut().deny("locked");
        for (session, name) in [(1, "locked"), (2, "dir")] {
            let put = Frame::Request(Request::new(RequestType::Put, session, name));
            assert_eq!(answer(&mut engine, put), [ErrorCode::ACCESS_DENIED], "{name}");
            // A METADATA sent all the same starts nothing.
            let again = metadata(session, name, 1);
            assert_eq!(answer(&mut engine, again), [ErrorCode::ACCESS_DENIED], "{name}");
            assert_eq!(
                answer(&mut engine, data(session, b"z")),
                [ErrorCode::ACCESS_DENIED]
            );
        }
        // Without a REQUEST, the METADATA's name is checked the same way.
        assert_eq!(
            answer(&mut engine, metadata(3, "dir", 1)),
            [ErrorCode::ACCESS_DENIED]
        );
        assert!(!started(&mut engine));
        assert_eq!(engine.store().partial_ranges("locked"), None);
        assert_eq!(engine.store().partial_ranges("dir"), None);
        assert_eq!(engine.stats().refused.get("after_refusal"), Some(&2));
        assert_eq!(engine.stats().refused_data_bytes, 2);
    }

    fn stranger(i: u8) -> SocketAddr {
        SocketAddr::from(([10, 1, 0, i], 7542))
    }

    fn errors_to(answers: &[(SocketAddr, ErrorCode)], to: SocketAddr) -> Vec<ErrorCode> {
        answers
            .iter()
            .filter(|(at, code)| *at == to && !code.is_success())
            .map(|(_, code)| *code)
            .collect()
    }

    #[test]
    fn a_known_peer_takes_the_place_of_a_silent_stranger_when_every_place_is_taken() {
        let config = Config {
            max_receivers: 4,
            max_receivers_per_peer: 1,
            ..Config::default()
        };
        let mut engine = Engine::new(config, MemoryStore::new()).unwrap();
        let at = |s: u64| Instant::ZERO + std::time::Duration::from_secs(s);
        // The peer completes a transfer: it answers from its address.
        answer_from(&mut engine, at(0), peer(), metadata(1, "first", 5));
        answer_from(&mut engine, at(0), peer(), data(1, b"hello"));
        assert_eq!(engine.store().contents("first"), Some(&b"hello"[..]));
        // Strangers (spoofed, say) fill every place, and never answer.
        for i in 1..=4 {
            let name = format!("s{i}");
            let answers = answer_from(
                &mut engine,
                at(u64::from(i)),
                stranger(i),
                metadata(1, &name, 100),
            );
            assert!(errors_to(&answers, stranger(i)).is_empty(), "{answers:?}");
        }
        // A fifth stranger is refused; so is one more from a stranger
        // holding its share.
        let answers = answer_from(&mut engine, at(5), stranger(5), metadata(1, "t", 100));
        assert_eq!(errors_to(&answers, stranger(5)), [ErrorCode::RX_NOT_INTERESTED]);
        assert_eq!(engine.stats().refused.get("too_many_receivers"), Some(&1));
        let answers = answer_from(&mut engine, at(5), stranger(2), metadata(9, "u", 100));
        assert_eq!(errors_to(&answers, stranger(2)), [ErrorCode::RX_NOT_INTERESTED]);
        assert_eq!(engine.stats().refused.get("too_many_from_peer"), Some(&1));
        // The known peer gets in: the stranger silent longest makes room.
        let answers = answer_from(&mut engine, at(6), peer(), metadata(2, "second", 5));
        assert!(errors_to(&answers, peer()).is_empty(), "{answers:?}");
        assert_eq!(errors_to(&answers, stranger(1)), [ErrorCode::RX_NOT_INTERESTED]);
        assert_eq!(engine.stats().refused.get("displaced"), Some(&1));
        answer_from(&mut engine, at(6), peer(), data(2, b"again"));
        assert_eq!(engine.store().contents("second"), Some(&b"again"[..]));
        let failed: Vec<FailReason> = std::iter::from_fn(|| engine.poll_event())
            .filter_map(|event| match event {
                Event::Failed { reason, .. } => Some(reason),
                _ => None,
            })
            .collect();
        assert_eq!(failed, [FailReason::Displaced]);
    }

    #[test]
    fn a_full_disk_is_answered_file_too_big_and_gets_back_what_the_transfer_took() {
        let mut engine = Engine::new(Config::default(), MemoryStore::with_room(1000)).unwrap();
        let errors = |engine: &mut Engine<MemoryStore>, frame| -> Vec<ErrorCode> {
            answer(engine, frame)
                .into_iter()
                .filter(|code| !code.is_success())
                .collect()
        };
        answer(&mut engine, metadata(1, "big", 1500));
        assert_eq!(errors(&mut engine, data(1, &[7; 600])), []);
        assert_eq!(engine.store().used(), 600);
        let frame = Frame::Data(Data {
            offset: 600,
            ..match data(1, &[7; 900]) {
                Frame::Data(data) => data,
                _ => unreachable!(),
            }
        });
        assert_eq!(errors(&mut engine, frame), [ErrorCode::FILE_TOO_BIG]);
        assert_eq!(engine.store().partial_ranges("big"), None);
        assert_eq!(engine.store().used(), 0, "the room is back");
        let failed = std::iter::from_fn(|| engine.poll_event()).find_map(|event| match event {
            Event::Failed { reason, .. } => Some(reason),
            _ => None,
        });
        assert!(
            matches!(failed, Some(FailReason::Store(StoreError::NoSpace(_)))),
            "{failed:?}"
        );
        // A file that fits is received.
        answer(&mut engine, metadata(2, "small", 900));
        answer(&mut engine, data(2, &[1; 900]));
        assert_eq!(engine.store().contents("small").map(<[u8]>::len), Some(900));
    }

    #[test]
    fn a_listing_of_a_file_is_a_bad_request() {
        let mut engine = Engine::new(Config::default(), MemoryStore::new()).unwrap();
        engine.store_mut().insert("a.txt", b"a".to_vec(), 0);
        let list = |session, name| Frame::Request(Request::new(RequestType::GetDir, session, name));
        assert_eq!(answer(&mut engine, list(1, "a.txt")), [ErrorCode::BAD_REQUEST]);
        assert_eq!(answer(&mut engine, list(2, "nope")), [ErrorCode::FILE_NOT_FOUND]);
        assert_eq!(engine.active(), 0);
    }
}
