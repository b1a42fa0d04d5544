//! Prometheus label text: escaping a label value and writing one `name="value"` pair.
//!
//! A leaf shared by `exposition` (every series) and `attribution` (the pod, container and job
//! labels it joins onto entities, rendered once per join change rather than once per tick).
//! It must not know about families, snapshots or I/O.

/// Escapes a label value: `\` → `\\`, `"` → `\"`, newline → `\n`.
pub fn escape_label(out: &mut String, v: &str) {
    // Most values (UUIDs, names, numbers) need no escaping: copy them whole.
    if !v.bytes().any(|b| matches!(b, b'\\' | b'"' | b'\n')) {
        out.push_str(v);
        return;
    }
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Writes one `name="value"` pair, preceded by a comma unless it is the first.
pub fn write_label(out: &mut String, first: &mut bool, name: &str, value: &str) {
    if !*first {
        out.push(',');
    }
    *first = false;
    out.push_str(name);
    out.push_str("=\"");
    escape_label(out, value);
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_only_what_the_format_requires() {
        for (raw, want) in [
            ("GPU-0a1b", "GPU-0a1b"),
            ("", ""),
            ("a\\b", "a\\\\b"),
            ("say \"hi\"", "say \\\"hi\\\""),
            ("two\nlines", "two\\nlines"),
            ("tab\tand é", "tab\tand é"),
        ] {
            let mut out = String::new();
            escape_label(&mut out, raw);
            assert_eq!(out, want, "{raw:?}");
        }
    }

    #[test]
    fn pairs_are_comma_separated() {
        let (mut out, mut first) = (String::new(), true);
        write_label(&mut out, &mut first, "pod", "p\"1");
        write_label(&mut out, &mut first, "namespace", "ns");
        assert_eq!(out, "pod=\"p\\\"1\",namespace=\"ns\"");
    }
}
