//! The kubelet pod-resources path end to end: a real tonic server on a temporary unix socket
//! (the simulated kubelet), the background client, the join and the exposition, over the
//! simulated NVML library. Covers every device-ID form over the wire, a kubelet that is absent
//! at start, one that restarts mid-run, one that is too slow, answers over gRPC's default 4 MiB
//! and over the 16 MiB limit, and unknown device IDs in the log.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[path = "podresources/churn.rs"]
mod churn;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use common::{SimNode, label, label_opt, series, value, wait_until};
use gpu_exporter::attribution::KubernetesOptions;
use gpu_exporter::catalogue::csv::CounterSet;
use gpu_exporter::exposition::EncodeOptions;
use gpu_exporter::sampler::Sampler;
use gpu_exporter::sim::kubelet::FakeKubelet;
use gpu_exporter::sources::kubelet::client::{ContainerDevices, KubeletView, PodDevices};

/// A sampler with pod attribution from the kubelet socket only (no API server, no processes).
struct Node {
    node: SimNode,
    sampler: Sampler,
    counters: Arc<CounterSet>,
    rt: tokio::runtime::Runtime,
    socket: PathBuf,
    t: f64,
}

impl Node {
    fn new(scenario: &str, timeout: Duration) -> Self {
        let node = SimNode::new(scenario, 3);
        let counters = common::default_counters();
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let socket = node.dir.path().join("kubelet.sock");
        let mut k = KubernetesOptions::with_socket(socket.clone());
        k.kubelet.interval = Duration::from_millis(100);
        k.kubelet.timeout = timeout;
        k.pod_metadata = false;
        k.process_metrics = false;
        let a = gpu_exporter::attribution::start(&k, None, None, None, rt.handle());
        let sampler = node
            .sampler_with(counters.clone(), Default::default(), 0.0)
            .with_attribution(a);
        Self {
            node,
            sampler,
            counters,
            rt,
            socket,
            t: 10.0,
        }
    }

    fn tick(&mut self) -> gpu_exporter::snapshot::Snapshot {
        self.t += 1.0;
        self.node.set_time(self.t);
        self.sampler.tick(self.t)
    }

    /// One tick's exposition in the full label shape (`--series-labels full`, dcgm-exporter's):
    /// each device's series carry its single holder, so the join shows on them.
    fn scrape(&mut self) -> String {
        let snap = self.tick();
        let opts = EncodeOptions {
            shape: gpu_exporter::catalogue::labels::LabelShape::Full,
            ..EncodeOptions::default()
        };
        common::page(&snap, &self.counters, &opts)
    }

    /// Scrapes until `cond` holds on the exposition; returns that exposition.
    fn scrape_until(&mut self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let mut last = String::new();
        wait_until(what, || {
            last = self.scrape();
            cond(&last)
        });
        last
    }

    fn kubelet(&self, view: KubeletView) -> FakeKubelet {
        self.rt
            .block_on(FakeKubelet::start(&self.socket, view))
            .unwrap()
    }
}

fn pod(name: &str, resource: &str, ids: &[&str]) -> PodDevices {
    PodDevices {
        namespace: "team".into(),
        name: name.into(),
        containers: vec![ContainerDevices {
            name: "main".into(),
            devices: vec![(resource.into(), ids.iter().map(|s| s.to_string()).collect())],
            claims: Vec::new(),
        }],
    }
}

/// The `pod` label of the GPU_UTIL series of GPU `gpu` (whole GPUs).
fn util_pod(text: &str, gpu: &str) -> Option<String> {
    series(text, "DCGM_FI_DEV_GPU_UTIL")
        .into_iter()
        .find(|l| label(l, "gpu") == gpu)
        .and_then(|l| label_opt(l, "pod").map(str::to_owned))
}

/// (gpu, GPU_I_ID) → pod label, from the framebuffer series of MIG instances.
fn mig_pod(text: &str, gpu: &str, gi: &str) -> Option<String> {
    series(text, "DCGM_FI_DEV_FB_USED")
        .into_iter()
        .find(|l| label(l, "gpu") == gpu && label_opt(l, "GPU_I_ID") == Some(gi))
        .and_then(|l| label_opt(l, "pod").map(str::to_owned))
}

fn uuid_of(text: &str, gpu: &str, gi: Option<&str>) -> (String, String) {
    let line = series(text, "DCGM_FI_DEV_FB_USED")
        .into_iter()
        .find(|l| label(l, "gpu") == gpu && label_opt(l, "GPU_I_ID") == gi)
        .unwrap();
    (
        label(line, "UUID").to_owned(),
        label_opt(line, "mig_uuid").unwrap_or_default().to_owned(),
    )
}

fn kubelet_errors(text: &str) -> f64 {
    series(text, "gpu_exporter_pod_map_errors_total")
        .into_iter()
        .find(|l| label(l, "source") == "kubelet")
        .map(value)
        .unwrap_or(0.0)
}

fn kubelet_up(text: &str) -> f64 {
    series(text, "gpu_exporter_pod_map_up")
        .into_iter()
        .find(|l| label(l, "source") == "kubelet")
        .map(value)
        .unwrap()
}

#[test]
fn every_device_id_form_over_grpc() {
    let mut n = Node::new("h100-mig", Duration::from_secs(5));
    let first = n.scrape();
    let (g0, _) = uuid_of(&first, "0", None);
    let (g1, _) = uuid_of(&first, "1", None);
    let (g2, m27) = uuid_of(&first, "2", Some("7"));
    let view = KubeletView {
        pods: vec![
            pod("gpu-uuid", "nvidia.com/gpu", &[&g0]),
            pod("replica", "nvidia.com/gpu", &[&format!("{g1}::2")]),
            pod("mig-uuid", "nvidia.com/mig-1g.10gb", &[&m27]),
            pod(
                "mig-legacy",
                "nvidia.com/mig-1g.10gb",
                &[&format!("MIG-{g2}/8/0")],
            ),
            pod("gke-gpu", "nvidia.com/gpu", &["nvidia3"]),
            pod("gke-vgpu", "nvidia.com/gpu", &["nvidia4/vgpu1"]),
            pod("gke-mig", "nvidia.com/mig-3g.40gb", &["nvidia5/gi2"]),
            pod(
                "gke-mig-vgpu",
                "nvidia.com/mig-2g.20gb",
                &["nvidia5/gi3/vgpu0"],
            ),
            pod("renamed", "nvidia.com/gpu.shared", &["nvidia6::1"]),
            pod("other-resource", "example.com/fpga", &["nvidia7"]),
        ],
        allocatable: None,
    };
    let _k = n.kubelet(view);
    let text = n.scrape_until("pods attributed", |t| util_pod(t, "0").is_some());
    assert_eq!(util_pod(&text, "0").as_deref(), Some("gpu-uuid"));
    assert_eq!(util_pod(&text, "1").as_deref(), Some("replica"));
    assert_eq!(mig_pod(&text, "2", "7").as_deref(), Some("mig-uuid"));
    assert_eq!(mig_pod(&text, "2", "8").as_deref(), Some("mig-legacy"));
    assert_eq!(mig_pod(&text, "2", "9"), None);
    assert_eq!(util_pod(&text, "3").as_deref(), Some("gke-gpu"));
    assert_eq!(util_pod(&text, "4").as_deref(), Some("gke-vgpu"));
    assert_eq!(mig_pod(&text, "5", "2").as_deref(), Some("gke-mig"));
    assert_eq!(mig_pod(&text, "5", "3").as_deref(), Some("gke-mig-vgpu"));
    assert_eq!(util_pod(&text, "6").as_deref(), Some("renamed"));
    // Not a GPU resource: not attributed, and not counted as unmatched either.
    assert_eq!(util_pod(&text, "7"), None);
    assert!(
        text.lines()
            .any(|l| l == "gpu_exporter_pod_map_unmatched_devices 0"),
        "no unmatched device IDs"
    );
    // Every holder has its allocation row; the namespace and container come through.
    let rows = series(&text, "gpu_allocation_info");
    assert_eq!(rows.len(), 9, "{rows:#?}");
    assert!(rows.iter().all(|l| label(l, "namespace") == "team"));
    assert!(rows.iter().all(|l| label(l, "container") == "main"));
    let replica = rows.iter().find(|l| label(l, "pod") == "replica").unwrap();
    assert_eq!(label(replica, "vgpu"), "2");
}

#[test]
fn kubelet_absent_at_start_then_appears() {
    let mut n = Node::new("a100-l4", Duration::from_secs(5));
    // No socket: the GPU series flow, without pod labels, and the failure shows.
    let text = n.scrape_until("kubelet errors counted", |t| kubelet_errors(t) > 0.0);
    assert_eq!(series(&text, "DCGM_FI_DEV_GPU_UTIL").len(), 2);
    assert_eq!(util_pod(&text, "0"), None);
    assert_eq!(kubelet_up(&text), 0.0);
    assert!(series(&text, "gpu_exporter_pod_map_age_seconds").is_empty());
    // The kubelet comes up: attribution starts without a restart of the exporter.
    let (g0, _) = uuid_of(&text, "0", None);
    let _k = n.kubelet(KubeletView {
        pods: vec![pod("late", "nvidia.com/gpu", &[&g0])],
        allocatable: Some(vec![("nvidia.com/gpu".into(), vec![g0.clone()])]),
    });
    let text = n.scrape_until("pod attributed", |t| util_pod(t, "0").is_some());
    assert_eq!(util_pod(&text, "0").as_deref(), Some("late"));
    assert_eq!(kubelet_up(&text), 1.0);
    let alloc = series(&text, "gpu_allocatable_devices");
    assert_eq!(value(alloc[0]), 1.0);
    assert_eq!(series(&text, "gpu_exporter_pod_map_age_seconds").len(), 1);
}

#[test]
fn kubelet_restarting_mid_run_keeps_then_updates_labels() {
    let mut n = Node::new("a100-l4", Duration::from_secs(5));
    let (g0, _) = uuid_of(&n.scrape(), "0", None);
    let mut k = n.kubelet(KubeletView {
        pods: vec![pod("before", "nvidia.com/gpu", &[&g0])],
        allocatable: None,
    });
    n.scrape_until("first pod", |t| {
        util_pod(t, "0").as_deref() == Some("before")
    });
    // The kubelet stops: the last known holders stay, and the failure is visible.
    {
        let _rt = n.rt.enter();
        k.stop();
    }
    let text = n.scrape_until("kubelet down", |t| kubelet_up(t) == 0.0);
    assert_eq!(util_pod(&text, "0").as_deref(), Some("before"));
    assert!(kubelet_errors(&text) > 0.0);
    assert_eq!(series(&text, "DCGM_FI_DEV_GPU_UTIL").len(), 2);
    // It comes back with a new pod on the GPU: the client reconnects on its own.
    k.set_view(KubeletView {
        pods: vec![pod("after", "nvidia.com/gpu", &[&g0])],
        allocatable: None,
    });
    {
        let _rt = n.rt.enter();
        k.restart().unwrap();
    }
    let text = n.scrape_until("new pod", |t| util_pod(t, "0").as_deref() == Some("after"));
    assert_eq!(kubelet_up(&text), 1.0);
}

#[test]
fn slow_kubelet_times_out_and_never_holds_up_a_tick() {
    let mut n = Node::new("a100-l4", Duration::from_millis(300));
    let (g0, _) = uuid_of(&n.scrape(), "0", None);
    let k = n.kubelet(KubeletView {
        pods: vec![pod("fast", "nvidia.com/gpu", &[&g0])],
        allocatable: None,
    });
    n.scrape_until("first pod", |t| util_pod(t, "0").as_deref() == Some("fast"));
    let lists = k.lists();
    k.set_delay(Duration::from_secs(3));
    k.set_view(KubeletView {
        pods: vec![pod("slow", "nvidia.com/gpu", &[&g0])],
        allocatable: None,
    });
    // Calls time out and count as errors; ticks keep coming with the last known labels.
    let before = kubelet_errors(&n.scrape());
    let text = n.scrape_until("timeouts counted", |t| kubelet_errors(t) > before);
    assert_eq!(util_pod(&text, "0").as_deref(), Some("fast"));
    assert!(k.lists() > lists, "the client kept asking");
    // Answers in time again: the new holder shows.
    k.set_delay(Duration::ZERO);
    n.scrape_until("slow pod", |t| util_pod(t, "0").as_deref() == Some("slow"));
}

#[test]
fn unchanged_kubelet_answers_reuse_the_join() {
    let mut n = Node::new("a100-l4", Duration::from_secs(5));
    let (g0, _) = uuid_of(&n.scrape(), "0", None);
    let k = n.kubelet(KubeletView {
        pods: vec![pod("steady", "nvidia.com/gpu", &[&g0])],
        allocatable: None,
    });
    n.scrape_until("pod attributed", |t| util_pod(t, "0").is_some());
    let before = n.tick().attribution.join.unwrap();
    // Several more refreshes with the same answer (every 100 ms).
    let lists = k.lists();
    wait_until("three more refreshes", || k.lists() >= lists + 3);
    let after = n.tick().attribution.join.unwrap();
    assert!(
        Arc::ptr_eq(&before, &after),
        "the join was rebuilt although the kubelet's answer did not change"
    );
    // A changed answer does rebuild it.
    k.set_view(KubeletView {
        pods: vec![pod("next", "nvidia.com/gpu", &[&g0])],
        allocatable: None,
    });
    n.scrape_until("new pod", |t| util_pod(t, "0").as_deref() == Some("next"));
}

/// A node whose pod-resources answer is over gRPC's default 4 MiB (here about 6 MiB: thousands
/// of pods) is still attributed: the client reads up to 16 MiB.
#[test]
fn kubelet_answer_over_four_mib_is_read() {
    let mut n = Node::new("a100-l4", Duration::from_secs(10));
    let first = n.scrape();
    let (g0, _) = uuid_of(&first, "0", None);
    let mut pods: Vec<PodDevices> = (0..45_000)
        .map(|i| {
            let long = format!("cpu-only-pod-with-a-rather-long-generated-name-{i:06}");
            let mut p = pod(&long, "example.com/fpga", &["fpga-0", "fpga-1", "fpga-2"]);
            p.namespace = format!("namespace-of-a-busy-team-{}", i % 100);
            p
        })
        .collect();
    pods.push(pod("big-node-trainer", "nvidia.com/gpu", &[&g0]));
    let size: usize = pods
        .iter()
        .map(|p| p.name.len() + p.namespace.len() + 60)
        .sum();
    assert!(size > 5 << 20, "the answer must exceed 4 MiB: {size}");
    let _k = n.kubelet(KubeletView {
        pods,
        allocatable: None,
    });
    let text = n.scrape_until("the pod on GPU 0 attributed", |t| {
        util_pod(t, "0").is_some()
    });
    assert_eq!(util_pod(&text, "0").as_deref(), Some("big-node-trainer"));
    assert_eq!(kubelet_up(&text), 1.0);
}

/// An answer over the 16 MiB the client reads (here about 18 MiB: 6,000 pods with 50 long
/// device IDs each) is an error that says so: the kubelet source is down, no pod is attributed,
/// and its last error names the limit.
#[test]
fn kubelet_answer_over_sixteen_mib_is_a_clear_error() {
    let mut n = Node::new("a100-l4", Duration::from_secs(10));
    let first = n.scrape();
    let (g0, _) = uuid_of(&first, "0", None);
    let ids: Vec<String> = (0..50)
        .map(|d| format!("fpga-device-with-a-long-generated-identifier-{d:015}"))
        .collect();
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let mut pods: Vec<PodDevices> = (0..6_000)
        .map(|i| pod(&format!("fpga-pod-{i:06}"), "example.com/fpga", &refs))
        .collect();
    pods.push(pod("big-node-trainer", "nvidia.com/gpu", &[&g0]));
    let size: usize = pods
        .iter()
        .flat_map(|p| &p.containers)
        .flat_map(|c| &c.devices)
        .flat_map(|(_, ids)| ids)
        .map(|id| id.len() + 2)
        .sum();
    assert!(size > 17 << 20, "the answer must exceed 16 MiB: {size}");
    let _k = n.kubelet(KubeletView {
        pods,
        allocatable: None,
    });
    let mut error = String::new();
    wait_until("the kubelet's answer refused", || {
        let snap = n.tick();
        let kubelet = snap
            .attribution
            .sources
            .iter()
            .find(|h| h.source == "kubelet")
            .and_then(|h| h.last_error.clone());
        error = kubelet.unwrap_or_default();
        // Before the kubelet is up, the error is a missing socket.
        error.contains("too large")
    });
    assert!(
        error.contains("message length too large")
            && error.contains("the kubelet's answer is larger than the 16 MiB gpu-exporter reads"),
        "{error}"
    );
    let text = n.scrape();
    assert_eq!(kubelet_up(&text), 0.0);
    assert!(kubelet_errors(&text) >= 1.0);
    assert_eq!(util_pod(&text, "0"), None, "nothing attributed");
}

/// Device IDs come from the kubelet: thousands of unknown ones give one warning, and one with
/// a newline or a terminal escape cannot forge a log line or drive the terminal.
#[test]
fn unknown_device_ids_are_logged_once_aggregated_and_escaped() {
    let (logs, _guard) = common::capture_logs();
    let mut n = Node::new("a100-l4", Duration::from_secs(5));
    n.scrape();
    let mut ids: Vec<String> = (0..4_900).map(|i| format!("GPU-unknown-{i:05}")).collect();
    ids.insert(0, "GPU-evil\nERROR forged line \u{1b}[31mred".to_owned());
    let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
    let _k = n.kubelet(KubeletView {
        pods: vec![pod("many", "nvidia.com/gpu", &refs)],
        allocatable: None,
    });
    n.scrape_until("the kubelet answered", |t| kubelet_up(t) == 1.0);
    n.scrape();
    let log = logs.text();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("match no exported GPU"))
        .collect();
    assert_eq!(warnings.len(), 1, "{log}");
    assert!(
        warnings[0]
            .contains("a GPU lost or no longer answering NVML, one left out by -d/--devices"),
        "the causes, the lost GPU first: {}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("4901 GPU device ID(s)"),
        "{}",
        warnings[0]
    );
    assert!(!log.lines().any(|l| l.starts_with("ERROR forged")), "{log}");
    assert!(!log.contains('\u{1b}'), "raw escape in {log:?}");
    assert!(
        warnings[0].contains("GPU-evil\\nERROR forged line"),
        "{}",
        warnings[0]
    );
}

/// A missing kubelet socket: the source's last error (the text of the warning, and what
/// `/status` and `check` show) names the socket and gives each cause once (the transport's
/// layers each repeated the one below them: "No such file or directory" came four times in one
/// line).
#[test]
fn a_missing_socket_gives_each_cause_once() {
    let mut n = Node::new("a100-l4", Duration::from_secs(5));
    n.scrape_until("kubelet errors counted", |t| kubelet_errors(t) > 0.0);
    let snap = n.tick();
    let error = snap
        .attribution
        .sources
        .iter()
        .find(|h| h.source == "kubelet")
        .and_then(|h| h.last_error.clone())
        .unwrap();
    assert!(error.contains(&n.socket.display().to_string()), "{error}");
    assert_eq!(
        error.matches("No such file or directory").count(),
        1,
        "{error}"
    );
}

/// The same on the binary: the warning it logs for a missing socket names the socket and
/// gives the cause once.
#[test]
fn the_binary_logs_a_missing_socket_with_each_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("kubelet.sock");
    let e = common::Exporter::builder()
        .args([
            "-k",
            "--pod-resources-kubelet-socket",
            socket.to_str().unwrap(),
            "--kubernetes-pod-metadata=false",
            "--kubernetes-process-metrics=false",
            "-c",
            "200",
        ])
        .env("NODE_NAME", "node-1")
        .log_pipe()
        .spawn();
    e.wait_log("kubelet pod-resources API at", Duration::from_secs(20));
    let log = e.log();
    let line = log
        .lines()
        .find(|l| l.contains("kubelet pod-resources API at"))
        .unwrap();
    assert!(line.contains(&socket.display().to_string()), "{line}");
    assert_eq!(
        line.matches("No such file or directory").count(),
        1,
        "{line}"
    );
}
