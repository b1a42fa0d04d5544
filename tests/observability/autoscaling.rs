//! Autoscaling on per-pod GPU utilization (`deploy/autoscaling/`, docs/autoscaling.md), end to
//! end: one exporter on the H100 MIG node (`h100-mig`: whole GPUs, MIG instances of three
//! sizes, a GPU time-sliced between two pods, a DRA claim, a process outside Kubernetes),
//! scraped by two Prometheus servers with the shipped rules: one with `honor_labels: true`, one
//! with `honor_labels: false` and the target labels a ServiceMonitor gives (`namespace`, `pod`,
//! `container` of the exporter's own pod), where the workload's labels arrive as `exported_*`.
//!
//! On each, the queries the autoscalers would run must give one value per workload pod:
//! prometheus-adapter's `metricsQuery` expanded as the adapter expands it for an HPA's pods
//! (`adapter_query`), KEDA's query (one value), and the recording rule they read,
//! `pod:accelerator_utilization:ratio`, with exactly the workload pods of the scenario, never the
//! exporter's own pod, no `exported_*` label. On the `honor_labels: false` server the raw
//! `gpu_allocation_info` is shown to carry `exported_pod` (and the exporter's pod as `pod`): the
//! rule is what makes the adapter's `namespace`/`pod` matchers find the workload.
//!
//! Every query of one round is asked at the same evaluation time, so the adapter's values, KEDA's
//! and the rule's can be compared exactly.

use super::*;

/// The built-in scenario (scenarios/h100-mig.toml, the file the simulator embeds).
const SCENARIO: &str = "h100-mig";

const ADAPTER_RULES: &str = "deploy/autoscaling/prometheus-adapter-rules.yaml";
const KEDA_SCALED_OBJECT: &str = "deploy/autoscaling/keda-scaledobject.yaml";
const HPA: &str = "deploy/autoscaling/hpa.yaml";

/// The recording rule the autoscalers read.
const POD_RULE: &str = "pod:accelerator_utilization:ratio";

/// The exporter's own pod, as the ServiceMonitor's target labels name it.
const EXPORTER_NAMESPACE: &str = "gpu-exporter";
const EXPORTER_POD: &str = "gpu-exporter-abcde";
const EXPORTER_CONTAINER: &str = "gpu-exporter";

/// What an HPA asks the adapter for: (what they hold, the HPA's namespace, its pods). An HPA
/// asks within one namespace, so GPU 5's two holders are two asks.
const ASKS: [(&str, &str, &[&str]); 5] = [
    ("GPU 5's 3g.40gb instance", "research", &["finetune-0"]),
    (
        "GPU 5's 2g.20gb instance",
        "inference",
        &["vision-7c8d9e0f1a-k8s9d"],
    ),
    (
        "GPU 2's 1g.10gb instances 7-10",
        "inference",
        &[
            "chat-api-7d4b9c8f6d-x2k4p",
            "chat-api-7d4b9c8f6d-9fj2m",
            "embed-5c6d7e8f9a-qq7rt",
        ],
    ),
    ("GPU 2's idle instance 11", "sandbox", &["notebook-alice"]),
    ("GPU 4, time-sliced", "inference", &["rerank-a", "rerank-b"]),
];

/// The pods of the example Deployment `rerank` that KEDA's query averages over (the
/// scenario's pods on the time-sliced GPU 4).
const RERANK_PODS: [&str; 2] = ["rerank-a", "rerank-b"];

/// Where the rule takes some pods' values from, as a query over the series it reads: at the
/// time the rule's sample was recorded the two agree. `{P}` is the label holding the
/// workload's pod name on the raw series (`exported_pod` with honor_labels: false).
const SOURCES: [(&str, &str, &str, &str); 5] = [
    (
        "inference",
        "rerank-a",
        "its own SM utilization on the time-sliced GPU 4 (not the GPU's)",
        r#"gpu_container_sm_utilization_ratio{gpu="4",{P}="rerank-a"}"#,
    ),
    (
        "inference",
        "rerank-b",
        "its own SM utilization on the time-sliced GPU 4 (not the GPU's)",
        r#"gpu_container_sm_utilization_ratio{gpu="4",{P}="rerank-b"}"#,
    ),
    (
        "inference",
        "vision-7c8d9e0f1a-k8s9d",
        "the engine activity of its 2g.20gb instance (GPU 5, GPU_I_ID 3)",
        r#"DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="5",GPU_I_ID="3"}"#,
    ),
    (
        "research",
        "finetune-0",
        "the engine activity of its 3g.40gb instance (GPU 5, GPU_I_ID 2)",
        r#"DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="5",GPU_I_ID="2"}"#,
    ),
    (
        "inference",
        "embed-5c6d7e8f9a-qq7rt",
        "the mean engine activity of its two 1g.10gb instances (GPU 2, GPU_I_ID 9 and 10)",
        r#"avg(DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="2",GPU_I_ID=~"9|10"})"#,
    ),
];

/// How long, from both servers being ready, the rules may take to give the answers.
const DEADLINE: Duration = Duration::from_secs(30);

/// prometheus-adapter's rule, as the test reads it.
struct AdapterRule {
    series_query: String,
    matches: String,
    name_as: String,
    /// The Prometheus label of the `namespace` and of the `pod` resource.
    namespace_label: String,
    pod_label: String,
    metrics_query: String,
}

#[test]
fn autoscaling_queries_give_one_value_per_workload_pod() {
    let test = "autoscaling_queries_give_one_value_per_workload_pod";
    let Some(tools) = tools_or_skip(&["prometheus"], test) else {
        return;
    };
    let started = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut f = Failures::default();

    // The files, read as the adapter, KEDA and the HPA controller read them.
    let Some(adapter) = adapter_rule(&root.join(ADAPTER_RULES), &mut f) else {
        f.finish(ADAPTER_RULES);
        return;
    };
    let keda_query = keda_query(&root.join(KEDA_SCALED_OBJECT), &mut f);
    let hpa_metric = hpa_metric(&root.join(HPA), &mut f);
    let expected = workload_pods(&root.join(format!("scenarios/{SCENARIO}.toml")));
    for (what, ns, pods) in ASKS {
        for p in pods {
            assert!(
                expected.contains(&((*ns).to_owned(), (*p).to_owned())),
                "{what}: {ns}/{p} is not a pod of {SCENARIO}"
            );
        }
    }

    // One exporter; both servers start while it starts.
    let mut procs = Procs {
        children: Vec::new(),
        dir: tempfile::tempdir().unwrap(),
    };
    let port = common::free_port();
    let exporter_idx = procs.spawn(
        "exporter",
        exporter(root, port).args(["--simulate", SCENARIO]),
    );
    let alerts = layout().alerts;
    let rules = alerts
        .join(RULES_FILE)
        .canonicalize()
        .unwrap_or_else(|_| alerts.join(RULES_FILE));
    let configs = [true, false].map(|honor| (honor, prometheus_config(&rules, port, honor)));
    let servers: Vec<(bool, Procs, u16)> = std::thread::scope(|s| {
        let handles: Vec<_> = configs
            .iter()
            .map(|(honor, config)| {
                let tool = &tools[0];
                s.spawn(move || {
                    let mut p = Procs {
                        children: Vec::new(),
                        dir: tempfile::tempdir().unwrap(),
                    };
                    let prom = p.start_prometheus(tool, config);
                    (*honor, p, prom)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a Prometheus server did not start"))
            .collect()
    });
    procs.wait_http(exporter_idx, port, "/ready", Duration::from_secs(60));

    // Ask each server until it answers everything right, or the deadline.
    let deadline = Instant::now() + DEADLINE;
    let mut last: Vec<(bool, Vec<String>)> = servers
        .iter()
        .map(|(honor, _, _)| (*honor, vec!["not asked yet".to_owned()]))
        .collect();
    let mut rounds = 0;
    loop {
        rounds += 1;
        for ((honor, _, prom), (_, problems)) in servers.iter().zip(last.iter_mut()) {
            if !problems.is_empty() {
                *problems = check_server(*prom, *honor, &adapter, keda_query.as_deref(), &expected);
            }
        }
        if last.iter().all(|(_, p)| p.is_empty()) || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    for (honor, problems) in &last {
        for p in problems {
            f.add(format!("honor_labels: {honor}: {p}"));
        }
    }
    // The HPA names the metric the adapter serves.
    let api_name = regex::Regex::new(&adapter.matches)
        .map(|r| r.replace(POD_RULE, adapter.name_as.as_str()).into_owned())
        .unwrap_or_default();
    if hpa_metric.as_deref() != Some(api_name.as_str()) {
        f.add(format!(
            "{HPA} asks for the metric {hpa_metric:?}; {ADAPTER_RULES} serves {POD_RULE} as {api_name:?}"
        ));
    }
    say(&format!(
        "autoscaling: {} workload pods, {} adapter asks and KEDA's query on 2 Prometheus servers \
         (honor_labels true and false), {rounds} rounds, in {:.1} s",
        expected.len(),
        ASKS.len(),
        started.elapsed().as_secs_f64()
    ));
    drop(servers);
    drop(procs);
    f.finish("autoscaling queries");
}

/// Prometheus scraping the exporter at `port` every second with `rules`; with `honor_labels:
/// false`, the target carries the labels a ServiceMonitor gives it (the exporter pod's).
fn prometheus_config(rules: &Path, port: u16, honor: bool) -> String {
    let mut c = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n  - {}\n\
         scrape_configs:\n  - job_name: gpu-exporter\n    honor_labels: {honor}\n    static_configs:\n\
         \x20     - targets: [\"127.0.0.1:{port}\"]\n",
        serde_json::to_string(&rules.to_string_lossy()).unwrap()
    );
    if !honor {
        c.push_str(&format!(
            "        labels: {{namespace: {EXPORTER_NAMESPACE}, pod: {EXPORTER_POD}, \
             container: {EXPORTER_CONTAINER}}}\n"
        ));
    }
    c
}

/// The adapter's one rule: discovery, association, naming, query.
fn adapter_rule(path: &Path, f: &mut Failures) -> Option<AdapterRule> {
    let tree = read_yaml(path).map_err(|e| f.add(e)).ok()?;
    let rules = array(&tree, "rules");
    if rules.len() != 1 {
        f.add(format!(
            "{ADAPTER_RULES}: expected one rule, found {}",
            rules.len()
        ));
        return None;
    }
    let r = &rules[0];
    let text = |v: Option<&Value>, what: &str, f: &mut Failures| {
        let s = v.and_then(scalar).unwrap_or_default();
        if s.is_empty() {
            f.add(format!("{ADAPTER_RULES}: no {what}"));
        }
        s
    };
    // `resources.overrides`: label → {resource}; the labels of the two resources.
    let overrides = r.pointer("/resources/overrides").and_then(Value::as_object);
    let label_of = |resource: &str| {
        overrides.and_then(|o| {
            o.iter()
                .find(|(_, v)| str_of(v, "resource") == Some(resource))
                .map(|(k, _)| k.clone())
        })
    };
    let (Some(namespace_label), Some(pod_label)) = (label_of("namespace"), label_of("pod")) else {
        f.add(format!(
            "{ADAPTER_RULES}: resources.overrides must map a label to the namespace and one to the pod resource"
        ));
        return None;
    };
    if (namespace_label.as_str(), pod_label.as_str()) != ("namespace", "pod") {
        f.add(format!(
            "{ADAPTER_RULES}: the rule's labels are namespace and pod, not {namespace_label} and {pod_label}"
        ));
    }
    let rule = AdapterRule {
        series_query: text(r.get("seriesQuery"), "seriesQuery", f),
        matches: text(r.pointer("/name/matches"), "name.matches", f),
        name_as: text(r.pointer("/name/as"), "name.as", f),
        namespace_label,
        pod_label,
        metrics_query: text(r.get("metricsQuery"), "metricsQuery", f),
    };
    if let Err(e) = regex::Regex::new(&rule.matches) {
        f.add(format!("{ADAPTER_RULES}: name.matches: {e}"));
        return None;
    }
    for field in ["Series", "LabelMatchers", "GroupBy"] {
        if !template_fields(&rule.metrics_query).contains(&field.to_owned()) {
            f.add(format!(
                "{ADAPTER_RULES}: metricsQuery does not use <<.{field}>>"
            ));
        }
    }
    Some(rule)
}

/// The fields a Go template with prometheus-adapter's delimiters (`<<`, `>>`) uses.
fn template_fields(template: &str) -> Vec<String> {
    let re = regex::Regex::new(r"<<\s*\.(\w+)\s*>>").unwrap();
    re.captures_iter(template)
        .map(|c| c[1].to_owned())
        .collect()
}

/// The query prometheus-adapter runs for an HPA's Pods metric over `pods` of `namespace`, as
/// its `metricsQuery.Build` makes it: `Series` is the series name; `LabelMatchers` the
/// namespace's matcher, then the pod resource's, `=` for one name and `=~` on the names joined
/// by `|` for several (values quoted with Go's %q; these names need no escaping); `GroupBy` the
/// pod resource's label.
fn adapter_query(rule: &AdapterRule, series: &str, namespace: &str, pods: &[&str]) -> String {
    let pod_matcher = match pods {
        [one] => format!("{}=\"{one}\"", rule.pod_label),
        _ => format!("{}=~\"{}\"", rule.pod_label, pods.join("|")),
    };
    let matchers = format!("{}=\"{namespace}\",{pod_matcher}", rule.namespace_label);
    let re = regex::Regex::new(r"<<\s*\.(\w+)\s*>>").unwrap();
    re.replace_all(&rule.metrics_query, |c: &regex::Captures| match &c[1] {
        "Series" => series.to_owned(),
        "LabelMatchers" => matchers.clone(),
        "GroupBy" => rule.pod_label.clone(),
        other => format!("<<unknown template field {other}>>"),
    })
    .into_owned()
}

/// KEDA's query, after checking the ScaledObject around it: the Deployment `rerank` of
/// `inference`, one Prometheus trigger with a server, a threshold and `metricType: Value` (the
/// query is an average over the pods).
fn keda_query(path: &Path, f: &mut Failures) -> Option<String> {
    let tree = read_yaml(path).map_err(|e| f.add(e)).ok()?;
    let mut bad = |what: String| f.add(format!("{KEDA_SCALED_OBJECT}: {what}"));
    if (str_of(&tree, "apiVersion"), str_of(&tree, "kind"))
        != (Some("keda.sh/v1alpha1"), Some("ScaledObject"))
    {
        bad("not a keda.sh/v1alpha1 ScaledObject".into());
    }
    if tree.pointer("/metadata/namespace").and_then(Value::as_str) != Some("inference")
        || tree
            .pointer("/spec/scaleTargetRef/name")
            .and_then(Value::as_str)
            != Some("rerank")
    {
        bad("does not scale the Deployment rerank of namespace inference".into());
    }
    let triggers = tree
        .pointer("/spec/triggers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let [t] = triggers.as_slice() else {
        bad(format!("expected one trigger, found {}", triggers.len()));
        return None;
    };
    if str_of(t, "type") != Some("prometheus") {
        bad("the trigger is not of type prometheus".into());
    }
    if str_of(t, "metricType") != Some("Value") {
        bad("the query averages over the pods: metricType must be Value".into());
    }
    let meta = |k: &str| t.get("metadata").and_then(|m| m.get(k)).and_then(scalar);
    if meta("serverAddress").is_none_or(|s| !s.starts_with("http")) {
        bad("no serverAddress".into());
    }
    match meta("threshold").map(|s| s.parse::<f64>()) {
        Some(Ok(v)) if v > 0.0 && v <= 100.0 => {}
        other => bad(format!(
            "threshold {other:?}: expected a percentage in (0, 100]"
        )),
    }
    let q = meta("query").map(|q| q.trim().to_owned());
    if q.as_deref().is_none_or(str::is_empty) {
        bad("no query".into());
    }
    q
}

/// The metric name the HPA asks for, after checking it is an autoscaling/v2 Pods metric with a
/// target average in percent (not milli-units).
fn hpa_metric(path: &Path, f: &mut Failures) -> Option<String> {
    let tree = read_yaml(path).map_err(|e| f.add(e)).ok()?;
    let mut bad = |what: String| f.add(format!("{HPA}: {what}"));
    if (str_of(&tree, "apiVersion"), str_of(&tree, "kind"))
        != (Some("autoscaling/v2"), Some("HorizontalPodAutoscaler"))
    {
        bad("not an autoscaling/v2 HorizontalPodAutoscaler".into());
    }
    let metrics = tree
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let [m] = metrics.as_slice() else {
        bad(format!("expected one metric, found {}", metrics.len()));
        return None;
    };
    if str_of(m, "type") != Some("Pods") {
        bad("the metric is not of type Pods".into());
    }
    let target = m.pointer("/pods/target");
    if target.and_then(|t| str_of(t, "type")) != Some("AverageValue") {
        bad("the target is not an AverageValue".into());
    }
    match target
        .and_then(|t| t.get("averageValue"))
        .and_then(scalar)
        .map(|s| s.parse::<f64>())
    {
        Some(Ok(v)) if v > 0.0 && v <= 100.0 => {}
        other => bad(format!(
            "averageValue {other:?}: expected a percentage in (0, 100], as the adapter serves"
        )),
    }
    m.pointer("/pods/metric/name")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// (namespace, pod) of every pod of the scenario holding a GPU: a container with whole GPUs,
/// MIG instances, time-sliced replicas or a DRA claim.
fn workload_pods(path: &Path) -> BTreeSet<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap();
    let table: toml::Table = text.parse().unwrap();
    let holds = |c: &toml::Value| {
        ["gpus", "mig", "shared", "claims"].iter().any(|k| {
            c.get(k)
                .and_then(toml::Value::as_array)
                .is_some_and(|a| !a.is_empty())
        })
    };
    let pods: BTreeSet<(String, String)> = table
        .get("pods")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter(|p| {
            p.get("containers")
                .and_then(toml::Value::as_array)
                .is_some_and(|cs| cs.iter().any(holds))
        })
        .map(|p| {
            let s = |k: &str| p.get(k).and_then(toml::Value::as_str).unwrap().to_owned();
            (s("namespace"), s("name"))
        })
        .collect();
    assert!(!pods.is_empty(), "{}: no pods hold a GPU", path.display());
    pods
}

fn shown(samples: &[Sample]) -> String {
    samples
        .iter()
        .map(|(l, v)| format!("{l:?} {v}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// One round of questions to the server at `port`, all at one evaluation time; the problems
/// (none once everything is right).
fn check_server(
    port: u16,
    honor: bool,
    adapter: &AdapterRule,
    keda: Option<&str>,
    expected: &BTreeSet<(String, String)>,
) -> Vec<String> {
    let mut p = Vec::new();
    let now = unix_now();
    let ask = |q: &str| query_at(port, q, now);

    // The rule: one series per workload pod holding a GPU, labelled as the workload.
    let rule = match ask(POD_RULE) {
        Ok(r) => r,
        Err(e) => return vec![format!("{POD_RULE}: {e}")],
    };
    let mut per_pod: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for (labels, v) in &rule {
        let get = |k: &str| labels.get(k).cloned().unwrap_or_default();
        if get("pod") == EXPORTER_POD {
            p.push(format!("{POD_RULE} has the exporter's own pod: {labels:?}"));
        }
        let exported: Vec<&String> = labels
            .keys()
            .filter(|k| k.starts_with("exported_"))
            .collect();
        if !exported.is_empty() {
            p.push(format!("{POD_RULE} has {exported:?}: {labels:?}"));
        }
        if !(0.0..=1.0).contains(v) {
            p.push(format!("{POD_RULE} is {v}, outside 0-1: {labels:?}"));
        }
        per_pod
            .entry((get("namespace"), get("pod")))
            .or_default()
            .push(*v);
    }
    let got: BTreeSet<(String, String)> = per_pod.keys().cloned().collect();
    if &got != expected {
        p.push(format!(
            "{POD_RULE}: pods missing {:?}, unexpected {:?}",
            expected.difference(&got).collect::<Vec<_>>(),
            got.difference(expected).collect::<Vec<_>>()
        ));
    }
    for (pod, vs) in per_pod.iter().filter(|(_, vs)| vs.len() > 1) {
        p.push(format!("{POD_RULE}: {} series for {pod:?}", vs.len()));
    }
    let rule_value = |ns: &str, pod: &str| {
        per_pod
            .get(&(ns.to_owned(), pod.to_owned()))
            .and_then(|v| v.first().copied())
    };

    // What the values are: each from the series the rule reads, as they were when it was
    // recorded (a MIG instance's own activity, a time-sliced pod's own SM utilization).
    let pod_label = if honor { "pod" } else { "exported_pod" };
    for (ns, pod, what, source) in SOURCES {
        let source = source.replace("{P}", pod_label);
        let at = format!("timestamp({POD_RULE}{{namespace=\"{ns}\",pod=\"{pod}\"}})");
        let Some(v) = rule_value(ns, pod) else {
            continue; // reported above
        };
        let recorded = match ask(&at).as_deref() {
            Ok([(_, t)]) => *t,
            other => {
                p.push(format!("{at}: {other:?}"));
                continue;
            }
        };
        match query_at(port, &source, recorded) {
            Ok(r) if matches!(r.as_slice(), [(_, s)] if (s - v).abs() < 1e-9) => {}
            other => p.push(format!(
                "{POD_RULE} of {ns}/{pod} is {v} (recorded at {recorded:.3}); expected {what}: \
                 {source} there gave {}",
                other.map_or_else(|e| e, |r| format!("[{}]", shown(&r)))
            )),
        }
    }

    // The adapter: what the series query discovers, and one value per pod asked for.
    let series = match prom_api(
        port,
        "/api/v1/series",
        &[("match[]", adapter.series_query.as_str())],
    ) {
        Ok(d) => d.as_array().cloned().unwrap_or_default(),
        Err(e) => {
            p.push(format!("seriesQuery {}: {e:?}", adapter.series_query));
            Vec::new()
        }
    };
    let matches = regex::Regex::new(&adapter.matches).unwrap();
    let names: BTreeSet<&str> = series
        .iter()
        .filter_map(|s| str_of(s, "__name__"))
        .filter(|n| matches.is_match(n))
        .collect();
    if names != BTreeSet::from([POD_RULE]) {
        p.push(format!(
            "the adapter's seriesQuery {} with name.matches {} discovers {names:?}, not {POD_RULE}",
            adapter.series_query, adapter.matches
        ));
    }
    for (what, ns, pods) in ASKS {
        let q = adapter_query(adapter, POD_RULE, ns, pods);
        let r = match ask(&q) {
            Ok(r) => r,
            Err(e) => {
                p.push(format!("adapter, {what}: {q}: {e}"));
                continue;
            }
        };
        let mut seen = BTreeSet::new();
        let mut ok = r.len() == pods.len();
        for (labels, v) in &r {
            let pod = labels
                .get(&adapter.pod_label)
                .map(String::as_str)
                .unwrap_or("");
            ok &= pods.contains(&pod) && seen.insert(pod) && (0.0..=100.0).contains(v);
            // The adapter serves the rule's value in percent.
            ok &= rule_value(ns, pod).is_some_and(|rv| (100.0 * rv - v).abs() < 1e-9);
        }
        if !ok {
            p.push(format!(
                "adapter, {what}: expected one value in 0-100 (100 x {POD_RULE}) for each of \
                 {pods:?}: {q} gave [{}]",
                shown(&r)
            ));
        }
    }

    // KEDA: one value, the mean over the Deployment's pods.
    if let Some(q) = keda {
        let want = RERANK_PODS
            .iter()
            .map(|pod| rule_value("inference", pod))
            .sum::<Option<f64>>()
            .map(|s| 100.0 * s / RERANK_PODS.len() as f64);
        match ask(q) {
            Ok(r) => {
                let ok = match (r.as_slice(), want) {
                    ([(_, v)], Some(w)) => (0.0..=100.0).contains(v) && (v - w).abs() < 1e-9,
                    _ => false,
                };
                if !ok {
                    p.push(format!(
                        "KEDA: expected one value in 0-100, the mean of {RERANK_PODS:?} ({want:?}): \
                         {q} gave [{}]",
                        shown(&r)
                    ));
                }
            }
            Err(e) => p.push(format!("KEDA: {q}: {e}")),
        }
    }

    // The pitfall the rule fixes: with honor_labels: false the raw series name the exporter's
    // pod as `pod` and the workload's as `exported_pod`, so the adapter's matchers on them find
    // nothing.
    match ask("gpu_allocation_info") {
        Ok(r) if r.is_empty() => p.push("gpu_allocation_info: empty".into()),
        Ok(r) => {
            let wrong: Vec<&Sample> = r
                .iter()
                .filter(|(l, _)| {
                    let exported = l.get("exported_pod").is_some_and(|s| !s.is_empty());
                    let own = l.get("pod").map(String::as_str) == Some(EXPORTER_POD);
                    if honor {
                        exported || own
                    } else {
                        !(exported && own)
                    }
                })
                .collect();
            if !wrong.is_empty() {
                p.push(format!(
                    "gpu_allocation_info: expected {} on every row; not on {}",
                    if honor {
                        "the workload's pod as `pod`, no exported_pod"
                    } else {
                        "the workload's pod as `exported_pod`, the exporter's as `pod`"
                    },
                    wrong
                        .iter()
                        .map(|(l, _)| format!("{l:?}"))
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
            }
        }
        Err(e) => p.push(format!("gpu_allocation_info: {e}")),
    }
    if !honor {
        let (_, ns, pods) = ASKS[ASKS.len() - 1];
        let q = adapter_query(adapter, "gpu_allocation_info", ns, pods);
        match ask(&q) {
            Ok(r) if r.is_empty() => {}
            other => p.push(format!(
                "the adapter's query on the raw gpu_allocation_info should find nothing with \
                 honor_labels: false: {q}: {other:?}"
            )),
        }
    }
    p
}
