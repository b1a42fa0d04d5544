//! The fake API server's axum routes: discovery, `/version`, the access review, the collection
//! and object paths of [`OBJECTS`] with the methods each takes, and the answers for the rest
//! (`404` for a path not served, `405` for a method a served path does not take, both as
//! Kubernetes `Status` objects). Each `/apis/<group>` subtree answers `404` while its group, or
//! the `{version}` asked for, is not served (`resource.k8s.io`'s versions are set at run time).
//!
//! It must not answer requests itself (`handlers`) or inject faults (`faults`, layered on top by
//! `server`).

use std::sync::Arc;

use axum::Router;
use axum::extract::rejection::PathRejection;
use axum::extract::{Path, Request, State};
use axum::handler::Handler;
use axum::middleware::{Next, from_fn_with_state};
use axum::response::Response;
use axum::routing::{MethodRouter, get, post};

use super::handlers::{self, Group, VersionParam};
use super::http::error_response;
use super::kinds::*;
use super::store::Inner;
use super::target::{OBJECTS, ObjectRoute, Write};

/// A route that answers `GET` with `handler` and `405` to every other method (`HEAD`
/// included, which axum would otherwise answer as a `GET`).
fn read<H, T>(handler: H) -> MethodRouter<Arc<Inner>>
where
    H: Handler<T, Arc<Inner>>,
    T: 'static,
{
    get(handler)
        .head(handlers::not_allowed)
        .fallback(handlers::not_allowed)
}

/// The methods an object route takes.
fn methods(o: &ObjectRoute) -> MethodRouter<Arc<Inner>> {
    let reads = if o.one {
        read(handlers::object)
    } else {
        read(handlers::collection)
    };
    match o.write {
        Write::None => reads,
        Write::CreateEvent => reads.post(handlers::create_event),
        Write::Patch => reads.patch(handlers::patch),
    }
}

/// Every route, with the `404` fallback; the state is given by the caller.
pub(super) fn router(inner: &Arc<Inner>) -> Router<Arc<Inner>> {
    let core = OBJECTS
        .iter()
        .filter(|o| o.group.is_empty())
        .fold(Router::new(), |r, o| r.route(o.path, methods(o)))
        .route("/api", read(handlers::core_versions_doc))
        .route("/api/v1", read(handlers::core_resources_doc))
        .route("/apis", read(handlers::group_list_doc))
        .route("/version", read(handlers::version));
    [EVENTS_GROUP, RESOURCE_GROUP, AUTHZ_GROUP]
        .into_iter()
        .fold(core, |r, g| r.merge(group(inner, g)))
        .fallback(handlers::not_found)
}

/// The routes under `/apis/<group>`, answered only while the group (and the `{version}` asked
/// for) is served.
fn group(inner: &Arc<Inner>, group: &'static str) -> Router<Arc<Inner>> {
    let mut routes = OBJECTS
        .iter()
        .filter(|o| o.group == group)
        .fold(Router::new(), |r, o| r.route(o.path, methods(o)))
        .route(&format!("/apis/{group}"), read(handlers::group_doc))
        .route(
            &format!("/apis/{group}/{{version}}"),
            read(handlers::group_doc),
        );
    if group == AUTHZ_GROUP {
        routes = routes.route(
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            post(handlers::access_review).fallback(handlers::not_allowed),
        );
    }
    let served = Served {
        inner: Arc::clone(inner),
        group,
    };
    routes.layer(from_fn_with_state(served, require_served))
}

/// What [`require_served`] checks a request against.
#[derive(Clone)]
struct Served {
    inner: Arc<Inner>,
    group: &'static str,
}

/// `404` for a group or version not served now, whatever the method; otherwise the request
/// goes on with its [`Group`].
async fn require_served(
    State(s): State<Served>,
    version: Result<Path<VersionParam>, PathRejection>,
    mut req: Request,
    next: Next,
) -> Response {
    let p = match version {
        Ok(Path(p)) => p,
        Err(e) => return error_response(400, &e.body_text()),
    };
    let served = {
        let st = s.inner.lock();
        serves(s.group, p.version.as_deref(), &st.resource_versions)
    };
    if !served {
        return handlers::not_found(req.uri().clone()).await;
    }
    req.extensions_mut().insert(Group(s.group));
    next.run(req).await
}
