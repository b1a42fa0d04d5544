//! Server-side printing for kubectl: when a `GET` asks for `as=Table` (kubectl's `get` does),
//! the fake API server answers a `meta.k8s.io/v1` `Table` with the columns a real server
//! prints for Events (LAST SEEN, TYPE, REASON, OBJECT, MESSAGE), Nodes (STATUS, ROLES, AGE,
//! VERSION) and Pods (READY, STATUS, RESTARTS, AGE), and NAME and AGE for the rest. Without
//! it kubectl prints only names.
//!
//! Pure; it must not touch the store or the watches.

use k8s_openapi::jiff::Timestamp;
use serde_json::{Value, json};

use super::events::{seen, to_core};
use super::kinds::Kind;

/// Whether an `Accept` header asks for a Table.
pub(super) fn wants_table(accept: &str) -> bool {
    accept.contains("as=Table")
}

/// A Table of `items` (as served) of `kind`.
pub(super) fn table(kind: Kind, items: &[Value], resource_version: &str) -> Value {
    let now = Timestamp::now();
    let (columns, wide): (&[&str], &[&str]) = match kind {
        Kind::Event => (
            &["Last Seen", "Type", "Reason", "Object", "Message"],
            &["Subobject", "Source", "First Seen", "Count", "Name"],
        ),
        Kind::Node => (&["Name", "Status", "Roles", "Age", "Version"], &[]),
        Kind::Pod => (&["Name", "Ready", "Status", "Restarts", "Age"], &[]),
        Kind::Slice => (&["Name", "Age"], &[]),
    };
    let defs: Vec<Value> = columns
        .iter()
        .map(|c| (c, 0))
        .chain(wide.iter().map(|c| (c, 1)))
        .map(|(c, priority)| {
            let format = if *c == "Name" { "name" } else { "" };
            json!({"name": c, "type": "string", "format": format, "description": "", "priority": priority})
        })
        .collect();
    let rows: Vec<Value> = items
        .iter()
        .map(|o| {
            json!({
                "cells": cells(kind, o, now),
                "object": {
                    "kind": "PartialObjectMetadata",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": o.get("metadata").cloned().unwrap_or_else(|| json!({})),
                },
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": defs,
        "rows": rows,
    })
}

fn text<'a>(v: &'a Value, path: &str) -> &'a str {
    super::http::str_at(v, path).unwrap_or("")
}

fn cells(kind: Kind, o: &Value, now: Timestamp) -> Vec<Value> {
    let name = text(o, "metadata.name");
    let age = since(Some(text(o, "metadata.creationTimestamp")), now);
    match kind {
        Kind::Event => {
            let core = if o.get("apiVersion").and_then(Value::as_str) == Some("v1") {
                o.clone()
            } else {
                to_core(o)
            };
            let (first, last, count) = seen(&core);
            let object = format!(
                "{}/{}",
                text(&core, "involvedObject.kind").to_ascii_lowercase(),
                text(&core, "involvedObject.name")
            );
            let source = match text(&core, "source.component") {
                "" => text(&core, "reportingComponent"),
                s => s,
            };
            vec![
                json!(since(last, now)),
                json!(text(&core, "type")),
                json!(text(&core, "reason")),
                json!(object),
                json!(text(&core, "message")),
                json!(text(&core, "involvedObject.fieldPath")),
                json!(source),
                json!(since(first, now)),
                json!(count),
                json!(name),
            ]
        }
        Kind::Node => {
            let ready = o
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
                .map(|c| c["status"].as_str().unwrap_or(""));
            let mut status = match ready {
                Some("True") => "Ready".to_owned(),
                Some("False") => "NotReady".to_owned(),
                _ => "Unknown".to_owned(),
            };
            if o.pointer("/spec/unschedulable") == Some(&json!(true)) {
                status.push_str(",SchedulingDisabled");
            }
            let roles: Vec<&str> = o
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .map(|l| {
                    l.keys()
                        .filter_map(|k| k.strip_prefix("node-role.kubernetes.io/"))
                        .collect()
                })
                .unwrap_or_default();
            let roles = if roles.is_empty() {
                "<none>".to_owned()
            } else {
                roles.join(",")
            };
            let version = text(o, "status.nodeInfo.kubeletVersion");
            vec![
                json!(name),
                json!(status),
                json!(roles),
                json!(age),
                json!(version),
            ]
        }
        Kind::Pod => {
            let statuses = o
                .pointer("/status/containerStatuses")
                .and_then(Value::as_array);
            let total = o
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            let ready = statuses.map_or(0, |s| s.iter().filter(|c| c["ready"] == true).count());
            let restarts: u64 = statuses.map_or(0, |s| {
                s.iter().filter_map(|c| c["restartCount"].as_u64()).sum()
            });
            vec![
                json!(name),
                json!(format!("{ready}/{total}")),
                json!(text(o, "status.phase")),
                json!(restarts),
                json!(age),
            ]
        }
        Kind::Slice => vec![json!(name), json!(age)],
    }
}

/// How long ago an RFC 3339 time was, as kubectl prints ages; `<unknown>` without one.
fn since(t: Option<&str>, now: Timestamp) -> String {
    match t.and_then(|t| t.parse::<Timestamp>().ok()) {
        Some(t) => human(now.duration_since(t).as_secs()),
        None => "<unknown>".to_owned(),
    }
}

/// A duration in kubectl's short form: `42s`, `3m5s`, `25m`, `2h10m`, `30h`, `3d4h`, `40d`.
fn human(secs: i64) -> String {
    if secs < -1 {
        return "<invalid>".to_owned();
    }
    let secs = secs.max(0);
    let (mins, hours, days) = (secs / 60, secs / 3600, secs / 86_400);
    let two = |big: i64, bu: &str, small: i64, su: &str| {
        if small == 0 {
            format!("{big}{bu}")
        } else {
            format!("{big}{bu}{small}{su}")
        }
    };
    match () {
        _ if secs < 120 => format!("{secs}s"),
        _ if mins < 10 => two(mins, "m", secs % 60, "s"),
        _ if mins < 180 => format!("{mins}m"),
        _ if hours < 8 => two(hours, "h", mins % 60, "m"),
        _ if hours < 48 => format!("{hours}h"),
        _ if hours < 192 => two(days, "d", hours % 24, "h"),
        _ if days < 730 => format!("{days}d"),
        _ if days < 2920 => two(days / 365, "y", days % 365, "d"),
        _ => format!("{}y", days / 365),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(human(5), "5s");
        assert_eq!(human(119), "119s");
        assert_eq!(human(185), "3m5s");
        assert_eq!(human(1500), "25m");
        assert_eq!(human(3 * 3600 + 600), "3h10m");
        assert_eq!(human(30 * 3600), "30h");
        assert_eq!(human(3 * 86_400 + 4 * 3600), "3d4h");
        assert_eq!(human(40 * 86_400), "40d");
    }

    #[test]
    fn event_rows_read_the_series() {
        let ev = json!({"metadata": {"name": "e"}, "regarding": {"kind": "Node", "name": "n"},
            "eventTime": "2026-01-01T00:00:00Z", "type": "Warning", "reason": "GpuXid",
            "note": "m", "reportingController": "gpu-exporter",
            "series": {"count": 4, "lastObservedTime": "2026-01-01T00:01:00Z"}});
        let t = table(Kind::Event, &[ev], "7");
        let cells = &t["rows"][0]["cells"];
        assert_eq!(cells[3], "node/n");
        assert_eq!(cells[6], "gpu-exporter");
        assert_eq!(cells[8], 4);
    }
}
