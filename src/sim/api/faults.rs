//! Fault injection, as the axum middleware [`inject`] around every route (the `404` and `405`
//! answers included): it records each request for `FakeApi::requests`, answers the error status
//! of `FakeApi::set_fail` (or `503` once the server is dropped), the `403` of a request on an
//! object route that the RBAC rules of `FakeApi::set_rbac` do not allow (`rbac`), or the status
//! of the first matching write fault, delays a write as a slow server does, and records each
//! write with its status for `FakeApi::writes`. The `unreachable` fault is the accept loop's
//! (`server`).
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
use super::rbac::{self, Attributes};
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
    // A route of a group or version not served now names no resource.
    let served = {
        let versions = inner.lock().resource_versions.clone();
        resource.filter(|r| {
            r.route.group.is_empty() || serves(r.route.group, Some(&r.version), &versions)
        })
    };
    let attributes = served.as_ref().map(|r| Attributes {
        group: r.route.group.to_owned(),
        resource: if r.route.status {
            format!("{}/status", r.route.kind.plural())
        } else {
            r.route.kind.plural().to_owned()
        },
        verb: rbac::verb(&method, r.route.one, &uri),
        namespace: r.namespace.clone(),
        name: Some(r.name.clone()).filter(|n| !n.is_empty()),
    });
    let (fail, denied, fault) = {
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
        let denied = attributes.filter(|a| fail.is_none() && !rbac::allowed(st.rbac.as_deref(), a));
        (fail, denied, fault)
    };
    // The server's failure first, then RBAC, then the write fault.
    let code = fail.or_else(|| {
        fault
            .as_ref()
            .and_then(|f| f.status)
            .filter(|_| denied.is_none())
    });
    let delay = fault
        .map(|f| f.delay)
        .filter(|d| fail.is_none() && denied.is_none() && !d.is_zero());
    let what = served.map(|r| r.what());
    let answer = async move |req: Request| {
        let response = match (code, denied) {
            (Some(code), _) => failure(code, &method, &uri, what),
            (None, Some(a)) => rbac::forbidden(&a),
            (None, None) => next.run(req).await,
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
