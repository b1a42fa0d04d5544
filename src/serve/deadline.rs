//! A connection's write deadline (`--web-write-timeout`): once a response starts to be
//! written, it must be written within the timeout, or the connection is cut — so a client
//! that never reads its response cannot hold a connection, a scrape permit or shutdown.
//!
//! [`DeadlineIo`] wraps the connection's stream. The deadline is armed by a write when none is
//! armed, and only write progress ends it: it is dropped when a flush completes, that is when
//! every byte written so far has been handed to the stream (hyper flushes once a response's
//! head and its one-frame body are written), so the next response gets a fresh one. Reads do
//! not touch it: a client that never reads but trickles a byte now and then cannot extend it.
//! An idle keep-alive connection has no deadline (the header read timeout bounds that). It also
//! tells the connection's [`Activity`] whether written bytes are waiting, for the connection
//! cap's shedding order. It owns no HTTP logic and must not buffer: reads and writes pass
//! straight through.

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

use super::conns::Activity;

/// A stream whose writes fail with `TimedOut` once a response has taken longer than the
/// timeout to write.
pub struct DeadlineIo<S> {
    inner: S,
    timeout: Duration,
    /// Set while a response is being written: when it must be done, and a timer that wakes a
    /// blocked write at that moment.
    deadline: Option<Pin<Box<Sleep>>>,
    /// Whether bytes were written since the last completed flush (mirrored in `activity`).
    writing: bool,
    activity: Arc<Activity>,
}

impl<S> DeadlineIo<S> {
    /// Wraps `inner`; a zero `timeout` means no deadline. `activity` is told whether a
    /// response is being written.
    pub fn new(inner: S, timeout: Duration, activity: Arc<Activity>) -> Self {
        Self {
            inner,
            timeout,
            deadline: None,
            writing: false,
            activity,
        }
    }

    fn set_writing(&mut self, writing: bool) {
        if self.writing != writing {
            self.writing = writing;
            self.activity.set_writing(writing);
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

    /// Before a write: fails past the deadline, else arms it and marks bytes as waiting.
    fn before_write(&mut self, cx: &mut Context<'_>, empty: bool) -> io::Result<()> {
        self.check(cx)?;
        if !empty {
            self.set_writing(true);
        }
        Ok(())
    }

    /// After a flush or a shutdown of the inner stream: a completed one ends the response's
    /// deadline.
    fn after_flush(&mut self, r: Poll<io::Result<()>>) -> Poll<io::Result<()>> {
        if matches!(r, Poll::Ready(Ok(()))) {
            self.set_writing(false);
            self.deadline = None;
        }
        r
    }
}

use std::future::Future as _;

impl<S: AsyncRead + Unpin> AsyncRead for DeadlineIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for DeadlineIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if let Err(e) = self.before_write(cx, buf.is_empty()) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let empty = bufs.iter().all(|b| b.is_empty());
        if let Err(e) = self.before_write(cx, empty) {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // With nothing written since the last flush there is no response to time.
        if self.writing
            && let Err(e) = self.check(cx)
        {
            return Poll::Ready(Err(e));
        }
        let r = Pin::new(&mut self.inner).poll_flush(cx);
        self.after_flush(r)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        // A TLS close_notify is a write too: a client that does not read cannot hold it.
        if self.writing
            && let Err(e) = self.check(cx)
        {
            return Poll::Ready(Err(e));
        }
        let r = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.after_flush(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn wrap<S>(inner: S, secs: u64) -> (DeadlineIo<S>, Arc<Activity>) {
        let activity = Arc::new(Activity::default());
        let io = DeadlineIo::new(inner, Duration::from_secs(secs), Arc::clone(&activity));
        (io, activity)
    }

    #[tokio::test(start_paused = true)]
    async fn a_write_the_peer_never_reads_fails_at_the_deadline() {
        let (a, mut b) = tokio::io::duplex(64);
        let (mut io, activity) = wrap(a, 5);
        // Fills the 64-byte pipe, then blocks: nobody reads the other end.
        let started = Instant::now();
        let e = io.write_all(&[0u8; 1024]).await.unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(
            e.to_string().contains("--web-write-timeout (5000 ms)"),
            "{e}"
        );
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        assert!(activity.busy(), "unflushed bytes: the connection is busy");
        // A peer that reads gets its bytes; once a response is flushed, the next one has a
        // fresh deadline however long the connection stayed idle.
        let (a, mut b2) = tokio::io::duplex(64);
        let (mut io, activity) = wrap(a, 5);
        io.write_all(b"response 1").await.unwrap();
        assert!(activity.busy());
        io.flush().await.unwrap();
        assert!(!activity.busy(), "flushed: idle");
        tokio::time::sleep(Duration::from_secs(60)).await;
        // An idle keep-alive connection is not cut by a deadline that has passed.
        io.flush().await.unwrap();
        b2.write_all(b"GET /").await.unwrap();
        let mut buf = [0u8; 5];
        io.read_exact(&mut buf).await.unwrap();
        io.write_all(b"response 2").await.unwrap();
        io.flush().await.unwrap();
        let mut got = [0u8; 20];
        b2.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"response 1response 2");
        drop(b.read(&mut [0u8; 1]).await);
    }

    /// A client that never reads its response but sends a byte every second, while the server
    /// keeps reading (as hyper may): the bytes read do not extend the write deadline.
    #[tokio::test(start_paused = true)]
    async fn bytes_read_during_a_blocked_write_do_not_extend_the_deadline() {
        let (a, mut peer) = tokio::io::duplex(64);
        let (io, _activity) = wrap(a, 5);
        let (mut r, mut w) = tokio::io::split(io);
        let started = Instant::now();
        let writer = tokio::spawn(async move { w.write_all(&[0u8; 1024]).await });
        let reader = tokio::spawn(async move {
            let mut buf = [0u8; 16];
            while let Ok(n) = r.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        });
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_secs(1)).await;
            if writer.is_finished() {
                break;
            }
            peer.write_all(b"x").await.unwrap();
        }
        assert!(
            writer.is_finished(),
            "the trickle kept the write alive for 30 s"
        );
        let e = writer.await.unwrap().unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(
            started.elapsed() <= Duration::from_secs(6),
            "{:?}",
            started.elapsed()
        );
        reader.abort();
    }

    #[tokio::test(start_paused = true)]
    async fn zero_means_no_deadline() {
        let (a, mut b) = tokio::io::duplex(8);
        let (mut io, _activity) = wrap(a, 0);
        let w = tokio::spawn(async move { io.write_all(&[1u8; 64]).await });
        tokio::time::sleep(Duration::from_secs(3600)).await;
        assert!(!w.is_finished());
        let mut sink = vec![0u8; 64];
        b.read_exact(&mut sink).await.unwrap();
        assert!(w.await.unwrap().is_ok());
    }
}
