//! The control socket: one JSON request per line in, one JSON response
//! per line out (`{"ok": true, ...}` or `{"ok": false, "error": "..."}`),
//! over a Unix stream socket. A request that cannot be applied is answered
//! with its error and changes nothing.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::bridge::{Shared, lock};
use crate::command::{Query, Request};
use crate::stats::Stats;
use crate::trace::Recorder;

/// The answer to a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stats: Option<Stats>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<String>,
}

impl Response {
    fn error(message: String) -> Response {
        Response {
            ok: false,
            error: Some(message),
            stats: None,
            metrics: None,
        }
    }

    fn ok() -> Response {
        Response {
            ok: true,
            error: None,
            stats: None,
            metrics: None,
        }
    }
}

/// Longest a client may take to send its request.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// Most bytes read from one connection.
const MAX_REQUEST_BYTES: u64 = 64 * 1024;

/// Answers one request line.
pub(crate) fn answer(shared: &Shared, recorder: Option<&Recorder>, line: &str) -> Response {
    let request: Request = match serde_json::from_str(line) {
        Ok(request) => request,
        Err(e) => return Response::error(format!("not a request ({e}); see `scps emulate ctl --help`")),
    };
    match request {
        Request::Change(change) => {
            let now = shared.now();
            match lock(&shared.state).apply(now, &change) {
                Ok(()) => {
                    if let Some(recorder) = recorder {
                        recorder.record(now, &change);
                    }
                    Response::ok()
                }
                Err(e) => Response::error(e.to_string()),
            }
        }
        Request::Query(query) => {
            let stats = lock(&shared.state).stats(shared.now());
            match query {
                Query::Stats => Response {
                    stats: Some(stats),
                    ..Response::ok()
                },
                Query::Metrics => Response {
                    metrics: Some(stats.prometheus()),
                    ..Response::ok()
                },
            }
        }
    }
}

/// The listening socket and its thread.
#[derive(Debug)]
pub(crate) struct ControlServer {
    path: PathBuf,
    stopping: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ControlServer {
    pub(crate) fn start(path: &Path, shared: Shared, recorder: Option<Arc<Recorder>>) -> Result<Self, Error> {
        // A socket file nobody answers on is left from an emulator that
        // was killed; one that answers belongs to a running emulator.
        if path.exists() {
            if UnixStream::connect(path).is_ok() {
                return Err(Error::Setup(format!(
                    "control socket {} is in use by another emulator",
                    path.display()
                )));
            }
            let _ = std::fs::remove_file(path);
        }
        let listener = UnixListener::bind(path).map_err(|source| Error::Io {
            what: format!("listen on control socket {}", path.display()),
            source,
        })?;
        let stopping = Arc::new(AtomicBool::new(false));
        let flag = stopping.clone();
        let thread = std::thread::Builder::new()
            .name("emulator-control".into())
            .spawn(move || {
                for stream in listener.incoming() {
                    if flag.load(Ordering::Acquire) {
                        break;
                    }
                    if let Ok(stream) = stream {
                        serve(stream, &shared, recorder.as_deref());
                    }
                }
            })
            .map_err(|source| Error::Io {
                what: "start the control thread".into(),
                source,
            })?;
        Ok(ControlServer {
            path: path.to_owned(),
            stopping,
            thread: Some(thread),
        })
    }
}

/// Answers every request line of one connection.
fn serve(stream: UnixStream, shared: &Shared, recorder: Option<&Recorder>) {
    let _ = stream.set_read_timeout(Some(CLIENT_TIMEOUT));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(std::io::Read::take(stream, MAX_REQUEST_BYTES));
    let mut line = String::new();
    while matches!(reader.read_line(&mut line), Ok(n) if n > 0) {
        let response = answer(shared, recorder, line.trim());
        let mut text = serde_json::to_string(&response).unwrap_or_default();
        text.push('\n');
        if writer.write_all(text.as_bytes()).is_err() {
            return;
        }
        line.clear();
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::Release);
        // Wake the accept loop so that it sees the flag.
        let _ = UnixStream::connect(&self.path);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Sends `request` to the emulator listening on `path` and returns its
/// answer (the client side of `scps emulate ctl`).
pub fn request(path: &Path, request: &Request) -> Result<Response, Error> {
    let io = |what: &str| {
        let what = format!("{what} control socket {}", path.display());
        move |source| Error::Io { what, source }
    };
    let mut stream = UnixStream::connect(path).map_err(io("connect to"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(io("configure"))?;
    let mut line = serde_json::to_string(request).unwrap_or_default();
    line.push('\n');
    stream.write_all(line.as_bytes()).map_err(io("write to"))?;
    stream
        .shutdown(std::net::Shutdown::Write)
        .map_err(io("write to"))?;
    let mut answer = String::new();
    BufReader::new(stream)
        .read_line(&mut answer)
        .map_err(io("read from"))?;
    serde_json::from_str(&answer)
        .map_err(|e| Error::Setup(format!("unreadable answer from the emulator: {e}")))
}
