//! The field catalogue: every DCGM field gpu-exporter knows, how NVML reads it, its unit and
//! the entity it belongs to.
//!
//! This module owns the *static* description of fields ([`FieldDef`]) and the name lookup
//! (canonical `DCGM_FI_*` / `DCGM_EXP_*` names and the legacy 1.x lowercase aliases). It does
//! no I/O and never talks to NVML: the reader in `gpu` interprets [`Source`], and the counters
//! CSV parser in [`csv`] resolves names through [`lookup`].

pub mod csv;
mod field;
mod legacy;
mod tables;

pub use field::{
    ClockKind, FabricPart, FieldDef, Level, LinkPart, MemKind, Scale, Source,
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
    let reading = |f: &FieldDef| match f.source {
        Source::Unavailable(_) => None,
        Source::NvmlField(id, _) => Some(Source::NvmlField(id, Scale::Identity)),
        Source::NvmlFieldBer(id) => Some(Source::NvmlField(id, Scale::Identity)),
        Source::NvmlFieldRate(ids, _) => Some(Source::NvmlFieldRate(ids, Scale::Identity)),
        Source::Gpm(id, _) => Some(Source::Gpm(id, Scale::Identity)),
        other => Some(other),
    };
    a.id == b.id || reading(a).is_some_and(|r| Some(r) == reading(b))
}

/// The known name closest to `name` (for "did you mean" in errors), canonical or legacy.
pub fn nearest(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    all()
        .map(|f| f.name)
        .chain(legacy::ALIASES.iter().map(|(alias, _)| *alias))
        .map(|cand| (edit_distance(&upper, &cand.to_ascii_uppercase()), cand))
        .min_by_key(|(d, _)| *d)
        .filter(|(d, _)| *d <= name.len().max(4) / 2)
        .map(|(_, c)| c)
}

/// Levenshtein distance over bytes (field names are ASCII).
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

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
            .filter(|f| matches!(f.source, Source::Unavailable(_)))
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
    /// link level exactly when the per-link read serves it ([`Source::Link`]), and no name or
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
                let per_link_read = matches!(f.source, Source::Link(_));
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

    #[test]
    fn edit_distance_basics() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
