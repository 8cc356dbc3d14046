//! The same seed gives the same run, bit for bit; another seed gives
//! another run.

mod common;

use common::*;
use scps_sim::RunOptions;

#[test]
fn the_same_seed_gives_the_same_result_and_the_same_packets() {
    let seed = seed();
    let point = &points(
        "lowrate-leo-geo",
        &[
            "protocol=tcp-cubic",
            "link.delay=120ms",
            "link.ber=1e-5",
            "link.return.rate=2400bps",
        ],
    )[0];
    let dir = std::env::temp_dir().join(format!("scps-determinism-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run_captured = |name: &str, seed: u64| {
        let capture = dir.join(name);
        let options = RunOptions {
            capture: Some(capture.clone()),
            ..RunOptions::default()
        };
        let result = scps_sim::run(point, seed, &options).expect("the run starts");
        (result, std::fs::read(capture).expect("capture written"))
    };
    let (first, first_packets) = run_captured("a.pcap", seed);
    let (second, second_packets) = run_captured("b.pcap", seed);
    let (other, other_packets) = run_captured("c.pcap", seed + 1);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(first, second, "{}", describe(&first));
    assert!(first_packets == second_packets, "captures differ for seed {seed}");
    assert_ne!(
        first.retransmitted_bytes,
        other.retransmitted_bytes,
        "seeds {seed} and {}",
        seed + 1
    );
    assert!(first_packets != other_packets);
}
