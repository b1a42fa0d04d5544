//! `--config-file` merged into the raw flags ([`Cli::merge_config_file`]): each setting the
//! file may set goes into the flags that no flag or variable gave, by the one rule of
//! `origin.rs` (the DCGM watch limits and the cardinality controls through `dcgm.rs` and
//! `cardinality.rs`), giving the [`Settings`] that `validate.rs` checks; and where a merged
//! value came from ([`Settings::origin_of`]), for error messages.
//!
//! It must not validate values (the file's own checks are `file.rs`'s, the rest
//! `validate.rs`'s), read the counters or touch NVML.

use super::origin::{FileMerge, Origin, Setting};
use super::{Cli, ConfigError, CountersChoice, Settings, cardinality, dcgm, file};

impl Cli {
    /// Reads `--config-file`, if given, and merges each setting it may set into the flags that
    /// no flag or variable gave. Nothing is validated yet.
    pub fn merge_config_file(self) -> Result<Settings, ConfigError> {
        let mut s = Settings {
            inline_counters: None,
            collections: Vec::new(),
            config_file: None,
            from_file: Vec::new(),
            notes: Vec::new(),
            dcgm_watch: dcgm::FileWatch::default(),
            cli: self,
        };
        let Some(path) = s
            .cli
            .sampling
            .config_file
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
        else {
            return Ok(s);
        };
        let f = file::FileSettings::load(&path)?;
        let mut m = FileMerge::new(&path);
        for n in &f.notes {
            m.note(n);
        }
        let cli = &mut s.cli;
        let metrics = match (f.metrics_file, f.metrics_csv) {
            (Some(p), _) => Some(CountersChoice::File(Some(p))),
            (None, Some(csv)) => Some(CountersChoice::Inline(
                format!("{} metrics.fields", m.at()),
                csv,
            )),
            (None, None) => None,
        };
        match m.take(
            cli.sampling.counters_file.is_some(),
            metrics,
            Setting::Collectors,
        ) {
            Some(CountersChoice::File(p)) => cli.sampling.counters_file = p,
            Some(CountersChoice::Inline(origin, csv)) => s.inline_counters = Some((origin, csv)),
            None => {}
        }
        let interval = f
            .interval
            .map(|i| u64::try_from(i.as_millis()).unwrap_or(u64::MAX));
        m.fill(
            &mut cli.sampling.collect_interval,
            interval,
            Setting::CollectInterval,
        );
        m.fill(
            &mut cli.web.max_concurrent_scrapes,
            f.max_concurrent_scrapes,
            Setting::MaxConcurrentScrapes,
        );
        let watch = (f.watch_max_keep_age, f.watch_max_keep_samples);
        s.dcgm_watch = dcgm::merge_file(cli, watch, &mut m);
        m.fill(
            &mut cli.exposition.enable_exporter_metrics,
            f.enable_exporter_metrics,
            Setting::EnableExporterMetrics,
        );
        cardinality::merge_file(cli, f.cardinality, &mut m);
        s.notes = m.notes;
        s.from_file = m.from_file;
        s.collections = f.groups;
        s.config_file = Some(path);
        Ok(s)
    }
}

impl Settings {
    /// Where a setting's merged value came from: the configuration file's key, when the file
    /// gave it; the flag's environment variable, when that gave it; or the flag.
    pub(crate) fn origin_of(&self, setting: Setting) -> Origin {
        if let (true, Some(file), Some(key)) = (
            self.from_file.contains(&setting),
            &self.config_file,
            setting.file_key(),
        ) {
            return Origin::File {
                file: file.clone(),
                key: key.into(),
            };
        }
        let env = self
            .cli
            .from_env
            .iter()
            .find(|(long, _)| long == setting.long());
        match env {
            Some((_, var)) => Origin::Env {
                var: var.clone(),
                flag: setting.flag(),
            },
            None => Origin::Flag(setting.flag()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::cli;
    use std::path::Path;
    use std::time::Duration;

    #[test]
    fn config_file_fills_what_the_command_line_did_not_set() {
        let dir = tempfile::tempdir().unwrap();
        let yaml = dir.path().join("c.yaml");
        std::fs::write(
            &yaml,
            "version: 2\nmetrics:\n  file: /from/file.csv\n  enableExporterMetrics: true\n\
             collection:\n  interval: 2s\nserver:\n  maxConcurrentScrapes: 3\n\
             collections: [{name: t, every: 500ms, metrics: {include: [DCGM_FI_DEV_GPU_TEMP]}}]\n",
        )
        .unwrap();
        let parse = |extra: &[&str]| {
            let mut args = vec!["gpu-exporter", "--config-file", yaml.to_str().unwrap()];
            args.extend_from_slice(extra);
            let c = Cli::try_parse_go_style(args.into_iter().map(Into::into)).unwrap();
            let merged = c.merge_config_file().unwrap();
            let notes = merged
                .validate(&crate::config::Site::host())
                .unwrap()
                .warnings;
            (merged.cli, notes)
        };
        let (c, notes) = parse(&[]);
        assert_eq!(
            c.sampling.counters_file.as_deref(),
            Some(Path::new("/from/file.csv"))
        );
        assert_eq!(c.sampling.collect_interval, Some(2000));
        assert_eq!(c.web.max_concurrent_scrapes, Some(3));
        assert_eq!(c.exposition.enable_exporter_metrics, Some(true));
        assert!(notes.is_empty(), "{notes:?}");
        let cfg = c.validate().unwrap();
        // The sampler ticks as fast as the fastest collection; fields in no collection are
        // read at the collect interval.
        assert_eq!(cfg.tick_interval, Duration::from_millis(500));
        assert_eq!(cfg.reader.collections.base, Duration::from_secs(2));
        assert!(cfg.exposition.enable_exporter_metrics);
        assert_eq!(cfg.serving.max_concurrent_scrapes, 3);
        // Given on the command line (Go style too), the flag wins and the log says so.
        let (c, notes) = parse(&[
            "-c",
            "2000",
            "-collectors",
            "/cli.csv",
            "--max-concurrent-scrapes",
            "16",
        ]);
        assert_eq!(
            c.sampling.counters_file.as_deref(),
            Some(Path::new("/cli.csv"))
        );
        assert_eq!(c.sampling.collect_interval, Some(2000));
        assert_eq!(c.web.max_concurrent_scrapes, Some(16));
        let notes = notes.join("\n");
        for what in [
            "metrics overridden by -f",
            "collection.interval overridden by -c",
            "server.maxConcurrentScrapes overridden",
        ] {
            assert!(notes.contains(what), "{what}: {notes}");
        }
        // A missing file names itself.
        let c = cli(&["--config-file", "/nonexistent.yaml"]);
        let e = c.merge_config_file().unwrap_err().to_string();
        assert!(e.starts_with("--config-file /nonexistent.yaml: "), "{e}");
    }
}
