//! GPM (profiling) metrics: one GPM sample per entity per tick, metrics computed against the
//! previous tick's sample (Hopper and later).
//!
//! It must not read anything but GPM.

use super::book::clone_err;
use super::state::{EntityState, GpuState, TickCache};

use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

#[allow(clippy::too_many_arguments)]
pub(super) fn read_gpm(
    nvml: &'static Nvml,
    dev: &Device<'static>,
    parent: Option<(&Device<'static>, u32)>,
    gpu: &mut GpuState,
    ent: &mut EntityState,
    ids: &[u32],
    cache: &mut TickCache,
    elsewhere: bool,
) {
    let owner = parent.map(|(p, _)| p).unwrap_or(dev);
    let supported = *gpu
        .gpm_supported
        .get_or_insert_with(|| owner.gpm_support().unwrap_or(false));
    let fail = |cache: &mut TickCache, e: &NvmlError| {
        for id in ids {
            cache.gpm.insert(*id, Err(clone_err(e)));
        }
    };
    if !supported {
        if elsewhere {
            return; // served by another source (DCGM): left empty, not unsupported
        }
        fail(cache, &NvmlError::NotSupported);
        return;
    }
    let sample = match parent {
        Some((p, gi)) => p.gpm_mig_sample(gi),
        None => dev.gpm_sample(),
    };
    let sample = match sample {
        Ok(s) => s,
        Err(e) => {
            fail(cache, &e);
            return;
        }
    };
    let Some(prev) = ent.gpm_prev.replace(sample) else {
        return; // first tick: nothing to average over yet
    };
    let Some(cur) = ent.gpm_prev.as_ref() else {
        return;
    };
    let metric_ids: Vec<(u32, GpmMetricId)> = ids
        .iter()
        .filter_map(|id| GpmMetricId::try_from(*id).ok().map(|m| (*id, m)))
        .collect();
    let wanted: Vec<GpmMetricId> = metric_ids.iter().map(|(_, m)| *m).collect();
    match nvml_wrapper::gpm::gpm_metrics_get(nvml, &prev, cur, &wanted) {
        Ok(results) => {
            for ((id, _), r) in metric_ids.iter().zip(results) {
                cache.gpm.insert(*id, r.map(|m| m.value));
            }
        }
        Err(e) => fail(cache, &e),
    }
    for id in ids {
        cache.gpm.entry(*id).or_insert(Err(NvmlError::NotSupported));
    }
}
