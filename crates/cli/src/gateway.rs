//! `scps gateway --config FILE`: the gateway library (`scps-gateway`) with
//! its configuration read from a file, running until Ctrl-C or SIGTERM.

use std::path::PathBuf;

use anyhow::Context;
use scps_gateway::config::GatewayConfig;
use scps_gateway::gateway::Gateway;

#[derive(Debug, clap::Args)]
pub struct GatewayArgs {
    /// The gateway's configuration (docs/gateway.md "Configuration").
    #[arg(long, value_name = "FILE")]
    config: PathBuf,
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
}

pub fn main(args: GatewayArgs) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.config)
        .with_context(|| format!("cannot read --config {}", args.config.display()))?;
    let mut config = GatewayConfig::parse(&text, &args.config.display().to_string())?;
    config.capture = args.pcap;
    if args.check {
        println!("{}: the configuration is valid", args.config.display());
        return Ok(());
    }
    if args.print_rules {
        match &config.transparent {
            Some(plumbing) => print!("{}", plumbing.describe()),
            None => anyhow::bail!("{}: no [transparent] section, so no rules", args.config.display()),
        }
        return Ok(());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the runtime")?;
    runtime.block_on(async {
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("cannot watch for SIGTERM")?;
        let gateway = Gateway::start(config).await?;
        // For whoever waits on it (scripts, tests, a supervisor): from here
        // on the gateway serves.
        println!("scps gateway: ready");
        std::io::Write::flush(&mut std::io::stdout())?;
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = terminate.recv() => {}
        }
        let counters = gateway.stop().await?;
        println!("scps gateway: stopped; {}", counters.summary());
        Ok(())
    })
}
