//! One session: the transport keys a handshake gave, each direction's
//! counter, and what has arrived.

use scps_node::Instant;

use crate::frame::{self, TAG_LEN};
use crate::replay::ReplayWindow;

/// Why a data message did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpenError {
    /// Its counter was taken before, or is too old.
    Replay,
    /// Its tag does not authenticate it under this session's key.
    Tag,
}

pub(crate) struct Session {
    /// The index we chose: the receiver index of the peer's data.
    pub(crate) local_index: u32,
    /// The index the peer chose: the receiver index of ours.
    remote_index: u32,
    transport: snow::StatelessTransportState,
    /// When the handshake that made it ended.
    pub(crate) made_at: Instant,
    /// Since when it carries our packets: at once for a session we
    /// initiated, once the peer has used it for one we answered (it then
    /// knows the keys: the key confirmation Noise leaves to the
    /// application).
    pub(crate) usable_since: Option<Instant>,
    /// Whether we initiated its handshake.
    pub(crate) initiated: bool,
    /// The counter of our next data message.
    next_counter: u64,
    /// Plaintext bytes sealed with it (the volume that calls for a rekey).
    pub(crate) bytes_sealed: u64,
    arrived: ReplayWindow,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("local_index", &self.local_index)
            .field("remote_index", &self.remote_index)
            .field("made_at", &self.made_at)
            .field("usable_since", &self.usable_since)
            .field("initiated", &self.initiated)
            .field("next_counter", &self.next_counter)
            .finish()
    }
}

impl Session {
    pub(crate) fn new(
        local_index: u32,
        remote_index: u32,
        transport: snow::StatelessTransportState,
        now: Instant,
        initiated: bool,
    ) -> Session {
        Session {
            local_index,
            remote_index,
            transport,
            made_at: now,
            usable_since: initiated.then_some(now),
            initiated,
            next_counter: 0,
            bytes_sealed: 0,
            arrived: ReplayWindow::default(),
        }
    }

    /// Appends to `out` a data message carrying `payload`.
    pub(crate) fn seal(&mut self, payload: &[u8], out: &mut Vec<u8>) {
        let counter = self.next_counter;
        self.next_counter += 1;
        self.bytes_sealed += payload.len() as u64;
        frame::data_header(self.remote_index, counter, out);
        let start = out.len();
        out.resize(start + payload.len() + TAG_LEN, 0);
        self.transport
            .write_message(counter, payload, &mut out[start..])
            .expect("a payload of a datagram is within Noise's 65535 bytes");
    }

    /// Authenticates and decrypts a data message of this session into
    /// `out` (resized to the plaintext), and records its counter.
    pub(crate) fn open(&mut self, counter: u64, sealed: &[u8], out: &mut Vec<u8>) -> Result<(), OpenError> {
        if !self.arrived.admits(counter) {
            return Err(OpenError::Replay);
        }
        out.resize(sealed.len(), 0);
        let len = self
            .transport
            .read_message(counter, sealed, out)
            .map_err(|_| OpenError::Tag)?;
        out.truncate(len);
        self.arrived.take(counter);
        Ok(())
    }

    /// Whether the counters have run out: a session is never used past
    /// 2^60 messages (then a rekey has long been asked for).
    pub(crate) fn exhausted(&self) -> bool {
        self.next_counter >= 1 << 60
    }
}
