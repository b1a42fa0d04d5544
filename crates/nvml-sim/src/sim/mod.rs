//! The simulated machine: one loaded scenario, its seed and clock, the integrator caches, the
//! event sets and the GPM samples (counted in a census file when asked, [`CENSUS_ENV`]) — and
//! the NVML semantics of every query (which error code in
//! which situation, MIG vs physical handles, fault windows).
//!
//! Methods take plain Rust values and return `Result<_, nvmlReturn_t>`, so unit tests exercise
//! every behaviour without the C ABI; `ffi` only checks pointers and copies results out. This
//! module must not touch the global state (that is `state`).

mod events;
mod fields;
mod gpm;
mod mig;
mod nvlink;
mod nvlink5;
mod processes;
mod telemetry;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use nvml_wrapper_sys::bindings::{
    nvmlEventTypeClock, nvmlEventTypeDoubleBitEccError, nvmlEventTypePState,
    nvmlEventTypeSingleBitEccError, nvmlEventTypeXidCriticalError, nvmlReturn_t,
};

pub use nvlink::{FabricInfo, SCOPE_ALL_LINKS};

use crate::integrator::Integrator;
use crate::physics::{self, GPM_CHANNELS};
use crate::ret;
use crate::scenario::{Gpu, Scenario};

/// Result of an NVML query: the value or the `nvmlReturn_t` error code.
pub type NvmlResult<T> = Result<T, nvmlReturn_t>;

/// Scenario time origin of frozen clocks, as a Unix time in µs (2026-01-01T00:00:00Z), so
/// timestamps are deterministic when time is frozen.
pub const FROZEN_EPOCH_US: i64 = 1_767_225_600_000_000;

/// Sampling period reported with encoder/decoder utilization, µs.
pub const CODEC_SAMPLING_US: u32 = 167_000;

/// Event types a physical GPU accepts in `nvmlDeviceRegisterEvents`.
pub const SUPPORTED_EVENTS: u64 = (nvmlEventTypeSingleBitEccError
    | nvmlEventTypeDoubleBitEccError
    | nvmlEventTypePState
    | nvmlEventTypeXidCriticalError
    | nvmlEventTypeClock) as u64;

/// A device an NVML handle stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dev {
    /// A physical GPU by index.
    Gpu(usize),
    /// MIG instance `uid` (index into `Gpu::instances`) of a GPU.
    Mig(usize, usize),
}

impl Dev {
    /// Index of the physical GPU.
    pub fn gpu(self) -> usize {
        match self {
            Dev::Gpu(g) | Dev::Mig(g, _) => g,
        }
    }
}

/// Scenario clock: real time since configuration, or frozen.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: Instant,
    start_unix_us: i64,
    frozen: Option<f64>,
}

impl Clock {
    /// A clock starting now, optionally frozen at a scenario time.
    pub fn new(frozen: Option<f64>) -> Self {
        let start_unix_us = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(FROZEN_EPOCH_US, |d| d.as_micros() as i64);
        Self {
            start: Instant::now(),
            start_unix_us,
            frozen,
        }
    }

    /// Freezes scenario time at `t` seconds, or returns to real time when `t` is `None`.
    pub fn set(&mut self, t: Option<f64>) {
        self.frozen = t;
    }

    /// The frozen time, if any.
    pub fn frozen(&self) -> Option<f64> {
        self.frozen
    }

    /// Scenario time now, seconds.
    pub fn now(&self) -> f64 {
        self.frozen
            .unwrap_or_else(|| self.start.elapsed().as_secs_f64())
    }

    /// Unix time in µs of scenario time `t`.
    pub fn unix_us(&self, t: f64) -> i64 {
        let origin = if self.frozen.is_some() {
            FROZEN_EPOCH_US
        } else {
            self.start_unix_us
        };
        origin + (t * 1e6) as i64
    }
}

/// An event set: the GPUs registered with their masks, which events it has delivered, and
/// where its scan of the timeline stands, so that each event is looked at a bounded number of
/// times however long the timeline is (a flood of Xids costs the same per event as one).
#[derive(Debug, Clone, Default)]
pub struct EventSet {
    registered: BTreeMap<usize, u64>,
    delivered: Vec<bool>,
    /// Every event before it has been delivered, will never be owed, or is in `masked`.
    cursor: usize,
    /// Passed events of a registered GPU whose type the set did not ask for (yet): owed after
    /// all if the set adds that type for the GPU.
    masked: Vec<usize>,
    /// Such events, owed since the set added their type: delivered first, in time order.
    reopened: std::collections::VecDeque<usize>,
}

/// A filled GPM sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SampleData {
    pub gpu: usize,
    pub uid: Option<usize>,
    pub t: f64,
    pub values: [f64; GPM_CHANNELS],
    /// KiB each link had received and sent at `t` (GPU samples; zero for MIG samples), for
    /// GPM's per-link NVLink metrics.
    pub links: [[f64; 2]; LINK_SLOTS],
}

/// Links GPM has per-link NVLink metrics for (`NVML_GPM_METRIC_NVLINK_L0_*` … `L17_*`).
pub const LINK_SLOTS: usize = 18;

/// A process as NVML lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessRow {
    pub pid: u32,
    pub used_bytes: u64,
    pub gi: u32,
    pub ci: u32,
}

/// A per-process utilization sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessUtil {
    pub pid: u32,
    pub timestamp_us: u64,
    pub sm: u32,
    pub mem: u32,
    pub enc: u32,
    pub dec: u32,
}

/// The simulated machine.
#[derive(Debug)]
pub struct Sim {
    pub scenario: Scenario,
    pub seed: u64,
    pub clock: Clock,
    integrators: Vec<Integrator>,
    event_sets: BTreeMap<u64, EventSet>,
    samples: BTreeMap<u64, Option<SampleData>>,
    next_id: u64,
    /// Integrated channels of a GPU at the times its set of up NVLink links changes, by
    /// (GPU, time bits): fixed for a scenario and seed, so computed once.
    link_marks: BTreeMap<(usize, u64), Vec<f64>>,
    /// Where the live event sets and GPM samples are written on each change
    /// ([`CENSUS_ENV`]), for tests that look for leaks in the process using the library.
    census: Option<std::path::PathBuf>,
}

/// The environment variable naming the census file: when set, the simulator rewrites that file
/// (`event_sets N` and `gpm_samples N`, one a line; written beside and renamed over, so a
/// reader never sees half of it) each time an event set or GPM sample is made or freed. Real
/// NVML allocates both for its caller, who must free them; a count that grows is a leak.
pub const CENSUS_ENV: &str = "NVML_SIM_CENSUS";

impl Sim {
    /// A machine for `scenario` with noise `seed`; `frozen` freezes the clock.
    pub fn new(scenario: Scenario, seed: u64, frozen: Option<f64>) -> Self {
        let integrators = scenario
            .gpus
            .iter()
            .map(|g| Integrator::new(physics::channel_count(g)))
            .collect();
        Self {
            scenario,
            seed,
            clock: Clock::new(frozen),
            integrators,
            event_sets: BTreeMap::new(),
            samples: BTreeMap::new(),
            next_id: 1,
            link_marks: BTreeMap::new(),
            census: std::env::var_os(CENSUS_ENV).map(Into::into),
        }
    }

    /// Rewrites the census file, if one is asked for ([`CENSUS_ENV`]); a failure to write is
    /// left to the reader to notice (a file that is absent or stale).
    fn write_census(&self) {
        let Some(path) = &self.census else {
            return;
        };
        let text = format!(
            "event_sets {}\ngpm_samples {}\n",
            self.event_sets.len(),
            self.samples.len()
        );
        let mut tmp = path.clone().into_os_string();
        tmp.push(".tmp");
        if std::fs::write(&tmp, text).is_ok() {
            let _ = std::fs::rename(&tmp, path);
        }
    }

    /// Scenario time now.
    pub fn now(&self) -> f64 {
        self.clock.now()
    }

    fn gpu(&self, g: usize) -> NvmlResult<&Gpu> {
        self.scenario.gpu(g).ok_or(ret::INVALID_ARGUMENT)
    }

    fn physical_only(&self, dev: Dev) -> NvmlResult<usize> {
        match dev {
            Dev::Gpu(g) => Ok(g),
            Dev::Mig(..) => Err(ret::NOT_SUPPORTED),
        }
    }

    /// Values of the integrated channels of GPU `g` at `t`.
    fn integrals(&mut self, g: usize, t: f64) -> NvmlResult<Vec<f64>> {
        let Sim {
            scenario,
            seed,
            integrators,
            ..
        } = self;
        let integ = integrators.get_mut(g).ok_or(ret::INVALID_ARGUMENT)?;
        let seed = *seed;
        Ok(integ.value_at(t, |tt, out| physics::rates(scenario, seed, g, tt, out)))
    }

    fn take_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Gives ids starting after `floor` (so ids are never reused across reconfiguration).
    pub fn set_id_floor(&mut self, floor: u64) {
        self.next_id = self.next_id.max(floor + 1);
    }

    /// The next id this machine will hand out.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }

    /// Validates a device for a call to NVML function `func` at `t`: unknown device, or a GPU
    /// that has not appeared yet → INVALID_ARGUMENT; GPU lost → GPU_IS_LOST; MIG instance not
    /// present now → INVALID_ARGUMENT; function switched off by the scenario → NOT_SUPPORTED.
    pub fn check(&self, dev: Dev, func: &str, t: f64) -> NvmlResult<Dev> {
        let gpu = self.gpu(dev.gpu())?;
        if !gpu.present(t) {
            return Err(ret::INVALID_ARGUMENT);
        }
        if gpu.is_lost(t) {
            return Err(ret::GPU_IS_LOST);
        }
        if let Some(left) = gpu.hang_left(t) {
            // A hung driver: the call (and, through the simulator's lock, every other NVML
            // call of the process) returns only when the window is over.
            std::thread::sleep(std::time::Duration::from_secs_f64(left));
        }
        if let Dev::Mig(_, uid) = dev
            && gpu.member_at(uid, t).is_none()
        {
            return Err(ret::INVALID_ARGUMENT);
        }
        if gpu.function_unsupported(func, t) {
            return Err(ret::NOT_SUPPORTED);
        }
        Ok(dev)
    }

    /// `nvmlDeviceGetCount_v2`: the GPUs enumerated at `t` (a GPU with an `appear` fault from
    /// its time on; an unbound GPU not while it is unbound).
    pub fn device_count(&self, t: f64) -> u32 {
        self.scenario.gpus.iter().filter(|g| g.present(t)).count() as u32
    }

    /// `nvmlDeviceGetIndex` of scenario GPU `g` at `t`: NVML's indices are dense over the GPUs
    /// enumerated then, in the scenario's (bus) order, so a GPU after an unbound one moves down
    /// while it is away and back up when it returns.
    pub fn nvml_index(&self, g: usize, t: f64) -> u32 {
        self.scenario
            .gpus
            .iter()
            .take(g)
            .filter(|o| o.present(t))
            .count() as u32
    }

    /// `nvmlDeviceGetHandleByIndex_v2`: the `index`-th GPU enumerated at `t`
    /// (INVALID_ARGUMENT past the last).
    pub fn handle_by_index(&self, index: u32, t: f64) -> NvmlResult<Dev> {
        let gpu = self
            .scenario
            .gpus
            .iter()
            .filter(|g| g.present(t))
            .nth(index as usize)
            .ok_or(ret::INVALID_ARGUMENT)?;
        if gpu.is_lost(t) {
            return Err(ret::GPU_IS_LOST);
        }
        Ok(Dev::Gpu(gpu.index))
    }

    /// `nvmlDeviceGetHandleByUUID`: GPU or MIG UUIDs (NOT_FOUND for those of a GPU that has
    /// not appeared yet).
    pub fn handle_by_uuid(&self, uuid: &str, t: f64) -> NvmlResult<Dev> {
        for gpu in self.scenario.gpus.iter().filter(|g| g.present(t)) {
            if gpu.uuid == uuid {
                return self.check(Dev::Gpu(gpu.index), "", t);
            }
            if let Some(uid) = gpu.instances.iter().position(|i| i.uuid == uuid) {
                if gpu.is_lost(t) {
                    return Err(ret::GPU_IS_LOST);
                }
                if gpu.member_at(uid, t).is_none() {
                    return Err(ret::NOT_FOUND);
                }
                return Ok(Dev::Mig(gpu.index, uid));
            }
        }
        Err(ret::NOT_FOUND)
    }

    /// `nvmlDeviceGetHandleByPciBusId_v2`: either bus-id spelling, case-insensitive
    /// (NOT_FOUND for a GPU that has not appeared yet).
    pub fn handle_by_pci(&self, bus_id: &str, t: f64) -> NvmlResult<Dev> {
        let wanted = crate::scenario::Pci::parse(bus_id).ok_or(ret::INVALID_ARGUMENT)?;
        let gpu = self
            .scenario
            .gpus
            .iter()
            .find(|g| g.pci == wanted && g.present(t))
            .ok_or(ret::NOT_FOUND)?;
        self.check(Dev::Gpu(gpu.index), "", t)
    }

    /// `nvmlDeviceGetUUID`.
    pub fn uuid(&self, dev: Dev) -> NvmlResult<String> {
        let gpu = self.gpu(dev.gpu())?;
        match dev {
            Dev::Gpu(_) => Ok(gpu.uuid.clone()),
            Dev::Mig(_, uid) => gpu
                .instances
                .get(uid)
                .map(|i| i.uuid.clone())
                .ok_or(ret::INVALID_ARGUMENT),
        }
    }

    /// `nvmlDeviceGetName`: the model name, or `"<name> MIG <profile>"` for MIG devices.
    pub fn name(&self, dev: Dev) -> NvmlResult<String> {
        let gpu = self.gpu(dev.gpu())?;
        match dev {
            Dev::Gpu(_) => Ok(gpu.model.name.to_string()),
            Dev::Mig(_, uid) => gpu
                .instances
                .get(uid)
                .map(|i| format!("{} MIG {}", gpu.model.name, i.profile.name))
                .ok_or(ret::INVALID_ARGUMENT),
        }
    }

    /// The physical GPU behind a device (MIG devices answer identity queries with it).
    pub fn physical(&self, dev: Dev) -> NvmlResult<&Gpu> {
        self.gpu(dev.gpu())
    }
}

/// Fraction → whole percent.
fn pct(v: f64) -> u32 {
    (v * 100.0).round().clamp(0.0, 100.0) as u32
}
