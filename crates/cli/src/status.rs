//! `scps status`: asks a running gateway, through its control socket, for
//! its counters and the split connections it holds, and prints a line of
//! counters and a row per connection (or, with `--json`, the gateway's
//! document as it came).

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use scps_gateway::control::{self, GatewayStatus};
use scps_gateway::registry::ConnectionStatus;

#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The gateway's control socket (default: as `scps gateway`'s,
    /// /run/scps-gateway.sock for root, otherwise
    /// $XDG_RUNTIME_DIR/scps-gateway.sock or /tmp/scps-gateway-UID.sock).
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
    /// Print the gateway's JSON document (docs/gateway.md "Operations").
    #[arg(long)]
    json: bool,
}

pub fn main(args: StatusArgs) -> anyhow::Result<()> {
    let path = args.control.unwrap_or_else(control::default_socket_path);
    let (document, status) = control::ask_status(&path)?;
    let mut out = std::io::stdout().lock();
    let written = if args.json {
        writeln!(out, "{document}")
    } else {
        print(&status, &mut out)
    };
    match written {
        // `scps status | head`: the reader has what it wanted.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written.context("cannot write the status"),
    }
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

fn print(status: &GatewayStatus, out: &mut impl Write) -> std::io::Result<()> {
    let counters = &status.counters;
    writeln!(
        out,
        "scps gateway: {} of {} connections held; {}",
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
