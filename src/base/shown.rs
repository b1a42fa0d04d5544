//! Text an operator or a file gave (a path, a YAML key, a value) as it appears in a message or a
//! log line: unchanged when it is plain, quoted and escaped when it holds a control character,
//! so that a newline cannot forge a second log line and an escape code cannot drive the
//! terminal that shows the log.
//!
//! It owns no message wording; callers put the result where their message names the thing.

use std::borrow::Cow;
use std::path::Path;

/// `s` as a message shows it: as is when it holds no control character (and is not empty),
/// else quoted with every control character, quote and backslash escaped (`"a\nb"`).
pub fn shown(s: &str) -> Cow<'_, str> {
    if !s.is_empty() && !s.chars().any(char::is_control) {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(format!("{s:?}"))
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
}
