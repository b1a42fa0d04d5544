//! The observability artefacts proved against the exporter's real output: the Grafana
//! dashboards (`dashboards/*.json`), the alert and recording rules
//! (`alerts/gpu-exporter.rules.yaml`) with their generated PrometheusRule twin
//! (`alerts/gpu-exporter.prometheusrule.yaml`), the promtool unit tests (`alerts/tests/*.yaml`)
//! and the runbook (`alerts/README.md`).
//!
//! - `dashboards_are_import_ready`: every dashboard imports into any Grafana (uid, title,
//!   schema version, a `datasource` variable and no hard-coded datasource, well-formed panels
//!   and targets, only known `$variables`).
//! - `fleet_dashboard_reads_recording_rules_only`: every series the fleet overview
//!   (`dashboards/gpu-fleet.json`) selects, in panels and variables, is a recording rule
//!   (`fleet`); that it has data is checked with the others against Prometheus below.
//! - `rules_are_complete`: severities, annotations, runbook links that resolve to a heading of
//!   the runbook, unique names; the PrometheusRule file is exactly the one generated from the
//!   plain file (`UPDATE_GOLDEN=1` rewrites it).
//! - `promtool_checks_and_tests_rules`: `promtool check rules` and `promtool test rules`, and
//!   every alert has a unit test where it fires and one where it does not.
//! - `prometheus_evaluates_every_panel_and_rule`: a real Prometheus scrapes exporters running
//!   `--simulate` (plus one whose driver never loads and one target that is down), evaluates
//!   the rules without errors, and every rule expression, panel query and `label_values`
//!   variable returns data through its HTTP API; the panels that chart profiling fields also
//!   on the A100 MIG node alone (`$node` set to it), where DCGM serves them. The same
//!   Prometheus scrapes a mixed fleet (`mixed`: the incidents node under each `dcgm-*`
//!   profile), whose alerts and panels must match the native node's but for what the docs
//!   name native-only; and remote-writes the raw series into VictoriaMetrics, where vmalert
//!   evaluates the same rules (`vmalert`): each must load, evaluate, record data, and the
//!   same alerts must fire there.
//! - `migration_queries_return_data_for_every_profile`: each compatibility profile started as
//!   the dcgm-exporter Helm chart and the GPU Operator start dcgm-exporter, scraped as the GPU
//!   Operator's ServiceMonitor scrapes (`honor_labels: false`), answers the queries of
//!   dashboards 12239 and 23382 and of the operator's recording rules (`migration`).
//! - `helpers_parse_what_the_checks_rely_on`: the helpers above (variable references, heading
//!   anchors, `label_values`, the PrometheusRule text) on small inputs. HTTP to Prometheus goes
//!   through the `ureq` crate.
//!
//! The tests are here; what they use is split by subject: `files` (where the artefacts are),
//! `dashboards`, `fleet` (the fleet overview), `rules`, `promtool`, `prometheus` (the real server and the exporters it
//! scrapes), `placement` (which alerts fire where), `mixed` (the mixed fleet) and `vmalert`
//! (VictoriaMetrics and vmalert). Helpers shared with the other test
//! crates are in `tests/common`.
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

mod alertmanager;
mod autoscaling;
#[path = "../common/mod.rs"]
mod common;
mod cost;
mod dashboards;
mod files;
mod fleet;
mod inhibit;
mod migration;
mod mixed;
mod placement;
mod prometheus;
mod promtool;
mod rules;
mod vmalert;

use cost::*;
use dashboards::*;
use files::*;
use fleet::*;
use migration::*;
use mixed::*;
use placement::*;
use prometheus::*;
use promtool::*;
use rules::*;
use vmalert::*;

use std::collections::{BTreeMap, BTreeSet};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, Failures, file_name, files_with, say};
use serde_json::Value;

/// The built-in scenario with a cause for every shipped alert.
const INCIDENTS_SCENARIO: &str = "incidents";

/// The simulated nodes Prometheus scrapes (built-in scenarios).
/// One B200 whose NVLink link 4 lets errors through FEC (its node: `placement::NVLINK5_NODE`).
const NVLINK5_SCENARIO: &str = "tests/fixtures/scenarios/nvlink5.toml";
/// The A100 in MIG mode beside a T4 (`a100-mig-t4`), profiling from the simulated libdcgm
/// (its node: `dashboards::A100_MIG_NODE`).
const A100_MIG_SCENARIO: &str = "a100-mig-t4";
const SIMULATED: [&str; 4] = [
    "h100-mig",
    INCIDENTS_SCENARIO,
    NVLINK5_SCENARIO,
    A100_MIG_SCENARIO,
];

/// A node whose NVIDIA driver never loads during a run (`gpu_exporter_nvml_up 0`).
const NO_DRIVER_SCENARIO: &str = "tests/fixtures/scenarios/no-driver.toml";

const RULES_FILE: &str = "gpu-exporter.rules.yaml";
/// The example prices (alerts/), loaded beside the rules wherever they are evaluated here.
const PRICES_FILE: &str = "gpu-prices.example.rules.yaml";
/// A node to price (`cost`): whole, MIG, time-sliced, unallocated and barely used GPUs, with
/// a `team` label on its pods (its node: `cost::COST_NODE`).
const COST_SCENARIO: &str = "tests/fixtures/scenarios/cost.toml";
/// Two idle H100s and no pods: GpuNodeIdle's case (also `alertmanager`).
const IDLE_SCENARIO: &str = "tests/fixtures/scenarios/idle.toml";
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
fn fleet_dashboard_reads_recording_rules_only() {
    let l = layout();
    check_fleet_dashboard(&l.dashboards, &l.alerts);
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
fn migration_queries_return_data_for_every_profile() {
    check_migration();
}

#[test]
fn prometheus_evaluates_every_panel_and_rule() {
    let l = layout();
    check_prometheus(&l.dashboards, &l.alerts);
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
        selected_series(
            r#"sum by (cluster) (a:b:c{x=~"y{z}"}) / on (cluster) group_left () rate(up[5m]) > bool 1e-12"#
        ),
        ["a:b:c", "up"].iter().map(|s| (*s).to_owned()).collect()
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
    // Profiling panels restricted to the A100 MIG node; threshold queries and non-profiling
    // ones not.
    let target = |e: &str| serde_json::json!({"refId": "A", "expr": e});
    let mut d = Dashboard {
        file: "t.json".into(),
        json: serde_json::json!({
            "title": "t",
            "templating": {"list": [{"name": "node", "type": "query"}]},
            "panels": [{"id": 1, "title": "p", "type": "timeseries", "targets": [
                target(r#"DCGM_FI_PROF_SM_ACTIVE{Hostname=~"$node"}"#),
                target(r#"DCGM_FI_PROF_PIPE_FP64_ACTIVE{Hostname=~"$node"}"#),
                target(r#"DCGM_FI_PROF_DRAM_ACTIVE{Hostname=~"$node"} < 0.05"#),
                target(r#"DCGM_FI_DEV_GPU_UTIL{Hostname=~"$node"}"#),
                target(r#"avg(max by (UUID) (DCGM_FI_PROF_GR_ENGINE_ACTIVE{Hostname=~"$node"}))"#),
                target(r#"accelerator_temperature_celsius{Hostname=~"$node"}"#),
            ]}],
        }),
    };
    let a100 = a100_profiling_targets(&d).unwrap();
    assert_eq!(
        a100.iter().map(|(_, q)| q.as_str()).collect::<Vec<_>>(),
        [
            format!(r#"DCGM_FI_PROF_SM_ACTIVE{{Hostname=~"{A100_MIG_NODE}"}}"#),
            format!(r#"DCGM_FI_PROF_PIPE_FP64_ACTIVE{{Hostname=~"{A100_MIG_NODE}"}}"#),
            format!(
                r#"avg(max by (UUID) (DCGM_FI_PROF_GR_ENGINE_ACTIVE{{Hostname=~"{A100_MIG_NODE}"}}))"#
            ),
        ]
    );
    d.json["templating"]["list"] = serde_json::json!([]);
    assert!(a100_profiling_targets(&d).unwrap_err().contains("no $node"));
    let text = "# c\ngroups:\n  - name: g\n\n    rules: []   \n";
    assert_eq!(
        prometheus_rule_text(text).unwrap(),
        format!("{PROMETHEUS_RULE_HEADER}  groups:\n    - name: g\n\n      rules: []\n")
    );
}
