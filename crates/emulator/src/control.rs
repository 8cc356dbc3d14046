//! The control socket: one JSON request per line in, one JSON response
//! per line out (`{"ok": true, ...}` or `{"ok": false, "error": "..."}`),
//! over a Unix stream socket. A request that cannot be applied is answered
//! with its error and changes nothing.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

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
        let mut reply = |line: &[u8]| {
            let response = answer(
                &self.shared,
                self.recorder.as_deref(),
                String::from_utf8_lossy(line).trim(),
            );
            output.extend_from_slice(serde_json::to_string(&response).unwrap_or_default().as_bytes());
            output.push(b'\n');
        };
        while let Some(end) = input.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = input.drain(..=end).collect();
            reply(&line);
        }
        if closed && !input.iter().all(u8::is_ascii_whitespace) {
            reply(input);
            input.clear();
        }
        closed
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        // Stop serving before the socket's name goes.
        self.acceptor.take();
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
}
