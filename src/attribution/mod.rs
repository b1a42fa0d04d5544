//! Joins each tick's entities with whoever holds them: pods and containers (kubelet
//! pod-resources, Kubernetes API metadata, DRA ResourceSlices), HPC jobs, and the processes
//! running on shared GPUs.
//!
//! The kubelet, pod and ResourceSlice sources refresh in the background; here the sampler
//! thread only reads their latest published state (the HPC job directory too: its own thread
//! checks it every second). The join itself is in `join`, its label text in `holder_labels`; `settle`
//! holds a pod back until its metadata is known, so that its labels never change between ticks. The device-to-holder [`HolderMap`] is rebuilt only when an input changed (a new
//! kubelet answer, a pod or slice change, a job file change, or a different set of entities),
//! so an idle node pays a few pointer comparisons per tick. Per-container process use is
//! recomputed every tick from NVML's process list, with PID → container lookups cached.
//!
//! Sharing semantics (also in docs/kubernetes.md): a device held by exactly one container carries that
//! container's `container`, `namespace` and `pod` labels on its series, as dcgm-exporter does. A
//! device held by several containers (time-slicing, MPS, several DRA claims) carries none on
//! its device-level series, because its numbers belong to no single pod; every holder is listed
//! in `gpu_allocation_info`, and each container's own use is in the `gpu_container_*`
//! families. `--kubernetes-virtual-gpus` restores dcgm-exporter's alternative: one copy of every
//! series per holder, with `vgpu`.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use tracing::warn;

mod holder_labels;
mod join;
mod lost;
mod options;
mod settle;

use holder_labels::container_labels;
pub use join::build_join;
pub use options::{AttributionOptions, KubernetesOptions, NVIDIA_DRA_DRIVER};

use crate::gpu::processes::EntityProcesses;
use crate::snapshot::{
    Attribution, ContainerUse, HolderMap, Labels, SHOWN_PIDS, Snapshot, SourceHealth,
};
use crate::sources::cgroup::ProcTree;
use crate::sources::health::Health;
use crate::sources::hpc::{HpcJobs, HpcSource};
use crate::sources::kube::dra::{DraIndex, DraSource};
use crate::sources::kube::meta::{PodIndex, PodSource};
use crate::sources::kube::reflector::ReflectorStatus;
use crate::sources::kubelet::client::{KubeletView, PodResourcesSource};

/// The background sources the join reads; each is optional.
#[derive(Default)]
pub struct SourceHandles {
    /// The kubelet pod-resources client.
    pub kubelet: Option<Arc<PodResourcesSource>>,
    /// The node's pods from the Kubernetes API.
    pub pods: Option<Arc<PodSource>>,
    /// The DRA driver's ResourceSlices.
    pub dra: Option<Arc<DraSource>>,
    /// The HPC job directory.
    pub hpc: Option<HpcSource>,
    /// The proc tree for PID → container (shared GPUs).
    pub procs: Option<ProcTree>,
}

/// What the cached join was built from.
struct Inputs {
    view: Option<Arc<KubeletView>>,
    pods: Option<Arc<PodIndex>>,
    dra: Option<Arc<DraIndex>>,
    hpc: Option<Arc<HpcJobs>>,
    entities: Vec<(String, Option<String>)>,
    /// Pods the kubelet lists that wait for their metadata (`settle`).
    pending: BTreeSet<settle::PodKey>,
}

impl Inputs {
    fn same(&self, other: &Inputs) -> bool {
        fn ptr<T>(a: &Option<Arc<T>>, b: &Option<Arc<T>>) -> bool {
            match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
        }
        ptr(&self.view, &other.view)
            && ptr(&self.pods, &other.pods)
            && ptr(&self.dra, &other.dra)
            && self.hpc == other.hpc
            && self.entities == other.entities
            && self.pending == other.pending
    }
}

/// Starts the background sources that `k` asks for on `runtime` and returns the attributor
/// over them, its pod labels kept to `pod_label_room` per series (the labels-per-series room
/// of the loaded counter set; `None`: no limit). `client` is the Kubernetes API client
/// (`None`: no pod metadata, no DRA); `hpc` the job directory watcher, if any.
pub fn start(
    k: &KubernetesOptions,
    pod_label_room: Option<usize>,
    client: Option<kube::Client>,
    hpc: Option<HpcSource>,
    runtime: &tokio::runtime::Handle,
) -> Attributor {
    let kubelet = PodResourcesSource::spawn(k.kubelet.clone(), runtime);
    let mut opts = k.join.clone();
    if let (Some(allow), Some(room)) = (opts.pod_labels.as_mut(), pod_label_room) {
        allow.set_max(room);
    }
    let pods = client
        .clone()
        .filter(|_| k.pod_metadata)
        .map(|c| PodSource::spawn(c, k.node_name.clone(), runtime));
    let dra = client
        .filter(|_| k.dra)
        .map(|c| DraSource::spawn(c, k.node_name.clone(), runtime));
    let sources = SourceHandles {
        kubelet: Some(kubelet),
        pods,
        dra,
        hpc,
        procs: k
            .process_metrics
            .then(|| ProcTree::new(k.proc_root.clone())),
    };
    Attributor::new(opts, sources)
}

/// The kubelet device IDs that matched no exported entity at the last join, so that each is
/// warned about once while it lasts. Each join's set replaces the last one, so it holds at most
/// one kubelet answer's IDs however many come and go (an ID that goes away and comes back is
/// warned about again).
#[derive(Default)]
struct UnmatchedIds(HashSet<String>);

impl UnmatchedIds {
    /// Records this join's unmatched IDs; returns those that were not unmatched at the last
    /// join, once each, in order.
    fn update(&mut self, unmatched: Vec<String>) -> Vec<String> {
        let previous = std::mem::take(&mut self.0);
        let mut new = Vec::new();
        for id in unmatched {
            if !previous.contains(&id) && !self.0.contains(&id) {
                new.push(id.clone());
            }
            self.0.insert(id);
        }
        new
    }
}

/// How many entries each map the attributor keeps over ticks holds (the simulator's tests
/// check that none grows with the number of pods that came and went).
#[cfg(feature = "sim")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StateSizes {
    /// Pods waiting for their metadata (`settle`).
    pub settle_first_seen: usize,
    /// Pods remembered with the metadata they were written with (`settle`).
    pub settle_written: usize,
    /// GPUs with remembered holders (`lost`).
    pub lost_gpus: usize,
    /// Unmatched kubelet device IDs remembered.
    pub unmatched_ids: usize,
    /// PIDs in the proc tree's cache.
    pub proc_cache: usize,
    /// Pods in the pod source's index (the API server's view of this node).
    pub pod_index: usize,
    /// Pods in the index the last join used (with the remembered ones).
    pub join_pods: usize,
    /// Rows of the last join's `gpu_allocation_info`.
    pub allocations: usize,
}

/// Joins entities with their holders once per tick.
pub struct Attributor {
    opts: AttributionOptions,
    sources: SourceHandles,
    cache: Option<(Inputs, Arc<HolderMap>)>,
    settle: settle::Settle,
    lost: lost::LastHolders,
    unmatched: UnmatchedIds,
    /// The kinds of process-lookup errors warned about (at most one per `io::ErrorKind`).
    warned: HashSet<String>,
    proc_errors: u64,
    proc_ok: bool,
}

impl Attributor {
    /// An attributor over `sources`.
    pub fn new(opts: AttributionOptions, sources: SourceHandles) -> Self {
        Self {
            opts,
            sources,
            cache: None,
            settle: settle::Settle::default(),
            lost: lost::LastHolders::default(),
            unmatched: UnmatchedIds::default(),
            warned: HashSet::new(),
            proc_errors: 0,
            proc_ok: true,
        }
    }

    /// Whether every configured source has answered at least once (the kubelet listed, the
    /// API watches synced or refused for want of RBAC).
    pub fn ready(&self) -> bool {
        let answered = |st: ReflectorStatus| st.synced || st.refused;
        self.sources
            .kubelet
            .as_ref()
            .is_none_or(|k| k.view().is_some())
            && self
                .sources
                .pods
                .as_ref()
                .is_none_or(|p| answered(p.status()))
            && self
                .sources
                .dra
                .as_ref()
                .is_none_or(|d| answered(d.status()))
    }

    /// The pod index the join may read: none while the pod watch has never listed and the
    /// API refuses it (no RBAC on pods, as under the GPU Operator's `GPUCluster`), so that no
    /// pod waits in `settle` for metadata that cannot come.
    fn pod_index(&self) -> Option<Arc<PodIndex>> {
        let pods = self.sources.pods.as_ref()?;
        let st = pods.status();
        (st.synced || !st.refused).then(|| pods.index())
    }

    /// The ResourceSlice index the join may read: none before the first complete list, so that
    /// the claims the kubelet lists are not taken for devices that match nothing while no slice
    /// is known yet (or the API refuses the list).
    fn dra_index(&self) -> Option<Arc<DraIndex>> {
        let dra = self.sources.dra.as_ref()?;
        dra.status().synced.then(|| dra.index())
    }

    /// The sizes of the state kept over ticks (see [`StateSizes`]).
    #[cfg(feature = "sim")]
    pub fn state_sizes(&self) -> StateSizes {
        let (first_seen, written) = self.settle.sizes();
        StateSizes {
            settle_first_seen: first_seen,
            settle_written: written,
            lost_gpus: self.lost.gpus(),
            unmatched_ids: self.unmatched.0.len(),
            proc_cache: self.sources.procs.as_ref().map_or(0, ProcTree::cached),
            pod_index: self.sources.pods.as_ref().map_or(0, |p| p.index().len()),
            join_pods: self.cache_pods().map_or(0, |p| p.len()),
            allocations: self.cache.as_ref().map_or(0, |(_, j)| j.allocations.len()),
        }
    }

    /// Whether the reader must list processes (a proc tree is configured).
    pub fn wants_processes(&self) -> bool {
        self.sources.procs.is_some()
    }

    /// Fills `snap.attribution` from the sources' latest state and this tick's processes.
    pub fn attribute(&mut self, snap: &mut Snapshot, processes: &[EntityProcesses], now: f64) {
        let view = self.sources.kubelet.as_ref().and_then(|k| k.view());
        let settled = self.settle.apply(view.as_deref(), self.pod_index(), now);
        let inputs = Inputs {
            view,
            pods: settled.index,
            pending: settled.pending,
            dra: self.dra_index(),
            hpc: self.sources.hpc.as_ref().map(HpcSource::jobs),
            entities: snap
                .entities
                .iter()
                .map(|e| (e.id.uuid.clone(), e.id.mig.as_ref().map(|m| m.uuid.clone())))
                .collect(),
        };
        let join = match &self.cache {
            Some((old, join)) if old.same(&inputs) => Arc::clone(join),
            _ => {
                let (join, unmatched) = build_join(
                    &self.opts,
                    &snap.entities,
                    inputs.view.as_deref(),
                    inputs.pods.as_deref(),
                    inputs.dra.as_deref(),
                    inputs.hpc.as_deref(),
                    &inputs.pending,
                );
                // One warning per round however many new IDs there are (a large node can list
                // thousands), each ID once while it lasts; IDs come from the kubelet, so they are
                // logged quoted and escaped (`?`), never raw.
                let new = self.unmatched.update(unmatched);
                if let Some(first) = new.first() {
                    warn!(
                        count = new.len(),
                        first = ?first,
                        "the kubelet lists {} GPU device ID(s) that match no exported GPU or \
                         MIG instance: a GPU lost or no longer answering NVML, one left out by \
                         -d/--devices, or an ID form the exporter does not know; their pods are \
                         not attributed",
                        new.len()
                    );
                    for id in &new[1..] {
                        tracing::debug!(device_id = ?id, "unmatched kubelet device ID");
                    }
                }
                let join = Arc::new(join);
                self.cache = Some((inputs, Arc::clone(&join)));
                join
            }
        };
        let containers = self.containers(snap, processes, self.cache_pods());
        let lost = self.lost.update(snap, &join);
        snap.attribution = Attribution {
            join: Some(join),
            containers,
            sources: self.health(now),
            lost,
        };
    }

    fn cache_pods(&self) -> Option<Arc<PodIndex>> {
        self.cache.as_ref().and_then(|(i, _)| i.pods.clone())
    }

    /// Per-container use of each entity, from this tick's processes.
    fn containers(
        &mut self,
        snap: &Snapshot,
        processes: &[EntityProcesses],
        pods: Option<Arc<PodIndex>>,
    ) -> Vec<ContainerUse> {
        let Some(tree) = self.sources.procs.as_mut() else {
            return Vec::new();
        };
        let by_uuid: HashMap<&str, usize> = snap
            .entities
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let uuid = e.id.mig.as_ref().map_or(e.id.uuid.as_str(), |m| &m.uuid);
                (uuid, i)
            })
            .collect();
        let mut live = HashSet::new();
        let mut out = Vec::new();
        let mut failed = false;
        for ep in processes {
            let Some(&entity) = by_uuid.get(ep.uuid.as_str()) else {
                continue;
            };
            // label suffix → (memory, memory known, sm, processes)
            // Ordered by the labels' text, as the exposition lists the containers.
            let mut groups: BTreeMap<Labels, (f64, bool, f64, u64)> = BTreeMap::new();
            let mut outside: Vec<u32> = Vec::new();
            for p in &ep.processes {
                live.insert(p.pid);
                let labels = match tree.lookup(p.pid) {
                    Ok(Some(id)) => {
                        container_labels(pods.as_deref(), &id.pod_uid, id.container_id.as_deref())
                    }
                    Ok(None) => Labels::new(),
                    Err(e) => {
                        failed = true;
                        self.proc_errors += 1;
                        let key = format!("proc:{}", e.kind());
                        if self.warned.insert(key) {
                            warn!(
                                pid = p.pid,
                                root = %tree.root().display(),
                                "cannot read the cgroup of a GPU process: {e}; its use is \
                                 reported without a pod (the exporter needs the host's PID \
                                 namespace, hostPID: true, and the host's /proc)"
                            );
                        }
                        Labels::new()
                    }
                };
                if labels.is_empty() {
                    outside.push(p.pid);
                }
                let g = groups.entry(labels).or_default();
                if let Some(m) = p.memory_bytes {
                    g.0 += m as f64;
                    g.1 = true;
                }
                g.2 += p.sm_percent.unwrap_or(0.0) / 100.0;
                g.3 += 1;
            }
            outside.sort_unstable();
            outside.dedup();
            outside.truncate(SHOWN_PIDS);
            for (labels, (mem, mem_known, sm, n)) in groups {
                let pids = if labels.is_empty() {
                    outside.iter().map(|&pid| (pid, tree.name(pid))).collect()
                } else {
                    Vec::new()
                };
                out.push(ContainerUse {
                    entity,
                    labels,
                    memory_bytes: mem_known.then_some(mem),
                    sm_ratio: ep.utilization.then_some(sm),
                    processes: n,
                    pids,
                });
            }
        }
        tree.retain(&live);
        self.proc_ok = !failed;
        out
    }

    /// The health of every configured source.
    fn health(&mut self, now: f64) -> Vec<SourceHealth> {
        let mut out = Vec::new();
        let mut add = |source: &'static str, h: Health| {
            out.push(SourceHealth {
                source,
                up: h.up,
                age_seconds: h.age_seconds(now),
                errors: h.errors,
                last_error: h.last_error,
            })
        };
        if let Some(k) = &self.sources.kubelet {
            add("kubelet", k.health());
        }
        if let Some(p) = &self.sources.pods {
            add("pods", p.health());
        }
        if let Some(d) = &self.sources.dra {
            add("resourceslices", d.health());
        }
        if let Some(h) = &self.sources.hpc {
            add("hpc_jobs", h.health());
        }
        if self.sources.procs.is_some() {
            out.push(SourceHealth {
                source: "processes",
                up: self.proc_ok,
                age_seconds: None,
                errors: self.proc_errors,
                last_error: None,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{EntityId, EntitySample, MigIdentity};
    use crate::sources::kube::meta::{ContainerMeta, PodMeta, Workload};
    use crate::sources::kube::pod_labels::LabelAllowlist;
    use crate::sources::kubelet::client::{ContainerDevices, PodDevices};

    const G0: &str = "GPU-00000000-0000-0000-0000-000000000000";
    const G1: &str = "GPU-11111111-1111-1111-1111-111111111111";
    const M1: &str = "MIG-aaaaaaaa-1111-1111-1111-111111111111";
    const M2: &str = "MIG-bbbbbbbb-1111-1111-1111-111111111111";

    /// GPU 0 whole; GPU 1 in MIG mode with GPU instances 1 and 2.
    fn entities() -> Vec<EntitySample> {
        let id = |gpu: u32, uuid: &str, mig: Option<(u32, &str)>| EntityId {
            gpu,
            uuid: uuid.into(),
            pci_bus_id: format!("00000000:{gpu:02}:00.0"),
            device: format!("nvidia{gpu}"),
            model_name: "NVIDIA A100-SXM4-40GB".into(),
            mig: mig.map(|(gi, u)| MigIdentity {
                profile: "3g.20gb".into(),
                gpu_instance_id: gi,
                compute_instance_id: 0,
                uuid: u.into(),
            }),
        };
        [
            id(0, G0, None),
            id(1, G1, None),
            id(1, G1, Some((1, M1))),
            id(1, G1, Some((2, M2))),
        ]
        .into_iter()
        .map(|id| EntitySample {
            id,
            values: Vec::new(),
            labels: Vec::new(),
        })
        .collect()
    }

    fn pod(ns: &str, name: &str, container: &str, resource: &str, ids: &[&str]) -> PodDevices {
        PodDevices {
            namespace: ns.into(),
            name: name.into(),
            containers: vec![ContainerDevices {
                name: container.into(),
                devices: vec![(resource.into(), ids.iter().map(|s| s.to_string()).collect())],
                claims: Vec::new(),
            }],
        }
    }

    fn join(opts: &AttributionOptions, pods: Vec<PodDevices>) -> (HolderMap, Vec<String>) {
        let view = KubeletView {
            pods,
            allocatable: None,
        };
        build_join(
            opts,
            &entities(),
            Some(&view),
            None,
            None,
            None,
            &BTreeSet::new(),
        )
    }

    #[test]
    fn every_device_id_form_lands_on_its_entity() {
        let cases: [(&str, &str, usize); 8] = [
            ("nvidia.com/gpu", G0, 0),
            (
                "nvidia.com/gpu",
                "GPU-00000000-0000-0000-0000-000000000000::3",
                0,
            ),
            ("nvidia.com/mig-3g.20gb", M1, 2),
            (
                "nvidia.com/mig-3g.20gb",
                "MIG-bbbbbbbb-1111-1111-1111-111111111111::1",
                3,
            ),
            (
                "nvidia.com/mig-3g.20gb",
                "MIG-GPU-11111111-1111-1111-1111-111111111111/2/0",
                3,
            ),
            ("nvidia.com/gpu", "nvidia0", 0),
            ("nvidia.com/gpu", "nvidia0/vgpu2", 0),
            ("nvidia.com/mig-3g.20gb", "nvidia1/gi1", 2),
        ];
        for (resource, id, want) in cases {
            let (j, unmatched) = join(
                &AttributionOptions::default(),
                vec![pod("ns", "p", "c", resource, &[id])],
            );
            assert!(unmatched.is_empty(), "{id}: {unmatched:?}");
            for (i, labels) in j.series_labels.iter().enumerate() {
                if i == want {
                    assert_eq!(
                        labels,
                        &[",container=\"c\",namespace=\"ns\",pod=\"p\""],
                        "{id}"
                    );
                } else {
                    assert!(labels.is_empty(), "{id} also landed on entity {i}");
                }
            }
            assert_eq!(j.allocations.len(), 1, "{id}");
            assert_eq!(j.allocations[0].0, want, "{id}");
        }
    }

    #[test]
    fn renamed_and_extra_resources_match_other_resources_do_not() {
        let (j, _) = join(
            &AttributionOptions::default(),
            vec![
                pod("a", "shared", "c", "nvidia.com/gpu.shared", &[G0]),
                pod("b", "nic", "c", "example.com/nic", &[G1]),
            ],
        );
        assert_eq!(j.allocations.len(), 1);
        assert!(
            j.allocations[0]
                .1
                .to_string()
                .contains("resource=\"nvidia.com/gpu.shared\"")
        );
        let opts = AttributionOptions {
            extra_resources: vec!["example.com/nic".into()],
            ..AttributionOptions::default()
        };
        let (j, _) = join(&opts, vec![pod("b", "nic", "c", "example.com/nic", &[G1])]);
        assert_eq!(j.allocations.len(), 1);
    }

    #[test]
    fn shared_device_has_no_pod_labels_but_every_holder_in_allocation_info() {
        let (j, _) = join(
            &AttributionOptions::default(),
            vec![
                pod("ns", "a", "c", "nvidia.com/gpu", &[&format!("{G0}::0")]),
                pod("ns", "b", "c", "nvidia.com/gpu", &[&format!("{G0}::1")]),
            ],
        );
        assert!(j.series_labels[0].is_empty(), "{:?}", j.series_labels[0]);
        let rows: Vec<String> = j.allocations.iter().map(|(_, s)| s.to_string()).collect();
        assert_eq!(
            rows,
            [
                ",resource=\"nvidia.com/gpu\",namespace=\"ns\",pod=\"a\",container=\"c\",vgpu=\"0\"",
                ",resource=\"nvidia.com/gpu\",namespace=\"ns\",pod=\"b\",container=\"c\",vgpu=\"1\"",
            ]
        );
    }

    #[test]
    fn one_container_with_several_replicas_still_labels_the_device() {
        let (j, _) = join(
            &AttributionOptions::default(),
            vec![pod(
                "ns",
                "a",
                "c",
                "nvidia.com/gpu",
                &[&format!("{G0}::0"), &format!("{G0}::1")],
            )],
        );
        assert_eq!(
            j.series_labels[0],
            [",container=\"c\",namespace=\"ns\",pod=\"a\""]
        );
        assert_eq!(j.allocations.len(), 2);
    }

    #[test]
    fn virtual_gpus_copy_series_per_holder_with_vgpu() {
        let opts = AttributionOptions {
            virtual_gpus: true,
            ..AttributionOptions::default()
        };
        let (j, _) = join(
            &opts,
            vec![
                pod("ns", "a", "c", "nvidia.com/gpu", &[&format!("{G0}::0")]),
                pod("ns", "b", "c", "nvidia.com/gpu", &[&format!("{G0}::1")]),
            ],
        );
        assert_eq!(
            j.series_labels[0],
            [
                ",container=\"c\",namespace=\"ns\",pod=\"a\",vgpu=\"0\"",
                ",container=\"c\",namespace=\"ns\",pod=\"b\",vgpu=\"1\"",
            ]
        );
    }

    #[test]
    fn old_namespace_uses_dcgm_1x_label_names() {
        let opts = AttributionOptions {
            use_old_namespace: true,
            ..AttributionOptions::default()
        };
        let (j, _) = join(&opts, vec![pod("ns", "a", "c", "nvidia.com/gpu", &[G0])]);
        assert_eq!(
            j.series_labels[0],
            [",container_name=\"c\",pod_namespace=\"ns\",pod_name=\"a\""]
        );
    }

    #[test]
    fn unknown_ids_are_reported_not_attributed() {
        let (j, unmatched) = join(
            &AttributionOptions::default(),
            vec![pod(
                "ns",
                "a",
                "c",
                "nvidia.com/gpu",
                &["GPU-99999999-0000-0000-0000-000000000000", "weird-id"],
            )],
        );
        assert_eq!(j.unmatched, 2);
        assert_eq!(j.unmatched_ids.len(), 2, "{:?}", j.unmatched_ids);
        assert_eq!(unmatched.len(), 2);
        assert!(j.allocations.is_empty());
        assert_eq!(j.resources, [("nvidia.com/gpu".to_string(), None, 2)]);
    }

    /// Each unmatched ID is warned about once while it lasts, and what is remembered is the
    /// last join's set: a kubelet that lists ever-new unknown IDs does not grow it.
    #[test]
    fn unmatched_ids_are_warned_once_and_remembered_only_while_they_last() {
        let ids = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let mut u = UnmatchedIds::default();
        assert_eq!(u.update(ids(&["a", "b", "a"])), ids(&["a", "b"]));
        assert_eq!(u.update(ids(&["b", "a"])), ids(&[]));
        assert_eq!(u.update(ids(&["b", "c"])), ids(&["c"]));
        assert_eq!(u.update(ids(&["a"])), ids(&["a"]), "gone, then back");
        for round in 0..1_000 {
            let new = u.update((0..10).map(|i| format!("GPU-{round}-{i}")).collect());
            assert_eq!(new.len(), 10);
        }
        assert_eq!(u.0.len(), 10, "bounded by one answer's IDs");
        assert_eq!(u.update(Vec::new()), ids(&[]));
        assert!(u.0.is_empty());
    }

    #[test]
    fn pod_metadata_adds_labels_uid_and_workload() {
        let meta = PodMeta {
            uid: "u-1".into(),
            namespace: "ns".into(),
            name: "a".into(),
            labels: [
                ("app".to_string(), "x".to_string()),
                ("pod".into(), "y".into()),
            ]
            .into_iter()
            .collect(),
            workload: Some(Workload {
                kind: "Deployment".into(),
                name: "web".into(),
            }),
            containers: vec![ContainerMeta {
                name: "c".into(),
                id: Some("ab".repeat(32)),
            }],
        };
        let index = PodIndex::from_pods([meta]);
        let opts = AttributionOptions {
            pod_labels: Some(LabelAllowlist::parse(None).unwrap()),
            pod_uid: true,
            ..AttributionOptions::default()
        };
        let view = KubeletView {
            pods: vec![pod("ns", "a", "c", "nvidia.com/gpu", &[G0])],
            allocatable: Some(vec![("nvidia.com/gpu".into(), vec![G0.into(), G1.into()])]),
        };
        let (j, _) = build_join(
            &opts,
            &entities(),
            Some(&view),
            Some(&index),
            None,
            None,
            &BTreeSet::new(),
        );
        assert_eq!(
            j.series_labels[0],
            [
                ",app=\"x\",label_pod=\"y\",container=\"c\",namespace=\"ns\",pod=\"a\",pod_uid=\"u-1\""
            ]
        );
        assert_eq!(
            j.allocations[0].1,
            ",resource=\"nvidia.com/gpu\",namespace=\"ns\",pod=\"a\",container=\"c\",pod_uid=\"u-1\",workload_kind=\"Deployment\",workload_name=\"web\",app=\"x\",label_pod=\"y\""
        );
        assert_eq!(j.resources, [("nvidia.com/gpu".to_string(), Some(2), 1)]);
        // Per-process labels through the same index.
        assert_eq!(
            container_labels(Some(&index), "u-1", Some(&"ab".repeat(32))),
            ",container=\"c\",namespace=\"ns\",pod=\"a\",pod_uid=\"u-1\""
        );
        assert_eq!(container_labels(None, "u-2", None), ",pod_uid=\"u-2\"");
    }

    #[test]
    fn hpc_jobs_copy_series_per_job() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("0"), "job-a\njob-b\n").unwrap();
        std::fs::write(dir.path().join("1.2"), "job-c\n").unwrap();
        let (jobs, warnings) = crate::sources::hpc::read_dir(dir.path()).unwrap();
        assert!(warnings.is_empty());
        let (j, _) = build_join(
            &AttributionOptions::default(),
            &entities(),
            None,
            None,
            None,
            Some(&jobs),
            &BTreeSet::new(),
        );
        assert_eq!(
            j.series_labels[0],
            [",hpc_job=\"job-a\"", ",hpc_job=\"job-b\""]
        );
        assert!(j.series_labels[1].is_empty());
        assert!(j.series_labels[2].is_empty());
        assert_eq!(j.series_labels[3], [",hpc_job=\"job-c\""]);
    }
}
