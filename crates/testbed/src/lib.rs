//! Network-namespace testbeds (docs/architecture.md, "In the testbed,
//! through the emulator"): nodes joined by
//! veth links, with addresses and routes, commands run inside any node,
//! and everything gone afterwards.
//!
//! # Nothing left behind
//!
//! Namespaces are never named or mounted: each is held by a thread and a
//! file of this process (see `namespace.rs`), and the kernel destroys it,
//! with its interfaces, once the last holder is gone. Processes started in
//! nodes are killed by [`Testbed`]'s `Drop` (an error, a panic that
//! unwinds) and, if this process dies without unwinding (Ctrl-C with the
//! default action, SIGKILL, abort), by the kernel through their parent-death
//! signal (see `process.rs`). So there is no teardown that can be skipped.
//!
//! # Privileges
//!
//! Creating namespaces needs CAP_SYS_ADMIN: run as root, or inside a user
//! namespace (`unshare --user --map-root-user --net -- COMMAND` as an
//! ordinary user); the testbed itself never needs the host's root.

mod namespace;
mod process;
mod topology;
pub mod tshark;
pub mod user_namespace;

use std::ffi::{OsStr, OsString};
use std::net::IpAddr;
use std::process::Command;
use std::sync::Mutex;

pub use process::{Output, Process};
pub use topology::{EMU, EMU_SIDE_A, EMU_SIDE_B, LinkEnd, Route, Topology, ipv4, ipv6};

use namespace::Namespace;

/// What went wrong while building or using a testbed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot create the network namespace of node {node}: {reason}")]
    Namespace { node: String, reason: String },
    #[error("in node {node}: `{command}` failed ({status}): {stderr}")]
    Command {
        node: String,
        command: String,
        status: String,
        stderr: String,
    },
    #[error("cannot {what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("no node {0:?} in this testbed")]
    NoSuchNode(String),
    #[error("invalid topology: {0}")]
    Topology(String),
}

/// One network namespace of the testbed.
#[derive(Debug)]
pub struct Node {
    name: String,
    namespace: Namespace,
    processes: Mutex<Vec<Process>>,
}

impl Node {
    fn new(name: &str) -> Result<Node, Error> {
        let node = Node {
            name: name.to_owned(),
            namespace: Namespace::new(name)?,
            processes: Mutex::new(Vec::new()),
        };
        node.ip(&["link", "set", "lo", "up"])?;
        // Without duplicate address detection, IPv6 addresses (link-local
        // ones included) are usable at once instead of a second later.
        node.sysctl("net/ipv6/conf/default/accept_dad", "0")?;
        Ok(node)
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kernel's name of the node's namespace, e.g. `net:[4026532246]`
    /// (what `readlink /proc/PID/ns/net` shows for processes inside).
    pub fn namespace_id(&self) -> Result<String, Error> {
        let path = self.namespace.path();
        std::fs::read_link(&path)
            .map(|target| target.to_string_lossy().into_owned())
            .map_err(|source| Error::Io {
                what: format!("read {}", path.display()),
                source,
            })
    }

    /// Runs `job` on a thread inside the node and returns its result.
    /// Sockets, devices and threads it creates belong to the node's
    /// namespace, and may be used from any thread afterwards.
    pub fn run<R: Send + 'static>(&self, job: impl FnOnce() -> R + Send + 'static) -> R {
        self.namespace.run(job)
    }

    /// Runs `program args...` inside the node to completion; an exit
    /// status other than success is an error carrying its standard error.
    pub fn output<S: AsRef<OsStr>>(&self, program: &str, args: &[S]) -> Result<String, Error> {
        let args: Vec<OsString> = args.iter().map(|a| a.as_ref().to_owned()).collect();
        let program = program.to_owned();
        let node = self.name.clone();
        self.namespace.run(move || {
            let command = std::iter::once(program.clone())
                .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
                .collect::<Vec<_>>()
                .join(" ");
            tracing::debug!(node = %node, %command, "running");
            let output = Command::new(&program)
                .args(&args)
                .output()
                .map_err(|source| Error::Io {
                    what: format!("run `{command}` in node {node}"),
                    source,
                })?;
            if !output.status.success() {
                return Err(Error::Command {
                    node,
                    command,
                    status: output.status.to_string(),
                    stderr: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
                });
            }
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        })
    }

    /// Runs `ip ARGS...` inside the node.
    pub fn ip(&self, args: &[&str]) -> Result<String, Error> {
        self.output("ip", args)
    }

    /// Starts `program args...` inside the node; it is killed at teardown
    /// if it still runs.
    pub fn spawn<S: AsRef<OsStr>>(
        &self,
        program: &str,
        args: &[S],
        output: Output,
    ) -> Result<Process, Error> {
        let args: Vec<OsString> = args.iter().map(|a| a.as_ref().to_owned()).collect();
        tracing::debug!(node = %self.name, program, "starting");
        let program = OsString::from(program);
        let process = self
            .namespace
            .run(move || Process::start(&program, &args, output))?;
        self.processes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(process.clone());
        Ok(process)
    }

    /// Writes a sysctl of the node's namespace (`net/ipv4/ip_forward`...).
    pub fn sysctl(&self, key: &str, value: &str) -> Result<(), Error> {
        let path = format!("/proc/sys/{key}");
        let value = value.to_owned();
        self.namespace.run(move || {
            std::fs::write(&path, value).map_err(|source| Error::Io {
                what: format!("write {path}"),
                source,
            })
        })
    }

    fn kill_processes(&self) {
        let processes = std::mem::take(&mut *self.processes.lock().unwrap_or_else(|p| p.into_inner()));
        for process in processes {
            // Teardown goes on whatever one process does.
            let _ = process.kill();
        }
    }
}

/// A built topology. Dropping it kills the processes started in it and
/// removes the namespaces and their interfaces.
#[derive(Debug)]
pub struct Testbed {
    topology: Topology,
    nodes: Vec<Node>,
}

impl Testbed {
    /// Builds `topology`: namespaces, veth links, addresses, routes.
    pub fn build(topology: Topology) -> Result<Testbed, Error> {
        let mut nodes = Vec::with_capacity(topology.nodes.len());
        for name in &topology.nodes {
            if nodes.iter().any(|n: &Node| &n.name == name) {
                return Err(Error::Topology(format!("node {name:?} appears twice")));
            }
            nodes.push(Node::new(name)?);
        }
        let testbed = Testbed { topology, nodes };
        testbed.wire()?;
        tracing::debug!(nodes = ?testbed.topology.nodes, "testbed built");
        Ok(testbed)
    }

    fn wire(&self) -> Result<(), Error> {
        // Before any interface exists (see `topology.rs`).
        for name in &self.topology.forwarding {
            let node = self.node(name)?;
            node.sysctl("net/ipv4/ip_forward", "1")?;
            node.sysctl("net/ipv6/conf/all/forwarding", "1")?;
        }
        for (a, b) in &self.topology.links {
            let (node_a, node_b) = (self.node(&a.node)?, self.node(&b.node)?);
            let path_a = node_a.namespace.path();
            let path_b = node_b.namespace.path();
            // Created straight into both namespaces: the pair never
            // appears in the namespace this process started in.
            node_a.output(
                "ip",
                &[
                    OsStr::new("link"),
                    OsStr::new("add"),
                    OsStr::new(&a.interface),
                    OsStr::new("netns"),
                    path_a.as_os_str(),
                    OsStr::new("type"),
                    OsStr::new("veth"),
                    OsStr::new("peer"),
                    OsStr::new("name"),
                    OsStr::new(&b.interface),
                    OsStr::new("netns"),
                    path_b.as_os_str(),
                ],
            )?;
            for (node, end) in [(node_a, a), (node_b, b)] {
                for address in &end.addresses {
                    node.ip(&["addr", "add", address, "dev", &end.interface, "nodad"])?;
                }
                node.ip(&["link", "set", &end.interface, "up"])?;
            }
        }
        for route in &self.topology.routes {
            let node = self.node(&route.node)?;
            let words: Vec<&str> = route.route.split_whitespace().collect();
            let family = if route.route.contains(':') { "-6" } else { "-4" };
            let mut args = vec![family, "route", "add"];
            args.extend(words);
            node.ip(&args)?;
        }
        Ok(())
    }

    /// The node called `name`.
    pub fn node(&self, name: &str) -> Result<&Node, Error> {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .ok_or_else(|| Error::NoSuchNode(name.to_owned()))
    }

    /// The topology it was built from.
    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// The first IPv4 address of `node`.
    pub fn address(&self, node: &str) -> Result<IpAddr, Error> {
        self.topology
            .address(node)
            .ok_or_else(|| Error::NoSuchNode(node.to_owned()))
    }
}

impl Drop for Testbed {
    fn drop(&mut self) {
        for node in &self.nodes {
            node.kill_processes();
        }
        // Dropping the nodes ends their threads and closes their
        // namespace files: the kernel removes namespaces and interfaces.
    }
}
