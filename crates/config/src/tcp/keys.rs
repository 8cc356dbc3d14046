//! Every `[tcp]` key, declared once: the type a scenario writes it in,
//! the engine setting (`scps_proto::Config` field) it becomes, and its
//! row of the reference table in docs/configuration.md. The schema
//! (`TcpSpec`), `TcpSpec::apply` and `KEYS` are all generated from the
//! list below, so a new engine setting is one entry here (a test keeps
//! docs/configuration.md equal to `reference_table()`).

use scps_proto::Config;
use serde::Deserialize;

use super::setting::Setting;
use super::{
    KeepaliveSpec, KeyDoc, LossSourceSpec, OutageSpec, RateOrderSpec, RouteRateSpec, SnackAnswerSpec, Switch,
    VegasSpec,
};
use crate::error::Error;
use crate::units::{Bytes, Rate, Time};

/// `key: Type => set[field] { default, range, meaning }` converts the
/// value into the engine's field of that name with `Setting`;
/// `key: Type => writer[fields...]` hands it to `writer`, which sets the
/// fields named (for the test that every engine setting is reachable).
/// Keys are applied in the order listed, so a key that depends on
/// another (`rate_max` on `rate`) comes after it.
macro_rules! tcp_keys {
    (@write $config:ident, $value:ident, $key:expr, set [$field:ident]) => {
        $config.$field = Setting::convert($value, $key)?
    };
    (@write $config:ident, $value:ident, $key:expr, $writer:ident [$($field:ident),+]) => {
        $writer($config, $value, $key)?
    };
    ($(
        $key:ident: $spec:ty => $how:ident [$($field:ident),+] {
            default: $default:literal,
            range: $range:literal,
            meaning: $meaning:literal,
        }
    )+) => {
        /// The `[tcp]` table, and each `[stacks.LABEL]` over it: per-connection
        /// settings of the engine in human units. Every key is optional; what is
        /// left out keeps the value below it.
        #[derive(Debug, Clone, Default, PartialEq, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct TcpSpec {
            $(#[doc = $meaning] pub $key: Option<$spec>,)+
        }

        /// Every key, in the reference table's order.
        pub const KEYS: &[KeyDoc] = &[$(KeyDoc {
            key: stringify!($key),
            settings: &[$(stringify!($field)),+],
            default: $default,
            range: $range,
            meaning: $meaning,
        }),+];

        impl TcpSpec {
            /// Writes the keys given into `config`, in the order declared;
            /// a value the engine's type cannot hold is refused naming the
            /// key under `prefix`.
            pub fn apply(&self, config: &mut Config, prefix: &str) -> Result<(), Error> {
                $(if let Some(value) = self.$key {
                    let key = format!("{prefix}.{}", stringify!($key));
                    tcp_keys!(@write config, value, &key, $how [$($field),+]);
                })+
                Ok(())
            }
        }
    };
}

tcp_keys! {
    send_buffer: Bytes => set[send_buffer] {
        default: "`256KiB`",
        range: "1 byte to 1GiB",
        meaning: "bytes the application may queue",
    }
    recv_buffer: Bytes => set[recv_buffer] {
        default: "`256KiB`",
        range: "1 byte to 1GiB; at most 65535 without window scaling",
        meaning: "receive buffer, the largest window offered; with `recv_buffer_auto`, the \
                 size it starts at",
    }
    recv_buffer_auto: bool => set[recv_buffer_auto] {
        default: "`false` (`scps send`/`recv`: `true` unless `recv_buffer` or \
                 `recv_buffer_auto` is keyed in `[tcp]` or the label's `[stacks.LABEL]`, or \
                 window scaling is off)",
        range: "",
        meaning: "receive-buffer autotuning (dynamic right-sizing, as Linux moderates its \
                 buffer between `tcp_rmem`'s default and maximum), in rounds of a round trip \
                 (the receiver's own, from timestamps, else the smoothed RTT), ended sooner \
                 once the application has read up to the right edge advertised when the round \
                 began: the buffer, and so the window offered, grows to twice the bytes the \
                 application read in the round, plus 16 segments, plus their growth over the \
                 best round before (at most a doubling, for a sender in slow start), plus the \
                 most data held past holes in the round (waiting for retransmissions); and to \
                 at least twice its size if the peer's data reached the edge advertised as \
                 the round began while the application left less than half the buffer unread \
                 (the window held the peer back). Never beyond `recv_buffer_max` or what the \
                 window field can say, never shrinking; a round in which the application read \
                 nothing grows nothing; storage is taken only as data fills the buffer",
    }
    recv_buffer_max: Bytes => set[recv_buffer_max] {
        default: "`16MiB`",
        range: "1 byte to 1GiB; at least `recv_buffer` and, without window scaling, at most \
               65535 when autotuning",
        meaning: "the most autotuning grows the receive buffer to; the window scale offered in \
                 the SYN is chosen to cover it (shift 9 for 16 MiB)",
    }
    window_scaling: bool => set[window_scaling] {
        default: "`true`",
        range: "",
        meaning: "RFC 7323 window scaling",
    }
    timestamps: bool => set[timestamps] {
        default: "`true`",
        range: "",
        meaning: "RFC 7323 timestamps and PAWS",
    }
    sack: bool => set[sack] {
        default: "`true`",
        range: "",
        meaning: "RFC 2018 SACK and RFC 6675 recovery",
    }
    initial_window: u32 => set[initial_window_segments] {
        default: "`0`",
        range: "0 to 1000 segments",
        meaning: "0: RFC 3390's `min(4 MSS, max(2 MSS, 4380))`",
    }
    rto_initial: Time => set[rto_initial] {
        default: "`1s`",
        range: "between `rto_min` and `rto_max`",
        meaning: "RFC 6298 initial RTO",
    }
    rto_min: Time => set[rto_min] {
        default: "`1s`",
        range: "above 0",
        meaning: "lower bound of the RTO",
    }
    rto_max: Time => set[rto_max] {
        default: "`60s`",
        range: "at least `rto_min`",
        meaning: "upper bound of the RTO and its backoff",
    }
    clock_granularity: Time => set[clock_granularity] {
        default: "`1ms`",
        range: "",
        meaning: "the G of RFC 6298",
    }
    rto_margin_min: Time => set[rto_margin_min] {
        default: "`0s`; SCPS labels `500ms`",
        range: "at most `rto_max`",
        meaning: "lower bound of the RTO's variance term: RTO = SRTT + max(G, 4·RTTVAR, this), \
                 as Linux (its 200 ms minimum RTO) and the SCPS RI (500 ms) compute it",
    }
    max_retransmissions: u32 => set[max_retransmissions] {
        default: "`15`",
        range: "at least 1",
        meaning: "timeouts in a row (or unanswered window probes) before the connection fails",
    }
    max_syn_retransmissions: u32 => set[max_syn_retransmissions] {
        default: "`6`",
        range: "",
        meaning: "SYN retransmissions before a connection attempt fails",
    }
    delayed_ack: Switch<Time> => set[delayed_ack] {
        default: "`200ms`",
        range: "above 0, or `\"off\"`",
        meaning: "delay before acknowledging in-order data",
    }
    ack_every: u32 => set[ack_every] {
        default: "`2`",
        range: "at least 1",
        meaning: "acknowledge at least every this many segments",
    }
    ack_adaptive: bool => set[ack_adaptive] {
        default: "`false`",
        range: "needs `delayed_ack`",
        meaning: "adaptive ACK policy: acknowledge every k in-order segments, k from \
                 `ack_every` up to 16 (and at most a quarter of the receive window in \
                 segments), growing with the segments per RTT (about 8 ACKs per round trip) \
                 and with the forward segment rate over the return link's rate (ACKs, counted \
                 at their largest, take at most a quarter of it); new and filled holes, \
                 duplicates, PSH and FIN are acknowledged at once; with SACK or SNACK, \
                 out-of-order data that only extends what is held is thinned too; the \
                 delayed-ACK timer restarts with each segment (an ACK goes when the data \
                 stops)",
    }
    ack_return_rate: Rate => set[ack_return_rate_bps] {
        default: "the link's rate in the receiver's sending direction (simulator); else `rate`",
        range: "100 bit/s to 100 Gbit/s",
        meaning: "the return link's rate the adaptive ACK policy budgets for; without it (and \
                 without `rate`) only the RTT counts",
    }
    mss_adapt: bool => set[mss_adapt] {
        default: "`false`",
        range: "",
        meaning: "adaptive segment size: new data goes in segments of the payload that \
                 maximises `s / (s + h) x (1 - BER)^(8 (s + h))` for the bit-error rate \
                 estimated from the sender's own retransmissions (h: IP, TCP and option \
                 bytes, or the compressed header once header compression is in force), from \
                 256 bytes to the MSS; resent segments keep the size they were first sent at",
    }
    nagle: bool => set[nagle] {
        default: "`true`",
        range: "",
        meaning: "Nagle's algorithm (Minshall's variant)",
    }
    keepalive: Switch<KeepaliveSpec> => set[keepalive] {
        default: "`\"off\"`",
        range: "`{ idle, interval, probes }`",
        meaning: "keepalive probing",
    }
    user_timeout: Switch<Time> => set[user_timeout] {
        default: "`\"off\"` (`scps send`/`recv`: the keepalive's idle time and probe \
                 intervals, 60s by default)",
        range: "a duration above 0, or `\"off\"`",
        meaning: "how long data may stay unacknowledged before the connection fails with a \
                 timeout (RFC 5482), whatever `max_retransmissions` allows and in a link \
                 outage too",
    }
    persist_min: Time => set[persist_min] {
        default: "`1s`",
        range: "above 0",
        meaning: "the shortest zero-window probe interval, the first probe's",
    }
    persist_max: Time => set[persist_max] {
        default: "`60s`",
        range: "at least `persist_min`",
        meaning: "the longest zero-window probe interval, which the backoff stops at",
    }
    time_wait: Time => set[time_wait] {
        default: "`60s`",
        range: "",
        meaning: "TIME-WAIT (2 MSL); also how long an abandoned connection waits in \
                 FIN-WAIT-2. A tuple in TIME-WAIT does not block a new connection: the peer's \
                 SYN takes it at once when its timestamp is newer than the last one seen (or, \
                 without timestamps, its sequence number is past the old connection's: RFC \
                 6191), and an open of ours takes it once it has been in TIME-WAIT for 1 s \
                 (the timestamp clock has moved on by then, and a tuple's timestamp offset \
                 never changes)",
    }
    dup_threshold: u32 => set[dup_threshold] {
        default: "`3`",
        range: "at least 1",
        meaning: "DupThresh of RFC 5681 and RFC 6675",
    }
    limited_transmit: bool => set[limited_transmit] {
        default: "`true`",
        range: "",
        meaning: "RFC 3042",
    }
    slow_start_after_idle: bool => set[slow_start_after_idle] {
        default: "`true`",
        range: "",
        meaning: "RFC 5681 4.1 restart window",
    }
    hop_limit: u8 => set[hop_limit] {
        default: "`64`",
        range: "at least 1",
        meaning: "TTL / hop limit of our packets",
    }
    ip_protocol: u8 => set[ip_protocol] {
        default: "`6`",
        range: "`6` or `106`",
        meaning: "IP protocol of uncompressed segments: 106 is what the SCPS RI's standalone \
                 builds send (`scps send --encapsulation ri` sets it); a connection accepted \
                 takes the protocol of the SYN",
    }
    snack: bool => set[snack] {
        default: "`true`",
        range: "",
        meaning: "offer SNACK in the SCPS capabilities and use it once agreed (SCPS labels \
                 only)",
    }
    snack_delay: Time => set[snack_delay] {
        default: "`0ms`",
        range: "",
        meaning: "how long a hole must persist before it is named in a SNACK (reordering \
                 tolerance, e.g. for striped channels)",
    }
    snack_repeat: Time => set[snack_repeat] {
        default: "the measured SNACK round trip",
        range: "a duration",
        meaning: "how long a named hole may persist before the receiver names it again (at \
                 most three repeats; a hole named twice and still open a repeat later is left \
                 to duplicate ACKs: see docs/spec/snack.md). A fixed value imitates receivers \
                 with their own cadence",
    }
    snack_answer: SnackAnswerSpec => set[snack_answer] {
        default: "`\"resend\"`",
        range: "`\"resend\"`, `\"ignore\"` or `\"next-unit\"`",
        meaning: "how this end answers the peer's SNACKs. Only `\"resend\"` is SCPS-TP; the \
                 others behave like faulty peers (one that ignores SNACKs, one that counts \
                 the hole's offset one unit off), for testing a receiver's defences",
    }
    header_compression: bool => set[header_compression] {
        default: "`false`",
        range: "",
        meaning: "offer SCPS header compression (capabilities bit 0x10 with a connection id; \
                 SCPS labels only); in force when both SYNs set it, every later segment then \
                 travels as IP protocol 105 with a 16-byte header on data and 18 on pure ACKs \
                 instead of 32 (with timestamps). tshark shows such packets as IP protocol \
                 105, not as TCP",
    }
    rate: RouteRateSpec => write_rate[rate_bps, rate_auto] {
        default: "SCPS labels: the link's (sustained) rate in the sender's direction; TCP \
                 labels: none",
        range: "100 bit/s to 100 Gbit/s, or `\"auto\"`",
        meaning: "the route rate: every packet (ACKs too) is paced within it by a token bucket \
                 one refill interval (10 ms) deep, which a packet may take into debt; \
                 required by `scps-rate`. `\"auto\"`: the rate follows what the path carries, \
                 measured from the ACKs of all the route's connections (BBR-like rounds of \
                 the smallest RTT: a startup that doubles each round, a drain, a cruise that \
                 probes at 5/4 one round in eight, and round after round while each probe \
                 finds 15% more; losses the link corrupts, learnt from rounds without a \
                 queue, do not lower it; a standing queue sets it to what the path delivered; \
                 an outage or an idle sender leaves it as it was), within `rate_min` and \
                 `rate_max`; the link's rate is not given to it (its framing is)",
    }
    rate_min: Rate => set[rate_min_bps] {
        default: "100 bit/s",
        range: "100 bit/s up to the route rate (100 Gbit/s without one)",
        meaning: "the least an `\"auto\"` rate falls to",
    }
    rate_max: Rate => write_rate_max[rate_bps] {
        default: "none",
        range: "100 bit/s to 100 Gbit/s, with `rate = \"auto\"` only",
        meaning: "the most an `\"auto\"` rate rises to; refused with a fixed rate (a fixed rate \
                 is its own ceiling)",
    }
    rate_framing: u32 => set[rate_framing_bytes] {
        default: "SCPS labels without `rate`: the link's `framing`; else `0`",
        range: "0 to 1000 bytes",
        meaning: "link framing the pacer charges with every packet, so that small packets \
                 (ACKs on a narrow return link) cannot overrun the line",
    }
    rate_order: RateOrderSpec => set[rate_order] {
        default: "`\"turns\"`",
        range: "`\"turns\"` or `\"shortest\"`",
        meaning: "the order in which the connections that share a route's rate (one \
                 endpoint's, or one route's of a gateway) send when the rate holds them back: \
                 in turn, a packet each (an equal share, none starves), or the one with the \
                 fewest bytes still to deliver first (its send buffer), which lowers the mean \
                 completion time of many short transfers and holds long ones back while short \
                 ones keep coming",
    }
    loss_source: LossSourceSpec => set[loss_source] {
        default: "`\"congestion\"`",
        range: "`\"congestion\"` or `\"corruption\"`",
        meaning: "what losses are put down to: congestion cuts the window; corruption only \
                 repairs (also for two RTTs after the peer sends the corruption-experienced \
                 option)",
    }
    vegas: VegasSpec => write_vegas[vegas] {
        default: "`{ alpha = 3, beta = 5, gamma = 4 }`",
        range: "`0 < alpha <= beta <= 1000`, `0 < gamma <= 1000`",
        meaning: "Vegas thresholds, in segments queued in the network",
    }
    outage: OutageSpec => write_outage[outage] {
        default: "`{ after_timeouts = \"off\", probe_interval = \"1s\" }`",
        range: "`after_timeouts` 1 to `max_retransmissions`",
        meaning: "link outage handling: after this many timeouts in a row (or when the link \
                 layer says so) stop backing off, hold data, probe every `probe_interval`, \
                 keep the connection, and resume at the prior window",
    }
}

/// `rate`: a fixed route rate, or "auto" (whose ceiling `rate_max`, coming
/// after it, may give).
fn write_rate(config: &mut Config, rate: RouteRateSpec, _key: &str) -> Result<(), Error> {
    match rate {
        RouteRateSpec::Fixed(rate) => {
            config.rate_bps = Some(rate.0);
            config.rate_auto = false;
        }
        RouteRateSpec::Auto => {
            config.rate_auto = true;
            config.rate_bps = None;
        }
    }
    Ok(())
}

/// `rate_max`: the ceiling of an "auto" rate; a fixed rate is its own.
fn write_rate_max(config: &mut Config, max: Rate, key: &str) -> Result<(), Error> {
    if !config.rate_auto {
        return Err(Error::invalid(
            key,
            max.0,
            "a ceiling for rate = \"auto\" only (a fixed rate is its own ceiling)",
        ));
    }
    config.rate_bps = Some(max.0);
    Ok(())
}

/// `vegas`: the thresholds given; the others keep their values.
fn write_vegas(config: &mut Config, vegas: VegasSpec, _key: &str) -> Result<(), Error> {
    config.vegas.alpha = vegas.alpha.unwrap_or(config.vegas.alpha);
    config.vegas.beta = vegas.beta.unwrap_or(config.vegas.beta);
    config.vegas.gamma = vegas.gamma.unwrap_or(config.vegas.gamma);
    Ok(())
}

/// `outage`: the keys given; the others keep their values.
fn write_outage(config: &mut Config, outage: OutageSpec, key: &str) -> Result<(), Error> {
    if let Some(after) = outage.after_timeouts {
        config.outage.after_timeouts = after.convert(key)?;
    }
    if let Some(interval) = outage.probe_interval {
        config.outage.probe_interval = interval.convert(key)?;
    }
    Ok(())
}
