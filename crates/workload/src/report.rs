//! What each end reports: with `--json`, one object with the field names of
//! `scps sim --json` (`bytes`, `duration_s`, `goodput_bps`,
//! `retransmitted_bytes`, `timeouts`, `fast_recoveries`, and for message
//! streams `offered_bps`, `actual_bps`, `messages`, `latency_p50_s`,
//! `latency_p95_s`, `latency_max_s`, `reverse`); otherwise a few lines for
//! people.

use std::time::Duration;

use scps_workload_format::figures::{FlowFigures, MessageFigures, percentile};
use serde::{Deserialize, Serialize};

/// The loss repairs of one connection of our stack.
#[derive(Debug, Clone, Copy)]
pub struct Repairs {
    pub retransmitted_bytes: u64,
    pub timeouts: u64,
    pub fast_recoveries: u64,
}

/// What a connection did, as its stack tells it: our stack knows all of
/// it, the kernel's TCP only its retransmitted bytes.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConnectionFigures {
    pub repairs: Option<Repairs>,
    pub retransmitted_bytes: Option<u64>,
    /// Whether SCPS-TP, and header compression, were negotiated.
    pub scps: Option<bool>,
    pub header_compression: Option<bool>,
    /// The route rate the connection paced within as it ended, and for a
    /// rate that is `auto` the path's rate as last measured (bit/s).
    pub pacing_rate_bps: Option<u64>,
    pub path_rate_bps: Option<u64>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// `send` or `recv`.
    pub role: String,
    /// `scps-udp`, `scps-tun` or `tcp`.
    pub protocol: String,
    /// What ran the connection: our stack's protocol label (`scps-rate`,
    /// `tcp-vj`, ...), or `kernel-` and the kernel's congestion control
    /// (`kernel-cubic`).
    #[serde(default)]
    pub stack: String,
    /// `bulk`, `raw` or `messages`.
    pub workload: String,
    pub peer: String,
    /// Application bytes delivered and checked (bulk), or of whole
    /// messages received (messages).
    pub bytes: u64,
    pub duration_s: f64,
    pub goodput_bps: f64,
    /// Data bytes sent again: our stack's count, or for kernel TCP the
    /// kernel's (`tcpi_bytes_retrans`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmitted_bytes: Option<u64>,
    /// Retransmission timeouts and fast recoveries of our stack's
    /// connection (absent for kernel TCP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_recoveries: Option<u64>,
    /// Whether the connection is SCPS-TP (both SYNs offered it) or plain
    /// TCP; absent for kernel TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scps: Option<bool>,
    /// Whether header compression was in force (IP protocol 105); absent
    /// for kernel TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_compression: Option<bool>,
    /// The route rate our stack's connection paced within as it ended,
    /// bit/s; absent without a route rate and for kernel TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pacing_rate_bps: Option<u64>,
    /// For a route rate that is `auto`: the path's rate as last measured,
    /// bit/s on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_rate_bps: Option<u64>,
    /// SHA-256 of the bulk data, as this end computed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Whether the bulk data matched the sender's digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified: Option<bool>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<MessageFigures>,
    /// CPU time this process used for this connection, seconds.
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// The process's CPU time when the connection began: a receiver
    /// serves one connection after another, and each report counts its
    /// own.
    #[serde(skip)]
    cpu_at_start: (f64, f64),
    /// For a bulk or raw transfer, the bytes of data it carries (`u64::MAX`
    /// for a raw receiver, which reads to the end), so that a failed
    /// one's report says how far it got; `None` for message streams.
    #[serde(skip)]
    data_bytes: Option<u64>,
    /// Bytes on the stream before the data (the sender's hello).
    #[serde(skip)]
    data_offset: u64,
    /// The receiving end's report, as it sent it back (sender only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_report: Option<Box<Report>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Packets our receiving endpoint has dropped since it started, by
    /// cause (malformed, not TCP, for no connection, ...), as this
    /// connection ended; absent for the sender and for kernel TCP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint_drops: Option<std::collections::BTreeMap<String, u64>>,
    /// Over a bundle: each channel as this end saw it when the
    /// connection ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<Vec<BundleChannelFigures>>,
}

/// One channel of a bundle, as a report gives it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BundleChannelFigures {
    pub local: String,
    pub peer: String,
    /// `up`, `down` or `standby`.
    pub state: String,
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// What its probes measured: the smoothed round trip (absent before
    /// an answer), the share of bytes lost, the delivery rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_s: Option<f64>,
    pub loss: f64,
    pub rate_bps: f64,
    /// How many times it changed state.
    pub changes: u64,
}

impl Report {
    /// The report of one end (`role`: `send` or `recv`) of a connection
    /// over `protocol` run by `stack` with `peer`, its CPU clock started.
    pub fn start(role: &str, protocol: &str, stack: String, peer: String) -> Report {
        let mut report = Report {
            role: role.into(),
            protocol: protocol.into(),
            stack,
            peer,
            ..Report::default()
        };
        report.start_cpu_clock();
        report
    }

    /// Fills in what the connection did: its repairs and what it
    /// negotiated.
    pub fn record_connection(&mut self, figures: ConnectionFigures) {
        self.set_repairs(figures.repairs);
        self.retransmitted_bytes = figures.retransmitted_bytes;
        self.scps = figures.scps;
        self.header_compression = figures.header_compression;
        self.pacing_rate_bps = figures.pacing_rate_bps;
        self.path_rate_bps = figures.path_rate_bps;
    }

    /// Fills in how the connection repaired losses (nothing for kernel TCP).
    fn set_repairs(&mut self, repairs: Option<Repairs>) {
        self.retransmitted_bytes = repairs.map(|r| r.retransmitted_bytes);
        self.timeouts = repairs.map(|r| r.timeouts);
        self.fast_recoveries = repairs.map(|r| r.fast_recoveries);
    }

    /// `bytes` moved since `start`: the bytes, the time and the goodput.
    pub fn set_moved(&mut self, bytes: u64, start: std::time::Instant) {
        (self.duration_s, self.goodput_bps) = crate::bulk::timing(bytes, start);
        self.bytes = bytes;
    }

    /// A message test of `duration_s`: the figures of the flow it measures
    /// (and of the reverse one, if any); the bytes and goodput are the
    /// forward flow's whole messages in the window.
    pub fn set_messages(&mut self, forward: FlowFigures, reverse: Option<FlowFigures>, duration_s: f64) {
        self.bytes = (forward.actual_bps * duration_s / 8.0).round() as u64;
        self.duration_s = duration_s;
        self.goodput_bps = forward.actual_bps;
        self.messages = Some(MessageFigures { forward, reverse });
    }

    /// The transfer carries `bytes` of data (`u64::MAX` for a raw
    /// receiver, which reads to the end) after `offset` bytes of its own
    /// on the stream (the sender's hello): for a failed one's report.
    pub fn expect_data(&mut self, bytes: u64, offset: u64) {
        self.data_bytes = Some(bytes);
        self.data_offset = offset;
    }

    /// A failed bulk or raw transfer: `through`, the bytes of the stream
    /// that got through (what the receiver read, or what the sender saw
    /// acknowledged), gives the data delivered before the failure.
    pub fn set_bytes_before_failure(&mut self, through: u64) {
        if let Some(data) = self.data_bytes
            && self.bytes == 0
        {
            self.bytes = through.saturating_sub(self.data_offset).min(data);
        }
    }

    pub fn failed(&self) -> bool {
        self.error.is_some()
            || self.verified == Some(false)
            || self.peer_report.as_ref().is_some_and(|p| p.failed())
    }

    /// Starts counting this connection's CPU time.
    fn start_cpu_clock(&mut self) {
        self.cpu_at_start = process_cpu_time();
    }

    /// Fills in the CPU time used since [`Report::start_cpu_clock`].
    pub fn set_cpu(&mut self) {
        let (user, system) = process_cpu_time();
        self.cpu_user_s = user - self.cpu_at_start.0;
        self.cpu_system_s = system - self.cpu_at_start.1;
    }

    /// The report for people (a few lines) or, with `json`, one JSON
    /// object on one line.
    pub fn render(&self, json: bool) -> String {
        if json {
            serde_json::to_string(self).unwrap_or_default()
        } else {
            self.human()
        }
    }

    fn human(&self) -> String {
        let negotiated = match (self.scps, self.header_compression) {
            (Some(true), Some(true)) => " (SCPS-TP, compressed headers)",
            (Some(true), _) => " (SCPS-TP)",
            (Some(false), _) => " (plain TCP)",
            (None, _) => "",
        };
        let mut lines = vec![format!(
            "{} {} over {}{negotiated} with {}: {} bytes in {:.3} s, {}",
            self.role,
            self.workload,
            self.protocol,
            self.peer,
            self.bytes,
            self.duration_s,
            rate(self.goodput_bps)
        )];
        if let Some(sha) = &self.sha256 {
            let verdict = match self.verified {
                Some(true) => "verified",
                Some(false) => "MISMATCH",
                None => "not checked",
            };
            lines.push(format!("  sha256 {sha} ({verdict})"));
        }
        if let Some(m) = &self.messages {
            lines.push(format!("  forward: {}", flow(&m.forward)));
            if let Some(r) = &m.reverse {
                lines.push(format!("  reverse: {}", flow(r)));
            }
        }
        match (self.retransmitted_bytes, self.timeouts, self.fast_recoveries) {
            (Some(r), Some(timeouts), Some(recoveries)) => lines.push(format!(
                "  retransmitted {r} bytes ({timeouts} timeouts, {recoveries} fast recoveries)"
            )),
            // Kernel TCP: the kernel tells its bytes, not how it repaired.
            (Some(r), _, _) => lines.push(format!("  retransmitted {r} bytes")),
            (None, _, _) => {}
        }
        match (self.pacing_rate_bps, self.path_rate_bps) {
            (Some(pacing), Some(path)) => lines.push(format!(
                "  paced at {} at the end, the path measured at {} (rate auto)",
                rate(pacing as f64),
                rate(path as f64)
            )),
            (Some(pacing), None) => lines.push(format!("  paced within {}", rate(pacing as f64))),
            _ => {}
        }
        lines.push(format!(
            "  cpu {:.2} s user, {:.2} s system ({:.0}% of the time)",
            self.cpu_user_s,
            self.cpu_system_s,
            if self.duration_s > 0.0 {
                100.0 * (self.cpu_user_s + self.cpu_system_s) / self.duration_s
            } else {
                0.0
            }
        ));
        if let Some(peer) = &self.peer_report {
            lines.push("  the receiver reported:".into());
            lines.extend(peer.human().lines().map(|l| format!("    {l}")));
        }
        if let Some(drops) = self.endpoint_drops.as_ref().filter(|d| !d.is_empty()) {
            let causes: Vec<String> = drops.iter().map(|(cause, n)| format!("{cause} {n}")).collect();
            lines.push(format!("  dropped by the endpoint so far: {}", causes.join(", ")));
        }
        for (index, channel) in self.bundle.iter().flatten().enumerate() {
            lines.push(format!(
                "  channel {index} {} -> {}: {}, sent {} bytes, received {}, rtt {}, loss {:.2}%, {}, {} state changes",
                channel.local,
                channel.peer,
                channel.state,
                channel.sent_bytes,
                channel.received_bytes,
                channel.rtt_s.map_or("unknown".to_owned(), |rtt| format!("{:.1} ms", rtt * 1e3)),
                100.0 * channel.loss,
                rate(channel.rate_bps),
                channel.changes
            ));
        }
        if let Some(error) = &self.error {
            lines.push(format!("  error: {error}"));
        }
        lines.join("\n")
    }
}

/// User and system CPU time of this process so far, seconds.
pub fn process_cpu_time() -> (f64, f64) {
    use nix::sys::resource::{UsageWho, getrusage};
    let secs = |t: nix::sys::time::TimeVal| t.tv_sec() as f64 + t.tv_usec() as f64 * 1e-6;
    getrusage(UsageWho::RUSAGE_SELF).map_or((0.0, 0.0), |usage| {
        (secs(usage.user_time()), secs(usage.system_time()))
    })
}

fn rate(bps: f64) -> String {
    if bps >= 1e6 {
        format!("{:.2} Mbit/s", bps / 1e6)
    } else if bps >= 1e3 {
        format!("{:.2} kbit/s", bps / 1e3)
    } else {
        format!("{bps:.0} bit/s")
    }
}

fn flow(f: &FlowFigures) -> String {
    format!(
        "offered {}, actual {}, {} messages, latency p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        rate(f.offered_bps),
        rate(f.actual_bps),
        f.messages,
        f.latency_p50_s * 1e3,
        f.latency_p95_s * 1e3,
        f.latency_max_s * 1e3
    )
}

/// The figures of one received message flow.
pub fn flow_figures(
    offered_bps: u64,
    bytes: u64,
    window: Duration,
    latencies: &mut [Duration],
) -> FlowFigures {
    FlowFigures {
        offered_bps: offered_bps as f64,
        actual_bps: if window.is_zero() {
            0.0
        } else {
            bytes as f64 * 8.0 / window.as_secs_f64()
        },
        messages: latencies.len() as u64,
        latency_p50_s: percentile(latencies, 50.0),
        latency_p95_s: percentile(latencies, 95.0),
        latency_max_s: percentile(latencies, 100.0),
    }
}
