//! The server of `scps saratoga serve DIR`: answers GET, PUT, DELETE and
//! listing requests for the files below DIR until Ctrl-C, with one line
//! (or JSON object) of news per transfer started, completed or failed.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use scps_saratoga::engine::{Config, DiskStore, Engine, Event, Operation, Stats, TransferId};
use serde_json::json;
use tokio::signal::unix::Signal;

use crate::host::Host;
use crate::report::{dropped, drops};
use crate::{Settings, Told, settings_refused};

/// A server of one directory.
#[derive(Debug, Clone)]
pub struct Server {
    /// The directory served: nothing above it is read, written or listed.
    pub dir: PathBuf,
    /// The UDP addresses listened on.
    pub listen: Vec<SocketAddr>,
    /// Files received at once, from all peers.
    pub max_receives: usize,
    /// Files received at once from one address.
    pub max_receives_per_peer: usize,
    /// The partial file of a failed or abandoned transfer is kept this
    /// long for the same file to resume from, then removed.
    pub keep_partials: Duration,
    /// Partial files kept take at most this many bytes; the oldest go
    /// first.
    pub partials_budget: u64,
    pub settings: Settings,
}

/// What a server tells its user as it runs.
#[derive(Debug)]
pub enum News<'a> {
    /// It listens on `locals` (with the ports the system chose), serving
    /// `root`.
    Listening {
        root: &'a std::path::Path,
        locals: &'a [SocketAddr],
    },
    /// It removed the partial file of `name`, past `keep_partials` or
    /// `partials_budget`.
    PartialRemoved(String),
    /// A transfer started, completed or failed.
    Transfer(Line),
}

impl News<'_> {
    /// The news as `scps saratoga serve` tells it: a transfer as text, or
    /// with `json` one JSON object.
    pub fn told(&self, json: bool) -> Told {
        match self {
            // Scripts (and the tests) read this line to learn the ports.
            News::Listening { root, locals } => Told::Note(format!(
                "scps saratoga serve: {} listening on {} (beacons are not sent)",
                root.display(),
                locals
                    .iter()
                    .map(|a| format!("UDP {a}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            News::PartialRemoved(name) => Told::Note(format!(
                "scps saratoga serve: removed the partial file of {name} (--keep-partials, --partials-budget)"
            )),
            News::Transfer(line) => Told::Output(line.render(json)),
        }
    }
}

/// The note of a server stopped by Ctrl-C, with the engine's counters at
/// the end.
pub fn stopped(stats: &Stats) -> String {
    let dropped = dropped(&drops(stats));
    format!(
        "scps saratoga serve: stopped (Ctrl-C); {} datagrams in, {} out{}",
        stats.datagrams_in,
        stats.datagrams_out,
        if dropped.is_empty() {
            String::new()
        } else {
            format!("; dropped: {}", dropped.join(", "))
        }
    )
}

impl Server {
    /// Serves until `stop` (Ctrl-C), telling `news` what happens; the
    /// engine's counters at the end.
    pub async fn run(&self, stop: &mut Signal, mut news: impl FnMut(News)) -> anyhow::Result<Stats> {
        let store = DiskStore::new(&self.dir)
            .map_err(|e| anyhow::anyhow!("cannot serve {}: {e}", self.dir.display()))?;
        if self.listen.is_empty() {
            anyhow::bail!("nothing to listen on: give --listen ADDR:PORT");
        }
        let root = store.root().to_owned();
        let ipv6 = self.listen.iter().any(|a| a.is_ipv6());
        let config = Config {
            max_receivers: self.max_receives,
            max_receivers_per_peer: self.max_receives_per_peer,
            ..self.settings.config(ipv6)
        };
        let engine = Engine::new(config, store).map_err(settings_refused)?;
        let host = Host::new(engine, &self.listen, self.settings.pcap.as_deref())?;
        news(News::Listening {
            root: &root,
            locals: host.locals(),
        });
        let mut started: HashMap<TransferId, (Operation, String, Instant)> = HashMap::new();
        self.prune_partials(&host, &mut news);
        while let Some(event) = host.next_event(stop).await? {
            if matches!(event, Event::Started { .. } | Event::Failed { .. }) {
                self.prune_partials(&host, &mut news);
            }
            let line = match event {
                Event::Started {
                    id,
                    operation,
                    name,
                    size,
                } => {
                    started.insert(id, (operation, name.clone(), Instant::now()));
                    Line::new("started", id, operation, &name).size(size)
                }
                Event::Completed {
                    id,
                    operation,
                    name,
                    size,
                } => {
                    let began = started.remove(&id).map(|(_, _, at)| at);
                    Line::new("completed", id, operation, &name)
                        .size(size)
                        .timed(size, began)
                }
                Event::Failed { id, reason } => {
                    let Some((operation, name, _)) = started.remove(&id) else {
                        continue;
                    };
                    Line::new("failed", id, operation, &name).error(reason.to_string())
                }
                _ => continue,
            };
            news(News::Transfer(line));
        }
        let stats = host.with(|engine, _| engine.stats().clone());
        host.finish().await.context("at the end")?;
        Ok(stats)
    }

    /// Removes the partial files failed or abandoned transfers left that
    /// are past `keep_partials` or `partials_budget`, saying which. Done at
    /// start and as transfers start or fail, when disk is taken or left.
    fn prune_partials(&self, host: &Host<DiskStore>, news: &mut impl FnMut(News)) {
        let removed = host.with(|engine, _| {
            let store = engine.store_mut();
            store.prune_partials(SystemTime::now(), self.keep_partials, self.partials_budget)
        });
        for name in removed {
            news(News::PartialRemoved(name));
        }
    }
}

/// One event of the server's log.
#[derive(Debug)]
pub struct Line {
    object: serde_json::Map<String, serde_json::Value>,
}

fn operation_name(operation: Operation) -> &'static str {
    match operation {
        Operation::Put => "put",
        Operation::Get => "get",
        Operation::GetDelete => "get-delete",
        Operation::Delete => "delete",
        Operation::List => "list",
        Operation::Serve => "send",
        Operation::ServeList => "send-listing",
        Operation::Receive => "receive",
    }
}

impl Line {
    fn new(event: &str, id: TransferId, operation: Operation, name: &str) -> Line {
        let mut object = serde_json::Map::new();
        object.insert("event".into(), json!(event));
        object.insert("operation".into(), json!(operation_name(operation)));
        object.insert("name".into(), json!(name));
        object.insert("peer".into(), json!(id.peer.to_string()));
        object.insert("session".into(), json!(id.session));
        Line { object }
    }

    fn size(mut self, size: u64) -> Line {
        self.object.insert("size".into(), json!(size));
        self
    }

    fn timed(mut self, bytes: u64, began: Option<Instant>) -> Line {
        if let Some(began) = began {
            let (secs, goodput) = scps_workload::bulk::timing(bytes, began);
            self.object.insert("bytes".into(), json!(bytes));
            self.object.insert("duration_s".into(), json!(secs));
            self.object.insert("goodput_bps".into(), json!(goodput));
        }
        self
    }

    fn error(mut self, error: String) -> Line {
        self.object.insert("error".into(), json!(error));
        self
    }

    /// The line: text for people, or with `json` one JSON object.
    pub fn render(&self, json: bool) -> String {
        if json {
            return serde_json::Value::Object(self.object.clone()).to_string();
        }
        let field = |key: &str| self.object.get(key).map(|v| v.to_string()).unwrap_or_default();
        let text = |key: &str| {
            self.object
                .get(key)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_owned()
        };
        let mut line = format!(
            "{} {} {} with {} (session {})",
            text("event"),
            text("operation"),
            field("name"),
            text("peer"),
            field("session")
        );
        if let Some(secs) = self.object.get("duration_s").and_then(|v| v.as_f64()) {
            let goodput = self
                .object
                .get("goodput_bps")
                .and_then(|v| v.as_f64())
                .unwrap_or(0.0);
            line.push_str(&format!(
                ": {} bytes in {secs:.3} s, {:.2} Mbit/s",
                field("bytes"),
                goodput / 1e6
            ));
        } else if self.object.contains_key("size") && text("event") == "started" {
            line.push_str(&format!(", {} bytes", field("size")));
        }
        if let Some(error) = self.object.get("error").and_then(|v| v.as_str()) {
            line.push_str(&format!(": {error}"));
        }
        line
    }
}

#[cfg(test)]
mod tests {
    use scps_saratoga::engine::Role;

    use super::*;

    #[test]
    fn the_listening_note_names_the_directory_and_every_port() {
        let locals = ["192.0.2.1:7542".parse().unwrap(), "[::1]:40000".parse().unwrap()];
        let news = News::Listening {
            root: std::path::Path::new("/srv/outbox"),
            locals: &locals,
        };
        assert_eq!(
            news.told(true),
            Told::Note(
                "scps saratoga serve: /srv/outbox listening on UDP 192.0.2.1:7542, UDP [::1]:40000 \
                 (beacons are not sent)"
                    .into()
            )
        );
        assert_eq!(
            News::PartialRemoved("logs/a.log".into()).told(false),
            Told::Note(
                "scps saratoga serve: removed the partial file of logs/a.log (--keep-partials, --partials-budget)"
                    .into()
            )
        );
    }

    #[test]
    fn a_transfer_is_output_as_text_or_json() {
        let id = TransferId {
            peer: "192.0.2.7:7542".parse().unwrap(),
            session: 9,
            role: Role::Receiver,
        };
        let line = || Line::new("started", id, Operation::Put, "a.bin").size(10);
        assert_eq!(
            News::Transfer(line()).told(false),
            Told::Output("started put \"a.bin\" with 192.0.2.7:7542 (session 9), 10 bytes".into())
        );
        let Told::Output(json) = News::Transfer(line()).told(true) else {
            panic!("a transfer is output");
        };
        let object: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(
            (object["event"].as_str(), object["size"].as_u64()),
            (Some("started"), Some(10))
        );
    }

    #[test]
    fn the_stopped_note_counts_datagrams_and_lists_only_what_was_dropped() {
        let mut stats = Stats {
            datagrams_in: 12,
            datagrams_out: 7,
            ..Stats::default()
        };
        assert_eq!(
            stopped(&stats),
            "scps saratoga serve: stopped (Ctrl-C); 12 datagrams in, 7 out"
        );
        stats.unknown_session = 2;
        stats.duplicate_bytes_received = 100;
        assert_eq!(
            stopped(&stats),
            "scps saratoga serve: stopped (Ctrl-C); 12 datagrams in, 7 out; dropped: duplicate_bytes 100, \
             unknown_session 2"
        );
    }
}
