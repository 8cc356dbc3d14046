//! The `link` schema: what a link between two sides looks like, shared by
//! the simulator and the live emulator.
//!
//! `[link]` describes every channel in both directions; `[link.return]`
//! overrides it for the return direction (an asymmetric link), and the
//! `[[link.channel]]` entries override it per parallel circuit, in order
//! (several Iridium calls, say; entries beyond `channels` are unused, so
//! that the number of circuits can be swept). Both directions of a
//! circuit share its outages: a dropped call is down both ways.

use std::time::Duration;

use scps_bond::BondConfig;
use scps_channel::{
    BurstErrors, CallDrops, ChannelConfig, ErrorMode, FrameCheck, Jitter, OutageConfig, OutageWindow, Qdisc,
    RedConfig, ShaperConfig,
};
use serde::Deserialize;

use crate::error::Error;
use crate::units::{Ber, Bytes, Rate, Time};

/// The shortest mean time between call drops we accept.
const MIN_CALL_DROP_INTERVAL: Duration = Duration::from_millis(10);

/// Per-packet framing bytes, buffer and MTU when a scenario does not say.
pub const DEFAULT_BUFFER: Bytes = Bytes(1 << 20);
pub const DEFAULT_MTU: u16 = 1500;

/// The keys of a link (or of its return direction, or of one circuit);
/// every one optional so that overrides can name only what changes.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChannelSpec {
    /// Line rate.
    pub rate: Option<Rate>,
    /// Drop-tail buffer in front of the line.
    pub buffer: Option<Bytes>,
    /// Link-layer bytes per packet (PPP/HDLC framing), costing line time.
    pub framing: Option<Bytes>,
    /// One-way propagation delay.
    pub delay: Option<Time>,
    /// Round-trip propagation delay, split evenly (instead of `delay`).
    pub rtt: Option<Time>,
    /// Jitter amount: the half-width (uniform) or standard deviation (normal).
    pub jitter: Option<Time>,
    pub jitter_distribution: Option<JitterKind>,
    /// Whether jitter may reorder packets.
    pub reorder: Option<bool>,
    /// Bit-error rate, per bit of each IP packet.
    pub ber: Option<Ber>,
    /// What a bit error does: drop the packet, flip its bits, or flip them
    /// and let a frame check sequence find them.
    pub errors: Option<ErrorKind>,
    /// Gilbert-Elliott burst errors: bit-error rate in the bad state...
    pub burst_ber: Option<Ber>,
    /// ... its mean duration ...
    pub burst_duration: Option<Time>,
    /// ... and the mean time between bad states.
    pub burst_interval: Option<Time>,
    /// Queue discipline of the buffer.
    pub qdisc: Option<QdiscKind>,
    /// RED: average backlog where early drops start and where every
    /// packet is dropped; drop probability reached at `red_max`; weight of
    /// each sample in the average.
    pub red_min: Option<Bytes>,
    pub red_max: Option<Bytes>,
    pub red_probability: Option<f64>,
    pub red_weight: Option<f64>,
    pub shaper: Option<ShaperSpec>,
    /// Scheduled outages.
    pub outages: Option<Vec<OutageSpec>>,
    /// Mean time between call drops (Poisson), or none.
    pub call_drop_interval: Option<Time>,
    /// Time to bring a dropped call back, uniform between the two.
    pub redial_min: Option<Time>,
    pub redial_max: Option<Time>,
    /// Parallel circuits (only in `[link]`).
    pub channels: Option<u32>,
    /// How packets are striped over the circuits (only in `[link]`):
    /// round-robin over those up (the Iridium paper's teql), or the
    /// bonding scheduler (crates/bond: by measured delivery rate, with
    /// probes, down and marginal circuits out).
    pub bond: Option<BondKind>,
    /// The scheduler's settings (only in `[link]`, only with `bond =
    /// "scheduler"`): its probe interval, the probe intervals without an
    /// answer after which a circuit is down, how long a circuit's queue
    /// may be (in time at its rate), and when a circuit is marginal (its
    /// loss, and its loss and round trip against its best peer's).
    pub bond_probe_interval: Option<Time>,
    pub bond_down_after: Option<u32>,
    pub bond_channel_queue: Option<Time>,
    pub bond_marginal_loss: Option<f64>,
    pub bond_marginal_loss_ratio: Option<f64>,
    pub bond_marginal_rtt_ratio: Option<f64>,
    /// Largest IP packet (only in `[link]`); wider than the `u16` it
    /// becomes, so that a value too large is refused with the MTU's range.
    pub mtu: Option<u32>,
    /// The return direction (only in `[link]`).
    #[serde(rename = "return")]
    pub reverse: Option<Box<ChannelSpec>>,
    /// Per-circuit overrides (only in `[link]`).
    pub channel: Option<Vec<ChannelSpec>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BondKind {
    RoundRobin,
    Scheduler,
}

/// How a link's packets are striped over its circuits.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Striping {
    /// Round-robin over the circuits that are up.
    #[default]
    RoundRobin,
    /// The bonding scheduler with these settings, checked; the circuits'
    /// rates and what the bond holds are the link's, given when it is
    /// built.
    Scheduler(BondConfig),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JitterKind {
    Uniform,
    Normal,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum QdiscKind {
    Droptail,
    Red,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorKind {
    /// An errored packet is lost (an ideal link frame check).
    Drop,
    /// Its bits are flipped and it is delivered (no link frame check).
    Corrupt,
    /// Its bits are flipped and PPP's 16-bit or 32-bit frame check
    /// sequence discards it if it sees the damage.
    Fcs16,
    Fcs32,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShaperSpec {
    /// Sustained rate.
    pub rate: Rate,
    /// Peak rate while the bucket has tokens.
    pub ceiling: Rate,
    /// Bucket size.
    pub burst: Bytes,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutageSpec {
    pub start: Time,
    pub duration: Time,
}

/// A link resolved into channel models: index `i` of each direction is
/// circuit `i`.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub mtu: u16,
    pub forward: Vec<ChannelConfig>,
    pub reverse: Vec<ChannelConfig>,
    pub striping: Striping,
}

/// Which way a node's data goes over a link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Client to server.
    Forward,
    /// Server to client (the return link).
    Reverse,
}

impl Link {
    pub fn channels(&self, direction: Direction) -> &[ChannelConfig] {
        match direction {
            Direction::Forward => &self.forward,
            Direction::Reverse => &self.reverse,
        }
    }

    /// The bond that sends `direction`'s circuits, if they are striped by
    /// the scheduler: its settings with the circuits' sustained rates, and
    /// holding what their buffers would hold together striped
    /// round-robin. The simulator and the emulator put one at each end.
    pub fn bond(&self, direction: Direction) -> Option<BondConfig> {
        let Striping::Scheduler(settings) = &self.striping else {
            return None;
        };
        let channels = self.channels(direction);
        let buffers: u64 = channels.iter().map(|c| c.buffer_bytes).sum();
        Some(BondConfig {
            channel_rates_bps: channels.iter().map(sustained_rate_bps).collect(),
            framing_bytes: self.route(direction).framing_bytes,
            hold_bytes: usize::try_from(buffers)
                .unwrap_or(usize::MAX)
                .clamp(1500, 1 << 30),
            ..settings.clone()
        })
    }

    /// The route an SCPS sender paces to in a direction: the channels'
    /// sustained rates summed, bit/s on the line, and the framing the
    /// link adds to each packet (the largest of the channels'), which the
    /// pacer charges per packet.
    pub fn route(&self, direction: Direction) -> Route {
        let channels = self.channels(direction);
        Route {
            rate_bps: channels.iter().map(sustained_rate_bps).sum(),
            framing_bytes: channels.iter().map(|c| c.framing_bytes).max().unwrap_or(0),
        }
    }
}

/// What an SCPS sender's pacer knows of the link: see `Link::route`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    pub rate_bps: u64,
    pub framing_bytes: u32,
}

/// A channel's long-run rate: the line rate, or the shaper's sustained
/// rate if lower.
pub fn sustained_rate_bps(channel: &ChannelConfig) -> u64 {
    channel
        .shaper
        .as_ref()
        .map_or(channel.rate_bps, |s| s.rate_bps.min(channel.rate_bps))
}

/// One circuit's keys in each direction, and the key that names it in
/// errors (`link` or `link.channel[i]`; the return direction adds
/// `.return`).
#[derive(Debug, Clone, PartialEq)]
pub struct CircuitSpec {
    pub key: String,
    pub forward: ChannelSpec,
    pub reverse: ChannelSpec,
}

/// Copies into `$out` every optional field that `$over` sets.
macro_rules! overlay_fields {
    ($out:ident, $over:ident; $($field:ident),* $(,)?) => {
        $(if $over.$field.is_some() {
            $out.$field = $over.$field.clone();
        })*
    };
}

impl ChannelSpec {
    /// `self` with every key `over` sets replaced. `delay` and `rtt` are
    /// two spellings of one quantity: setting either replaces both.
    pub fn overlay(&self, over: &ChannelSpec) -> ChannelSpec {
        let mut out = self.clone();
        overlay_fields!(
            out, over;
            rate,
            buffer,
            framing,
            jitter,
            jitter_distribution,
            reorder,
            ber,
            errors,
            burst_ber,
            burst_duration,
            burst_interval,
            qdisc,
            red_min,
            red_max,
            red_probability,
            red_weight,
            shaper,
            outages,
            call_drop_interval,
            redial_min,
            redial_max
        );
        if over.delay.is_some() || over.rtt.is_some() {
            out.delay = over.delay;
            out.rtt = over.rtt;
        }
        out
    }

    /// The channel model this spec describes on a link of `mtu`; `key`
    /// names it in errors.
    pub fn channel(&self, key: &str, mtu: u16) -> Result<ChannelConfig, Error> {
        let rate = self
            .rate
            .ok_or_else(|| Error::invalid(format!("{key}.rate"), "missing", "a line rate, such as 8Mbit"))?;
        let delay = match (self.delay, self.rtt) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    format!("{key}.rtt"),
                    "given with delay",
                    "either delay (one way) or rtt (both ways), not both",
                ));
            }
            (Some(Time(d)), None) => d,
            (None, Some(Time(rtt))) => rtt / 2,
            (None, None) => Duration::ZERO,
        };
        let jitter = match (self.jitter.map(|t| t.0), self.jitter_distribution) {
            (None, _) => Jitter::None,
            (Some(d), _) if d.is_zero() => Jitter::None,
            (Some(d), Some(JitterKind::Uniform)) => Jitter::Uniform(d),
            (Some(d), None | Some(JitterKind::Normal)) => Jitter::Normal(d),
        };
        let call_drops = match (self.call_drop_interval, self.redial_min, self.redial_max) {
            (None, None, None) => None,
            (Some(Time(interval)), _, _) if interval < MIN_CALL_DROP_INTERVAL => {
                return Err(Error::invalid(
                    format!("{key}.call_drop_interval"),
                    Time(interval),
                    "at least 10ms (shorter ones would make the link flap faster than it carries packets)",
                ));
            }
            (Some(Time(interval)), min, max) => {
                let min = min.map_or(Duration::ZERO, |t| t.0);
                Some(CallDrops {
                    mean_interval: interval,
                    redial_min: min,
                    redial_max: max.map_or(min, |t| t.0),
                })
            }
            _ => {
                return Err(Error::invalid(
                    format!("{key}.redial_min"),
                    "given without call_drop_interval",
                    "redial times only with call_drop_interval",
                ));
            }
        };
        let burst = self.burst(key)?;
        let buffer_bytes = self.buffer.unwrap_or(DEFAULT_BUFFER).0;
        let qdisc = self.qdisc(key, buffer_bytes)?;
        let framing = self.framing.map_or(0, |b| b.0);
        let config = ChannelConfig {
            rate_bps: rate.bps(),
            shaper: self.shaper.as_ref().map(|s| ShaperConfig {
                rate_bps: s.rate.bps(),
                ceiling_bps: s.ceiling.bps(),
                burst_bytes: s.burst.0,
            }),
            buffer_bytes,
            framing_bytes: u32::try_from(framing)
                .map_err(|_| Error::invalid(format!("{key}.framing"), Bytes(framing), "at most 4 GB"))?,
            delay,
            jitter,
            allow_reordering: self.reorder.unwrap_or(false),
            ber: self.ber.map_or(0.0, |b| b.0),
            error_mode: match self.errors {
                Some(ErrorKind::Corrupt) => ErrorMode::Corrupt,
                Some(ErrorKind::Fcs16) => ErrorMode::FrameCheck(FrameCheck::Fcs16),
                Some(ErrorKind::Fcs32) => ErrorMode::FrameCheck(FrameCheck::Fcs32),
                None | Some(ErrorKind::Drop) => ErrorMode::Drop,
            },
            burst,
            qdisc,
            outages: OutageConfig {
                scheduled: self
                    .outages
                    .iter()
                    .flatten()
                    .map(|o| OutageWindow {
                        start: o.start.0,
                        duration: o.duration.0,
                    })
                    .collect(),
                call_drops,
            },
        };
        config.validate().map_err(|e| match e.field() {
            Some(field) => Error::invalid(
                format!("{key}.{}", schema_key(field)),
                channel_error_value(&e),
                channel_error_allowed(&e),
            ),
            None => Error::invalid(key, "", e.to_string()),
        })?;
        // The buffer counts IP bytes: below the MTU, every full-size packet
        // would be dropped whatever happened.
        if config.buffer_bytes < u64::from(mtu) {
            return Err(Error::invalid(
                format!("{key}.buffer"),
                Bytes(config.buffer_bytes),
                format!("at least the MTU ({mtu} bytes)"),
            ));
        }
        Ok(config)
    }

    /// The burst-error model: all three keys or none.
    fn burst(&self, key: &str) -> Result<Option<BurstErrors>, Error> {
        match (self.burst_ber, self.burst_duration, self.burst_interval) {
            (None, None, None) => Ok(None),
            (Some(Ber(ber)), Some(Time(mean_bad)), Some(Time(mean_good))) => Ok(Some(BurstErrors {
                mean_good,
                mean_bad,
                ber,
            })),
            _ => {
                let missing = [
                    ("burst_ber", self.burst_ber.is_none()),
                    ("burst_duration", self.burst_duration.is_none()),
                    ("burst_interval", self.burst_interval.is_none()),
                ];
                let name = missing.iter().find(|(_, m)| *m).map_or("burst_ber", |(n, _)| n);
                Err(Error::invalid(
                    format!("{key}.{name}"),
                    "missing",
                    "burst_ber, burst_duration and burst_interval together (or none of them)",
                ))
            }
        }
    }

    /// The queue discipline; RED's thresholds default to a quarter and
    /// three quarters of the buffer.
    fn qdisc(&self, key: &str, buffer_bytes: u64) -> Result<Qdisc, Error> {
        let red_keys = [
            ("red_min", self.red_min.is_some()),
            ("red_max", self.red_max.is_some()),
            ("red_probability", self.red_probability.is_some()),
            ("red_weight", self.red_weight.is_some()),
        ];
        match self.qdisc {
            None | Some(QdiscKind::Droptail) => match red_keys.iter().find(|(_, set)| *set) {
                Some((name, _)) => Err(Error::invalid(
                    format!("{key}.{name}"),
                    "set",
                    "only with qdisc = \"red\"",
                )),
                None => Ok(Qdisc::DropTail),
            },
            Some(QdiscKind::Red) => Ok(Qdisc::Red(RedConfig {
                min_bytes: self.red_min.map_or(buffer_bytes / 4, |b| b.0),
                max_bytes: self.red_max.map_or(buffer_bytes / 4 * 3, |b| b.0),
                max_probability: self.red_probability.unwrap_or(0.1),
                weight: self.red_weight.unwrap_or(0.002),
            })),
        }
    }

    /// Resolves `[link]` into channel models for both directions.
    pub fn resolve(&self) -> Result<Link, Error> {
        let (mtu, circuits) = self.circuits()?;
        let mut forward = Vec::new();
        let mut reverse = Vec::new();
        for circuit in &circuits {
            forward.push(circuit.forward.channel(&circuit.key, mtu)?);
            reverse.push(circuit.reverse.channel(&format!("{}.return", circuit.key), mtu)?);
        }
        Ok(Link {
            mtu,
            forward,
            reverse,
            striping: self.striping()?,
        })
    }

    /// The scheduler's keys, each with whether it is given.
    fn bond_settings_given(&self) -> [(&'static str, bool); 6] {
        [
            ("bond_probe_interval", self.bond_probe_interval.is_some()),
            ("bond_down_after", self.bond_down_after.is_some()),
            ("bond_channel_queue", self.bond_channel_queue.is_some()),
            ("bond_marginal_loss", self.bond_marginal_loss.is_some()),
            (
                "bond_marginal_loss_ratio",
                self.bond_marginal_loss_ratio.is_some(),
            ),
            ("bond_marginal_rtt_ratio", self.bond_marginal_rtt_ratio.is_some()),
        ]
    }

    /// How the circuits are striped: round-robin, or the scheduler with
    /// its settings checked (a setting out of range is refused naming its
    /// key, before anything starts).
    pub fn striping(&self) -> Result<Striping, Error> {
        if self.bond.unwrap_or(BondKind::RoundRobin) == BondKind::RoundRobin {
            return match self.bond_settings_given().iter().find(|(_, given)| *given) {
                Some((key, _)) => Err(Error::invalid(
                    format!("link.{key}"),
                    "set",
                    "only with bond = \"scheduler\"",
                )),
                None => Ok(Striping::RoundRobin),
            };
        }
        Ok(Striping::Scheduler(self.scheduler_settings(vec![2400])?))
    }

    /// The bonding scheduler's settings (the `bond_*` keys) for channels
    /// of these rates, checked: a value out of range is refused naming its
    /// key. The simulator's link gives its circuits' rates when it is
    /// built (a stand-in while they are checked); a real bundle, its
    /// channels'.
    pub fn scheduler_settings(&self, channel_rates_bps: Vec<u64>) -> Result<BondConfig, Error> {
        let mut config = BondConfig::new(channel_rates_bps);
        let marginal = &mut config.marginal;
        config.probe_interval = self.bond_probe_interval.map_or(config.probe_interval, |t| t.0);
        config.down_after_intervals = self.bond_down_after.unwrap_or(config.down_after_intervals);
        config.channel_queue = self.bond_channel_queue.map_or(config.channel_queue, |t| t.0);
        // A real bundle's channels are the link's circuits, framed alike.
        config.framing_bytes = self.framing.map_or(0, |b| u32::try_from(b.0).unwrap_or(u32::MAX));
        marginal.loss = self.bond_marginal_loss.unwrap_or(marginal.loss);
        marginal.loss_ratio = self.bond_marginal_loss_ratio.unwrap_or(marginal.loss_ratio);
        marginal.rtt_ratio = self.bond_marginal_rtt_ratio.unwrap_or(marginal.rtt_ratio);
        config.check().map_err(|e| {
            // The framing is the link's own key; the others are the bond's.
            let key = match e.key {
                "framing" => "link.framing".to_owned(),
                key => format!("link.bond_{key}"),
            };
            Error::invalid(key, e.value, e.allowed)
        })?;
        Ok(config)
    }

    /// `mtu`, or the default, within what IP allows.
    pub fn checked_mtu(&self) -> Result<u16, Error> {
        let mtu = self.mtu.unwrap_or(DEFAULT_MTU.into());
        u16::try_from(mtu)
            .ok()
            .filter(|mtu| *mtu >= 576)
            .ok_or_else(|| Error::invalid("link.mtu", mtu, "576 to 65535 bytes"))
    }

    /// The MTU and, per circuit, the keys that apply in each direction
    /// (overrides folded in), before they become channel models: the live
    /// emulator changes these and resolves them again.
    pub fn circuits(&self) -> Result<(u16, Vec<CircuitSpec>), Error> {
        if let Some(reverse) = &self.reverse {
            reverse.refuse_structure("link.return")?;
        }
        for (i, circuit) in self.channel.iter().flatten().enumerate() {
            circuit.refuse_structure(&format!("link.channel[{i}]"))?;
        }
        let count = self.channels.unwrap_or(1);
        let overrides = self.channel.as_deref().unwrap_or(&[]);
        if count == 0 || count > 64 {
            return Err(Error::invalid(
                "link.channels",
                count,
                "1 to 64 parallel circuits",
            ));
        }
        let mtu = self.checked_mtu()?;
        let mut circuits = Vec::new();
        for i in 0..count as usize {
            let mut forward = match overrides.get(i) {
                Some(over) => self.overlay(over),
                None => self.clone(),
            };
            forward.reverse = None;
            forward.channel = None;
            let reverse = match self.reverse.as_deref() {
                Some(over) => forward.overlay(over),
                None => forward.clone(),
            };
            let key = if count == 1 {
                "link".to_owned()
            } else {
                format!("link.channel[{i}]")
            };
            circuits.push(CircuitSpec {
                key,
                forward,
                reverse,
            });
        }
        Ok((mtu, circuits))
    }

    /// Keys that only make sense in `[link]` itself.
    pub fn refuse_structure(&self, key: &str) -> Result<(), Error> {
        match self.structural_key() {
            Some(name) => Err(Error::invalid(
                format!("{key}.{name}"),
                "set",
                "only allowed directly in [link]",
            )),
            None => Ok(()),
        }
    }

    /// The first key given here that shapes the link as a whole (its
    /// circuits, their bond, its MTU) rather than a circuit's model.
    pub fn structural_key(&self) -> Option<&'static str> {
        let structural = [
            ("channels", self.channels.is_some()),
            ("bond", self.bond.is_some()),
            ("mtu", self.mtu.is_some()),
            ("return", self.reverse.is_some()),
            ("channel", self.channel.is_some()),
        ];
        let mut given = structural.into_iter().chain(self.bond_settings_given());
        given.find(|(_, present)| *present).map(|(name, _)| name)
    }
}

/// The key a user writes for a field of the channel model.
fn schema_key(model_field: &str) -> &str {
    match model_field {
        "rate_bps" => "rate",
        "buffer_bytes" => "buffer",
        "shaper.rate_bps" => "shaper.rate",
        "shaper.ceiling_bps" => "shaper.ceiling",
        "shaper.burst_bytes" => "shaper.burst",
        "outages.call_drops.mean_interval" => "call_drop_interval",
        "outages.call_drops.redial_min" => "redial_min",
        "burst.mean_good" => "burst_interval",
        "burst.mean_bad" => "burst_duration",
        "burst.ber" => "burst_ber",
        "qdisc.min_bytes" => "red_min",
        "qdisc.max_bytes" => "red_max",
        "qdisc.max_probability" => "red_probability",
        "qdisc.weight" => "red_weight",
        other => other,
    }
}

fn channel_error_value(error: &scps_channel::ConfigError) -> String {
    match error {
        scps_channel::ConfigError::OutOfRange { value, .. } => value.clone(),
        other => other.to_string(),
    }
}

fn channel_error_allowed(error: &scps_channel::ConfigError) -> String {
    match error {
        scps_channel::ConfigError::OutOfRange { allowed, .. } => allowed.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> ChannelSpec {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn the_schedulers_settings_are_keys_checked_before_anything_starts() {
        let link = |keys: &str| spec(&format!("rate = \"2400bps\"\nchannels = 3\n{keys}")).resolve();
        let Striping::Scheduler(config) = link(
            "bond = \"scheduler\"\nbond_down_after = 3\nbond_channel_queue = \"2s\"\n\
             bond_marginal_loss = 0.3\nbond_marginal_loss_ratio = 2\nbond_marginal_rtt_ratio = 4",
        )
        .unwrap()
        .striping
        else {
            panic!("the scheduler");
        };
        assert_eq!(config.down_after_intervals, 3);
        assert_eq!(config.channel_queue, Duration::from_secs(2));
        assert_eq!(
            (
                config.marginal.loss,
                config.marginal.loss_ratio,
                config.marginal.rtt_ratio
            ),
            (0.3, 2.0, 4.0)
        );
        assert_eq!(config.probe_interval, Duration::from_secs(1), "the default");
        let refused = |keys: &str| link(keys).unwrap_err().to_string();
        assert_eq!(
            refused("bond = \"scheduler\"\nbond_marginal_loss = 1.5"),
            "link.bond_marginal_loss = 1.5: above 0 and below 1"
        );
        assert_eq!(
            refused("bond = \"scheduler\"\nbond_down_after = 0"),
            "link.bond_down_after = 0: 1 to 100 probe intervals"
        );
        assert_eq!(
            refused("bond_marginal_rtt_ratio = 4"),
            "link.bond_marginal_rtt_ratio = set: only with bond = \"scheduler\""
        );
        let in_a_circuit = refused("bond = \"scheduler\"\n[[channel]]\nbond_marginal_loss = 0.5");
        assert!(
            in_a_circuit.contains("bond_marginal_loss")
                && in_a_circuit.contains("only allowed directly in [link]"),
            "{in_a_circuit}"
        );
    }

    #[test]
    fn an_asymmetric_link_overrides_the_return_direction() {
        let link = spec(
            r#"
            rate = "115200bps"
            delay = "120ms"
            ber = 1e-5
            [return]
            rate = "2400bps"
            "#,
        )
        .resolve()
        .unwrap();
        assert_eq!(link.forward[0].rate_bps, 115_200);
        assert_eq!(link.reverse[0].rate_bps, 2400);
        assert_eq!(link.reverse[0].delay, Duration::from_millis(120));
        assert_eq!(link.reverse[0].ber, 1e-5);
    }

    #[test]
    fn circuits_get_their_own_overrides_and_rtt_splits_evenly() {
        let link = spec(
            r#"
            rate = "2400bps"
            rtt = "3.1s"
            channels = 3
            call_drop_interval = "188s"
            redial_min = "55s"
            redial_max = "60s"
            [[channel]]
            [[channel]]
            call_drop_interval = "324s"
            "#,
        )
        .resolve()
        .unwrap();
        assert_eq!(link.forward.len(), 3);
        assert_eq!(link.forward[0].delay, Duration::from_millis(1550));
        let interval = |c: &ChannelConfig| c.outages.call_drops.unwrap().mean_interval.as_secs();
        assert_eq!(
            link.forward.iter().map(interval).collect::<Vec<_>>(),
            [188, 324, 188]
        );
        assert_eq!(
            link.reverse.iter().map(interval).collect::<Vec<_>>(),
            [188, 324, 188]
        );
    }

    #[test]
    fn burst_errors_and_red_become_channel_models() {
        let link = spec(
            r#"
            rate = "8Mbit"
            buffer = "128KB"
            burst_ber = 1e-4
            burst_duration = "20ms"
            burst_interval = "2s"
            qdisc = "red"
            red_min = "16KB"
            "#,
        )
        .resolve()
        .unwrap();
        let forward = &link.forward[0];
        assert_eq!(
            forward.burst,
            Some(BurstErrors {
                mean_good: Duration::from_secs(2),
                mean_bad: Duration::from_millis(20),
                ber: 1e-4
            })
        );
        assert_eq!(
            forward.qdisc,
            Qdisc::Red(RedConfig {
                min_bytes: 16_000,
                max_bytes: 96_000,
                max_probability: 0.1,
                weight: 0.002
            })
        );
        assert_eq!(link.reverse[0].qdisc, forward.qdisc);
    }

    #[test]
    fn error_kinds_name_the_frame_check() {
        let mode = |kind: &str| {
            spec(&format!("rate = \"1Mbit\"\nerrors = \"{kind}\""))
                .resolve()
                .unwrap()
                .forward[0]
                .error_mode
        };
        assert_eq!(mode("drop"), ErrorMode::Drop);
        assert_eq!(mode("corrupt"), ErrorMode::Corrupt);
        assert_eq!(mode("fcs16"), ErrorMode::FrameCheck(FrameCheck::Fcs16));
        assert_eq!(mode("fcs32"), ErrorMode::FrameCheck(FrameCheck::Fcs32));
        let err = toml::from_str::<ChannelSpec>("errors = \"crc\"")
            .unwrap_err()
            .to_string();
        assert!(err.contains("`drop`, `corrupt`, `fcs16`, `fcs32`"), "{err}");
    }

    #[test]
    fn mistakes_name_the_key() {
        let cases = [
            (
                "delay = \"1s\"",
                "link.rate = missing: a line rate, such as 8Mbit",
            ),
            (
                "rate = \"1Mbit\"\ndelay = \"1s\"\nrtt = \"2s\"",
                "link.rtt = given with delay",
            ),
            (
                "rate = \"1Mbit\"\nchannels = 0",
                "link.channels = 0: 1 to 64 parallel circuits",
            ),
            (
                "rate = \"1Mbit\"\n[return]\nmtu = 9000",
                "link.return.mtu = set: only allowed directly in [link]",
            ),
            ("rate = \"1Mbit\"\nbuffer = 0", "link.buffer = 0"),
            (
                "rate = \"1Mbit\"\nbuffer = 1000",
                "link.buffer = 1000B: at least the MTU (1500 bytes)",
            ),
            (
                "rate = \"1Mbit\"\ncall_drop_interval = \"1ns\"",
                "link.call_drop_interval = 1ns: at least 10ms",
            ),
            (
                "rate = \"1Mbit\"\ncall_drop_interval = \"1s\"\nredial_min = \"9s\"\nredial_max = \"2s\"",
                "link.redial_min = 9s",
            ),
        ];
        for (text, expected) in cases {
            let err = spec(text).resolve().unwrap_err().to_string();
            assert!(err.starts_with(expected), "{text}: {err}");
        }
        let more = [
            (
                "rate = \"1Mbit\"\nburst_ber = 1e-4\nburst_duration = \"10ms\"",
                "link.burst_interval = missing: burst_ber, burst_duration and burst_interval together",
            ),
            (
                "rate = \"1Mbit\"\nburst_ber = 1e-4\nburst_duration = \"0s\"\nburst_interval = \"1s\"",
                "link.burst_duration = 0s: > 0",
            ),
            (
                "rate = \"1Mbit\"\nred_min = 1000",
                "link.red_min = set: only with qdisc = \"red\"",
            ),
            (
                "rate = \"1Mbit\"\nbuffer = \"100KB\"\nqdisc = \"red\"\nred_max = \"200KB\"",
                "link.red_max = 200000: <= buffer_bytes (100000)",
            ),
            (
                "rate = \"1Mbit\"\nqdisc = \"red\"\nred_probability = 0",
                "link.red_probability = 0: 0 < p <= 1",
            ),
        ];
        for (text, expected) in more {
            let err = spec(text).resolve().unwrap_err().to_string();
            assert!(err.starts_with(expected), "{text}: {err}");
        }
        let unknown = toml::from_str::<ChannelSpec>("rate = \"1Mbit\"\nbandwidth = 5").unwrap_err();
        assert!(
            unknown.to_string().contains("unknown field `bandwidth`"),
            "{unknown}"
        );
    }
}
