//! The alert and recording rules: completeness, runbook links, and the PrometheusRule twin
//! generated from the plain rules file. It must not run promtool or Prometheus.

use super::*;

// ---------------------------------------------------------------------------------------------
// Rules

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    Alert,
    Record,
}

pub(crate) struct Rule {
    /// The rules file it is in (RULES_FILE, or PRICES_FILE).
    pub(crate) file: &'static str,
    pub(crate) group: String,
    pub(crate) kind: Kind,
    pub(crate) name: String,
    pub(crate) expr: String,
    pub(crate) json: Value,
}

impl Rule {
    pub(crate) fn what(&self) -> String {
        let k = match self.kind {
            Kind::Alert => "alert",
            Kind::Record => "record",
        };
        format!("{} group «{}» {k} {}", self.file, self.group, self.name)
    }
}

/// The plain rules file's tree and its rules; structural problems are failures.
pub(crate) fn load_rules(alerts: &Path, f: &mut Failures) -> Option<(Value, Vec<Rule>)> {
    load_rules_file(alerts, RULES_FILE, f)
}

/// The tree and rules of `file` in `alerts`; structural problems are failures.
pub(crate) fn load_rules_file(
    alerts: &Path,
    file: &'static str,
    f: &mut Failures,
) -> Option<(Value, Vec<Rule>)> {
    let tree = match read_yaml(&alerts.join(file)) {
        Ok(t) => t,
        Err(e) => {
            f.add(e);
            return None;
        }
    };
    let groups = array(&tree, "groups");
    if groups.is_empty() {
        f.add(format!("{file}: no groups"));
    }
    let mut rules = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let group = str_of(g, "name").map(str::to_owned).unwrap_or_else(|| {
            f.add(format!("{file}: group {gi} has no name"));
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
                        "{file} group «{group}» rule {ri}: needs exactly one of alert / record"
                    ));
                    continue;
                }
            };
            let expr = r.get("expr").and_then(scalar).unwrap_or_default();
            let rule = Rule {
                file,
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
pub(crate) fn github_anchor(title: &str) -> String {
    title
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of every heading of a markdown text (outside fenced code; repeated headings
/// get GitHub's `-1`, `-2` suffixes).
pub(crate) fn markdown_anchors(text: &str) -> BTreeSet<String> {
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
pub(crate) fn prometheus_rule_text(plain: &str) -> Result<String, String> {
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

pub(crate) fn group_names(groups: &[Value]) -> Vec<String> {
    groups
        .iter()
        .map(|g| str_of(g, "name").unwrap_or("(unnamed)").to_owned())
        .collect()
}

pub(crate) fn check_rules(alerts: &Path) {
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
