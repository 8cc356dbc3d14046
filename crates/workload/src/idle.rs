//! A reader that gives up when nothing arrives for too long: a peer that
//! connects and then says nothing holds a receiver's connection (and, with
//! keepalive answered, would hold it forever) only until then.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, ReadBuf};
use tokio::time::{Instant, Sleep};

/// `inner`, failing a read with `TimedOut` once no byte has arrived for
/// `limit`.
#[derive(Debug)]
pub struct IdleRead<R> {
    inner: R,
    limit: Duration,
    deadline: Pin<Box<Sleep>>,
}

impl<R> IdleRead<R> {
    pub fn new(inner: R, limit: Duration) -> IdleRead<R> {
        IdleRead {
            inner,
            limit,
            deadline: Box::pin(tokio::time::sleep(limit)),
        }
    }

    pub fn into_inner(self) -> R {
        self.inner
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for IdleRead<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        match Pin::new(&mut self.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                if buf.filled().len() > before {
                    let next = Instant::now() + self.limit;
                    self.deadline.as_mut().reset(next);
                }
                Poll::Ready(result)
            }
            Poll::Pending => match self.deadline.as_mut().poll(cx) {
                Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("nothing arrived for {:?} (--idle-timeout)", self.limit),
                ))),
                Poll::Pending => Poll::Pending,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn data_keeps_it_going_and_silence_ends_it() {
        let (mut writer, reader) = tokio::io::duplex(64);
        let mut reader = IdleRead::new(reader, Duration::from_secs(10));
        let mut buf = [0u8; 8];
        for _ in 0..3 {
            // Within the limit each time, so 24 s in all pass.
            tokio::time::sleep(Duration::from_secs(8)).await;
            writer.write_all(b"x").await.unwrap();
            assert_eq!(reader.read(&mut buf).await.unwrap(), 1);
        }
        let started = Instant::now();
        let error = reader.read(&mut buf).await.unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(10));
        assert_eq!(error.to_string(), "nothing arrived for 10s (--idle-timeout)");
    }
}
