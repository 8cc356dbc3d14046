//! Proportional Rate Reduction (RFC 6937): how much may be sent during a
//! fast recovery that cut the congestion window.
//!
//! RFC 6675 alone lets the sender fill `cwnd - pipe` at once. When a
//! recovery begins with a window far above what the path holds (slow start
//! that overran a deep buffer), marking losses empties the pipe, and the
//! sender refills a still full queue at twice its drain rate: half of what
//! it sends is dropped again. PRR instead paces the recovery by what the
//! ACKs report delivered, spread so that the flight comes down to
//! `ssthresh` by the end of the recovery.

/// The PRR state of one recovery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Prr {
    /// RecoverFS: the flight size when the recovery began, bytes.
    recover_fs: u64,
    /// prr_delivered: bytes the receiver reported delivered since.
    delivered: u64,
    /// prr_out: bytes sent since.
    out: u64,
    /// DeliveredData of the latest ACK.
    last_delivered: u64,
}

impl Prr {
    pub(crate) fn start(flight_size: u64) -> Prr {
        Prr {
            recover_fs: flight_size.max(1),
            delivered: 0,
            out: 0,
            last_delivered: 0,
        }
    }

    /// An ACK reported `bytes` newly delivered (cumulatively or by SACK).
    pub(crate) fn on_delivered(&mut self, bytes: u64) {
        self.delivered += bytes;
        self.last_delivered = bytes;
    }

    pub(crate) fn on_sent(&mut self, bytes: u64) {
        self.out += bytes;
    }

    /// Bytes that may be sent now (RFC 6937 section 3.1, with the
    /// slow-start reduction bound once the pipe is below `ssthresh`).
    pub(crate) fn allowance(&self, pipe: u64, ssthresh: u64, smss: u64) -> u64 {
        if pipe > ssthresh {
            let target =
                (u128::from(self.delivered) * u128::from(ssthresh)).div_ceil(u128::from(self.recover_fs));
            u64::try_from(target).unwrap_or(u64::MAX).saturating_sub(self.out)
        } else {
            let limit = self.delivered.saturating_sub(self.out).max(self.last_delivered) + smss;
            (ssthresh - pipe).min(limit)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    #[test]
    fn above_ssthresh_sends_in_proportion_to_deliveries() {
        // A flight of 100 segments, cut to 70.
        let mut prr = Prr::start(100 * MSS);
        let ssthresh = 70 * MSS;
        assert_eq!(prr.allowance(90 * MSS, ssthresh, MSS), 0, "nothing delivered yet");
        prr.on_delivered(10 * MSS);
        assert_eq!(prr.allowance(80 * MSS, ssthresh, MSS), 7 * MSS);
        prr.on_sent(7 * MSS);
        assert_eq!(prr.allowance(87 * MSS, ssthresh, MSS), 0);
        prr.on_delivered(MSS);
        assert_eq!(
            prr.allowance(86 * MSS, ssthresh, MSS),
            700,
            "rounded up: 7.7 segments in all"
        );
    }

    #[test]
    fn below_ssthresh_grows_back_no_faster_than_slow_start() {
        let mut prr = Prr::start(100 * MSS);
        let ssthresh = 70 * MSS;
        prr.on_delivered(2 * MSS);
        assert_eq!(
            prr.allowance(10 * MSS, ssthresh, MSS),
            3 * MSS,
            "what was delivered and one more, not the 60 segments below ssthresh"
        );
        prr.on_sent(3 * MSS);
        assert_eq!(
            prr.allowance(13 * MSS, ssthresh, MSS),
            3 * MSS,
            "the latest ACK's delivery and one"
        );
        assert_eq!(
            prr.allowance(69 * MSS + 500, ssthresh, MSS),
            500,
            "never above ssthresh"
        );
    }
}
