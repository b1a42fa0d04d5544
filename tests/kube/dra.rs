//! The exporter on the GPU Operator's DRA stack (`GPUCluster`, issue 52): `KUBERNETES_ENABLE_DRA`
//! read as dcgm-exporter reads it; the DRA holders on `gpu_allocation_info` refreshed when the
//! whole set of ResourceSlices is replaced by slices of the same pool generation (deleted and
//! re-created, new ones made before the old ones go, or found by a re-list after an expired
//! watch); the pod UID on DRA holders in the lean and full label shapes and under a `dcgm-*`
//! profile; and the exporter under a ResourceSlices-only role (the chart's `gpuOperator.mode=gpuCluster`): what works, what
//! is left out, one warning per refused permission.
//!
//! Everything runs on the simulated cluster (`sim::cluster`): the kubelet's pod-resources
//! socket, the loopback API server (real HTTP, real kube watcher) and its RBAC.

use std::process::Command;
use std::time::Duration;

use gpu_exporter::attribution::{Attributor, KubernetesOptions};
use gpu_exporter::config::Config;
use gpu_exporter::sampler::Sampler;
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use serde_json::{Value, json};

use crate::common::{self, BIN, Exporter, label, label_opt, series};

/// The GPU Operator's GPUCluster scenario (tests/fixtures/scenarios/gpucluster.toml).
const GPUCLUSTER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/scenarios/gpucluster.toml"
);

/// `gpu-exporter check --simulate SCENARIO -k` with `KUBERNETES_ENABLE_DRA` set to `value`
/// (and `args`): (exit code, stdout and stderr).
fn check_with_dra_env(scenario: &str, value: &str, args: &[&str]) -> (Option<i32>, String) {
    common::run_to_text(
        Command::new(BIN)
            .args(["check", "-a", &format!("127.0.0.1:{}", common::free_port())])
            .args(["--simulate", scenario, "-k"])
            .args(args)
            .env("KUBERNETES_ENABLE_DRA", value)
            .env_remove("NODE_NAME")
            .env_remove("KUBERNETES_SERVICE_HOST"),
    )
}

/// `KUBERNETES_ENABLE_DRA` takes every spelling of Go's `strconv.ParseBool`, as dcgm-exporter's
/// flag library reads it; set but blank it counts as unset (off); any other value stops the
/// start naming the variable and the spellings; `--kubernetes-enable-dra=false` on the command
/// line wins over it. The effect is seen in what `check` reviews: the ResourceSlice watch and
/// its permissions are there exactly when DRA is on (the a100-l4 scenario holds no claim, so
/// nothing else turns DRA on).
#[test]
fn kubernetes_enable_dra_takes_go_booleans_and_names_the_variable() {
    let on = ["1", "t", "T", "TRUE", "true", "True"];
    let off = ["0", "f", "F", "FALSE", "false", "False", "", "  "];
    let runs: Vec<_> = on
        .iter()
        .map(|v| (*v, true))
        .chain(off.iter().map(|v| (*v, false)))
        .map(|(v, want)| {
            std::thread::spawn(move || (v, want, check_with_dra_env("a100-l4", v, &[])))
        })
        .collect();
    for run in runs {
        let (v, want, (code, out)) = run.join().unwrap();
        assert_eq!(code, Some(0), "KUBERNETES_ENABLE_DRA={v:?}: {out}");
        let watched = out.contains("list resourceslices.resource.k8s.io")
            && out
                .lines()
                .any(|l| l.contains("ok") && l.contains("resourceslices"));
        assert_eq!(
            watched,
            want,
            "KUBERNETES_ENABLE_DRA={v:?} must turn DRA {}: {out}",
            if want { "on" } else { "off" }
        );
        if !want {
            assert!(!out.contains("resourceslices"), "{v:?}: {out}");
        }
    }
    for bad in ["yes", "on", "2", "tRUE"] {
        let (code, out) = check_with_dra_env("a100-l4", bad, &[]);
        assert_eq!(code, Some(2), "{bad}: {out}");
        assert!(
            out.contains(&format!(
                "environment variable KUBERNETES_ENABLE_DRA: invalid value '{bad}'"
            )) && out.contains("1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False"),
            "{bad}: {out}"
        );
    }
    let (code, out) = check_with_dra_env("a100-l4", "true", &["--kubernetes-enable-dra=false"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(!out.contains("resourceslices"), "the flag wins: {out}");
}

/// An attributor over `cluster` with `k`, its label names as `cfg` spells them, once its
/// sources answered.
fn attributor(cluster: &common::Cluster, cfg: &Config, k: &KubernetesOptions) -> Attributor {
    let mut k = k.clone();
    k.join.use_old_namespace = cfg.exposition.use_old_namespace;
    let a = gpu_exporter::attribution::start(
        &k,
        None,
        Some(cluster.sim.client.clone()),
        None,
        cluster.rt.handle(),
    );
    common::wait_until("attribution sources ready", || a.ready());
    a
}

/// A simulated node ticked at scenario times from 30 s on (0.05 s apart) with attribution.
struct Pages {
    node: common::SimNode,
    sampler: Sampler,
    counters: std::sync::Arc<gpu_exporter::catalogue::csv::CounterSet>,
    encode: gpu_exporter::exposition::EncodeOptions,
    t: f64,
}

impl Pages {
    fn new(node: common::SimNode, cfg: &Config, attributor: Attributor) -> Self {
        let counters = common::default_counters();
        let sampler = node
            .sampler_with(counters.clone(), cfg.reader.clone(), 0.0)
            .with_attribution(attributor);
        Self {
            node,
            sampler,
            counters,
            encode: cfg.encode_options(),
            t: 30.0,
        }
    }

    /// The next page.
    fn page(&mut self) -> String {
        std::thread::sleep(Duration::from_millis(20));
        self.node.set_time(self.t);
        let snap = self.sampler.tick(self.t);
        self.t += 0.05;
        String::from_utf8(gpu_exporter::exposition::encode(
            &snap,
            &gpu_exporter::exposition::counted::Counted::default(),
            &self.counters,
            &self.encode,
        ))
        .unwrap()
    }

    /// Pages until `cond` holds on one (at most 1,000), that page.
    fn until(&mut self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        for _ in 0..1_000 {
            let page = self.page();
            if cond(&page) {
                return page;
            }
        }
        panic!("no page with {what}; the last:\n{}", self.page());
    }
}

/// The GPUs whose `gpu_allocation_info` rows carry the DRA device `device`, in order.
fn dra_gpus(page: &str, device: &str) -> Vec<String> {
    let mut gpus: Vec<String> = series(page, "gpu_allocation_info")
        .into_iter()
        .filter(|l| label_opt(l, "dra_device_name") == Some(device))
        .map(|l| label(l, "gpu").to_owned())
        .collect();
    gpus.sort();
    gpus
}

/// The ResourceSlices the simulated API server holds.
fn slices(cluster: &common::Cluster) -> Vec<Value> {
    let resource = ApiResource {
        group: "resource.k8s.io".into(),
        version: "v1".into(),
        api_version: "resource.k8s.io/v1".into(),
        kind: "ResourceSlice".into(),
        plural: "resourceslices".into(),
    };
    let api: Api<DynamicObject> = Api::all_with(cluster.sim.client.clone(), &resource);
    let list = cluster
        .rt
        .block_on(api.list(&ListParams::default()))
        .unwrap();
    list.items
        .into_iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect()
}

/// `slice` as a new object: named `name`, created at `created`, the same pool and generation,
/// with device `device` published as the GPU `uuid` (the server sets uid and resourceVersion).
fn remade(slice: &Value, name: &str, created: &str, device: &str, uuid: &str) -> Value {
    let mut s = slice.clone();
    s["metadata"] = json!({"name": name, "creationTimestamp": created});
    for d in s["spec"]["devices"].as_array_mut().unwrap() {
        if d["name"] == device {
            d["attributes"]["uuid"] = json!({"string": uuid});
        }
    }
    s
}

/// A DRA claim's holder follows its device when every ResourceSlice is replaced by slices of
/// the same pool generation that publish the device as another GPU: deleted and re-created
/// under the same name; new slices made before the old ones are deleted; and a set replaced
/// while the watch was down, found by the re-list after the expired watch (410). Nothing keeps
/// the old device-to-GPU mapping: the next pages show the holder on the new GPU.
#[test]
fn dra_holders_follow_a_replaced_set_of_slices_of_the_same_generation() {
    let node = common::SimNode::new("h100-mig", 7);
    let cluster = common::Cluster::start(&node);
    let cfg = common::config(&[]);
    let mut k = cluster.config();
    k.kubelet.interval = Duration::from_millis(50);
    let attributor = attributor(&cluster, &cfg, &k);
    let mut pages = Pages::new(node, &cfg, attributor);
    let gpu = |p: &str| {
        series(p, "gpu_device_info")
            .into_iter()
            .map(|l| (label(l, "gpu").to_owned(), label(l, "UUID").to_owned()))
            .filter(|(_, u)| !u.is_empty())
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let first = pages.until("the DRA holder", |p| dra_gpus(p, "gpu-6") == ["6"]);
    let uuids = gpu(&first);
    let (gpu6, gpu7) = (uuids["6"].clone(), uuids["7"].clone());
    let holder = series(&first, "gpu_allocation_info")
        .into_iter()
        .find(|l| label_opt(l, "dra_device_name") == Some("gpu-6"))
        .unwrap()
        .to_owned();
    assert_eq!(label(&holder, "pod"), "render-farm-0", "{holder}");
    let sim = &cluster.sim;
    let old = slices(&cluster);
    assert_eq!(old.len(), 1, "{old:?}");
    let generation = old[0]["spec"]["pool"]["generation"].clone();
    let name = old[0]["metadata"]["name"].as_str().unwrap().to_owned();

    // 1. Deleted and re-created under the same name and generation; gpu-6 is now GPU 7.
    sim.api.delete_slice(&name);
    pages.until("the holder gone with its slice", |p| {
        dra_gpus(p, "gpu-6").is_empty()
    });
    sim.api.apply_slice(remade(
        &old[0],
        &name,
        "2026-12-01T08:00:00Z",
        "gpu-6",
        &gpu7,
    ));
    pages.until("the holder on GPU 7", |p| dra_gpus(p, "gpu-6") == ["7"]);
    for _ in 0..5 {
        assert_eq!(dra_gpus(&pages.page(), "gpu-6"), ["7"], "it stays");
    }

    // 2. New slices made before the old ones are deleted: the newer slice counts at once,
    //    and alone once the old one is gone.
    let now = slices(&cluster);
    assert_eq!(now[0]["spec"]["pool"]["generation"], generation);
    sim.api.apply_slice(remade(
        &now[0],
        &format!("{name}-b"),
        "2026-12-01T08:05:00Z",
        "gpu-6",
        &gpu6,
    ));
    pages.until("the holder back on GPU 6", |p| {
        dra_gpus(p, "gpu-6") == ["6"]
    });
    sim.api.delete_slice(&name);
    for _ in 0..20 {
        assert_eq!(
            dra_gpus(&pages.page(), "gpu-6"),
            ["6"],
            "the old slice went"
        );
    }

    // 3. Replaced while the watches were down, long enough for the server to forget the
    //    events since (a 410 on the re-watch): the re-list brings the new set.
    let b = slices(&cluster);
    assert_eq!(b.len(), 1);
    let relists = || {
        sim.api
            .requests()
            .iter()
            .filter(|r| r.starts_with("/apis/resource.k8s.io/v1/resourceslices?"))
            .filter(|r| !r.contains("watch=true"))
            .filter(|r| !r.split(['?', '&']).any(|p| p == "limit=1"))
            .count()
    };
    let lists_before = relists();
    sim.api.set_fail(Some(500));
    sim.api.delete_slice(&format!("{name}-b"));
    sim.api.apply_slice(remade(
        &b[0],
        &format!("{name}-c"),
        "2026-12-01T08:10:00Z",
        "gpu-6",
        &gpu7,
    ));
    // More changes than the server's event log keeps (pods of another node).
    for i in 0..4200 {
        sim.api.apply_pod(json!({
            "metadata": {"namespace": "other", "name": format!("churn-{}", i % 7)},
            "spec": {"nodeName": "another-node"}, "status": {"phase": "Running"}
        }));
    }
    for _ in 0..5 {
        assert_eq!(
            dra_gpus(&pages.page(), "gpu-6"),
            ["6"],
            "the last mapping is kept while the API fails"
        );
    }
    sim.api.set_fail(None);
    pages.until("the holder on GPU 7 after the re-list", |p| {
        dra_gpus(p, "gpu-6") == ["7"]
    });
    assert!(
        relists() > lists_before,
        "the new set came through a re-list: {:?}",
        sim.api.requests()
    );
    let page = pages.page();
    let row = series(&page, "gpu_allocation_info")
        .into_iter()
        .find(|l| label_opt(l, "dra_device_name") == Some("gpu-6"))
        .unwrap();
    assert_eq!(label(row, "UUID"), gpu7, "{row}");
    assert_eq!(label(row, "pod"), "render-farm-0", "{row}");
}

/// The DRA holder's pod UID (dcgm-exporter #718: missing on DRA-attributed series before
/// 4.8.4): on `gpu_allocation_info` in the lean shape, and with `--kubernetes-enable-pod-uid`
/// on every series of its GPU in the full shape and under the `dcgm-4.8.2`, `dcgm-4.8.4` and
/// `dcgm-4.9` profiles, beside the `dra_*` labels, as on a device-plugin holder's series.
#[test]
fn the_pod_uid_is_on_dra_holders_in_every_shape() {
    for (args, pod_uid) in [
        (&[][..], false),
        (&["--series-labels", "full"][..], true),
        (&["--series-labels", "full"][..], false),
        // dcgm-exporter 4.8.2 left it off DRA holders (its #718); written here all the same.
        (&["--compatibility", "dcgm-4.8.2"][..], true),
        (&["--compatibility", "dcgm-4.8.4"][..], true),
        (&["--compatibility", "dcgm-4.9"][..], true),
    ] {
        let what = format!("{args:?}, pod uid {pod_uid}");
        let node = common::SimNode::new("h100-mig", 7);
        let cluster = common::Cluster::start(&node);
        let cfg = common::config(args);
        let mut k = cluster.config();
        k.join.pod_uid = pod_uid;
        let attributor = attributor(&cluster, &cfg, &k);
        let mut pages = Pages::new(node, &cfg, attributor);
        let lean = args.is_empty();
        let page = pages.until("the DRA holder", |p| {
            if lean {
                !dra_gpus(p, "gpu-6").is_empty()
            } else {
                series(p, "DCGM_FI_DEV_GPU_UTIL")
                    .iter()
                    .any(|l| label_opt(l, "dra_device_name") == Some("gpu-6"))
            }
        });
        let uid = cluster.sim.api.pod("media", "render-farm-0").unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        let trainer = cluster.sim.api.pod("research", "llm-train-0").unwrap()["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        if lean {
            let row = series(&page, "gpu_allocation_info")
                .into_iter()
                .find(|l| label_opt(l, "dra_device_name") == Some("gpu-6"))
                .unwrap();
            assert_eq!(
                label_opt(row, "pod_uid"),
                Some(uid.as_str()),
                "{what}: {row}"
            );
            assert_eq!(
                label_opt(row, "workload_kind"),
                Some("StatefulSet"),
                "{row}"
            );
            let util = series(&page, "DCGM_FI_DEV_GPU_UTIL");
            let gpu6 = util.iter().find(|l| label(l, "gpu") == "6").unwrap();
            assert_eq!(label_opt(gpu6, "pod"), None, "lean: {gpu6}");
            continue;
        }
        for family in ["DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"] {
            let lines = series(&page, family);
            let dra = lines.iter().find(|l| label(l, "gpu") == "6").unwrap();
            assert_eq!(label(dra, "pod"), "render-farm-0", "{what}: {dra}");
            assert_eq!(label(dra, "dra_device_name"), "gpu-6", "{what}: {dra}");
            assert_eq!(
                label(dra, "dra_claim_name"),
                "render-farm-0-worker",
                "{dra}"
            );
            let plugin = lines.iter().find(|l| label(l, "gpu") == "0").unwrap();
            assert_eq!(label(plugin, "pod"), "llm-train-0", "{what}: {plugin}");
            if pod_uid {
                assert_eq!(
                    label_opt(dra, "pod_uid"),
                    Some(uid.as_str()),
                    "{what}: {dra}"
                );
                assert_eq!(
                    label_opt(plugin, "pod_uid"),
                    Some(trainer.as_str()),
                    "{what}: {plugin}"
                );
            } else {
                assert_eq!(label_opt(dra, "pod_uid"), None, "{what}: {dra}");
                assert_eq!(label_opt(plugin, "pod_uid"), None, "{what}: {plugin}");
            }
        }
    }
}

/// Under a ResourceSlices-only role (get/list/watch on resourceslices, nothing on pods), with the pod
/// watch on as by default: every holder is attributed from the first pages, the DRA one through
/// the ResourceSlices with its `dra_*` labels, none held back waiting for pod metadata that
/// cannot come; what needs the pods (pod_uid, the workload, pod labels) is left out; the pod
/// source reports down and the slices up, and no device counts as unmatched.
#[test]
fn under_the_gpucluster_rbac_holders_are_attributed_without_pod_metadata() {
    let node = common::SimNode::new(GPUCLUSTER, 1);
    let cluster = common::Cluster::start(&node);
    let cfg = common::config(&[]);
    let mut k = cluster.config();
    k.kubelet.interval = Duration::from_millis(50);
    k.join.pod_uid = true;
    assert!(
        k.dra && k.pod_metadata,
        "the claims turn DRA on; pods as by default"
    );
    let attributor = attributor(&cluster, &cfg, &k);
    let mut pages = Pages::new(node, &cfg, attributor);
    let start = pages.t;
    let page = pages.until("both holders", |p| {
        series(p, "gpu_allocation_info").len() == 2
    });
    assert!(
        pages.t - start < 2.0,
        "attributed within {:.2} s of scenario time, not after settle's grace",
        pages.t - start
    );
    let rows = series(&page, "gpu_allocation_info");
    let dra = rows.iter().find(|l| label(l, "gpu") == "0").unwrap();
    assert_eq!(label(dra, "pod"), "render-0", "{dra}");
    assert_eq!(label(dra, "namespace"), "media", "{dra}");
    assert_eq!(label(dra, "container"), "worker", "{dra}");
    assert_eq!(label(dra, "resource"), "gpu.nvidia.com", "{dra}");
    assert_eq!(label(dra, "dra_device_name"), "gpu-0", "{dra}");
    assert_eq!(label(dra, "dra_pool_name"), "sim-dra-node", "{dra}");
    let plugin = rows.iter().find(|l| label(l, "gpu") == "1").unwrap();
    assert_eq!(label(plugin, "pod"), "serve-7d4b9c8f6d-x2k4p", "{plugin}");
    for row in [dra, plugin] {
        for missing in ["pod_uid", "workload_kind", "workload_name"] {
            assert_eq!(
                label_opt(row, missing),
                None,
                "{missing} needs the pods: {row}"
            );
        }
    }
    let up = |source: &str| {
        series(&page, "gpu_exporter_pod_map_up")
            .into_iter()
            .find(|l| label(l, "source") == source)
            .map(common::value)
    };
    assert_eq!(up("pods"), Some(0.0));
    assert_eq!(up("resourceslices"), Some(1.0));
    assert_eq!(up("kubelet"), Some(1.0));
    let unmatched = series(&page, "gpu_exporter_pod_map_unmatched_devices");
    assert!(
        unmatched.iter().all(|l| common::value(l) == 0.0),
        "{unmatched:?}"
    );
    // The allocatable DRA devices come from the slices: the node's three GPUs.
    let alloc = series(&page, "gpu_allocatable_devices");
    let dra_alloc = alloc
        .iter()
        .find(|l| label(l, "resource") == "gpu.nvidia.com")
        .unwrap();
    assert_eq!(common::value(dra_alloc), 3.0, "{dra_alloc}");
}

/// The binary on the GPUCluster node, as the Operator's DaemonSet runs dcgm-exporter there
/// (`-k`, `KUBERNETES_ENABLE_DRA=true`): one warning for the refused pod list, naming the
/// resource, the verb and what is lost, and no other, however long it runs (the retries are
/// paced, not once a second); with the pod watch off (`--kubernetes-pod-metadata=false`, the
/// GPUCluster mode) no warning at all and no pod source. Both attribute every holder.
#[test]
fn the_gpucluster_rbac_costs_one_warning_per_refused_permission() {
    let run = |extra: &[&str]| {
        let e = Exporter::builder()
            .args(["--simulate", GPUCLUSTER, "-k", "-c", "200"])
            .args(extra)
            .env("KUBERNETES_ENABLE_DRA", "true")
            .env_remove("RUST_LOG")
            .log_pipe()
            .start();
        let page = e.metrics_until("both holders", |t| {
            series(t, "gpu_allocation_info").len() == 2
        });
        // Long enough for the retries at 1, 2 and 4 s after the first refusal, and more.
        std::thread::sleep(Duration::from_secs(9));
        let later = e.metrics();
        (e.log(), page, later)
    };
    // The warnings about the API (others, such as a slow tick on a loaded machine, are not
    // this test's).
    let api_warnings = |log: &str| -> Vec<String> {
        log.lines()
            .filter(|l| l.contains(" WARN "))
            .filter(|l| {
                ["kube", "pods", "resourceslices", "ResourceSlice", "403"]
                    .iter()
                    .any(|w| l.contains(w))
            })
            .map(str::to_owned)
            .collect()
    };
    let (log, page, later) = run(&[]);
    let warnings = api_warnings(&log);
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let w = &warnings[0];
    for words in [
        "listing pods on node sim-dra-node",
        "403 Forbidden",
        "cannot list resource \"pods\"",
        "get, list and watch on pods",
        "without pod_uid, workload or pod labels",
    ] {
        assert!(w.contains(words), "{words:?} not in: {w}");
    }
    for row in series(&page, "gpu_allocation_info") {
        assert_eq!(
            label_opt(row, "pod_uid"),
            None,
            "no pod metadata without pods: {row}"
        );
    }
    // The per-container families still name the pod's UID, read from the processes' cgroups.
    let uids: Vec<&str> = series(&page, "gpu_container_processes")
        .into_iter()
        .filter_map(|l| label_opt(l, "pod_uid"))
        .collect();
    assert_eq!(uids.len(), 2, "{page}");
    let errors = |text: &str| {
        series(text, "gpu_exporter_pod_map_errors_total")
            .into_iter()
            .find(|l| label(l, "source") == "pods")
            .map(common::value)
            .unwrap()
    };
    assert!(
        errors(&later) <= 6.0,
        "refused lists are retried ever less often: {} in about 10 s",
        errors(&later)
    );

    let (log, _, later) = run(&["--kubernetes-pod-metadata=false"]);
    let warnings = api_warnings(&log);
    assert!(warnings.is_empty(), "{warnings:#?}");
    let sources: Vec<&str> = series(&later, "gpu_exporter_pod_map_up")
        .into_iter()
        .map(|l| label(l, "source"))
        .collect();
    assert!(!sources.contains(&"pods"), "{sources:?}");
    assert!(sources.contains(&"resourceslices"), "{sources:?}");
    assert_eq!(series(&later, "gpu_allocation_info").len(), 2, "{later}");
}

/// `check` on the GPUCluster node reviews what the exporter will do, no more: with the pod watch
/// off (the GPUCluster mode) it neither reviews the pod verbs nor lists the node's pods, so the
/// GPUCluster role passes with the ResourceSlices allowed; with the pod watch on, the same role
/// fails on each pod verb and on the pod list, each naming the fix.
#[test]
fn check_reviews_the_pod_verbs_only_with_the_pod_watch() {
    let kube_lines = |out: &str| -> Vec<String> {
        out.lines()
            .skip_while(|l| !l.starts_with("Kubernetes and attribution"))
            .skip(1)
            .take_while(|l| l.starts_with(' '))
            .map(str::to_owned)
            .collect()
    };
    let (code, out) = check_with_dra_env(GPUCLUSTER, "true", &["--kubernetes-pod-metadata=false"]);
    assert_eq!(code, Some(0), "{out}");
    let lines = kube_lines(&out);
    assert!(!lines.is_empty(), "no Kubernetes section: {out}");
    for verb in ["get", "list", "watch"] {
        let slice = format!("{verb} resourceslices.resource.k8s.io");
        assert!(
            lines.iter().any(|l| l.contains(&slice) && l.contains("ok")),
            "{slice} reviewed and allowed: {lines:#?}"
        );
    }
    assert!(
        !lines
            .iter()
            .any(|l| l.contains("FAIL") || l.contains("pods")),
        "nothing about pods, no failure: {lines:#?}"
    );

    let (_, out) = check_with_dra_env(GPUCLUSTER, "true", &["--kubernetes-pod-metadata=true"]);
    let lines = kube_lines(&out);
    for what in ["get pods", "list pods", "watch pods", "pods on this node"] {
        assert!(
            lines.iter().any(|l| l.contains("FAIL") && l.contains(what)),
            "{what} fails under the GPUCluster role: {lines:#?}"
        );
    }
}

/// A DRA claim on a MIG device: its holder carries `dra_mig_profile` and `dra_mig_device_uuid`
/// from the device's ResourceSlice entry, as dcgm-exporter writes them, on `gpu_allocation_info`
/// in the lean shape and on the instance's series under a `dcgm-*` profile; whole-GPU claims and
/// device-plugin holders carry neither.
#[test]
fn a_dra_claim_on_a_mig_device_names_its_profile_and_uuid() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenarios/a100-mig-t4.toml"
    ))
    .unwrap();
    let claimed = r#"containers = [{ name = "trainer", mig = ["0.2"], pids = [61001] }]"#;
    assert!(text.contains(claimed), "the scenario changed: {text}");
    let path = dir.path().join("a100-mig-dra.toml");
    std::fs::write(
        &path,
        text.replace(
            claimed,
            r#"containers = [{ name = "trainer", claims = ["gpu-0-mig-2"], pids = [61001] }]"#,
        ),
    )
    .unwrap();
    for args in [&[][..], &["--compatibility", "dcgm-4.8.4"][..]] {
        let node = common::SimNode::new(path.to_str().unwrap(), 3);
        let cluster = common::Cluster::start(&node);
        let cfg = common::config(args);
        let attributor = attributor(&cluster, &cfg, &cluster.config());
        let mut pages = Pages::new(node, &cfg, attributor);
        let family = if args.is_empty() {
            "gpu_allocation_info"
        } else {
            "DCGM_FI_DEV_FB_USED"
        };
        let page = pages.until("the DRA holder of the MIG instance", |p| {
            series(p, family)
                .iter()
                .any(|l| label_opt(l, "pod") == Some("finetune-0"))
        });
        let rows = series(&page, family);
        let row = rows
            .iter()
            .find(|l| label_opt(l, "pod") == Some("finetune-0"))
            .unwrap();
        assert_eq!(label(row, "GPU_I_ID"), "2", "{args:?}: {row}");
        assert_eq!(label(row, "dra_device_name"), "gpu-0-mig-2", "{row}");
        assert_eq!(label(row, "dra_mig_profile"), "3g.40gb", "{row}");
        let mig_uuid = label(row, "mig_uuid");
        assert!(mig_uuid.starts_with("MIG-"), "{row}");
        assert_eq!(
            label(row, "dra_mig_device_uuid"),
            mig_uuid,
            "{args:?}: {row}"
        );
        for other in rows
            .iter()
            .filter(|l| label_opt(l, "pod").is_some_and(|p| p != "finetune-0"))
        {
            assert_eq!(label_opt(other, "dra_mig_profile"), None, "{other}");
            assert_eq!(label_opt(other, "dra_mig_device_uuid"), None, "{other}");
        }
    }
}
