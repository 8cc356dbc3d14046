//! Several parallel circuits between the same two sides, striped
//! round-robin like Linux `teql`.
//!
//! A packet goes to the next channel in turn that is up at `now`
//! (so a dropped circuit is skipped while it redials). If none is up, the
//! next channel in turn takes it and it is lost there as an outage, at
//! once and without occupying that line: like teql with every slave down,
//! there is nowhere to send it. Either way the turn moves past the channel
//! used.

use std::time::Duration;

use crate::channel::{Channel, Fate};
use crate::config::{ChannelConfig, ConfigError};

/// Parallel channels with round-robin striping over those that are up.
#[derive(Debug, Clone)]
pub struct Bundle {
    channels: Vec<Channel>,
    next: usize,
}

/// A seed for one purpose within a run, so that each random process of a
/// run depends on the run's seed and nothing else. The simulator and the
/// emulator derive a link's bundles from their seed with it alike
/// (purposes 1 and 2 for the forward and return channels, 3 for the
/// circuits' call drops), so that both worlds run with one seed drop the
/// same calls at the same times from their start.
pub fn derive_seed(seed: u64, purpose: u64) -> u64 {
    let mut z = seed ^ purpose.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Seed of channel `index` of a bundle built with `bundle_seed`
/// (SplitMix64 of the pair), so channels are independent yet reproducible.
pub fn channel_seed(bundle_seed: u64, index: usize) -> u64 {
    let mut z = bundle_seed.wrapping_add((index as u64).wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Bundle {
    /// Each channel as a bundle of its own, as it is (the draws it has
    /// made and will make unchanged): the circuits of a link that a
    /// bonding layer stripes itself.
    pub fn into_channels(self) -> Vec<Bundle> {
        self.channels
            .into_iter()
            .map(|channel| Bundle {
                channels: vec![channel],
                next: 0,
            })
            .collect()
    }

    /// Builds one channel per config, channel `i` seeded with
    /// [`channel_seed`]`(seed, i)`. The error names the offending channel.
    pub fn new(configs: Vec<ChannelConfig>, seed: u64) -> Result<Bundle, ConfigError> {
        Bundle::with_outage_seed(configs, seed, seed)
    }

    /// Like [`Bundle::new`], with the call drops of channel `i` from
    /// [`channel_seed`]`(outage_seed, i)` (see [`Channel::with_outage_seed`]):
    /// the forward and return bundles of one link share `outage_seed`.
    pub fn with_outage_seed(
        configs: Vec<ChannelConfig>,
        seed: u64,
        outage_seed: u64,
    ) -> Result<Bundle, ConfigError> {
        if configs.is_empty() {
            return Err(ConfigError::EmptyBundle);
        }
        let channels = configs
            .into_iter()
            .enumerate()
            .map(|(index, config)| {
                Channel::with_outage_seed(
                    config,
                    channel_seed(seed, index),
                    channel_seed(outage_seed, index),
                )
                .map_err(|e| ConfigError::BundleChannel {
                    index,
                    source: Box::new(e),
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Bundle { channels, next: 0 })
    }

    /// Sends `packet` on the next channel in turn that is up at `now`;
    /// returns the index of the channel used and the packet's fate.
    pub fn transmit(&mut self, now: Duration, packet: &mut [u8]) -> (usize, Fate) {
        let n = self.channels.len();
        let up = (0..n)
            .map(|k| (self.next + k) % n)
            .find(|&i| self.channels[i].is_up(now));
        let (index, fate) = match up {
            Some(i) => (i, self.channels[i].transmit(now, packet)),
            None => {
                let i = self.next % n;
                let len = u64::try_from(packet.len()).unwrap_or(u64::MAX);
                (i, self.channels[i].refuse_down(len))
            }
        };
        self.next = (index + 1) % n;
        (index, fate)
    }

    /// Whether at least one channel is up at `now`.
    pub fn is_up(&mut self, now: Duration) -> bool {
        self.channels.iter_mut().any(|c| c.is_up(now))
    }

    /// The channels, in striping order.
    pub fn channels(&self) -> &[Channel] {
        &self.channels
    }

    /// Mutable access, e.g. for `is_up` or `next_change` of one channel.
    pub fn channels_mut(&mut self) -> &mut [Channel] {
        &mut self.channels
    }
}
