//! Opening a connection: the SYN exchange (RFC 9293 3.5) and the options
//! agreed in it: MSS (RFC 9293 3.7.1), window scale and timestamps
//! (RFC 7323), SACK-permitted (RFC 2018), and the SCPS capabilities
//! (CCSDS 714.0-B-2 3.2.3; docs/spec/scps-tp-options.md).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;

use super::pacer::RateBudget;
use super::recv_buffer::RecvBuffer;
use super::send_buffer::SendBuffer;
use super::timers::{Timer, Timers};
use super::{AckState, Connection, Counters, FourTuple, Negotiated, Receiver, Sender, State, Timestamps};
use crate::config::Config;
use crate::recovery::Recovery;
use crate::recovery::rtt::RttEstimator;
use crate::recovery::scoreboard::Scoreboard;
use crate::time::Instant;
use crate::wire::{ScpsCapabilities, TcpOptions, TcpRepr, Timestamps as TsOption};

/// Bytes the timestamps option takes in every segment (10, padded to 12).
pub(crate) const TIMESTAMPS_OVERHEAD: u64 = 12;

/// RFC 9293 3.7.1 / RFC 8200 8.3: MSS assumed when the peer sends none.
pub(crate) fn default_mss(remote: SocketAddr) -> u16 {
    if remote.is_ipv4() { 536 } else { 1220 }
}

pub(crate) fn ip_header_len(local: SocketAddr) -> usize {
    if local.is_ipv4() { 20 } else { 40 }
}

/// The MSS option we offer: the MTU less the fixed IP and TCP headers.
pub(crate) fn our_mss(config: &Config, local: SocketAddr) -> u16 {
    config.mtu - ip_header_len(local) as u16 - 20
}

/// Everything needed to create a connection.
#[derive(Debug, Clone)]
pub struct ConnectionParams {
    pub now: Instant,
    pub tuple: FourTuple,
    pub config: Arc<Config>,
    /// Initial send sequence number (RFC 9293 3.4.1, RFC 6528).
    pub iss: u32,
    /// Offset added to our timestamp clock (RFC 7323 7.1).
    pub ts_offset: u32,
    /// The id to offer for header compression (docs/spec/compression.md,
    /// "Demultiplexing and connection ids"): the endpoint picks one, unique among its
    /// connections to the same peer address, when the configuration offers
    /// compression; `None` offers none.
    pub compression_id: Option<std::num::NonZeroU8>,
    /// The route's rate, shared with the endpoint's other connections on
    /// the route; `None` gives a connection with a route rate a budget of
    /// its own.
    pub rate_budget: Option<RateBudget>,
}

/// Progress of the SYN exchange.
#[derive(Debug, Default)]
pub(crate) struct Handshake {
    /// Our SYN (SYN-SENT) or SYN-ACK (SYN-RECEIVED) must be sent.
    pub(crate) syn_due: bool,
    pub(crate) retransmissions: u32,
    /// Entered SYN-RECEIVED from a listener (not by simultaneous open).
    pub(crate) passive: bool,
    /// When our SYN or SYN-ACK last went out.
    pub(crate) syn_sent_at: Instant,
    /// The handshake gives no RTT sample: our SYN-ACK was a SYN cookie
    /// and its time is not known.
    pub(crate) unsampled: bool,
}

impl Connection {
    fn with_state(params: ConnectionParams, state: State) -> Connection {
        let config = params.config;
        let smss = u64::from(default_mss(params.tuple.remote));
        let rtt = RttEstimator::new(
            config.rto_initial,
            config.rto_min,
            config.rto_max,
            config.clock_granularity.max(config.rto_margin_min),
        );
        let cc = config.congestion.build(&config, initial_window(&config, smss));
        Connection {
            tuple: params.tuple,
            state,
            negotiated: Negotiated {
                mss: smss,
                smss,
                sack: false,
                timestamps: false,
                window_scaling: false,
                send_shift: 0,
                recv_shift: 0,
                scps: false,
                snack: false,
                compression: None,
            },
            snd: Sender {
                iss: params.iss,
                una: 0,
                nxt: 0,
                wnd: 0,
                max_wnd: 0,
                wl1: 0,
                wl2: 0,
                buf: SendBuffer::new(config.send_buffer),
                fin_queued: false,
                last_send: params.now,
                small_segment_end: 0,
            },
            rcv: Receiver {
                irs: 0,
                buf: RecvBuffer::new(config.recv_buffer),
                adv_edge: 0,
                fin: None,
                fin_received: false,
                recent_out_of_order: VecDeque::new(),
                holes: Default::default(),
                tune: super::recv_autotune::Autotune::new(config.recv_buffer),
            },
            board: Scoreboard::default(),
            recovery: Recovery::new(),
            rtt,
            cc,
            timers: Timers::default(),
            pacer: params
                .rate_budget
                .clone()
                .or_else(|| RateBudget::for_config(&config, params.now))
                .as_ref()
                .map(RateBudget::join),
            ack: AckState::default(),
            sizer: Default::default(),
            ts: Timestamps {
                offset: params.ts_offset,
                recent: 0,
                recent_at: params.now,
            },
            handshake: Handshake {
                syn_due: true,
                retransmissions: 0,
                passive: state == State::SynReceived,
                syn_sent_at: params.now,
                unsampled: false,
            },
            keepalive_probes: 0,
            soft_errors: Default::default(),
            persist_probes: 0,
            persist_unanswered: 0,
            consecutive_timeouts: 0,
            stalled_since: None,
            window_before_timeouts: None,
            corruption_reported_until: None,
            corruption_report_due: false,
            outage: None,
            silent_since: params.now,
            send_reset: false,
            pending_reset: None,
            answers: Default::default(),
            force_retransmit: false,
            snack_owed: 0,
            window_use: Default::default(),
            persist_due: false,
            keepalive_due: false,
            keepalive_busy: false,
            released: false,
            want_writable: false,
            readable_signalled: false,
            events: VecDeque::new(),
            error: None,
            stats: Counters::default(),
            scratch: Vec::new(),
            compression: super::compression::HeaderCompression::offering(
                params
                    .compression_id
                    .filter(|_| config.scps && config.header_compression),
            ),
            config,
        }
    }

    /// An active open (RFC 9293 3.10.1): SYN-SENT, the SYN ready to go.
    pub fn connect(params: ConnectionParams) -> Connection {
        Connection::with_state(params, State::SynSent)
    }

    /// A passive open answering `syn` (RFC 9293 3.10.7.2): SYN-RECEIVED,
    /// the SYN-ACK ready to go.
    pub fn accept(params: ConnectionParams, syn: &TcpRepr<'_>) -> Connection {
        let now = params.now;
        let mut conn = Connection::with_state(params, State::SynReceived);
        conn.take_peer_syn(now, syn);
        conn
    }

    /// A passive open whose SYN-ACK went out as a SYN cookie (at
    /// `sent_at`, if the peer's echoed timestamp says): the connection
    /// waits for the ACK that completes the handshake, with nothing to
    /// send before it.
    pub(crate) fn syn_ack_already_sent(&mut self, sent_at: Option<Instant>) {
        self.handshake.syn_due = false;
        self.handshake.unsampled = sent_at.is_none();
        self.handshake.syn_sent_at = sent_at.unwrap_or(self.handshake.syn_sent_at);
        self.snd.nxt = 1;
        self.ack.last_sent = 1;
    }

    /// Records the peer's SYN: its initial sequence number, and the options
    /// both sides now have (we offered what our configuration allows).
    pub(crate) fn take_peer_syn(&mut self, now: Instant, syn: &TcpRepr<'_>) {
        let config = &self.config;
        let options = &syn.options;
        self.rcv.irs = syn.seq;
        let timestamps = config.timestamps && options.timestamps.is_some();
        let window_scaling = config.window_scaling && options.window_scale.is_some();
        let (send_shift, recv_shift) = match options.window_scale {
            // RFC 7323 2.3: a shift above 14 is used as 14.
            Some(shift) if window_scaling => (shift.min(14), config.window_shift()),
            _ => (0, 0),
        };
        let peer_mss = options.mss.unwrap_or_else(|| default_mss(self.tuple.remote));
        let mss = u64::from(peer_mss.min(our_mss(config, self.tuple.local)));
        let overhead = if timestamps { TIMESTAMPS_OVERHEAD } else { 0 };
        // CCSDS 714.0-B-2 3.2.3: SCPS-TP only if both SYNs
        // carry the option, each capability only if both set it.
        let scps = options.scps_capabilities.filter(|_| config.scps);
        // An id of 0 with the bit set is not a valid offer.
        let compression = scps
            .filter(|caps| caps.compression && self.compression.our_id().is_some())
            .and_then(|caps| std::num::NonZeroU8::new(caps.connection_id));
        let smss = match compression {
            // Every data segment travels compressed (only SYNs do not):
            // the payload of a packet of the path's size (the MSS plus
            // the 20-byte TCP header it assumes) under the RI's data
            // header, 1464 bytes with timestamps on a 1500-byte IPv4 path.
            Some(_) => (mss + TcpRepr::MIN_HEADER_LEN as u64)
                .saturating_sub(super::compression::data_header_bytes(timestamps)),
            None => mss.saturating_sub(overhead),
        };
        self.negotiated = Negotiated {
            mss,
            // Never below one byte of payload, whatever the peer claims.
            smss: smss.max(1),
            sack: config.sack && options.sack_permitted,
            timestamps,
            window_scaling,
            send_shift,
            recv_shift,
            scps: scps.is_some(),
            snack: scps.is_some_and(|caps| caps.snack1 && config.snack),
            compression,
        };
        if let Some(ts) = options.timestamps.filter(|_| timestamps) {
            self.ts.recent = ts.tsval;
            self.ts.recent_at = now;
        }
        // Our SYN-ACK (or SYN) offers this much; the SYN occupies offset 0.
        self.rcv.adv_edge = 1 + u64::from(self.syn_window());
        // The window in a SYN is never scaled (RFC 7323 2.2).
        self.snd.wnd = u64::from(syn.window);
        self.snd.max_wnd = self.snd.wnd;
        self.snd.wl1 = 0;
        self.cc = self
            .config
            .congestion
            .build(&self.config, initial_window(&self.config, self.negotiated.smss));
        self.start_header_compression(syn);
    }

    /// The options of our SYN or SYN-ACK.
    pub(crate) fn syn_options(&self, now: Instant) -> TcpOptions {
        let config = &self.config;
        let answering = self.state == State::SynReceived;
        let mut options = TcpOptions {
            mss: Some(our_mss(config, self.tuple.local)),
            ..TcpOptions::default()
        };
        // In a SYN-ACK, offer only what the peer's SYN offered (RFC 7323
        // 2.2 and 3.2, RFC 2018 section 2).
        let offer_scale = if answering {
            self.negotiated.window_scaling
        } else {
            config.window_scaling
        };
        if offer_scale {
            options.window_scale = Some(config.window_shift());
        }
        options.sack_permitted = if answering {
            self.negotiated.sack
        } else {
            config.sack
        };
        let offer_ts = if answering {
            self.negotiated.timestamps
        } else {
            config.timestamps
        };
        // A SYN-ACK carries the capabilities only if the SYN did.
        let offer_scps = if answering {
            self.negotiated.scps
        } else {
            config.scps
        };
        if offer_scps {
            let snack = if answering {
                self.negotiated.snack
            } else {
                config.snack
            };
            // Compression with our id, if the endpoint gave us one (and, in
            // a SYN-ACK, the SYN offered it too).
            let compression_id = if answering {
                self.negotiated.compression.and(self.compression.our_id())
            } else {
                self.compression.our_id()
            };
            options.scps_capabilities = Some(ScpsCapabilities {
                snack1: snack,
                compression: compression_id.is_some(),
                connection_id: compression_id.map_or(0, |id| id.get()),
                ..ScpsCapabilities::default()
            });
        }
        if offer_ts {
            options.timestamps = Some(TsOption {
                tsval: self.ts_now(now),
                tsecr: if answering { self.ts.recent } else { 0 },
            });
        }
        options
    }

    /// The window field of a SYN or SYN-ACK (unscaled, RFC 7323 2.2).
    pub(crate) fn syn_window(&self) -> u16 {
        self.config.recv_buffer.min(65535) as u16
    }

    /// A segment arriving in SYN-SENT (RFC 9293 3.10.7.3).
    pub(crate) fn on_segment_syn_sent(&mut self, now: Instant, seg: &TcpRepr<'_>) {
        if seg.flags.ack() {
            // Our SYN is offset 0: the only acceptable ACK is offset 1.
            let acceptable = crate::seq::from_wire(self.snd.iss, seg.ack, 1) == Some(1);
            if !acceptable {
                if !seg.flags.rst() {
                    self.reply_reset(seg.ack, None);
                }
                self.stats.segments_rejected += 1;
                return;
            }
            if seg.flags.rst() {
                self.close_with(now, Some(super::ConnectionError::Refused));
                return;
            }
        } else if seg.flags.rst() {
            return;
        }
        if !seg.flags.syn() {
            return;
        }
        self.take_peer_syn(now, seg);
        if seg.flags.ack() {
            self.snd.una = 1;
            self.snd.wl1 = 0;
            self.snd.wl2 = 1;
            self.establish(now);
            self.ack.immediate = true;
            // RFC 9293 3.10.7.3: data or a FIN in the SYN-ACK is processed
            // as in ESTABLISHED.
            if !seg.payload.is_empty() || seg.flags.fin() {
                self.process_text(now, seg, 0);
            }
        } else {
            // Simultaneous open (RFC 9293 3.5, figure 8).
            self.state = State::SynReceived;
            self.handshake.syn_due = true;
        }
    }

    /// The handshake completed; a FIN queued meanwhile now goes.
    pub(crate) fn establish(&mut self, now: Instant) {
        self.state = if self.snd.fin_queued {
            State::FinWait1
        } else {
            State::Established
        };
        self.timers.stop(Timer::Retransmit);
        if self.handshake.retransmissions > 0 {
            self.rtt.after_syn_timeout();
        } else if !self.handshake.unsampled {
            // The handshake is a round trip like any other (RFC 6298 allows
            // the sample; Linux takes it). The receiver of a transfer has
            // no other until it sends data, and needs one to time SNACKs.
            self.rtt
                .on_sample(now.saturating_since(self.handshake.syn_sent_at));
        }
        if let Some(keepalive) = self.config.keepalive {
            self.timers.set(Timer::Keepalive, now + keepalive.idle);
        }
        self.snd.last_send = now;
        self.events.push_back(super::Event::Connected);
    }
}

/// RFC 3390's initial window unless the configuration names one.
pub(crate) fn initial_window(config: &Config, smss: u64) -> u64 {
    match config.initial_window_segments {
        0 => (4 * smss).min((2 * smss).max(4380)),
        n => u64::from(n) * smss,
    }
}
