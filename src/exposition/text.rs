//! The exposition format's primitives: escaping, sample values, `# HELP`/`# TYPE`, label pairs,
//! and how the identity labels are spelt ([`EncodeOptions`]).
//!
//! Pure string building; it must not know about snapshots, families or I/O.

use std::fmt::Write as _;

use crate::catalogue::labels::LabelShape;
use crate::gpu::reader::NvlinkLinks;

pub use crate::base::label_text::{escape_label, write_label};

/// How the identity labels are spelt.
#[derive(Debug, Clone)]
pub struct EncodeOptions {
    /// Value of the host label; `None` omits it (`--no-hostname`).
    pub hostname: Option<String>,
    /// Name of the host label: `Hostname`, or `hostname` for dcgm-exporter 4.8.3+
    /// (`--compatibility`).
    pub host_label: &'static str,
    /// `true` writes `uuid` instead of `UUID` (`--use-old-namespace`).
    pub use_old_namespace: bool,
    /// `true` replaces spaces in `modelName` with `-` (`--replace-blanks-in-model-name`).
    pub replace_blanks_in_model_name: bool,
    /// Fields (canonical names) typed gauge whatever the counters file says, as
    /// dcgm-exporter 4.8.3+ types them (`--compatibility`).
    pub gauge_fields: &'static [&'static str],
    /// Every `# TYPE` as the counters file says, windowed counts included (dcgm-exporter
    /// 4.8.2); otherwise a windowed count is typed gauge.
    pub types_as_written: bool,
    /// `--nvlink-links`: the `gpu_nvlink_*` families per link, or per GPU (the default). The
    /// counters file's link-entity rows do not depend on it.
    pub nvlink_links: NvlinkLinks,
    /// The exporter's own GPU families (`gpu_*` other than `gpu_exporter_*`): on in `native`,
    /// off under a dcgm-exporter profile unless `--include-families` names them.
    pub own_families: bool,
    /// `--include-families`, `--exclude-families`, `--drop-labels`.
    pub cardinality: super::filter::Cardinality,
    /// `--series-labels`: the descriptions and holders on every series (`full`) or on their
    /// info series only (`lean`).
    pub shape: LabelShape,
}

impl Default for EncodeOptions {
    fn default() -> Self {
        Self {
            hostname: None,
            host_label: "Hostname",
            use_old_namespace: false,
            replace_blanks_in_model_name: false,
            gauge_fields: &[],
            types_as_written: false,
            nvlink_links: NvlinkLinks::Totals,
            own_families: true,
            cardinality: super::filter::Cardinality::default(),
            shape: LabelShape::Lean,
        }
    }
}

/// Escapes HELP text: `\` → `\\`, newline → `\n`.
pub fn escape_help(out: &mut String, v: &str) {
    for c in v.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// Writes a sample value: integers without a fraction, `NaN`, `+Inf`, `-Inf`.
pub fn write_value(out: &mut String, v: f64) {
    if v.is_nan() {
        out.push_str("NaN");
    } else if v.is_infinite() {
        out.push_str(if v > 0.0 { "+Inf" } else { "-Inf" });
    } else {
        let _ = write!(out, "{v}");
    }
}

/// Writes `# HELP` and `# TYPE` for a family.
pub fn write_header(out: &mut String, name: &str, help: &str, kind: &str) {
    out.push_str("# HELP ");
    out.push_str(name);
    out.push(' ');
    escape_help(out, help);
    out.push_str("\n# TYPE ");
    out.push_str(name);
    out.push(' ');
    out.push_str(kind);
    out.push('\n');
}
