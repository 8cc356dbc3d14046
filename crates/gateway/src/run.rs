//! The gateway as `scps gateway --config FILE` runs it: its configuration
//! read from the file with what the options add, served until SIGINT
//! (Ctrl-C) or SIGTERM, the file read again on SIGHUP; and the lines that
//! tell whoever waits on it (scripts, tests, a supervisor) how it goes.

use std::io;
use std::path::{Path, PathBuf};

use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::config::{ControlConfig, GatewayConfig};
use crate::control;
use crate::gateway::{Gateway, GatewayError};

/// The configuration file, and what the options add to it.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    pub path: PathBuf,
    /// Capture the link connections to this pcap file (`--pcap`).
    pub capture: Option<PathBuf>,
    /// The control socket asked for (`--control`), in place of
    /// `control.socket` or the default path.
    pub control: Option<PathBuf>,
}

/// Why the configuration cannot be had. Each cause is part of the message
/// (not a source, which the command would print a second time).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read --config {path}: {error}")]
    Unreadable { path: String, error: io::Error },
    #[error(transparent)]
    Invalid(scps_config::Error),
}

/// Why a gateway could not run, or stopped otherwise than by a signal.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("cannot watch for {signal}: {error}")]
    Signal { signal: &'static str, error: io::Error },
    #[error(transparent)]
    Gateway(#[from] GatewayError),
    /// A line could not be told.
    #[error(transparent)]
    Told(#[from] io::Error),
}

impl ConfigFile {
    /// Reads and checks the file, and adds what the options say to it.
    pub fn read(&self) -> Result<GatewayConfig, ReadError> {
        let origin = self.path.display().to_string();
        let text =
            scps_config::text_file::read_config_text(&self.path).map_err(|error| ReadError::Unreadable {
                path: origin.clone(),
                error,
            })?;
        let mut config = GatewayConfig::parse(&text, &origin).map_err(ReadError::Invalid)?;
        config.capture = self.capture.clone();
        config.control = Some(match (&self.control, config.control.take()) {
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
}

/// Starts the gateway of `config`, read from `file`, and serves until
/// SIGINT or SIGTERM, reading `file` again on SIGHUP. `say` is told a
/// line once it serves ([`ready`]), one at each reload, and one once it
/// has stopped.
pub async fn until_stopped(
    file: &ConfigFile,
    config: GatewayConfig,
    mut say: impl FnMut(&str) -> io::Result<()>,
) -> Result<(), RunError> {
    let mut terminate = watch(SignalKind::terminate(), "SIGTERM")?;
    let mut hangup = watch(SignalKind::hangup(), "SIGHUP")?;
    let mut gateway = Gateway::start(config).await?;
    say(&ready(&gateway))?;
    loop {
        tokio::select! {
            _ = tokio::signal::ctrl_c() => break,
            _ = terminate.recv() => break,
            _ = hangup.recv() => say(&reload(&mut gateway, file))?,
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
    ))?;
    Ok(())
}

fn watch(kind: SignalKind, name: &'static str) -> Result<Signal, RunError> {
    signal(kind).map_err(|error| RunError::Signal { signal: name, error })
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

/// Reads `file` again and has `gateway` take it: the line that says how
/// that went.
fn reload(gateway: &mut Gateway, file: &ConfigFile) -> String {
    let reloaded = file.read().map_err(|e| e.to_string()).and_then(|new| {
        let transparent = new.transparent.is_some();
        let routes = gateway.reload(new).map_err(|e| e.to_string())?;
        Ok(transparent.then_some(routes))
    });
    reloaded_line(&file.path, reloaded)
}

/// `reloaded`: the routes taken (none in the explicit modes), or why the
/// reload was refused.
fn reloaded_line(path: &Path, reloaded: Result<Option<usize>, String>) -> String {
    match reloaded {
        // The explicit modes carry every connection on the one engine:
        // they have no routes to count.
        Ok(None) => format!("reloaded {}", path.display()),
        Ok(Some(1)) => format!("reloaded {}: 1 route", path.display()),
        Ok(Some(routes)) => format!("reloaded {}: {routes} routes", path.display()),
        Err(error) => format!("reload refused, the running configuration is kept: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reload_says_how_many_routes_it_took_or_why_it_was_refused() {
        let path = Path::new("/etc/scps/gw.toml");
        assert_eq!(reloaded_line(path, Ok(None)), "reloaded /etc/scps/gw.toml");
        assert_eq!(
            reloaded_line(path, Ok(Some(1))),
            "reloaded /etc/scps/gw.toml: 1 route"
        );
        assert_eq!(
            reloaded_line(path, Ok(Some(0))),
            "reloaded /etc/scps/gw.toml: 0 routes"
        );
        assert_eq!(
            reloaded_line(path, Err("[metrics] cannot change without a restart".into())),
            "reload refused, the running configuration is kept: [metrics] cannot change without a restart"
        );
    }

    /// A directory of this test's own, emptied.
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("scps-gateway-run-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// A far gateway of the explicit modes on loopback, its link not
    /// secured (so taking datagrams from its peer alone), with `more`
    /// added.
    fn far(more: &str) -> String {
        format!(
            "[link]\nudp = \"127.0.0.1:0\"\npeer = \"127.0.0.1:9\"\nsecurity = \"none\"\n\
             [[allow]]\nprefix = \"127.0.0.0/8\"\nports = \"22\"\n{more}"
        )
    }

    #[test]
    fn the_control_socket_is_the_options_then_the_files_then_the_default() {
        let dir = scratch("control");
        let path = dir.join("gw.toml");
        let mut file = ConfigFile {
            path: path.clone(),
            capture: None,
            control: None,
        };
        std::fs::write(&path, far("")).unwrap();
        let config = file.read().unwrap();
        assert_eq!(
            config.control,
            Some(ControlConfig {
                socket: control::default_socket_path(),
                required: false
            })
        );
        assert_eq!(config.capture, None);
        std::fs::write(&path, far("[control]\nsocket = \"/run/in-file.sock\"\n")).unwrap();
        assert_eq!(
            file.read().unwrap().control,
            Some(ControlConfig {
                socket: "/run/in-file.sock".into(),
                required: true
            })
        );
        file.control = Some("/run/option.sock".into());
        file.capture = Some(dir.join("link.pcap"));
        let config = file.read().unwrap();
        assert_eq!(
            config.control,
            Some(ControlConfig {
                socket: "/run/option.sock".into(),
                required: true
            })
        );
        assert_eq!(config.capture, Some(dir.join("link.pcap")));
    }

    #[test]
    fn a_missing_or_invalid_file_is_refused_naming_it() {
        let dir = scratch("refused");
        let file = ConfigFile {
            path: dir.join("gw.toml"),
            capture: None,
            control: None,
        };
        assert_eq!(
            file.read().unwrap_err().to_string(),
            format!(
                "cannot read --config {}: No such file or directory (os error 2)",
                file.path.display()
            )
        );
        std::fs::write(&file.path, far("[relay]\nbuffer = \"lots\"\n")).unwrap();
        let refused = file.read().unwrap_err().to_string();
        assert!(refused.contains("relay.buffer"), "{refused}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_running_gateway_says_where_it_is_reached_and_how_each_reload_went() {
        let dir = scratch("reload");
        let socket = dir.join("gw.sock");
        let file = ConfigFile {
            path: dir.join("gw.toml"),
            capture: None,
            control: Some(socket.clone()),
        };
        let text = far("[metrics]\nlisten = \"127.0.0.1:0\"\n");
        std::fs::write(&file.path, &text).unwrap();
        let mut gateway = Gateway::start(file.read().unwrap()).await.unwrap();
        let metrics = gateway.metrics_address().unwrap();
        assert_eq!(
            ready(&gateway),
            format!(
                "ready; control socket {}; metrics http://{metrics}/metrics",
                socket.display()
            )
        );
        assert_eq!(
            reload(&mut gateway, &file),
            format!("reloaded {}", file.path.display())
        );
        std::fs::write(&file.path, far("")).unwrap();
        assert_eq!(
            reload(&mut gateway, &file),
            "reload refused, the running configuration is kept: [metrics] cannot change without a restart"
        );
        std::fs::remove_file(&file.path).unwrap();
        assert_eq!(
            reload(&mut gateway, &file),
            format!(
                "reload refused, the running configuration is kept: cannot read --config {}: No such file \
                 or directory (os error 2)",
                file.path.display()
            )
        );
        gateway.stop().await.unwrap();
    }
}
