//! The operator's cardinality controls on the encoded page ([`Cardinality`]): families served
//! or left out by glob (`--include-families`, `--exclude-families`) and labels dropped by name
//! (`--drop-labels`); and the start-up half of the labels-per-series guard
//! (`--max-labels-per-series`): the widest series each counters-file row can have.
//!
//! Text in, text out, once per tick and only when a control is set. [`OWN_GPU_FAMILIES`] names
//! the exporter's own GPU families (besides the counters file's rows), so that `config` can tell
//! a family filter that would serve no GPU family at all. Which label names may be dropped and
//! whether a configuration is acceptable is decided in `config`; this module must not read
//! files, flags or snapshots.

use crate::catalogue::Getter;
use crate::catalogue::Level;
use crate::catalogue::WindowKind;
use crate::catalogue::csv::{CounterRow, CounterSet};
use crate::catalogue::labels;

/// Mimir's default limit of labels per series, and ours.
pub const DEFAULT_MAX_LABELS: usize = 30;

/// Label names that tell series of one family apart: dropping one would make series collide.
pub const NEVER_DROPPED: &[&str] = &[
    labels::GPU.name,
    labels::UUID.name,
    "uuid",
    labels::GPU_I_ID.name,
    "nvlink",
    "xid",
    "error",
    "err_code",
    "clock_event",
    labels::RESOURCE.name,
    labels::NAMESPACE.name,
    labels::POD.name,
    labels::CONTAINER.name,
    "pod_namespace",
    "pod_name",
    "container_name",
    labels::VGPU.name,
    labels::HPC_JOB.name,
    "source",
    "le",
    "quantile",
];

/// The exporter's own GPU families, served besides the counters file's rows when its own
/// families are on (`native`, or `--include-families` given); not the exporter's health
/// (`gpu_exporter_*`) nor the process's (`process_*`). A test checks that every `gpu_*` family
/// the encoder writes is here.
pub const OWN_GPU_FAMILIES: &[&str] = &[
    "gpu_allocatable_devices",
    "gpu_allocated_devices",
    "gpu_allocation_info",
    "gpu_container_memory_used_bytes",
    "gpu_container_processes",
    "gpu_container_sm_utilization_ratio",
    "gpu_device_up",
    "gpu_fabric_health",
    "gpu_fabric_health_mask",
    "gpu_fabric_info",
    "gpu_fabric_state",
    "gpu_fabric_status",
    "gpu_health_reason",
    "gpu_health_status",
    "gpu_nvlink_effective_bit_error_ratio",
    "gpu_nvlink_effective_errors_total",
    "gpu_nvlink_errors_total",
    "gpu_nvlink_links_down",
    "gpu_nvlink_receive_bytes_total",
    "gpu_nvlink_symbol_bit_error_ratio",
    "gpu_nvlink_symbol_errors_total",
    "gpu_nvlink_transmit_bytes_total",
    "gpu_nvlink_up",
    "gpu_recovery_action",
    "gpu_xid_errors_total",
    "gpu_xid_last_seen_timestamp_seconds",
];

/// The cardinality controls. The default serves everything as encoded.
#[derive(Debug, Clone, Default)]
pub struct Cardinality {
    /// Families served: a family matching none of these is left out (empty: every family).
    pub include: Vec<glob::Pattern>,
    /// Families left out, after `include`.
    pub exclude: Vec<glob::Pattern>,
    /// Label names removed from every series.
    pub drop_labels: Vec<String>,
}

impl Cardinality {
    /// `true` when no control is set: the page is served as encoded.
    pub fn is_empty(&self) -> bool {
        self.include.is_empty() && self.exclude.is_empty() && self.drop_labels.is_empty()
    }

    /// Whether the family `name` is served.
    pub fn serves(&self, name: &str) -> bool {
        (self.include.is_empty() || self.include.iter().any(|p| p.matches(name)))
            && !self.exclude.iter().any(|p| p.matches(name))
    }

    /// `names` without the labels `--drop-labels` drops.
    fn kept(&self, names: Vec<String>) -> Vec<String> {
        names
            .into_iter()
            .filter(|n| !self.drop_labels.contains(n))
            .collect()
    }

    /// The page with the families left out and the labels dropped.
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let (mut family, mut served) = ("", true);
        for line in text.split_inclusive('\n') {
            if let Some(rest) = line.strip_prefix("# ") {
                let name = rest.split(' ').nth(1).unwrap_or_default();
                if name != family {
                    family = name;
                    served = self.serves(name);
                }
                if served {
                    out.push_str(line);
                }
                continue;
            }
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            let name = &line[..end];
            let keep = if !family.is_empty() && name.starts_with(family) {
                served
            } else {
                self.serves(name)
            };
            if !keep {
                continue;
            }
            match line[end..].strip_prefix('{') {
                Some(labels) if !self.drop_labels.is_empty() => {
                    out.push_str(name);
                    self.write_labels(&mut out, labels);
                }
                _ => out.push_str(line),
            }
        }
        out
    }

    /// Writes `{pairs} value` from the text after `{`, without the dropped labels.
    fn write_labels(&self, out: &mut String, text: &str) {
        out.push('{');
        let mut first = true;
        let mut rest = text;
        while let Some(eq) = rest.find("=\"") {
            let name = rest[..eq].trim_start_matches(',');
            // The value ends at the first quote not escaped by a backslash.
            let body = &rest[eq + 2..];
            let mut close = body.len();
            let mut escaped = false;
            for (i, c) in body.char_indices() {
                match c {
                    '\\' if !escaped => escaped = true,
                    '"' if !escaped => {
                        close = i;
                        break;
                    }
                    _ => escaped = false,
                }
            }
            let pair_end = eq + 2 + close + 1;
            if !self.drop_labels.iter().any(|d| d == name) {
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(rest[..pair_end.min(rest.len())].trim_start_matches(','));
            }
            rest = rest.get(pair_end..).unwrap_or_default();
            if rest.starts_with('}') {
                break;
            }
        }
        out.push_str(rest);
    }
}

/// The labels the exporter itself may put on a series besides the counters file's, as the
/// guard counts them.
#[derive(Debug, Clone, Default)]
pub struct SeriesLabels {
    /// The entity's identity labels, MIG ones included (the widest entity), and the host label.
    pub identity: Vec<String>,
    /// The labels that describe an entity (`pci_bus_id`, `device`, `modelName`): on every
    /// series in the `full` shape, on `gpu_device_info` alone in the `lean` one.
    pub description: Vec<String>,
    /// The `full` shape: descriptions, label rows and holders on every series.
    pub full: bool,
    /// The labels a holder adds to its device's series, pod labels left out.
    pub holder: Vec<String>,
    /// The labels of one `gpu_allocation_info` row after the identity, pod labels left out.
    pub allocation: Vec<String>,
}

/// The widest series of a family: its name, its label names (pod labels not counted), and
/// whether pod labels go on it too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Widest {
    /// The family.
    pub family: String,
    /// The label names of its widest series, without pod labels.
    pub names: Vec<String>,
    /// `--kubernetes-enable-pod-labels` adds the pod's labels to it.
    pub pod_labels: bool,
}

/// The widest series of each counters-file row, of `gpu_device_info` and of
/// `gpu_allocation_info`, without the labels the controls drop. Pod labels are not counted
/// here.
pub fn widest_series(
    counters: &CounterSet,
    labels: &SeriesLabels,
    controls: &Cardinality,
) -> Vec<Widest> {
    // Switch label rows label the switches' series, the others the GPUs'.
    let (switch_label_rows, label_rows): (Vec<&CounterRow>, Vec<&CounterRow>) = counters
        .labels()
        .partition(|r| r.field.level == Level::Switch);
    let label_rows: Vec<&str> = label_rows.iter().map(|r| r.name.as_str()).collect();
    let mut out = Vec::new();
    for row in counters.metrics() {
        if !controls.serves(&row.name) {
            continue;
        }
        let names = if row.field.level == Level::Switch {
            switch_row_names(row, labels, &switch_label_rows)
        } else {
            gpu_row_names(row, labels, &label_rows)
        };
        out.push(Widest {
            family: row.name.clone(),
            names: controls.kept(names),
            pod_labels: labels.full,
        });
    }
    if controls.serves("gpu_device_info") {
        let mut names = labels.identity.clone();
        names.extend(labels.description.iter().cloned());
        names.extend(label_rows.iter().map(|s| s.to_string()));
        out.push(Widest {
            family: "gpu_device_info".into(),
            names: controls.kept(names),
            pod_labels: false,
        });
    }
    if controls.serves("gpu_allocation_info") {
        let mut names = labels.identity.clone();
        if labels.full {
            names.extend(labels.description.iter().cloned());
        }
        names.extend(labels.allocation.iter().cloned());
        out.push(Widest {
            family: "gpu_allocation_info".into(),
            names: controls.kept(names),
            pod_labels: true,
        });
    }
    out
}

/// The label names of a switch-level row's widest series: (`nvlink` on a per-port row,)
/// `nvswitch`, the host label (the last identity label when there is one) and the switch
/// label rows (`switch_label_rows`).
fn switch_row_names(
    row: &CounterRow,
    labels: &SeriesLabels,
    switch_label_rows: &[&CounterRow],
) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if row.field.getter == crate::catalogue::Getter::DcgmSwitchPort {
        names.push("nvlink".into());
    }
    names.push("nvswitch".into());
    names.extend(
        labels
            .identity
            .iter()
            .filter(|n| n.eq_ignore_ascii_case("hostname"))
            .cloned(),
    );
    names.extend(switch_label_rows.iter().map(|r| r.name.clone()));
    names
}

/// The label names of a GPU- or link-level row's widest series: the identity (a link's
/// without the MIG labels, after `nvlink`), in the `full` shape the descriptions, the GPU
/// label rows (`label_rows`, not on a link's) and the holder's labels, then the labels of
/// the row's kind (an XID's or a clock event's window, an XID's code and message).
fn gpu_row_names(row: &CounterRow, labels: &SeriesLabels, label_rows: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if row.field.level == Level::Link {
        names.push("nvlink".into());
        names.extend(
            labels
                .identity
                .iter()
                .filter(|n| {
                    !labels::IDENTITY
                        .iter()
                        .any(|l| l.mig && l.name == n.as_str())
                })
                .cloned(),
        );
        if labels.full {
            names.extend(labels.description.iter().cloned());
        }
    } else {
        names.extend(labels.identity.iter().cloned());
        if labels.full {
            names.extend(labels.description.iter().cloned());
            names.extend(label_rows.iter().map(|s| s.to_string()));
        }
    }
    if labels.full {
        names.extend(labels.holder.iter().cloned());
    }
    match row.field.getter {
        Getter::Total(WindowKind::Xid) | Getter::Window(WindowKind::Xid) => {
            names.extend(["xid".into(), "window_size_in_ms".into()]);
        }
        Getter::Total(_) | Getter::Window(_) => {
            names.extend(["clock_event".into(), "window_size_in_ms".into()]);
        }
        Getter::Xid => names.extend(["err_code".into(), "err_msg".into()]),
        _ => {}
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn controls(include: &[&str], exclude: &[&str], drop: &[&str]) -> Cardinality {
        let p = |v: &[&str]| v.iter().map(|g| glob::Pattern::new(g).unwrap()).collect();
        Cardinality {
            include: p(include),
            exclude: p(exclude),
            drop_labels: drop.iter().map(|s| s.to_string()).collect(),
        }
    }

    const PAGE: &str = "# HELP a_x help\n# TYPE a_x gauge\na_x{gpu=\"0\",pci_bus_id=\"1\",m=\"q\\\"z,pci_bus_id=\\\"\"} 1\n# HELP b_y h\n# TYPE b_y counter\nb_y 2\n";

    #[test]
    fn families_by_glob_and_labels_by_name() {
        assert_eq!(controls(&[], &[], &[]).apply(PAGE), PAGE);
        let only_b = controls(&["b_*"], &[], &[]).apply(PAGE);
        assert_eq!(only_b, "# HELP b_y h\n# TYPE b_y counter\nb_y 2\n");
        let no_b = controls(&[], &["b_?"], &["pci_bus_id"]).apply(PAGE);
        assert_eq!(
            no_b,
            "# HELP a_x help\n# TYPE a_x gauge\na_x{gpu=\"0\",m=\"q\\\"z,pci_bus_id=\\\"\"} 1\n"
        );
        let last = controls(&["a_*"], &[], &["m"]).apply(PAGE);
        assert!(
            last.ends_with("a_x{gpu=\"0\",pci_bus_id=\"1\"} 1\n"),
            "{last}"
        );
    }

    /// Every `gpu_*` family name the encoder writes (its string literals) is in
    /// [`OWN_GPU_FAMILIES`], but the exporter's health (`gpu_exporter_*`) and label names.
    #[test]
    fn own_gpu_families_are_the_ones_the_encoder_writes() {
        let sources = [
            include_str!("mod.rs"),
            include_str!("health.rs"),
            include_str!("interconnect.rs"),
            include_str!("self_metrics.rs"),
        ];
        let labels = ["gpu_uuid"];
        let mut written = Vec::new();
        for src in sources {
            for (i, _) in src.match_indices("\"gpu_") {
                let name: String = src[i + 1..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.starts_with("gpu_exporter_") && !labels.contains(&name.as_str()) {
                    written.push(name);
                }
            }
        }
        written.sort();
        written.dedup();
        let mut listed = OWN_GPU_FAMILIES.to_vec();
        listed.sort_unstable();
        assert_eq!(written, listed);
    }

    /// A switch `label` row widens the switch series (the guard counts it there), not the
    /// GPUs'.
    #[test]
    fn switch_label_rows_count_on_switch_series_only() {
        let set = crate::catalogue::csv::parse_counters(
            "test",
            "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX, counter, p\n\
             DCGM_FI_DRIVER_VERSION, label, d\nDCGM_FI_DEV_NVSWITCH_UUID, label, u\n",
        )
        .unwrap();
        let labels = SeriesLabels {
            identity: vec!["gpu".into(), "Hostname".into()],
            full: true,
            ..SeriesLabels::default()
        };
        let widest = widest_series(&set, &labels, &controls(&[], &[], &[]));
        let of = |name: &str| {
            widest
                .iter()
                .find(|w| w.family == name)
                .unwrap()
                .names
                .clone()
        };
        assert_eq!(
            of("DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX"),
            [
                "nvlink",
                "nvswitch",
                "Hostname",
                "DCGM_FI_DEV_NVSWITCH_UUID"
            ]
        );
        assert_eq!(
            of("DCGM_FI_DEV_GPU_TEMP"),
            ["gpu", "Hostname", "DCGM_FI_DRIVER_VERSION"]
        );
    }
}
