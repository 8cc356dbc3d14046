//! Per-connection configuration.
//!
//! Plain Rust types (durations, byte counts, names as enums): parsing human
//! strings such as `600ms` or `64KiB` is the configuration layer's job. Every
//! field can be set per connection; [`Config::validate`] refuses values the
//! engine cannot honour, naming the field, the value and what is allowed.

use std::time::Duration;

use crate::cc::CongestionAlgorithm;

/// Where data losses are assumed to come from, per route (the SCPS
/// "default source of data loss", docs/spec/scps-tp-options.md, "The
/// default source of loss").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LossSource {
    /// Losses mean congestion: the congestion controller backs off.
    Congestion,
    /// Losses mean corruption: retransmit without reducing the rate.
    Corruption,
}

impl LossSource {
    pub fn label(self) -> &'static str {
        match self {
            LossSource::Congestion => "congestion",
            LossSource::Corruption => "corruption",
        }
    }
}

/// How a sender answers the holes its peer names in SNACKs. Only `Resend`
/// is SCPS-TP; the others make our sender behave like faulty peers met in
/// the field, so that a receiver's defences against them can be tested
/// against a real sender, in the simulator and on real paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SnackAnswer {
    /// Resend what the SNACK names (CCSDS 714.0-B, the SNACK option).
    #[default]
    Resend,
    /// Act on no SNACK: repair only on duplicate ACKs, SACK and timeouts.
    Ignore,
    /// Resend the unit after the one named: a peer that counts the hole's
    /// offset one unit off.
    NextUnit,
}

/// The order in which the connections that share a route's rate take
/// their turns (connection/pacer.rs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum RateOrder {
    /// In turn, a packet each, in the order they came: every connection
    /// gets an equal share, none starves.
    #[default]
    Turns,
    /// The connection with the fewest bytes still to deliver first (its
    /// send buffer: unsent and unacknowledged), the others in turn behind
    /// it: short transfers finish first, which lowers the mean completion
    /// time of many users' downloads (shortest remaining processing time
    /// first), at the cost of holding a long transfer back while short
    /// ones keep coming.
    Shortest,
}

/// Vegas thresholds, in segments of queued data (Brakmo and Peterson 1995;
/// the SCPS reference implementation's defaults: alpha 3, beta 5, gamma 4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VegasParams {
    /// Below this many queued segments the window grows by one per RTT.
    pub alpha: f64,
    /// Above this many the window shrinks by one per RTT.
    pub beta: f64,
    /// Above this many slow start ends.
    pub gamma: f64,
}

impl Default for VegasParams {
    fn default() -> Self {
        VegasParams {
            alpha: 3.0,
            beta: 5.0,
            gamma: 4.0,
        }
    }
}

/// How a connection treats a link outage (docs/spec/scps-tp-options.md,
/// "Link outages").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutagePolicy {
    /// Retransmission timeouts in a row after which the link is deemed
    /// down without being told; `None` leaves that to the link layer.
    pub after_timeouts: Option<u32>,
    /// Interval of the probes sent while the link is down.
    pub probe_interval: Duration,
}

impl Default for OutagePolicy {
    fn default() -> Self {
        OutagePolicy {
            after_timeouts: None,
            probe_interval: Duration::from_secs(1),
        }
    }
}

/// Keepalive probing (RFC 9293 section 3.8.4, RFC 1122 section 4.2.3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Idle time before the first probe.
    pub idle: Duration,
    /// Time between unanswered probes.
    pub interval: Duration,
    /// Unanswered probes after which the connection is dropped.
    pub probes: u32,
}

impl Keepalive {
    /// How long a silent peer is kept: the idle time and every probe's
    /// interval.
    pub fn silence_kept(&self) -> Duration {
        self.idle + self.interval.saturating_mul(self.probes)
    }
}

/// How one connection behaves. The defaults follow the RFCs where they give
/// a value and Linux where they leave a choice.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Largest IP packet we send or want to receive, in bytes. Our MSS option
    /// is this less the IP and TCP fixed headers.
    pub mtu: u16,
    /// Bytes the application may queue for sending.
    pub send_buffer: usize,
    /// Bytes buffered for the application; also the largest window offered
    /// (with `recv_buffer_auto`, the size the buffer starts at).
    pub recv_buffer: usize,
    /// Receive-buffer autotuning (connection/recv_autotune.rs): once per
    /// round trip the connection measures how many bytes the application
    /// read in it, and grows the buffer, and so the window it offers, to
    /// about twice that (more while the reads keep growing, while holes
    /// hold data back, or while the peer fills the window), up to
    /// `recv_buffer_max`. The buffer never shrinks; storage is taken only
    /// as data fills it.
    pub recv_buffer_auto: bool,
    /// The most autotuning grows the receive buffer to (at least
    /// `recv_buffer`); the window scale offered in the SYN covers it.
    pub recv_buffer_max: usize,
    /// Offer window scaling (RFC 7323 section 2).
    pub window_scaling: bool,
    /// Offer timestamps (RFC 7323 section 3): RTT measurement and PAWS.
    pub timestamps: bool,
    /// Offer SACK (RFC 2018) and use SACK-based loss recovery (RFC 6675).
    pub sack: bool,
    pub congestion: CongestionAlgorithm,
    /// Initial congestion window in segments; 0 selects RFC 3390's
    /// `min(4 MSS, max(2 MSS, 4380 bytes))`.
    pub initial_window_segments: u32,
    /// RFC 6298: RTO before the first RTT sample.
    pub rto_initial: Duration,
    /// RFC 6298 (2.4): lower bound of the RTO.
    pub rto_min: Duration,
    /// RFC 6298 (2.5): upper bound of the RTO, also of its backoff.
    pub rto_max: Duration,
    /// The clock granularity G of RFC 6298 (2.2, 2.3).
    pub clock_granularity: Duration,
    /// Lower bound of the RTO's variance term, K·RTTVAR (at least G):
    /// Linux holds it at its 200 ms minimum RTO and the SCPS RI at 500 ms
    /// (docs/spec/scps-tp-options.md, "Timers"), so that the RTO of a paced flow, whose
    /// RTT hardly varies, stays clear of the time a lost retransmission
    /// takes to be detected and repaired.
    pub rto_margin_min: Duration,
    /// Retransmission timeouts in a row on the same data after which the
    /// connection is dropped with a timeout error.
    pub max_retransmissions: u32,
    /// SYN (or SYN-ACK) retransmissions before a connection attempt fails.
    pub max_syn_retransmissions: u32,
    /// Delay before acknowledging in-order data (RFC 1122 4.2.3.2, RFC 5681
    /// 4.2); `None` acknowledges every segment at once.
    pub delayed_ack: Option<Duration>,
    /// Acknowledge at least every this many full-sized segments.
    pub ack_every: u32,
    /// Adaptive ACK policy (connection/ack_policy.rs): acknowledge every k
    /// segments, k from `ack_every` up to 16 as the RTT, the forward rate
    /// and the return link's rate call for. Needs `delayed_ack`.
    pub ack_adaptive: bool,
    /// Rate of the link our ACKs travel on, bit/s, for the adaptive ACK
    /// policy; `None` takes the route rate (`rate_bps`), and without
    /// either only the RTT counts.
    pub ack_return_rate_bps: Option<u64>,
    /// Adaptive segment size (connection/mss_adapt.rs): new data goes in
    /// segments sized for the bit-error rate the sender observes, at least
    /// 256 bytes and at most the MSS.
    pub mss_adapt: bool,
    /// Nagle's algorithm (RFC 896, RFC 9293 3.7.4).
    pub nagle: bool,
    pub keepalive: Option<Keepalive>,
    /// A peer that falls silent while data is moving is dead after this
    /// long: once a segment with data has arrived, silence of half this
    /// time starts probes (as keepalive's, three of them a sixth apart),
    /// and the connection ends when they go unanswered. A peer that
    /// answers (a sender that merely paused) leaves the connection to
    /// `keepalive`'s idle time; a `keepalive` that gives up sooner rules
    /// throughout. `None`: only `keepalive`.
    pub dead_after: Option<Duration>,
    /// The user timeout (RFC 9293 3.10.7.1's USER TIMEOUT, RFC 5482): data
    /// that stays unacknowledged this long ends the connection with a
    /// timeout error, however few retransmissions that took and in a link
    /// outage too; `None` leaves it to `max_retransmissions`.
    pub user_timeout: Option<Duration>,
    /// Bounds of the persist (zero-window probe) interval (RFC 9293 3.8.6.1).
    pub persist_min: Duration,
    pub persist_max: Duration,
    /// How long TIME-WAIT lasts (2 MSL).
    pub time_wait: Duration,
    /// DupThresh of RFC 5681 and RFC 6675.
    pub dup_threshold: u32,
    /// Limited transmit (RFC 3042): new data on the first duplicate ACKs.
    pub limited_transmit: bool,
    /// RFC 5681 4.1: restart from the initial window after an idle RTO.
    pub slow_start_after_idle: bool,
    /// TTL or hop limit of the packets we send.
    pub hop_limit: u8,
    /// IP protocol number of uncompressed segments: 6 (TCP: the standard,
    /// and the RI's gateway) or 106 (the SCPS RI's standalone builds;
    /// docs/spec/scps-tp-options.md, "IP protocol numbers"). Connections accepted take
    /// the protocol of the SYN.
    pub ip_protocol: u8,

    // SCPS-TP (CCSDS 714.0-B-2; docs/spec/scps-tp-options.md).
    /// Offer the SCPS capabilities option (kind 20) in our SYN. Without it
    /// on both SYNs the connection is plain TCP.
    pub scps: bool,
    /// Offer SNACK (capability SNACK1) and use it once agreed.
    pub snack: bool,
    /// How long a receiver waits after seeing a hole before naming it in a
    /// SNACK, so that reordering is not taken for loss.
    pub snack_delay: Duration,
    /// How long a named hole may persist before the receiver names it
    /// again: `None` for the measured SNACK round trip
    /// (connection/snack.rs), or a fixed interval, as receivers that
    /// repeat SNACKs on their own cadence do (the SCPS RI repeats at the
    /// ACK point with its ACKs).
    pub snack_repeat: Option<Duration>,
    /// How this end answers the peer's SNACKs (anything but the default
    /// imitates a faulty peer).
    pub snack_answer: SnackAnswer,
    /// Offer header compression (IP protocol 105).
    pub header_compression: bool,
    /// The route's rate ceiling, bit/s: all sending is paced within it by
    /// a token bucket, which charges each IP packet and the framing the
    /// link adds to it (`rate_framing_bytes`). Required by the `rate`
    /// controller.
    pub rate_bps: Option<u64>,
    /// The route rate follows what the path carries (`rate = "auto"`,
    /// connection/auto_rate.rs): measured from the ACKs, within
    /// `rate_min_bps` and `rate_bps` (then a ceiling, or none).
    pub rate_auto: bool,
    /// The least an `auto` route rate falls to, bit/s.
    pub rate_min_bps: u64,
    /// Bytes the route's link adds to every packet (PPP framing, for
    /// example), charged by the pacer with the packet.
    pub rate_framing_bytes: u32,
    /// The route the connection's rate belongs to: an endpoint's
    /// connections with the same route, rate and framing draw on one
    /// budget and take turns (connection/pacer.rs). A gateway numbers its
    /// routes; everything else leaves it 0, so that all its connections on
    /// one link share the link's rate.
    pub rate_route: u32,
    /// The order of the turns of the connections sharing the route's rate.
    pub rate_order: RateOrder,
    pub vegas: VegasParams,
    pub loss_source: LossSource,
    pub outage: OutagePolicy,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mtu: 1500,
            send_buffer: 256 * 1024,
            recv_buffer: 256 * 1024,
            recv_buffer_auto: false,
            recv_buffer_max: DEFAULT_RECV_BUFFER_MAX,
            window_scaling: true,
            timestamps: true,
            sack: true,
            congestion: CongestionAlgorithm::NewReno,
            initial_window_segments: 0,
            rto_initial: Duration::from_secs(1),
            rto_min: Duration::from_secs(1),
            rto_max: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            rto_margin_min: Duration::ZERO,
            max_retransmissions: 15,
            max_syn_retransmissions: 6,
            delayed_ack: Some(Duration::from_millis(200)),
            ack_every: 2,
            ack_adaptive: false,
            ack_return_rate_bps: None,
            mss_adapt: false,
            nagle: true,
            keepalive: None,
            dead_after: None,
            user_timeout: None,
            persist_min: Duration::from_secs(1),
            persist_max: Duration::from_secs(60),
            time_wait: Duration::from_secs(60),
            dup_threshold: 3,
            limited_transmit: true,
            slow_start_after_idle: true,
            hop_limit: 64,
            ip_protocol: crate::wire::IPPROTO_TCP,
            scps: false,
            snack: true,
            snack_delay: Duration::ZERO,
            snack_repeat: None,
            snack_answer: SnackAnswer::Resend,
            header_compression: false,
            rate_bps: None,
            rate_auto: false,
            rate_min_bps: MIN_RATE_BPS,
            rate_framing_bytes: 0,
            rate_route: 0,
            rate_order: RateOrder::Turns,
            vegas: VegasParams::default(),
            loss_source: LossSource::Congestion,
            outage: OutagePolicy::default(),
        }
    }
}

/// A configuration value the engine cannot honour.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field} = {value}: {allowed}")]
pub struct ConfigError {
    pub field: &'static str,
    pub value: String,
    pub allowed: &'static str,
}

fn check(
    ok: bool,
    field: &'static str,
    value: impl std::fmt::Debug,
    allowed: &'static str,
) -> Result<(), ConfigError> {
    if ok {
        Ok(())
    } else {
        Err(ConfigError {
            field,
            value: format!("{value:?}"),
            allowed,
        })
    }
}

/// Bounds of a route rate, bit/s.
pub const MIN_RATE_BPS: u64 = 100;
pub const MAX_RATE_BPS: u64 = 100_000_000_000;
/// Framing the pacer may charge per packet, bytes.
pub const MAX_RATE_FRAMING_BYTES: u32 = 1000;

/// Largest window RFC 7323 allows: 2^30 bytes (shift 14).
pub const MAX_WINDOW: usize = 1 << 30;

/// The most an autotuned receive buffer grows to unless configured: about
/// twice the bytes a round trip carries at 8 Mbit/s over 8 s, or at
/// 100 Mbit/s over 600 ms.
pub const DEFAULT_RECV_BUFFER_MAX: usize = 16 << 20;

impl Config {
    pub fn validate(&self) -> Result<(), ConfigError> {
        check(
            self.mtu >= 576,
            "mtu",
            self.mtu,
            "at least 576 bytes (the IPv4 minimum)",
        )?;
        check(
            (1..=MAX_WINDOW).contains(&self.send_buffer),
            "send_buffer",
            self.send_buffer,
            "1 byte to 1 GiB",
        )?;
        check(
            (1..=MAX_WINDOW).contains(&self.recv_buffer),
            "recv_buffer",
            self.recv_buffer,
            "1 byte to 1 GiB",
        )?;
        check(
            self.window_scaling || self.recv_buffer <= 65535,
            "recv_buffer",
            self.recv_buffer,
            "at most 65535 bytes without window scaling",
        )?;
        check(
            (1..=MAX_WINDOW).contains(&self.recv_buffer_max),
            "recv_buffer_max",
            self.recv_buffer_max,
            "1 byte to 1 GiB",
        )?;
        check(
            !self.recv_buffer_auto || self.recv_buffer_max >= self.recv_buffer,
            "recv_buffer_max",
            self.recv_buffer_max,
            "at least recv_buffer (autotuning only grows the buffer)",
        )?;
        check(
            !self.recv_buffer_auto || self.window_scaling || self.recv_buffer_max <= 65535,
            "recv_buffer_max",
            self.recv_buffer_max,
            "at most 65535 bytes without window scaling",
        )?;
        check(
            self.initial_window_segments <= 1000,
            "initial_window_segments",
            self.initial_window_segments,
            "0 (RFC 3390) to 1000 segments",
        )?;
        check(
            !self.rto_min.is_zero(),
            "rto_min",
            self.rto_min,
            "greater than zero",
        )?;
        check(
            self.rto_min <= self.rto_max,
            "rto_max",
            self.rto_max,
            "at least rto_min",
        )?;
        check(
            (self.rto_min..=self.rto_max).contains(&self.rto_initial),
            "rto_initial",
            self.rto_initial,
            "between rto_min and rto_max",
        )?;
        check(
            self.rto_margin_min <= self.rto_max,
            "rto_margin_min",
            self.rto_margin_min,
            "at most rto_max",
        )?;
        check(
            self.user_timeout.is_none_or(|t| !t.is_zero()),
            "user_timeout",
            self.user_timeout.unwrap_or_default(),
            "more than 0 (or off)",
        )?;
        check(
            self.max_retransmissions >= 1,
            "max_retransmissions",
            self.max_retransmissions,
            "at least 1",
        )?;
        check(
            self.ack_every >= 1,
            "ack_every",
            self.ack_every,
            "at least 1 segment",
        )?;
        check(
            !self.ack_adaptive || self.delayed_ack.is_some(),
            "ack_adaptive",
            self.ack_adaptive,
            "off when delayed_ack is off (the adaptive policy delays ACKs)",
        )?;
        if let Some(rate) = self.ack_return_rate_bps {
            check(
                (MIN_RATE_BPS..=MAX_RATE_BPS).contains(&rate),
                "ack_return_rate",
                rate,
                "100 bit/s to 100 Gbit/s",
            )?;
        }
        if let Some(delay) = self.delayed_ack {
            check(
                !delay.is_zero(),
                "delayed_ack",
                delay,
                "greater than zero, or off",
            )?;
        }
        if let Some(k) = self.keepalive {
            check(!k.idle.is_zero(), "keepalive.idle", k.idle, "greater than zero")?;
            check(
                !k.interval.is_zero(),
                "keepalive.interval",
                k.interval,
                "greater than zero",
            )?;
            check(k.probes >= 1, "keepalive.probes", k.probes, "at least 1")?;
        }
        check(
            !self.persist_min.is_zero(),
            "persist_min",
            self.persist_min,
            "greater than zero",
        )?;
        check(
            self.persist_min <= self.persist_max,
            "persist_max",
            self.persist_max,
            "at least persist_min",
        )?;
        check(
            self.dup_threshold >= 1,
            "dup_threshold",
            self.dup_threshold,
            "at least 1",
        )?;
        check(self.hop_limit >= 1, "hop_limit", self.hop_limit, "at least 1")?;
        check(
            [crate::wire::IPPROTO_TCP, crate::wire::IPPROTO_SCPS_TP].contains(&self.ip_protocol),
            "ip_protocol",
            self.ip_protocol,
            "6 (TCP) or 106 (the SCPS RI's standalone builds)",
        )?;
        check(
            self.congestion != CongestionAlgorithm::Rate || self.rate_bps.is_some() || self.rate_auto,
            "rate",
            self.rate_bps,
            "a route rate, or \"auto\", which the rate-based controller sends at",
        )?;
        check(
            (MIN_RATE_BPS..=self.rate_bps.unwrap_or(MAX_RATE_BPS)).contains(&self.rate_min_bps),
            "rate_min",
            self.rate_min_bps,
            "100 bit/s up to the route rate (100 Gbit/s without one)",
        )?;
        if let Some(rate) = self.rate_bps {
            check(
                (MIN_RATE_BPS..=MAX_RATE_BPS).contains(&rate),
                "rate",
                rate,
                "100 bit/s to 100 Gbit/s",
            )?;
        }
        check(
            self.rate_framing_bytes <= MAX_RATE_FRAMING_BYTES,
            "rate_framing",
            self.rate_framing_bytes,
            "0 to 1000 bytes",
        )?;
        let v = self.vegas;
        check(
            v.alpha > 0.0 && v.alpha <= v.beta && v.beta <= 1000.0,
            "vegas.alpha",
            v.alpha,
            "greater than zero and at most vegas.beta (at most 1000 segments)",
        )?;
        check(
            v.gamma > 0.0 && v.gamma <= 1000.0,
            "vegas.gamma",
            v.gamma,
            "greater than zero, at most 1000 segments",
        )?;
        if let Some(n) = self.outage.after_timeouts {
            check(
                (1..=self.max_retransmissions).contains(&n),
                "outage.after_timeouts",
                n,
                "1 to max_retransmissions",
            )?;
        }
        check(
            !self.outage.probe_interval.is_zero(),
            "outage.probe_interval",
            self.outage.probe_interval,
            "greater than zero",
        )?;
        Ok(())
    }

    /// The largest receive buffer the connection may have: `recv_buffer`,
    /// or with autotuning the most it may grow to.
    pub fn recv_buffer_limit(&self) -> usize {
        if self.recv_buffer_auto {
            self.recv_buffer.max(self.recv_buffer_max)
        } else {
            self.recv_buffer
        }
    }

    /// The window scale shift we offer: the smallest that lets the receive
    /// buffer be advertised whole (RFC 7323 section 2.2), at most 14; with
    /// autotuning, the largest buffer it may grow to, since the shift is
    /// fixed in the SYN for the connection's life.
    pub fn window_shift(&self) -> u8 {
        if !self.window_scaling {
            return 0;
        }
        let buffer = self.recv_buffer_limit();
        let mut shift = 0u8;
        while shift < 14 && (buffer >> shift) > 65535 {
            shift += 1;
        }
        shift
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        Config::default().validate().unwrap();
    }

    #[test]
    fn errors_name_the_field_and_the_value() {
        let config = Config {
            rto_min: Duration::from_secs(5),
            rto_initial: Duration::from_secs(1),
            ..Config::default()
        };
        let err = config.validate().unwrap_err();
        assert_eq!(err.field, "rto_initial");
        assert_eq!(err.to_string(), "rto_initial = 1s: between rto_min and rto_max");
    }

    #[test]
    fn window_shift_covers_the_receive_buffer() {
        let shift = |recv_buffer| {
            Config {
                recv_buffer,
                ..Config::default()
            }
            .window_shift()
        };
        assert_eq!(shift(65535), 0);
        assert_eq!(shift(65536), 1);
        assert_eq!(shift(4 << 20), 7);
        assert_eq!(shift(MAX_WINDOW), 14);
    }

    #[test]
    fn an_autotuned_buffer_offers_the_shift_of_its_maximum() {
        let autotuned = |recv_buffer_auto, recv_buffer_max| Config {
            recv_buffer_auto,
            recv_buffer_max,
            ..Config::default()
        };
        assert_eq!(Config::default().window_shift(), 3, "256 KiB");
        assert_eq!(
            autotuned(false, 16 << 20).window_shift(),
            3,
            "the maximum is not used"
        );
        assert_eq!(autotuned(true, 16 << 20).window_shift(), 9);
        assert_eq!(autotuned(true, 32 << 20).window_shift(), 10);
        let small = autotuned(true, 64 << 10);
        assert_eq!(small.validate().unwrap_err().field, "recv_buffer_max");
        let unscaled = Config {
            window_scaling: false,
            recv_buffer: 16 << 10,
            ..autotuned(true, 1 << 20)
        };
        assert_eq!(
            unscaled.validate().unwrap_err().to_string(),
            "recv_buffer_max = 1048576: at most 65535 bytes without window scaling"
        );
    }
}
