//! The handlers: `/metrics`, `/health`, `/ready`, and the router that joins them to the pages
//! `/` and `/status` (`pages`); and the watchdog that logs a stalled sampler.
//!
//! Handlers only read the last [`Published`](crate::exposition::publish::Published) value:
//! `/metrics` returns its cached bytes (gzip when the client accepts it) and never calls NVML,
//! the kubelet or the API server. [`app`] builds the router so tests can drive it without a
//! socket. `/ready` and `/metrics` show a stalled sampler (the stall itself is measured by
//! [`Shared`]). It must not accept connections, speak TLS or check credentials (`server`,
//! `handshake`, `protect`).

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::{held, pages, pinned};
use crate::exposition::publish::Shared;

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
    // until written, and connections holding old pages over the budget are cut (and counted,
    // by the server).
    let body = match pin_to {
        Some(axum::Extension(to)) => {
            let body = to.pin(body);
            to.enforce(&[&current.plain, &current.gzip]);
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
