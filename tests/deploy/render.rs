//! Rendering the chart with helm into documents, and finding objects in them.

use super::*;

// Rendering

/// One YAML document of a render: its text (as helm wrote it) and its tree.
pub(crate) struct Doc {
    pub(crate) text: String,
    pub(crate) value: Value,
}

impl Doc {
    pub(crate) fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or("")
    }

    pub(crate) fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or("")
    }
}

pub(crate) struct Rendered {
    pub(crate) docs: Vec<Doc>,
}

impl Rendered {
    pub(crate) fn all(&self, kind: &str) -> Vec<&Doc> {
        self.docs.iter().filter(|d| d.kind() == kind).collect()
    }

    /// The only object of `kind`; panics with the kinds present otherwise.
    pub(crate) fn one(&self, kind: &str) -> &Doc {
        let all = self.all(kind);
        assert!(
            all.len() == 1,
            "want exactly one {kind}, rendered {}: {:?}",
            all.len(),
            self.docs
                .iter()
                .map(|d| format!("{} {}", d.kind(), d.name()))
                .collect::<Vec<_>>()
        );
        all[0]
    }
}

/// Splits a multi-document YAML stream at its `---` lines and parses each non-empty part.
pub(crate) fn parse_docs(text: &str, origin: &str) -> Result<Rendered, String> {
    let mut docs = Vec::new();
    let mut cur = String::new();
    let mut flush = |cur: &mut String| -> Result<(), String> {
        let body = std::mem::take(cur);
        let meaningful = body
            .lines()
            .any(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'));
        if meaningful {
            let value: Value = serde_saphyr::from_str(&body)
                .map_err(|e| format!("{origin}: a document does not parse: {e}\n{body}"))?;
            if !value.is_null() {
                docs.push(Doc { text: body, value });
            }
        }
        Ok(())
    };
    for line in text.lines() {
        if line.trim_end() == "---" {
            flush(&mut cur)?;
        } else {
            cur.push_str(line);
            cur.push('\n');
        }
    }
    flush(&mut cur)?;
    Ok(Rendered { docs })
}

pub(crate) fn values_file(v: &Value) -> tempfile::NamedTempFile {
    let mut f = tempfile::Builder::new().suffix(".yaml").tempfile().unwrap();
    // JSON is YAML.
    f.write_all(serde_json::to_string_pretty(v).unwrap().as_bytes())
        .unwrap();
    f.flush().unwrap();
    f
}

/// `helm template` of the chart (release and namespace gpu-exporter) with the given values
/// files (paths relative to the repository) and then the given values, in that order.
pub(crate) fn template(helm: &Path, files: &[&str], values: &[Value]) -> Result<Rendered, String> {
    let tmp: Vec<tempfile::NamedTempFile> = values.iter().map(values_file).collect();
    let mut cmd = Command::new(helm);
    cmd.current_dir(repo()).args([
        "template",
        RELEASE,
        CHART,
        "--namespace",
        NAMESPACE,
        "--kube-version",
        KUBE_VERSION,
    ]);
    for f in files {
        cmd.args(["-f", f]);
    }
    for t in &tmp {
        cmd.arg("-f").arg(t.path());
    }
    let out = run_ok(&mut cmd)?;
    parse_docs(&out, "helm template")
}

/// The chart's NOTES.txt as `helm install` prints it for the given values. `helm template`
/// does not render NOTES.txt, so a scratch copy of the chart gets its text as a named template
/// and a ConfigMap that holds what that template renders.
pub(crate) fn notes(helm: &Path, values: &[Value]) -> Result<String, String> {
    let src = repo().join(CHART);
    let tmp = tempfile::tempdir().unwrap();
    let chart = tmp.path().join("gpu-exporter");
    for p in walk(&src) {
        let dst = chart.join(p.strip_prefix(&src).unwrap());
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::copy(&p, &dst).unwrap();
    }
    let text = std::fs::read_to_string(src.join("templates/NOTES.txt")).unwrap();
    let templates = chart.join("templates");
    std::fs::write(
        templates.join("_notes_under_test.tpl"),
        format!("{{{{- define \"notes-under-test\" -}}}}\n{text}\n{{{{- end }}}}\n"),
    )
    .unwrap();
    std::fs::write(
        templates.join("notes-under-test.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: notes-under-test\ndata:\n  \
         notes: {{ include \"notes-under-test\" . | toJson }}\n",
    )
    .unwrap();
    let tmp_values: Vec<tempfile::NamedTempFile> = values.iter().map(values_file).collect();
    let mut cmd = Command::new(helm);
    cmd.arg("template")
        .arg(RELEASE)
        .arg(&chart)
        .args(["--namespace", NAMESPACE, "--kube-version", KUBE_VERSION])
        .args(["--show-only", "templates/notes-under-test.yaml"]);
    for t in &tmp_values {
        cmd.arg("-f").arg(t.path());
    }
    let out = run_ok(&mut cmd)?;
    let r = parse_docs(&out, "NOTES.txt")?;
    r.one("ConfigMap").value["data"]["notes"]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("NOTES.txt rendered no text:\n{out}"))
}

pub(crate) fn committed_manifests() -> Result<Rendered, String> {
    let mut docs = Vec::new();
    for m in [CORE_MANIFEST, MONITORING_MANIFEST] {
        let text = std::fs::read_to_string(repo().join(m)).map_err(|e| format!("{m}: {e}"))?;
        docs.extend(parse_docs(&text, m)?.docs);
    }
    Ok(Rendered { docs })
}

// ---------------------------------------------------------------------------------------------
