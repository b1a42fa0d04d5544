//! Text an operator or a file gave (a path, a YAML key, a value) as it appears in a message or a
//! log line: unchanged when it is plain, quoted and escaped when it holds a control character,
//! so that a newline cannot forge a second log line and an escape code cannot drive the
//! terminal that shows the log; and never longer than [`SHOWN_MAX`] characters: a longer text
//! (a 3 MB value in a configuration file) is cut to its first [`SHOWN_HEAD`] characters and
//! marked `… (N bytes)`, so that one bad value cannot become a megabyte log line.
//!
//! It owns no message wording; callers put the result where their message names the thing.

use std::borrow::Cow;
use std::path::Path;

/// The longest text, in characters, that a message shows whole.
pub const SHOWN_MAX: usize = 200;
/// How many characters of a longer text a message shows, before `… (N bytes)`.
pub const SHOWN_HEAD: usize = 80;

/// `s` cut for a message: `(head, Some(total bytes))` when it is longer than [`SHOWN_MAX`]
/// characters, else `(s, None)`.
fn clip(s: &str) -> (&str, Option<usize>) {
    match s.char_indices().nth(SHOWN_MAX) {
        None => (s, None),
        Some(_) => {
            let end = s.char_indices().nth(SHOWN_HEAD).map_or(s.len(), |(i, _)| i);
            (&s[..end], Some(s.len()))
        }
    }
}

/// `s` as a message shows it: as is when it holds no control character (and is not empty),
/// else quoted with every control character, quote and backslash escaped (`"a\nb"`); a text
/// longer than [`SHOWN_MAX`] characters shows its first [`SHOWN_HEAD`] and `… (N bytes)`.
pub fn shown(s: &str) -> Cow<'_, str> {
    let (head, cut) = clip(s);
    let plain = !s.is_empty() && !head.chars().any(char::is_control);
    match (plain, cut) {
        (true, None) => Cow::Borrowed(s),
        (true, Some(n)) => Cow::Owned(format!("{head}… ({n} bytes)")),
        (false, None) => Cow::Owned(format!("{s:?}")),
        (false, Some(n)) => Cow::Owned(format!("{head:?}… ({n} bytes)")),
    }
}

/// `s` quoted as `{:?}` writes it (`"a b"`, control characters escaped), cut as [`shown`]
/// cuts it: `"first 80 characters"… (N bytes)`. For messages that always quote the value.
pub fn quoted(s: &str) -> String {
    match clip(s) {
        (head, None) => format!("{head:?}"),
        (head, Some(n)) => format!("{head:?}… ({n} bytes)"),
    }
}

/// A path as a message shows it: see [`shown`] (bytes that are not UTF-8 show as U+FFFD).
pub fn shown_path(p: &Path) -> String {
    shown(&p.to_string_lossy()).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_unchanged_and_control_characters_are_escaped() {
        assert_eq!(
            shown("/etc/dcgm-exporter/c.csv"),
            "/etc/dcgm-exporter/c.csv"
        );
        assert_eq!(shown("données ü"), "données ü");
        assert_eq!(shown(""), "\"\"");
        assert_eq!(
            shown("a.csv\n2026-01-01T00:00:00Z ERROR forged"),
            "\"a.csv\\n2026-01-01T00:00:00Z ERROR forged\""
        );
        assert_eq!(shown("k\u{1b}[31m"), "\"k\\u{1b}[31m\"");
        assert_eq!(shown("tab\there"), "\"tab\\there\"");
        assert_eq!(
            shown_path(Path::new("/tmp/x\ry")),
            "\"/tmp/x\\ry\"",
            "a carriage return"
        );
        assert!(!shown("x\u{7f}").contains('\u{7f}'), "DEL is a control");
    }

    /// A long text is cut: its first characters and its size, never the whole of it.
    #[test]
    fn long_text_is_cut_to_its_head_and_its_size() {
        let exact = "a".repeat(SHOWN_MAX);
        assert_eq!(shown(&exact), exact.as_str());
        assert_eq!(quoted(&exact), format!("{exact:?}"));
        let long = format!("{}\n{}", "é".repeat(100), "b".repeat(3_000_000));
        let want = format!("{}… ({} bytes)", "é".repeat(SHOWN_HEAD), long.len());
        assert_eq!(shown(&long), want);
        assert_eq!(
            quoted(&long),
            format!("\"{}\"… ({} bytes)", "é".repeat(80), long.len())
        );
        // A control character in the part shown is escaped; one past it is not shown at all.
        let ctl = format!("a\n{}", "b".repeat(300));
        assert_eq!(
            shown(&ctl),
            format!("\"a\\n{}\"… (302 bytes)", "b".repeat(78))
        );
        assert!(shown(&"x".repeat(201)).len() < 120);
    }
}
