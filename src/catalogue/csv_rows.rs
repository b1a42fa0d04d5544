//! The counters CSV's row checks: one record, already split into trimmed columns, becomes a
//! [`CounterRow`] or the [`CsvError`] that says why not ([`parse_row`]), and a valid row gets
//! the warnings for what dcgm-exporter accepts but will not do what the file seems to ask for
//! ([`row_warnings`]).
//!
//! It checks one row at a time: it must not read or split text (`csv_scan` and the `csv`
//! crate do) nor compare rows with one another (duplicates are `csv`'s).

use super::counter_set::{CounterRow, CsvError, MetricType, source_line};
use super::{FieldDef, Getter, lookup, nearest};

/// Validates one record (already split and trimmed) into a row.
pub(super) fn parse_row(
    origin: &str,
    text: &str,
    line: usize,
    record: &csv::StringRecord,
) -> Result<CounterRow, CsvError> {
    if record.len() != 3 {
        return Err(CsvError::ColumnCount {
            origin: origin.to_owned(),
            line,
            found: record.len(),
            text: source_line(text, line),
        });
    }
    let (name, kind, help) = (&record[0], &record[1], &record[2]);
    if name.is_empty() {
        return Err(CsvError::EmptyFieldName {
            origin: origin.to_owned(),
            line,
            text: source_line(text, line),
        });
    }
    let field = lookup(name).ok_or_else(|| CsvError::UnknownField {
        origin: origin.to_owned(),
        line,
        name: name.to_owned(),
        suggestion: nearest(name),
    })?;
    let kind = MetricType::from_name(kind).ok_or_else(|| CsvError::UnknownType {
        origin: origin.to_owned(),
        line,
        name: name.to_owned(),
        kind: kind.to_owned(),
    })?;
    if matches!(field.getter, Getter::Text(_) | Getter::DcgmSwitchText) && !kind.is_label() {
        return Err(CsvError::TextAsNumber {
            origin: origin.to_owned(),
            line,
            name: name.to_owned(),
            kind,
        });
    }
    Ok(CounterRow {
        name: name.to_owned(),
        field,
        kind,
        help: help.to_owned(),
        line,
    })
}

/// Warnings for a valid row: things dcgm-exporter accepts that will not do what the file
/// seems to ask for.
pub(super) fn row_warnings(origin: &str, row: &CounterRow) -> Vec<String> {
    let mut out = Vec::new();
    let (name, line) = (&row.name, row.line);
    if let Getter::Unavailable(why) = row.field.getter {
        out.push(format!(
            "{origin}:{line}: {name:?} will never produce data: {why}"
        ));
    }
    match row.kind {
        MetricType::Histogram | MetricType::Summary => out.push(format!(
            "{origin}:{line}: {name:?} is typed {}; only the # TYPE line changes, the value \
             stays a single sample",
            row.kind
        )),
        MetricType::Label
            if matches!(
                row.field.getter,
                Getter::DcgmSwitch | Getter::DcgmSwitchPort
            ) =>
        {
            out.push(format!(
                "{origin}:{line}: {name:?} is a numeric NVSwitch field typed label: it will \
                 never produce data (only the NVSwitch strings DCGM_FI_DEV_NVSWITCH_UUID and \
                 DCGM_FI_DEV_NVSWITCH_FIRMWARE_VERSION label switch series); type it gauge or \
                 counter"
            ));
        }
        MetricType::Label
            if !matches!(row.field.getter, Getter::Text(_) | Getter::DcgmSwitchText) =>
        {
            out.push(format!(
                "{origin}:{line}: {name:?} is a number typed label: its value becomes a label \
                 on every series and changes their identity each time it changes; type it \
                 gauge or counter"
            ));
        }
        MetricType::Counter => {
            if let Some(nature) = goes_down(row.field) {
                out.push(format!(
                    "{origin}:{line}: {name:?} is typed counter but {} is {nature} that can go \
                     down; rate() over it will be wrong, type it gauge",
                    row.field.name
                ));
            }
        }
        MetricType::Gauge | MetricType::Label => {}
    }
    out
}

/// Describes a field whose value is a level or a rate, not a running total; `None` for
/// fields that really are monotonic counters.
pub(super) fn goes_down(field: &FieldDef) -> Option<&'static str> {
    let nature = match field.getter {
        Getter::NvmlFieldRate(..) | Getter::PcieThroughput(_) => "a rate",
        Getter::Gpm(..) => "an average over the sampling interval",
        Getter::Utilization(_) => "a utilization percentage",
        Getter::Memory(_) | Getter::Bar1(_) => "a memory amount",
        Getter::Clock(_) | Getter::MaxClock(_) | Getter::AppClock(_) => "a clock frequency",
        Getter::FanSpeed => "a fan speed",
        Getter::GpuTemperature | Getter::TempThreshold(_) => "a temperature",
        Getter::PowerUsage | Getter::PowerLimit | Getter::PowerMgmtLimit => "a power reading",
        Getter::Window(_) => "a count over a sliding window",
        Getter::DcgmHealth => "a health-check result",
        Getter::Xid => "the code of the last Xid error",
        Getter::ClockEventReasons => "a bitmask",
        _ => match field.unit {
            "C" => "a temperature",
            "W" => "a power reading",
            "bool" => "a yes/no flag",
            _ => return None,
        },
    };
    Some(nature)
}

#[cfg(test)]
mod tests {
    use crate::catalogue::csv::test_support::{err, parse};
    use crate::catalogue::csv::{CsvError, MetricType};

    #[test]
    fn wrong_number_of_columns() {
        let e = err("# header\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temp, in C\n");
        assert!(matches!(
            e,
            CsvError::ColumnCount {
                line: 2,
                found: 4,
                ..
            }
        ));
        let msg = e.to_string();
        assert!(msg.starts_with("t.csv:2: "), "{msg}");
        assert!(msg.contains("found 4"), "{msg}");
        assert!(msg.contains("expected 3"), "{msg}");
        assert!(
            msg.contains("\"DCGM_FI_DEV_GPU_TEMP, gauge, GPU temp, in C\""),
            "{msg}"
        );

        let e = err("DCGM_FI_DEV_GPU_TEMP, gauge\n");
        assert!(matches!(
            e,
            CsvError::ColumnCount {
                line: 1,
                found: 2,
                ..
            }
        ));
    }

    #[test]
    fn empty_field_name() {
        let e = err("\n\n , gauge, nothing here\n");
        assert!(matches!(e, CsvError::EmptyFieldName { line: 3, .. }), "{e}");
        assert!(
            e.to_string().starts_with("t.csv:3: empty field name: "),
            "{e}"
        );
    }

    #[test]
    fn unknown_field_suggests_the_nearest_name() {
        let e = err("DCGM_FI_DEV_GPU_TEMP, gauge, ok\nDCGM_FI_DEV_GPU_TMP, gauge, typo\n");
        let msg = e.to_string();
        assert!(matches!(e, CsvError::UnknownField { line: 2, .. }), "{msg}");
        assert_eq!(
            msg,
            "t.csv:2: unknown field \"DCGM_FI_DEV_GPU_TMP\"; did you mean \"DCGM_FI_DEV_GPU_TEMP\"?"
        );
        let e = err("SOMETHING_ELSE_ENTIRELY_WITH_A_LONG_NAME, gauge, x\n");
        assert!(!e.to_string().contains("did you mean"), "{e}");
    }

    #[test]
    fn unknown_type_lists_the_valid_ones() {
        let e = err("DCGM_FI_DEV_GPU_TEMP, gague, GPU temp\n");
        let msg = e.to_string();
        assert!(matches!(e, CsvError::UnknownType { line: 1, .. }), "{msg}");
        assert!(msg.contains("\"gague\""), "{msg}");
        for t in MetricType::ALL {
            assert!(msg.contains(t.as_str()), "{msg}");
        }
    }

    #[test]
    fn text_field_must_be_a_label() {
        let e = err("DCGM_FI_DRIVER_VERSION, gauge, Driver version\n");
        let msg = e.to_string();
        assert!(matches!(e, CsvError::TextAsNumber { line: 1, .. }), "{msg}");
        assert!(msg.contains("`label`"), "{msg}");
        assert!(msg.contains("\"DCGM_FI_DRIVER_VERSION\""), "{msg}");
        assert!(
            err("DCGM_FI_DEV_UUID, counter, id\n")
                .to_string()
                .contains("counter")
        );
    }

    #[test]
    fn warnings_for_histogram_unavailable_and_counter_on_a_gauge() {
        let set = parse(
            "DCGM_FI_DEV_GPU_TEMP, histogram, t\n\
             DCGM_FI_DEV_GPU_NVLINK_ERRORS, gauge, v\n\
             DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, n\n\
             DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, e\n\
             DCGM_EXP_P2P_STATUS, gauge, p\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.rows.len(), 5);
        let w = &set.warnings;
        assert_eq!(w.len(), 4, "{w:?}");
        assert!(
            w[0].starts_with("t.csv:1: ") && w[0].contains("histogram"),
            "{w:?}"
        );
        assert!(
            w[1].starts_with("t.csv:2: ") && w[1].contains("NVLink error events"),
            "{w:?}"
        );
        assert!(
            w[2].starts_with("t.csv:3: ") && w[2].contains("gauge"),
            "{w:?}"
        );
        assert!(
            w[3].starts_with("t.csv:5: ") && w[3].contains("never produce data"),
            "{w:?}"
        );
    }

    #[test]
    fn legacy_names_are_kept_verbatim() {
        let set =
            parse("dcgm_fb_used, gauge, used\nDCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL, gauge, nv\n")
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.rows[0].name, "dcgm_fb_used");
        assert_eq!(set.rows[0].field.name, "DCGM_FI_DEV_FB_USED");
        assert_eq!(set.rows[1].field.id, 449);
    }

    #[test]
    fn labels_and_metrics_are_split() {
        let set = parse(
            "DCGM_FI_DRIVER_VERSION, label, d\nDCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_GPU_UTIL, label, u\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.metrics().count(), 1);
        assert_eq!(set.labels().count(), 2);
        // A number typed label is allowed (dcgm-exporter allows it) but said.
        assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
        assert!(
            set.warnings[0].contains(":3: \"DCGM_FI_DEV_GPU_UTIL\" is a number typed label"),
            "{:?}",
            set.warnings
        );
    }

    #[test]
    fn nvswitch_label_rows_are_warned_of_only_when_numeric() {
        let set = parse(
            "DCGM_FI_DEV_NVSWITCH_UUID, label, u\nDCGM_FI_DEV_NVSWITCH_FIRMWARE_VERSION, label, f\n\
             DCGM_FI_DEV_NVSWITCH_PHYSICAL_ID, label, p\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.warnings.len(), 1, "{:?}", set.warnings);
        assert!(
            set.warnings[0]
                .contains(":3: \"DCGM_FI_DEV_NVSWITCH_PHYSICAL_ID\" is a numeric NVSwitch")
                && set.warnings[0].contains("never produce data"),
            "{:?}",
            set.warnings
        );
    }
}
