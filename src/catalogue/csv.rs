//! The counters CSV: which fields to export, as what, with which help text.
//!
//! The grammar is dcgm-exporter's, so its shipped files load unmodified:
//!
//! ```text
//! # a comment (a line whose first non-blank character is '#')
//! DCGM_FI_DEV_GPU_TEMP,   gauge, GPU temperature (in C).
//! dcgm_sm_clock,          gauge, "SM clock, legacy 1.x name (in MHz)."
//! DCGM_FI_DRIVER_VERSION, label, Driver version
//! ```
//!
//! Every row has exactly three columns, `FIELD, type, help`, each trimmed of surrounding
//! blanks. A column may be CSV-quoted (`"..."`, with `""` for a literal quote), which is how
//! a help text carries a comma. `FIELD` is a canonical `DCGM_FI_*`/`DCGM_EXP_*` name or a
//! legacy alias ([`lookup`](super::lookup)); the metric is emitted under the CSV's own
//! spelling. `type` is `gauge`, `counter`, `label`, `histogram` or `summary`; the last two
//! only change the `# TYPE` line. A `label` row exports no family: its value becomes a
//! label, named after the field, on the entity's other series.
//!
//! This module owns loading: [`load_counters`] and [`parse_counters`] run the steps in order
//! and keep the first of two rows of the same name. Rows are split by the `csv` crate. Before
//! that, the scanner in `csv_scan` walks the text once to check quoting as strictly as Go's
//! `encoding/csv` does (dcgm-exporter rejects a stray quote, so we do too), to let a quoted
//! column follow the blank after a comma, and to remember the line each row starts on, so
//! every error can name `file:line`; then `csv_rows` checks each row and says what it warns
//! of. The data types ([`CounterSet`], [`CounterRow`], [`MetricType`], [`CsvError`]) are
//! `counter_set`'s, public here. It must not check a row's columns or quoting itself.

use std::collections::HashMap;
use std::path::Path;

use super::counter_set::source_line;
pub use super::counter_set::{CounterRow, CounterSet, CsvError, MetricType};
use super::csv_rows::{parse_row, row_warnings};
use super::csv_scan::prepare;

/// Reads and parses a counters file. A read error names the path.
pub fn load_counters(path: &Path) -> Result<CounterSet, CsvError> {
    let origin = path.display().to_string();
    let text = crate::base::bounded_read::read_regular_text(
        path,
        crate::base::bounded_read::MAX_CONFIG_FILE,
    )
    .map_err(|e| CsvError::Io {
        origin: origin.clone(),
        source: e.into(),
    })?;
    parse_counters(&origin, &text)
}

/// Parses counters text; `origin` names it in errors and warnings.
pub fn parse_counters(origin: &str, text: &str) -> Result<CounterSet, CsvError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let prepared = prepare(text).map_err(|e| CsvError::Syntax {
        origin: origin.to_owned(),
        line: e.line,
        problem: e.problem.to_owned(),
        text: source_line(text, e.line),
    })?;
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .comment(Some(b'#'))
        .trim(csv::Trim::All)
        .flexible(true)
        .from_reader(prepared.text.as_bytes());

    let mut set = CounterSet {
        origin: origin.to_owned(),
        rows: Vec::new(),
        warnings: Vec::new(),
    };
    let mut first_seen: HashMap<String, usize> = HashMap::new();

    for (index, result) in reader.records().enumerate() {
        let line = prepared.record_lines.get(index).copied().unwrap_or(0);
        let record = result.map_err(|e| CsvError::Syntax {
            origin: origin.to_owned(),
            line,
            problem: e.to_string(),
            text: source_line(text, line),
        })?;
        let row = parse_row(origin, text, line, &record)?;
        if let Some(&first_line) = first_seen.get(&row.name) {
            // dcgm-exporter loads such files (its 1.x-compatibility-metrics.csv defines two
            // PCIe fields twice) and writes the family twice; Prometheus keeps the first
            // sample of a duplicated series. One family, the first definition, does the same.
            set.warnings.push(format!(
                "{origin}:{line}: {:?} is already defined on line {first_line}; this row is \
                 ignored and line {first_line}'s definition is used",
                row.name
            ));
            continue;
        }
        first_seen.insert(row.name.clone(), line);
        set.warnings.extend(row_warnings(origin, &row));
        set.rows.push(row);
    }

    if set.rows.is_empty() {
        set.warnings.push(format!(
            "{origin}: no active rows; the exporter will publish no DCGM families"
        ));
    }
    Ok(set)
}

/// What the tests of the CSV modules (here, `csv_rows`, `csv_scan`) parse with.
#[cfg(test)]
pub(super) mod test_support {
    use super::{CounterSet, CsvError, parse_counters};

    /// `text` as the file `t.csv`.
    pub(in crate::catalogue) fn parse(text: &str) -> Result<CounterSet, CsvError> {
        parse_counters("t.csv", text)
    }

    /// The error `text` gives; panics when it parses.
    pub(in crate::catalogue) fn err(text: &str) -> CsvError {
        match parse(text) {
            Ok(set) => panic!("expected an error, got {:?}", set.rows),
            Err(e) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::csv_rows::goes_down;
    use super::*;

    const DEFAULT: &str = include_str!("../../counters/default-counters.csv");
    const DCP: &str = include_str!("../../counters/dcp-metrics-included.csv");
    const DCGM_FORMAT: &str = include_str!("../../tests/fixtures/csv/dcgm-format.csv");

    /// dcgm-exporter 4.8's default active set, in its order.
    const DEFAULT_METRICS: [&str; 25] = [
        "DCGM_FI_DEV_SM_CLOCK",
        "DCGM_FI_DEV_MEM_CLOCK",
        "DCGM_FI_DEV_MEMORY_TEMP",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "DCGM_FI_DEV_ENC_UTIL",
        "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_XID_ERRORS",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_RESERVED",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
    ];

    use super::test_support::parse;

    fn shipped_file_is_the_default_set(origin: &str, text: &str) {
        let set = parse_counters(origin, text).unwrap_or_else(|e| panic!("{e}"));
        let metrics: Vec<&str> = set.metrics().map(|r| r.name.as_str()).collect();
        assert_eq!(metrics, DEFAULT_METRICS, "{origin}");
        let labels: Vec<&str> = set.labels().map(|r| r.name.as_str()).collect();
        assert_eq!(labels, ["DCGM_FI_DRIVER_VERSION"], "{origin}");
        // Our files carry the corrected types: nothing that goes down is a counter.
        for row in set.metrics() {
            if row.kind == MetricType::Counter {
                assert!(goes_down(row.field).is_none(), "{origin}: {}", row.name);
            }
            assert!(!row.help.is_empty(), "{origin}: {} has no help", row.name);
        }
        // Every row is one the exporter serves: the file loads without a warning.
        assert!(set.warnings.is_empty(), "{origin}: {:?}", set.warnings);
    }

    #[test]
    fn default_counters_parse_to_the_dcgm_exporter_default_set() {
        shipped_file_is_the_default_set("default-counters.csv", DEFAULT);
    }

    #[test]
    fn dcp_metrics_included_parses_to_the_same_set() {
        shipped_file_is_the_default_set("dcp-metrics-included.csv", DCP);
    }

    #[test]
    fn commented_rows_of_the_shipped_files_are_valid_too() {
        // Uncommenting every row must still give a loadable file (no typos, no duplicates).
        for (origin, text) in [("default", DEFAULT), ("dcp", DCP)] {
            let uncommented: String = text
                .lines()
                .map(|l| match l.strip_prefix("# ") {
                    Some(rest) if rest.starts_with("DCGM_") => rest,
                    _ => l,
                })
                .collect::<Vec<_>>()
                .join("\n");
            let set = parse_counters(origin, &uncommented).unwrap_or_else(|e| panic!("{e}"));
            assert!(set.rows.len() > 26, "{origin}");
        }
    }

    /// Every row of a counters file, on or commented out (a comment line that is a row).
    fn every_row(text: &str) -> Vec<(bool, String)> {
        text.lines()
            .filter_map(|l| {
                let (on, row) = match l.strip_prefix("# ") {
                    Some(rest) => (false, rest),
                    None => (true, l),
                };
                let mut cols = row.split(',');
                let name = cols.next()?.trim();
                let kind = cols.next()?.trim();
                (name.starts_with("DCGM_") || name.starts_with("dcgm_"))
                    .then(|| (on, format!("{name} {kind}")))
            })
            .collect()
    }

    /// gpu-exporter's copies of dcgm-exporter 4.8.2's default-counters.csv and
    /// dcp-metrics-included.csv (served under `--compatibility dcgm-4.8.2`) and of its
    /// 1.x-compatibility-metrics.csv (a fixture) carry every row of the originals, on or
    /// commented out, in their order, with their types, and load.
    #[test]
    fn dcgm_4_8_2_sets_load_row_for_row() {
        for (origin, text, rows, on, dups) in [
            (
                "dcgm-4.8.2-default-counters.csv",
                include_str!("../../counters/dcgm-4.8.2-default-counters.csv"),
                63,
                26,
                2,
            ),
            (
                "dcgm-4.8.2-dcp-metrics-included.csv",
                include_str!("../../counters/dcgm-4.8.2-dcp-metrics-included.csv"),
                59,
                26,
                2,
            ),
            (
                "dcgm-1x-compat-shape.csv",
                include_str!("../../tests/fixtures/csv/dcgm-1x-compat-shape.csv"),
                41,
                22,
                2,
            ),
        ] {
            let all = every_row(text);
            assert_eq!(all.len(), rows, "{origin}: {all:?}");
            assert_eq!(all.iter().filter(|(o, _)| *o).count(), on, "{origin}");
            let set = parse_counters(origin, text).unwrap_or_else(|e| panic!("{e}"));
            // Uncommented, every row still loads; only the two PCIe repeats are refused.
            let uncommented: String = text
                .lines()
                .map(|l| {
                    l.strip_prefix("# ")
                        .filter(|r| r.starts_with("DCGM_") || r.starts_with("dcgm_"))
                        .unwrap_or(l)
                })
                .collect::<Vec<_>>()
                .join("\n");
            let full = parse_counters(origin, &uncommented).unwrap_or_else(|e| panic!("{e}"));
            let repeats = full
                .warnings
                .iter()
                .filter(|w| w.contains("is already defined"))
                .count();
            assert_eq!(repeats, dups, "{origin}: {:?}", full.warnings);
            assert_eq!(full.rows.len(), rows - dups, "{origin}");
            if origin.starts_with("dcgm-4.8.2") {
                let metrics: Vec<&str> = set.metrics().map(|r| r.name.as_str()).collect();
                assert_eq!(metrics, DEFAULT_METRICS, "{origin}");
                let kind = |n: &str| set.rows.iter().find(|r| r.name == n).map(|r| r.kind);
                // 4.8.2's types, the ones our own sets fix included.
                assert_eq!(
                    kind("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"),
                    Some(MetricType::Counter)
                );
                assert_eq!(kind("DCGM_FI_PROF_PCIE_TX_BYTES"), Some(MetricType::Gauge));
                assert!(all.contains(&(false, "DCGM_FI_PROF_PCIE_TX_BYTES counter".into())));
            }
        }
        // The default set's commented exporter rows are 4.8.2's, typed counter; the dcp set
        // has none.
        let exp = |text: &str| {
            every_row(text)
                .into_iter()
                .filter(|(_, r)| r.starts_with("DCGM_EXP_"))
                .map(|(_, r)| r)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            exp(include_str!(
                "../../counters/dcgm-4.8.2-default-counters.csv"
            )),
            [
                "DCGM_EXP_CLOCK_EVENTS_COUNT counter",
                "DCGM_EXP_XID_ERRORS_COUNT counter",
                "DCGM_EXP_GPU_HEALTH_STATUS counter",
                "DCGM_EXP_P2P_STATUS counter"
            ]
        );
        assert!(
            exp(include_str!(
                "../../counters/dcgm-4.8.2-dcp-metrics-included.csv"
            ))
            .is_empty()
        );
    }

    #[test]
    fn dcgm_format_fixture_with_legacy_names_loads() {
        let set = parse_counters("dcgm-format.csv", DCGM_FORMAT).unwrap_or_else(|e| panic!("{e}"));
        let sm = set
            .rows
            .iter()
            .find(|r| r.name == "dcgm_sm_clock")
            .expect("legacy row kept under its own name");
        assert_eq!(sm.field.name, "DCGM_FI_DEV_SM_CLOCK");
        assert_eq!(sm.help, "SM clock, legacy name (in MHz).");
        let temp = set
            .rows
            .iter()
            .find(|r| r.name == "DCGM_GPU_TEMP")
            .expect("upper-case legacy spelling");
        assert_eq!(temp.field.id, 150);
        let throttle = set
            .rows
            .iter()
            .find(|r| r.name == "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")
            .expect("deprecated DCGM alias");
        assert_eq!(throttle.field.name, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS");
        let quoted = set
            .rows
            .iter()
            .find(|r| r.name == "DCGM_FI_DEV_GPU_UTIL")
            .expect("gpu util row");
        assert_eq!(quoted.help, "GPU busy, \"kernel running\" share, in %");
        let labels: Vec<&str> = set.labels().map(|r| r.name.as_str()).collect();
        assert_eq!(labels, ["DCGM_FI_DRIVER_VERSION", "DCGM_FI_DEV_SERIAL"]);
        // Line numbers point at the rows in the file.
        let lines: Vec<usize> = DCGM_FORMAT
            .lines()
            .enumerate()
            .filter(|(_, l)| l.starts_with("dcgm_sm_clock"))
            .map(|(i, _)| i + 1)
            .collect();
        assert_eq!(lines, [sm.line]);
        // The legacy NVLink row is typed counter, as in dcgm-exporter's file: a warning.
        assert!(
            set.warnings
                .iter()
                .any(|w| w.contains("dcgm_nvlink_bandwidth_total") && w.contains("gauge")),
            "{:?}",
            set.warnings
        );
    }

    #[test]
    fn fixtures_named_after_each_error_are_rejected() {
        type Case = (&'static str, &'static str, fn(&CsvError) -> bool);
        let cases: [Case; 6] = [
            (
                "wrong-column-count.csv",
                include_str!("../../tests/fixtures/csv/wrong-column-count.csv"),
                |e| matches!(e, CsvError::ColumnCount { .. }),
            ),
            (
                "empty-field-name.csv",
                include_str!("../../tests/fixtures/csv/empty-field-name.csv"),
                |e| matches!(e, CsvError::EmptyFieldName { .. }),
            ),
            (
                "unknown-field.csv",
                include_str!("../../tests/fixtures/csv/unknown-field.csv"),
                |e| matches!(e, CsvError::UnknownField { .. }),
            ),
            (
                "unknown-type.csv",
                include_str!("../../tests/fixtures/csv/unknown-type.csv"),
                |e| matches!(e, CsvError::UnknownType { .. }),
            ),
            (
                "text-field-as-number.csv",
                include_str!("../../tests/fixtures/csv/text-field-as-number.csv"),
                |e| matches!(e, CsvError::TextAsNumber { .. }),
            ),
            (
                "bad-quoting.csv",
                include_str!("../../tests/fixtures/csv/bad-quoting.csv"),
                |e| matches!(e, CsvError::Syntax { .. }),
            ),
        ];
        for (origin, text, is_expected) in cases {
            match parse_counters(origin, text) {
                Ok(_) => panic!("{origin} loaded"),
                Err(e) => {
                    assert!(is_expected(&e), "{origin}: {e}");
                    assert!(e.to_string().starts_with(&format!("{origin}:")), "{e}");
                }
            }
        }
    }

    #[test]
    fn duplicate_metric_loads_with_the_first_definition_and_names_both_lines() {
        let set = parse("DCGM_FI_DEV_GPU_TEMP, gauge, a\n# c\nDCGM_FI_DEV_GPU_TEMP, counter, b\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.rows.len(), 1);
        assert_eq!(set.rows[0].help, "a");
        assert!(
            set.warnings.iter().any(|w| w
                == "t.csv:3: \"DCGM_FI_DEV_GPU_TEMP\" is already defined on line 1; this row is \
                    ignored and line 1's definition is used"),
            "{:?}",
            set.warnings
        );
        // The shipped fixture: three rows, two of the same metric.
        let set = parse_counters(
            "duplicate-metric.csv",
            include_str!("../../tests/fixtures/csv/duplicate-metric.csv"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.rows.len(), 2);
        assert!(
            set.warnings
                .iter()
                .any(|w| w.contains("duplicate-metric.csv:4:"))
        );
        // dcgm-exporter 4.8.2's 1.x-compatibility file, row for row: 1.x names, two fields
        // twice.
        let set = parse_counters(
            "compat.csv",
            include_str!("../../tests/fixtures/csv/dcgm-1x-compat-shape.csv"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let names: Vec<&str> = set.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names
                .iter()
                .filter(|n| **n == "dcgm_fi_prof_pcie_tx_bytes")
                .count(),
            1,
            "{names:?}"
        );
        // Every row of dcgm-exporter 4.8.2's file: 22 active rows, two of them repeats.
        assert_eq!(set.rows.len(), 20, "{names:?}");
        assert_eq!(names.first(), Some(&"dcgm_sm_clock"));
        assert_eq!(names.last(), Some(&"dcgm_fi_prof_dram_active"));
        let dups: Vec<&String> = set
            .warnings
            .iter()
            .filter(|w| w.contains("is already defined"))
            .collect();
        assert_eq!(dups.len(), 2, "{:?}", set.warnings);
        // The same field under two different names is two families, which is fine.
        let set = parse("DCGM_FI_DEV_GPU_TEMP, gauge, a\ndcgm_gpu_temp, gauge, b\n")
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.rows.len(), 2);
    }

    #[test]
    fn empty_file_is_allowed_with_a_warning() {
        let set = parse("# nothing\n\n").unwrap_or_else(|e| panic!("{e}"));
        assert!(set.rows.is_empty());
        assert_eq!(set.warnings.len(), 1);
    }

    #[test]
    fn load_error_names_the_path() {
        let path = Path::new("/nonexistent/dir/counters.csv");
        match load_counters(path) {
            Err(e @ CsvError::Io { .. }) => {
                assert!(
                    e.to_string().starts_with("/nonexistent/dir/counters.csv: "),
                    "{e}"
                );
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn load_reads_a_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("c.csv");
        std::fs::write(&path, "DCGM_FI_DEV_GPU_TEMP, gauge, t\n").unwrap_or_else(|e| panic!("{e}"));
        let set = load_counters(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.origin, path.display().to_string());
        assert_eq!(set.rows.len(), 1);
    }
}
