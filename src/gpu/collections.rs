//! The collection plan: how often each counters row is read. Fields in a collection
//! (`--config-file`'s `collection.watchGroups` / `collections`) are read at its interval, the
//! others at the collect interval (`-c`); the sampler ticks at the shortest of them.
//!
//! Plain data resolved through the static catalogue; it must not read files, flags or NVML
//! (the configuration file is parsed in `config::file`).

use std::time::Duration;

use crate::catalogue::{self, FieldDef};

/// The shortest read interval accepted from any source (`-c/--collect-interval`,
/// `collection.interval`, a collection's own), in milliseconds: every source is held to it,
/// with the same message.
pub const MIN_INTERVAL_MS: u64 = 100;

/// A collection plan that does not fit the counter set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CollectionError {
    /// A counters row that more than one collection matches.
    #[error("field {field} matches more than one collection ({})", .collections.join(", "))]
    Overlap {
        /// The row's name.
        field: String,
        /// The collections that match it, in the file's order.
        collections: Vec<String>,
    },
    /// A collection that matches no row of the counter set.
    #[error("collection {0:?} matches no field of the counters set")]
    Unmatched(String),
}

/// One group of fields read at their own interval (v1 `collection.watchGroups`, v2
/// `collections`).
///
/// A counters row belongs to it when a pattern matches the row's name, or any name of a field
/// that reads the same quantity (the field itself, its aliases, its base-unit twin): a group
/// written with dcgm-exporter 4.8's names (`DCGM_FI_DEV_GPU_TEMP`) holds the row of a 4.9 set
/// that names the field `DCGM_FI_DEV_GPU_TEMP_CELSIUS`, and `DCGM_FI_DEV_SM_CLOCK` holds
/// `DCGM_FI_DEV_SM_CLOCK_HERTZ`.
#[derive(Debug, Clone)]
pub struct Collection {
    /// The group's name, for messages.
    pub name: String,
    /// How often its fields are read.
    pub interval: Duration,
    /// Glob patterns over field names (`DCGM_FI_PROF_*`).
    pub patterns: Vec<glob::Pattern>,
    /// The catalogue's fields one of whose names a pattern matches.
    fields: Vec<&'static FieldDef>,
}

impl Collection {
    /// A group of the fields named by `patterns`, resolved through the catalogue.
    pub fn new(name: impl Into<String>, interval: Duration, patterns: Vec<glob::Pattern>) -> Self {
        let fields = catalogue::all()
            .filter(|f| catalogue::names_of(f).any(|n| patterns.iter().any(|p| p.matches(n))))
            .collect();
        Self {
            name: name.into(),
            interval,
            patterns,
            fields,
        }
    }

    /// Whether the counters row named `name`, which reads `field`, belongs to the group.
    pub fn holds(&self, name: &str, field: &FieldDef) -> bool {
        self.patterns.iter().any(|p| p.matches(name))
            || self
                .fields
                .iter()
                .any(|f| catalogue::same_reading(f, field))
    }
}

/// Per-field read intervals: fields in a collection are read at its interval, the others at
/// `base` (`collection.interval`, or `-c`).
#[derive(Debug, Clone, Default)]
pub struct Collections {
    /// The interval of fields in no collection.
    pub base: Duration,
    /// The collections, in file order.
    pub groups: Vec<Collection>,
}

impl Collections {
    /// The collection the counters row `name` (reading `field`) belongs to, if any.
    pub fn group_of(&self, name: &str, field: &FieldDef) -> Option<&Collection> {
        self.groups.iter().find(|g| g.holds(name, field))
    }

    /// How often the counters row `name` (reading `field`) is read.
    pub fn interval_for(&self, name: &str, field: &FieldDef) -> Duration {
        self.group_of(name, field).map_or(self.base, |g| g.interval)
    }

    /// The shortest interval of all: how often the sampler must tick.
    pub fn tick(&self) -> Duration {
        self.groups
            .iter()
            .map(|g| g.interval)
            .chain([self.base])
            .min()
            .unwrap_or(self.base)
    }

    /// Checks the groups against the counter set's rows (name, field), as dcgm-exporter does
    /// at start-up: a field in two groups, or a group that matches no field, is an error.
    pub fn check<'a>(
        &self,
        rows: impl IntoIterator<Item = (&'a str, &'a FieldDef)>,
    ) -> Result<(), CollectionError> {
        let rows: Vec<(&str, &FieldDef)> = rows.into_iter().collect();
        for (name, field) in &rows {
            let hits: Vec<String> = self
                .groups
                .iter()
                .filter(|g| g.holds(name, field))
                .map(|g| g.name.clone())
                .collect();
            if hits.len() > 1 {
                return Err(CollectionError::Overlap {
                    field: (*name).to_owned(),
                    collections: hits,
                });
            }
        }
        for g in &self.groups {
            if !rows.iter().any(|(name, field)| g.holds(name, field)) {
                return Err(CollectionError::Unmatched(g.name.clone()));
            }
        }
        Ok(())
    }
}
