//! One scenario pod made concrete: the `[[pods]]` schema (and the pods `jobs` generates in
//! the same shape), the node's GPUs as NVML shows them, and the resolution of one pod against
//! them into what each simulated component serves for it: the kubelet's pod-resources entry,
//! the API server's Pod object and the proc tree's cgroup files.
//!
//! It must not start servers or follow scenario time (`churn` decides which pods exist when,
//! `cluster` serves them).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use nvml_wrapper::Nvml;
use serde::Deserialize;
use serde_json::json;

use crate::sources::kubelet::client::{ClaimDevice, ContainerDevices, PodDevices};

/// Replicas a time-sliced GPU is advertised as (the device plugin's `replicas`).
pub const SHARED_REPLICAS: u32 = 4;

/// The DRA driver name the simulated ResourceSlices use.
pub const DRA_DRIVER: &str = "gpu.nvidia.com";

/// One pod of the scenario, as written (or as a job stream makes it).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawPod {
    pub(super) name: String,
    #[serde(default = "default_namespace")]
    pub(super) namespace: String,
    pub(super) owner: Option<String>,
    #[serde(default)]
    pub(super) labels: BTreeMap<String, String>,
    #[serde(default)]
    pub(super) containers: Vec<RawContainer>,
    /// Scenario second the pod starts at (default 0).
    #[serde(default)]
    pub(super) start: f64,
    /// Scenario second the pod ends at (excluded; default never).
    pub(super) end: Option<f64>,
}

pub(super) fn default_namespace() -> String {
    "default".into()
}

/// One container of a pod.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawContainer {
    pub(super) name: String,
    #[serde(default)]
    pub(super) gpus: Vec<u32>,
    #[serde(default)]
    pub(super) mig: Vec<String>,
    #[serde(default)]
    pub(super) shared: Vec<String>,
    #[serde(default)]
    pub(super) claims: Vec<String>,
    #[serde(default)]
    pub(super) ids: Vec<RawId>,
    #[serde(default)]
    pub(super) pids: Vec<u32>,
    pub(super) resource: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawId {
    resource: String,
    id: String,
}

impl RawPod {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Why a pod cannot be resolved, or the node's GPUs cannot be listed.
#[derive(Debug, thiserror::Error)]
pub enum PodError {
    /// A pod or container refers to something the node does not have.
    #[error("scenario pod {pod}: {problem}")]
    Invalid {
        /// `namespace/name`, with ` container NAME` when one container is at fault.
        pod: String,
        /// What is wrong.
        problem: String,
    },
    /// NVML failed while the node's GPUs were listed.
    #[error("{what}: {source}")]
    Nvml {
        /// What was being read.
        what: String,
        /// NVML's error.
        source: nvml_wrapper::error::NvmlError,
    },
}

/// A GPU as NVML shows it: UUID, MIG instances (GI id → (MIG UUID, profile)) and the PIDs
/// of its processes.
pub struct GpuInfo {
    pub(super) uuid: String,
    pub(super) migs: BTreeMap<u32, (String, String)>,
    pub(super) pids: Vec<u32>,
}

/// The node's GPUs, in index order.
pub fn gpus(nvml: &'static Nvml) -> Result<Vec<GpuInfo>, PodError> {
    let nvml_err = |what: String| move |source| PodError::Nvml { what, source };
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
pub fn stable_uuid(seed: &str) -> String {
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
pub fn stable_hex(seed: &str, len: usize) -> String {
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

/// A `<gpu>.<gpu instance id>` MIG reference.
pub fn parse_mig(m: &str) -> Option<(u32, u32)> {
    let (g, gi) = m.split_once('.')?;
    Some((g.parse().ok()?, gi.parse().ok()?))
}

/// A `<gpu>::<replica>` time-sliced replica reference.
pub fn parse_shared(s: &str) -> Option<(u32, u32)> {
    let (g, r) = s.split_once("::")?;
    Some((g.parse().ok()?, r.parse().ok()?))
}

/// One pod as every simulated component serves it.
#[derive(Debug, Clone)]
pub struct ResolvedPod {
    /// What the kubelet lists for it.
    pub devices: PodDevices,
    /// Its Pod object for the API server.
    pub object: serde_json::Value,
    /// (PID, content of `/proc/<pid>/cgroup`) of its containers' processes.
    pub cgroups: Vec<(u32, String)>,
    /// The (GPU index, resource) of each time-sliced GPU it holds a replica of.
    pub shared: Vec<(u32, String)>,
}

/// Resolves GPU indices and MIG instances of `pod` to NVML UUIDs on `node`. Errors name the
/// pod and container.
pub fn resolve_pod(pod: &RawPod, gpus: &[GpuInfo], node: &str) -> Result<ResolvedPod, PodError> {
    let uid = stable_uuid(&pod.key());
    let mut containers = Vec::new();
    let mut statuses = Vec::new();
    let mut cgroups = Vec::new();
    let mut shared = Vec::new();
    for c in &pod.containers {
        let at = |what: &str| PodError::Invalid {
            pod: format!("{} container {}", pod.key(), c.name),
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
            let (g, gi) = parse_mig(m)
                .ok_or_else(|| at(&format!("mig {m:?}: expected <gpu>.<gpu instance id>")))?;
            let (uuid, profile) = gpu(g)?
                .migs
                .get(&gi)
                .ok_or_else(|| at(&format!("mig {m:?}: GPU {g} has no GPU instance {gi}")))?;
            devices
                .entry(format!("nvidia.com/mig-{profile}"))
                .or_default()
                .push(uuid.clone());
        }
        for s in &c.shared {
            let (g, r) = parse_shared(s)
                .ok_or_else(|| at(&format!("shared {s:?}: expected <gpu>::<replica>")))?;
            shared.push((g, resource.to_owned()));
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
            cgroups.push((
                *pid,
                format!(
                    "0::/kubepods.slice/kubepods-burstable.slice/\
                     kubepods-burstable-pod{}.slice/cri-containerd-{cid}.scope\n",
                    uid.replace('-', "_")
                ),
            ));
        }
    }
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
            return Err(PodError::Invalid {
                pod: pod.key(),
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
    let object = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": meta,
        "spec": {
            "nodeName": node,
            "containers": pod.containers.iter().map(|c| json!({"name": c.name, "image": "sim"})).collect::<Vec<_>>(),
        },
        "status": { "phase": "Running", "containerStatuses": statuses },
    });
    Ok(ResolvedPod {
        devices: PodDevices {
            namespace: pod.namespace.clone(),
            name: pod.name.clone(),
            containers,
        },
        object,
        cgroups,
        shared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn device_references_parse() {
        assert_eq!(parse_mig("2.7"), Some((2, 7)));
        assert_eq!(parse_mig("2"), None);
        assert_eq!(parse_shared("4::0"), Some((4, 0)));
        assert_eq!(parse_shared("4:0"), None);
    }
}
