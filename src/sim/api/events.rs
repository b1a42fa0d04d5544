//! `events.k8s.io/v1` Events in the fake API server: the checks a real API server makes on a
//! new one (the fields the new API requires), and the core/v1 view it serves of the same object
//! under `/api/v1/events` (what `kubectl get events` and `kubectl describe` read).
//!
//! The conversion is the API server's field for field: `regarding` becomes `involvedObject`,
//! `note` `message`, `deprecatedSource`/`deprecatedFirstTimestamp`/`deprecatedLastTimestamp`/
//! `deprecatedCount` become `source`/`firstTimestamp`/`lastTimestamp`/`count`, and
//! `reportingController` `reportingComponent`; `eventTime` and `series` are kept. Like a real
//! server it does not invent `count` or `lastTimestamp` from `series`: clients (kubectl's
//! printers) read `series` themselves.
//!
//! Pure; it must not touch the store or the watches.

use serde_json::{Map, Value, json};

/// Longest `note` a real API server takes (1 kB).
const NOTE_MAX: usize = 1024;
/// Longest `reason` and `action`.
const WORD_MAX: usize = 128;

/// Why a new `events.k8s.io/v1` Event is invalid, as a real API server would answer (422),
/// or `None` when it is acceptable.
pub(super) fn invalid(ev: &Value) -> Option<String> {
    let text = |k: &str| ev.get(k).and_then(Value::as_str).unwrap_or("");
    let mut why = Vec::new();
    if ev.get("eventTime").is_none_or(Value::is_null) {
        why.push("eventTime: Required value".to_owned());
    }
    for k in [
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
    ] {
        if text(k).is_empty() {
            why.push(format!("{k}: Required value"));
        }
    }
    for k in ["action", "reason"] {
        if text(k).len() > WORD_MAX {
            why.push(format!(
                "{k}: Too long: may not be more than {WORD_MAX} bytes"
            ));
        }
    }
    if text("note").len() > NOTE_MAX {
        why.push(format!(
            "note: Too long: may not be more than {NOTE_MAX} bytes"
        ));
    }
    if !matches!(text("type"), "Normal" | "Warning") {
        why.push(format!(
            "type: Unsupported value: \"{}\": supported values: \"Normal\", \"Warning\"",
            text("type")
        ));
    }
    if why.is_empty() {
        None
    } else {
        Some(why.join(", "))
    }
}

/// The core/v1 `Event` a real API server serves for a stored `events.k8s.io/v1` one.
pub(super) fn to_core(ev: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".to_owned(), json!("Event"));
    out.insert("apiVersion".to_owned(), json!("v1"));
    let renames = [
        ("metadata", "metadata"),
        ("regarding", "involvedObject"),
        ("related", "related"),
        ("reason", "reason"),
        ("note", "message"),
        ("type", "type"),
        ("action", "action"),
        ("eventTime", "eventTime"),
        ("series", "series"),
        ("reportingController", "reportingComponent"),
        ("reportingInstance", "reportingInstance"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
    ];
    for (from, to) in renames {
        if let Some(v) = ev.get(from).filter(|v| !v.is_null()) {
            out.insert(to.to_owned(), v.clone());
        }
    }
    for k in ["involvedObject", "source"] {
        out.entry(k.to_owned()).or_insert_with(|| json!({}));
    }
    Value::Object(out)
}

/// A core/v1 Event's first and last time seen and its count, as kubectl's printers work them
/// out (`firstTimestamp` or else `eventTime`; `series` wins for the last time and count).
pub(super) fn seen(core: &Value) -> (Option<&str>, Option<&str>, u64) {
    let s = |k: &str| {
        core.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let first = s("firstTimestamp").or_else(|| s("eventTime"));
    let mut last = s("lastTimestamp").or(first);
    let mut count = core.get("count").and_then(Value::as_u64).unwrap_or(0);
    if let Some(series) = core.get("series").filter(|v| v.is_object()) {
        last = series
            .get("lastObservedTime")
            .and_then(Value::as_str)
            .or(last);
        count = series.get("count").and_then(Value::as_u64).unwrap_or(count);
    } else if count == 0 {
        count = 1;
    }
    (first, last, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event() -> Value {
        json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "node-a.1", "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000000Z",
            "regarding": {"kind": "Node", "name": "node-a", "uid": "u1"},
            "reason": "GpuXid", "note": "GPU 3 reported Xid 79", "type": "Warning",
            "action": "Detected", "reportingController": "gpu-exporter",
            "reportingInstance": "gpu-exporter-node-a",
        })
    }

    #[test]
    fn converts_to_core_as_the_api_server_does() {
        let mut ev = event();
        ev["series"] = json!({"count": 3, "lastObservedTime": "2026-01-01T00:05:00.000000Z"});
        let core = to_core(&ev);
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "node-a");
        assert_eq!(core["message"], "GPU 3 reported Xid 79");
        assert_eq!(core["reportingComponent"], "gpu-exporter");
        assert_eq!(core["reportingInstance"], "gpu-exporter-node-a");
        assert_eq!(core["source"], json!({}));
        assert!(core.get("count").is_none(), "not invented from series");
        assert_eq!(
            seen(&core),
            (
                Some("2026-01-01T00:00:00.000000Z"),
                Some("2026-01-01T00:05:00.000000Z"),
                3
            )
        );
        assert_eq!(seen(&to_core(&event())).2, 1);
    }

    #[test]
    fn rejects_what_a_real_server_rejects() {
        assert_eq!(invalid(&event()), None);
        let mut ev = event();
        ev.as_object_mut().unwrap().remove("eventTime");
        ev["type"] = json!("Error");
        let why = invalid(&ev).unwrap();
        assert!(why.contains("eventTime") && why.contains("type"), "{why}");
    }
}
