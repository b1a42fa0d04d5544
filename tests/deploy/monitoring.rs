//! The ServiceMonitor, PodMonitor and PrometheusRule: selectors, endpoints, credentials,
//! and the rule groups, which must be the top-level rules file's and pass promtool.

use super::*;

#[test]
pub(crate) fn monitors_and_rule_are_well_formed() {
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
pub(crate) fn rule_groups_pass_promtool() {
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
