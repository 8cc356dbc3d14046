//! A bond's figures as reports print them: one shape for `scps sim
//! --json` and `scps emulate ctl stats`, so the two read alike.

use serde::{Deserialize, Serialize};

use crate::bond::{Bond, BondStats};
use crate::channel::ChannelState;

/// A bond's channels as it sees them now, and what it counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BondFigures {
    pub channels: Vec<BondChannelFigures>,
    /// State changes of all its channels since it started.
    pub state_changes: u64,
    /// Packets dropped because every channel and the bond's own queue
    /// were full.
    pub dropped_full: u64,
    /// Control frames that could not be read.
    pub bad_frames: u64,
    /// Answers that came by another channel than their probe left by.
    pub misrouted_answers: u64,
    /// Answers to no probe on its way (late, or duplicated).
    pub stale_answers: u64,
}

/// One channel of a bond.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BondChannelFigures {
    /// `up`, `down` or `standby`.
    pub state: ChannelState,
    /// Delivery rate as its probes measure it, bit/s.
    pub rate_bps: f64,
    /// Smoothed round trip of its probes; null before an answer.
    pub srtt_s: Option<f64>,
    /// Share of the bytes given to it that did not arrive.
    pub loss: f64,
    /// Bytes this bond put on it (data, probes, answers), and bytes that
    /// came to this bond by it.
    pub sent_bytes: u64,
    pub received_bytes: u64,
    /// State changes since the bond started; of them, the times it went
    /// down and on standby.
    pub changes: u64,
    pub down: u64,
    pub standby: u64,
}

impl BondFigures {
    pub fn of(bond: &Bond) -> BondFigures {
        let channels: Vec<BondChannelFigures> = bond
            .channels()
            .into_iter()
            .map(|c| BondChannelFigures {
                state: c.state,
                rate_bps: c.rate_bps,
                srtt_s: c.srtt.map(|d| d.as_secs_f64()),
                loss: c.loss,
                sent_bytes: c.sent_bytes,
                received_bytes: c.received_bytes,
                changes: c.changes,
                down: c.went_down,
                standby: c.went_standby,
            })
            .collect();
        // Whole, so that a counter added to `BondStats` is reported or
        // left out here on purpose.
        let BondStats {
            dropped_full,
            bad_frames,
            last_bad_frame: _,
            misrouted_answers,
            stale_answers,
        } = bond.stats().clone();
        BondFigures {
            state_changes: channels.iter().map(|c| c.changes).sum(),
            channels,
            dropped_full,
            bad_frames,
            misrouted_answers,
            stale_answers,
        }
    }
}
