//! Loading the counter set a validated [`Config`] chose ([`Config::load_counters`]): the
//! counters file (watched for hot reload), the configuration file's `metrics.fields`, or the
//! compatibility profile's built-in set; then the configuration file's collections checked
//! against the fields loaded.
//!
//! It must not choose the source (validation did: [`super::CountersChoice`]) or touch NVML.

use super::{Config, ConfigError, CountersChoice, DEFAULT_COLLECTORS, LoadedCounters, file};
use crate::catalogue::csv::parse_counters;
use crate::sampler::reload::CountersFile;

impl Config {
    /// Loads the counter set: the chosen file, the configuration file's `metrics.fields`, or
    /// the profile's built-in set. Returns the set, a note saying where it came from, and the
    /// watch on the file it was read from (for hot reload; `None` otherwise).
    pub fn load_counters(&self) -> Result<LoadedCounters, ConfigError> {
        let loaded = match &self.counters {
            CountersChoice::Inline(origin, csv) => LoadedCounters {
                set: parse_counters(origin, csv)?,
                origin: format!("counters from {origin}"),
                file: None,
            },
            CountersChoice::File(Some(p)) => {
                let (file, set) = CountersFile::open(p.clone(), self.exposition.profile)?;
                // The set's own origin is the path, or says which version of a shipped set
                // the profile serves in its place: the start-up line must say so too.
                let origin = format!("counters from {}", set.origin);
                LoadedCounters {
                    set,
                    origin,
                    file: Some(file),
                }
            }
            CountersChoice::File(None) => self.builtin_counters()?,
        };
        // The config file's collections must each match a field, and no field two of them.
        if let Some(path) = &self.config_file {
            self.sampling
                .collections
                .check(loaded.set.metrics().map(|r| (r.name.as_str(), r.field)))
                .map_err(|message| file::ConfigFileError::Invalid {
                    file: path.clone(),
                    message: format!("{message} ({})", loaded.origin),
                })?;
        }
        Ok(loaded)
    }

    /// The compatibility profile's built-in counter set (what runs when no file is found).
    pub fn builtin_counters(&self) -> Result<LoadedCounters, ConfigError> {
        let (name, text) = self.exposition.profile.builtin_counters();
        let set = parse_counters(&format!("built-in {name}"), text)?;
        Ok(LoadedCounters {
            set,
            origin: format!("{DEFAULT_COLLECTORS} not found: using the built-in {name}"),
            file: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BUILTIN_DEFAULT_COUNTERS;

    #[test]
    fn builtin_counters_parse() {
        let set = parse_counters("builtin", BUILTIN_DEFAULT_COUNTERS).unwrap();
        assert!(set.metrics().count() >= 20);
    }
}
