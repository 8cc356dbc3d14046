//! A faulty SCPS peer on a real path: `scps send` told to answer SNACKs
//! as a broken SCPS-TP sender would (`tcp.snack_answer = "ignore"`, or
//! `"next-unit"`: the unit after the one named), across `scps emulate` at
//! 20 Mbit/s, 20 ms and BER 1e-5, to `scps recv`. The receiver names each
//! hole a few times at most and then leaves it to duplicate ACKs, so every
//! byte still arrives: both ends verify the 1 MB and agree on its digest.
//!
//! SACK is off at the sender, so SNACKs and duplicate ACKs are all the
//! receiver has to ask with.

mod common;

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::emulation::{Emulation, channel};
use scps_testbed::{Output as Io, Process};

const SCPS: &str = env!("CARGO_BIN_EXE_scps");

/// What is sent, as `--bytes` gives it and as the reports count it.
const BYTES: &str = "1MB";
const BYTES_COUNT: u64 = 1_000_000;

/// The emulated path: 20 Mbit/s each way, 20 ms round trip, BER 1e-5
/// (about one 1500-byte packet in nine lost).
const LINK: &str = "rate = \"20Mbit\"\nrtt = \"20ms\"\nber = 1e-5\n";

/// The sender's pace: `scps-rate` needs a route rate, and the link counts
/// the 1500-byte outer datagrams of our 1472-byte packets, so a little
/// under the line rate.
const PACE: &str = "tcp.rate=18Mbit";

/// The receiver's UDP address, in the server's namespace, and the port it
/// accepts connections on (`scps recv`'s default).
const RECV_UDP: &str = "10.99.2.2:7168";
const RECV_TO: &str = "10.99.2.2:5001";

/// How long each process may take before it is killed and the test fails.
/// A sender that answers SNACKs (`"resend"`) moves 1 MB in about half a
/// second on this link; the faulty ones, left to duplicate ACKs, took 2 to
/// 6 s on this 2-core machine. The limit is for a stall, not a figure.
const RECEIVER_LISTENS_WITHIN: Duration = Duration::from_secs(10);
const SENDER_LIMIT: Duration = Duration::from_secs(60);
const RECEIVER_LIMIT_AFTER_SENDER: Duration = Duration::from_secs(10);

/// A run's emulation: `LINK` as its `[link]` table and `seed` as its
/// seed (the bit errors).
fn emulation(name: &str, seed: u64) -> Emulation {
    Emulation::start(
        &format!("snack-interop-{name}"),
        &format!("seed = {seed}\n"),
        LINK,
        Io::Null,
    )
}

/// A running `scps send` or `scps recv`.
struct Scps {
    process: Process,
    name: String,
    stderr: PathBuf,
}

impl Scps {
    /// Starts `scps ARGS...` in `node` of `emulation`'s testbed, its
    /// standard output piped and its standard error written to
    /// `NAME.stderr` in the emulation's directory (to quote when it
    /// fails). It is killed at teardown if it still runs.
    fn spawn(emulation: &Emulation, node: &str, name: &str, args: &[&str]) -> Scps {
        let stderr = emulation.dir.path().join(format!("{name}.stderr"));
        // The shell only redirects standard error and becomes scps.
        let mut argv = vec!["-c", "exec \"$@\" 2>\"$0\"", stderr.to_str().unwrap(), SCPS];
        argv.extend(args);
        let process = emulation
            .testbed
            .node(node)
            .unwrap()
            .spawn("sh", &argv, Io::Piped)
            .unwrap();
        Scps {
            process,
            name: name.to_owned(),
            stderr,
        }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Waits (at most `limit`) until it says on its standard error that it
    /// listens; a receiver does once its socket is bound.
    fn wait_listening(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.stderr().contains("listening") {
            if let Some(status) = self.process.try_wait().unwrap() {
                panic!(
                    "{} exited ({status}) before listening; its stderr:\n{}",
                    self.name,
                    self.stderr()
                );
            }
            if Instant::now() >= deadline {
                let _ = self.process.kill();
                panic!(
                    "{} did not say it listens within {limit:?}: killed; its stderr:\n{}",
                    self.name,
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Waits (at most `limit`) for it to exit, killing it and failing if it
    /// does not (saying `progress()` of how far it got); its status and
    /// standard output.
    fn finish(&self, limit: Duration, progress: impl Fn() -> String) -> (ExitStatus, String) {
        let Some(status) = self.process.wait_timeout(limit).unwrap() else {
            let _ = self.process.kill();
            panic!(
                "{} did not exit within {limit:?}: killed; {}; its stderr:\n{}",
                self.name,
                progress(),
                self.stderr()
            );
        };
        (status, self.process.read_stdout().unwrap())
    }

    /// Its one JSON report, once it has exited successfully.
    fn report(&self, status: ExitStatus, stdout: &str) -> serde_json::Value {
        assert!(
            status.success(),
            "{} failed ({status}); stdout:\n{stdout}\nstderr:\n{}",
            self.name,
            self.stderr()
        );
        serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{} printed no single JSON object ({e}): {stdout}", self.name))
    }
}

/// How far a transfer got, as the link saw it: for a sender that did not
/// finish in time.
fn link_progress(stats: &serde_json::Value) -> String {
    match channel(stats, "forward") {
        Some(forward) => format!(
            "by then the link had carried {} packets forward ({} bytes) and lost {} to bit errors (1 MB is \
             about 700 packets)",
            forward["packets_out"], forward["bytes_out"], forward["dropped_bit_errors"]
        ),
        None => format!("the emulator's figures: {stats}"),
    }
}

/// The seed of the bytes and of the link's bit errors: `SCPS_SNACK_SEED`
/// to repeat a run, else a new one each run.
fn seed() -> u64 {
    match std::env::var("SCPS_SNACK_SEED") {
        Ok(seed) => seed.parse().expect("SCPS_SNACK_SEED is a number"),
        Err(_) => {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .subsec_nanos();
            u64::from(nanos % 1_000_000) + 1
        }
    }
}

/// Sends 1 MB from the client to `scps recv` at the server across the
/// lossy emulated link, the sender answering SNACKs as `answer` says;
/// asserts that every byte arrives, verified at both ends, and that the
/// link lost packets on the way.
fn faulty_sender_delivers_every_byte(answer: &str) {
    let started = Instant::now();
    let seed = seed();
    println!("snack_answer = {answer:?}: seed {seed} (SCPS_SNACK_SEED={seed} repeats it)");
    let emulation = emulation(answer, seed);

    let receiver = Scps::spawn(
        &emulation,
        "server",
        "scps recv",
        &["recv", "--udp", RECV_UDP, "--once", "--json"],
    );
    receiver.wait_listening(RECEIVER_LISTENS_WITHIN);
    let seed_arg = seed.to_string();
    let answer_arg = format!("tcp.snack_answer={answer}");
    let sender = Scps::spawn(
        &emulation,
        "client",
        "scps send",
        &[
            "send",
            RECV_TO,
            "--udp",
            RECV_UDP,
            "--bytes",
            BYTES,
            "--seed",
            &seed_arg,
            "--json",
            "--connect-timeout",
            "10s",
            "--stack",
            "scps-rate",
            "--set",
            PACE,
            "--set",
            "tcp.sack=false",
            "--set",
            &answer_arg,
        ],
    );
    let progress = || link_progress(&emulation.stats());
    let (status, stdout) = sender.finish(SENDER_LIMIT, progress);
    let sent = sender.report(status, &stdout);
    let transfer_s = started.elapsed().as_secs_f64();
    let (status, stdout) = receiver.finish(RECEIVER_LIMIT_AFTER_SENDER, progress);
    let received = receiver.report(status, &stdout);

    let stats = emulation.stats();
    let direction = |name: &str| {
        channel(&stats, name)
            .unwrap_or_else(|| panic!("no {name} channel in {stats}"))
            .clone()
    };
    let (forward, back) = (direction("forward"), direction("return"));
    let count = |figures: &serde_json::Value, key: &str| {
        figures[key]
            .as_u64()
            .unwrap_or_else(|| panic!("no {key}: {figures}"))
    };
    let (packets_in, lost) = (
        count(&forward, "packets_in"),
        count(&forward, "dropped_bit_errors"),
    );
    let (acks_in, acks_lost) = (count(&back, "packets_in"), count(&back, "dropped_bit_errors"));
    let overflowed = count(&forward, "dropped_buffer");
    println!(
        "snack_answer = {answer:?}: {} bytes in {:.2} s ({} bit/s as the sender timed it), {} bytes resent, \
         {} timeouts, {} fast recoveries; the link lost {lost} of {packets_in} packets forward ({:.1}%) and \
         {acks_lost} of {acks_in} back ({:.2}%) to bit errors, {overflowed} forward to its buffer",
        sent["bytes"],
        sent["duration_s"].as_f64().unwrap_or(f64::NAN),
        sent["goodput_bps"],
        sent["retransmitted_bytes"],
        sent["timeouts"],
        sent["fast_recoveries"],
        100.0 * lost as f64 / packets_in.max(1) as f64,
        100.0 * acks_lost as f64 / acks_in.max(1) as f64,
    );
    println!("snack_answer = {answer:?}: transfer done {transfer_s:.2} s after the emulator was up");

    assert_eq!(sent["scps"], true, "SCPS-TP (and SNACK) negotiated: {sent}");
    assert_eq!(sent["verified"], true, "{sent}");
    assert_eq!(sent["bytes"], BYTES_COUNT, "{sent}");
    assert_eq!(received["verified"], true, "{received}");
    assert_eq!(received["bytes"], BYTES_COUNT, "{received}");
    assert!(sent["sha256"].is_string(), "{sent}");
    assert_eq!(
        received["sha256"], sent["sha256"],
        "both ends computed the same digest"
    );
    assert!(
        lost > 0,
        "the link lost nothing: the faulty answers were never put to the test"
    );
    assert!(
        sent["retransmitted_bytes"].as_u64().is_some_and(|b| b > 0),
        "the sender resent nothing: {sent}"
    );
    emulation.assert_running("the emulator kept running");
}

#[test]
fn a_sender_that_ignores_snacks_still_delivers_every_byte() {
    faulty_sender_delivers_every_byte("ignore");
}

#[test]
fn a_sender_that_resends_the_next_unit_still_delivers_every_byte() {
    faulty_sender_delivers_every_byte("next-unit");
}
