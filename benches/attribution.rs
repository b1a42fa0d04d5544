//! Benchmarks of pod attribution per tick on a node with 200 GPU pods: the kubelet
//! pod-resources → GPU / MIG join built from scratch, a tick when nothing changed (the cached
//! join, through the real kubelet and Kubernetes API clients), per-process attribution of 200
//! processes through a proc tree, and the exposition with and without the pods.
//!
//! The node: 8 × H100 80GB. GPUs 0–3 are in MIG mode with 7 × `1g.10gb` each (28 instances,
//! each held by one pod through `nvidia.com/mig-1g.10gb`); GPUs 4–7 are whole GPUs
//! time-sliced into 43 replicas each (172 pods, each holding one `GPU-…::<n>` replica of
//! `nvidia.com/gpu`). One container per pod, 5 labels per pod, every pod owned by a
//! Deployment; pod labels (all of them) and `pod_uid` are on. The kubelet is the simulated
//! pod-resources server on a unix socket and the API server the loopback fake, so the tick
//! reads what the real background clients published.
//!
//! Run: `cargo bench --bench attribution`.

// Benchmark harness: a failed set-up step should stop the run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use gpu_exporter::attribution::{AttributionOptions, Attributor, SourceHandles, build_join};
use gpu_exporter::catalogue::csv::{CounterSet, parse_counters};
use gpu_exporter::config::BUILTIN_DEFAULT_COUNTERS;
use gpu_exporter::config::Config;
use gpu_exporter::exposition::counted::Counted;
use gpu_exporter::exposition::{EncodeOptions, encode, gzip};
use gpu_exporter::gpu::processes::{EntityProcesses, ProcessUse};
use gpu_exporter::sim::api::FakeApi;
use gpu_exporter::sim::kubelet::FakeKubelet;
use gpu_exporter::snapshot::{EntityId, EntitySample, MigIdentity, Snapshot, Value};
use gpu_exporter::sources::cgroup::ProcTree;
use gpu_exporter::sources::kube::meta::{ContainerMeta, PodIndex, PodMeta, PodSource, Workload};
use gpu_exporter::sources::kube::pod_labels::LabelAllowlist;
use gpu_exporter::sources::kubelet::client::{
    ContainerDevices, KubeletOptions, KubeletView, PodDevices, PodResourcesSource,
};
use serde_json::{Value as Json, json};
use tempfile::TempDir;

const NODE: &str = "bench-node";
const MODEL: &str = "NVIDIA H100 80GB HBM3";
const MIG_GPUS: u32 = 4;
const INSTANCES: u32 = 7;
const SHARED_GPUS: u32 = 4;
const REPLICAS: u32 = 43;
const PODS: usize = (MIG_GPUS * INSTANCES + SHARED_GPUS * REPLICAS) as usize;
const MIG_RESOURCE: &str = "nvidia.com/mig-1g.10gb";
const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// PCI bus IDs of an HGX H100 board's 8 GPUs.
const BUS: [&str; 8] = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"];
/// What the sampler reads once: the tick time handed to `attribute`.
const NOW: f64 = 1_800_000_000.0;

fn main() {
    divan::main();
}

/// A deterministic 64-bit mix (splitmix64), for UUIDs and container IDs.
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A version-4-shaped UUID (8-4-4-4-12 lowercase hex).
fn uuid(seed: u64) -> String {
    let (a, b) = (mix(seed), mix(seed ^ 0x5555_5555));
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        (b >> 48) & 0xfff,
        b & 0xffff_ffff_ffff
    )
}

/// A containerd container ID: 64 lowercase hex digits.
fn container_id(seed: u64) -> String {
    (0..4)
        .map(|k| format!("{:016x}", mix(seed * 4 + k)))
        .collect()
}

fn gpu_uuid(gpu: u32) -> String {
    format!("GPU-{}", uuid(1000 + u64::from(gpu)))
}

fn mig_uuid(gpu: u32, gi: u32) -> String {
    format!("MIG-{}", uuid(2000 + u64::from(gpu) * 100 + u64::from(gi)))
}

/// MIG GPU instance ids of seven `1g.10gb` instances on an H100.
fn gpu_instances() -> impl Iterator<Item = u32> {
    7..7 + INSTANCES
}

/// The snapshot's entities, in the sampler's order: each GPU, then its MIG instances.
fn entities() -> Vec<EntitySample> {
    let mut out = Vec::new();
    for gpu in 0..MIG_GPUS + SHARED_GPUS {
        let id = EntityId {
            gpu,
            uuid: gpu_uuid(gpu),
            pci_bus_id: format!("00000000:{}:00.0", BUS[gpu as usize]),
            device: format!("nvidia{gpu}"),
            model_name: MODEL.to_owned(),
            mig: None,
        };
        let sample = |id| EntitySample {
            id,
            values: vec![],
            labels: vec![],
        };
        out.push(sample(id.clone()));
        if gpu < MIG_GPUS {
            for gi in gpu_instances() {
                let mut mig = id.clone();
                mig.mig = Some(MigIdentity {
                    profile: "1g.10gb".to_owned(),
                    gpu_instance_id: gi,
                    compute_instance_id: 0,
                    uuid: mig_uuid(gpu, gi),
                });
                out.push(sample(mig));
            }
        }
    }
    out
}

/// One pod of the node and what it holds.
struct BenchPod {
    namespace: String,
    name: String,
    uid: String,
    container: String,
    container_id: String,
    deployment: String,
    hash: String,
    labels: BTreeMap<String, String>,
    resource: &'static str,
    device_id: String,
    /// UUID of the entity its processes run on (`GPU-…` or `MIG-…`).
    entity_uuid: String,
    pid: u32,
    shared: bool,
}

fn pods() -> Vec<BenchPod> {
    let mut out = Vec::with_capacity(PODS);
    let mut add = |gpu: u32, resource: &'static str, device_id: String, entity_uuid: String| {
        let i = out.len() as u64;
        let shared = resource == GPU_RESOURCE;
        let (app, team) = if shared {
            (
                "notebook",
                ["research", "vision", "speech", "nlp"][(gpu % 4) as usize],
            )
        } else {
            (
                "llm-serve",
                ["search", "ads", "chat", "docs"][(gpu % 4) as usize],
            )
        };
        let deployment = format!("{app}-{team}-g{gpu}");
        let hash = format!("{:010x}", mix(u64::from(gpu)) & 0xff_ffff_ffff);
        let name = format!("{deployment}-{hash}-{:05x}", mix(i) & 0xfffff);
        let labels = BTreeMap::from([
            ("app".to_owned(), app.to_owned()),
            ("app.kubernetes.io/name".to_owned(), deployment.clone()),
            (
                "app.kubernetes.io/part-of".to_owned(),
                format!("{team}-platform"),
            ),
            ("pod-template-hash".to_owned(), hash.clone()),
            ("team".to_owned(), team.to_owned()),
        ]);
        out.push(BenchPod {
            namespace: format!("team-{team}"),
            name,
            uid: uuid(10_000 + i),
            container: if shared { "jupyter" } else { "server" }.to_owned(),
            container_id: container_id(20_000 + i),
            deployment,
            hash,
            labels,
            resource,
            device_id,
            entity_uuid,
            pid: 100_000 + (i as u32) * 53,
            shared,
        });
    };
    for gpu in 0..MIG_GPUS {
        for gi in gpu_instances() {
            add(gpu, MIG_RESOURCE, mig_uuid(gpu, gi), mig_uuid(gpu, gi));
        }
    }
    for gpu in MIG_GPUS..MIG_GPUS + SHARED_GPUS {
        for r in 0..REPLICAS {
            let id = format!("{}::{r}", gpu_uuid(gpu));
            add(gpu, GPU_RESOURCE, id, gpu_uuid(gpu));
        }
    }
    assert_eq!(out.len(), PODS);
    out
}

/// What the kubelet answers: `List` (every pod) and `GetAllocatableResources`.
fn kubelet_view(pods: &[BenchPod]) -> KubeletView {
    let mut allocatable: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for p in pods {
        allocatable
            .entry(p.resource)
            .or_default()
            .push(p.device_id.clone());
    }
    KubeletView {
        pods: pods
            .iter()
            .map(|p| PodDevices {
                namespace: p.namespace.clone(),
                name: p.name.clone(),
                containers: vec![ContainerDevices {
                    name: p.container.clone(),
                    devices: vec![(p.resource.to_owned(), vec![p.device_id.clone()])],
                    claims: vec![],
                }],
            })
            .collect(),
        allocatable: Some(
            allocatable
                .into_iter()
                .map(|(r, ids)| (r.to_owned(), ids))
                .collect(),
        ),
    }
}

/// The pod index the reflector would build from these pods.
fn pod_index(pods: &[BenchPod]) -> PodIndex {
    PodIndex::from_pods(pods.iter().map(|p| PodMeta {
        uid: p.uid.clone(),
        namespace: p.namespace.clone(),
        name: p.name.clone(),
        labels: p.labels.clone(),
        workload: Some(Workload {
            kind: "Deployment".to_owned(),
            name: p.deployment.clone(),
        }),
        containers: vec![ContainerMeta {
            name: p.container.clone(),
            id: Some(p.container_id.clone()),
        }],
    }))
}

/// The pod as the API server serves it: owned by a ReplicaSet of a Deployment, running.
fn pod_json(p: &BenchPod) -> Json {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "namespace": p.namespace, "name": p.name, "uid": p.uid, "labels": p.labels,
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": format!("{}-{}", p.deployment, p.hash),
                "uid": uuid(mix(p.pid.into())), "controller": true, "blockOwnerDeletion": true
            }]
        },
        "spec": {"nodeName": NODE, "containers": []},
        "status": {
            "phase": "Running",
            "containerStatuses": [{
                "name": p.container, "containerID": format!("containerd://{}", p.container_id),
                "image": "registry.example/img:1", "imageID": "", "ready": true,
                "restartCount": 0, "state": {"running": {}}
            }]
        }
    })
}

/// NVML's process lists: one process per pod, grouped by entity, sorted by PID.
fn processes(pods: &[BenchPod]) -> Vec<EntityProcesses> {
    let mut by_entity: BTreeMap<&str, (bool, Vec<ProcessUse>)> = BTreeMap::new();
    for p in pods {
        let e = by_entity
            .entry(p.entity_uuid.as_str())
            .or_insert((p.shared, Vec::new()));
        e.1.push(ProcessUse {
            pid: p.pid,
            memory_bytes: Some(if p.shared { 1_536 << 20 } else { 8 << 30 }),
            sm_percent: p.shared.then_some(2.0),
        });
    }
    by_entity
        .into_iter()
        .map(|(uuid, (shared, mut processes))| {
            processes.sort_by_key(|p| p.pid);
            EntityProcesses {
                uuid: uuid.to_owned(),
                processes,
                utilization: shared,
            }
        })
        .collect()
}

/// `<root>/<pid>/cgroup` for every pod's process (cgroup v2, systemd driver, containerd).
fn write_proc_tree(root: &Path, pods: &[BenchPod]) {
    for p in pods {
        let dir = root.join(p.pid.to_string());
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!(
            "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/\
             cri-containerd-{}.scope\n",
            p.uid.replace('-', "_"),
            p.container_id
        );
        std::fs::write(dir.join("cgroup"), text).unwrap();
    }
}

fn opts() -> AttributionOptions {
    AttributionOptions {
        pod_labels: Some(LabelAllowlist::parse(None).unwrap()),
        pod_uid: true,
        ..AttributionOptions::default()
    }
}

fn snapshot() -> Snapshot {
    Snapshot {
        taken_at_unix: NOW,
        entities: entities(),
        ..Snapshot::default()
    }
}

/// Polls `check` on the runtime until it holds (20 s at most).
fn wait_for(rt: &tokio::runtime::Runtime, what: &str, mut check: impl FnMut() -> bool) {
    let start = Instant::now();
    while !check() {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "timed out: {what}"
        );
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(10)).await });
    }
}

/// The simulated kubelet and API server with the 200 pods, and the exporter's background
/// clients of both, synced.
struct Live {
    kubelet: Arc<PodResourcesSource>,
    pods: Arc<PodSource>,
    proc_root: PathBuf,
    fake_kubelet: FakeKubelet,
    _api: FakeApi,
    _dir: TempDir,
    // Last: the servers and clients above stop before their runtime does.
    rt: tokio::runtime::Runtime,
}

impl Live {
    fn start(pods: &[BenchPod], refresh: Duration) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let dir = tempfile::tempdir().unwrap();
        let proc_root = dir.path().join("proc");
        write_proc_tree(&proc_root, pods);
        let socket = dir.path().join("kubelet.sock");
        let (fake_kubelet, api, client) = rt.block_on(async {
            let kubelet = FakeKubelet::start(&socket, kubelet_view(pods))
                .await
                .unwrap();
            let api = FakeApi::start().await.unwrap();
            for p in pods {
                api.apply_pod(pod_json(p));
            }
            let client = api.client().unwrap();
            (kubelet, api, client)
        });
        let kubelet = PodResourcesSource::spawn(
            KubeletOptions {
                socket,
                interval: refresh,
                timeout: Duration::from_secs(5),
            },
            rt.handle(),
        );
        let pod_source = PodSource::spawn(client, Some(NODE.to_owned()), rt.handle());
        wait_for(&rt, "the kubelet's first answer", || {
            kubelet.view().is_some()
        });
        wait_for(&rt, "the pod reflector's sync", || {
            pod_source.status().synced && pod_source.index().len() == pods.len()
        });
        assert_eq!(kubelet.view().unwrap().pods.len(), pods.len());
        Self {
            kubelet,
            pods: pod_source,
            proc_root,
            fake_kubelet,
            _api: api,
            _dir: dir,
            rt,
        }
    }

    /// An attributor over both clients, with a proc tree when `procs`.
    fn attributor(&self, procs: bool) -> Attributor {
        Attributor::new(
            opts(),
            SourceHandles {
                kubelet: Some(Arc::clone(&self.kubelet)),
                pods: Some(Arc::clone(&self.pods)),
                procs: procs.then(|| ProcTree::new(&self.proc_root)),
                ..SourceHandles::default()
            },
        )
    }
}

/// The join from scratch: what a tick pays when the kubelet's answer, the pod index or the
/// entity set changed.
#[divan::bench(sample_count = 500)]
fn join_cold(bencher: divan::Bencher) {
    let pods = pods();
    let entities = entities();
    let view = kubelet_view(&pods);
    let index = pod_index(&pods);
    let opts = opts();
    let (join, unmatched) = build_join(
        &opts,
        &entities,
        Some(&view),
        Some(&index),
        None,
        None,
        &Default::default(),
    );
    assert!(unmatched.is_empty(), "unmatched: {unmatched:?}");
    assert_eq!(join.allocations.len(), PODS);
    let labelled = join.series_labels.iter().filter(|v| !v.is_empty()).count();
    assert_eq!(
        labelled,
        (MIG_GPUS * INSTANCES) as usize,
        "one holder per MIG instance"
    );
    println!(
        "join: {} entities, {} with pod labels, {} allocation rows ({} bytes of labels), \
         resources {:?}",
        entities.len(),
        labelled,
        join.allocations.len(),
        join.allocations
            .iter()
            .map(|(_, s)| s.to_string().len())
            .sum::<usize>(),
        join.resources
    );
    bencher.bench_local(|| {
        black_box(build_join(
            &opts,
            &entities,
            Some(&view),
            Some(&index),
            None,
            None,
            &Default::default(),
        ))
    });
}

/// A tick when nothing changed: both clients' latest state is the cached join's input.
#[divan::bench(sample_count = 2000)]
fn tick_unchanged(bencher: divan::Bencher) {
    let pods = pods();
    let live = Live::start(&pods, Duration::from_secs(3600));
    let mut attributor = live.attributor(false);
    let mut snap = snapshot();
    attributor.attribute(&mut snap, &[], NOW);
    let first = snap.attribution.join.clone().unwrap();
    assert_eq!(first.allocations.len(), PODS);
    attributor.attribute(&mut snap, &[], NOW);
    let second = snap.attribution.join.clone().unwrap();
    assert!(
        Arc::ptr_eq(&first, &second),
        "the second tick reuses the join"
    );
    bencher.bench_local(|| {
        attributor.attribute(&mut snap, &[], NOW);
        black_box(&snap.attribution);
    });
    let last = snap.attribution.join.clone().unwrap();
    assert!(
        Arc::ptr_eq(&first, &last),
        "every measured tick was a cache hit"
    );
}

/// How often the join is rebuilt while nothing changes, with the kubelet refreshed every
/// 100 ms and a tick every 150 ms (the defaults are 5 s and 5 s): printed, not timed.
#[divan::bench(sample_count = 1, sample_size = 1)]
fn rebuilds_per_refresh(bencher: divan::Bencher) {
    let pods = pods();
    let live = Live::start(&pods, Duration::from_millis(100));
    let mut attributor = live.attributor(false);
    let mut snap = snapshot();
    let ticks = 20;
    let mut rebuilt = 0;
    let lists_before = live.fake_kubelet.lists();
    attributor.attribute(&mut snap, &[], NOW);
    for _ in 0..ticks {
        let before = snap.attribution.join.clone().unwrap();
        live.rt
            .block_on(async { tokio::time::sleep(Duration::from_millis(150)).await });
        attributor.attribute(&mut snap, &[], NOW);
        let after = snap.attribution.join.clone().unwrap();
        if !Arc::ptr_eq(&before, &after) {
            assert_eq!(*before, *after, "the same pods give the same join");
            rebuilt += 1;
        }
    }
    println!(
        "unchanged kubelet answer, {} refreshes: join rebuilt on {rebuilt} of {ticks} ticks",
        live.fake_kubelet.lists() - lists_before
    );
    bencher.bench_local(|| black_box(rebuilt));
}

/// A tick with 200 processes (one per pod) on the shared GPUs and MIG instances: the cached
/// join plus per-container use, PID → container lookups cached from the previous tick.
#[divan::bench(sample_count = 1000)]
fn processes_200(bencher: divan::Bencher) {
    let pods = pods();
    let live = Live::start(&pods, Duration::from_secs(3600));
    let procs = processes(&pods);
    let mut attributor = live.attributor(true);
    let mut snap = snapshot();
    attributor.attribute(&mut snap, &procs, NOW);
    let c = &snap.attribution.containers;
    assert_eq!(c.len(), PODS, "one container use per pod");
    assert!(
        c.iter().all(|u| {
            let l = u.labels.to_string();
            l.starts_with(",container=") && l.contains(",pod_uid=")
        }),
        "every process resolved to its container: {:?}",
        c.first()
    );
    let up = snap.attribution.sources.iter().all(|s| s.up);
    assert!(up, "sources: {:?}", snap.attribution.sources);
    bencher.bench_local(|| {
        attributor.attribute(&mut snap, &procs, NOW);
        black_box(&snap.attribution);
    });
}

/// The same 200 lookups with an empty cache (every PID new: read and parse 200 cgroup files).
#[divan::bench(sample_count = 200)]
fn proc_lookup_cold(bencher: divan::Bencher) {
    let pods = pods();
    let dir = tempfile::tempdir().unwrap();
    write_proc_tree(dir.path(), &pods);
    let pids: Vec<u32> = pods.iter().map(|p| p.pid).collect();
    bencher
        .with_inputs(|| ProcTree::new(dir.path()))
        .bench_local_values(|mut tree| {
            for &pid in &pids {
                black_box(tree.lookup(pid).unwrap());
            }
            tree
        });
}

/// A snapshot with every default counter set on every entity, and its encoding options.
fn encode_inputs() -> (Snapshot, CounterSet, EncodeOptions) {
    let counters = parse_counters("default-counters.csv", BUILTIN_DEFAULT_COUNTERS).unwrap();
    let metrics = counters.metrics().count();
    let labels = counters.labels().count();
    let mut snap = snapshot();
    for e in &mut snap.entities {
        e.values = (0..metrics).map(|i| Some(Value::Num(i as f64))).collect();
        e.labels = vec![Some("570.124.06".to_owned()); labels];
    }
    let mut cfg = Config::from_args(&[]).expect("default flags");
    cfg.hostname = Some(NODE.to_owned());
    let opts = cfg.encode_options();
    (snap, counters, opts)
}

/// Encoding the 36 entities without attribution (the baseline of `encode_200_pods`).
#[divan::bench(sample_count = 500)]
fn encode_no_pods(bencher: divan::Bencher) {
    let (snap, counters, opts) = encode_inputs();
    let plain = encode(&snap, &Counted::default(), &counters, &opts);
    println!(
        "exposition without pods: {} bytes plain, {} bytes gzip",
        plain.len(),
        gzip(&plain).len()
    );
    bencher.bench_local(|| black_box(encode(&snap, &Counted::default(), &counters, &opts)));
}

/// Encoding the same entities with the 200 pods' join and per-container use.
#[divan::bench(sample_count = 500)]
fn encode_200_pods(bencher: divan::Bencher) {
    let pods = pods();
    let live = Live::start(&pods, Duration::from_secs(3600));
    let (mut snap, counters, opts) = encode_inputs();
    let mut attributor = live.attributor(true);
    attributor.attribute(&mut snap, &processes(&pods), NOW);
    drop(live);
    let plain = encode(&snap, &Counted::default(), &counters, &opts);
    println!(
        "exposition with 200 pods: {} bytes plain, {} bytes gzip",
        plain.len(),
        gzip(&plain).len()
    );
    bencher.bench_local(|| black_box(encode(&snap, &Counted::default(), &counters, &opts)));
}
