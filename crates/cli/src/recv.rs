//! `scps recv (--udp BIND | --tun NAME --addr A/P | --tcp) [--port P] [--output FILE] [--once]`

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use scps_config::Direction;
use scps_transfer::recv::{ServeOptions, Served};
use scps_transfer::{DEFAULT_BACKLOG, News, Stack, StackOptions, Tell, Transport};
use scps_workload::files;

use crate::transfer::args::{CommonArgs, parse_bind_socket, parse_time};
use crate::transfer::{Outcome, interrupts, print_report};

#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  \
    scps recv --udp 0.0.0.0:7168 --once\n  \
    scps recv --tun scps0 --addr 10.9.0.1/24 --output received.iso --once\n  \
    scps recv --tcp --port 5001")]
pub struct RecvArgs {
    /// Our stack, UDP-encapsulated: the UDP address to receive on.
    #[arg(long, value_name = "ADDR:PORT", group = "path", value_parser = parse_bind_socket)]
    udp: Option<SocketAddr>,
    #[command(flatten)]
    common: CommonArgs,
    /// The port to accept connections on.
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Write a bulk transfer's bytes to this file. It appears under this
    /// name only once complete and verified.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Serve one connection, then exit with its status (default: serve
    /// until Ctrl-C).
    #[arg(long)]
    once: bool,
    /// Plain bytes (ttcp-like) from any TCP client: read what arrives until
    /// the client closes, no hello, no digest, no report back; print the
    /// bytes and their SHA-256 (--output keeps them once the stream has
    /// ended in order).
    #[arg(long)]
    raw: bool,
    /// Connections served at once; one more is reset at once (a client
    /// holding a connection cannot keep others out).
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u16).range(1..=1024))]
    max_connections: u16,
    /// A connection whose sender has not named its workload this long
    /// after the connection opened is reset.
    #[arg(long, value_name = "DURATION", value_parser = parse_time, default_value = "10s")]
    hello_timeout: Duration,
    /// A connection on which nothing arrives for this long is reset (the
    /// peer may still answer keepalive probes; it is not using the
    /// connection).
    #[arg(long, value_name = "DURATION", value_parser = parse_time, default_value = "120s")]
    idle_timeout: Duration,
    /// Connections held before they are served, handshaking ones
    /// included; beyond it SYNs are answered with SYN cookies, so a SYN
    /// flood neither keeps clients out nor grows memory.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BACKLOG, value_parser = clap::value_parser!(u16).range(1..))]
    backlog: u16,
}

impl RecvArgs {
    fn transport(&self) -> Transport {
        if let Some(bundle) = self.common.bundle_transport() {
            bundle
        } else if let Some(bind) = self.udp {
            Transport::Udp {
                bind,
                peer: None,
                encapsulation: self.common.encapsulation(),
            }
        } else if let Some(name) = &self.common.tun {
            Transport::Tun {
                name: name.clone(),
                addrs: self.common.addrs.clone(),
            }
        } else {
            self.common.kernel_transport()
        }
    }

    fn serve_options(&self) -> ServeOptions {
        ServeOptions {
            port: self.port,
            raw: self.raw,
            output: self.output.clone(),
            max_connections: self.max_connections,
            hello_timeout: self.hello_timeout,
            idle_timeout: self.idle_timeout,
            once: self.once,
        }
    }
}

pub fn main(args: RecvArgs) -> anyhow::Result<Outcome> {
    if args.udp.is_none()
        && args.common.tun.is_none()
        && !args.common.kernel()
        && args.common.bundle_transport().is_none()
    {
        bail!(
            "choose a path: --udp ADDR:PORT, --channel SPEC (repeated), --bundle, --tun NAME --addr ADDRESS/PREFIX, or --tcp"
        );
    }
    if args.common.encapsulation.is_some() && args.udp.is_none() {
        bail!("--encapsulation wraps the UDP path's packets: it needs --udp ADDR:PORT");
    }
    if let Some(output) = &args.output {
        files::check_output(output)?;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(run(args))
}

async fn run(args: RecvArgs) -> anyhow::Result<Outcome> {
    let mut interrupt = interrupts()?;
    let options = StackOptions {
        backlog: args.backlog,
        ..args.common.stack_options(Duration::from_secs(20))
    };
    let stack = Stack::start(&args.transport(), &options, Direction::Reverse)?;
    let (json, max_connections) = (args.common.json, args.max_connections);
    let tell: Tell = Arc::new(move |news| say(news, json, max_connections));
    let served = scps_transfer::recv::serve(&stack, &args.serve_options(), &mut interrupt, &tell).await?;
    let outcome = match served {
        Served::Complete => Outcome::Complete,
        Served::Failed => Outcome::Failed,
        Served::Interrupted { reset } => {
            if reset > 0 {
                eprintln!("scps recv: interrupted; {reset} connection(s) reset and no partial file kept");
            }
            Outcome::Interrupted
        }
    };
    stack.close().await?;
    Ok(outcome)
}

/// What a receiver says as it serves: on standard error where it listens
/// and what it did on its own; each connection's report on standard
/// output.
fn say(news: News, json: bool, max_connections: u16) {
    match news {
        // Scripts (and the tests) read this line to learn the ports.
        News::Listening {
            path,
            port,
            udp,
            channels,
        } => match (udp, channels) {
            (Some(udp), _) => eprintln!("scps recv: {path} listening on port {port} (UDP {udp})"),
            (None, Some(channels)) => eprintln!(
                "scps recv: {path} listening on port {port} (channels {})",
                channels
                    .iter()
                    .map(|c| format!("{} -> {}", c.local, c.peer))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            (None, None) => eprintln!("scps recv: {path} listening on port {port}"),
        },
        News::StaleRemoved(stale) => eprintln!(
            "scps recv: removed {}, left by a receiver that is gone",
            stale.display()
        ),
        News::Refused { peer } => eprintln!(
            "scps recv: reset a connection from {peer}: {max_connections} are being served already \
             (--max-connections)"
        ),
        News::Report(report) => print_report(&report, json),
        News::Unknown(why) => eprintln!("scps: {why}"),
    }
}
