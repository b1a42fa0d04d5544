//! Built-in scenarios: the TOML files of the top-level `scenarios/` folder, embedded at build
//! time so a name such as `"h100-mig"` works from any working directory.
//!
//! Owns the name → text table only; parsing lives in `scenario`.

/// The scenario used when none is configured.
pub const DEFAULT: &str = "h100-mig";

/// (name, TOML text) of every built-in scenario; the name is the file stem.
const BUILTINS: &[(&str, &str)] = &[
    ("h100-mig", include_str!("../../../scenarios/h100-mig.toml")),
    ("a100-l4", include_str!("../../../scenarios/a100-l4.toml")),
    (
        "incidents",
        include_str!("../../../scenarios/incidents.toml"),
    ),
    ("hgx-h200", include_str!("../../../scenarios/hgx-h200.toml")),
    ("hgx-b200", include_str!("../../../scenarios/hgx-b200.toml")),
    (
        "gb200-nvl72",
        include_str!("../../../scenarios/gb200-nvl72.toml"),
    ),
    ("l40s", include_str!("../../../scenarios/l40s.toml")),
    (
        "a100-mig-t4",
        include_str!("../../../scenarios/a100-mig-t4.toml"),
    ),
    ("batch", include_str!("../../../scenarios/batch.toml")),
];

/// The TOML text of a built-in scenario.
pub fn get(name: &str) -> Option<&'static str> {
    BUILTINS.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// Names of the built-in scenarios, default first.
pub fn names() -> Vec<&'static str> {
    BUILTINS.iter().map(|(n, _)| *n).collect()
}
