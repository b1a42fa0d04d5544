//! The chart's `files/` copies of the top-level counters, dashboards and rules, and the
//! committed manifests against a fresh render.

use super::*;

#[test]
pub(crate) fn chart_copies_match_top_level_files() {
    let root = repo();
    let files = root.join(CHART).join("files");
    let mut want = BTreeSet::new();
    let mut f = Failures::default();
    let mut sources = Vec::new();
    for (dir, ext) in [("counters", "csv"), ("dashboards", "json")] {
        for p in files_with(&root.join(dir), &[ext]) {
            sources.push(format!("{dir}/{}", file_name(&p)));
        }
    }
    sources.push("alerts/gpu-exporter.rules.yaml".to_owned());
    assert!(
        sources.iter().any(|s| s.ends_with(".json")) && sources.iter().any(|s| s.ends_with(".csv")),
        "no dashboards or counters found at the top of the repository: {sources:?}"
    );
    for s in &sources {
        want.insert(s.clone());
        let src = std::fs::read(root.join(s)).unwrap();
        match std::fs::read(files.join(s)) {
            Ok(copy) if copy == src => {}
            Ok(_) => f.add(format!("{CHART}/files/{s} differs from {s}")),
            Err(e) => f.add(format!("{CHART}/files/{s}: {e}")),
        }
    }
    for p in walk(&files) {
        let rel = p
            .strip_prefix(&files)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if !want.contains(&rel) {
            f.add(format!(
                "{CHART}/files/{rel} is not a copy of a top-level file"
            ));
        }
    }
    if !f.0.is_empty() {
        f.add("run deploy/sync.sh (or deploy/render.sh)");
    }
    f.finish("the chart's copies");
}

#[test]
pub(crate) fn committed_manifests_match_a_fresh_render() {
    let Some(helm) = helm_or_skip("committed_manifests_match_a_fresh_render") else {
        return;
    };
    let mut cmd = Command::new("bash");
    cmd.current_dir(repo())
        .args(["deploy/render.sh", "--check"])
        .env("HELM", &helm);
    run_ok(&mut cmd).unwrap_or_else(|e| panic!("{e}"));
}
