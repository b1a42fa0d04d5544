//! The `-d/--devices` grammar, shared by every flag written in it (`-d/--devices`,
//! `-s/--switch-devices`, `-p/--cpu-devices`).
//!
//! The grammar is dcgm-exporter's (`f`, `g[:LIST]`, `i[:LIST]`), extended so that one value
//! may hold several specs (dcgm-exporter accepts only one):
//!
//! - `f` (flex, the default): every GPU and every MIG instance on it.
//! - `g` or `g:LIST`: physical GPUs (their own series). LIST holds GPU indices and ranges,
//!   e.g. `0,2-4`.
//! - `i` or `i:LIST`: MIG GPU instances. Items: `G` (every instance on GPU G), `G-H` (every
//!   instance on GPUs G..=H), `G.I` (GPU instance id I on GPU G, the NVML id written in the
//!   `GPU_I_ID` label) and `G.I-J` (instance ids I..=J on GPU G).
//!
//! Specs follow one another after `,`, `;` or whitespace: a token that starts with a letter
//! starts a new spec, a bare numeric token after a `,` continues the current list. So
//! `g:0,1,i:2.7-9,3` selects GPUs 0 and 1, instances 7 to 9 of GPU 2 and every instance of
//! GPU 3. Errors name the flag and quote the offending token ([`DeviceSpecError`],
//! [`SpecProblem`]).
//!
//! Its interface to the rest of `gpu` is [`parse_items`], which checks every number against
//! the caller's [`Bounds`] ([`SYNTAX_BOUNDS`] when the numbers are not GPUs) and hands each
//! [`Item`] (an [`InstanceRange`] for `G.I-J`) to the caller; the error types are public as
//! `gpu::selection::DeviceSpecError` and `gpu::selection::SpecProblem`. It only reads the
//! grammar: it must not build a selection (what the items mean is
//! [`DeviceSelection`](super::selection::DeviceSelection)'s and
//! [`SwitchSelection`](super::switch_selection::SwitchSelection)'s) nor know which devices
//! exist.

/// GPU instance ids `first..=last` on GPU `gpu`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct InstanceRange {
    pub(super) gpu: u32,
    pub(super) first: u32,
    pub(super) last: u32,
}

/// One parsed item of a device value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Item {
    /// `f`.
    Flex,
    /// `g` without a list.
    AllGpus,
    /// `g:` list item: GPUs `.0..=.1`.
    Gpus(u32, u32),
    /// `i` without a list.
    AllInstances,
    /// `i:` list item `G` or `G-H`: every instance on GPUs `.0..=.1`.
    InstancesOn(u32, u32),
    /// `i:` list item `G.I` or `G.I-J`.
    Instances(InstanceRange),
}

/// Bounds on the numbers of a value (the highest GPU index and GPU instance id it may name).
#[derive(Debug, Clone, Copy)]
pub(super) struct Bounds {
    /// The highest GPU index (the number before a `.`, or a `g:` item).
    pub(super) gpu: u32,
    /// The highest GPU instance id (the number after a `.`).
    pub(super) instance: u32,
}

/// The bounds of a syntax-only check: the flag's entities are not GPUs (`-s`, `-p`).
pub(super) const SYNTAX_BOUNDS: Bounds = Bounds {
    gpu: u32::MAX,
    instance: u32::MAX,
};

const EXPECTED_SPEC: &str = "expected f, g[:LIST] or i[:LIST], e.g. g:0,2-4";

/// A device-selection value that does not parse: the flag, the value as given and what is
/// wrong with it (`-d/--devices "g:1-x": "1-x" is not a GPU index …`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag} {value:?}: {problem}")]
pub struct DeviceSpecError {
    /// The flag, e.g. `-d/--devices`.
    pub flag: String,
    /// The value as given.
    pub value: String,
    /// What is wrong, naming the item.
    pub problem: SpecProblem,
}

/// What is wrong with a device value; each message quotes the offending token. The fields
/// are the tokens as written (`tok`, `item`, `prev`, `spec`, `kind`) and the numbers involved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[allow(missing_docs)]
pub enum SpecProblem {
    /// Nothing but separators.
    #[error("empty value ({})", EXPECTED_SPEC)]
    Empty,
    /// A `,` with no item before it.
    #[error("empty item before {tok:?}")]
    EmptyItemBefore { tok: String },
    /// A `,` with no item after it.
    #[error("empty item after {prev:?}")]
    EmptyItemAfter { prev: String },
    /// Two separators with no item between them.
    #[error("empty item between {prev:?} and {tok:?}")]
    EmptyItemBetween { prev: String, tok: String },
    /// `f:LIST`.
    #[error(
        "{tok:?}: f takes no list (f is every GPU and MIG instance; use g:LIST or i:LIST to choose)"
    )]
    FlexTakesNoList { tok: String },
    /// `g:` or `i:` with nothing after the colon.
    #[error("{tok:?} has an empty list (expected e.g. {kind}:0,2-4, or {kind} alone for all)")]
    EmptyList { tok: String, kind: String },
    /// A spec type other than `f`, `g` or `i`.
    #[error(
        "{tok:?} is not a device spec: unknown type {kind:?} ({})",
        EXPECTED_SPEC
    )]
    UnknownType { tok: String, kind: String },
    /// A list item that is not after a `,`.
    #[error(
        "{tok:?} does not start a device spec ({}; separate list items with \",\")",
        EXPECTED_SPEC
    )]
    NotASpec { tok: String },
    /// A list item before any spec.
    #[error("{tok:?} does not start a device spec ({})", EXPECTED_SPEC)]
    NoSpecYet { tok: String },
    /// A list item after a spec that takes no list.
    #[error("{tok:?} follows {spec:?}, which has no list (write e.g. g:0,1 or i:0.1)")]
    FollowsNoList { tok: String, spec: String },
    /// A GPU index or instance id over its limit.
    #[error("{item:?}: {what} {n} is out of range (0 to {max})")]
    OutOfRange {
        item: String,
        what: &'static str,
        n: String,
        max: u32,
    },
    /// `b-a` with `b > a`; `fix` is the range written the right way round.
    #[error("{item:?} is a descending range (write {fix})")]
    Descending { item: String, fix: String },
    /// A `G.I` item in a `g:` list.
    #[error("{item:?} is a MIG instance, not a GPU (g: lists take GPU indices; use i:{item})")]
    InstanceInGpuList { item: String },
    /// A `g:` item that is not an index or range.
    #[error("{item:?} is not a GPU index or range (expected e.g. 0,2-4)")]
    NotGpuItem { item: String },
    /// An `i:` item of none of the accepted forms.
    #[error(
        "{item:?} is not a MIG instance item (expected G, G-H, G.I or G.I-J: GPU index G, GPU instance id I, e.g. 0,2.1-3)"
    )]
    NotInstanceItem { item: String },
}

fn is_sep(c: char) -> bool {
    c == ',' || c == ';' || c.is_whitespace()
}

/// The spec the next bare numeric token would continue.
#[derive(Clone, Copy)]
enum Current<'a> {
    /// No spec yet.
    None,
    /// A spec without a list (`f`, `g`, `i`): the token as written.
    NoList(&'a str),
    /// A `g:` list.
    GpuList,
    /// An `i:` list.
    InstanceList,
}

/// Splits `value` into specs and list items and hands each item to `sink`.
pub(super) fn parse_items(
    flag: &str,
    value: &str,
    bounds: Bounds,
    mut sink: impl FnMut(Item),
) -> Result<(), DeviceSpecError> {
    let err = |problem: SpecProblem| DeviceSpecError {
        flag: flag.to_owned(),
        value: value.to_owned(),
        problem,
    };
    if !value.contains(|c: char| !is_sep(c)) {
        return Err(err(SpecProblem::Empty));
    }
    let mut rest = value;
    let mut prev: Option<&str> = None;
    let mut current = Current::None;
    loop {
        let (sep, tok) = next_token(&mut rest);
        let after_comma = comma_between(sep, prev, tok).map_err(err)?;
        if tok.is_empty() {
            return Ok(());
        }
        prev = Some(tok);
        if tok.starts_with(|c: char| c.is_ascii_alphabetic()) {
            let (item, spec) = spec(tok, bounds).map_err(err)?;
            sink(item);
            current = spec;
            continue;
        }
        if !after_comma {
            return Err(err(SpecProblem::NotASpec { tok: tok.into() }));
        }
        sink(list_item(tok, current, bounds).map_err(err)?);
    }
}

/// The separators before the next token of `rest`, and the token (empty at the end);
/// `rest` moves past both.
fn next_token<'a>(rest: &mut &'a str) -> (&'a str, &'a str) {
    let tok_start = rest.find(|c: char| !is_sep(c)).unwrap_or(rest.len());
    let sep = &rest[..tok_start];
    *rest = &rest[tok_start..];
    let tok_end = rest.find(is_sep).unwrap_or(rest.len());
    let tok = &rest[..tok_end];
    *rest = &rest[tok_end..];
    (sep, tok)
}

/// Whether the separators `sep` between the token before (`prev`, `None` at the start) and
/// `tok` (empty at the end) hold a `,`, which lets a bare item continue a list; an error when
/// the `,` has no item on one side, or there are several.
fn comma_between(sep: &str, prev: Option<&str>, tok: &str) -> Result<bool, SpecProblem> {
    let commas = sep.matches(',').count();
    if commas > 1 || (commas == 1 && (sep.contains(';') || prev.is_none() || tok.is_empty())) {
        return Err(match (prev, tok.is_empty()) {
            (None, _) => SpecProblem::EmptyItemBefore { tok: tok.into() },
            (Some(p), true) => SpecProblem::EmptyItemAfter { prev: p.into() },
            (Some(p), false) => SpecProblem::EmptyItemBetween {
                prev: p.into(),
                tok: tok.into(),
            },
        });
    }
    Ok(commas == 1)
}

/// A token that starts a spec (`f`, `g`, `g:ITEM`, `i`, `i:ITEM`): its item, and the spec a
/// bare item after it would continue.
fn spec(tok: &str, bounds: Bounds) -> Result<(Item, Current<'_>), SpecProblem> {
    let (kind, list) = match tok.split_once(':') {
        Some((k, l)) => (k, Some(l)),
        None => (tok, None),
    };
    match (kind, list) {
        ("f", None) => Ok((Item::Flex, Current::NoList(tok))),
        ("f", Some(_)) => Err(SpecProblem::FlexTakesNoList { tok: tok.into() }),
        ("g", None) => Ok((Item::AllGpus, Current::NoList(tok))),
        ("i", None) => Ok((Item::AllInstances, Current::NoList(tok))),
        ("g" | "i", Some("")) => Err(SpecProblem::EmptyList {
            tok: tok.into(),
            kind: kind.into(),
        }),
        ("g", Some(item)) => Ok((gpu_item(item, bounds)?, Current::GpuList)),
        ("i", Some(item)) => Ok((instance_item(item, bounds)?, Current::InstanceList)),
        _ => Err(SpecProblem::UnknownType {
            tok: tok.into(),
            kind: kind.into(),
        }),
    }
}

/// A bare token after a `,`: an item of the `current` spec's list.
fn list_item(tok: &str, current: Current<'_>, bounds: Bounds) -> Result<Item, SpecProblem> {
    match current {
        Current::GpuList => gpu_item(tok, bounds),
        Current::InstanceList => instance_item(tok, bounds),
        Current::NoList(spec) => Err(SpecProblem::FollowsNoList {
            tok: tok.into(),
            spec: spec.into(),
        }),
        Current::None => Err(SpecProblem::NoSpecYet { tok: tok.into() }),
    }
}

/// The digits of a decimal number as written; `None` when `s` is not all digits.
fn number(s: &str) -> Option<&str> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

/// The number `digits` if it is at most `max`; `what` names it in the message, which quotes
/// the digits as written (a number past any integer type is out of range, never wrapped).
fn bounded(item: &str, digits: &str, max: u32, what: &'static str) -> Result<u32, SpecProblem> {
    digits
        .parse::<u32>()
        .ok()
        .filter(|&n| n <= max)
        .ok_or_else(|| SpecProblem::OutOfRange {
            item: item.into(),
            what,
            n: digits.into(),
            max,
        })
}

/// `a` or `a-b` of GPU indices; `None` when not of that form.
fn gpu_range(item: &str, bounds: Bounds) -> Option<Result<(u32, u32), SpecProblem>> {
    let (a, b) = match item.split_once('-') {
        Some((a, b)) => (number(a)?, number(b)?),
        None => {
            let a = number(item)?;
            (a, a)
        }
    };
    Some((|| {
        let a = bounded(item, a, bounds.gpu, "GPU index")?;
        let b = bounded(item, b, bounds.gpu, "GPU index")?;
        if a > b {
            return Err(SpecProblem::Descending {
                item: item.into(),
                fix: format!("{b}-{a}"),
            });
        }
        Ok((a, b))
    })())
}

/// An item of a `g:` list.
fn gpu_item(item: &str, bounds: Bounds) -> Result<Item, SpecProblem> {
    if let Some((g, _)) = item.split_once('.')
        && number(g).is_some()
    {
        return Err(SpecProblem::InstanceInGpuList { item: item.into() });
    }
    match gpu_range(item, bounds) {
        Some(r) => r.map(|(a, b)| Item::Gpus(a, b)),
        None => Err(SpecProblem::NotGpuItem { item: item.into() }),
    }
}

/// An item of an `i:` list: `G`, `G-H`, `G.I` or `G.I-J`.
fn instance_item(item: &str, bounds: Bounds) -> Result<Item, SpecProblem> {
    let invalid = || SpecProblem::NotInstanceItem { item: item.into() };
    let Some((g, ids)) = item.split_once('.') else {
        return match gpu_range(item, bounds) {
            Some(r) => r.map(|(a, b)| Item::InstancesOn(a, b)),
            None => Err(invalid()),
        };
    };
    let gpu = number(g).ok_or_else(invalid)?;
    let (first, last) = match ids.split_once('-') {
        Some((a, b)) => (
            number(a).ok_or_else(invalid)?,
            number(b).ok_or_else(invalid)?,
        ),
        None => {
            let a = number(ids).ok_or_else(invalid)?;
            (a, a)
        }
    };
    let gpu = bounded(item, gpu, bounds.gpu, "GPU index")?;
    let first = bounded(item, first, bounds.instance, "GPU instance id")?;
    let last = bounded(item, last, bounds.instance, "GPU instance id")?;
    if first > last {
        return Err(SpecProblem::Descending {
            item: item.into(),
            fix: format!("{gpu}.{last}-{first}"),
        });
    }
    Ok(Item::Instances(InstanceRange { gpu, first, last }))
}

#[cfg(test)]
mod tests {
    use crate::gpu::selection::DeviceSelection;

    const D: &str = "-d/--devices";

    fn err(v: &str) -> String {
        match DeviceSelection::parse(D, v) {
            Ok(s) => panic!("{v:?} parsed as {s:?}"),
            Err(e) => e.to_string(),
        }
    }

    /// Asserts that the error for `v` names the flag, quotes the value and contains `parts`.
    fn assert_err(v: &str, parts: &[&str]) {
        let e = err(v);
        assert!(e.starts_with(&format!("{D} {v:?}: ")), "{v:?}: {e}");
        for p in parts {
            assert!(e.contains(p), "{v:?}: {e:?} lacks {p:?}");
        }
    }

    #[test]
    fn empty_values() {
        assert_err("", &["empty value", "expected f, g[:LIST] or i[:LIST]"]);
        assert_err("   ", &["empty value"]);
        assert_err(" ; ", &["empty value"]);
        assert_err("g:", &["\"g:\" has an empty list", "g:0,2-4"]);
        assert_err("i:", &["\"i:\" has an empty list", "i:0,2-4"]);
        assert_err("g:0,i:", &["\"i:\" has an empty list"]);
    }

    #[test]
    fn empty_items() {
        assert_err("g:0,,1", &["empty item between \"g:0\" and \"1\""]);
        assert_err("g:1,2, ,3", &["empty item between \"2\" and \"3\""]);
        assert_err(",", &["empty value"]);
        assert_err("g:0,", &["empty item after \"g:0\""]);
        assert_err(",g:0", &["empty item before \"g:0\""]);
        assert_err("g:0,;i", &["empty item between \"g:0\" and \"i\""]);
    }

    #[test]
    fn unknown_letters() {
        assert_err("x", &["\"x\" is not a device spec", "unknown type \"x\""]);
        assert_err(
            "G:0",
            &["unknown type \"G\"", "expected f, g[:LIST] or i[:LIST]"],
        );
        assert_err(
            "gpu:0",
            &["\"gpu:0\" is not a device spec", "unknown type \"gpu\""],
        );
        assert_err("g:0,x:1", &["\"x:1\"", "unknown type \"x\""]);
        assert_err("f:0", &["\"f:0\": f takes no list"]);
    }

    #[test]
    fn stray_numbers() {
        assert_err("0", &["\"0\" does not start a device spec"]);
        assert_err(
            "g:0 1",
            &["\"1\" does not start a device spec", "separate list items"],
        );
        assert_err("g:0;1", &["\"1\" does not start a device spec"]);
        assert_err("g,0", &["\"0\" follows \"g\", which has no list"]);
        assert_err("f,1", &["\"1\" follows \"f\", which has no list"]);
        assert_err("i:1,g,2", &["\"2\" follows \"g\""]);
    }

    #[test]
    fn malformed_items() {
        assert_err(
            "g:1-x",
            &["\"1-x\" is not a GPU index or range (expected e.g. 0,2-4)"],
        );
        assert_eq!(
            err("g:1-x"),
            "-d/--devices \"g:1-x\": \"1-x\" is not a GPU index or range (expected e.g. 0,2-4)"
        );
        for v in ["g:-1", "g:1-", "g:+1", "g:0:1", "g:1-2-3", "g:a", "g:0,0x1"] {
            assert_err(v, &["is not a GPU index or range"]);
        }
        for v in [
            "i:1.",
            "i:.1",
            "i:1.x",
            "i:1.2.3",
            "i:1-2.3",
            "i:1.2-",
            "i:x",
            "i:1.2-1.3",
        ] {
            assert_err(v, &["is not a MIG instance item", "G.I-J"]);
        }
    }

    #[test]
    fn descending_ranges() {
        assert_err("g:4-2", &["\"4-2\" is a descending range", "2-4"]);
        assert_err("i:4-2", &["\"4-2\" is a descending range"]);
        assert_err("i:1.9-7", &["\"1.9-7\" is a descending range", "1.7-9"]);
    }

    #[test]
    fn out_of_range() {
        assert_err("g:64", &["\"64\": GPU index 64 is out of range (0 to 63)"]);
        assert_err("g:0-64", &["\"0-64\": GPU index 64 is out of range"]);
        assert_err(
            "g:99999999999999999999999",
            &[
                "\"99999999999999999999999\": GPU index 99999999999999999999999 is out of range (0 to 63)",
            ],
        );
        // Past u64: quoted as written, never wrapped to 18446744073709551615.
        let e = err("g:99999999999999999999");
        assert!(
            e.starts_with("-d/--devices \"g:99999999999999999999\": ")
                && e.contains("GPU index 99999999999999999999 is out of range")
                && !e.contains("18446744073709551615"),
            "{e}"
        );
        assert_err(
            "i:0.4294967296",
            &["GPU instance id 4294967296 is out of range (0 to 255)"],
        );
        assert_err("i:64", &["GPU index 64 is out of range"]);
        assert_err("i:64.1", &["GPU index 64 is out of range"]);
        assert_err(
            "i:0.256",
            &["\"0.256\": GPU instance id 256 is out of range (0 to 255)"],
        );
        assert_err("i:0.1-300", &["GPU instance id 300 is out of range"]);
    }

    #[test]
    fn instance_in_a_gpu_list() {
        assert_err(
            "g:2.1",
            &["\"2.1\" is a MIG instance, not a GPU", "use i:2.1"],
        );
        assert_err("g:0,2.1-3", &["\"2.1-3\" is a MIG instance", "use i:2.1-3"]);
    }

    #[test]
    fn other_flags_are_named() {
        let e = DeviceSelection::parse("-s/--switch-devices", "q")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("-s/--switch-devices \"q\": "), "{e}");
    }

    #[test]
    fn syntax_check_skips_gpu_bounds() {
        for v in ["f", "g", "i", "g:0-127", "i:0,200-511", "g:0;i:3"] {
            assert_eq!(
                DeviceSelection::check_syntax("-p/--cpu-devices", v),
                Ok(()),
                "{v:?}"
            );
        }
        for (v, part) in [
            ("", "empty value"),
            ("g:", "empty list"),
            ("g:4-2", "descending"),
            ("x", "unknown type"),
            ("g:1-x", "not a GPU index"),
            ("g:99999999999", "out of range"),
        ] {
            let e = DeviceSelection::check_syntax("-p/--cpu-devices", v)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("-p/--cpu-devices "), "{e}");
            assert!(e.contains(part), "{v:?}: {e}");
        }
    }
}
