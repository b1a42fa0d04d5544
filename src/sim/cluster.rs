//! The simulated Kubernetes side of `--simulate`: the scenario's `[[pods]]` served by a
//! simulated kubelet (pod-resources gRPC on a temporary unix socket), a simulated API server
//! (the scenario's Node, its pods and the NVIDIA DRA driver's ResourceSlices on loopback; it
//! takes the exporter's Node conditions and Events) and a simulated proc tree
//! (`<dir>/proc/<pid>/cgroup`), so the whole attribution chain runs on a machine without a GPU
//! or a cluster.
//!
//! Scenario format (documented in `scenarios/README.md`):
//!
//! ```toml
//! [[pods]]
//! name = "llm-train-0"
//! namespace = "ml"
//! owner = "StatefulSet/llm-train"     # optional: Kind/name of the controlling owner
//! labels = { app = "llm-train" }       # optional
//! [[pods.containers]]
//! name = "trainer"
//! gpus = [0, 1]        # whole GPUs by index: nvidia.com/gpu, GPU UUIDs
//! mig = ["2.1"]        # MIG instances <gpu>.<gpu instance id>: nvidia.com/mig-<profile>
//! shared = ["4::0"]    # time-sliced replicas <gpu>::<replica>: <uuid>::<replica>
//! claims = ["gpu-6"]   # DRA devices of gpu.nvidia.com in this node's pool
//! ids = [{ resource = "nvidia.com/gpu", id = "nvidia0" }]  # literal device IDs
//! pids = [41001]       # this container's processes (they get its cgroup)
//! resource = "nvidia.com/gpu.shared"   # optional: resource name for gpus/shared
//! ```
//!
//! Simulator only (behind the `sim` feature): it must not be reachable from the production
//! build, and it feeds the exporter only through the interfaces a real node has (the socket,
//! the API server's HTTP, the proc tree).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use nvml_wrapper::Nvml;
use serde::Deserialize;
use serde_json::json;

use crate::attribution::KubernetesConfig;
use crate::gpu::LoadError;
use crate::sim::api::FakeApi;
use crate::sim::api::timeline::{self, ApiFaultError, RawKubernetes, TimedWriteFault};
use crate::sim::kubelet::FakeKubelet;
use crate::sim::library::{SimLib, SimLibError};
use crate::sources::kubelet::client::{ClaimDevice, ContainerDevices, KubeletView, PodDevices};

/// Replicas a time-sliced GPU is advertised as (the device plugin's `replicas`).
pub const SHARED_REPLICAS: u32 = 4;

/// The DRA driver name the simulated ResourceSlices use.
pub const DRA_DRIVER: &str = "gpu.nvidia.com";

#[derive(Debug, Deserialize)]
struct RawScenario {
    #[serde(default)]
    pods: Vec<RawPod>,
    /// Only counted here (the simulated library reads them).
    #[serde(default)]
    gpus: Vec<toml::Table>,
    /// The API server's fault timeline (`api_faults`).
    kubernetes: Option<RawKubernetes>,
}

/// One pod of the scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPod {
    name: String,
    #[serde(default = "default_namespace")]
    namespace: String,
    owner: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    containers: Vec<RawContainer>,
}

fn default_namespace() -> String {
    "default".into()
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawContainer {
    name: String,
    #[serde(default)]
    gpus: Vec<u32>,
    #[serde(default)]
    mig: Vec<String>,
    #[serde(default)]
    shared: Vec<String>,
    #[serde(default)]
    claims: Vec<String>,
    #[serde(default)]
    ids: Vec<RawId>,
    #[serde(default)]
    pids: Vec<u32>,
    resource: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawId {
    resource: String,
    id: String,
}

/// Why the simulated cluster cannot be built or started; each message names the scenario key,
/// pod or part that failed.
#[derive(Debug, thiserror::Error)]
pub enum SimClusterError {
    /// The scenario's `[[pods]]` or `[kubernetes]` do not parse.
    #[error("scenario [[pods]] or [kubernetes]: {0}")]
    Scenario(#[source] toml::de::Error),
    /// A pod or container of the scenario refers to something the node does not have.
    #[error("scenario pod {pod}: {problem}")]
    Pod {
        /// `namespace/name`, with ` container NAME` when one container is at fault.
        pod: String,
        /// What is wrong.
        problem: String,
    },
    /// The scenario's `[kubernetes] api_faults` are not valid.
    #[error(transparent)]
    ApiFaults(#[from] ApiFaultError),
    /// The simulated library could not be asked for the scenario.
    #[error(transparent)]
    Library(#[from] SimLibError),
    /// NVML could not be loaded to resolve GPU indices.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// NVML failed while the node's GPUs were listed.
    #[error("{what}: {source}")]
    Nvml {
        /// What was being read.
        what: String,
        /// NVML's error.
        source: nvml_wrapper::error::NvmlError,
    },
    /// A part of the simulated cluster could not be started.
    #[error("--simulate: {what}: {source}")]
    Start {
        /// Which part.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// No client for the simulated API server.
    #[error("--simulate: client of the simulated API server: {0}")]
    Client(#[source] kube::Error),
}

/// The scenario's pods, parsed (not yet resolved against NVML).
#[derive(Debug, Clone, Default)]
pub struct ClusterSpec {
    pods: Vec<RawPod>,
    gpus: usize,
    api_faults: Vec<TimedWriteFault>,
}

impl ClusterSpec {
    /// Parses the `[[pods]]` of a scenario's TOML text; errors name the scenario key.
    pub fn parse(text: &str) -> Result<Self, SimClusterError> {
        let raw: RawScenario = toml::from_str(text).map_err(SimClusterError::Scenario)?;
        Ok(Self {
            pods: raw.pods,
            gpus: raw.gpus.len(),
            api_faults: timeline::parse(raw.kubernetes)?,
        })
    }

    /// Whether the scenario has any pod.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// The Node object the simulated API server holds for `node`: `nvidia.com/gpu` capacity for
    /// the scenario's GPUs and a `Ready` condition written by the (simulated) kubelet.
    pub fn node_object(&self, node: &str) -> serde_json::Value {
        let now = crate::sim::api::now_rfc3339();
        let gpus = self.gpus.to_string();
        json!({
            "metadata": {
                "name": node,
                "labels": {
                    "kubernetes.io/hostname": node,
                    "kubernetes.io/os": "linux",
                    "nvidia.com/gpu.present": "true",
                },
            },
            "spec": {},
            "status": {
                "capacity": {"cpu": "64", "memory": "1056Gi", "pods": "110", "nvidia.com/gpu": gpus},
                "allocatable": {"cpu": "63", "memory": "1050Gi", "pods": "110", "nvidia.com/gpu": gpus},
                "conditions": [{
                    "type": "Ready", "status": "True", "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": now, "lastTransitionTime": now,
                }],
                "addresses": [
                    {"type": "InternalIP", "address": "127.0.0.1"},
                    {"type": "Hostname", "address": node},
                ],
                "nodeInfo": {
                    "kubeletVersion": "v1.33.0-sim", "operatingSystem": "linux",
                    "architecture": "amd64", "containerRuntimeVersion": "containerd://2.0.0",
                    "kernelVersion": "6.1.0", "osImage": "simulated",
                },
            },
        })
    }

    /// Whether a container holds a DRA claim.
    pub fn has_claims(&self) -> bool {
        self.pods
            .iter()
            .flat_map(|p| &p.containers)
            .any(|c| !c.claims.is_empty())
    }
}

/// Everything the simulated cluster serves.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// What the simulated kubelet answers.
    pub view: KubeletView,
    /// Pod objects for the simulated API server.
    pub pods: Vec<serde_json::Value>,
    /// ResourceSlices of the simulated DRA driver.
    pub slices: Vec<serde_json::Value>,
    /// (PID, content of `/proc/<pid>/cgroup`).
    pub cgroups: Vec<(u32, String)>,
    /// PIDs NVML lists that no scenario container owns (host processes).
    pub host_pids: Vec<u32>,
}

/// A GPU as NVML shows it: UUID, MIG instances (GI id → (MIG UUID, profile)) and the PIDs
/// of its processes.
struct GpuInfo {
    uuid: String,
    migs: BTreeMap<u32, (String, String)>,
    pids: Vec<u32>,
}

fn gpus(nvml: &'static Nvml) -> Result<Vec<GpuInfo>, SimClusterError> {
    let nvml_err = |what: String| move |source| SimClusterError::Nvml { what, source };
    let n = nvml
        .device_count()
        .map_err(nvml_err("counting GPUs".into()))?;
    let mut out = Vec::new();
    for i in 0..n {
        let dev = nvml
            .device_by_index(i)
            .map_err(nvml_err(format!("opening GPU {i}")))?;
        let uuid = dev
            .uuid()
            .map_err(nvml_err(format!("the UUID of GPU {i}")))?;
        let mut migs = BTreeMap::new();
        let mut pids: Vec<u32> = dev
            .running_compute_processes()
            .map(|v| v.iter().map(|p| p.pid).collect())
            .unwrap_or_default();
        if dev.mig_mode().is_ok_and(|m| m.current == 1) {
            let instances = crate::gpu::reader::enumerate_mig(nvml, &dev)
                .map_err(nvml_err(format!("listing the MIG instances of GPU {i}")))?;
            for (mig, id) in instances {
                pids.extend(
                    mig.running_compute_processes()
                        .map(|v| v.iter().map(|p| p.pid).collect::<Vec<_>>())
                        .unwrap_or_default(),
                );
                migs.insert(id.gpu_instance_id, (id.uuid, id.profile));
            }
        }
        out.push(GpuInfo { uuid, migs, pids });
    }
    Ok(out)
}

/// A stable UUID-shaped id from a string (pod UIDs).
fn stable_uuid(seed: &str) -> String {
    let h = stable_hex(seed, 32);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// `len` hex digits derived from a string (FNV-1a, repeated).
fn stable_hex(seed: &str, len: usize) -> String {
    let mut out = String::with_capacity(len);
    let mut round = 0u64;
    while out.len() < len {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ round;
        for b in seed.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        let _ = write!(out, "{h:016x}");
        round += 1;
    }
    out.truncate(len);
    out
}

impl ClusterSpec {
    /// Resolves GPU indices and MIG instances to NVML UUIDs and builds what each simulated
    /// component serves. Errors name the pod and container.
    pub fn resolve(&self, nvml: &'static Nvml, node: &str) -> Result<Resolved, SimClusterError> {
        let gpus = gpus(nvml)?;
        let mut out = Resolved::default();
        let mut shared_gpus = std::collections::BTreeSet::new();
        for pod in &self.pods {
            let uid = stable_uuid(&format!("{}/{}", pod.namespace, pod.name));
            let mut containers = Vec::new();
            let mut statuses = Vec::new();
            for c in &pod.containers {
                let at = |what: &str| SimClusterError::Pod {
                    pod: format!("{}/{} container {}", pod.namespace, pod.name, c.name),
                    problem: what.to_owned(),
                };
                let gpu = |i: u32| {
                    gpus.get(i as usize)
                        .ok_or_else(|| at(&format!("no GPU {i} (the node has {})", gpus.len())))
                };
                let resource = c.resource.as_deref().unwrap_or("nvidia.com/gpu");
                let mut devices: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for &i in &c.gpus {
                    devices
                        .entry(resource.into())
                        .or_default()
                        .push(gpu(i)?.uuid.clone());
                }
                for m in &c.mig {
                    let (g, gi) = m
                        .split_once('.')
                        .and_then(|(g, gi)| Some((g.parse().ok()?, gi.parse().ok()?)))
                        .ok_or_else(|| {
                            at(&format!("mig {m:?}: expected <gpu>.<gpu instance id>"))
                        })?;
                    let (uuid, profile) = gpu(g)?.migs.get(&gi).ok_or_else(|| {
                        at(&format!("mig {m:?}: GPU {g} has no GPU instance {gi}"))
                    })?;
                    devices
                        .entry(format!("nvidia.com/mig-{profile}"))
                        .or_default()
                        .push(uuid.clone());
                }
                for s in &c.shared {
                    let (g, r) = s
                        .split_once("::")
                        .and_then(|(g, r)| Some((g.parse::<u32>().ok()?, r.parse::<u32>().ok()?)))
                        .ok_or_else(|| at(&format!("shared {s:?}: expected <gpu>::<replica>")))?;
                    shared_gpus.insert((g, resource.to_owned()));
                    devices
                        .entry(resource.into())
                        .or_default()
                        .push(format!("{}::{r}", gpu(g)?.uuid));
                }
                for id in &c.ids {
                    devices
                        .entry(id.resource.clone())
                        .or_default()
                        .push(id.id.clone());
                }
                let claims = c
                    .claims
                    .iter()
                    .map(|d| ClaimDevice {
                        claim_name: format!("{}-{}", pod.name, c.name),
                        claim_namespace: pod.namespace.clone(),
                        driver: DRA_DRIVER.into(),
                        pool: node.into(),
                        device: d.clone(),
                    })
                    .collect();
                containers.push(ContainerDevices {
                    name: c.name.clone(),
                    devices: devices.into_iter().collect(),
                    claims,
                });
                let cid = stable_hex(&format!("{uid}/{}", c.name), 64);
                statuses.push(json!({
                    "name": c.name, "containerID": format!("containerd://{cid}"),
                    "ready": true, "restartCount": 0, "image": "sim", "imageID": "sim"
                }));
                for pid in &c.pids {
                    out.cgroups.push((
                        *pid,
                        format!(
                            "0::/kubepods.slice/kubepods-burstable.slice/\
                             kubepods-burstable-pod{}.slice/cri-containerd-{cid}.scope\n",
                            uid.replace('-', "_")
                        ),
                    ));
                }
            }
            out.view.pods.push(PodDevices {
                namespace: pod.namespace.clone(),
                name: pod.name.clone(),
                containers,
            });
            let mut labels = pod.labels.clone();
            let owner = match pod.owner.as_deref().map(|o| o.split_once('/')) {
                None => None,
                Some(Some((kind, name))) => {
                    if kind == "ReplicaSet"
                        && let Some((_, hash)) = name.rsplit_once('-')
                    {
                        labels
                            .entry("pod-template-hash".into())
                            .or_insert_with(|| hash.to_owned());
                    }
                    let api = match kind {
                        "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Deployment" => "apps/v1",
                        "Job" => "batch/v1",
                        _ => "v1",
                    };
                    Some(json!([{
                        "apiVersion": api, "kind": kind, "name": name,
                        "uid": stable_uuid(&format!("{kind}/{name}")),
                        "controller": true, "blockOwnerDeletion": true
                    }]))
                }
                Some(None) => {
                    return Err(SimClusterError::Pod {
                        pod: format!("{}/{}", pod.namespace, pod.name),
                        problem: format!(
                            "owner {:?}: expected Kind/name",
                            pod.owner.as_deref().unwrap_or_default()
                        ),
                    });
                }
            };
            let mut meta = json!({
                "name": pod.name, "namespace": pod.namespace, "uid": uid, "labels": labels,
            });
            if let (Some(o), Some(m)) = (owner, meta.as_object_mut()) {
                m.insert("ownerReferences".into(), o);
            }
            out.pods.push(json!({
                "apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {
                    "nodeName": node,
                    "containers": pod.containers.iter().map(|c| json!({"name": c.name, "image": "sim"})).collect::<Vec<_>>(),
                },
                "status": { "phase": "Running", "containerStatuses": statuses },
            }));
        }

        // What the device plugin advertises: every non-MIG GPU (as replicas when shared),
        // and every MIG instance under its profile's resource.
        let mut alloc: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (i, g) in gpus.iter().enumerate() {
            if g.migs.is_empty() {
                match shared_gpus.iter().find(|(s, _)| *s as usize == i) {
                    Some((_, res)) => alloc
                        .entry(res.clone())
                        .or_default()
                        .extend((0..SHARED_REPLICAS).map(|r| format!("{}::{r}", g.uuid))),
                    None => alloc
                        .entry("nvidia.com/gpu".into())
                        .or_default()
                        .push(g.uuid.clone()),
                }
            }
            for (uuid, profile) in g.migs.values() {
                alloc
                    .entry(format!("nvidia.com/mig-{profile}"))
                    .or_default()
                    .push(uuid.clone());
            }
        }
        out.view.allocatable = Some(alloc.into_iter().collect());
        let owned: std::collections::HashSet<u32> = out.cgroups.iter().map(|(p, _)| *p).collect();
        out.host_pids = gpus
            .iter()
            .flat_map(|g| g.pids.iter().copied())
            .filter(|p| !owned.contains(p))
            .collect();

        // One ResourceSlice with every GPU and MIG instance, as NVIDIA's DRA driver publishes.
        let mut devices = Vec::new();
        for (i, g) in gpus.iter().enumerate() {
            devices.push(json!({"name": format!("gpu-{i}"), "attributes": {
                "type": {"string": "gpu"}, "uuid": {"string": g.uuid}, "index": {"int": i}
            }}));
            for (gi, (uuid, profile)) in &g.migs {
                devices.push(json!({"name": format!("gpu-{i}-mig-{gi}"), "attributes": {
                    "type": {"string": "mig"}, "uuid": {"string": uuid},
                    "parentUUID": {"string": g.uuid}, "profile": {"string": profile}
                }}));
            }
        }
        out.slices.push(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": format!("{node}-{DRA_DRIVER}")},
            "spec": {"driver": DRA_DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}
        }));
        Ok(out)
    }
}

/// Writes the simulated proc tree under `root`: `<root>/<pid>/cgroup` for every container
/// process, and a host cgroup for the scenario's other processes (`host_pids`).
pub fn write_proc_tree(root: &Path, r: &Resolved, host_pids: &[u32]) -> std::io::Result<()> {
    // Present even when the scenario runs no process, as a node's /proc always is.
    std::fs::create_dir_all(root)?;
    for (pid, text) in &r.cgroups {
        let dir = root.join(pid.to_string());
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("cgroup"), text)?;
        std::fs::write(dir.join("comm"), "python3\n")?;
    }
    for pid in host_pids {
        let dir = root.join(pid.to_string());
        if !dir.exists() {
            std::fs::create_dir_all(&dir)?;
            std::fs::write(
                dir.join("cgroup"),
                "0::/system.slice/batch-runner.service\n",
            )?;
            std::fs::write(dir.join("comm"), "batch-runner\n")?;
        }
    }
    Ok(())
}

/// The running simulated cluster. Dropping it stops the kubelet and API server and removes
/// the temporary directory.
pub struct SimCluster {
    /// The simulated kubelet.
    pub kubelet: FakeKubelet,
    /// The simulated API server.
    pub api: FakeApi,
    /// A client of the simulated API server.
    pub client: kube::Client,
    /// The kubelet's socket.
    pub socket: PathBuf,
    /// The simulated proc tree.
    pub proc_root: PathBuf,
    /// The scenario's node name.
    pub node: String,
    /// Whether a pod holds a DRA claim.
    pub has_claims: bool,
    /// Number of pods served.
    pub pods: usize,
    _dir: tempfile::TempDir,
}

impl SimCluster {
    /// Builds and starts everything from the configured scenario of `sim` (NVML loaded from
    /// `lib_path` resolves GPU indices to UUIDs). Call inside a tokio runtime.
    pub async fn start(sim: &SimLib, lib_path: Option<&Path>) -> Result<Self, SimClusterError> {
        let spec = ClusterSpec::parse(&sim.scenario_text()?)?;
        let node = sim.node_name()?;
        // A scenario without pods needs no GPU indices resolved, and must not need NVML at
        // start (a scenario whose driver loads late is served before it answers).
        let resolved = if spec.is_empty() {
            Resolved::default()
        } else {
            let nvml = crate::gpu::open(lib_path)?;
            spec.resolve(nvml, &node)?
        };
        // The scenario clock reads the library, which must stay loaded while it plays: NVML
        // loaded from the same path never unloads.
        let clock = if spec.api_faults.is_empty() {
            None
        } else {
            crate::gpu::open(lib_path)?;
            Some(sim.clock()?)
        };
        let dir = tempfile::Builder::new()
            .prefix("gpu-exporter-sim-")
            .tempdir()
            .map_err(|source| SimClusterError::Start {
                what: "temporary directory".into(),
                source,
            })?;
        let proc_root = dir.path().join("proc");
        write_proc_tree(&proc_root, &resolved, &resolved.host_pids).map_err(|source| {
            SimClusterError::Start {
                what: "writing the simulated proc tree".into(),
                source,
            }
        })?;
        let socket = dir.path().join("kubelet.sock");
        let kubelet = FakeKubelet::start(&socket, resolved.view.clone())
            .await
            .map_err(|source| SimClusterError::Start {
                what: format!("simulated kubelet on {}", socket.display()),
                source,
            })?;
        let api = FakeApi::start()
            .await
            .map_err(|source| SimClusterError::Start {
                what: "simulated API server".into(),
                source,
            })?;
        api.apply_node(spec.node_object(&node));
        for p in &resolved.pods {
            api.apply_pod(p.clone());
        }
        for s in &resolved.slices {
            api.apply_slice(s.clone());
        }
        if let Some(clock) = clock {
            api.play_write_faults(spec.api_faults.clone(), clock);
        }
        let client = api.client().map_err(SimClusterError::Client)?;
        Ok(Self {
            kubelet,
            api,
            client,
            socket,
            proc_root,
            node,
            has_claims: spec.has_claims(),
            pods: resolved.pods.len(),
            _dir: dir,
        })
    }

    /// Points pod attribution at this cluster: its socket, proc tree, node, metadata on,
    /// DRA on when a pod holds a claim.
    pub fn configure(&self, k: &mut KubernetesConfig) {
        k.socket = self.socket.clone();
        k.proc_root = self.proc_root.clone();
        k.node_name = Some(self.node.clone());
        k.pod_metadata = true;
        k.dra = k.dra || self.has_claims;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_pods_and_rejects_unknown_keys() {
        let s = ClusterSpec::parse(
            "[[gpus]]\nmodel = \"L4\"\n[[pods]]\nname = \"p\"\n[[pods.containers]]\nname = \"c\"\ngpus = [0]\nclaims = [\"gpu-0\"]\n",
        )
        .unwrap();
        assert!(!s.is_empty());
        assert!(s.has_claims());
        let e = ClusterSpec::parse("[[pods]]\nname = \"p\"\nbogus = 1\n").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }

    #[test]
    fn the_node_has_gpu_capacity_and_the_kubelets_ready_condition() {
        let s = ClusterSpec::parse("[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n").unwrap();
        let n = s.node_object("node-a");
        assert_eq!(n["metadata"]["name"], "node-a");
        assert_eq!(n["status"]["capacity"]["nvidia.com/gpu"], "2");
        assert_eq!(n["status"]["conditions"][0]["type"], "Ready");
    }

    #[test]
    fn stable_ids_have_the_right_shape() {
        let u = stable_uuid("ns/pod");
        assert_eq!(u.len(), 36);
        assert_eq!(u, stable_uuid("ns/pod"));
        assert_ne!(u, stable_uuid("ns/pod2"));
        let h = stable_hex("x", 64);
        assert_eq!(h.len(), 64);
        assert!(h.chars().all(|c| c.is_ascii_hexdigit()));
    }
}
