//! `helm lint --strict`, and every core object of several renders and of the committed
//! manifests validated against the Kubernetes schemas in strict mode.

use super::*;

#[test]
pub(crate) fn helm_lint_passes() {
    let Some(helm) = helm_or_skip("helm_lint_passes") else {
        return;
    };
    let mut f = Failures::default();
    for extra in [
        vec![],
        vec!["-f", ALL_FEATURES],
        vec!["-f", RULES_ONLY],
        vec![
            "-f",
            "deploy/helm/gpu-exporter/examples/operator-mirror.yaml",
        ],
        vec![
            "-f",
            "deploy/helm/gpu-exporter/examples/operator-mirror-gpucluster.yaml",
        ],
    ] {
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
pub(crate) fn core_objects_pass_kubernetes_schemas() {
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
        (
            "the GPU Operator's GPUCluster deployment, its env copied in",
            template(
                &helm,
                &[],
                &[json!({
                    "gpuOperator": {"mode": "gpuCluster"},
                    "extraEnv": [
                        {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcp-metrics-included.csv"},
                        {"name": "KUBERNETES_ENABLE_DRA", "value": "true"},
                    ],
                })],
            ),
        ),
        (
            "rules and dashboards only (exporter.enabled=false)",
            template(&helm, &[RULES_ONLY], &[]),
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
            // The GPUCluster stack runs where DRA is GA: its renders against that version.
            let version = if what.contains("GPUCluster") {
                DRA_KUBE_VERSION
            } else {
                KUBE_VERSION
            };
            files.push((what, version, path));
        }
    }
    for kind in CORE_KINDS {
        if !seen.contains(kind) {
            f.add(format!(
                "no render produced a {kind}, so none was validated"
            ));
        }
    }
    // One call per Kubernetes version; on failure, its output names each file that did not
    // validate.
    for version in [KUBE_VERSION, DRA_KUBE_VERSION] {
        let of_version: Vec<&(&str, &str, std::path::PathBuf)> =
            files.iter().filter(|(_, v, _)| *v == version).collect();
        if of_version.is_empty() {
            f.add(format!(
                "no object to validate against Kubernetes {version}"
            ));
            continue;
        }
        let mut cmd = Command::new(&validate);
        cmd.args(["--strict", "--quiet", "-k", version])
            .args(of_version.iter().map(|(_, _, p)| p));
        match run_ok(&mut cmd) {
            Ok(out) => {
                if !out.trim().is_empty() {
                    f.add(format!("kubernetes-validate -k {version} said:\n{out}"));
                }
            }
            Err(e) => {
                let names: Vec<String> = of_version
                    .iter()
                    .map(|(w, _, p)| format!("{} = {w}", p.display()))
                    .collect();
                f.add(format!("{e}\nfiles: {}", names.join("\n  ")));
            }
        }
    }
    f.finish("kubernetes-validate");
}
