//! Typing into an interactive program and waiting for what it echoes:
//! its output read in a thread of its own, so that a wait can time out.
//! Used by the applications' tests and by the keystroke-echo benchmark
//! (crates/cli/examples/keystroke_echo.rs).

use std::io::{Read, Write};
use std::time::{Duration, Instant};

/// What a program writes, read in a thread of its own so that waiting for
/// something in it can time out.
pub struct Reader(std::sync::mpsc::Receiver<Vec<u8>>);

impl Reader {
    pub fn new(mut from: impl Read + Send + 'static) -> Reader {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = from.read(&mut buf) {
                if n == 0 || sender.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Reader(receiver)
    }

    /// Reads until `needle` has come `times` times, within `timeout`;
    /// what it read.
    pub fn until(&self, needle: &[u8], times: usize, timeout: Duration) -> Vec<u8> {
        let deadline = Instant::now() + timeout;
        let mut seen = Vec::new();
        while seen.windows(needle.len()).filter(|w| *w == needle).count() < times {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.0.recv_timeout(left) {
                Ok(chunk) => seen.extend_from_slice(&chunk),
                Err(err) => panic!(
                    "{:?} did not come {times} times ({err}); read {:?}",
                    String::from_utf8_lossy(needle),
                    String::from_utf8_lossy(&seen)
                ),
            }
        }
        seen
    }
}

/// Types `keys` one at a time into `input`, waiting for each to come back
/// on `output` before the next: the echo time of each.
pub fn keystroke_echoes(input: &mut impl Write, output: &Reader, keys: &[u8]) -> Vec<Duration> {
    keys.iter()
        .map(|&key| {
            let sent = Instant::now();
            input.write_all(&[key]).unwrap();
            input.flush().unwrap();
            output.until(&[key], 1, Duration::from_secs(30));
            sent.elapsed()
        })
        .collect()
}
