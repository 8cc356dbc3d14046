//! Whatever a TUN device hands the emulator: classified, and if it
//! belongs on the link, carried through the models (pinned to a circuit
//! by its UDP port, or striped), and, pinned to a circuit whose call is
//! down, answered with a report that quotes it, without a panic.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use scps_emulator::{Change, Direction, EmulatorConfig, LinkState, RouterAddresses, crosses_link};

fuzz_target!(|data: &[u8]| {
    let config = EmulatorConfig::from_text(
        "[emulate]\nside_a = \"a\"\nside_b = \"b\"\ncircuit_ports = [7001, 7002]\n\
         [link]\nrate = \"1Mbit\"\nchannels = 2\nber = 1e-3\nerrors = \"corrupt\"\n",
        "fuzz",
    )
    .expect("valid");
    let mut link = LinkState::new(&config).expect("valid");
    let router = RouterAddresses {
        v4: Some("10.0.0.1".parse().unwrap()),
        v6: Some("fd00::1".parse().unwrap()),
    };
    link.set_routers([router; 2]);
    if crosses_link(data) {
        link.offer(Direction::Forward, Duration::ZERO, data.to_vec());
        let due = link.next_due(Duration::ZERO).unwrap_or_default();
        let delivered = link.take_due(Direction::Forward, due);
        assert!(delivered.is_none_or(|p| p.len() == data.len()));
        let later = due + Duration::from_secs(1);
        link.apply(later, &Change::OutageStart { channel: None }).expect("both circuits up");
        link.offer(Direction::Forward, later, data.to_vec());
        if let Some((direction, report)) = link.take_report() {
            assert_eq!(direction, Direction::Forward);
            let header = if data[0] >> 4 == 4 { 28 } else { 48 };
            assert!(data.starts_with(&report[header..]), "the report quotes the datagram");
        }
    }
});
