//! The first line a sender writes: `SCPS-TEST/1 ` and a JSON object naming
//! the workload, then a newline. The receiver needs no options of its own
//! to serve any workload, and refuses a connection that does not start
//! with the magic (some other program) with a clear error.

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

pub const MAGIC: &str = "SCPS-TEST/1 ";

/// The longest hello or report line accepted.
pub const MAX_LINE: usize = 16 * 1024;

/// One direction's message stream.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// Bytes per message, header included.
    pub size: usize,
    pub rate_bps: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Hello {
    /// `bytes` follow, then their SHA-256 (32 bytes); with `both_ways`,
    /// the receiver sends as many bytes back at the same time, then theirs
    /// (absent when false, as senders before it wrote the hello).
    Bulk {
        bytes: u64,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        both_ways: bool,
    },
    /// Interactive echo: messages of `flow` for `duration_s`, which the
    /// receiver sends back as they arrive; their latency is the round
    /// trip. `seed` and `nagle` as for [`Hello::Messages`].
    Echo {
        flow: Flow,
        duration_s: f64,
        seed: u64,
        #[serde(default)]
        nagle: bool,
    },
    /// A file fetch (one request of the Xiphos paper's complex network):
    /// the receiver sends `bytes` of the pattern keyed by `seed`, then
    /// their SHA-256, and the sender checks them.
    Fetch { bytes: u64, seed: u64 },
    /// Messages of `forward` for `duration_s`; with `reverse`, the receiver
    /// sends such messages back at the same time. `seed` keys the random
    /// bytes of the forward flow (the reverse flow's key is `seed + 1`, wrapping).
    /// `nagle`: both ends keep Nagle's algorithm on; by default they turn
    /// it off, so that each message leaves when written.
    Messages {
        forward: Flow,
        reverse: Option<Flow>,
        duration_s: f64,
        seed: u64,
        #[serde(default)]
        nagle: bool,
    },
}

/// Smallest and largest message: the header alone, and the simulator's
/// limit (scps-config).
pub const MESSAGE_SIZES: std::ops::RangeInclusive<usize> = 12..=(1 << 20);

impl Flow {
    /// Why the flow cannot be run, if it cannot.
    pub fn check(&self, what: &str) -> Result<(), String> {
        if !MESSAGE_SIZES.contains(&self.size) {
            return Err(format!(
                "{what} message size {}: a message is 12 bytes (its header) to 1MiB",
                self.size
            ));
        }
        if self.rate_bps == 0 {
            return Err(format!("{what} rate 0: the offered rate must be above 0 bit/s"));
        }
        Ok(())
    }
}

impl Hello {
    /// For the message workloads, whether Nagle's algorithm stays on at
    /// both ends (the sender's choice holds for both directions).
    pub fn nagle(&self) -> Option<bool> {
        match self {
            Hello::Messages { nagle, .. } | Hello::Echo { nagle, .. } => Some(*nagle),
            Hello::Bulk { .. } | Hello::Fetch { .. } => None,
        }
    }
}

/// The largest fetch a receiver serves: the tools' size limit.
pub const MAX_FETCH_BYTES: u64 = 1_000_000_000_000_000;

impl Hello {
    /// Refuses workloads no sender of ours asks for: a peer's hello is
    /// network input.
    pub fn check(&self) -> Result<(), String> {
        if let Hello::Fetch { bytes, .. } = self
            && !(1..=MAX_FETCH_BYTES).contains(bytes)
        {
            return Err(format!("fetch of {bytes} bytes: expected 1 byte to 1e15 bytes"));
        }
        let (flows, duration_s) = match self {
            Hello::Messages {
                forward,
                reverse,
                duration_s,
                ..
            } => (
                [
                    Some(("forward", forward)),
                    reverse.as_ref().map(|r| ("reverse", r)),
                ],
                *duration_s,
            ),
            Hello::Echo { flow, duration_s, .. } => ([Some(("echo", flow)), None], *duration_s),
            Hello::Bulk { .. } | Hello::Fetch { .. } => return Ok(()),
        };
        for (what, flow) in flows.into_iter().flatten() {
            flow.check(what)?;
        }
        if !(duration_s.is_finite() && duration_s > 0.0 && duration_s < 1e9) {
            return Err(format!(
                "test window {duration_s} s: expected above 0 and below 1e9 s"
            ));
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LineError {
    #[error("the peer closed the connection before sending {0}")]
    Closed(&'static str),
    #[error("{0} longer than {MAX_LINE} bytes")]
    TooLong(&'static str),
    #[error("not an scps test peer: the connection began with {0:?}")]
    NotATestPeer(String),
    #[error("invalid {what}: {source}")]
    Invalid {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("the sender asked for what cannot be run: {0}")]
    Refused(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// Writes the hello line; returns its length in bytes.
pub async fn write_hello(out: &mut (impl AsyncWrite + Unpin), hello: &Hello) -> std::io::Result<u64> {
    let json = serde_json::to_string(hello).map_err(std::io::Error::other)?;
    let line = format!("{MAGIC}{json}\n");
    out.write_all(line.as_bytes()).await?;
    Ok(line.len() as u64)
}

/// Reads one line of at most [`MAX_LINE`] bytes (without its newline).
pub async fn read_line(
    input: &mut (impl AsyncBufRead + Unpin),
    what: &'static str,
) -> Result<Vec<u8>, LineError> {
    let mut line = Vec::new();
    loop {
        let available = input.fill_buf().await?;
        if available.is_empty() {
            return Err(LineError::Closed(what));
        }
        let (take, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (available.len(), false),
        };
        if line.len() + take > MAX_LINE + 1 {
            return Err(LineError::TooLong(what));
        }
        line.extend_from_slice(&available[..take]);
        input.consume(take);
        if done {
            line.pop();
            return Ok(line);
        }
    }
}

pub async fn read_hello(input: &mut (impl AsyncBufRead + Unpin)) -> Result<Hello, LineError> {
    let line = read_line(input, "its hello").await?;
    let Some(json) = line.strip_prefix(MAGIC.as_bytes()) else {
        let start = String::from_utf8_lossy(&line[..line.len().min(40)]).into_owned();
        return Err(LineError::NotATestPeer(start));
    };
    let hello: Hello = serde_json::from_slice(json).map_err(|source| LineError::Invalid {
        what: "hello",
        source,
    })?;
    hello.check().map_err(LineError::Refused)?;
    Ok(hello)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_hello_reads_back_and_strangers_are_named() {
        let hello = Hello::Messages {
            forward: Flow {
                size: 64,
                rate_bps: 2048,
            },
            reverse: None,
            duration_s: 60.0,
            seed: 7,
            nagle: false,
        };
        let mut wire = Vec::new();
        write_hello(&mut wire, &hello).await.unwrap();
        wire.extend_from_slice(b"rest");
        let mut input = &wire[..];
        assert_eq!(read_hello(&mut input).await.unwrap(), hello);
        assert_eq!(input, b"rest", "the hello's reader leaves what follows");

        let err = read_hello(&mut &b"GET / HTTP/1.1\r\n"[..]).await.unwrap_err();
        assert!(err.to_string().contains("not an scps test peer"), "{err}");
        let err = read_hello(&mut &b"SCPS-TEST/1 {\"kind\":\"bulk\"}\n"[..])
            .await
            .unwrap_err();
        assert!(err.to_string().contains("invalid hello"), "{err}");
        let err = read_hello(&mut &b"SCPS-TEST/1 {"[..]).await.unwrap_err();
        assert!(matches!(err, LineError::Closed(_)), "{err}");
        let tiny = b"SCPS-TEST/1 {\"kind\":\"messages\",\"forward\":{\"size\":0,\"rate_bps\":8},\
                     \"reverse\":null,\"duration_s\":1.0,\"seed\":1}\n";
        let err = read_hello(&mut &tiny[..]).await.unwrap_err();
        assert!(err.to_string().contains("message size 0"), "{err}");
        let long = vec![b'x'; MAX_LINE + 10];
        let err = read_hello(&mut &long[..]).await.unwrap_err();
        assert!(matches!(err, LineError::TooLong(_)), "{err}");
    }
}
