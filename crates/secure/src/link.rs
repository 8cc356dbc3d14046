//! The secure link's state machine (docs/secure-link.md): handshakes,
//! sessions, rekeying, and what it counts.
//!
//! Either gateway initiates a Noise KK handshake (both static keys known
//! beforehand: the first message authenticates the initiator, the second
//! the responder) when it has no session to send with, when its session
//! is old ([`SecureConfig::rekey_after`]) or has carried
//! [`SecureConfig::rekey_after_bytes`], and again after a growing pause
//! while no answer comes. Both may do so at once; each completed
//! handshake is a session, and the newest usable one carries what we
//! send, while any session not yet expired still opens what arrives, so
//! that a rekey loses nothing in flight. A session we answered is used
//! only once the peer has sent with it (then it certainly has the keys).
//!
//! An initiation carries the initiator's wall-clock time, encrypted and
//! authenticated; one not newer than the latest taken from the peer is a
//! replay and is refused. Initiations are read (two Diffie-Hellman
//! operations each) at most [`INITIATIONS_PER_SECOND`] a second.

use std::collections::VecDeque;
use std::time::Duration;

use scps_node::{Instant, PerSecond};

use crate::frame::{self, Frame, FrameError, INITIATION_LEN, RESPONSE_LEN, TIMESTAMP_LEN};
use crate::keys::{PrivateKey, PublicKey};
use crate::session::{OpenError, Session};

/// Rekey after this long, unless the configuration says.
pub const REKEY_AFTER: Duration = Duration::from_secs(120);
/// Rekey after this many bytes sealed, unless the configuration says.
pub const REKEY_AFTER_BYTES: u64 = 64 << 30;
/// A session is neither used nor accepted once this many times its rekey
/// age: the rekey had that long to succeed.
const EXPIRY_FACTOR: u32 = 3;
/// The pause before the first repeat of an initiation that drew no
/// answer; it doubles up to [`RETRY_LONGEST`].
const RETRY_FIRST: Duration = Duration::from_secs(1);
const RETRY_LONGEST: Duration = Duration::from_secs(16);
/// Initiations kept for their answer: on a path whose round trip exceeds
/// the pause between them (an Iridium call's several seconds), the answer
/// to an earlier one still completes.
const PENDING_KEPT: usize = 4;
/// Sessions kept at most (the current, those a rekey replaced while they
/// may still carry packets in flight, those answered but not yet used).
const SESSIONS_KEPT: usize = 8;
/// Initiations read per second at most.
pub const INITIATIONS_PER_SECOND: u32 = 50;
/// Packets kept for the first session at most ([`SecureLink::hold`]).
pub const HELD_PACKETS: usize = 128;

/// The Noise protocol: KK, both static keys known beforehand.
pub const NOISE_PROTOCOL: &str = "Noise_KK_25519_AESGCM_BLAKE2s";
/// Bound into every handshake, so that nothing else's handshake passes for
/// ours.
const PROLOGUE: &[u8] = b"scps-tp secure link 1";

pub(crate) fn noise_params() -> snow::params::NoiseParams {
    NOISE_PROTOCOL.parse().expect("a valid Noise protocol name")
}

/// What a secure link needs to run.
#[derive(Debug, Clone)]
pub struct SecureConfig {
    pub private_key: PrivateKey,
    pub peer_public_key: PublicKey,
    /// Rekey a session this old.
    pub rekey_after: Duration,
    /// Rekey a session that has sealed this many bytes.
    pub rekey_after_bytes: u64,
}

impl SecureConfig {
    /// A configuration with the default rekeying.
    pub fn new(private_key: PrivateKey, peer_public_key: PublicKey) -> SecureConfig {
        SecureConfig {
            private_key,
            peer_public_key,
            rekey_after: REKEY_AFTER,
            rekey_after_bytes: REKEY_AFTER_BYTES,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecureError {
    #[error("the peer's public key is our own: each gateway needs a key pair of its own")]
    PeerIsUs,
    #[error("the rekey age must be above zero")]
    RekeyAge,
    #[error("the rekey volume must be above zero")]
    RekeyVolume,
}

/// Why a datagram was dropped before anything read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthFailure {
    /// Not a message of the secure link.
    Malformed(FrameError),
    /// For a session or handshake we do not have (gone, or never ours).
    UnknownSession,
    /// Its tag does not authenticate it.
    BadTag,
    /// A copy of a data message already taken, or too old for the window.
    Replay,
    /// An initiation not newer than the latest from the peer: a replay.
    StaleInitiation,
    /// A handshake message that does not authenticate (another key).
    BadHandshake,
    /// An initiation beyond [`INITIATIONS_PER_SECOND`].
    HandshakeRate,
}

impl AuthFailure {
    /// A short name for counting, as metrics label it.
    pub fn label(&self) -> &'static str {
        match self {
            AuthFailure::Malformed(_) => "malformed",
            AuthFailure::UnknownSession => "unknown_session",
            AuthFailure::BadTag => "bad_tag",
            AuthFailure::Replay => "replay",
            AuthFailure::StaleInitiation => "stale_initiation",
            AuthFailure::BadHandshake => "bad_handshake",
            AuthFailure::HandshakeRate => "handshake_rate",
        }
    }

    /// Every cause, for a metric that shows each from the start.
    pub const ALL: [&'static str; 7] = [
        "malformed",
        "unknown_session",
        "bad_tag",
        "replay",
        "stale_initiation",
        "bad_handshake",
        "handshake_rate",
    ];
}

/// What becomes of a packet [`SecureLink::seal`] cannot seal yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsealed {
    /// Kept, up to [`HELD_PACKETS`], until a session can carry it; it then
    /// leaves by [`SecureLink::poll_transmit`], sealed. What is sent in the
    /// first round trip (a connection's SYN) is then not lost to the
    /// handshake. For a path whose datagrams may all go where the link's
    /// do: a bundle's are each for their channel.
    Hold,
    /// Dropped, and counted.
    Drop,
}

/// What became of a datagram handed to [`SecureLink::open`].
#[derive(Debug, PartialEq, Eq)]
pub enum Opened<'a> {
    /// A packet from the peer, authenticated and decrypted.
    Packet(&'a [u8]),
    /// An initiation from the peer: send this answer back where it came
    /// from (its source address, or the channel it arrived on).
    Reply(&'a [u8]),
    /// An authenticated message with nothing for the caller (an answer to
    /// our initiation, a keepalive): the peer is where it came from.
    Control,
    /// Dropped, and counted.
    Dropped(AuthFailure),
}

/// What the link has done and refused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SecureStats {
    pub initiations_sent: u64,
    pub responses_sent: u64,
    /// Handshakes we initiated that completed.
    pub handshakes_completed: u64,
    /// Sessions we answered that the peer then used.
    pub sessions_confirmed: u64,
    /// When the first session usable for sending was made, since the link
    /// began.
    pub first_session_after: Option<Duration>,
    pub packets_sealed: u64,
    pub packets_opened: u64,
    /// Packets not sent for want of a session (before the first handshake
    /// completes, or after every session expired), held ones beyond
    /// [`HELD_PACKETS`] included.
    pub no_session: u64,
    /// Datagrams dropped unread, by cause ([`AuthFailure::label`]).
    pub auth_failures: std::collections::BTreeMap<&'static str, u64>,
}

impl SecureStats {
    pub fn auth_failures_total(&self) -> u64 {
        self.auth_failures.values().sum()
    }
}

/// An initiation sent, waiting for its answer.
struct Pending {
    index: u32,
    handshake: snow::HandshakeState,
}

/// One end of the secure link; see the module documentation.
pub struct SecureLink {
    config: SecureConfig,
    /// The instant the link began, and the wall-clock time then (since
    /// the Unix epoch), from which initiations take their timestamps.
    origin: Instant,
    wall_at_origin: Duration,
    /// Packets waiting for the first session ([`SecureLink::hold`]).
    held: VecDeque<Vec<u8>>,
    sessions: Vec<Session>,
    pending: VecDeque<Pending>,
    /// When the next initiation goes, while one is needed.
    next_initiation: Option<Instant>,
    /// The pause after it.
    retry: Duration,
    /// The timestamp of our latest initiation, nanoseconds since the Unix
    /// epoch (each one later than the last, whatever the clock does).
    last_timestamp: u128,
    /// The latest timestamp taken from the peer's initiations.
    peer_timestamp: Option<[u8; TIMESTAMP_LEN]>,
    initiations_read: PerSecond,
    /// Our initiations and keepalives, to send to the peer.
    outbox: VecDeque<Vec<u8>>,
    /// A decrypted packet or a built answer, lent to the caller.
    scratch: Vec<u8>,
    stats: SecureStats,
}

impl std::fmt::Debug for SecureLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecureLink")
            .field("peer", &self.config.peer_public_key)
            .field("sessions", &self.sessions)
            .field("pending", &self.pending.len())
            .field("next_initiation", &self.next_initiation)
            .finish()
    }
}

impl SecureLink {
    /// A link with no session yet: it initiates at once (see
    /// [`SecureLink::poll_timeout`]). `wall_clock` is the time since the
    /// Unix epoch at `now`.
    pub fn new(config: SecureConfig, now: Instant, wall_clock: Duration) -> Result<SecureLink, SecureError> {
        if config.private_key.public_key() == config.peer_public_key {
            return Err(SecureError::PeerIsUs);
        }
        if config.rekey_after.is_zero() {
            return Err(SecureError::RekeyAge);
        }
        if config.rekey_after_bytes == 0 {
            return Err(SecureError::RekeyVolume);
        }
        Ok(SecureLink {
            config,
            origin: now,
            wall_at_origin: wall_clock,
            held: VecDeque::new(),
            sessions: Vec::new(),
            pending: VecDeque::new(),
            next_initiation: Some(now),
            retry: RETRY_FIRST,
            last_timestamp: 0,
            peer_timestamp: None,
            initiations_read: PerSecond::new(INITIATIONS_PER_SECOND),
            outbox: VecDeque::new(),
            scratch: Vec::with_capacity(65_536),
            stats: SecureStats::default(),
        })
    }

    pub fn stats(&self) -> &SecureStats {
        &self.stats
    }

    /// Whether a session can carry packets now.
    pub fn is_up(&self, now: Instant) -> bool {
        self.current(now).is_some()
    }

    fn expiry(&self) -> Duration {
        self.config.rekey_after * EXPIRY_FACTOR
    }

    fn expired(&self, session: &Session, now: Instant) -> bool {
        now.saturating_since(session.made_at) >= self.expiry() || session.exhausted()
    }

    /// The session that carries what we send: the newest usable one.
    fn current(&self, now: Instant) -> Option<usize> {
        self.sessions
            .iter()
            .enumerate()
            .filter(|(_, s)| s.usable_since.is_some() && !self.expired(s, now))
            .max_by_key(|(_, s)| s.usable_since)
            .map(|(i, _)| i)
    }

    /// When the current session calls for a new one: by age (later for a
    /// session the peer initiated, so that normally one side rekeys) or
    /// by volume (now); `None` when there is no current session.
    fn rekey_at(&self, now: Instant) -> Option<Instant> {
        let session = &self.sessions[self.current(now)?];
        if session.bytes_sealed >= self.config.rekey_after_bytes {
            return Some(now);
        }
        let age = if session.initiated {
            self.config.rekey_after
        } else {
            self.config.rekey_after * 3 / 2
        };
        Some(session.made_at + age)
    }

    /// Seals `packet` for the peer, appending the datagram to `out`; false
    /// when no session can carry it yet, and then `otherwise` says what
    /// becomes of it.
    pub fn seal(&mut self, now: Instant, packet: &[u8], out: &mut Vec<u8>, otherwise: Unsealed) -> bool {
        let Some(current) = self.current(now) else {
            self.want_initiation(now);
            match otherwise {
                Unsealed::Hold => self.hold(packet),
                Unsealed::Drop => self.stats.no_session += 1,
            }
            return false;
        };
        let session = &mut self.sessions[current];
        session.seal(packet, out);
        self.stats.packets_sealed += 1;
        if session.bytes_sealed >= self.config.rekey_after_bytes {
            self.want_initiation(now);
        }
        true
    }

    /// Keeps `packet` until a session can carry it, or drops it (counted)
    /// when [`HELD_PACKETS`] already wait.
    fn hold(&mut self, packet: &[u8]) {
        if self.held.len() >= HELD_PACKETS {
            self.stats.no_session += 1;
        } else {
            self.held.push_back(packet.to_vec());
        }
    }

    /// Seals what [`SecureLink::hold`] kept, once a session can carry it.
    fn release_held(&mut self, now: Instant) {
        let Some(current) = self.current(now) else {
            return;
        };
        while let Some(packet) = self.held.pop_front() {
            let mut datagram = Vec::with_capacity(packet.len() + frame::OVERHEAD);
            self.sessions[current].seal(&packet, &mut datagram);
            self.stats.packets_sealed += 1;
            self.outbox.push_back(datagram);
        }
    }

    /// An initiation is needed: at once, unless one is already scheduled.
    fn want_initiation(&mut self, now: Instant) {
        if self.next_initiation.is_none() {
            self.next_initiation = Some(now);
            self.retry = RETRY_FIRST;
        }
    }

    /// Authenticates a datagram that arrived and opens it; nothing in it
    /// is read before it is authenticated.
    pub fn open(&mut self, now: Instant, datagram: &[u8]) -> Opened<'_> {
        let frame = match Frame::parse(datagram) {
            Ok(frame) => frame,
            Err(err) => return self.refuse(AuthFailure::Malformed(err)),
        };
        let outcome = match frame {
            Frame::Initiation { sender, noise } => self.answer(now, sender, noise),
            Frame::Response {
                sender,
                receiver,
                noise,
            } => self.complete(now, sender, receiver, noise),
            Frame::Data {
                receiver,
                counter,
                sealed,
            } => self.open_data(now, receiver, counter, sealed),
        };
        match outcome {
            Ok(Taken::Packet) => Opened::Packet(&self.scratch),
            Ok(Taken::Reply) => Opened::Reply(&self.scratch),
            Ok(Taken::Control) => Opened::Control,
            Err(failure) => self.refuse(failure),
        }
    }

    fn refuse(&mut self, failure: AuthFailure) -> Opened<'static> {
        *self.stats.auth_failures.entry(failure.label()).or_default() += 1;
        Opened::Dropped(failure)
    }

    fn builder(&self) -> snow::Builder<'_> {
        snow::Builder::new(noise_params())
            .local_private_key(self.config.private_key.bytes())
            .and_then(|b| b.remote_public_key(self.config.peer_public_key.bytes()))
            .and_then(|b| b.prologue(PROLOGUE))
            .expect("keys of Curve25519's length")
    }

    fn new_index(&self) -> u32 {
        loop {
            let index = rand::random::<u32>();
            let taken = self.sessions.iter().any(|s| s.local_index == index)
                || self.pending.iter().any(|p| p.index == index);
            if !taken {
                return index;
            }
        }
    }

    /// The timestamp of a new initiation: the wall clock, or just after
    /// the previous one if the clock has not moved past it.
    fn timestamp(&mut self, now: Instant) -> [u8; TIMESTAMP_LEN] {
        let wall = self.wall_at_origin + now.saturating_since(self.origin);
        let nanos = wall.as_nanos().max(self.last_timestamp + 1);
        self.last_timestamp = nanos;
        let mut stamp = [0; TIMESTAMP_LEN];
        stamp[..8].copy_from_slice(&((nanos / 1_000_000_000) as u64).to_be_bytes());
        stamp[8..].copy_from_slice(&((nanos % 1_000_000_000) as u32).to_be_bytes());
        stamp
    }

    fn send_initiation(&mut self, now: Instant) {
        let mut handshake = self
            .builder()
            .build_initiator()
            .expect("snow's default resolver has KK's primitives");
        let index = self.new_index();
        let stamp = self.timestamp(now);
        let mut message = Vec::with_capacity(INITIATION_LEN);
        frame::initiation_header(index, &mut message);
        let start = message.len();
        message.resize(INITIATION_LEN, 0);
        handshake
            .write_message(&stamp, &mut message[start..])
            .expect("an initiation fits its buffer");
        self.outbox.push_back(message);
        self.pending.push_back(Pending { index, handshake });
        if self.pending.len() > PENDING_KEPT {
            self.pending.pop_front();
        }
        self.stats.initiations_sent += 1;
    }

    /// The peer's initiation: authenticated (its key), fresh (its
    /// timestamp), answered with a new session's response.
    fn answer(&mut self, now: Instant, sender: u32, noise: &[u8]) -> Result<Taken, AuthFailure> {
        if !self.initiations_read.take(now) {
            return Err(AuthFailure::HandshakeRate);
        }
        let mut handshake = self
            .builder()
            .build_responder()
            .expect("snow's default resolver has KK's primitives");
        let mut stamp = [0; 64];
        let len = handshake
            .read_message(noise, &mut stamp)
            .map_err(|_| AuthFailure::BadHandshake)?;
        let stamp: [u8; TIMESTAMP_LEN] = stamp[..len].try_into().map_err(|_| AuthFailure::BadHandshake)?;
        if self.peer_timestamp.is_some_and(|latest| stamp <= latest) {
            return Err(AuthFailure::StaleInitiation);
        }
        self.peer_timestamp = Some(stamp);
        let index = self.new_index();
        self.scratch.clear();
        frame::response_header(index, sender, &mut self.scratch);
        let start = self.scratch.len();
        self.scratch.resize(RESPONSE_LEN, 0);
        handshake
            .write_message(&[], &mut self.scratch[start..])
            .expect("a response fits its buffer");
        let transport = handshake
            .into_stateless_transport_mode()
            .expect("the responder's handshake is done once it has answered");
        self.keep(Session::new(index, sender, transport, now, false));
        self.stats.responses_sent += 1;
        Ok(Taken::Reply)
    }

    /// The answer to one of our initiations: a session we send with at
    /// once, confirmed to the peer by a keepalive on it.
    fn complete(
        &mut self,
        now: Instant,
        sender: u32,
        receiver: u32,
        noise: &[u8],
    ) -> Result<Taken, AuthFailure> {
        let position = self
            .pending
            .iter()
            .position(|p| p.index == receiver)
            .ok_or(AuthFailure::UnknownSession)?;
        let Pending { index, mut handshake } = self.pending.remove(position).expect("found");
        let mut nothing = [0; 64];
        handshake
            .read_message(noise, &mut nothing)
            .map_err(|_| AuthFailure::BadHandshake)?;
        let transport = handshake
            .into_stateless_transport_mode()
            .expect("the initiator's handshake is done once it has read the answer");
        let mut session = Session::new(index, sender, transport, now, true);
        let mut keepalive = Vec::with_capacity(frame::OVERHEAD);
        session.seal(&[], &mut keepalive);
        self.outbox.push_back(keepalive);
        self.keep(session);
        self.release_held(now);
        // The earlier initiations' answers would only make more sessions.
        self.pending.clear();
        self.next_initiation = None;
        self.stats.handshakes_completed += 1;
        Ok(Taken::Control)
    }

    fn open_data(
        &mut self,
        now: Instant,
        receiver: u32,
        counter: u64,
        sealed: &[u8],
    ) -> Result<Taken, AuthFailure> {
        let session = self
            .sessions
            .iter_mut()
            .find(|s| s.local_index == receiver)
            .ok_or(AuthFailure::UnknownSession)?;
        session
            .open(counter, sealed, &mut self.scratch)
            .map_err(|err| match err {
                OpenError::Replay => AuthFailure::Replay,
                OpenError::Tag => AuthFailure::BadTag,
            })?;
        if session.usable_since.is_none() {
            session.usable_since = Some(now);
            self.stats.sessions_confirmed += 1;
            self.note_first_session(now);
            self.release_held(now);
        }
        if self.scratch.is_empty() {
            // A keepalive.
            return Ok(Taken::Control);
        }
        self.stats.packets_opened += 1;
        Ok(Taken::Packet)
    }

    fn keep(&mut self, session: Session) {
        if session.usable_since.is_some() {
            self.note_first_session(session.made_at);
        }
        self.sessions.push(session);
        if self.sessions.len() > SESSIONS_KEPT
            && let Some(oldest) = (0..self.sessions.len()).min_by_key(|&i| self.sessions[i].made_at)
        {
            self.sessions.swap_remove(oldest);
        }
    }

    fn note_first_session(&mut self, now: Instant) {
        if self.stats.first_session_after.is_none() {
            self.stats.first_session_after = Some(now.saturating_since(self.origin));
        }
    }

    /// The next datagram of ours for the peer (initiations, keepalives,
    /// held packets once sealed).
    pub fn poll_transmit(&mut self) -> Option<Vec<u8>> {
        self.outbox.pop_front()
    }

    /// When [`SecureLink::handle_timeout`] has work next.
    pub fn poll_timeout(&self, now: Instant) -> Option<Instant> {
        let expiry = self.expiry();
        let expiries = self.sessions.iter().map(|s| s.made_at + expiry);
        // While an initiation is scheduled, it is the next thing to do
        // about sessions.
        let initiation = self.next_initiation.or_else(|| self.rekey_at(now));
        initiation.into_iter().chain(expiries).min()
    }

    /// Forgets expired sessions, and sends an initiation if one is due.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expiry = self.expiry();
        self.sessions
            .retain(|s| now.saturating_since(s.made_at) < expiry && !s.exhausted());
        if self.rekey_at(now).is_none_or(|at| at <= now) {
            self.want_initiation(now);
        } else {
            // A fresh session came from the peer's handshake meanwhile.
            self.next_initiation = None;
        }
        if let Some(at) = self.next_initiation
            && at <= now
        {
            self.send_initiation(now);
            self.next_initiation = Some(now + self.retry);
            self.retry = (self.retry * 2).min(RETRY_LONGEST);
        }
    }
}

/// What an accepted datagram left in `scratch`.
enum Taken {
    Packet,
    Reply,
    Control,
}
