//! Processes started inside a node, and the guarantee that none outlives
//! the testbed.
//!
//! Each process is started through `setpriv --pdeathsig KILL` from the
//! node's long-lived thread: if this process dies without cleaning up
//! (SIGKILL, abort), the kernel kills the child when that thread ends. Each
//! also leads its own process group, so that an orderly teardown kills
//! whatever it started too.
//!
//! `setpriv` arms the death signal only once it runs, and a parent killed
//! before then leaves the child unarmed for good; so a start returns only
//! once `setpriv` has exec'd the program, which it does after arming.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::Error;

/// Where a process's standard output and error go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Discarded.
    Null,
    /// Readable with [`Process::take_stdout`]; standard error is inherited.
    Piped,
    /// The testbed's own.
    Inherit,
}

/// A process running in a node. Clones refer to the same process; the
/// testbed kills it at teardown if it still runs.
#[derive(Debug, Clone)]
pub struct Process {
    child: Arc<Mutex<Child>>,
    pid: u32,
    description: String,
}

impl Process {
    /// Starts `program args...` on the calling thread, which must be the
    /// node's thread (see `Node::spawn`).
    pub(crate) fn start(
        program: &OsStr,
        args: &[std::ffi::OsString],
        output: Output,
    ) -> Result<Process, Error> {
        let description = std::iter::once(program)
            .chain(args.iter().map(|a| a.as_os_str()))
            .map(|a| a.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join(" ");
        let (stdout, stderr) = match output {
            Output::Null => (Stdio::null(), Stdio::null()),
            Output::Piped => (Stdio::piped(), Stdio::inherit()),
            Output::Inherit => (Stdio::inherit(), Stdio::inherit()),
        };
        let child = Command::new("setpriv")
            .args(["--pdeathsig", "KILL", "--"])
            .arg(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .process_group(0)
            .spawn()
            .map_err(|source| Error::Io {
                what: format!("start `{description}` (through setpriv)"),
                source,
            })?;
        wait_until_past_setpriv(child.id(), &description)?;
        Ok(Process {
            pid: child.id(),
            child: Arc::new(Mutex::new(child)),
            description,
        })
    }

    fn child(&self) -> MutexGuard<'_, Child> {
        // A panic while holding this lock leaves the Child usable.
        self.child.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The process id (also its process group id).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// Its standard output, once, if it was started with [`Output::Piped`].
    pub fn take_stdout(&self) -> Option<ChildStdout> {
        self.child().stdout.take()
    }

    /// Reads its whole standard output (until it closes it).
    pub fn read_stdout(&self) -> Result<String, Error> {
        let mut text = String::new();
        if let Some(mut stdout) = self.take_stdout() {
            stdout.read_to_string(&mut text).map_err(|source| Error::Io {
                what: format!("read the output of `{}`", self.description),
                source,
            })?;
        }
        Ok(text)
    }

    /// Its exit status if it has ended.
    pub fn try_wait(&self) -> Result<Option<ExitStatus>, Error> {
        self.child().try_wait().map_err(|source| Error::Io {
            what: format!("wait for `{}`", self.description),
            source,
        })
    }

    /// Waits until it ends or `timeout` passes (then `None`).
    pub fn wait_timeout(&self, timeout: Duration) -> Result<Option<ExitStatus>, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait()? {
                return Ok(Some(status));
            }
            if Instant::now() >= deadline {
                return Ok(None);
            }
            // std has no wait with a timeout; a child's end is checked
            // every few milliseconds until the deadline.
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sends `signal` to its process group, unless it has already ended.
    pub fn signal(&self, signal: Signal) -> Result<(), Error> {
        let mut child = self.child();
        // Holding the lock, the process is either reaped now (and not
        // signalled) or unreaped, so its group id cannot have been reused.
        if child.try_wait().ok().flatten().is_some() {
            return Ok(());
        }
        let pgid = Pid::from_raw(i32::try_from(self.pid).unwrap_or(i32::MAX));
        match killpg(pgid, signal) {
            Ok(()) | Err(nix::errno::Errno::ESRCH) => Ok(()),
            Err(e) => Err(Error::Io {
                what: format!("signal `{}`", self.description),
                source: e.into(),
            }),
        }
    }

    /// Kills its process group and reaps it.
    pub fn kill(&self) -> Result<(), Error> {
        self.signal(Signal::SIGKILL)?;
        self.child().wait().map(drop).map_err(|source| Error::Io {
            what: format!("reap `{}`", self.description),
            source,
        })
    }
}

/// How long `setpriv` may take to arm the death signal and exec the program.
const SETPRIV_DEADLINE: Duration = Duration::from_secs(10);

/// Returns once process `pid` no longer runs `setpriv` (it has exec'd the
/// program, or ended: either way its death signal no longer matters).
fn wait_until_past_setpriv(pid: u32, description: &str) -> Result<(), Error> {
    let exe = format!("/proc/{pid}/exe");
    let deadline = Instant::now() + SETPRIV_DEADLINE;
    loop {
        // A process that has ended (or is a zombie) has no readable exe.
        let Ok(running) = std::fs::read_link(&exe) else {
            return Ok(());
        };
        if running.file_name() != Some(OsStr::new("setpriv")) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(Error::Io {
                what: format!("start `{description}`: setpriv did not exec it"),
                source: std::io::Error::from(std::io::ErrorKind::TimedOut),
            });
        }
        // The exec is a matter of milliseconds; nothing signals it.
        std::thread::sleep(Duration::from_millis(1));
    }
}
