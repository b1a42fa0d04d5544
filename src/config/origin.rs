//! Where a setting's value comes from, and the one rule that settles a setting both a flag and
//! `--config-file` give: the flag (or its variable) wins, the file fills what no flag gave, and
//! a note says which of the file's keys a flag overrode ([`FileMerge::fill`], used for every
//! such setting by `merge.rs`, `dcgm.rs` and `cardinality.rs`). [`Setting`] names each setting
//! whose errors name its source, once: its flag as messages write it and its file key.
//! [`Origin`] names a value's source the way error messages do: the flag, its environment
//! variable, or the file and its key; [`Origin::at_least_min_interval`] is the one minimum of
//! every interval, whichever of them gives it (`Settings::interval_ms` for the flags and their
//! variables, `file.rs` for the file's interval keys), refused as one [`TooShort`].
//!
//! It must not read the file, parse values or look at [`super::cli::Cli`]'s fields: callers
//! hand it the slot and the file's value (an interval already parsed).

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::base::shown::shown_path;
use crate::gpu::collections::MIN_INTERVAL_MS;

/// Declares [`Setting`] from one table: each variant with its flag, as messages write it, and
/// its configuration file key (`None`: the file cannot set it). [`Setting::ALL`] is made
/// from the same table, so a new row cannot be left out of it.
macro_rules! settings {
    ($($(#[doc = $doc:literal])* $variant:ident => $flag:literal, $key:expr;)*) => {
        /// A setting whose value may come from more than one place (a flag, its environment
        /// variable, a key of `--config-file`), so that its errors name the one it came from
        /// (`Settings::origin_of`). Its names are written here and nowhere else.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum Setting {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Setting {
            /// Every setting, in the table's order (the tests check each against the flags'
            /// definitions).
            pub const ALL: &'static [Setting] = &[$(Setting::$variant,)*];

            /// The flag as messages write it: the short form first when there is one
            /// (`-c/--collect-interval`).
            pub fn flag(self) -> &'static str {
                match self {
                    $(Setting::$variant => $flag,)*
                }
            }

            /// The configuration file's key for it; `None` when the file cannot set it.
            pub fn file_key(self) -> Option<&'static str> {
                match self {
                    $(Setting::$variant => $key,)*
                }
            }
        }
    };
}

settings! {
    /// `-f/--collectors`, or the file's `metrics` (a file or inline fields).
    Collectors => "-f/--collectors", Some("metrics");
    /// `-c/--collect-interval`, or `collection.interval`.
    CollectInterval => "-c/--collect-interval", Some("collection.interval");
    /// `-a/--address`.
    Address => "-a/--address", None;
    /// `--max-concurrent-scrapes`, or `server.maxConcurrentScrapes`.
    MaxConcurrentScrapes => "--max-concurrent-scrapes", Some("server.maxConcurrentScrapes");
    /// `--enable-exporter-metrics`, or `metrics.enableExporterMetrics`.
    EnableExporterMetrics => "--enable-exporter-metrics", Some("metrics.enableExporterMetrics");
    /// `--watch-max-keep-age`, or `sources.dcgm.watch.maxKeepAge`.
    WatchMaxKeepAge => "--watch-max-keep-age", Some("sources.dcgm.watch.maxKeepAge");
    /// `--watch-max-keep-samples`, or `sources.dcgm.watch.maxKeepSamples`.
    WatchMaxKeepSamples => "--watch-max-keep-samples", Some("sources.dcgm.watch.maxKeepSamples");
    /// `--include-families`, or `metrics.includeFamilies`.
    IncludeFamilies => "--include-families", Some("metrics.includeFamilies");
    /// `--exclude-families`, or `metrics.excludeFamilies`.
    ExcludeFamilies => "--exclude-families", Some("metrics.excludeFamilies");
    /// `--drop-labels`, or `metrics.dropLabels`.
    DropLabels => "--drop-labels", Some("metrics.dropLabels");
    /// `--max-labels-per-series`, or `metrics.maxLabelsPerSeries`.
    MaxLabelsPerSeries => "--max-labels-per-series", Some("metrics.maxLabelsPerSeries");
    /// `--series-labels`, or `metrics.seriesLabels`.
    SeriesLabels => "--series-labels", Some("metrics.seriesLabels");
    /// `--pod-resources-refresh-interval`.
    PodResourcesRefreshInterval => "--pod-resources-refresh-interval", None;
    /// `--pod-resources-timeout`.
    PodResourcesTimeout => "--pod-resources-timeout", None;
}

impl Setting {
    /// The long flag (`--collect-interval`), as clap names the argument.
    pub fn long(self) -> &'static str {
        let flag = self.flag();
        flag.rsplit_once('/').map_or(flag, |(_, long)| long)
    }
}

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
        /// The key, e.g. `collection.interval` or `collection.watchGroups[0].interval`.
        key: Cow<'static, str>,
    },
}

/// An interval under [`MIN_INTERVAL_MS`]: the one refusal of every interval, with one message
/// whether a flag, its variable or a file key gave it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{origin} {value}: must be at least {min} (milliseconds)")]
pub struct TooShort {
    /// Where the value came from: the flag (`-c/--collect-interval`), its variable, or the
    /// configuration file and key.
    pub origin: Origin,
    /// The value, as given (a file's duration quoted as typed).
    pub value: String,
    /// The least accepted, in milliseconds.
    pub min: u64,
}

impl Origin {
    /// The one minimum of every interval: `interval` (given as `value`) from this origin, or
    /// [`TooShort`] naming it when under [`MIN_INTERVAL_MS`].
    pub(super) fn at_least_min_interval(
        self,
        interval: Duration,
        value: impl std::fmt::Display,
    ) -> Result<Duration, TooShort> {
        if interval < Duration::from_millis(MIN_INTERVAL_MS) {
            return Err(TooShort {
                origin: self,
                value: value.to_string(),
                min: MIN_INTERVAL_MS,
            });
        }
        Ok(interval)
    }
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
    /// The settings the file gave.
    pub(super) from_file: Vec<Setting>,
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

    /// The rule: the flag given (`flag_given`)? It wins, and a note says that its flag
    /// overrode the file's key; else the file's value, when it has one. `None`: nothing to
    /// take.
    pub(super) fn take<T>(
        &mut self,
        flag_given: bool,
        value: Option<T>,
        setting: Setting,
    ) -> Option<T> {
        let value = value?;
        if flag_given {
            let key = setting.file_key().unwrap_or("?");
            self.note(&format!("{key} overridden by {}", setting.flag()));
            return None;
        }
        Some(value)
    }

    /// [`FileMerge::take`], recording that the file gave the setting when it did (in
    /// [`FileMerge::from_file`]): for a file value kept as the file typed it, beside the flag's
    /// text.
    pub(super) fn given<T>(
        &mut self,
        flag_given: bool,
        value: Option<T>,
        setting: Setting,
    ) -> Option<T> {
        let v = self.take(flag_given, value, setting)?;
        self.from_file.push(setting);
        Some(v)
    }

    /// [`FileMerge::given`] into the flag's own setting, `slot` (`None` when no flag or
    /// variable gave it).
    pub(super) fn fill<T>(&mut self, slot: &mut Option<T>, value: Option<T>, setting: Setting) {
        if let Some(v) = self.given(slot.is_some(), value, setting) {
            *slot = Some(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Setting;
    use clap::CommandFactory;

    /// Each setting's flag is one the command line defines, with the short form it names, so
    /// that its messages name a flag that exists and its variable is found.
    #[test]
    fn every_setting_names_a_defined_flag() {
        let cmd = super::super::Cli::command();
        for &s in Setting::ALL {
            let long = s.long().trim_start_matches("--");
            let arg = cmd
                .get_arguments()
                .find(|a| a.get_long() == Some(long))
                .unwrap_or_else(|| panic!("{s:?}: no flag --{long}"));
            let short = arg.get_short().map(|c| format!("-{c}/--{long}"));
            assert_eq!(
                s.flag(),
                short.unwrap_or_else(|| format!("--{long}")),
                "{s:?}"
            );
        }
    }
}
