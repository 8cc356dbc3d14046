//! SYN cookies (RFC 4987 section 3.6): once a listener's backlog is full,
//! a SYN is answered without keeping anything, the state the connection
//! needs folded into our initial sequence number (and, when the peer uses
//! timestamps, into the low bits of our timestamp), and rebuilt from the
//! ACK that completes the handshake. A flood of SYNs from spoofed
//! addresses then neither stops new connections nor grows memory (issue
//! 12 defect 1).
//!
//! The cookie, 32 bits: a counter of 64-second periods (5 bits), the index
//! of the MSS in a table (3 bits), and 24 bits of a keyed hash of the
//! 4-tuple, the peer's initial sequence number and the counter. It is
//! good for the period it was made in and the next.
//!
//! What is lost: without timestamps, window scaling and SACK (our SYN-ACK
//! then offers neither, as Linux's does); always, the SCPS capabilities
//! and header compression (the connection is plain TCP) and an MSS other
//! than one of the table's.

use std::time::Duration;

use crate::connection::{FourTuple, timestamp_clock};
use crate::time::Instant;

/// How long a cookie's counter value lasts.
pub(super) const PERIOD: Duration = Duration::from_secs(64);

/// The MSS values a cookie can carry: the common ones of IPv4 and IPv6
/// paths, largest last.
const MSS_TABLE: [u16; 8] = [536, 1220, 1300, 1380, 1400, 1440, 1460, 8960];

/// Low bits of our timestamp that carry the peer's window scale (4 bits,
/// 15 for none) and SACK-permitted (1 bit).
pub(super) const TS_BITS: u32 = 0x1f;
const NO_WINDOW_SCALE: u32 = 0xf;

fn counter(now: Instant) -> u32 {
    (now.as_nanos() / PERIOD.as_nanos() as u64) as u32 & 0x1f
}

fn mac(secret: u64, tuple: &FourTuple, peer_isn: u32, counter: u32) -> u32 {
    let key = super::tuple_hash(secret ^ (u64::from(counter) << 32 | u64::from(peer_isn)), tuple);
    (key ^ (key >> 32)) as u32 & 0x00ff_ffff
}

/// The cookie answering a SYN with `peer_isn` that offered `peer_mss`,
/// and the MSS it carries (the table's largest not above `peer_mss`).
pub(super) fn make(secret: u64, tuple: &FourTuple, peer_isn: u32, peer_mss: u16, now: Instant) -> (u32, u16) {
    let index = MSS_TABLE.iter().rposition(|&mss| mss <= peer_mss).unwrap_or(0);
    let counter = counter(now);
    let cookie = counter << 27 | (index as u32) << 24 | mac(secret, tuple, peer_isn, counter);
    (cookie, MSS_TABLE[index])
}

/// The MSS of a valid cookie, made for this 4-tuple and `peer_isn` in
/// this period or the last; `None` otherwise.
pub(super) fn check(secret: u64, tuple: &FourTuple, peer_isn: u32, cookie: u32, now: Instant) -> Option<u16> {
    let made_in = cookie >> 27;
    let current = counter(now);
    if made_in != current && made_in != current.wrapping_sub(1) & 0x1f {
        return None;
    }
    if cookie & 0x00ff_ffff != mac(secret, tuple, peer_isn, made_in) {
        return None;
    }
    Some(MSS_TABLE[(cookie >> 24 & 7) as usize])
}

/// The timestamp bits for the peer's window scale and SACK-permitted.
pub(super) fn options_bits(window_scale: Option<u8>, sack_permitted: bool) -> u32 {
    let scale = window_scale.map_or(NO_WINDOW_SCALE, |s| u32::from(s.min(14)));
    scale | u32::from(sack_permitted) << 4
}

/// The peer's window scale and SACK-permitted from the timestamp it
/// echoed.
pub(super) fn decode_options_bits(tsecr: u32) -> (Option<u8>, bool) {
    let scale = tsecr & NO_WINDOW_SCALE;
    let window_scale = (scale != NO_WINDOW_SCALE).then_some(scale as u8);
    (window_scale, tsecr >> 4 & 1 == 1)
}

/// A timestamp offset that makes our timestamp clock
/// ([`timestamp_clock`]) read, at `now`, a value whose low bits are `bits` and which
/// is no later than the clock itself, so later timestamps do not run
/// backwards (RFC 7323 5.4).
pub(super) fn offset_carrying(offset: u32, now: Instant, bits: u32) -> u32 {
    let clock = timestamp_clock(now, offset);
    let mut carrying = clock & !TS_BITS | bits;
    if carrying > clock {
        carrying = carrying.wrapping_sub(TS_BITS + 1);
    }
    offset.wrapping_sub(clock.wrapping_sub(carrying))
}

/// When our cookie SYN-ACK left, from the timestamp the peer echoed.
pub(super) fn sent_at(now: Instant, ts_offset: u32, tsecr: u32) -> Instant {
    let clock = timestamp_clock(now, ts_offset);
    let ago = clock.wrapping_sub(tsecr);
    Instant::from_nanos(now.as_nanos().saturating_sub(u64::from(ago) * 1_000_000))
}

#[cfg(test)]
mod tests {
    use std::net::SocketAddr;

    use super::*;

    fn tuple(remote_port: u16) -> FourTuple {
        FourTuple {
            local: SocketAddr::from(([192, 0, 2, 1], 5001)),
            remote: SocketAddr::from(([198, 51, 100, 7], remote_port)),
        }
    }

    const SECRET: u64 = 0x1234_5678_9abc_def0;

    fn at(secs: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(secs)
    }

    #[test]
    fn a_cookie_is_good_for_its_tuple_and_isn_in_two_periods() {
        let (cookie, mss) = make(SECRET, &tuple(40000), 77, 1460, at(1000));
        assert_eq!(mss, 1460);
        assert_eq!(check(SECRET, &tuple(40000), 77, cookie, at(1000)), Some(1460));
        assert_eq!(
            check(SECRET, &tuple(40000), 77, cookie, at(1000 + 64)),
            Some(1460)
        );
        assert_eq!(
            check(SECRET, &tuple(40000), 77, cookie, at(1000 + 200)),
            None,
            "stale"
        );
        assert_eq!(
            check(SECRET, &tuple(40001), 77, cookie, at(1000)),
            None,
            "another tuple"
        );
        assert_eq!(
            check(SECRET, &tuple(40000), 78, cookie, at(1000)),
            None,
            "another ISN"
        );
        assert_eq!(
            check(!SECRET, &tuple(40000), 77, cookie, at(1000)),
            None,
            "another key"
        );
        assert_eq!(check(SECRET, &tuple(40000), 77, cookie ^ 1, at(1000)), None);
    }

    #[test]
    fn the_mss_is_the_tables_largest_not_above_the_peers() {
        for (peer, carried) in [(100, 536), (536, 536), (1419, 1400), (1460, 1460), (9000, 8960)] {
            let (cookie, mss) = make(SECRET, &tuple(1), 0, peer, at(5));
            assert_eq!(mss, carried, "peer MSS {peer}");
            assert_eq!(check(SECRET, &tuple(1), 0, cookie, at(5)), Some(carried));
        }
    }

    #[test]
    fn options_ride_in_the_timestamp_without_turning_it_back() {
        for (scale, sack) in [(Some(7), true), (None, false), (Some(0), false), (Some(14), true)] {
            let bits = options_bits(scale, sack);
            let now = at(12_345);
            let offset = offset_carrying(0xdead_beef, now, bits);
            let clock = |offset: u32| timestamp_clock(now, offset);
            assert_eq!(clock(offset) & TS_BITS, bits);
            let behind = clock(0xdead_beef).wrapping_sub(clock(offset));
            assert!(behind <= TS_BITS, "at most 31 ms behind: {behind}");
            assert_eq!(decode_options_bits(clock(offset)), (scale, sack));
            let later = now + Duration::from_millis(300);
            let expected = Instant::from_nanos(now.as_nanos() - u64::from(behind) * 1_000_000);
            assert_eq!(sent_at(later, 0xdead_beef, clock(offset)), expected);
        }
    }
}
