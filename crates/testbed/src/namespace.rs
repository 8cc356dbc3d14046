//! A network namespace held by a thread of its own.
//!
//! `setns` and `unshare(CLONE_NEWNET)` change the namespace of the calling
//! thread only, so each namespace gets a thread that moves into it once and
//! then runs jobs there: whatever a job opens (sockets, TUN devices,
//! processes it spawns, threads it starts) lives in that namespace, and can
//! be used from any thread afterwards.
//!
//! Nothing is named or mounted: the namespace exists while this process
//! holds its file (and while processes started in it run), so the kernel
//! removes it, with every interface in it, when the process ends however
//! it ends.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread::{self, JoinHandle};

use nix::sched::{CloneFlags, unshare};

use crate::Error;

type Job = Box<dyn FnOnce() + Send>;

/// A fresh network namespace and the thread that lives in it.
#[derive(Debug)]
pub(crate) struct Namespace {
    jobs: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    /// `/proc/thread-self/ns/net` of the thread: keeps the namespace alive
    /// and names it for `ip ... netns PATH`.
    file: File,
}

impl Namespace {
    /// Creates the namespace (needs CAP_SYS_ADMIN: root, or root inside a
    /// user namespace).
    pub(crate) fn new(name: &str) -> Result<Namespace, Error> {
        let (jobs, queue) = mpsc::channel::<Job>();
        let (ready, created) = mpsc::sync_channel(1);
        let thread = thread::Builder::new()
            .name(format!("netns-{name}"))
            .spawn(move || {
                let opened = unshare(CloneFlags::CLONE_NEWNET)
                    .map_err(std::io::Error::from)
                    .and_then(|()| File::open("/proc/thread-self/ns/net"));
                let entered = opened.is_ok();
                // The receiver waits for this message; it cannot be gone.
                let _ = ready.send(opened);
                if entered {
                    for job in queue {
                        job();
                    }
                }
            })
            .map_err(|source| Error::Io {
                what: format!("start the thread of namespace {name}"),
                source,
            })?;
        let file = created
            .recv()
            .map_err(|_| Error::Namespace {
                node: name.to_owned(),
                reason: "its thread ended before creating it".into(),
            })?
            .map_err(|e| Error::Namespace {
                node: name.to_owned(),
                reason: format!(
                    "{e} (creating network namespaces needs root, or root inside a user namespace: \
                     `unshare --user --map-root-user`)"
                ),
            })?;
        Ok(Namespace {
            jobs: Some(jobs),
            thread: Some(thread),
            file,
        })
    }

    /// Runs `job` on the namespace's thread and returns its result; a
    /// panic in `job` is resumed here, and the thread lives on.
    pub(crate) fn run<R: Send + 'static>(&self, job: impl FnOnce() -> R + Send + 'static) -> R {
        let (done, result) = mpsc::sync_channel(1);
        let job: Job = Box::new(move || {
            let _ = done.send(catch_unwind(AssertUnwindSafe(job)));
        });
        let sent = self.jobs.as_ref().map(|jobs| jobs.send(job));
        match (sent, result.recv()) {
            (Some(Ok(())), Ok(Ok(value))) => value,
            (Some(Ok(())), Ok(Err(panic))) => resume_unwind(panic),
            _ => panic!("the thread of a network namespace is gone"),
        }
    }

    /// A path that opens this namespace, from any process (for `ip ...
    /// netns PATH`).
    pub(crate) fn path(&self) -> PathBuf {
        PathBuf::from(format!(
            "/proc/{}/fd/{}",
            std::process::id(),
            self.file.as_raw_fd()
        ))
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        // Closing the queue ends the thread's loop.
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
