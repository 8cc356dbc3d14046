//! `scps gateway --config FILE`: the gateway library (`scps-gateway`) with
//! its configuration read from a file, running until Ctrl-C or SIGTERM;
//! SIGHUP reads the file again and takes its routes. Its control socket
//! (for `scps status`) is `--control`, `control.socket`, or the default
//! path, taken if it can be. `scps gateway keygen FILE` makes the key the
//! secure link between two gateways authenticates with, and `pubkey`
//! prints a key's public half.

use std::path::PathBuf;

use anyhow::Context;
use scps_gateway::config::{ControlConfig, GatewayConfig};
use scps_gateway::control;
use scps_gateway::gateway::Gateway;

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

/// Reads and checks the configuration file, and adds what the arguments
/// say to it.
fn read_config(path: &std::path::Path, args: &GatewayArgs) -> anyhow::Result<GatewayConfig> {
    let text = scps_config::text_file::read_config_text(path)
        .with_context(|| format!("cannot read --config {}", path.display()))?;
    let mut config = GatewayConfig::parse(&text, &path.display().to_string())?;
    config.capture = args.pcap.clone();
    config.control = Some(match (&args.control, config.control.take()) {
        (Some(socket), _) => ControlConfig {
            socket: socket.clone(),
            required: true,
        },
        (None, Some(configured)) => configured,
        (None, None) => ControlConfig {
            socket: control::default_socket_path(),
            required: false,
        },
    });
    Ok(config)
}

pub fn main(args: GatewayArgs) -> anyhow::Result<()> {
    if let Some(command) = &args.command {
        return keys(command);
    }
    let path = args
        .config
        .as_deref()
        .expect("clap requires --config without a subcommand");
    let config = read_config(path, &args)?;
    if args.check {
        println!("{}: the configuration is valid", path.display());
        return Ok(());
    }
    if args.print_rules {
        match &config.transparent {
            Some(plumbing) => print!("{}", plumbing.describe(&config.routes)),
            None => anyhow::bail!("{}: no [transparent] section, so no rules", path.display()),
        }
        return Ok(());
    }
    crate::allocator::give_back_freed_memory();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut terminate = signal(SignalKind::terminate()).context("cannot watch for SIGTERM")?;
        let mut hangup = signal(SignalKind::hangup()).context("cannot watch for SIGHUP")?;
        let mut gateway = Gateway::start(config).await?;
        // For whoever waits on it (scripts, tests, a supervisor): from here
        // on the gateway serves.
        say(&ready(&gateway))?;
        loop {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = terminate.recv() => break,
                _ = hangup.recv() => {
                    let reloaded = read_config(path, &args).and_then(|new| {
                        let transparent = new.transparent.is_some();
                        Ok((transparent, gateway.reload(new)?))
                    });
                    match reloaded {
                        // The explicit modes carry every connection on the
                        // one engine: they have no routes to count.
                        Ok((false, _)) => say(&format!("reloaded {}", path.display()))?,
                        Ok((true, 1)) => say(&format!("reloaded {}: 1 route", path.display()))?,
                        Ok((true, routes)) => say(&format!("reloaded {}: {routes} routes", path.display()))?,
                        Err(err) => say(&format!(
                            "reload refused, the running configuration is kept: {}",
                            scps_transfer::error_text::error_text(&err)
                        ))?,
                    }
                }
            }
        }
        let live = gateway.live_connections();
        let counters = gateway.stop().await?;
        let relayed = live.relayed();
        say(&format!(
            "stopped; {}; bytes relayed from the LAN to the link {}, from the link to the LAN {}",
            counters.summary(),
            relayed.lan_to_link,
            relayed.link_to_lan
        ))
    })
}

/// The line that says the gateway serves, and where an operator reaches
/// it.
fn ready(gateway: &Gateway) -> String {
    let mut line = "ready".to_owned();
    match gateway.control_socket() {
        Some(path) => line.push_str(&format!("; control socket {}", path.display())),
        None => line.push_str("; no control socket"),
    }
    if let Some(metrics) = gateway.metrics_address() {
        line.push_str(&format!("; metrics http://{metrics}/metrics"));
    }
    line
}

/// One line on standard output, at once (for a supervisor or a test
/// waiting on it).
fn say(what: &str) -> anyhow::Result<()> {
    println!("scps gateway: {what}");
    std::io::Write::flush(&mut std::io::stdout())?;
    Ok(())
}
