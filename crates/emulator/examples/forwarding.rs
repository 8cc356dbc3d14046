//! Forwarding capacity of the emulator: UDP with 1500-byte IP packets from
//! client to server through `emu` at rising offered rates, on a link with
//! no rate limit to speak of (10 Gbit/s), no delay and no errors. Prints,
//! per offered rate, the delivered rate, the loss and the one-way latency,
//! beside the same path forwarded by the kernel alone; then the highest
//! rate carried with under 0.1% loss and the latency the emulator adds
//! there, against the goal (200 Mbit/s, under 1 ms).
//!
//! Run as root (or in a user namespace):
//! `cargo run --release -p scps-emulator --example forwarding`

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use nix::sys::socket::{setsockopt, sockopt};
use scps_emulator::{Emulator, EmulatorConfig};
use scps_testbed::{EMU, EMU_SIDE_A, EMU_SIDE_B, Testbed, Topology};

const PAYLOAD: usize = 1500 - 28;
const SECONDS: f64 = 2.0;
const GOAL_BPS: f64 = 200e6;
const GOAL_ADDED: Duration = Duration::from_millis(1);

struct Figures {
    delivered_bps: f64,
    loss: f64,
    p50: Duration,
    p99: Duration,
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    sorted
        .get(((sorted.len().max(1) - 1) as f64 * q).round() as usize)
        .copied()
        .unwrap_or_default()
}

/// Offers `rate_bps` for [`SECONDS`] and measures what arrives.
fn run(testbed: &Testbed, rate_bps: f64) -> Figures {
    let server: SocketAddr = "10.99.2.2:7300".parse().unwrap();
    let receiver = testbed
        .node("server")
        .unwrap()
        .run(move || UdpSocket::bind(server))
        .unwrap();
    let sender = testbed
        .node("client")
        .unwrap()
        .run(|| UdpSocket::bind("10.99.1.2:0"))
        .unwrap();
    receiver
        .set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    // 16 MB of receive buffer: the receiving thread shares two cores with
    // the sender and the emulator, and must not be what drops packets.
    setsockopt(&receiver, sockopt::RcvBufForce, &(16 << 20)).expect("SO_RCVBUFFORCE (needs CAP_NET_ADMIN)");
    let base = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let receiving = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut delays = Vec::new();
        let mut first_last: Option<(Instant, Instant)> = None;
        while !stopped.load(Ordering::Acquire) {
            let Ok(n) = receiver.recv(&mut buf) else { continue };
            let now = Instant::now();
            if n == PAYLOAD {
                let sent = Duration::from_nanos(u64::from_be_bytes(buf[..8].try_into().unwrap()));
                delays.push(now - base - sent);
                first_last = Some((first_last.map_or(now, |(f, _)| f), now));
            }
        }
        (delays, first_last)
    });
    let count = (rate_bps * SECONDS / (1500.0 * 8.0)) as u64;
    let interval = Duration::from_secs_f64(1500.0 * 8.0 / rate_bps);
    let mut packet = [0u8; PAYLOAD];
    let start = Instant::now();
    for seq in 0..count {
        let due = start + interval.mul_f64(seq as f64);
        // Paced in small bursts: sleep only when a millisecond ahead.
        if let Some(ahead) = due.checked_duration_since(Instant::now())
            && ahead > Duration::from_millis(1)
        {
            std::thread::sleep(ahead);
        }
        packet[..8].copy_from_slice(&(base.elapsed().as_nanos() as u64).to_be_bytes());
        let _ = sender.send_to(&packet, server);
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Release);
    let (mut delays, first_last) = receiving.join().unwrap();
    delays.sort();
    let received = delays.len() as f64;
    let delivered_bps = match first_last {
        Some((first, last)) if last > first => (received - 1.0) * 1500.0 * 8.0 / (last - first).as_secs_f64(),
        _ => 0.0,
    };
    Figures {
        delivered_bps,
        loss: 1.0 - received / count as f64,
        p50: quantile(&delays, 0.5),
        p99: quantile(&delays, 0.99),
    }
}

fn main() {
    let testbed = Testbed::build(Topology::direct()).expect("testbed (run as root or in a user namespace)");
    let text = format!(
        "[emulate]\nside_a = \"{EMU_SIDE_A}\"\nside_b = \"{EMU_SIDE_B}\"\n[link]\nrate = \"10Gbit\"\nbuffer = \"16MB\"\n"
    );
    let config = EmulatorConfig::from_text(&text, "forwarding").unwrap();
    println!(
        "offered Mbit/s | kernel only: delivered, loss, p50, p99 | emulator: delivered, loss, p50, p99, CPU s"
    );
    let mut best: Option<(f64, Duration)> = None;
    for offered_mbps in [50.0, 100.0, 200.0, 250.0, 300.0, 400.0, 500.0] {
        let rate = offered_mbps * 1e6;
        let kernel = run(&testbed, rate);
        let config = config.clone();
        let emulator = testbed
            .node(EMU)
            .unwrap()
            .run(move || Emulator::start(&config))
            .unwrap();
        let cpu_before = process_cpu();
        let emulated = run(&testbed, rate);
        let cpu = process_cpu() - cpu_before;
        emulator.stop().unwrap();
        let added = emulated.p50.saturating_sub(kernel.p50);
        println!(
            "{offered_mbps:>6.0} | {:>7.1} {:>6.2}% {:>9.3?} {:>9.3?} | {:>7.1} {:>6.2}% {:>9.3?} {:>9.3?} {cpu:>5.2}",
            kernel.delivered_bps / 1e6,
            kernel.loss * 100.0,
            kernel.p50,
            kernel.p99,
            emulated.delivered_bps / 1e6,
            emulated.loss * 100.0,
            emulated.p50,
            emulated.p99,
        );
        if emulated.loss < 0.001 {
            best = Some((emulated.delivered_bps, added));
        }
    }
    match best {
        Some((bps, added)) => println!(
            "highest rate carried with under 0.1% loss: {:.0} Mbit/s (goal at least {:.0}: {}), \
             added median latency there {added:.3?} (goal under {GOAL_ADDED:?}: {})",
            bps / 1e6,
            GOAL_BPS / 1e6,
            if bps >= GOAL_BPS { "met" } else { "NOT met" },
            if added < GOAL_ADDED { "met" } else { "NOT met" },
        ),
        None => println!("no offered rate was carried with under 0.1% loss"),
    }
}

/// CPU seconds used by this process so far (user + system), from
/// /proc/self/stat (clock ticks of 1/100 s on Linux).
fn process_cpu() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}
