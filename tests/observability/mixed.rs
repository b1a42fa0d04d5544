//! The mixed fleet: the `incidents` node once more under each `dcgm-*` compatibility profile
//! (and under dcgm-4.9 and dcgm-4.10 with counters files in dcgm-exporter 4.9's and 4.10's
//! names), and in the native profile's full label shape (`--series-labels full`: descriptions
//! and holders on every series) beside the native incidents node's default lean shape, each
//! with a node name of its own, scraped by the same Prometheus as the native nodes. Every
//! dashboard's `$node` variable must list each of them. For the same faults, the same alerts must fire on every node, and
//! every dashboard panel that has data for the native incidents node must have data for each
//! of these nodes, except, on the DCGM-only nodes, what the docs name as native-only: the
//! alerts marked `no` in the table "Which nodes give which alerts" of alerts/README.md, and the
//! panels of the table "Native-only panels" of docs/dashboards.md. The exceptions are read
//! from those two tables, so a signal that stops working on one shape fails here unless the
//! docs say so, with the reason. The full-shape node has no exceptions: lean and full must
//! give the same alerts and panels.
//!
//! It owns the fleet's description and the comparisons; starting the processes and asking
//! Prometheus is `prometheus`'s.

use super::*;

/// A node of the mixed fleet: the incidents scenario with the exporter arguments that choose
/// its shape, and a counters file.
pub(crate) struct MixedNode {
    pub(crate) node: &'static str,
    /// The arguments that choose what the node serves (`--compatibility …`,
    /// `--series-labels …`).
    pub(crate) args: &'static [&'static str],
    pub(crate) counters: &'static str,
    /// Whether the node serves only DCGM's families (a `dcgm-*` profile): the docs' native-only
    /// alerts and panels are exempt there.
    pub(crate) dcgm_only: bool,
}

/// The incidents scenario under every `dcgm-*` profile, with `counters/recommended.csv` (a
/// file of our own keeps its 4.8 names under every profile), once with the same fields under
/// dcgm-exporter 4.9's names (what a dcgm-exporter 4.9 node serves), once under 4.10's (its
/// PCIe and NVLink traffic only in the renamed `…_BYTES_PER_SECOND` profiling rates), and once
/// in the native profile's full label shape.
pub(crate) const MIXED: [MixedNode; 7] = [
    MixedNode {
        node: "sim-incidents-dcgm-4-8-2",
        args: &["--compatibility", "dcgm-4.8.2"],
        counters: "counters/recommended.csv",
        dcgm_only: true,
    },
    MixedNode {
        node: "sim-incidents-dcgm-4-8-4",
        args: &["--compatibility", "dcgm-4.8.4"],
        counters: "counters/recommended.csv",
        dcgm_only: true,
    },
    MixedNode {
        node: "sim-incidents-dcgm-4-9",
        args: &["--compatibility", "dcgm-4.9"],
        counters: "counters/recommended.csv",
        dcgm_only: true,
    },
    MixedNode {
        node: "sim-incidents-dcgm-4-9-names",
        args: &["--compatibility", "dcgm-4.9"],
        counters: "tests/fixtures/csv/recommended-dcgm-4.9-names.csv",
        dcgm_only: true,
    },
    MixedNode {
        node: "sim-incidents-dcgm-4-10",
        args: &["--compatibility", "dcgm-4.10"],
        counters: "counters/recommended.csv",
        dcgm_only: true,
    },
    MixedNode {
        node: "sim-incidents-dcgm-4-10-names",
        args: &["--compatibility", "dcgm-4.10"],
        counters: "tests/fixtures/csv/recommended-dcgm-4.10-names.csv",
        dcgm_only: true,
    },
    MixedNode {
        node: "sim-incidents-full",
        args: &["--series-labels", "full"],
        counters: "counters/recommended.csv",
        dcgm_only: false,
    },
];

/// The one alert key a DCGM-only node cannot give although the alert works there: Xid 79 of
/// the GPU that falls off the bus arrives with the loss, and dcgm-exporter's shape drops the
/// lost GPU's series (DCGM_FI_DEV_XID_ERRORS included) at once; GpuLost fires for it.
/// alerts/README.md marks GpuXidCritical `partly` and says so.
const PARTLY: [(&str, &str); 1] = [("GpuXidCritical", "GpuXidCritical 4 xid=79")];

/// The heading of the alerts table in alerts/README.md.
const ALERTS_TABLE: &str = "## Which nodes give which alerts";
/// The heading of the panels table in docs/dashboards.md.
const PANELS_TABLE: &str = "## Native-only panels";

/// The rows of the first Markdown table under `heading`, as cells (header and separator left
/// out).
pub(crate) fn table_rows(text: &str, heading: &str) -> Result<Vec<Vec<String>>, String> {
    let start = text
        .lines()
        .position(|l| l.trim() == heading)
        .ok_or_else(|| format!("no heading {heading:?}"))?;
    let rows: Vec<Vec<String>> = text
        .lines()
        .skip(start + 1)
        .skip_while(|l| !l.trim_start().starts_with('|'))
        .take_while(|l| l.trim_start().starts_with('|'))
        .skip(2)
        .map(|l| {
            l.trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect()
        })
        .collect();
    if rows.is_empty() {
        return Err(format!("no table under {heading:?}"));
    }
    Ok(rows)
}

/// The alerts alerts/README.md says a DCGM-only node with the recommended counters does not
/// give (`no` in the DCGM-only column), and those it gives `partly`.
pub(crate) fn dcgm_only_alert_gaps(
    readme: &str,
) -> Result<(BTreeSet<String>, BTreeSet<String>), String> {
    let (mut no, mut partly) = (BTreeSet::new(), BTreeSet::new());
    for row in table_rows(readme, ALERTS_TABLE)? {
        let [alert, _reads, dcgm_only, ..] = row.as_slice() else {
            return Err(format!("{ALERTS_TABLE}: a row without 3 cells: {row:?}"));
        };
        let verdict = dcgm_only.split([':', ' ']).next().unwrap_or("");
        match verdict {
            "yes" => {}
            "no" => {
                no.insert(alert.clone());
            }
            "partly" => {
                partly.insert(alert.clone());
            }
            _ => {
                return Err(format!(
                    "{ALERTS_TABLE}: {alert}: the DCGM-only cell must start with yes, no or partly: {dcgm_only:?}"
                ));
            }
        }
    }
    Ok((no, partly))
}

/// (dashboard file, panel title) of the panels docs/dashboards.md names native-only.
pub(crate) fn native_only_panels(doc: &str) -> Result<BTreeSet<(String, String)>, String> {
    table_rows(doc, PANELS_TABLE)?
        .into_iter()
        .map(|row| match row.as_slice() {
            [file, title, _why, ..] => Ok((file.clone(), title.clone())),
            _ => Err(format!("{PANELS_TABLE}: a row without 3 cells: {row:?}")),
        })
        .collect()
}

/// The alert keys expected on each mixed node: the native incidents node's, less, on the
/// DCGM-only nodes, what the README says the shape cannot give.
pub(crate) fn mixed_expected_alerts(
    native: &BTreeSet<String>,
    readme: &str,
    f: &mut Failures,
) -> BTreeSet<String> {
    let (no, partly) = match dcgm_only_alert_gaps(readme) {
        Ok(g) => g,
        Err(e) => {
            f.add(format!("alerts/README.md: {e}"));
            return BTreeSet::new();
        }
    };
    for (alert, _) in PARTLY {
        if !partly.contains(alert) {
            f.add(format!(
                "alerts/README.md: {ALERTS_TABLE}: {alert} must be marked `partly` (Xid 79 with a lost GPU)"
            ));
        }
    }
    let prefix = format!("{INCIDENTS_NODE} ");
    let mut want = BTreeSet::new();
    for key in native {
        let Some(rest) = key.strip_prefix(&prefix) else {
            continue;
        };
        let name = rest.split(' ').next().unwrap_or("");
        let gap = no.contains(name) || PARTLY.iter().any(|(_, k)| *k == rest);
        for m in MIXED.iter().filter(|m| !(gap && m.dcgm_only)) {
            want.insert(format!("{} {rest}", m.node));
        }
    }
    want
}

/// Which nodes have data for each `$node` panel: (dashboard, panel title, target) → nodes.
type Coverage = BTreeMap<(String, String, String), BTreeSet<String>>;

fn panel_coverage(port: u16, dashboards: &[Dashboard], nodes: &[&str]) -> Coverage {
    let mut out = Coverage::new();
    for d in dashboards {
        if !d.variable_names().contains("node") {
            continue;
        }
        let file = d.file.clone();
        // The dashboard's substitutions with `$node` set to each node, made once.
        let substs: Vec<(&str, BTreeMap<String, String>)> = nodes
            .iter()
            .map(|node| {
                let mut subst = d.substitutions();
                subst.insert("node".to_owned(), (*node).to_owned());
                (*node, subst)
            })
            .collect();
        for p in d.panels().into_iter().filter(|p| is_query_panel(p)) {
            let title = str_of(p, "title").unwrap_or("?").to_owned();
            for t in array(p, "targets") {
                let (Some(expr), r) = (str_of(t, "expr"), str_of(t, "refId").unwrap_or("?")) else {
                    continue;
                };
                let has = out
                    .entry((file.clone(), title.clone(), r.to_owned()))
                    .or_default();
                for (node, subst) in &substs {
                    let mut c = Check::new(String::new(), Ask::Query(substitute(expr, subst)));
                    c.ask(port);
                    if c.last.is_none() {
                        has.insert((*node).to_owned());
                    }
                }
            }
        }
    }
    out
}

/// Every `$node` panel with data for the native incidents node has data for each mixed node
/// and the other way round, except, on the DCGM-only nodes, the panels docs/dashboards.md
/// names native-only (those must have data for the native node and the full-shape one). Asked until it holds or `within` has passed, since
/// nodes started a second apart may cross an event's window at different scrapes.
pub(crate) fn check_mixed_panels(
    port: u16,
    dashboards: &[Dashboard],
    doc: &str,
    within: Duration,
    f: &mut Failures,
) {
    let native_only = match native_only_panels(doc) {
        Ok(n) => n,
        Err(e) => {
            f.add(format!("docs/dashboards.md: {e}"));
            return;
        }
    };
    let mut nodes = vec![INCIDENTS_NODE];
    nodes.extend(MIXED.iter().map(|m| m.node));
    let deadline = Instant::now() + within;
    loop {
        let coverage = panel_coverage(port, dashboards, &nodes);
        let mut problems = Vec::new();
        for (file, title) in &native_only {
            if !coverage.keys().any(|(d, t, _)| d == file && t == title) {
                problems.push(format!(
                    "docs/dashboards.md names {file} «{title}» native-only, but no such $node panel exists"
                ));
            }
        }
        for ((file, title, r), has) in &coverage {
            let exempt = native_only.contains(&(file.clone(), title.clone()));
            let native = has.contains(INCIDENTS_NODE);
            if exempt && !native {
                problems.push(format!(
                    "{file} «{title}» refId {r}: named native-only but has no data for {INCIDENTS_NODE}"
                ));
            }
            for m in MIXED.iter().filter(|m| !(exempt && m.dcgm_only)) {
                if native != has.contains(m.node) {
                    problems.push(format!(
                        "{file} «{title}» refId {r}: data for {} but not for {} ({} with {})",
                        if native { INCIDENTS_NODE } else { m.node },
                        if native { m.node } else { INCIDENTS_NODE },
                        m.args.join(" "),
                        m.counters
                    ));
                }
            }
        }
        if problems.is_empty() || Instant::now() > deadline {
            for p in problems {
                f.add(p);
            }
            say(&format!(
                "mixed fleet: {} $node panel targets compared on {} nodes, {} panels native-only",
                coverage.len(),
                nodes.len(),
                native_only.len()
            ));
            return;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

/// The `$node` variable of every dashboard that has one lists the native incidents node and
/// every mixed node: its query is asked as Grafana asks it (`label_values` through the label
/// values API, `$cluster` matching everything).
pub(crate) fn check_mixed_node_variable(port: u16, dashboards: &[Dashboard], f: &mut Failures) {
    let mut want = vec![INCIDENTS_NODE];
    want.extend(MIXED.iter().map(|m| m.node));
    for d in dashboards {
        let Some(v) = d
            .variables()
            .iter()
            .find(|v| str_of(v, "name") == Some("node"))
        else {
            continue;
        };
        let Some(q) = variable_query(v) else {
            f.add(format!("{}: $node has no query", d.what()));
            continue;
        };
        let q = substitute(&q, &d.substitutions());
        let Some((selector, label)) = parse_label_values(&q) else {
            f.add(format!("{}: $node is not label_values(…): {q}", d.what()));
            continue;
        };
        let path = format!("/api/v1/label/{label}/values");
        let params: Vec<(&str, &str)> = selector
            .as_deref()
            .map(|s| vec![("match[]", s)])
            .unwrap_or_default();
        let listed: BTreeSet<String> = match prom_api(port, &path, &params) {
            Ok(Value::Array(a)) => a
                .iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect(),
            Ok(other) => {
                f.add(format!("{}: $node: {other}", d.what()));
                continue;
            }
            Err(ApiError::Fatal(e) | ApiError::Transient(e)) => {
                f.add(format!("{}: $node: {e}", d.what()));
                continue;
            }
        };
        for node in &want {
            if !listed.contains(*node) {
                f.add(format!(
                    "{}: $node ({q}) does not list {node}: {listed:?}",
                    d.what()
                ));
            }
        }
    }
}
