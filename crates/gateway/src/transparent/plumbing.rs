//! What the kernel must do for the transparent mode, installed on start
//! and removed on every exit (DESIGN.md "The gateway"):
//!
//! - **interception**: TCP from the LAN interface between a local and a
//!   remote prefix goes to the gateway's `IP_TRANSPARENT` listener
//!   (nftables TPROXY, a firewall mark, and a `local` route for marked
//!   packets in a table of its own); LAN packets of the sockets the
//!   gateway opened or accepted transparently are marked and delivered
//!   the same way (`socket transparent`). Only LAN packets: the link
//!   connection of an intercepted one has the very same addresses and
//!   ports, and its packets, leaving the TUN device, must be forwarded,
//!   not delivered to the intercepted socket;
//! - **steering**: TCP and compressed SCPS-TP (IP protocol 105) arriving
//!   on the link interface from a remote prefix to a local one is routed
//!   into the gateway's TUN device (a policy rule on the incoming
//!   interface and a table whose default route is the device), where the
//!   engine reads it.
//!
//! Everything else is routed by the kernel as if the gateway were a plain
//! router. IPv4 only for now.
//!
//! One kernel setting changes while the mode runs: TCP early demux is
//! turned off (`net.ipv4.tcp_early_demux`, restored on exit). The link
//! connection of an intercepted connection has its very addresses and
//! ports, so early demux would find the intercepted socket for the link
//! packets leaving the TUN device, and the kernel drops a packet to
//! forward that a local socket has claimed.

use std::process::{Command, Stdio};

use scps_node::IpPrefix;

/// Turned off while the mode runs (see the module's documentation).
const EARLY_DEMUX: &str = "net.ipv4.tcp_early_demux";

/// The IP protocol of compressed SCPS-TP headers.
const IPPROTO_SCPS_COMPRESSED: u8 = 105;

/// What the transparent mode installs, from its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plumbing {
    pub lan: String,
    pub link: String,
    pub tun: String,
    pub local: Vec<IpPrefix>,
    pub remote: Vec<IpPrefix>,
    /// The interception listener's port.
    pub port: u16,
    pub mark: u32,
    /// Routing tables `table` (local delivery of marked packets) and
    /// `table + 1` (into the TUN device); the policy rules have those
    /// numbers as priorities, so that they can be found and removed.
    pub table: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum PlumbingError {
    #[error("cannot run `{command}`: {error} (is {program} installed?)")]
    Spawn {
        command: String,
        program: &'static str,
        error: std::io::Error,
    },
    #[error("`{command}` failed: {message}")]
    Failed { command: String, message: String },
    #[error("{setting} is {value}: {why}")]
    Setting {
        setting: String,
        value: String,
        why: &'static str,
    },
}

impl Plumbing {
    fn nft_table(&self) -> String {
        format!("scps_gateway_{}", self.port)
    }

    /// The nftables script of the interception.
    pub fn nft_script(&self) -> String {
        let set = |prefixes: &[IpPrefix]| {
            prefixes
                .iter()
                .map(IpPrefix::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "table ip {table} {{\n\
             \tchain prerouting {{\n\
             \t\ttype filter hook prerouting priority mangle; policy accept;\n\
             \t\tiifname \"{lan}\" meta l4proto tcp socket transparent 1 meta mark set {mark:#x} accept\n\
             \t\tiifname \"{lan}\" meta l4proto tcp ip saddr {{ {local} }} ip daddr {{ {remote} }} \
             tproxy to :{port} meta mark set {mark:#x} accept\n\
             \t}}\n\
             }}\n",
            table = self.nft_table(),
            mark = self.mark,
            lan = self.lan,
            local = set(&self.local),
            remote = set(&self.remote),
            port = self.port,
        )
    }

    /// The `ip` commands of the policy routing, in the order they run.
    pub fn ip_commands(&self) -> Vec<Vec<String>> {
        let (deliver, steer) = (self.table, self.table + 1);
        let mut commands = vec![
            words(&format!(
                "-4 rule add fwmark {:#x} lookup {deliver} priority {deliver}",
                self.mark
            )),
            words(&format!("-4 route add local 0.0.0.0/0 dev lo table {deliver}")),
        ];
        for remote in &self.remote {
            for local in &self.local {
                for protocol in ["tcp".to_owned(), IPPROTO_SCPS_COMPRESSED.to_string()] {
                    commands.push(words(&format!(
                        "-4 rule add iif {} ipproto {protocol} from {remote} to {local} lookup {steer} priority {steer}",
                        self.link
                    )));
                }
            }
        }
        commands.push(words(&format!(
            "-4 route add default dev {} table {steer}",
            self.tun
        )));
        commands
    }

    /// Everything installed, as an operator who manages their own rules
    /// would write it (`--print-rules`).
    pub fn describe(&self) -> String {
        let mut text = format!("# nft -f - <<'EOF'\n{}# EOF\n", self.nft_script());
        for command in self.ip_commands() {
            text.push_str(&format!("ip {}\n", command.join(" ")));
        }
        text.push_str(&format!(
            "sysctl -w net.ipv4.conf.{}.rp_filter=0   # the TUN device carries the clients' addresses\n",
            self.tun
        ));
        text.push_str(&format!(
            "sysctl -w {EARLY_DEMUX}=0   # link packets have the intercepted sockets' addresses and ports\n"
        ));
        text
    }

    /// Checks the kernel settings the mode depends on (before anything is
    /// made, so that a refusal leaves nothing behind).
    pub fn check_settings(&self) -> Result<(), PlumbingError> {
        check_setting(
            "net.ipv4.ip_forward",
            |v| v == "1",
            "the gateway forwards its link packets: set it to 1",
        )?;
        check_setting(
            "net.ipv4.conf.all.rp_filter",
            |v| v != "1",
            "strict reverse-path filtering drops the clients' packets the TUN device carries: set it to 0 or 2",
        )
    }

    /// Installs the interception and the steering (after removing what a
    /// gateway of the same configuration may have left, killed before it
    /// could). The TUN device must exist. Undone when the result is
    /// dropped.
    pub fn install(self) -> Result<Installed, PlumbingError> {
        self.remove();
        let early_demux = read_setting(EARLY_DEMUX);
        // From here on, whatever fails is undone by the guard's drop.
        let installed = Installed {
            plumbing: self,
            early_demux,
        };
        let plumbing = &installed.plumbing;
        // The path by hand: an interface name may hold dots.
        write_proc(&format!("net/ipv4/conf/{}/rp_filter", plumbing.tun), "0")?;
        write_proc(&EARLY_DEMUX.replace('.', "/"), "0")?;
        run("nft", &["-f", "-"], Some(&plumbing.nft_script()))?;
        for command in plumbing.ip_commands() {
            let args: Vec<&str> = command.iter().map(String::as_str).collect();
            run("ip", &args, None)?;
        }
        tracing::info!(table = %plumbing.nft_table(), "interception and steering installed");
        Ok(installed)
    }

    /// Removes what `install` installs, ignoring what is not there.
    fn remove(&self) {
        let _ = run("nft", &["delete", "table", "ip", &self.nft_table()], None);
        for priority in [self.table, self.table + 1] {
            // One rule per call: until none of that priority is left.
            let priority = priority.to_string();
            while run("ip", &["-4", "rule", "del", "priority", &priority], None).is_ok() {}
        }
        for table in [self.table, self.table + 1] {
            let _ = run("ip", &["-4", "route", "flush", "table", &table.to_string()], None);
        }
    }
}

/// The installed plumbing; dropping it removes it.
#[derive(Debug)]
pub struct Installed {
    plumbing: Plumbing,
    /// `net.ipv4.tcp_early_demux` before, to restore.
    early_demux: String,
}

impl Drop for Installed {
    fn drop(&mut self) {
        self.plumbing.remove();
        if !self.early_demux.is_empty() {
            let _ = write_proc(&EARLY_DEMUX.replace('.', "/"), &self.early_demux);
        }
        tracing::info!("interception and steering removed");
    }
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_owned).collect()
}

fn run(program: &'static str, args: &[&str], stdin: Option<&str>) -> Result<(), PlumbingError> {
    let command = format!("{program} {}", args.join(" "));
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|error| PlumbingError::Spawn {
            command: command.clone(),
            program,
            error,
        })?;
    if let (Some(text), Some(mut input)) = (stdin, child.stdin.take()) {
        use std::io::Write;
        input
            .write_all(text.as_bytes())
            .map_err(|e| PlumbingError::Failed {
                command: command.clone(),
                message: e.to_string(),
            })?;
    }
    let output = child.wait_with_output().map_err(|e| PlumbingError::Failed {
        command: command.clone(),
        message: e.to_string(),
    })?;
    if output.status.success() {
        Ok(())
    } else {
        Err(PlumbingError::Failed {
            command,
            message: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
        })
    }
}

fn sysctl_path(setting: &str) -> String {
    format!("/proc/sys/{}", setting.replace('.', "/"))
}

/// A sysctl's value, empty if it cannot be read.
fn read_setting(setting: &str) -> String {
    std::fs::read_to_string(sysctl_path(setting))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

fn check_setting(setting: &str, ok: impl Fn(&str) -> bool, why: &'static str) -> Result<(), PlumbingError> {
    let value = read_setting(setting);
    let value = value.as_str();
    if ok(value) {
        Ok(())
    } else {
        Err(PlumbingError::Setting {
            setting: setting.to_owned(),
            value: value.to_owned(),
            why,
        })
    }
}

/// Writes `value` to `/proc/sys/{path}`.
fn write_proc(path: &str, value: &str) -> Result<(), PlumbingError> {
    let file = format!("/proc/sys/{path}");
    std::fs::write(&file, value).map_err(|e| PlumbingError::Failed {
        command: format!("echo {value} > {file}"),
        message: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rules_name_the_interfaces_prefixes_and_tables() {
        let plumbing = Plumbing {
            lan: "lan0".into(),
            link: "sat0".into(),
            tun: "scpsgw0".into(),
            local: vec!["10.99.1.0/24".parse().unwrap()],
            remote: vec!["10.99.4.0/24".parse().unwrap(), "10.98.0.0/16".parse().unwrap()],
            port: 7301,
            mark: 0x5c,
            table: 153,
        };
        let script = plumbing.nft_script();
        assert!(script.contains("table ip scps_gateway_7301"), "{script}");
        assert!(
            script.contains("iifname \"lan0\" meta l4proto tcp ip saddr { 10.99.1.0/24 } ip daddr { 10.99.4.0/24, 10.98.0.0/16 } tproxy to :7301 meta mark set 0x5c accept"),
            "{script}"
        );
        let commands: Vec<String> = plumbing.ip_commands().iter().map(|c| c.join(" ")).collect();
        assert_eq!(commands[0], "-4 rule add fwmark 0x5c lookup 153 priority 153");
        assert_eq!(commands[1], "-4 route add local 0.0.0.0/0 dev lo table 153");
        assert!(
            commands.contains(
                &"-4 rule add iif sat0 ipproto 105 from 10.98.0.0/16 to 10.99.1.0/24 lookup 154 priority 154"
                    .to_owned()
            )
        );
        assert_eq!(commands.len(), 2 + 2 * 2 + 1);
        assert_eq!(
            commands.last().unwrap(),
            "-4 route add default dev scpsgw0 table 154"
        );
        let described = plumbing.describe();
        assert!(
            described.contains("ip -4 route add default dev scpsgw0 table 154"),
            "{described}"
        );
        assert!(described.contains("rp_filter=0"), "{described}");
        assert!(described.contains("net.ipv4.tcp_early_demux=0"), "{described}");
    }
}
