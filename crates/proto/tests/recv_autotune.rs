//! Receive-buffer autotuning (`recv_buffer_auto`) over a long fat path:
//! 8 Mbit/s each way, 600 ms round trip, in virtual time. A receiver that
//! starts at the default 256 KiB holds a transfer to 256 KiB per round
//! trip (about 3.5 Mbit/s) unless its window grows; with autotuning it
//! grows as the application reads, within the configured maximum, and
//! not at all for an application that does not read.

mod harness;

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use harness::pair::data;
use scps_proto::cc::CongestionAlgorithm;
use scps_proto::time::Instant;
use scps_proto::{Config, ConnectionHandle, Endpoint, EndpointConfig, State};

const SENDER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1));
const RECEIVER: IpAddr = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2));
const RATE_BPS: u64 = 8_000_000;
const ONE_WAY: Duration = Duration::from_millis(300);
const DEFAULT_BUFFER: u64 = 256 << 10;

/// One direction of the link: packets leave back to back at the link's
/// rate (a queue without limit) and arrive a one-way delay later.
#[derive(Default)]
struct Line {
    free_at: Instant,
    /// Arrival time and packet, in order.
    in_flight: VecDeque<(Instant, Vec<u8>)>,
}

impl Line {
    fn carry(&mut self, now: Instant, packet: &[u8]) {
        let bits = packet.len() as u64 * 8;
        let serialization = Duration::from_nanos(bits * 1_000_000_000 / RATE_BPS);
        self.free_at = self.free_at.max(now) + serialization;
        self.in_flight
            .push_back((self.free_at + ONE_WAY, packet.to_vec()));
    }

    fn next(&self) -> Option<Instant> {
        self.in_flight.front().map(|p| p.0)
    }
}

/// A transfer's outcome, as the two ends saw it.
struct Transfer {
    received: Vec<u8>,
    /// From the connect to the last byte read.
    duration: Duration,
    /// The largest window the receiver advertised, as the sender took it.
    largest_window: u64,
    /// The largest receive buffer the receiver had.
    largest_buffer: u64,
    /// The receive buffer while the application was not reading, at its
    /// largest.
    largest_buffer_unread: u64,
}

impl Transfer {
    fn goodput_share(&self) -> f64 {
        self.received.len() as f64 * 8.0 / self.duration.as_secs_f64() / RATE_BPS as f64
    }
}

/// The README's sender: no congestion control, paced at the link's rate,
/// so that only the receiver's window holds it back.
fn sender_config() -> Config {
    Config {
        congestion: CongestionAlgorithm::Rate,
        scps: true,
        rate_bps: Some(RATE_BPS),
        send_buffer: 8 << 20,
        ..Config::default()
    }
}

/// The receiver's defaults, SCPS offered, with autotuning on or off.
fn receiver_config(auto: bool) -> Config {
    Config {
        scps: true,
        recv_buffer_auto: auto,
        ..Config::default()
    }
}

/// Sends `payload` from a sender to a receiver over the link; the
/// receiver's application reads whenever `reads(now)` says so. Loses the
/// packets from the sender whose number `lose` picks.
fn transfer(
    sender: Config,
    receiver: Config,
    payload: &[u8],
    mut reads: impl FnMut(Duration) -> bool,
    mut lose: impl FnMut(u64) -> bool,
) -> Transfer {
    let endpoint = |config: Config, addr, secret| {
        let config = EndpointConfig {
            connection: config,
            secret,
            ..EndpointConfig::default()
        };
        Endpoint::new(config, [addr]).unwrap()
    };
    let mut a = endpoint(sender, SENDER, 1);
    let mut b = endpoint(receiver, RECEIVER, 2);
    let server = SocketAddr::new(RECEIVER, 5001);
    b.listen(server, None).unwrap();
    let start = Instant::from_duration(Duration::from_secs(1));
    let mut now = start;
    let client = a.connect(now, server, None, None).unwrap();
    let mut accepted: Option<ConnectionHandle> = None;
    let (mut to_b, mut to_a) = (Line::default(), Line::default());
    let (mut sent, mut packets_to_b) = (0, 0u64);
    let mut received = Vec::new();
    let mut out = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut outcome = Transfer {
        received: Vec::new(),
        duration: Duration::ZERO,
        largest_window: 0,
        largest_buffer: 0,
        largest_buffer_unread: 0,
    };
    for _ in 0..50_000_000 {
        accepted = accepted.or_else(|| b.accept(server));
        if sent < payload.len() {
            sent += a.send(client, &payload[sent..]).unwrap_or(0);
            if sent == payload.len() {
                a.shutdown(client).unwrap();
            }
        }
        if let Some(conn) = accepted {
            let reading = reads(now.saturating_since(start));
            if reading {
                while let Ok(n @ 1..) = b.recv(conn, &mut buf) {
                    received.extend_from_slice(&buf[..n]);
                }
            }
            let stats = b.stats_of(conn).unwrap();
            outcome.largest_buffer = outcome.largest_buffer.max(stats.receive_buffer);
            if !reading {
                outcome.largest_buffer_unread = outcome.largest_buffer_unread.max(stats.receive_buffer);
            }
            if received.len() == payload.len() && b.connection(conn).is_some_and(|c| c.peer_closed()) {
                outcome.duration = now.saturating_since(start);
                outcome.received = received;
                return outcome;
            }
        }
        if let Some(stats) = a.stats_of(client) {
            assert_ne!(stats.state, State::Closed, "the sender's connection failed");
            outcome.largest_window = outcome.largest_window.max(stats.send_window);
        }
        while a.poll_transmit(now, &mut out) {
            packets_to_b += 1;
            if !lose(packets_to_b) {
                to_b.carry(now, &out);
            }
        }
        while b.poll_transmit(now, &mut out) {
            to_a.carry(now, &out);
        }
        let next = [to_b.next(), to_a.next(), a.poll_timeout(), b.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
            .expect("something left to do");
        now = now.max(next);
        while to_b.next().is_some_and(|t| t <= now) {
            let (_, packet) = to_b.in_flight.pop_front().unwrap();
            b.handle_packet(now, &packet);
        }
        while to_a.next().is_some_and(|t| t <= now) {
            let (_, packet) = to_a.in_flight.pop_front().unwrap();
            a.handle_packet(now, &packet);
        }
        a.handle_timeout(now);
        b.handle_timeout(now);
    }
    panic!("the transfer did not end");
}

fn always(_: Duration) -> bool {
    true
}

fn no_loss(_: u64) -> bool {
    false
}

#[test]
fn an_autotuned_receiver_fills_a_long_fat_path() {
    let payload = data(10_000_000, 3);
    for timestamps in [true, false] {
        let receiver = Config {
            timestamps,
            ..receiver_config(true)
        };
        let sender = Config {
            timestamps,
            ..sender_config()
        };
        let run = transfer(sender, receiver, &payload, always, no_loss);
        assert!(
            run.received == payload,
            "timestamps {timestamps}: the content differs"
        );
        let share = run.goodput_share();
        println!(
            "timestamps {timestamps}: {:.2} Mbit/s, {share:.3} of the link, window up to {} bytes",
            share * RATE_BPS as f64 / 1e6,
            run.largest_window
        );
        assert!(
            share >= 0.8,
            "timestamps {timestamps}: {share:.3} of the link rate in {:?}",
            run.duration
        );
        assert!(
            run.largest_window > DEFAULT_BUFFER,
            "timestamps {timestamps}: the window stayed at {} bytes",
            run.largest_window
        );
        // About twice the path's 600 kB, with room for a sender's growth.
        assert!(
            run.largest_buffer <= 4 << 20,
            "timestamps {timestamps}: the buffer grew to {} bytes for a 600 kB path",
            run.largest_buffer
        );
    }
}

#[test]
fn without_autotuning_the_window_stays_at_the_configured_buffer() {
    let payload = data(3_000_000, 4);
    let run = transfer(sender_config(), receiver_config(false), &payload, always, no_loss);
    assert!(run.received == payload, "the content differs");
    assert_eq!(run.largest_buffer, DEFAULT_BUFFER);
    assert!(
        run.largest_window <= DEFAULT_BUFFER && run.largest_window > DEFAULT_BUFFER - 4096,
        "the window went to {} bytes",
        run.largest_window
    );
    // 256 KiB per 600 ms round trip: under half the link.
    let share = run.goodput_share();
    assert!(share < 0.5, "{share:.3} of the link rate");
}

#[test]
fn the_window_never_exceeds_the_maximum() {
    let payload = data(6_000_000, 5);
    let max = 400 << 10;
    let receiver = Config {
        recv_buffer_max: max,
        ..receiver_config(true)
    };
    let run = transfer(sender_config(), receiver, &payload, always, no_loss);
    assert!(run.received == payload, "the content differs");
    assert_eq!(
        run.largest_buffer, max as u64,
        "grew to the maximum and no further"
    );
    assert!(
        run.largest_window <= max as u64 && run.largest_window > DEFAULT_BUFFER,
        "the window went to {} bytes",
        run.largest_window
    );
}

#[test]
fn an_application_that_does_not_read_does_not_grow_the_buffer() {
    let payload = data(2_000_000, 6);
    // Nothing is read for 20 s: the window fills and closes.
    let run = transfer(
        sender_config(),
        receiver_config(true),
        &payload,
        |t| t >= Duration::from_secs(20),
        no_loss,
    );
    assert!(run.received == payload, "the content differs");
    assert_eq!(run.largest_buffer_unread, DEFAULT_BUFFER);
    assert!(run.duration >= Duration::from_secs(20));
}

#[test]
fn a_grown_buffer_repairs_losses_and_keeps_the_content() {
    let payload = data(6_000_000, 7);
    // Every 300th packet from the sender is lost: holes beyond the old
    // limit are held and filled once the buffer has grown.
    let run = transfer(sender_config(), receiver_config(true), &payload, always, |n| {
        n % 300 == 0
    });
    assert!(run.received == payload, "the content differs");
    assert!(run.largest_buffer > DEFAULT_BUFFER);
    assert!(run.largest_buffer <= (16 << 20) as u64);
}

#[test]
fn a_peer_that_does_not_scale_windows_sees_no_growth() {
    let payload = data(1_000_000, 8);
    let sender = Config {
        window_scaling: false,
        recv_buffer: 65535,
        ..sender_config()
    };
    let run = transfer(sender, receiver_config(true), &payload, always, no_loss);
    assert!(run.received == payload, "the content differs");
    assert!(
        run.largest_window <= 65535,
        "the window went to {}",
        run.largest_window
    );
    assert_eq!(run.largest_buffer, DEFAULT_BUFFER, "nothing the window could say");
}

/// Loses each packet from the sender with probability `p`, drawn from a
/// SplitMix64 sequence started at `seed`.
fn random_loss(p: f64, seed: u64) -> impl FnMut(u64) -> bool {
    let mut state = seed;
    move |_| {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) as f64 / u64::MAX as f64) < p
    }
}

#[test]
fn on_a_lossy_path_the_window_also_covers_the_data_held_past_holes() {
    // 11% of the sender's packets lost, as BER 1e-5 loses 1500-byte
    // packets: holes take a round trip or more to repair, and the window
    // must hold what arrives past them meanwhile. The autotuned receiver
    // should do about as well as one given 6 MiB from the start.
    let payload = data(10_000_000, 9);
    let seed = 11;
    println!("loss seed {seed}");
    let fixed = Config {
        recv_buffer: 6 << 20,
        ..receiver_config(false)
    };
    let large = transfer(sender_config(), fixed, &payload, always, random_loss(0.11, seed));
    let tuned = transfer(
        sender_config(),
        receiver_config(true),
        &payload,
        always,
        random_loss(0.11, seed),
    );
    assert!(
        large.received == payload && tuned.received == payload,
        "the content differs"
    );
    println!(
        "6 MiB: {:.3} of the link; autotuned: {:.3}, buffer up to {} bytes",
        large.goodput_share(),
        tuned.goodput_share(),
        tuned.largest_buffer
    );
    assert!(
        tuned.goodput_share() >= 0.9 * large.goodput_share(),
        "autotuned {:.3}, 6 MiB {:.3} of the link",
        tuned.goodput_share(),
        large.goodput_share()
    );
}
