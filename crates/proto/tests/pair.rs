//! Whole transfers between two endpoints of ours (see `harness/pair.rs`),
//! content checked byte for byte.

mod harness;

use std::time::Duration;

use harness::pair::{A6, B6, Exchanged, Pair, data, exchange};
use scps_proto::Config;

#[test]
fn a_mebibyte_each_way_arrives_intact() {
    let mut pair = Pair::new(Config::default(), Duration::from_millis(50));
    let (to_b, to_a) = (data(1 << 20, 1), data(1 << 20, 2));
    let Exchanged { at_a, at_b, ca, .. } = exchange(&mut pair, &to_b, &to_a);
    assert!(at_b == to_b, "A to B content differs");
    assert!(at_a == to_a, "B to A content differs");
    let stats = pair.a.stats_of(ca).unwrap();
    assert_eq!(
        stats.bytes_retransmitted, 0,
        "a clean link needs no retransmission"
    );
    assert_eq!(stats.srtt, Some(Duration::from_millis(100)));
}

#[test]
fn regular_losses_are_repaired_with_and_without_sack() {
    for sack in [true, false] {
        let config = Config {
            sack,
            rto_min: Duration::from_millis(200),
            ..Config::default()
        };
        let mut pair = Pair::new(config, Duration::from_millis(20));
        pair.lose_every_nth_to_b(50);
        let to_b = data(1 << 20, 3);
        let Exchanged { at_b, ca, .. } = exchange(&mut pair, &to_b, b"");
        assert!(at_b == to_b, "content differs (sack {sack})");
        let stats = pair.a.stats_of(ca).unwrap();
        assert!(stats.bytes_retransmitted > 0);
        assert!(
            stats.fast_recoveries > 0,
            "losses repaired by fast recovery (sack {sack}): {stats:?}"
        );
    }
}

#[test]
fn ipv6_works_the_same() {
    let mut pair = Pair::with_addresses(Config::default(), Duration::from_millis(30), A6, B6);
    pair.lose_every_nth_to_b(40);
    let (to_b, to_a) = (data(300_000, 4), data(200_000, 5));
    let Exchanged { at_a, at_b, ca, .. } = exchange(&mut pair, &to_b, &to_a);
    assert!(at_b == to_b && at_a == to_a, "content differs over IPv6");
    let stats = pair.a.stats_of(ca).unwrap();
    assert_eq!(stats.smss, 1500 - 40 - 20 - 12, "MSS from the IPv6 header size");
    assert!(stats.bytes_retransmitted > 0);
}
