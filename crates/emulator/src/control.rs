//! The control socket: one JSON request per line in, one JSON response
//! per line out (`{"ok": true, ...}` or `{"ok": false, "error": "..."}`),
//! over a Unix stream socket. A request that cannot be applied is answered
//! with its error and changes nothing.

use std::io::{self, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::acceptor::{Acceptor, Conversation};
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

    /// Writes what was asked, as `scps emulate ctl` prints it: the metrics
    /// as they came; the counters as a table, or with `json` one line of
    /// JSON. A change's answer writes nothing.
    pub fn write_to(&self, json: bool, out: &mut impl Write) -> io::Result<()> {
        if let Some(metrics) = &self.metrics {
            write!(out, "{metrics}")?;
        }
        if let Some(stats) = &self.stats {
            if json {
                writeln!(out, "{}", serde_json::to_string(stats)?)?;
            } else {
                write!(out, "{}", stats.table())?;
            }
        }
        Ok(())
    }
}

/// Answers one request line.
pub(crate) fn answer(shared: &Shared, recorder: Option<&Recorder>, line: &str) -> Response {
    let request = match Request::from_json(line) {
        Ok(request) => request,
        Err(e) => return Response::error(format!("not a request ({e}); see `scps emulate ctl --help`")),
    };
    match request {
        Request::Change(change) => match shared.apply(&change) {
            Ok(now) => {
                if let Some(recorder) = recorder {
                    recorder.record(now, &change);
                }
                Response::ok()
            }
            Err(e) => Response::error(e.to_string()),
        },
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
    acceptor: Option<Acceptor>,
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
        let acceptor = Acceptor::spawn("emulator-control", listener, move || Session {
            shared: shared.clone(),
            recorder: recorder.clone(),
        })?;
        Ok(ControlServer {
            path: path.to_owned(),
            acceptor: Some(acceptor),
        })
    }
}

/// One client of the control socket: each request line is answered in
/// turn; a last line without its newline too, once the client has closed
/// its side.
struct Session {
    shared: Shared,
    recorder: Option<Arc<Recorder>>,
}

impl Conversation for Session {
    fn converse(&mut self, input: &mut Vec<u8>, output: &mut Vec<u8>, closed: bool) -> bool {
        let line: Vec<u8> = match input.iter().position(|&b| b == b'\n') {
            Some(end) => input.drain(..=end).collect(),
            None if closed && !input.iter().all(u8::is_ascii_whitespace) => std::mem::take(input),
            None => return closed,
        };
        let response = answer(
            &self.shared,
            self.recorder.as_deref(),
            String::from_utf8_lossy(&line).trim(),
        );
        output.extend_from_slice(serde_json::to_string(&response).unwrap_or_default().as_bytes());
        output.push(b'\n');
        false
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        // Stop serving before the socket's name goes.
        self.acceptor.take();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// How long `request` waits for the emulator's whole answer.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest answer `request` reads, in MiB (the stats of a link of
/// many channels are far under).
const MAX_ANSWER_MIB: usize = 16;

/// Sends `request` to the emulator listening on `path` and returns its
/// answer (the client side of `scps emulate ctl`).
pub fn request(path: &Path, request: &Request) -> Result<Response, Error> {
    request_within(path, request, ANSWER_TIMEOUT)
}

/// [`request`], with the whole answer due `within` the time given.
fn request_within(path: &Path, request: &Request, within: Duration) -> Result<Response, Error> {
    let failed = |what: &str| {
        let what = format!("{what} control socket {}", path.display());
        move |source: io::Error| match source.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Setup(format!(
                "control socket {}: no answer within {} s",
                path.display(),
                within.as_secs_f64()
            )),
            _ => Error::Io { what, source },
        }
    };
    let mut stream = UnixStream::connect(path).map_err(failed("connect to"))?;
    let due = Instant::now() + within;
    stream
        .set_write_timeout(Some(within))
        .map_err(failed("configure"))?;
    let mut line = serde_json::to_string(request).unwrap_or_default();
    line.push('\n');
    stream.write_all(line.as_bytes()).map_err(failed("write to"))?;
    stream
        .shutdown(std::net::Shutdown::Write)
        .map_err(failed("write to"))?;
    let answer = read_line_by(&mut stream, due, MAX_ANSWER_MIB << 20)
        .map_err(failed("read the answer from"))?
        .ok_or_else(|| {
            Error::Setup(format!(
                "control socket {}: the answer is longer than {MAX_ANSWER_MIB} MiB, the most `scps emulate ctl` reads",
                path.display()
            ))
        })?;
    serde_json::from_slice(&answer)
        .map_err(|e| Error::Setup(format!("unreadable answer from the emulator: {e}")))
}

/// Reads a line from `stream` by `due` (to the end of the stream if it
/// has no end of line): the line, or `None` past `cap` bytes. Running out
/// of time is an error of kind `WouldBlock` or `TimedOut`.
fn read_line_by(stream: &mut UnixStream, due: Instant, cap: usize) -> io::Result<Option<Vec<u8>>> {
    let mut line = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let left = due.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))?;
        let n = match stream.read(&mut buf) {
            Ok(0) => return Ok(Some(line)),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let end = buf[..n].iter().position(|&b| b == b'\n');
        line.extend_from_slice(&buf[..end.map_or(n, |end| end + 1)]);
        if line.len() > cap {
            return Ok(None);
        }
        if end.is_some() {
            return Ok(Some(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Instant;

    use super::*;
    use crate::config::EmulatorConfig;
    use crate::state::LinkState;

    fn shared() -> Shared {
        shared_with("rate = \"1Mbit\"\n")
    }

    fn shared_with(link: &str) -> Shared {
        let config = EmulatorConfig::from_text(
            &format!("[emulate]\nside_a = \"a\"\nside_b = \"b\"\n[link]\n{link}"),
            "test",
        )
        .unwrap();
        Shared {
            state: Arc::new(Mutex::new(LinkState::new(&config).unwrap())),
            epoch: Instant::now(),
        }
    }

    fn written(response: &Response, json: bool) -> String {
        let mut out = Vec::new();
        response.write_to(json, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn answers_are_written_as_asked() {
        let shared = shared();
        let stats = answer(&shared, None, r#"{"op": "stats"}"#);
        let table = stats.stats.as_ref().unwrap().table();
        assert_eq!(written(&stats, false), table);
        let json = written(&stats, true);
        assert!(json.ends_with('\n') && json.lines().count() == 1, "{json}");
        let read: Stats = serde_json::from_str(&json).unwrap();
        assert_eq!(Some(read), stats.stats);
        let metrics = Response {
            metrics: Some("scps_emulator_up 1\n".into()),
            ..Response::ok()
        };
        assert_eq!(written(&metrics, true), "scps_emulator_up 1\n");
        let set = answer(&shared, None, r#"{"op": "set", "keys": {"rate": "2Mbit"}}"#);
        assert_eq!(written(&set, false), "");
    }

    #[test]
    fn bad_requests_are_answered_with_the_reason_and_change_nothing() {
        let shared = shared();
        let garbage = answer(&shared, None, "reboot now");
        assert!(!garbage.ok);
        assert!(garbage.error.unwrap().starts_with("not a request"));
        let missing = answer(&shared, None, r#"{"op": "outage_start", "channel": 3}"#);
        assert_eq!(
            missing.error.as_deref(),
            Some("no channel 3: this link has 1 (0 to 0)")
        );
        let stats = answer(&shared, None, r#"{"op": "stats"}"#).stats.unwrap();
        assert!(stats.channels.iter().all(|c| c.up && c.rate_bps == 1_000_000));
        let set = answer(&shared, None, r#"{"op": "set", "keys": {"rate": "2Mbit"}}"#);
        assert!(set.ok, "{set:?}");
        let stats = answer(&shared, None, r#"{"op": "stats"}"#).stats.unwrap();
        assert!(stats.channels.iter().all(|c| c.rate_bps == 2_000_000));
    }

    #[test]
    fn the_stats_of_a_bonded_link_give_its_bonds_and_read_back_whole() {
        let shared = shared_with("rate = \"64kbit\"\nchannels = 3\nbond = \"scheduler\"\n");
        let response = answer(&shared, None, r#"{"op": "stats"}"#);
        // As the socket sends it, and as `scps emulate ctl` reads it.
        let line = serde_json::to_string(&response).unwrap();
        let json: serde_json::Value = serde_json::from_str(&line).unwrap();
        let bonds = json["stats"]["bonds"].as_array().unwrap();
        assert_eq!(bonds.len(), 2, "{json}");
        assert_eq!(
            (&bonds[1]["side"], &bonds[1]["sends"]),
            (&"b".into(), &"return".into())
        );
        let channel = &bonds[0]["channels"][2];
        assert_eq!(channel["state"], "up", "{channel}");
        assert_eq!(
            channel["srtt_s"],
            serde_json::Value::Null,
            "no answer yet: {channel}"
        );
        for counter in [
            "state_changes",
            "dropped_full",
            "bad_frames",
            "misrouted_answers",
            "stale_answers",
        ] {
            assert_eq!(bonds[0][counter], 0, "{counter}: {json}");
        }
        let read: Response = serde_json::from_str(&line).unwrap();
        assert_eq!(read, response);
    }

    #[test]
    fn each_line_is_answered_and_a_last_one_without_its_end_once_closed() {
        let mut session = Session {
            shared: shared(),
            recorder: None,
        };
        let mut input = b"{\"op\": \"stats\"}\nreboot\n{\"op\": \"metrics\"}".to_vec();
        let mut output = Vec::new();
        // One request a turn, as the acceptor asks.
        assert!(!session.converse(&mut input, &mut output, false));
        assert!(!session.converse(&mut input, &mut output, false));
        assert!(
            !session.converse(&mut input, &mut output, false),
            "waits for the end"
        );
        assert_eq!(output.iter().filter(|&&b| b == b'\n').count(), 2);
        assert!(!session.converse(&mut input, &mut output, true));
        assert!(session.converse(&mut input, &mut output, true), "all answered");
        let answers: Vec<Response> = output
            .split(|&b| b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| serde_json::from_slice(line).unwrap())
            .collect();
        assert_eq!(
            answers.iter().map(|a| a.ok).collect::<Vec<_>>(),
            [true, false, true]
        );
        assert!(answers[2].metrics.is_some());
    }

    /// A server on a socket of its own that takes one client and gives
    /// it to `serve` on a thread (which returns what it keeps open).
    fn serve_one<T: Send + 'static>(
        name: &str,
        serve: impl FnOnce(UnixStream) -> T + Send + 'static,
    ) -> (PathBuf, std::thread::JoinHandle<T>) {
        let dir = std::env::temp_dir().join(format!("scps-ctl-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("control.sock");
        let listener = UnixListener::bind(&path).unwrap();
        (
            path,
            std::thread::spawn(move || serve(listener.accept().unwrap().0)),
        )
    }

    #[test]
    fn an_answer_that_never_ends_is_read_up_to_the_cap() {
        let (path, server) = serve_one("endless", |mut stream| {
            let _ = stream.read_to_end(&mut Vec::new());
            // No end of line, until the client hangs up.
            let chunk = [b' '; 64 * 1024];
            while stream.write_all(&chunk).is_ok() {}
        });
        let err = super::request(&path, &Request::Query(Query::Stats)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "control socket {}: the answer is longer than 16 MiB, the most `scps emulate ctl` reads",
                path.display()
            )
        );
        server.join().unwrap();
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn a_socket_that_never_answers_is_given_up_on_at_the_deadline() {
        let (path, server) = serve_one("silent", |mut stream| {
            // The request, then nothing; kept open.
            let _ = stream.read_to_end(&mut Vec::new());
            stream
        });
        let err =
            request_within(&path, &Request::Query(Query::Stats), Duration::from_millis(200)).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("control socket {}: no answer within 0.2 s", path.display())
        );
        drop(server.join().unwrap());
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn an_answer_that_trickles_is_given_up_on_at_the_deadline_not_per_read() {
        let (path, server) = serve_one("trickle", |mut stream| {
            let _ = stream.read_to_end(&mut Vec::new());
            // A byte every 20 ms, for 10 s at most or until the client
            // hangs up.
            for _ in 0..500 {
                if stream.write_all(b" ").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let err =
            request_within(&path, &Request::Query(Query::Stats), Duration::from_millis(300)).unwrap_err();
        assert!(err.to_string().ends_with("no answer within 0.3 s"), "{err}");
        server.join().unwrap();
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}
