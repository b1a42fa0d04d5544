//! The fake API server's HTTP details: field and label selectors (the query parameters arrive
//! decoded by axum's `Query`), JSON paths into objects, and Kubernetes `Status` error
//! responses.
//!
//! Pure helpers; they must not touch the store or the watches.

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// The string at a dotted path (`metadata.name`).
pub(super) fn str_at<'a>(v: &'a Value, path: &str) -> Option<&'a str> {
    value_at(v, path)?.as_str()
}

pub(super) fn value_at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(v, |v, key| v.get(key))
}

pub(super) fn set_meta(obj: &mut Value, key: &str, value: Value) {
    if !obj.is_object() {
        *obj = json!({});
    }
    if let Some(map) = obj.as_object_mut() {
        let meta = map.entry("metadata").or_insert_with(|| json!({}));
        if !meta.is_object() {
            *meta = json!({});
        }
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(key.to_owned(), value);
        }
    }
}

/// A parsed field and label selector.
#[derive(Debug, Default, Clone)]
pub(super) struct Selector {
    /// (dotted path, value, equal?)
    fields: Vec<(String, String, bool)>,
    /// (label key, value (None = exists), equal?)
    labels: Vec<(String, Option<String>, bool)>,
}

impl Selector {
    pub(super) fn parse(field: Option<&str>, label: Option<&str>) -> Self {
        let split = |s: &str| -> (String, String, bool) {
            if let Some((k, v)) = s.split_once("!=") {
                (k.trim().to_owned(), v.trim().to_owned(), false)
            } else if let Some((k, v)) = s.split_once("==").or_else(|| s.split_once('=')) {
                (k.trim().to_owned(), v.trim().to_owned(), true)
            } else {
                (s.trim().to_owned(), String::new(), true)
            }
        };
        let parts = |s: Option<&str>| -> Vec<String> {
            s.unwrap_or("")
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_owned)
                .collect()
        };
        let fields = parts(field).iter().map(|p| split(p)).collect();
        let labels = parts(label)
            .iter()
            .map(|p| {
                if p.contains('=') {
                    let (k, v, eq) = split(p);
                    (k, Some(v), eq)
                } else if let Some(k) = p.strip_prefix('!') {
                    (k.trim().to_owned(), None, false)
                } else {
                    (p.clone(), None, true)
                }
            })
            .collect();
        Self { fields, labels }
    }

    pub(super) fn matches(&self, obj: &Value) -> bool {
        let fields_ok = self.fields.iter().all(|(path, want, eq)| {
            let got = match value_at(obj, path) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (got == *want) == *eq
        });
        let labels = obj.get("metadata").and_then(|m| m.get("labels"));
        let labels_ok = self.labels.iter().all(|(key, want, eq)| {
            let got = labels.and_then(|l| l.get(key)).and_then(Value::as_str);
            match want {
                None => got.is_some() == *eq,
                Some(w) => (got == Some(w.as_str())) == *eq,
            }
        });
        fields_ok && labels_ok
    }
}

pub(super) fn reason_for(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        409 => "Conflict",
        410 => "Expired",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "Unknown",
    }
}

pub(super) fn status_body(code: u16, message: &str) -> Value {
    status_with_reason(code, reason_for(code), message)
}

fn status_with_reason(code: u16, reason: &str, message: &str) -> Value {
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
}

pub(super) fn json_response(code: u16, body: &Value) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

pub(super) fn error_response(code: u16, message: &str) -> Response {
    json_response(code, &status_body(code, message))
}

/// An error whose `reason` is not the plain one of its code (`AlreadyExists` for a 409).
pub(super) fn error_with_reason(code: u16, reason: &str, message: &str) -> Response {
    json_response(code, &status_with_reason(code, reason, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_match() {
        let pod = json!({"metadata": {"labels": {"app": "x"}}, "spec": {"nodeName": "n1"}});
        let m = |f: Option<&str>, l: Option<&str>| Selector::parse(f, l).matches(&pod);
        assert!(m(None, None));
        assert!(m(Some("spec.nodeName=n1"), None));
        assert!(m(Some("spec.nodeName==n1"), None));
        assert!(!m(Some("spec.nodeName=n2"), None));
        assert!(m(Some("spec.nodeName!=n2"), None));
        assert!(!m(Some("spec.nodeName=n1,spec.driver=d"), None));
        assert!(
            m(Some("spec.driver="), None),
            "a missing field is the empty string"
        );
        assert!(m(None, Some("app=x")));
        assert!(!m(None, Some("app!=x")));
        assert!(m(None, Some("app")));
        assert!(!m(None, Some("!app")));
        assert!(m(None, Some("!other")));
    }
}
