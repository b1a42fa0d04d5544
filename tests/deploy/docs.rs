//! docs/gpu-operator.md and docs/migration.md, step by step against the rendered chart: the
//! values files and snippets they show are rendered, and what each step says the chart
//! creates is checked on the render; the shipped example values files are shown as they are,
//! and every `helm install` / `helm template` of the chart on docs/gpu-operator.md renders
//! (migration.md's name a values file the reader writes; its snippets are rendered instead).

use super::*;

const GPU_OPERATOR_DOC: &str = "docs/gpu-operator.md";
const MIGRATION_DOC: &str = "docs/migration.md";
/// kube-prometheus-stack's release name in the examples (its default selectors:
/// `release: <release name>`).
const KPS_RELEASE: &str = "kube-prometheus-stack";

/// The fenced ```yaml blocks of a Markdown text, each with its indentation removed.
fn yaml_blocks(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        let Some(indent) = l.strip_suffix("```yaml").filter(|i| i.trim().is_empty()) else {
            continue;
        };
        let mut block = String::new();
        for l in lines.by_ref() {
            if l.trim() == "```" {
                break;
            }
            block.push_str(l.strip_prefix(indent).unwrap_or(l.trim_start()));
            block.push('\n');
        }
        out.push(block);
    }
    out
}

/// The shell commands of the fenced ```sh blocks, continuation lines joined.
fn sh_commands(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut cur = String::new();
    for l in text.lines() {
        let t = l.trim();
        if t == "```sh" {
            in_sh = true;
            continue;
        }
        if in_sh && t == "```" {
            in_sh = false;
            continue;
        }
        if !in_sh || t.starts_with('#') {
            continue;
        }
        match t.strip_suffix('\\') {
            Some(part) => {
                cur.push_str(part);
                cur.push(' ');
            }
            None => {
                cur.push_str(t);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    out
}

/// `helm install|upgrade|template <release> deploy/helm/gpu-exporter …` on a page, run as
/// `helm template` with the same `-f` and `--set` (the values files a clone has): each must
/// render; a command that does not is added to `f`.
fn check_helm_commands(helm: &Path, f: &mut Failures, doc: &str, text: &str) {
    let mut seen = 0;
    for cmd in sh_commands(text) {
        let words: Vec<&str> = cmd.split_whitespace().collect();
        let is_chart = words.len() > 3
            && words[0] == "helm"
            && ["install", "upgrade", "template"].contains(&words[1])
            && words[3] == CHART;
        if !is_chart {
            continue;
        }
        let mut args: Vec<String> = vec!["template".into(), RELEASE.into(), CHART.into()];
        let mut i = 4;
        let mut runnable = true;
        while i < words.len() {
            match words[i] {
                ">" => break,
                "-f" | "--values" => {
                    let file = words.get(i + 1).copied().unwrap_or_default();
                    if !repo().join(file).is_file() {
                        // A file the page has the reader write (migration-values.yaml).
                        runnable = false;
                    }
                    args.extend(["-f".into(), file.into()]);
                    i += 2;
                }
                "--set" | "--set-string" | "-n" | "--namespace" => {
                    args.extend([
                        words[i].into(),
                        words.get(i + 1).copied().unwrap_or_default().into(),
                    ]);
                    i += 2;
                }
                _ => i += 1,
            }
        }
        if !runnable {
            continue;
        }
        seen += 1;
        let mut c = Command::new(helm);
        c.current_dir(repo())
            .args(&args)
            .args(["--kube-version", KUBE_VERSION]);
        if let Err(e) = run_ok(&mut c) {
            f.add(format!("{doc}: `{cmd}` does not render: {e}"));
        }
    }
    if seen == 0 {
        f.add(format!(
            "{doc}: no helm command of the chart found to render"
        ));
    }
}

/// The shipped GPU Operator values files: they are on docs/gpu-operator.md as they are, and
/// the chart rendered with each gives what the page says: the operator's node label, the
/// labels kube-prometheus-stack selects the PrometheusRule, the ServiceMonitor and the
/// dashboards by, a preset with which every shipped alert can fire; for GPUCluster the DRA
/// variable, the ResourceSlices-only ClusterRole and the admin-access GPU claim. The failure the page quotes is the
/// chart's. Every helm command of the chart on the page renders.
#[test]
pub(crate) fn gpu_operator_doc_values_render_as_this_page_says() {
    let Some(helm) = helm_or_skip("gpu_operator_doc_values_render_as_this_page_says") else {
        return;
    };
    let mut f = Failures::default();
    let doc = std::fs::read_to_string(repo().join(GPU_OPERATOR_DOC)).unwrap();
    let blocks = yaml_blocks(&doc);
    let chart = repo().join(CHART);
    let recommended =
        std::fs::read_to_string(chart.join("files/counters/recommended.csv")).unwrap();
    let dashboards = std::fs::read_dir(chart.join("files/dashboards"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "json")
        })
        .count();
    let presets = super::presets::derived_table();
    for (file, mode, label) in [
        (
            "deploy/helm/gpu-exporter/examples/operator-mirror.yaml",
            "clusterPolicy",
            "nvidia.com/gpu.deploy.dcgm-exporter",
        ),
        (
            "deploy/helm/gpu-exporter/examples/operator-mirror-gpucluster.yaml",
            "gpuCluster",
            "nvidia.com/gpu.deploy.dcgm-exporter-dra",
        ),
    ] {
        let text = std::fs::read_to_string(repo().join(file)).unwrap();
        if !blocks.contains(&text) {
            f.add(format!("{GPU_OPERATOR_DOC} does not show {file} as it is"));
        }
        let values: Value = serde_saphyr::from_str(&text).unwrap();
        if values["gpuOperator"]["mode"] != mode {
            f.add(format!("{file}: gpuOperator.mode is not {mode}"));
        }
        let r = match template(&helm, &[file], &[]) {
            Ok(r) => r,
            Err(e) => {
                f.add(format!("{file}: {e}"));
                continue;
            }
        };
        let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
        if pod["nodeSelector"] != json!({label: "true"}) || pod.get("affinity").is_some() {
            f.add(format!(
                "{file}: the pods do not select {label}=true alone: {} / {}",
                pod["nodeSelector"], pod["affinity"]
            ));
        }
        for kind in ["PrometheusRule", "ServiceMonitor"] {
            let labels = &r.one(kind).value["metadata"]["labels"];
            if labels["release"] != KPS_RELEASE {
                f.add(format!(
                    "{file}: the {kind} is not labelled release: {KPS_RELEASE}: {labels}"
                ));
            }
        }
        let boards: Vec<&Doc> = r
            .all("ConfigMap")
            .into_iter()
            .filter(|d| {
                d.value["data"]
                    .as_object()
                    .is_some_and(|m| m.keys().any(|k| k.ends_with(".json")))
            })
            .collect();
        if boards.len() != dashboards
            || boards
                .iter()
                .any(|d| d.value["metadata"]["labels"]["grafana_dashboard"] != "1")
        {
            f.add(format!(
                "{file}: want {dashboards} dashboard ConfigMaps labelled grafana_dashboard: \"1\", got {}",
                boards.len()
            ));
        }
        if counters_csv(&r).as_deref() != Some(recommended.as_str()) {
            f.add(format!(
                "{file}: the counters ConfigMap is not recommended.csv"
            ));
        }
        let preset = values["counters"]["preset"].as_str().unwrap_or("default");
        for (alert, needs, _) in &presets {
            if needs != "default" && needs != preset {
                f.add(format!(
                    "{file}: {alert} needs the {needs} preset, the file has {preset}"
                ));
            }
        }
        let c = &pod["containers"][0];
        let args = args_of(c);
        let dra = env_of(c)
            .iter()
            .any(|e| e["name"] == "KUBERNETES_ENABLE_DRA" && e["value"] == "true");
        let rules = &r.one("ClusterRole").value["rules"];
        if mode == "gpuCluster" {
            if !dra || !args.contains(&"--kubernetes-pod-metadata=false".to_owned()) {
                f.add(format!(
                    "{file}: no KUBERNETES_ENABLE_DRA=true or pod watch on: {args:?}"
                ));
            }
            let want = json!([{"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["get", "list", "watch"]}]);
            if *rules != want {
                f.add(format!("{file}: ClusterRole rules {rules}"));
            }
            // "its admin-access GPU claim": the pods claim the node's GPUs as the operator's do.
            let claim = r.all("ResourceClaimTemplate");
            let claimed = pod["resourceClaims"][0]["resourceClaimTemplateName"].as_str();
            if claim.len() != 1 || claimed != Some(claim[0].name()) {
                f.add(format!(
                    "{file}: {} ResourceClaimTemplates, the pods claim {claimed:?}",
                    claim.len()
                ));
            }
        } else if dra
            || *rules
                != json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}])
        {
            f.add(format!("{file}: DRA {dra}, ClusterRole rules {rules}"));
        }
        if !has_pair(&args, "-f", COUNTERS_FILE) {
            f.add(format!(
                "{file}: the container does not read the chart's counters: {args:?}"
            ));
        }

        // The operator's DCGM_EXPORTER_COLLECTORS copied in: with the file's preset, the
        // failure the page quotes; with the preset left at default, that file is served.
        let collectors = json!({"extraEnv": [{"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcp-metrics-included.csv"}]});
        match template(&helm, &[file], std::slice::from_ref(&collectors)) {
            Ok(_) => f.add(format!(
                "{file} with the operator's DCGM_EXPORTER_COLLECTORS renders"
            )),
            Err(e) => {
                let line = e
                    .lines()
                    .find(|l| l.starts_with("Error: execution error"))
                    .unwrap_or_default();
                // The position in the message is the first template that includes the check.
                let message = line.split_once("): ").map_or(line, |(_, m)| m);
                if message.is_empty() || !doc.contains(message) {
                    f.add(format!(
                        "{file}: {GPU_OPERATOR_DOC} does not quote the failure as the chart gives it:\n{line}"
                    ));
                }
            }
        }
        let mut kept = collectors.clone();
        kept["counters"] = json!({"preset": "default"});
        match template(&helm, &[file], &[kept]) {
            Ok(r) => {
                if has_pair(&ds_args_of(&r), "-f", COUNTERS_FILE) {
                    f.add(format!(
                        "{file} with DCGM_EXPORTER_COLLECTORS: the chart's -f is still there"
                    ));
                }
            }
            Err(e) => f.add(format!(
                "{file} with DCGM_EXPORTER_COLLECTORS and preset default: {e}"
            )),
        }
    }
    check_helm_commands(&helm, &mut f, GPU_OPERATOR_DOC, &doc);
    f.finish(GPU_OPERATOR_DOC);
}

fn ds_args_of(r: &Rendered) -> Vec<String> {
    args_of(&r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0])
}

/// docs/migration.md's values, step by step: step 1 renders the rule and the dashboards only;
/// step 2 adds the DaemonSet on the nodes labelled `nvidia.com/gpu.deploy.dcgm-exporter=false`
/// (on top of the default affinity) with its profile, families and counters; step 3 without
/// the nodeSelector runs on every GPU node, then `gpuOperator.mode=clusterPolicy` selects the
/// operator's label.
#[test]
pub(crate) fn migration_doc_values_render_as_it_says() {
    let Some(helm) = helm_or_skip("migration_doc_values_render_as_it_says") else {
        return;
    };
    let mut f = Failures::default();
    let doc = std::fs::read_to_string(repo().join(MIGRATION_DOC)).unwrap();
    let blocks = yaml_blocks(&doc);
    let find = |marker: &str| -> Value {
        let b = blocks
            .iter()
            .find(|b| b.contains(marker))
            .unwrap_or_else(|| panic!("{MIGRATION_DOC}: no yaml block with {marker:?}"));
        serde_saphyr::from_str(b).unwrap()
    };
    let step1 = find("# migration-values.yaml");
    let step2 = find("exporter:\n  enabled: true");
    let default_affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]}]}]}}});

    // Step 1: the rule and the dashboards, nothing of the exporter.
    let r = template(&helm, &[], std::slice::from_ref(&step1)).unwrap();
    for d in &r.docs {
        let dashboard =
            d.kind() == "ConfigMap" && d.value["metadata"]["labels"]["grafana_dashboard"] == "1";
        if d.kind() != "PrometheusRule" && !dashboard {
            f.add(format!("step 1 renders {} {}", d.kind(), d.name()));
        }
        if dashboard && d.value["metadata"]["namespace"] != "monitoring" {
            f.add(format!("step 1: dashboard {} not in monitoring", d.name()));
        }
    }
    if r.one("PrometheusRule").value["metadata"]["labels"]["release"] != KPS_RELEASE {
        f.add("step 1: the PrometheusRule lacks release: kube-prometheus-stack");
    }

    // Step 2: the file edited (helm merges the second values file over the first).
    let r = template(&helm, &[], &[step1.clone(), step2.clone()]).unwrap();
    let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
    if pod["nodeSelector"] != json!({"nvidia.com/gpu.deploy.dcgm-exporter": "false"})
        || pod["affinity"] != default_affinity
    {
        f.add(format!(
            "step 2: the pods should select the label false on top of the default affinity: {} / {}",
            pod["nodeSelector"], pod["affinity"]
        ));
    }
    let args = args_of(&pod["containers"][0]);
    for want in [
        "--compatibility=dcgm-4.8.4",
        "--include-families=DCGM_*,gpu_*",
    ] {
        if !args.iter().any(|a| a == want) {
            f.add(format!("step 2: {want} missing from {args:?}"));
        }
    }
    let recommended =
        std::fs::read_to_string(repo().join(CHART).join("files/counters/recommended.csv")).unwrap();
    if counters_csv(&r).as_deref() != Some(recommended.as_str()) {
        f.add("step 2: the counters are not recommended.csv");
    }
    if r.one("ServiceMonitor").value["metadata"]["labels"]["release"] != KPS_RELEASE {
        f.add("step 2: the ServiceMonitor lacks release: kube-prometheus-stack");
    }

    // Step 3, item 1: the nodeSelector removed: every GPU node.
    let no_selector = json!({"nodeSelector": null});
    let r = template(
        &helm,
        &[],
        &[step1.clone(), step2.clone(), no_selector.clone()],
    )
    .unwrap();
    let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
    if pod.get("nodeSelector").is_some() || pod["affinity"] != default_affinity {
        f.add(format!(
            "step 3: without the nodeSelector the pods should go where the default affinity says: {} / {}",
            pod["nodeSelector"], pod["affinity"]
        ));
    }
    // Item 4: the operator's label, selected by gpuOperator.mode=clusterPolicy.
    let r = template(
        &helm,
        &[],
        &[
            step1,
            step2,
            no_selector,
            json!({"gpuOperator": {"mode": "clusterPolicy"}}),
        ],
    )
    .unwrap();
    let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
    if pod["nodeSelector"] != json!({"nvidia.com/gpu.deploy.dcgm-exporter": "true"})
        || pod.get("affinity").is_some()
    {
        f.add(format!(
            "step 3, item 4: the pods should select nvidia.com/gpu.deploy.dcgm-exporter=true: {} / {}",
            pod["nodeSelector"], pod["affinity"]
        ));
    }
    f.finish(MIGRATION_DOC);
}
