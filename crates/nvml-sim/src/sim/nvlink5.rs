//! NVLink 5's counters (Blackwell and later) through `nvmlDeviceGetFieldValues`: packets and
//! bytes (201–204), the receive, discard and recovery counters (206–215), FEC's symbol and
//! effective errors (221, 219), the bit error rates (222, 220) and the FEC history (235–250),
//! each for one link (`scopeId` the link) or summed over every link (`scopeId` `UINT_MAX`, the
//! form DCGM reads for a GPU's total); and the NVLink ECC total (160) of Hopper and later.
//!
//! Owns the values the simulator gives them: a healthy link that counts its traffic, one
//! FEC-corrected symbol error per GiB it carried, and recoveries and errors left after FEC
//! as the `nvlink_errors` faults give them (`recovery`, `effective`). It must not touch the C ABI (`ffi::fields` copies the answers out).

use super::nvlink::encode_ber;
use super::{Dev, NvmlResult, SCOPE_ALL_LINKS, Sim};
use crate::physics::{CH_NVLINK_RX, CH_NVLINK_TX};
use crate::ret;
use crate::scenario::Counter;

/// Data bytes per simulated NVLink packet: a model choice for the packet counters, not a
/// property of NVLink.
const BYTES_PER_PACKET: u64 = 256;

/// Whether NVML field `id` is one this module answers.
pub(super) fn is_nvlink5_field(id: u32) -> bool {
    matches!(id, 160 | 201..=204 | 206..=215 | 219..=222 | 235..=250)
}

impl Sim {
    /// One of the fields [`is_nvlink5_field`] names, on physical GPU `g`.
    pub(super) fn nvlink5_field(
        &mut self,
        dev: Dev,
        g: usize,
        id: u32,
        scope: u32,
        t: f64,
    ) -> NvmlResult<u64> {
        let model = self.gpu(g)?.model;
        if id == 160 {
            // NVML_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL: the links' ECC counters summed.
            let mut sum = 0u64;
            for link in 0..model.nvlink_links {
                sum = sum.saturating_add(self.nvlink_errors(dev, link, 4, t)?);
            }
            return if model.nvlink_links == 0 {
                Err(ret::NOT_SUPPORTED)
            } else {
                Ok(sum)
            };
        }
        if model.nvlink_generation() < 5 {
            return Err(ret::NOT_SUPPORTED);
        }
        let links: Vec<u32> = if scope == SCOPE_ALL_LINKS {
            (0..model.nvlink_links).collect()
        } else if scope < model.nvlink_links {
            vec![scope]
        } else {
            return Err(ret::INVALID_ARGUMENT);
        };
        match id {
            // Bit error rates: the symbol errors (222) or the effective errors (220) over the
            // bits the links carried since the start.
            220 | 222 => {
                let errors_id = if id == 220 { 219 } else { 221 };
                let (mut errors, mut bits) = (0.0, 0.0);
                for link in links {
                    let kib = self.link_kib(g, CH_NVLINK_TX, link, t)?
                        + self.link_kib(g, CH_NVLINK_RX, link, t)?;
                    errors += self.nvlink5_link_counter(dev, g, errors_id, link, t)? as f64;
                    bits += kib as f64 * 8192.0;
                }
                Ok(encode_ber(if bits > 0.0 { errors / bits } else { 0.0 }))
            }
            _ => {
                let mut sum = 0u64;
                for link in links {
                    sum = sum.saturating_add(self.nvlink5_link_counter(dev, g, id, link, t)?);
                }
                Ok(sum)
            }
        }
    }

    /// A counter of one link.
    fn nvlink5_link_counter(
        &mut self,
        dev: Dev,
        g: usize,
        id: u32,
        link: u32,
        t: f64,
    ) -> NvmlResult<u64> {
        let bytes = |sim: &mut Self, ch: usize| -> NvmlResult<u64> {
            Ok(sim.link_kib(g, ch, link, t)?.saturating_mul(1024))
        };
        Ok(match id {
            201 => bytes(self, CH_NVLINK_TX)? / BYTES_PER_PACKET,
            202 => bytes(self, CH_NVLINK_TX)?,
            203 => bytes(self, CH_NVLINK_RX)? / BYTES_PER_PACKET,
            204 => bytes(self, CH_NVLINK_RX)?,
            // Symbol errors FEC corrected: one per GiB carried, sent plus received.
            221 => (bytes(self, CH_NVLINK_TX)? + bytes(self, CH_NVLINK_RX)?) >> 30,
            // Recovery events and successful recoveries: the link's recovery counter.
            213 | 215 => self.nvlink_errors(dev, link, 1, t)?,
            // Errors left after FEC: the `nvlink_errors` faults' `effective`.
            219 => self.gpu(g)?.link_counter(Counter::NvlinkEffective, link, t),
            // Malformed, overrun, receive, remote, general, integrity, discards, failed
            // recoveries, effective errors and the FEC history: a healthy link's 0.
            _ => 0,
        })
    }
}
