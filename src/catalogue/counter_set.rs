//! The counters CSV's data: what a loaded counters file is ([`CounterSet`] of [`CounterRow`]s,
//! each typed by a [`MetricType`]) and why one is refused ([`CsvError`]).
//!
//! Public as `catalogue::csv::…` (re-exported by `csv`, which loads them). Plain data and the
//! error's wording: it must not read files, split rows or check them (`csv`, `csv_scan` and
//! `csv_rows` do).

use std::fmt;

use super::FieldDef;

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

    /// The value slot of the row that reads the canonical field `field` (its index among
    /// [`CounterSet::metrics`], as each entity's values are kept), if the set has one: a row
    /// configured under another name of the same field (a DCGM 4.7 name) resolves to it too.
    /// The one lookup of a field's slot (the health model's and the status page's).
    pub fn slot(&self, field: &str) -> Option<usize> {
        self.metrics().position(|r| r.field.name == field)
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

/// The text of 1-based `line` in the original input, trimmed, for error messages.
pub(super) fn source_line(text: &str, line: usize) -> String {
    line.checked_sub(1)
        .and_then(|i| text.lines().nth(i))
        .unwrap_or("")
        .trim()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
