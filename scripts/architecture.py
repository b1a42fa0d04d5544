#!/usr/bin/env python3
"""The crate's structure rules, checked on every CI run (scripts/test.sh).

Every Rust file of the workspace is covered. For the library under src/ and each of the
workspace's other crates under `crates/*/src` (e.g. the NVML simulator), on the production part
of each file (the lines before the first `#[cfg(test)]` at the start of a line, comments
removed; see `strip_comments`):

1. No import cycle between files, and none between top-level modules (folders).
2. Layers (the library): a top-level module imports only from itself and from the modules
   listed before it in LAYERS. A top-level module that is not listed is an error, so a new one
   gets a place.
3. No production part over MAX_LINES lines of code: the lines not blank once comments (doc
   comments included) are removed. A line inside a multi-line string literal is code.
4. The binary, src/main.rs, is flag parsing, logging set-up and one call into the library: at
   most MAIN_MAX_LINES lines, and no `mod` of its own (its code cannot hide in binary-only
   modules).
5. Every .rs file of the repository (src/, tests/, benches/, crates/) starts with a `//!`
   header.
6. No tracked file points into the steering folder beside the checkout (users do not have it).
7. docs/architecture.md says what the code has:
   - its "## Layers" section lists exactly the LAYERS: the first ```text block (one layer per
     least-indented line, top first) and the `- **`layer`**` bullets (bottom first), each in
     LAYERS order;
   - every backticked path `a::b…` (optionally `crate::`-prefixed, optionally followed by `()`)
     whose first segment is a top-level module of src/ resolves. Segments are walked left to
     right: a lowercase segment with a module file (src/a/b.rs or src/a/b/mod.rs; src/a.rs or
     src/a/mod.rs for `a`) is a module; any other segment is an item, which must be defined in
     the module file reached so far (`struct|enum|fn|trait|type|const|static|mod|union <Name>`)
     or re-exported there (`pub use … <Name>`, `… as <Name>`, or a `pub use m::*` glob whose
     module defines it). A path followed by `()` names a function: its last segment must be a
     `fn` (or re-exported), never a module. What follows the first item of such a path is not
     checked;
   - every backticked `Type::member` whose type is defined in src/ (`Config::reader`,
     `FileMerge::fill`): a file that defines the type or has an `impl` of it has the member as
     a `fn`, a field, a variant or an associated const (a type src/ does not define, such as
     one a derive makes, is not checked);
   - every backticked file path with a folder and a known extension (`config/cli.rs`,
     `deploy/helm/gpu-exporter/values.yaml`) exists, from the repository's root or from src/.
   Each failure names the doc's line.

8. The validated `Config` is not changed after validation: in the layers above `config` (the
   only ones that may hold one: sim, daemon, check, probe) and the binary, no production code
   takes `&mut Config`, binds a `Config` mutably (`mut x: Config`, `let mut x =
   ….validate(…)`, `Config::from_args`), assigns to a field of one (`cfg.… =`, `config.… =`) or
   borrows one's field mutably (`cfg.….as_mut()`, `&mut cfg.…`).

An import is any `crate::a::b` path, a `super::` path, or a child module named by its parent
(`child::item`, `use child::…`); a `mod child;` declaration alone is not one. Test code is not
checked: it may use any layer.

`--self-test` runs the checker on small trees that break each rule and fails unless every one
is caught (and a clean tree passes).
"""

import os
import re
import subprocess
import sys
import tempfile

# Bottom to top. `main.rs` (the binary) sits above all of them.
LAYERS = [
    "base",
    "catalogue",
    "snapshot",
    "sources",
    "gpu",
    "dcgm",
    "attribution",
    "health",
    "exposition",
    "sampler",
    "notify",
    "serve",
    "config",
    "sim",
    "daemon",
    "check",
    "probe",
]
MAX_LINES = 600  # lines of code: comments and blank lines are not counted
MAIN_MAX_LINES = 150
# Split so that this file does not match itself.
STEERING = "../" + "shared/"


def production_part(text):
    """The lines before the first `#[cfg(test)]` at column 0."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("#[cfg(test)]"):
            return lines[:i]
    return lines


RAW_STRING_RE = re.compile(r'b?r(#*)"')


def strip_comments(src):
    """Removes comments (`//`, `///`, `//!`, and `/* */`, nested) and the contents of string
    literals (plain, byte and raw: `r"…"`, `r#"…"#`), keeping the line count and leaving a `"`
    on every line a string spans (so such a line is still code). Char literals are kept, and a
    quote in one (`'"'`) starts nothing; a lifetime (`'a`) is left as it is."""
    out = []
    i, n = 0, len(src)

    def string(j_open, j_end):
        # `"` on each line the literal spans: the contents go, the lines stay code.
        out.append('"' + '\n"' * src.count("\n", j_open, j_end) + '"')

    while i < n:
        c = src[i]
        ident_before = i > 0 and (src[i - 1].isalnum() or src[i - 1] == "_")
        if src.startswith("//", i):
            j = src.find("\n", i)
            i = n if j < 0 else j
        elif src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * src.count("\n", i, j))
            i = j
        elif c in "br" and not ident_before and RAW_STRING_RE.match(src, i):
            m = RAW_STRING_RE.match(src, i)
            close = '"' + m.group(1)
            j = src.find(close, m.end())
            j = n if j < 0 else j + len(close)
            string(i, j)
            i = j
        elif c == '"':
            j = i + 1
            while j < n and src[j] != '"':
                j += 2 if src[j] == "\\" else 1
            string(i, j)
            i = j + 1
        elif c == "'":
            # A char literal ('x', '"', '\'', '\u{1F600}'), else a lifetime or a label.
            if src.startswith("\\", i + 1):
                j = src.find("'", i + 3)
                j = n if j < 0 else j + 1
            elif i + 2 < n and src[i + 2] == "'":
                j = i + 3
            else:
                j = i + 1
            out.append(src[i:j])
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(lines):
    """The lines of code among `lines`: those not blank once comments are removed."""
    return sum(1 for line in strip_comments("\n".join(lines)).split("\n") if line.strip())


def module_of(rel, src="src"):
    """src/a/b.rs -> ('a','b'); src/a/mod.rs -> ('a',); src/lib.rs -> ()."""
    parts = rel[len(src) + 1:-len(".rs")].split("/")
    if parts[-1] in ("mod", "lib"):
        parts = parts[:-1]
    return tuple(parts)


def load_tree(root, src="src"):
    """The library crate's files below `src` (relative to root), without the binary."""
    files = {}
    for dirpath, _, names in os.walk(os.path.join(root, src)):
        for name in names:
            if name.endswith(".rs"):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                if rel == src + "/main.rs":
                    continue
                with open(full, encoding="utf-8") as f:
                    files[rel] = f.read()
    return files


def crate_sources(root):
    """The library's src/ first, then every workspace crate's crates/NAME/src."""
    out = ["src"]
    crates = os.path.join(root, "crates")
    if os.path.isdir(crates):
        for name in sorted(os.listdir(crates)):
            if os.path.isdir(os.path.join(crates, name, "src")):
                out.append(f"crates/{name}/src")
    return out


PATH_RE = re.compile(r"\b(crate|super|self)((?:::[A-Za-z_][A-Za-z0-9_]*)+|::\{)")


def group_paths(text, start):
    """Paths inside a `{…}` use-group starting at text[start] == '{'; nested groups flattened.
    `self` inside a group names the group's prefix itself (returned as '')."""
    out = []

    def parse(i, prefix):
        cur = ""
        while i < len(text):
            c = text[i]
            if c == "{":
                i = parse(i + 1, prefix + cur.strip().rstrip(":").strip())
                cur = ""
                continue
            if c in ",}":
                item = re.sub(r"\s+as\s+\w+\s*$", "", cur.strip())
                item = re.sub(r"\s+", "", item)
                if item and item != "*":
                    full = prefix if item == "self" else (prefix + "::" + item if prefix else item)
                    out.append(full)
                cur = ""
                if c == "}":
                    return i + 1
            else:
                cur += c
            i += 1
        return i

    def parse_top():
        parse(start + 1, "")

    parse_top()
    return [p.strip(":") for p in out]


def references(mod, code, modules):
    """(target module, line) for every import in `code` of module `mod`."""
    refs = []
    children = {m[-1] for m in modules if len(m) == len(mod) + 1 and m[: len(mod)] == mod}
    for m in PATH_RE.finditer(code):
        head, rest = m.group(1), m.group(2)
        line = code.count("\n", 0, m.start()) + 1
        if head == "crate":
            base = ()
        elif head == "super":
            base = mod[:-1]
            # super::super::…
            while rest.startswith("::super"):
                base = base[:-1]
                rest = rest[len("::super"):]
        else:
            base = mod
        if rest == "::{":
            tails = group_paths(code, m.end() - 1)
        else:
            tails = [rest[2:]]
        for tail in tails:
            segs = [s for s in tail.split("::") if s]
            target = resolve(base + tuple(segs), modules)
            if target is not None:
                refs.append((target, line))
    # A parent naming its child: `child::x` not preceded by `::` (already handled above).
    for child in children:
        for m in re.finditer(r"(?<![:\w])" + re.escape(child) + r"::", code):
            before = code[max(0, m.start() - 4): m.start()]
            if before.endswith("mod "):
                continue
            line = code.count("\n", 0, m.start()) + 1
            refs.append((mod + (child,), line))
    return refs


def resolve(path, modules):
    """The longest prefix of `path` that is a file module."""
    for k in range(len(path), -1, -1):
        if path[:k] in modules:
            return path[:k]
    return None


def sccs(graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return [c for c in out if len(c) > 1]


def name(mod):
    return "::".join(mod) if mod else "crate"


def check_crate(root, src, layers):
    """Cycles, sizes and (with `layers`) layer order of one crate's library files."""
    errors = []
    files = load_tree(root, src)
    modules = {module_of(rel, src): rel for rel in files}
    file_graph, top_graph, where = {}, {}, {}
    for rel, text in sorted(files.items()):
        mod = module_of(rel, src)
        prod = production_part(text)
        count = code_lines(prod)
        if count > MAX_LINES:
            errors.append(f"{rel}: {count} lines of production code (at most {MAX_LINES})")
        code = strip_comments("\n".join(prod))
        file_graph.setdefault(mod, set())
        for target, line in references(mod, code, modules):
            if target == mod or (target == () and mod != ()):
                continue
            file_graph[mod].add(target)
            where.setdefault((mod, target), f"{rel}:{line}")
            a, b = mod[:1], target[:1]
            if a and b and a != b:
                top_graph.setdefault(a[0], set()).add(b[0])
                where.setdefault((a[0], b[0]), f"{rel}:{line}")
    for what, graph, show in (("files", file_graph, name), ("modules", top_graph, str)):
        for comp in sccs(graph):
            edges = [
                f"{show(a)} -> {show(b)} ({where[(a, b)]})"
                for a in sorted(comp)
                for b in sorted(graph.get(a, ()))
                if b in comp
            ]
            errors.append(f"import cycle between {what} of {src}: " + "; ".join(edges))
    if layers is None:
        return errors
    tops = {m[0] for m in modules if m}
    for t in sorted(tops - set(layers)):
        errors.append(f"{src}/{t}: top-level module not placed in LAYERS (scripts/architecture.py)")
    for a, bs in sorted(top_graph.items()):
        for b in sorted(bs):
            if a in layers and b in layers and layers.index(b) > layers.index(a):
                errors.append(f"layer violation: {a} imports {b}, a higher layer ({where[(a, b)]})")
    return errors


def check_main(root):
    """The binary: thin (MAIN_MAX_LINES lines at most) and without modules of its own."""
    errors = []
    path = os.path.join(root, "src", "main.rs")
    if not os.path.isfile(path):
        return errors
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines = text.split("\n")
    if text.endswith("\n"):
        lines = lines[:-1]
    if len(lines) > MAIN_MAX_LINES:
        errors.append(
            f"src/main.rs: {len(lines)} lines (at most {MAIN_MAX_LINES}: flags, logging and one "
            "call into the library)"
        )
    code = strip_comments(text)
    for m in re.finditer(r"^\s*(?:pub\s+)?mod\s+\w+", code, re.M):
        line = code.count("\n", 0, m.start()) + 1
        errors.append(f"src/main.rs:{line}: declares a module; its code belongs in the library")
    return errors


DOC = "docs/architecture.md"
# A backticked `a::b…` path, optionally `crate::`-prefixed and followed by `()`.
DOC_PATH_RE = re.compile(r"^(?:crate::)?([a-z_][a-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)+)(\(\))?$")
ITEM_KINDS = r"(?:struct|enum|fn|trait|type|const|static|mod|union)"
DOC_NAMES_CHECKED = [0]  # for the summary line


def module_file(root, path):
    """The file of module `path` (a tuple) under src/, or None."""
    base = os.path.join(root, "src", *path)
    for cand in (base + ".rs", os.path.join(base, "mod.rs")):
        if os.path.isfile(cand):
            return cand
    return None


def defines(root, path, item, want_fn, seen=None):
    """Whether module `path` defines `item` (a `fn` only, with `want_fn`) or re-exports it with a
    `pub use` (a glob `pub use m::*` is followed into `m`)."""
    seen = seen or set()
    if path in seen:
        return False
    seen.add(path)
    f = module_file(root, path)
    if f is None:
        return False
    with open(f, encoding="utf-8") as fh:
        code = strip_comments(fh.read())
    kinds = "fn" if want_fn else ITEM_KINDS
    if re.search(r"\b" + kinds + r"\s+" + re.escape(item) + r"\b", code):
        return True
    for m in re.finditer(r"\bpub(?:\([^)]*\))?\s+use\s+([^;]+);", code):
        stmt = m.group(1)
        if re.search(r"\bas\s+" + re.escape(item) + r"\b", stmt):
            return True
        if re.search(r"(?<![\w])" + re.escape(item) + r"\b(?!\s*::)(?!\s+as\b)", stmt):
            return True
        g = re.match(r"^\s*((?:crate|self|super|\w+)(?:::\w+)*)::\*\s*$", stmt)
        if g:
            segs = g.group(1).split("::")
            if segs[0] == "crate":
                target = tuple(segs[1:])
            elif segs[0] == "super":
                target = path[:-1] + tuple(segs[1:])
            elif segs[0] == "self":
                target = path + tuple(segs[1:])
            else:
                target = path + tuple(segs)
            if defines(root, target, item, want_fn, seen):
                return True
    return False


def check_doc(root, layers):
    """docs/architecture.md against the code: its layer list, and every module path and item
    it names in backticks (see the module doc, rule 7)."""
    errors = []
    path = os.path.join(root, DOC)
    if not os.path.isfile(path):
        return [f"{DOC}: missing (the layers and where a change goes)"]
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    # The "## Layers" section: its first ```text block (top first) and its `- **`x`**` bullets.
    start = next((i for i, l in enumerate(lines) if l.strip() == "## Layers"), None)
    if start is None:
        return [f"{DOC}: no '## Layers' section"]
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    block, bullets, fence = [], [], None
    for i in range(start + 1, end):
        l = lines[i]
        if l.startswith("```"):
            if fence is None and not block:
                fence = "text"
                continue
            if fence == "text":
                fence = "done"
            continue
        if fence == "text" and l.strip():
            block.append((i + 1, l))
        m = re.match(r"^- \*\*`(\w+)`\*\*", l)
        if m:
            bullets.append((i + 1, m.group(1)))
    indent = min((len(l) - len(l.lstrip()) for _, l in block), default=0)
    listed = [(n, l.split()[0]) for n, l in block if len(l) - len(l.lstrip()) == indent]
    for what, found, want in (
        ("layer list", listed, list(reversed(layers))),
        ("layer descriptions", bullets, list(layers)),
    ):
        names = [x for _, x in found]
        at = found[0][0] if found else start + 1
        for n, x in found:
            if x not in layers:
                errors.append(f"{DOC}:{n}: the {what} names `{x}`, which is not in LAYERS")
        for x in want:
            if x not in names:
                errors.append(f"{DOC}:{at}: the {what} lacks the layer `{x}` (LAYERS)")
        kept = [x for x in names if x in want]
        if kept != [x for x in want if x in names]:
            errors.append(f"{DOC}:{at}: the {what} is not in LAYERS order ({' '.join(want)})")
    # Backticked paths, outside fenced blocks.
    tops = {os.path.splitext(n)[0] for n in os.listdir(os.path.join(root, "src"))} - {"lib", "main"}
    text, fenced = [], False
    for l in lines:
        if l.startswith("```"):
            fenced = not fenced
            text.append("")
        else:
            text.append("" if fenced else l)
    body = "\n".join(text)
    checked = 0
    for m in re.finditer(r"`([^`\n]+(?:\n[^`\n]+)*)`", body):  # a span ends at a blank line
        span = re.sub(r"\s+", "", m.group(1))
        p = DOC_PATH_RE.match(span)
        if not p:
            continue
        segs = p.group(1).split("::")
        if segs[0] not in tops:
            continue
        line = body.count("\n", 0, m.start()) + 1
        checked += 1
        want_fn = p.group(2) is not None
        mod = (segs[0],)
        if module_file(root, mod) is None:
            errors.append(f"{DOC}:{line}: `{span}`: no module file src/{segs[0]}.rs or src/{segs[0]}/mod.rs")
            continue
        for i, seg in enumerate(segs[1:], 1):
            last = i == len(segs) - 1
            if seg[0].islower() and not (last and want_fn) and module_file(root, mod + (seg,)):
                mod += (seg,)
                continue
            if not defines(root, mod, seg, want_fn and last):
                kind = "fn" if want_fn and last else "module or item"
                errors.append(
                    f"{DOC}:{line}: `{span}`: no {kind} `{seg}` in {os.path.relpath(module_file(root, mod), root)}"
                )
            break  # what follows an item (a method, a variant, a field) is not checked
    # Backticked files (`config/cli.rs`, `deploy/helm/gpu-exporter/values.yaml`): from the
    # repository's root, or from src/.
    for m in re.finditer(r"`([^`\n]+)`", body):
        span = m.group(1)
        if not DOC_FILE_RE.match(span):
            continue
        checked += 1
        if not any(os.path.exists(os.path.join(root, d, span)) for d in ("", "src")):
            line = body.count("\n", 0, m.start()) + 1
            errors.append(f"{DOC}:{line}: `{span}`: no such file (from the root or src/)")
    # Backticked `Type::member` (`Config::reader`, `Settings::validate`, `FileMerge::fill`):
    # the type is defined in src/, and a file that defines it or has an `impl` of it has the
    # member as a `fn`, a field, a variant or an associated const.
    sources = rust_sources(root)
    for m in re.finditer(r"`([A-Z][A-Za-z0-9_]*)::([A-Za-z_][A-Za-z0-9_]*)(\(\))?`", body):
        ty, member = m.group(1), m.group(2)
        homes = [c for c in sources.values() if re.search(
            r"\b(?:(?:struct|enum|trait|type)\s+" + ty + r"\b|impl(?:<[^>]*>)?\s+(?:[\w:]+\s+for\s+)?" + ty + r"\b)", c)]
        if not homes:
            continue  # not a type of ours (`Cli::command` comes from clap's derive, say)
        checked += 1
        member_re = re.compile(
            r"\bfn\s+" + member + r"\b|\bpub(?:\([^)]*\))?\s+" + member + r"\s*:|^\s*" + member
            + r"\s*(?:[,({]|=\s*\d)|\bconst\s+" + member + r"\b", re.M)
        if not any(member_re.search(c) for c in homes):
            line = body.count("\n", 0, m.start()) + 1
            errors.append(f"{DOC}:{line}: `{ty}::{member}`: {ty} has no fn, field, variant or const `{member}`")
    DOC_NAMES_CHECKED[0] = checked
    return errors


# A backticked file path: at least one folder and a known extension.
DOC_FILE_RE = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)+\.(?:rs|yaml|yml|tpl|md|py|sh|toml|json|csv|txt)$")


def rust_sources(root):
    """Every .rs file under src/, its text without comments, by path."""
    out = {}
    for dirpath, _, files in os.walk(os.path.join(root, "src")):
        for n in files:
            if n.endswith(".rs"):
                with open(os.path.join(dirpath, n), encoding="utf-8") as fh:
                    out[os.path.join(dirpath, n)] = strip_comments(fh.read())
    return out


FROZEN = [
    (re.compile(r"&\s*mut\s+(crate::config::)?Config\b"), "takes `&mut Config`"),
    (re.compile(r"\bmut\s+\w+\s*:\s*(crate::config::)?Config\b"), "binds a `Config` mutably"),
    (re.compile(r"\blet\s+mut\s+\w+\s*=[^;]*(\.validate\(|Config::from_args\()"), "binds a `Config` mutably"),
    (re.compile(r"\b(cfg|config)(\.\w+)+\s*(=[^=]|\+=|-=)"), "assigns to a field of the `Config`"),
    (re.compile(r"\b(cfg|config)(\.\w+)+\.as_mut\(\)|&\s*mut\s+(cfg|config)\."), "borrows a field of the `Config` mutably"),
]


def check_config_frozen(root):
    """Rule 8: above `config` (which the layer rule keeps every lower layer from importing),
    production code never changes a validated `Config`."""
    errors = []
    above = LAYERS[LAYERS.index("config") + 1:]
    files = {rel: text for rel, text in load_tree(root).items() if rel.split("/")[1].removesuffix(".rs") in above}
    main = os.path.join(root, "src", "main.rs")
    if os.path.isfile(main):
        with open(main, encoding="utf-8") as f:
            files["src/main.rs"] = f.read()
    for rel, text in sorted(files.items()):
        code = strip_comments("\n".join(production_part(text)))
        for n, line in enumerate(code.split("\n"), 1):
            for pattern, what in FROZEN:
                if pattern.search(line):
                    errors.append(f"{rel}:{n}: {what}: the configuration is settled by validation and never changed after")
    return errors


def check(root, tracked=None):
    errors = []
    for src in crate_sources(root):
        errors += check_crate(root, src, LAYERS if src == "src" else None)
    errors += check_main(root)
    errors += check_config_frozen(root)
    errors += check_doc(root, LAYERS)
    if tracked is None:
        tracked = [
            os.path.relpath(os.path.join(dp, n), root)
            for dp, _, ns in os.walk(root)
            for n in ns
        ]
    for rel in sorted(tracked):
        full = os.path.join(root, rel)
        if not os.path.isfile(full) or rel.endswith("Cargo.lock"):
            continue
        try:
            with open(full, encoding="utf-8") as f:
                text = f.read()
        except (UnicodeDecodeError, OSError):
            continue
        if rel.endswith(".rs") and not text.startswith("//!"):
            errors.append(f"{rel}: no `//!` header saying what the file owns")
        if STEERING in text:
            line = text[: text.index(STEERING)].count("\n") + 1
            errors.append(f"{rel}:{line}: points into {STEERING}, which users do not have")
    return errors


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def doc_text(layers, body):
    """A docs/architecture.md with `layers` (bottom first) in its layer list and bullets."""
    block = "".join(f"  {x}    what it is\n" for x in reversed(layers))
    bullets = "".join(f"- **`{x}`**: what it owns.\n" for x in layers)
    return f"# A\n\n## Layers\n\n```text\n{block}```\n\n{bullets}\n## More\n\n{body}\n"


def self_test():
    ok = True
    clean = {
        "src/lib.rs": "//! x\npub mod base;\npub mod gpu;\n",
        "src/base/mod.rs": "//! x\npub mod clock;\n",
        "src/base/clock.rs": "//! x\npub fn now() {}\n",
        "src/gpu/mod.rs": "//! x\npub mod text;\npub mod reader;\npub use text::f;\n",
        "src/gpu/text.rs": "//! x\nuse crate::base::clock::now;\npub fn f() { now() }\n",
        "src/gpu/reader.rs": "//! x\nuse super::text;\n#[cfg(test)]\nmod tests { use crate::gpu::f; }\n",
        "src/main.rs": "//! x\nfn main() { gpu::f() }\n",
        "crates/sim/src/lib.rs": "//! x\npub mod a;\n",
        "crates/sim/src/a.rs": "//! x\npub fn f() {}\n",
        DOC: doc_text(LAYERS, "`gpu::text` `gpu::f()` `crate::gpu::reader` `base::clock::now` `gpu::Text` `gpu/text.rs` `Text::new`"),
    }
    clean["src/gpu/mod.rs"] += "pub use text::Text;\n"
    clean["src/gpu/text.rs"] += "pub struct Text;\nimpl Text { pub fn new() -> Self { Text } }\n"
    broken = {
        "file cycle": {"src/gpu/text.rs": "//! x\nuse crate::gpu::reader::g;\n", "src/gpu/reader.rs": "//! x\nuse super::text::f;\npub fn g() {}\n"},
        "parent/child cycle": {"src/gpu/text.rs": "//! x\nuse crate::gpu::f;\n"},
        "grouped import cycle": {"src/gpu/text.rs": "//! x\nuse crate::{base::clock, gpu::{reader::g}};\n", "src/gpu/reader.rs": "//! x\nuse super::text::f;\npub fn g() {}\n"},
        "layer violation": {"src/base/clock.rs": "//! x\npub fn now() { crate::gpu::text::f() }\n"},
        "unplaced module": {"src/extra.rs": "//! x\n"},
        "too long": {"src/base/clock.rs": "//! x\n" + "fn a() {}\n" * (MAX_LINES + 1)},
        "too long by code between comments": {"src/base/clock.rs": "//! x\n" + "// c\n\nfn a() {}\n" * (MAX_LINES + 1)},
        "too long by a multi-line string": {"src/base/clock.rs": "//! x\nconst S: &str = \"\n" + "text\n" * MAX_LINES + "\";\n"},
        "layer violation after a raw string ending in a backslash": {"src/base/clock.rs": "//! x\npub fn now() {}\nconst P: &str = r\"C:\\\";\npub fn g() { crate::gpu::text::f() }\nconst Q: &str = \"\";\n"},
        "layer violation after char literals": {"src/base/clock.rs": "//! x\npub fn now() {}\nconst C: [char; 2] = ['\"', '\\'']; pub fn g() { crate::gpu::text::f() }\nconst Q: &str = \"\";\n"},
        "too long in another crate": {"crates/sim/src/lib.rs": "//! x\n" + "fn a() {}\n" * (MAX_LINES + 1)},
        "file cycle in another crate": {"crates/sim/src/lib.rs": "//! x\npub mod a;\npub mod b;\n", "crates/sim/src/a.rs": "//! x\nuse crate::b::g;\npub fn f() {}\n", "crates/sim/src/b.rs": "//! x\nuse crate::a::f;\npub fn g() {}\n"},
        "fat binary": {"src/main.rs": "//! x\n" + "fn a() {}\n" * MAIN_MAX_LINES},
        "binary with a module": {"src/main.rs": "//! x\nmod wiring;\nfn main() {}\n"},
        "binary without a header": {"src/main.rs": "fn main() {}\n"},
        "no header": {"src/base/clock.rs": "pub fn now() {}\n"},
        "steering pointer": {"docs/x.md": "see " + STEERING + "reference\n"},
        "doc: a layer left out": {DOC: doc_text(LAYERS[:-1], "")},
        "doc: a layer not in LAYERS": {DOC: doc_text(LAYERS + ["extra"], "")},
        "doc: layers out of order": {DOC: doc_text(LAYERS[1:] + LAYERS[:1], "")},
        "doc: no such module": {DOC: doc_text(LAYERS, "`gpu::nothing::X`")},
        "doc: no such item": {DOC: doc_text(LAYERS, "`gpu::reader::Text`")},
        "doc: a module named as a function": {DOC: doc_text(LAYERS, "`gpu::text()`")},
        "doc: no such file": {DOC: doc_text(LAYERS, "`gpu/none.rs`")},
        "doc: no such member of a type": {DOC: doc_text(LAYERS, "`Text::old`")},
        "config changed after validation (a field)": {"src/main.rs": "//! x\nfn main() { gpu::f(); cfg.hostname = None; }\n"},
        "config changed after validation (in daemon)": {"src/lib.rs": "//! x\npub mod base;\npub mod gpu;\npub mod daemon;\n", "src/daemon/mod.rs": "//! x\npub fn run(c: &mut Config) {}\n"},
        "config changed after validation (&mut)": {"src/main.rs": "//! x\nfn main(c: &mut Config) { gpu::f() }\n"},
        "config changed after validation (mut binding)": {"src/main.rs": "//! x\nfn main() { let mut c = s.validate(&site); }\n"},
        "config changed after validation (as_mut)": {"src/main.rs": "//! x\nfn main() { cfg.kubernetes.as_mut(); }\n"},
    }
    with tempfile.TemporaryDirectory() as d:
        for rel, text in clean.items():
            write(d, rel, text)
        errs = check(d)
        if errs:
            print("self-test: the clean tree failed:", errs)
            ok = False
    for what, change in broken.items():
        with tempfile.TemporaryDirectory() as d:
            for rel, text in {**clean, **change}.items():
                write(d, rel, text)
            errs = check(d)
            if not errs:
                print(f"self-test: '{what}' was not caught")
                ok = False
    # Comments and test code are not imports.
    with tempfile.TemporaryDirectory() as d:
        for rel, text in {**clean, "src/base/clock.rs": "//! x\n// crate::gpu::f\n/* crate::gpu::f */\npub fn now() {}\n#[cfg(test)]\nmod t { use crate::gpu::f; }\n"}.items():
            write(d, rel, text)
        errs = check(d)
        if errs:
            print("self-test: comments or test code counted as imports:", errs)
            ok = False
    # The size rule counts code: comments (doc comments too) and blank lines are free.
    with tempfile.TemporaryDirectory() as d:
        commented = "//! x\npub fn now() {}\n" + "/// doc\n// note\n\n/* a\nblock */\nfn a() {}\n" * (MAX_LINES - 1)
        for rel, text in {**clean, "src/base/clock.rs": commented}.items():
            write(d, rel, text)
        errs = check(d)
        if errs:
            print("self-test: a file over the limit only by comments failed:", errs)
            ok = False
    # What strip_comments keeps: (source, text that must remain, text that must go, code lines).
    for src, keep, gone, lines in (
        ("let c = '\"'; f();", "f();", None, 1),
        ("let c = ['\\'', '\\\\', '\\u{22}']; f();", "f();", None, 1),
        ('let s = r#"a "b" // c"#; g();', "g();", "// c", 1),
        ('let s = br##"x"# "##; g();', "g();", "x", 1),
        ("/// doc\n//! inner\nfn h() {}\n", "fn h() {}", "doc", 1),
        ("/* a /* nested */ still */ k();", "k();", "still", 1),
        ("fn f<'a>(x: &'a str) -> &'a str { x } // '\nfn g() {}", "fn g() {}", None, 2),
        ('let s = "a\nb\\\"\nc"; m();', "m();", "b", 3),
    ):
        got = strip_comments(src)
        if keep not in got or (gone and gone in got) or code_lines(src.split("\n")) != lines:
            print(f"self-test: strip_comments({src!r}) = {got!r} ({code_lines(src.split(chr(10)))} code lines, want {lines})")
            ok = False
    print("architecture self-test:", "ok" if ok else "FAILED")
    return ok


def main():
    if "--self-test" in sys.argv:
        return 0 if self_test() else 1
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    tracked = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.split()
    errors = check(root, tracked)
    for e in errors:
        print("architecture:", e)
    if errors:
        print(f"architecture: {len(errors)} problem(s)")
        return 1
    counts = ", ".join(f"{len(load_tree(root, src))} in {src}/" for src in crate_sources(root))
    print(
        f"architecture: ok ({counts}; src/main.rs; layers {' < '.join(LAYERS)}; "
        f"{DOC}: layer list and {DOC_NAMES_CHECKED[0]} code names)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
