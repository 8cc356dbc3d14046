//! `scps`: the one binary of the project.

mod allocator;
mod bench;
mod emulate;
mod gateway;
mod logging;
mod recv;
mod saratoga;
mod send;
mod sim;
mod status;
mod transfer;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "scps", version, about = "SCPS-TP transport, simulator and tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// How the libraries' events (connections, drops by cause, ...) are
    /// written to standard error: `text` or `json`, one object per line.
    /// Which events: RUST_LOG (default `warn`; e.g. RUST_LOG=scps_net=debug).
    #[arg(long, global = true, value_name = "FORMAT", default_value = "text")]
    log_format: logging::LogFormat,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario in the simulator (virtual time) and report each run
    /// against the physical limit of its link.
    Sim(sim::SimArgs),
    /// Compare stacks on the papers' scenarios, in the simulator (virtual
    /// time) or the testbed (namespaces, the live emulator, real
    /// programs), against the physical limit, with a report of plots and
    /// tables; resumable, and in shards. Without a scenario: the quick
    /// comparison on geo-8mbit in the testbed.
    Bench(bench::BenchArgs),
    /// Send a bulk transfer or a message stream to `scps recv`, over our
    /// stack (TUN or UDP-encapsulated) or the kernel's TCP.
    Send(send::SendArgs),
    /// Receive what `scps send` sends, check it and report.
    Recv(recv::RecvArgs),
    /// Emulate a link live between two interfaces (the channel models of
    /// `sim`, applied to real packets), or control a running emulator.
    Emulate(emulate::EmulateArgs),
    /// Run a gateway: carry TCP connections across the link as SCPS-TP
    /// (transparently, or by port forward or SOCKS5 over UDP
    /// encapsulation).
    Gateway(gateway::GatewayArgs),
    /// Ask a running gateway, through its control socket, for its counters
    /// and the split connections it holds.
    Status(status::StatusArgs),
    /// Saratoga file delivery over UDP: serve a directory, or put, get,
    /// list and delete files on a server.
    Saratoga(saratoga::SaratogaArgs),
}

fn writes_to_a_closed_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Exit status: 0 when everything ran and completed, 1 when some run
/// ended with an error (reported in its row or JSON object), 2 when the
/// command could not run at all (bad input, unwritable files).
fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    logging::init(cli.log_format);
    // Only `sim` writes nothing but its output: elsewhere a closed pipe
    // may be a socket, which is worth reporting.
    let output_only = matches!(cli.command, Command::Sim(_) | Command::Bench(_));
    let outcome = match cli.command {
        Command::Sim(args) => sim::main(args),
        Command::Bench(args) => bench::main(args),
        Command::Send(args) => return transfer::exit(send::main(args)),
        Command::Recv(args) => return transfer::exit(recv::main(args)),
        Command::Saratoga(args) => return transfer::exit(saratoga::main(args)),
        Command::Emulate(args) => emulate::main(args).map(|()| sim::Completion::All),
        Command::Gateway(args) => gateway::main(args).map(|()| sim::Completion::All),
        Command::Status(args) => status::main(args).map(|()| sim::Completion::All),
    };
    match outcome {
        Ok(sim::Completion::All) => std::process::ExitCode::SUCCESS,
        Ok(sim::Completion::SomeFailed { failed, total }) => {
            eprintln!("scps: {failed} of {total} runs did not complete (see their error)");
            std::process::ExitCode::from(1)
        }
        // `scps sim ... | head`: whoever reads the output has gone, so
        // there is no one left to tell; stop quietly, as `head` expects.
        Err(error) if output_only && writes_to_a_closed_pipe(&error) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("scps: {}", scps_transfer::error_text::error_text(&error));
            std::process::ExitCode::from(2)
        }
    }
}
