//! `scps status`: asks a running gateway, through its control socket, for
//! its counters and the split connections it holds, and prints who
//! answered (its process, configuration file, modes and network
//! namespace, and the socket it was reached on), a line of counters and a
//! row per connection (or, with `--json`, the gateway's document as it
//! came).
//!
//! Without `--control` it tries its own network namespace's default
//! socket first, then the initial namespace's (control.rs), and says
//! plainly when the gateway that answered runs in another namespace than
//! itself: its connections are not this namespace's.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use scps_gateway::control::{self, ControlError, GatewayStatus};
use scps_gateway::netns::NetNamespace;
use scps_gateway::registry::ConnectionStatus;

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The gateway's control socket (default: as `scps gateway`'s,
    /// /run/scps-gateway.sock for root, otherwise
    /// $XDG_RUNTIME_DIR/scps-gateway.sock or /tmp/scps-gateway-UID.sock,
    /// with -netINODE before .sock in a network namespace other than the
    /// initial one; that namespace's is tried first, then the initial
    /// one's).
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// Print the gateway's JSON document (docs/gateway.md "Operations").
    #[arg(long)]
    json: bool,
}

/// The socket a gateway answered on, and how it was chosen.
struct Reached {
    path: PathBuf,
    chosen: String,
}

pub fn main(args: StatusArgs) -> anyhow::Result<()> {
    let (reached, document, status) = match args.control {
        Some(path) => {
            let (document, status) = control::ask_status(&path)?;
            let reached = Reached {
                path,
                chosen: "given with --control".to_owned(),
            };
            (reached, document, status)
        }
        None => ask_defaults(&control::default_socket_paths())?,
    };
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{document}")
    } else {
        print(&status, &reached, NetNamespace::current().as_ref(), &mut out)
    };
    match written {
        // `scps status | head`: the reader has what it wanted.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written.context("cannot write the status"),
    }
}

/// Asks the first of `paths` a gateway answers on (one that answers
/// wrongly ends the search: a gateway is there). Fails naming every path
/// tried when none has a gateway.
fn ask_defaults(paths: &[(PathBuf, &'static str)]) -> anyhow::Result<(Reached, String, GatewayStatus)> {
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
                return Ok((reached, document, status));
            }
            Err(ControlError::NoGateway { error, .. }) => {
                tried.push(format!("{} ({what}: {error})", path.display()));
            }
            Err(error) => return Err(error.into()),
        }
    }
    anyhow::bail!(
        "no gateway answers on {} (give a gateway's socket with --control PATH)",
        tried.join(", nor on ")
    )
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

/// The text: who answered, where, and what it holds. `here` is the
/// namespace `scps status` runs in.
fn print(
    status: &GatewayStatus,
    reached: &Reached,
    here: Option<&NetNamespace>,
    out: &mut impl Write,
) -> std::io::Result<()> {
    for line in about(status, reached, here) {
        writeln!(out, "{line}")?;
    }
    let counters = &status.counters;
    let why = status
        .limit
        .as_ref()
        .map(|limit| format!(" ({})", limit.explain()))
        .unwrap_or_default();
    writeln!(
        out,
        "scps gateway: {} of {} connections held{why}; {}",
        counters.held,
        counters.limit,
        counters.summary()
    )?;
    if status.connections.is_empty() {
        return writeln!(out, "no split connection is held");
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
        writeln!(out, "{}", cells.join("  ").trim_end())?;
    }
    Ok(())
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
    use scps_gateway::control::GatewayIdentity;
    use scps_gateway::counters::{ConnectionLimit, Counters};

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
        let mut out = Vec::new();
        print(status, &reached, Some(here), &mut out).unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
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
        let Err(none) = ask_defaults(&paths) else {
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
        let (reached, _, answered) = ask_defaults(&paths).unwrap();
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
