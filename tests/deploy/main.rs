//! The Helm chart (`deploy/helm/gpu-exporter`) and the plain manifests rendered from it
//! (`deploy/manifests/`), checked with the real tools: `helm lint` / `helm template`,
//! `kubernetes-validate` (strict, Kubernetes 1.30 schemas) and `promtool check rules`.
//!
//! - `helm_lint_passes`: `helm lint --strict` with the default values,
//!   `ci/all-features-values.yaml`, `ci/rules-only-values.yaml` and the two
//!   `examples/operator-mirror*.yaml`.
//! - `core_objects_pass_kubernetes_schemas`: every core object (DaemonSet, Service,
//!   ServiceAccount, ClusterRole(Binding), ConfigMap, Secret, Namespace) of several renders and
//!   of the committed manifests, validated in strict mode; no rendered kind escapes a check.
//! - `monitors_and_rule_are_well_formed`: ServiceMonitor / PodMonitor / PrometheusRule shape:
//!   selectors that match the Service and the pods, `honorLabels`, 15s interval, port `metrics`,
//!   HTTPS and credentials when the exporter demands them.
//! - `rule_groups_pass_promtool`: the PrometheusRule's groups are the top-level rules file's
//!   (runbook base substituted when `prometheusRule.runbookUrlBase` is set) and pass
//!   `promtool check rules`.
//! - `chart_copies_match_top_level_files`: `files/` holds byte-identical copies of
//!   `counters/*.csv`, `dashboards/*.json` and `alerts/gpu-exporter.rules.yaml`, nothing else.
//! - `committed_manifests_match_a_fresh_render`: `deploy/render.sh --check` passes.
//! - `default_daemonset_is_least_privilege`: GPU-node placement, NODE_NAME, the pod-resources
//!   and counters mounts, flags, probes, priority, resources and the security context.
//! - `features_decide_rbac_token_user_and_host_pid`: pod mapping, pod metadata, DRA, process
//!   metrics and an existing service account change exactly what they should.
//! - `tls_and_basic_auth_render_a_web_config`: HTTPS / TCP probes, the generated certificate
//!   (it names the Service the monitors verify), the web-config.yml, bcrypt hashes that verify
//!   the given passwords, and the exporter's own loader (`web_config::WebConfig::parse`)
//!   accepting the rendered web config with the generated certificate.
//! - `helm_test_pod_probes_its_nodes_exporter_through_the_service`: the `helm test` pod is
//!   placed like the exporter pods, runs the exporter image's `probe` against the Service
//!   (internalTrafficPolicy Local) with the node's name, over HTTPS with the chart's CA and
//!   with the scrape credentials when those are on, is not selected by the Service, and is not
//!   rendered where it cannot work (client certificates required) or into deploy/manifests.
//! - `helm_test_check_pod_is_the_daemonset_pod_running_check`: the second test pod is the
//!   DaemonSet's pod spec with `check` in front of its flags and no ports or probes, and its
//!   rendered command passes on the simulated node.
//! - `helm_test_command_passes_on_its_node_and_fails_elsewhere`: the rendered probe command,
//!   run against a local exporter: exit 0 for its node, 1 for another node's series or a
//!   /ready that stays 503, 2 for usage.
//! - `contradictions_fail_rendering`: each contradictory combination of values fails with its
//!   message.
//! - `counters_values_choose_the_csv`: presets, custom CSV and an existing ConfigMap, every CSV
//!   parsed with the exporter's own parser (a broken custom CSV is caught).
//! - `rules_only_renders_the_rule_and_dashboards_and_nothing_of_the_exporter`:
//!   `exporter.enabled: false` renders exactly the PrometheusRule and the dashboard ConfigMaps
//!   (each still behind its own `enabled`), the same objects as the default render, with every
//!   exporter feature on too, and checks none of the exporter's values; the default renders
//!   the DaemonSet and the rest.
//! - `cost_values_render_the_example_price_rules_and_the_team_relabeling`: `cost.prices`
//!   renders the rule group gpu-exporter.prices, the same rules as
//!   alerts/gpu-prices.example.rules.yaml, passing promtool; `cost.teamLabel` copies the
//!   team's pod label into `team` on either monitor; bad prices fail rendering.
//! - `rules_only_notes_say_that_no_exporter_runs`: NOTES.txt in that mode names no DaemonSet,
//!   `helm test` or counters, and says how to turn the exporter on.
//! - `operator_arguments_and_env_start_on_a_simulated_node`: the GPU Operator's dcgm-exporter
//!   env (ClusterPolicy and GPUCluster DaemonSets) and args in `extraEnv` / `arguments`: the
//!   rendered container, run here on a simulated node with the image's counters files and
//!   the ConfigMap volumes laid out as the kubelet would, starts and serves the counters file
//!   they name, and the chart adds no `-f` of its own.
//! - `counters_file_in_arguments_or_env_replaces_the_charts`: the chart drops its `-f` for
//!   exactly the argument lists in which the exporter's parser finds a counters file, and for
//!   DCGM_EXPORTER_COLLECTORS; with a chart counters value too, rendering fails naming both;
//!   no mount hides the image's /etc/dcgm-exporter.
//! - `gpu_operator_modes_place_the_pods_and_scope_rbac`: `gpuOperator.mode` clusterPolicy and
//!   gpuCluster select the operator's node labels; gpuCluster sets KUBERNETES_ENABLE_DRA and
//!   a ClusterRole on ResourceSlices only (pods only for pod labels or UIDs).
//! - `notes_name_the_operator_label_and_the_counters_file`: NOTES.txt under those settings.
//! - `alerts_readme_says_which_preset_each_alert_needs`: the table of alerts/README.md
//!   "Which counters preset each alert needs" is what the chart's rules and presets give
//!   (each expression parsed for what it reads); with `recommended` every alert can fire.
//! - `alert_expressions_parse_into_what_they_need`: that parser on small expressions.
//! - `gpu_operator_doc_values_render_as_this_page_says`: the example values files
//!   (`examples/operator-mirror*.yaml`) are on docs/gpu-operator.md as they are, and their
//!   render has what the page says (the operator's node label, kube-prometheus-stack's
//!   default selector labels, a preset with which every alert fires, the chart's gpuCluster RBAC);
//!   the failure it quotes is the chart's; its helm commands of the chart render.
//! - `migration_doc_values_render_as_it_says`: docs/migration.md's values, step by step.
//! - `doc_commands_run_as_written`: the example commands of the README and every other page
//!   (fenced `sh` blocks, inline `gpu-exporter …` spans) run where they can run here (simulated
//!   nodes, curl, helm template, promtool, amtool, Prometheus); the others are skipped by a
//!   named rule, and a command no rule knows fails (`doc_commands`).
//!
//! One module per subject holds its tests: `schemas`, `monitoring`, `copies`, `daemonset`,
//! `helm_test`, `web`, `values`, `cost`, `rules_only`, `operator`, `presets`, `docs` and
//! `doc_commands`; `checks`, `render` and `tools` hold what several of them use, and
//! `tests/common` what other test crates use too.
//!
//! helm and kubernetes-validate come from `scripts/deploy-tools.sh` (`$HELM`,
//! `$KUBERNETES_VALIDATE`, else PATH, else `target/tools/`); without them these tests fail
//! unless `GPU_EXPORTER_SKIP_HELM=1` says to skip them. promtool comes from Debian's
//! `prometheus` package (`GPU_EXPORTER_SKIP_PROMETHEUS=1` skips the promtool step).
#![cfg(feature = "sim")]
// tests/common drives the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod checks;
#[path = "../common/mod.rs"]
mod common;
mod copies;
mod cost;
mod daemonset;
mod doc_commands;
mod docs;
mod helm_test;
mod monitoring;
mod operator;
mod presets;
mod render;
mod rules_only;
mod schemas;
mod tools;
mod values;
mod web;

use checks::*;
use render::*;
use tools::*;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{Failures, file_name, files_with, say};
use gpu_exporter::catalogue::csv::parse_counters;
use serde_json::{Value, json};

const CHART: &str = "deploy/helm/gpu-exporter";
const ALL_FEATURES: &str = "deploy/helm/gpu-exporter/ci/all-features-values.yaml";
/// `exporter.enabled: false`: the rule and the dashboards only.
const RULES_ONLY: &str = "deploy/helm/gpu-exporter/ci/rules-only-values.yaml";
const CORE_MANIFEST: &str = "deploy/manifests/gpu-exporter.yaml";
const MONITORING_MANIFEST: &str = "deploy/manifests/gpu-exporter-monitoring.yaml";
const RELEASE: &str = "gpu-exporter";
const NAMESPACE: &str = "gpu-exporter";
/// The Kubernetes version the chart is rendered for and the objects are validated against.
const KUBE_VERSION: &str = "1.30.0";
/// The runbook base the shipped rules file uses.
const DEFAULT_RUNBOOK_BASE: &str =
    "https://github.com/gpu-exporter/gpu-exporter/blob/main/alerts/README.md#";
/// Where the chart mounts its counters ConfigMap and points `-f`: beside, not over, the
/// image's own files in /etc/dcgm-exporter.
const COUNTERS_FILE: &str = "/etc/gpu-exporter/counters/default-counters.csv";
const COUNTERS_KEY: &str = "default-counters.csv";
/// Where the chart mounts the TLS Secret.
const TLS_DIR: &str = "/etc/gpu-exporter/tls";

/// The Kubernetes version the GPUCluster renders are validated against: the first with
/// `resource.k8s.io/v1`, whose ResourceClaimTemplate the admin-access claim is by default.
const DRA_KUBE_VERSION: &str = "1.34.0";
/// Kinds that kubernetes-validate has schemas for.
const CORE_KINDS: [&str; 10] = [
    "DaemonSet",
    "Pod",
    "Service",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Namespace",
    "ResourceClaimTemplate",
];
/// Prometheus Operator kinds, checked structurally.
const OPERATOR_KINDS: [&str; 3] = ["ServiceMonitor", "PodMonitor", "PrometheusRule"];

// ---------------------------------------------------------------------------------------------
// Tests
