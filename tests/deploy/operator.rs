//! The chart with the NVIDIA GPU Operator's own settings for dcgm-exporter: its arguments and
//! environment taken as they are, and `gpuOperator.mode` (ClusterPolicy and GPUCluster
//! placement, the GPUCluster exporter's RBAC).
//!
//! The rendered container is run here on a simulated node the way the kubelet would start
//! it: the rendered args and env, a scratch directory standing in for the container's
//! filesystem (the image's counters files where the Dockerfile copies them, each ConfigMap
//! volume written out at its mount path, hiding whatever the image has there), paths in the
//! args and env pointed into that directory, `$(NODE_NAME)` from the downward API given a
//! node name, the listen address's port a free one. The exporter must start and serve the
//! fields of the counters file those args and env name, and its log must name that file.

use super::*;

/// The GPU Operator's environment of its dcgm-exporter container, as its ClusterPolicy
/// DaemonSet (`assets/state-dcgm-exporter/0800_daemonset.yaml`) and its chart's
/// `dcgmExporter.env` default set it, NODE_NAME from the downward API included.
fn operator_env() -> Value {
    json!([
        {"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"},
        {"name": "DCGM_EXPORTER_KUBERNETES", "value": "true"},
        {"name": "DCGM_EXPORTER_COLLECTORS", "value": "/etc/dcgm-exporter/dcp-metrics-included.csv"},
        {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
    ])
}

/// The environment of the GPUCluster (DRA) stack's exporter DaemonSet (GPU Operator v26.7):
/// the same, plus KUBERNETES_ENABLE_DRA.
fn operator_dra_env() -> Value {
    let mut env = operator_env();
    env.as_array_mut()
        .unwrap()
        .push(json!({"name": "KUBERNETES_ENABLE_DRA", "value": "true"}));
    env
}

/// Where the image keeps its counters files (dcgm-exporter's directory).
const IMAGE_COUNTERS_DIR: &str = "/etc/dcgm-exporter";

/// The files the Dockerfile copies into `IMAGE_COUNTERS_DIR`: (repository path, file name).
fn image_counters_files() -> Vec<(PathBuf, String)> {
    let text = std::fs::read_to_string(repo().join("Dockerfile")).unwrap();
    let joined = text.replace("\\\n", " ");
    let mut files = Vec::new();
    for line in joined.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() != Some(&"COPY") || words.iter().any(|w| w.starts_with("--")) {
            continue;
        }
        let Some((dest, sources)) = words[1..].split_last() else {
            continue;
        };
        if dest.trim_end_matches('/') != IMAGE_COUNTERS_DIR {
            continue;
        }
        for s in sources {
            let name = Path::new(s)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            files.push((repo().join(s), name));
        }
    }
    assert!(
        files.iter().any(|(_, n)| n == "dcp-metrics-included.csv"),
        "the Dockerfile copies no dcp-metrics-included.csv into {IMAGE_COUNTERS_DIR}: {files:?}"
    );
    files
}

/// The exporter container of a render, laid out to run here.
struct Container {
    /// The scratch directory standing in for the container's `/`.
    root: tempfile::TempDir,
    args: Vec<String>,
    env: Vec<(String, String)>,
    port: u16,
}

/// `NODE_NAME` as the downward API gives it to the simulated node's pod.
const NODE: &str = "gpu-node-operator";

impl Container {
    /// The DaemonSet's container of `r`: the image's counters files, the ConfigMap volumes
    /// mounted over them where the pod mounts them, the args and env with their paths and
    /// the listen port moved here.
    fn of(r: &Rendered) -> Container {
        let root = tempfile::tempdir().unwrap();
        let pod = &r.one("DaemonSet").value["spec"]["template"]["spec"];
        let c = &pod["containers"][0];
        // The image.
        let image_dir = root.path().join(IMAGE_COUNTERS_DIR.trim_start_matches('/'));
        std::fs::create_dir_all(&image_dir).unwrap();
        for (src, name) in image_counters_files() {
            std::fs::copy(&src, image_dir.join(name)).unwrap();
        }
        // The volumes: a mount hides what the image has at its path.
        let mut dirs = vec![IMAGE_COUNTERS_DIR.to_owned()];
        for m in array(&c["volumeMounts"]) {
            let path = m["mountPath"].as_str().unwrap();
            let vol = array(&pod["volumes"])
                .iter()
                .find(|v| v["name"] == m["name"])
                .unwrap_or_else(|| panic!("mount {m} has no volume"));
            let Some(cm) = vol.pointer("/configMap/name").and_then(Value::as_str) else {
                // hostPath (the kubelet's socket: the simulated node brings its own) or a
                // Secret (none in these renders).
                continue;
            };
            let doc = r
                .all("ConfigMap")
                .into_iter()
                .find(|d| d.name() == cm)
                .unwrap_or_else(|| panic!("ConfigMap {cm} is mounted but not rendered"));
            let dir = root.path().join(path.trim_start_matches('/'));
            if dir.exists() {
                std::fs::remove_dir_all(&dir).unwrap();
            }
            std::fs::create_dir_all(&dir).unwrap();
            for (key, text) in doc.value["data"].as_object().unwrap() {
                std::fs::write(dir.join(key), text.as_str().unwrap()).unwrap();
            }
            dirs.push(path.trim_end_matches('/').to_owned());
        }
        let at = |s: &str| -> String { moved(s, &dirs, root.path()) };
        let args = args_of(c).iter().map(|a| at(a)).collect();
        let port = common::free_port();
        let mut env = Vec::new();
        for e in env_of(c) {
            let name = e["name"].as_str().unwrap().to_owned();
            let value = if let Some(v) = e.get("value") {
                v.as_str()
                    .map(str::to_owned)
                    .unwrap_or_else(|| v.to_string())
            } else if e.pointer("/valueFrom/fieldRef/fieldPath") == Some(&json!("spec.nodeName")) {
                NODE.to_owned()
            } else {
                panic!("env {e}: neither a value nor the node's name");
            };
            let value = if name == "DCGM_EXPORTER_LISTEN" {
                assert_eq!(value, ":9400", "the rendered listen address");
                format!("127.0.0.1:{port}")
            } else {
                at(&value)
            };
            env.push((name, value));
        }
        Container {
            root,
            args,
            env,
            port,
        }
    }

    /// The container's path `p` here.
    fn path(&self, p: &str) -> PathBuf {
        self.root.path().join(p.trim_start_matches('/'))
    }

    /// Starts the exporter on the simulated node, as the container's entrypoint with its args
    /// and nothing but its env; waits for /ready. Stderr goes to a file in the scratch root.
    fn start(&self, scenario: &str) -> Running {
        let log = self.root.path().join("exporter.log");
        let mut cmd = Command::new(common::BIN);
        cmd.args(&self.args)
            .args(["--simulate", scenario, "--nvml-lib"])
            .arg(common::built_sim_lib())
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap());
        if !self.env.iter().any(|(k, _)| k == "DCGM_EXPORTER_LISTEN") {
            cmd.args(["-a", &format!("127.0.0.1:{}", self.port)]);
        }
        let child = cmd.spawn().unwrap();
        let mut run = Running {
            child,
            port: self.port,
            log,
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if common::http_get(run.port, "/ready", &[]).is_some_and(|r| r.status == 200) {
                return run;
            }
            if let Some(s) = run.child.try_wait().unwrap() {
                panic!(
                    "the exporter exited with {s} before /ready\nargs {:?}\nenv {:?}\nlog:\n{}",
                    self.args,
                    self.env,
                    run.log()
                );
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the exporter never became ready; log:\n{}",
                run.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// `s` with every occurrence of one of `dirs` (followed by `/`) moved under `root`, in one
/// pass (the root's own path may hold one of them).
fn moved(s: &str, dirs: &[String], root: &Path) -> String {
    let mut out = String::new();
    let mut rest = s;
    'scan: while !rest.is_empty() {
        for d in dirs {
            let with_slash = format!("{d}/");
            if rest.starts_with(&with_slash) {
                out.push_str(&root.join(d.trim_start_matches('/')).display().to_string());
                out.push('/');
                rest = &rest[with_slash.len()..];
                continue 'scan;
            }
        }
        let ch = rest.chars().next().unwrap();
        out.push(ch);
        rest = &rest[ch.len_utf8()..];
    }
    out
}

/// The exporter process, killed on drop.
struct Running {
    child: std::process::Child,
    port: u16,
    log: PathBuf,
}

impl Running {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn metrics(&self) -> String {
        let r = common::http_get(self.port, "/metrics", &[]).expect("scrape");
        assert_eq!(r.status, 200, "{}", r.text());
        r.text()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The families a scrape declares (`# TYPE` lines).
fn families(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// The fields a scrape lists in gpu_exporter_field_unsupported.
fn unsupported(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| l.starts_with("gpu_exporter_field_unsupported{"))
        .filter_map(|l| l.split("field=\"").nth(1))
        .filter_map(|l| l.split('"').next())
        .map(str::to_owned)
        .collect()
}

/// The exporter serves the metric rows of the counters file at `file` (each a family, or
/// listed unsupported on this node) and no DCGM family beyond them; its log names the file.
/// Rates and profiling fields need a second tick, so scrapes are repeated until every row is
/// there (a deadline, not a timing assertion).
fn check_serves_file(f: &mut Failures, what: &str, run: &Running, file: &Path) {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let set = parse_counters(&file.display().to_string(), &text).unwrap();
    let rows: BTreeSet<String> = set.metrics().map(|r| r.name.clone()).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (served, missing) = loop {
        let scrape = run.metrics();
        let served = families(&scrape);
        let unsupported = unsupported(&scrape);
        let missing: Vec<String> = rows
            .iter()
            .filter(|r| !served.contains(*r) && !unsupported.contains(*r))
            .cloned()
            .collect();
        if missing.is_empty() || std::time::Instant::now() > deadline {
            break (served, missing);
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    if !missing.is_empty() {
        f.add(format!(
            "{what}: rows of {} neither served nor listed unsupported: {missing:?}",
            file.display()
        ));
    }
    let served_rows = rows.iter().filter(|r| served.contains(*r)).count();
    if served_rows * 2 < rows.len() {
        f.add(format!(
            "{what}: only {served_rows} of the {} rows of {} are served",
            rows.len(),
            file.display()
        ));
    }
    let extra: Vec<&String> = served
        .iter()
        .filter(|n| n.starts_with("DCGM_") && !rows.contains(*n))
        .collect();
    if !extra.is_empty() {
        f.add(format!(
            "{what}: DCGM families served that {} does not list: {extra:?}",
            file.display()
        ));
    }
    let log = run.log();
    if !log.lines().any(|l| {
        l.contains("counters reload on file change") && l.contains(&file.display().to_string())
    }) {
        f.add(format!(
            "{what}: the log does not name {} as the counters file:\n{log}",
            file.display()
        ));
    }
}

/// The DaemonSet's container args.
fn ds_args(r: &Rendered) -> Vec<String> {
    args_of(&r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0])
}

/// The GPU Operator's dcgm-exporter arguments and environment, copied into `arguments` and
/// `extraEnv`, start the rendered container on a simulated node with the counters file they
/// name (the image's, which the chart's ConfigMap no longer hides), for the ClusterPolicy and
/// the GPUCluster deployments; the chart adds no `-f` of its own then.
#[test]
pub(crate) fn operator_arguments_and_env_start_on_a_simulated_node() {
    let Some(helm) = helm_or_skip("operator_arguments_and_env_start_on_a_simulated_node") else {
        return;
    };
    let mut f = Failures::default();
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "the ClusterPolicy DaemonSet's env",
            json!({"extraEnv": operator_env()}),
            "/etc/dcgm-exporter/dcp-metrics-included.csv",
        ),
        (
            // The flag wins over the variable, in dcgm-exporter as here.
            "dcgmExporter.args -f with the DaemonSet's env",
            json!({"arguments": ["-f", "/etc/dcgm-exporter/recommended.csv"], "extraEnv": operator_env()}),
            "/etc/dcgm-exporter/recommended.csv",
        ),
        (
            "dcgmExporter.args --collectors=FILE alone",
            json!({"arguments": ["--collectors=/etc/dcgm-exporter/recommended.csv"]}),
            "/etc/dcgm-exporter/recommended.csv",
        ),
        (
            "the GPUCluster DaemonSet's env, gpuOperator.mode=gpuCluster",
            json!({"extraEnv": operator_dra_env(), "gpuOperator": {"mode": "gpuCluster"}}),
            "/etc/dcgm-exporter/dcp-metrics-included.csv",
        ),
        (
            "no counters file named: the chart's preset",
            json!({"counters": {"preset": "recommended"}, "extraEnv": [{"name": "DCGM_EXPORTER_LISTEN", "value": ":9400"}]}),
            COUNTERS_FILE,
        ),
    ];
    // All started first, then checked: each waits for its second tick.
    let mut started = Vec::new();
    for (what, values, file) in cases {
        let r = match template(&helm, &[], std::slice::from_ref(&values)) {
            Ok(r) => r,
            Err(e) => {
                f.add(format!("{what}: {e}"));
                continue;
            }
        };
        let args = ds_args(&r);
        let chart_f = has_pair(&args, "-f", COUNTERS_FILE);
        if chart_f != (file == COUNTERS_FILE) {
            f.add(format!(
                "{what}: the chart's own `-f {COUNTERS_FILE}` is {} in {args:?}",
                if chart_f { "present" } else { "missing" }
            ));
        }
        if args.iter().filter(|a| *a == "-f").count() > 1 {
            f.add(format!("{what}: two -f in {args:?}"));
        }
        let c = &r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0];
        let names: Vec<String> = env_of(c)
            .iter()
            .map(|e| e["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        let unique: BTreeSet<&String> = names.iter().collect();
        if unique.len() != names.len() {
            f.add(format!("{what}: a variable is set twice: {names:?}"));
        }
        let container = Container::of(&r);
        let run = container.start("h100-mig");
        started.push((what, container, run, file));
    }
    for (what, container, run, file) in &started {
        check_serves_file(&mut f, what, run, &container.path(file));
    }
    f.finish("the GPU Operator's arguments and env");
}

/// Every spelling of the counters file the exporter accepts in `arguments` replaces the
/// chart's `-f`, and nothing else does: for each argument list, the chart keeps its own `-f`
/// exactly when the exporter's own parser (Go-style, as the daemon parses) finds no counters
/// file in that list. With a chart counters value set too, rendering fails naming both.
#[test]
pub(crate) fn counters_file_in_arguments_or_env_replaces_the_charts() {
    let Some(helm) = helm_or_skip("counters_file_in_arguments_or_env_replaces_the_charts") else {
        return;
    };
    let mut f = Failures::default();
    let file = "/etc/dcgm-exporter/dcp-metrics-included.csv";
    let lists: Vec<Vec<String>> = [
        vec!["-f", file],
        vec![&format!("-f{file}")],
        vec![&format!("-f={file}")],
        vec!["--collectors", file],
        vec![&format!("--collectors={file}")],
        vec!["-collectors", file],
        vec![&format!("-collectors={file}")],
        vec!["-kf", file],
        vec!["-k", "-c", "1000", "-f", file],
        vec!["--fake-gpus"],
        vec!["-fake-gpus"],
        vec!["-fake-gpus=true"],
        vec!["-k", "--kubernetes-enable-pod-uid"],
        vec!["-c", "1000"],
    ]
    .iter()
    .map(|l| l.iter().map(|s| (*s).to_owned()).collect())
    .collect();
    for list in &lists {
        let argv = std::iter::once("gpu-exporter".to_owned()).chain(list.iter().cloned());
        let cli = match gpu_exporter::config::Cli::try_parse_go_style(argv.map(Into::into)) {
            Ok(cli) => cli,
            Err(e) => {
                f.add(format!("{list:?}: the exporter refuses it: {e}"));
                continue;
            }
        };
        let named = cli.sampling.counters_file.clone();
        let r = template(&helm, &[], &[json!({"arguments": list})]).unwrap();
        let args = ds_args(&r);
        let chart_f = has_pair(&args, "-f", COUNTERS_FILE);
        match (&named, chart_f) {
            (Some(p), false) if p == Path::new(file) => {}
            (None, true) => {}
            _ => f.add(format!(
                "{list:?}: the exporter reads counters file {named:?}, and the chart's own -f \
                 is {}: {args:?}",
                if chart_f { "there too" } else { "missing" }
            )),
        }
        if named.is_some() {
            match template(
                &helm,
                &[],
                &[json!({"arguments": list, "counters": {"preset": "recommended"}})],
            ) {
                Ok(_) => f.add(format!(
                    "{list:?} with counters.preset=recommended renders; want a failure"
                )),
                Err(e) if e.contains("arguments[") && e.contains("counters.preset=recommended") => {
                }
                Err(e) => f.add(format!(
                    "{list:?} with counters.preset=recommended: the failure names not both: {e}"
                )),
            }
        }
    }

    // DCGM_EXPORTER_COLLECTORS: a value or a valueFrom replaces the chart's -f; a blank one
    // counts as not set, as the exporter reads it.
    for (env, replaces) in [
        (
            json!({"name": "DCGM_EXPORTER_COLLECTORS", "value": file}),
            true,
        ),
        (
            json!({"name": "DCGM_EXPORTER_COLLECTORS", "valueFrom": {"configMapKeyRef": {"name": "c", "key": "k"}}}),
            true,
        ),
        (
            json!({"name": "DCGM_EXPORTER_COLLECTORS", "value": " "}),
            false,
        ),
        (
            json!({"name": "DCGM_EXPORTER_INTERVAL", "value": "1000"}),
            false,
        ),
    ] {
        let r = template(&helm, &[], &[json!({"extraEnv": [env]})]).unwrap();
        let chart_f = has_pair(&ds_args(&r), "-f", COUNTERS_FILE);
        if chart_f == replaces {
            f.add(format!(
                "extraEnv {env}: the chart's -f is {}",
                if chart_f { "still there" } else { "gone" }
            ));
        }
    }
    for (values, names) in [
        (
            json!({"extraEnv": [{"name": "DCGM_EXPORTER_COLLECTORS", "value": file}],
                   "counters": {"custom": "DCGM_FI_DEV_GPU_TEMP, gauge, t\n"}}),
            ["extraEnv DCGM_EXPORTER_COLLECTORS", "counters.custom"],
        ),
        (
            json!({"arguments": ["-f", file], "counters": {"existingConfigMap": "mine"}}),
            ["arguments[0]", "counters.existingConfigMap=mine"],
        ),
    ] {
        match template(&helm, &[], std::slice::from_ref(&values)) {
            Ok(_) => f.add(format!(
                "{values}: renders; want a failure naming {names:?}"
            )),
            Err(e) if names.iter().all(|n| e.contains(n)) => {}
            Err(e) => f.add(format!(
                "{values}: the failure does not name {names:?}: {e}"
            )),
        }
    }

    // The image's directory is never a mount point (nor under one), whatever the values.
    for (what, r) in [
        ("default values", template(&helm, &[], &[]).unwrap()),
        (
            "all-features values",
            template(&helm, &[ALL_FEATURES], &[]).unwrap(),
        ),
        (
            "existing counters ConfigMap",
            template(
                &helm,
                &[],
                &[json!({"counters": {"existingConfigMap": "mine"}})],
            )
            .unwrap(),
        ),
    ] {
        let c = &r.one("DaemonSet").value["spec"]["template"]["spec"]["containers"][0];
        for m in array(&c["volumeMounts"]) {
            let p = m["mountPath"]
                .as_str()
                .unwrap_or_default()
                .trim_end_matches('/');
            if p.is_empty()
                || IMAGE_COUNTERS_DIR.starts_with(&format!("{p}/"))
                || p == IMAGE_COUNTERS_DIR
            {
                f.add(format!(
                    "{what}: the mount at {p:?} hides the image's {IMAGE_COUNTERS_DIR}"
                ));
            }
        }
    }
    f.finish("counters file from arguments and env");
}

/// `gpuOperator.mode`: the pods run on the nodes the GPU Operator's exporter DaemonSet of that
/// deployment selects; `gpuCluster` also turns DRA on as that DaemonSet does
/// (KUBERNETES_ENABLE_DRA) and grants get/list/watch on ResourceSlices only (the operator's
/// own role also has pods, which gpu-exporter reads only for pod labels or UIDs), with pods
/// added only for those.
#[test]
pub(crate) fn gpu_operator_modes_place_the_pods_and_scope_rbac() {
    let Some(helm) = helm_or_skip("gpu_operator_modes_place_the_pods_and_scope_rbac") else {
        return;
    };
    let mut f = Failures::default();
    let pods_rule =
        json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]});
    let slices_rule = json!({"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["get", "list", "watch"]});
    let pod = |r: &Rendered| r.one("DaemonSet").value["spec"]["template"]["spec"].clone();

    for (mode, label) in [
        ("clusterPolicy", "nvidia.com/gpu.deploy.dcgm-exporter"),
        ("gpuCluster", "nvidia.com/gpu.deploy.dcgm-exporter-dra"),
    ] {
        let r = template(&helm, &[], &[json!({"gpuOperator": {"mode": mode}})]).unwrap();
        let p = pod(&r);
        if p["nodeSelector"] != json!({label: "true"}) {
            f.add(format!("{mode}: nodeSelector {}", p["nodeSelector"]));
        }
        if p.get("affinity").is_some() {
            f.add(format!(
                "{mode}: the default gpu.present affinity is still rendered: {}",
                p["affinity"]
            ));
        }
        // The Helm test pods land where the exporter pods are.
        for t in r.all("Pod") {
            if t.value["spec"]["nodeSelector"] != p["nodeSelector"] {
                f.add(format!("{mode}: test pod {} is placed elsewhere", t.name()));
            }
        }
        // A nodeSelector and an affinity of the user's are kept beside the label.
        let affinity = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}}});
        let r = template(
            &helm,
            &[],
            &[json!({"gpuOperator": {"mode": mode}, "nodeSelector": {"pool": "gpu"}, "affinity": affinity})],
        )
        .unwrap();
        let p = pod(&r);
        if p["nodeSelector"] != json!({label: "true", "pool": "gpu"}) || p["affinity"] != affinity {
            f.add(format!(
                "{mode} with a nodeSelector and affinity: {} / {}",
                p["nodeSelector"], p["affinity"]
            ));
        }
    }

    // ClusterPolicy: the RBAC and flags of the values, as without a mode.
    let plain = template(&helm, &[], &[]).unwrap();
    let r = template(
        &helm,
        &[],
        &[json!({"gpuOperator": {"mode": "clusterPolicy"}})],
    )
    .unwrap();
    if r.one("ClusterRole").value["rules"] != plain.one("ClusterRole").value["rules"]
        || ds_args(&r) != ds_args(&plain)
    {
        f.add("clusterPolicy: RBAC or flags differ from the default render");
    }

    // GPUCluster: what the operator's DRA exporter has.
    let r = template(
        &helm,
        &[],
        &[json!({"gpuOperator": {"mode": "gpuCluster"}})],
    )
    .unwrap();
    let p = pod(&r);
    let c = &p["containers"][0];
    let rules = &r.one("ClusterRole").value["rules"];
    if *rules != json!([slices_rule]) {
        f.add(format!(
            "gpuCluster: ClusterRole rules {rules}, want ResourceSlices only"
        ));
    }
    check_binding(&mut f, &r);
    if p["automountServiceAccountToken"] != true {
        f.add("gpuCluster: no API token, but the ResourceSlices are read through the API");
    }
    let env = env_of(c);
    let dra: Vec<&Value> = env
        .iter()
        .filter(|e| e["name"] == "KUBERNETES_ENABLE_DRA")
        .collect();
    if dra.len() != 1 || dra[0]["value"] != "true" {
        f.add(format!("gpuCluster: KUBERNETES_ENABLE_DRA {dra:?}"));
    }
    let args = ds_args(&r);
    for (want, present) in [
        ("--kubernetes-pod-metadata=false", true),
        ("--kubernetes-enable-dra", false),
        ("-k", true),
    ] {
        if args.iter().any(|a| a == want) != present {
            f.add(format!(
                "gpuCluster: {want} should be {}in {args:?}",
                if present { "" } else { "absent " }
            ));
        }
    }
    // The exporter accepts the rendered flags (the variable is run in
    // operator_arguments_and_env_start_on_a_simulated_node).
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    match gpu_exporter::config::Config::from_args(&argv) {
        Ok(_) => {}
        Err(e) => f.add(format!("gpuCluster: the exporter refuses {args:?}: {e}")),
    }
    check_common_security(&mut f, "gpuCluster", &r.one("DaemonSet").value);

    // GPUCluster with pod labels / UIDs: pods added; with the health writes: their rules.
    for (values, want) in [
        (
            json!({"kubernetes": {"enablePodUID": true}}),
            json!([pods_rule, slices_rule]),
        ),
        (
            json!({"kubernetes": {"enablePodLabels": true}}),
            json!([pods_rule, slices_rule]),
        ),
        (
            json!({"health": {"nodeConditions": true}}),
            json!([slices_rule, {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]}]),
        ),
        (
            json!({"kubernetesDRA": {"enabled": true}}),
            json!([slices_rule]),
        ),
    ] {
        let mut v = values.clone();
        v["gpuOperator"] = json!({"mode": "gpuCluster"});
        let r = template(&helm, &[], &[v.clone()]).unwrap();
        let rules = &r.one("ClusterRole").value["rules"];
        if *rules != want {
            f.add(format!("{v}: ClusterRole rules {rules}, want {want}"));
        }
        let meta = args_of(&pod(&r)["containers"][0])
            .iter()
            .any(|a| a == "--kubernetes-pod-metadata=true");
        let want_meta = want.as_array().unwrap().contains(&pods_rule);
        if meta != want_meta {
            f.add(format!(
                "{v}: --kubernetes-pod-metadata=true is {meta}, want {want_meta}"
            ));
        }
        if args_of(&pod(&r)["containers"][0])
            .iter()
            .any(|a| a == "--kubernetes-enable-dra")
        {
            f.add(format!(
                "{v}: DRA given twice (flag and KUBERNETES_ENABLE_DRA)"
            ));
        }
    }
    // The operator's own env copied in: one KUBERNETES_ENABLE_DRA, the user's.
    let r = template(
        &helm,
        &[],
        &[json!({"gpuOperator": {"mode": "gpuCluster"}, "extraEnv": [{"name": "KUBERNETES_ENABLE_DRA", "value": "1"}]})],
    )
    .unwrap();
    let dra: Vec<Value> = env_of(&pod(&r)["containers"][0])
        .into_iter()
        .filter(|e| e["name"] == "KUBERNETES_ENABLE_DRA")
        .collect();
    if dra != vec![json!({"name": "KUBERNETES_ENABLE_DRA", "value": "1"})] {
        f.add(format!("gpuCluster with the operator's env: {dra:?}"));
    }
    f.finish("gpuOperator.mode");
}

/// NOTES.txt says where the pods run under `gpuOperator.mode`, what the GPUCluster exporter
/// reads through the API, and which counters file a GPU Operator configuration named.
/// Under `gpuOperator.mode=gpuCluster` each pod (the DaemonSet's and the `helm test` check
/// pod) claims every GPU of its node through an admin-access ResourceClaimTemplate, as the
/// GPUCluster's own exporter does (the operator's `nvidia-dcgm-exporter-admin`:
/// `gpu.nvidia.com`, allocationMode All, adminAccess), in the shape of the API version asked
/// for; `adminAccessClaim: false` and the other modes render no claim.
#[test]
pub(crate) fn gpu_cluster_pods_claim_the_nodes_gpus_with_admin_access() {
    let Some(helm) = helm_or_skip("gpu_cluster_pods_claim_the_nodes_gpus_with_admin_access") else {
        return;
    };
    let mut f = Failures::default();
    let want_request =
        json!({"deviceClassName": "gpu.nvidia.com", "allocationMode": "All", "adminAccess": true});
    for (api, nested) in [
        (None, true),
        (Some("resource.k8s.io/v1beta2"), true),
        (Some("resource.k8s.io/v1beta1"), false),
    ] {
        let mut op = json!({"mode": "gpuCluster"});
        if let Some(api) = api {
            op["resourceClaimAPIVersion"] = json!(api);
        }
        let what = format!("gpuCluster, {}", api.unwrap_or("the default API"));
        let r = template(&helm, &[], &[json!({"gpuOperator": op})]).unwrap();
        let templates = r.all("ResourceClaimTemplate");
        let [t] = templates.as_slice() else {
            f.add(format!(
                "{what}: {} ResourceClaimTemplates, want one",
                templates.len()
            ));
            continue;
        };
        let name = t.name().to_owned();
        if t.value["apiVersion"] != api.unwrap_or("resource.k8s.io/v1") {
            f.add(format!("{what}: apiVersion {}", t.value["apiVersion"]));
        }
        let requests = &t.value["spec"]["spec"]["devices"]["requests"];
        let mut want = json!({"name": "admin-gpus"});
        if nested {
            want["exactly"] = want_request.clone();
        } else {
            for (k, v) in want_request.as_object().unwrap() {
                want[k] = v.clone();
            }
        }
        if *requests != json!([want]) {
            f.add(format!("{what}: requests {requests}, want [{want}]"));
        }
        let specs = [
            (
                "DaemonSet",
                r.one("DaemonSet").value["spec"]["template"]["spec"].clone(),
            ),
            ("helm test check pod", {
                let check = r
                    .all("Pod")
                    .into_iter()
                    .find(|p| p.value["spec"]["containers"][0]["name"] == "check")
                    .map(|p| p.value["spec"].clone());
                check.unwrap_or(Value::Null)
            }),
        ];
        for (who, spec) in specs {
            let claims = json!([{"name": "admin-gpus", "resourceClaimTemplateName": name}]);
            if spec["resourceClaims"] != claims {
                f.add(format!(
                    "{what}: {who} resourceClaims {}, want {claims}",
                    spec["resourceClaims"]
                ));
            }
            let c = &spec["containers"][0];
            if c["resources"]["claims"] != json!([{"name": "admin-gpus"}]) {
                f.add(format!(
                    "{what}: {who} container claims {}",
                    c["resources"]["claims"]
                ));
            }
            if c["resources"]["limits"]["memory"].is_null() {
                f.add(format!(
                    "{what}: {who} lost the chart's resources: {}",
                    c["resources"]
                ));
            }
        }
    }
    for values in [
        json!({"gpuOperator": {"mode": "gpuCluster", "adminAccessClaim": false}}),
        json!({"gpuOperator": {"mode": "clusterPolicy"}}),
        json!({}),
    ] {
        let r = template(&helm, &[], std::slice::from_ref(&values)).unwrap();
        let spec = &r.one("DaemonSet").value["spec"]["template"]["spec"];
        if !r.all("ResourceClaimTemplate").is_empty()
            || !spec["resourceClaims"].is_null()
            || !spec["containers"][0]["resources"]["claims"].is_null()
        {
            f.add(format!("{values}: a claim is rendered"));
        }
    }
    f.finish("admin-access claim");
}

#[test]
pub(crate) fn notes_name_the_operator_label_and_the_counters_file() {
    let Some(helm) = helm_or_skip("notes_name_the_operator_label_and_the_counters_file") else {
        return;
    };
    let mut f = Failures::default();
    let file = "/etc/dcgm-exporter/dcp-metrics-included.csv";
    for (values, want, not) in [
        (
            json!({"gpuOperator": {"mode": "gpuCluster"}}),
            vec![
                "nvidia.com/gpu.deploy.dcgm-exporter-dra=true (gpuOperator.mode=gpuCluster",
                "It reads ResourceSlices through the Kubernetes API",
                "admin-access ResourceClaimTemplate\ngpu-exporter-admin",
                "kubectl label namespace gpu-exporter resource.kubernetes.io/admin-access=true",
            ],
            vec!["nvidia.com/gpu.present", "this node's pods"],
        ),
        (
            json!({"gpuOperator": {"mode": "gpuCluster", "adminAccessClaim": false}}),
            vec!["It reads ResourceSlices through the Kubernetes API"],
            vec!["admin-access"],
        ),
        (
            json!({"gpuOperator": {"mode": "clusterPolicy"}}),
            vec!["nvidia.com/gpu.deploy.dcgm-exporter=true (gpuOperator.mode=clusterPolicy"],
            vec!["nvidia.com/gpu.present", "admin-access"],
        ),
        (
            json!({"extraEnv": operator_env()}),
            vec![
                "on every node labelled\nnvidia.com/gpu.present=true",
                &format!(
                    "Counters: the file that extraEnv DCGM_EXPORTER_COLLECTORS={file} name(s)"
                ),
            ],
            vec!["preset", "/etc/gpu-exporter/counters"],
        ),
        (
            json!({}),
            vec![
                "Counters: the \"default\" preset, mounted at /etc/gpu-exporter/counters.",
                "Per-process attribution is off",
                "kubernetes.processMetrics=true\n  gives each its own SM use",
            ],
            vec!["/etc/dcgm-exporter"],
        ),
        (
            json!({"kubernetes": {"processMetrics": true}}),
            vec!["Per-process attribution is on"],
            vec!["Per-process attribution is off"],
        ),
    ] {
        let notes = match notes(&helm, std::slice::from_ref(&values)) {
            Ok(n) => n,
            Err(e) => {
                f.add(format!("{values}: {e}"));
                continue;
            }
        };
        for w in &want {
            if !notes.contains(w) {
                f.add(format!("{values}: NOTES.txt lacks {w:?}:\n{notes}"));
            }
        }
        for n in &not {
            if notes.contains(n) {
                f.add(format!("{values}: NOTES.txt says {n:?}:\n{notes}"));
            }
        }
        if notes.starts_with('\n') || notes.contains("\n\n\n") {
            f.add(format!(
                "{values}: NOTES.txt has stray blank lines:\n{notes}"
            ));
        }
    }
    f.finish("NOTES.txt with the GPU Operator's settings");
}
