//! The `--config-file` YAML parser's refusals in our own words: what is wrong, at which line,
//! column and key, and how to fix it. The parser's own text (which speaks of its options, its
//! functions and its internal counters) never reaches the operator.
//!
//! It owns only the wording; `config::file` decides what the file means. Every piece of the
//! file quoted in a message (a key, a value) goes through `base::shown`, so that a control
//! character in the file cannot forge a log line.

use serde_saphyr::Error;
use serde_saphyr::budget::BudgetBreach;

use crate::base::shown::shown;

/// The message for `e`, raised while parsing `text`: `line L, column C, key K: what; fix`.
pub fn message(text: &str, e: &Error) -> String {
    let e = innermost(e);
    let place = e.location().map(|l| {
        let (line, column) = (l.line(), l.column());
        let key = match e {
            Error::DuplicateMappingKey { key: Some(k), .. } => Some(k.clone()),
            _ => key_at(text, line, column),
        };
        (line, column, key)
    });
    let at = match &place {
        Some((line, column, Some(key))) => {
            format!("line {line}, column {column}, key {}: ", shown(key))
        }
        Some((line, column, None)) => format!("line {line}, column {column}: "),
        None => String::new(),
    };
    let value = place
        .as_ref()
        .map(|(line, column, _)| value_at(text, *line, *column))
        .filter(|v| !v.is_empty());
    let what = match e {
        Error::DuplicateMappingKey { .. } => {
            "this key is given twice in the same mapping; keep one of them".into()
        }
        Error::MultipleDocuments { .. } => {
            "a second YAML document (`---`) starts here; the file must hold one document: \
             remove the `---` line and merge what follows into the first"
                .into()
        }
        Error::Budget { breach, .. } => format!(
            "the file is too large or too deeply nested for a configuration file ({}); \
             write it out plainly",
            budget(breach)
        ),
        Error::InvalidScalar { ty, .. } => format!(
            "{} is not {}",
            value.as_deref().map_or("the value".into(), shown),
            wanted(ty)
        ),
        Error::SerdeInvalidType {
            unexpected,
            expected,
            ..
        }
        | Error::SerdeInvalidValue {
            unexpected,
            expected,
            ..
        } => format!("expected {}, found {}", wanted(expected), found(unexpected)),
        Error::Unexpected { expected, .. }
            if expected.starts_with("map") || expected.starts_with("sequence") =>
        {
            format!("expected {} here", wanted(expected))
        }
        Error::SerdeInvalidLength { .. } => {
            "the list here has the wrong number of items for this key".into()
        }
        Error::SerdeMissingField { field, .. } => format!(
            "the mapping here lacks the key {field}, which it must have (see docs/flags.md, \
             Configuration file)"
        ),
        Error::Eof { .. } => "the file ends in the middle of a value: close the open \
                              quote, bracket or brace"
            .into(),
        Error::UnknownAnchor { .. } => {
            "an alias (*name) refers to no anchor (&name) defined before it".into()
        }
        Error::NullIntoString { .. } => "the value is empty; give one".into(),
        _ => "this is not valid YAML for the configuration file here: check the indentation, \
              the `key: value` form, and that quotes, brackets and braces are closed"
            .into(),
    };
    format!("{at}{what}")
}

/// The error behind any wrapping (a source excerpt, an alias).
fn innermost(e: &Error) -> &Error {
    match e.without_snippet() {
        #[allow(deprecated)] // `msg` is the deprecated field; `error` is the one read
        Error::AliasError { error, .. } => innermost(error),
        other => other,
    }
}

/// Which limit a file beyond the parser's budget crossed, in plain words.
fn budget(b: &BudgetBreach) -> String {
    match b {
        BudgetBreach::Nodes { nodes } => format!("more than {} values", nodes.saturating_sub(1)),
        BudgetBreach::Depth { depth } => format!("nested {depth} levels deep"),
        BudgetBreach::Aliases { .. } | BudgetBreach::Anchors { .. } => {
            "too many anchors or aliases".into()
        }
        BudgetBreach::Documents { .. } => "too many documents".into(),
        BudgetBreach::ScalarBytes { .. } => "too much text in values".into(),
        _ => "too many YAML events".into(),
    }
}

/// What a target type (as serde or the parser names it) means for the operator.
fn wanted(ty: &str) -> String {
    let ty = ty.trim_start_matches("a ").trim_start_matches("an ");
    match ty {
        "u8" | "u16" | "u32" | "u64" | "usize" => {
            let max: u64 = match ty {
                "u8" => u8::MAX.into(),
                "u16" => u16::MAX.into(),
                "u32" => u32::MAX.into(),
                _ => u64::MAX,
            };
            format!("a whole number from 0 to {max}")
        }
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "bool" | "boolean" => "true or false".into(),
        "string" | "str" | "char" => "a text value".into(),
        t if t.starts_with("sequence") || t.starts_with("list") => "a list".into(),
        t if t.starts_with("struct") || t.starts_with("map") => {
            "a mapping of `key: value` lines".into()
        }
        t if t.starts_with("option") => "a value".into(),
        _ => "a value of another kind".into(),
    }
}

/// What serde found, in plain words (`integer `5``, `sequence`, `map`, …).
fn found(unexpected: &str) -> String {
    let u = unexpected.trim();
    if u.starts_with("sequence") {
        "a list".into()
    } else if u.starts_with("map") {
        "a mapping".into()
    } else if u.starts_with("unit") || u.starts_with("null") {
        "nothing (an empty value)".into()
    } else if let Some((kind, rest)) = u.split_once(' ') {
        let v = rest.trim_matches(|c| c == '`' || c == '"');
        let kind = match kind {
            "integer" => "the number",
            "floating" => "the number",
            "boolean" => "the boolean",
            "string" => "the text",
            _ => "the value",
        };
        let v = v.trim_start_matches("point `").trim_end_matches('`');
        format!("{kind} {}", shown(v))
    } else {
        "a value of another kind".into()
    }
}

/// The line `line` (1-based) of `text`, or "".
fn line_of(text: &str, line: u64) -> &str {
    usize::try_from(line.saturating_sub(1))
        .ok()
        .and_then(|i| text.lines().nth(i))
        .unwrap_or("")
}

/// Splits `l` at the 1-based character `column`.
fn split_at_column(l: &str, column: u64) -> (&str, &str) {
    let n = usize::try_from(column.saturating_sub(1)).unwrap_or(usize::MAX);
    let at = l.char_indices().nth(n).map_or(l.len(), |(i, _)| i);
    l.split_at(at)
}

/// The scalar that starts at `line`, `column`: up to a `,`, `}`, `]`, ` #` or the line's end.
fn value_at(text: &str, line: u64, column: u64) -> String {
    let (_, rest) = split_at_column(line_of(text, line), column);
    let end = rest
        .find([',', '}', ']'])
        .into_iter()
        .chain(rest.find(" #"))
        .min()
        .unwrap_or(rest.len());
    rest[..end].trim().to_owned()
}

/// The key whose value holds `line`, `column`: the last key opened before the column on that
/// line (flow mappings `{a: 1, b: x}` included), else the nearest line above, less indented,
/// that opens a key.
fn key_at(text: &str, line: u64, column: u64) -> Option<String> {
    let l = line_of(text, line);
    let (before, _) = split_at_column(l, column);
    if let Some(k) = last_open_key(before) {
        return Some(k);
    }
    let indent = |s: &str| s.len() - s.trim_start().len();
    let mut limit = indent(l);
    let index = usize::try_from(line.saturating_sub(1)).ok()?;
    for above in text
        .lines()
        .take(index)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        let t = above.trim_start();
        if t.is_empty() || t.starts_with('#') || indent(above) >= limit {
            continue;
        }
        if let Some(k) = last_open_key(above) {
            return Some(k);
        }
        limit = indent(above);
    }
    None
}

/// The innermost key still open at the end of `s` (a fragment of one line).
fn last_open_key(s: &str) -> Option<String> {
    // One entry per open flow level: the key open at that level, if any.
    let mut levels: Vec<Option<String>> = vec![None];
    let mut token = String::new();
    let mut quote: Option<char> = None;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if let Some(q) = quote {
            if c == q {
                quote = None;
            } else {
                token.push(c);
            }
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '#' if token.is_empty() => break,
            '{' | '[' => {
                levels.push(None);
                token.clear();
            }
            '}' | ']' => {
                levels.pop();
                if levels.is_empty() {
                    levels.push(None);
                }
                token.clear();
            }
            ',' => {
                if let Some(top) = levels.last_mut() {
                    *top = None;
                }
                token.clear();
            }
            ':' if chars.peek().is_none_or(|n| n.is_whitespace()) => {
                let k = token.trim().trim_start_matches("- ").trim().to_owned();
                if !k.is_empty()
                    && let Some(top) = levels.last_mut()
                {
                    *top = Some(k);
                }
                token.clear();
            }
            c => token.push(c),
        }
    }
    levels.into_iter().rev().flatten().next()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_found_in_block_and_flow_mappings() {
        let text = "version: 1\ncollection:\n  interval: soon\n  watchGroups:\n    - name: a\n      \
                    fields:\n        - X\nserver: {maxConcurrentScrapes: -1, other: 2}\n";
        assert_eq!(key_at(text, 3, 13).as_deref(), Some("interval"));
        assert_eq!(key_at(text, 7, 11).as_deref(), Some("fields"));
        assert_eq!(key_at(text, 8, 32).as_deref(), Some("maxConcurrentScrapes"));
        assert_eq!(key_at(text, 8, 44).as_deref(), Some("other"));
        assert_eq!(key_at(text, 1, 10).as_deref(), Some("version"));
        assert_eq!(value_at(text, 8, 32), "-1");
        assert_eq!(value_at(text, 3, 13), "soon");
    }

    #[test]
    fn plain_words_for_types() {
        assert_eq!(wanted("u32"), "a whole number from 0 to 4294967295");
        assert_eq!(wanted("a boolean"), "true or false");
        assert_eq!(
            wanted("struct RawMetrics"),
            "a mapping of `key: value` lines"
        );
        assert_eq!(wanted("a sequence"), "a list");
        assert_eq!(found("integer `5`"), "the number 5");
        assert_eq!(found("sequence"), "a list");
        assert_eq!(found("string \"x\ny\""), "the text \"x\\ny\"");
    }
}
