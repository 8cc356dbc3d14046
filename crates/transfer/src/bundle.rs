//! Our stack on a bundle of UDP channels: opening the bundle with the
//! engine's configuration sized for it, and each channel's figures for a
//! report.

use anyhow::bail;
use scps_config::Direction;
use scps_config::bundle::Bundle;
use scps_config::stack::RealStack;
use scps_net::{BundleMonitor, BundlePath};
use scps_workload::report::BundleChannelFigures;

use crate::engine::EngineOptions;
use crate::transport::Encapsulation;
use crate::udp_size::{udp_inner_limit, udp_overhead};

/// Opens the bundle the engine's configuration names (its channels, else
/// `[bundle]`), and the engine's configuration for it: packets that every
/// channel carries in one datagram, a route rate charged the channels'
/// framing.
pub fn open_bundle(
    engine: &EngineOptions,
    direction: Direction,
    hook: Option<String>,
) -> anyhow::Result<(BundlePath, BundleMonitor, RealStack)> {
    // The channels are known once the configuration is read; the packet
    // size depends on them, so it is read twice (cheap, and the second
    // reading is the one that counts).
    let probe = engine.resolve(direction, 1500)?;
    let Some(bundle) = probe.bundle else {
        bail!("--bundle runs our stack on the channels of --config's [bundle]: the file has none");
    };
    let overhead = udp_overhead(bundle.channels[0].peer, Encapsulation::Scps);
    let limit = bundle
        .channels
        .iter()
        .map(|c| udp_inner_limit(Some(c.peer), overhead))
        .min()
        .unwrap_or(1500 - overhead);
    let mut resolved = engine.resolve(direction, limit.min(1500 - overhead))?;
    if resolved.config.mtu > limit {
        bail!(
            "link.mtu = {}: the bundle's channels carry packets of at most {limit} bytes inside their {overhead} \
             bytes of encapsulation",
            resolved.config.mtu
        );
    }
    resolved.config.rate_framing_bytes += u32::from(overhead);
    let hook = hook.or_else(|| bundle.hook.clone());
    let monitor = BundleMonitor::default();
    let path = scps_net::open_bundle(&Bundle { hook, ..bundle }, monitor.clone())?;
    Ok((path, monitor, resolved))
}

/// Each channel of a bundle as it is now, for a report.
pub fn bundle_figures(monitor: &BundleMonitor) -> Vec<BundleChannelFigures> {
    let report = monitor.report();
    report
        .channels
        .iter()
        .zip(&report.addrs)
        .enumerate()
        .map(|(index, (channel, (local, peer)))| BundleChannelFigures {
            local: local.to_string(),
            peer: peer.to_string(),
            state: channel.state.name().to_owned(),
            sent_bytes: channel.sent_bytes,
            received_bytes: channel.received_bytes,
            rtt_s: channel.srtt.map(|rtt| rtt.as_secs_f64()),
            loss: channel.loss,
            rate_bps: channel.rate_bps,
            changes: report.events.iter().filter(|e| e.channel == index).count() as u64,
        })
        .collect()
}
