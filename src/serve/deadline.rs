//! A connection's write deadline (`--web-write-timeout`): once a response starts to be
//! written, it must be written within the timeout, or the connection is cut — so a client
//! that never reads its response cannot hold a connection, a scrape permit or shutdown.
//!
//! [`DeadlineIo`] wraps the connection's stream. The deadline is armed by the first write after
//! request bytes were read, and dropped when the next request's bytes arrive, so an idle
//! keep-alive connection is not affected (the header read timeout bounds that). It owns no
//! HTTP logic and must not buffer: reads and writes pass straight through.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// A stream whose writes fail with `TimedOut` once a response has taken longer than the
/// timeout to write.
pub struct DeadlineIo<S> {
    inner: S,
    timeout: Duration,
    /// Set while a response is being written: when it must be done, and a timer that wakes a
    /// blocked write at that moment.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl<S> DeadlineIo<S> {
    /// Wraps `inner`; a zero `timeout` means no deadline.
    pub fn new(inner: S, timeout: Duration) -> Self {
        Self {
            inner,
            timeout,
            deadline: None,
        }
    }

    /// Arms the deadline if needed; `Err` once it has passed. A pending write registers the
    /// timer so that the task wakes up at the deadline.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.timeout.is_zero() {
            return Ok(());
        }
        let timeout = self.timeout;
        let sleep = self
            .deadline
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(Instant::now() + timeout)));
        if sleep.as_mut().poll(cx).is_ready() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "response not written within --web-write-timeout ({} ms): the client is not reading",
                    timeout.as_millis()
                ),
            ));
        }
        Ok(())
    }
}

use std::future::Future as _;

impl<S: AsyncRead + Unpin> AsyncRead for DeadlineIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            // A new request: the next response gets a fresh deadline.
            self.deadline = None;
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for DeadlineIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Err(e) = self.check(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if let Err(e) = self.check(cx) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.deadline.is_some()
            && let Err(e) = self.check(cx)
        {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_reads_fails_at_the_deadline() {
        let (a, mut b) = tokio::io::duplex(64);
        let mut io = DeadlineIo::new(a, Duration::from_secs(5));
        // Fills the 64-byte pipe, then blocks: nobody reads the other end.
        let started = Instant::now();
        let e = io.write_all(&[0u8; 1024]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(
            e.to_string().contains("--web-write-timeout (5000 ms)"),
            "{e}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        // A peer that reads gets its bytes; the next request re-arms a fresh deadline.
        let (a, mut b2) = tokio::io::duplex(64);
        let mut io = DeadlineIo::new(a, Duration::from_secs(5));
        io.write_all(b"response 1").await.unwrap();
        tokio::time::sleep(Duration::from_secs(60)).await;
        b2.write_all(b"GET /").await.unwrap();
        let mut buf = [0u8; 5];
        io.read_exact(&mut buf).await.unwrap();
        io.write_all(b"response 2").await.unwrap();
        let mut got = [0u8; 20];
        b2.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"response 1response 2");
        drop(b.read(&mut [0u8; 1]).await);
    }

    #[tokio::test(start_paused = true)]
    async fn zero_means_no_deadline() {
        let (a, mut b) = tokio::io::duplex(8);
        let mut io = DeadlineIo::new(a, Duration::ZERO);
        let w = tokio::spawn(async move { io.write_all(&[1u8; 64]).await });
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(!w.is_finished());
        let mut sink = vec![0u8; 64];
        b.read_exact(&mut sink).await.unwrap();
        assert!(w.await.unwrap().is_ok());
    }
}
