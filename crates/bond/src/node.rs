//! The bond as a node (`scps_node::Node`): interface 0 faces the host or
//! router whose packets it carries, interfaces 1 to N are its channels, in
//! order. So the simulator (and a real driver) puts a bond at each end of
//! a link of N circuits like any other node.

use std::collections::VecDeque;
use std::time::Duration;

use scps_node::{Instant, InterfaceId, Node};
use scps_proto::PathCapacity;

use crate::bond::{Bond, BondStats, ChannelReport, Event};
use crate::config::{BondConfig, ConfigError};
use crate::report::BondFigures;

/// The interface the carried packets come in and leave by.
pub const INNER: InterfaceId = InterfaceId(0);

#[derive(Debug)]
pub struct BondNode {
    bond: Bond,
    /// Packets that crossed, to leave by the inner interface.
    arrived: VecDeque<Vec<u8>>,
    /// Every state change, in order.
    events: Vec<Event>,
    /// The latest time the node was given: its wake-ups are after it.
    now: Instant,
    /// What the stripe carries, for the sender whose packets it carries.
    capacity: PathCapacity,
}

impl BondNode {
    pub fn new(config: BondConfig) -> Result<BondNode, ConfigError> {
        Ok(BondNode {
            bond: Bond::new(config, Duration::ZERO)?,
            arrived: VecDeque::new(),
            events: Vec::new(),
            now: Instant::ZERO,
            capacity: PathCapacity::new(),
        })
    }

    /// What the bond's stripe carries now, kept current as channels come
    /// and go and their rates are measured: a sender's route rate follows
    /// it ([`scps_proto::Endpoint::follow_path_capacity`]).
    pub fn capacity(&self) -> PathCapacity {
        self.capacity.clone()
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn stats(&self) -> &BondStats {
        self.bond.stats()
    }

    pub fn channels(&self) -> Vec<ChannelReport> {
        self.bond.channels()
    }

    pub fn figures(&self) -> BondFigures {
        BondFigures::of(&self.bond)
    }

    fn advance(&mut self, now: Instant) {
        self.now = self.now.max(now);
    }

    fn collect_events(&mut self) {
        while let Some(event) = self.bond.poll_event() {
            self.events.push(event);
        }
        self.capacity.set(self.bond.sender_rate_bps());
    }
}

impl Node for BondNode {
    fn interface_count(&self) -> usize {
        1 + self.bond.channel_count()
    }

    fn handle_packet(&mut self, now: Instant, interface: InterfaceId, packet: &[u8]) {
        self.advance(now);
        match interface.0.checked_sub(1) {
            // Full: counted by the bond, as a router's queue drops.
            None => drop(self.bond.send(packet.to_vec())),
            Some(channel) => {
                if let Some(crossed) =
                    self.bond
                        .handle(now.as_duration(), usize::from(channel), packet.to_vec())
                {
                    self.arrived.push_back(crossed);
                }
            }
        }
        self.collect_events();
    }

    fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<InterfaceId> {
        self.advance(now);
        if let Some(packet) = self.arrived.pop_front() {
            *buf = packet;
            return Some(INNER);
        }
        let (channel, datagram) = self.bond.poll_transmit(now.as_duration())?;
        self.collect_events();
        *buf = datagram;
        // At most 255 channels (the configuration's bound).
        Some(InterfaceId(channel as u16 + 1))
    }

    fn poll_timeout(&mut self) -> Option<Instant> {
        if !self.arrived.is_empty() {
            return Some(self.now);
        }
        self.bond
            .next_wake(self.now.as_duration())
            .map(Instant::from_duration)
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// A channel's carrier: see [`Bond::carrier`].
    fn handle_carrier(&mut self, now: Instant, interface: InterfaceId, up: bool) {
        self.advance(now);
        let Some(channel) = interface.0.checked_sub(1).map(usize::from) else {
            return;
        };
        self.bond.carrier(now.as_duration(), channel, up);
        self.collect_events();
    }
}
