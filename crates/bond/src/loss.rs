//! A channel's loss: the share of the bytes given to it that did not
//! arrive, over its recent answers.

/// Weight of a new sample against what the meter held.
const GAIN: f64 = 0.25;

/// How many standard errors of its measure a loss is taken to be less
/// than measured when a channel is judged by it.
const DOUBT: f64 = 2.0;

/// How many datagrams' worth of evidence one sample (one answer's
/// interval) counts for at most. Losses come in bursts (a queue that
/// overflows, a fade), and a burst within one interval is one event, not
/// many: on a bundle over loopback, a burst of socket-buffer drops (15% of
/// a busy interval's datagrams, each datagram counted) put a clean channel
/// on standby. A marginal circuit losing half of what it is given is
/// still sure of a tenth after two answers (0.25), one losing a fifth
/// after eight.
const DATAGRAMS_PER_SAMPLE: u64 = 8;

/// Each answer's share of bytes lost, smoothed, and the weight of the
/// samples so far: their ratio is the loss, so that the first sample is
/// the measure, not a quarter of it (an average that starts at zero takes
/// eight samples to show nine tenths of a loss, and on a 2400 bit/s
/// circuit probed every 20 s that is nearly three minutes of a call fed
/// to a marginal circuit). Each answer weighs alike, however many bytes it
/// covers: weighed by bytes, the answer after a short silence (all that
/// was given into it lost, over a longer interval than the others) came
/// to a third of the measure at once, and a channel back from 0.3 s of
/// silence went on standby.
#[derive(Debug, Clone, Copy, Default)]
pub struct LossMeter {
    shares: f64,
    weight: f64,
    /// Datagrams the samples since the meter was fresh covered, and how
    /// many samples: how much its share is worth.
    datagrams: u64,
    samples: u64,
}

impl LossMeter {
    /// A sample: `given` bytes (in `datagrams` datagrams) were given to the
    /// channel between two answered probes, and `arrived` of them arrived.
    pub fn sample(&mut self, given: u64, arrived: u64, datagrams: u64) {
        if given == 0 {
            return;
        }
        let share = (1.0 - arrived as f64 / given as f64).clamp(0.0, 1.0);
        self.shares = self.shares * (1.0 - GAIN) + share * GAIN;
        self.weight = self.weight * (1.0 - GAIN) + GAIN;
        self.datagrams += datagrams;
        self.samples += 1;
    }

    /// The share lost, 0 before any sample.
    pub fn share(&self) -> f64 {
        if self.weight > 0.0 {
            self.shares / self.weight
        } else {
            0.0
        }
    }

    /// The least the share may be, given how many datagrams it is
    /// measured on: the share less twice its standard error as the share
    /// of that many datagrams lost each by chance (a binomial's), counting
    /// at most [`DATAGRAMS_PER_SAMPLE`] of them a sample. Four of eight
    /// datagrams lost are sure of 0.15, one of eight of nothing, a tenth
    /// of a thousand over a hundred and twenty-five samples of 0.08.
    pub fn least_share(&self) -> f64 {
        if self.datagrams == 0 {
            return 0.0;
        }
        let share = self.share();
        let evidence = self.datagrams.min(self.samples * DATAGRAMS_PER_SAMPLE);
        let error = (share * (1.0 - share) / evidence as f64).sqrt();
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
    fn each_answer_weighs_alike_and_a_loss_that_lasts_dominates() {
        let mut meter = LossMeter::default();
        for _ in 0..8 {
            meter.sample(10_000, 10_000, 70);
        }
        // A short silence: all it was given lost, over a long interval.
        meter.sample(30_000, 20_000, 210);
        assert!((meter.share() - 0.333 * 0.25).abs() < 0.01, "{}", meter.share());
        for _ in 0..16 {
            meter.sample(10_000, 7_000, 70);
        }
        assert!((meter.share() - 0.3).abs() < 0.01, "{}", meter.share());
        assert_eq!(meter.datagrams(), 8 * 70 + 210 + 16 * 70);
        // An interval in which nothing was given is no sample.
        meter.sample(0, 0, 0);
        assert_eq!(meter.datagrams(), 8 * 70 + 210 + 16 * 70);
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
        // A burst: 15% of a thousand datagrams in one interval is one
        // event, as sure as 15% of eight.
        assert_eq!(least(100_000, 85_000, 1000), least(800, 680, 8));
        assert_eq!(least(100_000, 85_000, 1000), 0.0);
        // A tenth of a thousand over 125 intervals: not sure of a tenth.
        let mut meter = LossMeter::default();
        for _ in 0..125 {
            meter.sample(800, 720, 8);
        }
        let tenth = meter.least_share();
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
