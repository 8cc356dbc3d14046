//! The clients of `scps saratoga put`, `get`, `ls` and `rm`: one transfer
//! with one server, then its report and how it ended.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use scps_saratoga::engine::{Config, DiskStore, Engine, Event, FailReason, MemoryStore, Store, TransferId};
use scps_saratoga::wire::{EPOCH_2000_UNIX, EntryKind, ErrorCode};
use tokio::signal::unix::Signal;

use crate::host::Host;
use crate::local_port::client_socket;
use crate::peer::{DEFAULT_PORT, PeerSpec};
use crate::report::{Entry, Report, sha256_of};
use crate::store::{ReceiveOnly, SendFile};
use crate::{Ended, Settings, settings_refused};

/// A client of one server: whom it asks, from which port, with what
/// settings.
#[derive(Debug, Clone)]
pub struct Client {
    /// The server, and the name there (`HOST[:PORT][:PATH]`).
    pub peer: PeerSpec,
    /// Send from, and be answered on, this UDP port: `None` for 7542 when
    /// it is free, else one the system picks (local_port.rs).
    pub local_port: Option<u16>,
    pub settings: Settings,
}

/// What a client asks of its server.
#[derive(Debug, Clone)]
pub enum Request {
    /// Send `file`, as the peer's PATH (default: the file's name); with
    /// `blind`, without a PUT REQUEST first.
    Put { file: PathBuf, blind: bool },
    /// Fetch the peer's PATH into `file` (default: PATH's last component,
    /// here; inside `file` if it is a directory), which must not exist
    /// unless `force`.
    Get { file: Option<PathBuf>, force: bool },
    /// List the peer's directory PATH (default: its top).
    List,
    /// Delete the peer's PATH.
    Delete,
}

impl Request {
    /// The command's name: `put`, `get`, `ls` or `rm`.
    pub fn command(&self) -> &'static str {
        match self {
            Request::Put { .. } => "put",
            Request::Get { .. } => "get",
            Request::List => "ls",
            Request::Delete => "rm",
        }
    }
}

/// What a client tells its user while it runs.
pub trait Watch {
    /// Something to know before the transfer: the port taken instead of
    /// 7542.
    fn note(&mut self, text: &str);
    /// `bytes` of the file's `size` have moved.
    fn progress(&mut self, bytes: u64, size: u64);
    /// The transfer has ended (its report follows).
    fn ended(&mut self);
}

/// How a transfer ended.
enum End {
    Done(Event),
    Failed(FailReason),
    Interrupted,
}

/// A client's engine over one socket of the peer's family, on the port
/// `client` says (see [`client_socket`]); what it says of the port goes
/// to `watch`.
fn host<S: Store + Send + 'static>(
    client: &Client,
    peer: SocketAddr,
    store: S,
    watch: &mut impl Watch,
) -> anyhow::Result<Host<S>> {
    // A client serves no one: its socket may be the well-known port, and
    // a stranger's put to it or get from its store is refused.
    let config = Config {
        max_receivers: 0,
        max_receivers_per_peer: 0,
        max_served: 0,
        ..client.settings.config(peer.is_ipv6())
    };
    let engine = Engine::new(config, store).map_err(settings_refused)?;
    let (socket, note) = client_socket(peer, client.local_port)?;
    if let Some(note) = note {
        watch.note(&note);
    }
    Host::over(engine, vec![socket], Some(peer), client.settings.pcap.as_deref())
}

/// Runs the host until transfer `id` ends, or `stop` (Ctrl-C) comes.
async fn wait<S: Store + Send + 'static>(
    host: &Host<S>,
    id: TransferId,
    stop: &mut Signal,
    watch: &mut impl Watch,
) -> anyhow::Result<End> {
    let end = loop {
        let Some(event) = host.next_event(stop).await? else {
            break End::Interrupted;
        };
        match event {
            Event::Progress { id: of, bytes, size } if of == id => watch.progress(bytes, size),
            Event::Completed { id: of, .. } | Event::Listing { id: of, .. } if of == id => {
                break End::Done(event);
            }
            Event::Failed { id: of, reason } if of == id => break End::Failed(reason),
            _ => {}
        }
    };
    watch.ended();
    Ok(end)
}

/// What a failure says: the peer's error code by name, who was silent,
/// or what the peer answered short of finishing.
fn failure(
    reason: &FailReason,
    report: &Report,
    peer: SocketAddr,
    last_send_error: Option<String>,
) -> String {
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
            if let Some(error) = last_send_error {
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

/// Ends a client: the report completed, the capture written, how it
/// ended.
async fn conclude<S: Store + Send + 'static>(
    host: Host<S>,
    mut report: Report,
    end: End,
    peer: SocketAddr,
) -> anyhow::Result<(Report, Ended)> {
    host.with(|engine, _| report.record_engine(engine.stats()));
    report.local_port = host.locals().first().map_or(0, |local| local.port());
    let ended = match &end {
        End::Done(_) => Ended::Complete,
        End::Failed(reason) => {
            report.error = Some(failure(reason, &report, peer, host.last_send_error()));
            Ended::Failed
        }
        End::Interrupted => {
            report.error = Some("interrupted (Ctrl-C)".into());
            Ended::Interrupted
        }
    };
    host.finish().await?;
    Ok((report, ended))
}

fn report(operation: &str, peer: SocketAddr, remote: &str, settings: &Settings) -> Report {
    Report {
        operation: operation.into(),
        peer: peer.to_string(),
        remote: remote.into(),
        rate_bps: settings.rate_bps,
        ..Report::default()
    }
}

/// A path's last component as a store name.
fn file_name(path: &Path) -> anyhow::Result<&str> {
    path.file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{}: expected a file name in UTF-8", path.display()))
}

impl Client {
    /// Runs one transfer with the server, until it ends or `stop` (Ctrl-C)
    /// comes, and gives back its report and how it ended. Errors are what
    /// kept it from starting (a missing file, a bad name, a port taken).
    pub async fn run(
        &self,
        request: &Request,
        stop: &mut Signal,
        watch: &mut impl Watch,
    ) -> anyhow::Result<(Report, Ended)> {
        match request {
            Request::Put { file, blind } => self.put(file, *blind, stop, watch).await,
            Request::Get { file, force } => self.get(file.as_deref(), *force, stop, watch).await,
            Request::List => self.ls(stop, watch).await,
            Request::Delete => self.rm(stop, watch).await,
        }
    }

    async fn put(
        &self,
        file: &Path,
        blind: bool,
        stop: &mut Signal,
        watch: &mut impl Watch,
    ) -> anyhow::Result<(Report, Ended)> {
        let name = file_name(file)?.to_owned();
        let store = SendFile::open(file, &name).with_context(|| format!("cannot read {}", file.display()))?;
        let remote = self.peer.path.clone().unwrap_or_else(|| name.clone());
        let peer = self.peer.resolve()?;
        // The file sent, for its digest at the end: what was read from it,
        // not whatever its path names by then.
        let sent = store
            .file()
            .try_clone()
            .with_context(|| format!("cannot read {}", file.display()))?;
        let host = host(self, peer, store, watch)?;
        let mut report = report("put", peer, &remote, &self.settings);
        report.local = Some(file.display().to_string());
        report.blind = blind;
        let start = std::time::Instant::now();
        let id = host
            .with(|engine, now| match blind {
                true => engine.put(now, peer, &name, &remote),
                false => engine.put_requested(now, peer, &name, &remote),
            })
            .map_err(|e| anyhow::anyhow!("cannot send {}: {e}", file.display()))?;
        let end = wait(&host, id, stop, watch).await?;
        if let End::Done(Event::Completed { size, .. }) = &end {
            report.set_moved(*size, start);
            report.sha256 =
                Some(sha256_of(&sent, *size).with_context(|| format!("cannot read {}", file.display()))?);
            report.verified = true;
        }
        report.retransmitted_bytes = host.with(|engine, _| engine.stats().data_bytes_resent);
        conclude(host, report, end, peer).await
    }

    async fn get(
        &self,
        file: Option<&Path>,
        force: bool,
        stop: &mut Signal,
        watch: &mut impl Watch,
    ) -> anyhow::Result<(Report, Ended)> {
        let remote = required_path(&self.peer, "get", "logs/today.log")?;
        let target = get_target(&remote, file)?;
        if target.exists() && !force {
            bail!("{} exists: give --force to replace it", target.display());
        }
        let name = file_name(&target)?.to_owned();
        let dir = match target.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_owned(),
            _ => PathBuf::from("."),
        };
        let peer = self.peer.resolve()?;
        let store =
            DiskStore::new(&dir).map_err(|e| anyhow::anyhow!("cannot write into {}: {e}", dir.display()))?;
        let partials = store.root().join(scps_saratoga::engine::PARTIAL_DIR);
        let host = host(self, peer, ReceiveOnly::file(store, &name), watch)?;
        let mut report = report("get", peer, &remote, &self.settings);
        report.local = Some(target.display().to_string());
        let start = std::time::Instant::now();
        let id = host.with(|engine, now| engine.get(now, peer, &remote, &name));
        let end = wait(&host, id, stop, watch).await?;
        if let End::Done(Event::Completed { size, .. }) = &end {
            report.set_moved(*size, start);
            let written = std::fs::File::open(&target);
            report.sha256 = Some(
                written
                    .and_then(|file| sha256_of(&file, *size))
                    .with_context(|| format!("cannot read {}", target.display()))?,
            );
            report.verified = true;
            // The partial file's directories, if nothing else is left in
            // them (an unfinished get keeps its partial file, and resumes
            // from it).
            let _ = std::fs::remove_dir(partials.join("partial"));
            let _ = std::fs::remove_dir(&partials);
        }
        report.retransmitted_bytes = host.with(|engine, _| engine.stats().duplicate_bytes_received);
        conclude(host, report, end, peer).await
    }

    async fn ls(&self, stop: &mut Signal, watch: &mut impl Watch) -> anyhow::Result<(Report, Ended)> {
        let dir = self.peer.path.clone().unwrap_or_default();
        let peer = self.peer.resolve()?;
        let host = host(self, peer, ReceiveOnly::nothing(MemoryStore::new()), watch)?;
        let mut report = report("ls", peer, &dir, &self.settings);
        let start = std::time::Instant::now();
        let id = host.with(|engine, now| engine.list(now, peer, &dir));
        let end = wait(&host, id, stop, watch).await?;
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
        conclude(host, report, end, peer).await
    }

    async fn rm(&self, stop: &mut Signal, watch: &mut impl Watch) -> anyhow::Result<(Report, Ended)> {
        let remote = required_path(&self.peer, "rm", "old.log")?;
        let peer = self.peer.resolve()?;
        let host = host(self, peer, ReceiveOnly::nothing(MemoryStore::new()), watch)?;
        let mut report = report("rm", peer, &remote, &self.settings);
        let start = std::time::Instant::now();
        let id = host.with(|engine, now| engine.delete(now, peer, &remote));
        let end = wait(&host, id, stop, watch).await?;
        if matches!(end, End::Done(_)) {
            report.set_moved(0, start);
            report.verified = true;
        }
        conclude(host, report, end, peer).await
    }
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

fn required_path(peer: &PeerSpec, command: &str, example: &str) -> anyhow::Result<String> {
    peer.path.clone().with_context(|| {
        format!(
            "{command} needs PEER:PATH, the name at the peer (e.g. {}:{example})",
            peer.host
        )
    })
}

/// Saratoga's times count from 2000-01-01 (docs/spec/saratoga.md, "The
/// directory entry").
fn unix_time(saratoga: u32) -> u64 {
    u64::from(saratoga) + EPOCH_2000_UNIX
}
