//! The HTTP server: `/metrics`, `/health`, `/ready` and the landing page `/`.
//!
//! Handlers only read the last [`Published`](crate::publish::Published) value: `/metrics`
//! returns its cached bytes (gzip when the client accepts it) and never calls NVML, the
//! kubelet or the API server. [`app`] builds the router so tests can drive it without a socket.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;

use crate::landing;
use crate::publish::Shared;

/// Content type of the text exposition format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The router over the shared state.
pub fn app(shared: Arc<Shared>) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/", get(index))
        .with_state(shared)
}

/// `true` when `Accept-Encoding` allows gzip (`gzip` or `*` with a non-zero q-value).
pub fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT_ENCODING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| {
            v.split(',').any(|item| {
                let mut parts = item.split(';');
                let coding = parts.next().unwrap_or("").trim();
                if !(coding.eq_ignore_ascii_case("gzip") || coding == "*") {
                    return false;
                }
                !parts.any(|p| {
                    let p = p.trim();
                    p.strip_prefix("q=")
                        .or_else(|| p.strip_prefix("Q="))
                        .and_then(|q| q.trim().parse::<f32>().ok())
                        == Some(0.0)
                })
            })
        })
}

async fn metrics(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    let current = shared.load();
    let gzip = accepts_gzip(&headers);
    let body = if gzip {
        current.gzip.clone()
    } else {
        current.plain.clone()
    };
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    if gzip {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    resp
}

async fn health() -> &'static str {
    "ok\n"
}

async fn ready(State(shared): State<Arc<Shared>>) -> (StatusCode, &'static str) {
    if shared.is_ready() {
        (StatusCode::OK, "ready\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: no GPU sample encoded yet\n",
        )
    }
}

async fn index(State(shared): State<Arc<Shared>>) -> Html<String> {
    let current = shared.load();
    Html(landing::render(
        &current.snapshot,
        &current.counters,
        shared.is_ready(),
    ))
}

/// Resolves a dcgm-exporter style listen address: `:9400` (all interfaces), `host:port`,
/// `[v6]:port`. Returns the candidates to try in order.
pub fn parse_address(addr: &str) -> Result<Vec<SocketAddr>, String> {
    let bad = || {
        format!("--address {addr:?}: expected [HOST]:PORT, e.g. :9400, 127.0.0.1:9400 or [::]:9400")
    };
    if let Some(port) = addr.strip_prefix(':') {
        let port: u16 = port.parse().map_err(|_| bad())?;
        return Ok(vec![
            SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, port)),
            SocketAddr::from((std::net::Ipv4Addr::UNSPECIFIED, port)),
        ]);
    }
    if let Ok(a) = addr.parse::<SocketAddr>() {
        return Ok(vec![a]);
    }
    let (host, port) = addr.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    use std::net::ToSocketAddrs;
    let v: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("--address {addr:?}: {e}"))?
        .collect();
    if v.is_empty() { Err(bad()) } else { Ok(v) }
}

/// A listener whose accepted connections have `TCP_NODELAY` set, so that a response written
/// as headers + body is not held back by Nagle's algorithm waiting for a delayed ACK (that
/// costs ~40 ms per keep-alive request).
pub type Listener = axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)>;

fn no_delay(tcp: &mut tokio::net::TcpStream) {
    if let Err(e) = tcp.set_nodelay(true) {
        tracing::debug!("cannot set TCP_NODELAY: {e}");
    }
}

/// Wraps a bound listener so that connections get `TCP_NODELAY`.
pub fn with_nodelay(l: tokio::net::TcpListener) -> Listener {
    use axum::serve::ListenerExt;
    l.tap_io(no_delay as fn(&mut tokio::net::TcpStream))
}

/// Binds the first candidate that works (`[::]` may be unavailable where IPv6 is off).
pub async fn bind(addr: &str) -> Result<Listener, String> {
    let mut last = String::new();
    for cand in parse_address(addr)? {
        match tokio::net::TcpListener::bind(cand).await {
            Ok(l) => return Ok(with_nodelay(l)),
            Err(e) => last = format!("cannot listen on {cand} (--address {addr:?}): {e}"),
        }
    }
    Err(last)
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
    }

    #[test]
    fn addresses() {
        assert_eq!(parse_address(":9400").unwrap().len(), 2);
        assert_eq!(
            parse_address("127.0.0.1:9400").unwrap(),
            vec!["127.0.0.1:9400".parse().unwrap()]
        );
        assert_eq!(
            parse_address("[::1]:9400").unwrap(),
            vec!["[::1]:9400".parse().unwrap()]
        );
        assert!(parse_address("9400").is_err());
        assert!(parse_address(":notaport").is_err());
    }
}
