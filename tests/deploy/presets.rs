//! Which of the chart's counters presets each shipped alert needs, derived from the rules
//! themselves and compared with the table in alerts/README.md.
//!
//! Each expression of the chart's copy of the rules file is parsed (the PromQL the file uses:
//! selectors, ranges, offsets, functions, aggregations, binary operators with their
//! precedence, `bool`, `on`/`ignoring`, `group_left`/`group_right`) into what it needs:
//! `a or b` either, `a and b` and arithmetic or comparison both, `a unless b` only `a`, a
//! function or aggregation its arguments, a literal nothing. A name that a rule records
//! stands for what that rule needs. A `DCGM_*` family is there when the preset's CSV has it
//! as a metric row; every other family is taken as there, since the counters file does not
//! decide it (gpu-exporter's own families under the native profile, the chart's default; and
//! what kube-state-metrics, the scrape or the prices give, which alerts/README.md lists
//! apart). So an alert "can fire" with a preset when some arm of it has all it reads.

use super::*;
use std::collections::BTreeMap;

/// The chart's presets, smallest first, and their files in the chart.
const PRESETS: [(&str, &str); 2] = [
    ("default", "files/counters/default-counters.csv"),
    ("recommended", "files/counters/recommended.csv"),
];
const RULES: &str = "files/alerts/gpu-exporter.rules.yaml";
const README: &str = "alerts/README.md";
/// The README section that holds the table.
const SECTION: &str = "## Which counters preset each alert needs";

/// What an expression needs to have a result.
#[derive(Debug, Clone)]
enum Need {
    Nothing,
    Family(String),
    All(Vec<Need>),
    Any(Vec<Need>),
}

impl Need {
    fn met(&self, rules: &BTreeMap<String, Vec<Need>>, has: &dyn Fn(&str) -> bool) -> bool {
        match self {
            Need::Nothing => true,
            Need::Family(name) => match rules.get(name) {
                Some(defs) => defs.iter().any(|d| d.met(rules, has)),
                None => has(name),
            },
            Need::All(v) => v.iter().all(|n| n.met(rules, has)),
            Need::Any(v) => v.iter().any(|n| n.met(rules, has)),
        }
    }

    /// Every family named, through the recording rules.
    fn families(&self, rules: &BTreeMap<String, Vec<Need>>, out: &mut BTreeSet<String>) {
        match self {
            Need::Nothing => {}
            Need::Family(name) => match rules.get(name) {
                Some(defs) if out.insert(name.clone()) => {
                    defs.iter().for_each(|d| d.families(rules, out));
                }
                Some(_) => {}
                None => {
                    out.insert(name.clone());
                }
            },
            Need::All(v) | Need::Any(v) => v.iter().for_each(|n| n.families(rules, out)),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Number,
    Str,
    Punct(&'static str),
}

fn tokens(expr: &str) -> Result<Vec<Tok>, String> {
    const PUNCT: [&str; 21] = [
        "==", "!=", "<=", ">=", "=~", "!~", "(", ")", "{", "}", "[", "]", ",", "+", "-", "*", "/",
        "%", "^", "<", ">",
    ];
    let b = expr.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c == '#' {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == '"' || c == '\'' {
            i += 1;
            while i < b.len() && b[i] as char != c {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            if i >= b.len() {
                return Err(format!("unterminated string in {expr}"));
            }
            i += 1;
            out.push(Tok::Str);
        } else if c.is_ascii_digit() || (c == '.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                // An exponent's sign: 1e-12.
                if (b[i] == b'e' || b[i] == b'E')
                    && matches!(b.get(i + 1), Some(b'-' | b'+'))
                    && b.get(i + 2).is_some_and(u8::is_ascii_digit)
                {
                    i += 2;
                }
                i += 1;
            }
            out.push(Tok::Number);
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b':') {
                i += 1;
            }
            out.push(Tok::Ident(expr[start..i].to_owned()));
        } else if let Some(p) = PUNCT.iter().find(|p| expr[i..].starts_with(**p)) {
            i += p.len();
            out.push(Tok::Punct(p));
        } else if c == '=' {
            i += 1;
            out.push(Tok::Punct("="));
        } else {
            return Err(format!("unexpected {c:?} in {expr}"));
        }
    }
    Ok(out)
}

const AGGREGATIONS: [&str; 12] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
];

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn is(&self, p: &str) -> bool {
        matches!(self.peek(), Some(Tok::Punct(q)) if *q == p)
            || matches!(self.peek(), Some(Tok::Ident(s)) if s == p)
    }

    fn eat(&mut self, p: &str) -> bool {
        let yes = self.is(p);
        if yes {
            self.at += 1;
        }
        yes
    }

    fn expect(&mut self, p: &str) -> Result<(), String> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(format!(
                "want {p:?} at token {}: {:?}",
                self.at,
                self.peek()
            ))
        }
    }

    /// Skips a balanced `open … close` group (the parser is on `open`).
    fn skip_group(&mut self, open: &str, close: &str) -> Result<(), String> {
        self.expect(open)?;
        let mut depth = 1;
        while depth > 0 {
            match self.peek() {
                None => return Err(format!("unclosed {open}")),
                Some(Tok::Punct(p)) if *p == open => depth += 1,
                Some(Tok::Punct(p)) if *p == close => depth -= 1,
                _ => {}
            }
            self.at += 1;
        }
        Ok(())
    }

    /// `bool`, `on (…)` / `ignoring (…)`, `group_left (…)` / `group_right (…)` after an operator.
    fn modifiers(&mut self) -> Result<(), String> {
        self.eat("bool");
        if self.eat("on") || self.eat("ignoring") {
            self.skip_group("(", ")")?;
        }
        if (self.eat("group_left") || self.eat("group_right")) && self.is("(") {
            self.skip_group("(", ")")?;
        }
        Ok(())
    }

    fn expr(&mut self) -> Result<Need, String> {
        self.or()
    }

    fn or(&mut self) -> Result<Need, String> {
        let mut arms = vec![self.and()?];
        while self.eat("or") {
            self.modifiers()?;
            arms.push(self.and()?);
        }
        Ok(if arms.len() == 1 {
            arms.pop().unwrap()
        } else {
            Need::Any(arms)
        })
    }

    fn and(&mut self) -> Result<Need, String> {
        let mut left = self.binary(0)?;
        loop {
            if self.eat("and") {
                self.modifiers()?;
                let right = self.binary(0)?;
                left = Need::All(vec![left, right]);
            } else if self.eat("unless") {
                self.modifiers()?;
                // What `unless` removes does not have to exist.
                self.binary(0)?;
            } else {
                return Ok(left);
            }
        }
    }

    /// Comparison (level 0), `+ -` (1), `* / % atan2` (2), `^` (3, right-associative).
    fn binary(&mut self, level: usize) -> Result<Need, String> {
        const LEVELS: [&[&str]; 4] = [
            &["==", "!=", "<=", ">=", "<", ">"],
            &["+", "-"],
            &["*", "/", "%", "atan2"],
            &["^"],
        ];
        if level == LEVELS.len() {
            return self.unary();
        }
        let mut left = self.binary(level + 1)?;
        while let Some(op) = LEVELS[level].iter().find(|op| self.is(op)) {
            self.eat(op);
            self.modifiers()?;
            let right = if level == 3 {
                self.binary(level)?
            } else {
                self.binary(level + 1)?
            };
            left = Need::All(vec![left, right]);
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Need, String> {
        if self.eat("-") || self.eat("+") {
            return self.unary();
        }
        let need = self.primary()?;
        // Postfix: a range or subquery, an offset.
        loop {
            if self.is("[") {
                self.skip_group("[", "]")?;
            } else if self.eat("offset") {
                self.eat("-");
                match self.peek() {
                    Some(Tok::Number) => self.at += 1,
                    other => return Err(format!("offset without a duration: {other:?}")),
                }
            } else {
                return Ok(need);
            }
        }
    }

    fn grouping(&mut self) -> Result<(), String> {
        if self.eat("by") || self.eat("without") {
            self.skip_group("(", ")")?;
        }
        Ok(())
    }

    fn args(&mut self) -> Result<Vec<Need>, String> {
        self.expect("(")?;
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.expr()?);
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        Ok(args)
    }

    fn primary(&mut self) -> Result<Need, String> {
        match self.peek().cloned() {
            Some(Tok::Number) | Some(Tok::Str) => {
                self.at += 1;
                Ok(Need::Nothing)
            }
            Some(Tok::Punct("(")) => {
                self.at += 1;
                let n = self.expr()?;
                self.expect(")")?;
                Ok(n)
            }
            Some(Tok::Punct("{")) => Err("a selector without a metric name".into()),
            Some(Tok::Ident(name)) => {
                self.at += 1;
                if AGGREGATIONS.contains(&name.as_str()) {
                    self.grouping()?;
                    let args = self.args()?;
                    self.grouping()?;
                    return Ok(Need::All(args));
                }
                if self.is("(") {
                    let args = self.args()?;
                    // absent() has a result when what it is given has none.
                    return Ok(if name.starts_with("absent") {
                        Need::Nothing
                    } else {
                        Need::All(args)
                    });
                }
                if self.is("{") {
                    self.skip_group("{", "}")?;
                }
                Ok(Need::Family(name))
            }
            other => Err(format!("unexpected token {other:?} at {}", self.at)),
        }
    }
}

fn parse_expr(expr: &str) -> Result<Need, String> {
    let mut p = Parser {
        toks: tokens(expr)?,
        at: 0,
    };
    let n = p.expr()?;
    if p.at != p.toks.len() {
        return Err(format!(
            "{expr}: left over from token {}: {:?}",
            p.at,
            &p.toks[p.at..]
        ));
    }
    Ok(n)
}

/// The table derived from the chart's rules and presets: (alert, preset or "none", the
/// families of the recommended preset it reads that the default preset lacks).
pub(crate) fn derived_table() -> Vec<(String, String, Vec<String>)> {
    let chart = repo().join(CHART);
    let rules: Value =
        serde_saphyr::from_str(&std::fs::read_to_string(chart.join(RULES)).unwrap()).unwrap();
    let mut recorded: BTreeMap<String, Vec<Need>> = BTreeMap::new();
    let mut alerts = Vec::new();
    for g in array(&rules["groups"]) {
        for r in array(&g["rules"]) {
            let expr = r["expr"].as_str().unwrap_or_else(|| panic!("no expr: {r}"));
            let need = parse_expr(expr).unwrap_or_else(|e| panic!("{RULES}: {e}\n{expr}"));
            if let Some(name) = r["record"].as_str() {
                recorded.entry(name.to_owned()).or_default().push(need);
            } else if let Some(name) = r["alert"].as_str() {
                alerts.push((name.to_owned(), need));
            }
        }
    }
    let presets: Vec<(&str, BTreeSet<String>)> = PRESETS
        .iter()
        .map(|(name, file)| {
            let text = std::fs::read_to_string(chart.join(file)).unwrap();
            let set = parse_counters(file, &text).unwrap();
            (*name, set.metrics().map(|r| r.name.clone()).collect())
        })
        .collect();
    let (default, recommended) = (&presets[0].1, &presets[presets.len() - 1].1);
    alerts
        .into_iter()
        .map(|(alert, need)| {
            let preset = presets
                .iter()
                .find(|(_, rows)| {
                    need.met(&recorded, &|fam: &str| {
                        !fam.starts_with("DCGM_") || rows.contains(fam)
                    })
                })
                .map_or("none", |(name, _)| *name);
            let mut read = BTreeSet::new();
            need.families(&recorded, &mut read);
            let extra = if preset == "default" {
                Vec::new()
            } else {
                read.into_iter()
                    .filter(|f| recommended.contains(f) && !default.contains(f))
                    .collect()
            };
            (alert, preset.to_owned(), extra)
        })
        .collect()
}

/// The rows of the README's table (after `SECTION`): (alert, preset, families).
fn readme_table() -> Result<Vec<(String, String, Vec<String>)>, String> {
    let text = std::fs::read_to_string(repo().join(README)).unwrap();
    let start = text
        .find(SECTION)
        .ok_or_else(|| format!("{README} has no section {SECTION:?}"))?;
    let rows: Vec<(String, String, Vec<String>)> = text[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| Alert"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split('|').map(str::trim).collect();
            let fams = cells
                .get(2)
                .unwrap_or(&"")
                .split(',')
                .map(|c| c.trim().trim_matches('`').to_owned())
                .filter(|c| !c.is_empty())
                .collect();
            (
                cells[0].to_owned(),
                cells.get(1).unwrap_or(&"").trim_matches('`').to_owned(),
                fams,
            )
        })
        .collect();
    if rows.is_empty() {
        return Err(format!("{README}: no table under {SECTION:?}"));
    }
    Ok(rows)
}

/// The README's table "which counters preset each alert needs" is what the rules and the
/// presets give, row for row; and with the recommended preset every shipped alert can fire.
#[test]
pub(crate) fn alerts_readme_says_which_preset_each_alert_needs() {
    let mut f = Failures::default();
    let derived = derived_table();
    let shown: Vec<String> = derived
        .iter()
        .map(|(a, p, fams)| {
            let fams: Vec<String> = fams.iter().map(|x| format!("`{x}`")).collect();
            format!("| {a} | `{p}` | {} |", fams.join(", "))
        })
        .collect();
    match readme_table() {
        Err(e) => f.add(format!(
            "{e}; its rows should be:\n| Alert | Preset | Reads from recommended.csv |\n|---|---|---|\n{}",
            shown.join("\n")
        )),
        Ok(rows) if rows != derived => f.add(format!(
            "{README}'s table under {SECTION:?} is not what the rules and presets give; \
             the rows should be:\n{}",
            shown.join("\n")
        )),
        Ok(_) => {}
    }
    for (alert, preset, _) in &derived {
        if preset == "none" {
            f.add(format!(
                "{alert} cannot fire with any preset of the chart: {}",
                PRESETS.map(|(p, _)| p).join(", ")
            ));
        }
    }
    // The derivation can tell the presets apart: it is not vacuous.
    if !derived.iter().any(|(_, p, _)| p == "recommended") {
        f.add("no alert needs the recommended preset: the derivation sees no counters field");
    }
    f.finish("presets of the alerts");
}

/// The parser's reading of a few expressions the rules file has, as a check of the parser.
#[test]
pub(crate) fn alert_expressions_parse_into_what_they_need() {
    let none: BTreeMap<String, Vec<Need>> = BTreeMap::new();
    let has = |present: &'static [&'static str]| move |f: &str| present.contains(&f);
    let cases: [(&str, &[&str], bool); 8] = [
        ("a or b", &["b"], true),
        ("a and b", &["b"], false),
        ("a unless b", &["a"], true),
        ("a unless b", &["b"], false),
        (
            "max by (x) (a) * on (y) group_left (z) b > 0.5",
            &["a"],
            false,
        ),
        (
            "increase(a{x=~\"1|2\"}[10m]) > 0 or (b unless c offset 10m)",
            &["b"],
            true,
        ),
        ("floor(a / 64) % 2 == 1", &["a"], true),
        (
            "label_replace(a or b, \"H\", \"$1\", \"h\", \"(.+)\") # note\n / 1e-12",
            &["b"],
            true,
        ),
    ];
    for (expr, present, want) in cases {
        let need = parse_expr(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
        assert_eq!(
            need.met(&none, &has(present)),
            want,
            "{expr} with {present:?}: {need:?}"
        );
    }
    assert!(parse_expr("sum(a").is_err());
    assert!(parse_expr("a b").is_err());
}
