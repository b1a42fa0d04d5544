//! The profiling fields common to every GPU model of a node, for the profiles that serve only
//! those (`--compatibility dcgm-4.10`, `Profile::common_profiling_set`): on a node whose
//! selected GPUs are of more than one model, a profiling (`DCGM_FI_PROF_*`) field is served
//! only when every one of them supports it, and withheld on all of them otherwise, listed with
//! why (`snapshot::Withheld`).
//!
//! "Supported" is what the tick already decided: a field is supported on a GPU unless the
//! reader (NVML, GPM included) or the DCGM client found it unsupported on the GPU or one of
//! its MIG instances (`SampleStats::unsupported`, `gpu_exporter_field_unsupported`). The set is
//! computed each tick over the selected GPUs that are up ([`common_set`], pure), so a GPU that
//! is lost or comes back changes it at once; [`CommonProfiling`] logs it once when it is
//! decided and once at each change.
//!
//! It must not read NVML or DCGM; it only compares what the tick found and clears slots.

use std::collections::{BTreeMap, BTreeSet};

use tracing::info;

use crate::catalogue::Getter;
use crate::catalogue::csv::CounterSet;
use crate::snapshot::{DeviceStatus, EntitySample, Unsupported, Withheld};

/// One selected GPU that is up, with the profiling fields it supports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuFields<'a> {
    /// GPU index.
    pub gpu: u32,
    /// Model name.
    pub model: &'a str,
    /// The profiling fields it supports, of those configured.
    pub supported: BTreeSet<&'static str>,
}

/// What a node of mixed GPU models serves of the configured profiling fields.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommonSet {
    /// The models, sorted.
    pub models: Vec<String>,
    /// The fields every GPU supports: served, in the order given.
    pub common: Vec<&'static str>,
    /// The fields some GPUs support and others do not: withheld on all, in the order given.
    pub withheld: Vec<Withheld>,
}

/// The common set of `fields` (the configured profiling fields) over `gpus`: `None` unless
/// the GPUs are of more than one model (then each GPU serves what it supports). A field no
/// GPU supports is in neither list (it is unsupported everywhere, and listed so).
pub fn common_set(fields: &[&'static str], gpus: &[GpuFields<'_>]) -> Option<CommonSet> {
    let models: BTreeSet<&str> = gpus.iter().map(|g| g.model).collect();
    if models.len() < 2 {
        return None;
    }
    let mut set = CommonSet {
        models: models.iter().map(|m| (*m).to_owned()).collect(),
        ..CommonSet::default()
    };
    let mut seen = BTreeSet::new();
    for &field in fields.iter().filter(|f| seen.insert(**f)) {
        let mut lacking: Vec<(u32, String)> = gpus
            .iter()
            .filter(|g| !g.supported.contains(field))
            .map(|g| (g.gpu, g.model.to_owned()))
            .collect();
        lacking.sort();
        if lacking.is_empty() {
            set.common.push(field);
        } else if lacking.len() < gpus.len() {
            let reason = reason(&lacking);
            set.withheld.push(Withheld {
                field,
                lacking,
                reason,
            });
        }
    }
    Some(set)
}

/// Why a field is withheld from every GPU, naming the GPUs of each model that lack it.
fn reason(lacking: &[(u32, String)]) -> String {
    let mut by_model: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (gpu, model) in lacking {
        by_model.entry(model).or_default().push(*gpu);
    }
    let who: Vec<String> = by_model
        .iter()
        .map(|(model, gpus)| {
            let list: Vec<String> = gpus.iter().map(u32::to_string).collect();
            let noun = if gpus.len() == 1 { "GPU" } else { "GPUs" };
            format!("{noun} {} of model {model}", list.join(", "))
        })
        .collect();
    let verb = if lacking.len() == 1 { "does" } else { "do" };
    format!(
        "withheld on every GPU: {} {verb} not support it, and as dcgm-exporter 4.10 does on a \
         node of mixed GPU models, --compatibility dcgm-4.10 serves only the profiling fields \
         every GPU supports; --compatibility native serves it on the GPUs that support it",
        who.join(" and ")
    )
}

/// The configured profiling fields: the counters file's GPM rows, in its order.
fn profiling_fields(counters: &CounterSet) -> Vec<&'static str> {
    counters
        .metrics()
        .filter(|r| matches!(r.field.getter, Getter::Gpm(..)))
        .map(|r| r.field.name)
        .collect()
}

/// Each selected GPU that is up this tick (`devices`), with the configured profiling fields
/// (`fields`) not found unsupported on it or one of its instances (`unsupported`).
fn per_gpu<'a>(
    devices: &'a [DeviceStatus],
    unsupported: &[Unsupported],
    fields: &[&'static str],
) -> Vec<GpuFields<'a>> {
    devices
        .iter()
        .filter(|d| d.up)
        .map(|d| GpuFields {
            gpu: d.gpu,
            model: &d.model_name,
            supported: fields
                .iter()
                .copied()
                .filter(|f| !unsupported.iter().any(|u| u.gpu == d.gpu && u.field == *f))
                .collect(),
        })
        .collect()
}

/// The common set over the ticks: decided each tick, logged when it is first decided and
/// whenever it changes (not per tick).
#[derive(Debug, Default)]
pub struct CommonProfiling {
    /// The last tick's set (`None`: the GPUs up were of one model, or none was up).
    last: Option<CommonSet>,
}

impl CommonProfiling {
    /// This tick's withheld fields, from the selected GPUs up (`devices`), the fields found
    /// unsupported so far and the counter set; logs a change.
    pub fn decide(
        &mut self,
        devices: &[DeviceStatus],
        unsupported: &[Unsupported],
        counters: &CounterSet,
    ) -> Vec<Withheld> {
        let fields = profiling_fields(counters);
        let now = common_set(&fields, &per_gpu(devices, unsupported, &fields));
        if now != self.last {
            log(now.as_ref());
        }
        let withheld = now.as_ref().map(|s| s.withheld.clone()).unwrap_or_default();
        self.last = now;
        withheld
    }
}

/// The one line that says what a node of mixed GPU models serves (or that it no longer mixes).
fn log(set: Option<&CommonSet>) {
    let Some(set) = set else {
        info!(
            "--compatibility dcgm-4.10: the selected GPUs up are of one model; each serves the \
             profiling fields it supports"
        );
        return;
    };
    let withheld: Vec<String> = set
        .withheld
        .iter()
        .map(|w| {
            let gpus: Vec<String> = w
                .lacking
                .iter()
                .map(|(g, m)| format!("GPU {g} of model {m}"))
                .collect();
            format!("{} (lacked by {})", w.field, gpus.join(", "))
        })
        .collect();
    let withheld = if withheld.is_empty() {
        "none".to_owned()
    } else {
        format!(
            "{} (--compatibility native serves each on the GPUs that support it)",
            withheld.join(", ")
        )
    };
    info!(
        models = %set.models.join(", "),
        "--compatibility dcgm-4.10: the selected GPUs are of {} models, so as dcgm-exporter 4.10 \
         only the profiling fields every GPU supports are served: {}; withheld on every GPU: \
         {withheld}",
        set.models.len(),
        if set.common.is_empty() {
            "none".to_owned()
        } else {
            set.common.join(", ")
        },
    );
}

/// Clears the slots of the `withheld` fields on every entity (GPUs and MIG instances), whose
/// values are in the order of `counters`' metric rows.
pub fn withhold(entities: &mut [EntitySample], counters: &CounterSet, withheld: &[Withheld]) {
    if withheld.is_empty() {
        return;
    }
    let slots: Vec<usize> = counters
        .metrics()
        .enumerate()
        .filter(|(_, r)| withheld.iter().any(|w| w.field == r.field.name))
        .map(|(i, _)| i)
        .collect();
    for e in entities {
        for i in &slots {
            if let Some(v) = e.values.get_mut(*i) {
                *v = None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SM: &str = "DCGM_FI_PROF_SM_ACTIVE";
    const FP64: &str = "DCGM_FI_PROF_PIPE_FP64_ACTIVE";
    const NVLINK: &str = "DCGM_FI_PROF_NVLINK_TX_BYTES";

    fn gpu<'a>(gpu: u32, model: &'a str, supported: &[&'static str]) -> GpuFields<'a> {
        GpuFields {
            gpu,
            model,
            supported: supported.iter().copied().collect(),
        }
    }

    #[test]
    fn one_model_decides_nothing() {
        let gpus = [gpu(0, "A100", &[SM, FP64]), gpu(1, "A100", &[SM])];
        assert_eq!(common_set(&[SM, FP64], &gpus), None);
        assert_eq!(common_set(&[SM, FP64], &[]), None);
    }

    #[test]
    fn a_field_one_model_lacks_is_withheld_on_all_naming_who_lacks_it() {
        let gpus = [
            gpu(0, "A100", &[SM, FP64, NVLINK]),
            gpu(1, "L4", &[SM]),
            gpu(2, "L4", &[SM, NVLINK]),
        ];
        let set = common_set(&[SM, FP64, NVLINK, SM], &gpus).unwrap();
        assert_eq!(set.models, ["A100", "L4"]);
        assert_eq!(set.common, [SM]);
        let withheld: Vec<_> = set
            .withheld
            .iter()
            .map(|w| (w.field, w.lacking.clone()))
            .collect();
        assert_eq!(
            withheld,
            [
                (FP64, vec![(1, "L4".to_owned()), (2, "L4".to_owned())]),
                (NVLINK, vec![(1, "L4".to_owned())]),
            ]
        );
        let fp64 = &set.withheld[0].reason;
        assert!(
            fp64.contains("GPUs 1, 2 of model L4 do not support it"),
            "{fp64}"
        );
        assert!(fp64.contains("dcgm-exporter 4.10"), "{fp64}");
        assert!(
            fp64.contains("--compatibility native serves it on the GPUs that support it"),
            "{fp64}"
        );
        let nvlink = &set.withheld[1].reason;
        assert!(nvlink.contains("GPU 1 of model L4 does not"), "{nvlink}");
    }

    #[test]
    fn a_field_no_gpu_supports_is_unsupported_not_withheld() {
        let gpus = [gpu(0, "A100", &[SM]), gpu(1, "T4", &[SM])];
        let set = common_set(&[SM, FP64], &gpus).unwrap();
        assert_eq!(set.common, [SM]);
        assert!(set.withheld.is_empty());
    }

    #[test]
    fn lacking_gpus_of_several_models_are_named_by_model() {
        let gpus = [
            gpu(0, "H100", &[SM, NVLINK]),
            gpu(1, "L4", &[SM]),
            gpu(2, "T4", &[SM]),
        ];
        let set = common_set(&[NVLINK], &gpus).unwrap();
        let r = &set.withheld[0].reason;
        assert!(
            r.contains("GPU 1 of model L4 and GPU 2 of model T4 do not support it"),
            "{r}"
        );
    }

    fn device(gpu: u32, model: &str, up: bool) -> DeviceStatus {
        DeviceStatus {
            gpu,
            uuid: format!("GPU-{gpu}"),
            model_name: model.to_owned(),
            pci_bus_id: String::new(),
            minor: None,
            up,
        }
    }

    /// A GPU that is lost leaves the set, and the set is decided again; one that comes back
    /// joins it again. Support comes from the unsupported list, on a GPU or its instances.
    #[test]
    fn the_set_follows_the_gpus_that_are_up() {
        let counters = crate::catalogue::csv::parse_counters(
            "t.csv",
            "DCGM_FI_PROF_SM_ACTIVE, gauge, sm\nDCGM_FI_PROF_PIPE_FP64_ACTIVE, gauge, fp64\n\
             DCGM_FI_DEV_GPU_TEMP, gauge, temp\n",
        )
        .unwrap();
        let lacks = [Unsupported {
            gpu: 1,
            gpu_instance_id: Some(3),
            field: FP64,
        }];
        let mut c = CommonProfiling::default();
        let both = [device(0, "A100", true), device(1, "L4", true)];
        let w = c.decide(&both, &lacks, &counters);
        assert_eq!(w.len(), 1);
        assert_eq!(w[0].field, FP64);
        assert_eq!(w[0].lacking, [(1, "L4".to_owned())]);
        assert_eq!(c.last.as_ref().map(|s| s.common.clone()), Some(vec![SM]));
        // The L4 is lost: one model left, nothing withheld.
        let lost = [device(0, "A100", true), device(1, "L4", false)];
        assert!(c.decide(&lost, &lacks, &counters).is_empty());
        assert_eq!(c.last, None);
        // It comes back: withheld again.
        assert_eq!(c.decide(&both, &lacks, &counters), w);

        // The slots of a withheld field are cleared on every entity, the others kept.
        let id = |gpu| crate::snapshot::EntityId {
            gpu,
            uuid: format!("GPU-{gpu}"),
            pci_bus_id: String::new(),
            device: String::new(),
            model_name: String::new(),
            mig: None,
        };
        let num = |v| Some(crate::snapshot::Value::Num(v));
        let mut entities: Vec<EntitySample> = (0..2)
            .map(|g| EntitySample {
                id: id(g),
                values: vec![num(0.5), num(0.25), num(40.0)],
                labels: Vec::new(),
            })
            .collect();
        withhold(&mut entities, &counters, &w);
        for e in &entities {
            assert_eq!(e.values, [num(0.5), None, num(40.0)]);
        }
    }
}
