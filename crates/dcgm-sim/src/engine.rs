//! The simulated host engine: one loaded scenario with its seed and clock, and DCGM's state
//! on top of it (entity groups, field groups, watches, the last manual update). It answers
//! every [`Request`] with DCGM's semantics — version words and pointers are the `ffi` layer's
//! business, sockets the `server`'s and `remote`'s.
//!
//! The GPUs, UUIDs, MIG layout and workload are the NVML simulator's for the same scenario,
//! seed and scenario time; profiling values come from `prof`. Entity ids are DCGM's own: a
//! GPU is its index, the k-th GPU instance of GPU g is `g * 8 + k` (k over the instance ids
//! the scenario ever gives it, in order), the compute instance of MIG device `uid` of GPU g is
//! `g * 8 + uid`.
//!
//! Making and checking watches is `watches`'s part. The scenario's `[[dcgm_faults]]` act here:
//! a refused watch, a blank field, a hang; the
//! `server` asks [`Engine::hostengine_away`] (embedded mode has no host engine to lose).

use std::collections::BTreeMap;

use dcgm_abi as abi;
use nvml_sim::physics;
use nvml_sim::scenario::{DcgmFault, DcgmFaultKind, Gpu, Scenario};
use nvml_sim::sim::Clock;

use crate::health;
use crate::mig::{abi_no_instance, ci_profile_id, gi_profile_id};
use crate::prof::{self, ProfValue};
use crate::proto::{Attributes, Entity, MigEntry, Reply, Request, Response, Val, Value};
use crate::switch::{self, Traffic};

mod watches;

/// DCGM's stride of instance entity ids per GPU (`DCGM_MAX_INSTANCES_PER_GPU`).
pub const INSTANCES_PER_GPU: u32 = 8;
/// `DCGM_GROUP_ALL_GPUS`: a group id standing for every GPU.
pub const GROUP_ALL_GPUS: u64 = 0x7fff_ffff;
/// The most groups or field groups one engine holds (DCGM's own limit is 64 field groups).
pub const MAX_GROUPS: usize = 256;
/// `DCGM_FI_DEV_NAME`, `DCGM_FI_DEV_UUID`.
pub const FI_DEV_NAME: u16 = 50;
pub const FI_DEV_UUID: u16 = 54;
/// The largest field id DCGM 4.x defines, roughly (`DCGM_FI_MAX_FIELDS`).
pub const MAX_FIELD_ID: u16 = 1800;
/// `DCGM_STR_NOT_SUPPORTED`.
pub const STR_NOT_SUPPORTED: &str = "<<<NOT_SUPPORTED>>>";
/// The DCGM version this library claims.
pub const DCGM_VERSION: &str = "4.2.3";
/// The driver version the simulated node reports.
pub const DRIVER_VERSION: &str = "570.124.06";

/// A watch's parameters (kept as DCGM keeps them; the simulator computes values on demand).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Watch {
    pub freq_us: i64,
    pub keep_age_s: f64,
    pub keep_samples: i32,
}

/// The simulated host engine.
#[derive(Debug)]
pub struct Engine {
    pub sc: Scenario,
    pub seed: u64,
    pub clock: Clock,
    /// `DCGM_OPERATION_MODE_MANUAL`: values are those of the last `UpdateAll`.
    pub manual: bool,
    last_update: Option<f64>,
    groups: BTreeMap<u64, Vec<Entity>>,
    field_groups: BTreeMap<u64, Vec<u16>>,
    watches: BTreeMap<(Entity, u16), Watch>,
    /// Health watches per group (`dcgmHealthSet`'s mask).
    health: BTreeMap<u64, u32>,
    next_id: u64,
    /// The NVSwitch chips' traffic integral.
    traffic: Traffic,
}

/// The build-information string of `dcgmVersionInfo`.
pub fn build_info() -> String {
    // DCGM_SIM_VERSION stands in for another DCGM release (e.g. 3.3.9), so that a client's
    // version check can be tried; a value with a separator is ignored.
    let version = std::env::var("DCGM_SIM_VERSION")
        .ok()
        .filter(|v| !v.is_empty() && !v.contains([';', ':']))
        .unwrap_or_else(|| DCGM_VERSION.to_owned());
    format!(
        "version:{version};arch:{};buildtype:Release;buildplatform:Linux;commit:dcgm-sim;\
         branch:sim;driver:{DRIVER_VERSION}",
        std::env::consts::ARCH
    )
}

impl Engine {
    /// An engine for `sc` with noise `seed`; `frozen` freezes its clock.
    pub fn new(sc: Scenario, seed: u64, frozen: Option<f64>) -> Self {
        Self {
            sc,
            seed,
            clock: Clock::new(frozen),
            manual: false,
            last_update: None,
            groups: BTreeMap::new(),
            field_groups: BTreeMap::new(),
            watches: BTreeMap::new(),
            health: BTreeMap::new(),
            next_id: 1,
            traffic: Traffic::default(),
        }
    }

    /// Scenario time now.
    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    /// Whether the host engine is away at `t` (it drops connections and refuses new ones).
    pub fn hostengine_away(&self, t: f64) -> bool {
        self.faults_at(DcgmFaultKind::HostengineAway, t)
            .next()
            .is_some()
    }

    /// The scenario's DCGM faults of `kind` active at `t`.
    fn faults_at(&self, kind: DcgmFaultKind, t: f64) -> impl Iterator<Item = &DcgmFault> {
        self.sc
            .dcgm_faults
            .iter()
            .filter(move |f| f.active(kind, t))
    }

    /// A `hang` fault: how long a call made at `t` blocks.
    fn hang_left(&self, t: f64) -> Option<f64> {
        self.faults_at(DcgmFaultKind::Hang, t)
            .map(|f| f.window.until - t)
            .reduce(f64::max)
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// GPUs DCGM sees at `t`: enumerated and not fallen off the bus.
    fn gpu_ids(&self, t: f64) -> Vec<u32> {
        self.sc
            .gpus
            .iter()
            .filter(|g| g.present(t) && !g.is_lost(t))
            .map(|g| g.index as u32)
            .collect()
    }

    fn live_gpu(&self, id: u32, t: f64) -> Option<&Gpu> {
        self.sc
            .gpu(id as usize)
            .filter(|g| g.present(t) && !g.is_lost(t))
    }

    /// The GPU-instance ids a GPU ever has, in order (the k of its GI entity ids).
    fn gi_ids(gpu: &Gpu) -> Vec<u32> {
        let mut ids: Vec<u32> = gpu.instances.iter().map(|i| i.gi).collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// (GPU index, MIG device uid) an entity stands for at `t`; a GPU instance stands for its
    /// first MIG device (as NVML's `nvmlGpmMigSampleGet` picks it).
    pub fn resolve(&self, e: Entity, t: f64) -> Option<(usize, Option<usize>)> {
        match e.group {
            abi::DCGM_FE_GPU => self.live_gpu(e.id, t).map(|g| (g.index, None)),
            abi::DCGM_FE_GPU_I => {
                let gpu = self.live_gpu(e.id / INSTANCES_PER_GPU, t)?;
                let gi = *Self::gi_ids(gpu).get((e.id % INSTANCES_PER_GPU) as usize)?;
                let layout = gpu.layout_at(t)?;
                let m = layout
                    .members
                    .iter()
                    .find(|m| gpu.instances.get(m.uid).is_some_and(|i| i.gi == gi))?;
                Some((gpu.index, Some(m.uid)))
            }
            abi::DCGM_FE_GPU_CI => {
                let gpu = self.live_gpu(e.id / INSTANCES_PER_GPU, t)?;
                let uid = (e.id % INSTANCES_PER_GPU) as usize;
                gpu.member_at(uid, t)?;
                Some((gpu.index, Some(uid)))
            }
            _ => None,
        }
    }

    /// Every MIG entity at `t`: GPU instances, then their compute instances.
    pub fn hierarchy(&self, t: f64) -> Vec<MigEntry> {
        let mut out = Vec::new();
        for gpu in self
            .sc
            .gpus
            .iter()
            .filter(|g| g.present(t) && !g.is_lost(t))
        {
            let Some(layout) = gpu.layout_at(t) else {
                continue;
            };
            let g = gpu.index as u32;
            let gis = Self::gi_ids(gpu);
            for (k, gi) in gis.iter().enumerate() {
                let members: Vec<usize> = layout
                    .members
                    .iter()
                    .map(|m| m.uid)
                    .filter(|u| gpu.instances.get(*u).is_some_and(|i| i.gi == *gi))
                    .collect();
                let Some(first) = members.first().and_then(|u| gpu.instances.get(*u)) else {
                    continue;
                };
                let gi_entity = Entity {
                    group: abi::DCGM_FE_GPU_I,
                    id: g * INSTANCES_PER_GPU + k as u32,
                };
                let slices: u32 = members
                    .iter()
                    .filter_map(|u| gpu.instances.get(*u))
                    .map(|i| i.profile.compute_slices)
                    .sum();
                out.push(MigEntry {
                    entity: gi_entity,
                    parent: Entity {
                        group: abi::DCGM_FE_GPU,
                        id: g,
                    },
                    gpu_uuid: gpu.uuid.clone(),
                    gpu_index: g,
                    instance_id: *gi,
                    compute_instance_id: abi_no_instance(),
                    profile_id: gi_profile_id(first.profile.compute_slices),
                    slices: slices.max(first.profile.compute_slices),
                });
                for u in members {
                    let Some(inst) = gpu.instances.get(u) else {
                        continue;
                    };
                    out.push(MigEntry {
                        entity: Entity {
                            group: abi::DCGM_FE_GPU_CI,
                            id: g * INSTANCES_PER_GPU + u as u32,
                        },
                        parent: gi_entity,
                        gpu_uuid: gpu.uuid.clone(),
                        gpu_index: g,
                        instance_id: inst.gi,
                        compute_instance_id: inst.ci,
                        profile_id: ci_profile_id(inst.profile.compute_slices),
                        slices: inst.profile.compute_slices,
                    });
                }
            }
        }
        out
    }

    fn attributes(&self, id: u32, t: f64) -> Result<Attributes, i32> {
        let gpu = self.live_gpu(id, t).ok_or(abi::DCGM_ST_BADPARAM)?;
        let m = gpu.model;
        let mem = physics::gpu_memory(&self.sc, self.seed, gpu.index, t);
        let mib = |b: u64| u32::try_from(b / physics::MIB).unwrap_or(u32::MAX);
        Ok(Attributes {
            name: m.name.to_string(),
            brand: "NVIDIA".to_string(),
            uuid: gpu.uuid.clone(),
            serial: gpu.serial.clone(),
            pci_bus_id: gpu.pci.bus_id(),
            vbios: m.vbios.to_string(),
            inforom: m.inforom_image.to_string(),
            pci_device_id: m.pci_device_id,
            pci_subsystem_id: m.pci_subsystem_id,
            driver_version: DRIVER_VERSION.to_string(),
            mig_enabled: gpu.mig_enabled,
            fb_total_mib: mem.map_or(0, |x| mib(x.total)),
            fb_used_mib: mem.map_or(0, |x| mib(x.used)),
            fb_free_mib: mem.map_or(0, |x| mib(x.free)),
            bar1_mib: u32::try_from(m.bar1_mib).unwrap_or(u32::MAX),
            power_limit_w: gpu.power_limit_at(t).round() as u32,
            default_power_limit_w: m.power_limit_w.round() as u32,
            slowdown_c: m.slowdown_c.round() as u32,
        })
    }

    /// Answers one call at scenario time now.
    /// A call made inside a `hang` fault returns only when the window ends.
    pub fn handle(&mut self, req: Request) -> Response {
        let t = self.now();
        if let Some(left) = self.hang_left(t) {
            std::thread::sleep(std::time::Duration::from_secs_f64(left));
        }
        self.handle_at(req, t)
    }

    /// Answers one call at scenario time `t`.
    pub fn handle_at(&mut self, req: Request, t: f64) -> Response {
        match req {
            Request::HostengineVersion => Ok(Reply::Version(build_info())),
            Request::Devices => Ok(Reply::Devices(self.gpu_ids(t))),
            Request::EntityGroupEntities { group } => match group {
                abi::DCGM_FE_GPU => Ok(Reply::Devices(self.gpu_ids(t))),
                abi::DCGM_FE_SWITCH => Ok(Reply::Devices(switch::ids(&self.sc))),
                _ => Err(abi::DCGM_ST_NOT_SUPPORTED),
            },
            Request::Attributes { gpu } => {
                Ok(Reply::Attributes(Box::new(self.attributes(gpu, t)?)))
            }
            Request::Hierarchy => Ok(Reply::Hierarchy(self.hierarchy(t))),
            Request::GroupCreate { kind, .. } => {
                let members = match kind {
                    abi::DCGM_GROUP_EMPTY => Vec::new(),
                    abi::DCGM_GROUP_DEFAULT => self
                        .gpu_ids(t)
                        .into_iter()
                        .map(|id| Entity {
                            group: abi::DCGM_FE_GPU,
                            id,
                        })
                        .collect(),
                    _ => return Err(abi::DCGM_ST_BADPARAM),
                };
                if self.groups.len() >= MAX_GROUPS {
                    return Err(abi::DCGM_ST_MAX_LIMIT);
                }
                let id = self.take_id();
                self.groups.insert(id, members);
                Ok(Reply::Id(id))
            }
            Request::GroupAdd { group, entity } => {
                let known = match entity.group {
                    abi::DCGM_FE_SWITCH => switch::find(&self.sc, entity.id).is_some(),
                    abi::DCGM_FE_LINK => switch_port(&self.sc, entity.id).is_some(),
                    _ => self.resolve(entity, t).is_some(),
                };
                if !known {
                    return Err(abi::DCGM_ST_BADPARAM);
                }
                let members = self
                    .groups
                    .get_mut(&group)
                    .ok_or(abi::DCGM_ST_NOT_CONFIGURED)?;
                if !members.contains(&entity) {
                    members.push(entity);
                }
                Ok(Reply::Done)
            }
            Request::GroupDestroy { group } => {
                self.health.remove(&group);
                self.groups
                    .remove(&group)
                    .map(|_| Reply::Done)
                    .ok_or(abi::DCGM_ST_NOT_CONFIGURED)
            }
            Request::FieldGroupCreate { fields, .. } => {
                if fields.is_empty()
                    || fields.len() > abi::DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP
                    || fields.iter().any(|f| *f == 0 || *f > MAX_FIELD_ID)
                {
                    return Err(abi::DCGM_ST_BADPARAM);
                }
                if self.field_groups.len() >= MAX_GROUPS {
                    return Err(abi::DCGM_ST_MAX_LIMIT);
                }
                let id = self.take_id();
                self.field_groups.insert(id, fields);
                Ok(Reply::Id(id))
            }
            Request::FieldGroupDestroy { id } => self
                .field_groups
                .remove(&id)
                .map(|_| Reply::Done)
                .ok_or(abi::DCGM_ST_NOT_CONFIGURED),
            Request::Watch {
                group,
                field_group,
                freq_us,
                keep_age_s,
                keep_samples,
            } => {
                let w = Watch {
                    freq_us,
                    keep_age_s,
                    keep_samples,
                };
                self.watch(group, field_group, w, t).map(|()| Reply::Done)
            }
            Request::Unwatch { group, field_group } => {
                let (entities, fields) = self.group_pair(group, field_group, t)?;
                for e in &entities {
                    for f in &fields {
                        self.watches.remove(&(*e, *f));
                    }
                }
                Ok(Reply::Done)
            }
            Request::UpdateAll => {
                self.last_update = Some(t);
                Ok(Reply::Done)
            }
            Request::Latest { entities, fields } => Ok(Reply::Values(
                entities
                    .iter()
                    .flat_map(|e| fields.iter().map(move |f| (*e, *f)))
                    .map(|(e, f)| self.latest(e, f, t))
                    .collect(),
            )),
            Request::MetricGroups { gpu } => {
                let g = self.live_gpu(gpu, t).ok_or(abi::DCGM_ST_BADPARAM)?;
                let groups = prof::metric_groups(g.model);
                if groups.is_empty() {
                    return Err(abi::DCGM_ST_PROFILING_NOT_SUPPORTED);
                }
                Ok(Reply::MetricGroups(groups))
            }
            Request::HealthSet { group, systems } => {
                if group != GROUP_ALL_GPUS && !self.groups.contains_key(&group) {
                    return Err(abi::DCGM_ST_NOT_CONFIGURED);
                }
                self.health.insert(group, systems);
                Ok(Reply::Done)
            }
            Request::HealthGet { group } => Ok(Reply::Systems(
                self.health.get(&group).copied().unwrap_or(0),
            )),
            Request::HealthCheck { group } => self.health_check(group, t),
            Request::NvLinkStatus => Ok(Reply::LinkStatus(
                self.sc
                    .nvswitches
                    .iter()
                    .map(|sw| (sw.id, switch::port_states(&self.sc, sw, t)))
                    .collect(),
            )),
            Request::Census => Ok(Reply::Census {
                groups: self.groups.len(),
                field_groups: self.field_groups.len(),
                watches: self.watches.len(),
            }),
        }
    }

    /// `dcgmHealthCheck` on a group: the incidents of its GPUs for the systems it watches.
    fn health_check(&self, group: u64, t: f64) -> Response {
        let systems = *self.health.get(&group).ok_or(abi::DCGM_ST_NOT_CONFIGURED)?;
        let members = self.members(group, t).unwrap_or_default();
        let mut incidents = Vec::new();
        for e in members.iter().filter(|e| e.group == abi::DCGM_FE_GPU) {
            if let Some(gpu) = self.sc.gpu(e.id as usize).filter(|g| g.present(t)) {
                incidents.extend(health::incidents(&self.sc, gpu, systems, t));
            }
        }
        incidents.truncate(abi::DCGM_GROUP_MAX_ENTITIES_V2);
        Ok(Reply::Health(health::overall(&incidents), incidents))
    }

    /// The latest value of one field of one entity at `t`.
    fn latest(&self, e: Entity, field: u16, t: f64) -> Value {
        let ts = self.clock.unix_us(t);
        let blank = |status: i32| Value {
            entity: e,
            field,
            status,
            ts: 0,
            val: blank_of(field, status == abi::DCGM_ST_NOT_SUPPORTED),
        };
        if !self.is_watched(e, field) {
            return blank(abi::DCGM_ST_NOT_WATCHED);
        }
        let sample_t = if self.manual {
            match self.last_update {
                Some(u) => u,
                None => return blank(abi::DCGM_ST_NO_DATA),
            }
        } else {
            t
        };
        let val = if e.group == abi::DCGM_FE_SWITCH {
            self.traffic
                .value(&self.sc, self.seed, e.id, field, sample_t)
        } else if e.group == abi::DCGM_FE_LINK {
            let port = switch_port(&self.sc, e.id).unwrap_or((u32::MAX, 0));
            self.traffic
                .port_value(&self.sc, self.seed, port, field, sample_t)
        } else {
            let Some((g, uid)) = self.resolve(e, sample_t) else {
                return blank(abi::DCGM_ST_NO_DATA);
            };
            let Some(gpu) = self.sc.gpu(g) else {
                return blank(abi::DCGM_ST_NO_DATA);
            };
            if self
                .faults_at(DcgmFaultKind::Blank, sample_t)
                .any(|f| f.covers(g, field))
            {
                return Value {
                    ts: self.clock.unix_us(sample_t).min(ts),
                    ..blank(abi::DCGM_ST_OK)
                };
            }
            match field {
                FI_DEV_UUID => Some(Val::Str(match uid {
                    Some(u) => gpu
                        .instances
                        .get(u)
                        .map_or_else(String::new, |i| i.uuid.clone()),
                    None => gpu.uuid.clone(),
                })),
                FI_DEV_NAME => Some(Val::Str(gpu.model.name.to_string())),
                f if prof::is_prof(f) && prof::group_of(gpu.model, f).is_some() => {
                    prof::value(&self.sc, self.seed, g, uid, sample_t, f).map(|v| match v {
                        ProfValue::Ratio(r) => Val::Dbl(r),
                        ProfValue::Bytes(b) => Val::Int(b),
                    })
                }
                _ => None,
            }
        };
        match val {
            Some(val) => Value {
                entity: e,
                field,
                status: abi::DCGM_ST_OK,
                ts: self.clock.unix_us(sample_t).min(ts),
                val,
            },
            None => blank(abi::DCGM_ST_NOT_SUPPORTED),
        }
    }
}

/// The (switch, port) of a `DCGM_FE_LINK` entity id when it names an up port of a switch of
/// the scenario (links under a GPU are not served).
fn switch_port(sc: &Scenario, raw: u32) -> Option<(u32, u32)> {
    let (group, id, port) = abi::link_parts(raw);
    let sw = switch::find(sc, id).filter(|_| group == abi::DCGM_FE_SWITCH)?;
    (port < sw.links).then_some((id, port))
}

/// `DCGM_FT_*` of a field this simulator knows (int64 for the rest).
pub fn field_type(field: u16) -> u16 {
    match field {
        FI_DEV_NAME | FI_DEV_UUID | switch::FI_UUID | switch::FI_FIRMWARE_VERSION => {
            abi::DCGM_FT_STRING
        }
        1001..=1008 => abi::DCGM_FT_DOUBLE,
        _ => abi::DCGM_FT_INT64,
    }
}

/// The blank of a field's type: "no value", or "not supported" when `unsupported`.
pub fn blank_of(field: u16, unsupported: bool) -> Val {
    match (field_type(field), unsupported) {
        (abi::DCGM_FT_STRING, false) => Val::Str(abi::DCGM_STR_BLANK.to_string()),
        (abi::DCGM_FT_STRING, true) => Val::Str(STR_NOT_SUPPORTED.to_string()),
        (abi::DCGM_FT_DOUBLE, false) => Val::Dbl(abi::DCGM_FP64_BLANK),
        (abi::DCGM_FT_DOUBLE, true) => Val::Dbl(abi::DCGM_FP64_NOT_SUPPORTED),
        (_, false) => Val::Int(abi::DCGM_INT64_BLANK),
        (_, true) => Val::Int(abi::DCGM_INT64_NOT_SUPPORTED),
    }
}
