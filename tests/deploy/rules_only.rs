//! `exporter.enabled: false`: the chart renders the shipped PrometheusRule and the dashboard
//! ConfigMaps and nothing of the exporter, for a cluster that still runs dcgm-exporter
//! (docs/migration.md). The default keeps rendering the exporter.

use super::*;

/// `kind name` of every rendered object, sorted.
fn objects(r: &Rendered) -> BTreeSet<String> {
    r.docs
        .iter()
        .map(|d| format!("{} {}", d.kind(), d.name()))
        .collect()
}

/// The PrometheusRule and one ConfigMap per dashboard in the chart's `files/dashboards/`.
fn rule_and_dashboards(rule: bool, dashboards: bool) -> BTreeSet<String> {
    let mut want = BTreeSet::new();
    if rule {
        want.insert(format!("PrometheusRule {RELEASE}"));
    }
    if dashboards {
        let files = files_with(&repo().join(CHART).join("files/dashboards"), &["json"]);
        assert!(!files.is_empty(), "{CHART}/files/dashboards has no *.json");
        for p in files {
            let stem = file_name(&p).trim_end_matches(".json").to_owned();
            want.insert(format!("ConfigMap {RELEASE}-dashboard-{stem}"));
        }
    }
    want
}

/// What the default values render for the exporter, by kind and name.
fn exporter_objects() -> BTreeSet<String> {
    [
        "DaemonSet",
        "Service",
        "ServiceMonitor",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
    ]
    .iter()
    .map(|k| format!("{k} {RELEASE}"))
    .chain([
        format!("ConfigMap {RELEASE}-counters"),
        format!("Pod {RELEASE}-test"),
        format!("Pod {RELEASE}-check"),
    ])
    .collect()
}

fn differences(got: &BTreeSet<String>, want: &BTreeSet<String>) -> String {
    format!(
        "rendered but not wanted: {:?}; wanted but not rendered: {:?}",
        got.difference(want).collect::<Vec<_>>(),
        want.difference(got).collect::<Vec<_>>()
    )
}

#[test]
pub(crate) fn rules_only_renders_the_rule_and_dashboards_and_nothing_of_the_exporter() {
    let Some(helm) =
        helm_or_skip("rules_only_renders_the_rule_and_dashboards_and_nothing_of_the_exporter")
    else {
        return;
    };
    let mut f = Failures::default();
    let off = json!({"exporter": {"enabled": false}});
    let both = rule_and_dashboards(true, true);

    // The default: the exporter and its objects, the rule and the dashboards.
    let default = template(&helm, &[], &[]).unwrap();
    let want_default: BTreeSet<String> = exporter_objects().union(&both).cloned().collect();
    if objects(&default) != want_default {
        f.add(format!(
            "default values: {}",
            differences(&objects(&default), &want_default)
        ));
    }
    // exporter.enabled: true, spelled out, changes nothing.
    let on = template(&helm, &[], &[json!({"exporter": {"enabled": true}})]).unwrap();
    if on
        .docs
        .iter()
        .map(|d| &d.text)
        .ne(default.docs.iter().map(|d| &d.text))
    {
        f.add("exporter.enabled=true renders something other than the default values");
    }

    // Rules only: exactly the rule and the dashboards, the same objects as in the default render.
    let r = template(&helm, &[], std::slice::from_ref(&off)).unwrap();
    if objects(&r) != both {
        f.add(format!(
            "exporter.enabled=false: {}",
            differences(&objects(&r), &both)
        ));
    }
    for d in &r.docs {
        let same = default
            .docs
            .iter()
            .find(|x| x.kind() == d.kind() && x.name() == d.name());
        if same.is_none_or(|x| x.value != d.value) {
            f.add(format!(
                "exporter.enabled=false: {} {} differs from the default render's",
                d.kind(),
                d.name()
            ));
        }
    }
    for kind in [
        "DaemonSet",
        "Service",
        "ServiceMonitor",
        "PodMonitor",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Secret",
        "Pod",
    ] {
        if !r.all(kind).is_empty() {
            f.add(format!("exporter.enabled=false renders a {kind}"));
        }
    }
    if counters_csv(&r).is_some() {
        f.add("exporter.enabled=false renders the counters ConfigMap");
    }

    // The same with every exporter feature on (TLS, basic auth, a PodMonitor, RBAC for every
    // API feature, an existing counters ConfigMap or a custom CSV): none of it is rendered,
    // and the rule and dashboards keep their own values.
    for (what, files, values) in [
        ("ci/rules-only-values.yaml", vec![RULES_ONLY], vec![]),
        (
            "all-features values, exporter.enabled=false",
            vec![ALL_FEATURES],
            vec![off.clone()],
        ),
        (
            "exporter.enabled=\"false\" (a string, as --set-string gives)",
            vec![],
            vec![json!({"exporter": {"enabled": "false"}})],
        ),
    ] {
        match template(&helm, &files, &values) {
            Err(e) => f.add(format!("{what}: {e}")),
            Ok(r) => {
                if objects(&r) != both {
                    f.add(format!("{what}: {}", differences(&objects(&r), &both)));
                }
                if files.is_empty() {
                    continue;
                }
                let rule = r.one("PrometheusRule");
                if rule.value.pointer("/metadata/labels/release")
                    != Some(&json!("kube-prometheus-stack"))
                {
                    f.add(format!(
                        "{what}: prometheusRule.additionalLabels are not on the rule"
                    ));
                }
                for d in r.all("ConfigMap") {
                    if d.value["metadata"]["namespace"] != "monitoring"
                        || d.value.pointer("/metadata/annotations/grafana_folder")
                            != Some(&json!("GPU"))
                    {
                        f.add(format!(
                            "{what}: {} is not in dashboards.namespace with \
                             dashboards.annotations",
                            d.name()
                        ));
                    }
                }
            }
        }
    }

    // Each of the two still follows its own switch.
    for (values, want) in [
        (
            json!({"exporter": {"enabled": false}, "prometheusRule": {"enabled": false}}),
            rule_and_dashboards(false, true),
        ),
        (
            json!({"exporter": {"enabled": false}, "dashboards": {"enabled": false}}),
            rule_and_dashboards(true, false),
        ),
    ] {
        match template(&helm, &[], std::slice::from_ref(&values)) {
            Err(e) => f.add(format!("{values}: {e}")),
            Ok(r) if objects(&r) != want => {
                f.add(format!("{values}: {}", differences(&objects(&r), &want)))
            }
            Ok(_) => {}
        }
    }

    // The exporter's values are not checked when nothing of the exporter is rendered: these
    // fail rendering with the exporter on (contradictions_fail_rendering), not without it.
    for bad in [
        json!({"service": {"enabled": false}}),
        json!({"rbac": {"create": false}}),
        json!({"compatibility": "4.8.4"}),
        json!({"tlsServerConfig": {"clientAuthType": "RequireAndVerifyClientCert"}}),
    ] {
        if template(&helm, &[], std::slice::from_ref(&bad)).is_ok() {
            f.add(format!(
                "{bad} renders with the exporter on; pick a value that fails"
            ));
        }
        match template(&helm, &[], &[bad.clone(), off.clone()]) {
            Ok(r) if objects(&r) == both => {}
            Ok(r) => f.add(format!(
                "{bad} with exporter.enabled=false: {}",
                differences(&objects(&r), &both)
            )),
            Err(e) => f.add(format!(
                "{bad} with exporter.enabled=false fails, but the exporter's values should \
                 not be checked then: {e}"
            )),
        }
    }
    f.finish("exporter.enabled=false");
}

#[test]
pub(crate) fn rules_only_notes_say_that_no_exporter_runs() {
    let Some(helm) = helm_or_skip("rules_only_notes_say_that_no_exporter_runs") else {
        return;
    };
    let mut f = Failures::default();
    let default = notes(&helm, &[]).unwrap();
    for want in [
        "runs as the DaemonSet gpu-exporter/gpu-exporter",
        "helm test gpu-exporter",
        "Counters:",
        "ServiceMonitor PrometheusRule",
    ] {
        if !default.contains(want) {
            f.add(format!("default NOTES lack {want:?}:\n{default}"));
        }
    }
    let off = notes(
        &helm,
        &[json!({"exporter": {"enabled": false}, "basicAuth": {"users": {"p": "pw"}}})],
    )
    .unwrap();
    for want in [
        "exporter.enabled=false",
        "no exporter runs",
        "docs/migration.md",
        "--set exporter.enabled=true",
        "Prometheus Operator objects: PrometheusRule.",
        "Grafana dashboards:",
    ] {
        if !off.contains(want) {
            f.add(format!("rules-only NOTES lack {want:?}:\n{off}"));
        }
    }
    for unwanted in [
        "runs as the DaemonSet",
        "get daemonset",
        "helm test",
        "Counters:",
        "Pod attribution",
        "ServiceMonitor PrometheusRule",
        "serviceMonitor.additionalLabels",
        "WARNING",
    ] {
        if off.contains(unwanted) {
            f.add(format!("rules-only NOTES mention {unwanted:?}:\n{off}"));
        }
    }
    f.finish("NOTES.txt");
}
