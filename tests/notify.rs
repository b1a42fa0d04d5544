//! GPU health into Kubernetes (`--kubernetes-node-conditions`, `--kubernetes-events`), end to
//! end: the binary on a simulated node whose GPUs fail in each way a pod can hold a GPU
//! (exclusive, MIG, time-sliced, DRA), writing to the simulated API server, read back from
//! it as a controller would. Then the writers against an API server that refuses (403),
//! errors (500), is slow, or cannot be reached: the counts say so, the Event queue stays
//! bounded, and each kind logs one line per change of state. The incidents scenario is also
//! read back with a real `kubectl`.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{
    Exporter, http_get, label, series, sim_api as api, sim_api_port as api_port, value, wait_until,
};
use gpu_exporter::exposition::counted::{CountOwners, Counted};
use gpu_exporter::exposition::publish::{Shared, render};
use gpu_exporter::notify::counts::WriteCounts;
use gpu_exporter::notify::{self, NotifyOptions};
use gpu_exporter::sim::api::WriteFault;
use serde_json::Value;

const SCENARIO: &str = "tests/fixtures/scenarios/notify.toml";

/// The `status` of condition `ty`, if the Node has it.
fn status(node: &Value, ty: &str) -> Option<String> {
    node["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
        .and_then(|c| c["status"].as_str().map(str::to_owned))
}

fn condition<'a>(node: &'a Value, ty: &str) -> &'a Value {
    node["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == ty)
        .unwrap_or_else(|| panic!("no {ty} condition: {node:#}"))
}

/// (namespace/name of the object, reason) of every Event about a pod.
fn pod_events(events: &Value) -> BTreeSet<(String, String)> {
    events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["regarding"]["kind"] == "Pod")
        .map(|e| {
            (
                format!(
                    "{}/{}",
                    e["regarding"]["namespace"].as_str().unwrap(),
                    e["regarding"]["name"].as_str().unwrap()
                ),
                e["reason"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Fails unless `text` contains every one of `words`, naming the first missing and the text.
fn assert_contains_all(text: &str, words: &[&str]) {
    for w in words {
        assert!(text.contains(w), "{w:?} not in:\n{text}");
    }
}

/// Waits until the pod Events hold every (pod, reason) of `want`; returns `want` as a set.
fn wait_pod_events(port: u16, want: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    let want: BTreeSet<(String, String)> = want
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    wait_until("the Events of every pod hit", || {
        pod_events(&api(port, "/apis/events.k8s.io/v1/events")).is_superset(&want)
    });
    want
}

/// Waits until the pod Events hold every (pod, reason) of `want`, then checks that no other
/// pod has one (a pod that held no faulty GPU); returns the Events.
fn events_on_exactly(port: u16, want: &[(&str, &str)]) -> Value {
    let want = wait_pod_events(port, want);
    let events = api(port, "/apis/events.k8s.io/v1/events");
    let got = pod_events(&events);
    let pods: BTreeSet<&String> = got.iter().map(|(p, _)| p).collect();
    let want_pods: BTreeSet<&String> = want.iter().map(|(p, _)| p).collect();
    assert_eq!(
        pods, want_pods,
        "an Event on a pod that held no faulty GPU: {got:#?}"
    );
    events
}

/// The note of the Event with `reason` on pod `pod` in `events`.
fn note(events: &Value, pod: &str, reason: &str) -> String {
    events["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["regarding"]["name"] == pod && e["reason"] == reason)
        .map(|e| e["note"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no {reason} Event on {pod}"))
}

/// The binary on `scenario` with both writes on and the hold `hold`, and its simulated API
/// server's port (from the log).
fn start(scenario: &Path, hold: &str) -> (Exporter, u16) {
    start_with(scenario, hold, &[])
}

/// [`start`] with more arguments.
fn start_with(scenario: &Path, hold: &str, extra: &[&str]) -> (Exporter, u16) {
    let e = Exporter::builder()
        .args(["--simulate"])
        .arg(scenario)
        .args(extra)
        .args([
            "-k",
            "-c",
            "200",
            "--kubernetes-node-conditions",
            "--kubernetes-events",
            "--health-hold",
            hold,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NODE_NAME")
        .env("RUST_LOG", "info")
        .log_pipe()
        .start();
    let port = api_port(&e);
    (e, port)
}

const NODE_PATH: &str = "/api/v1/nodes/sim-notify-node";

#[test]
fn conditions_and_events_reach_exactly_the_pods_that_were_hit() {
    let (e, port) = start(Path::new(SCENARIO), "2s");
    let node_path = NODE_PATH;

    // GPU 0's power brake (1–3 s) makes the node degraded, and the Xid 48 on GPU 2 and 79 on
    // GPU 4 make it unhealthy and ask for a reset and a reboot. A tick that straddles 1 s can
    // read GPU 0's clocks just before the brake and still carry the Xids of 1 s (the Xid
    // thread records them on its own): its GpuDegraded names GPU 6's Xid 13 alone, and the
    // next tick's adds GPU 0 (seen in 2 of 4 runs on a loaded machine), so wait for GPU 0.
    wait_until("GpuDegraded (GPU 0 first) and GpuUnhealthy set", || {
        let n = api(port, node_path);
        ["GpuDegraded", "GpuUnhealthy", "GpuRebootRequired"]
            .iter()
            .all(|t| status(&n, t).as_deref() == Some("True"))
            && condition(&n, "GpuDegraded")["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("GPU 0 ("))
    });
    let n = api(port, node_path);
    // The kubelet's condition is kept: only the exporter's own types are written.
    assert_eq!(condition(&n, "Ready")["reason"], "KubeletReady");
    let degraded = condition(&n, "GpuDegraded");
    assert_eq!(degraded["reason"], "PowerBrake", "{degraded}");
    let message = degraded["message"].as_str().unwrap();
    assert!(message.starts_with("GPU 0 (GPU-"), "{message}");
    let unhealthy = condition(&n, "GpuUnhealthy");
    let message = unhealthy["message"].as_str().unwrap();
    assert_contains_all(
        message,
        &[
            "GPU 2 (GPU-",
            "Xid 48 (memory)",
            "GPU 4 (GPU-",
            "Xid 79 (hardware)",
        ],
    );
    assert!(
        condition(&n, "GpuRebootRequired")["message"]
            .as_str()
            .unwrap()
            .starts_with("GPU 4 (GPU-")
    );

    // Events on exactly the pods holding a GPU that was hit.
    let events = events_on_exactly(
        port,
        &[
            ("research/llm-train-0", "PowerBrake"),
            ("inference/chat-api-7d4b9c8f6d-x2k4p", "XidMemory"),
            ("inference/chat-api-7d4b9c8f6d-9fj2m", "XidMemory"),
            ("inference/embed-5c6d7e8f9a-qq7rt", "XidMemory"),
            ("sandbox/notebook-alice", "XidMemory"),
            ("inference/rerank-a", "XidHardware"),
            ("inference/rerank-b", "XidHardware"),
            ("media/render-farm-0", "XidApplication"),
        ],
    );
    // (The power brake's hardware slowdown and Xid 48's reset request may add reasons on
    // the same pods.)
    // Each names the container, the GPU, the cause and what to do.
    let note = |pod: &str, reason: &str| note(&events, pod, reason);
    let n = note("rerank-b", "XidHardware");
    assert_contains_all(
        &n,
        &[
            "GPU 4 (GPU-",
            "Xid 79",
            "container server",
            "reboot the node",
        ],
    );
    let n = note("notebook-alice", "XidMemory");
    assert_contains_all(
        &n,
        &[
            "GPU 2 (GPU-",
            "Xid 48",
            "container notebook",
            "MIG GPU instance 11",
        ],
    );
    // The Node gets its own Event per cause, written by the exporter.
    assert!(events["items"].as_array().unwrap().iter().any(|e| {
        e["regarding"]["kind"] == "Node"
            && e["reason"] == "XidHardware"
            && e["reportingController"] == "gpu-exporter"
    }));

    // The brake is released at 3 s: after the 2 s hold the degraded condition clears (GPU 6's
    // application Xid, a warning, goes the same way once its hold ends).
    wait_until("GpuDegraded cleared", || {
        status(&api(port, node_path), "GpuDegraded").as_deref() == Some("False")
    });
    let d = api(port, node_path);
    assert_eq!(condition(&d, "GpuDegraded")["reason"], "GpusNotDegraded");
    // Repeats are one Event each, never one per tick.
    let before = api(port, "/apis/events.k8s.io/v1/events")["items"]
        .as_array()
        .unwrap()
        .len();
    let t = e.metrics();
    assert!(t.contains("gpu_exporter_kube_writes_total{kind=\"event\",result=\"failure\"} 0"));
    std::thread::sleep(Duration::from_secs(2));
    let after = api(port, "/apis/events.k8s.io/v1/events")["items"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after, "Events written while nothing changed");
}

/// An application Xid that NVML reports with a MIG GPU instance is that instance's: on
/// mig-xid.toml GPU 0's Xid 31 on GPU instance 8 marks instance 8 alone, its Event reaches
/// only the pod holding it, and the Node condition names "GPU 0 MIG instance 8". GPU 1's
/// hardware Xid 79 (no instance) still marks both of its instances and reaches both pods,
/// while its Xid 13 on instance 7 reaches instance 7's pod alone.
#[test]
fn an_application_xid_of_one_mig_instance_reaches_only_that_instances_pod() {
    let (e, port) = start(Path::new("tests/fixtures/scenarios/mig-xid.toml"), "60s");
    wait_pod_events(
        port,
        &[
            ("inference/slice-0-8", "XidApplication"),
            ("inference/slice-1-7", "XidApplication"),
            ("inference/slice-1-7", "XidHardware"),
            ("inference/slice-1-8", "XidHardware"),
        ],
    );
    let got = pod_events(&api(port, "/apis/events.k8s.io/v1/events"));
    let apps: BTreeSet<&String> = got
        .iter()
        .filter(|(_, r)| r == "XidApplication")
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        apps,
        ["inference/slice-0-8", "inference/slice-1-7"]
            .iter()
            .map(|p| p.to_string())
            .collect::<BTreeSet<String>>()
            .iter()
            .collect(),
        "{got:#?}"
    );
    let pods: BTreeSet<&String> = got.iter().map(|(p, _)| p).collect();
    assert!(
        !pods
            .iter()
            .any(|p| *p == "inference/slice-0-7" || *p == "inference/slice-0-9"),
        "an Event on a sibling of the faulty instance: {got:#?}"
    );

    // Each instance's verdict on /status: GPU 0's instance 8 alone, both of GPU 1's.
    let st: Value =
        serde_json::from_str(&http_get(e.port, "/status", &[]).unwrap().text()).unwrap();
    let verdicts = |gpu: usize| -> Vec<(u64, String)> {
        st["gpus"][gpu]["instances"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["gpu_instance_id"].as_u64().unwrap(),
                    i["verdict"].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    let v = |list: &[(u64, &str)]| -> Vec<(u64, String)> {
        list.iter().map(|(g, s)| (*g, (*s).to_owned())).collect()
    };
    assert_eq!(verdicts(0), v(&[(7, "ok"), (8, "warning"), (9, "ok")]));
    // The GPU's own verdict holds the instance's cause, naming the instance.
    let cause = &st["gpus"][0]["health"]["causes"][0];
    assert_eq!(
        (&cause["xid"], &cause["gpu_instance_id"]),
        (&Value::from(31), &Value::from(8)),
        "{cause}"
    );
    assert_eq!(st["gpus"][0]["health"]["verdict"], "warning");
    assert_eq!(verdicts(1), v(&[(7, "critical"), (8, "critical")]));
    // The landing page shows each instance's verdict on its row.
    let page = http_get(e.port, "/", &[]).unwrap().text();
    let row = |gi: u32| -> &str {
        page.lines()
            .find(|l| l.contains(&format!("(GI {gi})")))
            .unwrap_or_else(|| panic!("no row of GI {gi}:\n{page}"))
    };
    assert!(
        row(8).contains("<b class=\"warning\">warning</b>"),
        "{}",
        row(8)
    );
    assert!(row(9).contains("<b class=\"ok\">ok</b>"), "{}", row(9));

    // The condition stays per node and names the instance.
    let n = api(port, NODE_PATH);
    let message = condition(&n, "GpuDegraded")["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        message.starts_with("GPU 0 MIG instance 8 (GPU-") && message.contains("Xid 31"),
        "{message}"
    );
    assert_eq!(status(&n, "GpuUnhealthy").as_deref(), Some("True"));
}

/// `gpu_health_status` of each GPU in a scrape, by index.
fn health_levels(text: &str) -> Vec<(&str, f64)> {
    series(text, "gpu_health_status")
        .into_iter()
        .map(|l| (label(l, "gpu"), value(l)))
        .collect()
}

/// The built-in `incidents` scenario with Kubernetes on and both writes, as a user runs it
/// (`--simulate incidents -k --kubernetes-node-conditions --kubernetes-events`, the default
/// counters file, the default log filter), read back from the simulated API server:
/// - the conditions, with the right reasons, and `GpuDegraded` cleared after the recovery
///   at 60 s while GPUs 2 and 4 keep `GpuUnhealthy`;
/// - Events on exactly the pods that were hit, in each way of holding a GPU: a DRA claim
///   (GPU 0, overheating), exclusive (GPU 2's Xid 48; GPU 4 lost, its last holder), time-
///   sliced (GPU 3, both pods), one MIG instance (GPU 6's application Xid 31 on instance 3,
///   not its sibling's pod);
/// - the health metric on the right GPUs;
/// - the scenario's API failures: the Node status refused (403, 9–25 s), Events slow past
///   the deadline (9–17 s) and erroring (500, 17–30 s, when GPU 4 is lost). At the
///   default 5 s interval the writer sees a snapshot up to 5 s after its tick, so the
///   windows are wide. Every scrape
///   keeps every GPU, each failure is logged once (kube's own per-call error lines left
///   out), the conditions are written once allowed and GPU 4's Events once the server
///   answers again.
#[test]
fn the_incidents_scenario_reaches_kubernetes_through_the_api_servers_failures() {
    let mut e = Exporter::builder()
        .args([
            "--simulate",
            "incidents",
            "-k",
            "--kubernetes-node-conditions",
            "--kubernetes-events",
            "--health-hold",
            "15s",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NODE_NAME")
        .env_remove("RUST_LOG")
        .log_pipe()
        .start();
    let port = api_port(&e);
    let node_path = "/api/v1/nodes/sim-incidents-node";
    let gpu_series = |t: &str| series(t, "gpu_health_status").len();
    assert_eq!(gpu_series(&e.metrics()), 8);

    // Through the outages (9–20 s) every scrape has every GPU, and the page answers.
    let t = e.metrics_until("GPU 4 lost (16 s): critical", |t| {
        assert_eq!(gpu_series(t), 8, "a GPU series gapped:\n{t}");
        health_levels(t).contains(&("4", 2.0))
    });
    assert_eq!(http_get(e.port, "/", &[]).unwrap().status, 200);
    // The health metric: GPUs 2 and 4 critical; 0 (thermal), 3 (power brake), 6 (an
    // instance's Xid 31 at 12 s, held 15 s) and 7 (a link down) warning; 1 and 5 ok.
    let want = [
        ("0", 1.0),
        ("1", 0.0),
        ("2", 2.0),
        ("3", 1.0),
        ("4", 2.0),
        ("5", 0.0),
        ("6", 1.0),
        ("7", 1.0),
    ];
    assert_eq!(health_levels(&t), want, "{t}");

    // The conditions, once the 403s have ended.
    wait_node_status(
        &e,
        port,
        node_path,
        "GpuRebootRequired",
        "True",
        "GpuRebootRequired (GPU 4)",
    );
    let n = api(port, node_path);
    assert_eq!(condition(&n, "Ready")["reason"], "KubeletReady");
    let unhealthy = condition(&n, "GpuUnhealthy");
    assert_eq!(unhealthy["status"], "True");
    // GPU 2's worst reason: its Xid 48 while held, then its double-bit ECC error.
    let gpu2 = ["XidMemory", "EccDoubleBitError"];
    assert!(
        gpu2.contains(&unhealthy["reason"].as_str().unwrap()),
        "{unhealthy}"
    );
    let message = unhealthy["message"].as_str().unwrap();
    assert_contains_all(
        message,
        &[
            "GPU 2 (GPU-",
            "row remap failed",
            "take the GPU out of service for repair; GPU 4 (GPU-",
            "lost",
        ],
    );
    let degraded = condition(&n, "GpuDegraded");
    assert_eq!(degraded["reason"], "ThermalSlowdown", "{degraded}");
    let message = degraded["message"].as_str().unwrap();
    assert_contains_all(
        message,
        &[
            "GPU 0 (GPU-",
            "GPU 3 (GPU-",
            "power brake",
            "GPU 7 (GPU-",
            "nvlink down",
        ],
    );
    let reset = condition(&n, "GpuResetRequired");
    assert!(gpu2.contains(&reset["reason"].as_str().unwrap()), "{reset}");
    assert!(
        reset["message"]
            .as_str()
            .unwrap()
            .starts_with("GPU 2 (GPU-")
    );
    let reboot = condition(&n, "GpuRebootRequired");
    assert_eq!(reboot["reason"], "GpuLost");
    assert!(
        reboot["message"]
            .as_str()
            .unwrap()
            .starts_with("GPU 4 (GPU-")
    );

    // Events on exactly the pods hit, GPU 4's after the 500s.
    let events = events_on_exactly(
        port,
        &[
            ("research/llm-train-0", "ThermalSlowdown"),
            ("research/pretrain-0", "XidMemory"),
            ("research/pretrain-0", "RowRemapFailed"),
            ("inference/chat-api-6b5c4d3e2f-p9q8r", "PowerBrake"),
            ("inference/chat-api-6b5c4d3e2f-m4n5b", "PowerBrake"),
            ("inference/chat-api-6b5c4d3e2f-p9q8r", "XidApplication"),
            ("inference/chat-api-6b5c4d3e2f-m4n5b", "XidApplication"),
            ("inference/vision-5d6e7f8a9b-t2u3v", "XidApplication"),
            ("batch/batch-embed-28811600-4kx7w", "GpuLost"),
            ("batch/batch-embed-28811600-4kx7w", "XidHardware"),
        ],
    );
    let note = |pod: &str, reason: &str| note(&events, pod, reason);
    for (pod, reason, words) in [
        (
            "batch-embed-28811600-4kx7w",
            "GpuLost",
            &["GPU 4 (GPU-", "container worker", "reboot the node"][..],
        ),
        (
            "vision-5d6e7f8a9b-t2u3v",
            "XidApplication",
            &["GPU 6 MIG instance 3 (GPU-", "Xid 31", "MIG GPU instance 3"][..],
        ),
        (
            "llm-train-0",
            "ThermalSlowdown",
            &["GPU 0 (GPU-", "container trainer", "check cooling"][..],
        ),
    ] {
        assert_contains_all(&note(pod, reason), words);
    }

    // What a user sees with kubectl pointed at the simulated API server.
    if let Some(bin) = common::kubectl::find_or_skip() {
        let home = tempfile::tempdir().unwrap();
        let server = format!("http://127.0.0.1:{port}");
        let kc = |args: &[&str]| common::kubectl::run(&bin, &server, home.path(), args);
        let all = kc(&["get", "events", "-A"]);
        let line = all
            .lines()
            .find(|l| l.contains("pod/batch-embed-28811600-4kx7w") && l.contains("GpuLost"))
            .unwrap_or_else(|| panic!("no GpuLost Event of the lost GPU's pod in:\n{all}"));
        assert!(
            line.starts_with("batch")
                && line.contains("Warning")
                && line.contains("while held by container worker"),
            "{line}"
        );
        let describe = kc(&["describe", "node", "sim-incidents-node"]);
        assert_contains_all(
            &describe,
            &[
                "KubeletReady",
                "GpuUnhealthy",
                "GpuRebootRequired",
                "GpuLost",
            ],
        );
    }

    // The API failures: counted, one line each, nothing from kube's client per call.
    let t = e.metrics();
    assert!(writes(&t, "node_condition", "failure") >= 1, "{t}");
    assert!(writes(&t, "event", "timeout") >= 1, "{t}");
    assert!(writes(&t, "event", "failure") >= 1, "{t}");
    let log = e.log();
    let refused = lines_with(&log, "cannot write Kubernetes Node conditions");
    assert_eq!(refused.len(), 1, "{log}");
    assert!(refused[0].contains("403 Forbidden"), "{}", refused[0]);
    let events_lines = lines_with(&log, "cannot write Kubernetes Events");
    assert_eq!(events_lines.len(), 2, "one line per cause:\n{log}");
    assert!(events_lines[0].contains("timed out after 5000 ms"), "{log}");
    assert!(events_lines[1].contains("500 InternalError"), "{log}");
    assert!(lines_with(&log, "failed with status").is_empty(), "{log}");

    // Recovery: the overheating, the brake and the link end at 60 s; after the 15 s hold
    // GpuDegraded clears, GpuUnhealthy stays for GPUs 2 and 4, the Node hears of GPU 0.
    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    while status(&api(port, node_path), "GpuDegraded").as_deref() != Some("False") {
        assert!(
            std::time::Instant::now() < deadline,
            "GpuDegraded not cleared: {}",
            api(port, node_path)["status"]["conditions"]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let n = api(port, node_path);
    assert_eq!(condition(&n, "GpuDegraded")["reason"], "GpusNotDegraded");
    assert_eq!(status(&n, "GpuUnhealthy").as_deref(), Some("True"));
    wait_until("a GpuRecovered Event on the Node for GPU 0", || {
        api(port, "/apis/events.k8s.io/v1/events")["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| {
                e["regarding"]["kind"] == "Node"
                    && e["reason"] == "GpuRecovered"
                    && e["note"]
                        .as_str()
                        .is_some_and(|n| n.starts_with("GPU 0 (GPU-"))
            })
    });
    let t = e.metrics();
    assert_eq!(health_levels(&t)[0], ("0", 0.0), "{t}");
    e.sigterm();
}

/// notify.toml with a `[kubernetes]` table of API server write faults appended, in `dir`.
fn with_api_faults(dir: &Path, faults: &str) -> PathBuf {
    notify_with(dir, &format!("[kubernetes]\napi_faults = [\n{faults}\n]\n"))
}

/// notify.toml with `extra` (TOML tables) appended, in `dir`.
fn notify_with(dir: &Path, extra: &str) -> PathBuf {
    let base = Path::new(env!("CARGO_MANIFEST_DIR")).join(SCENARIO);
    let text = std::fs::read_to_string(base).unwrap();
    let path = dir.join("notify-api-faults.toml");
    std::fs::write(&path, format!("{text}\n{extra}")).unwrap();
    path
}

/// `gpu_exporter_kube_writes_total{kind, result}` in a scrape.
fn writes(text: &str, kind: &str, result: &str) -> u64 {
    let want = format!("gpu_exporter_kube_writes_total{{kind=\"{kind}\",result=\"{result}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(want.as_str()))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {want} in\n{text}"))
}

/// The log lines that contain `needle`.
fn lines_with<'a>(log: &'a str, needle: &str) -> Vec<&'a str> {
    log.lines().filter(|l| l.contains(needle)).collect()
}

/// `gpu_exporter_samples_total` (ticks since start) in a scrape.
fn samples(text: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix("gpu_exporter_samples_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no gpu_exporter_samples_total in\n{text}"))
}

/// Waits up to 30 s until the Node's condition `ty` has status `want`; fails with the
/// Node's conditions and the exporter's log.
fn wait_status(e: &Exporter, port: u16, ty: &str, want: &str, what: &str) {
    wait_node_status(e, port, NODE_PATH, ty, want, what);
}

/// [`wait_status`] for the Node at `node_path`.
fn wait_node_status(e: &Exporter, port: u16, node_path: &str, ty: &str, want: &str, what: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while status(&api(port, node_path), ty).as_deref() != Some(want) {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting: {what}\nNode: {}\nlog:\n{}",
            api(port, node_path)["status"]["conditions"],
            e.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// RBAC missing, on the binary: the API server refuses the Node status patch and the Event
/// creation (403) for the first 8 s of the scenario, then accepts them (a 60 s hold keeps
/// the Xids of 1 s in the verdict meanwhile). Meanwhile the exporter serves every GPU's
/// series in each scrape and counts the refusals; each kind logs one line for the whole
/// outage, however many writes it refused; once the fault clears the conditions are written.
#[test]
fn a_refusing_api_server_leaves_the_metrics_whole_and_is_logged_once_per_cause() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = with_api_faults(
        dir.path(),
        r#"  { at = 0, until = 8, path = "/api/v1/nodes/", status = 403 },
  { at = 0, until = 8, path = "/apis/events.k8s.io/", status = 403 },"#,
    );
    let (mut e, port) = start(&scenario, "60s");
    let first = e.metrics_until("refused writes of both kinds counted", |t| {
        writes(t, "node_condition", "failure") >= 2 && writes(t, "event", "failure") >= 2
    });
    assert_eq!(writes(&first, "node_condition", "success"), 0, "{first}");
    let gpu_series = |t: &str| {
        [
            "gpu_device_up{",
            "gpu_health_status{",
            "DCGM_FI_DEV_GPU_TEMP{",
            "DCGM_FI_DEV_GPU_UTIL{",
        ]
        .map(|n| t.lines().filter(|l| l.starts_with(n)).count())
    };
    let want = gpu_series(&first);
    assert_eq!(want[0], 8, "{first}");
    for _ in 0..5 {
        std::thread::sleep(Duration::from_millis(250));
        let t = e.metrics();
        assert_eq!(
            gpu_series(&t),
            want,
            "a GPU series gapped while writes failed:\n{t}"
        );
    }
    let page = http_get(e.port, "/", &[]).unwrap();
    assert_eq!(page.status, 200);

    wait_status(
        &e,
        port,
        "GpuUnhealthy",
        "True",
        "GpuUnhealthy written once accepted",
    );
    e.wait_log(
        "Kubernetes Node conditions on sim-notify-node are written again",
        Duration::from_secs(10),
    );
    e.sigterm();
    let log = e.log();
    let refused = lines_with(&log, "cannot write Kubernetes Node conditions");
    assert_eq!(refused.len(), 1, "{log}");
    assert!(refused[0].contains("403 Forbidden"), "{}", refused[0]);
    let refused = lines_with(&log, "cannot write Kubernetes Events");
    assert_eq!(refused.len(), 1, "{log}");
    assert!(refused[0].contains("403 Forbidden"), "{}", refused[0]);
}

/// An unreachable API server, on the binary: from 3 s to 9 s of the scenario it closes every
/// connection without an answer (reads and watches too, as a restarting API server or a load
/// balancer with no backend does), and at 5 s GPU 0 reports Xid 48. Meanwhile the exporter
/// serves every GPU's series in each scrape, counts the failed writes and logs one line per
/// kind for the whole outage; afterwards the conditions name GPU 0, and the Event of its Xid
/// reaches the pod holding it, retried until the server answered.
#[test]
fn an_unreachable_api_server_leaves_the_metrics_whole_and_its_writes_land_afterwards() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = notify_with(
        dir.path(),
        "[[faults]]\nat = 5\ngpu = 0\nkind = \"xid\"\nxid = 48\n\n[kubernetes]\n\
         api_faults = [{ at = 3, until = 9, unreachable = true }]\n",
    );
    let (mut e, port) = start(&scenario, "60s");
    // The Events of 1 s are written before the outage.
    wait_pod_events(
        port,
        &[("inference/chat-api-7d4b9c8f6d-x2k4p", "XidMemory")],
    );
    let during = e.metrics_until("failed writes of both kinds counted", |t| {
        writes(t, "node_condition", "failure") >= 1 && writes(t, "event", "failure") >= 1
    });
    let devices = |t: &str| {
        t.lines()
            .filter(|l| l.starts_with("gpu_device_up{"))
            .count()
    };
    let allocated = |t: &str| {
        t.lines()
            .filter(|l| l.starts_with("gpu_allocation_info{"))
            .count()
    };
    assert_eq!(devices(&during), 8, "{during}");
    let holders = allocated(&during);
    assert!(holders > 0, "{during}");
    for _ in 0..4 {
        std::thread::sleep(Duration::from_millis(250));
        let t = e.metrics();
        assert_eq!(
            devices(&t),
            8,
            "a GPU series gapped while the API server was down:\n{t}"
        );
        assert_eq!(
            allocated(&t),
            holders,
            "pod attribution changed in the outage:\n{t}"
        );
    }
    e.wait_log(
        "Kubernetes Node conditions on sim-notify-node are written again",
        Duration::from_secs(30),
    );
    e.wait_log(
        "Kubernetes Events are written again",
        Duration::from_secs(30),
    );
    wait_until("GpuUnhealthy names GPU 0 after the outage", || {
        condition(&api(port, NODE_PATH), "GpuUnhealthy")["message"]
            .as_str()
            .is_some_and(|m| m.contains("GPU 0 (GPU-"))
    });
    wait_pod_events(port, &[("research/llm-train-0", "XidMemory")]);
    let text = e.metrics();
    let dropped = series(&text, "gpu_exporter_kube_writes_dropped_total");
    assert_eq!(dropped.len(), 4, "one series per reason: {text}");
    assert!(
        dropped.iter().all(|l| value(l) == 0.0),
        "nothing given up: {text}"
    );
    e.sigterm();
    let log = e.log();
    for kind in ["Node conditions", "Events"] {
        let failed = lines_with(&log, &format!("cannot write Kubernetes {kind}"));
        assert_eq!(failed.len(), 1, "one line for the outage:\n{log}");
        // The message only: the line's time stamp may hold "403" in its fraction of a second.
        let message = failed[0]
            .split_once("cannot write Kubernetes")
            .map_or(failed[0], |(_, m)| m);
        assert!(
            !message.contains("403") && !message.contains("timed out"),
            "{}",
            failed[0]
        );
    }
}

/// The API server unreachable when the exporter starts (0–8 s): the pods the kubelet lists
/// wait for their metadata (their series are written once, with it), and the faults of 1 s
/// still reach the pods holding the GPUs: the Events name them from the kubelet's list and
/// are written once the server answers.
#[test]
fn faults_while_the_api_server_is_down_at_start_still_reach_the_pods() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = with_api_faults(dir.path(), "  { at = 0, until = 8, unreachable = true },");
    let (mut e, port) = start(&scenario, "60s");
    e.wait_log(
        "Kubernetes Events are written again",
        Duration::from_secs(30),
    );
    wait_pod_events(
        port,
        &[
            ("research/llm-train-0", "PowerBrake"),
            ("inference/chat-api-7d4b9c8f6d-x2k4p", "XidMemory"),
            ("inference/rerank-a", "XidHardware"),
        ],
    );
    e.sigterm();
    // The pod reflector's failed lists of the whole outage: one warning.
    let log = e.log();
    let warned: Vec<&str> = lines_with(&log, "pods on node sim-notify-node")
        .into_iter()
        .filter(|l| l.contains("WARN"))
        .collect();
    assert_eq!(warned.len(), 1, "{log}");
    assert!(
        warned[0].contains("logged again only when the cause changes"),
        "{}",
        warned[0]
    );
}

/// A slow API server, on the binary: from 2 s to 8 s of the scenario every write waits 9 s
/// (past the 5 s deadline), and the server still makes it late, as a real one may. Ticks go
/// on, the writes are counted as timed out (not as failures), each kind logs one line, and
/// the Node's conditions end as the verdict says even after a late write has landed: the
/// patch sent at 3 s (the Xids of 1 s cleared after the 2 s hold, GPU 0's brake still held)
/// lands at 12 s, after the all-clear that followed it.
#[test]
fn a_slow_api_server_times_writes_out_while_ticks_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = with_api_faults(dir.path(), "  { at = 2, until = 8, delay = 9 },");
    let started = std::time::Instant::now();
    let (mut e, port) = start(&scenario, "2s");
    let before = samples(&e.metrics());
    let t = e.metrics_until("timed-out writes of both kinds counted", |t| {
        writes(t, "node_condition", "timeout") >= 1 && writes(t, "event", "timeout") >= 1
    });
    assert!(samples(&t) > before, "no tick while the writes hung:\n{t}");
    assert_eq!(writes(&t, "node_condition", "failure"), 0, "{t}");
    let a = samples(&e.metrics());
    wait_until("the tick counter moves", || samples(&e.metrics()) > a);

    // Every late write has landed by 8 + 9 s; then the Node says what the verdict says
    // (every GPU ok again).
    let landed = Duration::from_secs(18);
    std::thread::sleep(landed.saturating_sub(started.elapsed()));
    wait_status(
        &e,
        port,
        "GpuDegraded",
        "False",
        "GpuDegraded False after the late write",
    );
    wait_status(&e, port, "GpuUnhealthy", "False", "GpuUnhealthy False");
    e.sigterm();
    let log = e.log();
    let slow = lines_with(&log, "timed out after 5000 ms");
    assert_eq!(slow.len(), 2, "one line per kind:\n{log}");
}

/// The writers in process, on notify.toml's node and simulated cluster: each tick's snapshot
/// is published by hand into a [`Shared`] with the writers' figures, as the sampler's loop
/// does, and the writers started with [`InProcess::start`] read it and count into the
/// [`Outputs`]' counters; the simulated API server's write faults play the server.
struct InProcess {
    // Dropped first: it reads through the node's library and the cluster's runtime.
    sampler: gpu_exporter::sampler::Sampler,
    cluster: common::Cluster,
    node: common::SimNode,
    counters: Arc<gpu_exporter::catalogue::csv::CounterSet>,
    opts: gpu_exporter::exposition::EncodeOptions,
    /// The next tick's scenario time.
    t: f64,
}

/// A published state the writers read, their counters, and those counters as the exposition
/// reads them.
struct Outputs {
    shared: Arc<Shared>,
    counts: Arc<WriteCounts>,
    owners: CountOwners,
}

impl InProcess {
    fn new() -> Self {
        let node = common::SimNode::new(SCENARIO, 7);
        let cluster = common::Cluster::start(&node);
        let counters = common::default_counters();
        let cfg = common::config(&["--health-hold", "30s"]);
        let k = cluster.config();
        let sampler = node
            .sampler_with(counters.clone(), cfg.reader.clone(), 0.0)
            .with_attribution(cluster.attributor(&k))
            .with_health(cfg.health_options());
        Self {
            sampler,
            cluster,
            node,
            counters,
            opts: cfg.encode_options(),
            t: 0.5,
        }
    }

    fn api(&self) -> &gpu_exporter::sim::api::FakeApi {
        &self.cluster.sim.api
    }

    /// An empty published state for writers to read, and their counters.
    fn shared(&self) -> Outputs {
        let counts = Arc::new(WriteCounts::default());
        let mut owners = CountOwners::default();
        owners.add(Arc::clone(&counts) as _);
        Outputs {
            shared: Arc::new(Shared::new(render(
                Default::default(),
                &Counted::default(),
                &self.counters,
                &self.opts,
            ))),
            counts,
            owners,
        }
    }

    /// Writers reading `shared`: the Events (a queue of `queue`, each retried for
    /// `retry_for`) and, with `conditions`, the Node conditions; each call has 300 ms.
    fn start(&self, out: &Outputs, conditions: bool, queue: usize, retry_for: Duration) {
        notify::spawn(
            self.cluster.sim.client.clone(),
            NotifyOptions {
                node: self.cluster.sim.node.clone(),
                conditions,
                events: true,
                interval: Duration::from_millis(50),
                timeout: Duration::from_millis(300),
                queue,
                event_retry_for: retry_for,
            },
            Arc::clone(&out.shared),
            Arc::clone(&out.counts),
            self.cluster.rt.handle(),
        );
    }

    /// One tick, half a second of scenario time after the last, published into `out` with the
    /// writers' figures; then a moment for the writers to see it.
    fn tick(&mut self, out: &Outputs) {
        self.node.set_time(self.t);
        let snap = self.sampler.tick(self.t);
        out.shared.publish(
            render(snap, &out.owners.read(), &self.counters, &self.opts),
            true,
        );
        self.t += 0.5;
        std::thread::sleep(Duration::from_millis(60));
    }

    /// The Node's conditions.
    fn conditions(&self) -> Vec<Value> {
        self.api().node(&self.cluster.sim.node).unwrap()["status"]["conditions"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// (pod, reason) of every Event on a pod.
    fn pod_events(&self) -> BTreeSet<(String, String)> {
        pod_events(&serde_json::json!({ "items": self.api().events() }))
    }
}

fn fault(path_prefix: &str, status: Option<u16>, delay: Duration) -> WriteFault {
    WriteFault {
        path_prefix: path_prefix.into(),
        status,
        delay,
        unreachable: false,
    }
}

/// The writers against a failing API server, in process.
#[test]
fn a_failing_api_server_is_counted_bounded_and_harmless() {
    let mut p = InProcess::new();
    let shared = p.shared();
    // Events refused (403) and conditions erroring (500) from the start.
    p.api().set_write_faults(vec![
        fault("/apis/events.k8s.io/", Some(403), Duration::ZERO),
        fault("/api/v1/nodes/", Some(500), Duration::ZERO),
    ]);
    p.start(&shared, true, 64, notify::EVENT_RETRY_FOR);
    let figures = |out: &Outputs| out.counts.figures();
    wait_until("refused writes counted", || {
        p.tick(&shared);
        let f = figures(&shared);
        f.events_failed > 0 && f.conditions_failed > 0
    });
    // The page and the metrics go on: the published exposition has every GPU and the counts.
    let text = String::from_utf8(shared.shared.load().plain.to_vec()).unwrap();
    assert!(text.contains("gpu_exporter_kube_writes_total{kind=\"event\",result=\"failure\"}"));
    assert!(text.contains("gpu_health_status{"), "{text}");
    assert_eq!(text.matches("gpu_device_up{").count(), 8, "{text}");
    assert_eq!(figures(&shared).events_ok, 0);
    assert!(
        p.conditions().iter().all(|c| c["type"] == "Ready"),
        "a refused patch wrote something"
    );

    // Slow (2 s per write, over the 300 ms deadline): calls time out, and a second writer
    // with a queue of 4, whose first plan holds every fault's Events at once, drops the rest
    // and counts them.
    p.api()
        .set_write_faults(vec![fault("", None, Duration::from_secs(2))]);
    p.start(&shared, true, 4, notify::EVENT_RETRY_FOR);
    wait_until("Events dropped for a full queue", || {
        p.tick(&shared);
        figures(&shared).dropped() > 0
    });

    // The server works again: the conditions are written, the kubelet's kept. (A patch that
    // timed out above may land late and show the condition first; the writer's own write,
    // counted, follows.)
    p.api().set_write_faults(Vec::new());
    wait_until("conditions written once the server answers", || {
        p.tick(&shared);
        figures(&shared).conditions_ok > 0
            && p.conditions()
                .iter()
                .any(|c| c["type"] == "GpuUnhealthy" && c["status"] == "True")
    });
    assert!(p.conditions().iter().any(|c| c["type"] == "Ready"));
    assert!(figures(&shared).conditions_ok > 0);
}

/// Events refused in a way that may pass are written again, in process: while the API server
/// answers 500 to every Event, the Events of the faults of 1 s wait and are retried; once it
/// answers again they reach the pods that were hit. A second writer, against a server that
/// refuses (403) for good, gives each Event up after its retry time and counts it as
/// dropped (its queue of 256 never fills, so every drop is a give-up), after more than one
/// try for the first.
#[test]
fn events_refused_for_a_while_are_retried_and_given_up_only_after_their_time() {
    let mut p = InProcess::new();
    p.api().set_write_faults(vec![fault(
        "/apis/events.k8s.io/",
        Some(500),
        Duration::ZERO,
    )]);
    let shared = p.shared();
    p.start(&shared, false, 256, notify::EVENT_RETRY_FOR);
    // The first tick after 1 s plans the Xids' Events; the first of them fails, and is
    // tried again.
    wait_until("an Event refused twice (tried again)", || {
        p.tick(&shared);
        shared.counts.figures().events_failed >= 2
    });
    assert!(p.pod_events().is_empty(), "an Event written while refused");
    p.api().set_write_faults(Vec::new());
    wait_until(
        "the Events planned during the outage reach the pods",
        || {
            let got = p.pod_events();
            [
                ("inference/rerank-a", "XidHardware"),
                ("inference/rerank-b", "XidHardware"),
                ("media/render-farm-0", "XidApplication"),
                ("sandbox/notebook-alice", "XidMemory"),
            ]
            .iter()
            .all(|(p, r)| got.contains(&((*p).to_owned(), (*r).to_owned())))
        },
    );
    let f = shared.counts.figures();
    assert_eq!(f.dropped(), 0, "nothing given up within the retry time");

    // Refused for good, a retry time of 1 s: given up and counted, never written.
    p.api().set_write_faults(vec![fault(
        "/apis/events.k8s.io/",
        Some(403),
        Duration::ZERO,
    )]);
    let before = p.api().events().len();
    let second = p.shared();
    p.start(&second, false, 256, Duration::from_secs(1));
    wait_until("Events given up after 1 s", || {
        p.tick(&second);
        second.counts.figures().dropped() > 0
    });
    let f = second.counts.figures();
    assert_eq!(f.events_ok, 0);
    assert!(
        f.events_failed > f.dropped(),
        "the first Event given up was tried more than once: {} failures, {} dropped",
        f.events_failed,
        f.dropped()
    );
    assert_eq!(
        p.api().events().len(),
        before,
        "a refused Event was written"
    );
}

/// A write that timed out is made again under the same name, in process (issue 50, T5-4):
/// while the API server answers Events 1 s late (past the 300 ms deadline) and makes them all
/// the same, the first Event of the faults of 1 s times out again and again; once the server
/// answers in time, the try finds the Event made (`409 AlreadyExists`) and counts it as
/// written. Every object and cause has one Event object.
#[test]
fn an_event_that_timed_out_is_written_again_under_its_name() {
    let mut p = InProcess::new();
    p.api().set_write_faults(vec![fault(
        "/apis/events.k8s.io/",
        None,
        Duration::from_secs(1),
    )]);
    let shared = p.shared();
    p.start(&shared, false, 256, notify::EVENT_RETRY_FOR);
    wait_until("an Event timed out twice (tried again)", || {
        p.tick(&shared);
        shared.counts.figures().events_timed_out >= 2
    });
    // The late writes land (1 s after each try).
    std::thread::sleep(Duration::from_millis(1200));
    p.api().set_write_faults(Vec::new());
    wait_until("the Events of the faults of 1 s reach the pods", || {
        p.tick(&shared);
        let got = p.pod_events();
        [
            ("inference/rerank-a", "XidHardware"),
            ("media/render-farm-0", "XidApplication"),
            ("sandbox/notebook-alice", "XidMemory"),
        ]
        .iter()
        .all(|(p, r)| got.contains(&((*p).to_owned(), (*r).to_owned())))
    });
    let made_again = p
        .api()
        .writes()
        .iter()
        .filter(|w| w.starts_with("POST /apis/events.k8s.io/") && w.ends_with(" 409"))
        .count();
    assert!(
        made_again >= 1,
        "a try of an Event already made: {:#?}",
        p.api().writes()
    );
    let objects = event_objects(&serde_json::json!({ "items": p.api().events() }));
    let doubled: Vec<_> = objects.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "an Event made twice: {doubled:?}");
}

/// An API server that cannot be reached: every write fails and is counted, nothing else
/// changes.
#[test]
fn an_unreachable_api_server_is_counted() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let closed = common::free_port();
    let client = {
        let _g = rt.enter();
        let uri: axum::http::Uri = format!("http://127.0.0.1:{closed}").parse().unwrap();
        kube::Client::try_from(kube::Config::new(uri)).unwrap()
    };
    let node = common::SimNode::new(SCENARIO, 7);
    let counters = common::default_counters();
    let cfg = common::config(&[]);
    let mut sampler = node
        .sampler_with(counters.clone(), cfg.reader.clone(), 0.0)
        .with_health(cfg.health_options());
    let opts = cfg.encode_options();
    let shared = Arc::new(Shared::new(render(
        Default::default(),
        &Counted::default(),
        &counters,
        &opts,
    )));
    let counts = Arc::new(WriteCounts::default());
    notify::spawn(
        client,
        NotifyOptions {
            node: "sim-notify-node".into(),
            conditions: true,
            events: true,
            interval: Duration::from_millis(50),
            timeout: Duration::from_millis(300),
            queue: 16,
            event_retry_for: notify::EVENT_RETRY_FOR,
        },
        Arc::clone(&shared),
        Arc::clone(&counts),
        rt.handle(),
    );
    let mut t = 0.5;
    wait_until("unreachable writes counted", || {
        node.set_time(t);
        shared.publish(
            render(sampler.tick(t), &Counted::default(), &counters, &opts),
            true,
        );
        t += 0.5;
        std::thread::sleep(Duration::from_millis(60));
        let f = counts.figures();
        f.conditions_failed > 0 && f.events_failed > 0 && !f.last_ok
    });
}

/// The writes need -k and the node's name: each is refused at start with the flag named.
#[test]
fn the_writes_without_kubernetes_or_a_node_name_are_refused() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(common::BIN)
            .args(args)
            .env_remove("NODE_NAME")
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--kubernetes-events", "-a", "127.0.0.1:0"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--kubernetes-events needs -k/--kubernetes"),
        "{err}"
    );
    let (code, err) = run(&["--kubernetes-node-conditions", "-k", "-a", "127.0.0.1:0"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("--kubernetes-node-conditions needs the node's name in NODE_NAME"),
        "{err}"
    );
}

/// Writes `toml` as a scenario file in `dir`.
fn scenario_file(dir: &Path, name: &str, toml: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, toml).unwrap();
    path
}

/// The value of the series line that starts with `prefix` (0 when there is none).
fn sample(text: &str, prefix: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .map_or(0.0, value)
}

/// The Events on the Node with `reason`.
fn node_events(port: u16, reason: &str) -> usize {
    api(port, "/apis/events.k8s.io/v1/events")["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["regarding"]["kind"] == "Node" && e["reason"] == reason)
        .count()
}

/// A pod whose name and namespace hold characters a URI cannot carry (a quote, a newline,
/// `<script>`) comes first and holds GPU 0, beside a plain pod. Its Event can never be built
/// into a request: it is dropped at once, counted as `invalid` and logged once, and the
/// Events behind it are written (the Node's for Xid 48 and Xid 79, the plain pods'), with the
/// conditions. Before, it stood at the head of the queue for 10 minutes and every later Event
/// waited behind it.
#[test]
fn a_pod_whose_event_cannot_be_built_blocks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let gpu = "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\", level = 0.8, memory = 0.5 }\n";
    let toml = format!(
        "name = \"hostile\"\nnode = \"sim-hostile-node\"\n{gpu}{gpu}{gpu}\
         [[faults]]\nat = 1\ngpu = 0\nkind = \"xid\"\nxid = 48\n\
         [[faults]]\nat = 2\ngpu = 0\nkind = \"xid\"\nxid = 13\n\
         [[faults]]\nat = 3\ngpu = 1\nkind = \"xid\"\nxid = 79\n\
         [[pods]]\nname = 'bad\"name<script>'\nnamespace = \"ns\\\"\\n<script>\"\n\
         containers = [{{ name = \"c\", shared = [\"0::0\"] }}]\n\
         [[pods]]\nname = \"plain-0\"\nnamespace = \"ok\"\n\
         containers = [{{ name = \"c\", shared = [\"0::1\"] }}]\n\
         [[pods]]\nname = \"plain-1\"\nnamespace = \"ok\"\n\
         containers = [{{ name = \"c\", gpus = [1] }}]\n"
    );
    let path = scenario_file(dir.path(), "hostile.toml", &toml);
    let (e, port) = start(&path, "2s");
    wait_until(
        "the Node Events of Xid 48 and Xid 79 and the plain pods' Events",
        || {
            let got = pod_events(&api(port, "/apis/events.k8s.io/v1/events"));
            node_events(port, "XidMemory") >= 1
                && node_events(port, "XidHardware") >= 1
                && got.contains(&("ok/plain-0".to_owned(), "XidMemory".to_owned()))
                && got.contains(&("ok/plain-0".to_owned(), "XidApplication".to_owned()))
                && got.contains(&("ok/plain-1".to_owned(), "XidHardware".to_owned()))
        },
    );
    let n = api(port, "/api/v1/nodes/sim-hostile-node");
    assert_eq!(status(&n, "GpuUnhealthy").as_deref(), Some("True"));
    let t = e.metrics();
    let invalid = sample(
        &t,
        "gpu_exporter_kube_writes_dropped_total{reason=\"invalid\"}",
    );
    assert!(
        invalid >= 2.0,
        "the hostile pod's Events (Xid 48, Xid 13) counted as invalid: {invalid}"
    );
    assert_eq!(
        sample(
            &t,
            "gpu_exporter_kube_writes_dropped_total{reason=\"retries_expired\"}"
        ),
        0.0
    );
    let log = e.log();
    assert_eq!(
        lines_with(&log, "can never be written").len(),
        1,
        "logged once: {log}"
    );
    assert!(
        log.contains("Pod \"ns\\\"\\n<script>\"/"),
        "the pod named, quoted: {log}"
    );
}

/// A burst: one Xid 48 on a GPU time-sliced between 2,000 pods, and a storm of application
/// Xids (13, every 10 ms for 10 s) on six GPUs held by four pods each. The Node conditions are
/// written (their own writer), and every Node Event: the queue takes the Node's before any
/// pod's and, full, drops pod Events first. A pod Event for an object and cause that already
/// waits is merged (one Event object per pod and cause, never one per Xid). What is dropped is
/// counted, and the full queue is logged once.
///
/// The API server answers the storm's Events 100 ms late (the rest at once), so that they
/// wait: 24 of them take 2.4 s to write, over a dozen ticks of 200 ms, each of which plans the
/// repeated Xid again. Without it whether a repeat finds its Event still waiting depends on
/// how fast the machine drains the 2,000 pods' backlog (it failed CI when it was fast).
#[test]
fn a_burst_keeps_the_node_informed_and_merges_repeats() {
    let dir = tempfile::tempdir().unwrap();
    let mut toml = String::from("name = \"burst\"\nnode = \"sim-burst-node\"\n");
    for _ in 0..7 {
        toml.push_str(
            "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\", level = 0.8, memory = 0.5 }\n",
        );
    }
    // From 4 s: NVML's event set must be registered first (the first tick, which a loaded
    // machine may take past 1 s to reach with 2,000 pods), or the one Xid 48 is never seen.
    toml.push_str("[[faults]]\nat = 4\ngpu = 0\nkind = \"xid\"\nxid = 48\n");
    for gpu in 1..7 {
        toml.push_str(&format!(
            "[[faults]]\nat = 4\ngpu = {gpu}\nkind = \"xid\"\nxid = 13\nrepeat = 1000\nevery = 0.01\n"
        ));
    }
    for i in 0..2000 {
        toml.push_str(&format!(
            "[[pods]]\nname = \"shared-{i}\"\nnamespace = \"burst\"\n\
             containers = [{{ name = \"c\", shared = [\"0::{i}\"] }}]\n"
        ));
    }
    for gpu in 1..7 {
        for r in 0..4 {
            toml.push_str(&format!(
                "[[pods]]\nname = \"storm-{gpu}-{r}\"\nnamespace = \"storm\"\n\
                 containers = [{{ name = \"c\", shared = [\"{gpu}::{r}\"] }}]\n"
            ));
        }
    }
    toml.push_str(
        "[kubernetes]\napi_faults = [{ at = 0, path = \"/apis/events.k8s.io/v1/namespaces/storm/\", delay = 0.1 }]\n",
    );
    let path = scenario_file(dir.path(), "burst.toml", &toml);
    let (e, port) = start(&path, "60s");
    wait_until("GpuUnhealthy and the Node's Events of both causes", || {
        let n = api(port, "/api/v1/nodes/sim-burst-node");
        status(&n, "GpuUnhealthy").as_deref() == Some("True")
            && node_events(port, "XidMemory") == 1
            && node_events(port, "XidApplication") >= 6
    });
    // The storm's pods each get one Event object for their cause, whose count rises.
    wait_until("every storm pod's Event", || {
        let got = pod_events(&api(port, "/apis/events.k8s.io/v1/events"));
        (1..7).all(|g| {
            (0..4).all(|r| got.contains(&(format!("storm/storm-{g}-{r}"), "XidApplication".into())))
        })
    });
    std::thread::sleep(Duration::from_secs(3));
    let events = api(port, "/apis/events.k8s.io/v1/events");
    let items = events["items"].as_array().unwrap();
    for g in 1..7 {
        for r in 0..4 {
            let name = format!("storm-{g}-{r}");
            let n = items
                .iter()
                .filter(|e| {
                    e["regarding"]["name"] == name.as_str() && e["reason"] == "XidApplication"
                })
                .count();
            assert_eq!(
                n, 1,
                "{name}: one Event object per pod and cause, not one per Xid"
            );
        }
    }
    let storm_events = items
        .iter()
        .filter(|e| e["regarding"]["namespace"] == "storm")
        .count();
    let t = e.metrics();
    let merged = sample(&t, "gpu_exporter_kube_events_merged_total");
    let full = sample(
        &t,
        "gpu_exporter_kube_writes_dropped_total{reason=\"queue_full\"}",
    );
    let written = sample(
        &t,
        "gpu_exporter_kube_writes_total{kind=\"event\",result=\"success\"}",
    );
    let shared_written = items
        .iter()
        .filter(|e| e["regarding"]["namespace"] == "burst")
        .count();
    // 2,000 pod Events for one Xid cannot all wait in a queue of 256: the rest are counted.
    assert!(
        shared_written >= 1,
        "some of the 2,000 pods got their Event"
    );
    assert!(
        shared_written as f64 + full >= 2000.0,
        "every pod Event written or counted as dropped: {shared_written} written, {full} dropped"
    );
    assert!(merged > 0.0, "repeats merged while waiting: {t}");
    assert_eq!(
        sample(
            &t,
            "gpu_exporter_kube_writes_total{kind=\"event\",result=\"failure\"}"
        ),
        0.0
    );
    assert!(written >= (shared_written + storm_events) as f64);
    let log = e.log();
    assert_eq!(
        lines_with(&log, "Kubernetes Event queue is full").len(),
        1,
        "the full queue logged once: {log}"
    );
}

/// (namespace/name or the Node's name, reason, action) of every Event, with how many Event
/// objects each has.
fn event_objects(events: &Value) -> std::collections::BTreeMap<(String, String, String), usize> {
    let mut out = std::collections::BTreeMap::new();
    for e in events["items"].as_array().unwrap() {
        let r = &e["regarding"];
        let object = match r["namespace"].as_str() {
            Some(ns) => format!("{ns}/{}", r["name"].as_str().unwrap_or("")),
            None => r["name"].as_str().unwrap_or("").to_owned(),
        };
        let key = (
            object,
            e["reason"].as_str().unwrap_or("").to_owned(),
            e["action"].as_str().unwrap_or("").to_owned(),
        );
        *out.entry(key).or_insert(0) += 1;
    }
    out
}

/// A storm on one widely shared GPU (issue 50, T5-2 and T5-3): GPU 0 time-sliced between
/// 1,500 pods gets an application Xid every 10 ms from 5 s, so every tick plans 1,501
/// Events, six times what the queue holds. While the queue is still full of them, other
/// faults hit few pods (from 6 s: the pods are attributed by then, even on a loaded machine):
/// Xid 79 on GPU 1, Xid 48 on GPU 2 (four pods), an application Xid 31 on one MIG instance of
/// GPU 3, GPU 4 lost. Every pod hit by one of them gets its Event, and so does every storm pod (each
/// tick plans it again until it is written); each object and cause has one Event object,
/// the writes stay within one per object and cause (plus a series update each 30 s per
/// Event), and the full queue is one line for the whole burst. Before, the queue was full of
/// the storm's repeats at every tick: the other faults' pod Events were dropped, the first 255
/// storm pods were written once per tick, and the log had two lines per tick.
#[test]
fn a_storm_on_a_widely_shared_gpu_starves_no_other_pods_events() {
    const STORM: usize = 1500;
    let dir = tempfile::tempdir().unwrap();
    let mut toml = String::from("name = \"storm\"\nnode = \"sim-storm-node\"\n");
    let gpu = "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\", level = 0.8, memory = 0.5 }\n";
    for g in 0..6 {
        if g == 3 {
            toml.push_str("[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nmig = [{ profile = \"1g.10gb\" }, { profile = \"1g.10gb\" }, { profile = \"1g.10gb\" }]\n");
        } else {
            toml.push_str(gpu);
        }
    }
    toml.push_str(
        "[[faults]]\nat = 5\ngpu = 0\nkind = \"xid\"\nxid = 13\nrepeat = 10000\nevery = 0.01\n\
         [[faults]]\nat = 6\ngpu = 1\nkind = \"xid\"\nxid = 79\n\
         [[faults]]\nat = 6\ngpu = 2\nkind = \"xid\"\nxid = 48\n\
         [[faults]]\nat = 6.5\ngpu = 3\nkind = \"xid\"\nxid = 31\ngi = 8\n\
         [[faults]]\nat = 7\ngpu = 4\nkind = \"lost\"\n",
    );
    for i in 0..STORM {
        toml.push_str(&format!(
            "[[pods]]\nname = \"storm-{i:04}\"\nnamespace = \"storm\"\n\
             containers = [{{ name = \"c\", shared = [\"0::{i}\"] }}]\n"
        ));
    }
    let pod = |name: &str, ns: &str, devices: &str| {
        format!(
            "[[pods]]\nname = \"{name}\"\nnamespace = \"{ns}\"\n\
             containers = [{{ name = \"c\", {devices} }}]\n"
        )
    };
    toml.push_str(&pod("train-1", "research", "gpus = [1]"));
    for r in 0..4 {
        toml.push_str(&pod(
            &format!("mem-{r}"),
            "serving",
            &format!("shared = [\"2::{r}\"]"),
        ));
    }
    for gi in [7, 8, 9] {
        toml.push_str(&pod(
            &format!("mig-{gi}"),
            "mig",
            &format!("mig = [\"3.{gi}\"]"),
        ));
    }
    toml.push_str(&pod("lost-4", "serving", "gpus = [4]"));
    toml.push_str(&pod("idle-5", "serving", "gpus = [5]"));
    let path = scenario_file(dir.path(), "storm.toml", &toml);
    let started = std::time::Instant::now();
    let (e, port) = start(&path, "60s");

    let mut want: BTreeSet<(String, String)> = [
        ("research/train-1", "XidHardware"),
        ("mig/mig-8", "XidApplication"),
        ("serving/lost-4", "GpuLost"),
    ]
    .iter()
    .map(|(p, r)| ((*p).to_owned(), (*r).to_owned()))
    .collect();
    for r in 0..4 {
        want.insert((format!("serving/mem-{r}"), "XidMemory".into()));
    }
    for i in 0..STORM {
        want.insert((format!("storm/storm-{i:04}"), "XidApplication".into()));
    }
    // Polled every 250 ms (a list of 1,500 Events), for at most 45 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(45);
    let events = loop {
        let events = api(port, "/apis/events.k8s.io/v1/events");
        let got = pod_events(&events);
        if got.is_superset(&want) {
            break events;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "pods hit without their Event: {:?} (of {} expected)\n{}",
            want.difference(&got).take(20).collect::<Vec<_>>(),
            want.len(),
            e.metrics()
                .lines()
                .filter(|l| l.starts_with("gpu_exporter_kube"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        std::thread::sleep(Duration::from_millis(250));
    };
    let elapsed = started.elapsed();
    // Only the pods that were hit (not the other MIG instances' pods, not GPU 5's).
    let got = pod_events(&events);
    let pods: BTreeSet<&String> = got.iter().map(|(p, _)| p).collect();
    for quiet in ["mig/mig-7", "mig/mig-9", "serving/idle-5"] {
        assert!(!pods.contains(&quiet.to_owned()), "an Event on {quiet}");
    }
    // One Event object per object and cause, never one per tick.
    let objects = event_objects(&events);
    let doubled: Vec<_> = objects.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        doubled.is_empty(),
        "more than one Event object: {doubled:?}"
    );
    let t = e.metrics();
    let written = sample(
        &t,
        "gpu_exporter_kube_writes_total{kind=\"event\",result=\"success\"}",
    );
    // At most a series update per Event each 30 s on top of its creation.
    let bound = objects.len() as f64 * (1.0 + (elapsed.as_secs() / 30) as f64);
    assert!(
        written <= bound,
        "{written} Event writes for {} Events in {elapsed:?}",
        objects.len()
    );
    let full = sample(
        &t,
        "gpu_exporter_kube_writes_dropped_total{reason=\"queue_full\"}",
    );
    assert!(
        full > 0.0,
        "the queue overflowed (the storm plans 1,501 a tick): {t}"
    );
    let log = e.log();
    assert_eq!(
        lines_with(&log, "Kubernetes Event queue is full").len(),
        1,
        "the full queue logged once for the burst: {log}"
    );
    assert!(
        lines_with(&log, "Kubernetes Event queue has room again").len() <= 1,
        "{log}"
    );
}

/// A write whose answer was lost is not made twice (issue 50, T5-4): from 0 to 5 s the API
/// server answers Events 4 s late, and from 3 s to 6 s it closes every connection. The
/// Node's first Event of the faults of 1 s is sent at about 1 s; its connection is closed at
/// 3 s, before the answer, and the server makes the write at about 5 s all the same. The
/// writer tries again once the server is back, under the same name: `409 AlreadyExists`,
/// counted as written. Before, the retry was a new Event: two Node Events for one Xid.
#[test]
fn an_event_whose_answer_was_lost_is_written_once() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = with_api_faults(
        dir.path(),
        r#"  { at = 0, until = 5, path = "/apis/events.k8s.io/", delay = 4 },
  { at = 3, until = 6, unreachable = true },"#,
    );
    let (mut e, port) = start(&scenario, "60s");
    let want = [
        ("inference/rerank-a", "XidHardware"),
        ("inference/rerank-b", "XidHardware"),
        ("media/render-farm-0", "XidApplication"),
        ("sandbox/notebook-alice", "XidMemory"),
    ];
    let want: BTreeSet<(String, String)> = want
        .iter()
        .map(|(p, r)| ((*p).to_owned(), (*r).to_owned()))
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    // (The server answers no read while it is down.)
    while !http_get(port, "/apis/events.k8s.io/v1/events", &[])
        .and_then(|r| serde_json::from_str::<Value>(&r.text()).ok())
        .is_some_and(|events| pod_events(&events).is_superset(&want))
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the pods' Events after the outage: {}",
            e.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let t = e.metrics();
    assert!(
        writes(&t, "event", "failure") >= 1,
        "the closed connection counted: {t}"
    );
    let objects = event_objects(&api(port, "/apis/events.k8s.io/v1/events"));
    let doubled: Vec<_> = objects.iter().filter(|(_, n)| **n > 1).collect();
    assert!(doubled.is_empty(), "an Event made twice: {doubled:?}");
    for reason in ["XidHardware", "XidMemory"] {
        assert_eq!(
            node_events(port, reason),
            1,
            "{reason} on the Node: {objects:?}"
        );
    }
    e.sigterm();
}

/// The label sets (without the value) of the series of `family`.
fn label_sets(text: &str, family: &str) -> BTreeSet<String> {
    series(text, family)
        .into_iter()
        .map(|l| l.rsplit_once(' ').map_or(l, |(k, _)| k).to_owned())
        .collect()
}

/// The simulated NVML library's census file, `event_sets N` and `gpm_samples N`, at a quiet
/// moment: the fewest of five reads 100 ms apart (a sample being swapped at that moment is not
/// a leak).
fn census(path: &Path) -> (u64, u64) {
    (0..5)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let count = |key: &str| {
                text.lines()
                    .find_map(|l| l.strip_prefix(key))
                    .and_then(|n| n.trim().parse().ok())
                    .unwrap_or(u64::MAX)
            };
            (count("event_sets "), count("gpm_samples "))
        })
        .min()
        .unwrap_or((u64::MAX, u64::MAX))
}

/// Open file descriptors of process `pid`: the fewest of five counts 100 ms apart (a
/// connection being opened or closed at that moment is not a leak).
fn open_fds(pid: u32) -> usize {
    (0..5)
        .map(|_| {
            std::thread::sleep(Duration::from_millis(100));
            std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
        })
        .min()
        .unwrap_or(0)
}

/// A GPU unbound from its driver and bound again, four times (as after a reset in place, or
/// `echo … > unbind` then `bind`): the first of two GPUs, so while it is away NVML lists the
/// other at index 0, and it comes back at index 0 with the same UUID (the last time with a new
/// minor number, which is served from then on, in `DCGM_FI_DEV_MINOR_NUMBER` and the `device`
/// label). While it is away, the other GPU's series carry
/// its own UUID and holder at its new index, and nothing is served under the absent GPU's UUID.
/// Each time it is picked up again within a few ticks without a restart: every series of both
/// GPUs resumes under the same label sets as before, its holder is attributed again, its health
/// verdict is ok and the Node conditions clear. Nothing leaks over the returns: the process
/// holds at most one file descriptor more after the fourth return than after the first (a leak
/// of one per return would be three), and the simulated NVML library holds as many event sets
/// and GPM samples as after the first.
#[test]
fn a_gpu_unbound_and_bound_again_comes_back_whole() {
    const ROUNDS: [(u32, u32); 4] = [(3, 5), (7, 9), (11, 13), (15, 17)];
    let dir = tempfile::tempdir().unwrap();
    let gpu = "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\", level = 0.8, memory = 0.5 }\n";
    let mut toml = format!("name = \"rebind\"\nnode = \"sim-rebind-node\"\n{gpu}{gpu}");
    for (from, until) in ROUNDS {
        toml.push_str(&format!(
            "[[faults]]\nat = {from}\nuntil = {until}\ngpu = 0\nkind = \"unbind\"\n"
        ));
    }
    // The last return brings a new minor number (`/dev/nvidia9`).
    toml.push_str("minor = 9\n");
    let counters = scenario_file(
        dir.path(),
        "counters.csv",
        "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_FB_USED, gauge, fb\n\
         DCGM_FI_DEV_MINOR_NUMBER, gauge, minor\nDCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, gr (GPM)\n",
    );
    toml.push_str(
        "[[pods]]\nname = \"p0\"\nnamespace = \"ns\"\ncontainers = [{ name = \"c\", gpus = [0] }]\n\
         [[pods]]\nname = \"p1\"\nnamespace = \"ns\"\ncontainers = [{ name = \"c\", gpus = [1] }]\n",
    );
    let path = scenario_file(dir.path(), "rebind.toml", &toml);
    let census_file = dir.path().join("nvml-census");
    let e = Exporter::builder()
        .args(["--simulate"])
        .arg(&path)
        .args(["-f", counters.to_str().unwrap()])
        .args(["-k", "-c", "200", "--kubernetes-node-conditions"])
        .args(["--kubernetes-events", "--health-hold", "1s"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NODE_NAME")
        .env("RUST_LOG", "info")
        .env("NVML_SIM_CENSUS", &census_file)
        .log_pipe()
        .start();
    let port = api_port(&e);
    let families = [
        "gpu_device_up",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gpu_allocation_info",
        "gpu_health_status",
        "gpu_device_info",
    ];
    let sets =
        |t: &str| -> Vec<BTreeSet<String>> { families.iter().map(|f| label_sets(t, f)).collect() };
    // Both GPUs with every family, holders attributed.
    let whole = |t: &str| {
        families.iter().all(|f| {
            ["0", "1"]
                .iter()
                .all(|g| series(t, f).iter().any(|l| label(l, "gpu") == *g))
        }) && t.contains("pod=\"p0\"")
            && t.contains("pod=\"p1\"")
    };
    let before = e.metrics_until("both GPUs with their holders", whole);
    let first = sets(&before);
    let uuid_of = |t: &str, gpu: &str| {
        series(t, "gpu_device_up")
            .into_iter()
            .find(|l| label(l, "gpu") == gpu)
            .map(|l| label(l, "UUID").to_owned())
            .unwrap()
    };
    let (away, stays) = (uuid_of(&before, "0"), uuid_of(&before, "1"));
    let mut after_first = (0, (0, 0));
    for (round, (from, until)) in ROUNDS.into_iter().enumerate() {
        let gone = e.metrics_until(&format!("GPU 0 gone (unbind {round})"), |t| {
            series(t, "gpu_device_up").len() == 1
        });
        // The GPU that stays is NVML's index 0 now: its series say so under its own UUID and
        // holder, and nothing is served under the absent GPU's UUID.
        for f in families {
            for l in series(&gone, f) {
                assert_eq!(label(l, "UUID"), stays, "only the GPU that stays: {l}");
                assert_eq!(label(l, "gpu"), "0", "at its new index: {l}");
            }
        }
        assert!(
            series(&gone, "gpu_allocation_info")
                .iter()
                .any(|l| label(l, "pod") == "p1"),
            "p1 still holds the GPU that stays: {gone}"
        );
        assert!(!gone.contains(&away), "{gone}");
        // The last return's new device node is its `device` label from then on (the label
        // follows `/dev/nvidia<minor>`, as dcgm-exporter's does); every other label is as before.
        let expected: Vec<BTreeSet<String>> = if round + 1 < ROUNDS.len() {
            first.clone()
        } else {
            first
                .iter()
                .map(|set| {
                    set.iter()
                        .map(|l| {
                            if l.contains(&format!("UUID=\"{away}\"")) {
                                l.replace("device=\"nvidia0\"", "device=\"nvidia9\"")
                            } else {
                                l.clone()
                            }
                        })
                        .collect()
                })
                .collect()
        };
        let back = e.metrics_until(
            &format!("both GPUs back (bind {round}, {from}-{until} s)"),
            |t| whole(t) && sets(t) == expected,
        );
        assert!(
            back.lines().any(|l| l.starts_with("gpu_health_status{")
                && l.contains(&format!("UUID=\"{away}\""))
                && l.ends_with(" 0")),
            "GPU 0 ok again: {back}"
        );
        let minor = series(&back, "DCGM_FI_DEV_MINOR_NUMBER")
            .into_iter()
            .find(|l| label(l, "UUID") == away)
            .map(value);
        if round + 1 < ROUNDS.len() {
            assert_eq!(minor, Some(0.0), "{back}");
        }
        if round == 0 {
            after_first = (open_fds(e.pid()), census(&census_file));
        }
    }
    e.metrics_until("GPU 0's new minor number after the last return", |t| {
        series(t, "DCGM_FI_DEV_MINOR_NUMBER")
            .into_iter()
            .any(|l| label(l, "UUID") == away && value(l) == 9.0)
    });
    wait_until("the Node conditions clear after the returns", || {
        let n = api(port, "/api/v1/nodes/sim-rebind-node");
        ["GpuUnhealthy", "GpuDegraded"]
            .iter()
            .all(|c| status(&n, c).as_deref() != Some("True"))
    });
    let (fds_after_first, census_after_first) = after_first;
    let fds = open_fds(e.pid());
    assert!(
        fds <= fds_after_first + 1,
        "file descriptors grew over the returns: {fds_after_first} after the first, {fds} after the fourth"
    );
    assert!(
        census_after_first.1 > 0,
        "GPM samples are in use (H100): {census_after_first:?}"
    );
    assert_eq!(
        census(&census_file),
        census_after_first,
        "(event sets, GPM samples) the simulated NVML holds, after the fourth return against after the first"
    );
}
