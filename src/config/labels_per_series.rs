//! The labels-per-series guard on a validated [`Config`]: which labels the exporter itself may
//! put on a series under this configuration, checked against `--max-labels-per-series` once
//! the counters are loaded (the arithmetic is `cardinality.rs`'s), giving the room left for
//! the pod labels ([`Config::fit_labels`], run by [`Config::load_counters`]; the room travels
//! with the loaded set, never into `Config`); and the guard a reloaded counters file must pass
//! ([`Config::counters_guard`]: the same checks, the family filter's included). It must not
//! read files or touch NVML.

use super::cardinality::{self, CardinalityError};
use super::{Config, ConfigError};
use crate::catalogue::csv::CounterSet;
use crate::catalogue::labels;
use crate::exposition::filter::SeriesLabels;

impl Config {
    /// The labels-per-series guard for `counters`: refuses when a family's widest series would
    /// have more than `--max-labels-per-series` labels, and gives the pod labels
    /// (`--kubernetes-enable-pod-labels`) the room left, refusing when none is. `Some(room)`
    /// with pod labels on, `None` otherwise.
    pub fn fit_labels(&self, counters: &CounterSet) -> Result<Option<usize>, ConfigError> {
        let pod_labels = self
            .kubernetes
            .as_ref()
            .is_some_and(|k| k.join.pod_labels.is_some());
        let room = cardinality::fit_labels(
            counters,
            &self.series_labels(),
            &self.exposition.cardinality,
            self.exposition.max_labels_per_series,
            pod_labels,
        )?;
        Ok(pod_labels.then_some(room))
    }

    /// The start-up checks for a new version of the counters file while running (its hot
    /// reload), the pod labels given `pod_room` at start ([`Config::fit_labels`]): refuses a
    /// version under which the family filter would serve no GPU family (as start-up does),
    /// whose widest family would break `--max-labels-per-series`, or that would leave the pod
    /// labels less room than they were given at start (the allowlist's limit is fixed then).
    pub fn counters_guard(
        &self,
        pod_room: Option<usize>,
    ) -> impl Fn(&CounterSet) -> Result<(), CardinalityError> + Send + 'static {
        let labels = self.series_labels();
        let filter = self.exposition.cardinality.clone();
        let own_families = self.exposition.own_families;
        let family_filters = self.exposition.family_filters.clone();
        let limit = self.exposition.max_labels_per_series;
        move |counters: &CounterSet| {
            cardinality::check_families(counters, &filter, own_families, &family_filters)?;
            let room =
                cardinality::fit_labels(counters, &labels, &filter, limit, pod_room.is_some())?;
            match pod_room {
                Some(given) if room < given => {
                    Err(CardinalityError::PodLabelRoom { room, limit, given })
                }
                _ => Ok(()),
            }
        }
    }

    /// The labels the exporter itself may put on a series, as this configuration spells them
    /// (the names from `catalogue::labels`).
    fn series_labels(&self) -> SeriesLabels {
        let old = self.exposition.use_old_namespace;
        let mut identity: Vec<String> = labels::IDENTITY
            .iter()
            .map(|l| l.spelt(old).to_owned())
            .collect();
        if self.hostname.is_some() {
            identity.push(self.exposition.profile.host_label().into());
        }
        let description = labels::DESCRIPTION
            .iter()
            .map(|l| l.name.to_owned())
            .collect();
        let mut holder: Vec<&'static str> = Vec::new();
        let mut allocation: Vec<&'static str> = Vec::new();
        if let Some(k) = &self.kubernetes {
            holder
                .extend([labels::CONTAINER, labels::NAMESPACE, labels::POD].map(|l| l.spelt(old)));
            allocation.extend(
                [
                    labels::RESOURCE,
                    labels::NAMESPACE,
                    labels::POD,
                    labels::CONTAINER,
                    labels::POD_UID,
                    labels::WORKLOAD_KIND,
                    labels::WORKLOAD_NAME,
                ]
                .map(|l| l.name),
            );
            // Counted whether or not DRA is on: the budget is the same with and without claims.
            holder.extend(labels::DRA.map(|l| l.name));
            allocation.extend(labels::DRA.map(|l| l.name));
            if k.join.pod_uid {
                holder.push(labels::POD_UID.name);
            }
            if k.join.virtual_gpus {
                holder.push(labels::VGPU.name);
                allocation.push(labels::VGPU.name);
            }
        }
        if self.hpc_job_mapping_dir.is_some() {
            holder.push(labels::HPC_JOB.name);
        }
        let owned = |v: Vec<&str>| v.into_iter().map(String::from).collect();
        SeriesLabels {
            identity,
            description,
            full: self.exposition.shape.full(),
            holder: owned(holder),
            allocation: owned(allocation),
        }
    }
}
