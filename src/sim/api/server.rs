//! The fake API server's start-up: the application (the routes of `routes` under the fault
//! middleware of `faults`) and the accept loop that serves it over HTTP/1.1, closing every
//! connection while an `unreachable` fault is in force.
//!
//! It must not answer requests or decide faults itself.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::middleware::from_fn_with_state;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use super::faults;
use super::routes;
use super::store::Inner;

/// Serves `listener` on a task of the current tokio runtime; aborting the handle stops it.
pub(super) fn spawn(listener: TcpListener, inner: &Arc<Inner>) -> AbortHandle {
    let app = routes::router(inner)
        .layer(from_fn_with_state(Arc::clone(inner), faults::inject))
        .with_state(Arc::clone(inner));
    tokio::spawn(accept_loop(listener, app, inner.down.subscribe())).abort_handle()
}

/// Serves HTTP/1.1 connections on `listener`, each on its own task. While `down` is true (an
/// `unreachable` fault in force) a new connection is closed at once and the open ones are
/// closed, without an answer, as a client sees an API server that is restarting or behind a
/// load balancer with no backend left.
async fn accept_loop(listener: TcpListener, app: Router, down: watch::Receiver<bool>) {
    use hyper_util::rt::TokioIo;
    use hyper_util::service::TowerToHyperService;
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!("fake Kubernetes API server: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if *down.borrow() {
            drop(stream);
            continue;
        }
        let service = TowerToHyperService::new(app.clone());
        let mut down = down.clone();
        tokio::spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::select! {
                _ = conn => {}
                _ = down.wait_for(|d| *d) => {}
            }
        });
    }
}
