//! Derived readings: turns (scenario, seed, time) into what a GPU reports — utilization
//! metrics, power, temperature, clocks, throttle reasons, framebuffer use — and the rates that
//! the integrator accumulates into counters (energy, violation time, NVLink bytes, GPM
//! averages).
//!
//! Pure functions only; caching of integrals lives in `integrator` and `sim`. The relations
//! are chosen so readings stay physically consistent: power follows utilization between idle
//! and the enforced limit, temperature follows power with a lag, clocks drop when capped.
//! Scenario faults act here too: a `thermal` fault forces the die temperature up and slows
//! the SM clock, a `power_brake` fault slams the SM clock (and with it the power) to idle,
//! and NVLink traffic stops while every link is down (`nvlink_down`).

use nvml_wrapper_sys::bindings::{
    nvmlClocksEventReasonGpuIdle, nvmlClocksEventReasonSwPowerCap,
    nvmlClocksEventReasonSwThermalSlowdown, nvmlClocksThrottleReasonHwPowerBrakeSlowdown,
    nvmlClocksThrottleReasonHwSlowdown, nvmlClocksThrottleReasonHwThermalSlowdown,
};

use crate::curves::{self, Kind, Workload};
use crate::model::{MIG_COMPUTE_SLICES, Model};
use crate::scenario::{Gpu, Scenario};

/// One MiB in bytes.
pub const MIB: u64 = 1024 * 1024;

/// Share of its normal SM clock a GPU keeps inside a `thermal` fault.
pub const THERMAL_CLOCK_FACTOR: f64 = 0.6;

/// Clock-event reasons inside a `thermal` fault: HW and SW thermal slowdown.
pub const THERMAL_REASONS: u64 =
    (nvmlClocksThrottleReasonHwThermalSlowdown | nvmlClocksEventReasonSwThermalSlowdown) as u64;

/// Clock-event reasons inside a `power_brake` fault: HW power brake, which is also a HW
/// slowdown.
pub const POWER_BRAKE_REASONS: u64 =
    (nvmlClocksThrottleReasonHwPowerBrakeSlowdown | nvmlClocksThrottleReasonHwSlowdown) as u64;

/// Instantaneous load of a GPU or MIG instance; utilization fields are fractions 0..1 and
/// traffic fields bytes/s.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Load {
    pub activity: f64,
    pub graphics: f64,
    pub sm: f64,
    pub occupancy: f64,
    pub tensor: f64,
    pub dram: f64,
    pub fp64: f64,
    pub fp32: f64,
    pub fp16: f64,
    pub pcie_tx: f64,
    pub pcie_rx: f64,
    pub nvlink_tx: f64,
    pub nvlink_rx: f64,
    pub encoder: f64,
    pub decoder: f64,
    /// Fraction of the dynamic power range this load draws (may exceed 1: capped).
    pub power_share: f64,
}

impl Load {
    /// Adds `other` weighted by `w` (utilization and power) and unweighted traffic.
    fn accumulate(&mut self, other: &Load, w: f64) {
        self.activity += other.activity * w;
        self.graphics += other.graphics * w;
        self.sm += other.sm * w;
        self.occupancy += other.occupancy * w;
        self.tensor += other.tensor * w;
        self.dram += other.dram * w;
        self.fp64 += other.fp64 * w;
        self.fp32 += other.fp32 * w;
        self.fp16 += other.fp16 * w;
        self.encoder += other.encoder * w;
        self.decoder += other.decoder * w;
        self.power_share += other.power_share * w;
        self.pcie_tx += other.pcie_tx;
        self.pcie_rx += other.pcie_rx;
        self.nvlink_tx += other.nvlink_tx;
        self.nvlink_rx += other.nvlink_rx;
    }
}

/// How a workload kind loads the units of the GPU, per unit of activity.
struct Profile {
    sm: f64,
    occupancy: f64,
    tensor: f64,
    dram: f64,
    fp64: f64,
    fp32: f64,
    fp16: f64,
    /// Host traffic at full activity, bytes/s (full GPU).
    pcie_tx: f64,
    pcie_rx: f64,
    /// Fraction of the model's NVLink peak used at full activity.
    nvlink: f64,
    /// Dynamic power drawn at full activity, relative to the power range.
    intensity: f64,
}

fn profile(kind: Kind) -> Profile {
    match kind {
        Kind::Idle => Profile {
            sm: 0.0,
            occupancy: 0.0,
            tensor: 0.0,
            dram: 0.0,
            fp64: 0.0,
            fp32: 0.0,
            fp16: 0.0,
            pcie_tx: 0.0,
            pcie_rx: 0.0,
            nvlink: 0.0,
            intensity: 0.0,
        },
        Kind::Training => Profile {
            sm: 0.93,
            occupancy: 0.55,
            tensor: 0.62,
            dram: 0.68,
            fp64: 0.01,
            fp32: 0.14,
            fp16: 0.52,
            pcie_tx: 0.6e9,
            pcie_rx: 2.4e9,
            nvlink: 0.8,
            intensity: 1.06,
        },
        Kind::Inference => Profile {
            sm: 0.85,
            occupancy: 0.34,
            tensor: 0.38,
            dram: 0.55,
            fp64: 0.0,
            fp32: 0.09,
            fp16: 0.33,
            pcie_tx: 1.2e9,
            pcie_rx: 1.6e9,
            nvlink: 0.03,
            intensity: 0.72,
        },
        Kind::Bursty => Profile {
            sm: 0.9,
            occupancy: 0.48,
            tensor: 0.5,
            dram: 0.6,
            fp64: 0.04,
            fp32: 0.22,
            fp16: 0.4,
            pcie_tx: 1.0e9,
            pcie_rx: 3.2e9,
            nvlink: 0.15,
            intensity: 0.95,
        },
    }
}

/// Noise stream of an entity: the seed, the GPU, and the MIG instance (or the GPU itself).
pub fn entity_key(seed: u64, gpu: usize, uid: Option<usize>) -> u64 {
    let instance = uid.map_or(u64::MAX, |u| u as u64);
    curves::key(&[seed, gpu as u64, instance])
}

/// Load of a workload at `t`. `scale` is the share of the GPU it runs on (slices / 7).
pub fn load(w: &Workload, key: u64, t: f64, model: &Model, scale: f64, nvlink: bool) -> Load {
    let a = w.activity(key, t);
    let p = profile(w.kind);
    let n =
        |ch: u64, period: f64| 1.0 + 0.04 * curves::smooth_noise(curves::mix(key, ch), t / period);
    let unit = |f: f64, ch: u64| (f * a * n(ch, 5.0)).clamp(0.0, 1.0);
    let nvlink_bps = if nvlink {
        model.nvlink_peak_bps * p.nvlink * a
    } else {
        0.0
    };
    Load {
        activity: a,
        graphics: a,
        sm: unit(p.sm, 11),
        occupancy: unit(p.occupancy, 12),
        tensor: unit(p.tensor, 13),
        dram: unit(p.dram, 14),
        fp64: unit(p.fp64, 15),
        fp32: unit(p.fp32, 16),
        fp16: unit(p.fp16, 17),
        pcie_tx: p.pcie_tx * a * scale * n(18, 3.0),
        pcie_rx: p.pcie_rx * a * scale * n(19, 3.0),
        nvlink_tx: nvlink_bps * n(20, 4.0),
        nvlink_rx: nvlink_bps * n(21, 4.0),
        encoder: (w.video * 0.5 * a).clamp(0.0, 1.0),
        decoder: (w.video * a * n(22, 7.0)).clamp(0.0, 1.0),
        power_share: (p.intensity * a * n(23, 1.5)).max(0.0),
    }
}

/// Load of MIG instance `uid` of GPU `g` at `t`; `None` when the instance does not exist then.
pub fn instance_load(sc: &Scenario, seed: u64, g: usize, uid: usize, t: f64) -> Option<Load> {
    let gpu = sc.gpu(g)?;
    let member = gpu.member_at(uid, t)?;
    let inst = gpu.instances.get(uid)?;
    let scale = f64::from(inst.profile.compute_slices) / f64::from(MIG_COMPUTE_SLICES);
    Some(load(
        &member.workload,
        entity_key(seed, g, Some(uid)),
        t,
        gpu.model,
        scale,
        false,
    ))
}

/// Whole-GPU load at `t`; in MIG mode the slice-weighted sum of the instances, and
/// `per_instance` sees each instance's own load.
pub fn gpu_load_with(
    sc: &Scenario,
    seed: u64,
    g: usize,
    t: f64,
    mut per_instance: impl FnMut(usize, &Load),
) -> Load {
    let Some(gpu) = sc.gpu(g) else {
        return Load::default();
    };
    match gpu.layout_at(t) {
        None => load(
            &gpu.workload,
            entity_key(seed, g, None),
            t,
            gpu.model,
            1.0,
            gpu.carries_nvlink(t),
        ),
        Some(layout) => {
            let mut total = Load::default();
            for m in &layout.members {
                let Some(inst) = gpu.instances.get(m.uid) else {
                    continue;
                };
                let w = f64::from(inst.profile.compute_slices) / f64::from(MIG_COMPUTE_SLICES);
                let l = load(
                    &m.workload,
                    entity_key(seed, g, Some(m.uid)),
                    t,
                    gpu.model,
                    w,
                    false,
                );
                per_instance(m.uid, &l);
                total.accumulate(&l, w);
            }
            total
        }
    }
}

/// Whole-GPU load at `t`.
pub fn gpu_load(sc: &Scenario, seed: u64, g: usize, t: f64) -> Load {
    gpu_load_with(sc, seed, g, t, |_, _| {})
}

/// Power the board would draw at `t` without a limit, W, with the load behind it. Under a
/// power brake the SM clock sits at idle, so the dynamic part shrinks with the clock.
fn demand_w(gpu: &Gpu, seed: u64, load: &Load, t: f64) -> f64 {
    let m = gpu.model;
    let range = m.power_limit_w - m.idle_w;
    let key = curves::key(&[seed, gpu.index as u64, 0x0070_6f77_6572]);
    let idle_jitter = 0.8 * curves::smooth_noise(key, t / 4.0);
    let clock_share = if gpu.power_braked(t) {
        f64::from(m.sm_idle_mhz) / f64::from(m.sm_max_mhz)
    } else {
        1.0
    };
    m.idle_w + idle_jitter + range * load.power_share * clock_share
}

/// Power drawn at `t` (W) together with the unlimited demand and the limit.
pub fn power(sc: &Scenario, seed: u64, g: usize, t: f64) -> (f64, f64, f64) {
    let Some(gpu) = sc.gpu(g) else {
        return (0.0, 0.0, 0.0);
    };
    let load = gpu_load(sc, seed, g, t);
    power_from(gpu, seed, &load, t)
}

fn power_from(gpu: &Gpu, seed: u64, load: &Load, t: f64) -> (f64, f64, f64) {
    let demand = demand_w(gpu, seed, load, t);
    let limit = gpu.power_limit_at(t);
    (demand.min(limit), demand, limit)
}

/// Fraction of time the power cap is active at this demand (0..1).
fn power_violation(demand: f64, limit: f64) -> f64 {
    ((demand - limit) / (0.02 * limit)).clamp(0.0, 1.0)
}

/// Fraction of time the thermal slowdown is active at this temperature (0..1); all of it
/// inside a `thermal` fault.
fn thermal_violation(gpu: &Gpu, temp_c: f64, t: f64) -> f64 {
    if gpu.thermal_at(t).is_some() {
        return 1.0;
    }
    let model = gpu.model;
    ((temp_c - (model.slowdown_c - 2.0)) / 2.0).clamp(0.0, 1.0)
}

/// Everything a GPU reports at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Readings {
    pub load: Load,
    pub power_w: f64,
    pub demand_w: f64,
    pub limit_w: f64,
    pub temp_c: f64,
    pub mem_temp_c: f64,
    pub sm_mhz: u32,
    pub mem_mhz: u32,
    pub video_mhz: u32,
    pub reasons: u64,
    pub pstate: u32,
}

/// Instantaneous readings of GPU `g` at `t`.
pub fn readings(sc: &Scenario, seed: u64, g: usize, t: f64) -> Option<Readings> {
    let gpu = sc.gpu(g)?;
    let m = gpu.model;
    let load = gpu_load(sc, seed, g, t);
    let (power_w, demand, limit) = power_from(gpu, seed, &load, t);
    // Temperature follows power with a lag: a decaying average of the last ~50 s.
    let mut weighted = 0.0;
    let mut weights = 0.0;
    let mut w = 1.0;
    for k in 0..8 {
        let p = if k == 0 {
            power_w
        } else {
            power(sc, seed, g, t - 6.0 * f64::from(k)).0
        };
        weighted += w * p;
        weights += w;
        w *= 0.7;
    }
    let lagged = weighted / weights;
    let key = curves::key(&[seed, g as u64, 0x7465_6d70]);
    let normal_c =
        m.ambient_c + m.thermal_c_per_w * lagged + 0.4 * curves::smooth_noise(key, t / 20.0);
    // A thermal fault holds the die at least at its temperature (no lag); HBM heats with it.
    let forced_c = gpu.thermal_at(t);
    let temp_c = forced_c.map_or(normal_c, |c| normal_c.max(c));
    let mem_temp_c = temp_c + 3.0 + 0.006 * lagged;
    let boost = (load.activity * 4.0).min(1.0);
    let mut sm = f64::from(m.sm_idle_mhz) + f64::from(m.sm_max_mhz - m.sm_idle_mhz) * boost;
    if demand > limit {
        sm *= (limit / demand).sqrt();
    }
    if forced_c.is_some() {
        sm *= THERMAL_CLOCK_FACTOR;
    }
    let braked = gpu.power_braked(t);
    if braked {
        sm = f64::from(m.sm_idle_mhz);
    }
    let sm_mhz = ((sm / 15.0).round() * 15.0).max(f64::from(m.sm_idle_mhz)) as u32;
    let video = f64::from(m.video_idle_mhz) + f64::from(m.video_max_mhz - m.video_idle_mhz) * boost;
    let idle = load.activity < 0.02;
    let mem_mhz = if idle && m.mem_idle_mhz != m.mem_mhz {
        m.mem_idle_mhz
    } else {
        m.mem_mhz
    };
    let mut reasons = 0u64;
    if idle {
        reasons |= u64::from(nvmlClocksEventReasonGpuIdle);
    }
    if power_violation(demand, limit) > 0.0 {
        reasons |= u64::from(nvmlClocksEventReasonSwPowerCap);
    }
    if thermal_violation(gpu, temp_c, t) > 0.0 {
        reasons |= u64::from(nvmlClocksEventReasonSwThermalSlowdown);
    }
    if forced_c.is_some() {
        reasons |= THERMAL_REASONS;
    }
    if braked {
        reasons |= POWER_BRAKE_REASONS;
    }
    let pstate = if idle && m.mem_idle_mhz != m.mem_mhz {
        8
    } else {
        0
    };
    Some(Readings {
        load,
        power_w,
        demand_w: demand,
        limit_w: limit,
        temp_c,
        mem_temp_c,
        sm_mhz,
        mem_mhz,
        video_mhz: video.round() as u32,
        reasons,
        pstate,
    })
}

/// Framebuffer figures in bytes; `used + free + reserved == total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    pub total: u64,
    pub reserved: u64,
    pub used: u64,
    pub free: u64,
}

/// Framebuffer the driver keeps per context even when idle, MiB.
const BASE_USED_MIB: u64 = 2;

fn used_mib(w: &Workload, key: u64, t: f64, available_mib: u64, fixed_mib: u64) -> u64 {
    let dynamic = (w.memory_fraction(key, t) * available_mib as f64).round() as u64;
    (BASE_USED_MIB + dynamic.max(fixed_mib)).min(available_mib)
}

fn fixed_mib(processes: &[crate::scenario::Process]) -> u64 {
    processes.iter().filter_map(|p| p.memory_mib).sum()
}

/// Framebuffer of MIG instance `uid` at `t`.
pub fn instance_memory(sc: &Scenario, seed: u64, g: usize, uid: usize, t: f64) -> Option<Memory> {
    let gpu = sc.gpu(g)?;
    let member = gpu.member_at(uid, t)?;
    let inst = gpu.instances.get(uid)?;
    let total_mib = inst.profile.memory_mib;
    let used = used_mib(
        &member.workload,
        entity_key(seed, g, Some(uid)),
        t,
        total_mib,
        fixed_mib(&member.processes),
    );
    Some(Memory {
        total: total_mib * MIB,
        reserved: 0,
        used: used * MIB,
        free: (total_mib - used) * MIB,
    })
}

/// Framebuffer of GPU `g` at `t` (the whole board, also in MIG mode).
pub fn gpu_memory(sc: &Scenario, seed: u64, g: usize, t: f64) -> Option<Memory> {
    let gpu = sc.gpu(g)?;
    let m = gpu.model;
    let available = m.memory_mib - m.reserved_mib;
    let used = match gpu.layout_at(t) {
        None => used_mib(
            &gpu.workload,
            entity_key(seed, g, None),
            t,
            available,
            fixed_mib(&gpu.processes),
        ),
        Some(layout) => {
            let sum: u64 = layout
                .members
                .iter()
                .filter_map(|mem| instance_memory(sc, seed, g, mem.uid, t))
                .map(|mem| mem.used / MIB)
                .sum();
            sum.min(available)
        }
    };
    Some(Memory {
        total: m.memory_mib * MIB,
        reserved: m.reserved_mib * MIB,
        used: used * MIB,
        free: (available - used) * MIB,
    })
}

/// Energy the counter already shows at scenario start, mJ (seed-independent).
pub fn energy_base_mj(gpu: &Gpu) -> f64 {
    let h = curves::hash_str(&gpu.uuid);
    2.0e9 + (h % 3_000_000_000) as f64
}

// ---------------------------------------------------------------------------------------------
// Integrated channels
// ---------------------------------------------------------------------------------------------

/// Energy, mJ.
pub const CH_ENERGY: usize = 0;
/// Time spent power-capped, ns.
pub const CH_VIOL_POWER: usize = 1;
/// Time spent in thermal slowdown, ns.
pub const CH_VIOL_THERMAL: usize = 2;
/// NVLink data transmitted / received, KiB.
pub const CH_NVLINK_TX: usize = 3;
pub const CH_NVLINK_RX: usize = 4;
/// Start of the GPU's own GPM channels.
pub const CH_GPU_GPM: usize = 5;
/// GPM channels per entity.
pub const GPM_CHANNELS: usize = 12;

/// GPM metric id → channel offset within an entity's GPM block.
pub fn gpm_channel(metric_id: u32) -> Option<usize> {
    Some(match metric_id {
        1 => 0,   // GRAPHICS_UTIL, %
        2 => 1,   // SM_UTIL, %
        3 => 2,   // SM_OCCUPANCY, %
        5 => 3,   // ANY_TENSOR_UTIL, %
        10 => 4,  // DRAM_BW_UTIL, %
        11 => 5,  // FP64_UTIL, %
        12 => 6,  // FP32_UTIL, %
        13 => 7,  // FP16_UTIL, %
        20 => 8,  // PCIE_TX_PER_SEC, MiB/s
        21 => 9,  // PCIE_RX_PER_SEC, MiB/s
        60 => 10, // NVLINK_TOTAL_RX_PER_SEC, MiB/s
        61 => 11, // NVLINK_TOTAL_TX_PER_SEC, MiB/s
        _ => return None,
    })
}

/// Number of integrated channels of GPU `gpu`.
pub fn channel_count(gpu: &Gpu) -> usize {
    CH_GPU_GPM + GPM_CHANNELS * (1 + gpu.instances.len())
}

/// First channel of an entity's GPM block (`None` uid: the GPU itself).
pub fn gpm_base(uid: Option<usize>) -> usize {
    match uid {
        None => CH_GPU_GPM,
        Some(u) => CH_GPU_GPM + GPM_CHANNELS * (1 + u),
    }
}

fn write_gpm(out: &mut [f64], base: usize, l: &Load) {
    let mib = MIB as f64;
    let values = [
        100.0 * l.graphics,
        100.0 * l.sm,
        100.0 * l.occupancy,
        100.0 * l.tensor,
        100.0 * l.dram,
        100.0 * l.fp64,
        100.0 * l.fp32,
        100.0 * l.fp16,
        l.pcie_tx / mib,
        l.pcie_rx / mib,
        l.nvlink_rx / mib,
        l.nvlink_tx / mib,
    ];
    if let Some(slot) = out.get_mut(base..base + GPM_CHANNELS) {
        slot.copy_from_slice(&values);
    }
}

/// Rates of every integrated channel of GPU `g` at `t` (per second), written into `out`
/// (length `channel_count`). Instances absent at `t` contribute 0.
pub fn rates(sc: &Scenario, seed: u64, g: usize, t: f64, out: &mut [f64]) {
    out.iter_mut().for_each(|v| *v = 0.0);
    let Some(gpu) = sc.gpu(g) else {
        return;
    };
    let load = gpu_load_with(sc, seed, g, t, |uid, l| {
        write_gpm(out, gpm_base(Some(uid)), l)
    });
    let (power_w, demand, limit) = power_from(gpu, seed, &load, t);
    let m = gpu.model;
    let temp = m.ambient_c + m.thermal_c_per_w * power_w;
    let set = |out: &mut [f64], ch: usize, v: f64| {
        if let Some(slot) = out.get_mut(ch) {
            *slot = v;
        }
    };
    set(out, CH_ENERGY, power_w * 1000.0);
    set(out, CH_VIOL_POWER, power_violation(demand, limit) * 1e9);
    set(out, CH_VIOL_THERMAL, thermal_violation(gpu, temp, t) * 1e9);
    set(out, CH_NVLINK_TX, load.nvlink_tx / 1024.0);
    set(out, CH_NVLINK_RX, load.nvlink_rx / 1024.0);
    write_gpm(out, CH_GPU_GPM, &load);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load as load_scenario;

    #[test]
    fn power_stays_between_idle_and_limit() {
        let sc = load_scenario("h100-mig").unwrap();
        for g in 0..sc.gpus.len() {
            for s in 0..300 {
                let r = readings(&sc, 1, g, f64::from(s) * 2.0).unwrap();
                let m = sc.gpus[g].model;
                assert!(
                    r.power_w >= m.idle_w - 1.0 && r.power_w <= r.limit_w,
                    "{r:?}"
                );
                assert!(r.sm_mhz >= m.sm_idle_mhz && r.sm_mhz <= m.sm_max_mhz);
                assert!(r.temp_c > 20.0 && r.temp_c < 90.0);
            }
        }
    }

    #[test]
    fn busy_gpus_are_hot_and_fast() {
        let sc = load_scenario("h100-mig").unwrap();
        let busy = readings(&sc, 1, 0, 300.0).unwrap();
        assert!(busy.power_w > 450.0, "{busy:?}");
        assert!(busy.sm_mhz > 1700, "{busy:?}");
        assert!(busy.temp_c > 55.0, "{busy:?}");
        let idle_sc =
            crate::scenario::parse("[[gpus]]\nmodel = \"H100-SXM5-80GB\"\n", "test", "test")
                .unwrap();
        let idle = readings(&idle_sc, 1, 0, 300.0).unwrap();
        assert!(idle.power_w < 90.0 && idle.sm_mhz == 345, "{idle:?}");
        assert_eq!(idle.reasons, u64::from(nvmlClocksEventReasonGpuIdle));
    }

    #[test]
    fn memory_adds_up() {
        let sc = load_scenario("h100-mig").unwrap();
        for g in 0..sc.gpus.len() {
            let m = gpu_memory(&sc, 3, g, 100.0).unwrap();
            assert_eq!(m.used + m.free + m.reserved, m.total);
            for uid in 0..sc.gpus[g].instances.len() {
                let mi = instance_memory(&sc, 3, g, uid, 100.0).unwrap();
                assert_eq!(mi.used + mi.free + mi.reserved, mi.total);
            }
        }
        // The MIG parent counts its instances' use.
        let parent = gpu_memory(&sc, 3, 5, 100.0).unwrap();
        let sum: u64 = (0..3)
            .map(|uid| instance_memory(&sc, 3, 5, uid, 100.0).unwrap().used)
            .sum();
        assert_eq!(parent.used, sum);
    }

    /// A busy H100 (training at level 1, no swing), with `faults` appended.
    fn busy_h100(faults: &str) -> Scenario {
        let text = format!(
            "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = {{ kind = \"training\", level \
             = 1.0, amplitude = 0 }}\n{faults}"
        );
        crate::scenario::parse(&text, "test", "test").unwrap()
    }

    #[test]
    fn thermal_fault_heats_and_slows_the_gpu() {
        let base = busy_h100("");
        let sc = busy_h100(
            "[[faults]]\nat = 60\ngpu = 0\nkind = \"thermal\"\ncelsius = 95\nuntil = 160\n",
        );
        let m = sc.gpus[0].model;
        // Before and after the window: exactly the readings without the fault.
        for t in [0.0, 30.0, 59.9, 160.0, 200.0] {
            assert_eq!(readings(&sc, 1, 0, t), readings(&base, 1, 0, t), "t = {t}");
        }
        let before = readings(&sc, 1, 0, 59.9).unwrap();
        assert!(before.temp_c < 85.0, "{before:?}");
        assert_eq!(before.reasons & THERMAL_REASONS, 0, "{before:?}");
        for t in [60.0, 61.3, 100.0, 159.9] {
            let r = readings(&sc, 1, 0, t).unwrap();
            let n = readings(&base, 1, 0, t).unwrap();
            // The die jumps to the fault's temperature, the HBM by the same delta.
            assert_eq!(r.temp_c, 95.0, "{r:?}");
            let delta = 95.0 - n.temp_c;
            assert!(delta > 10.0, "{n:?}");
            assert!(
                (r.mem_temp_c - (n.mem_temp_c + delta)).abs() < 1e-9,
                "{r:?}"
            );
            // HW and SW thermal slowdown on top of what was there.
            assert_eq!(r.reasons, n.reasons | 0x60, "{r:?}");
            // SM clock at ~60 %, on the 15 MHz grid, never below idle.
            assert!(r.sm_mhz.is_multiple_of(15));
            assert!(r.sm_mhz >= m.sm_idle_mhz);
            let expect = 0.6 * f64::from(n.sm_mhz);
            assert!(
                (f64::from(r.sm_mhz) - expect).abs() <= 15.0,
                "{r:?} vs {n:?}"
            );
            // Power and everything else are unchanged.
            assert_eq!(
                (r.power_w, r.load, r.mem_mhz),
                (n.power_w, n.load, n.mem_mhz)
            );
        }
        // Hotter than the fault asks: the reading stays at the natural temperature.
        let cool = busy_h100(
            "[[faults]]\nat = 60\ngpu = 0\nkind = \"thermal\"\ncelsius = 40\nuntil = 160\n",
        );
        let r = readings(&cool, 1, 0, 100.0).unwrap();
        let n = readings(&base, 1, 0, 100.0).unwrap();
        assert_eq!((r.temp_c, r.mem_temp_c), (n.temp_c, n.mem_temp_c));
        assert_eq!(r.reasons & 0x60, 0x60);
        // An idle GPU keeps its idle clock (60 % of it would be below idle).
        let idle = crate::scenario::parse(
            "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\n[[faults]]\nat = 0\ngpu = 0\nkind = \
             \"thermal\"\ncelsius = 100\n",
            "test",
            "test",
        )
        .unwrap();
        let r = readings(&idle, 1, 0, 10.0).unwrap();
        assert_eq!((r.sm_mhz, r.temp_c), (m.sm_idle_mhz, 100.0));
        assert_eq!(r.reasons, 0x1 | 0x20 | 0x40);
    }

    #[test]
    fn thermal_fault_violation_rate() {
        let base = busy_h100("");
        let sc = busy_h100(
            "[[faults]]\nat = 60\ngpu = 0\nkind = \"thermal\"\ncelsius = 95\nuntil = 160\n",
        );
        let mut out = vec![0.0; channel_count(&sc.gpus[0])];
        let mut normal = out.clone();
        for t in [10.0, 59.9, 60.0, 100.5, 159.9, 160.0, 300.0] {
            rates(&sc, 1, 0, t, &mut out);
            rates(&base, 1, 0, t, &mut normal);
            let inside = (60.0..160.0).contains(&t);
            let expect = if inside { 1e9 } else { normal[CH_VIOL_THERMAL] };
            assert_eq!(out[CH_VIOL_THERMAL], expect, "t = {t}");
            assert_eq!(out[CH_ENERGY], normal[CH_ENERGY], "t = {t}");
            assert_eq!(out[CH_VIOL_POWER], normal[CH_VIOL_POWER], "t = {t}");
        }
        assert_eq!(normal[CH_VIOL_THERMAL], 0.0);
    }

    #[test]
    fn power_brake_slams_clocks_and_power() {
        let base = busy_h100("");
        let sc = busy_h100("[[faults]]\nat = 60\ngpu = 0\nkind = \"power_brake\"\nuntil = 160\n");
        let m = sc.gpus[0].model;
        for t in [0.0, 59.9] {
            assert_eq!(readings(&sc, 1, 0, t), readings(&base, 1, 0, t), "t = {t}");
        }
        for t in [60.0, 100.0, 159.9] {
            let r = readings(&sc, 1, 0, t).unwrap();
            let n = readings(&base, 1, 0, t).unwrap();
            assert_eq!(r.sm_mhz, m.sm_idle_mhz, "{r:?}");
            // Power brake + HW slowdown, and no SW power cap: power is far below the limit.
            assert_eq!(n.reasons & 0x1, 0, "busy: {n:?}");
            assert_eq!(r.reasons, 0x80 | 0x8, "{r:?}");
            assert!(r.power_w < 0.4 * n.power_w, "{r:?} vs {n:?}");
            assert!(r.power_w > m.idle_w - 1.0, "{r:?}");
            assert_eq!(r.load, n.load);
            let mut out = vec![0.0; channel_count(&sc.gpus[0])];
            rates(&sc, 1, 0, t, &mut out);
            assert_eq!(out[CH_VIOL_POWER], 0.0);
            assert!((out[CH_ENERGY] - r.power_w * 1000.0).abs() < 1e-6);
            assert_eq!(power(&sc, 1, 0, t).0, r.power_w);
        }
        // The die cools while braked (temperature follows power with a lag).
        let late = readings(&sc, 1, 0, 159.9).unwrap();
        assert!(late.temp_c < readings(&base, 1, 0, 159.9).unwrap().temp_c - 10.0);
        // Right after the window clocks, reasons and power are back; the temperature has
        // caught up once the lag (~50 s) has passed.
        let r = readings(&sc, 1, 0, 160.0).unwrap();
        let n = readings(&base, 1, 0, 160.0).unwrap();
        assert_eq!(
            (r.sm_mhz, r.reasons, r.power_w),
            (n.sm_mhz, n.reasons, n.power_w)
        );
        assert!(r.temp_c < n.temp_c);
        assert_eq!(readings(&sc, 1, 0, 220.0), readings(&base, 1, 0, 220.0));
    }

    #[test]
    fn gpm_channels_cover_the_brief() {
        for id in [1, 2, 3, 5, 10, 11, 12, 13, 20, 21, 60, 61] {
            assert!(gpm_channel(id).is_some(), "{id}");
        }
        assert!(gpm_channel(4).is_none());
    }
}
