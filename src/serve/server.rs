//! The server: binding the listen address ([`bind`]), then [`serve`]'s accept loop, one task
//! per connection, in plain HTTP or, with a `--web-config-file`, with TLS (its handshake in
//! `handshake`), client certificates, basic auth and extra headers (`protect`); HTTP/1.1 only,
//! within [`Limits`] (read and write timeouts in `deadline`, the connection cap in `conns`,
//! fitted to the open-file limit by `listener`), the budget on the pages that unread responses
//! hold (`pinned`, its cuts counted in `counts`) and a bounded shutdown ([`SHUTDOWN_GRACE`],
//! [`SHUTDOWN_DRAIN`]).
//!
//! It must not decide what a request gets (the router's handlers do) or read the snapshot.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;

use super::counts::ServeCounts;
use super::handshake::{TLS_HANDSHAKE_TIMEOUT, tls_handshake};
use super::listener::{self, Listener, with_nodelay};
use super::protect::{UNAUTHENTICATED_PATHS, protect};
use super::web_config::{TlsServer, WebConfig};
use super::{conns, deadline, held, pinned};

/// Why the server could not start (once bound, it serves until told to stop).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--address` does not parse or resolve.
    #[error(transparent)]
    Address(#[from] crate::serve::address::ListenAddressError),
    /// No candidate address could be bound (the last candidate's error).
    #[error("cannot listen on {candidate} (--address {flag:?}): {source}")]
    Listen {
        /// The address tried last.
        candidate: SocketAddr,
        /// `--address` as given.
        flag: String,
        /// Why binding it failed.
        source: std::io::Error,
    },
}

/// Binds the first candidate that works (`[::]` may be unavailable where IPv6 is off).
pub async fn bind(addr: &str) -> Result<Listener, ServeError> {
    let mut last = None;
    for cand in crate::serve::address::parse_address("-a/--address", addr)? {
        match tokio::net::TcpListener::bind(cand).await {
            Ok(l) => return Ok(with_nodelay(l)),
            Err(source) => {
                last = Some(ServeError::Listen {
                    candidate: cand,
                    flag: addr.to_owned(),
                    source,
                })
            }
        }
    }
    // parse_address never returns an empty list, so `last` is set here.
    Err(last.unwrap_or_else(|| {
        crate::serve::address::ListenAddressError::Syntax {
            setting: "-a/--address".to_owned(),
            addr: addr.to_owned(),
        }
        .into()
    }))
}

/// The bound from SIGTERM (or Ctrl-C) to the end of the process, whatever NVML, the dynamic
/// loader or the clients are doing (the pod's termination grace is 30 s by default). The
/// ordinary shutdown uses [`SHUTDOWN_DRAIN`] of it; the daemon's exit guard ends the process at
/// the grace itself when the ordinary shutdown cannot run.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How long responses in flight may take to finish once SIGTERM has stopped the listener, and
/// how long the daemon then waits for the sampler's tick (both from the signal); connections
/// still open then are cut. The second left of [`SHUTDOWN_GRACE`] is the margin for leaving.
pub const SHUTDOWN_DRAIN: std::time::Duration = std::time::Duration::from_secs(4);

/// Bounds on the serving path (`--web-read-timeout`, `--web-write-timeout`: zero means none;
/// `--web-max-connections`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// To read a request's headers (also how long an idle keep-alive connection stays open).
    pub read: std::time::Duration,
    /// To write a response once it has started.
    pub write: std::time::Duration,
    /// Connections open at once; beyond it the oldest idle one is shed (see `conns`).
    pub max_connections: usize,
}

/// Serves `router` on `listener` until `shutdown` completes, then finishes the requests in
/// flight. Without a web config (or with one that sets no certificate) this is plain HTTP;
/// with a certificate each connection is a TLS connection, its handshake run in the
/// connection's own task so that a slow client holds up no one else. Either way HTTP/1.1 only,
/// with `limits` on every connection; connections cut for holding old pages unread are
/// counted in `counts`. Logs the mode once. It cannot fail once `listener` is
/// bound: accept errors are retried.
pub async fn serve<F>(
    listener: Listener,
    router: Router,
    web: Option<Arc<WebConfig>>,
    limits: Limits,
    counts: Arc<ServeCounts>,
    shutdown: F,
) where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let (router, tls) = match web {
        None => {
            tracing::info!(
                mode = "plain HTTP",
                basic_auth = false,
                "no --web-config-file: no TLS, no basic auth"
            );
            (router, None)
        }
        Some(web) => {
            let users = web.basic_auth.as_ref().map_or(0, |a| a.user_count());
            let mode = web.mode();
            tracing::info!(
                config = %web.path.display(),
                mode = %mode,
                basic_auth = users > 0,
                users,
                headers = web.headers.len(),
                "web config: {mode}{}",
                if users > 0 {
                    format!(
                        ", basic auth for {users} user(s) (not on {})",
                        UNAUTHENTICATED_PATHS.join(" and ")
                    )
                } else {
                    ", no basic auth".to_owned()
                }
            );
            for note in &web.notes {
                tracing::warn!("{note}");
            }
            (protect(router, &web), web.tls.clone())
        }
    };
    let limits = Limits {
        max_connections: listener::fit_to_open_file_limit(limits.max_connections),
        ..limits
    };
    accept_loop(listener, router, tls, limits, counts, shutdown).await;
}

/// Serves one accepted connection, TLS or not, over HTTP/1.1 with the header read timeout and
/// the write deadline, until it closes or `watcher`'s shutdown ends it; what it is doing goes
/// to `activity` (the connection cap sheds idle connections first), and its requests carry
/// `pin_to` (for the budget on the pages unfinished responses hold).
async fn serve_connection<S>(
    stream: S,
    router: Router,
    limits: Limits,
    watcher: hyper_util::server::graceful::Watcher,
    (remote, activity, pin_to): (SocketAddr, Arc<conns::Activity>, pinned::PinTo),
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = held::Tracked::new(
        hyper_util::service::TowerToHyperService::new(router),
        Arc::clone(&activity),
        pin_to,
    );
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(hyper_util::rt::TokioTimer::new());
    builder.header_read_timeout((!limits.read.is_zero()).then_some(limits.read));
    let io = deadline::DeadlineIo::new(stream, limits.write, activity);
    let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
    if let Err(e) = watcher.watch(conn).await {
        tracing::debug!(%remote, "connection ended with an error: {e}");
    }
}

/// The accept loop: one task per connection (the TLS handshake if any, then HTTP/1.1); on
/// shutdown, handshakes in progress are dropped and open connections finish their requests.
async fn accept_loop<F>(
    mut listener: Listener,
    router: Router,
    tls: Option<Arc<TlsServer>>,
    limits: Limits,
    counts: Arc<ServeCounts>,
    shutdown: F,
) where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Dropping the sender tells handshakes in progress to give up.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    let conns = conns::Conns::new(limits.max_connections);
    let pins = pinned::Pins::new(Arc::clone(&conns), pinned::STALE_BUDGET, counts);
    loop {
        let (tcp, remote) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept_or_shed(|| conns.shed_one()) => accepted,
        };
        let router = router.clone();
        let watcher = graceful.watcher();
        let ticket = conns.admit();
        let id = ticket.id();
        let conn = (
            remote,
            ticket.activity(),
            pinned::PinTo::new(Arc::clone(&pins), id),
        );
        let Some(tls) = tls.clone() else {
            let task = tokio::spawn(async move {
                let _ticket = ticket;
                serve_connection(tcp, router, limits, watcher, conn).await;
            });
            conns.attach(id, task.abort_handle());
            continue;
        };
        let mut stop = stop_rx.clone();
        let task = tokio::spawn(async move {
            let _ticket = ticket;
            let stream = tokio::select! {
                r = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, tls_handshake(tcp, &tls)) => match r {
                    Ok(Some(s)) => s,
                    Ok(None) => return,
                    Err(_) => {
                        tracing::debug!(%remote, "TLS handshake timed out");
                        return;
                    }
                },
                _ = stop.changed() => return,
            };
            serve_connection(stream, router, limits, watcher, conn).await;
        });
        conns.attach(id, task.abort_handle());
    }
    drop(listener);
    drop(stop_tx);
    let open = graceful.count();
    if open > 0 {
        tracing::info!(
            connections = open,
            grace_ms = SHUTDOWN_DRAIN.as_millis() as u64,
            "shutdown: no new connections; letting open ones finish their responses"
        );
    }
    if tokio::time::timeout(SHUTDOWN_DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        let cut = conns.abort_all();
        tracing::warn!(
            cut,
            grace_ms = SHUTDOWN_DRAIN.as_millis() as u64,
            "shutdown: {cut} connection(s) still open after the grace period were cut (clients \
             that did not finish sending a request or reading a response)"
        );
    }
}
