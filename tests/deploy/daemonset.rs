//! The DaemonSet: least privilege by default, and what each feature switch (pod mapping,
//! metadata, DRA, process metrics, an existing service account) changes.

use super::*;

#[test]
pub(crate) fn default_daemonset_is_least_privilege() {
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
pub(crate) fn features_decide_rbac_token_user_and_host_pid() {
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

    // A compatibility profile becomes the exporter's --compatibility; native adds no flag.
    let r = template(&helm, &[], &[json!({"compatibility": "dcgm-4.8.4"})]).unwrap();
    let args = args_of(&r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0]);
    if !args.iter().any(|a| a == "--compatibility=dcgm-4.8.4") {
        f.add(format!("compatibility=dcgm-4.8.4: args {args:?}"));
    }
    let r = template(&helm, &[], &[]).unwrap();
    let args = args_of(&r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0]);
    if args.iter().any(|a| a.starts_with("--compatibility")) {
        f.add(format!(
            "default (native): no --compatibility flag, args {args:?}"
        ));
    }

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

    // The health writes: their flags, and exactly their grants on top of the pods rule; with
    // pod metadata off they alone still need the API (token, RBAC).
    for (values, flags, extra) in [
        (
            json!({"health": {"nodeConditions": true}}),
            vec!["--kubernetes-node-conditions"],
            json!([{"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]}]),
        ),
        (
            json!({"health": {"events": true}}),
            vec!["--kubernetes-events"],
            json!([{"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}]),
        ),
    ] {
        let r = template(&helm, &[], std::slice::from_ref(&values)).unwrap();
        let mut want = vec![
            json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}),
        ];
        want.extend(extra.as_array().unwrap().iter().cloned());
        let rules = &r.one("ClusterRole").value["rules"];
        if *rules != json!(want) {
            f.add(format!("{values}: ClusterRole rules {rules}"));
        }
        let args = args_of(&r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0]);
        for flag in &flags {
            if !args.iter().any(|a| a == flag) {
                f.add(format!("{values}: {flag} missing from {args:?}"));
            }
        }
        check_binding(&mut f, &r);
        let mut no_meta = values.clone();
        no_meta["kubernetes"] = json!({"podMetadata": false});
        let r = template(&helm, &[], &[no_meta.clone()]).unwrap();
        let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
        if r.all("ClusterRole").is_empty() || pod["automountServiceAccountToken"] != true {
            f.add(format!(
                "{no_meta}: the health writes need RBAC and the token"
            ));
        }
    }
    let r = template(&helm, &[], &[]).unwrap();
    let args = args_of(&r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0]);
    if args
        .iter()
        .any(|a| a == "--kubernetes-node-conditions" || a == "--kubernetes-events")
    {
        f.add(format!("default: the health writes are on: {args:?}"));
    }

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

/// The `dcgm` values become the exporter's own flags, which it accepts (parsed and validated as
/// the daemon does), and `dcgm.variantImage` picks the image that carries libdcgm.so.4; the
/// defaults add no DCGM flag and keep the plain image.
#[test]
pub(crate) fn dcgm_values_become_flags_the_exporter_accepts() {
    let Some(helm) = helm_or_skip("dcgm_values_become_flags_the_exporter_accepts") else {
        return;
    };
    let mut f = Failures::default();
    let container = |r: &Rendered| {
        r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0].clone()
    };
    let r = template(&helm, &[], &[]).unwrap();
    let c = container(&r);
    let args = args_of(&c);
    if args
        .iter()
        .any(|a| a.contains("dcgm-mode") || a.contains("hostengine"))
    {
        f.add(format!("defaults: no DCGM flag, args {args:?}"));
    }
    if c["image"].as_str().is_some_and(|i| i.ends_with("-dcgm")) {
        f.add(format!("defaults: the plain image, got {}", c["image"]));
    }
    for (values, want, image_suffix) in [
        (
            json!({"dcgm": {"hostengine": "nvidia-dcgm.gpu-operator.svc:5555", "variantImage": true}}),
            vec!["--remote-hostengine-info=nvidia-dcgm.gpu-operator.svc:5555"],
            true,
        ),
        (
            json!({"dcgm": {"mode": "embedded", "variantImage": true}}),
            vec!["--dcgm-mode=embedded"],
            true,
        ),
        (
            json!({"dcgm": {"mode": "remote", "hostengine": "unix:///run/dcgm/hostengine.sock"}}),
            vec![
                "--dcgm-mode=remote",
                "--remote-hostengine-info=unix:///run/dcgm/hostengine.sock",
            ],
            false,
        ),
        (
            json!({"dcgm": {"mode": "off"}}),
            vec!["--dcgm-mode=off"],
            false,
        ),
    ] {
        let r = template(&helm, &[], std::slice::from_ref(&values)).unwrap();
        let c = container(&r);
        let args = args_of(&c);
        for w in &want {
            if !args.iter().any(|a| a == w) {
                f.add(format!("{values}: args {args:?} lack {w}"));
            }
        }
        let image = c["image"].as_str().unwrap_or_default();
        if image.ends_with("-dcgm") != image_suffix {
            f.add(format!("{values}: image {image}"));
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        if let Err(e) = gpu_exporter::config::Config::from_args(&argv) {
            f.add(format!(
                "{values}: the exporter refuses the chart's flags {args:?}: {e}"
            ));
        }
    }
    f.finish("dcgm values");
}
