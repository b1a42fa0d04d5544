//! Where a setting's value comes from, and the one rule that settles a setting both a flag and
//! `--config-file` give: the flag (or its variable) wins, the file fills what no flag gave, and
//! a note says which of the file's keys a flag overrode ([`FileMerge::fill`], used for every
//! such setting by `merge.rs`, `dcgm.rs` and `cardinality.rs`). [`Origin`] names a value's
//! source the way error messages do: the flag, its environment variable, or the file and its key.
//!
//! It must not read the file, parse values or look at [`super::cli::Cli`]'s fields: callers
//! hand it the slot and the file's value.

use std::path::{Path, PathBuf};

use crate::base::shown::shown_path;

/// Where a setting's value came from, as messages name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A flag (`-c/--collect-interval`), or its default.
    Flag(&'static str),
    /// A flag's environment variable, which gave the value.
    Env {
        /// The variable, e.g. `DCGM_EXPORTER_LISTEN`.
        var: String,
        /// Its flag, e.g. `-a/--address`.
        flag: &'static str,
    },
    /// A key of the configuration file.
    File {
        /// The file.
        file: PathBuf,
        /// The key, e.g. `collection.interval`.
        key: &'static str,
    },
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Flag(flag) => f.write_str(flag),
            Origin::Env { var, flag } => write!(f, "{var} ({flag})"),
            Origin::File { file, key } => write!(f, "--config-file {}: {key}", shown_path(file)),
        }
    }
}

/// One configuration file being merged into the flags: the notes it leaves (keys a flag
/// overrode, the file's own notes) and the settings it gave.
#[derive(Debug)]
pub(super) struct FileMerge {
    /// The file as messages show it.
    at: String,
    /// What to log about the merge, in order.
    pub(super) notes: Vec<String>,
    /// The settings the file gave: (flag, the file's key).
    pub(super) from_file: Vec<(&'static str, &'static str)>,
}

impl FileMerge {
    /// A merge of `file`, with nothing merged yet.
    pub(super) fn new(file: &Path) -> Self {
        FileMerge {
            at: shown_path(file),
            notes: Vec::new(),
            from_file: Vec::new(),
        }
    }

    /// The file as messages show it.
    pub(super) fn at(&self) -> &str {
        &self.at
    }

    /// A note about the file, prefixed with it.
    pub(super) fn note(&mut self, what: &str) {
        let note = format!("--config-file {}: {what}", self.at);
        self.notes.push(note);
    }

    /// The rule: the flag given (`flag_given`)? It wins, and a note says that `flag` overrode
    /// the file's `key`; else the file's value, when it has one. `None`: nothing to take.
    pub(super) fn take<T>(
        &mut self,
        flag_given: bool,
        value: Option<T>,
        key: &str,
        flag: &str,
    ) -> Option<T> {
        let value = value?;
        if flag_given {
            self.note(&format!("{key} overridden by {flag}"));
            return None;
        }
        Some(value)
    }

    /// [`FileMerge::take`] into the flag's own setting, `slot` (`None` when no flag or variable
    /// gave it), recording that the file gave it (in [`FileMerge::from_file`]).
    pub(super) fn fill<T>(
        &mut self,
        slot: &mut Option<T>,
        value: Option<T>,
        key: &'static str,
        flag: &'static str,
    ) {
        if let Some(v) = self.take(slot.is_some(), value, key, flag) {
            *slot = Some(v);
            self.from_file.push((flag, key));
        }
    }
}
