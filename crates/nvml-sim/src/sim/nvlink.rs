//! NVLink per link and the NVSwitch fabric registration: the semantics of
//! `nvmlDeviceGetNvLinkState`, `nvmlDeviceGetNvLinkErrorCounter`, the NVLink throughput fields
//! with a link as `scopeId`, and `nvmlDeviceGetGpuFabricInfo` / `…InfoV`.
//!
//! Owns which return code each situation gets and how a GPU's NVLink traffic splits over its
//! up links. It must not touch the C ABI (`ffi::nvlink` copies the answers out) nor the global
//! state; link and fabric faults are resolved in `scenario`.

use nvml_wrapper_sys::bindings::{NVML_GPU_FABRIC_STATE_COMPLETED, nvmlReturn_t};

use super::{Dev, NvmlResult, Sim};
use crate::curves;
use crate::ret;
use crate::scenario::{Counter, FabricHealth, Gpu};

/// `scopeId` of an NVLink throughput field that asks for the sum over every link (`UINT_MAX`
/// in `nvml.h`); any other scope is a link index.
pub const SCOPE_ALL_LINKS: u32 = u32::MAX;

/// What `nvmlDeviceGetGpuFabricInfoV` (v3) reports; v1 and v2 are prefixes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FabricInfo {
    pub cluster_uuid: [u8; 16],
    pub clique_id: u32,
    /// `nvmlGpuFabricState_t`.
    pub state: u8,
    /// `nvmlReturn_t` of the registration.
    pub status: nvmlReturn_t,
    pub health_mask: u32,
    pub health_summary: u8,
}

/// The share of `delta` KiB that `link` carries when the links of `mask` share it equally:
/// the k-th up link gets `(delta + k) / n`, which sums to `delta` exactly over the n links and
/// never decreases as `delta` grows.
fn share(delta: u64, mask: u32, link: u32) -> u64 {
    if link >= 32 || mask & (1u32 << link) == 0 {
        return 0;
    }
    let below = (mask & ((1u32 << link) - 1)).count_ones();
    let n = u64::from(mask.count_ones());
    delta.saturating_add(u64::from(below)) / n
}

impl Sim {
    /// The GPU behind `dev` for a per-link call: MIG devices and boards without NVLink answer
    /// NOT_SUPPORTED for every link, a link the board does not have INVALID_ARGUMENT.
    fn link_gpu(&self, dev: Dev, link: u32) -> NvmlResult<&Gpu> {
        let gpu = self.gpu(self.physical_only(dev)?)?;
        if gpu.model.nvlink_links == 0 {
            return Err(ret::NOT_SUPPORTED);
        }
        if link >= gpu.model.nvlink_links {
            return Err(ret::INVALID_ARGUMENT);
        }
        Ok(gpu)
    }

    /// `nvmlDeviceGetNvLinkState`: whether the link is active at `t`.
    pub fn nvlink_state(&self, dev: Dev, link: u32, t: f64) -> NvmlResult<bool> {
        Ok(self.link_gpu(dev, link)?.link_up(link, t))
    }

    /// `nvmlDeviceGetNvLinkErrorCounter`: replay (0), recovery (1), CRC flit (2), CRC data
    /// (3) from the `nvlink_errors` faults; ECC data (4) is 0 where the architecture serves it
    /// (Hopper, Blackwell) and NOT_SUPPORTED elsewhere; other counters INVALID_ARGUMENT.
    pub fn nvlink_errors(&self, dev: Dev, link: u32, counter: u32, t: f64) -> NvmlResult<u64> {
        let gpu = self.link_gpu(dev, link)?;
        let c = match counter {
            0 => Counter::NvlinkReplay,
            1 => Counter::NvlinkRecovery,
            2 => Counter::NvlinkCrcFlit,
            3 => Counter::NvlinkCrcData,
            4 if gpu.model.nvlink_ecc_counter() => return Ok(0),
            4 => return Err(ret::NOT_SUPPORTED),
            _ => return Err(ret::INVALID_ARGUMENT),
        };
        Ok(gpu.link_counter(c, link, t))
    }

    /// Integrated channels of GPU `g` at `at`, a time at which its up links change (cached).
    fn link_mark(&mut self, g: usize, at: f64) -> NvmlResult<Vec<f64>> {
        let key = (g, at.to_bits());
        if let Some(v) = self.link_marks.get(&key) {
            return Ok(v.clone());
        }
        let v = self.integrals(g, at)?;
        self.link_marks.insert(key, v.clone());
        Ok(v)
    }

    /// KiB of integrated channel `ch` (NVLink TX or RX) that link `link` of GPU `g` has
    /// carried up to `t`. Between two changes of the set of up links, the GPU's traffic is
    /// shared equally by the links up then, so the links' values sum to the GPU total exactly
    /// and each only grows. Traffic counted while no link is up (only the interpolated rest
    /// of the second in which the last link went down) stays with the links up before.
    pub(super) fn link_kib(&mut self, g: usize, ch: usize, link: u32, t: f64) -> NvmlResult<u64> {
        let (starts, masks) = {
            let gpu = self.gpu(g)?;
            if link >= gpu.model.nvlink_links {
                return Err(ret::INVALID_ARGUMENT);
            }
            let mut starts = vec![0.0];
            starts.extend(gpu.link_breaks().into_iter().filter(|b| *b <= t));
            let masks: Vec<u32> = starts.iter().map(|s| gpu.links_up(*s)).collect();
            (starts, masks)
        };
        let at_t = self.integrals(g, t)?.get(ch).copied().unwrap_or(0.0) as u64;
        let mut carriers = masks.iter().copied().find(|m| *m != 0).unwrap_or(0);
        let mut before = 0u64;
        let mut value = 0u64;
        for (i, mask) in masks.iter().enumerate() {
            let end = match starts.get(i + 1) {
                Some(next) => self.link_mark(g, *next)?.get(ch).copied().unwrap_or(0.0) as u64,
                None => at_t,
            };
            if *mask != 0 {
                carriers = *mask;
            }
            value = value.saturating_add(share(end.saturating_sub(before), carriers, link));
            before = end;
        }
        Ok(value)
    }

    /// The scenario's NVSwitch fabric identity: cluster UUID and clique id, derived from the
    /// scenario name (the same for every GPU of the scenario, whatever the seed).
    fn fabric_identity(&self) -> ([u8; 16], u32) {
        let k = curves::key(&[curves::hash_str(&self.scenario.name), 0x6661_6272_6963]);
        let mut uuid = [0u8; 16];
        uuid[..8].copy_from_slice(&curves::mix(k, 1).to_be_bytes());
        uuid[8..].copy_from_slice(&curves::mix(k, 2).to_be_bytes());
        // An RFC 4122 version-4 layout, like the UUIDs fabric managers hand out.
        uuid[6] = (uuid[6] & 0x0F) | 0x40;
        uuid[8] = (uuid[8] & 0x3F) | 0x80;
        let clique = (curves::mix(k, 3) % 0x7FFF) as u32 + 1;
        (uuid, clique)
    }

    /// `nvmlDeviceGetGpuFabricInfo(V)`: NOT_SUPPORTED off an NVSwitch fabric (and on MIG
    /// devices). Normally registered (state completed, status success, healthy) with the
    /// scenario's cluster UUID and clique id; a `fabric` fault replaces what it names. A GPU
    /// whose registration has not completed successfully has no cluster UUID or clique id, and
    /// no health unless the fault gives one.
    pub fn fabric(&self, dev: Dev, t: f64) -> NvmlResult<FabricInfo> {
        let gpu = self.gpu(self.physical_only(dev)?)?;
        if !gpu.model.fabric() {
            return Err(ret::NOT_SUPPORTED);
        }
        let fault = gpu.fabric_at(t);
        let state = fault
            .and_then(|f| f.state)
            .unwrap_or(NVML_GPU_FABRIC_STATE_COMPLETED as u8);
        let status = fault.and_then(|f| f.status).unwrap_or(ret::SUCCESS);
        let registered =
            u32::from(state) == NVML_GPU_FABRIC_STATE_COMPLETED && status == ret::SUCCESS;
        let health = fault
            .and_then(|f| f.health)
            .or(registered.then_some(FabricHealth::Healthy));
        let (cluster_uuid, clique_id) = if registered {
            self.fabric_identity()
        } else {
            ([0; 16], 0)
        };
        Ok(FabricInfo {
            cluster_uuid,
            clique_id,
            state,
            status,
            health_mask: health.map_or(0, FabricHealth::mask),
            health_summary: health.map_or(0, FabricHealth::summary),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_sum_exactly_and_grow() {
        let mask = 0b1011_0111u32;
        for delta in [0u64, 1, 5, 6, 7, 1_000_003] {
            let sum: u64 = (0..18).map(|l| share(delta, mask, l)).sum();
            assert_eq!(sum, delta, "{delta}");
            for l in 0..18 {
                assert!(share(delta + 1, mask, l) >= share(delta, mask, l));
            }
        }
        assert_eq!(share(100, mask, 3), 0);
        assert_eq!(share(100, 0, 0), 0);
        assert_eq!(share(100, u32::MAX, 40), 0);
    }
}

/// A bit error rate in NVML's NVLink BER encoding: mantissa (1–9) in bits 8–11, exponent in
/// bits 0–7, the rate being mantissa × 10^-exponent; a rate of 0 (or one below 10^-254) is
/// mantissa 15 with exponent 255.
pub(super) fn encode_ber(ber: f64) -> u64 {
    const ZERO: u64 = (15 << 8) | 255;
    if ber.is_nan() || ber <= 0.0 {
        return ZERO;
    }
    let mut exp = (-ber.log10()).ceil().max(0.0) as i32;
    let mut mantissa = (ber * 10f64.powi(exp)).round() as u64;
    if mantissa >= 10 {
        mantissa = (mantissa + 5) / 10;
        exp -= 1;
    }
    if mantissa == 0 || exp > 254 {
        return ZERO;
    }
    (mantissa.min(9) << 8) | exp.clamp(0, 254) as u64
}

#[cfg(test)]
mod ber_tests {
    use super::encode_ber;

    #[test]
    fn ber_is_encoded_as_nvml_encodes_it() {
        assert_eq!(encode_ber(0.0), (15 << 8) | 255);
        assert_eq!(encode_ber(1e-10), (1 << 8) | 10);
        // One error per GiB carried: 1 / 2^33 bits ≈ 1.16e-10.
        assert_eq!(encode_ber(1.0 / 8_589_934_592.0), (1 << 8) | 10);
        assert_eq!(encode_ber(3.4e-12), (3 << 8) | 12);
        assert_eq!(encode_ber(9.6e-7), (1 << 8) | 6);
    }
}
