//! One TCP/SCPS-TP connection: the state machine of RFC 9293 section 3.3.2
//! with its send and receive sides.
//!
//! A connection knows nothing of IP: the endpoint demultiplexes packets to
//! it, hands it parsed segments and wraps what it emits. It is driven by
//! [`Connection::handle_tcp_segment`] (or
//! [`Connection::handle_compressed_segment`]), [`Connection::handle_timeout`]
//! and [`Connection::poll_transmit_packet`], and asks to be woken at
//! [`Connection::poll_timeout`].

mod ack;
mod ack_policy;
mod auto_rate;
mod compression;
mod corruption;
mod handshake;
mod header_room;
mod input;
mod mss_adapt;
mod outage;
mod output;
mod pacer;
mod receive;
mod records;
mod recv_autotune;
mod recv_buffer;
mod reuse;
mod ring;
mod send_buffer;
mod snack;
mod soft_errors;
mod stats;
mod timeouts;
mod timers;
mod token_bucket;
mod unacceptable;
mod window_use;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::cc::CongestionControl;
use crate::config::Config;
use crate::recovery::Recovery;
use crate::recovery::rtt::RttEstimator;
use crate::recovery::scoreboard::Scoreboard;
use crate::time::Instant;

pub use handshake::ConnectionParams;
pub(crate) use handshake::default_mss;

/// The RFC 7323 timestamp clock at `now`: milliseconds plus a
/// per-connection `offset` (1 ms ticks, within RFC 7323 5.4's 1 ms to 1 s).
/// SYN cookies read it too, to carry bits in our timestamp.
pub(crate) fn timestamp_clock(now: Instant, offset: u32) -> u32 {
    // Wrapping is the timestamp clock's nature.
    ((now.as_nanos() / 1_000_000) as u32).wrapping_add(offset)
}
pub use reuse::REUSE_AFTER;
pub use stats::ConnectionStats;
pub(crate) use unacceptable::answer_budget;
pub use unacceptable::{ANSWERS_PER_SECOND, DESYNC_LIMIT};

use pacer::{Paced, Pacer};
pub use pacer::{PathCapacity, RateBudget};
use recv_buffer::RecvBuffer;
use send_buffer::SendBuffer;
use timers::{Timer, Timers};

/// The connection states of RFC 9293 section 3.3.2 (LISTEN belongs to the
/// endpoint's listeners).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    SynSent,
    SynReceived,
    Established,
    FinWait1,
    FinWait2,
    CloseWait,
    Closing,
    LastAck,
    TimeWait,
    Closed,
}

impl State {
    /// States in which both sides have exchanged SYNs (RFC 9293 calls them
    /// synchronized).
    pub fn is_synchronized(self) -> bool {
        !matches!(self, State::SynSent | State::SynReceived | State::Closed)
    }

    /// States in which we may still send data.
    fn can_send_data(self) -> bool {
        matches!(
            self,
            State::SynSent | State::SynReceived | State::Established | State::CloseWait
        )
    }

    /// States in which the peer may still send data.
    fn can_receive_data(self) -> bool {
        matches!(self, State::Established | State::FinWait1 | State::FinWait2)
    }
}

/// The addresses of a connection, from our side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FourTuple {
    pub local: SocketAddr,
    pub remote: SocketAddr,
}

/// Why a connection ended other than by an orderly close.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    #[error("connection refused: the peer answered the SYN with a reset")]
    Refused,
    #[error("connection reset by the peer")]
    Reset,
    #[error("no answer to the SYN after {retransmissions} retransmissions")]
    HandshakeTimedOut { retransmissions: u32 },
    #[error(
        "connection timed out: no acknowledgment after {retransmissions} retransmissions over {waited:?}"
    )]
    TimedOut { retransmissions: u32, waited: Duration },
    #[error("connection timed out: {probes} keepalive probes unanswered")]
    KeepaliveTimedOut { probes: u32 },
    #[error(
        "the peer is unreachable: {timeouts} retransmissions without an acknowledgment drew destination-unreachable errors"
    )]
    Unreachable { timeouts: u32 },
    #[error("connection aborted locally")]
    Aborted,
    #[error(
        "the peer acknowledged data never sent, {acks} segments in a row: the two ends are out of \
         step (a forged or stray segment was taken), reset"
    )]
    Desynchronized { acks: u32 },
}

/// Why an application call on a connection did not do what was asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// Nothing to read yet, or no room to write: wait for an event.
    #[error("operation would block")]
    WouldBlock,
    /// Writing after `shutdown` or `close`.
    #[error("the sending side is closed")]
    SendClosed,
    #[error(transparent)]
    Connection(#[from] ConnectionError),
}

/// What happened on a connection that the application may care about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed.
    Connected,
    /// Data became readable, or the peer closed its side (a read returns 0).
    Readable,
    /// Room appeared in the send buffer after a write was refused for lack
    /// of it.
    Writable,
    /// The connection is over: cleanly (`None`) or with an error.
    Closed(Option<ConnectionError>),
    /// The retransmission timer expired on data: the `consecutive`th time
    /// on the same data (for logs: nothing waits on it).
    Timeout {
        consecutive: u32,
    },
    /// A link outage began (signalled by the link layer, or deemed after
    /// timeouts) or ended (docs/spec/scps-tp-options.md, "Link outages"; for logs).
    OutageStarted {
        signalled: bool,
    },
    OutageEnded,
}

/// Options both sides agreed on in the SYN exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Negotiated {
    /// The MSS both sides work to: the smaller of the two MSS options, or
    /// the default when the peer sent none (RFC 9293 3.7.1).
    mss: u64,
    /// Maximum payload per segment we send (RFC 5681's SMSS, in the
    /// congestion window and SNACK units alike): the MSS less the options
    /// every segment carries (RFC 9293 3.7.1, RFC 6691); with header
    /// compression in force, what a packet of the path's size holds under
    /// the compressed header of a data segment (`handshake.rs`). A segment
    /// that needs more header than that carries less (`header_room.rs`).
    smss: u64,
    sack: bool,
    timestamps: bool,
    window_scaling: bool,
    /// Shift applied to windows the peer advertises (RFC 7323 2.3).
    send_shift: u8,
    /// Shift applied to windows we advertise.
    recv_shift: u8,
    /// Both SYNs carried the SCPS capabilities option.
    scps: bool,
    /// Both offered SNACK1: holes are named with the SNACK option.
    snack: bool,
    /// Both set the header compression bit: the id the peer's compressed
    /// headers carry (the contexts are in [`Connection::compression`]).
    compression: Option<std::num::NonZeroU8>,
}

/// The sending side (RFC 9293 3.3.1 "Send Sequence Variables"), as offsets
/// from the ISS (see `seq.rs`).
#[derive(Debug)]
struct Sender {
    iss: u32,
    /// Oldest unacknowledged sequence offset (SND.UNA).
    una: u64,
    /// Next new sequence offset to send (SND.NXT; retransmissions are
    /// driven by the scoreboard and never move it back).
    nxt: u64,
    /// The peer's window in bytes, scaled (SND.WND).
    wnd: u64,
    /// The largest window the peer has offered (sender SWS avoidance,
    /// RFC 9293 3.8.6.2.1).
    max_wnd: u64,
    /// SND.WL1 and SND.WL2.
    wl1: u64,
    wl2: u64,
    buf: SendBuffer,
    /// The application has no more to send: a FIN follows the data.
    fin_queued: bool,
    /// Time the last data went out, for RFC 5681 4.1 idle restarts.
    last_send: Instant,
    /// End of the last segment sent shorter than the MSS (Nagle).
    small_segment_end: u64,
}

impl Sender {
    /// Sequence offset one past the last byte written (the FIN's offset).
    fn data_end(&self) -> u64 {
        1 + self.buf.end()
    }

    fn fin_sent(&self) -> bool {
        self.fin_queued && self.nxt > self.data_end()
    }

    /// Whether our FIN has been acknowledged.
    fn fin_acked(&self) -> bool {
        self.fin_queued && self.una > self.data_end()
    }
}

/// The receiving side (RFC 9293 3.3.1 "Receive Sequence Variables").
#[derive(Debug)]
struct Receiver {
    irs: u32,
    buf: RecvBuffer,
    /// The right edge of the window last advertised, as a sequence offset;
    /// it never moves left (RFC 9293 3.8.6.2.2).
    adv_edge: u64,
    /// Sequence offset of the peer's FIN, once seen (possibly ahead of
    /// missing data).
    fin: Option<u64>,
    /// The FIN has been reached in order.
    fin_received: bool,
    /// Out-of-order ranges of stream offsets, most recently received first
    /// (RFC 2018 section 4: the first SACK block reports the latest).
    recent_out_of_order: VecDeque<std::ops::Range<u64>>,
    /// Holes to name in SNACKs.
    holes: snack::HoleTracker,
    /// Receive-buffer autotuning's measurements.
    tune: recv_autotune::Autotune,
}

impl Receiver {
    /// RCV.NXT as an offset from the IRS.
    fn nxt(&self) -> u64 {
        1 + self.buf.contiguous_end() + u64::from(self.fin_received)
    }
}

/// Acknowledgment bookkeeping.
#[derive(Debug, Default)]
struct AckState {
    /// Full-sized segments received since our last ACK.
    unacked_segments: u32,
    /// An ACK must go out now.
    immediate: bool,
    /// RCV.NXT as of the last segment we sent (RFC 7323 Last.ACK.sent).
    last_sent: u64,
    /// The forward segment rate, for the adaptive ACK policy.
    arrivals: ack_policy::ArrivalRate,
    /// Segments per ACK the adaptive policy last chose.
    every: u32,
}

/// RFC 7323 timestamp state.
#[derive(Debug)]
struct Timestamps {
    /// Added to our clock, so that the TSval does not reveal uptime.
    offset: u32,
    /// TS.Recent: the peer's timestamp to echo.
    recent: u32,
    /// When TS.Recent was last updated (RFC 7323 5.5, 24-day rule).
    recent_at: Instant,
}

/// A connection; see the module documentation.
#[derive(Debug)]
pub struct Connection {
    tuple: FourTuple,
    config: Arc<Config>,
    state: State,
    negotiated: Negotiated,
    snd: Sender,
    rcv: Receiver,
    board: Scoreboard,
    recovery: Recovery,
    rtt: RttEstimator,
    cc: Box<dyn CongestionControl>,
    timers: Timers,
    /// The route's token bucket, when the route has a rate.
    pacer: Option<Pacer>,
    ack: AckState,
    /// The adaptive segment size's estimate of the path's bit errors.
    sizer: mss_adapt::SegmentSizer,
    ts: Timestamps,
    handshake: handshake::Handshake,
    /// Unanswered keepalive probes.
    keepalive_probes: u32,
    /// Destination-unreachable reports (soft errors) about the peer.
    soft_errors: soft_errors::SoftErrors,
    /// Zero-window probes sent since the window closed (the backoff).
    persist_probes: u32,
    /// Probes sent since the peer last acknowledged anything: a peer that
    /// answers may keep its window closed for ever, a silent one may not.
    persist_unanswered: u32,
    /// Retransmission timeouts in a row on the same data.
    consecutive_timeouts: u32,
    /// When the first of those timeouts' segment was first sent.
    stalled_since: Option<Instant>,
    /// Congestion window and threshold before those timeouts, to resume
    /// at if they turn out not to have been congestion.
    window_before_timeouts: Option<(u64, u64)>,
    /// Losses are put down to corruption until then: the peer sent the
    /// corruption-experienced option.
    corruption_reported_until: Option<Instant>,
    /// We learnt of corruption on the path and owe the peer the
    /// corruption-experienced option.
    corruption_report_due: bool,
    /// The link is down: data is held back and probes go at a fixed
    /// interval.
    outage: Option<outage::Outage>,
    /// Since when the peer's silence counts: the last acceptable segment
    /// from it, or, if later, when our data began to wait on it after a
    /// quiet spell (keepalive's idle time, `dead_after`'s silence).
    silent_since: Instant,
    /// A reset must be sent (abort, or data for a closed application).
    send_reset: bool,
    /// A reset answering one unacceptable segment.
    pending_reset: Option<input::ResetReply>,
    /// Answers to unacceptable segments, and the ends' being in step.
    answers: unacceptable::Answers,
    /// The first lost segment goes out regardless of the congestion window
    /// (fast retransmit, NewReno partial ACK, timeout).
    force_retransmit: bool,
    /// Segments named by the peer's SNACKs and not yet resent: they go
    /// regardless of the congestion window too.
    snack_owed: usize,
    /// How the congestion window was used this round trip (whether ACKs
    /// may grow it).
    window_use: window_use::WindowUse,
    /// The persist timer fired: a window probe is owed.
    persist_due: bool,
    /// The keepalive timer fired: a probe is owed.
    keepalive_due: bool,
    /// The keepalive timer keeps `dead_after`'s schedule: data moves, the
    /// peer's (its last segment carried some) or ours (sent since, or
    /// awaiting its ACK).
    keepalive_busy: bool,
    /// The application has let go: data arriving now gets a reset.
    released: bool,
    /// The application asked for more room than the buffer had.
    want_writable: bool,
    /// A Readable event is outstanding (not yet followed by a read).
    readable_signalled: bool,
    events: VecDeque<Event>,
    error: Option<ConnectionError>,
    stats: Counters,
    /// Payload of the segment being emitted.
    scratch: Vec<u8>,
    /// Header compression: the id offered, the contexts once in force.
    compression: compression::HeaderCompression,
}

/// Counters kept as things happen; [`Connection::stats`] adds the rest.
#[derive(Debug, Default, Clone)]
struct Counters {
    bytes_written: u64,
    bytes_sent: u64,
    bytes_retransmitted: u64,
    bytes_acked: u64,
    bytes_read: u64,
    segments_sent: u64,
    segments_retransmitted: u64,
    segments_received: u64,
    segments_rejected: u64,
    fast_recoveries: u64,
    timeouts: u64,
    lost_retransmissions: u64,
    spurious_retransmissions: u64,
    snacks_sent: u64,
    snacked_segments: u64,
    corruption_reports_sent: u64,
    corruption_reports_received: u64,
    outages: u64,
    outage_probes: u64,
}

impl Connection {
    pub fn tuple(&self) -> FourTuple {
        self.tuple
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Turns Nagle's algorithm on or off from now on (the socket option
    /// TCP_NODELAY, RFC 9293 3.7.4): an application of small messages
    /// wants each sent when written.
    pub fn set_nagle(&mut self, on: bool) {
        if self.config.nagle != on {
            Arc::make_mut(&mut self.config).nagle = on;
        }
    }

    /// The error that ended the connection, if one did.
    pub fn error(&self) -> Option<ConnectionError> {
        self.error
    }

    /// Whether the endpoint may forget this connection: closed, and the
    /// application no longer holds it.
    pub fn is_drained(&self) -> bool {
        self.state == State::Closed && self.released && !self.send_reset && self.pending_reset.is_none()
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// Queues `data` for sending; returns how much was taken (all that fit
    /// in the send buffer). Data written before the handshake completes is
    /// sent after it.
    pub fn send(&mut self, data: &[u8]) -> Result<usize, StreamError> {
        self.check_sendable()?;
        let n = self.snd.buf.write(data);
        self.stats.bytes_written += n as u64;
        if n < data.len() {
            self.want_writable = true;
        }
        if n == 0 && !data.is_empty() {
            return Err(StreamError::WouldBlock);
        }
        Ok(n)
    }

    /// Whether the application may still write.
    fn check_sendable(&self) -> Result<(), StreamError> {
        if let Some(err) = self.error {
            return Err(err.into());
        }
        if !self.state.can_send_data() || self.snd.fin_queued || self.released {
            return Err(StreamError::SendClosed);
        }
        Ok(())
    }

    /// Room in the send buffer.
    pub fn send_capacity(&self) -> usize {
        if self.state.can_send_data() && !self.snd.fin_queued {
            self.snd.buf.free()
        } else {
            0
        }
    }

    /// Bytes written but not yet acknowledged by the peer.
    pub fn unacknowledged(&self) -> usize {
        (self.snd.buf.end() - self.snd.una.saturating_sub(1).min(self.snd.buf.end())) as usize
    }

    /// Reads received data into `out`. Returns `Ok(0)` once the peer has
    /// closed its side and everything was read, and
    /// [`StreamError::WouldBlock`] when nothing is available yet.
    pub fn recv(&mut self, out: &mut [u8]) -> Result<usize, StreamError> {
        self.read_received(|buf| (buf.read(out), false)).map(|(n, _)| n)
    }

    /// A read from the receive buffer by `read`, with the end of stream,
    /// errors and window updates handled alike for every kind of read.
    fn read_received(
        &mut self,
        read: impl FnOnce(&mut RecvBuffer) -> (usize, bool),
    ) -> Result<(usize, bool), StreamError> {
        if self.rcv.buf.readable() == 0 {
            self.readable_signalled = false;
            if self.rcv.fin_received {
                return Ok((0, false));
            }
            if let Some(err) = self.error {
                return Err(err.into());
            }
            if self.state == State::Closed {
                return Ok((0, false));
            }
            return Err(StreamError::WouldBlock);
        }
        let before_window = self.receive_window();
        let (n, record_end) = read(&mut self.rcv.buf);
        self.stats.bytes_read += n as u64;
        if self.rcv.buf.readable() == 0 {
            self.readable_signalled = false;
        }
        self.tune_after_read();
        self.consider_window_update(before_window);
        Ok((n, record_end))
    }

    /// Bytes ready to read.
    pub fn readable(&self) -> usize {
        self.rcv.buf.readable()
    }

    /// Whether the peer has closed its sending side and all its data has
    /// been received.
    pub fn peer_closed(&self) -> bool {
        self.rcv.fin_received
    }

    /// Closes our sending side once queued data is sent (a FIN follows it);
    /// reading continues (half-close, RFC 9293 3.6). Before the handshake
    /// completes, the FIN is queued until it does (RFC 9293 3.10.4 for
    /// SYN-RECEIVED; we treat SYN-SENT alike so that data written early is
    /// not lost).
    pub fn shutdown(&mut self) {
        match self.state {
            State::SynSent | State::SynReceived => self.snd.fin_queued = true,
            State::Established => {
                self.snd.fin_queued = true;
                self.state = State::FinWait1;
            }
            State::CloseWait => {
                self.snd.fin_queued = true;
                self.state = State::LastAck;
            }
            _ => {}
        }
    }

    /// Shuts down sending and gives the connection up: it finishes closing
    /// on its own. Data that arrives afterwards (or is unread now) makes it
    /// reset the connection, as RFC 9293 3.10.4 and RFC 1122 4.2.2.13 allow,
    /// so the peer learns its data was not consumed.
    pub fn close(&mut self, now: Instant) {
        self.released = true;
        if self.rcv.buf.readable() > 0 {
            self.rcv.buf.discard_readable();
            self.abort(now);
            return;
        }
        self.shutdown();
        self.linger_if_orphaned(now);
    }

    /// Resets the connection at once (RFC 9293 3.10.5 ABORT).
    pub fn abort(&mut self, now: Instant) {
        if self.state.is_synchronized() || self.state == State::SynReceived {
            self.send_reset = !matches!(self.state, State::TimeWait | State::Closed);
        }
        self.close_with(now, Some(ConnectionError::Aborted));
    }

    /// Lets the connection go without closing it (after an error or an
    /// orderly close it is simply forgotten).
    pub fn release(&mut self, now: Instant) {
        self.released = true;
        self.linger_if_orphaned(now);
    }

    /// A connection nobody holds, waiting in FIN-WAIT-2 for a FIN that may
    /// never come, is given up after 2 MSL (Linux's `tcp_fin_timeout`).
    fn linger_if_orphaned(&mut self, now: Instant) {
        if self.released && self.state == State::FinWait2 && !self.timers.is_armed(Timer::TimeWait) {
            self.timers.set(Timer::TimeWait, now + self.config.time_wait);
        }
    }

    /// The next instant at which [`Connection::handle_timeout`] must run.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    pub fn stats(&self) -> ConnectionStats {
        let c = &self.stats;
        let rates = self.pacer.as_ref().map(Pacer::rates);
        ConnectionStats {
            state: self.state,
            bytes_written: c.bytes_written,
            bytes_sent: c.bytes_sent,
            bytes_retransmitted: c.bytes_retransmitted,
            bytes_acked: c.bytes_acked,
            bytes_received: self.rcv.buf.contiguous_end(),
            bytes_read: c.bytes_read,
            segments_sent: c.segments_sent,
            segments_retransmitted: c.segments_retransmitted,
            segments_received: c.segments_received,
            segments_rejected: c.segments_rejected,
            answers_suppressed: self.answers.suppressed,
            fast_recoveries: c.fast_recoveries,
            timeouts: c.timeouts,
            lost_retransmissions: c.lost_retransmissions,
            spurious_retransmissions: c.spurious_retransmissions,
            dup_threshold: self.dup_threshold(),
            snack_delay: self.snack_delay(),
            snacks_sent: c.snacks_sent,
            snacked_segments: c.snacked_segments,
            snack_fallbacks: self.rcv.holes.fallbacks(),
            corruption_reports_sent: c.corruption_reports_sent,
            corruption_reports_received: c.corruption_reports_received,
            outages: c.outages,
            outage_probes: c.outage_probes,
            srtt: self.rtt.srtt(),
            rttvar: self.rtt.rttvar(),
            rto: self.rtt.rto(),
            min_rtt: self.rtt.min_rtt(),
            cwnd: self.cc.window(),
            ssthresh: self.cc.ssthresh(),
            pipe: self.board.pipe(),
            pacing_rate_bps: rates.map(|(pacing, _)| pacing),
            path_rate_bps: rates.and_then(|(_, path)| path),
            send_window: self.snd.wnd,
            receive_window: self.rcv.adv_edge.saturating_sub(self.rcv.nxt()),
            receive_buffer: self.rcv.buf.capacity() as u64,
            smss: self.negotiated.smss,
            segment_size: self.current_segment_size(),
            ack_every: self.ack.every.max(self.config.ack_every),
            sack: self.negotiated.sack,
            timestamps: self.negotiated.timestamps,
            scps: self.negotiated.scps,
            snack: self.negotiated.snack,
            header_compression: self.compression.in_force(),
            compressed_segments_sent: self.compression.counters().segments_sent,
            compressed_segments_received: self.compression.counters().segments_received,
            decompression_failures: self.compression.counters().failures,
            send_window_shift: self.negotiated.send_shift,
            receive_window_shift: self.negotiated.recv_shift,
        }
    }

    /// Ends the connection: everything stops, the application is told.
    fn close_with(&mut self, _now: Instant, error: Option<ConnectionError>) {
        if self.state == State::Closed {
            return;
        }
        self.state = State::Closed;
        self.timers.stop_all();
        if error.is_some() && self.error.is_none() {
            self.error = error;
        }
        self.events.push_back(Event::Closed(self.error));
    }

    /// Moves to TIME-WAIT for 2 MSL (RFC 9293 3.6).
    fn enter_time_wait(&mut self, now: Instant) {
        self.state = State::TimeWait;
        // Both streams are over: TIME-WAIT keeps the tuple, not buffers.
        self.snd.buf.release_if_empty();
        self.rcv.buf.release_if_empty();
        self.timers.stop_all();
        self.timers.set(Timer::TimeWait, now + self.config.time_wait);
    }

    fn ts_now(&self, now: Instant) -> u32 {
        timestamp_clock(now, self.ts.offset)
    }

    fn signal_readable(&mut self) {
        if !self.readable_signalled {
            self.readable_signalled = true;
            self.events.push_back(Event::Readable);
        }
    }
}
