//! The HTTP server: `/metrics`, `/health`, `/ready`, the landing page `/` and its JSON form
//! `/status` (both from [`status`], built from the last published snapshot at most once per tick
//! and cached, `pages`).
//!
//! Handlers only read the last [`Published`](crate::exposition::publish::Published) value: `/metrics`
//! returns its cached bytes (gzip when the client accepts it) and never calls NVML, the
//! kubelet or the API server. [`app`] builds the router so tests can drive it without a socket.
//! [`serve`] runs it on a bound listener, in plain HTTP or, with a `--web-config-file`, with
//! TLS, client certificates, basic auth and extra headers (see [`crate::serve::web_config`]),
//! HTTP/1.1 only, within [`Limits`] (read and write timeouts, the connection cap in `conns`,
//! fitted to the open-file limit by `listener`), the budget on the pages that unread responses
//! hold (`pinned`) and a bounded shutdown. [`watchdog`] logs a stalled sampler; `/ready` and
//! `/metrics` show it (the stall itself is measured by [`Shared`]).

pub mod address;
mod conns;
mod deadline;
mod held;
pub mod landing;
mod listener;
mod pages;
mod pinned;
pub mod status;
pub mod web_config;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::exposition::publish::Shared;
use crate::serve::web_config::{BasicAuth, TlsServer, WebConfig};
pub use listener::{Listener, with_nodelay};

/// Content type of the text exposition format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// dcgm-exporter 4.8.4's default for `--max-concurrent-scrapes`.
pub const DEFAULT_MAX_CONCURRENT_SCRAPES: u32 = 16;

/// How the handlers behave beyond serving the published output.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Scrapes of `/metrics` served at once; more get 503 (`--max-concurrent-scrapes`).
    /// 0: no limit.
    pub max_concurrent_scrapes: u32,
    /// `/health` answers 503 while no GPU is exported (`--health-require-gpus`).
    pub health_require_gpus: bool,
    /// The node's name for the landing page and `/status` (the host label's value).
    pub node: Option<String>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            max_concurrent_scrapes: DEFAULT_MAX_CONCURRENT_SCRAPES,
            health_require_gpus: false,
            node: None,
        }
    }
}

#[derive(Clone)]
struct AppState {
    shared: Arc<Shared>,
    scrapes: Option<Arc<tokio::sync::Semaphore>>,
    health_require_gpus: bool,
}

/// The router over the shared state, with the default [`ServeOptions`].
pub fn app(shared: Arc<Shared>) -> Router {
    app_with(shared, ServeOptions::default())
}

/// The router over the shared state.
pub fn app_with(shared: Arc<Shared>, opts: ServeOptions) -> Router {
    let state = AppState {
        shared: Arc::clone(&shared),
        scrapes: (opts.max_concurrent_scrapes > 0).then(|| {
            Arc::new(tokio::sync::Semaphore::new(
                opts.max_concurrent_scrapes as usize,
            ))
        }),
        health_require_gpus: opts.health_require_gpus,
    };
    Router::new()
        .route("/metrics", get(metrics))
        .route("/health", get(health))
        .route("/ready", get(ready))
        .with_state(state)
        .merge(pages::router(shared, opts.node.map(Arc::from)))
}

/// `true` when the client's `Accept-Encoding` accepts gzip and does not prefer the plain page
/// (RFC 9110 §12.5.3): gzip's q-value is its own or else `*`'s, identity's its own or else
/// `*`'s (0 when neither is listed), and gzip is chosen when its q-value is above 0 and not
/// below identity's. So `gzip;q=0, *` and `gzip;q=0.5, identity` get the plain page, as does a
/// request without the header.
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    let (mut gzip, mut identity, mut any) = (None, None, None);
    for value in headers.get_all(header::ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let coding = parts.next().unwrap_or("").trim();
            // A malformed q-value counts as 1, as an absent one does.
            let q = parts
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    k.trim()
                        .eq_ignore_ascii_case("q")
                        .then(|| v.trim().parse::<f32>().ok())?
                })
                .next_back()
                .filter(|q| (0.0..=1.0).contains(q))
                .unwrap_or(1.0);
            let slot = if coding.eq_ignore_ascii_case("gzip") {
                &mut gzip
            } else if coding.eq_ignore_ascii_case("identity") {
                &mut identity
            } else if coding == "*" {
                &mut any
            } else {
                continue;
            };
            // A coding listed twice keeps its highest q-value.
            *slot = Some(slot.map_or(q, |old: f32| old.max(q)));
        }
    }
    let gzip = gzip.or(any).unwrap_or(0.0);
    let identity = identity.or(any).unwrap_or(0.0);
    gzip > 0.0 && gzip >= identity
}

async fn metrics(
    State(state): State<AppState>,
    pin_to: Option<axum::Extension<pinned::PinTo>>,
    headers: HeaderMap,
) -> Response {
    // Held by the body until the server has taken it into the connection's write buffer (at
    // once: it is one frame); not while the bytes are written.
    let permit = match &state.scrapes {
        Some(gate) => match Arc::clone(gate).try_acquire_owned() {
            Ok(p) => Some(p),
            Err(_) => {
                return (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many concurrent scrapes (--max-concurrent-scrapes)\n",
                )
                    .into_response();
            }
        },
        None => None,
    };
    let current = state.shared.load();
    let stalled = state.shared.stalled_for();
    // While stalled the watchdog's family is appended to the plain text (identity encoding is
    // always acceptable).
    let gzip = stalled.is_none() && accepts_gzip(&headers);
    let body = match stalled {
        Some(for_) => {
            let mut b = current.plain.to_vec();
            b.extend_from_slice(stalled_family(for_).as_bytes());
            bytes::Bytes::from(b)
        }
        None if gzip => current.gzip.clone(),
        None => current.plain.clone(),
    };
    // Served on a connection (not by a test driving the router): the page is booked to it
    // until written, and connections holding old pages over the budget are cut.
    let body = match pin_to {
        Some(axum::Extension(to)) => {
            let body = to.pin(body);
            let cut = to.enforce(&[&current.plain, &current.gzip]);
            if cut > 0 {
                state.shared.count_stalled_responses_cut(cut);
            }
            body
        }
        None => body,
    };
    let mut resp = match permit {
        Some(permit) => Response::new(axum::body::Body::new(held::Held::new(
            axum::body::Body::from(body),
            permit,
        ))),
        None => body.into_response(),
    };
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    if gzip {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    resp
}

async fn health(State(state): State<AppState>) -> (StatusCode, String) {
    if state.health_require_gpus && state.shared.load().snapshot.entities.is_empty() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            "unhealthy: no GPU is being exported (--health-require-gpus)\n".into(),
        );
    }
    // The process is alive and serving: a restart does not unwedge a driver, so a stall is
    // reported here but fails only readiness.
    match stall(&state.shared) {
        Some((_, why)) => (
            StatusCode::OK,
            format!("ok, but {why}; /ready answers 503\n"),
        ),
        None => (StatusCode::OK, "ok\n".into()),
    }
}

async fn ready(State(state): State<AppState>) -> (StatusCode, String) {
    if let Some((_, why)) = stall(&state.shared) {
        let served = if state.shared.has_published() {
            "/metrics serves the last values"
        } else {
            "/metrics serves no GPU values yet"
        };
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not ready: {why}; {served}\n"),
        );
    }
    if state.shared.is_ready() {
        (StatusCode::OK, "ready\n".into())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: no GPU sample encoded yet\n".into(),
        )
    }
}

/// The watchdog's finding in words, when the sampler is stalled: for how long, and the likely
/// cause (before the first tick ever finished, that is loading or initialising NVML).
fn stall(shared: &Shared) -> Option<(std::time::Duration, String)> {
    let for_ = shared.stalled_for()?;
    let cause = if shared.has_published() {
        "an NVML call may be hung"
    } else {
        "since start: loading or initialising NVML may be hung"
    };
    let why = format!(
        "the sampler has not finished a tick for {} s ({cause})",
        for_.as_secs()
    );
    Some((for_, why))
}

/// The family the watchdog adds to `/metrics` while the sampler is stalled.
fn stalled_family(stalled: std::time::Duration) -> String {
    format!(
        "# HELP gpu_exporter_sampler_stalled_seconds Time since the sampler last finished a tick, \
         present only while it is stalled (the other values are that old).\n\
         # TYPE gpu_exporter_sampler_stalled_seconds gauge\n\
         gpu_exporter_sampler_stalled_seconds {}\n",
        stalled.as_secs_f64()
    )
}

/// Logs when the sampler stalls and when it recovers, checking every second; runs until the
/// server stops.
pub async fn watchdog(shared: Arc<Shared>) {
    let mut stalled = false;
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        match (stall(&shared), stalled) {
            (Some((for_, why)), false) => {
                stalled = true;
                tracing::error!(
                    stalled_s = for_.as_secs(),
                    "{why}: /ready answers 503 and /metrics carries \
                     gpu_exporter_sampler_stalled_seconds"
                );
            }
            (None, true) => {
                stalled = false;
                tracing::info!("the sampler finished a tick again; /ready is back");
            }
            _ => {}
        }
    }
}

/// Why the server could not start (once bound, it serves until told to stop).
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// `--address` does not parse or resolve.
    #[error(transparent)]
    Address(#[from] crate::serve::address::AddressError),
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
    for cand in crate::serve::address::parse_address(addr)? {
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
    Err(last.unwrap_or_else(|| crate::serve::address::AddressError::Syntax(addr.to_owned()).into()))
}

/// Paths that basic auth leaves open: kubelet probes cannot send credentials.
pub const UNAUTHENTICATED_PATHS: &[&str] = &["/health", "/ready"];

/// The bound from SIGTERM (or Ctrl-C) to the end of the process, whatever NVML, the dynamic
/// loader or the clients are doing (the pod's termination grace is 30 s by default). The
/// ordinary shutdown uses [`SHUTDOWN_DRAIN`] of it; the daemon's exit guard ends the process at
/// the grace itself when the ordinary shutdown cannot run.
pub const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// How long responses in flight may take to finish once SIGTERM has stopped the listener, and
/// how long the daemon then waits for the sampler's tick (both from the signal); connections
/// still open then are cut. The second left of [`SHUTDOWN_GRACE`] is the margin for leaving.
pub const SHUTDOWN_DRAIN: std::time::Duration = std::time::Duration::from_secs(4);

/// How long a client may take to complete the TLS handshake.
const TLS_HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Adds a web config's response headers and basic auth to `router`. Basic auth covers every
/// path except [`UNAUTHENTICATED_PATHS`]; the headers go on every response, 401s included.
pub fn protect(router: Router, web: &WebConfig) -> Router {
    let mut router = router;
    if let Some(auth) = &web.basic_auth {
        router = router.layer(axum::middleware::from_fn_with_state(
            Arc::clone(auth),
            require_basic_auth,
        ));
    }
    if !web.headers.is_empty() {
        let headers = Arc::new(web.headers.clone());
        router = router.layer(axum::middleware::map_response_with_state(
            headers,
            add_headers,
        ));
    }
    router
}

async fn require_basic_auth(
    State(auth): State<Arc<BasicAuth>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    if UNAUTHENTICATED_PATHS.contains(&req.uri().path())
        || auth.check(req.headers().get(header::AUTHORIZATION)).await
    {
        return next.run(req).await;
    }
    (
        StatusCode::UNAUTHORIZED,
        [(header::WWW_AUTHENTICATE, HeaderValue::from_static("Basic"))],
        "Unauthorized\n",
    )
        .into_response()
}

async fn add_headers(
    State(headers): State<Arc<Vec<(header::HeaderName, HeaderValue)>>>,
    mut resp: Response,
) -> Response {
    for (name, value) in headers.iter() {
        resp.headers_mut().insert(name.clone(), value.clone());
    }
    resp
}

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
/// with `limits` on every connection. Logs the mode once. It cannot fail once `listener` is
/// bound: accept errors are retried.
pub async fn serve<F>(
    listener: Listener,
    router: Router,
    web: Option<Arc<WebConfig>>,
    limits: Limits,
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
                    format!(", basic auth for {users} user(s) (not on /health and /ready)")
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
    accept_loop(listener, router, tls, limits, shutdown).await;
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
    shutdown: F,
) where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    // Dropping the sender tells handshakes in progress to give up.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(());
    let mut shutdown = std::pin::pin!(shutdown);
    let conns = conns::Conns::new(limits.max_connections);
    let pins = pinned::Pins::new(Arc::clone(&conns), pinned::STALE_BUDGET);
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

/// Runs the server side of the handshake. A client that speaks plain HTTP to the TLS port
/// gets a `400` saying so (as Go's server does) instead of a TLS alert it cannot read.
async fn tls_handshake(
    tcp: tokio::net::TcpStream,
    tls: &TlsServer,
) -> Option<tokio_rustls::server::TlsStream<tokio::net::TcpStream>> {
    let mut first = [0u8; 1];
    match tcp.peek(&mut first).await {
        Ok(1) => {}
        _ => return None,
    }
    // 0x16: a TLS handshake record.
    if first[0] != 0x16 {
        if first[0].is_ascii_uppercase() {
            refuse_plain_http(tcp).await;
        }
        return None;
    }
    match tokio_rustls::TlsAcceptor::from(tls.config())
        .accept(tcp)
        .await
    {
        Ok(s) => Some(s),
        Err(e) => {
            tracing::debug!("TLS handshake failed: {e}");
            None
        }
    }
}

/// Answers a plain HTTP request on the TLS port with `400`, then closes politely: what the
/// client sent is read first, so that closing does not turn into a reset that loses the answer.
async fn refuse_plain_http(mut tcp: tokio::net::TcpStream) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    const ANSWER: &[u8] =
        b"HTTP/1.0 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n\
        Connection: close\r\n\r\nThis port serves HTTPS: use an https:// URL.\n";
    let mut sink = [0u8; 4096];
    // What has already arrived of the request (bounded: this loop does not yield).
    for _ in 0..16 {
        match tcp.try_read(&mut sink) {
            Ok(n) if n > 0 => {}
            _ => break,
        }
    }
    if tcp.write_all(ANSWER).await.is_err() {
        return;
    }
    let _ = tcp.shutdown().await;
    // Until the client closes its side (the caller's handshake timeout bounds this).
    while let Ok(n) = tcp.read(&mut sink).await {
        if n == 0 {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(v: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(v).unwrap());
        m
    }

    #[test]
    fn gzip_negotiation() {
        assert!(accepts_gzip(&h("gzip")));
        assert!(accepts_gzip(&h("deflate, gzip;q=0.5")));
        assert!(accepts_gzip(&h("*")));
        assert!(!accepts_gzip(&h("gzip;q=0")));
        assert!(!accepts_gzip(&h("identity")));
        assert!(!accepts_gzip(&HeaderMap::new()));
        // An explicit refusal of gzip is not overridden by `*`.
        assert!(!accepts_gzip(&h("gzip;q=0, *")));
        assert!(!accepts_gzip(&h("*;q=0")));
        // The client's preference decides; a tie goes to gzip.
        assert!(!accepts_gzip(&h("gzip;q=0.5, identity;q=1")));
        assert!(accepts_gzip(&h("gzip;q=0.5, identity;q=0.5")));
        assert!(accepts_gzip(&h("identity;q=0, *")));
        assert!(accepts_gzip(&h("GZIP ; Q=0.8")));
        assert!(accepts_gzip(&h("gzip;q=nonsense")));
        assert!(!accepts_gzip(&h("br, zstd")));
    }
}
