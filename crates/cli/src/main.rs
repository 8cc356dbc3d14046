//! `scps`: the one binary of the project.

mod emulate;
mod recv;
mod send;
mod sim;
mod table;
mod transfer;

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(name = "scps", version, about = "SCPS-TP transport, simulator and tools")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run a scenario in the simulator (virtual time) and report each run
    /// against the physical limit of its link.
    Sim(sim::SimArgs),
    /// Send a bulk transfer or a message stream to `scps recv`, over our
    /// stack (TUN or UDP-encapsulated) or the kernel's TCP.
    Send(send::SendArgs),
    /// Receive what `scps send` sends, check it and report.
    Recv(recv::RecvArgs),
    /// Emulate a link live between two interfaces (the channel models of
    /// `sim`, applied to real packets), or control a running emulator.
    Emulate(emulate::EmulateArgs),
}

/// Exit status: 0 when everything ran and completed, 1 when some run
/// ended with an error (reported in its row or JSON object), 2 when the
/// command could not run at all (bad input, unwritable files).
fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Sim(args) => sim::main(args),
        Command::Send(args) => return transfer::exit(send::main(args)),
        Command::Recv(args) => return transfer::exit(recv::main(args)),
        Command::Emulate(args) => emulate::main(args).map(|()| sim::Completion::All),
    };
    match outcome {
        Ok(sim::Completion::All) => std::process::ExitCode::SUCCESS,
        Ok(sim::Completion::SomeFailed { failed, total }) => {
            eprintln!("scps: {failed} of {total} runs did not complete (see their error)");
            std::process::ExitCode::from(1)
        }
        Err(error) => {
            eprintln!("scps: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}
