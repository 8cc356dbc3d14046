//! The resident memory of this process, for the examples that measure it.

/// A field of /proc/self/status (`VmRSS:`, `VmHWM:`), in MB.
pub fn status_mb(field: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with(field))
        .unwrap_or_else(|| panic!("no {field} in /proc/self/status"));
    let kb: f64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb / 1000.0
}
