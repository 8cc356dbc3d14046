//! What a Saratoga client reports at the end: with `--json` one object
//! with the field names of `scps sim --json` (`bytes`, `duration_s`,
//! `goodput_bps`, `retransmitted_bytes`) and `sha256`, `verified`, and the
//! engine's drops by cause; otherwise a few lines for people.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;

use scps_saratoga::engine::Stats;
use serde::Serialize;

use crate::{Ended, Told};

#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// `put`, `get`, `ls` or `rm`.
    pub operation: String,
    pub peer: String,
    /// The name at the peer.
    pub remote: String,
    /// The file here (put and get).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<String>,
    /// The UDP port this client sent from and was answered on.
    pub local_port: u16,
    /// A put sent without a PUT REQUEST (`--blind`), for its messages.
    #[serde(skip)]
    pub blind: bool,
    /// File bytes delivered (0 unless complete).
    pub bytes: u64,
    pub duration_s: f64,
    pub goodput_bps: f64,
    /// DATA bytes sent again (put); for a get, the bytes that arrived
    /// twice (a receiver cannot see the re-sends that filled its holes).
    pub retransmitted_bytes: u64,
    /// SHA-256 of the file here, once complete.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Whether the transfer's own checksum (MD5) matched at the receiver.
    pub verified: bool,
    pub rate_bps: u64,
    pub datagrams_sent: u64,
    pub datagrams_received: u64,
    /// Datagrams the engine dropped, by cause: malformed frames by their
    /// `WireError::cause`, `unknown_session`, DATA bytes dropped for
    /// want of their METADATA (`orphan_data_bytes`; in a session a
    /// REQUEST opened, those past the bound on what is kept for it,
    /// `early_data_dropped_bytes`) or because their session was refused
    /// (`refused_data_bytes`).
    pub drops: BTreeMap<String, u64>,
    pub cpu_user_s: f64,
    pub cpu_system_s: f64,
    /// For ls: the entries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<Entry>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Entry {
    pub name: String,
    pub directory: bool,
    pub size: u64,
    /// Unix seconds.
    pub mtime: u64,
}

impl Report {
    /// Fills in the engine's counters and the process's CPU time.
    pub fn record_engine(&mut self, stats: &Stats) {
        self.datagrams_sent = stats.datagrams_out;
        self.datagrams_received = stats.datagrams_in;
        self.drops = drops(stats);
        (self.cpu_user_s, self.cpu_system_s) = scps_workload::report::process_cpu_time();
    }

    /// `bytes` moved since `start`: the duration and the goodput, as the
    /// workloads of `scps send` reckon them.
    pub fn set_moved(&mut self, bytes: u64, start: std::time::Instant) {
        self.bytes = bytes;
        (self.duration_s, self.goodput_bps) = scps_workload::bulk::timing(bytes, start);
    }

    /// What the user is told once the transfer has `ended`: the error, as
    /// a note naming the command and the peer; the report, always with
    /// `json`, otherwise only on success.
    pub fn told(&self, ended: Ended, json: bool) -> Vec<Told> {
        let mut told = Vec::new();
        if let Some(error) = &self.error {
            told.push(Told::Note(format!(
                "scps saratoga {}: {} {}: {error}",
                self.operation, self.peer, self.remote
            )));
        }
        if json || ended == Ended::Complete {
            told.push(Told::Output(self.render(json)));
        }
        told
    }

    pub fn render(&self, json: bool) -> String {
        if json {
            return serde_json::to_string(self).unwrap_or_default();
        }
        let mut lines = Vec::new();
        for entry in self.entries.iter().flatten() {
            lines.push(match entry.directory {
                true => format!("{:>14}  {}/", "-", entry.name),
                false => format!("{:>14}  {}", entry.size, entry.name),
            });
        }
        if self.operation == "rm" && self.error.is_none() {
            lines.push(format!("rm {} {}: deleted", self.peer, self.remote));
        } else if self.entries.is_none() && self.error.is_none() {
            lines.push(format!(
                "{} {} {}: {} bytes in {:.3} s, {:.2} Mbit/s",
                self.operation,
                self.peer,
                self.remote,
                self.bytes,
                self.duration_s,
                self.goodput_bps / 1e6
            ));
            if let Some(sha) = &self.sha256 {
                lines.push(format!(
                    "  sha256 {sha} ({})",
                    if self.verified { "verified" } else { "not verified" }
                ));
            }
            lines.push(format!(
                "  re-sent {} bytes; {} datagrams out, {} in; cpu {:.2} s user, {:.2} s system",
                self.retransmitted_bytes,
                self.datagrams_sent,
                self.datagrams_received,
                self.cpu_user_s,
                self.cpu_system_s
            ));
        }
        let dropped = dropped(&self.drops);
        if !dropped.is_empty() && self.entries.is_none() {
            lines.push(format!("  dropped: {}", dropped.join(", ")));
        }
        lines.join("\n")
    }
}

/// The engine's drop counters by cause.
pub fn drops(stats: &Stats) -> BTreeMap<String, u64> {
    let mut drops: BTreeMap<String, u64> = stats
        .malformed
        .iter()
        .map(|(cause, n)| (format!("malformed_{cause}"), *n))
        .collect();
    drops.insert("unknown_session".into(), stats.unknown_session);
    drops.insert("orphan_data_bytes".into(), stats.orphan_data_bytes);
    drops.insert("early_data_dropped_bytes".into(), stats.early_data_dropped_bytes);
    drops.insert("refused_data_bytes".into(), stats.refused_data_bytes);
    drops.insert("duplicate_bytes".into(), stats.duplicate_bytes_received);
    drops
}

/// The causes of `drops` that dropped anything, each with its count
/// (`malformed_bad_type 2`).
pub fn dropped(drops: &BTreeMap<String, u64>) -> Vec<String> {
    drops
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(cause, n)| format!("{cause} {n}"))
        .collect()
}

/// SHA-256 of the first `len` bytes of `file`, in hex: the bytes a
/// transfer moved, whatever was appended to the file since (and never
/// reading past them, so a file that does not end cannot hang it).
pub fn sha256_of(file: &File, len: u64) -> std::io::Result<String> {
    use sha2::Digest;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0; 1 << 20];
    let mut offset = 0;
    while offset < len {
        let want = buf.len().min(usize::try_from(len - offset).unwrap_or(usize::MAX));
        let read = file.read_at(&mut buf[..want], offset)?;
        if read == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("it ends at byte {offset} of the {len} transferred"),
            ));
        }
        hasher.update(&buf[..read]);
        offset += read as u64;
    }
    Ok(scps_workload::bulk::hex(&hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(error: Option<&str>) -> Report {
        Report {
            operation: "rm".into(),
            peer: "192.0.2.7:7542".into(),
            remote: "logs/old.log".into(),
            error: error.map(str::to_owned),
            ..Report::default()
        }
    }

    #[test]
    fn a_success_is_reported_as_text_or_json() {
        let done = report(None);
        assert_eq!(
            done.told(Ended::Complete, false),
            [Told::Output("rm 192.0.2.7:7542 logs/old.log: deleted".into())]
        );
        assert_eq!(
            done.told(Ended::Complete, true),
            [Told::Output(done.render(true))]
        );
    }

    #[test]
    fn a_failure_is_a_note_naming_the_peer_and_its_report_is_only_in_json() {
        let failed = report(Some("no such file"));
        let note = Told::Note("scps saratoga rm: 192.0.2.7:7542 logs/old.log: no such file".into());
        for ended in [Ended::Failed, Ended::Interrupted] {
            assert_eq!(failed.told(ended, false), std::slice::from_ref(&note));
            assert_eq!(
                failed.told(ended, true),
                [note.clone(), Told::Output(failed.render(true))]
            );
        }
    }
}
