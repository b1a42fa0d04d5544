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
//! legacy alias ([`lookup`]); the metric is emitted under the CSV's own spelling. `type` is
//! `gauge`, `counter`, `label`, `histogram` or `summary`; the last two only change the
//! `# TYPE` line. A `label` row exports no family: its value becomes a label, named after
//! the field, on the entity's other series.
//!
//! Rows are split by the `csv` crate. Before that, a small scanner walks the text once to
//! check quoting as strictly as Go's `encoding/csv` does (dcgm-exporter rejects a stray
//! quote, so we do too), to let a quoted column follow the blank after a comma, and to
//! remember the line each row starts on, so every error can name `file:line`.

use std::collections::HashMap;
use std::fmt;
use std::path::Path;

use super::{FieldDef, Source, lookup, nearest};

/// Prometheus type of a counters row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricType {
    /// A value that can go up and down.
    Gauge,
    /// A value that only goes up (until the driver reloads).
    Counter,
    /// Not a family: the value becomes a label on the entity's other series.
    Label,
    /// Accepted for compatibility; only the `# TYPE` line says `histogram`.
    Histogram,
    /// Accepted for compatibility; only the `# TYPE` line says `summary`.
    Summary,
}

impl MetricType {
    /// Every type, in the order error messages list them.
    pub const ALL: [MetricType; 5] = [
        MetricType::Gauge,
        MetricType::Counter,
        MetricType::Label,
        MetricType::Histogram,
        MetricType::Summary,
    ];

    /// The spelling used in the CSV and on the `# TYPE` line.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricType::Gauge => "gauge",
            MetricType::Counter => "counter",
            MetricType::Label => "label",
            MetricType::Histogram => "histogram",
            MetricType::Summary => "summary",
        }
    }

    /// Parses a CSV type column (ASCII case-insensitive).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|t| t.as_str().eq_ignore_ascii_case(name))
    }

    /// Whether rows of this type become labels instead of families.
    pub fn is_label(self) -> bool {
        self == MetricType::Label
    }
}

impl fmt::Display for MetricType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One active row of a counters file.
#[derive(Debug, Clone)]
pub struct CounterRow {
    /// The name as written in the CSV; emitted verbatim as the metric (or label) name.
    pub name: String,
    /// The field the name resolves to.
    pub field: &'static FieldDef,
    /// The row's type.
    pub kind: MetricType,
    /// The CSV's help text (may be empty).
    pub help: String,
    /// 1-based line the row starts on.
    pub line: usize,
}

/// A parsed counters file.
#[derive(Debug, Clone)]
pub struct CounterSet {
    /// Where the rows came from (the path as given, or a name for built-in text).
    pub origin: String,
    /// Active rows in file order.
    pub rows: Vec<CounterRow>,
    /// Problems that do not stop the exporter, each starting with `origin:line: `.
    pub warnings: Vec<String>,
}

impl CounterSet {
    /// Rows that produce a metric family (every type except `label`).
    pub fn metrics(&self) -> impl Iterator<Item = &CounterRow> {
        self.rows.iter().filter(|r| !r.kind.is_label())
    }

    /// Rows that become labels on the other series.
    pub fn labels(&self) -> impl Iterator<Item = &CounterRow> {
        self.rows.iter().filter(|r| r.kind.is_label())
    }
}

/// Why a counters file was rejected. Every message starts with `origin:line: ` (or
/// `origin: ` when the file could not be read) and quotes the offending text.
#[derive(Debug, thiserror::Error)]
pub enum CsvError {
    /// The file could not be read.
    #[error("{origin}: cannot read counters file: {source}")]
    Io {
        /// The path as given.
        origin: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Broken CSV quoting (or another error from the CSV reader).
    #[error("{origin}:{line}: malformed CSV, {problem}: {text:?}")]
    Syntax {
        /// File name.
        origin: String,
        /// Line of the problem.
        line: usize,
        /// What is wrong.
        problem: String,
        /// The line as written.
        text: String,
    },
    /// A row without exactly three columns.
    #[error(
        "{origin}:{line}: expected 3 columns (FIELD, type, help), found {found}: {text:?}; \
         quote the help text if it contains a comma"
    )]
    ColumnCount {
        /// File name.
        origin: String,
        /// Line of the row.
        line: usize,
        /// Columns found.
        found: usize,
        /// The line as written.
        text: String,
    },
    /// A row whose first column is blank.
    #[error("{origin}:{line}: empty field name: {text:?}")]
    EmptyFieldName {
        /// File name.
        origin: String,
        /// Line of the row.
        line: usize,
        /// The line as written.
        text: String,
    },
    /// A field name that is neither canonical nor a known alias.
    #[error("{origin}:{line}: unknown field {name:?}{}", did_you_mean(*.suggestion))]
    UnknownField {
        /// File name.
        origin: String,
        /// Line of the row.
        line: usize,
        /// The name as written.
        name: String,
        /// The closest known name, if any is close.
        suggestion: Option<&'static str>,
    },
    /// A type column that is not one of the five types.
    #[error(
        "{origin}:{line}: unknown type {kind:?} for {name:?}; expected one of gauge, counter, \
         label, histogram, summary"
    )]
    UnknownType {
        /// File name.
        origin: String,
        /// Line of the row.
        line: usize,
        /// The field name as written.
        name: String,
        /// The type as written.
        kind: String,
    },
    /// A string-valued field typed as a number.
    #[error(
        "{origin}:{line}: {name:?} is a text field and cannot be a {kind}; use type `label` to \
         attach it as a label"
    )]
    TextAsNumber {
        /// File name.
        origin: String,
        /// Line of the row.
        line: usize,
        /// The field name as written.
        name: String,
        /// The type given.
        kind: MetricType,
    },
}

fn did_you_mean(suggestion: Option<&str>) -> String {
    suggestion.map_or_else(String::new, |s| format!("; did you mean {s:?}?"))
}

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
    let prepared = prepare(origin, text)?;
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

/// Validates one record (already split and trimmed) into a row.
fn parse_row(
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
    if matches!(field.source, Source::Text(_) | Source::DcgmSwitchText) && !kind.is_label() {
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
fn row_warnings(origin: &str, row: &CounterRow) -> Vec<String> {
    let mut out = Vec::new();
    let (name, line) = (&row.name, row.line);
    if let Source::Unavailable(why) = row.field.source {
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
                row.field.source,
                Source::DcgmSwitch | Source::DcgmSwitchPort
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
            if !matches!(row.field.source, Source::Text(_) | Source::DcgmSwitchText) =>
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
fn goes_down(field: &FieldDef) -> Option<&'static str> {
    let nature = match field.source {
        Source::NvmlFieldRate(..) | Source::PcieThroughput(_) => "a rate",
        Source::Gpm(..) => "an average over the sampling interval",
        Source::Utilization(_) => "a utilization percentage",
        Source::Memory(_) | Source::Bar1(_) => "a memory amount",
        Source::Clock(_) | Source::MaxClock(_) | Source::AppClock(_) => "a clock frequency",
        Source::FanSpeed => "a fan speed",
        Source::GpuTemperature | Source::TempThreshold(_) => "a temperature",
        Source::PowerUsage | Source::PowerLimit | Source::PowerMgmtLimit => "a power reading",
        Source::Window(_) => "a count over a sliding window",
        Source::DcgmHealth => "a health-check result",
        Source::Xid => "the code of the last Xid error",
        Source::ClockEventReasons => "a bitmask",
        _ => match field.unit {
            "C" => "a temperature",
            "W" => "a power reading",
            "bool" => "a yes/no flag",
            _ => return None,
        },
    };
    Some(nature)
}

/// The text of 1-based `line` in the original input, trimmed, for error messages.
fn source_line(text: &str, line: usize) -> String {
    line.checked_sub(1)
        .and_then(|i| text.lines().nth(i))
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// Input rewritten for the `csv` crate, with the start line of each record it will yield.
struct Prepared {
    text: String,
    record_lines: Vec<usize>,
}

/// Scanner state for [`prepare`].
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scan {
    /// At the start of a line, outside quotes (blanks seen so far are held back).
    RecordStart,
    /// Right after a comma (blanks seen so far are held back).
    FieldStart,
    /// Inside an unquoted column.
    Unquoted,
    /// Inside a quoted column.
    Quoted,
    /// Just read a `"` inside a quoted column: either `""` or the closing quote.
    QuoteInQuoted,
    /// After a closing quote and some blanks; only a comma or line end may follow.
    AfterQuoted,
    /// In a comment line.
    Comment,
}

/// One pass over the input that
/// - rejects stray quotes the way Go's `encoding/csv` does (a `"` inside an unquoted
///   column, text after a closing quote, a quote left open at the end of the file);
/// - drops blanks before an opening quote and after a closing one, so `a, "b, c"` is two
///   columns (the `csv` crate only recognises a quote as the column's first byte);
/// - empties comment lines, including ones indented with blanks, and normalises CRLF;
/// - records the line each record starts on.
fn prepare(origin: &str, text: &str) -> Result<Prepared, CsvError> {
    let mut out = String::with_capacity(text.len());
    let mut record_lines = Vec::new();
    let mut held = String::new();
    let mut state = Scan::RecordStart;
    let mut line = 1usize;
    let mut quote_line = 1usize;
    let syntax = |line: usize, problem: &str| CsvError::Syntax {
        origin: origin.to_owned(),
        line,
        problem: problem.to_owned(),
        text: source_line(text, line),
    };

    let mut chars = text.chars().peekable();
    while let Some(mut c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                continue;
            }
            c = '\n';
        }
        match state {
            Scan::RecordStart | Scan::FieldStart => match c {
                ' ' | '\t' => held.push(c),
                '\n' => {
                    held.clear();
                    out.push('\n');
                    state = Scan::RecordStart;
                    line += 1;
                }
                '#' if state == Scan::RecordStart => {
                    held.clear();
                    state = Scan::Comment;
                }
                _ => {
                    if state == Scan::RecordStart {
                        record_lines.push(line);
                    }
                    if c == '"' {
                        held.clear();
                        quote_line = line;
                        state = Scan::Quoted;
                    } else {
                        out.push_str(&held);
                        held.clear();
                        state = if c == ',' {
                            Scan::FieldStart
                        } else {
                            Scan::Unquoted
                        };
                    }
                    out.push(c);
                }
            },
            Scan::Unquoted => match c {
                '"' => {
                    return Err(syntax(
                        line,
                        "a '\"' inside an unquoted column (quote the whole column and write \"\" for a literal quote)",
                    ));
                }
                ',' => {
                    out.push(c);
                    state = Scan::FieldStart;
                }
                '\n' => {
                    out.push(c);
                    state = Scan::RecordStart;
                    line += 1;
                }
                _ => out.push(c),
            },
            Scan::Quoted => {
                out.push(c);
                if c == '"' {
                    state = Scan::QuoteInQuoted;
                } else if c == '\n' {
                    line += 1;
                }
            }
            Scan::QuoteInQuoted | Scan::AfterQuoted => match c {
                '"' if state == Scan::QuoteInQuoted => {
                    out.push(c);
                    state = Scan::Quoted;
                }
                ' ' | '\t' => state = Scan::AfterQuoted,
                ',' => {
                    out.push(c);
                    state = Scan::FieldStart;
                }
                '\n' => {
                    out.push(c);
                    state = Scan::RecordStart;
                    line += 1;
                }
                _ => {
                    return Err(syntax(
                        line,
                        "text after the closing '\"' of a quoted column",
                    ));
                }
            },
            Scan::Comment => {
                if c == '\n' {
                    out.push('\n');
                    state = Scan::RecordStart;
                    line += 1;
                }
            }
        }
    }
    if state == Scan::Quoted {
        return Err(syntax(
            quote_line,
            "a quoted column opened here is never closed",
        ));
    }
    Ok(Prepared {
        text: out,
        record_lines,
    })
}

#[cfg(test)]
mod tests {
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

    fn parse(text: &str) -> Result<CounterSet, CsvError> {
        parse_counters("t.csv", text)
    }

    fn err(text: &str) -> CsvError {
        match parse(text) {
            Ok(set) => panic!("expected an error, got {:?}", set.rows),
            Err(e) => e,
        }
    }

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
    fn bad_quoting_is_a_syntax_error_with_its_line() {
        let e = err("DCGM_FI_DEV_GPU_TEMP, gauge, ok\nDCGM_FI_DEV_SM_CLOCK, gauge, 5\" screen\n");
        assert!(matches!(e, CsvError::Syntax { line: 2, .. }), "{e}");
        assert!(e.to_string().starts_with("t.csv:2: malformed CSV"), "{e}");
        assert!(e.to_string().contains("5\\\" screen"), "{e}");

        let e = err("DCGM_FI_DEV_GPU_TEMP, gauge, \"closed\" then more\n");
        assert!(matches!(e, CsvError::Syntax { line: 1, .. }), "{e}");

        let e =
            err("\nDCGM_FI_DEV_GPU_TEMP, gauge, \"never closed\nDCGM_FI_DEV_SM_CLOCK, gauge, x\n");
        assert!(matches!(e, CsvError::Syntax { line: 2, .. }), "{e}");
        assert!(e.to_string().contains("never closed"), "{e}");
    }

    #[test]
    fn quoted_help_with_commas_and_doubled_quotes() {
        let set = parse(
            "DCGM_FI_DEV_GPU_TEMP, gauge, \"Temperature, of the die (\"\"core\"\")\"  \n\
             \"DCGM_FI_DEV_SM_CLOCK\",\"gauge\",\"\"\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.rows[0].help, "Temperature, of the die (\"core\")");
        assert_eq!(set.rows[1].name, "DCGM_FI_DEV_SM_CLOCK");
        assert_eq!(set.rows[1].help, "");
    }

    #[test]
    fn comments_blank_lines_crlf_and_bom() {
        let text = "\u{feff}# Format\r\n\r\n   # indented comment, with commas,,\r\n\t\r\n\
                    DCGM_FI_DEV_GPU_TEMP ,  gauge ,  GPU temp (in C).\r\n\
                    DCGM_FI_DEV_DEC_UTIL ,\tGAUGE,\tDecoder\r\n";
        let set = parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.rows.len(), 2);
        assert_eq!(set.rows[0].name, "DCGM_FI_DEV_GPU_TEMP");
        assert_eq!(set.rows[0].help, "GPU temp (in C).");
        assert_eq!(set.rows[0].line, 5);
        assert_eq!(set.rows[1].kind, MetricType::Gauge);
        assert_eq!(set.rows[1].line, 6);
        assert!(set.warnings.is_empty(), "{:?}", set.warnings);
    }

    #[test]
    fn multi_line_quoted_help_keeps_later_line_numbers_right() {
        let set =
            parse("DCGM_FI_DEV_GPU_TEMP, gauge, \"two\nlines\"\nDCGM_FI_DEV_SM_CLOCK, gauge, x\n")
                .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.rows[0].help, "two\nlines");
        assert_eq!(set.rows[1].line, 3);
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

    #[test]
    fn metric_type_names() {
        for t in MetricType::ALL {
            assert_eq!(MetricType::from_name(t.as_str()), Some(t));
            assert_eq!(t.to_string(), t.as_str());
        }
        assert_eq!(MetricType::from_name("Counter"), Some(MetricType::Counter));
        assert_eq!(MetricType::from_name("info"), None);
    }
}
