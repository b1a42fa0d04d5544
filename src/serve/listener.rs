//! File descriptors on the serving path: the [`Listener`] (a bound TCP listener whose
//! connections get `TCP_NODELAY`, and whose accept never waits on descriptors: when the
//! process has none left it closes the oldest idle connection at once instead of sleeping),
//! and [`fit_to_open_file_limit`], which makes `--web-max-connections` fit `RLIMIT_NOFILE`
//! (the soft limit is raised toward the hard one when that is needed and allowed, else the
//! cap is lowered; either is logged once).
//!
//! It owns the process's open-file limit and the accept call only; which connection to close
//! is `conns`' decision, and it must not read or write the connections it accepts.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

/// Descriptors kept for the exporter's own use beyond those open when serving starts (the
/// kubelet and API server connections, NVML's device files, files read per tick, a TLS
/// handshake's certificate reload), in addition to one per connection.
pub const SPARE_DESCRIPTORS: u64 = 64;

/// A listener whose accepted connections have `TCP_NODELAY` set, so that a response written as
/// headers + body is not held back by Nagle's algorithm waiting for a delayed ACK (that costs
/// ~40 ms per keep-alive request). When accepting fails for want of descriptors it frees one
/// (see [`Listener::accept_or_shed`]) and says so once until accepting works again.
pub struct Listener {
    inner: TcpListener,
    /// Accepts that failed for want of descriptors since the warning, and when the last did.
    starved: Option<(u64, tokio::time::Instant)>,
}

/// How long accepting must go without failing for want of descriptors before the recovery is
/// logged (and a new failure warned about again).
const STARVED_QUIET: Duration = Duration::from_secs(10);

/// Wraps a bound listener (see [`Listener`]).
pub fn with_nodelay(inner: TcpListener) -> Listener {
    Listener {
        inner,
        starved: None,
    }
}

/// Whether `e` says the process (`EMFILE`) or the system (`ENFILE`) has no descriptor left.
fn out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// Whether `e` concerns only the connection being accepted (the next one may succeed).
fn connection_error(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}

impl Listener {
    /// The address the listener is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }

    /// The next connection. When there is no descriptor to accept it with, `shed` is asked
    /// to close a connection (the oldest idle one) and the accept is retried a few
    /// milliseconds later, so the waiting client (Prometheus) gets in at once; only when
    /// `shed` has nothing to close does it wait longer (100 ms). The first such failure is
    /// logged as a warning, and the recovery once at the first accept after 10 s without one.
    pub async fn accept_or_shed(
        &mut self,
        mut shed: impl FnMut() -> bool,
    ) -> (TcpStream, SocketAddr) {
        loop {
            match self.inner.accept().await {
                Ok((tcp, remote)) => {
                    if let Some((failed, last)) = self.starved
                        && last.elapsed() >= STARVED_QUIET
                    {
                        tracing::info!(
                            failed,
                            "accepting connections without running out of file descriptors \
                             again: {failed} accept(s) had failed for want of them"
                        );
                        self.starved = None;
                    }
                    if let Err(e) = tcp.set_nodelay(true) {
                        tracing::debug!("cannot set TCP_NODELAY: {e}");
                    }
                    return (tcp, remote);
                }
                Err(e) if out_of_descriptors(&e) => {
                    let now = tokio::time::Instant::now();
                    let (failed, last) = self.starved.get_or_insert((0, now));
                    *failed += 1;
                    *last = now;
                    if *failed == 1 {
                        tracing::warn!(
                            "cannot accept a connection: {e}; closing the oldest idle \
                             connection for it (the open-file limit is too low for \
                             --web-max-connections and the exporter's own files)"
                        );
                    }
                    let wait = if shed() { 5 } else { 100 };
                    tokio::time::sleep(Duration::from_millis(wait)).await;
                }
                Err(e) if connection_error(&e) => {
                    tracing::debug!("accept: {e}");
                }
                Err(e) => {
                    tracing::debug!("accept failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
}

impl axum::serve::Listener for Listener {
    type Io = TcpStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        self.accept_or_shed(|| false).await
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// What [`fit`] decided.
#[derive(Debug, PartialEq, Eq)]
struct Fit {
    /// The soft limit to set, when it must be raised.
    raise_to: Option<u64>,
    /// The connection cap to use when the soft limit stays as it is.
    cap_at_soft: usize,
    /// Descriptors needed for `max` connections.
    needed: u64,
}

/// For `max` connections, with `open` descriptors open now and the limits `soft` and `hard`.
fn fit(max: usize, open: u64, soft: u64, hard: u64) -> Fit {
    let reserve = open + SPARE_DESCRIPTORS;
    let needed = max as u64 + reserve;
    let raise_to = (soft < needed && hard > soft).then(|| needed.min(hard));
    let room = soft.saturating_sub(reserve).max(soft / 4).max(1);
    Fit {
        raise_to,
        cap_at_soft: max.min(usize::try_from(room).unwrap_or(usize::MAX)),
        needed,
    }
}

/// Descriptors the process has open now (64 when that cannot be read).
fn open_descriptors() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(64, |d| d.count() as u64)
}

/// The connection cap to use for `--web-max-connections` `max`: `max` itself when the
/// open-file limit leaves room for that many connections beside the descriptors open now
/// and [`SPARE_DESCRIPTORS`], after raising the soft limit toward the hard one if needed
/// (logged); else lower, to fit (logged as a warning).
pub fn fit_to_open_file_limit(max: usize) -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given, which lives on the stack.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        tracing::debug!(
            "cannot read the open-file limit: {}",
            io::Error::last_os_error()
        );
        return max;
    }
    let (mut soft, hard) = (lim.rlim_cur, lim.rlim_max);
    let f = fit(max, open_descriptors(), soft, hard);
    if let Some(to) = f.raise_to {
        let new = libc::rlimit {
            rlim_cur: to,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the struct it is given, which lives on the stack.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &new) } == 0 {
            tracing::info!(
                from = soft,
                to,
                hard,
                "raised the soft limit on open files from {soft} to {to} for \
                 --web-max-connections {max}"
            );
            soft = to;
        } else {
            tracing::debug!(
                "cannot raise the open-file limit to {to}: {}",
                io::Error::last_os_error()
            );
        }
    }
    if soft >= f.needed {
        return max;
    }
    let cap = fit(max, open_descriptors(), soft, hard).cap_at_soft;
    tracing::warn!(
        soft,
        hard,
        cap,
        "the open-file limit (soft {soft}, hard {hard}) leaves room for {cap} connections: \
         --web-max-connections lowered from {max} to {cap}"
    );
    cap
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_fits_the_open_file_limit() {
        // Room enough: nothing changes.
        let f = fit(512, 20, 1 << 20, 1 << 20);
        assert_eq!((f.raise_to, f.cap_at_soft), (None, 512));
        // A soft limit below what is needed is raised to what is needed, at most the hard one.
        assert_eq!(fit(512, 20, 512, 1 << 20).raise_to, Some(596));
        assert_eq!(fit(512, 20, 1024, 1 << 20).raise_to, None);
        assert_eq!(fit(512, 20, 256, 400).raise_to, Some(400));
        // No higher hard limit: the cap leaves the reserve free.
        let f = fit(512, 20, 256, 256);
        assert_eq!((f.raise_to, f.cap_at_soft), (None, 172));
        // A limit below the reserve still serves a few connections.
        assert_eq!(fit(512, 20, 40, 40).cap_at_soft, 10);
        assert_eq!(fit(512, 20, 1, 1).cap_at_soft, 1);
    }
}
