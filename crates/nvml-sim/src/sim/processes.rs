//! Process queries: running compute processes and per-process utilization.

use super::{Dev, NvmlResult, Sim};
use super::{ProcessRow, ProcessUtil, pct};
use crate::physics::{self, MIB};
use crate::ret;
use crate::scenario::{NO_INSTANCE, Process};

impl Sim {
    fn process_rows(
        &self,
        g: usize,
        uid: Option<usize>,
        processes: &[Process],
        t: f64,
        out: &mut Vec<ProcessRow>,
    ) {
        let (gi, ci) = match uid {
            Some(u) => self
                .scenario
                .gpu(g)
                .and_then(|gpu| gpu.instances.get(u))
                .map_or((NO_INSTANCE, NO_INSTANCE), |i| (i.gi, i.ci)),
            None => (NO_INSTANCE, NO_INSTANCE),
        };
        let used = match uid {
            Some(u) => physics::instance_memory(&self.scenario, self.seed, g, u, t),
            None => physics::gpu_memory(&self.scenario, self.seed, g, t),
        }
        .map_or(0, |m| m.used);
        let fixed: u64 = processes.iter().filter_map(|p| p.memory_mib).sum::<u64>() * MIB;
        let sharing = processes.iter().filter(|p| p.memory_mib.is_none()).count() as u64;
        let share = used
            .saturating_sub(fixed)
            .checked_div(sharing)
            .map_or(0, |b| b / MIB * MIB);
        for p in processes {
            out.push(ProcessRow {
                pid: p.pid,
                used_bytes: p.memory_mib.map_or(share, |m| m * MIB),
                gi,
                ci,
            });
        }
    }

    /// `nvmlDeviceGetComputeRunningProcesses_v3`: a MIG device lists its own processes; a
    /// MIG-enabled parent lists every instance's processes with their instance ids.
    pub fn processes(&self, dev: Dev, t: f64) -> NvmlResult<Vec<ProcessRow>> {
        let gpu = self.gpu(dev.gpu())?;
        let g = gpu.index;
        let mut rows = Vec::new();
        match (dev, gpu.layout_at(t)) {
            (Dev::Mig(_, uid), _) => {
                if let Some(m) = gpu.member_at(uid, t) {
                    self.process_rows(g, Some(uid), &m.processes, t, &mut rows);
                }
            }
            (Dev::Gpu(_), Some(layout)) => {
                for m in &layout.members {
                    self.process_rows(g, Some(m.uid), &m.processes, t, &mut rows);
                }
            }
            (Dev::Gpu(_), None) => self.process_rows(g, None, &gpu.processes, t, &mut rows),
        }
        Ok(rows)
    }

    /// `nvmlDeviceGetProcessUtilization`: samples newer than `last_seen_us`; NOT_FOUND when
    /// there are none; NOT_SUPPORTED for MIG devices and GPUs in MIG mode.
    pub fn process_utilization(
        &self,
        dev: Dev,
        last_seen_us: u64,
        t: f64,
    ) -> NvmlResult<Vec<ProcessUtil>> {
        let g = self.physical_only(dev)?;
        let gpu = self.gpu(g)?;
        if gpu.mig_enabled {
            return Err(ret::NOT_SUPPORTED);
        }
        let ts = self.clock.unix_us(t).max(0) as u64;
        if gpu.processes.is_empty() || ts <= last_seen_us {
            return Err(ret::NOT_FOUND);
        }
        let l = physics::gpu_load(&self.scenario, self.seed, g, t);
        let n = gpu.processes.len() as f64;
        Ok(gpu
            .processes
            .iter()
            .map(|p| ProcessUtil {
                pid: p.pid,
                timestamp_us: ts,
                sm: pct(l.sm / n),
                mem: pct(l.dram / n),
                enc: pct(l.encoder / n),
                dec: pct(l.decoder / n),
            })
            .collect())
    }
}
