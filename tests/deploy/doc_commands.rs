//! The example commands of the README and the docs, run as written wherever they can run here,
//! so that a page that drifts from what the tools do fails CI.
//!
//! Every Markdown page of the repository (`*.md` outside `target/` and hidden folders) is
//! read. Its commands are the lines of its fenced ```sh / ```bash / ```shell blocks (the
//! `$ ` lines of ```console blocks), and its inline code spans that are a command of a tool
//! that can run here: `gpu-exporter …` (or a `--simulate …` fragment, run as
//! `gpu-exporter --simulate …`), and `promtool`, `amtool`, `helm` or `curl` with an argument
//! (a span such as `promtool test rules` only names a subcommand). Inline commands run each on
//! its own.
//! A fence with a language this file does not know fails, and so does a command-looking line
//! in a ```text or unlabelled block (label it `sh` to have it run).
//!
//! Each command is classified by [`classify`], by its first word and subcommand (the rules
//! are the table in that function): it runs; it is rendered (`helm install|upgrade` of the
//! repository's chart runs as `helm template` with the same values); or it is skipped by a
//! named rule (a cluster, a container engine, a cargo build, a benchmark, a placeholder the
//! reader fills in). A command that no rule knows fails the test: a new kind of command in the
//! docs is classified, never dropped by default.
//!
//! A page's commands run in order in one bash, in a private copy of the checkout (links to its
//! folders; `target/{debug,release}/gpu-exporter` and `gpu-exporter` on PATH are the binary
//! cargo built for the tests), so that a later block sees the files, variables and servers of
//! an earlier one, as the reader's terminal would. What changes for the run is fixed and
//! printed with the command: the ports 9400 and 9090 become free ones, `/tmp/` a private
//! folder, `prometheus` gets a `--web.listen-address`, an exporter without `-a` gets
//! `DCGM_EXPORTER_LISTEN`, and the simulated NVML library is given by `GPU_EXPORTER_NVML_LIB`.
//!
//! Servers (`gpu-exporter` without a subcommand, `prometheus`) start in the background and must
//! answer on their port (`/ready`, `/-/ready`) before the page goes on; they are stopped when
//! the page ends (an inline one as soon as it answers) and must still be running then. `curl`
//! runs where an earlier command of the page started the local server it asks. A comment above
//! a command that says "non-zero" expects it to fail; one that names an HTTP status is checked
//! against what `curl -i` got. A failure names the page and line, the command and its output;
//! later commands of that page do not run. The test prints what it ran and skipped, and why.

use super::*;

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

/// How long one command may run (`gpu-exporter check` takes seconds; a hang is a failure).
const STEP_LIMIT: Duration = Duration::from_secs(120);
/// Pages run at the same time.
const WORKERS: usize = 3;
/// The ports the docs use and that each page gets a free one for: the exporter's and
/// Prometheus'.
const DOC_PORTS: [u16; 2] = [9400, 9090];

// ---------------------------------------------------------------------------------------------
// Markdown: fenced blocks and inline spans

/// Fence languages whose lines are commands.
const COMMAND_LANGS: [&str; 4] = ["sh", "bash", "shell", "console"];
/// Fence languages that are not commands; `text` and unlabelled blocks are checked for lines
/// that look like commands.
const OTHER_LANGS: [&str; 12] = [
    "",
    "c",
    "text",
    "yaml",
    "toml",
    "json",
    "promql",
    "dockerfile",
    "csv",
    "rust",
    "diff",
    "python",
];

struct Block {
    lang: String,
    /// Line of the opening fence.
    line: usize,
    /// The lines between the fences (line number, text without the fence's indentation).
    lines: Vec<(usize, String)>,
}

/// The fenced blocks of `text`, and its text outside them (fence and block lines blanked, so
/// that line numbers stay).
fn blocks(text: &str) -> (Vec<Block>, String) {
    let mut out = Vec::new();
    let mut prose = String::new();
    let mut open: Option<(String, usize, Block)> = None;
    for (i, l) in text.lines().enumerate() {
        let n = i + 1;
        let t = l.trim_start();
        let indent = l.len() - t.len();
        let fence: String = t.chars().take_while(|&c| c == '`' || c == '~').collect();
        let is_fence = fence.len() >= 3 && fence.chars().all(|c| c == fence.as_bytes()[0] as char);
        match &mut open {
            Some((mark, _, _))
                if is_fence
                    && fence.starts_with(mark.as_str())
                    && t[fence.len()..].trim().is_empty() =>
            {
                let (_, _, b) = open.take().unwrap();
                out.push(b);
            }
            Some((_, ind, b)) => {
                let strip = l.len() - l.trim_start().len();
                b.lines.push((n, l[strip.min(*ind)..].to_string()));
            }
            None if is_fence => {
                let lang = t[fence.len()..].split_whitespace().next().unwrap_or("");
                let b = Block {
                    lang: lang.to_ascii_lowercase(),
                    line: n,
                    lines: Vec::new(),
                };
                open = Some((fence, indent, b));
            }
            None => prose.push_str(l),
        }
        prose.push('\n');
    }
    (out, prose)
}

/// The inline code spans of `prose` that are exporter command lines: (line, command).
fn inline_commands(prose: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let chars: Vec<char> = prose.chars().collect();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        if chars[i] == '\n' {
            line += 1;
        }
        if chars[i] != '`' {
            i += 1;
            continue;
        }
        let run = chars[i..].iter().take_while(|&&c| c == '`').count();
        let start = i + run;
        let mut j = start;
        let close = loop {
            if j >= chars.len() {
                break None;
            }
            let r = chars[j..].iter().take_while(|&&c| c == '`').count();
            if r == run {
                break Some(j);
            }
            j += r.max(1);
        };
        let Some(end) = close else {
            i = start;
            continue;
        };
        let span: String = chars[start..end].iter().collect();
        let span = span.split_whitespace().collect::<Vec<_>>().join(" ");
        let first = span.split(' ').next().unwrap_or("");
        // `gpu-exporter check` or `promtool test rules` alone names a subcommand; with an
        // argument (a flag, a path, a value) it is a command.
        let args: Vec<&str> = span.split(' ').skip(1).collect();
        let exporter =
            exporter_name(first) && (args.len() > 1 || args.iter().any(|a| a.starts_with('-')));
        let tool = INLINE_TOOLS.contains(&first)
            && args
                .iter()
                .any(|a| a.starts_with('-') || a.contains(['/', '.', '=', ':']));
        if exporter || tool {
            out.push((line, span));
        } else if let Some(rest) = span.strip_prefix("--simulate ") {
            out.push((line, format!("gpu-exporter --simulate {rest}")));
        }
        line += chars[i..end].iter().filter(|&&c| c == '\n').count();
        i = end + run;
    }
    out
}

/// Besides the exporter, the tools whose inline spans are commands (the ones that can run here;
/// a `kubectl …` span is never collected, as it would only be skipped).
const INLINE_TOOLS: [&str; 4] = ["promtool", "amtool", "helm", "curl"];

/// A command of a block: its first line, its text (continuation lines joined), the here
/// document that follows it, and the comment lines right above it.
struct Cmd {
    line: usize,
    text: String,
    heredoc: Option<Heredoc>,
    comment: String,
}

struct Heredoc {
    body: String,
    delim: String,
    /// `<<'EOF'`: the body is not expanded.
    quoted: bool,
}

/// The commands of a shell block.
fn block_commands(b: &Block) -> Vec<Cmd> {
    let mut out = Vec::new();
    let mut comment = String::new();
    let mut lines = b.lines.iter().peekable();
    while let Some((n, l)) = lines.next() {
        let mut t = l.trim().to_string();
        if b.lang == "console" {
            match t.strip_prefix("$ ") {
                Some(c) => t = c.to_string(),
                None => continue,
            }
        }
        if t.is_empty() {
            comment.clear();
            continue;
        }
        if t.starts_with('#') {
            comment.push_str(&t);
            comment.push('\n');
            continue;
        }
        while let Some(part) = t.strip_suffix('\\') {
            let next = lines.next().map(|(_, l)| l.trim()).unwrap_or_default();
            t = format!("{}{next}", part.trim_end().to_string() + " ");
        }
        let heredoc = heredoc_of(&t).map(|(delim, quoted)| {
            let mut body = String::new();
            for (_, l) in lines.by_ref() {
                if l.trim() == delim {
                    break;
                }
                body.push_str(l);
                body.push('\n');
            }
            Heredoc {
                body,
                delim,
                quoted,
            }
        });
        out.push(Cmd {
            line: *n,
            text: t,
            heredoc,
            comment: std::mem::take(&mut comment),
        });
    }
    out
}

/// The delimiter of a here document the line opens (`<<EOF`, `<<-EOF`, `<<'EOF'`).
fn heredoc_of(line: &str) -> Option<(String, bool)> {
    let toks = lex(line);
    let at = toks
        .iter()
        .position(|t| t.kind == K::Redir && t.raw == "<<")?;
    let raw = &toks.get(at + 1)?.raw;
    let quoted = raw.contains('\'') || raw.contains('"');
    Some((raw.trim_start_matches('-').replace(['\'', '"'], ""), quoted))
}

// ---------------------------------------------------------------------------------------------
// A small shell lexer: enough to split steps and find each simple command's words

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum K {
    Word,
    /// `&&`, `||`, `|`, `|&`, `;`, `&`, `(`, `)`.
    Op,
    /// `>`, `>>`, `<`, `<<`, `<<<`, `>&`, `&>`; the next word is its target.
    Redir,
}

#[derive(Clone, Debug)]
struct Tok {
    kind: K,
    /// As written.
    raw: String,
    /// Without quotes (words).
    val: String,
    start: usize,
    end: usize,
}

/// The end (exclusive) of the `$(…)` that opens at `b[i]` (`$`), quotes and nesting respected.
fn subst_end(b: &[u8], i: usize) -> usize {
    let (mut depth, mut j) = (0, i + 1);
    while j < b.len() {
        match b[j] {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return j + 1;
                }
            }
            b'\'' => j = quote_end(b, j),
            b'"' => j = dquote_end(b, j),
            b'\\' => j += 1,
            _ => {}
        }
        j += 1;
    }
    b.len()
}

/// The index of the `'` closing the one at `i`.
fn quote_end(b: &[u8], i: usize) -> usize {
    (i + 1..b.len()).find(|&j| b[j] == b'\'').unwrap_or(b.len())
}

/// The index of the `"` closing the one at `i` (`$(…)` inside skipped whole).
fn dquote_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'"' => return j,
            b'\\' => j += 1,
            b'$' if b.get(j + 1) == Some(&b'(') => j = subst_end(b, j) - 1,
            _ => {}
        }
        j += 1;
    }
    b.len()
}

/// The words, operators and redirections of a command line, up to a comment.
fn lex(s: &str) -> Vec<Tok> {
    let b = s.as_bytes();
    let mut toks: Vec<Tok> = Vec::new();
    let (mut i, mut word_start, mut val) = (0, None::<usize>, String::new());
    let flush = |toks: &mut Vec<Tok>, ws: &mut Option<usize>, val: &mut String, end: usize| {
        if let Some(st) = ws.take() {
            toks.push(Tok {
                kind: K::Word,
                raw: s[st..end].to_string(),
                val: std::mem::take(val),
                start: st,
                end,
            });
        }
    };
    while i < b.len() {
        let c = b[i];
        match c {
            b' ' | b'\t' | b'\n' => {
                flush(&mut toks, &mut word_start, &mut val, i);
                i += 1;
            }
            b'#' if word_start.is_none() => break,
            b'\'' => {
                word_start.get_or_insert(i);
                let e = quote_end(b, i);
                val.push_str(&s[i + 1..e.min(b.len())]);
                i = e + 1;
            }
            b'"' => {
                word_start.get_or_insert(i);
                let e = dquote_end(b, i);
                val.push_str(&s[i + 1..e.min(b.len())]);
                i = e + 1;
            }
            b'\\' => {
                word_start.get_or_insert(i);
                let next = s[i + 1..].chars().next();
                val.extend(next);
                i += 1 + next.map_or(0, char::len_utf8);
            }
            b'$' if b.get(i + 1) == Some(&b'(') => {
                word_start.get_or_insert(i);
                let e = subst_end(b, i);
                val.push_str(&s[i..e]);
                i = e;
            }
            b'`' => {
                word_start.get_or_insert(i);
                let e = (i + 1..b.len()).find(|&j| b[j] == b'`').unwrap_or(b.len());
                val.push_str(&s[i..(e + 1).min(b.len())]);
                i = e + 1;
            }
            b'&' | b'|' | b';' | b'(' | b')' | b'<' | b'>' => {
                // A word of digits right before a redirection is its file descriptor.
                let fd = word_start.is_some_and(|st| s[st..i].bytes().all(|d| d.is_ascii_digit()));
                if fd && (c == b'>' || c == b'<') {
                    word_start = None;
                    val.clear();
                } else {
                    flush(&mut toks, &mut word_start, &mut val, i);
                }
                let rest = &s[i..];
                let (op, kind) = [
                    ("<<<", K::Redir),
                    ("<<-", K::Redir),
                    ("&&", K::Op),
                    ("||", K::Op),
                    ("|&", K::Op),
                    (">>", K::Redir),
                    ("<<", K::Redir),
                    (">&", K::Redir),
                    ("&>", K::Redir),
                    ("&", K::Op),
                    ("|", K::Op),
                    (";", K::Op),
                    ("(", K::Op),
                    (")", K::Op),
                    ("<", K::Redir),
                    (">", K::Redir),
                ]
                .into_iter()
                .find(|(op, _)| rest.starts_with(op))
                .unwrap();
                let shown = if op == "<<-" { "<<" } else { op };
                toks.push(Tok {
                    kind,
                    raw: shown.to_string(),
                    val: shown.to_string(),
                    start: i,
                    end: i + op.len(),
                });
                i += op.len();
            }
            _ => {
                word_start.get_or_insert(i);
                let ch = s[i..].chars().next().unwrap_or(' ');
                val.push(ch);
                i += ch.len_utf8();
            }
        }
    }
    let end = i.min(b.len());
    flush(&mut toks, &mut word_start, &mut val, end);
    toks
}

/// The `$(…)` texts inside `s` (a double-quoted string or a here document's body).
fn collect_substs(s: &str, out: &mut Vec<String>) {
    let b = s.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'$' && b[i + 1] == b'(' {
            let e = subst_end(b, i);
            out.push(s[i + 2..e.saturating_sub(1).max(i + 2)].to_string());
            i = e;
        } else {
            i += 1;
        }
    }
}

/// One simple command: its variable assignments, its words (redirection targets left out)
/// and the files it redirects its output to.
#[derive(Default, Debug)]
struct Simple {
    assigns: Vec<String>,
    words: Vec<String>,
    raw: Vec<String>,
    writes: Vec<String>,
    /// `( … )`: the steps of the subshell instead of words.
    sub: Vec<Step>,
}

/// What runs between `&&`, `;` and `&`: a pipeline (or `a || b`) of simple commands.
#[derive(Debug)]
struct Step {
    text: String,
    background: bool,
    segs: Vec<Simple>,
    substs: Vec<String>,
}

/// The steps of a command line.
fn steps(line: &str) -> Vec<Step> {
    let mut out = Vec::new();
    let toks = lex(line);
    let mut i = 0;
    while i < toks.len() {
        let first = i;
        let mut segs = vec![Simple::default()];
        let mut end_tok = i;
        let mut background = false;
        while i < toks.len() {
            let t = &toks[i];
            match (t.kind, t.raw.as_str()) {
                (K::Op, "&&" | ";") => break,
                (K::Op, "&") => {
                    background = true;
                    break;
                }
                (K::Op, "|" | "||" | "|&") => segs.push(Simple::default()),
                (K::Op, "(") => {
                    let mut depth = 0;
                    let open = i;
                    while i < toks.len() {
                        match toks[i].raw.as_str() {
                            "(" if toks[i].kind == K::Op => depth += 1,
                            ")" if toks[i].kind == K::Op => {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        i += 1;
                    }
                    let inner_end = toks.get(i).map_or(line.len(), |t| t.start);
                    let inner = &line[toks[open].end..inner_end];
                    segs.last_mut().unwrap().sub = steps(inner);
                }
                (K::Op, _) => {}
                (K::Redir, op) => {
                    if let Some(target) = toks.get(i + 1) {
                        if op.starts_with('>') || op == "&>" {
                            segs.last_mut().unwrap().writes.push(target.val.clone());
                        }
                        i += 1;
                    }
                }
                (K::Word, _) => {
                    let s = segs.last_mut().unwrap();
                    let is_assign = s.words.is_empty()
                        && t.val.split_once('=').is_some_and(|(n, _)| {
                            !n.is_empty()
                                && n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
                        });
                    if is_assign {
                        s.assigns.push(t.raw.clone());
                    } else {
                        s.words.push(t.val.clone());
                        s.raw.push(t.raw.clone());
                    }
                }
            }
            end_tok = i;
            i += 1;
        }
        let text = if end_tok >= first && first < toks.len() {
            line[toks[first].start..toks[end_tok.min(toks.len() - 1)].end]
                .trim()
                .to_string()
        } else {
            String::new()
        };
        let mut substs = Vec::new();
        collect_substs(&text, &mut substs);
        for t in &toks[first..=end_tok.min(toks.len() - 1)] {
            if t.raw.starts_with('`') {
                substs.push(t.raw.trim_matches('`').to_string());
            }
        }
        let text = text.trim_end_matches(['&', ';', ' ']).to_string();
        if !text.is_empty() {
            out.push(Step {
                text,
                background,
                segs,
                substs,
            });
        }
        i += 1;
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Classification

/// What the test does with a command.
#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    /// Runs as written (after the page's substitutions), to its end.
    Run,
    /// A server: runs in the background until it answers on `port` (as written) at `ready`.
    Daemon { port: u16, ready: &'static str },
    /// Runs as this other command (`helm template` for an install).
    RunAs(String),
    /// Not run, by the named rule.
    Skip(String),
    /// Not run: the reader fills in this placeholder.
    Placeholder(String),
    /// No rule knows it: a failure.
    Unknown(String),
}

/// Shell built-ins and small utilities that run as written (they write only into the page's
/// private folder).
const SHELL_UTILS: [&str; 19] = [
    "cd", "mkdir", "printf", "echo", "cat", "tr", "head", "tail", "grep", "sed", "sort", "wc",
    "jq", "sleep", "true", "export", "openssl", "htpasswd", "ls",
];
/// Built-ins: not looked up on PATH.
const BUILTINS: [&str; 6] = ["cd", "printf", "echo", "true", "export", "sleep"];
/// Tools never run here, each with the reason (a cluster, a container engine, a build…).
const SKIPPED_TOOLS: [(&str, &str); 8] = [
    ("kubectl", "needs a Kubernetes cluster"),
    (
        "docker",
        "a container engine: scripts/test.sh builds and runs the image with scripts/image.sh",
    ),
    (
        "podman",
        "a container engine: scripts/test.sh builds and runs the image with scripts/image.sh",
    ),
    (
        "buildah",
        "builds the image: scripts/test.sh's image step (scripts/image.sh) does",
    ),
    (
        "cargo",
        "a cargo build or test: this test runs the binary cargo built for it",
    ),
    ("git", "changes the checkout (worktrees, branches)"),
    ("nvidia-smi", "needs a GPU"),
    ("nv-hostengine", "needs DCGM and a GPU"),
];
/// Scripts run with `bash` or `python3`, by path prefix: runs (`None`) or why not.
const SCRIPTS: [(&str, Option<&str>); 7] = [
    (
        "scripts/test.sh",
        Some("the project's whole test command, which runs this test"),
    ),
    (
        "scripts/image.sh",
        Some("builds the container image: scripts/test.sh's image step"),
    ),
    (
        "scripts/deploy-tools.sh",
        Some("installs helm and kubectl: scripts/test.sh runs it first"),
    ),
    (
        "benches/",
        Some("a benchmark of minutes: scripts/test.sh runs the short fleet"),
    ),
    (
        "deploy/render.sh --check",
        Some("run by tests/deploy (copies.rs, committed_manifests_match_a_fresh_render)"),
    ),
    (
        "deploy/render.sh",
        Some("rewrites deploy/manifests/ in the checkout (its --check form runs in tests/deploy)"),
    ),
    ("dashboards/generate.py --check", None),
];
/// helm subcommands that need a cluster or a registry.
const HELM_REMOTE: [&str; 11] = [
    "test",
    "uninstall",
    "status",
    "get",
    "history",
    "rollback",
    "list",
    "repo",
    "pull",
    "push",
    "registry",
];
/// Flags of `helm upgrade` that `helm template` does not take (dropped when rendering one).
const UPGRADE_ONLY: [&str; 7] = [
    "--reuse-values",
    "--reset-values",
    "--reset-then-reuse-values",
    "--install",
    "-i",
    "--force",
    "--cleanup-on-fail",
];
/// Words that stand for what the reader fills in.
const PLACEHOLDER_WORDS: [&str; 14] = [
    "PORT",
    "NODE",
    "ADDRESS",
    "URL",
    "NAME",
    "FILE",
    "PATH",
    "SCENARIO",
    "SEED",
    "S",
    "LIST",
    "RELEASE",
    "NAMESPACE",
    "VERSION",
];

fn exporter_name(w: &str) -> bool {
    matches!(
        w,
        "gpu-exporter"
            | "./target/release/gpu-exporter"
            | "target/release/gpu-exporter"
            | "./target/debug/gpu-exporter"
            | "target/debug/gpu-exporter"
    )
}

/// What a page has done so far, as classification needs it.
#[derive(Default)]
struct PageState {
    /// Local ports with their server: where it was started, and whether it runs here.
    servers: BTreeMap<u16, (String, bool)>,
    /// Files the page's commands wrote.
    writes: BTreeSet<String>,
}

/// The port of an address such as `:9400`, `127.0.0.1:9400` or `localhost:9400/metrics`.
fn port_of(addr: &str) -> Option<u16> {
    let rest = addr.split_once("://").map_or(addr, |(_, r)| r);
    let hostport = rest.split('/').next()?;
    hostport.rsplit_once(':')?.1.parse().ok()
}

/// The value of flag `long` (or `short`) in `words`: `--x v`, `--x=v`, `-x v`.
fn flag<'a>(words: &'a [String], short: &str, long: &str) -> Option<&'a str> {
    let mut found = None;
    for (i, w) in words.iter().enumerate() {
        if w == long || (!short.is_empty() && w == short) {
            found = words.get(i + 1).map(|s| s.as_str());
        } else if let Some(v) = w.strip_prefix(long).and_then(|r| r.strip_prefix('=')) {
            found = Some(v);
        }
    }
    found
}

/// The local server ports a command asks (`localhost`/`127.0.0.1` URLs), and whether it asks
/// any other host.
fn asked_ports(words: &[String]) -> (Vec<u16>, bool) {
    let (mut local, mut remote) = (Vec::new(), false);
    for w in words.iter().filter(|w| !w.starts_with('-')) {
        let rest = w.split_once("://").map_or(w.as_str(), |(_, r)| r);
        let host = rest.split([':', '/']).next().unwrap_or("");
        let is_url = w.contains("://") || rest.split('/').next().is_some_and(|h| h.contains(':'));
        if !is_url {
            continue;
        }
        if host == "localhost" || host == "127.0.0.1" {
            let default = if w.starts_with("https") { 443 } else { 80 };
            local.push(port_of(w).unwrap_or(default));
        } else {
            remote = true;
        }
    }
    (local, remote)
}

/// A command that asks a server: runs when an earlier command of the page started it here.
fn client(words: &[String], page: &PageState, what: &str) -> Verdict {
    let (local, remote) = asked_ports(words);
    if local.is_empty() {
        return if remote {
            Verdict::Skip(format!("{what} of another host (a cluster's or a node's)"))
        } else {
            Verdict::Unknown(format!("{what} that names no server"))
        };
    }
    for p in &local {
        match page.servers.get(p) {
            Some((_, true)) => {}
            Some((at, false)) => {
                return Verdict::Skip(format!("asks the server on :{p} that {at} starts, skipped"));
            }
            None => {
                return Verdict::Unknown(format!(
                    "{what} of localhost:{p}, which no earlier command of the page starts"
                ));
            }
        }
    }
    Verdict::Run
}

/// The classification rules, by first word and subcommand. Everything not listed is
/// [`Verdict::Unknown`], a failure.
///
/// | Command | Verdict |
/// |---|---|
/// | `cd`, `mkdir`, `printf`, `cat`, `openssl`, `htpasswd`, … ([`SHELL_UTILS`]), `VAR=value` | runs |
/// | `gpu-exporter -h/--help/-V/--version` | runs |
/// | `gpu-exporter …` without `--simulate` | skipped: a GPU node |
/// | `gpu-exporter check --simulate …` | runs to its end |
/// | `gpu-exporter probe URL` | a client: runs against the page's server |
/// | `gpu-exporter --simulate …` | a server on `-a` (default 9400), ready at `/ready` |
/// | `prometheus …` | a server on `--web.listen-address` (9090), ready at `/-/ready` |
/// | `curl URL` | a client: runs against a local server an earlier command started |
/// | `promtool check/test …` | runs |
/// | `amtool check-config`, `amtool config …` | runs; `amtool alert/silence/cluster`: skipped (a running Alertmanager) |
/// | `helm template/lint/show` | runs |
/// | `helm install/upgrade R deploy/helm/gpu-exporter …` | runs as `helm template` (same values; a values file the reader writes: skipped) |
/// | `helm install/upgrade` of another chart, `helm test/uninstall/repo/…` | skipped: a cluster |
/// | `kubectl`, `docker`, `podman`, `buildah`, `cargo`, `git`, … ([`SKIPPED_TOOLS`]) | skipped, with the reason |
/// | `bash`/`python3` SCRIPT | by [`SCRIPTS`] |
/// | `( … )` | as the commands inside |
///
/// A command that would run but holds a placeholder (`<node>`, `PORT`, `[flags]`, `…`,
/// `path/to/`) is [`Verdict::Placeholder`].
fn classify(s: &Simple, page: &PageState) -> Verdict {
    if !s.sub.is_empty() {
        return combine(s.sub.iter().map(|st| classify_step(st, page)));
    }
    let w = &s.words;
    let Some(first) = w.first().map(String::as_str) else {
        return if s.assigns.is_empty() {
            Verdict::Unknown("an empty command".into())
        } else {
            Verdict::Run
        };
    };
    let sub = w.get(1).map(String::as_str).unwrap_or("");
    if let Some((_, why)) = SKIPPED_TOOLS.iter().find(|(t, _)| *t == first) {
        return Verdict::Skip((*why).into());
    }
    if SHELL_UTILS.contains(&first) {
        return Verdict::Run;
    }
    if exporter_name(first) {
        let has = |f: &str| w.iter().any(|x| x == f || x.starts_with(&format!("{f}=")));
        if ["-h", "--help", "-V", "--version"].iter().any(|f| has(f)) {
            return Verdict::Run;
        }
        if sub == "probe" {
            return client(w, page, "a probe");
        }
        if !has("--simulate")
            && !s
                .assigns
                .iter()
                .any(|a| a.starts_with("GPU_EXPORTER_SIMULATE="))
        {
            return Verdict::Skip("needs a GPU node (no --simulate)".into());
        }
        if sub == "check" {
            return Verdict::Run;
        }
        if !sub.is_empty() && !sub.starts_with('-') {
            return Verdict::Unknown(format!("gpu-exporter has no subcommand {sub}"));
        }
        let port = flag(w, "-a", "--address").map_or(Some(9400), port_of);
        return match port {
            Some(port) => Verdict::Daemon {
                port,
                ready: "/ready",
            },
            None => Verdict::Unknown("an address without a port".into()),
        };
    }
    match first {
        "curl" => client(w, page, "a request"),
        "prometheus" => Verdict::Daemon {
            port: flag(w, "", "--web.listen-address")
                .map_or(Some(9090), port_of)
                .unwrap_or(9090),
            ready: "/-/ready",
        },
        "promtool" if ["check", "test"].contains(&sub) => Verdict::Run,
        "amtool" if sub == "check-config" || sub == "config" => Verdict::Run,
        "amtool" if ["alert", "silence", "cluster"].contains(&sub) => {
            Verdict::Skip("asks a running Alertmanager".into())
        }
        "helm" if ["template", "lint", "show"].contains(&sub) => Verdict::Run,
        "helm" if sub == "install" || sub == "upgrade" => helm_install(s, page),
        "helm" if HELM_REMOTE.contains(&sub) => {
            Verdict::Skip("needs a Kubernetes cluster (or a chart registry)".into())
        }
        "bash" | "sh" | "python3" => {
            let args = w[1..].join(" ");
            match SCRIPTS.iter().find(|(p, _)| args.starts_with(p)) {
                Some((_, None)) => Verdict::Run,
                Some((_, Some(why))) => Verdict::Skip((*why).into()),
                None => Verdict::Unknown(format!("{first} {args}: a script no rule names")),
            }
        }
        _ => Verdict::Unknown(format!("no rule for `{first}`")),
    }
}

/// `helm install|upgrade RELEASE CHART …`: the repository's chart renders with `helm template`
/// and the same values; another chart, or values the reader writes, are skipped.
fn helm_install(s: &Simple, page: &PageState) -> Verdict {
    let (w, raw) = (&s.words, &s.raw);
    if w.len() < 4 || w[2].starts_with('-') || w[3].starts_with('-') {
        return Verdict::Unknown("write `helm install|upgrade RELEASE CHART …`".into());
    }
    if w[3].trim_start_matches("./").trim_end_matches('/') != CHART {
        return Verdict::Skip("another project's chart, installed on a cluster".into());
    }
    let mut args = vec!["helm".to_string(), "template".into()];
    let mut i = 2;
    while i < w.len() {
        if UPGRADE_ONLY.contains(&w[i].as_str()) {
            i += 1;
            continue;
        }
        if (w[i] == "-f" || w[i] == "--values")
            && let Some(file) = w.get(i + 1)
            && !repo().join(file).is_file()
            && !page.writes.contains(file)
        {
            return Verdict::Skip(format!("a values file the reader writes ({file})"));
        }
        args.push(raw[i].clone());
        i += 1;
    }
    if flag(w, "", "--kube-version").is_none() {
        // An install asks the cluster its version; the render says the one the chart is
        // tested against.
        args.extend(["--kube-version".into(), KUBE_VERSION.into()]);
    }
    Verdict::RunAs(args.join(" "))
}

/// The verdict of several commands that run together: the first that does not simply run.
fn combine(vs: impl IntoIterator<Item = Verdict>) -> Verdict {
    let mut out = Verdict::Run;
    for v in vs {
        match (&out, &v) {
            (_, Verdict::Unknown(_)) => return v,
            (Verdict::Run, _) => out = v,
            (_, Verdict::Run) => {}
            (Verdict::Skip(_) | Verdict::Placeholder(_), _) => {}
            _ => {
                return Verdict::Unknown(
                    "a server or a rendered command inside a pipeline or subshell".into(),
                );
            }
        }
    }
    out
}

/// The placeholder in `text`, if it has one.
fn placeholder(text: &str) -> Option<String> {
    let angle = regex::Regex::new(r"<[A-Za-z][A-Za-z0-9 ._'/-]*>").unwrap();
    if let Some(m) = angle.find(text) {
        return Some(m.as_str().to_string());
    }
    for w in text.split_whitespace() {
        if w.starts_with('[') && w.len() > 1 && !w.starts_with("[[") {
            return Some(w.to_string());
        }
        if w.contains('…') || w.contains("...") || w.contains("path/to/") {
            return Some(w.to_string());
        }
    }
    let word = regex::Regex::new(r"(^|[^A-Za-z0-9_$-])([A-Z]+)($|[^A-Za-z0-9_=])").unwrap();
    word.captures_iter(text)
        .map(|c| c[2].to_string())
        .find(|w| PLACEHOLDER_WORDS.contains(&w.as_str()))
}

/// A step's verdict: its simple commands together, its command substitutions and its here
/// document's (which run too), and a placeholder check for what would run.
fn classify_step(st: &Step, page: &PageState) -> Verdict {
    let mut vs: Vec<Verdict> = st.segs.iter().map(|s| classify(s, page)).collect();
    let first = vs.remove(0);
    let rest = combine(vs.into_iter().chain(st.substs.iter().flat_map(|t| {
        steps(t)
            .iter()
            .map(|s| classify_step(s, page))
            .collect::<Vec<_>>()
    })));
    let v = match (&first, &rest) {
        (_, Verdict::Unknown(_)) => rest,
        (Verdict::Run, _) => rest,
        (Verdict::Daemon { .. } | Verdict::RunAs(_), Verdict::Run) if st.segs.len() == 1 => first,
        (Verdict::Daemon { .. } | Verdict::RunAs(_), Verdict::Run) => {
            Verdict::Unknown("a server or a rendered command in a pipeline".into())
        }
        (Verdict::Skip(_) | Verdict::Placeholder(_) | Verdict::Unknown(_), _) => first,
        (_, _) => rest,
    };
    // A placeholder explains a command that would run, or that no rule knows.
    let runs = matches!(
        v,
        Verdict::Run | Verdict::Daemon { .. } | Verdict::RunAs(_) | Verdict::Unknown(_)
    );
    match placeholder(&st.text) {
        Some(p) if runs => Verdict::Placeholder(p),
        _ => v,
    }
}

// ---------------------------------------------------------------------------------------------
// A page's commands, in order

/// One command of a page, classified.
struct Planned {
    at: String,
    shown: String,
    exec: String,
    heredoc: Option<Heredoc>,
    verdict: Verdict,
    /// The comment above says it exits non-zero.
    expect_fail: bool,
    /// The comment above names the HTTP status `curl -i` must get.
    expect_status: Option<u16>,
    inline: bool,
}

/// Every `*.md` of the repository outside `target/` and hidden folders, relative, sorted.
fn pages() -> Vec<String> {
    let root = repo();
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let name = file_name(&p);
            if name.starts_with('.') || (d == root && name == "target") {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else if name.ends_with(".md") {
                out.push(p.strip_prefix(&root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// A line of a text block that looks like a command someone meant to run.
fn looks_like_command(line: &str) -> bool {
    let t = line.trim_start();
    let first = t.split_whitespace().next().unwrap_or("");
    t.starts_with("$ ")
        || exporter_name(first)
        || [
            "helm", "kubectl", "promtool", "amtool", "curl", "cargo", "docker",
        ]
        .contains(&first)
}

/// The commands of page `rel`, classified in order; problems with its blocks go to `f`.
fn plan_page(rel: &str, text: &str, f: &mut Failures) -> Vec<Planned> {
    let (blocks, prose) = blocks(text);
    let mut page = PageState::default();
    let mut out = Vec::new();
    for b in &blocks {
        if !COMMAND_LANGS.contains(&b.lang.as_str()) {
            if !OTHER_LANGS.contains(&b.lang.as_str()) {
                f.add(format!(
                    "{rel}:{}: a ```{} block: add the language to COMMAND_LANGS or OTHER_LANGS in tests/deploy/doc_commands.rs",
                    b.line, b.lang
                ));
            } else if b.lang.is_empty() || b.lang == "text" {
                for (n, l) in b.lines.iter().filter(|(_, l)| looks_like_command(l)) {
                    f.add(format!(
                        "{rel}:{n}: `{}` is in a ```{} block: put commands in a ```sh block (then they run)",
                        l.trim(),
                        b.lang
                    ));
                }
            }
            continue;
        }
        for c in block_commands(b) {
            plan_command(rel, c, false, &mut page, &mut out);
        }
    }
    let mut seen = BTreeSet::new();
    for (line, cmd) in inline_commands(&prose) {
        if seen.insert(cmd.clone()) {
            let c = Cmd {
                line,
                text: cmd,
                heredoc: None,
                comment: String::new(),
            };
            // Inline commands are independent of each other: each on a page of its own.
            plan_command(rel, c, true, &mut PageState::default(), &mut out);
        }
    }
    out
}

fn plan_command(rel: &str, c: Cmd, inline: bool, page: &mut PageState, out: &mut Vec<Planned>) {
    let at = format!("{rel}:{}", c.line);
    let trailing = c.text.split_once(" #").map(|(_, t)| t).unwrap_or("");
    let comment = format!("{}{trailing}", c.comment);
    // The HTTP statuses the comment names.
    let statuses: Vec<u16> = regex::Regex::new(r"\b[1-5][0-9]{2}\b")
        .unwrap()
        .find_iter(&comment)
        .filter_map(|m| m.as_str().parse().ok())
        .collect();
    let mut all = steps(&c.text);
    let n = all.len();
    let mut heredoc = c.heredoc;
    for (k, st) in all.drain(..).enumerate() {
        let mut verdict = classify_step(&st, page);
        if st.background && verdict == Verdict::Run {
            verdict = Verdict::Unknown("a command in the background that is not a server".into());
        }
        let seg = &st.segs[0];
        let mut exec = st.text.clone();
        if let Some(h) = heredoc.as_ref().filter(|h| !h.quoted) {
            let mut substs = Vec::new();
            collect_substs(&h.body, &mut substs);
            let inner = combine(substs.iter().flat_map(|t| {
                steps(t)
                    .iter()
                    .map(|s| classify_step(s, page))
                    .collect::<Vec<_>>()
            }));
            if verdict == Verdict::Run && inner != Verdict::Run {
                verdict = inner;
            }
        }
        match &mut verdict {
            Verdict::RunAs(other) => exec = other.clone(),
            Verdict::Daemon { port, .. } => {
                let first = seg.words[0].as_str();
                if first == "prometheus" && flag(&seg.words, "", "--web.listen-address").is_none() {
                    exec.push_str(" --web.listen-address=127.0.0.1:9090");
                }
                if exporter_name(first) && flag(&seg.words, "-a", "--address").is_none() {
                    exec = format!("DCGM_EXPORTER_LISTEN=127.0.0.1:{port} {exec}");
                }
            }
            _ => {}
        }
        let runs = matches!(
            verdict,
            Verdict::Run | Verdict::Daemon { .. } | Verdict::RunAs(_)
        );
        let first = seg.words.first().map(String::as_str).unwrap_or("");
        let port = match &verdict {
            Verdict::Daemon { port, .. } => Some(*port),
            Verdict::Skip(_) => skipped_server_port(&seg.words),
            _ => None,
        };
        if let Some(p) = port {
            page.servers.insert(p, (at.clone(), runs));
        }
        for s in &st.segs {
            page.writes.extend(s.writes.iter().cloned());
        }
        let is_curl_i = first == "curl"
            && seg
                .words
                .iter()
                .any(|w| ["-i", "--include", "-I", "--head"].contains(&w.as_str()));
        out.push(Planned {
            at: at.clone(),
            shown: st.text.clone(),
            exec,
            // The here document belongs to the step that opens it.
            heredoc: if st.text.contains("<<") {
                heredoc.take()
            } else {
                None
            },
            verdict,
            expect_fail: k + 1 == n && comment.contains("non-zero"),
            expect_status: if is_curl_i && statuses.len() == 1 {
                Some(statuses[0])
            } else {
                None
            },
            inline,
        });
    }
}

/// The local port a skipped server command would serve (`docker run -p 9400:9400`,
/// `kubectl port-forward … 9400:9400`), so that a `curl` of it is skipped too.
fn skipped_server_port(words: &[String]) -> Option<u16> {
    let forwards =
        words.iter().any(|w| w == "port-forward") || words.first().is_some_and(|w| w == "docker");
    if !forwards {
        return None;
    }
    words.iter().find_map(|w| {
        let (a, b) = w.split_once(':')?;
        (a.parse::<u16>().is_ok() && b.parse::<u16>().is_ok()).then(|| a.parse().unwrap())
    })
}

// ---------------------------------------------------------------------------------------------
// Running a page

/// Where and how a page runs.
struct Env {
    /// The private copy of the checkout the commands run in.
    page_dir: PathBuf,
    /// Results, outputs and the script.
    state: PathBuf,
    bin: PathBuf,
    tmp: PathBuf,
    ports: BTreeMap<u16, u16>,
}

/// A private copy of the checkout: links to the repository's entries, and a `target/` whose
/// `debug/` and `release/` hold the test's binary.
fn make_env(dir: &Path, helm: Option<&Path>) -> Env {
    let page_dir = dir.join("checkout");
    std::fs::create_dir_all(&page_dir).unwrap();
    for e in std::fs::read_dir(repo()).unwrap().flatten() {
        let name = e.file_name();
        if name == "target" || name == ".git" {
            continue;
        }
        std::os::unix::fs::symlink(e.path(), page_dir.join(&name)).unwrap();
    }
    for profile in ["debug", "release"] {
        let d = page_dir.join("target").join(profile);
        std::fs::create_dir_all(&d).unwrap();
        std::os::unix::fs::symlink(common::BIN, d.join("gpu-exporter")).unwrap();
    }
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(common::BIN, bin.join("gpu-exporter")).unwrap();
    if let Some(h) = helm {
        std::os::unix::fs::symlink(h, bin.join("helm")).unwrap();
    }
    let (state, tmp) = (dir.join("state"), dir.join("tmp"));
    std::fs::create_dir_all(&state).unwrap();
    std::fs::create_dir_all(&tmp).unwrap();
    let ports = DOC_PORTS
        .iter()
        .map(|&p| (p, common::free_port()))
        .collect();
    Env {
        page_dir,
        state,
        bin,
        tmp,
        ports,
    }
}

/// `text` with the page's substitutions: the docs' ports become the page's, `/tmp/` its own.
fn substitute(text: &str, env: &Env) -> String {
    let mut s = text.to_string();
    for (from, to) in &env.ports {
        let re = regex::Regex::new(&format!(r":{from}\b")).unwrap();
        s = re.replace_all(&s, format!(":{to}")).into_owned();
    }
    let re = regex::Regex::new(r"(^|[\s='(\x22:])/tmp/").unwrap();
    re.replace_all(&s, format!("${{1}}{}/", env.tmp.display()))
        .into_owned()
}

/// The page's bash script: each command that runs, its output to `state/out.N`, its exit
/// status and a server's readiness to `state/results`; servers stopped at the end.
fn script(plan: &[Planned], env: &Env) -> String {
    let mut s = String::from(SCRIPT_HEAD);
    s.push_str(&format!("cd '{}'\n", env.page_dir.display()));
    let mut inline_started = false;
    for (n, p) in plan.iter().enumerate() {
        let runs = matches!(
            p.verdict,
            Verdict::Run | Verdict::Daemon { .. } | Verdict::RunAs(_)
        );
        if !runs {
            continue;
        }
        if p.inline && !inline_started {
            s.push_str("__stop_all\n");
            inline_started = true;
        }
        if p.inline {
            s.push_str(&format!("cd '{}'\n", env.page_dir.display()));
        }
        let exec = substitute(&p.exec, env);
        let body = p
            .heredoc
            .as_ref()
            .map(|h| format!("\n{}{}", substitute(&h.body, env), h.delim));
        let body = body.unwrap_or_default();
        s.push_str(&format!("__cur {n}\n"));
        // A failure ends the page, whose later commands may need what failed; inline commands
        // stand alone.
        let on_fail = if p.inline { "true" } else { "exit 0" };
        match &p.verdict {
            Verdict::Daemon { port, ready } => {
                let port = env.ports.get(port).copied().unwrap_or(*port);
                s.push_str(&format!(
                    "__take {port}\n{exec} >\"$S/out.{n}\" 2>&1 &{body}\n__add {n} $! {port}\n__ready {n} $! {port} {ready} || {on_fail}\n"
                ));
                if p.inline {
                    s.push_str(&format!("__take {port}\n"));
                }
            }
            _ => {
                let ok = if p.expect_fail { "-ne" } else { "-eq" };
                s.push_str(&format!(
                    "{{ {exec}{body}\n}} >\"$S/out.{n}\" 2>&1 </dev/null\n__rc=$?; echo \"{n} rc $__rc\" >&3; [ \"$__rc\" {ok} 0 ] || {on_fail}\n"
                ));
            }
        }
    }
    s.push_str("__cur done\n");
    s
}

/// The helpers of every page's script (`$S` is its state folder).
const SCRIPT_HEAD: &str = r#"exec 3>>"$S/results"
declare -A __dn __dp __port
__cur() { printf '%s %s\n' "$1" "$(date +%s)" > "$S/current"; }
__add() { __dn[$1]=$1; __dp[$1]=$2; __port[$3]=$1; }
# Waits until the server answers on its port: 200 at the path, over HTTP or HTTPS, or a TLS
# port that asks for a client certificate.
__ready() {
  local code rc end=$((SECONDS + 30))
  while [ "$SECONDS" -lt "$end" ]; do
    if ! kill -0 "$2" 2>/dev/null; then wait "$2"; echo "$1 exited $?" >&3; unset '__dp[$1]'; return 1; fi
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$3$4")
    if [ "$code" = 200 ] && [ "$4" = /-/ready ]; then
      if __prometheus_ok "$3"; then echo "$1 ready" >&3; return 0; fi
    elif [ "$code" = 200 ]; then echo "$1 ready" >&3; return 0; fi
    if [ "$code" = 400 ]; then
      code=$(curl -sk -o /dev/null -w '%{http_code}' --max-time 2 "https://127.0.0.1:$3$4"); rc=$?
      if [ "$code" = 200 ] && [ "$4" = /-/ready ]; then
      if __prometheus_ok "$3"; then echo "$1 ready" >&3; return 0; fi
    elif [ "$code" = 200 ]; then echo "$1 ready" >&3; return 0; fi
      if [ "$code" = 000 ] && [ "$rc" != 7 ] && [ "$rc" != 28 ]; then echo "$1 ready" >&3; return 0; fi
    fi
    sleep 0.1
  done
  if [ "$4" = /-/ready ] && [ "$code" = 200 ]; then
    echo "$1 is ready, but a target is not up or rule_files loaded no rule within 30 s" >&3
  else
    echo "$1 never answered within 30 s" >&3
  fi
  return 1
}
# A Prometheus that runs as the page says: every target up, and rules loaded when its
# configuration names rule_files (a glob that matches nothing is no error to Prometheus).
__prometheus_ok() {
  local t
  t=$(curl -s --max-time 2 "http://127.0.0.1:$1/api/v1/targets?state=active")
  echo "$t" | grep -q '"health":"up"' || return 1
  echo "$t" | grep -q '"health":"\(down\|unknown\)"' && return 1
  if curl -s --max-time 2 "http://127.0.0.1:$1/api/v1/status/config" | grep -q rule_files; then
    curl -s --max-time 2 "http://127.0.0.1:$1/api/v1/rules" | grep -q '"groups":\[{' || return 1
  fi
  return 0
}
__stop() {
  local pid=${__dp[$1]}
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid"; echo "$1 stopped $?" >&3
  else wait "$pid"; echo "$1 had exited $? before it was stopped" >&3; fi
  unset '__dp[$1]'
}
# Stops the server an earlier command left on this port (as the reader would with Ctrl-C).
__take() { local n=${__port[$1]}; [ -n "$n" ] && __stop "$n"; unset '__port[$1]'; return 0; }
__stop_all() { local n; for n in "${!__dp[@]}"; do __stop "$n"; done; }
trap __stop_all EXIT
"#;

/// What happened to one command.
#[derive(Default, Clone)]
struct Outcome {
    rc: Option<i32>,
    ready: bool,
    /// `exited N`, `timeout`, `died N`.
    trouble: Option<String>,
}

/// Runs page `rel`'s plan; failures to `f`, one line per command to `lines`.
fn run_page(
    rel: &str,
    plan: &[Planned],
    helm: Option<&Path>,
    f: &mut Failures,
    lines: &mut Vec<String>,
) {
    let dir = tempfile::tempdir().unwrap();
    let env = make_env(dir.path(), helm);
    let text = script(plan, &env);
    let script_path = env.state.join("page.sh");
    std::fs::write(&script_path, &text).unwrap();
    let path = format!(
        "{}:{}",
        env.bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new("bash");
    cmd.arg(&script_path)
        .current_dir(&env.page_dir)
        .env("S", &env.state)
        .env("PATH", path)
        .env("GPU_EXPORTER_NVML_LIB", common::built_sim_lib())
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(env.state.join("script.log")).unwrap())
        .stderr(std::fs::File::create(env.state.join("script.err")).unwrap())
        .process_group(0);
    for (k, _) in std::env::vars() {
        if k.starts_with("DCGM_EXPORTER_")
            || (k.starts_with("GPU_EXPORTER_") && !k.starts_with("GPU_EXPORTER_SKIP"))
            || k == "NODE_NAME"
        {
            cmd.env_remove(k);
        }
    }
    cmd.env("GPU_EXPORTER_NVML_LIB", common::built_sim_lib());
    let mut child = cmd.spawn().unwrap();
    let pgid = child.id() as i32;
    let mut timed_out = None;
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        let cur = std::fs::read_to_string(env.state.join("current")).unwrap_or_default();
        let mut it = cur.split_whitespace();
        // The command running (`done`: the servers being stopped) and since when.
        if let (Some(n), Some(t)) = (
            it.next().map(|n| n.parse::<usize>().unwrap_or(usize::MAX)),
            it.next().and_then(|t| t.parse::<u64>().ok()),
        ) {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            if now.saturating_sub(t) > STEP_LIMIT.as_secs() {
                timed_out = Some(n);
                // SAFETY: kill(2) on the script's own process group, which this test created.
                unsafe { libc::kill(-pgid, libc::SIGKILL) };
                let _ = child.wait();
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: as above; whatever the script left running goes with its group.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let mut outcomes: BTreeMap<usize, Outcome> = BTreeMap::new();
    let results = std::fs::read_to_string(env.state.join("results")).unwrap_or_default();
    for l in results.lines() {
        let parts: Vec<&str> = l.split_whitespace().collect();
        let Some(n) = parts.first().and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let o = outcomes.entry(n).or_default();
        match parts.get(1).copied() {
            Some("rc") => o.rc = parts.get(2).and_then(|r| r.parse().ok()),
            Some("ready") => o.ready = true,
            Some("stopped") if parts.get(2) == Some(&"0") => {}
            Some("stopped") => {
                o.trouble = Some(format!(
                    "exited {} when stopped with SIGTERM",
                    parts.get(2).unwrap_or(&"?")
                ))
            }
            Some(_) => o.trouble = Some(parts[1..].join(" ")),
            None => {}
        }
    }
    let mut failed = false;
    if timed_out == Some(usize::MAX) {
        f.add(format!(
            "{rel}: its servers did not stop within {} s of SIGTERM",
            STEP_LIMIT.as_secs()
        ));
    }
    for (n, p) in plan.iter().enumerate() {
        let runs = matches!(
            p.verdict,
            Verdict::Run | Verdict::Daemon { .. } | Verdict::RunAs(_)
        );
        let shown = if !runs || substitute(&p.exec, &env) == p.shown {
            p.shown.clone()
        } else {
            format!(
                "{}  (run as: {})",
                p.shown,
                substitute(&p.exec, &env).replace(&env.tmp.display().to_string(), "$TMP")
            )
        };
        let kind = if p.inline { "inline " } else { "" };
        let (word, why) = match &p.verdict {
            Verdict::Skip(why) => ("skip", format!(" ({why})")),
            Verdict::Placeholder(ph) => (
                "skip",
                format!(" (placeholder {ph}: the reader fills it in)"),
            ),
            Verdict::Unknown(why) => {
                f.add(format!(
                    "{}: `{}`: not classified ({why}): give it a rule in tests/deploy/doc_commands.rs (`classify`)",
                    p.at, p.shown
                ));
                ("UNKNOWN", String::new())
            }
            _ => ("run ", String::new()),
        };
        if word != "run " {
            lines.push(format!("  {word} {kind}{}: {shown}{why}", p.at));
            continue;
        }
        let out = std::fs::read_to_string(env.state.join(format!("out.{n}"))).unwrap_or_default();
        let tail: String = {
            let v: Vec<&str> = out.lines().collect();
            v[v.len().saturating_sub(25)..].join("\n    ")
        };
        let o = outcomes.get(&n).cloned().unwrap_or_default();
        let problem = if failed {
            None
        } else if timed_out == Some(n) {
            Some(format!("still running after {} s", STEP_LIMIT.as_secs()))
        } else if let Verdict::Daemon { .. } = p.verdict {
            match (&o.trouble, o.ready) {
                (Some(t), _) => Some(format!("the server {t}")),
                (None, true) => None,
                (None, false) => Some("the server never answered".into()),
            }
        } else {
            match o.rc {
                None => Some("did not run".into()),
                Some(0) if p.expect_fail => Some("exited 0, where the page says it fails".into()),
                Some(rc) if rc != 0 && !p.expect_fail => Some(format!("exited {rc}")),
                _ => p.expect_status.and_then(|want| {
                    let got = out
                        .lines()
                        .find(|l| l.starts_with("HTTP/"))?
                        .split_whitespace()
                        .nth(1)?
                        .to_string();
                    (got != want.to_string())
                        .then(|| format!("answered {got}, where the page says {want}"))
                }),
            }
        };
        let state = if failed {
            "not run: an earlier command of the page failed".to_string()
        } else {
            match &p.verdict {
                Verdict::Daemon { .. } => "server, answered".into(),
                Verdict::RunAs(_) => "rendered".into(),
                _ if p.expect_fail => "failed as the page says".into(),
                _ => "ok".into(),
            }
        };
        match problem {
            Some(problem) => {
                failed = !p.inline;
                lines.push(format!("  FAIL {kind}{}: {shown}", p.at));
                f.add(format!(
                    "{}: `{}`: {problem}; its output:\n    {tail}",
                    p.at, shown
                ));
            }
            None => lines.push(format!("  {word} {kind}{}: {shown} [{state}]", p.at)),
        }
    }
    if std::env::var_os("DOC_COMMANDS_KEEP").is_some() {
        let kept = dir.keep();
        lines.push(format!("  (kept {} for {rel})", kept.display()));
    }
}

// ---------------------------------------------------------------------------------------------
// The test

/// Runs the README's and the docs' example commands that can run here; see the file's header.
#[test]
pub(crate) fn doc_commands_run_as_written() {
    let started = Instant::now();
    let helm = find_tool("HELM", "helm", "target/tools/helm/bin/helm");
    let mut f = Failures::default();
    let mut plans = Vec::new();
    for rel in pages() {
        let text = std::fs::read_to_string(repo().join(&rel)).unwrap();
        let plan = plan_page(&rel, &text, &mut f);
        if !plan.is_empty() {
            plans.push((rel, plan));
        }
    }
    // The tools the runnable commands need, found before anything runs.
    let mut missing = BTreeSet::new();
    for (_, plan) in &mut plans {
        for p in plan.iter_mut() {
            if !matches!(
                p.verdict,
                Verdict::Run | Verdict::Daemon { .. } | Verdict::RunAs(_)
            ) {
                continue;
            }
            for tool in tools_of(p) {
                if tool == "helm" && helm.is_some()
                    || BUILTINS.contains(&tool.as_str())
                    || exporter_name(&tool)
                {
                    continue;
                }
                if find_tool("", &tool, "").is_some() {
                    continue;
                }
                let skip_env = match tool.as_str() {
                    "helm" => "GPU_EXPORTER_SKIP_HELM",
                    "promtool" | "prometheus" | "amtool" => "GPU_EXPORTER_SKIP_PROMETHEUS",
                    _ => "",
                };
                if !skip_env.is_empty() && std::env::var(skip_env).as_deref() == Ok("1") {
                    p.verdict = Verdict::Skip(format!("{tool} not found and {skip_env}=1"));
                } else {
                    missing.insert(tool);
                }
            }
        }
    }
    if !missing.is_empty() {
        let names: Vec<String> = missing
            .iter()
            .map(|t| match t.as_str() {
                "htpasswd" => "htpasswd (Debian apache2-utils)".into(),
                "promtool" | "prometheus" => format!("{t} (Debian prometheus)"),
                "amtool" => "amtool (Debian prometheus-alertmanager)".into(),
                "helm" => "helm (`eval \"$(bash scripts/deploy-tools.sh)\"`)".into(),
                other => other.to_string(),
            })
            .collect();
        panic!(
            "doc commands: not found on PATH: {} (scripts/test.sh installs them)",
            names.join(", ")
        );
    }
    let queue = std::sync::Mutex::new(plans.iter().collect::<Vec<_>>());
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for _ in 0..WORKERS {
            sc.spawn(|| {
                loop {
                    let Some((rel, plan)) = queue.lock().unwrap().pop() else {
                        break;
                    };
                    let mut pf = Failures::default();
                    let mut lines = Vec::new();
                    run_page(rel, plan, helm.as_deref(), &mut pf, &mut lines);
                    results.lock().unwrap().push((rel.clone(), pf, lines));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.0.cmp(&b.0));
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    let mut report = Vec::new();
    for (_, pf, lines) in results {
        f.0.extend(pf.0);
        for l in &lines {
            let word = l.split_whitespace().next().unwrap_or("");
            let key = match word {
                "run" if l.contains("[rendered]") => "rendered as helm template",
                "run" => "ran",
                "skip" if l.contains("(placeholder ") => "placeholders (skipped)",
                "skip" => "skipped by rule",
                "FAIL" => "failed",
                "UNKNOWN" => "unclassified",
                _ => "other",
            };
            *counts.entry(key).or_default() += 1;
        }
        report.extend(lines);
    }
    let summary: Vec<String> = counts.iter().map(|(k, v)| format!("{v} {k}")).collect();
    say(&format!(
        "doc commands: {} in {} pages, in {:.1} s:\n{}",
        summary.join(", "),
        plans.len(),
        started.elapsed().as_secs_f64(),
        report.join("\n")
    ));
    f.finish("the docs' example commands");
}

/// The commands a planned step runs (first words of its simple commands, substitutions and
/// here document included).
fn tools_of(p: &Planned) -> Vec<String> {
    // A server's readiness is asked with curl.
    let mut out = match p.verdict {
        Verdict::Daemon { .. } => vec!["curl".to_string()],
        _ => Vec::new(),
    };
    let mut texts = vec![p.exec.clone()];
    if let Some(h) = p.heredoc.as_ref().filter(|h| !h.quoted) {
        collect_substs(&h.body, &mut texts);
    }
    while let Some(t) = texts.pop() {
        for st in steps(&t) {
            texts.extend(st.substs.iter().cloned());
            let mut segs: Vec<&Simple> = st.segs.iter().collect();
            while let Some(s) = segs.pop() {
                for sub in &s.sub {
                    texts.push(sub.text.clone());
                }
                if let Some(w) = s.words.first() {
                    out.push(w.clone());
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The rules themselves

fn verdict_of(line: &str, page: &PageState) -> Verdict {
    classify_step(&steps(line)[0], page)
}

/// The classification is strict: an unknown command fails, a runnable one runs, a cluster's is
/// skipped with its reason, an install of the chart renders, a placeholder is named.
#[test]
fn classification_runs_what_can_run_and_names_every_skip() {
    let empty = PageState::default();
    assert!(matches!(
        verdict_of("rm -rf deploy", &empty),
        Verdict::Unknown(_)
    ));
    assert!(matches!(
        verdict_of("bash scripts/new.sh", &empty),
        Verdict::Unknown(_)
    ));
    assert!(matches!(
        verdict_of("kubectl apply -f x.yaml", &empty),
        Verdict::Skip(_)
    ));
    assert!(matches!(
        verdict_of("gpu-exporter check --output json", &empty),
        Verdict::Skip(_)
    ));
    assert_eq!(
        verdict_of("gpu-exporter check --simulate h100-mig -k", &empty),
        Verdict::Run
    );
    assert_eq!(
        verdict_of(
            "./target/release/gpu-exporter --simulate incidents -a 127.0.0.1:9411 &",
            &empty
        ),
        Verdict::Daemon {
            port: 9411,
            ready: "/ready"
        }
    );
    assert_eq!(
        verdict_of(
            "promtool check rules alerts/gpu-exporter.rules.yaml   # then add it",
            &empty
        ),
        Verdict::Run
    );
    assert_eq!(
        verdict_of(
            "helm upgrade gpu-exporter deploy/helm/gpu-exporter -n x --reuse-values --set a=b",
            &empty
        ),
        Verdict::RunAs(format!(
            "helm template gpu-exporter deploy/helm/gpu-exporter -n x --set a=b --kube-version {KUBE_VERSION}"
        ))
    );
    assert!(matches!(
        verdict_of(
            "helm install gpu-exporter deploy/helm/gpu-exporter -f mine.yaml",
            &empty
        ),
        Verdict::Skip(_)
    ));
    assert!(matches!(
        verdict_of(
            "helm upgrade gpu-operator nvidia/gpu-operator --set a=b",
            &empty
        ),
        Verdict::Skip(_)
    ));
    assert_eq!(
        verdict_of("gpu-exporter --simulate SCENARIO [flags]", &empty),
        Verdict::Placeholder("[flags]".into())
    );
    assert_eq!(
        verdict_of("gpu-exporter probe http://127.0.0.1:PORT/ready", &empty),
        Verdict::Placeholder("PORT".into())
    );
    assert!(matches!(
        verdict_of("curl -s localhost:9400/metrics | head", &empty),
        Verdict::Unknown(_)
    ));
    let mut page = PageState::default();
    page.servers.insert(9400, ("x.md:1".into(), true));
    assert_eq!(
        verdict_of("curl -s localhost:9400/metrics | head", &page),
        Verdict::Run
    );
    page.servers.insert(9400, ("x.md:1".into(), false));
    assert!(matches!(
        verdict_of("curl -s localhost:9400/metrics", &page),
        Verdict::Skip(_)
    ));
    assert!(matches!(
        verdict_of("(cd /tmp/x && python3 benches/fleet.py)", &empty),
        Verdict::Skip(_)
    ));
    assert!(matches!(
        verdict_of("cat > web.yml $(rm -rf x)", &empty),
        Verdict::Unknown(_)
    ));
}

/// Blocks, commands, here documents, inline spans, and text blocks holding commands.
#[test]
fn markdown_gives_the_commands_and_flags_commands_in_text_blocks() {
    let md = "# t\n\nRun `gpu-exporter check --simulate a100-l4 -k` or\n`--simulate incidents\n-k`.\n\n   ```sh\n   # a comment\n   cat > a <<EOF\n   x: $(echo 1)\n   EOF\n   helm template r deploy/helm/gpu-exporter \\\n     -f v.yaml > out.yaml\n   ```\n\n```text\ncurl localhost:1/x\n```\n\n```weird\n```\n";
    let (bs, prose) = blocks(md);
    assert_eq!(bs.len(), 3);
    let cmds = block_commands(&bs[0]);
    assert_eq!(cmds.len(), 2);
    assert_eq!(cmds[0].comment, "# a comment\n");
    let h = cmds[0].heredoc.as_ref().unwrap();
    assert_eq!(
        (h.body.as_str(), h.delim.as_str(), h.quoted),
        ("x: $(echo 1)\n", "EOF", false)
    );
    assert_eq!(
        cmds[1].text,
        "helm template r deploy/helm/gpu-exporter -f v.yaml > out.yaml"
    );
    assert_eq!(
        inline_commands(&prose),
        vec![
            (3, "gpu-exporter check --simulate a100-l4 -k".to_string()),
            (4, "gpu-exporter --simulate incidents -k".to_string())
        ]
    );
    let mut f = Failures::default();
    plan_page("x.md", md, &mut f);
    assert_eq!(f.0.len(), 2, "{:?}", f.0);
    let st =
        steps("mkdir -p /tmp/w && cd /tmp/w; gpu-exporter --simulate -a :9 & curl -s x | head");
    let texts: Vec<(&str, bool)> = st.iter().map(|s| (s.text.as_str(), s.background)).collect();
    assert_eq!(
        texts,
        vec![
            ("mkdir -p /tmp/w", false),
            ("cd /tmp/w", false),
            ("gpu-exporter --simulate -a :9", true),
            ("curl -s x | head", false)
        ]
    );
}
