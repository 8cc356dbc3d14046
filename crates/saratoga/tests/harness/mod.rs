//! Two engines joined by a link in virtual time: a one-way delay (fixed,
//! so datagrams stay in order, unless jitter is set), seeded random loss,
//! outage windows.
//! Time jumps to the next delivery or wake-up, so hours pass instantly.
//!
//! The seed is printed; `SARATOGA_SEED=<n>` replays a run.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_node::Instant;
use scps_saratoga::engine::{Config, Engine, Event, MemoryStore};
use scps_saratoga::wire::Data;

pub fn seed(default: u64) -> u64 {
    let seed = std::env::var("SARATOGA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    println!("seed {seed} (SARATOGA_SEED={seed} replays)");
    seed
}

pub fn random_file(rng: &mut ChaCha8Rng, len: usize) -> Vec<u8> {
    (0..len).map(|_| rng.random::<u8>()).collect()
}

pub fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

/// One direction of the link.
#[derive(Debug)]
pub struct Link {
    pub delay: Duration,
    /// Up to this much more delay, drawn per datagram (reorders them).
    pub jitter: Duration,
    pub loss: f64,
    /// Datagrams sent inside a window are lost.
    pub outages: Vec<(Instant, Instant)>,
    /// Rewrites each datagram that gets through (a peer of other habits).
    pub rewrite: Option<fn(Vec<u8>) -> Vec<u8>>,
    /// A bottleneck of this rate, bit/s, with an unbounded queue before
    /// it: a sender faster than it builds a queue, in order.
    pub rate_bps: Option<u64>,
    /// When the bottleneck has sent what it holds.
    free_at: Option<Instant>,
    queue: VecDeque<(Instant, Vec<u8>)>,
    pub dropped: u64,
    /// DATA payload bytes lost.
    pub dropped_data_bytes: u64,
}

impl Link {
    pub fn new(delay: Duration) -> Link {
        Link {
            delay,
            jitter: Duration::ZERO,
            loss: 0.0,
            outages: Vec::new(),
            rewrite: None,
            rate_bps: None,
            free_at: None,
            queue: VecDeque::new(),
            dropped: 0,
            dropped_data_bytes: 0,
        }
    }

    fn send(&mut self, now: Instant, bytes: Vec<u8>, rng: &mut ChaCha8Rng) {
        let out = self.outages.iter().any(|(from, to)| *from <= now && now < *to);
        if out || (self.loss > 0.0 && rng.random::<f64>() < self.loss) {
            self.dropped += 1;
            if let Ok(data) = Data::parse(&bytes) {
                self.dropped_data_bytes += data.payload.len() as u64;
            }
            return;
        }
        let jitter = if self.jitter.is_zero() {
            Duration::ZERO
        } else {
            self.jitter.mul_f64(rng.random::<f64>())
        };
        let bytes = self.rewrite.map_or(bytes.clone(), |rewrite| rewrite(bytes));
        let leaves = match self.rate_bps {
            Some(rate) => {
                let start = self.free_at.map_or(now, |free| free.max(now));
                let done = start + Duration::from_secs_f64(bytes.len() as f64 * 8.0 / rate as f64);
                self.free_at = Some(done);
                done
            }
            None => now,
        };
        let at = leaves + self.delay + jitter;
        let index = self.queue.partition_point(|(t, _)| *t <= at);
        self.queue.insert(index, (at, bytes));
    }
}

pub const A: &str = "10.0.0.1:7542";
pub const B: &str = "10.0.0.2:7542";

pub struct Pair {
    pub a: Engine<MemoryStore>,
    pub b: Engine<MemoryStore>,
    pub a_addr: SocketAddr,
    pub b_addr: SocketAddr,
    pub now: Instant,
    /// From a to b.
    pub ab: Link,
    pub ba: Link,
    pub events_a: Vec<Event>,
    pub events_b: Vec<Event>,
    rng: ChaCha8Rng,
}

impl Pair {
    pub fn new(config: Config, delay: Duration, seed: u64) -> Pair {
        let b_config = Config {
            first_session: 1000,
            ..config.clone()
        };
        Pair {
            a: Engine::new(config, MemoryStore::new()).unwrap(),
            b: Engine::new(b_config, MemoryStore::new()).unwrap(),
            a_addr: A.parse().unwrap(),
            b_addr: B.parse().unwrap(),
            now: Instant::ZERO,
            ab: Link::new(delay),
            ba: Link::new(delay),
            events_a: Vec::new(),
            events_b: Vec::new(),
            rng: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    pub fn at(&self, d: Duration) -> Instant {
        Instant::ZERO + d
    }

    /// Replaces b by a fresh engine over the same store (what was on
    /// its disk survives; its sessions do not).
    pub fn restart_b(&mut self) {
        let store = std::mem::take(self.b.store_mut());
        let config = Config {
            first_session: 2000,
            ..self.b.config().clone()
        };
        self.b = Engine::new(config, store).unwrap();
    }

    fn flush(&mut self) {
        let now = self.now;
        if self.a.poll_timeout().is_some_and(|t| t <= now) {
            self.a.handle_timeout(now);
        }
        if self.b.poll_timeout().is_some_and(|t| t <= now) {
            self.b.handle_timeout(now);
        }
        while let Some((to, bytes)) = self.a.poll_transmit(now) {
            assert_eq!(to, self.b_addr);
            self.ab.send(now, bytes, &mut self.rng);
        }
        while let Some((to, bytes)) = self.b.poll_transmit(now) {
            assert_eq!(to, self.a_addr);
            self.ba.send(now, bytes, &mut self.rng);
        }
        while let Some(event) = self.a.poll_event() {
            self.events_a.push(event);
        }
        while let Some(event) = self.b.poll_event() {
            self.events_b.push(event);
        }
    }

    /// Runs until `done` holds (true) or virtual time passes `limit` or
    /// nothing is left to happen (false).
    pub fn run_until(&mut self, limit: Duration, mut done: impl FnMut(&Pair) -> bool) -> bool {
        let limit = Instant::ZERO + limit;
        let mut spins = 0;
        loop {
            self.flush();
            if done(self) {
                return true;
            }
            let next = [
                self.ab.queue.front().map(|(t, _)| *t),
                self.ba.queue.front().map(|(t, _)| *t),
                self.a.poll_timeout(),
                self.b.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next else { return false };
            if next > limit {
                return false;
            }
            if next <= self.now {
                spins += 1;
                assert!(spins < 100_000, "no progress at {:?}", self.now);
            } else {
                spins = 0;
            }
            self.now = self.now.max(next);
            let now = self.now;
            while self.ab.queue.front().is_some_and(|(t, _)| *t <= now) {
                let (_, bytes) = self.ab.queue.pop_front().unwrap();
                self.b.handle_datagram(now, self.a_addr, &bytes);
            }
            while self.ba.queue.front().is_some_and(|(t, _)| *t <= now) {
                let (_, bytes) = self.ba.queue.pop_front().unwrap();
                self.a.handle_datagram(now, self.b_addr, &bytes);
            }
        }
    }

    pub fn completed(events: &[Event]) -> usize {
        events
            .iter()
            .filter(|e| matches!(e, Event::Completed { .. }))
            .count()
    }

    pub fn failed(events: &[Event]) -> Vec<&Event> {
        events
            .iter()
            .filter(|e| matches!(e, Event::Failed { .. }))
            .collect()
    }
}
