//! How far a transfer got, for the report of one that fails (a sender
//! whose receiver vanished once reported `"bytes": 0` after 800 MB were
//! acknowledged). A receiver counts the bytes its application
//! read ([`Counted`]); a sender samples what its peer acknowledged
//! ([`AckWatch`]), the only sign of delivery it has.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};

use crate::conn::Abort;

/// `inner`, adding every byte read to a counter that outlives it.
#[derive(Debug)]
pub struct Counted<R> {
    inner: R,
    count: Arc<AtomicU64>,
}

impl<R> Counted<R> {
    pub fn new(inner: R, count: Arc<AtomicU64>) -> Counted<R> {
        Counted { inner, count }
    }

    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Counted<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        self.count.fetch_add(read as u64, Ordering::Relaxed);
        result
    }
}

/// How often a sender samples its acknowledged bytes: a failure report is
/// at most this stale.
const SAMPLE_EVERY: Duration = Duration::from_millis(250);

/// Samples, while it lives, the bytes a connection's peer has
/// acknowledged.
#[derive(Debug)]
pub struct AckWatch {
    acked: Arc<AtomicU64>,
    sampler: tokio::task::JoinHandle<()>,
}

impl AckWatch {
    pub fn start(handle: Abort) -> AckWatch {
        let acked = Arc::new(AtomicU64::new(0));
        let latest = acked.clone();
        let sampler = tokio::spawn(async move {
            let mut every = tokio::time::interval(SAMPLE_EVERY);
            loop {
                every.tick().await;
                // Gone (closed, or the kernel forgot it): keep the last.
                let Some(acked) = handle.bytes_acked() else {
                    continue;
                };
                latest.fetch_max(acked, Ordering::Relaxed);
            }
        });
        AckWatch { acked, sampler }
    }

    /// The most the peer was seen to acknowledge, sampling once more now.
    pub fn acked(&self, handle: &Abort) -> u64 {
        if let Some(now) = handle.bytes_acked() {
            self.acked.fetch_max(now, Ordering::Relaxed);
        }
        self.acked.load(Ordering::Relaxed)
    }
}

impl Drop for AckWatch {
    fn drop(&mut self) {
        self.sampler.abort();
    }
}
