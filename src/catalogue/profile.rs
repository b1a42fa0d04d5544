//! Compatibility profiles: which dcgm-exporter a node is replacing (`--compatibility`), and
//! with it what a dashboard or alert written for that version can see.
//!
//! | | `native` | `dcgm-4.8.2` | `dcgm-4.8.4` | `dcgm-4.9` | `dcgm-4.10` |
//! |---|---|---|---|---|---|
//! | host label | `Hostname` | `Hostname` | `hostname` | `hostname` | `hostname` |
//! | device fields on MIG instances | once, on the GPU | repeated | repeated | repeated | repeated |
//! | pod label named `pod`, `namespace`, `container` | `label_<key>` | left out | `pod_label_<key>` | `pod_label_<key>` | `pod_label_<key>` |
//! | pod label named like another exporter label | `label_<key>` | `label_<key>` | `pod_label_<key>` | `pod_label_<key>` | `pod_label_<key>` |
//! | pod labels that sanitize alike | first key wins | same | `_conflictN` each | `_conflictN` each | `_conflictN` each |
//! | profiling fields on mixed GPU models | each GPU's own | same | same | same | those every GPU supports |
//!
//! | built-in counters | `default-counters.csv` | `dcgm-4.8.2-*.csv` | `default-counters.csv` | `dcgm-4.9-*.csv` | `dcgm-4.10-*.csv` |
//! | `# TYPE` | file's; windows gauge | file's, windows too | file's; windows and NVLink bandwidth gauge | same as 4.8.4 | same as 4.8.4 |
//!
//! `dcgm-4.10` is `dcgm-4.9` with dcgm-exporter 4.10's sets: the profiling byte rates under
//! their `…_BYTES_PER_SECOND` names; and on a node whose selected GPUs are of more than one
//! model it serves only the profiling fields every one of them supports, as 4.10's release
//! notes say it collects them. (`dcgm-4.8.3` is accepted as `dcgm-4.8.4`: they differ in
//! no name or label.) Data only (the
//! shipped counters sets are compiled in): it must not look at flags other than the profile's
//! own value, read files or format text.

/// One counters set gpu-exporter ships under a dcgm-exporter file name, with the version a
/// profile serves instead of it when the file is found unmodified.
struct ShippedSet {
    /// gpu-exporter's own set (dcgm-exporter 4.8's names, the types fixed).
    own: &'static str,
    /// dcgm-exporter 4.8.2's set, row for row: (file name, text).
    v482: (&'static str, &'static str),
    /// The set under dcgm-exporter 4.9's names and units: (file name, text).
    v49: (&'static str, &'static str),
    /// The set under dcgm-exporter 4.10's names (4.9's, the profiling byte rates renamed).
    v410: (&'static str, &'static str),
}

/// The sets, the default one first.
const SHIPPED_SETS: [ShippedSet; 2] = [
    ShippedSet {
        own: include_str!("../../counters/default-counters.csv"),
        v482: (
            "dcgm-4.8.2-default-counters.csv",
            include_str!("../../counters/dcgm-4.8.2-default-counters.csv"),
        ),
        v49: (
            "dcgm-4.9-default-counters.csv",
            include_str!("../../counters/dcgm-4.9-default-counters.csv"),
        ),
        v410: (
            "dcgm-4.10-default-counters.csv",
            include_str!("../../counters/dcgm-4.10-default-counters.csv"),
        ),
    },
    ShippedSet {
        own: include_str!("../../counters/dcp-metrics-included.csv"),
        v482: (
            "dcgm-4.8.2-dcp-metrics-included.csv",
            include_str!("../../counters/dcgm-4.8.2-dcp-metrics-included.csv"),
        ),
        v49: (
            "dcgm-4.9-dcp-metrics-included.csv",
            include_str!("../../counters/dcgm-4.9-dcp-metrics-included.csv"),
        ),
        v410: (
            "dcgm-4.10-dcp-metrics-included.csv",
            include_str!("../../counters/dcgm-4.10-dcp-metrics-included.csv"),
        ),
    },
];

/// One compatibility profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// gpu-exporter's own shape (the default).
    #[default]
    Native,
    /// dcgm-exporter 4.8.2 and earlier 4.x.
    Dcgm482,
    /// dcgm-exporter 4.8.3 and 4.8.4.
    Dcgm484,
    /// dcgm-exporter 4.9.
    Dcgm49,
    /// dcgm-exporter 4.10.
    Dcgm410,
}

impl Profile {
    /// Every profile, in `--compatibility`'s order.
    pub const ALL: [Profile; 5] = [
        Self::Native,
        Self::Dcgm482,
        Self::Dcgm484,
        Self::Dcgm49,
        Self::Dcgm410,
    ];

    /// The other spellings `--compatibility` accepts for the profile: dcgm-exporter 4.8.3 is
    /// served as 4.8.4 (they differ in no name or label), and the full version numbers of 4.9
    /// and 4.10, whose release tags (what their `--version` reports) are the plain `4.9.0` and
    /// `4.10.0`, no longer `<dcgm>-<exporter>`.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            Self::Dcgm484 => &["dcgm-4.8.3"],
            Self::Dcgm49 => &["dcgm-4.9.0"],
            Self::Dcgm410 => &["dcgm-4.10.0"],
            Self::Native | Self::Dcgm482 => &[],
        }
    }

    /// The profile's name as `--compatibility` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Dcgm482 => "dcgm-4.8.2",
            Self::Dcgm484 => "dcgm-4.8.4",
            Self::Dcgm49 => "dcgm-4.9",
            Self::Dcgm410 => "dcgm-4.10",
        }
    }

    /// The name of the label that carries the node's host name (dcgm-exporter 4.8.3 renamed
    /// `Hostname` to `hostname`).
    pub fn host_label(self) -> &'static str {
        match self {
            Self::Native | Self::Dcgm482 => super::labels::HOSTNAME.name,
            Self::Dcgm484 | Self::Dcgm49 | Self::Dcgm410 => super::labels::HOSTNAME_LOWER.name,
        }
    }

    /// Whether device-level fields are written on every MIG instance too, as dcgm-exporter
    /// does (dashboards that list MIG instances through a device field rely on it).
    pub fn repeats_device_fields(self) -> bool {
        !matches!(self, Self::Native)
    }

    /// The prefix of a pod label whose name collides with one of the exporter's labels.
    pub fn pod_label_collision_prefix(self) -> &'static str {
        match self {
            Self::Native | Self::Dcgm482 => "label_",
            Self::Dcgm484 | Self::Dcgm49 | Self::Dcgm410 => "pod_label_",
        }
    }

    /// The counters set served when no file is found: its name and text.
    pub fn builtin_counters(self) -> (&'static str, &'static str) {
        let own = ("default-counters.csv", SHIPPED_SETS[0].own);
        self.version_of(&SHIPPED_SETS[0]).unwrap_or(own)
    }

    /// This profile's version of a shipped set, if it has its own.
    fn version_of(self, set: &ShippedSet) -> Option<(&'static str, &'static str)> {
        match self {
            Self::Dcgm482 => Some(set.v482),
            Self::Dcgm49 => Some(set.v49),
            Self::Dcgm410 => Some(set.v410),
            Self::Native | Self::Dcgm484 => None,
        }
    }

    /// Under `dcgm-4.8.2`, `dcgm-4.9` and `dcgm-4.10`, that version (name, text) of a counters
    /// file whose text is one of the sets gpu-exporter ships unmodified (the files at
    /// dcgm-exporter's paths in the image, or the chart's presets): at those paths that
    /// dcgm-exporter's image holds its own sets (4.8.2's types; 4.9's names and units; 4.10's
    /// names). A file of the user's own is never replaced.
    pub fn stand_in(self, text: &str) -> Option<(&'static str, &'static str)> {
        SHIPPED_SETS
            .iter()
            .find(|set| set.own == text)
            .and_then(|set| self.version_of(set))
    }

    /// Whether every `# TYPE` is the counters file's, as dcgm-exporter 4.8.2 writes it (a
    /// windowed `DCGM_EXP_*_COUNT` typed counter stays counter); the other profiles type the
    /// windows gauge, and [`gauge_fields`](Self::gauge_fields) too.
    pub fn types_as_written(self) -> bool {
        matches!(self, Self::Dcgm482)
    }

    /// Whether a pod label named like the pod-attribution labels written on the same series
    /// (`pod`, `namespace`, `container`, and `pod_uid` when it is on) is left out, as
    /// dcgm-exporter 4.8.2 does, rather than renamed with
    /// [`pod_label_collision_prefix`](Self::pod_label_collision_prefix).
    pub fn drops_pod_labels_named_like_the_pod(self) -> bool {
        matches!(self, Self::Dcgm482)
    }

    /// Whether pod labels whose names collide each get `_conflictN` (dcgm-exporter 4.8.3+)
    /// rather than the first key winning.
    pub fn pod_label_conflict_suffix(self) -> bool {
        matches!(self, Self::Dcgm484 | Self::Dcgm49 | Self::Dcgm410)
    }

    /// Fields this profile's dcgm-exporter types gauge whatever the counters file says
    /// (4.8.3's renderer: `DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL`, a rate, its #658).
    pub fn gauge_fields(self) -> &'static [&'static str] {
        match self {
            Self::Dcgm484 | Self::Dcgm49 | Self::Dcgm410 => &["DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"],
            Self::Native | Self::Dcgm482 => &[],
        }
    }

    /// Whether, on a node whose selected GPUs are of more than one model, a profiling
    /// (`DCGM_FI_PROF_*`) field is served only when every one of them supports it, and withheld
    /// on all of them otherwise (dcgm-exporter 4.10, by its release notes: "collects the
    /// profiling fields that all GPUs support"); the other profiles serve each GPU the fields it
    /// supports.
    pub fn common_profiling_set(self) -> bool {
        matches!(self, Self::Dcgm410)
    }

    /// What of the profile could not be checked against the dcgm-exporter it stands for, for
    /// a start-up warning.
    pub fn gaps(self) -> Option<&'static str> {
        match self {
            Self::Dcgm49 => Some(
                "the dcgm-4.9 counters sets use DCGM 4.7's base-unit names as DCGM's field \
                 reference gives them (utilization ratios, framebuffer bytes, NVLink bytes per \
                 second); dcgm-exporter 4.9's own files were not available to compare",
            ),
            Self::Dcgm410 => Some(
                "the dcgm-4.10 counters sets are dcgm-4.9's with the four profiling byte rates \
                 renamed ..._BYTES_PER_SECOND (PCIe TX/RX on, NVLink TX/RX commented), as \
                 dcgm-exporter 4.10's release notes describe them, and on mixed GPU models only \
                 the profiling fields every GPU supports are served, after one sentence of those \
                 notes; its own files and code were not available to compare, and its health \
                 listener changes are not reproduced",
            ),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_profile_differs_where_documented() {
        assert_eq!(Profile::default(), Profile::Native);
        assert_eq!(Profile::Dcgm482.host_label(), "Hostname");
        assert_eq!(Profile::Dcgm484.host_label(), "hostname");
        assert!(!Profile::Native.repeats_device_fields());
        assert!(Profile::Dcgm482.repeats_device_fields());
        assert_eq!(Profile::Dcgm484.pod_label_collision_prefix(), "pod_label_");
        // dcgm-4.8.2 and dcgm-4.9 swap the shipped sets for their own, only when unmodified.
        let (name, text) = Profile::Dcgm49.builtin_counters();
        assert_eq!(name, "dcgm-4.9-default-counters.csv");
        assert!(text.contains("\nDCGM_FI_SYSTEM_DRIVER_VERSION,"), "{text}");
        let (name, text) = Profile::Dcgm482.builtin_counters();
        assert_eq!(name, "dcgm-4.8.2-default-counters.csv");
        assert!(
            text.contains("\nDCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter,"),
            "{text}"
        );
        // dcgm-4.10's: 4.9's names with the profiling byte rates renamed, PCIe on.
        let (name, text) = Profile::Dcgm410.builtin_counters();
        assert_eq!(name, "dcgm-4.10-default-counters.csv");
        assert!(text.contains("\nDCGM_FI_SYSTEM_DRIVER_VERSION,"), "{text}");
        assert!(
            text.contains("\nDCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND,"),
            "{text}"
        );
        assert!(!text.contains("\nDCGM_FI_PROF_PCIE_TX_BYTES,"), "{text}");
        assert!(
            text.contains("\n# DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND,"),
            "{text}"
        );
        assert_eq!(Profile::Dcgm410.host_label(), "hostname");
        assert_eq!(Profile::Dcgm410.pod_label_collision_prefix(), "pod_label_");
        assert!(Profile::Dcgm410.pod_label_conflict_suffix());
        assert_eq!(
            Profile::Dcgm410.gauge_fields(),
            Profile::Dcgm49.gauge_fields()
        );
        assert_eq!(Profile::Dcgm410.aliases(), ["dcgm-4.10.0"]);
        for p in [Profile::Native, Profile::Dcgm484] {
            assert_eq!(p.builtin_counters().0, "default-counters.csv");
        }
        for set in SHIPPED_SETS {
            assert_eq!(Profile::Dcgm410.stand_in(set.own), Some(set.v410));
            assert_eq!(Profile::Dcgm410.stand_in(&format!("{}\n", set.own)), None);
            assert_eq!(Profile::Dcgm49.stand_in(set.own), Some(set.v49));
            assert_eq!(Profile::Dcgm482.stand_in(set.own), Some(set.v482));
            assert_eq!(Profile::Dcgm484.stand_in(set.own), None);
            assert_eq!(Profile::Native.stand_in(set.own), None);
            assert_eq!(Profile::Dcgm49.stand_in(&format!("{}\n", set.own)), None);
            assert_eq!(Profile::Dcgm482.stand_in(&format!("{}\n", set.own)), None);
        }
        assert!(Profile::Dcgm482.types_as_written());
        assert!(!Profile::Dcgm410.types_as_written());
        assert!(!Profile::Native.types_as_written() && !Profile::Dcgm484.types_as_written());
        // Only dcgm-4.10 serves the profiling fields common to every GPU model.
        for p in Profile::ALL {
            assert_eq!(
                p.common_profiling_set(),
                p == Profile::Dcgm410,
                "{}",
                p.name()
            );
        }
    }

    /// dcgm-4.10's sets are dcgm-4.9's, row for row (same fields, types, help and order), but
    /// for the four profiling byte rates under 4.10's names: PCIe TX/RX on, NVLink TX/RX
    /// commented. Both load without a warning, their commented rows too.
    #[test]
    fn dcgm_4_10_sets_are_4_9_with_the_byte_rates_renamed() {
        use crate::catalogue::csv::parse_counters;
        let renamed = |name: &str| match name {
            "DCGM_FI_PROF_PCIE_TX_BYTES" => "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND".to_owned(),
            "DCGM_FI_PROF_PCIE_RX_BYTES" => "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND".to_owned(),
            other => other.to_owned(),
        };
        for set in SHIPPED_SETS {
            let (v49, v410) = (
                parse_counters(set.v49.0, set.v49.1).unwrap(),
                parse_counters(set.v410.0, set.v410.1).unwrap(),
            );
            assert!(v410.warnings.is_empty(), "{:?}", v410.warnings);
            let rows = |s: &crate::catalogue::csv::CounterSet, rename: bool| -> Vec<_> {
                s.rows
                    .iter()
                    .map(|r| {
                        let name = if rename {
                            renamed(&r.name)
                        } else {
                            r.name.clone()
                        };
                        (name, r.field.id, r.kind, r.help.clone())
                    })
                    .collect()
            };
            assert_eq!(rows(&v49, true), rows(&v410, false), "{}", set.v410.0);
            assert!(
                v410.rows.iter().any(
                    |r| r.name == "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND" && r.field.id == 1010
                )
            );
            // The optional NVLink pair: commented, and loads once uncommented.
            let on = set
                .v410
                .1
                .replace("# DCGM_FI_PROF_NVLINK_", "DCGM_FI_PROF_NVLINK_");
            let nvlink = parse_counters(set.v410.0, &on).unwrap();
            let ids: Vec<u32> = nvlink
                .rows
                .iter()
                .filter(|r| r.name.starts_with("DCGM_FI_PROF_NVLINK_"))
                .map(|r| r.field.id)
                .collect();
            assert_eq!(ids, [1011, 1012], "{}", set.v410.0);
            assert!(nvlink.warnings.is_empty(), "{:?}", nvlink.warnings);
        }
    }
}
