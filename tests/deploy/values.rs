//! Values that contradict each other fail rendering with their message; the counters
//! values (presets, custom CSV, existing ConfigMap) choose a CSV the exporter parses.

use super::*;

#[test]
pub(crate) fn contradictions_fail_rendering() {
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
            json!({"compatibility": "4.8.4"}),
            "compatibility \"4.8.4\" is not a profile",
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
            json!({"kubernetes": {"podMapping": false}, "health": {"events": true}}),
            "health.events need(s) kubernetes.podMapping=true",
        ),
        (
            json!({"kubernetes": {"podLabelAllowlistRegex": ["app"]}}),
            "kubernetes.podLabelAllowlistRegex is set but kubernetes.enablePodLabels=false",
        ),
        (
            json!({"rbac": {"create": false}}),
            "rbac.create=false, but the exporter uses the Kubernetes API",
        ),
        (
            json!({"serviceAccount": {"automountToken": false}}),
            "serviceAccount.automountToken=false, but the exporter uses the Kubernetes API",
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
        (
            json!({"dcgm": {"mode": "standalone"}}),
            "dcgm.mode \"standalone\" is not a mode",
        ),
        (
            json!({"dcgm": {"mode": "remote"}}),
            "dcgm.mode=remote needs dcgm.hostengine",
        ),
        (
            json!({"dcgm": {"mode": "off", "hostengine": "nvidia-dcgm:5555"}}),
            "dcgm.hostengine is set but dcgm.mode=off",
        ),
        (
            json!({"cost": {"prices": [{"modelName": "NVIDIA L4"}]}}),
            "cost.prices[0] (NVIDIA L4): dollarsPerHour <nil> is not a number",
        ),
        (
            json!({"cost": {"prices": [{"modelName": "NVIDIA L4", "dollarsPerHour": "cheap"}]}}),
            "cost.prices[0] (NVIDIA L4): dollarsPerHour cheap is not a number",
        ),
        (
            json!({"cost": {"prices": [{"dollarsPerHour": 1}]}}),
            "cost.prices[0] has no modelName",
        ),
        (
            json!({"cost": {"prices": [{"modelName": "NVIDIA L4", "dollarsPerHour": -1}]}}),
            "cost.prices[0] (NVIDIA L4): dollarsPerHour -1 is negative",
        ),
        (
            json!({"cost": {"prices": [{"modelName": "NVIDIA L4", "dollarsPerHour": 1, "pool": "x"}]}}),
            "cost.prices[0] (NVIDIA L4): unknown key \"pool\"",
        ),
        (
            json!({"cost": {"prices": [{"modelName": "NVIDIA L4", "dollarsPerHour": 1, "nodePool": "g6"}]}}),
            "cost.prices[0] (NVIDIA L4) has nodePool \"g6\" but cost.nodePoolLabel is empty",
        ),
        (
            json!({"exporter": {"enabled": false}, "prometheusRule": {"enabled": false}, "dashboards": {"enabled": false}}),
            "exporter.enabled, prometheusRule.enabled and dashboards.enabled are all false",
        ),
        (
            json!({"gpuOperator": {"mode": "clusterpolicy"}}),
            "gpuOperator.mode \"clusterpolicy\" is not a mode",
        ),
        (
            json!({"gpuOperator": {"mode": "gpuCluster", "resourceClaimAPIVersion": "resource.k8s.io/v1alpha3"}}),
            "gpuOperator.resourceClaimAPIVersion \"resource.k8s.io/v1alpha3\": use resource.k8s.io/v1",
        ),
        (
            json!({"gpuOperator": {"mode": "gpuCluster"}, "kubernetes": {"podMapping": false}}),
            "gpuOperator.mode=gpuCluster attributes DRA-claimed devices",
        ),
        (
            json!({"kubernetes": {"podMapping": false}, "extraEnv": [{"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"}]}),
            "extraEnv DCGM_EXPORTER_KUBERNETES=true turns pod attribution (-k) on, but kubernetes.podMapping=false",
        ),
        (
            json!({"kubernetes": {"podMapping": false}, "arguments": ["-c", "1000", "--kubernetes"]}),
            "arguments[2] \"--kubernetes\" turns pod attribution (-k) on, but kubernetes.podMapping=false",
        ),
        (
            json!({"arguments": "-f /x.csv"}),
            "arguments must be a list of strings",
        ),
        (
            json!({"extraEnv": {"RUST_LOG": "debug"}}),
            "extraEnv must be a list of variables",
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
pub(crate) fn counters_values_choose_the_csv() {
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
