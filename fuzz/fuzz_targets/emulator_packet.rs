//! Whatever a TUN device hands the emulator: classified, and if it
//! belongs on the link, carried through the models (pinned to a circuit
//! by its UDP port, or striped), without a panic.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use scps_emulator::{Direction, EmulatorConfig, LinkState, crosses_link};

fuzz_target!(|data: &[u8]| {
    let config = EmulatorConfig::from_text(
        "[emulate]\nside_a = \"a\"\nside_b = \"b\"\ncircuit_ports = [7001, 7002]\n\
         [link]\nrate = \"1Mbit\"\nchannels = 2\nber = 1e-3\nerrors = \"corrupt\"\n",
        "fuzz",
    )
    .expect("valid");
    let mut link = LinkState::new(&config).expect("valid");
    if crosses_link(data) {
        link.offer(Direction::Forward, Duration::ZERO, data.to_vec());
        let due = link.next_due(Duration::ZERO).unwrap_or_default();
        let delivered = link.take_due(Direction::Forward, due);
        assert!(delivered.is_none_or(|p| p.len() == data.len()));
    }
});
