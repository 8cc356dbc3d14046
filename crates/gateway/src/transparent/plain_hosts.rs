//! Destinations that answer only without the SCPS capabilities option.
//! Some hosts (older Windows stacks; docs/spec/scps-tp-options.md, "SCPS
//! capabilities, kind 20") reject a SYN that
//! carries kind 20, or never answer it: a link connection whose SYN with
//! the option gets no answer or a reset is opened again without it, and
//! the destination remembered for a while so that its next connections
//! go without it at once.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Destinations remembered at most: beyond it the one remembered longest
/// ago is forgotten (a flood of connections to new destinations cannot
/// grow the table).
const MOST: usize = 4096;

#[derive(Debug)]
pub struct PlainHosts {
    /// Each destination with when it is forgotten.
    until: Mutex<HashMap<IpAddr, Instant>>,
    remember_for: Duration,
}

impl PlainHosts {
    pub fn new(remember_for: Duration) -> PlainHosts {
        PlainHosts {
            until: Mutex::new(HashMap::new()),
            remember_for,
        }
    }

    /// Whether `host` answered only without the option, lately.
    pub fn is_plain(&self, host: IpAddr) -> bool {
        let mut until = self.until.lock().unwrap_or_else(PoisonError::into_inner);
        match until.get(&host) {
            Some(&at) if at > Instant::now() => true,
            Some(_) => {
                until.remove(&host);
                false
            }
            None => false,
        }
    }

    /// `host` answered without the option.
    pub fn remember(&self, host: IpAddr) {
        let now = Instant::now();
        let mut until = self.until.lock().unwrap_or_else(PoisonError::into_inner);
        if until.len() >= MOST && !until.contains_key(&host) {
            until.retain(|_, &mut at| at > now);
            if until.len() >= MOST
                && let Some(oldest) = until.iter().min_by_key(|(_, at)| **at).map(|(host, _)| *host)
            {
                until.remove(&oldest);
            }
        }
        until.insert(host, now + self.remember_for);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_is_remembered_for_a_while_and_the_table_stays_bounded() {
        let hosts = PlainHosts::new(Duration::from_secs(600));
        let host: IpAddr = "10.1.0.5".parse().unwrap();
        assert!(!hosts.is_plain(host));
        hosts.remember(host);
        assert!(hosts.is_plain(host));
        let forgotten = PlainHosts::new(Duration::ZERO);
        forgotten.remember(host);
        assert!(!forgotten.is_plain(host), "remembered for no time at all");
        for i in 0..(MOST as u32 + 100) {
            hosts.remember(IpAddr::from(i.to_be_bytes()));
        }
        assert_eq!(hosts.until.lock().unwrap().len(), MOST);
    }
}
