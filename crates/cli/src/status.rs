//! `scps status`: a running gateway's status, asked through its control
//! socket (`scps_gateway::status`), printed as text or, with `--json`, as
//! the gateway's document as it came.

use std::path::PathBuf;

use anyhow::Context;
use scps_gateway::status;

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

pub fn main(args: StatusArgs) -> anyhow::Result<()> {
    let answer = status::ask(args.control)?;
    match answer.write_to(args.json, &mut std::io::stdout().lock()) {
        // `scps status | head`: the reader has what it wanted.
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        written => written.context("cannot write the status"),
    }
}
