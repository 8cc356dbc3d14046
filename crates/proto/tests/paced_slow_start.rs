//! A sender paced by its route's token bucket still doubles its window
//! each round trip in slow start, for every window-based controller: the
//! pacer spreads the window over the round trip and must never be taken
//! for an application that does not use its window.

mod harness;

use std::net::SocketAddr;
use std::time::Duration;

use harness::pair::{Pair, data};
use scps_proto::Config;
use scps_proto::cc::CongestionAlgorithm;

const ONE_WAY: Duration = Duration::from_millis(300);

/// The congestion window in each of the first `rounds` round trips after
/// the handshake, of a bulk sender paced at 8 Mbit/s.
fn window_per_round(congestion: CongestionAlgorithm, rounds: usize) -> Vec<u64> {
    let config = Config {
        congestion,
        scps: true,
        rate_bps: Some(8_000_000),
        initial_window_segments: 10,
        send_buffer: 8 << 20,
        recv_buffer: 8 << 20,
        ..Config::default()
    };
    let mut pair = Pair::new(config, ONE_WAY);
    let server = SocketAddr::new(pair.server, 80);
    pair.b.listen(server, None).unwrap();
    let start = pair.now;
    let client = pair.a.connect(start, server, None, None).unwrap();
    let payload = data(8 << 20, 7);
    let (mut sent, mut accepted) = (0, None);
    let mut windows = Vec::new();
    let mut buf = vec![0u8; 1 << 16];
    pair.run(|p| {
        accepted = accepted.or_else(|| p.b.accept(server));
        sent += p.a.send(client, &payload[sent..]).unwrap_or(0);
        if let Some(accepted) = accepted {
            while let Ok(1..) = p.b.recv(accepted, &mut buf) {}
        }
        // Half a round trip after the first data left, and every round
        // trip after that: between the bursts of ACKs.
        let sample_at = start + 3 * ONE_WAY + 2 * ONE_WAY * windows.len() as u32;
        if p.now >= sample_at {
            windows.push(p.a.stats_of(client).unwrap().cwnd);
        }
        windows.len() == rounds
    });
    windows
}

#[test]
fn paced_slow_start_doubles_the_window_each_round_trip() {
    for congestion in [
        CongestionAlgorithm::NewReno,
        CongestionAlgorithm::Vegas,
        CongestionAlgorithm::Cubic,
    ] {
        // 8 Mbit/s over 600 ms holds 600 kB: five doublings of ten
        // segments stay below it.
        let windows = window_per_round(congestion, 6);
        for pair in windows.windows(2) {
            assert!(
                pair[1] >= pair[0] * 19 / 10,
                "{congestion}: the window went from {} to {} in a round trip (all: {windows:?})",
                pair[0],
                pair[1]
            );
        }
    }
}
