//! `cost.*` values: the prices render the rule group `gpu-exporter.prices`, the same rules as
//! alerts/gpu-prices.example.rules.yaml (the file for users without Helm), appended to the
//! shipped groups and passing promtool; `cost.teamLabel` adds the relabeling that copies the
//! team's pod label into `team` on the ServiceMonitor and the PodMonitor; no prices, no group.

use super::*;

const EXAMPLE: &str = "alerts/gpu-prices.example.rules.yaml";

/// The example file's rules, and the `cost` values that say the same: one price per
/// `accelerator_price_dollars_per_hour` rule (its `vector(<price>)`, its labels), and the node
/// label its `node:accelerator_node_pool:info` rule reads (`label_<name>` of kube_node_labels,
/// given here as the Kubernetes label it stands for).
fn example() -> (Value, Value) {
    let text = std::fs::read_to_string(repo().join(EXAMPLE)).unwrap();
    let file: Value = serde_saphyr::from_str(&text).unwrap();
    let group = &file["groups"][0];
    assert_eq!(group["name"], "gpu-exporter.prices", "{EXAMPLE}");
    let mut prices = Vec::new();
    for r in array(&group["rules"]) {
        if r["record"] != "accelerator_price_dollars_per_hour" {
            continue;
        }
        let expr = r["expr"].as_str().unwrap().trim();
        let price: f64 = expr
            .strip_prefix("vector(")
            .and_then(|e| e.strip_suffix(')'))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| {
                panic!("{EXAMPLE}: a price rule's expr is not vector(<number>): {expr}")
            });
        let mut p = json!({"modelName": r["labels"]["modelName"], "dollarsPerHour": price});
        if let Some(pool) = r["labels"]["node_pool"].as_str() {
            p["nodePool"] = json!(pool);
        }
        prices.push(p);
    }
    assert!(prices.len() >= 2, "{EXAMPLE}: fewer than two prices");
    // The example reads kube-state-metrics' label of node.kubernetes.io/instance-type.
    assert!(
        text.contains("label_node_kubernetes_io_instance_type"),
        "{EXAMPLE}: the pool rule no longer reads the instance type"
    );
    let values =
        json!({"cost": {"prices": prices, "nodePoolLabel": "node.kubernetes.io/instance-type"}});
    (group.clone(), values)
}

/// A rule with its expression's whitespace and `vector()` number spelling made comparable.
fn comparable(rule: &Value) -> Value {
    let mut r = rule.clone();
    if let Some(e) = r["expr"].as_str() {
        let mut e: String = e.split_whitespace().collect::<Vec<_>>().join(" ");
        if let Some(n) = e
            .strip_prefix("vector(")
            .and_then(|x| x.strip_suffix(')'))
            .and_then(|n| n.parse::<f64>().ok())
        {
            e = format!("vector({n})");
        }
        r["expr"] = json!(e);
    }
    r
}

#[test]
pub(crate) fn cost_values_render_the_example_price_rules_and_the_team_relabeling() {
    let Some(helm) =
        helm_or_skip("cost_values_render_the_example_price_rules_and_the_team_relabeling")
    else {
        return;
    };
    let mut f = Failures::default();
    let plain: Value = serde_saphyr::from_str(
        &std::fs::read_to_string(repo().join("alerts/gpu-exporter.rules.yaml")).unwrap(),
    )
    .unwrap();
    let shipped = array(&plain["groups"]).len();

    // Default: no price group, no team relabeling.
    let r = template(&helm, &[], &[]).unwrap();
    let groups = r.one("PrometheusRule").value["spec"]["groups"].clone();
    if array(&groups).len() != shipped {
        f.add(format!(
            "default values: {} groups, want the {shipped} shipped ones",
            array(&groups).len()
        ));
    }
    if r.one("ServiceMonitor").text.contains("targetLabel: team") {
        f.add("default values: the ServiceMonitor relabels `team` though cost.teamLabel is team");
    }

    // The example's prices as values: the same rules, after the shipped groups.
    let (want, values) = example();
    let r = template(&helm, &[], std::slice::from_ref(&values)).unwrap();
    let spec = r.one("PrometheusRule").value["spec"].clone();
    let groups = array(&spec["groups"]);
    if groups.len() != shipped + 1 {
        f.add(format!(
            "with prices: {} groups, want {shipped} + gpu-exporter.prices",
            groups.len()
        ));
    } else {
        let got = &groups[shipped];
        let rules =
            |g: &Value| -> Vec<Value> { array(&g["rules"]).iter().map(comparable).collect() };
        if got["name"] != want["name"] || rules(got) != rules(&want) {
            f.add(format!(
                "with the example's prices the chart renders\n{}\nwhile {EXAMPLE} has\n{}",
                serde_json::to_string_pretty(got).unwrap(),
                serde_json::to_string_pretty(&want).unwrap()
            ));
        }
    }

    // Another team label: copied into `team` on either monitor, sanitized as the exporter
    // sanitizes pod labels (and `label_`-prefixed when it is a built-in label's name).
    for (label, source) in [
        ("app.kubernetes.io/team", "app_kubernetes_io_team"),
        ("pod", "label_pod"),
    ] {
        for monitor in ["ServiceMonitor", "PodMonitor"] {
            let mut v = json!({"cost": {"teamLabel": label}});
            if monitor == "PodMonitor" {
                v["serviceMonitor"] = json!({"enabled": false});
                v["podMonitor"] = json!({"enabled": true});
            }
            let r = template(&helm, &[], &[v]).unwrap();
            let eps = &r.one(monitor).value["spec"][if monitor == "PodMonitor" {
                "podMetricsEndpoints"
            } else {
                "endpoints"
            }];
            let relabel = array(&eps[0]["metricRelabelings"])
                .iter()
                .find(|m| m["targetLabel"] == "team")
                .cloned();
            let want = json!({"sourceLabels": [source], "regex": "(.+)", "targetLabel": "team", "action": "replace"});
            if relabel.as_ref() != Some(&want) {
                f.add(format!(
                    "cost.teamLabel {label}: the {monitor}'s relabeling of `team` is {relabel:?}, want {want}"
                ));
            }
        }
    }
    f.finish("cost values");

    let Some(promtool) = promtool_or_skip("cost_values_render_the_example_price_rules") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join("rules.yaml");
    std::fs::write(&path, serde_json::to_string_pretty(&spec).unwrap()).unwrap();
    let out = run_ok(Command::new(&promtool).args(["check", "rules"]).arg(&path))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(out.contains("SUCCESS"), "promtool check rules: {out}");
    let out = run_ok(
        Command::new(&promtool)
            .args(["check", "rules"])
            .arg(repo().join(EXAMPLE)),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.contains("SUCCESS"),
        "promtool check rules {EXAMPLE}: {out}"
    );
}
