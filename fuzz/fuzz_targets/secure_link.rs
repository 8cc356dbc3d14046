//! A secure link fed arbitrary datagrams (split where a byte is 0xff)
//! refuses each with a counted cause, opens nothing, and never panics.
//! (The frame parser alone: `secure_frame`.)
#![no_main]

use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use scps_node::Instant;
use scps_secure::{Opened, PrivateKey, SecureConfig, SecureLink};

fuzz_target!(|data: &[u8]| {
    let ours = PrivateKey::from_base64("YGQcbS9L0W8X8y3FMmbu2VJhbq0xsnpFzVx2p6pQxHg=").unwrap();
    let theirs = PrivateKey::from_base64("QCr/lk2ZbGSE9pDpTXAuqA4n2jQzC7+9X0cZ6pKiYnU=").unwrap();
    let config = SecureConfig::new(ours, theirs.public_key());
    let mut now = Instant::ZERO;
    let mut link = SecureLink::new(config, now, Duration::from_secs(1_800_000_000)).unwrap();
    let mut refused = 0;
    for datagram in data.split(|b| *b == 0xff) {
        now += Duration::from_millis(10);
        match link.open(now, datagram) {
            Opened::Dropped(_) => refused += 1,
            opened => panic!("a datagram of no key's opened: {opened:?}"),
        }
    }
    assert_eq!(link.stats().auth_failures_total(), refused);
});
