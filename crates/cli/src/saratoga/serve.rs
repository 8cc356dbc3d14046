//! `scps saratoga serve DIR`: answers GET, PUT, DELETE and listing
//! requests for the files below DIR until Ctrl-C, one line (or JSON
//! object) per transfer started, completed or failed.

use std::collections::HashMap;
use std::time::{Instant, SystemTime};

use anyhow::Context;
use scps_saratoga::engine::{Config, DiskStore, Engine, Event, Operation, TransferId};
use serde_json::json;

use super::capture::PacketCapture;
use super::host::Host;
use super::{ServeArgs, settings_refused};
use crate::transfer::{Outcome, interrupts};

pub async fn run(args: ServeArgs) -> anyhow::Result<Outcome> {
    let store =
        DiskStore::new(&args.dir).map_err(|e| anyhow::anyhow!("cannot serve {}: {e}", args.dir.display()))?;
    if args.listen.is_empty() {
        anyhow::bail!("nothing to listen on: give --listen ADDR:PORT");
    }
    let root = store.root().to_owned();
    let ipv6 = args.listen.iter().any(|a| a.is_ipv6());
    let config = Config {
        max_receivers: args.max_receives,
        max_receivers_per_peer: args.max_receives_per_peer,
        ..args.engine.config(ipv6)
    };
    let engine = Engine::new(config, store).map_err(settings_refused)?;
    let capture = args
        .engine
        .pcap
        .as_deref()
        .map(PacketCapture::create)
        .transpose()?;
    let mut host = Host::new(engine, &args.listen, capture)?;
    let mut stop = interrupts()?;
    // Scripts (and the tests) read this line to learn the ports.
    eprintln!(
        "scps saratoga serve: {} listening on {} (beacons are not sent)",
        root.display(),
        host.locals()
            .iter()
            .map(|a| format!("UDP {a}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let mut started: HashMap<TransferId, (Operation, String, Instant)> = HashMap::new();
    prune_partials(&mut host, &args);
    while let Some(event) = host.next_event(&mut stop).await? {
        if matches!(event, Event::Started { .. } | Event::Failed { .. }) {
            prune_partials(&mut host, &args);
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
        println!("{}", line.render(args.engine.json));
    }
    let stats = host.engine().stats().clone();
    host.finish().context("at the end")?;
    let drops = super::report::drops(&stats);
    let dropped: Vec<String> = drops
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(cause, n)| format!("{cause} {n}"))
        .collect();
    eprintln!(
        "scps saratoga serve: stopped (Ctrl-C); {} datagrams in, {} out{}",
        stats.datagrams_in,
        stats.datagrams_out,
        if dropped.is_empty() {
            String::new()
        } else {
            format!("; dropped: {}", dropped.join(", "))
        }
    );
    // Ctrl-C is how a server is meant to stop.
    Ok(Outcome::Complete)
}

/// Removes the partial files failed or abandoned transfers left that are
/// past `--keep-partials` or `--partials-budget`, saying which. Done at
/// start and as transfers start or fail, when disk is taken or left.
fn prune_partials(host: &mut Host<DiskStore>, args: &ServeArgs) {
    let store = host.engine_mut().store_mut();
    for name in store.prune_partials(SystemTime::now(), args.keep_partials, args.partials_budget.0) {
        eprintln!(
            "scps saratoga serve: removed the partial file of {name} (--keep-partials, --partials-budget)"
        );
    }
}

/// One event of the server's log.
struct Line {
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
            let secs = began.elapsed().as_secs_f64();
            self.object.insert("bytes".into(), json!(bytes));
            self.object.insert("duration_s".into(), json!(secs));
            let goodput = if secs > 0.0 {
                bytes as f64 * 8.0 / secs
            } else {
                0.0
            };
            self.object.insert("goodput_bps".into(), json!(goodput));
        }
        self
    }

    fn error(mut self, error: String) -> Line {
        self.object.insert("error".into(), json!(error));
        self
    }

    fn render(&self, json: bool) -> String {
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
