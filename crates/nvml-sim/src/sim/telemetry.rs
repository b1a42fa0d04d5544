//! Telemetry queries of physical GPUs: power, energy, violation time, utilization, PCIe,
//! clocks, temperature, clock-event reasons, ECC, framebuffer. MIG devices answer
//! NOT_SUPPORTED except for their own framebuffer.

use super::{CODEC_SAMPLING_US, pct};
use super::{Dev, NvmlResult, Sim};
use crate::physics::{self, MIB, Memory};
use crate::ret;
use crate::scenario::Counter;

impl Sim {
    /// Instantaneous readings of a physical GPU.
    pub fn readings(&self, dev: Dev, t: f64) -> NvmlResult<physics::Readings> {
        let g = self.physical_only(dev)?;
        physics::readings(&self.scenario, self.seed, g, t).ok_or(ret::INVALID_ARGUMENT)
    }

    /// `nvmlDeviceGetPowerUsage`, mW.
    pub fn power_mw(&self, dev: Dev, t: f64) -> NvmlResult<u32> {
        let g = self.physical_only(dev)?;
        let (p, _, _) = physics::power(&self.scenario, self.seed, g, t);
        Ok((p * 1000.0).round() as u32)
    }

    /// `nvmlDeviceGetEnforcedPowerLimit`, mW.
    pub fn power_limit_mw(&self, dev: Dev, t: f64) -> NvmlResult<u32> {
        let g = self.physical_only(dev)?;
        Ok((self.gpu(g)?.power_limit_at(t) * 1000.0).round() as u32)
    }

    /// `nvmlDeviceGetPowerManagementDefaultLimit`, mW.
    pub fn default_power_limit_mw(&self, dev: Dev) -> NvmlResult<u32> {
        let g = self.physical_only(dev)?;
        Ok((self.gpu(g)?.model.power_limit_w * 1000.0).round() as u32)
    }

    /// `nvmlDeviceGetTotalEnergyConsumption`, mJ since driver load (strictly increasing).
    pub fn energy_mj(&mut self, dev: Dev, t: f64) -> NvmlResult<u64> {
        let g = self.physical_only(dev)?;
        let base = physics::energy_base_mj(self.gpu(g)?);
        let v = self.integrals(g, t)?;
        Ok((base + v.get(physics::CH_ENERGY).copied().unwrap_or(0.0)) as u64)
    }

    /// `nvmlDeviceGetApplicationsClock` (MHz): the simulated boards keep their application
    /// clocks at the maximum clocks.
    pub fn app_clock_mhz(&self, dev: Dev, clock: u32, t: f64) -> NvmlResult<u32> {
        self.clock_mhz(dev, clock, true, t)
    }

    /// `nvmlDeviceGetFanSpeed_v2`: every simulated model is a passively cooled data-center
    /// board, so NOT_SUPPORTED (as NVML answers for an H100 SXM or an L4).
    pub fn fan_speed(&self, dev: Dev, _fan: u32) -> NvmlResult<u32> {
        self.physical_only(dev)?;
        Err(ret::NOT_SUPPORTED)
    }

    /// `nvmlDeviceGetViolationStatus`: (reference time µs, violation time ns).
    pub fn violation(&mut self, dev: Dev, policy: u32, t: f64) -> NvmlResult<(u64, u64)> {
        let g = self.physical_only(dev)?;
        let channel = match policy {
            0 => Some(physics::CH_VIOL_POWER),
            1 => Some(physics::CH_VIOL_THERMAL),
            2..=5 | 10 | 11 => None,
            _ => return Err(ret::INVALID_ARGUMENT),
        };
        let ns = match channel {
            Some(ch) => self.integrals(g, t)?.get(ch).copied().unwrap_or(0.0),
            None => 0.0,
        };
        Ok((self.clock.unix_us(t).max(0) as u64, ns as u64))
    }

    /// `nvmlDeviceGetUtilizationRates`: (gpu %, memory %). NOT_SUPPORTED in MIG mode.
    pub fn utilization(&self, dev: Dev, t: f64) -> NvmlResult<(u32, u32)> {
        let g = self.physical_only(dev)?;
        if self.gpu(g)?.mig_enabled {
            return Err(ret::NOT_SUPPORTED);
        }
        let l = physics::gpu_load(&self.scenario, self.seed, g, t);
        Ok((pct(l.graphics), pct(l.dram)))
    }

    /// `nvmlDeviceGetEncoderUtilization` / `…Decoder…`: (%, sampling period µs).
    pub fn codec_utilization(&self, dev: Dev, decoder: bool, t: f64) -> NvmlResult<(u32, u32)> {
        let g = self.physical_only(dev)?;
        if self.gpu(g)?.mig_enabled {
            return Err(ret::NOT_SUPPORTED);
        }
        let l = physics::gpu_load(&self.scenario, self.seed, g, t);
        let v = if decoder { l.decoder } else { l.encoder };
        Ok((pct(v), CODEC_SAMPLING_US))
    }

    /// `nvmlDeviceGetPcieThroughput`, KB/s; counter 0 = TX, 1 = RX.
    pub fn pcie_throughput(&self, dev: Dev, counter: u32, t: f64) -> NvmlResult<u32> {
        let g = self.physical_only(dev)?;
        let l = physics::gpu_load(&self.scenario, self.seed, g, t);
        let bytes = match counter {
            0 => l.pcie_tx,
            1 => l.pcie_rx,
            _ => return Err(ret::INVALID_ARGUMENT),
        };
        Ok((bytes / 1024.0).round() as u32)
    }

    /// `nvmlDeviceGetClockInfo` (current) or `nvmlDeviceGetMaxClockInfo` (max), MHz.
    pub fn clock_mhz(&self, dev: Dev, clock: u32, max: bool, t: f64) -> NvmlResult<u32> {
        let g = self.physical_only(dev)?;
        let m = self.gpu(g)?.model;
        if max {
            return match clock {
                0 | 1 => Ok(m.sm_max_mhz),
                2 => Ok(m.mem_mhz),
                3 => Ok(m.video_max_mhz),
                _ => Err(ret::INVALID_ARGUMENT),
            };
        }
        let r = self.readings(dev, t)?;
        match clock {
            0 | 1 => Ok(r.sm_mhz),
            2 => Ok(r.mem_mhz),
            3 => Ok(r.video_mhz),
            _ => Err(ret::INVALID_ARGUMENT),
        }
    }

    /// `nvmlDeviceGetTemperature` (sensor 0 = GPU), °C.
    pub fn temperature(&self, dev: Dev, sensor: u32, t: f64) -> NvmlResult<u32> {
        if sensor != 0 {
            return Err(ret::INVALID_ARGUMENT);
        }
        Ok(self.readings(dev, t)?.temp_c.round() as u32)
    }

    /// `nvmlDeviceGetTemperatureThreshold`, °C.
    pub fn temperature_threshold(&self, dev: Dev, kind: u32) -> NvmlResult<u32> {
        let g = self.physical_only(dev)?;
        let m = self.gpu(g)?.model;
        let slowdown = m.slowdown_c.round() as u32;
        match kind {
            0 => Ok(slowdown + 5),
            1 => Ok(slowdown),
            2 if m.memory_temp => Ok(95),
            3 => Ok(slowdown - 2),
            2 | 4..=7 => Err(ret::NOT_SUPPORTED),
            _ => Err(ret::INVALID_ARGUMENT),
        }
    }

    /// Clock event (throttle) reasons bitmask.
    pub fn clock_reasons(&self, dev: Dev, t: f64) -> NvmlResult<u64> {
        Ok(self.readings(dev, t)?.reasons)
    }

    /// `nvmlDeviceGetPerformanceState`.
    pub fn pstate(&self, dev: Dev, t: f64) -> NvmlResult<u32> {
        Ok(self.readings(dev, t)?.pstate)
    }

    /// `nvmlDeviceGetTotalEccErrors`: error type 0 = corrected, 1 = uncorrected; counter
    /// type 0 = volatile, 1 = aggregate (both count since scenario start).
    pub fn ecc_total(&self, dev: Dev, error: u32, counter: u32, t: f64) -> NvmlResult<u64> {
        let g = self.physical_only(dev)?;
        if counter > 1 {
            return Err(ret::INVALID_ARGUMENT);
        }
        let c = match error {
            0 => Counter::EccSbe,
            1 => Counter::EccDbe,
            _ => return Err(ret::INVALID_ARGUMENT),
        };
        Ok(self.gpu(g)?.counter(c, t))
    }

    /// `nvmlDeviceGetPcieReplayCounter`.
    pub fn pcie_replays(&self, dev: Dev, t: f64) -> NvmlResult<u32> {
        let g = self.physical_only(dev)?;
        Ok(self.gpu(g)?.counter(Counter::PcieReplay, t) as u32)
    }

    /// `nvmlDeviceGetMemoryInfo_v2`: the MIG instance's slice, or the whole board.
    pub fn memory(&self, dev: Dev, t: f64) -> NvmlResult<Memory> {
        let m = match dev {
            Dev::Gpu(g) => physics::gpu_memory(&self.scenario, self.seed, g, t),
            Dev::Mig(g, uid) => physics::instance_memory(&self.scenario, self.seed, g, uid, t),
        };
        m.ok_or(ret::INVALID_ARGUMENT)
    }

    /// `nvmlDeviceGetBAR1MemoryInfo`: (total, free, used) bytes.
    pub fn bar1(&self, dev: Dev, t: f64) -> NvmlResult<(u64, u64, u64)> {
        let g = self.physical_only(dev)?;
        let m = self.gpu(g)?.model;
        let total = m.bar1_mib * MIB;
        let busy = physics::gpu_load(&self.scenario, self.seed, g, t).activity > 0.0;
        let used = if busy { 34 * MIB } else { 2 * MIB };
        Ok((total, total - used, used))
    }
}
