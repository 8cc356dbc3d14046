//! Real servers from Debian, run in a testbed node for the applications'
//! tests: nginx, OpenSSH's sshd (with sftp), vsftpd, and telnetd behind a
//! small inetd of the test's own. Each is configured in a temporary
//! directory, listens on the node's address only, and is ready when its
//! function returns.

use std::net::{SocketAddr, TcpListener};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use scps_testbed::{Node, Output, Process};
use sha2::{Digest, Sha256};

/// Waits until something in `node` listens on TCP `port`.
pub fn wait_listening(node: &Node, port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let listening = node
            .output("ss", &["-Hltn", &format!("sport = :{port}")])
            .unwrap();
        if !listening.trim().is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "nothing listens on {port} in {}",
            node.name()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until `node` holds no TCP connection that is open or closing
/// (TIME-WAIT, where nothing is left to do, aside): a gateway there has
/// seen the ends of the connections it carried (a gateway's node holds
/// no other).
pub fn wait_connections_ended(node: &Node) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let open = node
            .output(
                "ss",
                &[
                    "-Htn",
                    "state",
                    "established",
                    "state",
                    "syn-sent",
                    "state",
                    "syn-recv",
                    "state",
                    "fin-wait-1",
                    "state",
                    "fin-wait-2",
                    "state",
                    "close-wait",
                    "state",
                    "last-ack",
                    "state",
                    "closing",
                ],
            )
            .unwrap();
        if open.trim().is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "connections still open in {}: {open}",
            node.name()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Writes `bytes` of a pattern that never repeats within a file into
/// `path`; its SHA-256.
pub fn write_pattern(path: &Path, bytes: u64, seed: u64) -> Vec<u8> {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let data: Vec<u8> = (0..bytes)
        .map(|i| ((i ^ seed).wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(path, &data).unwrap();
    Sha256::digest(&data).to_vec()
}

/// The SHA-256 of a file.
pub fn digest(path: &Path) -> Vec<u8> {
    Sha256::digest(std::fs::read(path).unwrap()).to_vec()
}

/// nginx serving `root` on `address:port`.
pub fn nginx(node: &Node, dir: &Path, root: &Path, address: &str, port: u16) -> Process {
    let prefix = dir.display().to_string();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let conf = dir.join("nginx.conf");
    std::fs::write(
        &conf,
        format!(
            "worker_processes 1;\nuser root;\npid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\n\
             events {{ worker_connections 64; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {prefix}/tmp;\n  proxy_temp_path {prefix}/tmp;\n\
               fastcgi_temp_path {prefix}/tmp;\n  uwsgi_temp_path {prefix}/tmp;\n  scgi_temp_path {prefix}/tmp;\n\
               server {{ listen {address}:{port}; root {}; }}\n}}\n",
            root.display()
        ),
    )
    .unwrap();
    let process = node
        .spawn(
            "nginx",
            &[
                "-p",
                &prefix,
                "-e",
                &format!("{prefix}/error.log"),
                "-c",
                &conf.display().to_string(),
                "-g",
                "daemon off;",
            ],
            Output::Null,
        )
        .unwrap();
    wait_listening(node, port);
    process
}

/// sshd and the key that logs in to it as root.
pub struct Sshd {
    pub process: Process,
    /// The client's private key.
    pub key: PathBuf,
}

impl Sshd {
    /// ssh's options for logging in with the key, trusting the host key
    /// unseen, never asking anything.
    pub fn client_options(&self) -> Vec<String> {
        [
            "-i",
            &self.key.display().to_string(),
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
            "-o",
            "BatchMode=yes",
            "-o",
            "LogLevel=ERROR",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect()
    }

    /// The options as one `-e` argument of rsync.
    pub fn rsync_shell(&self) -> String {
        format!("ssh {}", self.client_options().join(" "))
    }
}

/// OpenSSH's sshd on `address:22`, with an sftp subsystem, taking only
/// the key it makes (root may log in: the tests run as root, in a
/// namespace).
pub fn sshd(node: &Node, dir: &Path, address: &str) -> Sshd {
    let keygen = |name: &str| {
        let path = dir.join(name);
        let status = Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(&path)
            .status()
            .unwrap();
        assert!(status.success(), "ssh-keygen {name}");
        path
    };
    let host_key = keygen("host_key");
    let key = keygen("client_key");
    std::fs::copy(key.with_extension("pub"), dir.join("authorized_keys")).unwrap();
    // Privilege separation's empty directory, as the package's unit makes.
    std::fs::create_dir_all("/run/sshd").unwrap();
    let conf = dir.join("sshd_config");
    std::fs::write(
        &conf,
        format!(
            "ListenAddress {address}:22\nHostKey {}\nAuthorizedKeysFile {}\nPermitRootLogin yes\n\
             PasswordAuthentication no\nKbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\n\
             PidFile none\nSubsystem sftp internal-sftp\n",
            host_key.display(),
            dir.join("authorized_keys").display()
        ),
    )
    .unwrap();
    let process = node
        .spawn(
            "/usr/sbin/sshd",
            &["-D".as_ref(), "-e".as_ref(), "-f".as_ref(), conf.as_os_str()],
            Output::Null,
        )
        .unwrap();
    wait_listening(node, 22);
    Sshd { process, key }
}

/// vsftpd on `address:21` serving `root` to anonymous users, read only,
/// in both passive and active (PORT, data from port 20) mode.
pub fn vsftpd(node: &Node, dir: &Path, root: &Path, address: &str) -> Process {
    let empty = dir.join("vsftpd-empty");
    std::fs::create_dir_all(&empty).unwrap();
    let conf = dir.join("vsftpd.conf");
    std::fs::write(
        &conf,
        format!(
            "listen=YES\nlisten_address={address}\nbackground=NO\nanonymous_enable=YES\n\
             no_anon_password=YES\nanon_root={}\nlocal_enable=NO\nwrite_enable=NO\n\
             pasv_enable=YES\npasv_address={address}\nport_enable=YES\nconnect_from_port_20=YES\n\
             secure_chroot_dir={}\nseccomp_sandbox=NO\nxferlog_enable=NO\n",
            root.display(),
            empty.display()
        ),
    )
    .unwrap();
    let process = node.spawn("vsftpd", &[conf.as_os_str()], Output::Null).unwrap();
    wait_listening(node, 21);
    process
}

/// telnetd on `address:23`, run for each connection as inetd would, with
/// `cat` in place of the login (so that what one types comes back).
pub struct Telnetd {
    listener: std::thread::JoinHandle<()>,
    stop: SocketAddr,
}

pub fn telnetd(node: &Node, address: &str) -> Telnetd {
    let at: SocketAddr = format!("{address}:23").parse().unwrap();
    let listener = node.run(move || TcpListener::bind(at)).unwrap();
    let listener = std::thread::spawn(move || {
        let mut sessions: Vec<Child> = Vec::new();
        for stream in listener.incoming() {
            let stream = stream.unwrap();
            // The stopping connection comes from the listening address.
            if stream.peer_addr().unwrap().ip() == at.ip() {
                break;
            }
            let socket: OwnedFd = stream.into();
            let output = socket.try_clone().unwrap();
            sessions.push(
                Command::new("/usr/sbin/telnetd")
                    .args(["-h", "-E", "/bin/cat"])
                    .stdin(Stdio::from(socket))
                    .stdout(Stdio::from(output))
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap(),
            );
        }
        for mut session in sessions {
            let _ = session.kill();
            let _ = session.wait();
        }
    });
    Telnetd { listener, stop: at }
}

impl Telnetd {
    /// Stops the inetd (a connection from its own address tells it to)
    /// and its sessions.
    pub fn stop(self, node: &Node) {
        let stop = self.stop;
        node.run(move || {
            let stream = std::net::TcpStream::connect(stop).unwrap();
            drop(stream);
        });
        self.listener.join().unwrap();
    }
}
