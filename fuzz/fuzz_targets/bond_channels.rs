//! A bond fed arbitrary datagrams on its channels: it counts what it
//! cannot read and never panics.
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use scps_bond::{Bond, BondConfig};

fuzz_target!(|data: &[u8]| {
    let mut bond = Bond::new(BondConfig::new(vec![2400, 9600]), Duration::ZERO).unwrap();
    let mut now = Duration::ZERO;
    // The datagrams are the input cut where a byte is 0xff; the byte
    // after it picks the channel.
    for (index, datagram) in data.split(|b| *b == 0xff).enumerate() {
        now += Duration::from_millis(100);
        let channel = datagram.first().map_or(0, |b| usize::from(*b % 3));
        let _ = bond.handle(now, channel, datagram.to_vec());
        if index % 4 == 0 {
            let _ = bond.send(vec![0x45; 100]);
        }
        while bond.poll_transmit(now).is_some() {}
        let _ = bond.next_wake(now);
        while bond.poll_event().is_some() {}
    }
});
