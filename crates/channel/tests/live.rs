//! Live changes (the emulator's control commands): a new configuration
//! applies to the packets that follow, what is on the line keeps its
//! slot, and forced outages lose the packets they overlap.

use std::time::Duration;

use scps_channel::{Channel, ChannelConfig, DropCause, Fate};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn delivered_at(fate: Fate) -> Duration {
    match fate {
        Fate::Delivered { at, .. } => at,
        other => panic!("expected delivery, got {other:?}"),
    }
}

#[test]
fn a_new_rate_and_delay_apply_after_the_queue() {
    // 1000 bytes at 1 Mbit/s: 8 ms each.
    let mut config = ChannelConfig::new(1_000_000);
    config.delay = MS(100);
    let mut ch = Channel::new(config.clone(), 1).unwrap();
    assert_eq!(delivered_at(ch.transmit(MS(0), &mut [0; 1000])), MS(108));
    assert_eq!(delivered_at(ch.transmit(MS(0), &mut [0; 1000])), MS(116));
    config.rate_bps = 8_000_000;
    config.delay = MS(10);
    ch.reconfigure(config).unwrap();
    // The line is busy until 16 ms; then 1 ms at the new rate, 10 ms delay,
    // but never before the packets already on their way (FIFO).
    assert_eq!(delivered_at(ch.transmit(MS(1), &mut [0; 1000])), MS(116));
    assert_eq!(delivered_at(ch.transmit(MS(200), &mut [0; 1000])), MS(211));
    assert_eq!(ch.stats().packets_delivered, 4);
}

#[test]
fn a_bad_change_changes_nothing() {
    let mut ch = Channel::new(ChannelConfig::new(1_000_000), 1).unwrap();
    let mut bad = ChannelConfig::new(1_000_000);
    bad.ber = 2.0;
    assert_eq!(ch.reconfigure(bad).unwrap_err().field(), Some("ber"));
    assert_eq!(ch.config().ber, 0.0);
    assert_eq!(delivered_at(ch.transmit(MS(0), &mut [0; 1000])), MS(8));
}

#[test]
fn a_forced_outage_loses_what_it_overlaps_and_survives_reconfiguration() {
    let mut ch = Channel::new(ChannelConfig::new(1_000_000), 1).unwrap();
    assert!(ch.outages_mut().force_down(MS(10)));
    ch.reconfigure(ChannelConfig::new(2_000_000)).unwrap();
    // On the line [6, 10) ms: delivered; [10, 14): lost.
    assert_eq!(delivered_at(ch.transmit(MS(6), &mut [0; 500])), MS(8));
    assert_eq!(
        ch.transmit(MS(9), &mut [0; 1000]),
        Fate::Dropped(DropCause::Outage)
    );
    assert!(!ch.is_up(MS(50)));
    assert!(ch.outages_mut().end_forced(MS(60)));
    assert!(ch.is_up(MS(60)));
    assert_eq!(delivered_at(ch.transmit(MS(60), &mut [0; 1000])), MS(64));
}
