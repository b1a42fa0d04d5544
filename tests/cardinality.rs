//! The series budget and the cardinality controls, on the binary.
//!
//! The budget: with the default counters file (the built-in set), on every built-in scenario,
//! the default configuration serves at most 2x, and each dcgm-exporter profile at most 1.5x,
//! the series dcgm-exporter would serve for that file on that node. That baseline is the
//! number of `DCGM_*` series: the file's fields, per entity that serves them, in the shape of
//! the version named (under a dcgm-* profile, that profile's own count; for `native`, the
//! fewest of every profile's and native's own). A dcgm-* profile serves no family of ours
//! beyond the exporter's own health (`gpu_exporter_*`) unless `--include-families` asks.
//! This counts series; it times nothing.
//!
//! The controls: `--include-families`, `--exclude-families`, `--drop-labels`,
//! `--max-labels-per-series` (flag, variable, configuration-file key) and their start-up
//! errors; link health without per-link export; label values that hold still across ticks.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use common::{BIN, Exporter, built_sim_lib, free_port, http_get, label_opt, series, value};

const SCENARIOS: [&str; 9] = [
    "h100-mig",
    "a100-l4",
    "incidents",
    "hgx-h200",
    "hgx-b200",
    "gb200-nvl72",
    "l40s",
    "a100-mig-t4",
    "batch",
];

const PROFILES: [&str; 5] = [
    "native",
    "dcgm-4.8.2",
    "dcgm-4.8.4",
    "dcgm-4.9",
    "dcgm-4.10",
];

/// Series per family of one scrape (comment lines left out).
fn families(text: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for l in text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let name = l.split(['{', ' ']).next().unwrap();
        *out.entry(name.to_owned()).or_insert(0) += 1;
    }
    out
}

fn total(f: &BTreeMap<String, usize>) -> usize {
    f.values().sum()
}

fn dcgm(f: &BTreeMap<String, usize>) -> usize {
    f.iter()
        .filter(|(n, _)| n.starts_with("DCGM_"))
        .map(|(_, n)| n)
        .sum()
}

fn samples(text: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix("gpu_exporter_samples_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0.0)
}

/// The largest page between the 5th and the 10th tick (DCGM's profiling fields and the rates
/// need a few ticks; some families come and go with the workload's processes, so the budget
/// holds for the worst of those scrapes).
fn settled(e: &Exporter) -> String {
    let mut worst = String::new();
    for _ in 0..200 {
        let text = e.metrics();
        let n = samples(&text);
        if n >= 5.0 && total(&families(&text)) > total(&families(&worst)) {
            worst = text;
        }
        if n >= 10.0 && !worst.is_empty() {
            return worst;
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    panic!("fewer than 10 ticks in a minute; log:\n{}", e.log());
}

fn start(args: &[&str]) -> Exporter {
    Exporter::builder()
        .args(["-c", "500"])
        .args(args)
        .log_pipe()
        .start()
}

#[test]
fn every_builtin_scenario_stays_within_the_series_budget() {
    let mut failures = common::Failures(Vec::new());
    let mut table = String::new();
    for scenario in SCENARIOS {
        let runs: Vec<Exporter> = PROFILES
            .iter()
            .map(|p| start(&["--simulate", scenario, "--compatibility", p]))
            .collect();
        let pages: Vec<BTreeMap<String, usize>> =
            runs.iter().map(|e| families(&settled(e))).collect();
        drop(runs);
        let baseline_native = pages.iter().map(dcgm).min().unwrap();
        for (profile, f) in PROFILES.iter().zip(&pages) {
            let (limit, baseline) = if *profile == "native" {
                (2.0, baseline_native)
            } else {
                (1.5, dcgm(f))
            };
            let served = total(f);
            table.push_str(&format!(
                "{scenario:12} {profile:11} served {served:5} DCGM baseline {baseline:4} ratio {:.2} (limit {limit})\n",
                served as f64 / baseline as f64
            ));
            if served as f64 > limit * baseline as f64 {
                let top: Vec<String> = f
                    .iter()
                    .filter(|(n, _)| !n.starts_with("DCGM_"))
                    .map(|(n, c)| format!("{n} {c}"))
                    .collect();
                failures.add(format!(
                    "{scenario} {profile}: {served} series, over {limit} x {baseline}; ours: {top:?}"
                ));
            }
            if *profile != "native" {
                for name in f.keys() {
                    if !name.starts_with("DCGM_") && !name.starts_with("gpu_exporter_") {
                        failures.add(format!(
                            "{scenario} {profile}: {name} is no family of that version"
                        ));
                    }
                }
            }
            // Per-link detail is opt-in.
            if f.contains_key("gpu_nvlink_up") {
                failures.add(format!("{scenario} {profile}: gpu_nvlink_up by default"));
            }
        }
    }
    println!("{table}");
    failures.finish("series budget");
}

#[test]
fn a_profile_serves_our_families_when_asked_for() {
    let e = start(&[
        "--simulate",
        "hgx-h200",
        "--compatibility",
        "dcgm-4.8.2",
        "--include-families",
        "DCGM_*,gpu_exporter_*,gpu_nvlink_links_down",
    ]);
    let text = e.metrics_until("links down", |t| {
        !series(t, "gpu_nvlink_links_down").is_empty()
    });
    assert_eq!(series(&text, "gpu_nvlink_links_down").len(), 8);
    assert!(series(&text, "gpu_xid_errors_total").is_empty());
    assert!(series(&text, "gpu_fabric_state").is_empty());
}

/// Link health without per-link export: the links-down count, the per-GPU totals, /status and
/// `check`, which read every link.
#[test]
fn link_health_shows_without_per_link_export() {
    let scenario = "tests/fixtures/scenarios/link-down.toml";
    let e = Exporter::builder()
        .args(["-c", "500", "--simulate", scenario])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .log_pipe()
        .start();
    let text = e.metrics_until("links down", |t| {
        !series(t, "gpu_nvlink_links_down").is_empty()
    });
    let down: BTreeMap<&str, f64> = series(&text, "gpu_nvlink_links_down")
        .into_iter()
        .map(|l| (label_opt(l, "gpu").unwrap(), value(l)))
        .collect();
    assert_eq!(down, BTreeMap::from([("0", 0.0), ("1", 1.0)]), "{text}");
    assert!(series(&text, "gpu_nvlink_up").is_empty());
    // The totals: per GPU, no nvlink label.
    let errors = series(&text, "gpu_nvlink_errors_total");
    assert!(!errors.is_empty());
    assert!(
        errors.iter().all(|l| label_opt(l, "nvlink").is_none()),
        "{errors:?}"
    );
    assert_eq!(
        series(&text, "gpu_nvlink_effective_bit_error_ratio").len(),
        2
    );
    let status = http_get(e.port, "/status", &[]).unwrap().text();
    assert!(status.contains("NVLink link(s) down: 3"), "{status}");
    // The landing page says the same.
    let landing = http_get(e.port, "/", &[]).unwrap().text();
    assert!(landing.contains("NVLink link(s) down: 3"), "{landing}");
    // `check` with totals and no link-entity row in the counters file still reads every link.
    let out = Command::new(BIN)
        .args(["check", "-a", &format!("127.0.0.1:{}", free_port())])
        .args(["--simulate", scenario, "--nvlink-links", "totals"])
        .arg("--nvml-lib")
        .arg(built_sim_lib())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.lines()
            .any(|l| l.contains("GPU 1 NVLink") && l.contains("down: 3")),
        "{out}"
    );
}

#[test]
fn per_link_detail_is_there_when_asked_for() {
    let e = start(&["--simulate", "hgx-h200", "--nvlink-links", "per-link"]);
    let text = e.metrics_until("per link", |t| !series(t, "gpu_nvlink_up").is_empty());
    assert_eq!(series(&text, "gpu_nvlink_up").len(), 8 * 18);
    assert_eq!(series(&text, "gpu_nvlink_links_down").len(), 8);
}

#[test]
fn families_are_included_and_excluded_by_glob() {
    // The flags.
    let e = start(&[
        "--simulate",
        "a100-l4",
        "--include-families",
        "DCGM_FI_DEV_*,gpu_exporter_*",
        "--exclude-families",
        "DCGM_FI_DEV_*_CLOCK",
    ]);
    let text = e.metrics_until("temperatures", |t| {
        !series(t, "DCGM_FI_DEV_GPU_TEMP").is_empty()
    });
    let f = families(&text);
    assert!(!f.contains_key("DCGM_FI_DEV_SM_CLOCK"), "{f:?}");
    assert!(!f.contains_key("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), "{f:?}");
    assert!(!f.contains_key("gpu_device_up"), "{f:?}");
    assert!(f.contains_key("gpu_exporter_nvml_up"), "{f:?}");
    // The variables.
    let e = Exporter::builder()
        .args(["-c", "500", "--simulate", "a100-l4"])
        .env(
            "GPU_EXPORTER_EXCLUDE_FAMILIES",
            "gpu_container_*,DCGM_FI_DEV_GPU_TEMP",
        )
        .start();
    let f = families(&e.metrics());
    assert!(!f.contains_key("DCGM_FI_DEV_GPU_TEMP"), "{f:?}");
    assert!(!f.keys().any(|n| n.starts_with("gpu_container_")), "{f:?}");
    assert!(f.contains_key("DCGM_FI_DEV_POWER_USAGE"), "{f:?}");
}

#[test]
fn labels_are_dropped_by_name_from_flag_and_config_file() {
    let e = start(&[
        "--simulate",
        "a100-l4",
        "--drop-labels",
        "pci_bus_id,DCGM_FI_DRIVER_VERSION",
    ]);
    let text = e.metrics();
    let temp = series(&text, "DCGM_FI_DEV_GPU_TEMP");
    assert!(!temp.is_empty());
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(!l.contains("pci_bus_id="), "{l}");
        assert!(!l.contains("DCGM_FI_DRIVER_VERSION="), "{l}");
    }
    assert!(label_opt(temp[0], "UUID").is_some(), "{}", temp[0]);
    // The configuration file's keys.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.yaml");
    std::fs::write(
        &file,
        "version: 2\nmetrics:\n  dropLabels: [modelName]\n  excludeFamilies: [\"gpu_xid_*\"]\n",
    )
    .unwrap();
    let e = start(&[
        "--simulate",
        "a100-l4",
        "--config-file",
        file.to_str().unwrap(),
    ]);
    let text = e.metrics();
    assert!(!text.contains("modelName="), "{text}");
    assert!(text.contains("pci_bus_id="));
}

/// Runs the binary with `args` until it exits; (exit code, stderr).
fn refused(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut c = Command::new(BIN);
    c.args(["-a", &format!("127.0.0.1:{}", free_port())])
        .args(args)
        .arg("--nvml-lib")
        .arg(built_sim_lib());
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// (flags, environment variables, words the refusal must contain).
type Misuse<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn misused_controls_stop_start_up_naming_the_flag_or_key() {
    let sim = ["--simulate", "a100-l4"];
    let cases: [Misuse; 9] = [
        (
            &["--include-families", "DCGM_[x"],
            &[],
            &["--include-families", "DCGM_[x", "not a glob"],
        ),
        (
            &["--exclude-families", "gpu temp"],
            &[],
            &["--exclude-families", "not a family glob"],
        ),
        (
            &["--drop-labels", "pci_bus_id,UUID"],
            &[],
            &["--drop-labels", "\"UUID\"", "never dropped", "collide"],
        ),
        (
            &[],
            &[("GPU_EXPORTER_DROP_LABELS", "pod")],
            &["--drop-labels", "\"pod\"", "never dropped"],
        ),
        (
            &["--max-labels-per-series", "5"],
            &[],
            &["--max-labels-per-series", "at least 10"],
        ),
        (
            &["--max-labels-per-series", "10"],
            &[],
            &[
                "would have",
                "labels (gpu, UUID",
                "--max-labels-per-series 10",
            ],
        ),
        (
            &["--series-labels", "wide"],
            &[],
            &["--series-labels", "\"wide\"", "expected lean or full"],
        ),
        (
            &["--compatibility", "dcgm-4.8.4", "--series-labels", "lean"],
            &[],
            &["--series-labels", "native's shape", "dcgm-4.8.4"],
        ),
        (
            &["--compatibility", "dcgm-4.9"],
            &[("GPU_EXPORTER_SERIES_LABELS", "lean")],
            &["--series-labels", "native's shape", "dcgm-4.9"],
        ),
    ];
    for (args, env, words) in cases {
        let mut all = sim.to_vec();
        all.extend_from_slice(args);
        let (code, err) = refused(&all, env);
        assert_eq!(code, Some(1), "{args:?}: {err}");
        for w in words {
            assert!(err.contains(w), "{args:?}: {w:?} missing in {err}");
        }
    }
    // The configuration file's key is named.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.yaml");
    for (yaml, words) in [
        ("dropLabels: [gpu]", ["metrics.dropLabels", "never dropped"]),
        (
            "seriesLabels: medium",
            ["metrics.seriesLabels", "expected lean or full"],
        ),
    ] {
        std::fs::write(&file, format!("version: 2\nmetrics:\n  {yaml}\n")).unwrap();
        let (code, err) = refused(
            &[
                "--simulate",
                "a100-l4",
                "--config-file",
                file.to_str().unwrap(),
            ],
            &[],
        );
        assert_eq!(code, Some(1), "{yaml}: {err}");
        for w in words {
            assert!(err.contains(w), "{yaml}: {w:?} missing in {err}");
        }
    }
}

/// `--series-labels`: lean by default (descriptions on `gpu_device_info`, holders on
/// `gpu_allocation_info`), full from the flag, the variable or the configuration file.
#[test]
fn the_label_shape_comes_from_flag_variable_and_config_file() {
    let lean = start(&["--simulate", "a100-l4", "-k"]);
    let text = lean.metrics_until("pods attributed", |t| t.contains("gpu_allocation_info{"));
    let temp = series(&text, "DCGM_FI_DEV_GPU_TEMP");
    assert!(!temp.is_empty(), "{text}");
    for l in text.lines().filter(|l| l.starts_with("DCGM_")) {
        for label in ["modelName=", "pci_bus_id=", "device=", "pod=", "namespace="] {
            assert!(!l.contains(label), "{label} in the lean shape: {l}");
        }
    }
    let info = series(&text, "gpu_device_info");
    assert_eq!(info.len(), 2, "{info:?}");
    assert!(
        info.iter().all(|l| l.contains("modelName=")
            && l.contains("pci_bus_id=")
            && l.contains("DCGM_FI_DRIVER_VERSION=")),
        "{info:?}"
    );
    assert!(
        series(&text, "gpu_allocation_info")
            .iter()
            .all(|l| l.contains("pod=") && !l.contains("modelName="))
    );
    // (flags, variables, configuration file): each asks for the full shape.
    type Way<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], Option<&'a str>);
    let full_ways: [Way; 3] = [
        (&["--series-labels", "full"], &[], None),
        (&[], &[("GPU_EXPORTER_SERIES_LABELS", "FULL")], None),
        (
            &[],
            &[],
            Some("version: 2\nmetrics:\n  seriesLabels: full\n"),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    for (args, env, file) in full_ways {
        let mut all = vec!["--simulate", "a100-l4", "-k"];
        all.extend_from_slice(args);
        let path = dir.path().join("config.yaml");
        if let Some(yaml) = file {
            std::fs::write(&path, yaml).unwrap();
            all.extend(["--config-file", path.to_str().unwrap()]);
        }
        let mut b = Exporter::builder()
            .args(["-c", "500"])
            .args(&all)
            .log_pipe();
        for (k, v) in env {
            b = b.env(k, v);
        }
        let e = b.start();
        let text = e.metrics_until("pods attributed", |t| t.contains("pod=\""));
        let temp = series(&text, "DCGM_FI_DEV_GPU_TEMP");
        assert!(
            temp.iter()
                .all(|l| l.contains("modelName=") && l.contains("pci_bus_id=")),
            "{args:?} {env:?} {file:?}: {temp:?}"
        );
        assert!(
            series(&text, "DCGM_FI_DEV_FB_USED")
                .iter()
                .any(|l| l.contains("pod=\"")),
            "{args:?} {env:?} {file:?}: no holder on the series"
        );
        assert_eq!(series(&text, "gpu_device_info").len(), 2);
    }
}

#[test]
fn the_label_guard_leaves_pod_labels_the_room_left() {
    // Lean: the widest series that carries pod labels is gpu_allocation_info, identity (5:
    // gpu, UUID and the MIG labels) + Hostname + resource, namespace, pod, container, pod_uid,
    // workload_kind, workload_name and the seven dra_* labels (a DRA claim on a MIG device has
    // all seven) = 20; a limit of 22 leaves two pod labels, kept in key order. Full:
    // gpu_allocation_info also carries the three descriptions (23), so 25 leaves two.
    for (shape, limit) in [("lean", "22"), ("full", "25")] {
        let e = start(&[
            "--simulate",
            "h100-mig",
            "--kubernetes-enable-pod-labels",
            "--series-labels",
            shape,
            "--max-labels-per-series",
            limit,
        ]);
        let text = e.metrics_until("pods attributed", |t| t.contains("pod=\""));
        let limit: usize = limit.parse().unwrap();
        // The exporter's own labels of an allocation row; the others are pod labels.
        let own = [
            "gpu",
            "UUID",
            "GPU_I_PROFILE",
            "GPU_I_ID",
            "mig_uuid",
            "Hostname",
            "pci_bus_id",
            "device",
            "modelName",
            "resource",
            "namespace",
            "pod",
            "container",
            "pod_uid",
            "workload_kind",
            "workload_name",
            "dra_claim_name",
            "dra_claim_namespace",
            "dra_device_name",
            "dra_driver_name",
            "dra_mig_device_uuid",
            "dra_mig_profile",
            "dra_pool_name",
            "vgpu",
        ];
        let mut most_pod_labels = 0;
        for l in text.lines().filter(|l| !l.starts_with('#')) {
            let n = l.matches("=\"").count();
            assert!(n <= limit, "{shape}: {n} labels: {l}");
            if l.starts_with("gpu_allocation_info{") {
                let names = l
                    .split(['{', ','])
                    .filter_map(|p| p.split_once("=\"").map(|(k, _)| k));
                most_pod_labels = most_pod_labels.max(names.filter(|k| !own.contains(k)).count());
            }
        }
        // The room left is given: the two pod labels of the widest holder.
        assert_eq!(
            most_pod_labels, 2,
            "{shape}: pod labels on an allocation row"
        );
    }
}

/// The label values of each (family, entity) never change between ticks: the set of label
/// sets per family, keyed by the series' identity, is the same at every scrape apart from
/// series that come or go with the entity or holder itself.
#[test]
fn label_values_hold_still_between_ticks() {
    // A steady node with pods, then a MIG layout change (an instance destroyed and another
    // made under the same GI id is a new entity: its profile is part of its identity).
    assert_no_churn(&["--simulate", "h100-mig", "-k"], 6.0, "");
    let relayout = "tests/fixtures/scenarios/mig-relayout.toml";
    // The run must see the new layout (its 1g.10gb instances) before it ends.
    assert_no_churn(
        &["--simulate", relayout, "-k"],
        10.0,
        "GPU_I_PROFILE=\"1g.10gb\"",
    );
}

/// Scrapes a node started with `args` until `ticks` more samples were taken and fails if a
/// series (keyed by its family and the labels that tell entities apart) changed its labels;
/// the last scrape must contain `must_see`.
fn assert_no_churn(args: &[&str], ticks: f64, must_see: &str) {
    let e = start(args);
    let key = |l: &str| -> Option<(String, String)> {
        let name = l.split('{').next()?.to_owned();
        let ident: Vec<&str> = [
            "gpu",
            "field",
            "source",
            "UUID",
            "GPU_I_ID",
            "GPU_I_PROFILE",
            "nvlink",
            "xid",
            "error",
            "resource",
            "namespace",
            "pod",
            "container",
            "vgpu",
        ]
        .iter()
        .filter_map(|k| label_opt(l, k))
        .collect();
        Some((
            format!("{name}|{}", ident.join("|")),
            l.rsplit_once(' ')?.0.to_owned(),
        ))
    };
    let mut seen: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let first = samples(&e.metrics());
    loop {
        let text = e.metrics();
        for l in text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains('{'))
        {
            if let Some((k, labels)) = key(l) {
                seen.entry(k).or_default().insert(labels);
            }
        }
        if samples(&text) >= first + ticks {
            assert!(
                text.contains(must_see),
                "{args:?}: no {must_see} by the end"
            );
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
    }
    let churned: Vec<_> = seen.iter().filter(|(_, v)| v.len() > 1).collect();
    assert!(
        churned.is_empty(),
        "labels changed between ticks ({args:?}): {churned:#?}"
    );
}

/// The label sets of every series a pod holds, keyed by family, entity and holder.
#[derive(Default)]
struct PodSeries(BTreeMap<String, BTreeSet<String>>);

impl PodSeries {
    fn record(&mut self, text: &str) {
        for l in text
            .lines()
            .filter(|l| !l.starts_with('#') && l.contains("pod=\""))
        {
            let name = l.split('{').next().unwrap_or_default();
            let ident: Vec<&str> = [
                "gpu",
                "GPU_I_ID",
                "namespace",
                "pod",
                "container",
                "resource",
                "vgpu",
                "dra_device_name",
            ]
            .iter()
            .filter_map(|k| label_opt(l, k))
            .collect();
            let labels = l.rsplit_once(' ').map(|(a, _)| a).unwrap_or(l);
            self.0
                .entry(format!("{name}|{}", ident.join("|")))
                .or_default()
                .insert(labels.to_owned());
        }
    }

    fn assert_still(&self, what: &str) {
        let churned: Vec<_> = self.0.iter().filter(|(_, v)| v.len() > 1).collect();
        assert!(churned.is_empty(), "{what}: labels changed: {churned:#?}");
    }
}

/// A pod restarted under a new name that the kubelet lists before the pod watch delivers it,
/// and a pod force-deleted from the API while the kubelet still lists it: no series of either
/// ever changes its labels (pod_uid, workload and pod labels are there from the first tick to
/// the last). A pod whose metadata never comes is attributed without it after the grace.
#[test]
fn label_values_hold_still_over_a_pod_restart() {
    use gpu_exporter::sources::kube::pod_labels::LabelAllowlist;
    let node = common::SimNode::new("h100-mig", 7);
    let counters = common::default_counters();
    let cfg = common::config(&[]);
    let cluster = common::Cluster::start(&node);
    let mut k = cluster.config();
    k.join.pod_labels = Some(LabelAllowlist::default());
    k.join.pod_uid = true;
    k.kubelet.interval = std::time::Duration::from_millis(50);
    let mut sampler = node
        .sampler_with(counters.clone(), cfg.reader.clone(), 0.0)
        .with_attribution(cluster.attributor(&k));
    let opts = cfg.encode_options();
    let sim = &cluster.sim;
    let t = std::cell::Cell::new(30.0);
    let mut seen = PodSeries::default();
    let mut tick = |seen: &mut PodSeries| -> String {
        std::thread::sleep(std::time::Duration::from_millis(20));
        node.set_time(t.get());
        let snap = sampler.tick(t.get());
        t.set(t.get() + 0.05);
        let text = String::from_utf8(gpu_exporter::exposition::encode(
            &snap,
            &gpu_exporter::exposition::counted::Counted::default(),
            &counters,
            &opts,
        ))
        .unwrap();
        seen.record(&text);
        text
    };
    let until = |seen: &mut PodSeries,
                 tick: &mut dyn FnMut(&mut PodSeries) -> String,
                 what: &str,
                 cond: &dyn Fn(&str) -> bool| {
        for _ in 0..500 {
            if cond(&tick(seen)) {
                return;
            }
        }
        panic!("no {what} within 500 ticks");
    };
    for _ in 0..3 {
        tick(&mut seen);
    }

    // A pod holding whole GPUs is replaced by one under a new name: the kubelet lists the new
    // pod first, the API server delivers it a few ticks later.
    let mut view = sim.kubelet.view();
    let p = view
        .pods
        .iter()
        .position(|p| {
            p.containers
                .iter()
                .any(|c| c.devices.iter().any(|(r, _)| r == "nvidia.com/gpu"))
        })
        .expect("a pod with whole GPUs");
    let (ns, old) = (view.pods[p].namespace.clone(), view.pods[p].name.clone());
    let new = format!("{old}-restarted");
    let mut pod_json = sim.api.pod(&ns, &old).expect("the pod in the API");
    view.pods[p].name = new.clone();
    sim.kubelet.set_view(view.clone());
    let old_label = format!("pod=\"{old}\"");
    until(&mut seen, &mut tick, "old pod's allocation gone", &|t| {
        !series(t, "gpu_allocation_info")
            .iter()
            .any(|l| l.contains(&old_label))
    });
    for _ in 0..5 {
        tick(&mut seen);
    }
    pod_json["metadata"]["name"] = new.clone().into();
    pod_json["metadata"]["uid"] = "".into();
    sim.api.delete_pod(&ns, &old);
    sim.api.apply_pod(pod_json);
    let new_label = format!("pod=\"{new}\"");
    until(&mut seen, &mut tick, "restarted pod attributed", &|t| {
        t.contains(&new_label)
    });
    for _ in 0..5 {
        tick(&mut seen);
    }
    let text = tick(&mut seen);
    let row = series(&text, "gpu_allocation_info")
        .into_iter()
        .find(|l| l.contains(&new_label))
        .expect("the restarted pod's allocation row");
    assert!(label_opt(row, "pod_uid").is_some(), "{row}");

    // Force-deleted from the API while its containers still run: its labels stay.
    sim.api.delete_pod(&ns, &new);
    for _ in 0..50 {
        tick(&mut seen);
    }
    assert!(tick(&mut seen).contains(&new_label));
    seen.assert_still("pod restart and force deletion");

    // A pod the API server never delivers is attributed without its metadata after the
    // grace, not held back for ever.
    let mut ghost = view.pods[p].clone();
    ghost.name = "ghost".into();
    view.pods.push(ghost);
    sim.kubelet.set_view(view);
    until(&mut seen, &mut tick, "kubelet refresh", &|_| true);
    for _ in 0..20 {
        tick(&mut seen);
    }
    t.set(t.get() + 11.0);
    until(
        &mut seen,
        &mut tick,
        "the ghost pod after the grace",
        &|t| t.contains("pod=\"ghost\""),
    );
}
