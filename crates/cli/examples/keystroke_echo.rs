//! The keystroke echo time of an interactive ssh session, for the gateway
//! benchmarks (scripts/bench-gateway-apps.sh): logs in with the ssh
//! options given, makes the far terminal raw, and types keys one at a
//! time, each echoed back (by `dd`, a byte at a time) before the next.
//!
//!     keystroke_echo KEYS SSH_ARGUMENT...
//!
//! Prints the median, the 95th percentile and the largest echo time in
//! milliseconds, as `echo_ms median P50 p95 P95 max MAX keys N`.

#[path = "../tests/common/typing.rs"]
mod typing;

use std::process::{Command, Stdio};
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1);
    let keys: usize = args
        .next()
        .and_then(|k| k.parse().ok())
        .filter(|&k| (1..=1000).contains(&k))
        .expect("usage: keystroke_echo KEYS(1-1000) SSH_ARGUMENT...");
    let ssh: Vec<String> = args.collect();
    let remote = format!(
        "stty raw -echo; printf READY; exec dd bs=1 count={} status=none",
        keys + 1
    );
    let mut session = Command::new("ssh")
        .arg("-tt")
        .args(&ssh)
        .arg(remote)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("cannot run ssh");
    let mut input = session.stdin.take().expect("piped");
    let output = typing::Reader::new(session.stdout.take().expect("piped"));
    output.until(b"READY", 1, Duration::from_secs(60));
    // Letters in turn, so that each echo is told from the one before.
    let typed: Vec<u8> = (0..keys).map(|i| b'a' + (i % 26) as u8).collect();
    let mut echoes = typing::keystroke_echoes(&mut input, &output, &typed);
    std::io::Write::write_all(&mut input, b".").expect("the session ended early");
    let status = session.wait().expect("ssh");
    assert!(status.success(), "ssh: {status:?}");
    echoes.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    let at = |q: f64| ms(echoes[((echoes.len() - 1) as f64 * q).round() as usize]);
    println!(
        "echo_ms median {:.2} p95 {:.2} max {:.2} keys {keys}",
        at(0.5),
        at(0.95),
        ms(*echoes.last().expect("keys"))
    );
}
