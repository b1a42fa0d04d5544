//! YAML files an operator writes (`--config-file`, `--web-config-file`) read into their serde
//! types, with the parser's refusals in our own words: what is wrong, at which line, column and
//! key path (`tls_server_config.client_auth_type`, `collections[2].every`), and how to fix it.
//! The parser's own text (which speaks of its options, its functions and its internal counters,
//! and whose source excerpt could show an inline private key) never reaches the operator.
//!
//! The key path is the one serde was filling when the error came (`serde_path_to_error` around
//! serde-saphyr's deserializer), not a guess from the text. This module owns only the reading
//! and the wording; each caller decides what its file means and puts the file's name in front.
//! Every piece of the file quoted in a message (a key, a value) goes through `base::shown`, so
//! that a control character in the file cannot forge a log line and a megabyte value shows as
//! its first characters and its size.
//!
//! Booleans: no quoted scalar is ever a boolean; a key read with [`boolean`] refuses one
//! (`"yes"`, `"true"`), naming the line and the key. Which plain scalars are booleans is the
//! caller's schema: [`from_str`] reads YAML 1.1's (`yes`, `on`, `y`, … as well as
//! `true`/`false`, as Go's yaml.v2 does: exporter-toolkit's web configuration), [`from_str_core`]
//! YAML 1.2's core schema, `true`/`false` only (dcgm-exporter's configuration file: yaml.v3,
//! whose resolver types only those as booleans).

use std::fmt;

use serde::Deserialize;
use serde_path_to_error::{Path as KeyPath, Segment};
use serde_saphyr::Error;
use serde_saphyr::budget::BudgetBreach;

use super::shown::{quoted, shown};

/// Why a YAML file was refused, in our words: `line L, column C, key K: what; fix`, each part
/// present when known.
#[derive(Debug, thiserror::Error)]
#[error("{}{what}", Place(self))]
pub struct YamlError {
    /// Where in the file (1-based line and column), when the parser knows.
    pub at: Option<(u64, u64)>,
    /// The key path, each key shown through `base::shown` (`server.maxConcurrentScrapes`,
    /// `collections[0]`), when the error is inside a key's value.
    pub key: Option<String>,
    /// The error is in a key of `key`'s mapping that the parser could not name (a broken
    /// indentation, say): shown as `under K`, not as a key of its own.
    pub under: bool,
    /// What is wrong and how to fix it.
    pub what: String,
}

/// The `line L, column C, key K: ` prefix of a [`YamlError`].
struct Place<'a>(&'a YamlError);

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some((line, column)) = self.0.at {
            parts.push(format!("line {line}, column {column}"));
        }
        match (&self.0.key, self.0.under) {
            (Some(key), true) => parts.push(format!("under {key}")),
            (Some(key), false) => parts.push(format!("key {key}")),
            (None, _) => {}
        }
        if parts.is_empty() {
            Ok(())
        } else {
            write!(f, "{}: ", parts.join(", "))
        }
    }
}

/// Reads `text` as one YAML document of `T`, as `serde_saphyr::from_str` does (same options,
/// same budget: YAML 1.1's plain booleans, `yes`, `on`, …), naming the key path of any error.
pub fn from_str<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, YamlError> {
    read(text, serde_saphyr::Options::default())
}

/// As [`from_str`], under YAML 1.2's core schema: only `true`, `True`, `TRUE`, `false`,
/// `False` and `FALSE` are booleans; a plain `yes` or `on` is text, refused by a boolean key.
pub fn from_str_core<'de, T: Deserialize<'de>>(text: &'de str) -> Result<T, YamlError> {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    read(text, options)
}

/// Reads `text` with `options`, naming the key path of any error.
fn read<'de, T: Deserialize<'de>>(
    text: &'de str,
    options: serde_saphyr::Options,
) -> Result<T, YamlError> {
    let mut path = None;
    serde_saphyr::with_deserializer_from_str_with_options(text, options, |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = Some(e.path().clone());
            e.into_inner()
        })
    })
    .map_err(|e| refusal(text, &e, path.as_ref()))
}

/// A boolean key's value, for `#[serde(default, deserialize_with = "yaml::boolean")]` on an
/// `Option<bool>`: a plain boolean of the schema read (see [`from_str`], [`from_str_core`]),
/// or nothing (`key:`, `~`); a quoted scalar (`"yes"`, `"true"`), a number or any other text
/// is refused, and the refusal names the line and the key ("expected true or false, found the
/// text "yes""). serde-saphyr alone would read `"yes"` as `true`.
pub fn boolean<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    d.deserialize_any(Boolean)
}

/// The visitor of [`boolean`].
struct Boolean;

impl<'de> serde::de::Visitor<'de> for Boolean {
    type Value = Option<bool>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a boolean")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Some(v))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

/// The refusal for `e`, raised while parsing `text` at `path` (none when the error came after
/// the document was read: a second document, the end-of-document budget).
fn refusal(text: &str, e: &Error, path: Option<&KeyPath>) -> YamlError {
    let e = innermost(e);
    let at = e.location().map(|l| (l.line(), l.column()));
    let named = match e {
        Error::DuplicateMappingKey { key: Some(k), .. } => Some(k.as_str()),
        Error::SerdeUnknownField { field, .. } => Some(field.as_str()),
        _ => None,
    };
    let (key, under) = match path.and_then(|p| key_path(p, named)) {
        Some((key, under)) => (Some(key), under),
        None => (named.map(|k| shown(k).into_owned()), false),
    };
    let value = at
        .map(|(line, column)| value_at(text, line, column))
        .filter(|v| !v.is_empty());
    // An explicit tag, where the error's column is (`!!str 1`) or just before it.
    let (tagged, value) = match value.as_deref().map(split_tag) {
        Some((Some(tag), v)) => (Some(tag.to_owned()), Some(v.to_owned())),
        _ => (
            at.and_then(|(line, column)| tag_before(text, line, column))
                .map(str::to_owned),
            value,
        ),
    };
    let tagged = tagged.as_deref();
    YamlError {
        at,
        key,
        under,
        what: what(e, value.as_deref(), tagged),
    }
}

/// `path` as a message shows it (`a.b[2].c`, each key through `base::shown`), ending with
/// `named` (the key the error is about) when serde stopped before taking it in; `None` for the
/// document's root. With it, whether the error is under the path rather than at it: the last
/// key is one the parser could not name (a broken indentation), so only its mapping is shown.
fn key_path(path: &KeyPath, named: Option<&str>) -> Option<(String, bool)> {
    let mut segments: Vec<&Segment> = path.iter().collect();
    let last_is_named = match (segments.last(), named) {
        (Some(Segment::Map { key }), Some(n)) => key == n,
        _ => false,
    };
    let mut under = false;
    if matches!(segments.last(), Some(Segment::Unknown)) {
        segments.pop();
        under = named.is_none();
    }
    let mut out = String::new();
    let push_key = |out: &mut String, k: &str| {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(&shown(k));
    };
    for s in segments {
        match s {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => push_key(&mut out, key),
            _ => push_key(&mut out, "?"),
        }
    }
    if let (Some(n), false) = (named, last_is_named) {
        push_key(&mut out, n);
    }
    (!out.is_empty()).then_some((out, under))
}

/// What is wrong, and how to fix it; `value` is the scalar at the error's place, if any, and
/// `tagged` the explicit tag written before it (`!!str`).
fn what(e: &Error, value: Option<&str>, tagged: Option<&str>) -> String {
    match e {
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
        Error::InvalidScalar { ty, .. } => match tagged {
            // `version: !!str 1`: the tag makes it a text, whatever it looks like.
            Some(tag) => format!(
                "expected {}, found {} tagged {tag}: remove the tag",
                wanted(ty),
                match tag {
                    "!!str" => format!("the text {}", quoted(value.unwrap_or_default())),
                    _ => value.map_or("the value".into(), |v| shown(v).into_owned()),
                }
            ),
            None => format!(
                "{} is not {}",
                value.map_or("the value".into(), shown),
                wanted(ty)
            ),
        },
        Error::InvalidBooleanStrict { .. } => format!(
            "expected true or false, found {}",
            value.map_or("another value".into(), shown)
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
        } => {
            let wanted = wanted(expected);
            // A boolean key given a text (a quoted value, or a word YAML 1.2 reads as text).
            let hint = if wanted == "true or false" {
                ": write true or false, without quotes"
            } else {
                ""
            };
            format!("expected {wanted}, found {}{hint}", found(unexpected))
        }
        Error::Unexpected { expected, .. }
            if expected.starts_with("map") || expected.starts_with("sequence") =>
        {
            format!("expected {} here", wanted(expected))
        }
        // A list or a mapping where one value (a text, a number) belongs.
        Error::Unexpected { expected, .. } if expected.ends_with("scalar") => {
            "expected a single value here, not a list or a mapping".into()
        }
        Error::SerdeInvalidLength { .. } => {
            "the list here has the wrong number of items for this key".into()
        }
        Error::SerdeMissingField { field, .. } => format!(
            "the mapping here lacks the key {field}, which it must have (see docs/flags.md, \
             Configuration file)"
        ),
        Error::SerdeUnknownField { expected, .. } => format!(
            "unknown key (expected one of: {}); remove it or correct its spelling",
            expected.join(", ")
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
    }
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
        if kind == "string" {
            // serde writes the text quoted and escaped: shown so, cut when long.
            let inner = rest
                .strip_prefix('"')
                .and_then(|r| r.strip_suffix('"'))
                .unwrap_or(rest);
            return if inner.chars().any(char::is_control) {
                format!("the text {}", quoted(inner))
            } else {
                format!("the text {}", shown(rest))
            };
        }
        let kind = match kind {
            "integer" => "the number",
            "floating" => "the number",
            "boolean" => "the boolean",
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

/// `!!str 1` as (`Some("!!str")`, `"1"`); a scalar without a tag as (`None`, itself).
fn split_tag(v: &str) -> (Option<&str>, &str) {
    match v.split_once([' ', '\t']) {
        Some((tag, rest)) if tag.starts_with('!') && tag.len() > 1 => (Some(tag), rest.trim()),
        _ => (None, v),
    }
}

/// The explicit tag (`!!str`, `!x`) written just before the scalar at `line`, `column`, if any.
fn tag_before(text: &str, line: u64, column: u64) -> Option<&str> {
    let (before, _) = split_at_column(line_of(text, line), column);
    let last = before
        .trim_end()
        .rsplit([' ', '\t', '[', '{', ','])
        .next()?;
    (last.starts_with('!') && last.len() > 1).then_some(last)
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

#[cfg(test)]
mod tests {
    use super::*;

    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // read only through the error paths
    struct Doc {
        version: Option<u32>,
        groups: Option<Vec<Group>>,
        server: Option<Server>,
        labels: Option<BTreeMap<String, Vec<u8>>>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Group {
        name: String,
        fields: Vec<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Server {
        max_concurrent_scrapes: Option<u32>,
        other: Option<u32>,
    }

    fn refused(text: &str) -> String {
        from_str::<Doc>(text).unwrap_err().to_string()
    }

    /// The key path is the one serde was filling, in block and flow mappings and lists alike.
    #[test]
    fn errors_name_the_exact_key_path() {
        let mut wrong = Vec::new();
        for (text, want) in [
            (
                "version: soon\n",
                "line 1, column 10, key version: soon is not a whole number from 0 to 4294967295",
            ),
            (
                "server: {maxConcurrentScrapes: 1, other: -1}\n",
                "line 1, column 42, key server.other: -1 is not a whole number",
            ),
            (
                "groups:\n  - name: a\n    fields: [X]\n  - name: b\n    fields: {X: 1}\n",
                "line 5, column 13, key groups[1].fields: expected a list here",
            ),
            (
                "groups:\n  - name: a\n    fields:\n      - X\n      - [Y]\n",
                "line 5, column 9, key groups[0].fields[1]: expected a single value here, not a \
                 list or a mapping",
            ),
            (
                "groups:\n  - name: {first: a}\n    fields: [X]\n",
                "line 2, column 11, key groups[0].name: expected a single value here, not a list \
                 or a mapping",
            ),
            (
                "labels:\n  a: [1, 2]\n  b: [3, 300]\n",
                "line 3, column 10, key labels.b[1]: 300 is not a whole number from 0 to 255",
            ),
            (
                "server:\n  maxConcurrentScrapes: 1\n  maxConcurentScrapes: 2\n",
                "line 3, column 3, key server.maxConcurentScrapes: unknown key (expected one \
                 of: maxConcurrentScrapes, other); remove it or correct its spelling",
            ),
            (
                "groups: [{name: a, fields: [X]}, {name: b}]\n",
                "key groups[1]: the mapping here lacks the key fields",
            ),
            (
                "server:\n  other: 1\n  other: 2\n",
                "line 3, column 3, key server.other: this key is given twice in the same \
                 mapping; keep one of them",
            ),
        ] {
            let e = refused(text);
            if !e.contains(want) {
                wrong.push(format!("{text:?}: {e}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// Keys from the file are shown through `base::shown`, so a newline cannot forge a line.
    #[test]
    fn keys_in_the_path_are_escaped() {
        let e = refused("labels:\n  \"a\\nERROR forged\": [x]\n");
        assert!(e.contains("key labels.\"a\\nERROR forged\"[0]: "), "{e}");
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn values_are_read_at_the_error() {
        let text =
            "server: {maxConcurrentScrapes: -1, other: 2} # c\ncollection:\n  interval: soon # x\n";
        assert_eq!(value_at(text, 1, 32), "-1");
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
        assert_eq!(found("string \"yes\""), "the text \"yes\"");
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)] // read only through the error paths
    struct Switches {
        #[serde(default, deserialize_with = "boolean")]
        on: Option<bool>,
        n: Option<u32>,
    }

    /// No quoted scalar is a boolean, under either schema; a plain `yes` is one under YAML
    /// 1.1's (`from_str`) and text under YAML 1.2's core schema (`from_str_core`).
    #[test]
    fn quoted_scalars_are_never_booleans() {
        type Read = fn(&str) -> Result<Switches, YamlError>;
        let (v11, core): (Read, Read) = (|t| from_str(t), |t| from_str_core(t));
        for read in [v11, core] {
            for (text, want) in [
                ("on: true", Some(true)),
                ("on: False", Some(false)),
                ("on: TRUE", Some(true)),
                ("on:", None),
                ("on: ~", None),
                ("n: 1", None),
            ] {
                assert_eq!(
                    read(text).map(|s| s.on).map_err(|e| e.to_string()),
                    Ok(want)
                );
            }
            for (text, want) in [
                (
                    "on: \"yes\"",
                    "key on: expected true or false, found the text \"yes\": \
                     write true or false, without quotes",
                ),
                (
                    "on: 'on'",
                    "key on: expected true or false, found the text \"on\"",
                ),
                (
                    "on: \"true\"",
                    "key on: expected true or false, found the text \"true\"",
                ),
                (
                    "on: !!str true",
                    "key on: expected true or false, found the text \"true\"",
                ),
                (
                    "on: 1",
                    "key on: expected true or false, found the number 1",
                ),
            ] {
                let e = read(text).unwrap_err().to_string();
                assert!(
                    e.starts_with("line 1, ") && e.contains(want),
                    "{text:?}: {e}"
                );
            }
        }
        assert_eq!(from_str::<Switches>("on: yes").unwrap().on, Some(true));
        assert_eq!(from_str::<Switches>("on: off").unwrap().on, Some(false));
        for bare in ["yes", "on", "y", "no", "off"] {
            let e = from_str_core::<Switches>(&format!("on: {bare}"))
                .unwrap_err()
                .to_string();
            assert!(
                e.starts_with("line 1, ")
                    && e.contains(&format!(
                        "key on: expected true or false, found the text \"{bare}\""
                    )),
                "{bare}: {e}"
            );
        }
        let e = from_str_core::<Switches>("on: !!bool yes")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("key on: expected true or false, found yes"),
            "{e}"
        );
    }

    /// A tag that makes a number a text says so, and what is wanted.
    #[test]
    fn a_tagged_text_where_a_number_belongs_says_so() {
        let e = from_str::<Switches>("n: !!str 1\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "line 1, key n: expected a whole number from 0 to 4294967295, found the text \"1\" \
                 tagged !!str: remove the tag"
            ) || e.contains(
                "key n: expected a whole number from 0 to 4294967295, found the text \"1\" tagged \
                 !!str: remove the tag"
            ),
            "{e}"
        );
    }

    /// A megabyte value is shown as its first characters and its size.
    #[test]
    fn long_values_are_cut_in_messages() {
        let big = "x".repeat(3_000_000);
        for text in [
            format!("n: {big}\n"),
            format!("on: \"{big}\"\n"),
            format!("n: !!str {big}\n"),
        ] {
            let e = from_str_core::<Switches>(&text).unwrap_err().to_string();
            assert!(
                e.len() < 400 && e.contains("… (3000"),
                "{}",
                &e[..e.len().min(600)]
            );
        }
    }
}
