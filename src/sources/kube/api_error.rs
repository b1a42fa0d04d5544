//! What a failed Kubernetes API call says, in one line: the description of a watcher or
//! client error (`403 Forbidden: <message>`, else the error chain), whether it happened while
//! listing or watching, its cause for the failure log, whether it is a refusal (401 or 403),
//! and what to do about one.
//!
//! Text only, shared by the reflectors, the access review of `gpu-exporter check`
//! ([`super::access`]) and `notify`'s Node condition writer; it must not log, count or retry
//! (that is [`super::failure_log`] and [`super::reflector`]).

use kube::runtime::watcher;

use crate::base::cause_log::cause;

/// What to do about a 401 or 403 answer, for the log; empty for other errors.
pub(crate) fn access_hint(err: &watcher::Error, resource: &str) -> &'static str {
    match (api_status(err).map(|s| s.code), resource) {
        (Some(401), _) => {
            "; the API server rejected the exporter's credentials (is the service account token \
             mounted and valid?)"
        }
        (Some(403), "pods") => {
            "; the exporter's service account needs get, list and watch on pods (see \
             docs/kubernetes-rbac.md)"
        }
        (Some(403), _) => {
            "; the exporter's service account needs get, list and watch on \
             resourceslices.resource.k8s.io (see docs/kubernetes-rbac.md)"
        }
        _ => "",
    }
}

/// Whether the API refused the exporter's credentials or permissions (401 or 403): RBAC or
/// the token is missing, not the API.
pub(crate) fn refused(err: &watcher::Error) -> bool {
    api_status(err).is_some_and(|s| matches!(s.code, 401 | 403))
}

/// The API status inside a watcher error, if the server answered one.
pub(crate) fn api_status(err: &watcher::Error) -> Option<&kube::core::Status> {
    match err {
        watcher::Error::InitialListFailed(kube::Error::Api(s))
        | watcher::Error::WatchStartFailed(kube::Error::Api(s))
        | watcher::Error::WatchFailed(kube::Error::Api(s))
        | watcher::Error::WatchError(s) => Some(s),
        _ => None,
    }
}

/// "listing" or "watching", for messages.
pub(crate) fn watch_phase(err: &watcher::Error) -> &'static str {
    match err {
        watcher::Error::InitialListFailed(_) => "listing",
        _ => "watching",
    }
}

/// What tells one watcher failure from another for the log
/// ([`super::failure_log::FailureLog`]): the phase and the status code of an API answer, or
/// the phase and the first two parts of the error chain (`failed to perform initial object
/// list: ServiceError`), so a refused connection and a reset one are the same kind.
pub(crate) fn failure_kind(err: &watcher::Error) -> String {
    match api_status(err) {
        Some(s) => format!("{} {}", watch_phase(err), s.code),
        None => format!("{} {}", watch_phase(err), cause(&error_chain(err), 2)),
    }
}

/// A one-line description of a watcher error: `403 Forbidden: <message>` for API answers,
/// the error chain otherwise.
pub(crate) fn describe_watch_error(err: &watcher::Error) -> String {
    match api_status(err) {
        Some(s) => describe_status(s),
        None => error_chain(err),
    }
}

/// A one-line description of a client error, as [`describe_watch_error`].
pub(crate) fn describe_kube_error(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(s) => describe_status(s),
        other => error_chain(other),
    }
}

/// `<code> <reason>: <message>`.
fn describe_status(s: &kube::core::Status) -> String {
    let reason = if s.reason.is_empty() {
        "Failure"
    } else {
        s.reason.as_str()
    };
    if s.message.is_empty() {
        format!("{} {reason}", s.code)
    } else {
        format!("{} {reason}: {}", s.code, s.message)
    }
}

/// An error and its sources, each once.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut msg = err.to_string();
    let mut source = err.source();
    while let Some(e) = source {
        let s = e.to_string();
        if !msg.contains(&s) {
            msg.push_str(": ");
            msg.push_str(&s);
        }
        source = e.source();
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describes_api_errors_briefly() {
        let status =
            kube::core::Status::failure("pods is forbidden: no", "Forbidden").with_code(403);
        let err = watcher::Error::InitialListFailed(kube::Error::Api(status.boxed()));
        assert_eq!(watch_phase(&err), "listing");
        assert_eq!(
            describe_watch_error(&err),
            "403 Forbidden: pods is forbidden: no"
        );
        assert!(
            describe_watch_error(&watcher::Error::NoResourceVersion).contains("resourceVersion")
        );
        assert!(refused(&err));
        let gone = kube::core::Status::failure("too old", "Expired").with_code(410);
        assert!(!refused(&watcher::Error::WatchError(gone.boxed())));
        assert!(!refused(&watcher::Error::NoResourceVersion));
    }
}
