//! Round-robin striping over parallel channels.

mod common;

use std::time::Duration;

use common::{arrival, ms};
use scps_channel::{
    Bundle, CallDrops, ChannelConfig, ConfigError, DropCause, Fate, OutageWindow, channel_seed,
};

fn window(start_s: u64, dur_s: u64) -> OutageWindow {
    OutageWindow {
        start: Duration::from_secs(start_s),
        duration: Duration::from_secs(dur_s),
    }
}

fn three_channels(windows: [Vec<OutageWindow>; 3]) -> Bundle {
    let configs = windows
        .into_iter()
        .map(|w| {
            let mut c = ChannelConfig::new(1_000_000);
            c.delay = ms(500);
            c.outages.scheduled = w;
            c
        })
        .collect();
    match Bundle::new(configs, 42) {
        Ok(b) => b,
        Err(e) => panic!("valid bundle: {e}"),
    }
}

#[test]
fn round_robin_skips_a_channel_that_is_down() {
    let mut bundle = three_channels([vec![], vec![window(0, 10)], vec![]]);
    let mut used = Vec::new();
    for k in 0..200u64 {
        let now = ms(100 * k);
        let (index, fate) = bundle.transmit(now, &mut [0u8; 125]);
        assert_eq!(arrival(fate), now + ms(501), "packet {k}");
        used.push((now, index));
    }
    for &(now, index) in &used {
        if now < Duration::from_secs(10) {
            assert_ne!(index, 1, "channel 1 used at {now:?} while down");
        }
    }
    // Strict alternation 0, 2 while channel 1 is down, then 0, 1, 2, ...
    let before: Vec<usize> = used
        .iter()
        .filter(|(t, _)| *t < Duration::from_secs(10))
        .map(|u| u.1)
        .collect();
    assert!(
        before.iter().enumerate().all(|(i, &c)| c == [0, 2][i % 2]),
        "{before:?}"
    );
    let after: Vec<usize> = used
        .iter()
        .filter(|(t, _)| *t >= Duration::from_secs(10))
        .map(|u| u.1)
        .collect();
    assert!(after.windows(2).all(|w| w[1] == (w[0] + 1) % 3), "{after:?}");
    assert!(after.contains(&1));
    let delivered: Vec<u64> = bundle
        .channels()
        .iter()
        .map(|c| c.stats().packets_delivered)
        .collect();
    assert_eq!(delivered.iter().sum::<u64>(), 200);
    assert!(
        delivered[0] > delivered[1] && delivered[2] > delivered[1],
        "{delivered:?}"
    );
}

#[test]
fn all_channels_down_loses_packets_in_turn() {
    let mut bundle = three_channels([vec![window(5, 10)], vec![window(0, 20)], vec![window(4, 8)]]);
    assert!(bundle.is_up(Duration::from_secs(4)));
    assert!(!bundle.is_up(Duration::from_secs(6)));
    let mut indices = Vec::new();
    for k in 0..30u64 {
        // 6 s .. 8.9 s: every channel is down.
        let now = Duration::from_secs(6) + ms(100 * k);
        let (index, fate) = bundle.transmit(now, &mut [0u8; 125]);
        assert_eq!(fate, Fate::Dropped(DropCause::Outage), "packet {k}");
        indices.push(index);
    }
    assert!(
        indices.iter().enumerate().all(|(i, &c)| c == i % 3),
        "{indices:?}"
    );
    for ch in bundle.channels() {
        assert_eq!(ch.stats().dropped_outage, 10);
        assert_eq!(ch.stats().packets_transmitted, 0, "lost without using the line");
    }
    // At 12 s channel 2 is back (its window ended), the others still down.
    let (index, fate) = bundle.transmit(Duration::from_secs(12), &mut [0u8; 125]);
    assert_eq!(index, 2);
    assert_eq!(arrival(fate), Duration::from_secs(12) + ms(501));
}

#[test]
fn channels_get_distinct_reproducible_seeds() {
    let seeds: Vec<u64> = (0..3).map(|i| channel_seed(42, i)).collect();
    assert!(seeds[0] != seeds[1] && seeds[1] != seeds[2] && seeds[0] != seeds[2]);
    let bundle = three_channels([vec![], vec![], vec![]]);
    let from_bundle: Vec<u64> = bundle.channels().iter().map(|c| c.seed()).collect();
    assert_eq!(from_bundle, seeds);
}

#[test]
fn invalid_bundles_name_the_channel() {
    assert_eq!(Bundle::new(vec![], 1).err(), Some(ConfigError::EmptyBundle));
    let mut bad = ChannelConfig::new(1000);
    bad.buffer_bytes = 0;
    let err = Bundle::new(vec![ChannelConfig::new(1000), bad], 1).err();
    let Some(err) = err else {
        panic!("channel 1 is invalid")
    };
    assert_eq!(err.field(), Some("buffer_bytes"));
    let text = err.to_string();
    assert!(
        text.contains("channels[1]") && text.contains("buffer_bytes"),
        "{text}"
    );
}

#[test]
fn both_directions_of_a_circuit_share_call_drops_but_not_bit_errors() {
    let mut config = ChannelConfig::new(2400);
    config.ber = 1e-3;
    config.outages.call_drops = Some(CallDrops {
        mean_interval: Duration::from_secs(180),
        redial_min: Duration::from_secs(55),
        redial_max: Duration::from_secs(60),
    });
    let outage_seed = 99;
    let mut forward = Bundle::with_outage_seed(vec![config.clone(); 2], 1, outage_seed).unwrap();
    let mut reverse = Bundle::with_outage_seed(vec![config; 2], 2, outage_seed).unwrap();
    let mut differing_errors = 0;
    for s in 0..20_000u64 {
        let now = Duration::from_millis(s * 500);
        for i in 0..2 {
            let (f, r) = (&mut forward.channels_mut()[i], &mut reverse.channels_mut()[i]);
            assert_eq!(f.is_up(now), r.is_up(now), "channel {i} at {now:?}");
        }
        let (_, a) = forward.transmit(now, &mut [0u8; 100]);
        let (_, b) = reverse.transmit(now, &mut [0u8; 100]);
        differing_errors += usize::from(a != b);
    }
    assert!(
        differing_errors > 100,
        "bit errors must be independent per direction"
    );
}
