//! The same transfer in the simulator and through the live emulator: one
//! bulk transfer over `geo-8mbit`'s link (8 Mbit/s token bucket, RTT 100
//! ms), BER 0 and 1e-6, repeated. Through the emulator the ends are Linux
//! kernel TCP (CUBIC) in network namespaces; in the simulator, our engine
//! with `tcp-cubic` and the scenario's Linux-like settings. Prints each
//! side's goodput (mean and spread over the runs) beside the limit. (Our
//! stack at both ends through the emulator needs `scps send`/`recv`.)
//!
//! `cargo run --release -p scps-emulator --example crosscheck [RUNS]`

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use scps_config::Scenario;
use scps_config::sweep::parse_assignment;
use scps_emulator::{Emulator, EmulatorConfig};
use scps_testbed::{EMU, EMU_SIDE_A, EMU_SIDE_B, Testbed, Topology};

const BYTES: usize = 10_000_000;

fn mean_sd(values: &[f64]) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, var.sqrt())
}

/// One kernel-TCP transfer client -> server; goodput in bit/s from the
/// connect to the last byte read.
fn kernel_transfer(testbed: &Testbed, port: u16) -> f64 {
    let server: SocketAddr = format!("10.99.2.2:{port}").parse().unwrap();
    let listener = testbed
        .node("server")
        .unwrap()
        .run(move || TcpListener::bind(server))
        .unwrap();
    let receiving = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut total = 0;
        while total < BYTES {
            let n = stream.read(&mut buf).unwrap();
            assert!(n > 0, "connection closed early");
            total += n;
        }
        Instant::now()
    });
    let start = Instant::now();
    let mut client = testbed
        .node("client")
        .unwrap()
        .run(move || TcpStream::connect(server))
        .unwrap();
    use_cubic(&client);
    client.write_all(&vec![0x5a; BYTES]).unwrap();
    let end = receiving.join().unwrap();
    BYTES as f64 * 8.0 / (end - start).as_secs_f64()
}

/// Makes CUBIC the congestion control of `stream`. A new network
/// namespace takes the host's default, which is BBR on this machine (Linux
/// 6.18): BBR does not back off on random loss, so the comparison with our
/// `tcp-cubic` would not compare like with like. (The namespace's default
/// cannot be CUBIC: outside the initial namespace only the host's allowed
/// algorithms may be, reno and bbr here; a socket of a process with
/// CAP_NET_ADMIN may use any.)
fn use_cubic(stream: &TcpStream) {
    use nix::sys::socket::{getsockopt, setsockopt, sockopt::TcpCongestion};
    setsockopt(stream, TcpCongestion, &"cubic".into()).expect("kernel TCP takes CUBIC (run as root)");
    let now = getsockopt(stream, TcpCongestion).unwrap();
    assert_eq!(now.to_string_lossy(), "cubic");
}

fn main() {
    let runs: u64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(3);
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/geo-8mbit.toml"
    ))
    .expect("the scenario file");
    let document: toml::Table = text.parse().unwrap();
    let testbed = Testbed::build(Topology::direct()).expect("testbed (run as root or in a user namespace)");
    println!(
        "geo-8mbit link, RTT 100 ms, {} MB, {runs} runs each",
        BYTES / 1_000_000
    );
    println!(
        "BER   | limit      | simulator tcp-cubic (mean +- sd) | emulator + Linux CUBIC (mean +- sd) | ratio"
    );
    for ber in ["0", "1e-6"] {
        let sets: Vec<_> = [
            "protocol=tcp-cubic".to_owned(),
            "link.rtt=100ms".to_owned(),
            format!("link.ber={ber}"),
            format!("workload.bytes={BYTES}"),
        ]
        .iter()
        .map(|s| parse_assignment(s).unwrap())
        .collect();
        let scenario = Scenario::load("geo-8mbit", &sets).unwrap();
        let point = &scenario.points[0];
        let simulated: Vec<f64> = (1..=runs)
            .map(|seed| {
                scps_sim::run(point, seed, &scps_sim::RunOptions::default())
                    .unwrap()
                    .goodput_bps
            })
            .collect();
        let mut link = document["link"].as_table().unwrap().clone();
        link.insert("rtt".into(), "100ms".into());
        link.insert("ber".into(), toml::Value::Float(ber.parse().unwrap()));
        let mut emulated = Vec::new();
        for seed in 1..=runs {
            let mut emulate = toml::Table::new();
            emulate.insert("side_a".into(), EMU_SIDE_A.into());
            emulate.insert("side_b".into(), EMU_SIDE_B.into());
            let mut file = toml::Table::new();
            file.insert("seed".into(), toml::Value::Integer(seed as i64));
            file.insert("emulate".into(), emulate.into());
            file.insert("link".into(), link.clone().into());
            let config = EmulatorConfig::from_text(&toml::to_string(&file).unwrap(), "crosscheck").unwrap();
            let emulator = testbed
                .node(EMU)
                .unwrap()
                .run(move || Emulator::start(&config))
                .unwrap();
            emulated.push(kernel_transfer(&testbed, 7400 + seed as u16));
            let stats = emulator.stats();
            let forward = &stats.channels[0];
            eprintln!(
                "  emulator run {seed}: {} packets in, {} lost to bit errors, {} to the buffer",
                forward.packets_in, forward.dropped_bit_errors, forward.dropped_buffer
            );
            emulator.stop().unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
        let (sm, ss) = mean_sd(&simulated);
        let (em, es) = mean_sd(&emulated);
        println!(
            "{ber:<5} | {:>6.3} Mbit/s | {:>6.3} +- {:.3} Mbit/s | {:>6.3} +- {:.3} Mbit/s | {:.3}",
            point.limit_bps(Duration::from_secs(20)) / 1e6,
            sm / 1e6,
            ss / 1e6,
            em / 1e6,
            es / 1e6,
            em / sm
        );
    }
}
