//! `scps gateway --config FILE`: the gateway library (`scps-gateway`) with
//! its configuration read from a file, running until Ctrl-C or SIGTERM;
//! SIGHUP reads the file again and takes its routes. Its control socket
//! (for `scps status`) is `--control`, `control.socket`, or the default
//! path, taken if it can be. `scps gateway keygen FILE` makes the key the
//! secure link between two gateways authenticates with, and `pubkey`
//! prints a key's public half.

use std::path::PathBuf;

use anyhow::Context;
use scps_gateway::run::{self, ConfigFile};

#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
pub struct GatewayArgs {
    /// The gateway's configuration (docs/gateway.md "Configuration").
    #[arg(long, value_name = "FILE", required = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<KeyCommand>,
    /// Check the configuration and exit.
    #[arg(long)]
    check: bool,
    /// Print the nftables rules, policy routes and settings the
    /// transparent mode installs, and exit (for operators who manage
    /// their own).
    #[arg(long)]
    print_rules: bool,
    /// Capture every packet of the link connections, both ways, to FILE
    /// (pcap; with both the transparent and an explicit mode, the
    /// explicit one's goes to FILE.explicit.pcap).
    #[arg(long, value_name = "FILE")]
    pcap: Option<PathBuf>,
    /// The control socket `scps status` asks (instead of `control.socket`
    /// or the default: /run/scps-gateway.sock for root, otherwise
    /// $XDG_RUNTIME_DIR/scps-gateway.sock or /tmp/scps-gateway-UID.sock;
    /// in a network namespace other than the initial one, `-netINODE`
    /// before `.sock`, the namespace's inode, so that gateways of several
    /// namespaces of one host do not meet on one socket).
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,
}

#[derive(Debug, clap::Subcommand)]
enum KeyCommand {
    /// Make a private key for the secure link between two gateways in FILE
    /// (mode 0600; an existing file is never overwritten), and print its
    /// public key for the far gateway's `link.peer_public_key`.
    Keygen {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Print the public key of the private key in FILE.
    Pubkey {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
}

/// The public key on standard output alone, for scripts; what it is for
/// on standard error.
fn keys(command: &KeyCommand) -> anyhow::Result<()> {
    let public = match command {
        KeyCommand::Keygen { file } => {
            let public = scps_gateway::keys::keygen(file)?;
            eprintln!(
                "scps gateway keygen: wrote {} (mode 0600, this gateway's link.private_key_file); its public \
                 key, for the far gateway's link.peer_public_key:",
                file.display()
            );
            public
        }
        KeyCommand::Pubkey { file } => scps_gateway::keys::read_private_key(file)?.public_key(),
    };
    println!("{public}");
    Ok(())
}

pub fn main(args: GatewayArgs) -> anyhow::Result<()> {
    if let Some(command) = &args.command {
        return keys(command);
    }
    let file = ConfigFile {
        path: args.config.expect("clap requires --config without a subcommand"),
        capture: args.pcap,
        control: args.control,
    };
    let (config, path) = (file.read()?, file.path.display());
    if args.check {
        println!("{path}: the configuration is valid");
        return Ok(());
    }
    if args.print_rules {
        match &config.transparent {
            Some(plumbing) => print!("{}", plumbing.describe(&config.routes)),
            None => anyhow::bail!("{path}: no [transparent] section, so no rules"),
        }
        return Ok(());
    }
    crate::allocator::give_back_freed_memory();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    Ok(runtime.block_on(run::until_stopped(&file, config, say))?)
}

/// One line on standard output, at once (for a supervisor or a test
/// waiting on it).
fn say(what: &str) -> std::io::Result<()> {
    println!("scps gateway: {what}");
    std::io::Write::flush(&mut std::io::stdout())
}
