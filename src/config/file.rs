//! dcgm-exporter 4.8.3+'s YAML configuration file (`--config-file`, schema `version: 1` and
//! `version: 2`): parsing and checking it into [`FileSettings`]; the per-collection read
//! intervals it defines become the reader's collection plan (`gpu::collections`).
//!
//! Which settings the file may set, and that flags and environment variables given explicitly
//! win, is decided by the caller ([`super::Cli::merge_config_file`]). This module reads only the
//! YAML file (collections resolve field names through the static catalogue); it must not read
//! the counters CSV, look at flags or touch NVML.
//!
//! Schema (keys as dcgm-exporter documents them; a key we do not know is reported, not fatal):
//!
//! ```yaml
//! version: 1                        # or 2
//! metrics:
//!   file: /etc/dcgm-exporter/default-counters.csv   # or, exclusive with it:
//!   fields: [{name: DCGM_FI_DEV_GPU_TEMP, prometheusType: gauge, help: "..."}]
//!   enableExporterMetrics: true     # v2; `true` or `false` (YAML 1.2: `yes`, `on` and any
//!                                   # quoted value are text, refused naming the line)
//! collection:                       # v1
//!   interval: 30s
//!   watchGroups: [{name: fast, interval: 5s, fields: [DCGM_FI_DEV_GPU_TEMP, "DCGM_FI_PROF_*"]}]
//! collections:                      # v2: the same groups
//!   - {name: fast, every: 5s, metrics: {include: [DCGM_FI_DEV_GPU_TEMP]}}
//! server: {maxConcurrentScrapes: 16}  # v2
//! sources: {dcgm: {watch: {maxKeepAge: 10m, maxKeepSamples: 0}}}  # v2: the DCGM watches'
//!                                   # limits (other DCGM settings: accepted and ignored)
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde::de::IgnoredAny;

use super::origin::{Origin, Setting, TooShort};
use crate::base::shown::{quoted, shown, shown_path};
use crate::base::yaml;
use crate::gpu::collections::Collection;

/// Why a configuration file was refused. Every message names the file and the key.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The file could not be read.
    #[error("--config-file {}: {source}", shown_path(file))]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid YAML for the schema, or a value is out of range.
    #[error("--config-file {}: {message}", shown_path(file))]
    Invalid {
        /// The file.
        file: PathBuf,
        /// What is wrong, starting with the key.
        message: String,
    },
    /// An interval key under the minimum of every interval, refused by the check the flags
    /// have (its origin is the file and the key).
    #[error(transparent)]
    TooShort(#[from] TooShort),
}

/// What a configuration file sets. `None` is "not in the file".
#[derive(Debug, Clone, Default)]
pub struct FileSettings {
    /// `metrics.file`.
    pub metrics_file: Option<PathBuf>,
    /// `metrics.fields`, as counters-CSV text.
    pub metrics_csv: Option<String>,
    /// `collection.interval`.
    pub interval: Option<Duration>,
    /// `collection.watchGroups` / `collections`.
    pub groups: Vec<Collection>,
    /// `server.maxConcurrentScrapes`.
    pub max_concurrent_scrapes: Option<u32>,
    /// `metrics.enableExporterMetrics`.
    pub enable_exporter_metrics: Option<bool>,
    /// The cardinality controls: `metrics.includeFamilies`, `metrics.excludeFamilies`,
    /// `metrics.dropLabels` (each a list, joined with commas as the flags take them) and
    /// `metrics.maxLabelsPerSeries`, as (setting, value).
    pub cardinality: Vec<(Setting, String)>,
    /// `sources.dcgm.watch.maxKeepAge`.
    pub watch_max_keep_age: Option<Duration>,
    /// `sources.dcgm.watch.maxKeepSamples` (0 or more, as `--watch-max-keep-samples`).
    pub watch_max_keep_samples: Option<i32>,
    /// Keys accepted but not acted on, and unknown keys, one message each.
    pub notes: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Raw {
    version: Option<u32>,
    metrics: Option<RawMetrics>,
    collection: Option<RawCollection>,
    collections: Option<Vec<RawCollectionV2>>,
    server: Option<RawServer>,
    sources: Option<RawSources>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
struct RawSources {
    dcgm: Option<RawDcgm>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
struct RawDcgm {
    watch: Option<RawWatch>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawWatch {
    max_keep_age: Option<String>,
    max_keep_samples: Option<i64>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMetrics {
    file: Option<String>,
    fields: Option<Vec<RawField>>,
    /// `true` or `false` only (YAML 1.2, as dcgm-exporter's yaml.v3 resolves booleans): a
    /// quoted value, `yes` or `on` is refused naming the line and the key.
    #[serde(default, deserialize_with = "yaml::boolean")]
    enable_exporter_metrics: Option<bool>,
    include_families: Option<Vec<String>>,
    exclude_families: Option<Vec<String>>,
    drop_labels: Option<Vec<String>>,
    max_labels_per_series: Option<u64>,
    series_labels: Option<String>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawField {
    name: String,
    prometheus_type: Option<String>,
    help: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawCollection {
    interval: Option<String>,
    watch_groups: Option<Vec<RawGroup>>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

#[derive(Deserialize)]
struct RawGroup {
    name: String,
    interval: String,
    fields: Vec<String>,
}

#[derive(Deserialize)]
struct RawCollectionV2 {
    name: String,
    every: String,
    metrics: Option<RawInclude>,
    sources: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct RawInclude {
    include: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawServer {
    max_concurrent_scrapes: Option<u32>,
    #[serde(flatten)]
    other: BTreeMap<String, IgnoredAny>,
}

/// The keys of each level of the file, as serde reads them (the `Raw*` structs above); a
/// test holds each list to its struct.
const KEYS_ROOT: &[&str] = &[
    "version",
    "metrics",
    "collection",
    "collections",
    "server",
    "sources",
];
const KEYS_METRICS: &[&str] = &[
    "file",
    "fields",
    "enableExporterMetrics",
    "includeFamilies",
    "excludeFamilies",
    "dropLabels",
    "maxLabelsPerSeries",
    "seriesLabels",
];
const KEYS_COLLECTION: &[&str] = &["interval", "watchGroups"];
const KEYS_SERVER: &[&str] = &["maxConcurrentScrapes"];
const KEYS_SOURCES: &[&str] = &["dcgm"];
const KEYS_WATCH: &[&str] = &["maxKeepAge", "maxKeepSamples"];

/// The known key `key` is nearly (case aside, one or two letters wrong, missing, extra or
/// swapped; at most one for a key of under eight letters), if any.
fn near_key(key: &str, known: &[&'static str]) -> Option<&'static str> {
    let key = key.to_ascii_lowercase();
    known
        .iter()
        .map(|k| (strsim::osa_distance(&key, &k.to_ascii_lowercase()), *k))
        .filter(|(d, k)| *d <= (k.len() / 4).clamp(1, 2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

impl FileSettings {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<Self, ConfigFileError> {
        let text = crate::base::bounded_read::read_regular_text(
            path,
            crate::base::bounded_read::MAX_CONFIG_FILE,
        )
        .map_err(|e| ConfigFileError::Read {
            file: path.to_owned(),
            source: e.into(),
        })?;
        Self::parse(path, &text)
    }

    /// Parses `text` as the content of `path`: the version, then each section in the file's
    /// order of keys (metrics, collection, collections, server, sources; the first refused
    /// value is the one reported), then the keys nearly known, then the collections' names.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigFileError> {
        let mut p = Parse {
            path,
            out: Self::default(),
            unknown: Vec::new(),
            misspelt: Vec::new(),
        };
        let raw: Raw = if text.trim().is_empty() {
            return Err(p.bad("the file is empty (expected at least `version: 1`)".into()));
        } else {
            yaml::from_str_core(text).map_err(|e| p.bad(e.to_string()))?
        };
        let version = raw
            .version
            .ok_or_else(|| p.bad("version: missing (1 or 2)".into()))?;
        if !(1..=2).contains(&version) {
            return Err(p.bad(format!("version: {version} is not 1 or 2")));
        }
        p.note_unknown("", KEYS_ROOT, raw.other);
        if let Some(m) = raw.metrics {
            p.metrics(m)?;
        }
        if let Some(c) = raw.collection {
            p.collection(c)?;
        }
        for (n, c) in raw.collections.unwrap_or_default().into_iter().enumerate() {
            p.collection_v2(n, c)?;
        }
        if let Some(s) = raw.server {
            p.server(s)?;
        }
        if let Some(src) = raw.sources {
            p.sources(src)?;
        }
        p.finish()
    }
}

/// One file being parsed: what it gave so far, and the keys it does not know.
struct Parse<'a> {
    /// The file, for its errors.
    path: &'a Path,
    /// The settings read so far.
    out: FileSettings,
    /// Unknown keys far from every known one: logged, ignored (a file written for a later
    /// version still loads).
    unknown: Vec<String>,
    /// Unknown keys nearly a known key of their level: a mistake that stops start-up, naming
    /// both.
    misspelt: Vec<String>,
}

impl Parse<'_> {
    /// The file's error with `message`.
    fn bad(&self, message: String) -> ConfigFileError {
        ConfigFileError::Invalid {
            file: self.path.to_owned(),
            message,
        }
    }

    /// Sorts the keys of level `at` that none of `known` is into misspelt and unknown.
    fn note_unknown(
        &mut self,
        at: &str,
        known: &[&'static str],
        other: BTreeMap<String, IgnoredAny>,
    ) {
        for k in other.into_keys() {
            match near_key(&k, known) {
                Some(n) => self.misspelt.push(format!(
                    "{at}{}: unknown key (did you mean {at}{n}?)",
                    shown(&k)
                )),
                None => self
                    .unknown
                    .push(format!("{at}{}: unknown key, ignored", shown(&k))),
            }
        }
    }

    /// An interval at `key`: a positive Go duration (its syntax checked here), of at least
    /// [`crate::gpu::collections::MIN_INTERVAL_MS`] by the one check of every interval, the
    /// flags' too ([`Origin::at_least_min_interval`]).
    fn duration(&self, key: String, v: &str) -> Result<Duration, ConfigFileError> {
        let d = crate::base::duration::parse_go(v)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| {
                self.bad(format!(
                    "{key}: {} is not a positive duration (e.g. 30s, 5m)",
                    quoted(v)
                ))
            })?;
        let origin = Origin::File {
            file: self.path.to_owned(),
            key: key.into(),
        };
        Ok(origin.at_least_min_interval(d, quoted(v))?)
    }

    /// A collection's field patterns at `key`: at least one, each a glob.
    fn patterns(
        &self,
        key: String,
        globs: &[String],
    ) -> Result<Vec<glob::Pattern>, ConfigFileError> {
        if globs.is_empty() {
            return Err(self.bad(format!("{key}: empty (list at least one field)")));
        }
        globs
            .iter()
            .map(|g| {
                glob::Pattern::new(g).map_err(|e| self.bad(format!("{key}: {}: {e}", quoted(g))))
            })
            .collect()
    }

    /// `metrics`: the counters (a file or inline fields), the exporter's own metrics, and the
    /// cardinality controls as the flags take them.
    fn metrics(&mut self, m: RawMetrics) -> Result<(), ConfigFileError> {
        self.note_unknown("metrics.", KEYS_METRICS, m.other);
        match (m.file, m.fields) {
            (Some(_), Some(_)) => {
                return Err(self.bad("metrics: give either file or fields, not both".into()));
            }
            (Some(f), None) => self.out.metrics_file = Some(PathBuf::from(f)),
            (None, Some(fields)) => {
                if fields.is_empty() {
                    return Err(self.bad("metrics.fields: empty".into()));
                }
                self.out.metrics_csv = Some(fields_csv(&fields));
            }
            (None, None) => {}
        }
        self.out.enable_exporter_metrics = m.enable_exporter_metrics;
        let lists = [
            (Setting::IncludeFamilies, m.include_families),
            (Setting::ExcludeFamilies, m.exclude_families),
            (Setting::DropLabels, m.drop_labels),
        ];
        for (setting, list) in lists {
            if let Some(l) = list {
                self.out.cardinality.push((setting, l.join(",")));
            }
        }
        if let Some(n) = m.max_labels_per_series {
            self.out
                .cardinality
                .push((Setting::MaxLabelsPerSeries, n.to_string()));
        }
        if let Some(v) = m.series_labels {
            self.out.cardinality.push((Setting::SeriesLabels, v));
        }
        Ok(())
    }

    /// v1 `collection`: the base interval and the watch groups.
    fn collection(&mut self, c: RawCollection) -> Result<(), ConfigFileError> {
        self.note_unknown("collection.", KEYS_COLLECTION, c.other);
        if let Some(i) = c.interval {
            self.out.interval = Some(self.duration("collection.interval".into(), &i)?);
        }
        for (n, g) in c.watch_groups.unwrap_or_default().into_iter().enumerate() {
            let at = format!("collection.watchGroups[{n}]");
            let group = Collection::new(
                g.name,
                self.duration(format!("{at}.interval"), &g.interval)?,
                self.patterns(format!("{at}.fields"), &g.fields)?,
            );
            self.out.groups.push(group);
        }
        Ok(())
    }

    /// v2 `collections[n]`: a group with its interval (`every`) and fields.
    fn collection_v2(&mut self, n: usize, c: RawCollectionV2) -> Result<(), ConfigFileError> {
        let at = format!("collections[{n}]");
        let include = c.metrics.map(|m| m.include).unwrap_or_default();
        if c.sources.is_some() {
            self.out.notes.push(format!(
                "{at}.sources: DCGM watch settings per collection; ignored (every DCGM \
                 watch uses sources.dcgm.watch, or --watch-max-keep-*)"
            ));
        }
        let group = Collection::new(
            c.name,
            self.duration(format!("{at}.every"), &c.every)?,
            self.patterns(format!("{at}.metrics.include"), &include)?,
        );
        self.out.groups.push(group);
        Ok(())
    }

    /// `server`: the scrapes served at once.
    fn server(&mut self, s: RawServer) -> Result<(), ConfigFileError> {
        self.note_unknown("server.", KEYS_SERVER, s.other);
        if s.max_concurrent_scrapes == Some(0) {
            return Err(self.bad("server.maxConcurrentScrapes: 0 (must be at least 1)".into()));
        }
        self.out.max_concurrent_scrapes = s.max_concurrent_scrapes;
        Ok(())
    }

    /// `sources`: DCGM's watch limits; its host-engine settings are noted and ignored.
    fn sources(&mut self, src: RawSources) -> Result<(), ConfigFileError> {
        self.note_unknown("sources.", KEYS_SOURCES, src.other);
        let dcgm = src.dcgm.map(|d| (d.watch, d.other));
        let (watch, other) = dcgm.unwrap_or_default();
        self.out.notes.extend(other.into_keys().map(|k| {
            format!(
                "sources.dcgm.{}: a DCGM host-engine setting gpu-exporter does not have; \
                 ignored",
                shown(&k)
            )
        }));
        let Some(w) = watch else { return Ok(()) };
        self.note_unknown("sources.dcgm.watch.", KEYS_WATCH, w.other);
        if let Some(v) = w.max_keep_age {
            let key = "sources.dcgm.watch.maxKeepAge";
            let d = crate::base::duration::parse_go(&v).map_err(|_| {
                self.bad(format!(
                    "{key}: {} is not a duration (e.g. 10m)",
                    quoted(&v)
                ))
            })?;
            self.out.watch_max_keep_age = Some(d);
        }
        if let Some(n) = w.max_keep_samples {
            let key = "sources.dcgm.watch.maxKeepSamples";
            let n = i32::try_from(n)
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| self.bad(format!("{key}: {n} (must be 0 or more)")))?;
            self.out.watch_max_keep_samples = Some(n);
        }
        Ok(())
    }

    /// The end: keys nearly known stop start-up; unknown ones become notes; two collections
    /// of one name are refused.
    fn finish(mut self) -> Result<FileSettings, ConfigFileError> {
        if !self.misspelt.is_empty() {
            return Err(self.bad(self.misspelt.join("; ")));
        }
        self.out.notes.append(&mut self.unknown);
        let mut names: Vec<&str> = self.out.groups.iter().map(|g| g.name.as_str()).collect();
        names.sort_unstable();
        if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
            return Err(self.bad(format!("collection {} is defined twice", quoted(w[0]))));
        }
        Ok(self.out)
    }
}

/// `metrics.fields` as counters-CSV text, quoted so that commas in help texts survive.
fn fields_csv(fields: &[RawField]) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    fields
        .iter()
        .map(|f| {
            format!(
                "{},{},{}\n",
                f.name.trim(),
                f.prometheus_type.as_deref().unwrap_or("gauge").trim(),
                quote(f.help.as_deref().unwrap_or(""))
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{self, FieldDef};
    use crate::gpu::collections::Collections;

    fn parse(text: &str) -> Result<FileSettings, String> {
        FileSettings::parse(Path::new("/etc/x.yaml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn v1_file_interval_and_watch_groups() {
        let f = parse(
            "version: 1\nmetrics:\n  file: /etc/dcgm-exporter/default-counters.csv\n\
             collection:\n  interval: 30s\n  watchGroups:\n    - name: fast\n      interval: 5s\n\
             \x20     fields: [DCGM_FI_DEV_GPU_TEMP, \"DCGM_FI_PROF_*\"]\n",
        )
        .unwrap();
        assert_eq!(
            f.metrics_file.as_deref(),
            Some(Path::new("/etc/dcgm-exporter/default-counters.csv"))
        );
        assert_eq!(f.interval, Some(Duration::from_secs(30)));
        let c = Collections {
            base: f.interval.unwrap(),
            groups: f.groups,
        };
        assert_eq!(
            c.interval_for(
                "DCGM_FI_PROF_DRAM_ACTIVE",
                catalogue::lookup("DCGM_FI_PROF_DRAM_ACTIVE").unwrap()
            ),
            Duration::from_secs(5)
        );
        assert_eq!(
            c.interval_for(
                "DCGM_FI_DEV_GPU_TEMP",
                catalogue::lookup("DCGM_FI_DEV_GPU_TEMP").unwrap()
            ),
            Duration::from_secs(5)
        );
        assert_eq!(
            c.interval_for(
                "DCGM_FI_DEV_SM_CLOCK",
                catalogue::lookup("DCGM_FI_DEV_SM_CLOCK").unwrap()
            ),
            Duration::from_secs(30)
        );
        assert_eq!(c.tick(), Duration::from_secs(5));
        assert!(f.notes.is_empty(), "{:?}", f.notes);
    }

    /// A key that is nearly a known one of its level stops the load, naming both; one that is
    /// far from every key is a warning and the rest of the file loads.
    #[test]
    fn a_misspelt_key_is_an_error_naming_the_key_meant() {
        for (text, want) in [
            (
                "metrics:\n  fiel: a.csv\n",
                "metrics.fiel: unknown key (did you mean metrics.file?)",
            ),
            (
                "Metrics:\n  file: a.csv\n",
                "yaml: Metrics: unknown key (did you mean metrics?)",
            ),
            (
                "server:\n  maxConcurentScrapes: 2\n",
                "server.maxConcurentScrapes: unknown key (did you mean server.maxConcurrentScrapes?)",
            ),
            (
                "collection:\n  intervall: 10s\n",
                "collection.intervall: unknown key (did you mean collection.interval?)",
            ),
            (
                "sources:\n  dcgm:\n    watch: {maxKeepAges: 5m}\n",
                "sources.dcgm.watch.maxKeepAges: unknown key (did you mean sources.dcgm.watch.maxKeepAge?)",
            ),
        ] {
            let e = parse(&format!("version: 2\n{text}"))
                .err()
                .unwrap_or_default();
            assert!(
                e.contains("/etc/x.yaml") && e.contains(want),
                "{text:?}: {e}"
            );
        }
        let f =
            parse("version: 2\nmetrics:\n  file: a.csv\nfuture: 1\nserver:\n  tls: x\n").unwrap();
        assert_eq!(f.metrics_file, Some(PathBuf::from("a.csv")));
        let notes = f.notes.join("\n");
        assert!(notes.contains("future: unknown key, ignored"), "{notes}");
        assert!(
            notes.contains("server.tls: unknown key, ignored"),
            "{notes}"
        );
    }

    /// Each level's list of keys is what its struct reads: a file with every listed key has no
    /// unknown key (a listed key the struct lacks would be reported).
    #[test]
    fn the_key_lists_are_the_structs_keys() {
        let yaml_level = |keys: &[&str], indent: &str| -> String {
            keys.iter()
                .map(|k| format!("{indent}{k}: ~\n"))
                .collect::<String>()
        };
        let text = format!(
            "version: 2\n{}metrics:\n{}collection:\n{}server:\n{}sources:\n  dcgm:\n    watch:\n{}",
            yaml_level(
                &KEYS_ROOT
                    .iter()
                    .copied()
                    .filter(|k| {
                        !matches!(
                            *k,
                            "version" | "metrics" | "collection" | "server" | "sources"
                        )
                    })
                    .collect::<Vec<_>>(),
                ""
            ),
            yaml_level(KEYS_METRICS, "  "),
            yaml_level(KEYS_COLLECTION, "  "),
            yaml_level(KEYS_SERVER, "  "),
            yaml_level(KEYS_WATCH, "      "),
        );
        assert!(KEYS_SOURCES == ["dcgm"], "{KEYS_SOURCES:?}");
        let f = parse(&text).unwrap();
        assert!(
            !f.notes.iter().any(|n| n.contains("unknown key")),
            "{text}\n{:?}",
            f.notes
        );
    }

    #[test]
    fn v1_inline_fields_become_csv_rows() {
        let f = parse(
            "version: 1\nmetrics:\n  fields:\n    - name: DCGM_FI_DEV_GPU_TEMP\n\
             \x20     prometheusType: gauge\n      help: \"GPU temperature, in C.\"\n\
             \x20   - name: DCGM_FI_DEV_POWER_VIOLATION\n      prometheusType: counter\n",
        )
        .unwrap();
        let csv = f.metrics_csv.unwrap();
        let set = crate::catalogue::csv::parse_counters("x", &csv).unwrap();
        let rows: Vec<_> = set
            .metrics()
            .map(|r| (r.name.as_str(), r.help.as_str()))
            .collect();
        assert_eq!(
            rows,
            [
                ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature, in C."),
                ("DCGM_FI_DEV_POWER_VIOLATION", "")
            ]
        );
    }

    #[test]
    fn v2_collections_server_and_exporter_metrics() {
        let f = parse(
            "version: 2\nmetrics:\n  enableExporterMetrics: true\n\
             collections:\n  - name: slow\n    every: 5m\n    metrics:\n      include: [\"DCGM_FI_DEV_NVLINK_*\"]\n\
             \x20   sources:\n      dcgm:\n        watch: {maxKeepAge: 10m}\n\
             server:\n  maxConcurrentScrapes: 4\nsources:\n  dcgm:\n    detectBindUnbind: true\n\
             \x20   watch: {maxKeepAge: 5m, maxKeepSamples: 20}\nfuture: 1\n",
        )
        .unwrap();
        assert_eq!(f.enable_exporter_metrics, Some(true));
        assert_eq!(f.max_concurrent_scrapes, Some(4));
        assert_eq!(f.groups[0].interval, Duration::from_secs(300));
        let notes = f.notes.join("\n");
        assert!(
            notes.contains("collections[0].sources: DCGM watch settings"),
            "{notes}"
        );
        assert!(
            notes.contains("sources.dcgm.detectBindUnbind: a DCGM host-engine setting"),
            "{notes}"
        );
        assert_eq!(f.watch_max_keep_age, Some(Duration::from_secs(300)));
        assert_eq!(f.watch_max_keep_samples, Some(20));
        let e = parse("version: 2\nsources:\n  dcgm:\n    watch: {maxKeepSamples: -1}\n")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("sources.dcgm.watch.maxKeepSamples: -1"), "{e}");
        assert!(notes.contains("future: unknown key, ignored"), "{notes}");
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        for (text, want) in [
            ("", "/etc/x.yaml: the file is empty"),
            ("metrics: {file: a.csv}\n", "version: missing"),
            ("version: 3\n", "version: 3 is not 1 or 2"),
            (
                "version: 1\nmetrics: {file: a.csv, fields: [{name: X}]}\n",
                "metrics: give either file or fields",
            ),
            (
                "version: 1\ncollection: {interval: soon}\n",
                "collection.interval: \"soon\" is not a positive duration",
            ),
            (
                "version: 1\ncollection:\n  watchGroups: [{name: a, interval: 0s, fields: [X]}]\n",
                "collection.watchGroups[0].interval",
            ),
            (
                "version: 2\ncollections: [{name: a, every: 5s, metrics: {include: []}}]\n",
                "collections[0].metrics.include: empty",
            ),
            (
                "version: 2\ncollections: [{name: a, every: 5s, metrics: {include: [\"[\"]}}]\n",
                "collections[0].metrics.include: \"[\"",
            ),
            (
                "version: 2\ncollections: [{name: a, every: 5s, metrics: {include: [X]}}, \
                 {name: a, every: 9s, metrics: {include: [Y]}}]\n",
                "collection \"a\" is defined twice",
            ),
            (
                "version: 2\nserver: {maxConcurrentScrapes: 0}\n",
                "maxConcurrentScrapes: 0",
            ),
            ("version: [1\n", "/etc/x.yaml"),
            // Every interval has -c's minimum and its message, naming the key.
            (
                "version: 1\ncollection: {interval: 1ms}\n",
                "collection.interval \"1ms\": must be at least 100 (milliseconds)",
            ),
            (
                "version: 1\ncollection:\n  watchGroups: [{name: a, interval: 1ns, fields: [X]}]\n",
                "collection.watchGroups[0].interval \"1ns\": must be at least 100 (milliseconds)",
            ),
            (
                "version: 2\ncollections: [{name: a, every: 99ms, metrics: {include: [X]}}]\n",
                "collections[0].every \"99ms\": must be at least 100 (milliseconds)",
            ),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with("--config-file /etc/x.yaml: "), "{e}");
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }

    /// A boolean key takes `true` or `false` only: a quoted value is text (YAML), and so are a
    /// bare `yes` and `on` under YAML 1.2, which dcgm-exporter's yaml.v3 follows; each refusal
    /// names the file, the line and the key. A tag that makes a number a text says so.
    #[test]
    fn booleans_are_true_or_false_and_a_tagged_text_is_named() {
        for (v, want) in [("true", Some(true)), ("FALSE", Some(false)), ("", None)] {
            let f = parse(&format!(
                "version: 2\nmetrics:\n  enableExporterMetrics: {v}\n"
            ))
            .unwrap();
            assert_eq!(f.enable_exporter_metrics, want, "{v:?}");
        }
        for (v, shown) in [
            ("\"yes\"", "\"yes\""),
            ("'on'", "\"on\""),
            ("\"true\"", "\"true\""),
            ("yes", "\"yes\""),
            ("on", "\"on\""),
        ] {
            let e = parse(&format!(
                "version: 2\nmetrics:\n  enableExporterMetrics: {v}\n"
            ))
            .unwrap_err();
            assert!(
                e.starts_with("--config-file /etc/x.yaml: line 3, ")
                    && e.contains(&format!(
                        "key metrics.enableExporterMetrics: expected true or false, found the \
                         text {shown}"
                    )),
                "{v}: {e}"
            );
        }
        let e = parse("version: !!str 1\n").unwrap_err();
        assert!(
            e.starts_with("--config-file /etc/x.yaml: line 1, ")
                && e.contains(
                    "key version: expected a whole number from 0 to 4294967295, found the text \
                     \"1\" tagged !!str: remove the tag"
                ),
            "{e}"
        );
    }

    /// A megabyte value in any key is shown as its first characters and its size, never whole.
    #[test]
    fn megabyte_values_are_not_echoed() {
        let big = "A".repeat(3_000_000);
        let mut wrong = Vec::new();
        for text in [
            format!("version: {big}\n"),
            format!("version: \"{big}\"\n"),
            format!("version: 1\ncollection: {{interval: {big}}}\n"),
            format!(
                "version: 1\ncollection: {{watchGroups: [{{name: a, interval: 5s, fields: [\"[{big}\"]}}]}}\n"
            ),
            format!(
                "version: 2\ncollections: [{{name: {big}, every: 5s, metrics: {{include: [X]}}}}, {{name: {big}, every: 5s, metrics: {{include: [Y]}}}}]\n"
            ),
            format!("version: 2\nsources: {{dcgm: {{watch: {{maxKeepAge: {big}}}}}}}\n"),
            format!("version: 2\nserver: {{maxConcurrentScrapes: {big}}}\n"),
            format!("version: 2\nmetrics: {{enableExporterMetrics: \"{big}\"}}\n"),
            format!("version: 2\nmetrics: {{maxLabelsPerSeries: {big}}}\n"),
            format!("version: 2\n? {big}\n: 1\n"),
        ] {
            match parse(&text) {
                Err(e) if e.len() < 600 => {}
                Err(e) => wrong.push(e.chars().take(300).collect::<String>()),
                Ok(f) => {
                    let notes = f.notes.join("\n");
                    if notes.len() > 600 || !notes.contains("… (3000") {
                        wrong.push(notes.chars().take(300).collect());
                    }
                }
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// The YAML parser's refusals in our words: file, line, column, key and what to do;
    /// none of the library's own words.
    #[test]
    fn yaml_errors_are_in_our_words() {
        let many = format!("version: 1\nmetrics:\n  x: [{}]\n", "1,".repeat(250_001));
        for (text, want) in [
            (
                "version: 1\nversion: 2\n",
                "key version: this key is given twice in the same mapping; keep one of them",
            ),
            (
                "version: 1\n---\nversion: 2\n",
                "a second YAML document (`---`) starts here",
            ),
            (
                "version: 2\nserver:\n  maxConcurrentScrapes: -1\n",
                "line 3, column 25, key server.maxConcurrentScrapes: -1 is not a whole number from 0 \
                 to 4294967295",
            ),
            (
                "version: 2\nserver: {maxConcurrentScrapes: 5000000000}\n",
                "key server.maxConcurrentScrapes: 5000000000 is not a whole number from 0 to \
                 4294967295",
            ),
            (
                "version: true\n",
                "key version: true is not a whole number from 0 to 4294967295",
            ),
            (
                many.as_str(),
                "the file is too large or too deeply nested for a configuration file",
            ),
            (
                "version: 1\ncollection:\n  watchGroups: [{name: a, interval: 5s}]\n",
                "lacks the key fields",
            ),
            (
                "version: 1\nmetrics: [a, b]\n",
                "line 2, column 10, key metrics: expected a mapping of `key: value` lines here",
            ),
            ("version: 1\nmetrics: {file: \"a.csv\n", "line "),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.starts_with("--config-file /etc/x.yaml: "), "{e}");
            assert!(e.contains(want), "{:.60}: {e}", text);
            for theirs in [
                "DuplicateKeyPolicy",
                "from_str_multiple",
                "budget breached",
                "Nodes {",
                "invalid u32",
                "Options",
            ] {
                assert!(!e.contains(theirs), "{e}");
            }
        }
    }

    /// A YAML refusal names the exact key path serde was filling: a key of a nested mapping,
    /// an item of a list, a key given twice deep in the file.
    #[test]
    fn yaml_errors_name_the_exact_key_path() {
        let many = format!("version: 1\nmetrics:\n  x: [{}]\n", "1,".repeat(250_001));
        let mut wrong = Vec::new();
        for (text, want) in [
            (
                "version: 2\nsources:\n  dcgm:\n    watch:\n      maxKeepSamples: lots\n",
                "line 5, column 23, key sources.dcgm.watch.maxKeepSamples: lots is not a whole \
                 number",
            ),
            (
                "version: 1\ncollection:\n  watchGroups:\n    - {name: a, interval: 5s, fields: [X]}\n    \
                 - {name: b, interval: 5s, fields: {X: 1}}\n",
                "line 5, column 39, key collection.watchGroups[1].fields: expected a list here",
            ),
            (
                "version: 2\ncollections:\n  - {name: a, every: 5s}\n  - {name: b}\n",
                "line 4, column 6, key collections[1]: the mapping here lacks the key every",
            ),
            (
                "version: 2\nmetrics:\n  fields:\n    - {name: X, help: a}\n    - {name: Y, help: b, help: c}\n",
                "line 5, column 26, key metrics.fields[1].help: this key is given twice",
            ),
            (
                many.as_str(),
                "line 3, column 499993, key metrics.x: the file is too large",
            ),
            // A broken indentation: the parser names no key, so the place is its mapping's.
            (
                "version: 2\nmetrics:\n  file: /x.csv\n   enableExporterMetrics: true\n",
                "line 4, column 25, under metrics: this is not valid YAML for the configuration \
                 file here: check the indentation",
            ),
        ] {
            let e = parse(text).unwrap_err();
            if !e.contains(&format!("--config-file /etc/x.yaml: {want}")) || e.contains(".?") {
                wrong.push(format!("{text:?}: {e}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// Keys and paths from the file are escaped wherever they are shown.
    #[test]
    fn keys_and_paths_with_control_characters_are_escaped() {
        let f = parse("version: 1\n\"\\e[31mk\\nERROR forged\": 1\nmetrics:\n  \"a\\nb\": 2\n")
            .unwrap();
        let notes = f.notes.join("|");
        assert!(!notes.contains(['\n', '\u{1b}']), "{notes}");
        assert!(
            notes.contains("\"\\u{1b}[31mk\\nERROR forged\": unknown key")
                && notes.contains("metrics.\"a\\nb\": unknown key"),
            "{notes}"
        );
        let e = FileSettings::parse(Path::new("/tmp/x\ny.yaml"), "")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--config-file \"/tmp/x\\ny.yaml\": "), "{e}");
    }

    #[test]
    fn collections_are_checked_against_the_counters_set() {
        let g = |name: &str, globs: &[&str]| {
            Collection::new(
                name,
                Duration::from_secs(1),
                globs
                    .iter()
                    .map(|p| glob::Pattern::new(p).unwrap())
                    .collect(),
            )
        };
        let rows = |names: &[&'static str]| -> Vec<(&'static str, &'static FieldDef)> {
            names
                .iter()
                .map(|n| (*n, catalogue::lookup(n).unwrap()))
                .collect()
        };
        let fields = rows(&["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"]);
        let c = Collections {
            base: Duration::from_secs(10),
            groups: vec![g("a", &["DCGM_FI_DEV_GPU_*"]), g("b", &["*_TEMP"])],
        };
        let e = c.check(fields.clone()).unwrap_err().to_string();
        assert!(
            e.contains("DCGM_FI_DEV_GPU_TEMP matches more than one collection (a, b)"),
            "{e}"
        );
        let c = Collections {
            base: Duration::from_secs(10),
            groups: vec![g("nv", &["DCGM_FI_DEV_NVLINK_*"])],
        };
        let e = c.check(fields.clone()).unwrap_err().to_string();
        assert!(e.contains("collection \"nv\" matches no field"), "{e}");
        let c = Collections {
            base: Duration::from_secs(10),
            groups: vec![g("t", &["*_TEMP"])],
        };
        assert_eq!(c.check(fields), Ok(()));
    }

    /// A group holds a field under any of its names: a group written with dcgm-exporter
    /// 4.8's names holds the rows of a 4.9 set (DCGM 4.6 names, base-unit twins), and a group
    /// written with 4.9's names holds 1.x rows.
    #[test]
    fn collections_match_fields_by_what_they_read_not_by_name() {
        let pattern = |p: &str| vec![glob::Pattern::new(p).unwrap()];
        let field = |n: &str| catalogue::lookup(n).unwrap();
        let c = Collections {
            base: Duration::from_secs(30),
            groups: vec![
                Collection::new(
                    "temp",
                    Duration::from_secs(5),
                    pattern("DCGM_FI_DEV_GPU_TEMP"),
                ),
                Collection::new(
                    "clock",
                    Duration::from_secs(7),
                    pattern("DCGM_FI_DEV_SM_CLOCK"),
                ),
                Collection::new(
                    "fb",
                    Duration::from_secs(9),
                    pattern("DCGM_FI_DEV_FB_*_BYTES"),
                ),
            ],
        };
        for (row, want) in [
            ("DCGM_FI_DEV_GPU_TEMP", 5),
            ("DCGM_FI_DEV_GPU_TEMP_CELSIUS", 5),
            ("dcgm_gpu_temp", 5),
            ("DCGM_FI_DEV_SM_CLOCK_HERTZ", 7),
            ("dcgm_sm_clock", 7),
            ("DCGM_FI_DEV_FB_USED", 9),
            ("DCGM_FI_DEV_FB_FREE_BYTES", 9),
            ("DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", 30),
            ("DCGM_FI_DEV_MEM_CLOCK", 30),
        ] {
            assert_eq!(
                c.interval_for(row, field(row)),
                Duration::from_secs(want),
                "{row}"
            );
        }
        let set = [
            (
                "DCGM_FI_DEV_GPU_TEMP_CELSIUS",
                field("DCGM_FI_DEV_GPU_TEMP_CELSIUS"),
            ),
            (
                "DCGM_FI_DEV_SM_CLOCK_HERTZ",
                field("DCGM_FI_DEV_SM_CLOCK_HERTZ"),
            ),
            ("DCGM_FI_DEV_FB_USED", field("DCGM_FI_DEV_FB_USED")),
        ];
        assert_eq!(c.check(set), Ok(()));
    }
}
