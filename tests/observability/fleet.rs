//! The fleet overview dashboard (`dashboards/gpu-fleet.json`) reads recording rules only: every
//! series its panels and variables select is a `record:` of the rules file, so its cost does
//! not grow with the number of GPUs. That it has data through a real Prometheus is
//! `prometheus_evaluates_every_panel_and_rule`'s job. It must not talk to Prometheus.

use super::*;

/// The fleet overview's file in `dashboards/`.
pub(crate) const FLEET_DASHBOARD: &str = "gpu-fleet.json";

/// PromQL words that are not series names.
const KEYWORDS: [&str; 11] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
];

/// The series names an expression selects: identifiers outside label matchers, strings and
/// grouping lists, other than functions (followed by `(`), keywords and numbers.
pub(crate) fn selected_series(expr: &str) -> BTreeSet<String> {
    let strings = regex::Regex::new(r#""(?:[^"\\]|\\.)*""#).unwrap();
    let matchers = regex::Regex::new(r"\{[^}]*\}").unwrap();
    let grouping =
        regex::Regex::new(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)")
            .unwrap();
    let ident = regex::Regex::new(r"[a-zA-Z_:][a-zA-Z0-9_:]*").unwrap();
    let e = strings.replace_all(expr, "\"\"");
    let e = matchers.replace_all(&e, " ");
    let e = grouping.replace_all(&e, " ");
    ident
        .find_iter(&e)
        .filter(|m| {
            // Not the tail of a number (1e-12) or of a longer word, and not a function.
            let before = e[..m.start()].chars().next_back();
            let after = e[m.end()..].trim_start().chars().next();
            !before.is_some_and(|c| c.is_ascii_alphanumeric() || "_:.".contains(c))
                && after != Some('(')
        })
        .map(|m| m.as_str().to_owned())
        .filter(|w| !KEYWORDS.contains(&w.as_str()))
        .collect()
}

pub(crate) fn check_fleet_dashboard(dashboards_dir: &Path, alerts: &Path) {
    let mut f = Failures::default();
    let records: BTreeSet<String> = load_rules(alerts, &mut f)
        .map(|(_, r)| r)
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.kind == Kind::Record)
        .map(|r| r.name)
        .collect();
    let dashboards = load_dashboards(dashboards_dir, &mut f);
    let Some(d) = dashboards.iter().find(|d| d.file == FLEET_DASHBOARD) else {
        f.add(format!(
            "{}: no {FLEET_DASHBOARD}",
            dashboards_dir.display()
        ));
        return f.finish("the fleet overview dashboard");
    };
    let mut exprs = d.targets();
    for v in d.variables() {
        // label_values(<selector>, <label>): the selector must read a recording rule too.
        if let Some((Some(selector), _)) = variable_query(v).and_then(|q| parse_label_values(&q)) {
            let name = str_of(v, "name").unwrap_or("?");
            exprs.push((format!("{} variable ${name}", d.what()), selector));
        }
    }
    if d.targets().is_empty() {
        f.add(format!("{}: no panel queries", d.what()));
    }
    for (what, expr) in exprs {
        let series = selected_series(&expr);
        if series.is_empty() {
            f.add(format!("{what}: selects no series: {expr}"));
        }
        for s in series.difference(&records) {
            f.add(format!(
                "{what}: reads {s}, which is not a recording rule of {RULES_FILE}: {expr}"
            ));
        }
    }
    f.finish(&format!(
        "{} reading only the recording rules of {}",
        dashboards_dir.join(FLEET_DASHBOARD).display(),
        alerts.join(RULES_FILE).display()
    ));
}
