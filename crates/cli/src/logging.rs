//! What the libraries report through `tracing` (connections opened and
//! closed, packets dropped by cause, peers found unreachable, the
//! emulator's timeline), written to standard error: as text or as one
//! JSON object per line (`--log-format`), filtered by `RUST_LOG`
//! (`RUST_LOG=scps_net=debug`, say). Only warnings by default, so that
//! the tools' own output is all one sees unless one asks for more.

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// Starts writing the libraries' events to standard error.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, not in a file.
        .with_ansi(std::io::stderr().is_terminal());
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}
