//! `promtool check rules` and `promtool test rules` on the rules and their unit tests, and
//! the check that every alert has a test where it fires and one where it does not.

use super::*;

// ---------------------------------------------------------------------------------------------
// promtool

/// `name` in PATH.
pub(crate) fn tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// The tools' paths; `None` (after a loud line) when they are missing and the environment
/// says to skip. Panics when they are missing otherwise.
pub(crate) fn tools_or_skip(names: &[&str], test: &str) -> Option<Vec<PathBuf>> {
    let found: Vec<Option<PathBuf>> = names.iter().map(|n| tool(n)).collect();
    let missing: Vec<&str> = names
        .iter()
        .zip(&found)
        .filter(|(_, p)| p.is_none())
        .map(|(n, _)| *n)
        .collect();
    if missing.is_empty() {
        return Some(found.into_iter().flatten().collect());
    }
    if std::env::var("GPU_EXPORTER_SKIP_PROMETHEUS").as_deref() == Ok("1") {
        say(&format!(
            "\n*** SKIPPED {test}: {} not in PATH and GPU_EXPORTER_SKIP_PROMETHEUS=1 ***\n",
            missing.join(", ")
        ));
        return None;
    }
    panic!(
        "{test}: {} not found in PATH: install Debian's `prometheus` package (promtool, \
         prometheus) or `victoria-metrics` package (victoria-metrics, vmalert) \
         (`apt-get install …`; scripts/test.sh does), or set \
         GPU_EXPORTER_SKIP_PROMETHEUS=1 to skip this test",
        missing.join(", ")
    );
}

pub(crate) fn run_tool(cmd: &mut Command) -> Result<String, String> {
    let shown = format!("{cmd:?}");
    let out = cmd
        .output()
        .map_err(|e| format!("{shown}: cannot run: {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        Ok(text)
    } else {
        Err(format!("{shown} failed ({}):\n{text}", out.status))
    }
}

pub(crate) fn check_promtool(alerts: &Path) {
    let Some(tools) = tools_or_skip(&["promtool"], "promtool_checks_and_tests_rules") else {
        return;
    };
    let promtool = &tools[0];
    let mut f = Failures::default();
    let plain = alerts.join(RULES_FILE);
    if let Err(e) = run_tool(Command::new(promtool).arg("check").arg("rules").arg(&plain)) {
        f.add(e);
    }
    let tests = files_with(&alerts.join("tests"), &["yaml", "yml"]);
    if tests.is_empty() {
        f.add(format!(
            "{}: no promtool unit tests (*.yaml)",
            alerts.join("tests").display()
        ));
    } else if let Err(e) = run_tool(Command::new(promtool).arg("test").arg("rules").args(&tests)) {
        f.add(e);
    }

    // Coverage: each alert fires in one test case and stays quiet in another.
    let mut fires: BTreeSet<String> = BTreeSet::new();
    let mut quiet: BTreeSet<String> = BTreeSet::new();
    let mut tested: BTreeMap<String, String> = BTreeMap::new();
    for t in &tests {
        let tree = match read_yaml(t) {
            Ok(y) => y,
            Err(e) => {
                f.add(e);
                continue;
            }
        };
        for case in array(&tree, "tests") {
            for a in array(case, "alert_rule_test") {
                let Some(name) = str_of(a, "alertname") else {
                    continue;
                };
                tested.insert(name.to_owned(), file_name(t));
                if array(a, "exp_alerts").is_empty() {
                    quiet.insert(name.to_owned());
                } else {
                    fires.insert(name.to_owned());
                }
            }
        }
    }
    let mut rf = Failures::default();
    let alerts_in_file: BTreeSet<String> = load_rules(alerts, &mut rf)
        .map(|(_, rules)| {
            rules
                .into_iter()
                .filter(|r| r.kind == Kind::Alert)
                .map(|r| r.name)
                .collect()
        })
        .unwrap_or_default();
    for e in rf.0 {
        f.add(e);
    }
    let no_fire: Vec<&String> = alerts_in_file.difference(&fires).collect();
    let no_quiet: Vec<&String> = alerts_in_file.difference(&quiet).collect();
    if !no_fire.is_empty() {
        f.add(format!(
            "alerts without a unit test in which they fire (non-empty exp_alerts): {no_fire:?}"
        ));
    }
    if !no_quiet.is_empty() {
        f.add(format!(
            "alerts without a unit test in which they do not fire (empty exp_alerts): {no_quiet:?}"
        ));
    }
    for (name, file) in &tested {
        if !alerts_in_file.contains(name) {
            f.add(format!(
                "tests/{file}: alert_rule_test for {name}, which is not an alert of {RULES_FILE}"
            ));
        }
    }
    read_time_cases(&tests, &alerts.join("../dashboards/generate.py"), &mut f);
    f.finish(&format!("promtool on {}", alerts.display()));
}

/// The marker before a promtool case that tests a family the dashboards normalize when read
/// (alerts/README.md, "Normalized when read"): the case's `expr` must be what
/// `dashboards/generate.py --normalized FAMILY` prints, so that the case tests the panels' query.
const READ_TIME_MARKER: &str =
    "# Normalized when read: the query of `dashboards/generate.py --normalized ";

/// Each marked case of `tests` holds the query the dashboards generator prints for its family.
fn read_time_cases(tests: &[PathBuf], generator: &Path, f: &mut Failures) {
    let mut cases = 0;
    for t in tests {
        let Ok(text) = std::fs::read_to_string(t) else {
            continue;
        };
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            let Some(rest) = line.trim_start().strip_prefix(READ_TIME_MARKER) else {
                continue;
            };
            cases += 1;
            let family = rest.trim_end_matches("`.");
            let at = format!("{}:{}", file_name(t), i + 1);
            let expr = lines
                .get(i + 1)
                .and_then(|l| l.trim_start().strip_prefix("- expr: '"))
                .and_then(|e| e.strip_suffix('\''))
                .map(|e| e.replace("''", "'"));
            let Some(expr) = expr else {
                f.add(format!(
                    "{at}: the marker for {family} is not followed by a single-quoted `- expr:`"
                ));
                continue;
            };
            match run_tool(Command::new("python3").arg(generator).args(["--normalized", family])) {
                Ok(want) if want.trim() == expr => {}
                Ok(want) => f.add(format!(
                    "{at}: the case's expr is not the dashboards' query for {family}: got {expr:?}, want {:?}",
                    want.trim()
                )),
                Err(e) => f.add(format!("{at}: {e}")),
            }
        }
    }
    if cases == 0 {
        f.add(
            "no promtool case tests a family normalized when read (the marker is missing)"
                .to_owned(),
        );
    }
}
