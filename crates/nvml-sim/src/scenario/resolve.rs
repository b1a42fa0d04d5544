//! Resolution of GPUs, workloads, processes and MIG layouts from the raw schema, with
//! their validation and the defaults for identity (UUID, serial, PCI) and GPU instance ids.

use std::collections::{BTreeMap, HashSet};

use toml::Spanned;

use super::raw::{RawGpu, RawMig, RawProcess, RawWorkload};
use super::{
    Ctx, Gpu, Instance, Layout, Member, Pci, Process, ScenarioError, Target, Unsupported, Window,
};
use crate::curves::{self, Kind, Workload};
use crate::model::{self, MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES};

pub(super) fn resolve_gpu(
    ctx: &Ctx<'_>,
    node: &str,
    index: usize,
    raw: &Spanned<RawGpu>,
) -> Result<Gpu, ScenarioError> {
    let g = raw.get_ref();
    let model = model::find(g.model.get_ref()).ok_or_else(|| {
        ctx.err(
            Some(g.model.span()),
            format!(
                "unknown model \"{}\" (known models: {})",
                g.model.get_ref(),
                model::keys()
            ),
        )
    })?;
    let idx = index as u64;
    let uuid = match &g.uuid {
        Some(u) => {
            let s = u.get_ref();
            if !s.starts_with("GPU-") || s.len() < 8 || s.len() > 80 {
                return Err(ctx.err(
                    Some(u.span()),
                    format!("GPU {index}: uuid \"{s}\" must look like \"GPU-<hex digits>\""),
                ));
            }
            s.clone()
        }
        None => format!(
            "GPU-{}",
            uuid_body(curves::key(&[curves::hash_str(node), idx, 0x0067_7075]))
        ),
    };
    let serial = g.serial.clone().unwrap_or_else(|| {
        let n = curves::key(&[curves::hash_str(node), idx, 0x7365_7269_616c]) % 100_000;
        format!("{}{n:05}", model.serial_prefix)
    });
    let pci = match &g.pci_bus {
        Some(p) => Pci::parse(p.get_ref()).ok_or_else(|| {
            ctx.err(
                Some(p.span()),
                format!(
                    "GPU {index}: pci_bus \"{}\" is not a PCI address like \"0000:18:00.0\"",
                    p.get_ref()
                ),
            )
        })?,
        None => default_pci(index),
    };
    let power_limit_w = match &g.power_limit_w {
        Some(w) => {
            let v = *w.get_ref();
            if !(v > model.idle_w && v <= model.power_limit_w * 1.5) {
                return Err(ctx.err(
                    Some(w.span()),
                    format!(
                        "GPU {index}: power_limit_w {v} is outside {}..{} W for {}",
                        model.idle_w,
                        model.power_limit_w * 1.5,
                        model.key
                    ),
                ));
            }
            v
        }
        None => model.power_limit_w,
    };
    let vgpu_licence = match &g.vgpu_licence {
        None => None,
        Some(l) => match l.get_ref().as_str() {
            "licensed" => Some(true),
            "unlicensed" => Some(false),
            other => {
                return Err(ctx.err(
                    Some(l.span()),
                    format!(
                        "GPU {index}: vgpu_licence \"{other}\" must be \"licensed\" or \"unlicensed\""
                    ),
                ));
            }
        },
    };
    let mig_enabled = g.mig.is_some();
    let mut gpu = Gpu {
        index,
        model,
        uuid,
        serial,
        pci,
        power_limit_w,
        workload: Workload::IDLE,
        processes: Vec::new(),
        mig_enabled,
        instances: Vec::new(),
        layouts: Vec::new(),
        lost: Vec::new(),
        hangs: Vec::new(),
        unsupported: Vec::new(),
        bumps: Vec::new(),
        power_caps: Vec::new(),
        thermal: Vec::new(),
        power_brakes: Vec::new(),
        appear_at: None,
        unbound: Vec::new(),
        links_down: Vec::new(),
        fabric: Vec::new(),
        minor_number: g.minor_number.unwrap_or(index as u32),
        vgpu_licence,
    };
    if let Some(w) = &g.workload {
        if mig_enabled {
            return Err(ctx.err(
                Some(w.span()),
                format!(
                    "GPU {index} is in MIG mode: put workloads on its `mig` instances, not on \
                     the GPU"
                ),
            ));
        }
        gpu.workload = resolve_workload(ctx, w)?;
    }
    if !g.processes.is_empty() && mig_enabled {
        return Err(ctx.err(
            Some(g.processes[0].span()),
            format!("GPU {index} is in MIG mode: put processes on its `mig` instances"),
        ));
    }
    gpu.processes = resolve_processes(ctx, &g.processes, model.memory_mib)?;
    if let Some(list) = &g.mig {
        if !model.mig_capable() {
            return Err(ctx.err(
                Some(raw.span()),
                format!("GPU {index}: model {} does not support MIG", model.key),
            ));
        }
        let layout = resolve_layout(ctx, &mut gpu, list, f64::NEG_INFINITY)?;
        gpu.layouts.push(layout);
    }
    for u in &g.unsupported {
        let target = Target::parse(u.get_ref())
            .map_err(|m| ctx.err(Some(u.span()), format!("GPU {index}: {m}")))?;
        gpu.unsupported.push(Unsupported {
            target,
            window: Window {
                from: f64::NEG_INFINITY,
                until: f64::INFINITY,
            },
        });
    }
    Ok(gpu)
}

/// Default PCI placement: the bus numbers of an 8-GPU HGX board, one domain per 8 GPUs.
pub(super) fn default_pci(index: usize) -> Pci {
    const BUSES: [u32; 8] = [0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB];
    Pci {
        domain: (index / BUSES.len()) as u32,
        bus: BUSES[index % BUSES.len()],
        device: 0,
        function: 0,
    }
}

/// Formats a key as the 8-4-4-4-12 hex body of a UUID.
pub(super) fn uuid_body(k: u64) -> String {
    let a = curves::mix(k, 1);
    let b = curves::mix(k, 2);
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xFFFF,
        a & 0xFFFF,
        b >> 48,
        b & 0xFFFF_FFFF_FFFF
    )
}

pub(super) fn resolve_workload(
    ctx: &Ctx<'_>,
    raw: &Spanned<RawWorkload>,
) -> Result<Workload, ScenarioError> {
    let w = raw.get_ref();
    let kind = Kind::parse(w.kind.get_ref()).ok_or_else(|| {
        ctx.err(
            Some(w.kind.span()),
            format!(
                "unknown workload kind \"{}\" (expected idle, training, inference or bursty)",
                w.kind.get_ref()
            ),
        )
    })?;
    let (level, amplitude, period, duty, memory) = kind.defaults();
    let fraction = |name: &str, v: Option<f64>, default: f64| -> Result<f64, ScenarioError> {
        let v = v.unwrap_or(default);
        if (0.0..=1.0).contains(&v) {
            Ok(v)
        } else {
            Err(ctx.err(
                Some(raw.span()),
                format!("workload {name} = {v} is outside 0..1"),
            ))
        }
    };
    let period_v = w.period.unwrap_or(period);
    if !(period_v >= 1.0 && period_v.is_finite()) {
        return Err(ctx.err(
            Some(raw.span()),
            format!("workload period = {period_v} must be at least 1 second"),
        ));
    }
    if w.duty.is_some() && kind != Kind::Bursty {
        return Err(ctx.err(
            Some(raw.span()),
            "workload duty only applies to kind \"bursty\"",
        ));
    }
    let duty_v = fraction("duty", w.duty, duty)?;
    if kind == Kind::Bursty && duty_v <= 0.0 {
        return Err(ctx.err(Some(raw.span()), "bursty workload needs duty > 0"));
    }
    Ok(Workload {
        kind,
        level: fraction("level", w.level, level)?,
        amplitude: fraction("amplitude", w.amplitude, amplitude)?,
        period: period_v,
        duty: duty_v,
        memory: fraction("memory", w.memory, memory)?,
        video: fraction("video", w.video, 0.0)?,
    })
}

pub(super) fn resolve_processes(
    ctx: &Ctx<'_>,
    raw: &[Spanned<RawProcess>],
    memory_mib: u64,
) -> Result<Vec<Process>, ScenarioError> {
    let mut out: Vec<Process> = Vec::with_capacity(raw.len());
    for p in raw {
        let r = p.get_ref();
        if r.pid == 0 {
            return Err(ctx.err(Some(p.span()), "process pid must not be 0"));
        }
        if out.iter().any(|q| q.pid == r.pid) {
            return Err(ctx.err(
                Some(p.span()),
                format!("process pid {} listed twice", r.pid),
            ));
        }
        if let Some(m) = r.memory_mib
            && m > memory_mib
        {
            return Err(ctx.err(
                Some(p.span()),
                format!(
                    "process {} uses {m} MiB, more than the {memory_mib} MiB available",
                    r.pid
                ),
            ));
        }
        out.push(Process {
            pid: r.pid,
            memory_mib: r.memory_mib,
        });
    }
    Ok(out)
}

/// Resolves a MIG instance list into a layout, registering new instance identities on `gpu`.
pub(super) fn resolve_layout(
    ctx: &Ctx<'_>,
    gpu: &mut Gpu,
    list: &[Spanned<RawMig>],
    from: f64,
) -> Result<Layout, ScenarioError> {
    let model = gpu.model;
    let index = gpu.index;
    let mut compute = 0;
    let mut memory = 0;
    let mut profiles = Vec::with_capacity(list.len());
    for m in list {
        let r = m.get_ref();
        let (_, profile) = model.mig_profile(r.profile.get_ref()).ok_or_else(|| {
            ctx.err(
                Some(r.profile.span()),
                format!(
                    "GPU {index}: MIG profile \"{}\" is not valid for {} (valid: {})",
                    r.profile.get_ref(),
                    model.key,
                    model.mig_profile_names()
                ),
            )
        })?;
        compute += profile.compute_slices;
        memory += profile.memory_slices;
        profiles.push(profile);
    }
    let span = list.first().map(|m| m.span());
    if compute > MIG_COMPUTE_SLICES {
        return Err(ctx.err(
            span,
            format!(
                "GPU {index}: MIG instances use {compute} compute slices, more than the \
                 {MIG_COMPUTE_SLICES} of a {}",
                model.key
            ),
        ));
    }
    if memory > MIG_MEMORY_SLICES {
        return Err(ctx.err(
            span,
            format!(
                "GPU {index}: MIG instances use {memory} memory slices, more than the \
                 {MIG_MEMORY_SLICES} of a {}",
                model.key
            ),
        ));
    }
    // Explicit GPU-instance ids first, then defaults in placement order.
    let mut used: HashSet<u32> = HashSet::new();
    for m in list {
        if let Some(gi) = m.get_ref().gi {
            if gi > 14 {
                return Err(ctx.err(
                    Some(m.span()),
                    format!("GPU {index}: GPU instance id {gi} is out of range 0..14"),
                ));
            }
            if !used.insert(gi) {
                return Err(ctx.err(
                    Some(m.span()),
                    format!("GPU {index}: GPU instance id {gi} used twice"),
                ));
            }
        }
    }
    let mut members = Vec::with_capacity(list.len());
    for (m, profile) in list.iter().zip(profiles) {
        let r = m.get_ref();
        let gi = match r.gi {
            Some(gi) => gi,
            None => {
                let gi = profile
                    .gi_ids
                    .iter()
                    .copied()
                    .find(|id| !used.contains(id))
                    .ok_or_else(|| {
                        ctx.err(
                            Some(m.span()),
                            format!(
                                "GPU {index}: no free GPU instance id for profile {} (give \
                                 `gi = <id>`)",
                                profile.name
                            ),
                        )
                    })?;
                used.insert(gi);
                gi
            }
        };
        let ci = r.ci.unwrap_or(0);
        if ci > 7 {
            return Err(ctx.err(
                Some(m.span()),
                format!("GPU {index}: compute instance id {ci} is out of range 0..7"),
            ));
        }
        let uid = match gpu
            .instances
            .iter()
            .position(|i| i.gi == gi && i.ci == ci && std::ptr::eq(i.profile, profile))
        {
            Some(uid) => uid,
            None => {
                let uuid = match &r.uuid {
                    Some(u) if u.starts_with("MIG-") && u.len() >= 8 => u.clone(),
                    Some(u) => {
                        return Err(ctx.err(
                            Some(m.span()),
                            format!("MIG uuid \"{u}\" must look like \"MIG-<hex digits>\""),
                        ));
                    }
                    None => format!(
                        "MIG-{}",
                        uuid_body(curves::key(&[
                            curves::hash_str(&gpu.uuid),
                            u64::from(gi),
                            u64::from(ci),
                            curves::hash_str(profile.name),
                        ]))
                    ),
                };
                gpu.instances.push(Instance {
                    gi,
                    ci,
                    profile,
                    uuid,
                });
                gpu.instances.len() - 1
            }
        };
        let workload = match &r.workload {
            Some(w) => resolve_workload(ctx, w)?,
            None => Workload::IDLE,
        };
        let processes = resolve_processes(ctx, &r.processes, profile.memory_mib)?;
        members.push(Member {
            uid,
            workload,
            processes,
        });
    }
    members.sort_by_key(|m| {
        gpu.instances
            .get(m.uid)
            .map_or((u32::MAX, u32::MAX), |i| (i.gi, i.ci))
    });
    Ok(Layout { from, members })
}

pub(super) fn check_unique_identities(
    ctx: &Ctx<'_>,
    raw: &[Spanned<RawGpu>],
    gpus: &[Gpu],
) -> Result<(), ScenarioError> {
    let mut uuids: BTreeMap<&str, usize> = BTreeMap::new();
    let mut pcis: BTreeMap<Pci, usize> = BTreeMap::new();
    for (g, r) in gpus.iter().zip(raw) {
        if let Some(other) = uuids.insert(&g.uuid, g.index) {
            return Err(ctx.err(
                Some(r.span()),
                format!(
                    "GPU {}: uuid {} already used by GPU {other}",
                    g.index, g.uuid
                ),
            ));
        }
        if let Some(other) = pcis.insert(g.pci, g.index) {
            return Err(ctx.err(
                Some(r.span()),
                format!(
                    "GPU {}: pci_bus {} already used by GPU {other}",
                    g.index,
                    g.pci.bus_id_legacy()
                ),
            ));
        }
    }
    Ok(())
}

pub(super) fn check_mig_uuids(ctx: &Ctx<'_>, gpus: &[Gpu]) -> Result<(), ScenarioError> {
    let mut seen: HashSet<&str> = gpus.iter().map(|g| g.uuid.as_str()).collect();
    for g in gpus {
        for i in &g.instances {
            if !seen.insert(&i.uuid) {
                return Err(ctx.err(
                    None,
                    format!("GPU {}: MIG uuid {} is used twice", g.index, i.uuid),
                ));
            }
        }
    }
    Ok(())
}
