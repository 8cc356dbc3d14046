//! Counters per channel and direction, as JSON (`scps emulate ctl stats`)
//! and in the Prometheus text format (`GET /metrics`).

use std::sync::Mutex;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::{Registry, Unit};
use scps_bond::{BondFigures, ChannelState};
use scps_channel::{Channel, QUEUE_DELAY_BOUNDS};
use serde::{Deserialize, Serialize};

use crate::state::Direction;

/// One direction of one channel: what came in, what the model did with
/// it, and its current settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChannelFigures {
    pub channel: usize,
    pub direction: String,
    /// Up at the time of the snapshot (no outage, forced or not).
    pub up: bool,
    pub forced_outage: bool,
    pub packets_in: u64,
    pub bytes_in: u64,
    /// Packets the model delivers (sent on to the far side at their time).
    pub packets_out: u64,
    pub bytes_out: u64,
    pub dropped_buffer: u64,
    pub dropped_bit_errors: u64,
    pub dropped_outage: u64,
    pub packets_corrupted: u64,
    /// Time from arrival to the start of transmission, over transmitted
    /// packets.
    pub queue_delay_mean_s: f64,
    pub queue_delay_max_s: f64,
    pub queue_delay_total_s: f64,
    /// Transmitted packets by queueing delay, in the fixed buckets of
    /// `scps_channel::QUEUE_DELAY_BOUNDS` (not cumulative).
    pub queue_delay_histogram: Vec<DelayBucket>,
    pub packets_transmitted: u64,
    /// Bytes waiting for the line now.
    pub backlog_bytes: u64,
    pub rate_bps: u64,
    pub delay_s: f64,
    pub ber: f64,
}

impl ChannelFigures {
    pub(crate) fn new(
        channel: usize,
        direction: Direction,
        up: bool,
        backlog_bytes: u64,
        model: &Channel,
    ) -> ChannelFigures {
        let stats = model.stats();
        let config = model.config();
        ChannelFigures {
            channel,
            direction: direction.name().to_owned(),
            up,
            forced_outage: model.outages().forced_since().is_some(),
            packets_in: stats.packets_in,
            bytes_in: stats.bytes_in,
            packets_out: stats.packets_delivered,
            bytes_out: stats.bytes_delivered,
            dropped_buffer: stats.dropped_buffer,
            dropped_bit_errors: stats.dropped_bit_errors,
            dropped_outage: stats.dropped_outage,
            packets_corrupted: stats.packets_corrupted,
            queue_delay_mean_s: stats.queue_delay_mean().as_secs_f64(),
            queue_delay_max_s: stats.queue_delay_max.as_secs_f64(),
            queue_delay_total_s: stats.queue_delay_total.as_secs_f64(),
            queue_delay_histogram: delay_buckets(&stats.queue_delay_histogram),
            packets_transmitted: stats.packets_transmitted,
            backlog_bytes,
            rate_bps: config.rate_bps,
            delay_s: config.delay.as_secs_f64(),
            ber: config.ber,
        }
    }
}

/// One bucket of a queueing-delay histogram.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DelayBucket {
    /// Upper bound (inclusive), seconds; `null` for the bucket above every
    /// bound.
    pub up_to_s: Option<f64>,
    /// Packets whose queueing delay was above the previous bucket's bound
    /// and up to this one.
    pub packets: u64,
}

fn delay_buckets(counts: &[u64]) -> Vec<DelayBucket> {
    counts
        .iter()
        .enumerate()
        .map(|(i, &packets)| DelayBucket {
            up_to_s: QUEUE_DELAY_BOUNDS.get(i).map(|b| b.as_secs_f64()),
            packets,
        })
        .collect()
}

/// One direction as a whole: what was handed to the far side.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionFigures {
    pub direction: String,
    /// Packets delivered by the model and not yet due.
    pub in_flight: usize,
    /// Packets and bytes written to the far side.
    pub packets_out: u64,
    pub bytes_out: u64,
    /// Packets the kernel refused when written.
    pub write_errors: u64,
    /// Packets read that do not belong on the link: link-local or
    /// multicast, or not IP (see `scope.rs`).
    pub set_aside: u64,
    /// Destination-unreachable reports sent back to the side where the
    /// direction starts: datagrams pinned to a circuit whose call was
    /// down (see `unreachable.rs`).
    #[serde(default)]
    pub unreachable_reports: u64,
}

/// The bond at one side of a link striped by the bonding scheduler
/// (`link.bond = "scheduler"`). Given per side, not per direction: a
/// bond's figures mix both (it sends one way, and its probes' answers
/// and what it receives come the other).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SideBond {
    /// `a` or `b`: the side (`emulate.side_a`, `side_b`) it sits at.
    pub side: String,
    /// The direction it sends its data in: `forward` from side a,
    /// `return` from side b.
    pub sends: String,
    #[serde(flatten)]
    pub figures: BondFigures,
}

/// A snapshot of the whole emulator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub uptime_s: f64,
    pub channels: Vec<ChannelFigures>,
    pub directions: Vec<DirectionFigures>,
    /// Side a's bond, then side b's; empty (and not printed) unless the
    /// link is striped by the bonding scheduler.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bonds: Vec<SideBond>,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelLabels {
    channel: String,
    direction: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DropLabels {
    channel: String,
    direction: String,
    cause: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DirectionLabels {
    direction: String,
}

/// A channel as a bond sees it: the side of the bond, the channel.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BondChannelLabels {
    side: String,
    channel: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BondStateLabels {
    side: String,
    channel: String,
    state: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BondSideLabels {
    side: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BondCauseLabels {
    side: String,
    cause: &'static str,
}

/// A queueing-delay histogram as the snapshot found it, in the Prometheus
/// histogram form (`_sum`, `_count`, cumulative `_bucket{le=...}`). Set
/// once per exposition: the registry hands out shared references only.
#[derive(Debug, Default)]
struct DelayHistogram(Mutex<HistogramSnapshot>);

#[derive(Debug, Default)]
struct HistogramSnapshot {
    sum_s: f64,
    count: u64,
    /// (upper bound in seconds, packets in that bucket alone)
    buckets: Vec<(f64, u64)>,
}

impl DelayHistogram {
    fn fill(&self, c: &ChannelFigures) {
        let buckets = c
            .queue_delay_histogram
            .iter()
            .map(|b| (b.up_to_s.unwrap_or(f64::INFINITY), b.packets))
            .collect();
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = HistogramSnapshot {
            sum_s: c.queue_delay_total_s,
            count: c.packets_transmitted,
            buckets,
        };
    }
}

impl TypedMetric for DelayHistogram {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for DelayHistogram {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let snapshot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        encoder.encode_histogram::<NoLabelSet>(snapshot.sum_s, snapshot.count, &snapshot.buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

/// Registers a counter family, fills it from `rows`, and returns nothing:
/// the registry owns it.
fn counters<L, I>(registry: &mut Registry, name: &str, help: &str, unit: Option<Unit>, rows: I)
where
    L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
    I: IntoIterator<Item = (L, u64)>,
{
    let family = Family::<L, Counter>::default();
    for (labels, value) in rows {
        family.get_or_create(&labels).inc_by(value);
    }
    match unit {
        Some(unit) => registry.register_with_unit(name, help, unit, family),
        None => registry.register(name, help, family),
    }
}

/// Registers a gauge family of `rows`, as [`counters`] does.
fn gauges<L, I>(registry: &mut Registry, name: &str, help: &str, unit: Option<Unit>, rows: I)
where
    L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync + 'static,
    I: IntoIterator<Item = (L, f64)>,
{
    let family = Family::<L, Gauge<f64, AtomicU64>>::default();
    for (labels, value) in rows {
        family.get_or_create(&labels).set(value);
    }
    match unit {
        Some(unit) => registry.register_with_unit(name, help, unit, family),
        None => registry.register(name, help, family),
    }
}

impl Stats {
    /// The Prometheus text exposition of this snapshot.
    pub fn prometheus(&self) -> String {
        let mut registry = Registry::with_prefix("scps_emulator");
        let labels = |c: &ChannelFigures| ChannelLabels {
            channel: c.channel.to_string(),
            direction: c.direction.clone(),
        };
        let per_channel = |f: fn(&ChannelFigures) -> u64| {
            self.channels
                .iter()
                .map(move |c| (labels(c), f(c)))
                .collect::<Vec<_>>()
        };
        counters(
            &mut registry,
            "packets_in",
            "Packets offered to the channel",
            None,
            per_channel(|c| c.packets_in),
        );
        counters(
            &mut registry,
            "in",
            "IP bytes offered to the channel",
            Some(Unit::Bytes),
            per_channel(|c| c.bytes_in),
        );
        counters(
            &mut registry,
            "packets_out",
            "Packets the channel delivers",
            None,
            per_channel(|c| c.packets_out),
        );
        counters(
            &mut registry,
            "out",
            "IP bytes the channel delivers",
            Some(Unit::Bytes),
            per_channel(|c| c.bytes_out),
        );
        let drops = self.channels.iter().flat_map(|c| {
            [
                ("buffer", c.dropped_buffer),
                ("bit_errors", c.dropped_bit_errors),
                ("outage", c.dropped_outage),
            ]
            .map(|(cause, value)| {
                (
                    DropLabels {
                        channel: c.channel.to_string(),
                        direction: c.direction.clone(),
                        cause,
                    },
                    value,
                )
            })
        });
        counters(
            &mut registry,
            "packets_dropped",
            "Packets lost, by cause",
            None,
            drops,
        );
        counters(
            &mut registry,
            "packets_transmitted",
            "Packets that went on the line",
            None,
            per_channel(|c| c.packets_transmitted),
        );
        let queue = Family::<ChannelLabels, DelayHistogram>::default();
        for c in &self.channels {
            queue.get_or_create(&labels(c)).fill(c);
        }
        registry.register_with_unit(
            "queue_delay",
            "Queueing delay of transmitted packets (arrival to start of transmission)",
            Unit::Seconds,
            queue,
        );
        gauges(
            &mut registry,
            "queue_delay_max",
            "Longest queueing delay of a transmitted packet",
            Some(Unit::Seconds),
            self.channels.iter().map(|c| (labels(c), c.queue_delay_max_s)),
        );
        let up = Family::<ChannelLabels, Gauge>::default();
        let backlog = Family::<ChannelLabels, Gauge>::default();
        for c in &self.channels {
            up.get_or_create(&labels(c)).set(i64::from(c.up));
            backlog
                .get_or_create(&labels(c))
                .set(i64::try_from(c.backlog_bytes).unwrap_or(i64::MAX));
        }
        registry.register("up", "1 if the channel is up", up);
        registry.register_with_unit("backlog", "Bytes waiting for the line", Unit::Bytes, backlog);
        let written = self.directions.iter().map(|d| {
            (
                DirectionLabels {
                    direction: d.direction.clone(),
                },
                d.packets_out,
            )
        });
        counters(
            &mut registry,
            "written_packets",
            "Packets handed to the far side",
            None,
            written,
        );
        let errors = self.directions.iter().map(|d| {
            (
                DirectionLabels {
                    direction: d.direction.clone(),
                },
                d.write_errors,
            )
        });
        counters(
            &mut registry,
            "write_errors",
            "Packets the far side's interface refused",
            None,
            errors,
        );
        let aside = self.directions.iter().map(|d| {
            (
                DirectionLabels {
                    direction: d.direction.clone(),
                },
                d.set_aside,
            )
        });
        counters(
            &mut registry,
            "set_aside_packets",
            "Packets read that do not belong on the link",
            None,
            aside,
        );
        let reports = self.directions.iter().map(|d| {
            (
                DirectionLabels {
                    direction: d.direction.clone(),
                },
                d.unreachable_reports,
            )
        });
        counters(
            &mut registry,
            "unreachable_reports",
            "Destination-unreachable reports sent back about datagrams for a circuit that was down",
            None,
            reports,
        );
        if !self.bonds.is_empty() {
            self.bond_metrics(&mut registry);
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &registry);
        text
    }
}

impl Stats {
    /// The bonds' channels and counters, named as the gateway names its
    /// bundle's (`scps_gateway_bundle_channel_*`), by side and channel.
    fn bond_metrics(&self, registry: &mut Registry) {
        let channels = || {
            self.bonds.iter().flat_map(|bond| {
                bond.figures.channels.iter().enumerate().map(|(index, channel)| {
                    let labels = BondChannelLabels {
                        side: bond.side.clone(),
                        channel: index.to_string(),
                    };
                    (labels, channel)
                })
            })
        };
        let states = channels().flat_map(|(labels, channel)| {
            [ChannelState::Up, ChannelState::Down, ChannelState::Standby].map(|state| {
                let labels = BondStateLabels {
                    side: labels.side.clone(),
                    channel: labels.channel.clone(),
                    state: state.name(),
                };
                (labels, f64::from(u8::from(channel.state == state)))
            })
        });
        gauges(
            registry,
            "bond_channel_state",
            "1 for each channel's state now (up, down, standby) as the bond at the side sees it, 0 for the others",
            None,
            states,
        );
        counters(
            registry,
            "bond_channel_changes",
            "State changes of each channel since the start",
            None,
            channels().map(|(labels, c)| (labels, c.changes)),
        );
        counters(
            registry,
            "bond_channel_sent",
            "Bytes the bond put on each channel (data, probes, answers)",
            Some(Unit::Bytes),
            channels().map(|(labels, c)| (labels, c.sent_bytes)),
        );
        counters(
            registry,
            "bond_channel_received",
            "Bytes that came to the bond by each channel",
            Some(Unit::Bytes),
            channels().map(|(labels, c)| (labels, c.received_bytes)),
        );
        gauges(
            registry,
            "bond_channel_rtt",
            "Smoothed round trip of each channel's probes (absent before an answer)",
            Some(Unit::Seconds),
            channels().filter_map(|(labels, c)| Some((labels, c.srtt_s?))),
        );
        gauges(
            registry,
            "bond_channel_loss",
            "Share of the bytes given to each channel that did not arrive, as its probes measure it",
            Some(Unit::Ratios),
            channels().map(|(labels, c)| (labels, c.loss)),
        );
        gauges(
            registry,
            "bond_channel_rate",
            "Delivery rate of each channel as its probes measure it, bit/s",
            Some(Unit::Other("bits_per_second".to_owned())),
            channels().map(|(labels, c)| (labels, c.rate_bps)),
        );
        counters(
            registry,
            "bond_dropped_full",
            "Packets the bond dropped, every channel and its own queue full",
            None,
            self.bonds.iter().map(|bond| {
                (
                    BondSideLabels {
                        side: bond.side.clone(),
                    },
                    bond.figures.dropped_full,
                )
            }),
        );
        let refused = self.bonds.iter().flat_map(|bond| {
            [
                ("bad_frame", bond.figures.bad_frames),
                ("misrouted_answer", bond.figures.misrouted_answers),
                ("stale_answer", bond.figures.stale_answers),
            ]
            .map(|(cause, count)| {
                let labels = BondCauseLabels {
                    side: bond.side.clone(),
                    cause,
                };
                (labels, count)
            })
        });
        counters(
            registry,
            "bond_frames_refused",
            "Control frames the bond did not act on, by cause",
            None,
            refused,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(histogram: &[u64]) -> ChannelFigures {
        ChannelFigures {
            channel: 0,
            direction: "forward".into(),
            up: true,
            forced_outage: false,
            packets_in: 10,
            bytes_in: 15_000,
            packets_out: 10,
            bytes_out: 15_000,
            dropped_buffer: 0,
            dropped_bit_errors: 0,
            dropped_outage: 0,
            packets_corrupted: 0,
            queue_delay_mean_s: 0.0125,
            queue_delay_max_s: 0.03,
            queue_delay_total_s: 0.125,
            queue_delay_histogram: delay_buckets(histogram),
            packets_transmitted: histogram.iter().sum(),
            backlog_bytes: 0,
            rate_bps: 1_000_000,
            delay_s: 0.0,
            ber: 0.0,
        }
    }

    #[test]
    fn queueing_delay_is_a_prometheus_histogram_with_cumulative_buckets() {
        let mut counts = [0u64; QUEUE_DELAY_BOUNDS.len() + 1];
        counts[0] = 4; // up to 100 us
        counts[7] = 5; // up to 25 ms
        counts[8] = 1; // up to 50 ms
        let stats = Stats {
            uptime_s: 1.0,
            channels: vec![figures(&counts)],
            directions: Vec::new(),
            bonds: Vec::new(),
        };
        let text = stats.prometheus();
        let labels = "channel=\"0\",direction=\"forward\"";
        for line in [
            "# TYPE scps_emulator_queue_delay_seconds histogram".to_owned(),
            format!("scps_emulator_queue_delay_seconds_sum{{{labels}}} 0.125"),
            format!("scps_emulator_queue_delay_seconds_count{{{labels}}} 10"),
            format!("scps_emulator_queue_delay_seconds_bucket{{le=\"0.0001\",{labels}}} 4"),
            format!("scps_emulator_queue_delay_seconds_bucket{{le=\"0.01\",{labels}}} 4"),
            format!("scps_emulator_queue_delay_seconds_bucket{{le=\"0.025\",{labels}}} 9"),
            format!("scps_emulator_queue_delay_seconds_bucket{{le=\"0.05\",{labels}}} 10"),
            format!("scps_emulator_queue_delay_seconds_bucket{{le=\"+Inf\",{labels}}} 10"),
            format!("scps_emulator_queue_delay_max_seconds{{{labels}}} 0.03"),
        ] {
            assert!(text.lines().any(|l| l == line), "no line {line:?} in\n{text}");
        }
        // The JSON names each bucket by its bound.
        let json = serde_json::to_value(&stats).unwrap();
        let buckets = &json["channels"][0]["queue_delay_histogram"];
        assert_eq!(buckets[7], serde_json::json!({"up_to_s": 0.025, "packets": 5}));
        assert_eq!(buckets[18], serde_json::json!({"up_to_s": null, "packets": 0}));
    }
}
