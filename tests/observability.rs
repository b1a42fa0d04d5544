//! The observability artefacts proved against the exporter's real output: the Grafana
//! dashboards (`dashboards/*.json`), the alert and recording rules
//! (`alerts/gpu-exporter.rules.yaml`) with their generated PrometheusRule twin
//! (`alerts/gpu-exporter.prometheusrule.yaml`), the promtool unit tests (`alerts/tests/*.yaml`)
//! and the runbook (`alerts/README.md`).
//!
//! - `dashboards_are_import_ready`: every dashboard imports into any Grafana (uid, title,
//!   schema version, a `datasource` variable and no hard-coded datasource, well-formed panels
//!   and targets, only known `$variables`).
//! - `rules_are_complete`: severities, annotations, runbook links that resolve to a heading of
//!   the runbook, unique names; the PrometheusRule file is exactly the one generated from the
//!   plain file (`UPDATE_GOLDEN=1` rewrites it).
//! - `promtool_checks_and_tests_rules`: `promtool check rules` and `promtool test rules`, and
//!   every alert has a unit test where it fires and one where it does not.
//! - `prometheus_evaluates_every_panel_and_rule`: a real Prometheus scrapes exporters running
//!   `--simulate` (plus one whose driver never loads and one target that is down), evaluates
//!   the rules without errors, and every rule expression, panel query and `label_values`
//!   variable returns data through its HTTP API.
//! - `helpers_parse_what_the_checks_rely_on`: the helpers above (variable references, heading
//!   anchors, `label_values`, the PrometheusRule text) on small inputs. HTTP to Prometheus goes
//!   through the `ureq` crate.
//!
//! Each test collects every failure and panics once with the whole list. `prometheus` and
//! `promtool` come from Debian's `prometheus` package (scripts/test.sh installs it); without
//! them the last two tests fail, unless `GPU_EXPORTER_SKIP_PROMETHEUS=1` says to skip them.
//! `GPU_EXPORTER_OBSERVABILITY_ROOT=DIR` checks `DIR/dashboards` and `DIR/alerts` instead of
//! the repository's (to try artefacts out before they move in).
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, Failures};
use serde_json::Value;

/// The built-in scenario with a cause for every shipped alert.
const INCIDENTS_SCENARIO: &str = "incidents";

/// The simulated nodes Prometheus scrapes (built-in scenarios).
const SIMULATED: [&str; 2] = ["h100-mig", INCIDENTS_SCENARIO];

/// A node whose NVIDIA driver never loads during a run (`gpu_exporter_nvml_up 0`).
const NO_DRIVER_SCENARIO: &str = "tests/fixtures/scenarios/no-driver.toml";

const RULES_FILE: &str = "gpu-exporter.rules.yaml";
const PROMETHEUS_RULE_FILE: &str = "gpu-exporter.prometheusrule.yaml";
const RUNBOOK_FILE: &str = "README.md";

/// The first lines of the generated PrometheusRule; the plain file's `groups:` follows under
/// `spec:`.
const PROMETHEUS_RULE_HEADER: &str = "\
# Generated from gpu-exporter.rules.yaml by `UPDATE_GOLDEN=1 cargo test --test observability`; do not edit.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: gpu-exporter
  labels:
    app.kubernetes.io/name: gpu-exporter
    app.kubernetes.io/part-of: gpu-exporter
spec:
";

/// Grafana's built-in variables that dashboards may use, with the value they get here.
const GRAFANA_BUILTINS: [(&str, &str); 6] = [
    ("__rate_interval", "1m"),
    ("__interval", "15s"),
    ("__interval_ms", "15000"),
    ("__range", "1h"),
    ("__range_s", "3600"),
    ("__range_ms", "3600000"),
];

/// The only datasource reference a dashboard may hold (besides Grafana's annotations).
const DATASOURCE_VAR: &str = "${datasource}";

/// How long, from Prometheus being ready, queries may take to return data: faults happen in
/// the first seconds of scenario time, and rate() and subqueries need a few samples.
const EVAL_DEADLINE: Duration = Duration::from_secs(90);

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn dashboards_are_import_ready() {
    check_dashboards(&layout().dashboards);
}

#[test]
fn rules_are_complete() {
    check_rules(&layout().alerts);
}

#[test]
fn promtool_checks_and_tests_rules() {
    check_promtool(&layout().alerts);
}

#[test]
fn prometheus_evaluates_every_panel_and_rule() {
    let l = layout();
    check_prometheus(&l.dashboards, &l.alerts);
}

// ---------------------------------------------------------------------------------------------
// Where the artefacts are, and how failures are reported

struct Layout {
    dashboards: PathBuf,
    alerts: PathBuf,
}

fn layout() -> Layout {
    let root = std::env::var_os("GPU_EXPORTER_OBSERVABILITY_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    Layout {
        dashboards: root.join("dashboards"),
        alerts: root.join("alerts"),
    }
}

/// The files in `dir` whose names end in one of `exts`, sorted.
fn files_with(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| exts.contains(&e))
        })
        .collect();
    out.sort();
    out
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| p.display().to_string())
}

/// A YAML file as a generic tree.
fn read_yaml(path: &Path) -> Result<Value, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    serde_saphyr::from_str::<Value>(&text)
        .map_err(|e| format!("{}: not valid YAML: {e}", path.display()))
}

/// A YAML/JSON scalar as text (`expr: 1` is a number in YAML).
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

fn array<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Dashboards

struct Dashboard {
    file: String,
    json: Value,
}

impl Dashboard {
    fn title(&self) -> &str {
        str_of(&self.json, "title").unwrap_or("(untitled)")
    }

    fn what(&self) -> String {
        format!("{} «{}»", self.file, self.title())
    }

    /// Every panel, including those nested in (collapsed) rows, rows included.
    fn panels(&self) -> Vec<&Value> {
        fn walk<'a>(panels: &'a [Value], out: &mut Vec<&'a Value>) {
            for p in panels {
                out.push(p);
                walk(array(p, "panels"), out);
            }
        }
        let mut out = Vec::new();
        walk(array(&self.json, "panels"), &mut out);
        out
    }

    fn variables(&self) -> &[Value] {
        self.json
            .get("templating")
            .map(|t| array(t, "list"))
            .unwrap_or_default()
    }

    fn variable_names(&self) -> BTreeSet<String> {
        self.variables()
            .iter()
            .filter_map(|v| str_of(v, "name"))
            .map(str::to_owned)
            .collect()
    }

    fn panel_what(&self, p: &Value) -> String {
        let id = p.get("id").map(|i| i.to_string()).unwrap_or_default();
        format!(
            "{} panel «{}» (id {id})",
            self.what(),
            str_of(p, "title").unwrap_or("(untitled)")
        )
    }

    /// (description, expr) of every target of every query panel.
    fn targets(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for p in self.panels() {
            if !is_query_panel(p) {
                continue;
            }
            for t in array(p, "targets") {
                if let Some(expr) = str_of(t, "expr") {
                    let r = str_of(t, "refId").unwrap_or("?");
                    out.push((format!("{} refId {r}", self.panel_what(p)), expr.to_owned()));
                }
            }
        }
        out
    }

    /// What each `$variable` becomes when the dashboard's queries are evaluated here.
    fn substitutions(&self) -> BTreeMap<String, String> {
        let mut m: BTreeMap<String, String> = GRAFANA_BUILTINS
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        for v in self.variables() {
            let Some(name) = str_of(v, "name") else {
                continue;
            };
            let value = match str_of(v, "type") {
                // A duration: its current value, else the first of its options.
                Some("interval") => current_value(v)
                    .filter(|c| !c.starts_with('$'))
                    .or_else(|| {
                        variable_query(v).and_then(|q| {
                            q.split(',')
                                .map(str::trim)
                                .find(|s| !s.is_empty())
                                .map(str::to_owned)
                        })
                    })
                    .unwrap_or_else(|| "5m".to_owned()),
                Some("constant") => variable_query(v).unwrap_or_default(),
                // Label matchers are `label=~"$var"`: match everything.
                _ => ".*".to_owned(),
            };
            m.insert(name.to_owned(), value);
        }
        m
    }
}

fn is_query_panel(p: &Value) -> bool {
    !matches!(str_of(p, "type"), Some("row" | "text"))
}

/// A variable's query: a string, or `{"query": "..."}` in newer Grafana.
fn variable_query(v: &Value) -> Option<String> {
    match v.get("query")? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("query").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

fn current_value(v: &Value) -> Option<String> {
    let c = v.get("current")?.get("value")?;
    match c {
        Value::Array(a) => a.first().and_then(scalar),
        other => scalar(other),
    }
}

/// Reads every `dashboards/*.json`; unreadable or invalid files are failures.
fn load_dashboards(dir: &Path, f: &mut Failures) -> Vec<Dashboard> {
    let files = files_with(dir, &["json"]);
    if files.is_empty() {
        f.add(format!("{}: no dashboards (*.json)", dir.display()));
    }
    let mut out = Vec::new();
    for path in files {
        let file = file_name(&path);
        match std::fs::read_to_string(&path)
            .map_err(|e| e.to_string())
            .and_then(|t| serde_json::from_str::<Value>(&t).map_err(|e| e.to_string()))
        {
            Ok(json) if json.is_object() => out.push(Dashboard { file, json }),
            Ok(_) => f.add(format!("{file}: not a JSON object")),
            Err(e) => f.add(format!("{file}: {e}")),
        }
    }
    out
}

/// The variable names referenced as `$name`, `${name}` or `${name:format}` in `text`
/// (`$1`, `${1}` and a lone `$` are not variables).
fn variable_refs(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        let (name, next) = variable_at(text, i);
        if let Some(n) = name {
            out.push(n);
        }
        i = next;
    }
    out
}

/// The variable reference starting at the `$` at byte `i`: its name (if it is one) and the
/// byte after it.
fn variable_at(text: &str, i: usize) -> (Option<String>, usize) {
    let b = text.as_bytes();
    let ident_end = |from: usize| {
        let mut j = from;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
            j += 1;
        }
        j
    };
    if b.get(i + 1) == Some(&b'{') {
        let Some(close) = text[i + 2..].find('}') else {
            return (None, i + 1);
        };
        let inner = &text[i + 2..i + 2 + close];
        let name = inner.split(':').next().unwrap_or_default();
        let valid = !name.is_empty()
            && !name.as_bytes()[0].is_ascii_digit()
            && name.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_');
        (valid.then(|| name.to_owned()), i + 3 + close)
    } else {
        let end = ident_end(i + 1);
        let name = &text[i + 1..end];
        if name.is_empty() || name.as_bytes()[0].is_ascii_digit() {
            (None, end.max(i + 1))
        } else {
            (Some(name.to_owned()), end)
        }
    }
}

/// `text` with every known variable replaced by its value (unknown ones stay as written).
fn substitute(text: &str, subst: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while let Some(off) = text[i..].find('$') {
        let at = i + off;
        out.push_str(&text[i..at]);
        let (name, next) = variable_at(text, at);
        match name.and_then(|n| subst.get(&n)) {
            Some(v) => out.push_str(v),
            None => out.push_str(&text[at..next.max(at + 1)]),
        }
        i = next.max(at + 1);
    }
    out.push_str(&text[i..]);
    out
}

/// Checks every `datasource` reference under `v` (at JSON path `path`).
fn check_datasource_refs(v: &Value, path: &str, what: &str, f: &mut Failures) {
    match v {
        Value::Object(o) => {
            for (k, child) in o {
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                if k == "datasource" && !datasource_ok(child, &p) {
                    f.add(format!(
                        "{what}: {p} = {child}: must be {{\"type\":\"prometheus\",\"uid\":\"{DATASOURCE_VAR}\"}} (no hard-coded datasource)"
                    ));
                }
                check_datasource_refs(child, &p, what, f);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                check_datasource_refs(child, &format!("{path}[{i}]"), what, f);
            }
        }
        _ => {}
    }
}

/// Whether a `datasource` value is the dashboard's variable (or Grafana's annotations).
fn datasource_ok(v: &Value, path: &str) -> bool {
    match v {
        // No reference at all (rows); query panels are required to have one separately.
        Value::Null => true,
        Value::String(s) => s == DATASOURCE_VAR,
        Value::Object(_) => {
            let (t, u) = (str_of(v, "type"), str_of(v, "uid"));
            (t == Some("prometheus") && u == Some(DATASOURCE_VAR))
                || (path.starts_with("annotations")
                    && t == Some("grafana")
                    && u == Some("-- Grafana --"))
        }
        _ => false,
    }
}

fn is_panel_datasource(v: Option<&Value>) -> bool {
    match v {
        Some(Value::String(s)) => s == DATASOURCE_VAR,
        Some(o @ Value::Object(_)) => {
            str_of(o, "type") == Some("prometheus") && str_of(o, "uid") == Some(DATASOURCE_VAR)
        }
        _ => false,
    }
}

fn check_dashboards(dir: &Path) {
    let mut f = Failures::default();
    let dashboards = load_dashboards(dir, &mut f);
    let uid_re = regex::Regex::new("^[A-Za-z0-9_-]{1,40}$").unwrap();
    let mut uids: BTreeMap<String, String> = BTreeMap::new();
    let mut titles: BTreeMap<String, String> = BTreeMap::new();
    for d in &dashboards {
        let what = d.what();
        let j = &d.json;
        match str_of(j, "uid") {
            None => f.add(format!("{what}: no top-level \"uid\"")),
            Some(u) if !uid_re.is_match(u) => f.add(format!(
                "{what}: uid {u:?} must match ^[A-Za-z0-9_-]{{1,40}}$"
            )),
            Some(u) => {
                if let Some(other) = uids.insert(u.to_owned(), d.file.clone()) {
                    f.add(format!("{what}: uid {u:?} is also used by {other}"));
                }
            }
        }
        match str_of(j, "title").map(str::trim) {
            None | Some("") => f.add(format!("{}: no (or an empty) \"title\"", d.file)),
            Some(t) => {
                if let Some(other) = titles.insert(t.to_owned(), d.file.clone()) {
                    f.add(format!("{what}: title is also used by {other}"));
                }
            }
        }
        match j.get("schemaVersion").and_then(Value::as_u64) {
            Some(v) if v >= 39 => {}
            other => f.add(format!(
                "{what}: schemaVersion {other:?}: must be a number >= 39"
            )),
        }
        if !j.get("id").is_none_or(Value::is_null) {
            f.add(format!(
                "{what}: \"id\" must be null or absent (Grafana assigns it on import), found {}",
                j["id"]
            ));
        }

        // The datasource variable, and no hard-coded datasource anywhere.
        let ds_var = d.variables().iter().find(|v| {
            str_of(v, "name") == Some("datasource")
                && str_of(v, "type") == Some("datasource")
                && str_of(v, "query") == Some("prometheus")
        });
        if ds_var.is_none() {
            f.add(format!(
                "{what}: templating.list needs a variable named \"datasource\" of type \"datasource\" with query \"prometheus\""
            ));
        }
        check_datasource_refs(j, "", &what, &mut f);

        // Variables: unique names; their queries only use known variables.
        let names = d.variable_names();
        let mut seen = BTreeSet::new();
        for v in d.variables() {
            let Some(name) = str_of(v, "name") else {
                f.add(format!("{what}: a templating variable has no name: {v}"));
                continue;
            };
            if !seen.insert(name) {
                f.add(format!("{what}: variable ${name} is defined twice"));
            }
            if let Some(q) = variable_query(v) {
                check_refs(&q, &names, &format!("{what} variable ${name}"), &mut f);
            }
        }

        // Panels.
        let mut ids: BTreeMap<String, String> = BTreeMap::new();
        for p in d.panels() {
            let pw = d.panel_what(p);
            match p.get("id").filter(|i| i.is_u64() || i.is_i64()) {
                None => f.add(format!("{pw}: no numeric \"id\"")),
                Some(id) => {
                    let title = str_of(p, "title").unwrap_or("(untitled)").to_owned();
                    if let Some(other) = ids.insert(id.to_string(), title) {
                        f.add(format!("{pw}: id {id} is also used by panel «{other}»"));
                    }
                }
            }
            check_grid_pos(p, &pw, &mut f);
            if !is_query_panel(p) {
                continue;
            }
            if !is_panel_datasource(p.get("datasource")) {
                f.add(format!(
                    "{pw}: \"datasource\" must be {{\"type\":\"prometheus\",\"uid\":\"{DATASOURCE_VAR}\"}}, found {}",
                    p.get("datasource").unwrap_or(&Value::Null)
                ));
            }
            let unit = p
                .get("fieldConfig")
                .and_then(|c| c.get("defaults"))
                .and_then(|c| str_of(c, "unit"));
            if unit.is_none_or(|u| u.trim().is_empty()) {
                f.add(format!(
                    "{pw}: fieldConfig.defaults.unit must be a non-empty string (\"none\" or \"short\" for plain numbers)"
                ));
            }
            let targets = array(p, "targets");
            if targets.is_empty() {
                f.add(format!("{pw}: no targets"));
            }
            let mut refs = BTreeSet::new();
            for (i, t) in targets.iter().enumerate() {
                let tw = format!("{pw} target {i}");
                match str_of(t, "refId").filter(|r| !r.is_empty()) {
                    None => f.add(format!("{tw}: no refId")),
                    Some(r) => {
                        if !refs.insert(r) {
                            f.add(format!("{pw}: refId {r} is used twice"));
                        }
                    }
                }
                let tw = format!("{pw} refId {}", str_of(t, "refId").unwrap_or("?"));
                match str_of(t, "expr") {
                    Some(e) if !e.trim().is_empty() => check_refs(e, &names, &tw, &mut f),
                    _ => f.add(format!("{tw}: no (or an empty) \"expr\"")),
                }
            }
        }
    }
    f.finish(&format!("dashboards in {}", dir.display()));
}

fn check_grid_pos(p: &Value, pw: &str, f: &mut Failures) {
    let Some(g) = p.get("gridPos").filter(|g| g.is_object()) else {
        f.add(format!("{pw}: no gridPos"));
        return;
    };
    let mut n = BTreeMap::new();
    for k in ["h", "w", "x", "y"] {
        match g.get(k).and_then(Value::as_u64) {
            Some(v) => {
                n.insert(k, v);
            }
            None => f.add(format!("{pw}: gridPos.{k} must be a non-negative integer")),
        }
    }
    if let (Some(x), Some(w)) = (n.get("x"), n.get("w"))
        && (*w == 0 || x + w > 24)
    {
        f.add(format!(
            "{pw}: gridPos x {x} + w {w} must fit Grafana's 24 columns"
        ));
    }
}

/// Every `$variable` in `text` must be one of `names` or a Grafana built-in.
fn check_refs(text: &str, names: &BTreeSet<String>, what: &str, f: &mut Failures) {
    for r in variable_refs(text) {
        if !names.contains(&r) && !GRAFANA_BUILTINS.iter().any(|(b, _)| *b == r) {
            f.add(format!(
                "{what}: ${r} is neither a variable of this dashboard nor one of Grafana's built-ins: {text}"
            ));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Rules

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Alert,
    Record,
}

struct Rule {
    group: String,
    kind: Kind,
    name: String,
    expr: String,
    json: Value,
}

impl Rule {
    fn what(&self) -> String {
        let k = match self.kind {
            Kind::Alert => "alert",
            Kind::Record => "record",
        };
        format!("{RULES_FILE} group «{}» {k} {}", self.group, self.name)
    }
}

/// The plain rules file's tree and its rules; structural problems are failures.
fn load_rules(alerts: &Path, f: &mut Failures) -> Option<(Value, Vec<Rule>)> {
    let tree = match read_yaml(&alerts.join(RULES_FILE)) {
        Ok(t) => t,
        Err(e) => {
            f.add(e);
            return None;
        }
    };
    let groups = array(&tree, "groups");
    if groups.is_empty() {
        f.add(format!("{RULES_FILE}: no groups"));
    }
    let mut rules = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let group = str_of(g, "name").map(str::to_owned).unwrap_or_else(|| {
            f.add(format!("{RULES_FILE}: group {gi} has no name"));
            format!("#{gi}")
        });
        for (ri, r) in array(g, "rules").iter().enumerate() {
            let (kind, name) = match (
                r.get("alert").and_then(scalar),
                r.get("record").and_then(scalar),
            ) {
                (Some(a), None) => (Kind::Alert, a),
                (None, Some(rec)) => (Kind::Record, rec),
                _ => {
                    f.add(format!(
                        "{RULES_FILE} group «{group}» rule {ri}: needs exactly one of alert / record"
                    ));
                    continue;
                }
            };
            let expr = r.get("expr").and_then(scalar).unwrap_or_default();
            let rule = Rule {
                group: group.clone(),
                kind,
                name,
                expr,
                json: r.clone(),
            };
            if rule.expr.trim().is_empty() {
                f.add(format!("{}: no expr", rule.what()));
            }
            rules.push(rule);
        }
    }
    Some((tree, rules))
}

/// GitHub's anchor of a heading text.
fn github_anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of every heading of a markdown text (outside fenced code; repeated headings
/// get GitHub's `-1`, `-2` suffixes).
fn markdown_anchors(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let t = line.trim_start();
        if line.len() - t.len() > 3 {
            continue;
        }
        if let Some(open) = fence {
            if t.starts_with(open) {
                fence = None;
            }
            continue;
        }
        if t.starts_with("```") {
            fence = Some("```");
            continue;
        }
        if t.starts_with("~~~") {
            fence = Some("~~~");
            continue;
        }
        let hashes = t.bytes().take_while(|c| *c == b'#').count();
        if hashes == 0 || hashes > 6 {
            continue;
        }
        let rest = &t[hashes..];
        if !(rest.is_empty() || rest.starts_with(' ') || rest.starts_with('\t')) {
            continue;
        }
        let mut title = rest.trim();
        let closed = title.trim_end_matches('#');
        if closed.is_empty() || closed.ends_with(' ') {
            title = closed.trim_end();
        }
        let base = github_anchor(title);
        let n = counts.entry(base.clone()).or_insert(0);
        let anchor = if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        };
        *n += 1;
        out.insert(anchor);
    }
    out
}

/// The PrometheusRule generated from the plain rules file's text.
fn prometheus_rule_text(plain: &str) -> Result<String, String> {
    let lines: Vec<&str> = plain.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("groups:"))
        .ok_or_else(|| format!("{RULES_FILE}: no line starts with `groups:`"))?;
    let mut out = PROMETHEUS_RULE_HEADER.to_owned();
    for l in &lines[start..] {
        let l = l.trim_end();
        if !l.is_empty() {
            out.push_str("  ");
            out.push_str(l);
        }
        out.push('\n');
    }
    Ok(out)
}

fn group_names(groups: &[Value]) -> Vec<String> {
    groups
        .iter()
        .map(|g| str_of(g, "name").unwrap_or("(unnamed)").to_owned())
        .collect()
}

fn check_rules(alerts: &Path) {
    let mut f = Failures::default();
    let runbook = alerts.join(RUNBOOK_FILE);
    let anchors = match std::fs::read_to_string(&runbook) {
        Ok(t) => markdown_anchors(&t),
        Err(e) => {
            f.add(format!("{}: cannot read: {e}", runbook.display()));
            BTreeSet::new()
        }
    };
    let Some((tree, rules)) = load_rules(alerts, &mut f) else {
        f.finish(&format!("rules in {}", alerts.display()));
        return;
    };
    let record_re = regex::Regex::new("^[a-zA-Z_:][a-zA-Z0-9_:]*$").unwrap();
    let link_suffix = format!("alerts/{RUNBOOK_FILE}#");
    let mut alert_names = BTreeSet::new();
    for r in &rules {
        let what = r.what();
        if r.kind == Kind::Record {
            if !record_re.is_match(&r.name) {
                f.add(format!(
                    "{what}: record name must match ^[a-zA-Z_:][a-zA-Z0-9_:]*$"
                ));
            }
            continue;
        }
        if !alert_names.insert(r.name.clone()) {
            f.add(format!("{what}: alert name is used twice"));
        }
        let labels = r.json.get("labels");
        let ann = r.json.get("annotations");
        let sev = labels.and_then(|l| str_of(l, "severity"));
        if !matches!(sev, Some("critical" | "warning" | "info")) {
            f.add(format!(
                "{what}: labels.severity {sev:?} must be critical, warning or info"
            ));
        }
        let a = |k: &str| ann.and_then(|a| a.get(k)).and_then(scalar);
        for k in ["summary", "description"] {
            if a(k).is_none_or(|s| s.trim().is_empty()) {
                f.add(format!("{what}: annotations.{k} missing or empty"));
            }
        }
        if let Some(d) = a("description")
            && !d.contains("{{ $labels.")
            && !d.contains("{{ $value")
        {
            f.add(format!(
                "{what}: annotations.description should say which series fired, with {{{{ $labels.… }}}} or {{{{ $value }}}}: {d:?}"
            ));
        }
        match a("runbook_url") {
            None => f.add(format!("{what}: annotations.runbook_url missing")),
            Some(u) => match u.rfind(&link_suffix) {
                Some(i) => {
                    let anchor = &u[i + link_suffix.len()..];
                    if !anchors.contains(anchor) {
                        f.add(format!(
                            "{what}: runbook_url {u}: no heading of alerts/{RUNBOOK_FILE} has the anchor #{anchor} (anchors: {})",
                            anchors.iter().cloned().collect::<Vec<_>>().join(", ")
                        ));
                    }
                }
                None => f.add(format!(
                    "{what}: runbook_url {u} must end in {link_suffix}<anchor>"
                )),
            },
        }
    }

    // The PrometheusRule twin.
    let plain_path = alerts.join(RULES_FILE);
    let twin_path = alerts.join(PROMETHEUS_RULE_FILE);
    let plain = std::fs::read_to_string(&plain_path).unwrap_or_default();
    match prometheus_rule_text(&plain) {
        Err(e) => f.add(e),
        Ok(want) => {
            if std::env::var_os("UPDATE_GOLDEN").is_some() {
                std::fs::write(&twin_path, &want).expect("write the PrometheusRule");
            }
            match std::fs::read_to_string(&twin_path) {
                Err(e) => f.add(format!(
                    "{}: {e} (run `UPDATE_GOLDEN=1 cargo test --test observability` to generate it)",
                    twin_path.display()
                )),
                Ok(got) if got != want => {
                    let line = got
                        .lines()
                        .zip(want.lines())
                        .position(|(a, b)| a != b)
                        .unwrap_or_else(|| got.lines().count().min(want.lines().count()));
                    f.add(format!(
                        "{PROMETHEUS_RULE_FILE} is not the one generated from {RULES_FILE} (first difference at line {}: got {:?}, want {:?}); rerun with UPDATE_GOLDEN=1 and review the diff",
                        line + 1,
                        got.lines().nth(line).unwrap_or("<end of file>"),
                        want.lines().nth(line).unwrap_or("<end of file>"),
                    ));
                }
                Ok(_) => {}
            }
            match serde_saphyr::from_str::<Value>(&want) {
                Err(e) => f.add(format!(
                    "the generated PrometheusRule is not valid YAML: {e}"
                )),
                Ok(y) => {
                    if str_of(&y, "kind") != Some("PrometheusRule")
                        || str_of(&y, "apiVersion") != Some("monitoring.coreos.com/v1")
                    {
                        f.add(format!(
                            "the generated PrometheusRule has kind {:?}, apiVersion {:?}",
                            str_of(&y, "kind"),
                            str_of(&y, "apiVersion")
                        ));
                    }
                    let got = y
                        .get("spec")
                        .map(|s| group_names(array(s, "groups")))
                        .unwrap_or_default();
                    let want = group_names(array(&tree, "groups"));
                    if got != want {
                        f.add(format!(
                            "the generated PrometheusRule's spec.groups are {got:?}, the plain file's {want:?}"
                        ));
                    }
                }
            }
        }
    }
    f.finish(&format!("rules in {}", alerts.display()));
}

// ---------------------------------------------------------------------------------------------
// promtool

/// `name` in PATH.
fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A line on stderr that the test harness does not capture (eprintln! output is shown only
/// for failing tests).
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The tools' paths; `None` (after a loud line) when they are missing and the environment
/// says to skip. Panics when they are missing otherwise.
fn tools_or_skip(names: &[&str], test: &str) -> Option<Vec<PathBuf>> {
    let found: Vec<Option<PathBuf>> = names.iter().map(|n| tool(n)).collect();
    let missing: Vec<&str> = names
        .iter()
        .zip(&found)
        .filter(|(_, p)| p.is_none())
        .map(|(n, _)| *n)
        .collect();
    if missing.is_empty() {
        return Some(found.into_iter().flatten().collect());
    }
    if std::env::var("GPU_EXPORTER_SKIP_PROMETHEUS").as_deref() == Ok("1") {
        say(&format!(
            "\n*** SKIPPED {test}: {} not in PATH and GPU_EXPORTER_SKIP_PROMETHEUS=1 ***\n",
            missing.join(", ")
        ));
        return None;
    }
    panic!(
        "{test}: {} not found in PATH: install Debian's `prometheus` package \
         (`apt-get install prometheus`; scripts/test.sh does), or set \
         GPU_EXPORTER_SKIP_PROMETHEUS=1 to skip this test",
        missing.join(", ")
    );
}

fn run_tool(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("{shown}: cannot run: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{shown} failed ({}):\n{text}", out.status))
    }
}

fn check_promtool(alerts: &Path) {
    let Some(tools) = tools_or_skip(&["promtool"], "promtool_checks_and_tests_rules") else {
        return;
    };
    let promtool = &tools[0];
    let mut f = Failures::default();
    let plain = alerts.join(RULES_FILE);
    if let Err(e) = run_tool(Command::new(promtool).arg("check").arg("rules").arg(&plain)) {
        f.add(e);
    }
    let tests = files_with(&alerts.join("tests"), &["yaml", "yml"]);
    if tests.is_empty() {
        f.add(format!(
            "{}: no promtool unit tests (*.yaml)",
            alerts.join("tests").display()
        ));
    } else if let Err(e) = run_tool(Command::new(promtool).arg("test").arg("rules").args(&tests)) {
        f.add(e);
    }

    // Coverage: each alert fires in one test case and stays quiet in another.
    let mut fires: BTreeSet<String> = BTreeSet::new();
    let mut quiet: BTreeSet<String> = BTreeSet::new();
    let mut tested: BTreeMap<String, String> = BTreeMap::new();
    for t in &tests {
        let tree = match read_yaml(t) {
            Ok(y) => y,
            Err(e) => {
                f.add(e);
                continue;
            }
        };
        for case in array(&tree, "tests") {
            for a in array(case, "alert_rule_test") {
                let Some(name) = str_of(a, "alertname") else {
                    continue;
                };
                tested.insert(name.to_owned(), file_name(t));
                if array(a, "exp_alerts").is_empty() {
                    quiet.insert(name.to_owned());
                } else {
                    fires.insert(name.to_owned());
                }
            }
        }
    }
    let mut rf = Failures::default();
    let alerts_in_file: BTreeSet<String> = load_rules(alerts, &mut rf)
        .map(|(_, rules)| {
            rules
                .into_iter()
                .filter(|r| r.kind == Kind::Alert)
                .map(|r| r.name)
                .collect()
        })
        .unwrap_or_default();
    for e in rf.0 {
        f.add(e);
    }
    let no_fire: Vec<&String> = alerts_in_file.difference(&fires).collect();
    let no_quiet: Vec<&String> = alerts_in_file.difference(&quiet).collect();
    if !no_fire.is_empty() {
        f.add(format!(
            "alerts without a unit test in which they fire (non-empty exp_alerts): {no_fire:?}"
        ));
    }
    if !no_quiet.is_empty() {
        f.add(format!(
            "alerts without a unit test in which they do not fire (empty exp_alerts): {no_quiet:?}"
        ));
    }
    for (name, file) in &tested {
        if !alerts_in_file.contains(name) {
            f.add(format!(
                "tests/{file}: alert_rule_test for {name}, which is not an alert of {RULES_FILE}"
            ));
        }
    }
    f.finish(&format!("promtool on {}", alerts.display()));
}

// ---------------------------------------------------------------------------------------------
// HTTP

/// HTTP GET on 127.0.0.1 through ureq (query parameters percent-encoded by it, chunked bodies
/// decoded by it); returns (status code, body) for any status.
fn http_get(port: u16, path: &str, params: &[(&str, &str)]) -> Result<(u16, Vec<u8>), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(2)))
        .timeout_global(Some(Duration::from_secs(20)))
        .build()
        .into();
    let url = format!("http://127.0.0.1:{port}{path}");
    let mut req = agent.get(&url).header("Accept", "application/json");
    for (k, v) in params {
        req = req.query(*k, *v);
    }
    let mut resp = req.call().map_err(|e| format!("{url}: {e}"))?;
    let code = resp.status().as_u16();
    let body = resp
        .body_mut()
        .with_config()
        .limit(256 << 20)
        .read_to_vec()
        .map_err(|e| format!("{url}: reading the body: {e}"))?;
    Ok((code, body))
}

/// What a Prometheus API call said: its `data`, or why not.
enum ApiError {
    /// The expression itself is wrong (`bad_data`): retrying cannot help.
    Fatal(String),
    /// Anything else (no connection, an execution error that depends on the data).
    Transient(String),
}

fn prom_api(port: u16, path: &str, params: &[(&str, &str)]) -> Result<Value, ApiError> {
    let (code, body) = http_get(port, path, params).map_err(ApiError::Transient)?;
    let json: Value = serde_json::from_slice(&body).map_err(|e| {
        ApiError::Transient(format!(
            "HTTP {code}, not JSON ({e}): {}",
            String::from_utf8_lossy(&body)
        ))
    })?;
    if str_of(&json, "status") == Some("success") {
        return Ok(json.get("data").cloned().unwrap_or(Value::Null));
    }
    let msg = format!(
        "{}: {}",
        str_of(&json, "errorType").unwrap_or("error"),
        str_of(&json, "error").unwrap_or("(no message)")
    );
    if str_of(&json, "errorType") == Some("bad_data") {
        Err(ApiError::Fatal(msg))
    } else {
        Err(ApiError::Transient(msg))
    }
}

// ---------------------------------------------------------------------------------------------
// Processes

/// Child processes, killed when this is dropped (also when a test panics), with their logs
/// in a temporary directory that outlives them.
struct Procs {
    children: Vec<(String, Child)>,
    dir: tempfile::TempDir,
}

impl Drop for Procs {
    /// SIGTERM first (the exporter then removes its simulated cluster's temporary directory),
    /// SIGKILL for whatever is still running 5 s later.
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            if matches!(c.try_wait(), Ok(None)) {
                let _ = Command::new("kill")
                    .args(["-TERM", &c.id().to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        for (_, c) in &mut self.children {
            while Instant::now() < deadline && matches!(c.try_wait(), Ok(None)) {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Procs {
    fn log_path(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("{name}.log"))
    }

    fn spawn(&mut self, name: &str, cmd: &mut Command) -> usize {
        let log = std::fs::File::create(self.log_path(name)).unwrap();
        let child = cmd
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({cmd:?}): {e}"));
        self.children.push((name.to_owned(), child));
        self.children.len() - 1
    }

    /// The last lines of a child's log.
    fn log_tail(&self, name: &str) -> String {
        let text = std::fs::read_to_string(self.log_path(name)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Waits until child `idx` answers `path` on `port` with 200.
    fn wait_http(&mut self, idx: usize, port: u16, path: &str, within: Duration) {
        let deadline = Instant::now() + within;
        loop {
            if matches!(http_get(port, path, &[]), Ok((200, _))) {
                return;
            }
            let (name, child) = &mut self.children[idx];
            let name = name.clone();
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "{name} exited ({status}) before {path} answered 200; its log:\n{}",
                    self.log_tail(&name)
                );
            }
            if Instant::now() > deadline {
                panic!(
                    "{name}: {path} on port {port} did not answer 200 within {within:?}; its log:\n{}",
                    self.log_tail(&name)
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// An exporter command on a free port with the recommended counters.
fn exporter(root: &Path, port: u16) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.current_dir(root)
        .args(["-f", "counters/recommended.csv", "-c", "1000", "-a"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--nvml-lib")
        .arg(common::built_sim_lib())
        .env_remove("NODE_NAME")
        .env_remove("RUST_LOG")
        .env_remove("GPU_EXPORTER_SIMULATE")
        .env_remove("DCGM_EXPORTER_COLLECTORS");
    cmd
}

// ---------------------------------------------------------------------------------------------
// The real server

/// One thing to ask Prometheus until it answers with data.
struct Check {
    what: String,
    ask: Ask,
    /// The last answer: `None` once satisfied.
    last: Option<String>,
    fatal: bool,
}

enum Ask {
    /// An instant query that must return a non-empty result.
    Query(String),
    /// A label's values among the series matching a selector; empty is allowed for `cluster`.
    LabelValues {
        label: String,
        selector: Option<String>,
        allow_empty: bool,
    },
}

impl Check {
    fn new(what: String, ask: Ask) -> Self {
        Self {
            what,
            ask,
            last: Some("not asked yet".into()),
            fatal: false,
        }
    }

    fn shown(&self) -> String {
        match &self.ask {
            Ask::Query(q) => q.clone(),
            Ask::LabelValues {
                label, selector, ..
            } => format!(
                "/api/v1/label/{label}/values?match[]={}",
                selector.as_deref().unwrap_or("")
            ),
        }
    }

    /// Asks once; records the outcome.
    fn ask(&mut self, port: u16) {
        let answer = match &self.ask {
            Ask::Query(q) => prom_api(port, "/api/v1/query", &[("query", q)]).map(|d| {
                let r = d.get("result");
                match r {
                    Some(Value::Array(a)) if str_of(&d, "resultType") != Some("scalar") => {
                        !a.is_empty()
                    }
                    Some(Value::Array(_)) | Some(Value::String(_)) => true,
                    _ => false,
                }
            }),
            Ask::LabelValues {
                label,
                selector,
                allow_empty,
            } => {
                let path = format!("/api/v1/label/{label}/values");
                let params: Vec<(&str, &str)> = selector
                    .as_deref()
                    .map(|s| vec![("match[]", s)])
                    .unwrap_or_default();
                prom_api(port, &path, &params)
                    .map(|d| *allow_empty || d.as_array().is_some_and(|a| !a.is_empty()))
            }
        };
        self.last = match answer {
            Ok(true) => None,
            Ok(false) => Some("empty result".into()),
            Err(ApiError::Transient(e)) => Some(e),
            Err(ApiError::Fatal(e)) => {
                self.fatal = true;
                Some(e)
            }
        };
    }

    fn done(&self) -> bool {
        self.last.is_none() || self.fatal
    }
}

/// `label_values(<selector>, <label>)` or `label_values(<label>)` → (selector, label).
fn parse_label_values(q: &str) -> Option<(Option<String>, String)> {
    let inner = q
        .trim()
        .strip_prefix("label_values(")?
        .strip_suffix(')')?
        .trim();
    // The last comma outside quotes, braces and parentheses separates the label.
    let (mut depth, mut quote, mut split) = (0i32, None::<char>, None);
    let mut prev = ' ';
    for (i, c) in inner.char_indices() {
        match quote {
            Some(qc) => {
                if c == qc && prev != '\\' {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' | '`' => quote = Some(c),
                '{' | '(' | '[' => depth += 1,
                '}' | ')' | ']' => depth -= 1,
                ',' if depth == 0 => split = Some(i),
                _ => {}
            },
        }
        prev = c;
    }
    match split {
        Some(i) => Some((
            Some(inner[..i].trim().to_owned()),
            inner[i + 1..].trim().to_owned(),
        )),
        None => Some((None, inner.to_owned())),
    }
}

/// The state of Prometheus's rule evaluation: `Ok` once every rule of the file is loaded,
/// evaluated and healthy; otherwise the problems.
fn rules_state(port: u16, want: &[Rule]) -> Result<(), Vec<String>> {
    let data = prom_api(port, "/api/v1/rules", &[]).map_err(|e| match e {
        ApiError::Fatal(m) | ApiError::Transient(m) => vec![format!("/api/v1/rules: {m}")],
    })?;
    let mut problems = Vec::new();
    let mut loaded = 0;
    for g in array(&data, "groups") {
        let group = str_of(g, "name").unwrap_or("?");
        for r in array(g, "rules") {
            loaded += 1;
            let name = str_of(r, "name").unwrap_or("?");
            let kind = str_of(r, "type").unwrap_or("?");
            let what = format!("Prometheus: group «{group}» {kind} rule {name}");
            let last = str_of(r, "lastEvaluation").unwrap_or("");
            if last.is_empty() || last.starts_with("0001-01-01") {
                problems.push(format!("{what}: not evaluated yet"));
                continue;
            }
            if str_of(r, "health") != Some("ok") {
                problems.push(format!(
                    "{what}: health {:?}, lastError {:?}; query: {}",
                    str_of(r, "health").unwrap_or("?"),
                    str_of(r, "lastError").unwrap_or(""),
                    str_of(r, "query").unwrap_or("")
                ));
            }
        }
    }
    if loaded != want.len() {
        problems.push(format!(
            "Prometheus loaded {loaded} rules, {RULES_FILE} has {}",
            want.len()
        ));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

fn check_prometheus(dashboards_dir: &Path, alerts: &Path) {
    let test = "prometheus_evaluates_every_panel_and_rule";
    let Some(tools) = tools_or_skip(&["prometheus", "promtool"], test) else {
        return;
    };
    let started = Instant::now();
    let mut f = Failures::default();

    // What to ask: every rule expression, panel query and label_values variable.
    let rules = load_rules(alerts, &mut f)
        .map(|(_, r)| r)
        .unwrap_or_default();
    let dashboards = load_dashboards(dashboards_dir, &mut f);
    let mut checks: Vec<Check> = rules
        .iter()
        .map(|r| Check::new(r.what(), Ask::Query(r.expr.clone())))
        .collect();
    let mut panels = 0;
    let mut variable_checks = 0;
    for d in &dashboards {
        panels += d.panels().iter().filter(|p| is_query_panel(p)).count();
        let subst = d.substitutions();
        for (what, expr) in d.targets() {
            checks.push(Check::new(what, Ask::Query(substitute(&expr, &subst))));
        }
        for v in d.variables() {
            if str_of(v, "type") != Some("query") {
                continue;
            }
            let name = str_of(v, "name").unwrap_or("?");
            let what = format!("{} variable ${name}", d.what());
            let Some(q) = variable_query(v) else {
                f.add(format!("{what}: query variable without a query"));
                continue;
            };
            let q = substitute(&q, &subst);
            let ask = if let Some(inner) = q
                .trim()
                .strip_prefix("query_result(")
                .and_then(|s| s.strip_suffix(')'))
            {
                Ask::Query(inner.to_owned())
            } else if let Some((selector, label)) = parse_label_values(&q) {
                Ask::LabelValues {
                    allow_empty: label == "cluster",
                    label,
                    selector,
                }
            } else {
                f.add(format!(
                    "{what}: {q:?}: expected label_values(<selector>, <label>) or query_result(<expr>)"
                ));
                continue;
            };
            variable_checks += 1;
            checks.push(Check::new(what, ask));
        }
    }

    // The exporters: two simulated nodes, one without a driver, and a target that is down.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut procs = Procs {
        children: Vec::new(),
        dir: tempfile::tempdir().unwrap(),
    };
    let mut targets = Vec::new();
    let mut waits = Vec::new();
    for scenario in SIMULATED {
        let port = common::free_port();
        let name = format!("exporter-{}", scenario.replace('/', "_"));
        let idx = procs.spawn(&name, exporter(root, port).args(["--simulate", scenario]));
        waits.push((idx, port, "/ready"));
        targets.push(port);
    }
    {
        // No driver: /ready never answers 200, /health does.
        let port = common::free_port();
        let idx = procs.spawn(
            "exporter-no-driver",
            exporter(root, port).args(["--simulate", NO_DRIVER_SCENARIO]),
        );
        waits.push((idx, port, "/health"));
        targets.push(port);
    }
    targets.push(common::free_port());
    for (idx, port, path) in waits {
        procs.wait_http(idx, port, path, Duration::from_secs(60));
    }

    // Prometheus scraping them every second, with the rules.
    let rules_path = alerts
        .join(RULES_FILE)
        .canonicalize()
        .unwrap_or_else(|_| alerts.join(RULES_FILE));
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n  - {}\n\
         scrape_configs:\n  - job_name: gpu-exporter\n    static_configs:\n      - targets: [{}]\n",
        serde_json::to_string(&rules_path.to_string_lossy()).unwrap(),
        targets
            .iter()
            .map(|p| format!("\"127.0.0.1:{p}\""))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let config_path = procs.dir.path().join("prometheus.yml");
    std::fs::write(&config_path, config).unwrap();
    let prom_port = common::free_port();
    let idx = procs.spawn(
        "prometheus",
        Command::new(&tools[0])
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                procs.dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
            .arg("--log.level=warn"),
    );
    procs.wait_http(idx, prom_port, "/-/ready", Duration::from_secs(60));
    let deadline = Instant::now() + EVAL_DEADLINE;

    // Ask until everything has data and the alerts sit where the scenarios put their
    // causes, or the deadline.
    let expected_alerts = expected_alerts(targets[2], targets[3]);
    let mut rule_problems;
    let mut placement;
    loop {
        // Asked every time: a rule's health is that of its last evaluation.
        rule_problems = rules_state(prom_port, &rules).err().unwrap_or_default();
        for c in checks.iter_mut().filter(|c| !c.done()) {
            c.ask(prom_port);
        }
        placement = alert_placement(prom_port, &expected_alerts);
        if (rule_problems.is_empty() && checks.iter().all(Check::done) && placement.is_ok())
            || Instant::now() > deadline
        {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    for p in rule_problems {
        f.add(p);
    }
    if let Err(p) = placement {
        f.add(p);
    }
    for c in &checks {
        if let Some(why) = &c.last {
            f.add(format!("{}: {why}: {}", c.what, c.shown()));
        }
    }
    if let Some((_, c)) = procs.children.iter_mut().find(|(n, _)| n == "prometheus")
        && let Ok(Some(status)) = c.try_wait()
    {
        f.add(format!(
            "prometheus exited ({status}); its log:\n{}",
            procs.log_tail("prometheus")
        ));
    }
    say(&format!(
        "observability: {} rules, {} dashboards, {panels} panels, {} queries ({variable_checks} variables) checked against Prometheus in {:.1} s",
        rules.len(),
        dashboards.len(),
        checks.len(),
        started.elapsed().as_secs_f64()
    ));
    drop(procs);
    f.finish(&format!(
        "Prometheus evaluating {} and {}",
        dashboards_dir.display(),
        alerts.join(RULES_FILE).display()
    ));
}

// ---------------------------------------------------------------------------------------------
// Where the alerts fire

/// The node of the `incidents` scenario.
const INCIDENTS_NODE: &str = "sim-incidents-node";

/// The alerts (pending or firing) expected on the `incidents` node and on the exporters
/// without a driver (`no_driver`) and without a process (`down`), as `alertname gpu/GI xid`
/// keys: every alert has a cause there, and nothing else on those targets alerts.
fn expected_alerts(no_driver: u16, down: u16) -> BTreeSet<String> {
    let mut want: BTreeSet<String> = [
        "GpuTemperatureHigh 0",
        "GpuThermalSlowdown 0",
        "GpuFramebufferNearFull 1",
        "GpuXidCritical 2 xid=48",
        "GpuEccUncorrectableErrors 2",
        "GpuRowRemapPending 2",
        "GpuRowRemapFailure 2",
        "GpuNvlinkErrors 2",
        "GpuPowerBrake 3",
        "GpuLost 4",
        "GpuXidCritical 4 xid=79",
        "GpuCountDropped -",
        "GpuUnderutilized 5",
        "GpuUnderutilized 6/2",
        "GpuAllocatedIdle 5",
        "GpuAllocatedIdle 6/2",
    ]
    .iter()
    .map(|s| format!("{INCIDENTS_NODE} {s}"))
    .collect();
    for name in ["GpuExporterNvmlDown", "GpuExporterSamplesStale"] {
        want.insert(format!("127.0.0.1:{no_driver} {name}"));
    }
    want.insert(format!("127.0.0.1:{down} GpuExporterDown"));
    want
}

/// Compares the `ALERTS` of the incidents node and of the two broken exporters with `want`.
fn alert_placement(port: u16, want: &BTreeSet<String>) -> Result<(), String> {
    let data = prom_api(port, "/api/v1/query", &[("query", "ALERTS")]).map_err(|e| match e {
        ApiError::Fatal(m) | ApiError::Transient(m) => format!("ALERTS: {m}"),
    })?;
    let exporters: BTreeSet<String> = want
        .iter()
        .filter_map(|k| k.split_once(' ').map(|(t, _)| t.to_owned()))
        .filter(|t| t != INCIDENTS_NODE)
        .collect();
    let mut got = BTreeSet::new();
    for s in array(&data, "result") {
        let m = s.get("metric").cloned().unwrap_or(Value::Null);
        let label = |k: &str| str_of(&m, k).unwrap_or("").to_owned();
        let name = label("alertname");
        let key = if label("Hostname") == INCIDENTS_NODE {
            let mut k = format!("{INCIDENTS_NODE} {name} ");
            k.push_str(&match (label("gpu"), label("GPU_I_ID")) {
                (g, _) if g.is_empty() => "-".to_owned(),
                (g, gi) if gi.is_empty() => g,
                (g, gi) => format!("{g}/{gi}"),
            });
            if !label("xid").is_empty() {
                k.push_str(&format!(" xid={}", label("xid")));
            }
            k
        } else if exporters.contains(&label("instance")) {
            format!("{} {name}", label("instance"))
        } else {
            continue;
        };
        got.insert(key);
    }
    if &got == want {
        return Ok(());
    }
    Err(format!(
        "alerts not where the scenarios put their causes: missing {:?}, unexpected {:?}",
        want.difference(&got).collect::<Vec<_>>(),
        got.difference(want).collect::<Vec<_>>()
    ))
}

// ---------------------------------------------------------------------------------------------
// The helpers' own tests

#[test]
fn helpers_parse_what_the_checks_rely_on() {
    assert_eq!(
        variable_refs(
            r#"rate(x{a=~"$gpu",b="${Hostname}"}[$__rate_interval]) ${v:csv} "$1" ${1} $"#
        ),
        ["gpu", "Hostname", "__rate_interval", "v"]
    );
    let subst: BTreeMap<String, String> = [("gpu", ".*"), ("__interval", "15s")]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    assert_eq!(
        substitute(r#"x{g=~"$gpu"}[$__interval] "$1" $other ${gpu}"#, &subst),
        r#"x{g=~".*"}[15s] "$1" $other .*"#
    );
    assert_eq!(
        github_anchor("GpuXid — fatal Xid (48, 79)"),
        "gpuxid--fatal-xid-48-79"
    );
    let anchors = markdown_anchors("# A\n## Same\n```\n## Not\n```\n## Same\n### C# ##\n");
    assert_eq!(
        anchors,
        ["a", "same", "same-1", "c"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
    );
    assert_eq!(
        parse_label_values(r#"label_values(up{job="a,b"}, instance)"#),
        Some((Some(r#"up{job="a,b"}"#.to_owned()), "instance".to_owned()))
    );
    assert_eq!(
        parse_label_values("label_values(gpu)"),
        Some((None, "gpu".to_owned()))
    );
    let text = "# c\ngroups:\n  - name: g\n\n    rules: []   \n";
    assert_eq!(
        prometheus_rule_text(text).unwrap(),
        format!("{PROMETHEUS_RULE_HEADER}  groups:\n    - name: g\n\n      rules: []\n")
    );
}
