//! Where the artefacts are (the repository's or `GPU_EXPORTER_OBSERVABILITY_ROOT`'s), and
//! small readers for the YAML and JSON they are written in. No checks here.

use super::*;

// ---------------------------------------------------------------------------------------------
// Where the artefacts are, and how failures are reported

pub(crate) struct Layout {
    pub(crate) dashboards: PathBuf,
    pub(crate) alerts: PathBuf,
}

pub(crate) fn layout() -> Layout {
    let root = std::env::var_os("GPU_EXPORTER_OBSERVABILITY_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    Layout {
        dashboards: root.join("dashboards"),
        alerts: root.join("alerts"),
    }
}

/// A YAML file as a generic tree.
pub(crate) fn read_yaml(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    serde_saphyr::from_str::<Value>(&text)
        .map_err(|e| format!("{}: not valid YAML: {e}", path.display()))
}

/// A YAML/JSON scalar as text (`expr: 1` is a number in YAML).
pub(crate) fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

pub(crate) fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

pub(crate) fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}
