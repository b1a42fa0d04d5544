//! What a web config adds to the router: basic auth on every path but
//! [`UNAUTHENTICATED_PATHS`], and its extra response headers ([`protect`]).
//!
//! Middleware only: it must not parse the web config (`web_config` does) nor serve.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::web_config::{BasicAuth, WebConfig};

/// Paths that basic auth leaves open: kubelet probes cannot send credentials.
pub const UNAUTHENTICATED_PATHS: &[&str] = &["/health", "/ready"];

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
