//! The chart's `helm test` pod (templates/tests/probe.yaml): rendered for each setup, checked
//! against the DaemonSet and the Service it must reach, and its command run for real — the
//! rendered `args`, with `$(NODE_NAME)` expanded as the kubelet does and the Service's host
//! pointed at a local exporter — so that the test a user runs passes on a good node and fails
//! on a wrong one.

use super::*;
use common::ExporterBuilder;

/// The rendered test pods (objects annotated `helm.sh/hook: test`).
fn test_pods(r: &Rendered) -> Vec<&Value> {
    r.all("Pod")
        .into_iter()
        .map(|d| &d.value)
        .filter(|p| p.pointer("/metadata/annotations/helm.sh~1hook") == Some(&json!("test")))
        .collect()
}

/// The test pods that run `gpu-exporter probe`.
fn probe_pods(r: &Rendered) -> Vec<&Value> {
    test_pods(r)
        .into_iter()
        .filter(|p| p["spec"]["containers"][0]["name"] == "probe")
        .collect()
}

#[test]
pub(crate) fn helm_test_pod_probes_its_nodes_exporter_through_the_service() {
    let Some(helm) = helm_or_skip("helm_test_pod_probes_its_nodes_exporter_through_the_service")
    else {
        return;
    };
    let mut f = Failures::default();
    let placement = json!({
        "nodeSelector": {"pool": "gpu"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoSchedule"}],
    });
    for (what, values) in [
        ("default values", json!({})),
        ("custom placement", placement.clone()),
        (
            "compatibility dcgm-4.9",
            json!({"compatibility": "dcgm-4.9"}),
        ),
        (
            "compatibility dcgm-4.10",
            json!({"compatibility": "dcgm-4.10"}),
        ),
    ] {
        let r = template(&helm, &[], &[values]).unwrap();
        let pods = probe_pods(&r);
        if pods.len() != 1 {
            f.add(format!(
                "{what}: want one helm test pod, rendered {}",
                pods.len()
            ));
            continue;
        }
        let pod = pods[0];
        let ds = &r.one("DaemonSet").value["spec"]["template"]["spec"];
        let svc = &r.one("Service").value;
        let spec = &pod["spec"];
        let c = &spec["containers"][0];
        // Placed like the exporter pods, so it lands on a node that has one.
        for key in ["nodeSelector", "affinity", "tolerations"] {
            if spec[key] != ds[key] {
                f.add(format!(
                    "{what}: the test pod's {key} {} differs from the DaemonSet's {}",
                    spec[key], ds[key]
                ));
            }
        }
        // The same image, running its probe subcommand against the Service's DNS name and port.
        if c["image"] != ds["containers"][0]["image"] {
            f.add(format!(
                "{what}: test image {} is not the exporter's",
                c["image"]
            ));
        }
        let args = args_of(c);
        let url = format!(
            "http://{}.{NAMESPACE}.svc:{}",
            svc["metadata"]["name"].as_str().unwrap(),
            svc["spec"]["ports"][0]["port"]
        );
        if args.first().map(String::as_str) != Some("probe") || args.get(1) != Some(&url) {
            f.add(format!(
                "{what}: args should start with probe {url}: {args:?}"
            ));
        }
        if !args.contains(&"--expect-node=$(NODE_NAME)".to_owned()) {
            f.add(format!(
                "{what}: the probe does not check the node: {args:?}"
            ));
        }
        let node_env = env_of(c)
            .into_iter()
            .find(|e| e["name"] == "NODE_NAME")
            .map(|e| e["valueFrom"]["fieldRef"]["fieldPath"].clone());
        if node_env != Some(json!("spec.nodeName")) {
            f.add(format!(
                "{what}: NODE_NAME is not spec.nodeName: {node_env:?}"
            ));
        }
        // The Service answers from the test pod's node.
        if svc["spec"]["internalTrafficPolicy"] != "Local" {
            f.add(format!(
                "{what}: the Service's internalTrafficPolicy is {}, not Local",
                svc["spec"]["internalTrafficPolicy"]
            ));
        }
        // Not an endpoint of the Service, nor a target of the monitors.
        if is_subset(&svc["spec"]["selector"], &pod["metadata"]["labels"]) {
            f.add(format!(
                "{what}: the Service's selector matches the test pod"
            ));
        }
        if spec["securityContext"]["runAsNonRoot"] != true
            || c["securityContext"]["readOnlyRootFilesystem"] != true
            || c["securityContext"]["capabilities"]["drop"] != json!(["ALL"])
            || spec["automountServiceAccountToken"] != false
        {
            f.add(format!(
                "{what}: the test pod is not least privilege: {spec}"
            ));
        }
        if pod
            .pointer("/metadata/annotations/helm.sh~1hook-delete-policy")
            .is_none()
        {
            f.add(format!(
                "{what}: no hook-delete-policy: reruns would collide"
            ));
        }
    }

    // HTTPS with the chart's CA, basic auth with the monitors' credentials.
    let r = template(
        &helm,
        &[],
        &[json!({"tlsServerConfig": {"enabled": true}, "basicAuth": {"users": {"prometheus": "pw"}}})],
    )
    .unwrap();
    match probe_pods(&r).as_slice() {
        [pod] => {
            let c = &pod["spec"]["containers"][0];
            let args = args_of(c);
            if !args.get(1).is_some_and(|u| u.starts_with("https://")) {
                f.add(format!("TLS: the probe URL is not https: {args:?}"));
            }
            let ca = args.iter().find_map(|a| a.strip_prefix("--ca-file="));
            match (ca, mount_of_secret(&pod["spec"], &format!("{RELEASE}-tls"))) {
                (Some(ca), Some(dir)) if ca == format!("{dir}/ca.crt") => {}
                other => f.add(format!(
                    "TLS: --ca-file and the TLS secret's mount disagree: {other:?}"
                )),
            }
            let env = env_of(c);
            let user = env
                .iter()
                .find(|e| e["name"] == "PROBE_BASIC_AUTH_USERNAME");
            if user.map(|e| &e["valueFrom"]["secretKeyRef"]["name"])
                != Some(&json!(format!("{RELEASE}-scrape-auth")))
            {
                f.add(format!(
                    "basic auth: the user name is not the scrape-auth secret's: {user:?}"
                ));
            }
            let pw = env
                .iter()
                .find(|e| e["name"] == "PROBE_BASIC_AUTH_PASSWORD_FILE")
                .and_then(|e| e["value"].as_str());
            match (
                pw,
                mount_of_secret(&pod["spec"], &format!("{RELEASE}-scrape-auth")),
            ) {
                (Some(pw), Some(dir)) if pw == format!("{dir}/password") => {}
                other => f.add(format!(
                    "basic auth: password file and mount disagree: {other:?}"
                )),
            }
        }
        other => f.add(format!(
            "TLS + basic auth: want one test pod, got {}",
            other.len()
        )),
    }

    // No test pod where it cannot work or is not wanted.
    for (what, values) in [
        (
            "client certificates required",
            json!({"tlsServerConfig": {"enabled": true, "clientAuthType": "RequireAnyClientCert"}}),
        ),
        (
            "helmTest.enabled=false",
            json!({"helmTest": {"enabled": false}}),
        ),
        (
            "service.enabled=false",
            json!({"service": {"enabled": false}, "serviceMonitor": {"enabled": false}}),
        ),
    ] {
        let r = template(&helm, &[], &[values]).unwrap();
        if !probe_pods(&r).is_empty() {
            f.add(format!("{what}: a helm test probe pod was rendered"));
        }
    }
    // kubectl apply users get no test pod.
    if !test_pods(&committed_manifests().unwrap()).is_empty() {
        f.add("deploy/manifests holds the helm test pod".to_owned());
    }
    f.finish("helm test pod");
}

/// The rendered probe command, run against a local exporter serving a simulated node.
#[test]
pub(crate) fn helm_test_command_passes_on_its_node_and_fails_elsewhere() {
    let Some(helm) = helm_or_skip("helm_test_command_passes_on_its_node_and_fails_elsewhere")
    else {
        return;
    };
    let r = template(&helm, &[], &[json!({"helmTest": {"wait": "20s"}})]).unwrap();
    let pods = probe_pods(&r);
    assert_eq!(pods.len(), 1, "one helm test pod");
    let args = args_of(&pods[0]["spec"]["containers"][0]);
    let service_url = args[1].clone();
    let exporter = ExporterBuilder::new()
        .env("NODE_NAME", "gpu-node-7")
        .start();
    let local = format!("http://127.0.0.1:{}", exporter.port);
    let run = |node: &str, extra: &[&str]| -> Output {
        let args: Vec<String> = args
            .iter()
            .map(|a| {
                a.replace("$(NODE_NAME)", node)
                    .replace(&service_url, &local)
            })
            .chain(extra.iter().map(|s| (*s).to_owned()))
            .collect();
        Command::new(common::BIN).args(&args).output().unwrap()
    };
    let text = |o: &Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };

    let ok = run("gpu-node-7", &[]);
    assert!(
        ok.status.success(),
        "probe on its own node failed:\n{}",
        text(&ok)
    );
    let out = text(&ok);
    assert!(out.contains("/ready: 200"), "{out}");
    assert!(out.contains("the series are node gpu-node-7's"), "{out}");

    let wrong = run("gpu-node-8", &[]);
    assert_eq!(
        wrong.status.code(),
        Some(1),
        "probe of another node's exporter:\n{}",
        text(&wrong)
    );
    assert!(
        text(&wrong).contains("no series carries host label gpu-node-8; seen: gpu-node-7"),
        "{}",
        text(&wrong)
    );
    drop(exporter);

    // Not ready (no NVML): /ready is retried until --wait runs out, then the probe fails.
    let nvml_missing = ExporterBuilder::new()
        .nvml_lib("/nonexistent/libnvidia-ml.so.1")
        .env("NODE_NAME", "gpu-node-7")
        .spawn();
    common::wait_until("the exporter without NVML to listen", || {
        common::http_get(nvml_missing.port, "/health", &[]).is_some()
    });
    let local = format!("http://127.0.0.1:{}", nvml_missing.port);
    let args: Vec<String> = args
        .iter()
        .map(|a| {
            a.replace("$(NODE_NAME)", "gpu-node-7")
                .replace(&service_url, &local)
        })
        .map(|a| {
            if a.starts_with("--wait=") {
                "--wait=1s".to_owned()
            } else {
                a
            }
        })
        .collect();
    let o = Command::new(common::BIN).args(&args).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("/ready: not 200 within 1s; last answer: 503"),
        "{}",
        text(&o)
    );

    // Usage errors are exit 2.
    let o = Command::new(common::BIN).args(["probe"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = Command::new(common::BIN)
        .args(["probe", "ftp://x:1"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("give http://HOST:PORT"), "{}", text(&o));
}

/// The `helm test` pod that runs `gpu-exporter check` has the DaemonSet's pod spec (flags,
/// environment, mounts, user, placement), `check` in front of the flags, no ports or probes,
/// stays after a pass (its log is the report), and its rendered command passes on a working
/// simulated node.
#[test]
pub(crate) fn helm_test_check_pod_is_the_daemonset_pod_running_check() {
    let Some(helm) = helm_or_skip("helm_test_check_pod_is_the_daemonset_pod_running_check") else {
        return;
    };
    let mut f = Failures::default();
    for (what, values) in [
        ("default values", json!({})),
        (
            "TLS, basic auth, process metrics, DRA",
            json!({
                "tlsServerConfig": {"enabled": true},
                "basicAuth": {"users": {"prometheus": "pw"}},
                "kubernetes": {"processMetrics": true},
                "kubernetesDRA": {"enabled": true},
                "runtimeClassName": "nvidia",
            }),
        ),
        (
            "no pod mapping",
            json!({"kubernetes": {"podMapping": false}}),
        ),
    ] {
        let r = template(&helm, &[], &[values]).unwrap();
        let checks: Vec<&Value> = test_pods(&r)
            .into_iter()
            .filter(|p| p["spec"]["containers"][0]["name"] == "check")
            .collect();
        let [pod] = checks.as_slice() else {
            f.add(format!("{what}: want one check pod, got {}", checks.len()));
            continue;
        };
        // Its report stays readable after a pass: deleted only when the next test replaces it.
        let policy = &pod["metadata"]["annotations"]["helm.sh/hook-delete-policy"];
        if *policy != "before-hook-creation" {
            f.add(format!(
                "{what}: hook-delete-policy {policy}: the pod (and its report) must outlive a pass"
            ));
        }
        let ds = &r.one("DaemonSet").value["spec"]["template"]["spec"];
        let mut spec = pod["spec"].clone();
        if spec["restartPolicy"] != "Never" {
            f.add(format!("{what}: restartPolicy {}", spec["restartPolicy"]));
        }
        spec.as_object_mut().unwrap().remove("restartPolicy");
        // The container: the DaemonSet's, with `check` in front and without ports and probes.
        let mut want = ds.clone();
        {
            let c = &mut want["containers"][0];
            let obj = c.as_object_mut().unwrap();
            for k in ["ports", "livenessProbe", "readinessProbe"] {
                obj.remove(k);
            }
            obj.insert("name".into(), json!("check"));
            let mut args = vec![json!("check")];
            args.extend(array(&obj["args"]).iter().cloned());
            obj.insert("args".into(), Value::Array(args));
        }
        if spec != want {
            f.add(format!(
                "{what}: the check pod's spec is not the DaemonSet's running check:\n  got  {spec}\n  want {want}"
            ));
        }
        if is_subset(
            &r.one("Service").value["spec"]["selector"],
            &pod["metadata"]["labels"],
        ) {
            f.add(format!("{what}: the Service selects the check pod"));
        }
    }
    let r = template(&helm, &[], &[json!({"helmTest": {"enabled": false}})]).unwrap();
    if !test_pods(&r).is_empty() {
        f.add("helmTest.enabled=false still renders test pods".to_owned());
    }
    let r = template(&helm, &[], &[json!({"helmTest": {"check": false}})]).unwrap();
    if test_pods(&r)
        .iter()
        .any(|p| p["spec"]["containers"][0]["name"] == "check")
    {
        f.add("helmTest.check=false still renders the check pod".to_owned());
    }
    f.finish("helm test check pod");

    // The rendered command (without pod mapping, which needs a kubelet) runs here: the
    // counters file from the repository in place of the ConfigMap mount, the simulated NVML.
    let r = template(&helm, &[], &[json!({"kubernetes": {"podMapping": false}})]).unwrap();
    let pod = test_pods(&r)
        .into_iter()
        .find(|p| p["spec"]["containers"][0]["name"] == "check")
        .unwrap();
    let args: Vec<String> = args_of(&pod["spec"]["containers"][0])
        .into_iter()
        .map(|a| a.replace(COUNTERS_FILE, "counters/default-counters.csv"))
        .collect();
    let out = Command::new(common::BIN)
        .args(&args)
        .arg("--nvml-lib")
        .arg(common::built_sim_lib())
        .args(["-a", &format!("127.0.0.1:{}", common::free_port())])
        .current_dir(repo())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("check: everything configured works"),
        "{text}"
    );
}
