//! The fake API server's PATCH bodies: JSON merge patch (RFC 7386: objects merge, lists and
//! scalars replace, `null` deletes) and the part of Kubernetes' strategic merge patch that Node
//! and Event writers use: lists with a merge key (`status.conditions` and `status.addresses`
//! by `type`) merge item by item, a listed item replacing the one with the same key and the
//! others kept; `{"$patch": "delete", "type": ...}` in such a list removes that item;
//! `$setElementOrder/...` and `$retainKeys` directives are accepted and ignored; every other
//! list replaces.
//!
//! Pure; it must not touch the store or the watches.

use serde_json::{Map, Value};

/// Which patch a `Content-Type` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PatchKind {
    Merge,
    Strategic,
}

impl PatchKind {
    /// The patch kind of a `Content-Type` header (parameters ignored), or `None` when the
    /// fake server does not apply it (JSON patch, server-side apply).
    pub(super) fn from_content_type(ct: &str) -> Option<Self> {
        match ct.split(';').next().unwrap_or("").trim() {
            "application/merge-patch+json" => Some(Self::Merge),
            "application/strategic-merge-patch+json" => Some(Self::Strategic),
            _ => None,
        }
    }
}

/// Applies `patch` to `target` in place.
pub(super) fn apply(kind: PatchKind, target: &mut Value, patch: &Value) {
    match kind {
        PatchKind::Merge => merge(target, patch),
        PatchKind::Strategic => strategic(target, patch, ""),
    }
}

/// RFC 7386 JSON merge patch.
pub(super) fn merge(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if v.is_null() {
            t.remove(k);
        } else {
            merge(t.entry(k.clone()).or_insert(Value::Null), v);
        }
    }
}

/// The merge key of the list at a dotted path, as Kubernetes' Node type declares it.
fn merge_key(path: &str) -> Option<&'static str> {
    match path {
        "status.conditions" | "status.addresses" => Some("type"),
        _ => None,
    }
}

fn strategic(target: &mut Value, patch: &Value, path: &str) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else { return };
    for (k, v) in p {
        if k.starts_with('$') {
            continue; // $setElementOrder/..., $retainKeys, $patch on an object: not modelled
        }
        let sub = if path.is_empty() {
            k.clone()
        } else {
            format!("{path}.{k}")
        };
        match (v, merge_key(&sub)) {
            (Value::Null, _) => {
                t.remove(k);
            }
            (Value::Array(items), Some(key)) => {
                let slot = t.entry(k.clone()).or_insert(Value::Array(Vec::new()));
                merge_list(slot, items, key);
            }
            (Value::Object(_), _) => strategic(t.entry(k.clone()).or_insert(Value::Null), v, &sub),
            _ => {
                t.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Merges `items` into the list `slot` by `key`.
fn merge_list(slot: &mut Value, items: &[Value], key: &str) {
    if !slot.is_array() {
        *slot = Value::Array(Vec::new());
    }
    let Value::Array(list) = slot else { return };
    for item in items {
        let id = item.get(key).cloned();
        let pos = id
            .as_ref()
            .and_then(|id| list.iter().position(|e| e.get(key) == Some(id)));
        let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
        match (pos, delete) {
            (Some(i), true) => {
                list.remove(i);
            }
            (None, true) => {}
            (Some(i), false) => {
                if let Some(e) = list.get_mut(i) {
                    strategic(e, item, "");
                }
            }
            (None, false) => {
                let mut e = Value::Null;
                strategic(&mut e, item, "");
                list.push(e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node() -> Value {
        json!({"metadata": {"name": "n", "labels": {"a": "1"}}, "status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady"},
            {"type": "GpuHealthy", "status": "False", "reason": "Ok"},
        ]}})
    }

    #[test]
    fn strategic_merges_conditions_by_type_and_keeps_others() {
        let mut n = node();
        let p = json!({"status": {
        "$setElementOrder/conditions": [{"type": "Ready"}, {"type": "GpuHealthy"}, {"type": "GpuXid"}],
        "conditions": [
            {"type": "GpuHealthy", "status": "True", "reason": "Xid79"},
            {"type": "GpuXid", "status": "True"},
        ]}});
        apply(PatchKind::Strategic, &mut n, &p);
        let c = n["status"]["conditions"].as_array().unwrap();
        assert_eq!(c.len(), 3, "{c:?}");
        assert_eq!(
            c[0]["reason"], "KubeletReady",
            "another writer's condition is kept"
        );
        assert_eq!(c[1]["status"], "True");
        assert_eq!(c[1]["reason"], "Xid79");
        assert_eq!(c[2]["type"], "GpuXid");
        assert_eq!(n["metadata"]["labels"]["a"], "1");
        apply(
            PatchKind::Strategic,
            &mut n,
            &json!({"status": {"conditions": [{"$patch": "delete", "type": "GpuXid"}]}}),
        );
        assert_eq!(n["status"]["conditions"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn merge_patch_replaces_lists_and_deletes_nulls() {
        let mut n = node();
        let p = json!({"metadata": {"labels": {"a": null, "b": "2"}},
            "status": {"conditions": [{"type": "GpuHealthy", "status": "True"}]}});
        apply(PatchKind::Merge, &mut n, &p);
        assert_eq!(n["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(
            n["status"]["conditions"],
            json!([{"type": "GpuHealthy", "status": "True"}]),
            "a merge patch replaces the whole list"
        );
    }

    #[test]
    fn content_types() {
        assert_eq!(
            PatchKind::from_content_type("application/merge-patch+json; charset=utf-8"),
            Some(PatchKind::Merge)
        );
        assert_eq!(
            PatchKind::from_content_type("application/strategic-merge-patch+json"),
            Some(PatchKind::Strategic)
        );
        assert_eq!(
            PatchKind::from_content_type("application/apply-patch+yaml"),
            None
        );
    }
}
