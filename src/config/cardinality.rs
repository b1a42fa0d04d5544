//! The cardinality controls' settings: `--include-families`, `--exclude-families`,
//! `--drop-labels` and `--max-labels-per-series` (flags, variables, or the `metrics.*` keys of
//! `--config-file`), checked into the exposition's [`Cardinality`]; and the labels-per-series
//! guard run once the counters are loaded ([`Config::fit_labels`]).
//!
//! It decides what is refused (a glob that does not parse, a label that tells series apart, a
//! family over the limit) and says where the value came from; the filtering itself is
//! `exposition::filter`'s. It must not read files or touch NVML.

use super::{Cli, Config, ConfigError, Origin};
use crate::catalogue::csv::CounterSet;
use crate::catalogue::profile::Profile;
use crate::exposition::filter::{
    Cardinality, DEFAULT_MAX_LABELS, NEVER_DROPPED, SeriesLabels, widest_series,
};

/// (flag, configuration-file key) of each control.
const KEYS: [(&str, &str); 4] = [
    ("--include-families", "metrics.includeFamilies"),
    ("--exclude-families", "metrics.excludeFamilies"),
    ("--drop-labels", "metrics.dropLabels"),
    ("--max-labels-per-series", "metrics.maxLabelsPerSeries"),
];

fn slot<'a>(cli: &'a mut Cli, flag: &str) -> Option<&'a mut Option<String>> {
    match flag {
        "--include-families" => Some(&mut cli.include_families),
        "--exclude-families" => Some(&mut cli.exclude_families),
        "--drop-labels" => Some(&mut cli.drop_labels),
        "--max-labels-per-series" => Some(&mut cli.max_labels_per_series),
        _ => None,
    }
}

/// Merges the file's `metrics.*` controls into the flags no flag or variable gave; returns
/// the origin of each value taken from the file.
pub(super) fn merge_file(
    cli: &mut Cli,
    file: &std::path::Path,
    entries: Vec<(&'static str, String)>,
    overridden: &dyn Fn(&str, &str) -> String,
    notes: &mut Vec<String>,
) -> Vec<(&'static str, Origin)> {
    let mut from_file = Vec::new();
    for (key, value) in entries {
        let Some(&(flag, _)) = KEYS.iter().find(|(_, k)| *k == key) else {
            continue;
        };
        let Some(s) = slot(cli, flag) else { continue };
        if s.is_some() {
            notes.push(overridden(key, flag));
        } else {
            *s = Some(value);
            let origin = Origin::File {
                file: file.to_path_buf(),
                key,
            };
            from_file.push((flag, origin));
        }
    }
    from_file
}

/// The validated controls: (the filter, the label limit, whether the exporter's own GPU
/// families are served).
pub(super) fn controls(
    cli: &Cli,
    profile: Profile,
    from_file: &[(&'static str, Origin)],
) -> Result<(Cardinality, usize, bool), ConfigError> {
    let origin = |flag: &'static str| {
        from_file
            .iter()
            .find(|(f, _)| *f == flag)
            .map_or(Origin::Flag(flag), |(_, o)| o.clone())
    };
    let items = |v: &Option<String>| -> Vec<String> {
        v.as_deref()
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect()
    };
    let globs = |flag: &'static str, v: &Option<String>| {
        items(v)
            .into_iter()
            .map(|g| {
                let bad = |why: String| ConfigError::Cardinality {
                    setting: origin(flag),
                    message: format!("{g:?}: {why}"),
                };
                if !g.chars().all(|c| {
                    c.is_ascii_alphanumeric()
                        || matches!(c, '_' | ':' | '*' | '?' | '[' | ']' | '!' | '-')
                }) {
                    return Err(bad(
                        "not a family glob (letters, digits, _ and :, with * ? [..])".into(),
                    ));
                }
                glob::Pattern::new(&g).map_err(|e| bad(format!("not a glob ({e})")))
            })
            .collect::<Result<Vec<_>, _>>()
    };
    let include = globs("--include-families", &cli.include_families)?;
    let exclude = globs("--exclude-families", &cli.exclude_families)?;
    let drop_labels = items(&cli.drop_labels);
    for name in &drop_labels {
        let bad = |why: &str| ConfigError::Cardinality {
            setting: origin("--drop-labels"),
            message: format!("{name:?}: {why}"),
        };
        let valid = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(bad("not a label name"));
        }
        if NEVER_DROPPED.contains(&name.as_str()) {
            return Err(bad(
                "never dropped: it tells series of one family apart, which would then collide \
                 (drop the family with --exclude-families instead)",
            ));
        }
    }
    let max = match cli.max_labels_per_series.as_deref().map(str::trim) {
        None | Some("") => DEFAULT_MAX_LABELS,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if n >= 10 => n,
            _ => {
                return Err(ConfigError::Cardinality {
                    setting: origin("--max-labels-per-series"),
                    message: format!(
                        "{v:?}: expected a number of labels, at least 10 (an entity's identity)"
                    ),
                });
            }
        },
    };
    // A dcgm-exporter profile serves that version's families only, unless more are asked for.
    let own_families = profile == Profile::Native || !include.is_empty();
    let filter = Cardinality {
        include,
        exclude,
        drop_labels,
    };
    Ok((filter, max, own_families))
}

impl Config {
    /// The labels-per-series guard, once the counters are known: refuses when a family's
    /// widest series would have more than `--max-labels-per-series` labels, and gives the pod
    /// labels (`--kubernetes-enable-pod-labels`) the room left, refusing when none is.
    pub fn fit_labels(&mut self, counters: &CounterSet) -> Result<(), ConfigError> {
        let labels = self.series_labels();
        let widest = widest_series(counters, &labels, &self.cardinality);
        let pod_labels = self
            .kubernetes
            .as_ref()
            .is_some_and(|k| k.pod_labels.is_some());
        let limit = self.max_labels_per_series;
        let need = if pod_labels { 1 } else { 0 };
        if let Some((family, names)) = widest.iter().max_by_key(|(_, n)| n.len())
            && names.len() + need > limit
        {
            let pods = if pod_labels {
                " and at least one pod label (--kubernetes-enable-pod-labels)"
            } else {
                ""
            };
            return Err(ConfigError::LabelLimit(format!(
                "{family} would have {} labels ({}){pods}, over --max-labels-per-series {limit}: \
                 drop some with --drop-labels, or raise the limit",
                names.len(),
                names.join(", ")
            )));
        }
        let room = limit - widest.iter().map(|(_, n)| n.len()).max().unwrap_or(0);
        if let Some(allow) = self.kubernetes.as_mut().and_then(|k| k.pod_labels.as_mut()) {
            allow.set_max(room);
        }
        Ok(())
    }

    /// The labels the exporter itself may put on a series, as this configuration spells them.
    fn series_labels(&self) -> SeriesLabels {
        let mut identity: Vec<String> = [
            "gpu",
            if self.use_old_namespace {
                "uuid"
            } else {
                "UUID"
            },
            "pci_bus_id",
            "device",
            "modelName",
            "GPU_I_PROFILE",
            "GPU_I_ID",
            "mig_uuid",
        ]
        .map(String::from)
        .to_vec();
        if self.hostname.is_some() {
            identity.push(self.profile.host_label().into());
        }
        let mut holder: Vec<String> = Vec::new();
        let mut allocation: Vec<String> = Vec::new();
        if let Some(k) = &self.kubernetes {
            let names: [&str; 3] = if self.use_old_namespace {
                ["container_name", "pod_namespace", "pod_name"]
            } else {
                ["container", "namespace", "pod"]
            };
            holder.extend(names.map(String::from));
            allocation
                .extend(["resource", "namespace", "pod", "container", "pod_uid"].map(String::from));
            allocation.extend(["workload_kind", "workload_name"].map(String::from));
            let dra = [
                "dra_claim_name",
                "dra_claim_namespace",
                "dra_device_name",
                "dra_driver_name",
                "dra_pool_name",
            ];
            // Counted whether or not DRA is on: `--simulate` turns it on after this check.
            let _ = k.dra;
            holder.extend(dra.map(String::from));
            allocation.extend(dra.map(String::from));
            if k.pod_uid {
                holder.push("pod_uid".into());
            }
            if k.virtual_gpus {
                holder.push("vgpu".into());
                allocation.push("vgpu".into());
            }
        }
        if self.hpc_job_mapping_dir.is_some() {
            holder.push("hpc_job".into());
        }
        SeriesLabels {
            identity,
            holder,
            allocation,
        }
    }
}
