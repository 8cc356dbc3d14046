//! A channel's loss: the share of the bytes given to it that did not
//! arrive, over its recent answers, weighted by what each answer covers.

/// Weight of a new sample's bytes against what the meter held.
const GAIN: f64 = 0.25;

/// How many standard errors of its measure a loss is taken to be less
/// than measured when a channel is judged by it.
const DOUBT: f64 = 2.0;

/// Bytes given and lost, each smoothed over the samples (one per answered
/// probe): their ratio is the loss. Smoothing both rather than each
/// sample's ratio weighs a sample by what it covered (an interval in
/// which the channel was given a probe and nothing else says little), and
/// the first sample is the measure, not a quarter of it: an average that
/// starts at zero takes eight samples to show nine tenths of a loss, and
/// on a 2400 bit/s circuit probed every 20 s that is nearly three minutes
/// of a call fed to a marginal circuit.
#[derive(Debug, Clone, Copy, Default)]
pub struct LossMeter {
    given: f64,
    lost: f64,
    /// Datagrams the samples since the meter was fresh covered: how much
    /// its share is worth.
    datagrams: u64,
}

impl LossMeter {
    /// A sample: `given` bytes (in `datagrams` datagrams) were given to the
    /// channel between two answered probes, and `arrived` of them arrived.
    pub fn sample(&mut self, given: u64, arrived: u64, datagrams: u64) {
        let given = given as f64;
        let lost = (given - arrived as f64).clamp(0.0, given);
        self.given = self.given * (1.0 - GAIN) + given * GAIN;
        self.lost = self.lost * (1.0 - GAIN) + lost * GAIN;
        self.datagrams += datagrams;
    }

    /// The share lost, 0 before any sample.
    pub fn share(&self) -> f64 {
        if self.given > 0.0 {
            self.lost / self.given
        } else {
            0.0
        }
    }

    /// The least the share may be, given how many datagrams it is
    /// measured on: the share less twice its standard error as the share
    /// of that many datagrams lost each by chance (a binomial's). Four of
    /// eight datagrams lost are sure of 0.15, one of eight of nothing, a
    /// tenth of a thousand of 0.08.
    pub fn least_share(&self) -> f64 {
        if self.datagrams == 0 {
            return 0.0;
        }
        let share = self.share();
        let error = (share * (1.0 - share) / self.datagrams as f64).sqrt();
        (share - DOUBT * error).max(0.0)
    }

    /// Datagrams its samples covered since it was fresh.
    #[cfg(test)]
    fn datagrams(&self) -> u64 {
        self.datagrams
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_sample_is_the_measure() {
        let mut meter = LossMeter::default();
        assert_eq!(meter.share(), 0.0);
        meter.sample(10_000, 9_000, 70);
        assert!((meter.share() - 0.1).abs() < 1e-12, "{}", meter.share());
        assert_eq!(meter.datagrams(), 70);
    }

    #[test]
    fn a_sample_weighs_by_the_bytes_it_covers() {
        let mut meter = LossMeter::default();
        meter.sample(10_000, 10_000, 70);
        // A lone probe lost weighs as its 16 bytes against the 10,000
        // before (a ratio of shares would have taken a quarter lost).
        meter.sample(16, 0, 1);
        assert!(meter.share() < 0.003, "{}", meter.share());
        // A loss that lasts comes to dominate.
        for _ in 0..16 {
            meter.sample(10_000, 7_000, 70);
        }
        assert!((meter.share() - 0.3).abs() < 0.01, "{}", meter.share());
        assert_eq!(meter.datagrams(), 70 + 1 + 16 * 70);
    }

    #[test]
    fn a_loss_is_taken_for_sure_only_on_enough_datagrams() {
        let least = |given: u64, arrived: u64, datagrams: u64| {
            let mut meter = LossMeter::default();
            meter.sample(given, arrived, datagrams);
            meter.least_share()
        };
        assert_eq!(LossMeter::default().least_share(), 0.0);
        // One of eight lost: could be a clean channel's chance loss.
        assert_eq!(least(800, 700, 8), 0.0);
        // Four of eight: more than a tenth.
        assert!((least(800, 400, 8) - 0.146).abs() < 0.001);
        // A tenth of a thousand: not sure of a tenth.
        let tenth = least(100_000, 90_000, 1000);
        assert!(tenth > 0.08 && tenth < 0.1, "{tenth}");
        // Nothing lost is nothing, however few.
        assert_eq!(least(100, 100, 1), 0.0);
    }

    #[test]
    fn more_arrived_than_given_is_no_negative_loss() {
        let mut meter = LossMeter::default();
        meter.sample(100, 200, 1);
        assert_eq!(meter.share(), 0.0);
    }
}
