//! The Helm chart (`deploy/helm/gpu-exporter`) and the plain manifests rendered from it
//! (`deploy/manifests/`), checked with the real tools: `helm lint` / `helm template`,
//! `kubernetes-validate` (strict, Kubernetes 1.30 schemas) and `promtool check rules`.
//!
//! - `helm_lint_passes`: `helm lint --strict` with the default values and with
//!   `ci/all-features-values.yaml`.
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
//! - `contradictions_fail_rendering`: each contradictory combination of values fails with its
//!   message.
//! - `counters_values_choose_the_csv`: presets, custom CSV and an existing ConfigMap, every CSV
//!   parsed with the exporter's own parser (a broken custom CSV is caught).
//!
//! helm and kubernetes-validate come from `scripts/deploy-tools.sh` (`$HELM`,
//! `$KUBERNETES_VALIDATE`, else PATH, else `target/tools/`); without them these tests fail
//! unless `GPU_EXPORTER_SKIP_HELM=1` says to skip them. promtool comes from Debian's
//! `prometheus` package (`GPU_EXPORTER_SKIP_PROMETHEUS=1` skips the promtool step).
#![cfg(feature = "sim")]
// tests/common drives the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::Failures;
use gpu_exporter::catalogue::csv::parse_counters;
use serde_json::{Value, json};

const CHART: &str = "deploy/helm/gpu-exporter";
const ALL_FEATURES: &str = "deploy/helm/gpu-exporter/ci/all-features-values.yaml";
const CORE_MANIFEST: &str = "deploy/manifests/gpu-exporter.yaml";
const MONITORING_MANIFEST: &str = "deploy/manifests/gpu-exporter-monitoring.yaml";
const RELEASE: &str = "gpu-exporter";
const NAMESPACE: &str = "gpu-exporter";
/// The Kubernetes version the chart is rendered for and the objects are validated against.
const KUBE_VERSION: &str = "1.30.0";
/// The runbook base the shipped rules file uses.
const DEFAULT_RUNBOOK_BASE: &str =
    "https://github.com/gpu-exporter/gpu-exporter/blob/main/alerts/README.md#";
const COUNTERS_FILE: &str = "/etc/dcgm-exporter/default-counters.csv";
const COUNTERS_KEY: &str = "default-counters.csv";
/// Where the chart mounts the TLS Secret.
const TLS_DIR: &str = "/etc/gpu-exporter/tls";

/// Kinds that kubernetes-validate has schemas for.
const CORE_KINDS: [&str; 8] = [
    "DaemonSet",
    "Service",
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Namespace",
];
/// Prometheus Operator kinds, checked structurally.
const OPERATOR_KINDS: [&str; 3] = ["ServiceMonitor", "PodMonitor", "PrometheusRule"];

// ---------------------------------------------------------------------------------------------
// Tests

#[test]
fn helm_lint_passes() {
    let Some(helm) = helm_or_skip("helm_lint_passes") else {
        return;
    };
    let mut f = Failures::default();
    for extra in [vec![], vec!["-f", ALL_FEATURES]] {
        let mut cmd = Command::new(&helm);
        cmd.current_dir(repo())
            .args(["lint", "--strict", CHART])
            .args(&extra);
        if let Err(e) = run_ok(&mut cmd) {
            f.add(e);
        }
    }
    f.finish("helm lint");
}

#[test]
fn core_objects_pass_kubernetes_schemas() {
    let Some(helm) = helm_or_skip("core_objects_pass_kubernetes_schemas") else {
        return;
    };
    let Some(validate) = tool_or_skip(
        "KUBERNETES_VALIDATE",
        "kubernetes-validate",
        "target/tools/kubernetes-validate/kubernetes-validate",
        "core_objects_pass_kubernetes_schemas",
    ) else {
        return;
    };
    let mut f = Failures::default();
    let renders: Vec<(&str, Result<Rendered, String>)> = vec![
        ("default values", template(&helm, &[], &[])),
        ("all-features values", template(&helm, &[ALL_FEATURES], &[])),
        (
            "TLS with a generated certificate, basic auth, no pod mapping",
            template(
                &helm,
                &[],
                &[json!({
                    "tlsServerConfig": {"enabled": true},
                    "basicAuth": {"users": {"prometheus": "pw"}},
                    "kubernetes": {"podMapping": false},
                    "counters": {"custom": "DCGM_FI_DEV_GPU_TEMP, gauge, Temperature.\n"},
                })],
            ),
        ),
        (
            "existing service account, no RBAC, existing counters ConfigMap",
            template(
                &helm,
                &[],
                &[json!({
                    "rbac": {"create": false},
                    "serviceAccount": {"create": false, "name": "gpu-reader"},
                    "counters": {"existingConfigMap": "my-counters"},
                    "service": {"enabled": false},
                    "serviceMonitor": {"enabled": false},
                })],
            ),
        ),
        ("committed manifests", committed_manifests()),
    ];
    let tmp = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut seen = BTreeSet::new();
    for (what, r) in renders {
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                f.add(format!("{what}: {e}"));
                continue;
            }
        };
        for (i, d) in r.docs.iter().enumerate() {
            let kind = d.kind();
            seen.insert(kind.to_owned());
            if OPERATOR_KINDS.contains(&kind) {
                continue;
            }
            if !CORE_KINDS.contains(&kind) {
                f.add(format!(
                    "{what}: {kind} {}: a kind neither validated by kubernetes-validate nor \
                     checked as a Prometheus Operator object; add it to CORE_KINDS or \
                     OPERATOR_KINDS",
                    d.name()
                ));
                continue;
            }
            let path = tmp.path().join(format!("{}-{i}-{kind}.yaml", files.len()));
            std::fs::write(&path, &d.text).unwrap();
            files.push((what, path));
        }
    }
    for kind in CORE_KINDS {
        if !seen.contains(kind) {
            f.add(format!(
                "no render produced a {kind}, so none was validated"
            ));
        }
    }
    // One call for all files; on failure, its output names each file that did not validate.
    let mut cmd = Command::new(&validate);
    cmd.args(["--strict", "--quiet", "-k", KUBE_VERSION])
        .args(files.iter().map(|(_, p)| p));
    match run_ok(&mut cmd) {
        Ok(out) => {
            if !out.trim().is_empty() {
                f.add(format!("kubernetes-validate said:\n{out}"));
            }
        }
        Err(e) => {
            let names: Vec<String> = files
                .iter()
                .map(|(w, p)| format!("{} = {w}", p.display()))
                .collect();
            f.add(format!("{e}\nfiles: {}", names.join("\n  ")));
        }
    }
    f.finish("kubernetes-validate");
}

#[test]
fn monitors_and_rule_are_well_formed() {
    let Some(helm) = helm_or_skip("monitors_and_rule_are_well_formed") else {
        return;
    };
    let mut f = Failures::default();
    let default = template(&helm, &[], &[]).unwrap();
    let ds = default.one("DaemonSet");
    let pod_labels = ds
        .value
        .pointer("/spec/template/metadata/labels")
        .cloned()
        .unwrap_or_default();
    let svc = default.one("Service");
    let sm = default.one("ServiceMonitor");
    if !default.all("PodMonitor").is_empty() {
        f.add("the default values render a PodMonitor next to the ServiceMonitor");
    }
    check_operator_object(&mut f, sm, "ServiceMonitor");
    let sel = sm.value.pointer("/spec/selector/matchLabels");
    if !sel.is_some_and(|s| is_subset(s, &svc.value["metadata"]["labels"])) {
        f.add(format!(
            "ServiceMonitor selector {sel:?} does not match the Service's labels {}",
            svc.value["metadata"]["labels"]
        ));
    }
    if !is_subset(&svc.value["spec"]["selector"], &pod_labels) {
        f.add(format!(
            "Service selector {} does not match the pod labels {pod_labels}",
            svc.value["spec"]["selector"]
        ));
    }
    let svc_port = array(&svc.value["spec"]["ports"])
        .iter()
        .find(|p| p["name"] == "metrics")
        .cloned();
    match svc_port {
        Some(p) if p["targetPort"] == "metrics" && p["port"] == 9400 => {}
        other => f.add(format!(
            "the Service needs port `metrics` 9400 → targetPort `metrics`, has {other:?}"
        )),
    }
    if sm.value.pointer("/spec/namespaceSelector/matchNames/0") != Some(&json!(NAMESPACE)) {
        f.add("ServiceMonitor namespaceSelector should name the release namespace");
    }
    check_endpoint(
        &mut f,
        "ServiceMonitor",
        sm.value.pointer("/spec/endpoints/0"),
        false,
    );
    if array(&sm.value["spec"]["endpoints"]).len() != 1 {
        f.add("ServiceMonitor should have exactly one endpoint");
    }

    // The PodMonitor, with TLS and basic auth (all-features values).
    let all = template(&helm, &[ALL_FEATURES], &[]).unwrap();
    if !all.all("ServiceMonitor").is_empty() {
        f.add("all-features values (podMonitor on, serviceMonitor off) render a ServiceMonitor");
    }
    let pm = all.one("PodMonitor");
    check_operator_object(&mut f, pm, "PodMonitor");
    let all_pod_labels = &all.one("DaemonSet").value["spec"]["template"]["metadata"]["labels"];
    let sel = pm.value.pointer("/spec/selector/matchLabels");
    if !sel.is_some_and(|s| is_subset(s, all_pod_labels)) {
        f.add(format!(
            "PodMonitor selector {sel:?} does not match the pod labels {all_pod_labels}"
        ));
    }
    if pm.value["metadata"]["labels"]["release"] != "kube-prometheus-stack" {
        f.add("podMonitor.additionalLabels are not on the PodMonitor");
    }
    let ep = pm.value.pointer("/spec/podMetricsEndpoints/0");
    check_endpoint(&mut f, "PodMonitor", ep, true);
    if let Some(ep) = ep {
        if ep.pointer("/metricRelabelings/0/action") != Some(&json!("drop")) {
            f.add("podMonitor.metricRelabelings are not on the endpoint");
        }
        // Every Secret the endpoint names is rendered (or is the TLS Secret).
        for ptr in [
            "/basicAuth/username/name",
            "/basicAuth/password/name",
            "/tlsConfig/ca/secret/name",
        ] {
            let name = ep.pointer(ptr).and_then(Value::as_str).unwrap_or("");
            if !all
                .all("Secret")
                .iter()
                .any(|s| s.name() == name && s.value["metadata"]["namespace"] == NAMESPACE)
            {
                f.add(format!(
                    "PodMonitor endpoint {ptr} names Secret {name:?}, which is not rendered"
                ));
            }
        }
    }

    // The PrometheusRule.
    let pr = default.one("PrometheusRule");
    check_operator_object(&mut f, pr, "PrometheusRule");
    let groups = array(&pr.value["spec"]["groups"]);
    if groups.is_empty() {
        f.add("PrometheusRule has no groups");
    }
    for g in groups {
        for r in array(&g["rules"]) {
            if r.get("alert").is_none() && r.get("record").is_none() {
                f.add(format!("rule without alert or record: {r}"));
            }
        }
    }
    f.finish("monitors and rules");
}

#[test]
fn rule_groups_pass_promtool() {
    let Some(helm) = helm_or_skip("rule_groups_pass_promtool") else {
        return;
    };
    let mut f = Failures::default();
    let plain = std::fs::read_to_string(repo().join("alerts/gpu-exporter.rules.yaml")).unwrap();
    let links = plain.matches(DEFAULT_RUNBOOK_BASE).count();
    assert!(
        links > 0,
        "alerts/gpu-exporter.rules.yaml has no runbook links"
    );
    let custom = "https://runbooks.example.com/gpu";
    let tmp = tempfile::tempdir().unwrap();
    let mut rule_files = Vec::new();
    for (base, values) in [
        (DEFAULT_RUNBOOK_BASE.to_owned(), vec![]),
        (
            format!("{custom}#"),
            vec![json!({"prometheusRule": {"runbookUrlBase": custom}})],
        ),
    ] {
        let r = template(&helm, &[], &values).unwrap();
        let spec = r.one("PrometheusRule").value["spec"].clone();
        // The groups are the top-level file's, with the runbook base replaced.
        let want: Value =
            serde_saphyr::from_str(&plain.replace(DEFAULT_RUNBOOK_BASE, &base)).unwrap();
        if spec["groups"] != want["groups"] {
            f.add(format!(
                "runbook base {base}: the PrometheusRule's groups differ from \
                 alerts/gpu-exporter.rules.yaml"
            ));
        }
        let mut urls = Vec::new();
        collect_strings(&spec, "runbook_url", &mut urls);
        if urls.len() != links || !urls.iter().all(|u| u.starts_with(&base)) {
            f.add(format!(
                "runbook base {base}: want {links} runbook_url annotations starting with it, \
                 got {urls:?}"
            ));
        }
        if base != DEFAULT_RUNBOOK_BASE && urls.iter().any(|u| u.contains("github.com")) {
            f.add("runbookUrlBase set, but some runbook_url still point at GitHub");
        }
        let path = tmp.path().join(format!("rules-{}.yaml", rule_files.len()));
        std::fs::write(&path, serde_json::to_string_pretty(&spec).unwrap()).unwrap();
        rule_files.push(path);
    }
    f.finish("PrometheusRule content");

    let Some(promtool) = promtool_or_skip("rule_groups_pass_promtool") else {
        return;
    };
    for p in rule_files {
        let out = run_ok(Command::new(&promtool).args(["check", "rules"]).arg(&p))
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(out.contains("SUCCESS"), "promtool check rules: {out}");
    }
}

#[test]
fn chart_copies_match_top_level_files() {
    let root = repo();
    let files = root.join(CHART).join("files");
    let mut want = BTreeSet::new();
    let mut f = Failures::default();
    let mut sources = Vec::new();
    for (dir, ext) in [("counters", "csv"), ("dashboards", "json")] {
        for p in files_with(&root.join(dir), ext) {
            sources.push(format!("{dir}/{}", file_name(&p)));
        }
    }
    sources.push("alerts/gpu-exporter.rules.yaml".to_owned());
    assert!(
        sources.iter().any(|s| s.ends_with(".json")) && sources.iter().any(|s| s.ends_with(".csv")),
        "no dashboards or counters found at the top of the repository: {sources:?}"
    );
    for s in &sources {
        want.insert(s.clone());
        let src = std::fs::read(root.join(s)).unwrap();
        match std::fs::read(files.join(s)) {
            Ok(copy) if copy == src => {}
            Ok(_) => f.add(format!("{CHART}/files/{s} differs from {s}")),
            Err(e) => f.add(format!("{CHART}/files/{s}: {e}")),
        }
    }
    for p in walk(&files) {
        let rel = p
            .strip_prefix(&files)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !want.contains(&rel) {
            f.add(format!(
                "{CHART}/files/{rel} is not a copy of a top-level file"
            ));
        }
    }
    if !f.0.is_empty() {
        f.add("run deploy/sync.sh (or deploy/render.sh)");
    }
    f.finish("the chart's copies");
}

#[test]
fn committed_manifests_match_a_fresh_render() {
    let Some(helm) = helm_or_skip("committed_manifests_match_a_fresh_render") else {
        return;
    };
    let mut cmd = Command::new("bash");
    cmd.current_dir(repo())
        .args(["deploy/render.sh", "--check"])
        .env("HELM", &helm);
    run_ok(&mut cmd).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn default_daemonset_is_least_privilege() {
    let Some(helm) = helm_or_skip("default_daemonset_is_least_privilege") else {
        return;
    };
    let r = template(&helm, &[], &[]).unwrap();
    let mut f = Failures::default();
    let ds = &r.one("DaemonSet").value;
    let pod = &ds["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    if array(&pod["containers"]).len() != 1 {
        f.add("want exactly one container");
    }

    // Image: the chart's appVersion, which is the crate's version.
    let chart: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(repo().join(CHART).join("Chart.yaml")).unwrap(),
    )
    .unwrap();
    if chart["appVersion"] != env!("CARGO_PKG_VERSION") {
        f.add(format!(
            "Chart.yaml appVersion {} is not Cargo.toml's version {}",
            chart["appVersion"],
            env!("CARGO_PKG_VERSION")
        ));
    }
    let want_image = format!(
        "ghcr.io/gpu-exporter/gpu-exporter:{}",
        env!("CARGO_PKG_VERSION")
    );
    if c["image"] != want_image.as_str() {
        f.add(format!("image {} (want {want_image})", c["image"]));
    }

    // Placement on GPU nodes.
    let expr = pod.pointer(
        "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/0/matchExpressions/0",
    );
    if expr != Some(&json!({"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}))
    {
        f.add(format!(
            "node affinity for nvidia.com/gpu.present: {expr:?}"
        ));
    }
    let tol = json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"});
    if !array(&pod["tolerations"]).contains(&tol) {
        f.add(format!("no toleration {tol} in {}", pod["tolerations"]));
    }
    if pod["priorityClassName"] != "system-node-critical" {
        f.add(format!("priorityClassName {}", pod["priorityClassName"]));
    }

    // Environment.
    let env = env_of(c);
    if env
        .iter()
        .find(|e| e["name"] == "NODE_NAME")
        .and_then(|e| e.pointer("/valueFrom/fieldRef/fieldPath"))
        != Some(&json!("spec.nodeName"))
    {
        f.add("NODE_NAME must come from the downward API (fieldRef spec.nodeName)");
    }
    for (k, v) in [
        ("NVIDIA_VISIBLE_DEVICES", "all"),
        ("NVIDIA_DRIVER_CAPABILITIES", "utility"),
    ] {
        if !env.iter().any(|e| e["name"] == k && e["value"] == v) {
            f.add(format!("env {k}={v} missing"));
        }
    }

    // Flags.
    let args = args_of(c);
    if !has_pair(&args, "-f", COUNTERS_FILE) {
        f.add(format!("args {args:?} lack `-f {COUNTERS_FILE}`"));
    }
    if !has_pair(&args, "-c", "5000") {
        f.add(format!("args {args:?} lack `-c 5000`"));
    }
    for want in [
        "-k",
        "--kubernetes-pod-metadata=true",
        "--kubernetes-process-metrics=false",
        "--pod-resources-kubelet-socket=/var/lib/kubelet/pod-resources/kubelet.sock",
    ] {
        if !args.iter().any(|a| a == want) {
            f.add(format!("args {args:?} lack {want}"));
        }
    }
    if args.iter().any(|a| a.contains("web-config")) {
        f.add("a web config is passed although TLS and basic auth are off");
    }

    // Volumes: pod-resources read-only at the same path; counters as a directory.
    let volumes = array(&pod["volumes"]);
    let mounts = array(&c["volumeMounts"]);
    let kubelet = "/var/lib/kubelet/pod-resources";
    let pr_vol = volumes
        .iter()
        .find(|v| v.pointer("/hostPath/path") == Some(&json!(kubelet)));
    match pr_vol {
        None => f.add(format!("no hostPath volume of {kubelet}")),
        Some(v) => {
            let m = mounts.iter().find(|m| m["name"] == v["name"]);
            if !m.is_some_and(|m| m["mountPath"] == kubelet && m["readOnly"] == true) {
                f.add(format!(
                    "{kubelet} must be mounted readOnly at {kubelet}: {m:?}"
                ));
            }
        }
    }
    let cm = r
        .all("ConfigMap")
        .into_iter()
        .find(|d| d.value.pointer(&format!("/data/{COUNTERS_KEY}")).is_some());
    match cm {
        None => f.add(format!("no ConfigMap with {COUNTERS_KEY}")),
        Some(cm) => check_counters_mount(&mut f, ds, cm.name()),
    }

    // Probes.
    let ports = array(&c["ports"]);
    if !ports
        .iter()
        .any(|p| p["name"] == "metrics" && p["containerPort"] == 9400)
    {
        f.add(format!("no container port `metrics` 9400: {ports:?}"));
    }
    for (probe, path) in [("livenessProbe", "/health"), ("readinessProbe", "/ready")] {
        let p = &c[probe];
        if p.pointer("/httpGet/path") != Some(&json!(path))
            || p.pointer("/httpGet/port") != Some(&json!("metrics"))
            || p.pointer("/httpGet/scheme").is_some_and(|s| s != "HTTP")
        {
            f.add(format!(
                "{probe} should be httpGet {path} on port metrics: {p}"
            ));
        }
        let period = p["periodSeconds"].as_i64().unwrap_or(0);
        let timeout = p["timeoutSeconds"].as_i64().unwrap_or(0);
        if period <= 0 || timeout <= 0 || timeout >= period {
            f.add(format!(
                "{probe}: want a period and a shorter timeout, got {period}s / {timeout}s"
            ));
        }
    }

    // Resources: requests and a memory limit, no CPU limit.
    let res = &c["resources"];
    if res.pointer("/requests/cpu") != Some(&json!("10m"))
        || res.pointer("/requests/memory") != Some(&json!("32Mi"))
        || res.pointer("/limits/memory") != Some(&json!("128Mi"))
        || res.pointer("/limits/cpu").is_some()
    {
        f.add(format!("resources {res}"));
    }

    // Security.
    check_common_security(&mut f, "default", ds);
    let sc = &c["securityContext"];
    if sc["runAsUser"] != 0 || sc["runAsNonRoot"] != false {
        f.add(format!(
            "pod mapping needs uid 0 (the kubelet socket is root's): {sc}"
        ));
    }
    if pod["hostPID"] == true {
        f.add("hostPID must be off unless kubernetes.processMetrics");
    }
    // The default reads pods through the API: token mounted, ClusterRole on pods only.
    if pod["automountServiceAccountToken"] != true {
        f.add("the default (pod metadata on) needs the API token");
    }
    if pod["serviceAccountName"] != r.one("ServiceAccount").name() {
        f.add("the pod does not run as the chart's service account");
    }
    let rules = &r.one("ClusterRole").value["rules"];
    if *rules
        != json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}])
    {
        f.add(format!("default ClusterRole rules: {rules}"));
    }
    check_binding(&mut f, &r);
    f.finish("default DaemonSet");
}

#[test]
fn features_decide_rbac_token_user_and_host_pid() {
    let Some(helm) = helm_or_skip("features_decide_rbac_token_user_and_host_pid") else {
        return;
    };
    let mut f = Failures::default();

    // No API feature: no RBAC, no token, but still uid 0 for the kubelet socket.
    let r = template(&helm, &[], &[json!({"kubernetes": {"podMetadata": false}})]).unwrap();
    let ds = &r.one("DaemonSet").value;
    let pod = &ds["spec"]["template"]["spec"];
    if !r.all("ClusterRole").is_empty() || !r.all("ClusterRoleBinding").is_empty() {
        f.add(
            "podMetadata=false: a ClusterRole(Binding) is rendered although nothing reads the API",
        );
    }
    if pod["automountServiceAccountToken"] != false
        || r.one("ServiceAccount").value["automountServiceAccountToken"] != false
    {
        f.add("podMetadata=false: the API token is still mounted");
    }
    let args = args_of(&pod["containers"][0]);
    if !args.iter().any(|a| a == "--kubernetes-pod-metadata=false") || !args.contains(&"-k".into())
    {
        f.add(format!("podMetadata=false: args {args:?}"));
    }
    if pod.pointer("/containers/0/securityContext/runAsUser") != Some(&json!(0)) {
        f.add("podMetadata=false: pod mapping still needs uid 0");
    }
    check_common_security(&mut f, "podMetadata=false", ds);

    // No pod mapping: non-root, no kubelet mount, no -k, no API.
    let r = template(&helm, &[], &[json!({"kubernetes": {"podMapping": false}})]).unwrap();
    let ds = &r.one("DaemonSet").value;
    let pod = &ds["spec"]["template"]["spec"];
    let sc = &pod["containers"][0]["securityContext"];
    if sc["runAsUser"] != 65532 || sc["runAsGroup"] != 65532 || sc["runAsNonRoot"] != true {
        f.add(format!(
            "podMapping=false: want uid/gid 65532, runAsNonRoot: {sc}"
        ));
    }
    let args = args_of(&pod["containers"][0]);
    if args
        .iter()
        .any(|a| a == "-k" || a.starts_with("--kubernetes"))
    {
        f.add(format!("podMapping=false: Kubernetes flags in {args:?}"));
    }
    if array(&pod["volumes"])
        .iter()
        .any(|v| v.get("hostPath").is_some())
    {
        f.add("podMapping=false: a hostPath volume is still mounted");
    }
    if !r.all("ClusterRole").is_empty() || pod["automountServiceAccountToken"] != false {
        f.add("podMapping=false: RBAC or the token without any API use");
    }
    if pod["hostPID"] == true {
        f.add("podMapping=false: hostPID");
    }
    check_common_security(&mut f, "podMapping=false", ds);

    // Per-process attribution: hostPID, and nothing else changes in the security context.
    let r = template(
        &helm,
        &[],
        &[json!({"kubernetes": {"processMetrics": true}})],
    )
    .unwrap();
    let ds = &r.one("DaemonSet").value;
    let pod = &ds["spec"]["template"]["spec"];
    if pod["hostPID"] != true {
        f.add("processMetrics=true: hostPID must be true");
    }
    if pod["hostNetwork"] == true {
        f.add("processMetrics=true: hostNetwork");
    }
    if !args_of(&pod["containers"][0])
        .iter()
        .any(|a| a == "--kubernetes-process-metrics=true")
    {
        f.add("processMetrics=true: --kubernetes-process-metrics=true missing");
    }
    check_common_security(&mut f, "processMetrics=true", ds);

    // DRA: ResourceSlices added to the pods rule.
    let r = template(&helm, &[], &[json!({"kubernetesDRA": {"enabled": true}})]).unwrap();
    let rules = &r.one("ClusterRole").value["rules"];
    let want = json!([
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["get", "list", "watch"]},
    ]);
    if *rules != want {
        f.add(format!("DRA ClusterRole rules: {rules}"));
    }
    if !args_of(&r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0])
        .iter()
        .any(|a| a == "--kubernetes-enable-dra")
    {
        f.add("DRA: --kubernetes-enable-dra missing");
    }
    check_binding(&mut f, &r);

    // Pod labels with an allowlist, pod UID, virtual GPUs.
    let r = template(
        &helm,
        &[],
        &[json!({"kubernetes": {
            "enablePodLabels": true, "enablePodUID": true, "virtualGPUs": true,
            "podLabelAllowlistRegex": ["app", "team"],
        }})],
    )
    .unwrap();
    let args = args_of(&r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0]);
    for want in [
        "--kubernetes-enable-pod-labels",
        "--kubernetes-pod-label-allowlist-regex=app,team",
        "--kubernetes-enable-pod-uid",
        "--kubernetes-virtual-gpus",
    ] {
        if !args.iter().any(|a| a == want) {
            f.add(format!("pod labels/UID/vGPU: {want} missing from {args:?}"));
        }
    }

    // An existing service account with its own grants: no RBAC, token mounted, its name used.
    let r = template(
        &helm,
        &[],
        &[json!({
            "rbac": {"create": false},
            "serviceAccount": {"create": false, "name": "gpu-reader"},
        })],
    )
    .unwrap();
    let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
    if !r.all("ClusterRole").is_empty() || !r.all("ServiceAccount").is_empty() {
        f.add("existing service account: the chart still creates RBAC or an account");
    }
    if pod["serviceAccountName"] != "gpu-reader" || pod["automountServiceAccountToken"] != true {
        f.add(format!(
            "existing service account: serviceAccountName {} automount {}",
            pod["serviceAccountName"], pod["automountServiceAccountToken"]
        ));
    }

    // Values that replace the chart's security defaults key by key.
    let r = template(
        &helm,
        &[],
        &[json!({"securityContext": {"runAsUser": 1234}, "podSecurityContext": {"fsGroup": 7}})],
    )
    .unwrap();
    let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
    let sc = &pod["containers"][0]["securityContext"];
    if sc["runAsUser"] != 1234
        || sc["readOnlyRootFilesystem"] != true
        || pod["securityContext"]["fsGroup"] != 7
    {
        f.add(format!(
            "securityContext values are not merged key by key: {sc}, pod {}",
            pod["securityContext"]
        ));
    }
    f.finish("feature switches");
}

#[test]
fn tls_and_basic_auth_render_a_web_config() {
    let Some(helm) = helm_or_skip("tls_and_basic_auth_render_a_web_config") else {
        return;
    };
    let mut f = Failures::default();
    let users = [
        ("prometheus", "scrape-secret"),
        ("admin", "correct horse battery staple"),
    ];
    let r = template(
        &helm,
        &[],
        &[json!({
            "tlsServerConfig": {"enabled": true},
            "basicAuth": {"users": {users[0].0: users[0].1, users[1].0: users[1].1}},
        })],
    )
    .unwrap();
    let ds = &r.one("DaemonSet").value;
    let pod = &ds["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    for (probe, path) in [("livenessProbe", "/health"), ("readinessProbe", "/ready")] {
        let p = &c[probe];
        if p.pointer("/httpGet/scheme") != Some(&json!("HTTPS"))
            || p.pointer("/httpGet/path") != Some(&json!(path))
        {
            f.add(format!(
                "TLS: {probe} should be an HTTPS GET of {path}: {p}"
            ));
        }
    }
    if ds
        .pointer("/spec/template/metadata/annotations/checksum~1web-config")
        .is_none()
    {
        f.add("TLS: no checksum/web-config annotation to roll the pods when it changes");
    }

    // The generated certificate Secret, mounted where the web config says.
    let tls_dir = tempfile::tempdir().unwrap();
    let tls = r
        .all("Secret")
        .into_iter()
        .find(|s| s.value["type"] == "kubernetes.io/tls");
    match tls {
        None => f.add("TLS without existingSecret: no kubernetes.io/tls Secret generated"),
        Some(s) => {
            for (key, pem) in [
                ("tls.crt", "-----BEGIN CERTIFICATE-----"),
                ("ca.crt", "-----BEGIN CERTIFICATE-----"),
                ("tls.key", "-----BEGIN RSA PRIVATE KEY-----"),
            ] {
                let text = s.value["data"][key]
                    .as_str()
                    .and_then(base64_decode)
                    .map(|b| String::from_utf8_lossy(&b).into_owned())
                    .unwrap_or_default();
                if !text.starts_with(pem) {
                    f.add(format!("TLS Secret {key} is not a base64 PEM ({pem})"));
                }
                // As the volume would hold it, for the exporter's own loader below.
                std::fs::write(tls_dir.path().join(key), &text).unwrap();
            }
            if mount_of_secret(pod, s.name()).as_deref() != Some(TLS_DIR) {
                f.add(format!("TLS Secret not mounted at {TLS_DIR}"));
            }
            // The server certificate names the Service, which the monitors verify.
            let cert = std::fs::read_to_string(tls_dir.path().join("tls.crt")).unwrap();
            let sans = pem_body(&cert)
                .and_then(|der| gpu_exporter::serve::web_config::subject_alt_names(&der))
                .unwrap_or_default();
            let svc = format!("{RELEASE}.{NAMESPACE}.svc");
            if !sans.contains(&svc) || ep_server_name(&r) != Some(svc.clone()) {
                f.add(format!(
                    "the certificate's names {sans:?} and the ServiceMonitor's serverName {:?} \
                     should both be {svc}",
                    ep_server_name(&r)
                ));
            }
        }
    }

    // The web config: path from the flag, Secret mounted there, exporter-toolkit keys.
    let args = args_of(c);
    let flag_path = args
        .iter()
        .position(|a| a == "--web-config-file")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_default();
    let (dir, file) = flag_path.rsplit_once('/').unwrap_or(("", ""));
    let web_secret = r
        .all("Secret")
        .into_iter()
        .find(|s| s.value.pointer(&format!("/stringData/{file}")).is_some());
    let Some(web_secret) = web_secret else {
        f.add(format!(
            "--web-config-file {flag_path:?}: no Secret with the key {file:?}"
        ));
        f.finish("TLS and basic auth");
        return;
    };
    if mount_of_secret(pod, web_secret.name()).as_deref() != Some(dir) {
        f.add(format!("web config Secret not mounted at {dir}"));
    }
    let web: Value =
        serde_saphyr::from_str(web_secret.value["stringData"][file].as_str().unwrap()).unwrap();
    // The exporter itself loads this web config with the generated certificate (the TLS
    // volume's path swapped for a directory holding the Secret's files).
    let text = web_secret.value["stringData"][file]
        .as_str()
        .unwrap()
        .replace(TLS_DIR, &tls_dir.path().to_string_lossy());
    match gpu_exporter::serve::web_config::WebConfig::parse(&tls_dir.path().join(file), &text) {
        Ok(w) => {
            if w.tls.is_none() || w.basic_auth.as_ref().map(|b| b.user_count()) != Some(users.len())
            {
                f.add(format!("the exporter loaded the web config as {w:?}"));
            }
        }
        Err(e) => f.add(format!(
            "the exporter rejects the rendered web config: {e:?}"
        )),
    }
    let want_tls = json!({
        "cert_file": "/etc/gpu-exporter/tls/tls.crt",
        "key_file": "/etc/gpu-exporter/tls/tls.key",
        "min_version": "TLS12",
    });
    if web["tls_server_config"] != want_tls {
        f.add(format!("tls_server_config {}", web["tls_server_config"]));
    }
    let hashes = web["basic_auth_users"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    if hashes.len() != users.len() {
        f.add(format!("basic_auth_users {hashes:?}"));
    }
    for (user, password) in users {
        let Some(hash) = hashes.get(user).and_then(Value::as_str) else {
            f.add(format!("basic_auth_users lacks {user}"));
            continue;
        };
        if !is_bcrypt(hash) {
            f.add(format!("{user}: {hash:?} is not a bcrypt hash"));
            continue;
        }
        match bcrypt::verify(password, hash) {
            Ok(true) => {}
            other => f.add(format!(
                "{user}: the hash does not verify the given password ({other:?})"
            )),
        }
        if bcrypt::verify("not-the-password", hash).unwrap_or(true) {
            f.add(format!("{user}: the hash verifies a wrong password"));
        }
    }
    if web_secret.text.contains(users[1].1) {
        f.add("a plaintext password is in the web config Secret");
    }
    // The ServiceMonitor scrapes over HTTPS with the first user's credentials.
    let sm = r.one("ServiceMonitor");
    let ep = &sm.value["spec"]["endpoints"][0];
    if ep["scheme"] != "https" {
        f.add(format!("TLS: ServiceMonitor scheme {}", ep["scheme"]));
    }
    let auth_name = ep
        .pointer("/basicAuth/password/name")
        .and_then(Value::as_str);
    let auth = r
        .all("Secret")
        .into_iter()
        .find(|s| Some(s.name()) == auth_name);
    match auth {
        Some(s)
            if s.value["stringData"]["username"] == "admin"
                && s.value["stringData"]["password"] == "correct horse battery staple" => {}
        other => f.add(format!(
            "ServiceMonitor basicAuth should name a Secret with the first user's credentials: {:?}",
            other.map(|s| &s.value["stringData"])
        )),
    }

    // Client certificates required: TCP probes, client CA from its own Secret.
    let r = template(
        &helm,
        &[],
        &[json!({"tlsServerConfig": {
            "enabled": true, "existingSecret": "exporter-tls",
            "clientAuthType": "RequireAndVerifyClientCert", "clientCASecret": "client-ca",
            "minVersion": "TLS13",
        }})],
    )
    .unwrap();
    let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    for probe in ["livenessProbe", "readinessProbe"] {
        if c[probe].pointer("/tcpSocket/port") != Some(&json!("metrics"))
            || c[probe].get("httpGet").is_some()
        {
            f.add(format!(
                "client certificates required: {probe} should be a tcpSocket check: {}",
                c[probe]
            ));
        }
    }
    if r.all("Secret")
        .iter()
        .any(|s| s.value["type"] == "kubernetes.io/tls")
    {
        f.add("existingSecret given, but a certificate was generated anyway");
    }
    if mount_of_secret(pod, "exporter-tls").as_deref() != Some("/etc/gpu-exporter/tls")
        || mount_of_secret(pod, "client-ca").as_deref() != Some("/etc/gpu-exporter/client-ca")
    {
        f.add("existingSecret / clientCASecret not mounted");
    }
    let web_text = r
        .all("Secret")
        .into_iter()
        .find_map(|s| s.value.pointer("/stringData/web-config.yml").cloned())
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let web: Value = serde_saphyr::from_str(&web_text).unwrap_or_default();
    let want_tls = json!({
        "cert_file": "/etc/gpu-exporter/tls/tls.crt",
        "key_file": "/etc/gpu-exporter/tls/tls.key",
        "client_auth_type": "RequireAndVerifyClientCert",
        "client_ca_file": "/etc/gpu-exporter/client-ca/ca.crt",
        "min_version": "TLS13",
    });
    if web["tls_server_config"] != want_tls || web.get("basic_auth_users").is_some() {
        f.add(format!("client certificates: web config {web}"));
    }

    // A client auth type that does not demand a certificate keeps the HTTPS probes.
    let r = template(
        &helm,
        &[],
        &[json!({"tlsServerConfig": {"enabled": true, "clientAuthType": "RequestClientCert"}})],
    )
    .unwrap();
    let c = &r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0];
    if c.pointer("/readinessProbe/httpGet/scheme") != Some(&json!("HTTPS")) {
        f.add("RequestClientCert: probes should stay HTTPS GETs");
    }
    f.finish("TLS and basic auth");
}

#[test]
fn contradictions_fail_rendering() {
    let Some(helm) = helm_or_skip("contradictions_fail_rendering") else {
        return;
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"serviceMonitor": {"enabled": true}, "podMonitor": {"enabled": true}}),
            "serviceMonitor.enabled and podMonitor.enabled are both true",
        ),
        (
            json!({"service": {"enabled": false}}),
            "serviceMonitor.enabled needs service.enabled",
        ),
        (
            json!({"counters": {"preset": "everything"}}),
            "counters.preset \"everything\" is not a preset",
        ),
        (
            json!({"counters": {"custom": "DCGM_FI_DEV_GPU_TEMP, gauge, t\n", "existingConfigMap": "x"}}),
            "counters.custom and counters.existingConfigMap are both set",
        ),
        (
            json!({"kubernetes": {"podMetadata": false, "enablePodLabels": true}}),
            "kubernetes.enablePodLabels read(s) pods through the Kubernetes API",
        ),
        (
            json!({"kubernetes": {"podMetadata": false, "enablePodUID": true}}),
            "kubernetes.enablePodUID read(s) pods through the Kubernetes API",
        ),
        (
            json!({"kubernetes": {"podMetadata": false}, "kubernetesDRA": {"enabled": true}}),
            "kubernetesDRA.enabled read(s) pods through the Kubernetes API",
        ),
        (
            json!({"kubernetes": {"podMapping": false, "processMetrics": true}}),
            "kubernetes.processMetrics need(s) kubernetes.podMapping=true",
        ),
        (
            json!({"kubernetes": {"podLabelAllowlistRegex": ["app"]}}),
            "kubernetes.podLabelAllowlistRegex is set but kubernetes.enablePodLabels=false",
        ),
        (
            json!({"rbac": {"create": false}}),
            "rbac.create=false, but the exporter reads pods through the Kubernetes API",
        ),
        (
            json!({"serviceAccount": {"automountToken": false}}),
            "serviceAccount.automountToken=false, but the exporter reads pods",
        ),
        (
            json!({"tlsServerConfig": {"clientAuthType": "RequireAndVerifyClientCert"}}),
            "tlsServerConfig.clientAuthType is set but tlsServerConfig.enabled=false",
        ),
        (
            json!({"tlsServerConfig": {"enabled": true, "clientAuthType": "RequireAndVerifyClientCert"}}),
            "no client CA was given",
        ),
        (
            json!({"tlsServerConfig": {"enabled": true, "clientAuthType": "Sometimes"}}),
            "tlsServerConfig.clientAuthType \"Sometimes\"",
        ),
        (
            json!({"tlsServerConfig": {"enabled": true, "minVersion": "SSL3"}}),
            "tlsServerConfig.minVersion \"SSL3\"",
        ),
        (
            json!({"basicAuth": {"users": {"a:b": "pw"}}}),
            "holds a colon",
        ),
        (
            json!({"collectIntervalMs": 50}),
            "collectIntervalMs 50: must be at least 100",
        ),
    ];
    let mut f = Failures::default();
    for (values, message) in &cases {
        match template(&helm, &[], std::slice::from_ref(values)) {
            Ok(_) => f.add(format!(
                "{values}: rendered, want a failure saying {message:?}"
            )),
            Err(e) if e.contains(message) => {}
            Err(e) => f.add(format!("{values}: failed, but not with {message:?}:\n{e}")),
        }
    }
    // (`helm lint` is no help here: in lint mode Helm logs `fail` as INFO and goes on.)
    f.finish("contradictions");
}

#[test]
fn counters_values_choose_the_csv() {
    let Some(helm) = helm_or_skip("counters_values_choose_the_csv") else {
        return;
    };
    let mut f = Failures::default();
    let root = repo();
    for (preset, file) in [
        ("default", "counters/default-counters.csv"),
        ("recommended", "counters/recommended.csv"),
    ] {
        let want = std::fs::read_to_string(root.join(file)).unwrap();
        let r = template(&helm, &[], &[json!({"counters": {"preset": preset}})]).unwrap();
        match counters_csv(&r) {
            None => f.add(format!("preset {preset}: no counters ConfigMap")),
            Some(csv) => {
                if csv != want {
                    f.add(format!(
                        "preset {preset}: the ConfigMap's CSV is not {file}"
                    ));
                }
                match parse_counters(&format!("preset {preset}"), &csv) {
                    Ok(set) if set.metrics().count() > 0 => {}
                    Ok(_) => f.add(format!("preset {preset}: no metric rows")),
                    Err(e) => f.add(format!("preset {preset}: {e}")),
                }
            }
        }
    }
    // The all-features values pick the recommended preset.
    let r = template(&helm, &[ALL_FEATURES], &[]).unwrap();
    if counters_csv(&r).as_deref()
        != Some(
            std::fs::read_to_string(root.join("counters/recommended.csv"))
                .unwrap()
                .as_str(),
        )
    {
        f.add("all-features: the counters are not recommended.csv");
    }

    // Custom CSV replaces the preset, verbatim.
    let custom = "# two counters\nDCGM_FI_DEV_GPU_TEMP, gauge, Temperature (in C).\n\
                  DCGM_FI_DEV_POWER_USAGE, gauge, \"Power draw, in W.\"\n";
    let r = template(
        &helm,
        &[],
        &[json!({"counters": {"custom": custom, "preset": "recommended"}})],
    )
    .unwrap();
    match counters_csv(&r) {
        Some(csv) if csv == custom => match parse_counters("counters.custom", &csv) {
            Ok(set) => {
                let names: Vec<&str> = set.rows.iter().map(|r| r.name.as_str()).collect();
                if names != ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"] {
                    f.add(format!("custom CSV parsed to {names:?}"));
                }
            }
            Err(e) => f.add(format!("custom CSV: {e}")),
        },
        other => f.add(format!("custom CSV not stored verbatim: {other:?}")),
    }
    // A broken custom CSV renders (Helm cannot parse it), and the exporter's parser, run on
    // what was rendered, catches it with the line.
    let broken = "DCGM_FI_DEV_GPU_TEMP, gauge, ok\nDCGM_FI_NO_SUCH_FIELD, gauge, nope\n";
    let r = template(&helm, &[], &[json!({"counters": {"custom": broken}})]).unwrap();
    match counters_csv(&r).map(|csv| parse_counters("counters.custom", &csv)) {
        Some(Err(e)) if e.to_string().starts_with("counters.custom:2:") => {}
        other => f.add(format!(
            "a broken custom CSV should fail the exporter's parser at line 2: {:?}",
            other.map(|r| r.map(|s| s.rows.len()).map_err(|e| e.to_string()))
        )),
    }

    // An existing ConfigMap: none created, the DaemonSet mounts it as a directory.
    let r = template(
        &helm,
        &[],
        &[json!({"counters": {"existingConfigMap": "my-counters"}})],
    )
    .unwrap();
    if counters_csv(&r).is_some() {
        f.add("existingConfigMap: the chart still renders a counters ConfigMap");
    }
    check_counters_mount(&mut f, &r.one("DaemonSet").value, "my-counters");
    f.finish("counters");
}

// ---------------------------------------------------------------------------------------------
// Checks shared by several tests

/// apiVersion and kind of a Prometheus Operator object, and its namespace.
fn check_operator_object(f: &mut Failures, d: &Doc, kind: &str) {
    if d.value["apiVersion"] != "monitoring.coreos.com/v1" || d.kind() != kind {
        f.add(format!(
            "{kind}: apiVersion {} kind {}",
            d.value["apiVersion"],
            d.kind()
        ));
    }
    if d.value["metadata"]["namespace"] != NAMESPACE {
        f.add(format!("{kind}: not in the release namespace"));
    }
}

/// One scrape endpoint of a ServiceMonitor / PodMonitor.
fn check_endpoint(f: &mut Failures, what: &str, ep: Option<&Value>, secured: bool) {
    let Some(ep) = ep else {
        f.add(format!("{what}: no endpoint"));
        return;
    };
    for (k, want) in [
        ("port", json!("metrics")),
        ("path", json!("/metrics")),
        ("interval", json!("15s")),
        ("scrapeTimeout", json!("10s")),
        ("honorLabels", json!(true)),
    ] {
        if ep[k] != want {
            f.add(format!("{what}: endpoint {k} is {}, want {want}", ep[k]));
        }
    }
    if secured {
        if ep["scheme"] != "https"
            || ep.pointer("/tlsConfig/ca/secret/key") != Some(&json!("ca.crt"))
        {
            f.add(format!(
                "{what}: TLS on, but the endpoint does not scrape HTTPS with the CA: {ep}"
            ));
        }
        if ep.pointer("/basicAuth/username/key") != Some(&json!("username")) {
            f.add(format!(
                "{what}: basic auth on, but the endpoint has no credentials: {ep}"
            ));
        }
    } else if ep.get("scheme").is_some() || ep.get("basicAuth").is_some() {
        f.add(format!(
            "{what}: HTTPS or credentials although TLS and basic auth are off: {ep}"
        ));
    }
}

/// What every rendering of the DaemonSet must keep: no privilege, no capability, a read-only
/// root, RuntimeDefault seccomp, no host network.
fn check_common_security(f: &mut Failures, what: &str, ds: &Value) {
    let pod = &ds["spec"]["template"]["spec"];
    if pod["hostNetwork"] == true {
        f.add(format!("{what}: hostNetwork"));
    }
    for c in array(&pod["containers"]) {
        let sc = &c["securityContext"];
        if sc["privileged"] == true {
            f.add(format!("{what}: privileged container"));
        }
        if sc["allowPrivilegeEscalation"] != false {
            f.add(format!("{what}: allowPrivilegeEscalation is not false"));
        }
        if sc.pointer("/capabilities/drop") != Some(&json!(["ALL"]))
            || sc.pointer("/capabilities/add").is_some()
        {
            f.add(format!(
                "{what}: capabilities must drop ALL and add none: {sc}"
            ));
        }
        if sc["readOnlyRootFilesystem"] != true {
            f.add(format!("{what}: readOnlyRootFilesystem is not true"));
        }
        let seccomp = sc
            .pointer("/seccompProfile/type")
            .or_else(|| pod.pointer("/securityContext/seccompProfile/type"));
        if seccomp != Some(&json!("RuntimeDefault")) {
            f.add(format!("{what}: seccompProfile is not RuntimeDefault"));
        }
    }
}

/// The counters ConfigMap `name` mounted as a whole directory at /etc/dcgm-exporter.
fn check_counters_mount(f: &mut Failures, ds: &Value, name: &str) {
    let pod = &ds["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let vol = array(&pod["volumes"])
        .iter()
        .find(|v| v.pointer("/configMap/name") == Some(&json!(name)));
    let Some(vol) = vol else {
        f.add(format!("no volume of ConfigMap {name}"));
        return;
    };
    if vol.pointer("/configMap/items").is_some() {
        f.add(format!("the counters volume lists items: {vol}"));
    }
    let mounts: Vec<&Value> = array(&c["volumeMounts"])
        .iter()
        .filter(|m| m["name"] == vol["name"])
        .collect();
    let dir = COUNTERS_FILE.rsplit_once('/').unwrap().0;
    if mounts.len() != 1
        || mounts[0]["mountPath"] != dir
        || mounts[0].get("subPath").is_some()
        || mounts[0]["readOnly"] != true
    {
        f.add(format!(
            "ConfigMap {name} must be mounted once, read-only, as the directory {dir} \
             (no subPath, which never sees updates): {mounts:?}"
        ));
    }
}

/// The ClusterRoleBinding ties the ClusterRole to the pod's service account.
fn check_binding(f: &mut Failures, r: &Rendered) {
    let b = &r.one("ClusterRoleBinding").value;
    let sa = r.one("DaemonSet").value["spec"]["template"]["spec"]["serviceAccountName"].clone();
    if b["roleRef"]["name"] != r.one("ClusterRole").name()
        || b.pointer("/subjects/0/name") != Some(&sa)
        || b.pointer("/subjects/0/namespace") != Some(&json!(NAMESPACE))
    {
        f.add(format!(
            "ClusterRoleBinding does not bind the role to {sa}: {b}"
        ));
    }
}

fn counters_csv(r: &Rendered) -> Option<String> {
    r.all("ConfigMap")
        .into_iter()
        .find_map(|d| d.value["data"][COUNTERS_KEY].as_str().map(str::to_owned))
}

/// The mount path of the volume that holds Secret `name`.
fn mount_of_secret(pod: &Value, name: &str) -> Option<String> {
    let vol = array(&pod["volumes"])
        .iter()
        .find(|v| v.pointer("/secret/secretName") == Some(&json!(name)))?;
    array(&pod["containers"][0]["volumeMounts"])
        .iter()
        .find(|m| m["name"] == vol["name"] && m["readOnly"] == true)
        .and_then(|m| m["mountPath"].as_str().map(str::to_owned))
}

fn args_of(c: &Value) -> Vec<String> {
    array(&c["args"])
        .iter()
        .map(|a| {
            a.as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| a.to_string())
        })
        .collect()
}

fn env_of(c: &Value) -> Vec<Value> {
    array(&c["env"]).to_vec()
}

fn has_pair(args: &[String], flag: &str, value: &str) -> bool {
    args.windows(2).any(|w| w[0] == flag && w[1] == value)
}

/// Every key/value of `sub` is in `sup` (both JSON objects).
fn is_subset(sub: &Value, sup: &Value) -> bool {
    match (sub.as_object(), sup.as_object()) {
        (Some(a), Some(b)) => !a.is_empty() && a.iter().all(|(k, v)| b.get(k) == Some(v)),
        _ => false,
    }
}

fn collect_strings(v: &Value, key: &str, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == key
                    && let Some(s) = x.as_str()
                {
                    out.push(s.to_owned());
                }
                collect_strings(x, key, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_strings(x, key, out)),
        _ => {}
    }
}

fn array(v: &Value) -> &[Value] {
    v.as_array().map(Vec::as_slice).unwrap_or_default()
}

/// `$2a$`/`$2b$`/`$2y$`, a two-digit cost, 22 characters of salt and 31 of hash.
fn is_bcrypt(h: &str) -> bool {
    let b = h.as_bytes();
    h.len() == 60
        && (h.starts_with("$2a$") || h.starts_with("$2b$") || h.starts_with("$2y$"))
        && b[4].is_ascii_digit()
        && b[5].is_ascii_digit()
        && b[6] == b'$'
        && b[7..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'.' || *c == b'/')
}

/// The DER bytes of the first PEM block in `pem`.
fn pem_body(pem: &str) -> Option<Vec<u8>> {
    let b64: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    base64_decode(&b64)
}

/// The serverName the ServiceMonitor's endpoint verifies.
fn ep_server_name(r: &Rendered) -> Option<String> {
    r.one("ServiceMonitor")
        .value
        .pointer("/spec/endpoints/0/tlsConfig/serverName")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Standard base64 (with padding), as Kubernetes Secret data.
fn base64_decode(s: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .ok()
}

// ---------------------------------------------------------------------------------------------
// Rendering

/// One YAML document of a render: its text (as helm wrote it) and its tree.
struct Doc {
    text: String,
    value: Value,
}

impl Doc {
    fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or("")
    }

    fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or("")
    }
}

struct Rendered {
    docs: Vec<Doc>,
}

impl Rendered {
    fn all(&self, kind: &str) -> Vec<&Doc> {
        self.docs.iter().filter(|d| d.kind() == kind).collect()
    }

    /// The only object of `kind`; panics with the kinds present otherwise.
    fn one(&self, kind: &str) -> &Doc {
        let all = self.all(kind);
        assert!(
            all.len() == 1,
            "want exactly one {kind}, rendered {}: {:?}",
            all.len(),
            self.docs
                .iter()
                .map(|d| format!("{} {}", d.kind(), d.name()))
                .collect::<Vec<_>>()
        );
        all[0]
    }
}

/// Splits a multi-document YAML stream at its `---` lines and parses each non-empty part.
fn parse_docs(text: &str, origin: &str) -> Result<Rendered, String> {
    let mut docs = Vec::new();
    let mut cur = String::new();
    let mut flush = |cur: &mut String| -> Result<(), String> {
        let body = std::mem::take(cur);
        let meaningful = body
            .lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        if meaningful {
            let value: Value = serde_saphyr::from_str(&body)
                .map_err(|e| format!("{origin}: a document does not parse: {e}\n{body}"))?;
            if !value.is_null() {
                docs.push(Doc { text: body, value });
            }
        }
        Ok(())
    };
    for line in text.lines() {
        if line.trim_end() == "---" {
            flush(&mut cur)?;
        } else {
            cur.push_str(line);
            cur.push('\n');
        }
    }
    flush(&mut cur)?;
    Ok(Rendered { docs })
}

fn values_file(v: &Value) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    // JSON is YAML.
    f.write_all(serde_json::to_string_pretty(v).unwrap().as_bytes())
        .unwrap();
    f.flush().unwrap();
    f
}

/// `helm template` of the chart (release and namespace gpu-exporter) with the given values
/// files (paths relative to the repository) and then the given values, in that order.
fn template(helm: &Path, files: &[&str], values: &[Value]) -> Result<Rendered, String> {
    let tmp: Vec<tempfile::NamedTempFile> = values.iter().map(values_file).collect();
    let mut cmd = Command::new(helm);
    cmd.current_dir(repo()).args([
        "template",
        RELEASE,
        CHART,
        "--namespace",
        NAMESPACE,
        "--kube-version",
        KUBE_VERSION,
    ]);
    for f in files {
        cmd.args(["-f", f]);
    }
    for t in &tmp {
        cmd.arg("-f").arg(t.path());
    }
    let out = run_ok(&mut cmd)?;
    parse_docs(&out, "helm template")
}

fn committed_manifests() -> Result<Rendered, String> {
    let mut docs = Vec::new();
    for m in [CORE_MANIFEST, MONITORING_MANIFEST] {
        let text = std::fs::read_to_string(repo().join(m)).map_err(|e| format!("{m}: {e}"))?;
        docs.extend(parse_docs(&text, m)?.docs);
    }
    Ok(Rendered { docs })
}

// ---------------------------------------------------------------------------------------------
// Tools, files and failures

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `cmd`; its stdout on success, else an error with the command and both outputs.
fn run_ok(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out: Output = cmd
        .output()
        .map_err(|e| format!("{shown}: cannot run: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{shown} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            stdout.chars().take(4000).collect::<String>()
        ))
    }
}

/// A tool: `$env`, else `name` in PATH, else `cached` under the repository (where
/// scripts/deploy-tools.sh puts it).
fn find_tool(env: &str, name: &str, cached: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let in_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    in_path.or_else(|| Some(repo().join(cached)).filter(|p| p.is_file()))
}

/// A line on stderr that the test harness does not capture.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn tool_or_skip(env: &str, name: &str, cached: &str, test: &str) -> Option<PathBuf> {
    if let Some(p) = find_tool(env, name, cached) {
        return Some(p);
    }
    if std::env::var("GPU_EXPORTER_SKIP_HELM").as_deref() == Ok("1") {
        say(&format!(
            "\n*** SKIPPED {test}: {name} not found and GPU_EXPORTER_SKIP_HELM=1 ***\n"
        ));
        return None;
    }
    panic!(
        "{test}: {name} not found (${env}, PATH, {cached}): run \
         `eval \"$(bash scripts/deploy-tools.sh)\"` (scripts/test.sh does), or set \
         GPU_EXPORTER_SKIP_HELM=1 to skip this test"
    );
}

fn helm_or_skip(test: &str) -> Option<PathBuf> {
    tool_or_skip("HELM", "helm", "target/tools/helm/bin/helm", test)
}

fn promtool_or_skip(test: &str) -> Option<PathBuf> {
    if let Some(p) = find_tool("PROMTOOL", "promtool", "target/tools/promtool") {
        return Some(p);
    }
    if std::env::var("GPU_EXPORTER_SKIP_PROMETHEUS").as_deref() == Ok("1") {
        say(&format!(
            "\n*** SKIPPED promtool step of {test}: promtool not in PATH and \
             GPU_EXPORTER_SKIP_PROMETHEUS=1 ***\n"
        ));
        return None;
    }
    panic!(
        "{test}: promtool not found in PATH: install Debian's `prometheus` package \
         (scripts/test.sh does), or set GPU_EXPORTER_SKIP_PROMETHEUS=1 to skip it"
    );
}

/// Files in `dir` with extension `ext`, sorted.
fn files_with(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// Every file under `dir`, recursively.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}
