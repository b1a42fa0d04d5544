//! The Dockerfile, checked without building it: its instructions and stages parsed, COPY
//! sources against the tree and `.dockerignore`, the runtime stage's user and entrypoint,
//! and the builder's Rust and glibc versions.

use super::*;

// ---------------------------------------------------------------------------------------------
// The Dockerfile, checked without building it
// ---------------------------------------------------------------------------------------------

/// One instruction, continuation lines joined, with the line it starts on.
#[derive(Debug, Clone)]
pub(crate) struct Instr {
    pub(crate) line: usize,
    pub(crate) keyword: String,
    pub(crate) args: String,
}

/// One build stage.
#[derive(Debug)]
pub(crate) struct Stage {
    /// The base image, build arguments substituted.
    pub(crate) base: String,
    pub(crate) name: Option<String>,
    pub(crate) instrs: Vec<Instr>,
    /// The stage's build arguments (declared in the stage) with their defaults.
    pub(crate) args: BTreeMap<String, String>,
}

impl Stage {
    pub(crate) fn all(&self, keyword: &str) -> impl Iterator<Item = &Instr> {
        self.instrs.iter().filter(move |i| i.keyword == keyword)
    }

    pub(crate) fn subst(&self, s: &str) -> String {
        substitute(s, &self.args)
    }
}

/// A parsed COPY: flags, sources, destination.
#[derive(Debug)]
pub(crate) struct Copy {
    pub(crate) line: usize,
    pub(crate) from: Option<String>,
    pub(crate) sources: Vec<String>,
    pub(crate) dest: String,
}

impl Copy {
    /// Where source `src` lands.
    pub(crate) fn target_of(&self, src: &str) -> String {
        if self.dest.ends_with('/') {
            format!("{}{}", self.dest, src.rsplit('/').next().unwrap_or(src))
        } else {
            self.dest.clone()
        }
    }
}

pub(crate) fn read(rel: &str) -> String {
    fs::read_to_string(Path::new(ROOT_DIR).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Instructions of a Dockerfile: comments and blank lines dropped, `\` continuations joined.
pub(crate) fn instructions(text: &str) -> Vec<Instr> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (n, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (body, continues) = match trimmed.strip_suffix('\\') {
            Some(b) => (b.trim_end(), true),
            None => (trimmed, false),
        };
        let (line, mut acc) = pending.take().unwrap_or((n + 1, String::new()));
        if !acc.is_empty() {
            acc.push(' ');
        }
        acc.push_str(body);
        if continues {
            pending = Some((line, acc));
            continue;
        }
        let (kw, rest) = acc.split_once(char::is_whitespace).unwrap_or((&acc, ""));
        out.push(Instr {
            line,
            keyword: kw.to_ascii_uppercase(),
            args: rest.trim().to_owned(),
        });
    }
    assert!(
        pending.is_none(),
        "the Dockerfile ends inside a continuation"
    );
    out
}

/// `${NAME}` and `$NAME` replaced from `vars`; an unknown name fails the test.
pub(crate) fn substitute(s: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(b) = after.strip_prefix('{') {
            let end = b.find('}').expect("closed ${");
            (&b[..end], &b[end + 1..])
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        let v = vars
            .get(name)
            .unwrap_or_else(|| panic!("${name} is not a build argument with a default in {s}"));
        out.push_str(v);
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// `NAME=default` of an ARG line (no default: inherits the global one).
pub(crate) fn arg_decl(args: &str, global: &BTreeMap<String, String>) -> (String, String) {
    match args.split_once('=') {
        Some((k, v)) => (
            k.trim().to_owned(),
            substitute(v.trim().trim_matches('"'), global),
        ),
        None => {
            let k = args.trim().to_owned();
            let v = global.get(&k).cloned().unwrap_or_default();
            (k, v)
        }
    }
}

/// The stages of the repository's Dockerfile.
pub(crate) fn stages() -> Vec<Stage> {
    let mut global = BTreeMap::new();
    let mut stages: Vec<Stage> = Vec::new();
    for i in instructions(&read("Dockerfile")) {
        match (i.keyword.as_str(), stages.last_mut()) {
            ("ARG", None) => {
                let (k, v) = arg_decl(&i.args, &global);
                global.insert(k, v);
            }
            ("FROM", _) => {
                let words: Vec<&str> = i
                    .args
                    .split_whitespace()
                    .filter(|w| !w.starts_with("--"))
                    .collect();
                let name = match words.as_slice() {
                    [_] => None,
                    [_, kw, name] if kw.eq_ignore_ascii_case("as") => Some((*name).to_owned()),
                    _ => panic!("Dockerfile:{}: FROM {}", i.line, i.args),
                };
                stages.push(Stage {
                    base: substitute(words[0], &global),
                    name,
                    instrs: Vec::new(),
                    args: BTreeMap::new(),
                });
            }
            ("ARG", Some(stage)) => {
                let (k, v) = arg_decl(&i.args, &global);
                stage.args.insert(k, v);
                stage.instrs.push(i);
            }
            (_, Some(stage)) => stage.instrs.push(i),
            (kw, None) => panic!("Dockerfile:{}: {kw} before the first FROM", i.line),
        }
    }
    assert!(
        stages.len() >= 2,
        "a multi-stage build: {} stage(s)",
        stages.len()
    );
    stages
}

/// The stage a build without `--target` produces: the last one, or, when the last is only
/// `FROM <an earlier stage>` with no instruction of its own, that stage (followed the same way).
pub(crate) fn default_stage(stages: &[Stage]) -> &Stage {
    let mut stage = stages.last().expect("a stage");
    while stage.instrs.is_empty()
        && let Some(named) = stages
            .iter()
            .find(|s| s.name.as_deref() == Some(stage.base.as_str()))
    {
        stage = named;
    }
    stage
}

/// A JSON array argument (exec form), or `None` for the shell form.
pub(crate) fn json_array(args: &str) -> Option<Vec<String>> {
    args.trim_start()
        .starts_with('[')
        .then(|| serde_json::from_str(args).expect("a JSON array"))
}

pub(crate) fn copies(stage: &Stage) -> Vec<Copy> {
    stage
        .all("COPY")
        .map(|i| {
            let mut from = None;
            let mut words: Vec<String> = Vec::new();
            let args = stage.subst(&i.args);
            let mut rest = args.as_str();
            while let Some(flag) = rest.strip_prefix("--") {
                let (f, tail) = flag.split_once(char::is_whitespace).unwrap_or((flag, ""));
                if let Some(v) = f.strip_prefix("from=") {
                    from = Some(v.to_owned());
                }
                rest = tail.trim_start();
            }
            match json_array(rest) {
                Some(v) => words.extend(v),
                None => words.extend(rest.split_whitespace().map(str::to_owned)),
            }
            assert!(words.len() >= 2, "Dockerfile:{}: COPY {}", i.line, i.args);
            let dest = words.pop().unwrap();
            Copy {
                line: i.line,
                from,
                sources: words,
                dest,
            }
        })
        .collect()
}

/// `.dockerignore` as docker applies it: patterns in order, the last match wins, `!` re-
/// includes; a pattern that matches a parent directory matches everything below it.
struct DockerIgnore(Vec<(bool, String)>);

impl DockerIgnore {
    pub(crate) fn load() -> Self {
        let text =
            fs::read_to_string(Path::new(ROOT_DIR).join(".dockerignore")).unwrap_or_default();
        Self(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| match l.strip_prefix('!') {
                    Some(p) => (false, p.trim_matches('/').to_owned()),
                    None => (true, l.trim_matches('/').to_owned()),
                })
                .collect(),
        )
    }

    pub(crate) fn excluded(&self, path: &str) -> bool {
        let path = path.trim_matches('/');
        let parts: Vec<&str> = path.split('/').collect();
        let mut excluded = false;
        for (exclude, pattern) in &self.0 {
            let pat: Vec<&str> = pattern.split('/').collect();
            // The path itself or any parent directory.
            let hit = (1..=parts.len()).any(|n| {
                n == pat.len()
                    && parts[..n]
                        .iter()
                        .zip(&pat)
                        .all(|(name, p)| glob_segment(p, name))
            });
            if hit {
                excluded = *exclude;
            }
        }
        excluded
    }
}

/// One path segment against a pattern segment with `*` and `?` (Go's filepath.Match without
/// character classes).
pub(crate) fn glob_segment(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// Every file under `rel` (itself if it is a file), relative to the repository root.
pub(crate) fn files_under(rel: &str) -> Vec<String> {
    let root = Path::new(ROOT_DIR);
    let mut out = Vec::new();
    let mut todo = vec![root.join(rel)];
    while let Some(p) = todo.pop() {
        if p.is_dir() {
            for e in fs::read_dir(&p).unwrap() {
                todo.push(e.unwrap().path());
            }
        } else {
            out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
        }
    }
    out
}

pub(crate) fn cargo_toml() -> toml::Table {
    read("Cargo.toml").parse().unwrap()
}

/// Every file a COPY takes from the build context exists in the repository and is not left
/// out of the context by `.dockerignore`; what the runtime stage copies from the builder is
/// what the builder's `cargo build` produces.
#[test]
pub(crate) fn dockerfile_copies_only_files_that_exist_and_reach_the_build_context() {
    let ignore = DockerIgnore::load();
    let stages = stages();
    let mut checked = 0;
    for stage in &stages {
        for c in copies(stage) {
            if c.from.is_some() {
                continue;
            }
            for src in &c.sources {
                assert!(
                    !src.contains(['*', '?', '[']),
                    "Dockerfile:{}: spell out {src}",
                    c.line
                );
                let rel = src.trim_start_matches("./");
                assert!(
                    Path::new(ROOT_DIR).join(rel).exists(),
                    "Dockerfile:{}: COPY source {src} does not exist",
                    c.line
                );
                let files = files_under(rel);
                assert!(!files.is_empty(), "Dockerfile:{}: {src} is empty", c.line);
                for f in files {
                    assert!(
                        !ignore.excluded(&f),
                        "Dockerfile:{}: {f} is excluded by .dockerignore",
                        c.line
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 0);
    // The large and private parts of the checkout stay out of the context.
    for f in [
        "target/release/gpu-exporter",
        ".git/HEAD",
        "tests/privileges/main.rs",
    ] {
        assert!(ignore.excluded(f), ".dockerignore should leave out {f}");
    }

    // COPY --from=<builder>: the builder's release binary, built there.
    let bins: Vec<String> = cargo_toml()["bin"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap().to_owned())
        .collect();
    let runtime = default_stage(&stages);
    let from_builder: Vec<Copy> = copies(runtime)
        .into_iter()
        .filter(|c| c.from.is_some())
        .collect();
    assert_eq!(from_builder.len(), 1, "one COPY --from: {from_builder:?}");
    let c = &from_builder[0];
    let builder = stages
        .iter()
        .find(|s| s.name.as_deref() == c.from.as_deref())
        .unwrap_or_else(|| panic!("no stage named {:?}", c.from));
    let workdir = builder
        .all("WORKDIR")
        .last()
        .map(|i| builder.subst(&i.args))
        .expect("the builder sets WORKDIR");
    let build = builder
        .all("RUN")
        .map(|i| i.args.clone())
        .find(|r| r.contains("cargo build"))
        .expect("the builder runs cargo build");
    for flag in [
        "--release",
        "--locked",
        "--no-default-features",
        "-p gpu-exporter",
        "--bin gpu-exporter",
    ] {
        assert!(build.contains(flag), "cargo build {flag}: {build}");
    }
    assert!(bins.contains(&"gpu-exporter".to_owned()), "{bins:?}");
    // The same step moves the binary out of target/ to what the runtime copies, and removes
    // target/: a layer cache that kept about 1 GB of build output per build filled the CI
    // machine's disk.
    let dir = workdir.trim_end_matches('/');
    assert_eq!(c.sources, vec![format!("{dir}/gpu-exporter")]);
    let steps: Vec<&str> = build.split("&&").map(str::trim).collect();
    assert_eq!(
        steps[1..],
        [
            format!("mv target/release/gpu-exporter {dir}/gpu-exporter"),
            "rm -rf target".to_owned()
        ],
        "the build step: {build}"
    );
}

/// The runtime stage runs the exporter as the numeric non-root user the chart expects, from
/// the entrypoint the chart expects, with the counters files at dcgm-exporter's paths and the
/// environment the NVIDIA container toolkit reads.
#[test]
pub(crate) fn dockerfile_runtime_stage_is_non_root_and_runs_the_exporter() {
    let stages = stages();
    let runtime = default_stage(&stages);

    // USER: numeric (Kubernetes' runAsNonRoot cannot verify a name) and not root.
    let user = runtime
        .all("USER")
        .last()
        .map(|i| runtime.subst(&i.args))
        .expect("the runtime stage sets USER");
    let ids: Vec<u32> = user
        .split(':')
        .map(|p| {
            p.parse()
                .unwrap_or_else(|_| panic!("USER {user}: numeric uid:gid"))
        })
        .collect();
    assert_eq!(ids, vec![NONROOT, NONROOT], "USER {user}");

    // ENTRYPOINT, exec form, and the binary copied there.
    let entry = runtime.all("ENTRYPOINT").last().expect("ENTRYPOINT");
    assert_eq!(
        json_array(&entry.args),
        Some(vec![ENTRYPOINT.to_owned()]),
        "ENTRYPOINT {}",
        entry.args
    );
    let cs = copies(runtime);
    let landed: BTreeMap<String, String> = cs
        .iter()
        .flat_map(|c| c.sources.iter().map(move |s| (c.target_of(s), s.clone())))
        .collect();
    assert!(
        landed.contains_key(ENTRYPOINT),
        "nothing is copied to {ENTRYPOINT}: {landed:?}"
    );
    // The chart, where it exists, names no other binary, and its non-root runAsUser is the
    // image's user.
    let chart = Path::new(ROOT_DIR).join("deploy/helm/gpu-exporter");
    if chart.is_dir() {
        let mut templates = String::new();
        for f in files_under("deploy/helm/gpu-exporter") {
            let text = read(&f);
            for (i, _) in text.match_indices("/usr/bin/") {
                assert!(
                    text[i..].starts_with(ENTRYPOINT),
                    "{f} names a binary other than {ENTRYPOINT}"
                );
            }
            if f.contains("/templates/") {
                templates.push_str(&text);
            }
        }
        assert!(
            templates.contains(&format!("\"runAsUser\" {NONROOT}"))
                || templates.contains(&format!("runAsUser: {NONROOT}")),
            "the chart's templates set runAsUser {NONROOT}, the image's USER"
        );
    }

    // Counters at dcgm-exporter's paths: -f's default, and the file the GPU Operator's
    // DaemonSet names in DCGM_EXPORTER_COLLECTORS.
    let dir = Path::new(gpu_exporter::config::DEFAULT_COLLECTORS)
        .parent()
        .unwrap()
        .display()
        .to_string();
    for (file, at) in [
        (
            "counters/default-counters.csv",
            gpu_exporter::config::DEFAULT_COLLECTORS.to_owned(),
        ),
        (
            "counters/dcp-metrics-included.csv",
            format!("{dir}/dcp-metrics-included.csv"),
        ),
        ("counters/recommended.csv", format!("{dir}/recommended.csv")),
    ] {
        assert_eq!(
            landed.get(&at).map(String::as_str),
            Some(file),
            "{file} at {at}"
        );
    }

    // The port, and what the toolkit reads.
    let exposed: Vec<String> = runtime
        .all("EXPOSE")
        .flat_map(|i| {
            i.args
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        exposed.iter().any(|p| p == "9400" || p == "9400/tcp"),
        "{exposed:?}"
    );
    let env: BTreeMap<String, String> = runtime
        .all("ENV")
        .flat_map(|i| {
            i.args
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        env.get("NVIDIA_VISIBLE_DEVICES").map(String::as_str),
        Some("all")
    );
    let caps = env
        .get("NVIDIA_DRIVER_CAPABILITIES")
        .expect("NVIDIA_DRIVER_CAPABILITIES");
    assert!(
        caps.split(',').any(|c| c == "utility"),
        "NVML needs utility: {caps}"
    );
    assert!(
        !env.contains_key("NVIDIA_MIG_MONITOR_DEVICES"),
        "the toolkit refuses NVIDIA_MIG_MONITOR_DEVICES in a container without CAP_SYS_ADMIN"
    );

    // The version label follows Cargo.toml.
    let version = cargo_toml()["package"]["version"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(runtime.args.get("VERSION"), Some(&version), "ARG VERSION");
}

/// The builder's Rust is at least Cargo.toml's rust-version, and builder and runtime are the
/// same Debian release (the binary links the builder's glibc).
#[test]
pub(crate) fn dockerfile_builder_rust_is_new_enough_and_matches_the_runtime_glibc() {
    let stages = stages();
    let builder = stages
        .iter()
        .find(|s| s.base.contains("rust:"))
        .expect("a builder stage on the official rust image");
    let tag = builder.base.rsplit_once(':').unwrap().1;
    let (version, distro) = tag
        .split_once('-')
        .expect("rust:<version>-<debian release>");
    let parse = |v: &str| -> Vec<u32> {
        v.split('.')
            .map(|n| n.parse().unwrap_or_else(|_| panic!("version {v}")))
            .collect()
    };
    let needed = cargo_toml()["package"]["rust-version"]
        .as_str()
        .unwrap()
        .to_owned();
    let have = parse(version);
    let need = parse(&needed);
    assert!(
        have[..2] >= need[..2.min(need.len())],
        "builder Rust {version} < rust-version {needed}"
    );
    let runtime = default_stage(&stages);
    let debian = [("bookworm", "debian12"), ("trixie", "debian13")];
    let (_, suffix) = debian
        .iter()
        .find(|(name, _)| *name == distro)
        .unwrap_or_else(|| panic!("builder on an unknown Debian release {distro}"));
    assert!(
        runtime.base.contains(suffix),
        "builder on {distro}, runtime {} (want {suffix})",
        runtime.base
    );
}

/// The Dockerfile parser itself, on a sample with every construct it handles.
#[test]
pub(crate) fn dockerfile_parser_handles_continuations_args_and_ignore_patterns() {
    let text = "# c\nARG V=1.2\nFROM img:${V} AS b\nRUN a \\\n  # inner comment\n  && b\nCOPY --chown=1:1 x y /d/\n";
    let instrs = instructions(text);
    let kws: Vec<&str> = instrs.iter().map(|i| i.keyword.as_str()).collect();
    assert_eq!(kws, ["ARG", "FROM", "RUN", "COPY"]);
    assert_eq!(instrs[2].args, "a && b");
    assert_eq!(instrs[2].line, 4);
    let vars = BTreeMap::from([("V".to_owned(), "1.2".to_owned())]);
    assert_eq!(substitute("img:${V}-x $V", &vars), "img:1.2-x 1.2");
    assert!(glob_segment("*", "src"));
    assert!(glob_segment("*.csv", "a.csv"));
    assert!(!glob_segment("*.csv", "a.toml"));
    let ig = DockerIgnore(vec![
        (true, "*".into()),
        (false, "src".into()),
        (false, "crates/nvml-sim/Cargo.toml".into()),
    ]);
    assert!(ig.excluded("target/debug/x"));
    assert!(!ig.excluded("src/main.rs"));
    assert!(!ig.excluded("crates/nvml-sim/Cargo.toml"));
    assert!(ig.excluded("crates/nvml-sim/src/lib.rs"));
    let c = Copy {
        line: 1,
        from: None,
        sources: vec!["counters/a.csv".into()],
        dest: "/etc/x/".into(),
    };
    assert_eq!(c.target_of("counters/a.csv"), "/etc/x/a.csv");
}

/// The DCGM variant (`--target dcgm`) is the default image plus DCGM's client library, copied
/// from the DCGM image's stage, and nothing else; the default image carries no DCGM.
#[test]
pub(crate) fn dockerfile_dcgm_variant_adds_only_the_dcgm_client_library() {
    let stages = stages();
    let runtime = default_stage(&stages);
    assert_eq!(runtime.name.as_deref(), Some("runtime"));
    assert!(
        copies(runtime)
            .iter()
            .all(|c| c.sources.iter().all(|s| !s.contains("dcgm.so"))),
        "the default image copies no DCGM library"
    );
    let target = stages
        .iter()
        .find(|s| s.name.as_deref() == Some("dcgm"))
        .expect("a stage named dcgm");
    // The target runs no instruction of its own (scripts/image.sh's --label reaches only such a
    // stage in buildah 1.28); the stage it is built on adds the library.
    assert!(
        target.instrs.is_empty(),
        "the dcgm target has instructions: {:?}",
        target.instrs
    );
    let dcgm = stages
        .iter()
        .find(|s| s.name.as_deref() == Some(target.base.as_str()))
        .unwrap_or_else(|| panic!("no stage named {}", target.base));
    assert_eq!(
        dcgm.base, "runtime",
        "the DCGM variant builds on the default image"
    );
    let libs = stages
        .iter()
        .find(|s| s.name.as_deref() == Some("dcgm-libs"))
        .expect("a stage for the DCGM image");
    assert!(libs.base.contains("dcgm"), "{}", libs.base);
    let added = copies(dcgm);
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!(added[0].from.as_deref(), Some("dcgm-libs"));
    assert_eq!(
        added[0].sources,
        vec!["/usr/lib/x86_64-linux-gnu/libdcgm.so.4".to_owned()]
    );
    let others: Vec<_> = dcgm
        .instrs
        .iter()
        .filter(|i| !matches!(i.keyword.as_str(), "ARG" | "COPY"))
        .map(|i| i.keyword.clone())
        .collect();
    assert!(
        others.is_empty(),
        "the DCGM variant changes only files: {others:?}"
    );
}
