//! Two ends of a secure link in virtual time, over a wire that delays,
//! loses and reorders as the test says; and a third party on it.

use std::time::Duration;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use scps_node::Instant;
use scps_secure::{AuthFailure, Opened, PrivateKey, SecureConfig, SecureError, SecureLink, Unsealed};

const WALL: Duration = Duration::from_secs(1_800_000_000);

struct End {
    link: SecureLink,
    key: PrivateKey,
    /// Packets opened, in arrival order.
    received: Vec<Vec<u8>>,
}

/// A and B over a wire with `delay` one way, losing each datagram with
/// probability `loss` and adding up to `jitter` (which reorders).
struct Wire {
    a: End,
    b: End,
    now: Instant,
    delay: Duration,
    jitter: Duration,
    loss: f64,
    rng: ChaCha8Rng,
    /// In flight: arrival, to B?, datagram.
    flight: Vec<(Instant, bool, Vec<u8>)>,
    /// Every datagram sent, to B?, for a replaying third party.
    captured: Vec<(bool, Vec<u8>)>,
}

fn config(ours: &PrivateKey, theirs: &PrivateKey) -> SecureConfig {
    SecureConfig::new(ours.clone(), theirs.public_key())
}

impl Wire {
    fn new(delay: Duration, seed: u64) -> Wire {
        let (ka, kb) = (PrivateKey::generate().unwrap(), PrivateKey::generate().unwrap());
        Wire::with(config(&ka, &kb), config(&kb, &ka), delay, seed)
    }

    fn with(a: SecureConfig, b: SecureConfig, delay: Duration, seed: u64) -> Wire {
        println!("seed {seed}");
        let now = Instant::from_duration(Duration::from_secs(10));
        let end = |config: SecureConfig| End {
            key: config.private_key.clone(),
            link: SecureLink::new(config, now, WALL).unwrap(),
            received: Vec::new(),
        };
        Wire {
            a: end(a),
            b: end(b),
            now,
            delay,
            jitter: Duration::ZERO,
            loss: 0.0,
            rng: ChaCha8Rng::seed_from_u64(seed),
            flight: Vec::new(),
            captured: Vec::new(),
        }
    }

    fn put(&mut self, to_b: bool, datagram: Vec<u8>) {
        self.captured.push((to_b, datagram.clone()));
        if self.rng.random::<f64>() < self.loss {
            return;
        }
        let jitter = self.jitter.mul_f64(self.rng.random::<f64>());
        self.flight.push((self.now + self.delay + jitter, to_b, datagram));
    }

    /// Sends `packet` from A (or B), sealed, if a session allows.
    fn send(&mut self, from_a: bool, packet: &[u8]) -> bool {
        let now = self.now;
        let end = if from_a { &mut self.a } else { &mut self.b };
        let mut datagram = Vec::new();
        if !end.link.seal(now, packet, &mut datagram, Unsealed::Drop) {
            return false;
        }
        self.put(from_a, datagram);
        true
    }

    /// Hands `datagram` to A (or B), as if from the wire.
    fn deliver(&mut self, to_b: bool, datagram: &[u8]) -> Result<(), AuthFailure> {
        let now = self.now;
        let end = if to_b { &mut self.b } else { &mut self.a };
        let reply = match end.link.open(now, datagram) {
            Opened::Packet(packet) => {
                end.received.push(packet.to_vec());
                None
            }
            Opened::Reply(answer) => Some(answer.to_vec()),
            Opened::Control => None,
            Opened::Dropped(failure) => return Err(failure),
        };
        if let Some(answer) = reply {
            self.put(!to_b, answer);
        }
        Ok(())
    }

    /// Runs both ends' timers and the wire up to `until`.
    fn run_until(&mut self, until: Instant) {
        loop {
            for from_a in [true, false] {
                let end = if from_a { &mut self.a } else { &mut self.b };
                end.link.handle_timeout(self.now);
                let mut out = Vec::new();
                while let Some(datagram) = end.link.poll_transmit() {
                    out.push(datagram);
                }
                for datagram in out {
                    self.put(from_a, datagram);
                }
            }
            let next = [
                self.flight.iter().map(|f| f.0).min(),
                self.a.link.poll_timeout(self.now),
                self.b.link.poll_timeout(self.now),
            ]
            .into_iter()
            .flatten()
            .min();
            match next {
                Some(at) if at <= until => self.now = self.now.max(at),
                _ => {
                    self.now = until;
                    return;
                }
            }
            let mut arrived: Vec<_> = self.flight.iter().filter(|f| f.0 <= self.now).cloned().collect();
            self.flight.retain(|f| f.0 > self.now);
            arrived.sort_by_key(|f| f.0);
            for (_, to_b, datagram) in arrived {
                // What fails here is counted by the link; tests read it.
                let _ = self.deliver(to_b, &datagram);
            }
        }
    }

    fn run_for(&mut self, time: Duration) {
        self.run_until(self.now + time);
    }
}

fn packet(n: u32) -> Vec<u8> {
    let mut p = vec![0x45; 40 + (n % 1400) as usize];
    p[4..8].copy_from_slice(&n.to_be_bytes());
    p
}

#[test]
fn both_ends_come_up_within_a_round_trip_and_carry_packets_both_ways() {
    let mut wire = Wire::new(Duration::from_millis(300), 1);
    assert!(!wire.send(true, b"too early"), "no session before the handshake");
    assert_eq!(wire.a.link.stats().no_session, 1);
    wire.run_for(Duration::from_millis(601));
    assert!(wire.a.link.is_up(wire.now) && wire.b.link.is_up(wire.now));
    let first = wire.a.link.stats().first_session_after.unwrap();
    assert_eq!(first, Duration::from_millis(600), "one round trip");
    for n in 0..100 {
        assert!(wire.send(true, &packet(n)));
        assert!(wire.send(false, &packet(1000 + n)));
    }
    wire.run_for(Duration::from_secs(1));
    assert_eq!(wire.b.received, (0..100).map(packet).collect::<Vec<_>>());
    assert_eq!(wire.a.received, (1000..1100).map(packet).collect::<Vec<_>>());
    assert_eq!(wire.a.link.stats().auth_failures_total(), 0);
    assert_eq!(wire.b.link.stats().auth_failures_total(), 0);
}

#[test]
fn a_third_party_without_the_key_gets_nothing_through() {
    let mut wire = Wire::new(Duration::from_millis(10), 2);
    wire.run_for(Duration::from_millis(100));
    // Its own gateway, with its own key, configured with B's public key.
    let stranger_key = PrivateKey::generate().unwrap();
    let mut stranger = SecureLink::new(config(&stranger_key, &wire.b.key), wire.now, WALL).unwrap();
    stranger.handle_timeout(wire.now);
    let initiation = stranger.poll_transmit().unwrap();
    assert_eq!(wire.deliver(true, &initiation), Err(AuthFailure::BadHandshake));
    // Forged data in a session's name, and datagrams of no shape.
    let mut forged = Vec::new();
    assert!(
        wire.a
            .link
            .seal(wire.now, &packet(1), &mut forged, Unsealed::Drop)
    );
    forged[20] ^= 1;
    assert_eq!(wire.deliver(true, &forged), Err(AuthFailure::BadTag));
    forged[4] ^= 0xff;
    assert_eq!(wire.deliver(true, &forged), Err(AuthFailure::UnknownSession));
    assert!(matches!(
        wire.deliver(true, b"GET / HTTP/1.0\r\n\r\n"),
        Err(AuthFailure::Malformed(_))
    ));
    assert!(wire.b.received.is_empty());
    let failures = &wire.b.link.stats().auth_failures;
    assert_eq!(
        (
            failures["bad_handshake"],
            failures["bad_tag"],
            failures["unknown_session"],
            failures["malformed"]
        ),
        (1, 1, 1, 1)
    );
}

#[test]
fn replays_from_a_capture_are_refused() {
    let mut wire = Wire::new(Duration::from_millis(10), 3);
    wire.run_for(Duration::from_millis(100));
    for n in 0..10 {
        wire.send(true, &packet(n));
    }
    wire.run_for(Duration::from_millis(100));
    assert_eq!(wire.b.received.len(), 10);
    let captured = wire.captured.clone();
    for (to_b, datagram) in captured {
        let refused = wire.deliver(to_b, &datagram);
        assert!(
            matches!(
                refused,
                Err(AuthFailure::Replay | AuthFailure::StaleInitiation | AuthFailure::UnknownSession)
            ),
            "{refused:?}"
        );
    }
    assert_eq!(wire.b.received.len(), 10, "nothing taken twice");
    assert!(wire.b.link.stats().auth_failures["stale_initiation"] >= 1);
    assert!(wire.b.link.stats().auth_failures["replay"] >= 10);
}

/// Ten minutes of packets both ways over a lossy, reordering wire with a
/// rekey every ten seconds: every packet that was not lost arrives once,
/// and none waits for a session after the first.
#[test]
fn rekeys_on_time_lose_nothing_in_flight() {
    let (ka, kb) = (PrivateKey::generate().unwrap(), PrivateKey::generate().unwrap());
    let short = |ours, theirs| SecureConfig {
        rekey_after: Duration::from_secs(10),
        ..config(ours, theirs)
    };
    let mut wire = Wire::with(short(&ka, &kb), short(&kb, &ka), Duration::from_millis(300), 4);
    wire.loss = 0.05;
    wire.jitter = Duration::from_millis(200);
    wire.run_for(Duration::from_secs(5));
    let mut sent = 0;
    for n in 0..6000 {
        assert!(wire.send(n % 2 == 0, &packet(n)), "a session at {:?}", wire.now);
        sent += 1;
        wire.run_for(Duration::from_millis(100));
    }
    wire.run_for(Duration::from_secs(2));
    let received = wire.a.received.len() + wire.b.received.len();
    let lost = wire.a.link.stats().packets_sealed + wire.b.link.stats().packets_sealed
        - wire.a.link.stats().packets_opened
        - wire.b.link.stats().packets_opened;
    println!(
        "sent {sent}, received {received}, handshakes {:?} {:?}",
        wire.a.link.stats(),
        wire.b.link.stats()
    );
    // Keepalives are sealed and opened too; the loss is the wire's own.
    assert!(received as f64 > 0.93 * sent as f64, "{received} of {sent}");
    assert!(lost as f64 <= 0.07 * sent as f64);
    let mut all: Vec<_> = wire.a.received.iter().chain(&wire.b.received).cloned().collect();
    let count = all.len();
    all.sort();
    all.dedup();
    assert_eq!(all.len(), count, "no packet twice");
    let completed = wire.a.link.stats().handshakes_completed + wire.b.link.stats().handshakes_completed;
    assert!(
        (50..=130).contains(&completed),
        "{completed} handshakes in ten minutes"
    );
    for end in [&wire.a, &wire.b] {
        let failures = &end.link.stats().auth_failures;
        assert_eq!(failures.get("bad_tag"), None, "{failures:?}");
        assert_eq!(failures.get("unknown_session"), None, "{failures:?}");
    }
}

#[test]
fn a_rekey_follows_the_volume_sealed() {
    let (ka, kb) = (PrivateKey::generate().unwrap(), PrivateKey::generate().unwrap());
    let small = |ours, theirs| SecureConfig {
        rekey_after_bytes: 100_000,
        ..config(ours, theirs)
    };
    let mut wire = Wire::with(small(&ka, &kb), small(&kb, &ka), Duration::from_millis(5), 5);
    wire.run_for(Duration::from_millis(50));
    let before = wire.a.link.stats().handshakes_completed;
    for n in 0..1000 {
        assert!(wire.send(true, &vec![n as u8; 1000]));
        wire.run_for(Duration::from_millis(1));
    }
    wire.run_for(Duration::from_millis(50));
    assert_eq!(wire.b.received.len(), 1000);
    let rekeys = wire.a.link.stats().handshakes_completed - before;
    assert!(
        (9..=11).contains(&rekeys),
        "{rekeys} rekeys for 1 MB at 100 kB each"
    );
}

#[test]
fn a_peer_that_restarts_is_back_within_a_round_trip() {
    let mut wire = Wire::new(Duration::from_millis(100), 6);
    wire.run_for(Duration::from_secs(1));
    // B restarts: same keys, nothing else remembered.
    let restarted = config(&wire.b.key, &wire.a.key);
    wire.b.link = SecureLink::new(restarted, wire.now, WALL + wire.now.as_duration()).unwrap();
    // Its initiation reaches A, A's answer comes back, its keepalive tells
    // A to send with the new session: a round trip and a half.
    wire.run_for(Duration::from_millis(301));
    wire.b.received.clear();
    for n in 0..10 {
        assert!(wire.send(true, &packet(n)));
        assert!(wire.send(false, &packet(100 + n)));
    }
    wire.run_for(Duration::from_millis(150));
    assert_eq!(wire.b.received, (0..10).map(packet).collect::<Vec<_>>());
    assert_eq!(wire.a.received.len(), 10);
}

#[test]
fn an_initiation_answered_after_the_next_was_sent_still_completes() {
    // A round trip of 5 s: initiations go at 0, 1, 3 s before the first
    // answer arrives; it completes the handshake all the same.
    let mut wire = Wire::new(Duration::from_millis(2500), 7);
    wire.run_for(Duration::from_millis(5001));
    assert!(wire.a.link.is_up(wire.now));
    assert_eq!(
        wire.a.link.stats().first_session_after,
        Some(Duration::from_secs(5))
    );
}

#[test]
fn a_peer_key_equal_to_ours_is_refused() {
    let key = PrivateKey::generate().unwrap();
    let err = SecureLink::new(config(&key, &key), Instant::ZERO, WALL).unwrap_err();
    assert_eq!(err, SecureError::PeerIsUs);
}

#[test]
fn initiations_are_read_at_a_bounded_rate() {
    let mut wire = Wire::new(Duration::from_millis(10), 8);
    let stranger_key = PrivateKey::generate().unwrap();
    let mut refused = 0;
    for _ in 0..200 {
        let mut stranger = SecureLink::new(config(&stranger_key, &wire.b.key), wire.now, WALL).unwrap();
        stranger.handle_timeout(wire.now);
        let initiation = stranger.poll_transmit().unwrap();
        if wire.deliver(true, &initiation) == Err(AuthFailure::HandshakeRate) {
            refused += 1;
        }
    }
    assert_eq!(refused, 200 - scps_secure::INITIATIONS_PER_SECOND as usize);
}

#[test]
fn packets_held_before_the_first_session_leave_with_it() {
    let mut wire = Wire::new(Duration::from_millis(300), 9);
    let now = wire.now;
    for n in 0..3 {
        let mut datagram = Vec::new();
        assert!(!wire.a.link.seal(now, &packet(n), &mut datagram, Unsealed::Hold));
        assert!(datagram.is_empty());
    }
    wire.run_for(Duration::from_millis(900));
    assert_eq!(wire.b.received, (0..3).map(packet).collect::<Vec<_>>());
    assert_eq!(wire.a.link.stats().no_session, 0);
    let mut fresh = SecureLink::new(config(&wire.b.key, &wire.a.key), wire.now, WALL).unwrap();
    for _ in 0..=scps_secure::HELD_PACKETS {
        assert!(!fresh.seal(wire.now, b"x", &mut Vec::new(), Unsealed::Hold));
    }
    assert_eq!(fresh.stats().no_session, 1, "the holding is bounded");
}
