//! Pod metadata that settles before a pod's labels are written, so that a pod's series never
//! change their labels between ticks for the kubelet and the API server answering at
//! different moments (a pod restart, a force deletion).
//!
//! The kubelet's pod-resources list and the API server's pod watch are two sources that move
//! at their own pace. A pod the kubelet lists before the pod watch has delivered it would be
//! written for a tick or two without `pod_uid`, its workload and its pod labels, and then with
//! them: two series for one pod. A pod deleted from the API (a force deletion) while the
//! kubelet still lists it would lose those labels for its last ticks. So a GPU-holding pod the
//! kubelet lists and the index lacks is held back for up to [`META_GRACE`] (its devices stay
//! unattributed meanwhile, as they were before the pod started), and a pod whose metadata the
//! index dropped while the kubelet still lists it keeps the metadata it was written with.
//!
//! State over ticks only; it must not call a source or build labels (that is `join`'s).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use crate::sources::kube::meta::{PodIndex, PodMeta};
use crate::sources::kubelet::client::KubeletView;

/// The longest a GPU-holding pod the kubelet lists waits for its metadata before it is
/// attributed without it (an API server that is down must not hide new pods for long).
pub const META_GRACE: f64 = 10.0;

/// A pod's (namespace, name).
pub type PodKey = (String, String);

/// What the join reads this tick: the index to use and the pods to leave out for now.
pub struct Settled {
    /// The pod index, with the remembered metadata of pods the index dropped while the kubelet
    /// still lists them (`None`: pod metadata is off).
    pub index: Option<Arc<PodIndex>>,
    /// Pods the kubelet lists that wait for their metadata.
    pub pending: BTreeSet<PodKey>,
}

/// The memory of the pods the kubelet lists: when each was first listed without metadata,
/// and the metadata each was last written with.
#[derive(Default)]
pub struct Settle {
    first_seen: HashMap<PodKey, f64>,
    written: HashMap<PodKey, Arc<PodMeta>>,
    /// The last merged index: (the source index it was built from, the pods added, the result).
    merged: Option<(Arc<PodIndex>, BTreeSet<PodKey>, Arc<PodIndex>)>,
}

impl Settle {
    /// (pods waiting for metadata, pods remembered with their metadata).
    #[cfg(feature = "sim")]
    pub fn sizes(&self) -> (usize, usize) {
        (self.first_seen.len(), self.written.len())
    }

    /// The index and pending pods for this tick at `now` (Unix seconds).
    pub fn apply(
        &mut self,
        view: Option<&KubeletView>,
        index: Option<Arc<PodIndex>>,
        now: f64,
    ) -> Settled {
        let (Some(view), Some(index)) = (view, index.as_ref()) else {
            self.first_seen.clear();
            self.written.clear();
            self.merged = None;
            return Settled {
                index,
                pending: BTreeSet::new(),
            };
        };
        let mut pending = BTreeSet::new();
        let mut kept: Vec<(PodKey, Arc<PodMeta>)> = Vec::new();
        let mut listed: BTreeSet<PodKey> = BTreeSet::new();
        for pod in view.pods.iter().filter(|p| {
            p.containers
                .iter()
                .any(|c| !c.devices.is_empty() || !c.claims.is_empty())
        }) {
            let key = (pod.namespace.clone(), pod.name.clone());
            listed.insert(key.clone());
            if let Some(m) = index.get(&pod.namespace, &pod.name) {
                self.first_seen.remove(&key);
                self.written.insert(key, Arc::clone(m));
            } else if let Some(m) = self.written.get(&key) {
                kept.push((key, Arc::clone(m)));
            } else {
                let since = *self.first_seen.entry(key.clone()).or_insert(now);
                if now - since < META_GRACE {
                    pending.insert(key);
                }
            }
        }
        self.first_seen.retain(|k, _| listed.contains(k));
        self.written.retain(|k, _| listed.contains(k));
        if kept.is_empty() {
            self.merged = None;
            return Settled {
                index: Some(Arc::clone(index)),
                pending,
            };
        }
        let keys: BTreeSet<PodKey> = kept.iter().map(|(k, _)| k.clone()).collect();
        if let Some((from, with, merged)) = &self.merged
            && Arc::ptr_eq(from, index)
            && *with == keys
        {
            return Settled {
                index: Some(Arc::clone(merged)),
                pending,
            };
        }
        let merged = Arc::new(PodIndex::from_shared(
            index
                .iter()
                .cloned()
                .chain(kept.into_iter().map(|(_, m)| m)),
        ));
        self.merged = Some((Arc::clone(index), keys, Arc::clone(&merged)));
        Settled {
            index: Some(merged),
            pending,
        }
    }
}
