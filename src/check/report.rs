//! The report of `gpu-exporter check`: its items, the verdict (exit 0 all good, 1 something
//! configured does not work) and its three forms (a human table, `--output json`,
//! `--hardware-report`).
//!
//! Formatting only; it must not decide what is checked (the rest of `check` does).

use std::fmt::Write as _;

use serde::Serialize;

/// How an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Works.
    Ok,
    /// Worth knowing; nothing is broken (an unsupported field, a free port in use).
    Info,
    /// Works partly, or will not work in some setups.
    Warn,
    /// Configured and does not work: the check exits 1.
    Fail,
}

impl Severity {
    fn word(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "WARN",
            Severity::Fail => "FAIL",
        }
    }
}

/// One line of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Finding {
    /// `files`, `nvml`, `gpus`, `fields` or `kubernetes`.
    pub section: &'static str,
    /// What was checked.
    pub subject: String,
    /// Its state.
    #[serde(rename = "level")]
    pub severity: Severity,
    /// What was seen.
    pub detail: String,
    /// What to do about it, when it is not ok.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
}

/// The whole report.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Every item, in the order checked.
    pub items: Vec<Finding>,
    /// The first GPU's lines of the exposition of the last tick (the hardware report's
    /// excerpt); empty when no GPU was read.
    pub excerpt: Vec<String>,
}

/// The report's sections, in output order, with their titles.
const SECTIONS: &[(&str, &str)] = &[
    ("files", "Files and flags"),
    ("nvml", "NVML"),
    ("dcgm", "DCGM (profiling on GPUs without GPM)"),
    ("gpus", "GPUs and MIG instances"),
    ("fields", "Fields of the counters file"),
    ("kubernetes", "Kubernetes and attribution"),
];

impl Report {
    /// Adds an item.
    pub fn add(
        &mut self,
        section: &'static str,
        subject: impl Into<String>,
        severity: Severity,
        detail: impl Into<String>,
        fix: Option<&str>,
    ) {
        self.items.push(Finding {
            section,
            subject: subject.into(),
            severity,
            detail: detail.into(),
            fix: fix.map(str::to_owned),
        });
    }

    /// The worst level in the report.
    pub fn worst(&self) -> Severity {
        self.items
            .iter()
            .map(|i| i.severity)
            .max()
            .unwrap_or(Severity::Ok)
    }

    /// The exit code: 0 when nothing failed, 1 otherwise.
    pub fn exit_code(&self) -> u8 {
        u8::from(self.worst() == Severity::Fail)
    }

    /// The human form: one table per section, nothing cut.
    pub fn human(&self) -> String {
        let mut out = String::new();
        for (key, title) in SECTIONS {
            let items: Vec<&Finding> = self.items.iter().filter(|i| i.section == *key).collect();
            if items.is_empty() {
                continue;
            }
            let _ = writeln!(out, "{title}");
            let w = items
                .iter()
                .map(|i| i.subject.chars().count())
                .max()
                .unwrap_or(0);
            for i in items {
                let _ = writeln!(
                    out,
                    "  {:<4}  {:<w$}  {}",
                    i.severity.word(),
                    i.subject,
                    i.detail
                );
                if let Some(f) = &i.fix {
                    let _ = writeln!(out, "  {:<4}  {:<w$}  fix: {f}", "", "");
                }
            }
            out.push('\n');
        }
        let fails = self
            .items
            .iter()
            .filter(|i| i.severity == Severity::Fail)
            .count();
        let warns = self
            .items
            .iter()
            .filter(|i| i.severity == Severity::Warn)
            .count();
        let _ = writeln!(
            out,
            "check: {}",
            match (fails, warns) {
                (0, 0) => "everything configured works".to_owned(),
                (0, w) => format!("everything configured works, {w} warning(s)"),
                (f, w) => format!("{f} thing(s) configured do not work, {w} warning(s)"),
            }
        );
        out
    }

    /// The form docs/hardware.md asks for: the NVML, GPU and field sections as a Markdown
    /// table, ready to paste into an issue.
    pub fn hardware_report(&self, version: &str) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "### gpu-exporter {version} on real hardware (`gpu-exporter check --hardware-report`)\n"
        );
        out.push_str("| Section | Subject | State | Detail |\n|---|---|---|---|\n");
        for i in self
            .items
            .iter()
            .filter(|i| matches!(i.section, "nvml" | "dcgm" | "gpus" | "fields"))
        {
            let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                i.section,
                cell(&i.subject),
                i.severity.word(),
                cell(&i.detail)
            );
        }
        if !self.excerpt.is_empty() {
            out.push_str("\nThe first GPU's series in the last tick's exposition:\n\n```text\n");
            for l in &self.excerpt {
                out.push_str(l);
                out.push('\n');
            }
            out.push_str("```\n");
        }
        out
    }
}
