//! A testbed (client, emu, server) with an emulator running in `emu`, and
//! timestamped UDP probes from client to server.

#![allow(dead_code)] // each test file uses a part

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::socket::{setsockopt, sockopt};
use scps_emulator::{Emulator, EmulatorConfig};
use scps_testbed::{EMU, EMU_SIDE_A, EMU_SIDE_B, Testbed, Topology, ipv4};

pub const CLIENT: &str = "10.99.1.2";
pub const SERVER: &str = "10.99.2.2";

/// The emulator is declared first so that it stops before the testbed
/// (and its namespace) goes; the measuring slot is given up last.
pub struct Bench {
    pub emulator: Emulator,
    pub testbed: Testbed,
    _measuring: MutexGuard<'static, ()>,
}

/// One bench at a time: these tests measure real time to the millisecond,
/// and on two cores a second emulator and its probes running beside them
/// would be measured too.
static MEASURING: Mutex<()> = Mutex::new(());

/// A configuration with `link` (the body of `[link]`) and `emulate_extra`
/// (more `[emulate]` keys).
pub fn config(link: &str, emulate_extra: &str, seed: u64) -> EmulatorConfig {
    let text = format!(
        "seed = {seed}\n[emulate]\nside_a = \"{EMU_SIDE_A}\"\nside_b = \"{EMU_SIDE_B}\"\n{emulate_extra}\n[link]\n{link}\n"
    );
    EmulatorConfig::from_text(&text, "test").expect("valid configuration")
}

pub fn bench(config: EmulatorConfig) -> Bench {
    // A test that failed while holding the slot leaves nothing behind
    // (its bench was dropped): the poison carries no meaning here.
    let measuring = MEASURING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let testbed = Testbed::build(Topology::direct()).expect("testbed");
    let emulator = testbed
        .node(EMU)
        .unwrap()
        .run(move || Emulator::start(&config))
        .expect("emulator starts");
    Bench {
        emulator,
        testbed,
        _measuring: measuring,
    }
}

impl Bench {
    pub fn udp(&self, node: &str, addr: SocketAddr) -> UdpSocket {
        self.testbed
            .node(node)
            .unwrap()
            .run(move || UdpSocket::bind(addr))
            .expect("bind")
    }
}

/// Probes: `count` datagrams of `payload` bytes (at least 8), one every
/// `interval`, from client to server, each carrying its number and filled
/// with it. Returns, per probe, the send instant and the arrival instant if
/// it arrived within `linger` after the last was sent.
pub struct Probes {
    pub sent: Vec<Instant>,
    pub arrived: Vec<Option<Instant>>,
}

impl Probes {
    pub fn lost(&self) -> usize {
        self.arrived.iter().filter(|a| a.is_none()).count()
    }

    /// One-way delays of the probes that arrived.
    pub fn delays(&self) -> Vec<Duration> {
        self.sent
            .iter()
            .zip(&self.arrived)
            .filter_map(|(s, a)| a.map(|a| a - *s))
            .collect()
    }
}

pub fn probe(bench: &Bench, count: usize, payload: usize, interval: Duration, linger: Duration) -> Probes {
    let server_addr: SocketAddr = format!("{SERVER}:7000").parse().unwrap();
    let receiver = bench.udp("server", server_addr);
    // 8 MB of receive buffer: a receiving thread that waits a moment for a
    // CPU must not lose probes (losses are the emulator's to make). Inside
    // a user namespace only the capped SO_RCVBUF is allowed.
    setsockopt(&receiver, sockopt::RcvBufForce, &(8 << 20))
        .or_else(|_| setsockopt(&receiver, sockopt::RcvBuf, &(8 << 20)))
        .expect("SO_RCVBUF");
    let sender = bench.udp("client", SocketAddr::new(ipv4(1, 2).into(), 0));
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let receiving = std::thread::spawn(move || {
        let mut arrived = vec![None; count];
        let mut buf = vec![0u8; 65536];
        receiver
            .set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        while !stopped.load(Ordering::Acquire) {
            let Ok(n) = receiver.recv(&mut buf) else { continue };
            let now = Instant::now();
            assert!(n >= 8, "short datagram");
            let seq = u64::from_be_bytes(buf[..8].try_into().unwrap()) as usize;
            assert!(seq < count, "unknown probe {seq}");
            assert!(arrived[seq].is_none(), "probe {seq} arrived twice");
            assert!(buf[8..n].iter().all(|&b| b == seq as u8), "probe {seq} damaged");
            arrived[seq] = Some(now);
        }
        arrived
    });
    let start = Instant::now();
    let mut sent = Vec::with_capacity(count);
    let mut packet = vec![0u8; payload.max(8)];
    for seq in 0..count {
        let due = start + interval * seq as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        packet[..8].copy_from_slice(&(seq as u64).to_be_bytes());
        packet[8..].fill(seq as u8);
        sent.push(Instant::now());
        sender.send_to(&packet, server_addr).expect("send");
    }
    // Everything still on its way arrives within `linger`.
    std::thread::sleep(linger);
    stop.store(true, Ordering::Release);
    let arrived = receiving.join().expect("receiver");
    Probes { sent, arrived }
}

/// The `q`-quantile (0..=1) of `values`.
pub fn quantile(values: &[Duration], q: f64) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}
