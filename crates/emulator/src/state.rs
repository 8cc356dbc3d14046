//! The emulated link: the channel models of both directions, the packets
//! on their way, and the live changes. Pure: time comes in as the
//! `Duration` since the emulator's start, so tests drive it directly.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use scps_bond::{Bond, BondFigures};
use scps_channel::{Bundle, Fate, derive_seed};
use scps_config::link::{ChannelSpec, CircuitSpec, Direction as LinkDirection};
use scps_config::sweep::parse_value;

use crate::command::{Change, Directions};
use crate::config::EmulatorConfig;
use crate::pinning::pinned_circuit;
use crate::stats::{ChannelFigures, DirectionFigures, SideBond, Stats};
use crate::unreachable::{REPORT_GAP, RouterAddresses, host_unreachable};

/// A direction of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Side a to side b.
    Forward,
    /// Side b to side a.
    Return,
}

impl Direction {
    pub const BOTH: [Direction; 2] = [Direction::Forward, Direction::Return];

    pub(crate) fn index(self) -> usize {
        match self {
            Direction::Forward => 0,
            Direction::Return => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Direction::Forward => "forward",
            Direction::Return => "return",
        }
    }
}

/// Why the link could not be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LinkError {
    #[error(transparent)]
    Channel(#[from] scps_channel::ConfigError),
    #[error(transparent)]
    Bond(#[from] scps_bond::ConfigError),
}

/// A change that cannot be applied; the link is left as it was.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    #[error("no channel {channel}: this link has {count} (0 to {})", count - 1)]
    NoSuchChannel { channel: usize, count: usize },
    #[error(transparent)]
    Invalid(#[from] scps_config::Error),
    #[error("channel {0} is already in a forced outage")]
    AlreadyDown(usize),
    #[error("channel {0} is not in a forced outage")]
    NotForcedDown(usize),
    #[error("`keys` is empty: name at least one link key to set")]
    NothingToSet,
    #[error(
        "{0} shapes the link as a whole, which is fixed while the emulator runs: change it in \
         the configuration file and start the emulator again"
    )]
    Structure(&'static str),
}

/// A packet whose fate is delivery, waiting for its time.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Pending {
    at: Duration,
    /// Order of acceptance: equal times leave in the order they came.
    seq: u64,
    /// The circuit it crossed (what a bond at the far end is told).
    channel: usize,
    /// Pinned to its circuit by its port: it goes past the bonds.
    pinned: bool,
    packet: Vec<u8>,
}

/// One direction: its channels and the packets in flight.
#[derive(Debug, Clone)]
struct Path {
    bundle: Bundle,
    in_flight: BinaryHeap<Reverse<Pending>>,
    accepted: u64,
    written_packets: u64,
    written_bytes: u64,
    write_errors: u64,
    /// Packets read that do not belong on the link (see `scope.rs`).
    set_aside: u64,
    /// Destination-unreachable reports sent back to the side where the
    /// direction starts (see `unreachable.rs`).
    unreachable_reports: u64,
    /// When each circuit last had one sent, for the gap between them.
    last_report: Vec<Option<Duration>>,
}

impl Path {
    fn new(bundle: Bundle) -> Path {
        let circuits = bundle.channels().len();
        Path {
            bundle,
            in_flight: BinaryHeap::new(),
            accepted: 0,
            written_packets: 0,
            written_bytes: 0,
            write_errors: 0,
            set_aside: 0,
            unreachable_reports: 0,
            last_report: vec![None; circuits],
        }
    }

    /// A packet onto circuit `channel` (of a bond's choosing, or the one
    /// its port is pinned to) at `now`.
    fn transmit_on(&mut self, channel: usize, now: Duration, mut packet: Vec<u8>, pinned: bool) {
        let fate = self.bundle.channels_mut()[channel].transmit(now, &mut packet);
        self.accept(channel, fate, packet, pinned);
    }

    /// The router's report that `datagram`, pinned to `circuit` while its
    /// call is down, cannot reach its destination: at most one per
    /// circuit every [`REPORT_GAP`].
    fn report_unreachable(
        &mut self,
        circuit: usize,
        now: Duration,
        datagram: &[u8],
        router: RouterAddresses,
    ) -> Option<Vec<u8>> {
        if self.last_report[circuit].is_some_and(|last| now < last + REPORT_GAP) {
            return None;
        }
        let report = host_unreachable(datagram, router)?;
        self.last_report[circuit] = Some(now);
        self.unreachable_reports += 1;
        Some(report)
    }

    fn accept(&mut self, channel: usize, fate: Fate, packet: Vec<u8>, pinned: bool) {
        if let Fate::Delivered { at, .. } = fate {
            self.accepted += 1;
            self.in_flight.push(Reverse(Pending {
                at,
                seq: self.accepted,
                channel,
                pinned,
                packet,
            }));
        }
    }
}

/// Both directions of the emulated link.
#[derive(Debug, Clone)]
pub struct LinkState {
    mtu: u16,
    circuits: Vec<CircuitSpec>,
    paths: [Path; 2],
    /// With `link.bond = "scheduler"`, a bond at each side, as the
    /// simulator puts them: side a's sends forward and takes the return,
    /// side b's the other way; without, the circuits are striped
    /// round-robin.
    bonds: Option<[Bond; 2]>,
    /// `emulate.circuit_ports`: a datagram to or from the i-th rides
    /// circuit i, past the bonds and the striping.
    circuit_ports: Vec<u16>,
    /// The carrier of each circuit the bonds were last told (they start
    /// with every circuit up): a circuit is up while both its directions
    /// are, as both modems see a call end.
    carrier: Vec<bool>,
    /// When a circuit's carrier may next change (a call drop or redial,
    /// an outage window); `None` without bonds, which have nobody to tell.
    /// Forced outages and reconfigurations look at once ([`Self::apply`]).
    carrier_due: Option<Duration>,
    /// The router's addresses on each side, the sources of its reports
    /// (none until [`Self::set_routers`]: no reports).
    routers: [RouterAddresses; 2],
    /// Reports to write back, each with the direction of the datagram it
    /// is about.
    reports: VecDeque<(Direction, Vec<u8>)>,
    /// Every change of the bonds' circuits, with the index of the bond,
    /// for the tests to read (the emulator logs them).
    #[cfg(test)]
    changes: Vec<(usize, scps_bond::Event)>,
}

impl LinkState {
    /// Builds the channels of `config`: forward channels from seed
    /// `derive_seed(seed, 1)`, return ones from `derive_seed(seed, 2)`,
    /// and both directions of a circuit share the call drops of
    /// `derive_seed(seed, 3)`: the simulator's link of a run with the same
    /// seed.
    pub fn new(config: &EmulatorConfig) -> Result<LinkState, LinkError> {
        let outages = derive_seed(config.seed, 3);
        let bundle = |configs: &Vec<_>, purpose| {
            Bundle::with_outage_seed(configs.clone(), derive_seed(config.seed, purpose), outages)
        };
        let bonds = match (
            config.link.bond(LinkDirection::Forward),
            config.link.bond(LinkDirection::Reverse),
        ) {
            (Some(forward), Some(reverse)) => Some([
                Bond::new(forward, Duration::ZERO)?,
                Bond::new(reverse, Duration::ZERO)?,
            ]),
            _ => None,
        };
        Ok(LinkState {
            mtu: config.mtu,
            circuits: config.circuits.clone(),
            circuit_ports: config.emulate.circuit_ports.clone(),
            paths: [
                Path::new(bundle(&config.link.forward, 1)?),
                Path::new(bundle(&config.link.reverse, 2)?),
            ],
            carrier: vec![true; config.circuits.len()],
            // A circuit down from the start is told at the first look.
            carrier_due: bonds.as_ref().map(|_| Duration::ZERO),
            bonds,
            routers: [RouterAddresses::default(); 2],
            reports: VecDeque::new(),
            #[cfg(test)]
            changes: Vec::new(),
        })
    }

    /// A packet arrived from the side where `direction` starts, at `now`.
    pub fn offer(&mut self, direction: Direction, now: Duration, mut packet: Vec<u8>) {
        let path = &mut self.paths[direction.index()];
        if let Some(circuit) = pinned_circuit(&packet, &self.circuit_ports) {
            if !path.bundle.channels_mut()[circuit].is_up(now)
                && let Some(report) =
                    path.report_unreachable(circuit, now, &packet, self.routers[direction.index()])
            {
                self.reports.push_back((direction, report));
            }
            path.transmit_on(circuit, now, packet, true);
            return;
        }
        match &mut self.bonds {
            None => {
                let (channel, fate) = path.bundle.transmit(now, &mut packet);
                path.accept(channel, fate, packet, false);
            }
            Some(bonds) => {
                // Full: the bond counts it (`dropped_full` in the stats).
                let _ = bonds[direction.index()].send(packet);
                self.pump(now);
            }
        }
    }

    /// Puts on the circuits what the bonds have for them now: data,
    /// probes, answers.
    fn pump(&mut self, now: Duration) {
        if self.carrier_due.is_some_and(|due| due <= now) {
            self.follow_carrier(now);
        }
        let Some(bonds) = &mut self.bonds else {
            return;
        };
        for (side, (bond, path)) in bonds.iter_mut().zip(&mut self.paths).enumerate() {
            while let Some((channel, datagram)) = bond.poll_transmit(now) {
                path.transmit_on(channel, now, datagram, false);
            }
            while let Some(event) = bond.poll_event() {
                tracing::info!(
                    side = ["a", "b"][side],
                    channel = event.channel,
                    from = event.from.name(),
                    to = event.to.name(),
                    why = %event.why,
                    "bond circuit changed state"
                );
                #[cfg(test)]
                self.changes.push((side, event));
            }
        }
    }

    /// Tells both bonds of each circuit whose carrier changed by `now`
    /// (round-robin striping skips a circuit that is down; a bond learns
    /// it at once too, rather than from probes unanswered for seconds),
    /// and finds when to look next.
    fn follow_carrier(&mut self, now: Duration) {
        let Some(bonds) = &mut self.bonds else {
            return;
        };
        for (circuit, told) in self.carrier.iter_mut().enumerate() {
            let up = self
                .paths
                .iter_mut()
                .all(|path| path.bundle.channels_mut()[circuit].is_up(now));
            if *told != up {
                *told = up;
                for bond in bonds.iter_mut() {
                    bond.carrier(now, circuit, up);
                }
            }
        }
        self.carrier_due = self
            .paths
            .iter_mut()
            .flat_map(|path| path.bundle.channels_mut())
            .filter_map(|channel| channel.next_change(now))
            .min();
    }

    /// When the next packet is due, in either direction, or a bond has
    /// something to do, or a circuit's carrier may change, after `now`.
    pub fn next_due(&self, now: Duration) -> Option<Duration> {
        let bonds = self.bonds.iter().flatten().filter_map(|bond| bond.next_wake(now));
        self.paths
            .iter()
            .filter_map(|p| p.in_flight.peek().map(|Reverse(p)| p.at))
            .chain(bonds)
            .chain(self.carrier_due)
            .min()
    }

    /// The next packet of `direction` due at or before `now`. With bonds,
    /// what a circuit delivers goes to the far side's bond, which gives
    /// back the packets it carried (its probes and answers stay in the
    /// link).
    pub fn take_due(&mut self, direction: Direction, now: Duration) -> Option<Vec<u8>> {
        self.pump(now);
        loop {
            let path = &mut self.paths[direction.index()];
            let pending = match path.in_flight.peek() {
                Some(Reverse(p)) if p.at <= now => path.in_flight.pop().map(|Reverse(p)| p)?,
                _ => return None,
            };
            let Some(bonds) = self.bonds.as_mut().filter(|_| !pending.pinned) else {
                return Some(pending.packet);
            };
            let far = &mut bonds[1 - direction.index()];
            let carried = far.handle(now, pending.channel, pending.packet);
            self.pump(now);
            if carried.is_some() {
                return carried;
            }
        }
    }

    /// Gives the router's addresses on each side (a then b): datagrams
    /// pinned to a circuit whose call is down are answered from them.
    pub fn set_routers(&mut self, routers: [RouterAddresses; 2]) {
        self.routers = routers;
    }

    /// The next destination-unreachable report to write back, with the
    /// direction of the datagram it is about.
    pub fn take_report(&mut self) -> Option<(Direction, Vec<u8>)> {
        self.reports.pop_front()
    }

    /// Counts a packet read from the side where `direction` starts that
    /// does not belong on the link.
    pub fn set_aside(&mut self, direction: Direction) {
        self.paths[direction.index()].set_aside += 1;
    }

    /// Counts a packet handed to the far side, or a failure to hand it.
    pub fn written(&mut self, direction: Direction, result: Result<usize, ()>) {
        let path = &mut self.paths[direction.index()];
        match result {
            Ok(bytes) => {
                path.written_packets += 1;
                path.written_bytes += bytes as u64;
            }
            Err(()) => path.write_errors += 1,
        }
    }

    fn channels(&self, channel: Option<usize>) -> Result<std::ops::Range<usize>, ChangeError> {
        let count = self.circuits.len();
        match channel {
            None => Ok(0..count),
            Some(c) if c < count => Ok(c..c + 1),
            Some(c) => Err(ChangeError::NoSuchChannel { channel: c, count }),
        }
    }

    /// Applies `change` at `now`, entirely or (on error) not at all. A
    /// forced outage, or new call drops, change the circuits' carrier
    /// now: the bonds are told at once.
    pub fn apply(&mut self, now: Duration, change: &Change) -> Result<(), ChangeError> {
        self.change(now, change)?;
        self.follow_carrier(now);
        self.pump(now);
        Ok(())
    }

    fn change(&mut self, now: Duration, change: &Change) -> Result<(), ChangeError> {
        match change {
            Change::Set {
                channel,
                direction,
                keys,
            } => self.set(*channel, *direction, keys),
            Change::OutageStart { channel } => {
                let range = self.channels(*channel)?;
                if let Some(c) = range.clone().find(|&c| self.forced_since(c).is_some()) {
                    return Err(ChangeError::AlreadyDown(c));
                }
                for c in range {
                    for path in &mut self.paths {
                        path.bundle.channels_mut()[c].outages_mut().force_down(now);
                    }
                }
                Ok(())
            }
            Change::OutageEnd { channel } => {
                let range = self.channels(*channel)?;
                if let Some(c) = range.clone().find(|&c| self.forced_since(c).is_none()) {
                    return Err(ChangeError::NotForcedDown(c));
                }
                for c in range {
                    for path in &mut self.paths {
                        path.bundle.channels_mut()[c].outages_mut().end_forced(now);
                    }
                }
                Ok(())
            }
        }
    }

    fn forced_since(&self, channel: usize) -> Option<Duration> {
        self.paths[0].bundle.channels()[channel].outages().forced_since()
    }

    fn set(
        &mut self,
        channel: Option<usize>,
        directions: Directions,
        keys: &std::collections::BTreeMap<String, String>,
    ) -> Result<(), ChangeError> {
        if keys.is_empty() {
            return Err(ChangeError::NothingToSet);
        }
        let over = overlay_from_keys(keys)?;
        if let Some(key) = over.structural_key() {
            return Err(ChangeError::Structure(key));
        }
        let selected: &[Direction] = match directions {
            Directions::Forward => &[Direction::Forward],
            Directions::Return => &[Direction::Return],
            Directions::Both => &Direction::BOTH,
        };
        // Resolve every new configuration first, so that an error changes
        // nothing.
        let mut updates = Vec::new();
        for c in self.channels(channel)? {
            for &direction in selected {
                let circuit = &self.circuits[c];
                let (spec, key) = match direction {
                    Direction::Forward => (&circuit.forward, circuit.key.clone()),
                    Direction::Return => (&circuit.reverse, format!("{}.return", circuit.key)),
                };
                let spec = spec.overlay(&over);
                let config = spec.channel(&key, self.mtu)?;
                updates.push((c, direction, spec, config));
            }
        }
        for (c, direction, spec, config) in updates {
            let channel = &mut self.paths[direction.index()].bundle.channels_mut()[c];
            channel
                .reconfigure(config)
                .expect("validated by ChannelSpec::channel");
            match direction {
                Direction::Forward => self.circuits[c].forward = spec,
                Direction::Return => self.circuits[c].reverse = spec,
            }
        }
        Ok(())
    }

    /// Counters and settings of every channel, at `now`.
    pub fn stats(&mut self, now: Duration) -> Stats {
        let mut channels = Vec::new();
        let mut directions = Vec::new();
        for direction in Direction::BOTH {
            let path = &mut self.paths[direction.index()];
            for (index, channel) in path.bundle.channels_mut().iter_mut().enumerate() {
                let up = channel.is_up(now);
                let backlog_bytes = channel.backlog_bytes(now);
                channels.push(ChannelFigures::new(index, direction, up, backlog_bytes, channel));
            }
            directions.push(DirectionFigures {
                direction: direction.name().to_owned(),
                in_flight: path.in_flight.len(),
                packets_out: path.written_packets,
                bytes_out: path.written_bytes,
                write_errors: path.write_errors,
                set_aside: path.set_aside,
                unreachable_reports: path.unreachable_reports,
            });
        }
        // bonds[i] sends in Direction::BOTH[i], from the side it starts at.
        let bonds = self
            .bonds
            .iter()
            .flatten()
            .zip(Direction::BOTH)
            .zip(["a", "b"])
            .map(|((bond, sends), side)| SideBond {
                side: side.to_owned(),
                sends: sends.name().to_owned(),
                figures: BondFigures::of(bond),
            })
            .collect();
        Stats {
            uptime_s: now.as_secs_f64(),
            channels,
            directions,
            bonds,
        }
    }
}

/// A partial `[link]` table from `key = value` texts (dotted keys make
/// sub-tables), read as a configuration file would be.
fn overlay_from_keys(keys: &std::collections::BTreeMap<String, String>) -> Result<ChannelSpec, ChangeError> {
    let mut table = toml::Table::new();
    for (key, value) in keys {
        let mut parts: Vec<&str> = key.split('.').collect();
        let last = parts.pop().unwrap_or_default();
        let mut node = &mut table;
        for part in parts {
            let entry = node
                .entry(part)
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            node = match entry {
                toml::Value::Table(t) => t,
                _ => {
                    return Err(
                        scps_config::Error::invalid(key.as_str(), value, "a key inside a table").into(),
                    );
                }
            };
        }
        node.insert(last.to_owned(), parse_value(value));
    }
    Ok(scps_config::deserialize(table)?)
}

#[cfg(test)]
mod tests {
    use scps_bond::ChannelState;

    use super::*;

    fn state(link: &str) -> LinkState {
        let text = format!("[emulate]\nside_a = \"a\"\nside_b = \"b\"\n[link]\n{link}");
        LinkState::new(&EmulatorConfig::from_text(&text, "test").unwrap()).unwrap()
    }

    fn set(keys: &[(&str, &str)], channel: Option<usize>, direction: Directions) -> Change {
        Change::Set {
            channel,
            direction,
            keys: keys.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        }
    }

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn a_seed_draws_the_simulator_s_link_of_that_seed() {
        // Three circuits that drop calls every minute or two: which
        // packets of a steady stream cross, and when, is decided by the
        // call drops and the delays the seed draws.
        let link = "rate = \"2400bps\"\nrtt = \"3.1s\"\njitter = \"1.27s\"\nchannels = 3\n\
                    call_drop_interval = \"60s\"\nredial_min = \"55s\"\nredial_max = \"60s\"\nbuffer = \"4KB\"";
        let mut emulated = state(link);
        let text = format!("[emulate]\nside_a = \"a\"\nside_b = \"b\"\n[link]\n{link}");
        let config = EmulatorConfig::from_text(&text, "test").unwrap();
        // As scps-sim's build.rs makes a run's stressed link.
        let mut simulated = Bundle::with_outage_seed(
            config.link.forward.clone(),
            derive_seed(config.seed, 1),
            derive_seed(config.seed, 3),
        )
        .unwrap();
        let mut crossed = (Vec::new(), Vec::new());
        for second in 0..1800u64 {
            let now = Duration::from_secs(second);
            let packet = second.to_be_bytes().to_vec();
            emulated.offer(Direction::Forward, now, packet.clone());
            if let (_, Fate::Delivered { at, .. }) = simulated.transmit(now, &mut packet.clone()) {
                crossed.1.push((at, second));
            }
        }
        while let Some(packet) = emulated.take_due(Direction::Forward, Duration::MAX) {
            crossed.0.push(u64::from_be_bytes(packet.try_into().unwrap()));
        }
        crossed.1.sort();
        let simulated: Vec<u64> = crossed.1.iter().map(|(_, second)| *second).collect();
        assert!(simulated.len() < 1500, "calls dropped: {}", simulated.len());
        let first_difference = crossed.0.iter().zip(&simulated).position(|(a, b)| a != b);
        assert_eq!(
            (crossed.0.len(), first_difference),
            (simulated.len(), None),
            "the same packets, in the same order"
        );
    }

    /// Runs `link` from `from` to `to` ms in steps of 1 ms, offering a
    /// numbered 1000-byte packet forward every `every` ms until 3 s before
    /// `to` (numbered from 0): the numbers of the packets that come out
    /// forward, in order, and whether anything else came out.
    fn stream(link: &mut LinkState, from: u64, every: u64, to: u64) -> (Vec<u32>, bool) {
        let (mut out, mut foreign) = (Vec::new(), false);
        let mut number = 0u32;
        for ms in from..to {
            let now = MS(ms);
            if ms % every == 0 && ms + 3000 < to {
                let mut packet = vec![0x45u8; 1000];
                packet[4..8].copy_from_slice(&number.to_be_bytes());
                link.offer(Direction::Forward, now, packet);
                number += 1;
            }
            while let Some(packet) = link.take_due(Direction::Forward, now) {
                match packet.len() {
                    1000 => out.push(u32::from_be_bytes(packet[4..8].try_into().unwrap())),
                    _ => foreign = true,
                }
            }
            // The return side's probes' answers are the link's own.
            while let Some(packet) = link.take_due(Direction::Return, now) {
                foreign |= !packet.is_empty();
            }
        }
        (out, foreign)
    }

    #[test]
    fn the_scheduler_carries_circuits_of_different_delays_in_order() {
        // Three 64 kbit/s circuits of 0.4, 0.6 and 1.0 s one way: round-
        // robin delivers what they carry out of order; the bonds at the
        // two sides send each packet by the circuit that delivers it
        // first, and keep their probes and answers inside the link.
        let circuits = "rate = \"64kbit\"\nchannels = 3\n\
                        [[link.channel]]\ndelay = \"400ms\"\n[[link.channel]]\ndelay = \"600ms\"\n\
                        [[link.channel]]\ndelay = \"1s\"\n";
        let mut round_robin = state(circuits);
        let (out, foreign) = stream(&mut round_robin, 0, 100, 20_000);
        assert!(!foreign);
        assert!(out.windows(2).any(|w| w[0] > w[1]), "round-robin reorders");
        let mut scheduled = state(&format!(
            "bond = \"scheduler\"\nbond_probe_interval = \"200ms\"\n{circuits}"
        ));
        let (out, foreign) = stream(&mut scheduled, 0, 100, 20_000);
        assert!(!foreign, "only the offered packets leave the link");
        let mut sorted = out.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..170).collect::<Vec<u32>>(), "every packet, once");
        // Until a circuit's probes are answered the bonds do not know its
        // delay; from then on, nothing is out of order.
        let settled = out.iter().position(|&n| n >= 20).unwrap();
        assert!(
            out[settled..].windows(2).all(|w| w[0] < w[1]),
            "in order once the first two seconds are past: {out:?}"
        );
    }

    /// What side a's bond sent on a circuit, side b's received: all of
    /// it (nothing lost on the circuit up) but what is on its way. Probes
    /// leave every 200 ms and cross in 50 ms: at most a probe and an
    /// answer (to b's probe) are.
    fn assert_in_flight(sent: u64, received: u64) {
        let on_the_way = (scps_bond::wire::PROBE_LEN + scps_bond::wire::ANSWER_LEN) as u64;
        assert!(
            received <= sent && sent - received <= on_the_way,
            "sent {sent}, received {received}"
        );
    }

    /// Two 1 Mbit/s circuits of 100 ms round trip, a bond at each side
    /// probing every 200 ms.
    const TWO_CIRCUITS: &str = "rate = \"1Mbit\"\ndelay = \"50ms\"\nchannels = 2\n\
                                bond = \"scheduler\"\nbond_probe_interval = \"200ms\"\n";

    /// The changes of the bonds' circuit `channel` so far: (bond, when,
    /// to what, why).
    fn changes_of(link: &LinkState, channel: usize) -> Vec<(usize, Duration, ChannelState, &str)> {
        link.changes
            .iter()
            .filter(|(_, e)| e.channel == channel)
            .map(|(side, e)| (*side, e.at, e.to, e.why.as_str()))
            .collect()
    }

    const CARRIER_LOST: &str = "its carrier was lost";

    #[test]
    fn a_forced_outage_reaches_both_bonds_at_once_and_its_end_within_a_round_trip() {
        // Offered more than circuit 0 carries, a bond that thought circuit
        // 1 up would send data into it; told the carrier was lost, it
        // sends nothing but its probes there (which bring it back).
        let mut link = state(TWO_CIRCUITS);
        stream(&mut link, 0, 5, 3_000);
        stream(&mut link, 3_000, 5, 7_000);
        assert_eq!(changes_of(&link, 1), []);
        let sent = |link: &mut LinkState| -> Vec<u64> {
            let stats = link.stats(MS(0));
            stats
                .bonds
                .iter()
                .map(|b| b.figures.channels[1].sent_bytes)
                .collect()
        };
        let before = sent(&mut link);

        link.apply(MS(7_000), &Change::OutageStart { channel: Some(1) })
            .unwrap();
        let down = [
            (0, MS(7_000), ChannelState::Down, CARRIER_LOST),
            (1, MS(7_000), ChannelState::Down, CARRIER_LOST),
        ];
        assert_eq!(changes_of(&link, 1), down);
        let (out, _) = stream(&mut link, 7_000, 5, 11_000);
        assert!(out.len() > 90, "circuit 0 carries on: {}", out.len());
        assert_eq!(changes_of(&link, 1), down, "down throughout");
        // Four seconds of probes every 200 ms, and not one data packet.
        let probes = (4_000 / 200 + 1) * scps_bond::wire::PROBE_LEN as u64;
        for (side, (after, before)) in sent(&mut link).into_iter().zip(before).enumerate() {
            let probed = after - before;
            assert!(
                probed % scps_bond::wire::PROBE_LEN as u64 == 0 && probed <= probes,
                "bond {side} put {probed} bytes on circuit 1 while it was down"
            );
        }

        link.apply(MS(11_000), &Change::OutageEnd { channel: Some(1) })
            .unwrap();
        stream(&mut link, 11_000, 5, 12_000);
        let back = &changes_of(&link, 1)[2..];
        assert_eq!(back.len(), 2, "{back:?}");
        for &(_, at, to, _) in back {
            assert_eq!(to, ChannelState::Up, "{back:?}");
            // A probe at once, its answer a round trip (100 ms) later, seen
            // at the next 1 ms step each way.
            assert!(at - MS(11_000) <= MS(102), "{back:?}");
        }
    }

    #[test]
    fn call_drops_reach_both_bonds_at_their_instant_with_no_traffic() {
        // Circuits that drop their calls every few seconds, and nothing
        // offered: the link woken only when `next_due` says tells the
        // bonds of each drop at its instant (not when probes go
        // unanswered), and of each redial at its instant.
        let mut link = state(&format!(
            "{TWO_CIRCUITS}call_drop_interval = \"4s\"\nredial_min = \"1s\"\nredial_max = \"2s\"\n"
        ));
        // The carrier changes of each circuit, from the same models.
        let mut models = link.clone();
        let end = MS(60_000);
        let mut drops = Vec::new();
        for circuit in 0..2 {
            let mut channels: Vec<&mut scps_channel::Channel> = models
                .paths
                .iter_mut()
                .map(|path| &mut path.bundle.channels_mut()[circuit])
                .collect();
            let mut at = Duration::ZERO;
            while let Some(next) = channels.iter_mut().filter_map(|c| c.next_change(at)).min() {
                at = next;
                if at > end {
                    break;
                }
                if !channels.iter_mut().all(|c| c.is_up(at)) {
                    let back = channels
                        .iter_mut()
                        .filter_map(|c| c.next_change(at))
                        .min()
                        .unwrap();
                    drops.push((circuit, at, back));
                }
            }
        }
        assert!(drops.len() >= 10, "{drops:?}");

        let mut now = Duration::ZERO;
        while let Some(next) = link.next_due(now).filter(|&next| next <= end) {
            now = next;
            for direction in Direction::BOTH {
                assert_eq!(link.take_due(direction, now), None, "nothing offered");
            }
        }
        for circuit in 0..2 {
            // What each bond does, in order: down at a drop, and up with
            // the carrier at the redial.
            let mut expected = Vec::new();
            for &(_, down, back) in drops.iter().filter(|d| d.0 == circuit) {
                expected.push((ChannelState::Down, down, down));
                if back <= end {
                    expected.push((ChannelState::Up, back, back));
                }
            }
            let changes = changes_of(&link, circuit);
            assert_eq!(
                changes.len(),
                2 * expected.len(),
                "circuit {circuit}: {changes:?}"
            );
            for (both, &(to, earliest, latest)) in changes.chunks(2).zip(&expected) {
                let mut sides: Vec<usize> = both.iter().map(|c| c.0).collect();
                sides.sort_unstable();
                assert_eq!(sides, [0, 1], "{both:?}");
                for &(_, at, state, why) in both {
                    assert!(state == to && (earliest..=latest).contains(&at), "{both:?}");
                    assert!(to == ChannelState::Up || why == CARRIER_LOST, "{both:?}");
                }
            }
        }
    }

    #[test]
    fn the_stats_give_each_side_s_bond_and_the_circuit_it_found_down() {
        // Two 1 Mbit/s circuits offered 1.6 Mbit/s: both carry data until
        // circuit 1's call is dropped; both bonds are then told it is
        // down, and find it up again when it is back. The stream starts once both circuits
        // have answered a probe: before, the first to answer takes all of
        // it, and its next probe, queued behind, is answered too late
        // (that circuit goes down and up, which is not what this tests).
        let mut link = state(TWO_CIRCUITS);
        stream(&mut link, 0, 5, 3_000);
        let (out, _) = stream(&mut link, 3_000, 5, 7_000);
        assert_eq!(out.len(), 200, "every packet crossed");
        let before = link.stats(MS(7_000));
        let carried = |stats: &Stats, side: usize, channel: usize| {
            let c = &stats.bonds[side].figures.channels[channel];
            (c.sent_bytes, c.received_bytes)
        };
        for channel in 0..2 {
            let (sent, _) = carried(&before, 0, channel);
            assert!(sent > 50 * 1000, "circuit {channel} carried data: {sent} bytes");
            assert_in_flight(sent, carried(&before, 1, channel).1);
        }
        assert!(
            before.bonds.iter().all(|b| b.figures.state_changes == 0),
            "{before:?}"
        );

        // Circuit 0 alone, offered what it carries.
        link.apply(MS(7_000), &Change::OutageStart { channel: Some(1) })
            .unwrap();
        let (out, _) = stream(&mut link, 7_000, 10, 11_000);
        assert!(out.len() > 90, "the other circuit carries on: {}", out.len());
        let down = link.stats(MS(11_000));
        let sides: Vec<(&str, &str)> = down
            .bonds
            .iter()
            .map(|b| (b.side.as_str(), b.sends.as_str()))
            .collect();
        assert_eq!(sides, [("a", "forward"), ("b", "return")]);
        for bond in &down.bonds {
            let states: Vec<ChannelState> = bond.figures.channels.iter().map(|c| c.state).collect();
            assert_eq!(states, [ChannelState::Up, ChannelState::Down], "{bond:?}");
            let channel = &bond.figures.channels[1];
            assert_eq!((channel.changes, channel.down), (1, 1), "{bond:?}");
            assert_eq!(bond.figures.state_changes, 1, "{bond:?}");
            assert_eq!(bond.figures.dropped_full, 0, "{bond:?}");
        }
        // Only circuit 0 carried data since, and its bytes are counted.
        let (sent, _) = carried(&down, 0, 0);
        assert!(sent > carried(&before, 0, 0).0 + 90 * 1000, "{sent}");
        assert_in_flight(sent, carried(&down, 1, 0).1);
        let metrics = down.prometheus();
        for line in [
            "scps_emulator_bond_channel_state{side=\"a\",channel=\"1\",state=\"down\"} 1.0",
            "scps_emulator_bond_channel_state{side=\"a\",channel=\"1\",state=\"up\"} 0.0",
            "scps_emulator_bond_channel_state{side=\"b\",channel=\"0\",state=\"up\"} 1.0",
            "scps_emulator_bond_channel_changes_total{side=\"b\",channel=\"1\"} 1",
            &format!("scps_emulator_bond_channel_sent_bytes_total{{side=\"a\",channel=\"0\"}} {sent}"),
            "scps_emulator_bond_dropped_full_total{side=\"a\"} 0",
        ] {
            assert!(
                metrics.lines().any(|l| l == line),
                "no line {line:?} in\n{metrics}"
            );
        }

        link.apply(MS(11_000), &Change::OutageEnd { channel: Some(1) })
            .unwrap();
        stream(&mut link, 11_000, 5, 13_000);
        for bond in link.stats(MS(13_000)).bonds {
            let channel = &bond.figures.channels[1];
            assert_eq!(channel.state, ChannelState::Up, "{bond:?}");
            assert_eq!((channel.changes, channel.down), (2, 1), "{bond:?}");
        }
    }

    #[test]
    fn without_the_scheduler_the_stats_have_no_bonds() {
        let mut link = state("rate = \"1Mbit\"\nchannels = 2\nbond = \"round-robin\"");
        stream(&mut link, 0, 5, 3_500);
        let stats = link.stats(MS(3_500));
        let json = serde_json::to_value(&stats).unwrap();
        let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["uptime_s", "channels", "directions"]);
        assert!(!stats.prometheus().contains("bond"));
    }

    #[test]
    fn packets_leave_when_their_fate_says() {
        let mut link = state("rate = \"8Mbit\"\ndelay = \"10ms\"");
        link.offer(Direction::Forward, MS(0), vec![0; 1000]);
        link.offer(Direction::Return, MS(0), vec![1; 500]);
        assert_eq!(link.next_due(MS(0)), Some(Duration::from_micros(10_500)));
        assert_eq!(link.take_due(Direction::Forward, MS(10)), None);
        assert_eq!(link.take_due(Direction::Return, MS(11)), Some(vec![1; 500]));
        assert_eq!(link.take_due(Direction::Forward, MS(11)), Some(vec![0; 1000]));
        assert_eq!(link.next_due(MS(11)), None);
    }

    #[test]
    fn set_changes_the_chosen_direction_and_refuses_bad_values_whole() {
        let mut link = state("rate = \"8Mbit\"\nchannels = 2");
        link.apply(MS(0), &set(&[("delay", "5ms")], Some(1), Directions::Return))
            .unwrap();
        link.offer(Direction::Return, MS(0), vec![0; 1000]);
        link.offer(Direction::Return, MS(0), vec![0; 1000]);
        // Round robin: channel 0 (no delay) then channel 1 (5 ms).
        assert_eq!(
            link.take_due(Direction::Return, MS(2)).map(|p| p.len()),
            Some(1000)
        );
        assert_eq!(link.next_due(MS(2)), Some(MS(6)));

        let bad = set(&[("delay", "5ms"), ("ber", "2")], None, Directions::Both);
        let error = link.apply(MS(0), &bad).unwrap_err().to_string();
        assert!(error.starts_with("ber: invalid bit-error rate \"2\""), "{error}");
        // Valid alone, but not on this link: the key says which circuit.
        let small = set(&[("delay", "5ms"), ("buffer", "100")], None, Directions::Both);
        let error = link.apply(MS(0), &small).unwrap_err().to_string();
        assert!(
            error.starts_with("link.channel[0].buffer = 100B: at least the MTU"),
            "{error}"
        );
        let stats = link.stats(MS(0));
        assert!(stats.channels.iter().all(|c| c.ber == 0.0));
        assert_eq!(stats.channels[0].delay_s, 0.0);

        let unknown = link.apply(MS(0), &set(&[("bandwidth", "1")], None, Directions::Both));
        assert!(
            unknown
                .unwrap_err()
                .to_string()
                .contains("unknown field `bandwidth`")
        );
        let structure = link.apply(MS(0), &set(&[("channels", "3")], None, Directions::Both));
        assert_eq!(
            structure.unwrap_err().to_string(),
            "channels shapes the link as a whole, which is fixed while the emulator runs: change \
             it in the configuration file and start the emulator again"
        );
        let nested = link.apply(MS(0), &set(&[("shaper.rate", "1Mbit")], None, Directions::Both));
        assert!(
            nested
                .unwrap_err()
                .to_string()
                .contains("shaper: missing field `ceiling`")
        );
        // docs/configuration.md's example: a table given whole.
        let whole = [
            ("shaper.rate", "2Mbit"),
            ("shaper.ceiling", "4Mbit"),
            ("shaper.burst", "64KiB"),
        ];
        link.apply(MS(0), &set(&whole, None, Directions::Both)).unwrap();
    }

    /// A UDP datagram of 100 bytes to `port` (IPv4).
    fn datagram_to(port: u16) -> Vec<u8> {
        crate::pinning::ipv4_udp(40000, port, 100)
    }

    #[test]
    fn a_pinned_datagram_rides_its_own_circuit_past_the_bonds() {
        // Circuits of 100, 300 and 600 ms, striped round-robin or by a bond
        // at each side: a bundle's datagrams to the second circuit's port
        // all cross that circuit, arrive whole (the far bond does not take
        // them), and are lost while it is down.
        for bond in ["", "bond = \"scheduler\"\n"] {
            let text = format!(
                "[emulate]\nside_a = \"a\"\nside_b = \"b\"\ncircuit_ports = [7001, 7002, 7003]\n\
                 [link]\nrate = \"8Mbit\"\nchannels = 3\n{bond}\
                 [[link.channel]]\ndelay = \"100ms\"\n[[link.channel]]\ndelay = \"300ms\"\n\
                 [[link.channel]]\ndelay = \"600ms\"\n"
            );
            let mut link = LinkState::new(&EmulatorConfig::from_text(&text, "test").unwrap()).unwrap();
            for _ in 0..3 {
                link.offer(Direction::Forward, MS(0), datagram_to(7002));
            }
            assert_eq!(link.take_due(Direction::Forward, MS(299)), None, "{bond}");
            for _ in 0..3 {
                assert_eq!(
                    link.take_due(Direction::Forward, MS(301)),
                    Some(datagram_to(7002)),
                    "{bond}"
                );
            }
            link.apply(MS(1000), &Change::OutageStart { channel: Some(1) })
                .unwrap();
            link.offer(Direction::Forward, MS(1000), datagram_to(7002));
            link.offer(Direction::Forward, MS(1000), datagram_to(7001));
            assert_eq!(
                link.take_due(Direction::Forward, MS(1101)),
                Some(datagram_to(7001)),
                "{bond}"
            );
            assert_eq!(link.take_due(Direction::Forward, MS(3000)), None, "{bond}");
        }
    }

    #[test]
    fn a_datagram_for_a_circuit_whose_call_is_down_is_answered_host_unreachable() {
        let text = "[emulate]\nside_a = \"a\"\nside_b = \"b\"\ncircuit_ports = [7001, 7002]\n\
                    [link]\nrate = \"2400bps\"\nchannels = 2\n";
        let mut link = LinkState::new(&EmulatorConfig::from_text(text, "test").unwrap()).unwrap();
        let router = |net: u8| RouterAddresses {
            v4: Some(std::net::Ipv4Addr::new(10, net, 0, 1)),
            v6: None,
        };
        link.set_routers([router(0), router(9)]);
        let between = |from: u8, to: u8, port: u16| {
            let mut datagram = datagram_to(port);
            datagram[12..16].copy_from_slice(&[10, from, 0, 2]);
            datagram[16..20].copy_from_slice(&[10, to, 0, 2]);
            datagram
        };
        let forward = between(0, 9, 7002);
        link.offer(Direction::Forward, MS(0), forward.clone());
        assert_eq!(link.take_report(), None, "the circuit is up");
        link.apply(MS(1000), &Change::OutageStart { channel: Some(1) })
            .unwrap();
        link.offer(Direction::Forward, MS(1000), forward.clone());
        assert_eq!(
            link.take_report(),
            Some((Direction::Forward, host_unreachable(&forward, router(0)).unwrap()))
        );
        // One report per circuit every REPORT_GAP; the other circuit's
        // datagrams cross as before.
        link.offer(Direction::Forward, MS(1099), forward.clone());
        link.offer(Direction::Forward, MS(1099), between(0, 9, 7001));
        assert_eq!(link.take_report(), None);
        link.offer(Direction::Forward, MS(1100), forward.clone());
        assert!(link.take_report().is_some());
        // The far side's datagrams are answered by the router on its side.
        let reverse = between(9, 0, 7002);
        link.offer(Direction::Return, MS(1100), reverse.clone());
        assert_eq!(
            link.take_report(),
            Some((Direction::Return, host_unreachable(&reverse, router(9)).unwrap()))
        );
        let reports: Vec<u64> = link
            .stats(MS(1100))
            .directions
            .iter()
            .map(|d| d.unreachable_reports)
            .collect();
        assert_eq!(reports, [2, 1]);
        link.apply(MS(2000), &Change::OutageEnd { channel: Some(1) })
            .unwrap();
        link.offer(Direction::Forward, MS(2000), forward);
        assert_eq!(link.take_report(), None, "the call is back");
    }

    #[test]
    fn forced_outages_take_both_directions_down_and_name_missing_channels() {
        let mut link = state("rate = \"8Mbit\"\nchannels = 2");
        let start = Change::OutageStart { channel: Some(1) };
        link.apply(MS(100), &start).unwrap();
        assert_eq!(link.apply(MS(100), &start), Err(ChangeError::AlreadyDown(1)));
        let stats = link.stats(MS(150));
        let up: Vec<bool> = stats.channels.iter().map(|c| c.up).collect();
        assert_eq!(up, [true, false, true, false]);
        assert_eq!(
            link.apply(MS(0), &Change::OutageStart { channel: Some(2) })
                .unwrap_err()
                .to_string(),
            "no channel 2: this link has 2 (0 to 1)"
        );
        link.apply(MS(200), &Change::OutageEnd { channel: Some(1) })
            .unwrap();
        assert_eq!(
            link.apply(MS(200), &Change::OutageEnd { channel: None }),
            Err(ChangeError::NotForcedDown(0))
        );
        assert!(link.stats(MS(200)).channels.iter().all(|c| c.up));
    }
}
