//! Step two of the configuration: from the merged [`Settings`] to one validated [`Config`]
//! ([`Settings::validate`], and [`Cli::validate`], which merges `--config-file` first): every
//! value checked once, here and only here, with the same bounds and messages whatever its
//! source (errors name the flag, or the file and key: [`Settings::origin_of`]), defaults
//! filled in, and the settings grouped as the components take them (the DCGM client's checked
//! by `dcgm.rs`, attribution's by `kube.rs`, the cardinality controls by `cardinality.rs`;
//! the Kubernetes writes' need of `-k` and the node's name by [`super::health_args`]). The
//! minimum of every interval is one check, [`super::Origin::at_least_min_interval`], which
//! [`Settings::interval_ms`] applies to the flags and `file.rs` to the file's interval keys as
//! it reads them (so that an interval key is refused even when a flag overrides it).
//!
//! It must not read the configuration file (merged before, by `merge.rs`) or the counters
//! (loaded after, by `counters.rs`), and must not touch NVML or the network: the one file
//! system access is the `stat` of `--nvml-lib` (and `--dcgm-lib`, in `dcgm.rs`).

use std::path::PathBuf;
use std::time::Duration;

use super::values::LogFormat;
use super::{
    Cli, Config, ConfigError, CountersChoice, DEFAULT_COLLECTORS, DEFAULT_INTERVAL_MS,
    DEFAULT_MAX_CONCURRENT_SCRAPES, DEFAULT_WEB_READ_TIMEOUT, DEFAULT_WEB_WRITE_TIMEOUT,
    ExpositionConfig, HealthConfig, LogConfig, ServingConfig, Setting, Settings, Simulation, Site,
    cardinality, dcgm, ignored, node_hostname,
};
use crate::attribution::KubernetesOptions;
use crate::catalogue::labels;
use crate::catalogue::profile::Profile;
use crate::gpu::collections::Collections;
use crate::gpu::reader::{NvlinkLinks, ReaderOptions};
use crate::gpu::selection::DeviceSelection;
use crate::serve::address;

/// `--nvml-lib` as given, once its kind is checked (one `stat`, symlinks followed; nothing is
/// opened): a regular file, or a path that does not exist yet (the library may arrive later,
/// as when the GPU Operator's driver container finishes; the sampler retries).
fn nvml_lib(path: Option<&PathBuf>) -> Result<Option<PathBuf>, ConfigError> {
    let Some(p) = path else { return Ok(None) };
    // Missing or unreadable passes: the loader says so, and it is retried.
    crate::base::bounded_read::refuse_not_regular(p).map_err(|source| ConfigError::NvmlLib {
        path: p.clone(),
        source,
    })?;
    Ok(Some(p.clone()))
}

/// Parses `--xid-initialized-codes`: comma-separated Xid codes, possibly empty.
fn parse_xid_codes(v: &str) -> Result<Vec<u64>, ConfigError> {
    let mut out = Vec::new();
    for item in v.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let code = item.parse::<u64>().map_err(|_| ConfigError::XidCode {
            value: v.to_owned(),
            item: item.to_owned(),
        })?;
        out.push(code);
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Checks a Go duration (`10s`, `1m30s`, `500ms`).
fn go_duration(flag: &'static str, value: &str) -> Result<std::time::Duration, ConfigError> {
    crate::base::duration::parse_go(value).map_err(|why| ConfigError::Duration {
        flag,
        value: value.to_owned(),
        why,
    })
}

impl Cli {
    /// Merges `--config-file` (when given) and validates for a real node ([`Site::host`]):
    /// how tests and benchmarks get a [`Config`] from flags. The daemon and `check` merge
    /// first, start what `--simulate` asks for, then validate for that [`Site`].
    pub fn validate(&self) -> Result<Config, ConfigError> {
        self.clone().merge_config_file()?.validate(&Site::host())
    }
}

impl Settings {
    /// The simulated node `--simulate` asks for; `None` without it.
    pub fn simulation(&self) -> Result<Option<Simulation>, ConfigError> {
        let Some(scenario) = self.cli.simulator.simulate.clone() else {
            return Ok(None);
        };
        Ok(Some(Simulation {
            scenario,
            seed: self.cli.simulator.simulate_seed,
            nvml_lib: nvml_lib(self.cli.sampling.nvml_lib.as_ref())?,
        }))
    }

    /// The exporter's own log, as the flags set it (read before validation, so that what
    /// starts before it can log).
    pub fn log(&self) -> LogConfig {
        LogConfig {
            debug: self.cli.log.debug,
            json: self.cli.log.log_format == LogFormat::Json,
        }
    }

    /// Validates the merged settings into the [`Config`] the exporter runs with on `site`:
    /// nothing changes it afterwards. The checks run in a fixed order (the first refused value
    /// is the one reported): the collect interval, the listen address, the reader's settings,
    /// the cardinality controls, attribution and the Kubernetes writes, the HTTP timeouts, the
    /// health hold, DCGM, the NVML library.
    pub fn validate(&self, site: &Site) -> Result<Config, ConfigError> {
        let cli = &self.cli;
        let collect_ms = self.collect_interval_ms()?;
        address::parse_address(
            &self.origin_of(Setting::Address).to_string(),
            &cli.web.address,
        )?;
        let profile = cli.exposition.compatibility;
        let reader = self.reader_options(collect_ms, profile)?;
        let controls = cardinality::controls(cli, profile, &|s| self.origin_of(s).to_string())?;
        let mut warnings = self.notes.clone();
        let kubernetes = self.attribution(site, profile, &mut warnings)?;
        if let Some(gaps) = profile.gaps() {
            warnings.push(format!(
                "--compatibility {}: unverified: {gaps}",
                profile.name()
            ));
        }
        warnings.extend(ignored::warnings(&cli.ignored));
        let serving = self.serving()?;
        let health = HealthConfig {
            hold: timeout(
                "--health-hold",
                &cli.health.health_hold,
                crate::health::DEFAULT_HOLD,
            )?,
            require_gpus: cli.health.health_require_gpus,
            node_conditions: cli.health.kubernetes_node_conditions,
            events: cli.health.kubernetes_events,
        };
        let tick_interval = reader.collections.tick();
        let dcgm = dcgm::options(cli, self.dcgm_watch, site, tick_interval, &mut warnings)?;
        Ok(Config {
            hostname: (!cli.exposition.no_hostname)
                .then(|| site.hostname(std::env::var_os("NODE_NAME").is_some(), node_hostname)),
            reader,
            tick_interval,
            exposition: ExpositionConfig {
                profile,
                use_old_namespace: cli.exposition.use_old_namespace,
                replace_blanks_in_model_name: cli.exposition.replace_blanks_in_model_name,
                nvlink_links: cli.sampling.nvlink_links,
                cardinality: controls.filter,
                max_labels_per_series: controls.max_labels,
                own_families: controls.own_families,
                family_filters: controls.family_filters,
                shape: controls.shape,
                enable_exporter_metrics: cli.exposition.enable_exporter_metrics.unwrap_or(false),
            },
            serving,
            health,
            dcgm,
            kubernetes,
            hpc_job_mapping_dir: cli.kubernetes.hpc_job_mapping_dir.clone(),
            nvml_lib: match site.nvml_lib() {
                Some(p) => Some(p),
                None => nvml_lib(cli.sampling.nvml_lib.as_ref())?,
            },
            log: self.log(),
            counters: self.counters_choice(),
            config_file: self.config_file.clone(),
            warnings,
            debug_notes: cli
                .blank_variables
                .iter()
                .map(|v| {
                    format!("environment variable {v} is set but blank: not read, as if unset")
                })
                .collect(),
        })
    }

    /// `-c/--collect-interval` (or `collection.interval`), at least [`super::MIN_INTERVAL_MS`].
    fn collect_interval_ms(&self) -> Result<u64, ConfigError> {
        let ms = self
            .cli
            .sampling
            .collect_interval
            .unwrap_or(DEFAULT_INTERVAL_MS);
        self.interval_ms(Setting::CollectInterval, ms)
    }

    /// An interval `setting` of `ms` milliseconds, refused under [`super::MIN_INTERVAL_MS`]
    /// naming where it came from: every interval flag and variable, by the one check that the
    /// file's interval keys have too ([`super::Origin::at_least_min_interval`]).
    pub(super) fn interval_ms(&self, setting: Setting, ms: u64) -> Result<u64, ConfigError> {
        self.origin_of(setting)
            .at_least_min_interval(Duration::from_millis(ms), ms)?;
        Ok(ms)
    }

    /// The NVML reader's options: the devices (`-d`; `-s` and `-p` checked for syntax), the
    /// collection plan on the collect interval `collect_ms`, the Xid and clock-event windows
    /// and the Xid codes at 0; the GPU's device fields repeated on its instances when the flag
    /// or `profile` asks.
    fn reader_options(
        &self,
        collect_ms: u64,
        profile: Profile,
    ) -> Result<ReaderOptions, ConfigError> {
        let cli = &self.cli;
        let devices = DeviceSelection::parse("-d/--devices", &cli.sampling.devices)?;
        DeviceSelection::check_syntax("-s/--switch-devices", &cli.dcgm.switch_devices)?;
        DeviceSelection::check_syntax("-p/--cpu-devices", &cli.ignored.cpu_devices)?;
        for (flag, ms) in [
            (
                "-x/--xid-count-window-size",
                cli.sampling.xid_count_window_size,
            ),
            (
                "--clock-events-count-window-size",
                cli.sampling.clock_events_count_window_size,
            ),
        ] {
            if ms == 0 {
                return Err(ConfigError::Zero { flag });
            }
        }
        let xid_initialized_codes = parse_xid_codes(&cli.sampling.xid_initialized_codes)?;
        let collections = Collections {
            base: Duration::from_millis(collect_ms),
            groups: self.collections.clone(),
        };
        Ok(ReaderOptions {
            collections: std::sync::Arc::new(collections),
            devices,
            mig_repeat_device_fields: cli.sampling.mig_repeat_device_fields
                || profile.repeats_device_fields(),
            nvlink_throughput: cli.sampling.nvlink_links == NvlinkLinks::PerLink,
            xid_count_window: Duration::from_millis(cli.sampling.xid_count_window_size),
            clock_events_count_window: Duration::from_millis(
                cli.sampling.clock_events_count_window_size,
            ),
            xid_initialized_codes,
            ..ReaderOptions::default()
        })
    }

    /// Attribution on `site` (`None` without `-k` and `--simulate`), the Kubernetes writes'
    /// needs checked against it, and the pod labels named as `profile` names them.
    fn attribution(
        &self,
        site: &Site,
        profile: Profile,
        warnings: &mut Vec<String>,
    ) -> Result<Option<KubernetesOptions>, ConfigError> {
        let cli = &self.cli;
        let mut kubernetes = self
            .kubernetes_options(warnings)?
            .map(|k| site.kubernetes(k));
        let node_known = cli.simulator.simulate.is_some()
            || kubernetes.as_ref().is_some_and(|k| k.node_name.is_some());
        cli.health.check(kubernetes.is_some(), node_known)?;
        if let Some(labels) = kubernetes.as_mut().and_then(|k| k.join.pod_labels.as_mut()) {
            labels.set_collision_prefix(profile.pod_label_collision_prefix());
            labels.set_conflict_suffix(profile.pod_label_conflict_suffix());
            if profile.drops_pod_labels_named_like_the_pod() {
                let old = cli.exposition.use_old_namespace;
                let mut names: Vec<&'static str> =
                    [labels::POD, labels::NAMESPACE, labels::CONTAINER]
                        .iter()
                        .map(|l| l.spelt(old))
                        .collect();
                if cli.kubernetes.kubernetes_enable_pod_uid {
                    names.push(labels::POD_UID.name);
                }
                labels.set_dropped(names);
            }
        }
        Ok(kubernetes)
    }

    /// The listener and the HTTP side: the address as given, the web configuration file, the
    /// scrape and connection limits, the read and write timeouts.
    fn serving(&self) -> Result<ServingConfig, ConfigError> {
        let web = &self.cli.web;
        Ok(ServingConfig {
            address: web.address.clone(),
            config_file: web
                .web_config_file
                .clone()
                .filter(|p| !p.as_os_str().is_empty()),
            max_concurrent_scrapes: web
                .max_concurrent_scrapes
                .unwrap_or(DEFAULT_MAX_CONCURRENT_SCRAPES),
            read_timeout: timeout(
                "--web-read-timeout",
                &web.web_read_timeout,
                DEFAULT_WEB_READ_TIMEOUT,
            )?,
            write_timeout: timeout(
                "--web-write-timeout",
                &web.web_write_timeout,
                DEFAULT_WEB_WRITE_TIMEOUT,
            )?,
            max_connections: web.web_max_connections as usize,
        })
    }

    /// Where the counter set comes from: `-f` (or the file's `metrics.file`), the file's
    /// inline `metrics.fields`, else the default path when it exists, else the built-in set.
    fn counters_choice(&self) -> CountersChoice {
        match (&self.cli.sampling.counters_file, &self.inline_counters) {
            (None, Some((origin, csv))) => CountersChoice::Inline(origin.clone(), csv.clone()),
            (Some(p), _) => CountersChoice::File(Some(p.clone())),
            (None, None) => {
                let default = std::path::Path::new(DEFAULT_COLLECTORS);
                CountersChoice::File(default.exists().then(|| default.to_path_buf()))
            }
        }
    }
}

/// A Go duration flag's value (`flag`), or `default` when it is not given or blank.
fn timeout(
    flag: &'static str,
    value: &Option<String>,
    default: Duration,
) -> Result<Duration, ConfigError> {
    match value.as_deref() {
        Some(v) if !v.is_empty() => go_duration(flag, v),
        _ => Ok(default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_support::cli;

    #[test]
    fn dcgm_flag_names_parse() {
        let c = cli(&[
            "-f", "/x.csv", "-a", ":9500", "-c", "1000", "-k", "-o", "-n", "-d", "f",
        ]);
        assert_eq!(
            c.sampling.counters_file.as_deref(),
            Some(std::path::Path::new("/x.csv"))
        );
        assert_eq!(c.web.address, ":9500");
        assert_eq!(c.sampling.collect_interval, Some(1000));
        assert!(c.kubernetes.enabled && c.exposition.use_old_namespace && c.exposition.no_hostname);
        let cfg = c.validate().unwrap();
        assert!(cfg.hostname.is_none());
        let k = cfg.kubernetes.expect("-k enables pod attribution");
        assert_eq!(
            k.kubelet.socket,
            PathBuf::from("/var/lib/kubelet/pod-resources/kubelet.sock")
        );
        assert!(k.pod_metadata && k.process_metrics && !k.dra && k.join.pod_labels.is_none());
        assert!(!cfg.warnings.iter().any(|w| w.contains("--kubernetes")));
    }

    #[test]
    fn kubernetes_flags_are_validated_and_named() {
        // A bad GPU id type is clap's refusal now, naming the flag and the accepted values.
        let e = Config::from_args(&["-k", "--kubernetes-gpu-id-type", "serial"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("--kubernetes-gpu-id-type"), "{e}");
        assert!(e.contains("[possible values: uid, device-name]"), "{e}");
        let e = cli(&[
            "-k",
            "--kubernetes-enable-pod-labels",
            "--kubernetes-pod-label-allowlist-regex",
            "app,(broken",
        ])
        .validate()
        .unwrap_err()
        .to_string();
        assert!(e.contains("--kubernetes-pod-label-allowlist-regex"), "{e}");
        assert!(e.contains("(broken"), "{e}");
        let e = cli(&["-k", "--pod-resources-timeout", "5"])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(e.contains("--pod-resources-timeout"), "{e}");
        // Kubernetes flags without -k do nothing, and say so.
        let cfg = cli(&["--kubernetes-enable-dra"]).validate().unwrap();
        assert!(cfg.kubernetes.is_none());
        assert!(
            cfg.warnings
                .iter()
                .any(|w| w.contains("--kubernetes-enable-dra") && w.contains("-k")),
            "{:?}",
            cfg.warnings
        );
        // Pod labels and UID need the pod watch even when metadata is turned off.
        let cfg = cli(&[
            "-k",
            "--kubernetes-pod-metadata=false",
            "--kubernetes-enable-pod-uid",
            "--nvidia-resource-names",
            "example.com/a100, ",
        ])
        .validate()
        .unwrap();
        let k = cfg.kubernetes.unwrap();
        assert!(k.pod_metadata && k.join.pod_uid);
        assert_eq!(k.join.extra_resources, ["example.com/a100"]);
        // DRA reads ResourceSlices and needs no pod watch (the chart's gpuCluster role has none).
        let cfg = cli(&[
            "-k",
            "--kubernetes-pod-metadata=false",
            "--kubernetes-enable-dra",
        ])
        .validate()
        .unwrap();
        let k = cfg.kubernetes.unwrap();
        assert!(k.dra && !k.pod_metadata);
    }

    #[test]
    fn profiles_rename_colliding_pod_labels_their_way() {
        use crate::sources::kube::pod_labels::pod_label_pairs;
        let pod: std::collections::BTreeMap<String, String> = [
            ("pod", "p"),
            ("a.b", "1"),
            ("a/b", "2"),
            ("pod-uid", "u"),
            ("pod_name", "n"),
            ("gpu", "g"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into();
        for (profile, extra, want) in [
            (
                "native",
                &[][..],
                vec![
                    ("a_b", "1"),
                    ("label_gpu", "g"),
                    ("label_pod", "p"),
                    ("label_pod_name", "n"),
                    ("label_pod_uid", "u"),
                ],
            ),
            // dcgm-exporter 4.8.2 leaves out a pod label named like a pod-attribution label
            // it writes on the series (pod, namespace, container; pod_uid when on; the 1.x
            // names with -o); any other collision still gets `label_`, where 4.8.2 wrote a
            // duplicate label name (a scrape Prometheus refuses).
            (
                "dcgm-4.8.2",
                &[],
                vec![
                    ("a_b", "1"),
                    ("label_gpu", "g"),
                    ("label_pod_name", "n"),
                    ("label_pod_uid", "u"),
                ],
            ),
            (
                "dcgm-4.8.2",
                &["--kubernetes-enable-pod-uid"],
                vec![("a_b", "1"), ("label_gpu", "g"), ("label_pod_name", "n")],
            ),
            (
                "dcgm-4.8.2",
                &["-o"],
                vec![
                    ("a_b", "1"),
                    ("label_gpu", "g"),
                    ("label_pod", "p"),
                    ("label_pod_uid", "u"),
                ],
            ),
            (
                "dcgm-4.8.4",
                &[],
                vec![
                    ("a_b_conflict1", "1"),
                    ("a_b_conflict2", "2"),
                    ("pod_label_gpu", "g"),
                    ("pod_label_pod", "p"),
                    ("pod_label_pod_name", "n"),
                    ("pod_label_pod_uid", "u"),
                ],
            ),
        ] {
            let mut args = vec![
                "-k",
                "--kubernetes-enable-pod-labels",
                "--compatibility",
                profile,
            ];
            args.extend_from_slice(extra);
            let cfg = cli(&args).validate().unwrap();
            let allow = cfg.kubernetes.unwrap().join.pod_labels.unwrap();
            let want: Vec<_> = want
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            assert_eq!(pod_label_pairs(&pod, &allow), want, "{profile} {extra:?}");
        }
    }

    #[test]
    fn simulate_defaults_to_h100_scenario() {
        assert_eq!(
            cli(&["--simulate"]).simulator.simulate.as_deref(),
            Some("h100-mig")
        );
        assert_eq!(
            cli(&["--simulate", "a100-l4"])
                .simulator
                .simulate
                .as_deref(),
            Some("a100-l4")
        );
        assert_eq!(cli(&[]).simulator.simulate, None);
    }

    #[test]
    fn bad_flags_name_the_flag() {
        let e = cli(&["-c", "5"]).validate().unwrap_err().to_string();
        assert!(e.contains("--collect-interval"), "{e}");
        let e = cli(&["-a", "nope"]).validate().unwrap_err().to_string();
        assert!(e.contains("--address"), "{e}");
        // `--web-config-file /nonexistent/w.yml` is loaded by main, not here: the same
        // assertion runs against the binary in tests/web_config.rs
        // (`bad_web_config_files_stop_startup_naming_file_and_key`).
        let e = cli(&["-d", "g:1-x"]).validate().unwrap_err().to_string();
        assert!(e.starts_with("-d/--devices \"g:1-x\": "), "{e}");
        assert!(e.contains("\"1-x\" is not a GPU index"), "{e}");
        let e = cli(&["-s", "x"]).validate().unwrap_err().to_string();
        assert!(e.starts_with("-s/--switch-devices \"x\": "), "{e}");
        let e = cli(&["-p", "g:4-2"]).validate().unwrap_err().to_string();
        assert!(e.starts_with("-p/--cpu-devices \"g:4-2\": "), "{e}");
        let e = cli(&["-x", "0"]).validate().unwrap_err().to_string();
        assert!(e.starts_with("-x/--xid-count-window-size 0"), "{e}");
        let e = cli(&["--xid-initialized-codes", "48,x9"])
            .validate()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--xid-initialized-codes") && e.contains("\"x9\""),
            "{e}"
        );
    }

    #[test]
    fn file_interval_keys_and_flags_share_the_one_minimum() {
        use crate::config::file::ConfigFileError;
        use crate::config::{Origin, TooShort};
        let dir = tempfile::tempdir().unwrap();
        let file = |name: &str, body: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, body).unwrap();
            p
        };
        let group = file(
            "group.yaml",
            "version: 1\ncollection:\n  watchGroups: [{name: a, interval: 99ms, \
             fields: [DCGM_FI_DEV_GPU_TEMP]}]\n",
        );
        let interval = file("interval.yaml", "version: 1\ncollection: {interval: 1ms}\n");
        // The flags' refusal and the file's are one check's: the same TooShort, naming its
        // origin (the flag, or the file and key) and the value as given.
        let too_short = |args: &[&str]| -> TooShort {
            match cli(args).validate().map(|_| ()) {
                Err(ConfigError::TooShort(t) | ConfigError::File(ConfigFileError::TooShort(t))) => {
                    t
                }
                other => panic!("{args:?}: {other:?}"),
            }
        };
        let at = |p: &std::path::Path, key: &'static str| Origin::File {
            file: p.to_owned(),
            key: key.into(),
        };
        let g = group.to_str().unwrap();
        let i = interval.to_str().unwrap();
        for (args, origin, value) in [
            (
                vec!["--config-file", g],
                at(&group, "collection.watchGroups[0].interval"),
                "\"99ms\"",
            ),
            // The file's interval is refused even where -c overrides it, as before.
            (
                vec!["--config-file", i, "-c", "1000"],
                at(&interval, "collection.interval"),
                "\"1ms\"",
            ),
            (
                vec!["-c", "50"],
                Origin::Flag("-c/--collect-interval"),
                "50",
            ),
            (
                vec!["--pod-resources-timeout", "99"],
                Origin::Flag("--pod-resources-timeout"),
                "99",
            ),
        ] {
            let t = too_short(&args);
            assert_eq!(
                t,
                TooShort {
                    origin: origin.clone(),
                    value: value.to_owned(),
                    min: 100,
                },
                "{args:?}"
            );
            assert_eq!(
                t.to_string(),
                format!("{origin} {value}: must be at least 100 (milliseconds)")
            );
        }
        let e = too_short(&["--config-file", g]).to_string();
        assert_eq!(
            e,
            format!(
                "--config-file {g}: collection.watchGroups[0].interval \"99ms\": must be at \
                 least 100 (milliseconds)"
            )
        );
    }

    #[test]
    fn xid_and_mig_options() {
        let cfg = cli(&[]).validate().unwrap();
        // No zero series by default (the series budget); the alerts see a first Xid without.
        assert!(cfg.reader.xid_initialized_codes.is_empty());
        assert_eq!(cfg.reader.xid_count_window, Duration::from_secs(300));
        assert!(!cfg.reader.mig_repeat_device_fields);
        let cfg = cli(&[
            "--xid-initialized-codes",
            " 79, 48,79 ",
            "-x",
            "60000",
            "--clock-events-count-window-size",
            "1000",
            "--mig-repeat-device-fields",
        ])
        .validate()
        .unwrap();
        assert_eq!(cfg.reader.xid_initialized_codes, vec![48, 79]);
        assert_eq!(cfg.reader.xid_count_window, Duration::from_secs(60));
        assert_eq!(cfg.reader.clock_events_count_window, Duration::from_secs(1));
        assert!(cfg.reader.mig_repeat_device_fields);
        let cfg = cli(&["--xid-initialized-codes", ""]).validate().unwrap();
        assert!(cfg.reader.xid_initialized_codes.is_empty());
    }

    #[test]
    fn devices_flag_selects() {
        assert!(cli(&[]).validate().unwrap().reader.devices.is_all());
        let cfg = cli(&["-d", "g:0,1,i:2.7-9,3"]).validate().unwrap();
        assert!(cfg.reader.devices.wants_gpu(1) && !cfg.reader.devices.wants_gpu(2));
        assert!(cfg.reader.devices.wants_instance(2, 8) && cfg.reader.devices.wants_instance(3, 1));
        assert_eq!(
            cfg.reader.devices.describe(),
            "GPUs 0,1; MIG instances 2.7-9, all on GPU 3"
        );
        // The CPU list is syntax-checked only (its entities are not GPUs) and warned; the switch
        // list narrows the NVSwitches and their ports (DCGM's), so it is not warned.
        let cfg = cli(&["-s", "i:0-127", "-p", "g:0;i:0-255"])
            .validate()
            .unwrap();
        assert!(
            !cfg.warnings
                .iter()
                .any(|w| w.contains("-s/--switch-devices"))
        );
        assert!(cfg.warnings.iter().any(|w| w.contains("-p/--cpu-devices")));
    }
}
