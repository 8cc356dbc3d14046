//! Every invalid configuration is refused with the field, value and range.

use std::time::Duration;

use scps_channel::{CallDrops, Channel, ChannelConfig, ConfigError, OutageProcess, ShaperConfig};

fn expect_error(config: ChannelConfig, field: &str, value: &str) {
    let err = config.validate().err();
    let Some(err) = err else {
        panic!("{field} = {value} accepted")
    };
    assert_eq!(err.field(), Some(field), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(field) && text.contains(value) && text.contains("allowed"),
        "{text}"
    );
    assert_eq!(Channel::new(config, 0).err(), Some(err));
}

fn with(f: impl FnOnce(&mut ChannelConfig)) -> ChannelConfig {
    let mut c = ChannelConfig::new(1_000_000);
    f(&mut c);
    c
}

const SHAPER: ShaperConfig = ShaperConfig {
    rate_bps: 8_000_000,
    ceiling_bps: 10_000_000,
    burst_bytes: 131_072,
};
const DROPS: CallDrops = CallDrops {
    mean_interval: Duration::from_secs(180),
    redial_min: Duration::from_secs(55),
    redial_max: Duration::from_secs(60),
};

#[test]
fn each_bad_field_is_named_with_its_value() {
    expect_error(with(|c| c.rate_bps = 0), "rate_bps", "0");
    expect_error(with(|c| c.buffer_bytes = 0), "buffer_bytes", "0");
    expect_error(with(|c| c.ber = 1.0), "ber", "1");
    expect_error(with(|c| c.ber = -1e-9), "ber", "-0.000000001");
    expect_error(with(|c| c.ber = f64::NAN), "ber", "NaN");
    expect_error(
        with(|c| {
            c.shaper = Some(ShaperConfig {
                rate_bps: 0,
                ..SHAPER
            })
        }),
        "shaper.rate_bps",
        "0",
    );
    expect_error(
        with(|c| {
            c.shaper = Some(ShaperConfig {
                ceiling_bps: 7_999_999,
                ..SHAPER
            })
        }),
        "shaper.ceiling_bps",
        "7999999",
    );
    expect_error(
        with(|c| {
            c.shaper = Some(ShaperConfig {
                burst_bytes: 0,
                ..SHAPER
            })
        }),
        "shaper.burst_bytes",
        "0",
    );
    expect_error(
        with(|c| {
            c.outages.call_drops = Some(CallDrops {
                mean_interval: Duration::ZERO,
                ..DROPS
            })
        }),
        "outages.call_drops.mean_interval",
        "0ns",
    );
    expect_error(
        with(|c| {
            c.outages.call_drops = Some(CallDrops {
                redial_min: Duration::from_secs(61),
                ..DROPS
            })
        }),
        "outages.call_drops.redial_min",
        "61s",
    );
}

#[test]
fn edge_values_are_accepted() {
    let ok = [
        with(|c| c.rate_bps = 1),
        with(|c| c.rate_bps = u64::MAX),
        with(|c| c.buffer_bytes = 1),
        with(|c| c.ber = 0.0),
        with(|c| c.ber = 0.999_999),
        with(|c| {
            c.shaper = Some(ShaperConfig {
                ceiling_bps: 8_000_000,
                burst_bytes: 1,
                ..SHAPER
            })
        }),
        with(|c| {
            c.outages.call_drops = Some(CallDrops {
                redial_min: Duration::ZERO,
                redial_max: Duration::ZERO,
                ..DROPS
            })
        }),
    ];
    for config in ok {
        assert_eq!(config.validate(), Ok(()), "{config:?}");
    }
}

#[test]
fn outage_process_validates_its_config() {
    let mut c = ChannelConfig::new(1);
    c.outages.call_drops = Some(CallDrops {
        mean_interval: Duration::ZERO,
        ..DROPS
    });
    assert!(matches!(
        OutageProcess::new(&c.outages, 0),
        Err(ConfigError::OutOfRange { .. })
    ));
}
