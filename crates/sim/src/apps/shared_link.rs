//! The ideal a many-user workload is judged against: the same requests
//! (the same arrival times and sizes) served by a link shared perfectly at
//! its limit: every file in progress gets an equal share of the limit at
//! every instant (processor sharing, as fluid), no handshake, no header,
//! no loss. No protocol can beat its mean download time on that link;
//! how far one stays above it is what the protocol, and the order it
//! serves its connections in, cost.

/// The mean time from request to last byte of `requests` (arrival in
/// seconds, size in bytes, in any order) on a link of `capacity_bps`
/// shared perfectly; `None` without requests or capacity.
pub fn mean_download_s(requests: &[(f64, u64)], capacity_bps: f64) -> Option<f64> {
    if requests.is_empty() || capacity_bps <= 0.0 || !capacity_bps.is_finite() {
        return None;
    }
    let mut arrivals: Vec<(f64, f64)> = requests
        .iter()
        .map(|&(at, bytes)| (at, bytes as f64 * 8.0))
        .collect();
    arrivals.sort_by(|a, b| a.0.total_cmp(&b.0));
    // Files in progress: (arrival, bits left).
    let mut active: Vec<(f64, f64)> = Vec::new();
    let mut now = 0.0;
    let mut total = 0.0;
    let mut next = 0;
    while next < arrivals.len() || !active.is_empty() {
        let share = capacity_bps / active.len().max(1) as f64;
        let first_done = active.iter().map(|a| a.1).fold(f64::INFINITY, f64::min) / share;
        let next_arrival = arrivals.get(next).map_or(f64::INFINITY, |a| a.0 - now);
        let step = first_done.min(next_arrival).max(0.0);
        for file in &mut active {
            file.1 -= step * share;
        }
        now += step;
        // Done within a bit's rounding.
        active.retain(|&(arrival, left)| {
            let done = left <= 1e-6;
            if done {
                total += now - arrival;
            }
            !done
        });
        while next < arrivals.len() && arrivals[next].0 <= now {
            active.push(arrivals[next]);
            next += 1;
        }
    }
    Some(total / requests.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_takes_its_size_at_the_capacity_and_two_share_it() {
        assert_eq!(mean_download_s(&[(5.0, 1000)], 8000.0), Some(1.0));
        // Two at once: both finish after 2 s.
        assert_eq!(mean_download_s(&[(0.0, 1000), (0.0, 1000)], 8000.0), Some(2.0));
        // The second arrives halfway through the first: the first has 500
        // bytes left, which take 1 s at half the link, then the second's
        // remaining 500 bytes take 0.5 s alone: 1.5 s and 1.5 s.
        let mean = mean_download_s(&[(0.0, 1000), (0.5, 1000)], 8000.0).unwrap();
        assert!((mean - 1.5).abs() < 1e-9, "{mean}");
        assert_eq!(mean_download_s(&[], 8000.0), None);
    }
}
