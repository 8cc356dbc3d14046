//! `scps recv (--udp ADDR:PORT | --tun NAME --addr A/P | --tcp) [--port P] [--output FILE] [--once]`

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use scps_config::Direction;
use scps_config::units::parse_duration;
use scps_node::address_text::parse_bind_socket;
use scps_transfer::recv::ServeOptions;
use scps_transfer::{DEFAULT_BACKLOG, Role, Stack, StackOptions, Transport};
use scps_workload::files;

use crate::transfer::args::CommonArgs;
use crate::transfer::{Outcome, say, teller};

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
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "10s")]
    hello_timeout: Duration,
    /// A connection on which nothing arrives for this long is reset (the
    /// peer may still answer keepalive probes; it is not using the
    /// connection).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration, default_value = "120s")]
    idle_timeout: Duration,
    /// Connections held before they are served, handshaking ones
    /// included; beyond it SYNs are answered with SYN cookies, so a SYN
    /// flood neither keeps clients out nor grows memory.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_BACKLOG, value_parser = clap::value_parser!(u16).range(1..))]
    backlog: u16,
}

impl RecvArgs {
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
    let transport = args.common.path(args.udp, None).transport(Role::Receiver)?;
    if let Some(output) = &args.output {
        files::check_output(output)?;
    }
    scps_transfer::runtime()?.block_on(run(args, transport))
}

async fn run(args: RecvArgs, transport: Transport) -> anyhow::Result<Outcome> {
    let mut interrupt = scps_transfer::interrupts()?;
    let options = StackOptions {
        backlog: args.backlog,
        ..args.common.stack_options(Duration::from_secs(20))
    };
    let stack = Stack::start(&transport, &options, Direction::Reverse)?;
    // Where it listens and what it did on its own on standard error; each
    // connection's report on standard output.
    let tell = teller(args.common.json);
    let served = scps_transfer::recv::serve(&stack, &args.serve_options(), &mut interrupt, &tell).await?;
    say(served.said(), args.common.json);
    stack.close().await?;
    Ok(served.outcome())
}
