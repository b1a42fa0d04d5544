//! Golden exposition tests: scenario → two sampler ticks at fixed scenario times → encoded
//! text, compared byte for byte with `tests/golden/<case>.prom`. `UPDATE_GOLDEN=1` rewrites.
//! Two ticks are needed because GPM profiling fields and rates average over an interval.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::Duration;

use gpu_exporter::catalogue::profile::Profile;

const EPOCH: f64 = 1_700_000_000.0;

/// Samples `scenario` at each of `ticks` (scenario seconds) and returns the exposition of the
/// last tick with the non-deterministic statistics pinned.
fn exposition(scenario: &str, counters_file: Option<&str>, ticks: &[f64]) -> String {
    exposition_on(scenario, counters_file, ticks, false)
}

/// As [`exposition`]; with `pods`, the scenario's simulated kubelet, API server and proc tree
/// attribute the devices to pods.
fn exposition_on(scenario: &str, counters_file: Option<&str>, ticks: &[f64], pods: bool) -> String {
    let counters = match counters_file {
        Some(f) => common::counters_from(f),
        None => common::default_counters(),
    };
    exposition_as(scenario, counters, ticks, pods, Profile::Native, &[])
}

/// As [`exposition_on`], shaped and named by a compatibility `profile` (counters included).
fn exposition_as(
    scenario: &str,
    counters: std::sync::Arc<gpu_exporter::catalogue::csv::CounterSet>,
    ticks: &[f64],
    pods: bool,
    profile: Profile,
    args: &[&str],
) -> String {
    let node = common::SimNode::new(scenario, 7);
    let mut all = vec!["--compatibility", profile.name()];
    all.extend(args);
    let cfg = common::config(&all);
    let options = cfg.reader.clone();
    let mut sampler = node.sampler_with(counters.clone(), options, EPOCH);
    let cluster = pods.then(|| common::Cluster::start(&node));
    if let Some(c) = &cluster {
        let mut k = c.config();
        let mut allow = gpu_exporter::sources::kube::pod_labels::LabelAllowlist::default();
        allow.set_collision_prefix(profile.pod_label_collision_prefix());
        allow.set_conflict_suffix(profile.pod_label_conflict_suffix());
        if profile.drops_pod_labels_named_like_the_pod() {
            allow.set_dropped(vec!["pod", "namespace", "container"]);
        }
        k.join.pod_labels = Some(allow);
        sampler = sampler.with_attribution(c.attributor(&k));
    }
    let mut snap = Default::default();
    for t in ticks {
        node.set_time(*t);
        snap = sampler.tick(EPOCH + t);
    }
    let mut snap: gpu_exporter::snapshot::Snapshot = snap;
    snap.stats.duration = Duration::ZERO;
    for s in &mut snap.attribution.sources {
        s.age_seconds = s.age_seconds.map(|_| 0.0);
    }
    let opts = cfg.encode_options();
    common::page(&snap, &counters, &opts)
}

fn check(case: &str, got: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(format!("{case}.prom"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, got).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UPDATE_GOLDEN=1 to create it)",
            path.display()
        )
    });
    if want != got {
        let first = want.lines().zip(got.lines()).position(|(a, b)| a != b);
        panic!(
            "{} differs from the encoder output (first differing line: {:?}); \
             if the change is intended, rerun with UPDATE_GOLDEN=1 and review the diff",
            path.display(),
            first.map(|i| (i + 1, want.lines().nth(i), got.lines().nth(i)))
        );
    }
}

#[test]
fn golden_h100_mig_default_counters() {
    check(
        "h100-mig.default",
        &exposition("h100-mig", None, &[30.0, 35.0]),
    );
}

#[test]
fn golden_h100_mig_dcp_counters() {
    check(
        "h100-mig.dcp",
        &exposition(
            "h100-mig",
            Some("counters/dcp-metrics-included.csv"),
            &[30.0, 35.0],
        ),
    );
}

#[test]
fn golden_h100_mig_after_faults() {
    // Xid 31 on GPU 1 at 40 s, Xid 48 three times on GPU 3 (60-70 s), GPU 6 stops
    // reporting power at 90 s, GPU 7 is lost from 120 s to 180 s (Xid 79). The first tick
    // registers the Xid event set before any of it happens.
    check(
        "h100-mig.faults",
        &exposition("h100-mig", None, &[30.0, 125.0, 130.0]),
    );
}

#[test]
fn golden_a100_l4_default_counters() {
    check(
        "a100-l4.default",
        &exposition("a100-l4", None, &[30.0, 35.0]),
    );
}

#[test]
fn golden_h100_mig_with_pods() {
    // Whole GPUs, MIG instances, a time-sliced GPU (two pods), a DRA claim and a process
    // outside Kubernetes, through the simulated kubelet, API server and proc tree.
    check(
        "h100-mig.pods",
        &exposition_on("h100-mig", None, &[30.0, 35.0], true),
    );
}

/// The same node in the full label shape (`--series-labels full`): dcgm-exporter's way of
/// putting descriptions and holders on every series, inside native.
#[test]
fn golden_h100_mig_with_pods_full_labels() {
    check(
        "h100-mig.pods.full",
        &exposition_as(
            "h100-mig",
            common::default_counters(),
            &[30.0, 35.0],
            true,
            Profile::Native,
            &["--series-labels", "full"],
        ),
    );
}

#[test]
fn golden_a100_l4_with_pods() {
    // The L4 is time-sliced under nvidia.com/gpu.shared between two pods.
    check(
        "a100-l4.pods",
        &exposition_on("a100-l4", None, &[30.0, 35.0], true),
    );
}

/// One golden per dcgm-exporter profile: its built-in counters, host label, MIG shape and
/// pod-label naming, on the MIG node with pods.
#[test]
fn golden_h100_mig_per_compatibility_profile() {
    for profile in [
        Profile::Dcgm482,
        Profile::Dcgm484,
        Profile::Dcgm49,
        Profile::Dcgm410,
    ] {
        let name = profile.name();
        let (file, text) = profile.builtin_counters();
        let counters =
            std::sync::Arc::new(gpu_exporter::catalogue::csv::parse_counters(file, text).unwrap());
        check(
            &format!("h100-mig.{name}"),
            &exposition_as("h100-mig", counters, &[30.0, 35.0], true, profile, &[]),
        );
    }
}

#[test]
fn same_seed_same_bytes() {
    assert_eq!(
        exposition("a100-l4", None, &[10.0, 15.0]),
        exposition("a100-l4", None, &[10.0, 15.0])
    );
}
