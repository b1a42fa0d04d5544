//! Loading the counter set a validated [`Config`] chose ([`Config::load_counters`]): the
//! counters file (watched for hot reload), the configuration file's `metrics.fields`, or the
//! compatibility profile's built-in set; then the configuration file's collections and the
//! family filter (`--include-families`, `--exclude-families`) checked against the fields
//! loaded: a collection that matches no field, or a filter that serves no GPU family, stops
//! start-up.
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
            self.reader
                .collections
                .check(loaded.set.metrics().map(|r| (r.name.as_str(), r.field)))
                .map_err(|message| file::ConfigFileError::Invalid {
                    file: path.clone(),
                    message: format!("{message} ({})", loaded.origin),
                })?;
        }
        super::cardinality::check_families(
            &loaded.set,
            &self.exposition.cardinality,
            self.exposition.own_families,
            &self.exposition.family_filters,
        )?;
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

    /// Loads the counters of `-f counters` under `args`: the error, if any.
    fn loaded(counters: &str, args: &[&str]) -> Result<(), String> {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("c.csv");
        std::fs::write(&csv, counters).unwrap();
        let mut all = vec!["-f", csv.to_str().unwrap()];
        all.extend_from_slice(args);
        let cfg = Config::from_args(&all).map_err(|e| e.to_string())?;
        cfg.load_counters().map(|_| ()).map_err(|e| e.to_string())
    }

    /// What [`Config::load_counters`] reads is the same whatever the site: the daemon under
    /// `--simulate` keeps the set it loaded for the real site's early check (so the counters
    /// file is read once at start) and runs with the simulated site's [`Config`].
    #[test]
    fn the_counters_loaded_do_not_depend_on_the_site() {
        use crate::config::test_support::cli;
        use crate::config::{SimulatedNode, Site};
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("c.csv");
        std::fs::write(
            &csv,
            "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_POWER_USAGE, gauge, p\n",
        )
        .unwrap();
        let yaml = dir.path().join("c.yaml");
        std::fs::write(
            &yaml,
            "version: 1\ncollection:\n  watchGroups: [{name: a, interval: 1s, \
             fields: [DCGM_FI_DEV_GPU_TEMP]}]\n",
        )
        .unwrap();
        let simulated = Site {
            simulated: Some(SimulatedNode {
                node_name: "sim-node".into(),
                nvml_lib: dir.path().join("libnvidia-ml.so.1"),
                dcgm_lib: Some(dir.path().join("libdcgm.so.4")),
                kubelet_socket: dir.path().join("kubelet.sock"),
                proc_root: dir.path().join("proc"),
                dra_claims: true,
            }),
        };
        let (c, y) = (csv.to_str().unwrap(), yaml.to_str().unwrap());
        for args in [
            &["--simulate", "-f", c, "--config-file", y][..],
            &[
                "--simulate",
                "-f",
                c,
                "-k",
                "--kubernetes-enable-pod-labels",
            ],
            &["--simulate", "--include-families", "DCGM_*", "-f", c],
            &["--simulate"],
        ] {
            let settings = cli(args).merge_config_file().unwrap();
            let load = |site: &Site| {
                let cfg = settings.validate(site).unwrap();
                let l = cfg.load_counters().unwrap();
                (format!("{:?}", l.set), l.origin, l.file.is_some())
            };
            assert_eq!(load(&Site::host()), load(&simulated), "{args:?}");
        }
    }

    /// A family filter that serves none of the GPU families stops start-up naming the flag,
    /// its value and what there is; one that serves any family, the counters file's or the
    /// exporter's own, passes.
    #[test]
    fn a_family_filter_that_serves_nothing_is_refused() {
        let csv = "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_POWER_USAGE, gauge, p\n";
        for args in [
            &["--include-families", "DCGM_FI_DEV_GPU_TEMP"][..],
            &["--include-families", "gpu_health_*"],
            &["--exclude-families", "DCGM_*"],
            &[
                "--compatibility",
                "dcgm-4.8.4",
                "--include-families",
                "gpu_xid_*",
            ],
            &["--include-families", ""],
        ] {
            assert_eq!(loaded(csv, args), Ok(()), "{args:?}");
        }
        for (args, want) in [
            (
                &["--include-families", "NOMATCH_"][..],
                "--include-families \"NOMATCH_\": serves none of the GPU families, only the \
                 exporter's own health (gpu_exporter_*): the counters file has 2 families \
                 (DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_POWER_USAGE) and the exporter's gpu_* families",
            ),
            (
                &["--exclude-families", "*"],
                "--exclude-families \"*\": serves none of the GPU families",
            ),
            (
                &["--exclude-families", "*"],
                "the exclusions match every family",
            ),
            (
                &["--include-families", "DCGM_FI_DEV_GPU"],
                "did you mean \"DCGM_FI_DEV_GPU*\"?",
            ),
            (
                &["--include-families", "dcgm_*"],
                "family names are case-sensitive",
            ),
            (
                &[
                    "--include-families",
                    "DCGM_*",
                    "--exclude-families",
                    "DCGM_FI_*,gpu_*",
                ],
                "--include-families \"DCGM_*\" with --exclude-families \"DCGM_FI_*,gpu_*\": \
                 serves none",
            ),
            (
                &[
                    "--compatibility",
                    "dcgm-4.8.4",
                    "--exclude-families",
                    "DCGM_*",
                ],
                "the counters file has 2 families (DCGM_FI_DEV_GPU_TEMP, \
                 DCGM_FI_DEV_POWER_USAGE); the exclusions",
            ),
        ] {
            let e = loaded(csv, args).unwrap_err();
            assert!(e.contains(want), "{args:?}: {e}");
        }
        // The configuration file's keys are named as the file and key.
        let dir = tempfile::tempdir().unwrap();
        let yaml = dir.path().join("c.yaml");
        std::fs::write(
            &yaml,
            "version: 1\nmetrics:\n  includeFamilies: [\"NOMATCH_*\"]\n",
        )
        .unwrap();
        let e = loaded(csv, &["--config-file", yaml.to_str().unwrap()]).unwrap_err();
        assert!(
            e.contains(&format!(
                "--config-file {}: metrics.includeFamilies \"NOMATCH_*\": serves none of the GPU \
                 families",
                yaml.display()
            )),
            "{e}"
        );
    }

    /// A reloaded counters file that would leave the pod labels less room per series than at
    /// start is refused, saying so; one that leaves as much passes.
    #[test]
    fn a_reload_that_narrows_the_pod_labels_room_is_refused() {
        let cfg = Config::from_args(&[
            "-k",
            "--kubernetes-enable-pod-labels",
            "--max-labels-per-series",
            "30",
            "--series-labels",
            "full",
        ])
        .unwrap();
        let set = |text: &str| parse_counters("new.csv", text).unwrap();
        let narrow = "DCGM_FI_DEV_GPU_TEMP, gauge, t\n";
        let room = cfg.fit_labels(&set(narrow)).unwrap();
        assert!(room.is_some_and(|r| r > 0), "{room:?}");
        let guard = cfg.counters_guard(room);
        assert!(guard(&set(narrow)).is_ok());
        let wider: String = [
            "DCGM_FI_DEV_GPU_TEMP, gauge, t",
            "DCGM_FI_DRIVER_VERSION, label, d",
            "DCGM_FI_NVML_VERSION, label, n",
            "DCGM_FI_DEV_BRAND, label, b",
            "DCGM_FI_DEV_SERIAL, label, s",
            "DCGM_FI_DEV_OEM_INFOROM_VER, label, o",
            "DCGM_FI_DEV_ECC_INFOROM_VER, label, e",
            "DCGM_FI_DEV_POWER_INFOROM_VER, label, p",
            "DCGM_FI_DEV_INFOROM_IMAGE_VER, label, i",
        ]
        .map(|row| format!("{row}\n"))
        .concat();
        let e = guard(&set(&wider)).unwrap_err().to_string();
        assert!(
            e.contains("pod label(s) per series under --max-labels-per-series 30, fewer than")
                && e.contains("restart the exporter to apply it"),
            "{e}"
        );
    }

    /// A reloaded counters file under which the filter would serve nothing is refused with
    /// the start-up message (the set in use stays); one with a matching family passes.
    #[test]
    fn a_reload_that_leaves_no_family_is_refused() {
        let cfg = Config::from_args(&["--include-families", "DCGM_FI_DEV_GPU_*"]).unwrap();
        let set = |text: &str| parse_counters("new.csv", text).unwrap();
        let room = cfg
            .fit_labels(&set("DCGM_FI_DEV_GPU_TEMP, gauge, t\n"))
            .unwrap();
        let guard = cfg.counters_guard(room);
        assert!(guard(&set("DCGM_FI_DEV_GPU_TEMP, gauge, t\n")).is_ok());
        let e = guard(&set("DCGM_FI_DEV_POWER_USAGE, gauge, p\n"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--include-families \"DCGM_FI_DEV_GPU_*\": serves none of the GPU"),
            "{e}"
        );
    }

    #[test]
    fn builtin_counters_parse() {
        let set = parse_counters("builtin", BUILTIN_DEFAULT_COUNTERS).unwrap();
        assert!(set.metrics().count() >= 20);
    }
}
