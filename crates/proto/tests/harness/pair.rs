//! Two endpoints of ours talking through an idealised link in virtual time
//! (quinn-proto's `Pair`): whole transfers, content checked byte for byte.
//! The link delays every packet alike and loses the ones the test's rule
//! picks. Richer links live in the simulator crate.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use scps_proto::time::Instant;
use scps_proto::{Config, ConnectionHandle, Endpoint, EndpointConfig, State};

pub const A: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
pub const B: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
pub const A6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1));
pub const B6: IpAddr = IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 2));

/// Decides the fate of a packet: `to_b` (its direction), its number in
/// that direction counting from 1, its bytes; true loses it.
pub type LossRule = Box<dyn FnMut(bool, u64, &[u8]) -> bool>;

pub struct Pair {
    pub a: Endpoint,
    pub b: Endpoint,
    pub now: Instant,
    pub delay: Duration,
    /// Packets in flight: arrival time, to A?, bytes.
    wire: VecDeque<(Instant, bool, Vec<u8>)>,
    lose: LossRule,
    /// Packets sent each way: A to B, B to A.
    pub sent: [u64; 2],
    /// Every packet sent (delivered or lost), with its direction (true: A
    /// to B), when `record` is on.
    pub record: bool,
    pub log: Vec<(bool, Vec<u8>)>,
    /// The server's address.
    pub server: IpAddr,
}

impl Pair {
    pub fn new(config: Config, delay: Duration) -> Pair {
        Pair::with_addresses(config, delay, A, B)
    }

    pub fn with_addresses(config: Config, delay: Duration, a: IpAddr, b: IpAddr) -> Pair {
        let make = |addr, secret| {
            let config = EndpointConfig {
                connection: config.clone(),
                secret,
                ..EndpointConfig::default()
            };
            Endpoint::new(config, [addr]).unwrap()
        };
        Pair {
            a: make(a, 1),
            b: make(b, 2),
            server: b,
            now: Instant::ZERO,
            delay,
            wire: VecDeque::new(),
            lose: Box::new(|_, _, _| false),
            sent: [0; 2],
            record: false,
            log: Vec::new(),
        }
    }

    /// Loses what `rule` picks.
    pub fn lose(&mut self, rule: impl FnMut(bool, u64, &[u8]) -> bool + 'static) {
        self.lose = Box::new(rule);
    }

    /// Loses every `n`-th packet from A to B.
    pub fn lose_every_nth_to_b(&mut self, n: u64) {
        self.lose(move |to_b, index, _| to_b && index.is_multiple_of(n));
    }

    /// Loses packets from A to B to independent bit errors at `ber`: a
    /// packet of L bytes with probability 1 - (1 - ber)^(8L), drawn from
    /// a SplitMix64 sequence started at `seed`.
    pub fn lose_to_bit_errors_to_b(&mut self, ber: f64, seed: u64) {
        let mut state = seed;
        self.lose(move |to_b, _, packet| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            let uniform = (z ^ (z >> 31)) as f64 / u64::MAX as f64;
            to_b && uniform < 1.0 - (1.0 - ber).powf(8.0 * packet.len() as f64)
        });
    }

    fn transmit(&mut self, to_b: bool, packet: &[u8]) {
        let count = &mut self.sent[usize::from(!to_b)];
        *count += 1;
        let index = *count;
        if self.record {
            self.log.push((to_b, packet.to_vec()));
        }
        if !(self.lose)(to_b, index, packet) {
            self.wire
                .push_back((self.now + self.delay, !to_b, packet.to_vec()));
        }
    }

    /// Moves packets and time until `done` holds or nothing is left to do.
    pub fn run(&mut self, mut step: impl FnMut(&mut Pair) -> bool) {
        let mut buf = Vec::new();
        for _ in 0..10_000_000 {
            if step(self) {
                return;
            }
            while self.a.poll_transmit(self.now, &mut buf) {
                self.transmit(true, &buf);
            }
            while self.b.poll_transmit(self.now, &mut buf) {
                self.transmit(false, &buf);
            }
            let next_packet = self.wire.front().map(|p| p.0);
            let next_timer = [self.a.poll_timeout(), self.b.poll_timeout()]
                .into_iter()
                .flatten()
                .min();
            let Some(next) = [next_packet, next_timer].into_iter().flatten().min() else {
                return;
            };
            self.now = self.now.max(next);
            while self.wire.front().is_some_and(|p| p.0 <= self.now) {
                let (_, to_a, packet) = self.wire.pop_front().unwrap();
                let target = if to_a { &mut self.a } else { &mut self.b };
                target.handle_packet(self.now, &packet);
            }
            self.a.handle_timeout(self.now);
            self.b.handle_timeout(self.now);
        }
        panic!("no end after 10 million steps");
    }
}

/// `n` bytes that differ with `salt`.
pub fn data(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| ((i as u32).wrapping_mul(2_654_435_761) >> 13) as u8 ^ salt)
        .collect()
}

/// What [`exchange`] moved.
pub struct Exchanged {
    pub at_a: Vec<u8>,
    pub at_b: Vec<u8>,
    /// The client's (A's) and the server's (B's) connections.
    pub ca: ConnectionHandle,
    pub cb: ConnectionHandle,
}

/// A connects to B, then each sends its payload and closes; returns what
/// each side received once A has seen B's FIN.
pub fn exchange(pair: &mut Pair, to_b: &[u8], to_a: &[u8]) -> Exchanged {
    let server = SocketAddr::new(pair.server, 80);
    pair.b.listen(server, None).unwrap();
    let ca = pair.a.connect(pair.now, server, None, None).unwrap();
    exchange_on(pair, ca, |b| b.accept(server), to_b, to_a)
}

/// As [`exchange`], on A's connection `ca` (opened), with B's taken by
/// `accept` once established.
pub fn exchange_on(
    pair: &mut Pair,
    ca: ConnectionHandle,
    mut accept: impl FnMut(&mut Endpoint) -> Option<ConnectionHandle>,
    to_b: &[u8],
    to_a: &[u8],
) -> Exchanged {
    let mut cb = None;
    let (mut at_a, mut at_b) = (Vec::new(), Vec::new());
    let (mut sent_a, mut sent_b) = (0, 0);
    let mut buf = vec![0u8; 65536];
    pair.run(|p| {
        if cb.is_none() {
            cb = accept(&mut p.b);
        }
        let Some(cb) = cb else { return false };
        sent_a += p.a.send(ca, &to_b[sent_a..]).unwrap_or(0);
        sent_b += p.b.send(cb, &to_a[sent_b..]).unwrap_or(0);
        if sent_a == to_b.len() && p.a.state(ca) == Some(State::Established) {
            p.a.shutdown(ca).unwrap();
        }
        if sent_b == to_a.len() && p.b.state(cb) == Some(State::Established) {
            p.b.shutdown(cb).unwrap();
        }
        while let Ok(n @ 1..) = p.a.recv(ca, &mut buf) {
            at_a.extend_from_slice(&buf[..n]);
        }
        while let Ok(n @ 1..) = p.b.recv(cb, &mut buf) {
            at_b.extend_from_slice(&buf[..n]);
        }
        at_a.len() == to_a.len()
            && at_b.len() == to_b.len()
            && p.a.connection(ca).is_some_and(|c| c.peer_closed())
    });
    Exchanged {
        at_a,
        at_b,
        ca,
        cb: cb.expect("accepted"),
    }
}
