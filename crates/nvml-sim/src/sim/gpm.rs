//! GPM: support, sample allocation, device and MIG-instance samples, metrics between two
//! samples, NVLink traffic per link (the GPU's samples only).

use super::{Dev, NvmlResult, Sim};
use super::{LINK_SLOTS, SampleData};
use crate::physics::{self, GPM_CHANNELS};
use crate::ret;
use crate::scenario::Target;

impl Sim {
    /// `nvmlGpmQueryDeviceSupport`: Hopper boards only (MIG devices answer for their GPU).
    pub fn gpm_supported(&self, dev: Dev) -> NvmlResult<bool> {
        Ok(self.gpu(dev.gpu())?.model.gpm)
    }

    /// `nvmlGpmSampleAlloc`: a new empty sample id.
    pub fn sample_alloc(&mut self) -> u64 {
        let id = self.take_id();
        self.samples.insert(id, None);
        self.write_census();
        id
    }

    /// `nvmlGpmSampleFree`.
    pub fn sample_free(&mut self, id: u64) -> NvmlResult<()> {
        self.samples.remove(&id).ok_or(ret::INVALID_ARGUMENT)?;
        self.write_census();
        Ok(())
    }

    fn gpm_ready(&self, g: usize, t: f64) -> NvmlResult<()> {
        let gpu = self.gpu(g)?;
        if !gpu.model.gpm || gpu.is_unsupported(&Target::Gpm, t) {
            return Err(ret::NOT_SUPPORTED);
        }
        Ok(())
    }

    /// `nvmlGpmSampleGet` (uid `None`) and `nvmlGpmMigSampleGet` (GPU instance `gi`).
    pub fn sample_get(&mut self, dev: Dev, gi: Option<u32>, id: u64, t: f64) -> NvmlResult<()> {
        let g = self.physical_only(dev)?;
        self.gpm_ready(g, t)?;
        if !self.samples.contains_key(&id) {
            return Err(ret::INVALID_ARGUMENT);
        }
        let uid = match gi {
            None => None,
            Some(gi) => {
                let gpu = self.gpu(g)?;
                let uid = self
                    .mig_devices(g, t)
                    .into_iter()
                    .find(|u| gpu.instances.get(*u).is_some_and(|i| i.gi == gi))
                    .ok_or(ret::INVALID_ARGUMENT)?;
                Some(uid)
            }
        };
        let all = self.integrals(g, t)?;
        let base = physics::gpm_base(uid);
        let mut values = [0.0; GPM_CHANNELS];
        if let Some(src) = all.get(base..base + GPM_CHANNELS) {
            values.copy_from_slice(src);
        }
        let mut links = [[0.0; 2]; LINK_SLOTS];
        if uid.is_none() {
            let n = self.gpu(g)?.model.nvlink_links.min(LINK_SLOTS as u32);
            for link in 0..n {
                let rx = self.link_kib(g, physics::CH_NVLINK_RX, link, t)? as f64;
                let tx = self.link_kib(g, physics::CH_NVLINK_TX, link, t)? as f64;
                links[link as usize] = [rx, tx];
            }
        }
        let data = SampleData {
            gpu: g,
            uid,
            t,
            values,
            links,
        };
        if let Some(slot) = self.samples.get_mut(&id) {
            *slot = Some(data);
        }
        Ok(())
    }

    /// `nvmlGpmMetricsGet`: for each metric id, the average of its curve between the two
    /// samples (the instantaneous value when both were taken at the same time).
    pub fn metrics_get(
        &self,
        s1: u64,
        s2: u64,
        metric_ids: &[u32],
    ) -> NvmlResult<Vec<NvmlResult<f64>>> {
        if s1 == s2 {
            return Err(ret::INVALID_ARGUMENT);
        }
        let a = self
            .samples
            .get(&s1)
            .copied()
            .flatten()
            .ok_or(ret::INVALID_ARGUMENT)?;
        let b = self
            .samples
            .get(&s2)
            .copied()
            .flatten()
            .ok_or(ret::INVALID_ARGUMENT)?;
        if a.gpu != b.gpu || a.uid != b.uid {
            return Err(ret::INVALID_ARGUMENT);
        }
        let dt = b.t - a.t;
        let instant = if dt.abs() < 1e-6 {
            let mut out = vec![
                0.0;
                self.scenario
                    .gpus
                    .get(b.gpu)
                    .map_or(0, physics::channel_count)
            ];
            physics::rates(&self.scenario, self.seed, b.gpu, b.t, &mut out);
            let base = physics::gpm_base(b.uid);
            out.get(base..base + GPM_CHANNELS).map(<[f64]>::to_vec)
        } else {
            None
        };
        let links = self.gpu(b.gpu)?.model.nvlink_links;
        Ok(metric_ids
            .iter()
            .map(|id| {
                // NVLINK_L<n>_RX_PER_SEC (62 + 2n) and _TX_PER_SEC (63 + 2n), MiB/s: the
                // GPU's links only, from what each carried between the samples.
                if let Some((link, dir)) = per_link_metric(*id) {
                    if b.uid.is_some() || link >= links {
                        return Err(ret::NOT_SUPPORTED);
                    }
                    let kib = |s: &SampleData| s.links[link as usize][dir];
                    return Ok(if dt.abs() < 1e-6 {
                        0.0
                    } else {
                        ((kib(&b) - kib(&a)) / dt / 1024.0).max(0.0)
                    });
                }
                let ch = physics::gpm_channel(*id).ok_or(ret::NOT_SUPPORTED)?;
                let v = match &instant {
                    Some(rates) => rates.get(ch).copied().unwrap_or(0.0),
                    None => (b.values[ch] - a.values[ch]) / dt,
                };
                Ok(v.max(0.0))
            })
            .collect())
    }
}

/// The link and direction (0 received, 1 sent) of a per-link NVLink GPM metric id
/// (`NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC` = 62 … `L17_TX_PER_SEC` = 97).
fn per_link_metric(id: u32) -> Option<(u32, usize)> {
    (62..62 + 2 * LINK_SLOTS as u32)
        .contains(&id)
        .then(|| ((id - 62) / 2, ((id - 62) % 2) as usize))
}
