//! The device-to-holder join: which pods, containers, DRA claims and HPC jobs hold which
//! entity, from the kubelet's answer, the pod and ResourceSlice indexes and the HPC job files;
//! and apart, the device-plugin holders whose pod still waits for its metadata.
//!
//! Pure: it reads the sources' published state handed to it and returns a [`HolderMap`]; it must not
//! do I/O, wait on a source or encode anything beyond the label suffixes `labels` renders.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::catalogue::labels;
use crate::snapshot::{EntitySample, HolderMap, Labels};
use crate::sources::hpc::HpcJobs;
use crate::sources::kube::dra::{DraIndex, DraKind};
use crate::sources::kube::meta::PodIndex;
use crate::sources::kubelet::client::{ContainerDevices, KubeletView, PodDevices};
use crate::sources::kubelet::device_id::{DeviceRef, is_gpu_resource, parse_device_id};

use super::holder_labels::{Holder, LabelNames, allocation_suffix, series_suffix};
use super::options::{AttributionOptions, NVIDIA_DRA_DRIVER};

/// Finds entities by each of the keys the kubelet may use.
struct Lookup<'a> {
    gpu_uuid: HashMap<&'a str, usize>,
    mig_uuid: HashMap<&'a str, usize>,
    gpu_index: HashMap<u32, usize>,
    /// (parent GPU UUID, GPU instance id) and (GPU index, GPU instance id).
    mig_by_uuid_gi: HashMap<(&'a str, u32), usize>,
    mig_by_index_gi: HashMap<(u32, u32), usize>,
}

impl<'a> Lookup<'a> {
    fn new(entities: &'a [EntitySample]) -> Self {
        let mut l = Lookup {
            gpu_uuid: HashMap::new(),
            mig_uuid: HashMap::new(),
            gpu_index: HashMap::new(),
            mig_by_uuid_gi: HashMap::new(),
            mig_by_index_gi: HashMap::new(),
        };
        for (i, e) in entities.iter().enumerate() {
            match &e.id.mig {
                None => {
                    l.gpu_uuid.insert(e.id.uuid.as_str(), i);
                    l.gpu_index.insert(e.id.gpu, i);
                }
                Some(m) => {
                    l.mig_uuid.insert(m.uuid.as_str(), i);
                    l.mig_by_uuid_gi
                        .insert((e.id.uuid.as_str(), m.gpu_instance_id), i);
                    l.mig_by_index_gi.insert((e.id.gpu, m.gpu_instance_id), i);
                }
            }
        }
        l
    }

    fn device(&self, d: &DeviceRef) -> Option<usize> {
        match d {
            DeviceRef::GpuUuid(u) => self.gpu_uuid.get(u.as_str()).copied(),
            DeviceRef::MigUuid(u) => self.mig_uuid.get(u.as_str()).copied(),
            DeviceRef::MigLegacy {
                gpu_uuid,
                gpu_instance,
                ..
            } => self
                .mig_by_uuid_gi
                .get(&(gpu_uuid.as_str(), *gpu_instance))
                .copied(),
            DeviceRef::GpuIndex(n) => self.gpu_index.get(n).copied(),
            DeviceRef::MigIndex { gpu, gpu_instance } => {
                self.mig_by_index_gi.get(&(*gpu, *gpu_instance)).copied()
            }
            DeviceRef::Other(s) => self
                .gpu_uuid
                .get(s.as_str())
                .or_else(|| self.mig_uuid.get(s.as_str()))
                .copied(),
        }
    }
}

/// Builds the join; also returns the GPU device IDs that matched no entity.
///
/// Three steps: who holds each entity (the kubelet's pods, their device-plugin devices and
/// DRA claims), the labels of each entity's series and allocations (with its HPC jobs), and
/// the count of each resource.
pub fn build_join(
    opts: &AttributionOptions,
    entities: &[EntitySample],
    view: Option<&KubeletView>,
    pods: Option<&PodIndex>,
    dra: Option<&DraIndex>,
    hpc: Option<&HpcJobs>,
    pending: &BTreeSet<(String, String)>,
) -> (HolderMap, Vec<String>) {
    let lookup = Lookup::new(entities);
    let mut held = Held::new(entities.len());
    for pod in view.iter().flat_map(|v| v.pods.iter()) {
        held.pod(opts, &lookup, pod, dra, pending);
    }
    let mut join = labelled(opts, entities, &mut held.holders, pods, hpc);
    join.resources = resources(opts, held.allocated, view, dra);
    join.waiting = held
        .waiting
        .iter()
        .map(|(i, h)| (*i, allocation_suffix(opts, h, None)))
        .collect();
    join.waiting.sort();
    join.waiting.dedup();
    join.unmatched = held.unmatched.len();
    let mut kept = held.unmatched.clone();
    kept.sort();
    kept.dedup();
    kept.truncate(crate::snapshot::UNMATCHED_KEPT);
    join.unmatched_ids = kept;
    (join, held.unmatched)
}

/// Who holds what, as the kubelet's answer says.
struct Held<'a> {
    /// The holders of each entity, by its index.
    holders: Vec<Vec<Holder<'a>>>,
    /// The device IDs allocated, per resource (device plugins) or DRA driver.
    allocated: BTreeMap<String, usize>,
    /// The allocated device IDs that name no entity.
    unmatched: Vec<String>,
    /// Holders whose pod waits for its metadata: not attributed yet, but known to hold.
    waiting: Vec<(usize, Holder<'a>)>,
}

impl<'a> Held<'a> {
    fn new(entities: usize) -> Self {
        Held {
            holders: (0..entities).map(|_| Vec::new()).collect(),
            allocated: BTreeMap::new(),
            unmatched: Vec::new(),
            waiting: Vec::new(),
        }
    }

    /// One pod's containers: their device-plugin devices, and their DRA claims unless the pod
    /// waits for its metadata.
    fn pod(
        &mut self,
        opts: &AttributionOptions,
        lookup: &Lookup<'_>,
        pod: &'a PodDevices,
        dra: Option<&'a DraIndex>,
        pending: &BTreeSet<(String, String)>,
    ) {
        // Waiting for its metadata (see `settle`): attributed once it is known. Its
        // device-plugin devices are remembered apart, for the Events of a fault meanwhile.
        let waits =
            !pending.is_empty() && pending.contains(&(pod.namespace.clone(), pod.name.clone()));
        for c in &pod.containers {
            self.devices(opts, lookup, pod, c, waits);
            if waits {
                continue;
            }
            let Some(dra) = dra else { continue };
            self.claims(lookup, pod, c, dra);
        }
    }

    /// A container's device-plugin devices of the GPU resources; those of a pod that `waits`
    /// for its metadata are counted nowhere and kept apart.
    fn devices(
        &mut self,
        opts: &AttributionOptions,
        lookup: &Lookup<'_>,
        pod: &'a PodDevices,
        c: &'a ContainerDevices,
        waits: bool,
    ) {
        for (resource, ids) in &c.devices {
            if !is_gpu_resource(resource, &opts.extra_resources) {
                continue;
            }
            if !waits {
                *self.allocated.entry(resource.clone()).or_default() += ids.len();
            }
            for id in ids {
                let parsed = parse_device_id(id);
                let holder = Holder {
                    namespace: &pod.namespace,
                    pod: &pod.name,
                    container: &c.name,
                    resource,
                    replica: parsed.replica,
                    claim: None,
                    dra_device: None,
                };
                match (lookup.device(&parsed.device), waits) {
                    (Some(e), false) => self.holders[e].push(holder),
                    (Some(e), true) => self.waiting.push((e, holder)),
                    (None, false) => self.unmatched.push(id.clone()),
                    (None, true) => {}
                }
            }
        }
    }

    /// A container's DRA claims, found through the ResourceSlices by their device's UUID.
    fn claims(
        &mut self,
        lookup: &Lookup<'_>,
        pod: &'a PodDevices,
        c: &'a ContainerDevices,
        dra: &'a DraIndex,
    ) {
        for claim in &c.claims {
            let Some(dev) = dra.get(&claim.driver, &claim.pool, &claim.device) else {
                // Claims of other drivers (NICs, FPGAs) are not ours to report.
                if claim.driver == NVIDIA_DRA_DRIVER {
                    self.unmatched
                        .push(format!("{}/{}/{}", claim.driver, claim.pool, claim.device));
                }
                continue;
            };
            *self.allocated.entry(claim.driver.clone()).or_default() += 1;
            let found = match dev.kind {
                DraKind::Gpu => lookup.gpu_uuid.get(dev.uuid.as_str()),
                DraKind::Mig => lookup.mig_uuid.get(dev.uuid.as_str()),
            };
            match found {
                Some(&e) => self.holders[e].push(Holder {
                    namespace: &pod.namespace,
                    pod: &pod.name,
                    container: &c.name,
                    resource: &claim.driver,
                    replica: None,
                    claim: Some(claim),
                    dra_device: Some(dev),
                }),
                None => self.unmatched.push(dev.uuid.clone()),
            }
        }
    }
}

/// The labels of each entity (by index in `entities`, its holders in `holders`): its series'
/// pod label variants, times its HPC jobs, its jobs' rows, and one allocation row per holder.
fn labelled(
    opts: &AttributionOptions,
    entities: &[EntitySample],
    holders: &mut [Vec<Holder<'_>>],
    pods: Option<&PodIndex>,
    hpc: Option<&HpcJobs>,
) -> HolderMap {
    let names = LabelNames::new(opts.use_old_namespace);
    let mut join = HolderMap {
        series_labels: Vec::with_capacity(entities.len()),
        ..HolderMap::default()
    };
    for (i, (e, hs)) in entities.iter().zip(holders.iter_mut()).enumerate() {
        hs.sort_by(|a, b| {
            (a.container_key(), a.replica, a.resource).cmp(&(
                b.container_key(),
                b.replica,
                b.resource,
            ))
        });
        hs.dedup_by(|a, b| {
            a.container_key() == b.container_key()
                && a.replica == b.replica
                && a.resource == b.resource
                && a.claim == b.claim
        });
        let variants = pod_variants(opts, &names, hs, pods);
        let jobs = match (hpc, &e.id.mig) {
            (None, _) => &[][..],
            (Some(j), None) => j.for_gpu(e.id.gpu),
            (Some(j), Some(m)) => j.for_instance(e.id.gpu, m.gpu_instance_id),
        };
        for job in jobs {
            let mut s = Labels::new();
            s.push(labels::HPC_JOB.name, job.clone());
            join.jobs.push((i, s));
        }
        join.series_labels.push(with_jobs(variants, jobs));
        for h in hs.iter() {
            join.allocations.push((i, allocation_suffix(opts, h, pods)));
        }
    }
    join
}

/// The pod label variants of an entity's series: one per holder with virtual GPUs, one where a
/// single container holds it, none where several share it (or none holds it).
fn pod_variants(
    opts: &AttributionOptions,
    names: &LabelNames,
    hs: &[Holder<'_>],
    pods: Option<&PodIndex>,
) -> Vec<Labels> {
    let containers: HashSet<_> = hs.iter().map(Holder::container_key).collect();
    if opts.virtual_gpus {
        let mut v: Vec<Labels> = hs
            .iter()
            .map(|h| series_suffix(opts, names, h, pods, true))
            .collect();
        v.dedup();
        v
    } else if containers.len() == 1 {
        hs.first()
            .map(|h| vec![series_suffix(opts, names, h, pods, false)])
            .unwrap_or_default()
    } else {
        Vec::new()
    }
}

/// Each variant once per HPC job, with the job's label (an entity with jobs and no pod label
/// gets one variant per job); the variants as they are where there is no job.
fn with_jobs(variants: Vec<Labels>, jobs: &[String]) -> Vec<Labels> {
    if jobs.is_empty() {
        return variants;
    }
    let variants = if variants.is_empty() {
        vec![Labels::new()]
    } else {
        variants
    };
    variants
        .iter()
        .flat_map(|v| {
            jobs.iter().map(move |job| {
                let mut s = v.clone();
                s.push(labels::HPC_JOB.name, job.clone());
                s
            })
        })
        .collect()
}

/// Each resource as (name, allocatable, allocated): the device IDs `allocated`, with what the
/// kubelet can allocate of each device-plugin GPU resource, and what the NVIDIA DRA driver's
/// ResourceSlices publish on this node.
fn resources(
    opts: &AttributionOptions,
    allocated: BTreeMap<String, usize>,
    view: Option<&KubeletView>,
    dra: Option<&DraIndex>,
) -> Vec<(String, Option<usize>, usize)> {
    let mut resources: BTreeMap<String, (Option<usize>, usize)> =
        allocated.into_iter().map(|(r, n)| (r, (None, n))).collect();
    if let Some(alloc) = view.and_then(|v| v.allocatable.as_ref()) {
        for (r, ids) in alloc {
            if is_gpu_resource(r, &opts.extra_resources) {
                let e = resources.entry(r.clone()).or_default();
                e.0 = Some(e.0.unwrap_or(0) + ids.len());
            }
        }
        // A device-plugin GPU resource the kubelet lists nothing allocatable for: 0.
        for (r, (a, _)) in resources.iter_mut() {
            if is_gpu_resource(r, &opts.extra_resources) {
                a.get_or_insert(0);
            }
        }
    }
    // DRA: what the driver's ResourceSlices publish on this node is what can be allocated.
    if let Some(dra) = dra {
        for (driver, _, _, _) in dra.iter() {
            if driver == NVIDIA_DRA_DRIVER {
                let e = resources.entry(driver.to_owned()).or_default();
                e.0 = Some(e.0.unwrap_or(0) + 1);
            }
        }
    }
    resources.into_iter().map(|(r, (a, n))| (r, a, n)).collect()
}
