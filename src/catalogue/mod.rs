//! The field catalogue: every DCGM field gpu-exporter knows, how NVML reads it, its unit and
//! the entity it belongs to.
//!
//! This module owns the *static* description of fields ([`FieldDef`]), the tables that list
//! them (`tables/`, walked in the order of [`TABLES`]) and the name lookup (canonical
//! `DCGM_FI_*` / `DCGM_EXP_*` names, the legacy 1.x lowercase aliases, DCGM 4.6 and older
//! names), and the compatibility profiles' names, units and shapes ([`profile`]). It does no
//! I/O and never talks to NVML: the reader in `gpu` interprets [`Getter`],
//! and the counters CSV parser in [`csv`] resolves names through [`lookup`].
//!
//! # Adding a field
//!
//! 1. **Table, by what the field is.** Each file under `tables/` says in its header what it
//!    owns; insert the row at its place in DCGM id order:
//!    - `exporter_4_8.rs`: a field of dcgm-exporter 4.8's shipped counters files, by its
//!      pre-4.6 name (identity, clocks, temperature and power, PCIe, utilization, errors,
//!      framebuffer, ECC, NVLink totals, profiling), or a `DCGM_EXP_*` window or status field;
//!    - `board.rs`: BAR1, application and maximum clocks, temperature thresholds, the power
//!      management limit, the fan, and the DCGM 4.6 base-unit twins of these;
//!    - `since_dcgm_4_6.rs`: a field DCGM 4.6 or later added under an id of its own (the other
//!      base-unit twins, clock-event times, `DCGM_EXP_*_TOTAL`);
//!    - `nvlink_by_link.rs`: one DCGM id per link (`…_L<n>`): add a `Family` and its first id
//!      in each of `ID_RANGES` (or extend the GPM constants), never rows;
//!    - `nvlink_gpu.rs`: an NVLink 5 counter summed over the GPU's links, the fabric
//!      registration;
//!    - `link_entity.rs`: a link-entity field (one id, one series per link: [`Level::Link`]
//!      with a [`Getter::Link`]) or an NVLink port-register field;
//!    - `nvswitch.rs`: an NVSwitch field ([`Level::Switch`] with `Getter::DcgmSwitch`: served
//!      by the DCGM client per switch; with `Getter::DcgmSwitchPort`: per switch port; with
//!      `Getter::DcgmSwitchText`: a string, for `label` rows on the switch's series).
//!
//!    A new table goes into [`TABLES`]; its header states its order (DCGM id).
//! 2. **Name, id, help.** Name and id exactly as `dcgm_fields.h` has them (`DCGM_EXP_*`:
//!    dcgm-exporter's ids); one line of help in your own words (a counters file may override
//!    it).
//! 3. **Entity level.** Build the row with `dev(..)` ([`Level::Device`]: read once on the
//!    physical GPU) or `inst(..)` ([`Level::Instance`]: read on each MIG instance, or on the
//!    GPU when MIG is off), both in `field.rs`; `Reader::read_gpu` (`src/gpu/reader/mod.rs`)
//!    picks each entity's rows by this level.
//! 4. **Getter.** Prefer an existing [`Getter`]: `NvmlField(id, scale)` covers most
//!    `nvmlDeviceGetFieldValues` counters (an NVML field id that takes a link as scope must
//!    also be listed in `is_link_scoped`, `src/gpu/nvlink.rs`), `Gpm(metric, scale)` a GPM
//!    metric, `Unavailable(why)` a field NVML cannot serve (the CSV loader warns with `why`).
//!    A new kind of reading is a new variant in `field.rs`, read in `read_value`
//!    (`src/gpu/reader/values.rs`); there `read_rows` batches the field values and GPM
//!    metrics of one entity and `read_text_field` reads [`TextKind`]s, while [`LinkPart`]s
//!    are served by `link_value` in `src/exposition/interconnect.rs`. A variant that carries
//!    a scale must drop it in [`same_reading`]; one whose value can go down belongs in
//!    `goes_down` (`csv.rs`), which warns about a `counter` type.
//! 5. **Unit and scale.** `unit` is the exported unit (`W`, `MHz`, `MiB`, `ratio`, `B/s`, …).
//!    A scale inside the `Getter` converts NVML's number to it (GPM's MiB/s to bytes per
//!    second); a base-unit twin of a listed field reads the same `Getter` and converts with
//!    `.scaled(..)`, applied after the read by [`FieldDef::convert`].
//! 6. **Other names.** A DCGM 4.6 or 1.x name of a field that keeps its id is an alias in
//!    `ALIASES` (`legacy.rs`), whose test `the_go_dcgm_legacy_table_is_complete` lists every
//!    alias with its id; NVLink 5 and fabric renames are in `nvlink_gpu.rs`, the per-link
//!    error names follow the rule in `nvlink_by_link.rs`, port-register and NVSwitch names are
//!    in `link_entity.rs` and `nvswitch.rs` (`canonical_name` in `tables/mod.rs` walks these
//!    lists). A new name whose unit differs is a row of its own.
//! 7. **Simulator** (`crates/nvml-sim/src`): a field value is answered in
//!    `Sim::field_scoped` (`sim/fields.rs`; NVLink 5's in `sim/nvlink5.rs`); a GPM metric
//!    by `Sim::metrics_get` (`sim/gpm.rs`; a device metric through its channel in
//!    `gpm_channel`, `physics.rs`); a typed
//!    NVML getter has its semantics in `sim/` (`telemetry.rs`, `nvlink.rs`, …), its C entry
//!    point in `ffi/` and its name in `DEVICE_FUNCTIONS` (`scenario/mod.rs`). What each model
//!    answers is in `scenarios/README.md`.
//! 8. **Shipped files and docs.** A row in `counters/default-counters.csv` and
//!    `counters/dcp-metrics-included.csv`, commented out unless it should be on by default
//!    (their active rows are dcgm-exporter 4.8's); `recommended.csv` when a shipped dashboard
//!    or alert reads it. The `dcgm-4.8.2-*`, `dcgm-4.9-*` and `dcgm-4.10-*` pairs stand for
//!    dcgm-exporter's own files under `--compatibility` (the table atop `counters/README.md`)
//!    and follow those.
//!    `counters/README.md` ("Where names come from") says which kinds of names load: extend it
//!    for a new kind.
//! 9. **Tests.** The ordering test below (`every_table_is_ordered_by_id_and_no_name_or_id_repeats`)
//!    covers the row's order, name, help, level and unique id; add the id to the table
//!    file's `dcgm_fields.h` spot check; a changed reader earns a simulator test
//!    (`tests/sampling.rs`, NVLink in `tests/interconnect.rs`). `cargo test --test golden`
//!    fails when an exposition changes (a new active row, a changed reading): rerun it with
//!    `UPDATE_GOLDEN=1` and review the diff of `tests/golden/*.prom`.
//!
//! [`FieldDef`]: crate::catalogue::FieldDef
//! [`FieldDef::convert`]: crate::catalogue::FieldDef::convert
//! [`Level::Device`]: crate::catalogue::Level::Device
//! [`Level::Instance`]: crate::catalogue::Level::Instance
//! [`Level::Link`]: crate::catalogue::Level::Link
//! [`Level::Switch`]: crate::catalogue::Level::Switch
//! [`LinkPart`]: crate::catalogue::LinkPart
//! [`Getter`]: crate::catalogue::Getter
//! [`Getter::Link`]: crate::catalogue::Getter::Link
//! [`TABLES`]: crate::catalogue::TABLES
//! [`TextKind`]: crate::catalogue::TextKind
//! [`csv`]: crate::catalogue::csv
//! [`lookup`]: crate::catalogue::lookup
//! [`same_reading`]: crate::catalogue::same_reading

mod counter_set;
pub mod csv;
mod csv_rows;
mod csv_scan;
mod field;
pub mod labels;
mod legacy;
pub mod profile;
mod tables;

pub use field::{
    ClockKind, FabricPart, FieldDef, Getter, Level, LinkPart, MemKind, Scale,
    TEMP_THRESHOLD_GPU_MAX, TEMP_THRESHOLD_MEM_MAX, TEMP_THRESHOLD_SHUTDOWN,
    TEMP_THRESHOLD_SLOWDOWN, TextKind, UtilKind, Violation, WindowKind,
};
pub use tables::{
    BOARD, EXPORTER_4_8, FABRIC, LINK_ENTITY, NVLINK_BY_LINK, NVLINK_ERROR_RECORD,
    NVLINK_GPM_BY_LINK, NVLINK_PORT_REGISTERS, NVLINK5, NVSWITCH, SINCE_DCGM_4_6, TABLES,
};

/// Every known field, table by table in the order of [`TABLES`].
pub fn all() -> impl Iterator<Item = &'static FieldDef> {
    TABLES.iter().flat_map(|table| table.iter())
}

/// Finds a field by canonical name (exact, case-sensitive) or by legacy 1.x alias
/// (case-insensitive, e.g. `dcgm_gpu_temp`).
pub fn lookup(name: &str) -> Option<&'static FieldDef> {
    if let Some(f) = all().find(|f| f.name == name) {
        return Some(f);
    }
    let canonical = legacy::canonical_name(name).or_else(|| tables::canonical_name(name))?;
    all().find(|f| f.name == canonical)
}

/// Finds a field by DCGM numeric id.
pub fn by_id(id: u32) -> Option<&'static FieldDef> {
    all().find(|f| f.id == id)
}

/// Every name that resolves to `field`: its canonical name, then its aliases (DCGM 1.x
/// names, DCGM 4.6 names, `dcgm_fields.h` synonyms).
pub fn names_of(field: &'static FieldDef) -> impl Iterator<Item = &'static str> {
    std::iter::once(field.name).chain(
        legacy::ALIASES
            .iter()
            .filter(move |(_, canonical)| *canonical == field.name)
            .map(|(alias, _)| *alias),
    )
}

/// Whether `a` and `b` read the same quantity: the same field (same id), or a field and its
/// base-unit twin, which reads the same NVML value in another unit
/// (`DCGM_FI_DEV_SM_CLOCK` and `DCGM_FI_DEV_SM_CLOCK_HERTZ`).
pub fn same_reading(a: &FieldDef, b: &FieldDef) -> bool {
    // The NVML reading, without the unit conversion; `None` for a field read nowhere.
    let reading = |f: &FieldDef| match f.getter {
        Getter::Unavailable(_) => None,
        Getter::NvmlField(id, _) => Some(Getter::NvmlField(id, Scale::Identity)),
        Getter::NvmlFieldBer(id) => Some(Getter::NvmlField(id, Scale::Identity)),
        Getter::NvmlFieldRate(ids, _) => Some(Getter::NvmlFieldRate(ids, Scale::Identity)),
        Getter::Gpm(id, _) => Some(Getter::Gpm(id, Scale::Identity)),
        other => Some(other),
    };
    a.id == b.id || reading(a).is_some_and(|r| Some(r) == reading(b))
}

/// The known name closest to `name` (for "did you mean" in errors), canonical or legacy,
/// among the names spelt like it: DCGM's upper-case names for an upper-case name, the 1.x
/// lower-case ones for a lower-case name (`DCGM_FI_NOPE` is never offered `dcgm_fb_free`).
pub fn nearest(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    let lower_case = |n: &str| !n.bytes().any(|b| b.is_ascii_uppercase());
    all()
        .map(|f| f.name)
        .chain(legacy::ALIASES.iter().map(|(alias, _)| *alias))
        .filter(|cand| lower_case(cand) == lower_case(name))
        .map(|cand| {
            (
                strsim::levenshtein(&upper, &cand.to_ascii_uppercase()),
                cand,
            )
        })
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= distinct_part(name).len().max(4) / 2)
        .map(|(_, c)| c)
}

/// What a field name says past the prefix every name of its kind shares (`NOPE` of
/// `DCGM_FI_NOPE`): how far a suggestion may be from it is measured against this part, so
/// that a short name is not offered any name that shares the prefix.
fn distinct_part(name: &str) -> &str {
    [
        "DCGM_FI_PROF_",
        "DCGM_FI_DEV_",
        "DCGM_FI_",
        "DCGM_EXP_",
        "dcgm_fi_prof_",
        "dcgm_",
    ]
    .iter()
    .find_map(|p| name.strip_prefix(p))
    .unwrap_or(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Suggestions keep the spelling of what was written: a DCGM name gets a DCGM name or
    /// nothing, a 1.x name a 1.x name.
    #[test]
    fn suggestions_keep_the_spelling_of_the_name() {
        assert_eq!(nearest("DCGM_FI_NOPE"), None);
        assert_eq!(nearest("DCGM_FI_DEV_GPU_TMP"), Some("DCGM_FI_DEV_GPU_TEMP"));
        assert_eq!(nearest("dcgm_fb_fre"), Some("dcgm_fb_free"));
        assert_eq!(nearest("dcgm_gpu_tmp"), Some("dcgm_gpu_temp"));
    }

    #[test]
    fn names_and_twins_resolve_to_the_same_reading() {
        let temp = lookup("DCGM_FI_DEV_GPU_TEMP").unwrap();
        let names: Vec<&str> = names_of(temp).collect();
        assert_eq!(names[0], "DCGM_FI_DEV_GPU_TEMP");
        for alias in ["dcgm_gpu_temp", "DCGM_FI_DEV_GPU_TEMP_CELSIUS"] {
            assert!(names.contains(&alias), "{names:?}");
            assert!(same_reading(lookup(alias).unwrap(), temp));
        }
        let (mhz, hz) = (
            lookup("DCGM_FI_DEV_SM_CLOCK").unwrap(),
            lookup("DCGM_FI_DEV_SM_CLOCK_HERTZ").unwrap(),
        );
        assert!(same_reading(mhz, hz) && same_reading(hz, mhz));
        assert!(!same_reading(mhz, lookup("DCGM_FI_DEV_MEM_CLOCK").unwrap()));
        assert!(!same_reading(temp, hz));
        // Two fields read nowhere are not the same reading.
        let unavailable: Vec<_> = all()
            .filter(|f| matches!(f.getter, Getter::Unavailable(_)))
            .collect();
        for (i, a) in unavailable.iter().enumerate() {
            for b in &unavailable[i + 1..] {
                assert!(!same_reading(a, b), "{} {}", a.name, b.name);
            }
        }
    }

    /// The one ordering test: every table of [`TABLES`] is ordered by DCGM id, as each table
    /// file's header promises, and every field keeps the rules all tables share: a
    /// `DCGM_FI_…` or `DCGM_EXP_…` name of capitals, digits and underscores, one line of help,
    /// link level exactly when the per-link read serves it ([`Getter::Link`]), and no name or
    /// id used twice in the catalogue (a base-unit twin has an id of its own; any other name
    /// for a field is an alias, not a row).
    #[test]
    fn every_table_is_ordered_by_id_and_no_name_or_id_repeats() {
        let mut names = std::collections::HashSet::new();
        let mut ids = std::collections::HashMap::new();
        for table in TABLES {
            assert!(!table.is_empty());
            let first = table[0].name;
            for pair in table.windows(2) {
                assert!(
                    pair[0].id < pair[1].id,
                    "table from {first}: {} ({}) is listed before {} ({})",
                    pair[0].name,
                    pair[0].id,
                    pair[1].name,
                    pair[1].id
                );
            }
            for f in *table {
                let rest = f
                    .name
                    .strip_prefix("DCGM_FI_")
                    .or_else(|| f.name.strip_prefix("DCGM_EXP_"))
                    .unwrap_or_default();
                let spelt = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_';
                assert!(
                    !rest.is_empty() && rest.bytes().all(spelt),
                    "{}: not a DCGM_FI_/DCGM_EXP_ name",
                    f.name
                );
                assert!(!f.help.is_empty(), "{} has no help", f.name);
                assert!(!f.help.contains('\n'), "{} help spans lines", f.name);
                let per_link_read = matches!(f.getter, Getter::Link(_));
                assert_eq!(f.level == Level::Link, per_link_read, "{}", f.name);
                assert!(names.insert(f.name), "{} is listed twice", f.name);
                if let Some(other) = ids.insert(f.id, f.name) {
                    panic!("{} and {other} share id {}", f.name, f.id);
                }
            }
        }
        assert_eq!(names.len(), all().count());
    }

    #[test]
    fn lookup_canonical_and_legacy() {
        assert_eq!(lookup("DCGM_FI_DEV_GPU_TEMP").map(|f| f.id), Some(150));
        assert_eq!(lookup("dcgm_gpu_temp").map(|f| f.id), Some(150));
        assert!(lookup("DCGM_FI_DEV_NOPE").is_none());
    }

    #[test]
    fn nearest_suggests_a_close_name() {
        assert_eq!(nearest("DCGM_FI_DEV_GPU_TMP"), Some("DCGM_FI_DEV_GPU_TEMP"));
        assert_eq!(nearest("completely-unrelated-text-here"), None);
    }
}
