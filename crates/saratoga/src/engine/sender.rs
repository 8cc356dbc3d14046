//! The sending end of a session: METADATA, then DATA paced by the engine,
//! re-sending what STATUS frames report missing.
//!
//! Nothing that arrived is sent twice. Every DATA frame gets a serial,
//! and the transmissions not yet settled are kept with when they went:
//! the first pass's as its frames' ends in order (what it has sent but not
//! settled is one range), re-sends in a log. A transmission is *settled*
//! once a STATUS shows whether it arrived; a hole is re-sent only where
//! no transmission is still in flight and no re-send is queued. Two
//! things settle, the link being FIFO:
//!
//! - A STATUS in answer to a request names, in its in-response-to, the
//!   offset of the frame that asked: every frame sent up to that one has
//!   arrived or is lost by then. For that the offset must name one frame:
//!   a frame does not ask at an offset where an earlier request is still
//!   unanswered (the next frame asks instead), nor does a probe.
//! - From a peer that has never answered a request exactly (Vallona, or
//!   a peer that echoes the wrong offset), any STATUS arriving at `t`
//!   settles what was sent before `t − 2 rtt`, `rtt` being the time from
//!   the start to the first STATUS: it left the receiver after those had
//!   arrived, unless a queue grew beyond a round trip since the start (a
//!   hole re-sent twice then, counted). So such a peer is still repaired.
//!   A peer that answers requests is settled by its answers alone: a time
//!   rule would take for lost what waits in a queue.
//!
//! A STATUS that lists no hole but whose progress falls short of the end
//! (Vallona never lists the tail) may report the tail missing, or only
//! not there yet: a peer's STATUS can leave it while our DATA waits in
//! its socket's queue, longer than the round trip measured at the start.
//! A STATUS that answered a request exactly settles that (everything sent
//! before the request arrived or is lost). From a peer that never does,
//! the tail is taken for missing only once the whole file has gone and a
//! while after the last DATA (at least the status interval and two round
//! trips), that while doubling each time it is taken for missing without
//! the peer acknowledging more: a peer whose reports lag, or that never
//! reports the end, costs a few re-sends of the tail, not one per STATUS.
//!
//! The transfer is complete only on a STATUS covering the whole file (no
//! hole, progress at its end, not past it) once every byte has been sent:
//! one covering bytes not sent yet is about something else. A STATUS
//! whose progress or holes reach past the end of the file is about
//! another transfer (a session the peer finished earlier under the same
//! id): the transfer fails at once, as nothing it says is about this one.
//!
//! A put may ask first with a PUT REQUEST naming the file (the engine's
//! `put_requested`; its blind `put` does not), repeated with backoff
//! until the peer answers; the METADATA waits for that answer. Any other
//! transfer starts with its METADATA.
//!
//! DATA starts at once after the METADATA, without waiting to hear that
//! it arrived. Until a STATUS confirms it did, the METADATA is sent again
//! with every request for a STATUS, so that a lost METADATA costs the
//! frames up to the next request (dropped by the receiver, then re-sent),
//! not the whole first pass.
//!
//! A sender that has sent everything asks for a STATUS with a *probe*:
//! an empty DATA frame with request-status set, at an offset from the
//! file's end down (size, size − 1, …) where no request is unanswered.
//! Probes back off (doubling up to the configured maximum) while the peer
//! is silent. The transfer fails once it has made no progress (more bytes
//! acknowledged in order, or another set of holes) for the inactivity
//! timeout: a sender whose peer has gone stops instead of re-sending at
//! full rate, and so does one whose peer keeps talking without ever
//! acknowledging more (the failure says which).

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::time::Duration;

use scps_node::Instant;

use super::config::Config;
use super::event::{Event, FailReason, Operation, TransferId};
use super::outbox::Outbox;
use super::ranges::RangeSet;
use super::store::{Store, StoreError};
use crate::wire::{
    Checksum, Data, Descriptor, DirEntry, Frame, Hole, Metadata, Status, TransferType, progress_from_wire,
};

/// Where the bytes come from.
#[derive(Debug)]
pub(crate) enum Source {
    /// A file in the store, by its store name.
    File(String),
    /// A directory listing built when the request came.
    Listing(Vec<u8>),
}

/// What a sender is to send.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub operation: Operation,
    pub source: Source,
    /// The METADATA's directory entry: the name and size announced.
    pub entry: DirEntry,
    pub checksum: Checksum,
    /// Delete the file once the receiver has it all (GET+DELETE served).
    pub delete_after: bool,
    /// A PUT REQUEST to have answered before the METADATA goes.
    pub ask: Option<Vec<u8>>,
}

/// One transmission, until a STATUS settles it.
#[derive(Debug, Clone)]
struct Sent {
    serial: u64,
    at: Instant,
    range: Range<u64>,
}

#[derive(Debug)]
pub(crate) struct Sender {
    pub id: TransferId,
    pub operation: Operation,
    source: Source,
    metadata: Metadata,
    size: u64,
    descriptor: Descriptor,
    /// Delete the file once the receiver has it all (GET+DELETE served).
    delete_after: bool,
    /// The first pass has sent `0..next_new`.
    next_new: u64,
    resend: RangeSet,
    /// First-pass frames not settled: their serial, when sent and end
    /// offset, in order.
    first_pass: VecDeque<(u64, Instant, u64)>,
    /// First-pass bytes below this are settled.
    first_pass_settled: u64,
    /// Re-sends not settled.
    resent: VecDeque<Sent>,
    serial: u64,
    /// Offsets of frames that asked for a STATUS → their serials and
    /// when they went.
    requests: BTreeMap<u64, (u64, Instant)>,
    frames_since_request: u32,
    probes: u64,
    probe_at: Option<Instant>,
    probe_interval: Duration,
    /// A STATUS has said the METADATA arrived.
    metadata_confirmed: bool,
    /// The PUT REQUEST, until the peer answers it.
    asking: Option<Vec<u8>>,
    started: Instant,
    /// The time from the start to the first STATUS: a round trip with
    /// whatever queue the first frames met.
    rtt: Option<Duration>,
    /// The peer has answered a request of ours (its in-response-to named
    /// one): its answers settle what was sent, not time.
    answers_requests: bool,
    /// Whether any STATUS came for the session (the REQUEST's answer too).
    heard: bool,
    /// When a STATUS last came (or the start), and when one last showed
    /// progress.
    last_heard: Instant,
    last_progress: Instant,
    /// When the last DATA with bytes in it went.
    last_data_at: Option<Instant>,
    /// How long after the last DATA a peer that never answers a request
    /// exactly must report a tail short before it is re-sent (see the
    /// module's notes).
    tail_wait: Duration,
    /// The holes the last STATUS listed.
    holes: Vec<Hole>,
    acked: u64,
    pub done: bool,
    /// Completed, and not yet taken by [`Sender::take_success`].
    succeeded: bool,
}

impl Sender {
    /// Announces the transfer (METADATA) and is ready to send DATA.
    pub fn start(
        now: Instant,
        id: TransferId,
        outgoing: Outgoing,
        config: &Config,
        out: &mut Outbox,
    ) -> Sender {
        let Outgoing {
            operation,
            source,
            entry,
            checksum,
            delete_after,
            ask,
        } = outgoing;
        let size = entry.size;
        let descriptor = super::descriptor_for(size);
        let transfer_type = match source {
            Source::File(_) => TransferType::File,
            Source::Listing(_) => TransferType::Directory,
        };
        let metadata = Metadata {
            descriptor,
            transfer_type,
            terminated: false,
            udp_lite: false,
            session: id.session,
            checksum,
            entry,
        };
        match &ask {
            Some(request) => out.control.push_back((id.peer, request.clone())),
            None => out.send(id.peer, &Frame::Metadata(metadata.clone())),
        }
        out.event(Event::Started {
            id,
            operation,
            name: metadata.entry.name.clone(),
            size,
        });
        Sender {
            id,
            operation,
            source,
            metadata,
            size,
            descriptor,
            delete_after,
            next_new: 0,
            resend: RangeSet::new(),
            first_pass: VecDeque::new(),
            first_pass_settled: 0,
            resent: VecDeque::new(),
            serial: 0,
            requests: BTreeMap::new(),
            frames_since_request: 0,
            probes: 0,
            // An empty file has nothing to send: ask at once (a REQUEST
            // is repeated on the same timer).
            probe_at: if ask.is_some() {
                Some(now + config.status_interval)
            } else {
                (size == 0).then_some(now)
            },
            probe_interval: config.status_interval,
            metadata_confirmed: false,
            asking: ask,
            started: now,
            rtt: None,
            answers_requests: false,
            heard: false,
            last_heard: now,
            last_progress: now,
            last_data_at: None,
            tail_wait: config.status_interval,
            holes: Vec::new(),
            acked: 0,
            done: false,
            succeeded: false,
        }
    }

    pub fn has_data(&self) -> bool {
        !self.done && self.asking.is_none() && (!self.resend.is_empty() || self.next_new < self.size)
    }

    fn max_payload(&self, config: &Config) -> u64 {
        (config
            .max_datagram
            .saturating_sub(Data::header_len(self.descriptor, false)) as u64)
            .max(1)
    }

    /// The next DATA frame's range, without taking it.
    fn next_range(&self, config: &Config) -> Option<Range<u64>> {
        if self.asking.is_some() {
            return None;
        }
        let max = self.max_payload(config);
        if let Some(first) = self.resend.first() {
            return Some(first.start..first.end.min(first.start + max));
        }
        (self.next_new < self.size).then(|| self.next_new..self.size.min(self.next_new + max))
    }

    /// Length of the next DATA datagram, if there is one.
    pub fn next_len(&self, config: &Config) -> Option<usize> {
        let range = self.next_range(config)?;
        Some(Data::header_len(self.descriptor, false) + (range.end - range.start) as usize)
    }

    /// Builds the next DATA frame.
    pub fn next_data<S: Store>(
        &mut self,
        now: Instant,
        config: &Config,
        store: &S,
        out: &mut Outbox,
    ) -> Result<Option<Vec<u8>>, FailReason> {
        let Some(range) = self.next_range(config) else {
            return Ok(None);
        };
        let resent = !self.resend.is_empty();
        if resent {
            self.resend.remove(range.clone());
            out.stats.data_bytes_resent += range.end - range.start;
        } else {
            self.next_new = range.end;
        }
        let mut payload = vec![0; (range.end - range.start) as usize];
        match &self.source {
            Source::File(name) => {
                let read = store
                    .read_at(name, range.start, &mut payload)
                    .map_err(FailReason::Store)?;
                if read < payload.len() {
                    return Err(FailReason::Store(StoreError::Io(format!(
                        "{name} ends at {} while being sent ({} bytes announced)",
                        range.start + read as u64,
                        self.size
                    ))));
                }
            }
            Source::Listing(bytes) => {
                payload.copy_from_slice(&bytes[range.start as usize..range.end as usize])
            }
        }
        self.frames_since_request += 1;
        let last_of_pass = !self.has_data();
        let request_status = (last_of_pass || self.frames_since_request >= config.status_every_frames)
            && !self.requests.contains_key(&range.start);
        // End of data marks the frame that carries the last byte, whenever
        // it goes: not every re-send after the first pass, nor a probe.
        let end_of_data = range.end == self.size;
        let frame = self.data_frame(now, range.start, &payload, !resent, request_status, end_of_data);
        if request_status && !self.metadata_confirmed {
            self.resend_metadata(out);
        }
        if last_of_pass {
            // A pass that could not ask on its last frame asks with a probe.
            let wait = if request_status {
                self.probe_interval
            } else {
                Duration::ZERO
            };
            self.probe_at = Some(now + wait);
        }
        out.stats.data_frames_sent += 1;
        out.stats.data_bytes_sent += payload.len() as u64;
        self.last_data_at = Some(now);
        Ok(Some(frame))
    }

    /// A DATA frame, logged until settled (`first_pass`: it extends the
    /// first pass, else it is a re-send or, empty, a probe).
    fn data_frame(
        &mut self,
        now: Instant,
        offset: u64,
        payload: &[u8],
        first_pass: bool,
        request_status: bool,
        end_of_data: bool,
    ) -> Vec<u8> {
        self.serial += 1;
        let end = offset + payload.len() as u64;
        if first_pass {
            self.first_pass.push_back((self.serial, now, end));
        } else if end > offset {
            self.resent.push_back(Sent {
                serial: self.serial,
                at: now,
                range: offset..end,
            });
        }
        if request_status {
            // Only a probe at an offset every other has taken (an empty
            // file has one) finds a request there: the earlier one is
            // kept, so an answer settles no more than it shows.
            self.requests.entry(offset).or_insert((self.serial, now));
            self.frames_since_request = 0;
        }
        let data = Data {
            descriptor: self.descriptor,
            transfer_type: self.metadata.transfer_type,
            request_status,
            end_of_data,
            session: self.id.session,
            timestamp: None,
            offset,
            payload,
        };
        let mut bytes = Vec::with_capacity(Data::header_len(self.descriptor, false) + payload.len());
        // The offset is at most the size, which the descriptor was chosen to hold.
        data.emit(&mut bytes)
            .expect("offsets fit the descriptor chosen for the size");
        bytes
    }

    pub fn handle_status<S: Store>(
        &mut self,
        now: Instant,
        status: &Status,
        config: &Config,
        store: &mut S,
        out: &mut Outbox,
    ) {
        self.last_heard = now;
        self.heard = true;
        self.probe_interval = config.status_interval;
        if !status.error.is_success() {
            self.fail(FailReason::Peer(status.error), out);
            return;
        }
        if let Some(progress) = self.past_the_end(status) {
            let reason = FailReason::ForeignStatus {
                progress,
                size: self.size,
            };
            self.fail(reason, out);
            return;
        }
        if self.asking.take().is_some() {
            // The PUT is accepted: the transfer starts now.
            self.started = now;
            self.last_progress = now;
            self.resend_metadata(out);
            self.probe_at = (self.size == 0).then_some(now);
            return;
        }
        if !status.metadata_received {
            self.resend_metadata(out);
            return;
        }
        self.metadata_confirmed = true;
        let exact = self.settle(now, status);
        let holes: Vec<Range<u64>> = status.holes.iter().map(Hole::range).collect();
        // Inclusive progress 0 without a hole is one byte or none. One only
        // if this STATUS settled the first frame (byte 0 had arrived or was
        // lost when it left; our receivers would then list it missing):
        // one sent before the DATA went says nothing about it. A peer that
        // lists no holes at all (Vallona) and lost byte 0 still reads as
        // one byte; it cannot be told apart.
        let first_hole = holes
            .first()
            .map(|h| h.start)
            .or((self.first_pass_settled == 0).then_some(0));
        // At most the size: a peer writing progress exclusive (the
        // drafts' other reading) says `size` for a whole file.
        let in_order = progress_from_wire(status.progress, first_hole).min(self.size);
        let mut missing: RangeSet = holes.iter().cloned().collect();
        if holes.is_empty() && in_order < self.size && self.tail_missing(now, exact, config) {
            missing.insert(in_order..self.size);
        }
        let mut in_flight: RangeSet = self.resent.iter().map(|sent| sent.range.clone()).collect();
        in_flight.insert(self.first_pass_settled..self.next_new);
        for gap in missing.iter() {
            for lost in in_flight.gaps(gap.start..gap.end.min(self.next_new)) {
                self.resend.insert(lost);
            }
        }
        if in_order > self.acked || status.holes != self.holes {
            self.last_progress = now;
            self.holes.clone_from(&status.holes);
        }
        if in_order > self.acked {
            self.acked = in_order;
            self.tail_wait = config.status_interval;
            out.event(Event::Progress {
                id: self.id,
                bytes: in_order,
                size: self.size,
            });
        }
        let covered = holes.is_empty() && status.all_holes && in_order >= self.size;
        if covered && self.next_new >= self.size {
            self.complete(store, out);
        } else if !self.has_data() {
            self.probe_at = Some(now + self.probe_interval);
        }
    }

    /// The progress or hole end of `status` that lies past the end of the
    /// file in either reading of them (inclusive, or exclusive, where a
    /// whole file's progress is its size), if one does.
    fn past_the_end(&self, status: &Status) -> Option<u64> {
        let hole_ends = status.holes.iter().map(|hole| hole.end);
        std::iter::once(status.progress)
            .chain(hole_ends)
            .find(|offset| *offset > self.size)
    }

    /// Whether a STATUS at `now` that lists no hole but falls short of the
    /// end reports the tail missing (see the module's notes): `exact`, it
    /// answered a request of ours.
    fn tail_missing(&mut self, now: Instant, exact: bool, config: &Config) -> bool {
        if exact {
            return true;
        }
        let Some(last) = self.last_data_at else {
            return false;
        };
        let rtt = self.rtt.unwrap_or_default();
        if self.next_new < self.size || now < last + self.tail_wait.max(2 * rtt) {
            return false;
        }
        // Saturating: any interval the configuration allows is safe.
        self.tail_wait = self.tail_wait.saturating_mul(2).min(config.status_interval_max);
        true
    }

    /// Settles what `status`, arriving at `now`, shows arrived or lost
    /// (see the module's notes); whether it answered a request exactly.
    fn settle(&mut self, now: Instant, status: &Status) -> bool {
        let answered = (!status.voluntary)
            .then(|| self.requests.get(&status.in_response_to).copied())
            .flatten();
        self.answers_requests |= answered.is_some();
        let rtt = *self.rtt.get_or_insert(now.saturating_since(self.started));
        let serial = answered.map_or(0, |(serial, _)| serial);
        // A peer that answers requests settles by its answers alone: a
        // time rule would take for lost what waits in a queue (a socket
        // buffer, a link's) longer than the round trip it measured. One
        // that never does is settled by time, with a round trip's margin:
        // sent before `now - 2 rtt`, it arrived before the STATUS left.
        let by_time = !self.answers_requests;
        let settled = |s: u64, at: Instant| s <= serial || (by_time && at + 2 * rtt < now);
        while let Some(&(_, _, end)) = self.first_pass.front().filter(|(s, at, _)| settled(*s, *at)) {
            self.first_pass_settled = end;
            self.first_pass.pop_front();
        }
        while self
            .resent
            .front()
            .is_some_and(|sent| settled(sent.serial, sent.at))
        {
            self.resent.pop_front();
        }
        self.requests.retain(|_, (s, at)| !settled(*s, *at));
        answered.is_some()
    }

    fn complete<S: Store>(&mut self, store: &mut S, out: &mut Outbox) {
        self.done = true;
        if self.delete_after
            && let Source::File(name) = &self.source
            && let Err(error) = store.delete(name)
        {
            out.event(Event::Failed {
                id: self.id,
                reason: FailReason::Store(error),
            });
            return;
        }
        self.succeeded = true;
        out.event(Event::Completed {
            id: self.id,
            operation: self.operation,
            name: self.metadata.entry.name.clone(),
            size: self.size,
        });
    }

    /// Whether it completed since this was last asked: the peer answered
    /// from where it says it is.
    pub fn take_success(&mut self) -> bool {
        std::mem::take(&mut self.succeeded)
    }

    /// Sends the METADATA again (the peer repeated its REQUEST, or said it
    /// has none).
    pub fn resend_metadata(&self, out: &mut Outbox) {
        out.send(self.id.peer, &Frame::Metadata(self.metadata.clone()));
    }

    pub fn fail(&mut self, reason: FailReason, out: &mut Outbox) {
        self.done = true;
        out.event(Event::Failed { id: self.id, reason });
    }

    pub fn poll_timeout(&self, config: &Config) -> Option<Instant> {
        if self.done {
            return None;
        }
        let deadline = self.last_progress + config.inactivity_timeout;
        let probe = self.probe_at.filter(|_| !self.has_data());
        Some(probe.map_or(deadline, |probe| probe.min(deadline)))
    }

    pub fn handle_timeout(&mut self, now: Instant, config: &Config, out: &mut Outbox) {
        if self.done {
            return;
        }
        if let Some(stuck) = stuck_for(now, self.last_progress, config) {
            let reason = match self.heard {
                true => FailReason::Unacknowledged {
                    acked: self.acked,
                    size: self.size,
                    stuck,
                },
                false => FailReason::Timeout(now.saturating_since(self.last_heard)),
            };
            self.fail(reason, out);
            return;
        }
        if self.has_data() || self.probe_at.is_none_or(|at| at > now) {
            return;
        }
        if let Some(request) = &self.asking {
            out.control.push_back((self.id.peer, request.clone()));
            self.back_off(now, config);
            return;
        }
        // From the end down, skipping offsets with a request unanswered.
        let span = self.size.saturating_add(1);
        let skip = (0..=self.requests.len() as u64)
            .find(|k| {
                let offset = self.size - (self.probes + k) % span;
                !self.requests.contains_key(&offset)
            })
            .unwrap_or(0);
        let offset = self.size - (self.probes + skip) % span;
        self.probes += skip + 1;
        if !self.metadata_confirmed {
            self.resend_metadata(out);
        }
        let probe = self.data_frame(now, offset, &[], false, true, false);
        out.control.push_back((self.id.peer, probe));
        self.back_off(now, config);
    }

    /// The next probe (or REQUEST) waits twice as long, up to the maximum.
    fn back_off(&mut self, now: Instant, config: &Config) {
        // Saturating: any interval the configuration allows is safe.
        self.probe_interval = self
            .probe_interval
            .saturating_mul(2)
            .min(config.status_interval_max);
        self.probe_at = Some(now + self.probe_interval);
    }
}

/// How long a transfer has made no progress, once that is the inactivity
/// timeout or more: it fails then. Each end says why (whether the peer
/// was heard from at all, and what it acknowledged).
pub(crate) fn stuck_for(now: Instant, last_progress: Instant, config: &Config) -> Option<Duration> {
    let stuck = now.saturating_since(last_progress);
    (stuck >= config.inactivity_timeout).then_some(stuck)
}
