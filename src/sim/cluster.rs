//! The simulated Kubernetes side of `--simulate`: the scenario's `[[pods]]` and `[[jobs]]`
//! (their pods over scenario time: `churn`) served by a
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
//!
//! [[jobs]]             # a new pod ci-<n> on each slot every 10 s, for 8 s (`jobs`)
//! name = "ci"
//! every = 10
//! duration = 8
//! gpus = [0, 1]        # or mig = ["2.7"], shared = ["4::0"]
//!
//! [kubernetes]         # optional: the API server's write faults (`timeline`) and the
//! rbac = [{ apiGroups = [""], resources = ["pods"], verbs = ["list", "watch"] }]  # RBAC
//! ```
//!
//! A pod's optional `start` and `end` (scenario seconds) bound when it exists.
//!
//! Simulator only (behind the `sim` feature): it must not be reachable from the production
//! build, and it feeds the exporter only through the interfaces a real node has (the socket,
//! the API server's HTTP, the proc tree).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use nvml_wrapper::Nvml;
use serde::Deserialize;
use serde_json::json;

use crate::config::SimulatedNode;
use crate::gpu::LoadError;
use crate::sim::api::timeline::{self, ApiFaultError, RawKubernetes, TimedWriteFault};
use crate::sim::api::{FakeApi, RbacRule};
use crate::sim::churn::{ChurnError, Stage, Timeline};
use crate::sim::jobs::{self, JobError, JobStream, RawJob};
use crate::sim::kubelet::FakeKubelet;
use crate::sim::library::{SimLib, SimLibError};
pub use crate::sim::pods::{DRA_DRIVER, SHARED_REPLICAS};
use crate::sim::pods::{PodError, RawPod};
use crate::sources::kubelet::client::KubeletView;

#[derive(Debug, Deserialize)]
struct RawScenario {
    #[serde(default)]
    pods: Vec<RawPod>,
    #[serde(default)]
    jobs: Vec<RawJob>,
    /// Only counted here (the simulated library reads them).
    #[serde(default)]
    gpus: Vec<toml::Table>,
    /// The API server's fault timeline (`api_faults`) and RBAC rules (`rbac`).
    kubernetes: Option<RawKubernetes>,
}

/// Why the simulated cluster cannot be built or started; each message names the scenario key,
/// pod or part that failed.
#[derive(Debug, thiserror::Error)]
pub enum SimClusterError {
    /// The scenario's `[[pods]]`, `[[jobs]]` or `[kubernetes]` do not parse.
    #[error("scenario [[pods]], [[jobs]] or [kubernetes]: {0}")]
    Scenario(#[source] toml::de::Error),
    /// A pod or container of the scenario refers to something the node does not have, or
    /// NVML failed while the node's GPUs were listed.
    #[error(transparent)]
    Pod(#[from] PodError),
    /// A `[[jobs]]` table is not valid.
    #[error(transparent)]
    Job(#[from] JobError),
    /// The scenario's `[kubernetes] api_faults` are not valid.
    #[error(transparent)]
    ApiFaults(#[from] ApiFaultError),
    /// The simulated library could not be asked for the scenario.
    #[error(transparent)]
    Library(#[from] SimLibError),
    /// NVML could not be loaded to resolve GPU indices.
    #[error(transparent)]
    Load(#[from] LoadError),
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

impl From<ChurnError> for SimClusterError {
    fn from(e: ChurnError) -> Self {
        match e {
            ChurnError::Pod(e) => Self::Pod(e),
            ChurnError::Job(e) => Self::Job(e),
        }
    }
}

/// The scenario's pods and jobs, parsed (not yet resolved against NVML).
#[derive(Debug, Clone, Default)]
pub struct ClusterSpec {
    pods: Vec<RawPod>,
    jobs: Vec<JobStream>,
    gpus: usize,
    api_faults: Vec<TimedWriteFault>,
    /// `[kubernetes] rbac`: the exporter's RBAC rules; `None`: everything is allowed.
    rbac: Option<Vec<RbacRule>>,
}

impl ClusterSpec {
    /// Parses the `[[pods]]`, `[[jobs]]` and `[kubernetes]` of a scenario's TOML text; errors
    /// name the scenario key.
    pub fn parse(text: &str) -> Result<Self, SimClusterError> {
        let mut raw: RawScenario = toml::from_str(text).map_err(SimClusterError::Scenario)?;
        let rbac = raw.kubernetes.as_mut().and_then(|k| k.rbac.take());
        Ok(Self {
            pods: raw.pods,
            jobs: jobs::parse(raw.jobs)?,
            gpus: raw.gpus.len(),
            api_faults: timeline::parse(raw.kubernetes)?,
            rbac,
        })
    }

    /// Whether the scenario has no pod and no job.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty() && self.jobs.is_empty()
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
pub struct Resolved {
    /// The pods over time.
    pub timeline: Timeline,
    /// What `GetAllocatableResources` answers.
    pub allocatable: Vec<(String, Vec<String>)>,
    /// ResourceSlices of the simulated DRA driver.
    pub slices: Vec<serde_json::Value>,
    /// PIDs NVML lists that no scenario container owns (host processes).
    pub host_pids: Vec<u32>,
}

impl ClusterSpec {
    /// Resolves GPU indices and MIG instances to NVML UUIDs and builds what each simulated
    /// component serves. Errors name the pod and container, or the job and key.
    pub fn resolve(&self, nvml: &'static Nvml, node: &str) -> Result<Resolved, SimClusterError> {
        let gpus = crate::sim::pods::gpus(nvml)?;
        let timeline = Timeline::new(&self.pods, self.jobs.clone(), gpus, node)?;
        let shared_gpus = timeline.shared_gpus()?;
        let gpus = timeline.gpus();

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
        let owned = timeline.owned_pids();
        let host_pids = gpus
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
        let slices = vec![json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": format!("{node}-{DRA_DRIVER}")},
            "spec": {"driver": DRA_DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": devices}
        })];
        Ok(Resolved {
            timeline,
            allocatable: alloc.into_iter().collect(),
            slices,
            host_pids,
        })
    }
}

/// Writes the base of the simulated proc tree under `root`: the directory, and a host cgroup
/// for the scenario's processes that no pod owns (`host_pids`). The pods' processes are
/// written (and removed) by the timeline's player as the pods start and end.
pub fn write_proc_tree(root: &Path, host_pids: &[u32]) -> std::io::Result<()> {
    // Present even when the scenario runs no process, as a node's /proc always is.
    std::fs::create_dir_all(root)?;
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
    /// Number of the scenario's `[[pods]]`.
    pub pods: usize,
    /// Number of the scenario's `[[jobs]]` streams.
    pub jobs: usize,
    _dir: tempfile::TempDir,
}

impl SimCluster {
    /// The simulated node as validation points the components at it: this cluster's node name,
    /// kubelet socket, proc tree and DRA claims, with the simulated libraries at `nvml_lib` and
    /// `dcgm_lib`.
    pub fn simulated_node(&self, nvml_lib: PathBuf, dcgm_lib: Option<PathBuf>) -> SimulatedNode {
        SimulatedNode {
            node_name: self.node.clone(),
            nvml_lib,
            dcgm_lib,
            kubelet_socket: self.socket.clone(),
            proc_root: self.proc_root.clone(),
            dra_claims: self.has_claims,
        }
    }

    /// Builds and starts everything from the configured scenario of `sim` (NVML loaded from
    /// `lib_path` resolves GPU indices to UUIDs). Call inside a tokio runtime.
    pub async fn start(sim: &SimLib, lib_path: Option<&Path>) -> Result<Self, SimClusterError> {
        let spec = ClusterSpec::parse(&sim.scenario_text()?)?;
        let node = sim.node_name()?;
        // A scenario without pods needs no GPU indices resolved, and must not need NVML at
        // start (a scenario whose driver loads late is served before it answers).
        let resolved = if spec.is_empty() {
            None
        } else {
            let nvml = crate::gpu::open(lib_path)?;
            Some(spec.resolve(nvml, &node)?)
        };
        // The scenario clock reads the library, which must stay loaded while it plays: NVML
        // loaded from the same path never unloads.
        let timed = resolved.as_ref().is_some_and(|r| !r.timeline.is_static());
        let clock = if spec.api_faults.is_empty() && !timed {
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
        let host_pids = resolved.as_ref().map_or(&[][..], |r| &r.host_pids);
        write_proc_tree(&proc_root, host_pids).map_err(|source| SimClusterError::Start {
            what: "writing the simulated proc tree".into(),
            source,
        })?;
        let socket = dir.path().join("kubelet.sock");
        let kubelet = FakeKubelet::start(&socket, KubeletView::default())
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
        api.set_rbac(spec.rbac.clone());
        api.apply_node(spec.node_object(&node));
        let pods = spec.pods.len();
        if let Some(r) = resolved {
            for s in &r.slices {
                api.apply_slice(s.clone());
            }
            // The pods of now, before any client connects; then as the clock moves.
            let stage = Stage {
                kubelet: kubelet.views(),
                api: api.pods_handle(),
                proc_root: proc_root.clone(),
                allocatable: Some(r.allocatable),
            };
            stage.play(r.timeline, clock.clone().filter(|_| timed));
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
            pods,
            jobs: spec.jobs.len(),
            _dir: dir,
        })
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
        assert!(s.rbac.is_none(), "no [kubernetes] rbac: everything allowed");
        let s = ClusterSpec::parse(
            "[kubernetes]\nrbac = [{ apiGroups = [\"\"], resources = [\"pods\"], verbs = [\"list\"] }]\n",
        )
        .unwrap();
        assert_eq!(
            s.rbac,
            Some(vec![RbacRule::new(&[""], &["pods"], &["list"])])
        );
        assert!(s.api_faults.is_empty());
    }

    #[test]
    fn the_node_has_gpu_capacity_and_the_kubelets_ready_condition() {
        let s = ClusterSpec::parse("[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n").unwrap();
        let n = s.node_object("node-a");
        assert_eq!(n["metadata"]["name"], "node-a");
        assert_eq!(n["status"]["capacity"]["nvidia.com/gpu"], "2");
        assert_eq!(n["status"]["conditions"][0]["type"], "Ready");
    }
}
