//! `nvmlDeviceGetFieldValues` entries: which field ids a model answers and with what value.

use super::{Dev, NvmlResult, SCOPE_ALL_LINKS, Sim};
use crate::physics;
use crate::ret;
use crate::scenario::{Counter, Target};

/// `NVML_FI_DEV_GET_GPU_RECOVERY_ACTION` (`nvml.h`, driver 570 and later).
const FIELD_RECOVERY_ACTION: u32 = 230;

impl Sim {
    /// One entry of `nvmlDeviceGetFieldValues` with `scopeId` = `UINT_MAX`: for the NVLink
    /// throughput fields the sum over every link, for the others the only value there is.
    pub fn field(&mut self, dev: Dev, id: u32, t: f64) -> NvmlResult<u64> {
        self.field_scoped(dev, id, SCOPE_ALL_LINKS, t)
    }

    /// One entry of `nvmlDeviceGetFieldValues`: the value or its per-entry error code.
    /// MIG devices answer NOT_SUPPORTED for every field. `scope` (the entry's `scopeId`)
    /// matters only for the NVLink throughput fields (138, 139), as in `nvml.h`: a link index
    /// reads that link (INVALID_ARGUMENT for a link the board does not have), `UINT_MAX` the
    /// sum over every link. Scope 0 is link 0, not the sum.
    pub fn field_scoped(&mut self, dev: Dev, id: u32, scope: u32, t: f64) -> NvmlResult<u64> {
        use nvml_wrapper_sys::bindings::field_id::*;
        let g = self.physical_only(dev)?;
        let gpu = self.gpu(g)?;
        if gpu.is_unsupported(&Target::Field(id), t) {
            return Err(ret::NOT_SUPPORTED);
        }
        let model = gpu.model;
        let nvlink = model.nvlink_links > 0;
        let counter = |c: Counter| Ok(gpu.counter(c, t));
        let need_nvlink = || {
            if nvlink {
                Ok(())
            } else {
                Err(ret::NOT_SUPPORTED)
            }
        };
        match id {
            NVML_FI_DEV_ECC_SBE_VOL_TOTAL | NVML_FI_DEV_ECC_SBE_AGG_TOTAL => {
                counter(Counter::EccSbe)
            }
            NVML_FI_DEV_ECC_DBE_VOL_TOTAL | NVML_FI_DEV_ECC_DBE_AGG_TOTAL => {
                counter(Counter::EccDbe)
            }
            NVML_FI_DEV_RETIRED_SBE => counter(Counter::RetiredSbe),
            NVML_FI_DEV_RETIRED_DBE => counter(Counter::RetiredDbe),
            NVML_FI_DEV_RETIRED_PENDING => counter(Counter::RetiredPending),
            NVML_FI_DEV_REMAPPED_COR => counter(Counter::RemapCorrectable),
            NVML_FI_DEV_REMAPPED_UNC => counter(Counter::RemapUncorrectable),
            NVML_FI_DEV_REMAPPED_PENDING => counter(Counter::RemapPending),
            NVML_FI_DEV_REMAPPED_FAILURE => counter(Counter::RemapFailure),
            NVML_FI_DEV_PCIE_REPLAY_COUNTER => counter(Counter::PcieReplay),
            NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL => {
                need_nvlink()?;
                counter(Counter::NvlinkCrcFlit)
            }
            NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL => {
                need_nvlink()?;
                counter(Counter::NvlinkCrcData)
            }
            NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL => {
                need_nvlink()?;
                counter(Counter::NvlinkReplay)
            }
            NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL => {
                need_nvlink()?;
                counter(Counter::NvlinkRecovery)
            }
            NVML_FI_DEV_NVLINK_LINK_COUNT => {
                need_nvlink()?;
                Ok(u64::from(model.nvlink_links))
            }
            NVML_FI_DEV_MEMORY_TEMP => {
                if !model.memory_temp {
                    return Err(ret::NOT_SUPPORTED);
                }
                Ok(self.readings(dev, t)?.mem_temp_c.round() as u64)
            }
            NVML_FI_DEV_POWER_INSTANT => Ok(u64::from(self.power_mw(dev, t)?)),
            NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION => self.energy_mj(dev, t),
            NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX | NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX => {
                need_nvlink()?;
                let ch = if id == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX {
                    physics::CH_NVLINK_TX
                } else {
                    physics::CH_NVLINK_RX
                };
                if scope != SCOPE_ALL_LINKS {
                    return self.link_kib(g, ch, scope, t);
                }
                Ok(self.integrals(g, t)?.get(ch).copied().unwrap_or(0.0) as u64)
            }
            // NVLink 5's counters, error rates and FEC history, and the NVLink ECC total.
            id if super::nvlink5::is_nvlink5_field(id) => self.nvlink5_field(dev, g, id, scope, t),
            NVML_FI_DEV_NVLINK_BANDWIDTH_C0_L0 => {
                need_nvlink()?;
                let links = f64::from(model.nvlink_links);
                let v = self.integrals(g, t)?;
                let total = v.get(physics::CH_NVLINK_TX).copied().unwrap_or(0.0)
                    + v.get(physics::CH_NVLINK_RX).copied().unwrap_or(0.0);
                Ok((total / links) as u64)
            }
            // Clock-event reason times (ns): the power cap and software thermal slowdown
            // accrue with the simulated power and thermal violations; the others stay 0.
            NVML_FI_DEV_PERF_POLICY_POWER => Ok(self.violation(dev, 0, t)?.1),
            NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN => Ok(self.violation(dev, 1, t)?.1),
            NVML_FI_DEV_PERF_POLICY_SYNC_BOOST
            | NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN
            | NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN => Ok(0),
            // NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (230): a model choice, documented in
            // scenarios/README.md: a GPU reset (1) once a double-bit ECC error or a pending
            // row remap is there, none (0) otherwise.
            FIELD_RECOVERY_ACTION => {
                let reset = gpu.counter(Counter::EccDbe, t) > 0
                    || gpu.counter(Counter::RemapPending, t) > 0;
                Ok(u64::from(reset))
            }
            _ => Err(ret::NOT_SUPPORTED),
        }
    }
}
