//! Running a document's command lines as a user types them: `sh -c LINE`
//! in a working directory, the `scps` under test first on `PATH`, here or
//! inside a testbed node, each with a deadline, its output kept in files
//! (no pipe to fill) and shown when it fails.

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use scps_testbed::Node;

/// The `scps` binary under test.
pub const SCPS: &str = env!("CARGO_BIN_EXE_scps");

/// The directory of the `scps` under test.
pub fn scps_dir() -> PathBuf {
    Path::new(SCPS).parent().unwrap().to_owned()
}

/// `PATH` with the `scps` under test first, and the system directories
/// where daemons and `sysctl` live (a user's `PATH` may lack them).
pub fn path_with_scps() -> OsString {
    let mut dirs = vec![scps_dir()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    for system in ["/usr/sbin", "/sbin", "/usr/bin", "/bin"] {
        if !dirs.iter().any(|dir| dir == Path::new(system)) {
            dirs.push(system.into());
        }
    }
    std::env::join_paths(dirs).unwrap()
}

/// What a command line did.
#[derive(Debug)]
pub struct Ran {
    /// Where the document has it and what it is, for messages.
    pub what: String,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Ran {
    /// Fails unless it exited with status 0, showing what it printed.
    pub fn assert_success(&self) -> &Ran {
        assert!(
            self.status.success(),
            "{} exited with {}\n--- stdout\n{}--- stderr\n{}",
            self.what,
            self.status,
            self.stdout,
            self.stderr
        );
        self
    }
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} in {:.1} s",
            self.what,
            self.status,
            self.took.as_secs_f64()
        )
    }
}

/// Where command lines run: a working directory, and a directory for
/// their output files.
#[derive(Debug)]
pub struct Shell {
    pub cwd: PathBuf,
    logs: PathBuf,
}

static RUNS: AtomicUsize = AtomicUsize::new(0);

impl Shell {
    /// Commands run in `cwd` (created), their output kept in `logs`
    /// (created).
    pub fn new(cwd: &Path, logs: &Path) -> Shell {
        std::fs::create_dir_all(cwd).unwrap();
        std::fs::create_dir_all(logs).unwrap();
        Shell {
            cwd: cwd.to_owned(),
            logs: logs.to_owned(),
        }
    }

    /// Runs `sh -c SCRIPT` here, in this process's network namespace, to
    /// its end within `limit`; `what` names it in messages.
    pub fn run(&self, what: &str, script: &str, limit: Duration) -> Ran {
        self.run_in(None, what, script, limit)
    }

    /// Runs `sh -c SCRIPT` inside `node` (or here), to its end within
    /// `limit`. One that outlives it is killed, with all it started, and
    /// the test fails showing what it printed.
    pub fn run_in(&self, node: Option<&Node>, what: &str, script: &str, limit: Duration) -> Ran {
        let run = RUNS.fetch_add(1, Ordering::Relaxed);
        let (out, err) = (
            self.logs.join(format!("{run}.stdout")),
            self.logs.join(format!("{run}.stderr")),
        );
        let where_ = node.map_or_else(|| "here".to_owned(), |node| format!("in {}", node.name()));
        let what = format!("{what} ({where_}: `{}`)", script.trim_end());
        println!("running {what}");
        let (cwd, script_owned, out_file, err_file) =
            (self.cwd.clone(), script.to_owned(), out.clone(), err.clone());
        let start = move || spawn_sh(&cwd, &script_owned, &out_file, &err_file);
        let began = Instant::now();
        let mut child = match node {
            Some(node) => node.run(start),
            None => start(),
        };
        let status = wait_or_kill(&mut child, limit);
        let read =
            |file: &Path| String::from_utf8_lossy(&std::fs::read(file).unwrap_or_default()).into_owned();
        let Some(status) = status else {
            panic!(
                "{what} did not end within {limit:?}\n--- stdout\n{}--- stderr\n{}",
                read(&out),
                read(&err)
            )
        };
        let ran = Ran {
            what,
            status,
            stdout: read(&out),
            stderr: read(&err),
            took: began.elapsed(),
        };
        println!("{ran}");
        ran
    }
}

/// `sh -c SCRIPT` in `cwd`, leading a process group of its own.
fn spawn_sh(cwd: &Path, script: &str, out: &Path, err: &Path) -> Child {
    Command::new("sh")
        .arg("-c")
        .arg(script)
        .current_dir(cwd)
        .env("PATH", path_with_scps())
        .stdin(Stdio::null())
        .stdout(File::create(out).unwrap())
        .stderr(File::create(err).unwrap())
        .process_group(0)
        .spawn()
        .expect("sh starts")
}

/// Its exit status, or `None` once `limit` has passed, its process group
/// then killed and reaped.
fn wait_or_kill(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let group = nix::unistd::Pid::from_raw(child.id() as i32);
            let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
            let _ = child.wait();
            return None;
        }
        // std has no wait with a deadline: the end is looked for every
        // few milliseconds until it.
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `check` until it gives a value, failing after `limit` with
/// `what` and the last thing `check` saw.
pub fn wait_for<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Result<T, String>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        match check() {
            Ok(value) => return value,
            Err(last) if Instant::now() >= deadline => panic!("{what}: not within {limit:?}; last: {last}"),
            Err(_) => std::thread::sleep(Duration::from_millis(50)),
        }
    }
}
