//! `scps`: the one binary of the project.

mod sim;
mod table;

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
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Sim(args) => sim::main(args),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("scps: {error:#}");
            std::process::ExitCode::from(2)
        }
    }
}
