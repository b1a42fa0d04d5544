//! The holders of a GPU that NVML has lost: its entities leave the snapshot, so the join no
//! longer has its pods; this remembers each GPU's `gpu_allocation_info` rows while it answers
//! and gives them back while it is lost (the page, `/status` and the Events name the pod that
//! was hit).
//!
//! State over ticks only; it must not call a source or build labels.

use std::collections::HashMap;
use std::sync::Arc;

use crate::snapshot::{HolderMap, Labels, LostHolders, Snapshot};

/// One computed answer and its inputs.
struct Answer {
    join: Arc<HolderMap>,
    /// Every device's (UUID, up).
    devices: Vec<(String, bool)>,
    lost: Vec<LostHolders>,
}

/// The holders of every GPU as last seen while NVML answered for it, so that a GPU that is
/// lost (its entities gone from the snapshot) keeps them for the page and the Events.
#[derive(Default)]
pub struct LastHolders {
    by_gpu: HashMap<String, Vec<(Option<u32>, Labels)>>,
    /// The last answer and what it was computed from: an unchanged node costs a comparison
    /// per tick.
    last: Option<Answer>,
}

impl LastHolders {
    /// How many GPUs have remembered holders.
    #[cfg(feature = "sim")]
    pub fn gpus(&self) -> usize {
        self.by_gpu.len()
    }

    /// Remembers this tick's holders of the GPUs that answer; returns the remembered holders
    /// of those NVML has lost. GPUs that left the device list are forgotten.
    pub fn update(&mut self, snap: &Snapshot, join: &Arc<HolderMap>) -> Vec<LostHolders> {
        let same_devices = |d: &[(String, bool)]| {
            d.len() == snap.devices.len()
                && d.iter()
                    .zip(&snap.devices)
                    .all(|((u, up), dev)| *u == dev.uuid && *up == dev.up)
        };
        if let Some(a) = &self.last
            && Arc::ptr_eq(&a.join, join)
            && same_devices(&a.devices)
        {
            return a.lost.clone();
        }
        let lost = self.compute(snap, join);
        self.last = Some(Answer {
            join: Arc::clone(join),
            devices: snap
                .devices
                .iter()
                .map(|d| (d.uuid.clone(), d.up))
                .collect(),
            lost: lost.clone(),
        });
        lost
    }

    fn compute(&mut self, snap: &Snapshot, join: &HolderMap) -> Vec<LostHolders> {
        let mut now: HashMap<&str, Vec<(Option<u32>, Labels)>> = HashMap::new();
        for (i, labels) in &join.allocations {
            if let Some(e) = snap.entities.get(*i) {
                now.entry(e.id.uuid.as_str())
                    .or_default()
                    .push((e.id.mig.as_ref().map(|m| m.gpu_instance_id), labels.clone()));
            }
        }
        let mut lost = Vec::new();
        for d in &snap.devices {
            if d.up {
                match now.remove(d.uuid.as_str()) {
                    Some(rows) => {
                        self.by_gpu.insert(d.uuid.clone(), rows);
                    }
                    None => {
                        self.by_gpu.remove(&d.uuid);
                    }
                }
            } else if let Some(rows) = self.by_gpu.get(&d.uuid) {
                lost.push(LostHolders {
                    uuid: d.uuid.clone(),
                    rows: rows.clone(),
                });
            }
        }
        self.by_gpu
            .retain(|uuid, _| snap.devices.iter().any(|d| &d.uuid == uuid));
        lost
    }
}
