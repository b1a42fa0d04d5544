//! Fault injection, as the axum middleware [`inject`] around every route (the `404` and `405`
//! answers included): it records each request for `FakeApi::requests`, answers the error status
//! of `FakeApi::set_fail` (or `503` once the server is dropped) or of the first matching write
//! fault, delays a write as a slow server does, and records each write with its status for
//! `FakeApi::writes`. The `unreachable` fault is the accept loop's (`server`).
//!
//! It must not serve a request itself (the routes do) or change the store's objects.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{Method, Uri};
use axum::middleware::Next;
use axum::response::Response;
use serde::Deserialize;

use super::http::error_response;
use super::kinds::serves;
use super::store::Inner;
use super::target::Resource;

/// Requests remembered for `FakeApi::requests` and writes for `FakeApi::writes`.
const REQUEST_LOG_CAPACITY: usize = 10_000;

fn is_write(method: &Method) -> bool {
    [Method::POST, Method::PUT, Method::PATCH, Method::DELETE].contains(method)
}

fn push_bounded(log: &mut VecDeque<String>, line: String) {
    if log.len() >= REQUEST_LOG_CAPACITY {
        log.pop_front();
    }
    log.push_back(line);
}

/// The middleware. `resource` is what the route names, for the error message.
pub(super) async fn inject(
    State(inner): State<Arc<Inner>>,
    resource: Option<Resource>,
    req: Request,
    next: Next,
) -> Response {
    let method = req.method().clone();
    let uri = req.uri().clone();
    let write = is_write(&method);
    let (fail, fault, versions) = {
        let mut st = inner.lock();
        let seen = match uri.query() {
            Some(q) => format!("{}?{q}", uri.path()),
            None => uri.path().to_owned(),
        };
        push_bounded(&mut st.requests, seen);
        let fail = if st.closed { Some(503) } else { st.fail };
        let fault = st
            .faults
            .iter()
            .find(|f| write && uri.path().starts_with(&f.path_prefix))
            .cloned();
        (fail, fault, st.resource_versions.clone())
    };
    let code = fail.or(fault.as_ref().and_then(|f| f.status));
    let delay = fault
        .map(|f| f.delay)
        .filter(|d| fail.is_none() && !d.is_zero());
    // A route of a group or version not served now names no resource.
    let what = resource
        .filter(|r| r.route.group.is_empty() || serves(r.route.group, Some(&r.version), &versions))
        .map(|r| r.what());
    let answer = async move |req: Request| {
        let response = match code {
            Some(code) => failure(code, &method, &uri, what),
            None => next.run(req).await,
        };
        if write {
            let line = format!("{method} {} {}", uri.path(), response.status().as_u16());
            push_bounded(&mut inner.lock().writes, line);
        }
        response
    };
    let Some(delay) = delay else {
        return answer(req).await;
    };
    // A slow server still makes the write when the client has stopped waiting, as a real one
    // may: the body is read first, and the delay and the write run on their own task.
    let (parts, body) = req.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(body) => body,
        Err(e) => return error_response(400, &format!("fake API server: {e}")),
    };
    let req = Request::from_parts(parts, Body::from(body));
    let late = tokio::spawn(async move {
        tokio::time::sleep(delay).await;
        answer(req).await
    });
    late.await
        .unwrap_or_else(|e| error_response(500, &format!("fake API server: {e}")))
}

/// The one query parameter a failure's message reads.
#[derive(Debug, Default, Deserialize)]
struct WatchParam {
    watch: Option<String>,
}

/// The error answer of a request the server was told to fail; `what` is the resource the
/// route names (`pods`, `events.events.k8s.io`), or `None` to name the path.
fn failure(code: u16, method: &Method, uri: &Uri, what: Option<String>) -> Response {
    let what = what.unwrap_or_else(|| uri.path().to_owned());
    let scope = "the cluster scope";
    let watching = Query::<WatchParam>::try_from_uri(uri)
        .is_ok_and(|Query(q)| q.watch.is_some_and(|w| w == "true" || w == "1"));
    let verb = match *method {
        Method::POST => "create",
        Method::PATCH => "patch",
        Method::PUT => "update",
        Method::DELETE => "delete",
        _ if watching => "watch",
        _ => "list",
    };
    let message = if code == 403 {
        format!(
            "{what} is forbidden: User \"system:serviceaccount:fake:gpu-exporter\" cannot \
             {verb} resource \"{what}\" at {scope} (fake API server set to fail)"
        )
    } else {
        format!("{what}: fake API server set to fail with {code}")
    };
    error_response(code, &message)
}
