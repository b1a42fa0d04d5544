//! The Grafana dashboards: loaded, their `$variables` resolved, and checked for what an
//! import into any Grafana needs. It must not talk to Prometheus.

use super::*;

// ---------------------------------------------------------------------------------------------
// Dashboards

pub(crate) struct Dashboard {
    pub(crate) file: String,
    pub(crate) json: Value,
}

impl Dashboard {
    pub(crate) fn title(&self) -> &str {
        str_of(&self.json, "title").unwrap_or("(untitled)")
    }

    pub(crate) fn what(&self) -> String {
        format!("{} «{}»", self.file, self.title())
    }

    /// Every panel, including those nested in (collapsed) rows, rows included.
    pub(crate) fn panels(&self) -> Vec<&Value> {
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

    pub(crate) fn variables(&self) -> &[Value] {
        self.json
            .get("templating")
            .map(|t| array(t, "list"))
            .unwrap_or_default()
    }

    pub(crate) fn variable_names(&self) -> BTreeSet<String> {
        self.variables()
            .iter()
            .filter_map(|v| str_of(v, "name"))
            .map(str::to_owned)
            .collect()
    }

    pub(crate) fn panel_what(&self, p: &Value) -> String {
        let id = p.get("id").map(|i| i.to_string()).unwrap_or_default();
        format!(
            "{} panel «{}» (id {id})",
            self.what(),
            str_of(p, "title").unwrap_or("(untitled)")
        )
    }

    /// (description, expr) of every target of every query panel.
    pub(crate) fn targets(&self) -> Vec<(String, String)> {
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
    pub(crate) fn substitutions(&self) -> BTreeMap<String, String> {
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

/// The node of the `a100-mig-t4` scenario: profiling on the A100's MIG instances and on the
/// T4 comes from the simulated libdcgm.
pub(crate) const A100_MIG_NODE: &str = "sim-a100-mig-t4-node";

/// (description, expr with `$variables` resolved) of every panel query that charts a
/// profiling field (raw, or normalized when read: no recorded series carries one, so every
/// such query names the `DCGM_FI_PROF_*` fields themselves), restricted to the A100 MIG node
/// through the `$node` variable. Left out: threshold filters (` < `), which are rightly empty
/// where no device is under the threshold.
pub(crate) fn a100_profiling_targets(d: &Dashboard) -> Result<Vec<(String, String)>, String> {
    let mut out = Vec::new();
    let mut subst = d.substitutions();
    for (what, expr) in d.targets() {
        if !expr.contains("DCGM_FI_PROF_") || expr.contains(" < ") {
            continue;
        }
        if !subst.contains_key("node") {
            return Err(format!(
                "{}: no $node variable to restrict its profiling panels to {A100_MIG_NODE}",
                d.what()
            ));
        }
        subst.insert("node".to_owned(), A100_MIG_NODE.to_owned());
        out.push((
            format!("{what} on {A100_MIG_NODE} (profiling from DCGM)"),
            substitute(&expr, &subst),
        ));
    }
    Ok(out)
}

pub(crate) fn is_query_panel(p: &Value) -> bool {
    !matches!(str_of(p, "type"), Some("row" | "text"))
}

/// A variable's query: a string, or `{"query": "..."}` in newer Grafana.
pub(crate) fn variable_query(v: &Value) -> Option<String> {
    match v.get("query")? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("query").and_then(Value::as_str).map(str::to_owned),
        _ => None,
    }
}

pub(crate) fn current_value(v: &Value) -> Option<String> {
    let c = v.get("current")?.get("value")?;
    match c {
        Value::Array(a) => a.first().and_then(scalar),
        other => scalar(other),
    }
}

/// Reads every `dashboards/*.json`; unreadable or invalid files are failures.
pub(crate) fn load_dashboards(dir: &Path, f: &mut Failures) -> Vec<Dashboard> {
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
pub(crate) fn variable_refs(text: &str) -> Vec<String> {
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
pub(crate) fn variable_at(text: &str, i: usize) -> (Option<String>, usize) {
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
pub(crate) fn substitute(text: &str, subst: &BTreeMap<String, String>) -> String {
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
pub(crate) fn check_datasource_refs(v: &Value, path: &str, what: &str, f: &mut Failures) {
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
pub(crate) fn datasource_ok(v: &Value, path: &str) -> bool {
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

pub(crate) fn is_panel_datasource(v: Option<&Value>) -> bool {
    match v {
        Some(Value::String(s)) => s == DATASOURCE_VAR,
        Some(o @ Value::Object(_)) => {
            str_of(o, "type") == Some("prometheus") && str_of(o, "uid") == Some(DATASOURCE_VAR)
        }
        _ => false,
    }
}

pub(crate) fn check_dashboards(dir: &Path) {
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

pub(crate) fn check_grid_pos(p: &Value, pw: &str, f: &mut Failures) {
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
pub(crate) fn check_refs(text: &str, names: &BTreeSet<String>, what: &str, f: &mut Failures) {
    for r in variable_refs(text) {
        if !names.contains(&r) && !GRAFANA_BUILTINS.iter().any(|(b, _)| *b == r) {
            f.add(format!(
                "{what}: ${r} is neither a variable of this dashboard nor one of Grafana's built-ins: {text}"
            ));
        }
    }
}
