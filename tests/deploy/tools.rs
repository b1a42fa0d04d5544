//! Finding helm, kubernetes-validate and promtool (or skipping loudly), running them, and
//! listing files.

use super::*;

// Tools, files and failures

pub(crate) fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `cmd`; its stdout on success, else an error with the command and both outputs.
pub(crate) fn run_ok(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out: Output = cmd
        .output()
        .map_err(|e| format!("{shown}: cannot run: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{shown} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr),
            stdout.chars().take(4000).collect::<String>()
        ))
    }
}

/// A tool: `$env`, else `name` in PATH, else `cached` under the repository (where
/// scripts/deploy-tools.sh puts it).
pub(crate) fn find_tool(env: &str, name: &str, cached: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env).filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let in_path = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    });
    in_path.or_else(|| Some(repo().join(cached)).filter(|p| p.is_file()))
}

pub(crate) fn tool_or_skip(env: &str, name: &str, cached: &str, test: &str) -> Option<PathBuf> {
    if let Some(p) = find_tool(env, name, cached) {
        return Some(p);
    }
    if std::env::var("GPU_EXPORTER_SKIP_HELM").as_deref() == Ok("1") {
        say(&format!(
            "\n*** SKIPPED {test}: {name} not found and GPU_EXPORTER_SKIP_HELM=1 ***\n"
        ));
        return None;
    }
    panic!(
        "{test}: {name} not found (${env}, PATH, {cached}): run \
         `eval \"$(bash scripts/deploy-tools.sh)\"` (scripts/test.sh does), or set \
         GPU_EXPORTER_SKIP_HELM=1 to skip this test"
    );
}

pub(crate) fn helm_or_skip(test: &str) -> Option<PathBuf> {
    tool_or_skip("HELM", "helm", "target/tools/helm/bin/helm", test)
}

pub(crate) fn promtool_or_skip(test: &str) -> Option<PathBuf> {
    if let Some(p) = find_tool("PROMTOOL", "promtool", "target/tools/promtool") {
        return Some(p);
    }
    if std::env::var("GPU_EXPORTER_SKIP_PROMETHEUS").as_deref() == Ok("1") {
        say(&format!(
            "\n*** SKIPPED promtool step of {test}: promtool not in PATH and \
             GPU_EXPORTER_SKIP_PROMETHEUS=1 ***\n"
        ));
        return None;
    }
    panic!(
        "{test}: promtool not found in PATH: install Debian's `prometheus` package \
         (scripts/test.sh does), or set GPU_EXPORTER_SKIP_PROMETHEUS=1 to skip it"
    );
}

/// Every file under `dir`, recursively.
pub(crate) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
