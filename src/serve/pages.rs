//! The landing page `/` and `/status`: built from the last published snapshot at most once per
//! tick (and per change of readiness or stall), cached, and served as bytes.
//!
//! Owns the cache and the two handlers. It must not compute what the pages show (`status`
//! does) nor how they look (`landing` does), and it must not block `/metrics`: the only lock
//! is the cache's own, held while one page is built.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use axum::Router;
use axum::routing::get;

use super::{landing, status};
use crate::exposition::publish::Shared;
use crate::snapshot::Snapshot;

/// The routes `/` and `/status` over the shared state, with their own cache.
pub(super) fn router(shared: Arc<Shared>, node: Option<Arc<str>>) -> Router {
    let state = Arc::new(Pages {
        shared,
        node,
        cache: PageCache::default(),
    });
    Router::new()
        .route("/", get(index))
        .route("/status", get(status_json))
        .with_state(state)
}

/// What the two handlers read.
struct Pages {
    shared: Arc<Shared>,
    node: Option<Arc<str>>,
    cache: PageCache,
}

/// The landing page and `/status`, built at most once per published tick (and per change of
/// readiness or stall), so that a flood of page views costs what serving bytes costs and
/// never slows `/metrics` more than as many scrapes would.
#[derive(Default)]
struct PageCache {
    current: std::sync::Mutex<Option<CachedPages>>,
}

struct CachedPages {
    /// The snapshot the pages were built from (held, so that its address cannot be reused
    /// by a later snapshot while it is compared), readiness and stall state.
    snapshot: Arc<Snapshot>,
    ready: bool,
    stalled: bool,
    html: bytes::Bytes,
    json: bytes::Bytes,
}

/// The landing page (HTML) and `/status` (JSON) of the current tick, from the cache.
fn pages(state: &Pages) -> (bytes::Bytes, bytes::Bytes) {
    let current = state.shared.load();
    let ready = state.shared.is_ready();
    let stalled = state.shared.stalled_for();
    let mut slot = match state.cache.current.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    };
    if let Some(c) = slot.as_ref().filter(|c| {
        Arc::ptr_eq(&c.snapshot, &current.snapshot)
            && c.ready == ready
            && c.stalled == stalled.is_some()
    }) {
        return (c.html.clone(), c.json.clone());
    }
    let st = status::build(
        &current.snapshot,
        &current.counters,
        state.node.as_deref(),
        ready,
        crate::base::clock::unix_now(),
        stalled,
    );
    let html = bytes::Bytes::from(landing::render(&st));
    let json = match serde_json::to_vec_pretty(&st) {
        Ok(v) => bytes::Bytes::from(v),
        Err(e) => bytes::Bytes::from(format!("{{\"error\": {:?}}}", e.to_string())),
    };
    *slot = Some(CachedPages {
        snapshot: Arc::clone(&current.snapshot),
        ready,
        stalled: stalled.is_some(),
        html: html.clone(),
        json: json.clone(),
    });
    (html, json)
}

async fn index(State(state): State<Arc<Pages>>) -> Response {
    let (html, _) = pages(&state);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        )],
        html,
    )
        .into_response()
}

async fn status_json(State(state): State<Arc<Pages>>) -> Response {
    let (_, json) = pages(&state);
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        json,
    )
        .into_response()
}
