//! The places for clients still in a handshake before anything is relayed
//! for them (a SOCKS5 greeting, authentication and request). They are
//! kept apart from the split connections' places (`counters.rs`): a
//! handshake holds no relay buffer yet, and a host that opens many and
//! finishes none must not fill the places real connections need. Each
//! source has a share of its own and all of them a total; a handshake
//! beyond either is refused at once, and every handshake has a deadline
//! (`relay.handshake_timeout`), so a place is held only that long.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a client may take over its handshake, by default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes under way at once, by default: from all sources, and from
/// any one.
pub const DEFAULT_TOTAL: usize = 512;
pub const DEFAULT_PER_SOURCE: usize = 32;

/// The limits on handshakes under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HandshakeLimits {
    pub timeout: Duration,
    pub total: usize,
    pub per_source: usize,
}

impl Default for HandshakeLimits {
    fn default() -> HandshakeLimits {
        HandshakeLimits {
            timeout: DEFAULT_TIMEOUT,
            total: DEFAULT_TOTAL,
            per_source: DEFAULT_PER_SOURCE,
        }
    }
}

/// Why a handshake was not begun.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// Its source holds its whole share.
    Source,
    /// All the places are held.
    Total,
}

/// The handshakes under way, by source.
#[derive(Debug)]
pub struct Handshakes {
    limits: HandshakeLimits,
    held: Mutex<Held>,
}

#[derive(Debug, Default)]
struct Held {
    total: usize,
    by_source: HashMap<IpAddr, usize>,
}

/// One handshake's place; given back when dropped.
#[derive(Debug)]
pub struct HandshakePlace {
    handshakes: Arc<Handshakes>,
    source: IpAddr,
}

impl Handshakes {
    pub fn new(limits: HandshakeLimits) -> Arc<Handshakes> {
        Arc::new(Handshakes {
            limits,
            held: Mutex::new(Held::default()),
        })
    }

    pub fn limits(&self) -> HandshakeLimits {
        self.limits
    }

    /// A place for a handshake from `source`, or why there is none.
    pub fn begin(self: &Arc<Self>, source: IpAddr) -> Result<HandshakePlace, Full> {
        let mut held = self.lock();
        let of_source = held.by_source.get(&source).copied().unwrap_or(0);
        if of_source >= self.limits.per_source {
            return Err(Full::Source);
        }
        if held.total >= self.limits.total {
            return Err(Full::Total);
        }
        held.total += 1;
        held.by_source.insert(source, of_source + 1);
        Ok(HandshakePlace {
            handshakes: self.clone(),
            source,
        })
    }

    /// Handshakes under way now.
    pub fn under_way(&self) -> usize {
        self.lock().total
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Drop for HandshakePlace {
    fn drop(&mut self) {
        let mut held = self.handshakes.lock();
        held.total -= 1;
        if let Some(count) = held.by_source.get_mut(&self.source) {
            *count -= 1;
            if *count == 0 {
                // Forgotten, so that the map holds only sources with a
                // handshake under way.
                held.by_source.remove(&self.source);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per_source: usize) -> HandshakeLimits {
        HandshakeLimits {
            timeout: DEFAULT_TIMEOUT,
            total,
            per_source,
        }
    }

    #[test]
    fn a_source_over_its_share_is_refused_while_others_still_begin() {
        let handshakes = Handshakes::new(limits(4, 2));
        let greedy: IpAddr = "10.0.0.9".parse().unwrap();
        let other: IpAddr = "10.0.0.1".parse().unwrap();
        let first = handshakes.begin(greedy).unwrap();
        let _second = handshakes.begin(greedy).unwrap();
        assert_eq!(handshakes.begin(greedy).unwrap_err(), Full::Source);
        let _third = handshakes.begin(other).unwrap();
        let _fourth = handshakes.begin(other).unwrap();
        let third_source: IpAddr = "10.0.0.2".parse().unwrap();
        assert_eq!(handshakes.begin(third_source).unwrap_err(), Full::Total);
        drop(first);
        assert_eq!(handshakes.under_way(), 3);
        assert!(
            handshakes.begin(third_source).is_ok(),
            "a place given back is taken"
        );
    }

    #[test]
    fn places_given_back_leave_no_trace_of_their_source() {
        let handshakes = Handshakes::new(limits(8, 8));
        let places: Vec<_> = (1..=5u8)
            .map(|i| handshakes.begin(IpAddr::from([10, 0, 0, i])).unwrap())
            .collect();
        drop(places);
        assert_eq!(handshakes.under_way(), 0);
        assert!(handshakes.lock().by_source.is_empty());
    }
}
