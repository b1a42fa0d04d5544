//! Processes on a GPU or MIG instance: NVML's running compute (and MPS) processes with their
//! framebuffer use, and per-process SM utilization where NVML serves it (whole GPUs; not MIG).
//!
//! This is the raw material for per-container attribution on shared GPUs (time-slicing, MPS):
//! `attribution` maps each PID to its pod and sums per container.
//!
//! It reads NVML only; it must not look at `/proc`, cgroups or pods.

use nvml_wrapper::Device;
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::error::NvmlError;

/// One process using a device.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessUse {
    /// Host PID.
    pub pid: u32,
    /// Framebuffer used, when the driver reports it (not under some virtualization).
    pub memory_bytes: Option<u64>,
    /// Average SM utilization over the interval, in percent, when NVML samples it.
    pub sm_percent: Option<f64>,
}

/// The processes of one entity, keyed by the entity's UUID (`GPU-…` or `MIG-…`).
#[derive(Debug, Clone, PartialEq)]
pub struct EntityProcesses {
    /// UUID of the GPU or the MIG device.
    pub uuid: String,
    /// Processes, sorted by PID.
    pub processes: Vec<ProcessUse>,
    /// Whether NVML served per-process utilization for this entity this tick.
    pub utilization: bool,
}

/// Lists the processes on `dev`. `util_since` (NVML time stamp, µs) is the last process
/// utilization sample already seen on this device; `None` skips utilization (MIG devices,
/// where NVML does not serve it). It is advanced to the newest sample read.
pub fn read(
    dev: &Device<'_>,
    uuid: &str,
    util_since: Option<&mut u64>,
) -> Result<EntityProcesses, NvmlError> {
    let mut procs: Vec<ProcessUse> = Vec::new();
    let mut add = |list: Vec<nvml_wrapper::struct_wrappers::device::ProcessInfo>| {
        for p in list {
            let memory_bytes = match p.used_gpu_memory {
                UsedGpuMemory::Used(b) => Some(b),
                UsedGpuMemory::Unavailable => None,
            };
            match procs.iter_mut().find(|q| q.pid == p.pid) {
                Some(q) => q.memory_bytes = q.memory_bytes.or(memory_bytes),
                None => procs.push(ProcessUse {
                    pid: p.pid,
                    memory_bytes,
                    sm_percent: None,
                }),
            }
        }
    };
    add(dev.running_compute_processes()?);
    // MPS clients are listed separately from the MPS server; a driver without MPS support
    // answers NOT_SUPPORTED, which is not an error here.
    match dev.mps_running_compute_processes() {
        Ok(list) => add(list),
        Err(NvmlError::NotSupported | NvmlError::FunctionNotFound) => {}
        Err(e) => return Err(e),
    }
    let mut utilization = false;
    if let Some(since) = util_since {
        match dev.process_utilization_stats(*since) {
            Ok(samples) => {
                utilization = true;
                // Several samples of one process may come back: average them.
                let mut sums: Vec<(u32, f64, u32)> = Vec::new();
                for s in samples {
                    *since = (*since).max(s.timestamp);
                    match sums.iter_mut().find(|(pid, _, _)| *pid == s.pid) {
                        Some(e) => {
                            e.1 += f64::from(s.sm_util);
                            e.2 += 1;
                        }
                        None => sums.push((s.pid, f64::from(s.sm_util), 1)),
                    }
                }
                for p in &mut procs {
                    p.sm_percent = Some(
                        sums.iter()
                            .find(|(pid, _, _)| *pid == p.pid)
                            .map_or(0.0, |(_, sum, n)| sum / f64::from(*n)),
                    );
                }
            }
            // No new sample since `since`: every process was idle over the interval.
            Err(NvmlError::NotFound) => {
                utilization = true;
                for p in &mut procs {
                    p.sm_percent = Some(0.0);
                }
            }
            Err(NvmlError::NotSupported) => {}
            Err(e) => return Err(e),
        }
    }
    procs.sort_by_key(|p| p.pid);
    Ok(EntityProcesses {
        uuid: uuid.to_owned(),
        processes: procs,
        utilization,
    })
}
