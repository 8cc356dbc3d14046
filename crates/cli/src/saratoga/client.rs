//! `scps saratoga put`, `get`, `ls` and `rm`: one transfer with one
//! server, then a report and the exit status.

use std::io::IsTerminal;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use scps_saratoga::engine::{Config, DiskStore, Engine, Event, FailReason, MemoryStore, Store, TransferId};
use scps_saratoga::wire::{EPOCH_2000_UNIX, EntryKind, ErrorCode};

use super::capture::PacketCapture;
use super::host::Host;
use super::local_port::client_socket;
use super::peer::DEFAULT_PORT;
use super::report::{Entry, Report, sha256_of};
use super::store::{ReceiveOnly, SendFile};
use super::{ClientArgs, EngineArgs, GetArgs, LsArgs, PeerSpec, PutArgs, RmArgs, settings_refused};
use crate::transfer::{Outcome, interrupts};

/// How a transfer ended.
enum End {
    Done(Event),
    Failed(FailReason),
    Interrupted,
}

/// A client's engine over one socket of the peer's family, on the port
/// `client` says (see [`client_socket`]); `operation` names the command
/// in what it says of the port.
fn host<S: Store>(
    operation: &str,
    peer: SocketAddr,
    client: &ClientArgs,
    args: &EngineArgs,
    store: S,
) -> anyhow::Result<Host<S>> {
    // A client serves no one: its socket may be the well-known port, and
    // a stranger's put to it or get from its store is refused.
    let config = Config {
        max_receivers: 0,
        max_receivers_per_peer: 0,
        max_served: 0,
        ..args.config(peer.is_ipv6())
    };
    let engine = Engine::new(config, store).map_err(settings_refused)?;
    let (socket, note) = client_socket(peer, client.local_port)?;
    if let Some(note) = note {
        eprintln!("scps saratoga {operation}: {note}");
    }
    let capture = args.pcap.as_deref().map(PacketCapture::create).transpose()?;
    Host::over(engine, vec![socket], capture)
}

/// Shows how far a transfer got, on standard error when it is a terminal.
struct Progress {
    shown: Option<std::time::Instant>,
    start: std::time::Instant,
    enabled: bool,
}

impl Progress {
    fn new() -> Progress {
        Progress {
            shown: None,
            start: std::time::Instant::now(),
            enabled: std::io::stderr().is_terminal(),
        }
    }

    fn show(&mut self, bytes: u64, size: u64) {
        let due = self.shown.is_none_or(|at| at.elapsed().as_millis() >= 200);
        if !self.enabled || !due {
            return;
        }
        self.shown = Some(std::time::Instant::now());
        let secs = self.start.elapsed().as_secs_f64().max(1e-9);
        eprint!(
            "\r{bytes} of {size} bytes ({:.0}%), {:.2} Mbit/s   ",
            100.0 * bytes as f64 / size.max(1) as f64,
            bytes as f64 * 8.0 / secs / 1e6
        );
    }

    /// Ends the progress line, if one was shown.
    fn done(&self) {
        if self.shown.is_some() {
            eprintln!();
        }
    }
}

/// Runs the host until transfer `id` ends.
async fn wait<S: Store>(host: &mut Host<S>, id: TransferId) -> anyhow::Result<End> {
    let mut stop = interrupts()?;
    let mut progress = Progress::new();
    let end = loop {
        let Some(event) = host.next_event(&mut stop).await? else {
            break End::Interrupted;
        };
        match event {
            Event::Progress { id: of, bytes, size } if of == id => progress.show(bytes, size),
            Event::Completed { id: of, .. } | Event::Listing { id: of, .. } if of == id => {
                break End::Done(event);
            }
            Event::Failed { id: of, reason } if of == id => break End::Failed(reason),
            _ => {}
        }
    };
    progress.done();
    Ok(end)
}

/// What a failure says: the peer's error code by name, who was silent,
/// or what the peer answered short of finishing.
fn failure<S: Store>(reason: &FailReason, report: &Report, peer: SocketAddr, host: &Host<S>) -> String {
    match reason {
        // No code says "not a directory": a server answers a listing of a
        // file with "bad request" (ours does), which alone would not say
        // what was wrong with it.
        FailReason::Peer(ErrorCode::BAD_REQUEST) if report.operation == "ls" => format!(
            "{peer} answered with error {}: {:?} is not a directory there",
            ErrorCode::BAD_REQUEST,
            report.remote
        ),
        FailReason::Peer(code) => format!("{peer} answered with error {code}"),
        FailReason::Timeout(silent) => {
            let mut text = format!(
                "no answer from {peer} for {:.1} s (--timeout): the peer is unreachable or serves no Saratoga",
                silent.as_secs_f64()
            );
            if report.operation == "put" && !report.blind {
                text.push_str(", or does not answer a PUT REQUEST (--blind sends none)");
            }
            if report.local_port != DEFAULT_PORT {
                text.push_str(&format!(
                    "; or it answers only to port {DEFAULT_PORT}, and this client had port {} (--local-port)",
                    report.local_port
                ));
            }
            if let Some(error) = &host.last_send_error {
                text.push_str(&format!(" (the last send failed: {error})"));
            }
            text
        }
        FailReason::Unacknowledged { acked, size, stuck } => format!(
            "{peer} answered{} but sent no status covering the file: {acked} of {size} bytes acknowledged, \
             none more for {:.1} s (--timeout); the file may not be stored there",
            if report.blind { "" } else { " the request" },
            stuck.as_secs_f64()
        ),
        FailReason::ForeignStatus { progress, size } => format!(
            "{peer} answered with a status about another transfer (it reaches byte {progress} of this \
             {size}-byte file: an earlier session with the same id?); the file is not known to be stored there"
        ),
        other => other.to_string(),
    }
}

/// Ends a client: the report (always with --json; as text on success),
/// the capture written, the exit status.
fn conclude<S: Store>(
    host: Host<S>,
    mut report: Report,
    end: End,
    peer: SocketAddr,
    json: bool,
) -> anyhow::Result<Outcome> {
    report.record_engine(host.engine().stats());
    report.local_port = host.locals().first().map_or(0, |local| local.port());
    let outcome = match &end {
        End::Done(_) => Outcome::Complete,
        End::Failed(reason) => {
            report.error = Some(failure(reason, &report, peer, &host));
            Outcome::Failed
        }
        End::Interrupted => {
            report.error = Some("interrupted (Ctrl-C)".into());
            Outcome::Interrupted
        }
    };
    host.finish()?;
    if let Some(error) = &report.error {
        eprintln!(
            "scps saratoga {}: {} {}: {error}",
            report.operation, report.peer, report.remote
        );
    }
    if json || outcome == Outcome::Complete {
        println!("{}", report.render(json));
    }
    Ok(outcome)
}

fn report(operation: &str, peer: SocketAddr, remote: &str, args: &EngineArgs) -> Report {
    Report {
        operation: operation.into(),
        peer: peer.to_string(),
        remote: remote.into(),
        rate_bps: args.rate.bps(),
        ..Report::default()
    }
}

/// A path's last component as a store name.
fn file_name(path: &Path) -> anyhow::Result<&str> {
    path.file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{}: expected a file name in UTF-8", path.display()))
}

pub async fn put(args: PutArgs) -> anyhow::Result<Outcome> {
    let path = &args.file;
    let name = file_name(path)?.to_owned();
    let store = SendFile::open(path, &name).with_context(|| format!("cannot read {}", path.display()))?;
    let remote = args.peer.path.clone().unwrap_or_else(|| name.clone());
    let peer = args.peer.resolve()?;
    let mut host = host("put", peer, &args.client, &args.engine, store)?;
    let mut report = report("put", peer, &remote, &args.engine);
    report.local = Some(args.file.display().to_string());
    report.blind = args.blind;
    let start = std::time::Instant::now();
    let now = host.now();
    let engine = host.engine_mut();
    let id = match args.blind {
        true => engine.put(now, peer, &name, &remote),
        false => engine.put_requested(now, peer, &name, &remote),
    }
    .map_err(|e| anyhow::anyhow!("cannot send {}: {e}", args.file.display()))?;
    let end = wait(&mut host, id).await?;
    if let End::Done(Event::Completed { size, .. }) = &end {
        report.set_moved(*size, start);
        let sent = host.engine().store().file();
        report.sha256 =
            Some(sha256_of(sent, *size).with_context(|| format!("cannot read {}", path.display()))?);
        report.verified = true;
    }
    report.retransmitted_bytes = host.engine().stats().data_bytes_resent;
    conclude(host, report, end, peer, args.engine.json)
}

/// Where a get writes: FILE, inside FILE if it is a directory, or the
/// remote name's last component here.
fn get_target(remote: &str, file: Option<&Path>) -> anyhow::Result<PathBuf> {
    let last = remote
        .rsplit('/')
        .find(|part| !part.is_empty())
        .with_context(|| format!("{remote:?} names no file: expected PEER:PATH with a file name"))?;
    Ok(match file {
        None => PathBuf::from(last),
        Some(dir) if dir.is_dir() => dir.join(last),
        Some(file) => file.to_owned(),
    })
}

pub async fn get(args: GetArgs) -> anyhow::Result<Outcome> {
    let remote = required_path(&args.peer, "get", "logs/today.log")?;
    let target = get_target(&remote, args.file.as_deref())?;
    if target.exists() && !args.force {
        bail!("{} exists: give --force to replace it", target.display());
    }
    let name = file_name(&target)?.to_owned();
    let dir = match target.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
        _ => PathBuf::from("."),
    };
    let peer = args.peer.resolve()?;
    let store =
        DiskStore::new(&dir).map_err(|e| anyhow::anyhow!("cannot write into {}: {e}", dir.display()))?;
    let partials = store.root().join(scps_saratoga::engine::PARTIAL_DIR);
    let mut host = host(
        "get",
        peer,
        &args.client,
        &args.engine,
        ReceiveOnly::file(store, &name),
    )?;
    let mut report = report("get", peer, &remote, &args.engine);
    report.local = Some(target.display().to_string());
    let start = std::time::Instant::now();
    let now = host.now();
    let id = host.engine_mut().get(now, peer, &remote, &name);
    let end = wait(&mut host, id).await?;
    if let End::Done(Event::Completed { size, .. }) = &end {
        report.set_moved(*size, start);
        let written = std::fs::File::open(&target);
        report.sha256 = Some(
            written
                .and_then(|file| sha256_of(&file, *size))
                .with_context(|| format!("cannot read {}", target.display()))?,
        );
        report.verified = true;
        // The partial file's directories, if nothing else is left in them
        // (an unfinished get keeps its partial file, and resumes from it).
        let _ = std::fs::remove_dir(partials.join("partial"));
        let _ = std::fs::remove_dir(&partials);
    }
    report.retransmitted_bytes = host.engine().stats().duplicate_bytes_received;
    conclude(host, report, end, peer, args.engine.json)
}

fn required_path(peer: &PeerSpec, command: &str, example: &str) -> anyhow::Result<String> {
    peer.path.clone().with_context(|| {
        format!(
            "{command} needs PEER:PATH, the name at the peer (e.g. {}:{example})",
            peer.host
        )
    })
}

pub async fn ls(args: LsArgs) -> anyhow::Result<Outcome> {
    let dir = args.peer.path.clone().unwrap_or_default();
    let peer = args.peer.resolve()?;
    let mut host = host(
        "ls",
        peer,
        &args.client,
        &args.engine,
        ReceiveOnly::nothing(MemoryStore::new()),
    )?;
    let mut report = report("ls", peer, &dir, &args.engine);
    let start = std::time::Instant::now();
    let now = host.now();
    let id = host.engine_mut().list(now, peer, &dir);
    let end = wait(&mut host, id).await?;
    if let End::Done(Event::Listing { entries, .. }) = &end {
        let listed: Vec<Entry> = entries
            .iter()
            .map(|entry| Entry {
                name: entry.name.clone(),
                directory: matches!(entry.kind, EntryKind::Directory | EntryKind::SpecialDirectory),
                size: entry.size,
                mtime: unix_time(entry.mtime),
            })
            .collect();
        report.set_moved(0, start);
        report.verified = true;
        report.entries = Some(listed);
    }
    conclude(host, report, end, peer, args.engine.json)
}

/// Saratoga's times count from 2000-01-01 (docs/spec/saratoga.md, "The
/// directory entry").
fn unix_time(saratoga: u32) -> u64 {
    u64::from(saratoga) + EPOCH_2000_UNIX
}

pub async fn rm(args: RmArgs) -> anyhow::Result<Outcome> {
    let remote = required_path(&args.peer, "rm", "old.log")?;
    let peer = args.peer.resolve()?;
    let mut host = host(
        "rm",
        peer,
        &args.client,
        &args.engine,
        ReceiveOnly::nothing(MemoryStore::new()),
    )?;
    let mut report = report("rm", peer, &remote, &args.engine);
    let start = std::time::Instant::now();
    let now = host.now();
    let id = host.engine_mut().delete(now, peer, &remote);
    let end = wait(&mut host, id).await?;
    if matches!(end, End::Done(_)) {
        report.set_moved(0, start);
        report.verified = true;
    }
    conclude(host, report, end, peer, args.engine.json)
}
