//! The scanner that reads dcgm-exporter's counters CSV dialect as Go's `encoding/csv` does,
//! before the `csv` crate splits the rows: [`prepare`] rejects stray quotes as Go does, lets a
//! quoted column follow the blank after a comma, empties comment lines, normalises CRLF, and
//! records the line each record starts on, so every error can name `file:line`.
//!
//! Text in, text out: it must not know what a column means (fields, types, help text are
//! `csv_rows`'s) nor word the loader's errors; a [`ScanError`] is a line and a problem, which
//! `csv` turns into a `CsvError::Syntax`.

/// Input rewritten for the `csv` crate, with the start line of each record it will yield.
pub(super) struct Prepared {
    /// The rewritten text.
    pub(super) text: String,
    /// The 1-based line each record of `text` starts on in the input.
    pub(super) record_lines: Vec<usize>,
}

/// Broken quoting: the 1-based line of the problem and what is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct ScanError {
    /// Line of the problem.
    pub(super) line: usize,
    /// What is wrong.
    pub(super) problem: &'static str,
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
pub(super) fn prepare(text: &str) -> Result<Prepared, ScanError> {
    let mut out = String::with_capacity(text.len());
    let mut record_lines = Vec::new();
    let mut held = String::new();
    let mut state = Scan::RecordStart;
    let mut line = 1usize;
    let mut quote_line = 1usize;
    let syntax = |line: usize, problem: &'static str| ScanError { line, problem };

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
    use crate::catalogue::csv::test_support::{err, parse};
    use crate::catalogue::csv::{CsvError, MetricType};

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
}
