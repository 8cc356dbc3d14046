//! The ceiling a window puts on SNACK repair at a high error rate.
//!
//! An idealised sender on t1-geo (1.544 Mbit/s, 525 ms RTT) sends a 3 MB
//! file in 1500-byte packets at BER 1e-5, with no congestion control and
//! compressed headers (1472 bytes of payload, as the physical limit counts
//! them for the paper's case 2B: docs/scenarios.md, "The limit", H = 28).
//! It knows of every lost copy exactly when a SNACK sent on the next
//! arrival would tell it (one round trip and one packet time after
//! the copy left), resends it ahead of new data, and never resends
//! anything that arrived. Only the window holds it: new data may not run
//! more than the window ahead of the oldest unacknowledged segment. No
//! repair timing can do better, so its ratio to the limit is a ceiling for
//! any SNACK sender in that window that resends each lost copy once. The
//! same sender resending every repair twice, back to back, shows what
//! redundancy would buy.
//!
//!     cargo run --release -p scps-sim --example snack_window_ceiling -- [WINDOW_BYTES...]
//!
//! Prints, per window, the mean time from the first SYN to the last byte
//! over 16 seeds and the ratio to the physical limit, for one and for two
//! copies per repair; then, in the paper's 241 kB window, the same for
//! smaller packets, which fewer errors hit (docs/BENCHMARKS.md, t1-geo
//! case 2B).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const RATE_BPS: f64 = 1.544e6;
const RTT_NS: u64 = 525_000_000;
/// The limit's packet, and its header when compressed.
const WIRE_BYTES: u64 = 1500;
const HEADER_BYTES: u64 = 28;
const PAPER_WINDOW: u64 = 241_000;
const BER: f64 = 1e-5;
const FILE_BYTES: u64 = 3_000_000;
const RUNS: u64 = 16;

/// One sender: its window, packet size and copies per repair.
#[derive(Clone, Copy)]
struct Sender {
    window_bytes: u64,
    wire_bytes: u64,
    copies: u32,
}

/// The share of `wire_bytes`-byte packets that bit errors hit.
fn packet_loss(wire_bytes: u64) -> f64 {
    1.0 - (1.0 - BER).powf(wire_bytes as f64 * 8.0)
}

/// Nanoseconds from the first SYN until the receiver holds the whole
/// file.
fn transfer_ns(sender: Sender, rng: &mut ChaCha8Rng) -> u64 {
    let payload = sender.wire_bytes - HEADER_BYTES;
    let (window, copies) = (sender.window_bytes / payload, sender.copies);
    let segments = FILE_BYTES.div_ceil(payload);
    let packet_ns = (sender.wire_bytes as f64 * 8.0 / RATE_BPS * 1e9) as u64;
    let one_way_ns = RTT_NS / 2;
    let loss = packet_loss(sender.wire_bytes);

    let mut arrived = vec![false; segments as usize];
    // The receiver's cumulative ACK point, and when each value reaches
    // the sender.
    let mut rcv_next = 0;
    let mut acks: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    // Lost copies, by the time the sender learns of the loss.
    let mut repairs: BinaryHeap<Reverse<(u64, u64)>> = BinaryHeap::new();
    let (mut una, mut next_new) = (0, 0);
    // Data starts once the handshake's round trip is over.
    let mut now = RTT_NS;
    loop {
        while let Some(&Reverse((at, point))) = acks.peek()
            && at <= now
        {
            acks.pop();
            una = una.max(point);
        }
        let mut segment = None;
        while let Some(&Reverse((due, candidate))) = repairs.peek()
            && due <= now
        {
            repairs.pop();
            if !arrived[candidate as usize] {
                segment = Some((candidate, copies));
                break;
            }
        }
        if segment.is_none() && next_new < segments && next_new - una < window {
            segment = Some((next_new, 1));
            next_new += 1;
        }
        let Some((segment, copies)) = segment else {
            // Nothing may go: wait for the next ACK or known loss.
            let next_ack = acks.peek().map(|r| r.0.0);
            let next_repair = repairs.peek().map(|r| r.0.0);
            now = next_ack
                .into_iter()
                .chain(next_repair)
                .min()
                .expect("something is outstanding");
            continue;
        };
        // The link is first in, first out with a fixed delay, so copies
        // arrive in the order they are sent and the receiver's state can
        // be brought up to each arrival as it is sent.
        now += packet_ns * u64::from(copies - 1);
        let arrival = now + packet_ns + one_way_ns;
        if (0..copies).all(|_| rng.random::<f64>() < loss) {
            repairs.push(Reverse((now + packet_ns + RTT_NS, segment)));
        } else if !arrived[segment as usize] {
            arrived[segment as usize] = true;
            let before = rcv_next;
            while rcv_next < segments && arrived[rcv_next as usize] {
                rcv_next += 1;
            }
            if rcv_next == segments {
                return arrival;
            }
            if rcv_next > before {
                acks.push(Reverse((arrival + one_way_ns, rcv_next)));
            }
        }
        now += packet_ns;
    }
}

fn main() {
    let windows: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a window in bytes"))
        .collect();
    let windows = if windows.is_empty() {
        vec![PAPER_WINDOW, 330_000, 500_000, 1_000_000]
    } else {
        windows
    };
    let limit_bps =
        RATE_BPS * (1.0 - packet_loss(WIRE_BYTES)) * (WIRE_BYTES - HEADER_BYTES) as f64 / WIRE_BYTES as f64;
    println!("idealised SNACK sender, t1-geo, BER {BER:e}, 3 MB, {RUNS} seeds; limit {limit_bps:.0} bit/s");
    println!("window_bytes  packet_bytes  copies  time_s  ratio");
    let print = |sender: Sender| {
        let mean_ns = (1..=RUNS)
            .map(|seed| transfer_ns(sender, &mut ChaCha8Rng::seed_from_u64(seed)))
            .sum::<u64>() as f64
            / RUNS as f64;
        let time_s = mean_ns / 1e9;
        let ratio = FILE_BYTES as f64 * 8.0 / time_s / limit_bps;
        let Sender {
            window_bytes,
            wire_bytes,
            copies,
        } = sender;
        println!("{window_bytes:<12}  {wire_bytes:<12}  {copies:<6}  {time_s:6.2}  {ratio:.3}");
    };
    for window_bytes in windows {
        for copies in [1, 2] {
            print(Sender {
                window_bytes,
                wire_bytes: WIRE_BYTES,
                copies,
            });
        }
    }
    for wire_bytes in [1000, 700, 500, 300] {
        print(Sender {
            window_bytes: PAPER_WINDOW,
            wire_bytes,
            copies: 1,
        });
    }
}
