//! The control socket, which `scps status` asks (docs/gateway.md
//! "Operations"): a Unix stream socket, mode 0600, on which a client
//! sends one request line, `status`, and gets one JSON document, a
//! [`GatewayStatus`], before the connection closes. Anything else is
//! answered with `{"error": "..."}`.
//!
//! A socket file that nobody answers on was left by a gateway that was
//! killed: it is replaced. One that answers belongs to a running gateway:
//! a gateway asked to listen there does not start; one that only had it
//! by default runs without a control socket (`ControlConfig::required`).
//! The file is removed when the gateway stops, if it is still its own.
//!
//! The answer says who answered (the process, its configuration file, its
//! modes, its network namespace, the socket) and what sets its connection
//! limit. Network namespaces share the file system, so the default path
//! of a gateway outside the initial namespace carries its namespace's
//! inode ([`default_socket_path`]): two gateways in two namespaces each
//! have their own, and `scps status` tries its own namespace's first,
//! then the initial namespace's ([`default_socket_paths`]).

use std::io::{Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;

use crate::config::ControlConfig;
use crate::counters::{ConnectionLimit, Counters, CountersSnapshot};
use crate::exchange::{self, Limits, Request};
use crate::netns::NetNamespace;
use crate::registry::{ConnectionStatus, LiveConnections};

/// The one request.
pub const STATUS_REQUEST: &str = "status";

/// What a client may ask of the control socket: a line, a few seconds.
const LIMITS: Limits = Limits {
    request: 256,
    time: Duration::from_secs(5),
    clients: 8,
    per_source: 8,
};

/// How long `scps status` waits for the gateway's whole answer.
const ASK_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest answer `scps status` reads, in MiB: a status of a hundred
/// thousand connections is well under.
const MAX_ANSWER_MIB: usize = 64;

/// The answer to `status`: who answered, what sets its connection limit,
/// its counters and its split connections held now, oldest first. (The
/// first two are absent from the answer of a gateway older than they.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewayStatus {
    #[serde(default)]
    pub gateway: Option<GatewayIdentity>,
    #[serde(default)]
    pub limit: Option<ConnectionLimit>,
    pub counters: CountersSnapshot,
    /// Data bytes the link connections have sent again since the gateway
    /// started, those that ended and those open.
    #[serde(default)]
    pub link_resent_bytes: u64,
    pub connections: Vec<ConnectionStatus>,
}

/// Who answers on a control socket: two gateways on one host, in one
/// namespace or two, are told apart by it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GatewayIdentity {
    /// Its process id.
    pub pid: u32,
    /// Its configuration file (absolute, if the path it was given names
    /// a file).
    pub config: String,
    /// The modes it runs (`GatewayConfig::modes`).
    pub modes: Vec<String>,
    /// Its network namespace; `None` if /proc could not tell.
    pub namespace: Option<NetNamespace>,
    /// The control socket it answers on.
    pub control_socket: PathBuf,
}

impl GatewayIdentity {
    /// This process, running `config`'s `modes`; its socket is filled in
    /// once it listens.
    pub fn of_this_process(config: &str, modes: &[&str]) -> GatewayIdentity {
        // The path as given may be relative to where the gateway started;
        // an origin that is no file (a library caller's name) stays as it
        // is.
        let config = match std::path::absolute(config) {
            Ok(path) if path.is_file() => path.display().to_string(),
            _ => config.to_owned(),
        };
        GatewayIdentity {
            pid: std::process::id(),
            config,
            modes: modes.iter().map(|&mode| mode.to_owned()).collect(),
            namespace: NetNamespace::current(),
            control_socket: PathBuf::new(),
        }
    }

    /// The modes, as `scps status` prints them: `transparent`, `forward
    /// + socks`.
    pub fn modes_text(&self) -> String {
        if self.modes.is_empty() {
            "no mode".to_owned()
        } else {
            self.modes.join(" + ")
        }
    }
}

/// What a gateway's status says of it besides its counts: who it is and
/// what sets its limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct About {
    pub identity: GatewayIdentity,
    pub limit: ConnectionLimit,
}

impl GatewayStatus {
    pub fn now(about: Option<&About>, counters: &Counters, live: &LiveConnections) -> GatewayStatus {
        let (connections, routes) = live.connections_and_routes();
        GatewayStatus {
            gateway: about.map(|about| about.identity.clone()),
            limit: about.map(|about| about.limit),
            counters: counters.snapshot(),
            link_resent_bytes: routes.values().map(|route| route.link_resent_bytes).sum(),
            connections,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    #[error("control socket {}: another gateway answers on it (stop it, or give this one --control PATH)", .0.display())]
    Taken(PathBuf),
    #[error("control socket {}: the file exists and is not a socket", .0.display())]
    NotASocket(PathBuf),
    #[error("control socket {}: cannot {what}: {error}", path.display())]
    Io {
        path: PathBuf,
        what: &'static str,
        error: std::io::Error,
    },
    #[error("control socket {}: no gateway answers ({error})", path.display())]
    NoGateway { path: PathBuf, error: std::io::Error },
    #[error("control socket {}: the answer is not a gateway's status: {reason}", path.display())]
    Answer { path: PathBuf, reason: String },
    #[error("control socket {}: no answer within {} s", path.display(), within.as_secs_f64())]
    NoAnswer { path: PathBuf, within: Duration },
    #[error("control socket {}: the answer is longer than {MAX_ANSWER_MIB} MiB, the most `scps status` reads: not a gateway's status", path.display())]
    TooLong { path: PathBuf },
}

/// The control socket's file while the gateway listens on it: removed
/// when dropped, if it is still the one this gateway made.
#[derive(Debug)]
pub struct ControlSocket {
    path: PathBuf,
    /// The file's device and inode, to tell it from one another gateway
    /// made at the same path since.
    identity: (u64, u64),
}

impl ControlSocket {
    /// Listens on `config.socket` and answers `status` with `about` (its
    /// socket filled in) and the state of `counters` and `live`, in
    /// `tasks`. `None` if the path was the default and cannot be had (the
    /// reason is logged).
    pub(crate) fn start(
        config: &ControlConfig,
        about: Option<About>,
        (counters, live): (Arc<Counters>, Arc<LiveConnections>),
        tasks: &mut JoinSet<()>,
    ) -> Result<Option<ControlSocket>, ControlError> {
        let (socket, listener) = match ControlSocket::bind(&config.socket) {
            Ok(bound) => bound,
            Err(error) if !config.required => {
                tracing::warn!(%error, "running without a control socket");
                return Ok(None);
            }
            Err(error) => return Err(error),
        };
        let about = about.map(|mut about| {
            about.identity.control_socket = socket.path.clone();
            about
        });
        tasks.spawn(exchange::serve(
            listener,
            LIMITS,
            exchange::line_end,
            move |request| answer(request, about.as_ref(), &counters, &live),
            // Its file is its owner's alone (mode 0600): who can connect
            // may ask.
            |_| true,
        ));
        Ok(Some(socket))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Binds `path`, mode 0600, replacing a socket file nobody answers on.
    fn bind(path: &Path) -> Result<(ControlSocket, tokio::net::UnixListener), ControlError> {
        let io = |what| {
            move |error| ControlError::Io {
                path: path.to_owned(),
                what,
                error,
            }
        };
        match std::fs::symlink_metadata(path) {
            Ok(metadata) if !metadata.file_type().is_socket() => {
                return Err(ControlError::NotASocket(path.to_owned()));
            }
            Ok(_) => match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => return Err(ControlError::Taken(path.to_owned())),
                Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused => {
                    tracing::info!(path = %path.display(), "replacing a control socket nobody answers on");
                    std::fs::remove_file(path).map_err(io("remove the stale socket file"))?;
                }
                Err(error) => return Err(io("check whether a gateway answers on it")(error)),
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io("read its file")(error)),
        }
        // Bound, made private, and only then listening: no client can
        // connect while the file has the umask's permissions.
        let socket = socket2::Socket::new(socket2::Domain::UNIX, socket2::Type::STREAM, None)
            .map_err(io("create the socket"))?;
        let address = socket2::SockAddr::unix(path).map_err(io("use the path"))?;
        socket.bind(&address).map_err(io("bind"))?;
        let made = ControlSocket {
            path: path.to_owned(),
            identity: identity(path).map_err(io("read its file"))?,
        };
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
            .map_err(io("make it private (mode 0600)"))?;
        socket.listen(16).map_err(io("listen"))?;
        socket.set_nonblocking(true).map_err(io("make it non-blocking"))?;
        let listener = tokio::net::UnixListener::from_std(socket.into()).map_err(io("listen"))?;
        Ok((made, listener))
    }
}

impl Drop for ControlSocket {
    fn drop(&mut self) {
        if identity(&self.path).is_ok_and(|now| now == self.identity) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn identity(path: &Path) -> std::io::Result<(u64, u64)> {
    let metadata = std::fs::symlink_metadata(path)?;
    Ok((metadata.dev(), metadata.ino()))
}

/// The answer to one request: the status document, or an error document.
fn answer(request: Request, about: Option<&About>, counters: &Counters, live: &LiveConnections) -> Vec<u8> {
    let document = match request {
        Request::Whole(line) if line.trim_ascii() == STATUS_REQUEST.as_bytes() => {
            serde_json::to_value(GatewayStatus::now(about, counters, live))
        }
        Request::Whole(line) | Request::Truncated(line) => Ok(serde_json::json!({
            "error": format!(
                "unknown request {:?}: the one request is \"{STATUS_REQUEST}\", a line",
                String::from_utf8_lossy(line.trim_ascii())
            )
        })),
        Request::TooLong => Ok(serde_json::json!({"error": "the request is too long: one line"})),
        Request::Slow => Ok(serde_json::json!({"error": "no whole request line in time"})),
    };
    // Serializing the status cannot fail (plain fields, string keys).
    let mut text = document.map(|d| d.to_string()).unwrap_or_default();
    text.push('\n');
    text.into_bytes()
}

/// Asks the gateway listening on `path` for its status (the client side
/// of `scps status`): the document as sent, and read.
pub fn ask_status(path: &Path) -> Result<(String, GatewayStatus), ControlError> {
    ask_status_within(path, ASK_TIMEOUT)
}

/// [`ask_status`], with the whole answer due `within` the time given.
fn ask_status_within(path: &Path, within: Duration) -> Result<(String, GatewayStatus), ControlError> {
    let io = |what| {
        move |error| ControlError::Io {
            path: path.to_owned(),
            what,
            error,
        }
    };
    let mut stream =
        std::os::unix::net::UnixStream::connect(path).map_err(|error| ControlError::NoGateway {
            path: path.to_owned(),
            error,
        })?;
    let due = Instant::now() + within;
    let late = || ControlError::NoAnswer {
        path: path.to_owned(),
        within,
    };
    stream
        .set_write_timeout(Some(within))
        .map_err(io("set a timeout"))?;
    match stream.write_all(format!("{STATUS_REQUEST}\n").as_bytes()) {
        Ok(()) => {}
        Err(error) if is_late(&error) => return Err(late()),
        Err(error) => return Err(io("send the request")(error)),
    }
    let text = match read_to_end_by(&mut stream, due, MAX_ANSWER_MIB << 20) {
        Ok(Some(bytes)) => String::from_utf8(bytes).map_err(|e| ControlError::Answer {
            path: path.to_owned(),
            reason: e.to_string(),
        })?,
        Ok(None) => {
            return Err(ControlError::TooLong {
                path: path.to_owned(),
            });
        }
        Err(error) if is_late(&error) => return Err(late()),
        Err(error) => return Err(io("read the answer")(error)),
    };
    let answer = |reason: String| ControlError::Answer {
        path: path.to_owned(),
        reason,
    };
    let document: serde_json::Value = serde_json::from_str(&text).map_err(|e| answer(e.to_string()))?;
    if let Some(error) = document.get("error") {
        return Err(answer(format!("the gateway says {error}")));
    }
    let status = serde_json::from_value(document).map_err(|e| answer(e.to_string()))?;
    Ok((text.trim_end().to_owned(), status))
}

/// Reads `stream` to its end by `due`: the bytes, or `None` past `cap` of
/// them. Running out of time is an error of kind `WouldBlock` or
/// `TimedOut` (see [`is_late`]).
fn read_to_end_by(
    stream: &mut std::os::unix::net::UnixStream,
    due: Instant,
    cap: usize,
) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        match stream.read(&mut buf) {
            Ok(0) => return Ok(Some(bytes)),
            Ok(n) if bytes.len() + n > cap => return Ok(None),
            Ok(n) => bytes.extend_from_slice(&buf[..n]),
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
}

/// What a read that timed out fails with.
fn is_late(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Where the control socket is unless `control.socket` or `--control`
/// says: `/run/scps-gateway.sock` for root, otherwise in
/// `$XDG_RUNTIME_DIR`, or `/tmp/scps-gateway-UID.sock` without one; in a
/// network namespace other than the initial one, the same with the
/// namespace's inode in the name (`/run/scps-gateway-net4026532246.sock`),
/// since namespaces share the file system.
pub fn default_socket_path() -> PathBuf {
    default_path(&Runner::this_process(), NetNamespace::current().as_ref())
}

/// The control sockets `scps status` tries, in order, with no
/// `--control`: its own namespace's default, then the initial
/// namespace's (the one gateways of every namespace took before their
/// paths differed), each with what it is; one, in the initial namespace.
pub fn default_socket_paths() -> Vec<(PathBuf, &'static str)> {
    let runner = Runner::this_process();
    let namespace = NetNamespace::current();
    let own = default_path(&runner, namespace.as_ref());
    let initial = default_path(&runner, None);
    if own == initial {
        vec![(own, "the default")]
    } else {
        vec![
            (own, "this network namespace's default"),
            (initial, "the initial network namespace's default"),
        ]
    }
}

/// Who runs a gateway or `scps status`, as far as the default path goes.
struct Runner {
    uid: u32,
    runtime_dir: Option<PathBuf>,
}

impl Runner {
    fn this_process() -> Runner {
        Runner {
            uid: nix::unistd::geteuid().as_raw(),
            runtime_dir: std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from),
        }
    }
}

/// The default path for `runner` in `namespace` (`None`: the initial
/// one's, or one /proc cannot tell).
fn default_path(runner: &Runner, namespace: Option<&NetNamespace>) -> PathBuf {
    let own = match namespace {
        Some(namespace) if !namespace.initial => format!("-net{}", namespace.inode),
        _ => String::new(),
    };
    if runner.uid == 0 {
        return PathBuf::from(format!("/run/scps-gateway{own}.sock"));
    }
    match &runner.runtime_dir {
        Some(dir) if dir.is_absolute() => dir.join(format!("scps-gateway{own}.sock")),
        _ => PathBuf::from(format!("/tmp/scps-gateway-{}{own}.sock", runner.uid)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{Relayed, State};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A directory of its own under the temporary one, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let dir = std::env::temp_dir().join(format!("scps-control-{name}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Dir(dir)
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn required(path: &Path) -> ControlConfig {
        ControlConfig {
            socket: path.to_owned(),
            required: true,
        }
    }

    /// Runs `ask` off the runtime's threads (it blocks).
    async fn ask(path: &Path) -> Result<(String, GatewayStatus), ControlError> {
        let path = path.to_owned();
        tokio::task::spawn_blocking(move || ask_status(&path))
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn status_is_answered_with_the_counters_and_the_connections() {
        let dir = Dir::new("status");
        let path = dir.0.join("gw.sock");
        let counters = Arc::new(Counters::new(8));
        let live = Arc::new(LiveConnections::default());
        let mut tasks = JoinSet::new();
        let about = About {
            identity: GatewayIdentity::of_this_process("/etc/scps/a.toml", &["forward", "socks"]),
            limit: ConnectionLimit::new(8, 1 << 30, 1 << 20, 1 << 20),
        };
        let socket = ControlSocket::start(
            &required(&path),
            Some(about.clone()),
            (counters.clone(), live.clone()),
            &mut tasks,
        )
        .unwrap()
        .expect("a required socket is there or an error");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "private");
        let _permit = counters.admit("test", "10.1.0.5:40000".parse().unwrap()).unwrap();
        let listing = live.list("10.1.0.5:40000".parse().unwrap(), "forward:127.0.0.1:2222");
        listing.set_destination("files.example:22");
        listing.progress().publish(
            State::Relaying,
            Relayed {
                lan_to_link: 10,
                link_to_lan: 20,
            },
        );
        let (text, status) = ask(&path).await.unwrap();
        assert_eq!((status.counters.held, status.counters.limit), (1, 8));
        assert_eq!(status.connections.len(), 1);
        let connection = &status.connections[0];
        assert_eq!(connection.destination.as_deref(), Some("files.example:22"));
        assert_eq!(
            (connection.lan_to_link_bytes, connection.link_to_lan_bytes),
            (10, 20)
        );
        // Who answered, and what sets its limit.
        let identity = status.gateway.as_ref().expect("the gateway says who it is");
        assert_eq!(identity.pid, std::process::id());
        assert_eq!(identity.config, "/etc/scps/a.toml", "no such file: as given");
        assert_eq!(identity.modes_text(), "forward + socks");
        assert_eq!(identity.control_socket, path, "the socket it answers on");
        assert_eq!(identity.namespace, NetNamespace::current());
        assert_eq!(status.limit, Some(about.limit));
        let document: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(document["gateway"]["pid"], std::process::id());
        assert_eq!(
            document["gateway"]["modes"],
            serde_json::json!(["forward", "socks"])
        );
        assert!(document["gateway"]["namespace"]["inode"].is_u64(), "{document}");
        assert_eq!(document["limit"]["max_connections"], 8);
        assert_eq!(document["connections"][0]["state"], "relaying");
        assert_eq!(document["connections"][0]["route"], "forward:127.0.0.1:2222");

        // Anything but the one request gets an error document.
        let mut other = tokio::net::UnixStream::connect(&path).await.unwrap();
        other.write_all(b"stop\n").await.unwrap();
        let mut answer = String::new();
        other.read_to_string(&mut answer).await.unwrap();
        let answer: serde_json::Value = serde_json::from_str(&answer).unwrap();
        assert!(
            answer["error"]
                .as_str()
                .unwrap()
                .contains("unknown request \"stop\""),
            "{answer}"
        );

        drop(tasks);
        drop(socket);
        assert!(!path.exists(), "removed on drop");
        let err = ask(&path).await.unwrap_err();
        assert!(
            matches!(err, ControlError::NoGateway { .. })
                && err.to_string().contains(&path.display().to_string()),
            "{err}"
        );
    }

    #[tokio::test]
    async fn a_live_socket_is_kept_and_a_stale_one_replaced() {
        let dir = Dir::new("stale");
        let path = dir.0.join("gw.sock");
        // A socket file left behind: bound once, its listener gone.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(path.exists());
        let (counters, live) = (Arc::new(Counters::new(1)), Arc::new(LiveConnections::default()));
        let mut tasks = JoinSet::new();
        let first = ControlSocket::start(
            &required(&path),
            None,
            (counters.clone(), live.clone()),
            &mut tasks,
        )
        .unwrap()
        .expect("the stale file is replaced");
        assert!(ask(&path).await.is_ok(), "served");

        let second = ControlSocket::start(
            &required(&path),
            None,
            (counters.clone(), live.clone()),
            &mut tasks,
        );
        let err = second.unwrap_err();
        assert!(matches!(err, ControlError::Taken(_)), "{err}");
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
        let default = ControlConfig {
            socket: path.clone(),
            required: false,
        };
        let fallback =
            ControlSocket::start(&default, None, (counters.clone(), live.clone()), &mut tasks).unwrap();
        assert!(
            fallback.is_none(),
            "a default path that is taken: no socket, no error"
        );
        assert!(
            ask(&path).await.is_ok(),
            "the first gateway's socket is untouched"
        );

        std::fs::write(dir.0.join("file"), "not a socket").unwrap();
        let err = ControlSocket::start(
            &required(&dir.0.join("file")),
            None,
            (counters.clone(), live.clone()),
            &mut tasks,
        )
        .unwrap_err();
        assert!(matches!(err, ControlError::NotASocket(_)), "{err}");
        drop(first);
        assert!(!path.exists());
    }

    #[tokio::test]
    async fn a_default_path_that_cannot_be_made_is_done_without_and_a_file_not_ours_is_left() {
        let dir = Dir::new("unmade");
        let (counters, live) = (Arc::new(Counters::new(1)), Arc::new(LiveConnections::default()));
        let mut tasks = JoinSet::new();
        let nowhere = dir.0.join("missing").join("gw.sock");
        let default = ControlConfig {
            socket: nowhere.clone(),
            required: false,
        };
        let started = ControlSocket::start(&default, None, (counters.clone(), live.clone()), &mut tasks);
        assert!(started.unwrap().is_none(), "no socket, no error");
        let err = ControlSocket::start(
            &required(&nowhere),
            None,
            (counters.clone(), live.clone()),
            &mut tasks,
        )
        .unwrap_err();
        assert!(matches!(err, ControlError::Io { what: "bind", .. }), "{err}");

        // Another gateway's file at the path since: not removed.
        let path = dir.0.join("gw.sock");
        let first = ControlSocket::start(&required(&path), None, (counters, live), &mut tasks)
            .unwrap()
            .unwrap();
        std::fs::remove_file(&path).unwrap();
        let _other = std::os::unix::net::UnixListener::bind(&path).unwrap();
        drop(first);
        assert!(path.exists(), "the other gateway's socket stays");
    }

    #[test]
    fn each_network_namespace_but_the_initial_one_has_a_default_path_of_its_own() {
        let namespace = |inode, initial| NetNamespace {
            inode,
            name: None,
            initial,
        };
        let (initial, other) = (namespace(4026531840, true), namespace(4026532246, false));
        let root = Runner {
            uid: 0,
            runtime_dir: Some("/run/user/0".into()),
        };
        let user = |dir: Option<&str>| Runner {
            uid: 1000,
            runtime_dir: dir.map(PathBuf::from),
        };
        for (runner, namespace, path) in [
            (&root, Some(&initial), "/run/scps-gateway.sock"),
            (&root, None, "/run/scps-gateway.sock"),
            (&root, Some(&other), "/run/scps-gateway-net4026532246.sock"),
            (
                &user(Some("/run/user/1000")),
                Some(&initial),
                "/run/user/1000/scps-gateway.sock",
            ),
            (
                &user(Some("/run/user/1000")),
                Some(&other),
                "/run/user/1000/scps-gateway-net4026532246.sock",
            ),
            (&user(None), Some(&initial), "/tmp/scps-gateway-1000.sock"),
            (
                &user(Some("relative")),
                Some(&other),
                "/tmp/scps-gateway-1000-net4026532246.sock",
            ),
        ] {
            assert_eq!(
                default_path(runner, namespace),
                PathBuf::from(path),
                "{namespace:?}"
            );
        }
        // This process's: its own first, the initial namespace's last.
        let paths = default_socket_paths();
        assert_eq!(paths[0].0, default_socket_path());
        assert_eq!(
            paths.last().unwrap().0,
            default_path(&Runner::this_process(), None)
        );
    }

    /// A server on `path` that takes one client and gives it to `serve`,
    /// on a thread of its own.
    fn serve_one(
        path: &Path,
        serve: impl FnOnce(std::os::unix::net::UnixStream) + Send + 'static,
    ) -> std::thread::JoinHandle<()> {
        let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
        std::thread::spawn(move || serve(listener.accept().unwrap().0))
    }

    /// Reads the request line, as a gateway would.
    fn take_request(stream: &mut std::os::unix::net::UnixStream) {
        let mut request = [0u8; STATUS_REQUEST.len() + 1];
        stream.read_exact(&mut request).unwrap();
    }

    #[test]
    fn an_answer_that_never_ends_is_read_up_to_the_cap() {
        let dir = Dir::new("endless");
        let path = dir.0.join("gw.sock");
        let server = serve_one(&path, |mut stream| {
            take_request(&mut stream);
            // Until the client hangs up.
            let chunk = [b' '; 64 * 1024];
            while stream.write_all(&chunk).is_ok() {}
        });
        let err = ask_status(&path).unwrap_err();
        assert!(matches!(err, ControlError::TooLong { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!(
                "control socket {}: the answer is longer than 64 MiB, the most `scps status` reads: not a gateway's status",
                path.display()
            )
        );
        server.join().unwrap();
    }

    #[test]
    fn a_socket_that_never_answers_is_given_up_on_at_the_deadline() {
        let dir = Dir::new("silent");
        let path = dir.0.join("gw.sock");
        let server = serve_one(&path, |mut stream| {
            // Reads, answers nothing, until the client hangs up.
            let _ = stream.read_to_end(&mut Vec::new());
        });
        let err = ask_status_within(&path, Duration::from_millis(200)).unwrap_err();
        assert!(matches!(err, ControlError::NoAnswer { .. }), "{err}");
        assert_eq!(
            err.to_string(),
            format!("control socket {}: no answer within 0.2 s", path.display())
        );
        server.join().unwrap();
        let at_most = ControlError::NoAnswer {
            path: path.clone(),
            within: ASK_TIMEOUT,
        };
        assert!(
            at_most.to_string().ends_with(": no answer within 10 s"),
            "{at_most}"
        );
    }

    #[test]
    fn an_answer_that_trickles_is_given_up_on_at_the_deadline_not_per_read() {
        let dir = Dir::new("trickle");
        let path = dir.0.join("gw.sock");
        let server = serve_one(&path, |mut stream| {
            take_request(&mut stream);
            // A byte every 20 ms, each within any per-read timeout, for
            // 10 s at most, or until the client hangs up.
            for _ in 0..500 {
                if stream.write_all(b" ").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let started = Instant::now();
        let err = ask_status_within(&path, Duration::from_millis(300)).unwrap_err();
        assert!(matches!(err, ControlError::NoAnswer { .. }), "{err}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        server.join().unwrap();
    }
}
