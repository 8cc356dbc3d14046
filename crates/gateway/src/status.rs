//! Asking a running gateway for its status through its control socket,
//! and the text `scps status` prints of it: who answered (its process,
//! configuration file, modes and network namespace, and the socket it was
//! reached on), a line of counters and a row per split connection.
//!
//! Without a socket given, this network namespace's default socket is
//! tried first, then the initial namespace's; a gateway that answers from
//! another namespace than the asker's is said to: its connections are not
//! the asker's namespace's.

use std::path::PathBuf;

use crate::control::{self, ControlError, GatewayStatus};
use crate::netns::NetNamespace;
use crate::registry::ConnectionStatus;

/// A gateway's answer: where it was reached, its JSON document as it
/// came, and that document read.
#[derive(Debug)]
pub struct Answer {
    pub reached: Reached,
    pub document: String,
    pub status: GatewayStatus,
}

impl Answer {
    /// Writes it as `scps status` prints it: with `json` the document as
    /// it came, otherwise [`text`], seen from this process's namespace.
    pub fn write_to(&self, json: bool, out: &mut impl std::io::Write) -> std::io::Result<()> {
        if json {
            return writeln!(out, "{}", self.document);
        }
        let here = NetNamespace::current();
        text(&self.status, &self.reached, here.as_ref())
            .iter()
            .try_for_each(|line| writeln!(out, "{line}"))
    }
}

/// Why no gateway's status was had.
#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("no gateway answers on {} (give a gateway's socket with --control PATH)", .tried.join(", nor on "))]
    NoGateway { tried: Vec<String> },
    #[error(transparent)]
    Control(#[from] ControlError),
}

/// Asks the gateway on `control`, or without it on the default sockets.
pub fn ask(control: Option<PathBuf>) -> Result<Answer, StatusError> {
    match control {
        Some(path) => {
            let (document, status) = control::ask_status(&path)?;
            let reached = Reached {
                path,
                chosen: "given with --control".to_owned(),
            };
            Ok(Answer {
                reached,
                document,
                status,
            })
        }
        None => ask_first(&control::default_socket_paths()),
    }
}

/// Asks the first of `paths` a gateway answers on (one that answers
/// wrongly ends the search: a gateway is there). Fails naming every path
/// tried when none has a gateway.
fn ask_first(paths: &[(PathBuf, &'static str)]) -> Result<Answer, StatusError> {
    let mut tried = Vec::new();
    for (path, what) in paths {
        match control::ask_status(path) {
            Ok((document, status)) => {
                let chosen = match &tried[..] {
                    [] => (*what).to_owned(),
                    _ => format!("{what}; no gateway answers on {}", tried.join(", nor on ")),
                };
                let reached = Reached {
                    path: path.clone(),
                    chosen,
                };
                return Ok(Answer {
                    reached,
                    document,
                    status,
                });
            }
            Err(ControlError::NoGateway { error, .. }) => {
                tried.push(format!("{} ({what}: {error})", path.display()));
            }
            Err(error) => return Err(error.into()),
        }
    }
    Err(StatusError::NoGateway { tried })
}

/// The socket a gateway answered on, and how it was chosen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    pub path: PathBuf,
    pub chosen: String,
}

const HEADER: [&str; 9] = [
    "client",
    "destination",
    "route",
    "state",
    "age",
    "lan>link",
    "link>lan",
    "send-rate",
    "srtt",
];

/// The text: who answered, where, and what it holds, in lines. `here` is
/// the namespace of the asker.
fn text(status: &GatewayStatus, reached: &Reached, here: Option<&NetNamespace>) -> Vec<String> {
    let mut out = about(status, reached, here);
    let counters = &status.counters;
    let why = status
        .limit
        .as_ref()
        .map(|limit| format!(" ({})", limit.explain()))
        .unwrap_or_default();
    out.push(format!(
        "scps gateway: {} of {} connections held{why}; {}",
        counters.held,
        counters.limit,
        counters.summary()
    ));
    if status.connections.is_empty() {
        out.push("no split connection is held".to_owned());
        return out;
    }
    let rows: Vec<[String; 9]> = std::iter::once(HEADER.map(str::to_owned))
        .chain(status.connections.iter().map(row))
        .collect();
    let mut widths = [0; 9];
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.len());
        }
    }
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push(cells.join("  ").trim_end().to_owned());
    }
    out
}

/// The lines before the counters: the gateway that answered, the socket
/// it was reached on, and, if it runs in another network namespace than
/// `here`, a line that says so.
fn about(status: &GatewayStatus, reached: &Reached, here: Option<&NetNamespace>) -> Vec<String> {
    let socket = format!("control socket {} ({})", reached.path.display(), reached.chosen);
    let Some(gateway) = &status.gateway else {
        return vec![
            "gateway of a version that does not say its process, configuration or namespace".to_owned(),
            socket,
        ];
    };
    let namespace = gateway.namespace.as_ref().map_or_else(
        || "namespace unknown".to_owned(),
        |n| format!("namespace {}", n.describe()),
    );
    let mut lines = vec![
        format!(
            "gateway pid {}, config {}, {}, {namespace}",
            gateway.pid,
            gateway.config,
            gateway.modes_text()
        ),
        socket,
    ];
    if let (Some(there), Some(here)) = (&gateway.namespace, here)
        && !there.same_as(here)
    {
        lines.push(format!(
            "this gateway runs in another network namespace ({}) than this command ({}): the connections \
             and counts below are that namespace's",
            there.describe(),
            here.describe()
        ));
    }
    lines
}

/// A connection's cells: no spaces within any, "-" for what is not known
/// (yet).
fn row(connection: &ConnectionStatus) -> [String; 9] {
    let link = connection.link.as_ref();
    [
        connection.client.to_string(),
        connection.destination.clone().unwrap_or_else(|| "-".to_owned()),
        connection.route.clone(),
        connection.state.name().to_owned(),
        format!("{:.1}s", connection.age_s),
        connection.lan_to_link_bytes.to_string(),
        connection.link_to_lan_bytes.to_string(),
        link.map_or_else(|| "-".to_owned(), |link| rate(link.send_rate_bps)),
        link.and_then(|link| link.srtt_s)
            .map_or_else(|| "-".to_owned(), |srtt| format!("{:.1}ms", srtt * 1e3)),
    ]
}

fn rate(bps: u64) -> String {
    match bps {
        b if b >= 1_000_000 => format!("{:.2}Mbit/s", b as f64 / 1e6),
        b if b >= 1_000 => format!("{:.1}kbit/s", b as f64 / 1e3),
        b => format!("{b}bit/s"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::control::GatewayIdentity;
    use crate::counters::{ConnectionLimit, Counters};

    fn namespace(inode: u64, name: Option<&str>, initial: bool) -> NetNamespace {
        NetNamespace {
            inode,
            name: name.map(str::to_owned),
            initial,
        }
    }

    /// A gateway's status with no connection, `limit` its limit's cause,
    /// run in `namespace`.
    fn status(limit: ConnectionLimit, namespace: NetNamespace) -> GatewayStatus {
        let counters = Counters::new(limit.limit as usize);
        GatewayStatus {
            gateway: Some(GatewayIdentity {
                pid: 1234,
                config: "/etc/scps/a.toml".into(),
                modes: vec!["transparent".into()],
                namespace: Some(namespace),
                control_socket: "/run/scps-gateway.sock".into(),
            }),
            limit: Some(limit),
            counters: counters.snapshot(),
            link_resent_bytes: 0,
            connections: Vec::new(),
        }
    }

    fn printed(status: &GatewayStatus, here: &NetNamespace) -> Vec<String> {
        let reached = Reached {
            path: "/run/scps-gateway.sock".into(),
            chosen: "the default".into(),
        };
        text(status, &reached, Some(here))
    }

    #[test]
    fn an_answer_is_written_as_its_document_or_as_text_seen_from_here() {
        let here = NetNamespace::current();
        let answer = Answer {
            reached: Reached {
                path: "/run/scps-gateway.sock".into(),
                chosen: "the default".into(),
            },
            document: r#"{"counters": {}}"#.into(),
            status: status(
                ConnectionLimit::new(4096, 1 << 30, 600_000, 1 << 20),
                namespace(4026532246, None, false),
            ),
        };
        let written = |json| {
            let mut out = Vec::new();
            answer.write_to(json, &mut out).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(written(true), "{\"counters\": {}}\n");
        let lines = text(&answer.status, &answer.reached, here.as_ref());
        assert!(lines.len() > 2, "{lines:?}");
        assert_eq!(
            written(false),
            lines.iter().map(|line| format!("{line}\n")).collect::<String>()
        );
    }

    #[test]
    fn the_text_names_the_gateway_its_socket_and_what_sets_its_limit() {
        let gw_a = namespace(4026531840, Some("gwA"), true);
        let limit = ConnectionLimit::new(4096, 1 << 30, 600_000, 1 << 20);
        let lines = printed(&status(limit, gw_a.clone()), &gw_a);
        assert_eq!(
            lines[0],
            "gateway pid 1234, config /etc/scps/a.toml, transparent, namespace 4026531840 (netns gwA)"
        );
        assert_eq!(lines[1], "control socket /run/scps-gateway.sock (the default)");
        assert!(
            lines[2].starts_with(
                "scps gateway: 0 of 894 connections held (the most relay.memory = 1024 MiB allows at 2 × 585.9 KiB \
                 per connection; relay.max_connections = 4096); connections closed 0,"
            ),
            "{lines:?}"
        );
        assert_eq!(lines[3], "no split connection is held");
    }

    #[test]
    fn the_first_default_a_gateway_answers_on_is_taken_and_those_before_it_named() {
        let dir = std::env::temp_dir().join(format!("scps-status-defaults-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (own, shared) = (dir.join("own.sock"), dir.join("shared.sock"));
        let paths = [
            (own.clone(), "this network namespace's default"),
            (shared.clone(), "the initial network namespace's default"),
        ];
        let Err(none) = ask_first(&paths) else {
            panic!("no gateway on either")
        };
        let none = none.to_string();
        assert!(
            none.starts_with(&format!(
                "no gateway answers on {} (this network namespace's default: ",
                own.display()
            )) && none.contains(&format!(
                ", nor on {} (the initial network namespace's default: ",
                shared.display()
            )),
            "{none}"
        );

        // A gateway on the second only: it answers, and the first is said
        // to have none.
        let listener = std::os::unix::net::UnixListener::bind(&shared).unwrap();
        let limit = ConnectionLimit::new(8, 1 << 30, 1 << 20, 1 << 20);
        let document = serde_json::to_string(&status(limit, namespace(1, None, true))).unwrap();
        let gateway = std::thread::spawn(move || {
            use std::io::{BufRead, Write};
            let (stream, _) = listener.accept().unwrap();
            let mut request = String::new();
            std::io::BufReader::new(&stream).read_line(&mut request).unwrap();
            assert_eq!(request, "status\n");
            (&stream).write_all(document.as_bytes()).unwrap();
        });
        let Answer {
            reached,
            status: answered,
            ..
        } = ask_first(&paths).unwrap();
        gateway.join().unwrap();
        assert_eq!(reached.path, shared);
        assert!(
            reached.chosen.starts_with(&format!(
                "the initial network namespace's default; no gateway answers on {} (this network namespace's \
                 default: ",
                own.display()
            )),
            "{}",
            reached.chosen
        );
        assert_eq!(answered.gateway.unwrap().pid, 1234);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_gateway_of_another_namespace_is_said_to_be() {
        let limit = ConnectionLimit::new(512, 1 << 30, 1 << 20, 1 << 20);
        let there = namespace(4026532246, None, false);
        let here = namespace(4026531840, None, true);
        let lines = printed(&status(limit, there), &here);
        assert_eq!(
            lines[2],
            "this gateway runs in another network namespace (4026532246 (unnamed)) than this command \
             (4026531840 (initial)): the connections and counts below are that namespace's"
        );
        assert!(
            lines[3].starts_with(
                "scps gateway: 0 of 512 connections held (relay.max_connections = 512; relay.memory = 1024 MiB \
                 allows 512 at 2 × 1024 KiB per connection);"
            ),
            "{lines:?}"
        );
    }
}
