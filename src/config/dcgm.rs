//! The DCGM client's settings from the flags: `--dcgm-mode`, `-r/--remote-hostengine-info`,
//! `--dcgm-lib`, `--enable-dcgm-log`/`--dcgm-log-level`, and
//! `--watch-max-keep-age`/`--watch-max-keep-samples` (or the configuration
//! file's `sources.dcgm.watch`, merged in first), validated once into the client's own
//! options, `dcgm::DcgmOptions`, with the per-tick deadline the tick interval sets; errors
//! name the flag.
//!
//! It must not load the library or connect.

use std::path::PathBuf;
use std::time::Duration;

use super::cli::Cli;
use super::origin::{FileMerge, Setting};
use super::values::{DcgmLogLevel, DcgmMode};
use crate::base::bounded_read::{ReadError, refuse_not_regular};
use crate::base::shown::quoted;
use crate::dcgm::DcgmOptions;

/// A DCGM setting that cannot be used; each names its flag.
#[derive(Debug, thiserror::Error)]
pub enum DcgmConfigError {
    /// `--dcgm-lib` names something other than a regular file.
    #[error("--dcgm-lib {}: {source}", path.display())]
    Lib {
        /// The path as given.
        path: PathBuf,
        /// What it is.
        source: ReadError,
    },
    /// `--dcgm-mode` names no mode, or remote without an address.
    #[error("--dcgm-mode {}: {why}", quoted(.0), why = .1)]
    Mode(String, &'static str),
    /// `-r/--remote-hostengine-info` is not an address.
    #[error("-r/--remote-hostengine-info (or DCGM_REMOTE_HOSTENGINE_INFO) {0}")]
    Hostengine(#[source] crate::dcgm::HostengineAddressError),
    /// `--watch-max-keep-age` is not a duration.
    #[error(
        "--watch-max-keep-age {}: {why} (expected a duration of 0 or more, e.g. \
         --watch-max-keep-age 10m)",
        quoted(.0),
        why = .1
    )]
    KeepAge(String, crate::base::duration::DurationError),
    /// `--watch-max-keep-samples` is not a whole number of at least 0.
    #[error(
        "--watch-max-keep-samples {}: expected a whole number of samples, 0 for no limit",
        quoted(.0)
    )]
    KeepSamples(String),
    /// `-s/--switch-devices` does not parse (the message names the flag and the item).
    #[error(transparent)]
    SwitchDevices(Box<crate::gpu::selection::DeviceSpecError>),
    /// A `--dcgm-log-level` value that DCGM's table of level names does not hold (clap has
    /// checked the value against [`DcgmLogLevel`], so the two tables would disagree).
    #[error(
        "--dcgm-log-level (or DCGM_EXPORTER_DCGM_LOG_LEVEL) {0:?}: not a DCGM log level \
         (expected NONE, FATAL, ERROR, WARN, INFO, DEBUG or VERB)"
    )]
    LogLevel(String),
}

/// `--enable-dcgm-log` and `--dcgm-log-level`, as dcgm-exporter takes them: with the log
/// enabled, an embedded hostengine logs to standard output at the level (default `NONE`, as
/// there). A mode without an embedded hostengine, a level without the log, or the log at
/// `NONE` is a warning, not an error; a level that is not DCGM's is an error.
fn log_severity(
    cli: &Cli,
    mode: &crate::dcgm::Mode,
    warnings: &mut Vec<String>,
) -> Result<Option<i32>, DcgmConfigError> {
    use crate::dcgm::{LOG_NONE, Mode, parse_log_level};
    let level = cli.dcgm.dcgm_log_level;
    if !cli.dcgm.enable_dcgm_log {
        if let Some(level) = level {
            warnings.push(format!(
                "--dcgm-log-level {} has no effect without --enable-dcgm-log",
                level.name()
            ));
        }
        return Ok(None);
    }
    if *mode != Mode::Embedded {
        warnings.push(match mode {
            Mode::Remote(a) => format!(
                "--enable-dcgm-log has no effect with the remote hostengine {a}: its log is \
                 set where it runs (nv-hostengine --log-level, --log-filename)"
            ),
            _ => "--enable-dcgm-log has no effect with --dcgm-mode off (no DCGM)".to_owned(),
        });
        return Ok(None);
    }
    let name = level.unwrap_or(DcgmLogLevel::None).name();
    let severity = parse_log_level(&name).ok_or_else(|| DcgmConfigError::LogLevel(name.clone()))?;
    if severity == LOG_NONE {
        warnings.push(format!(
            "--enable-dcgm-log with --dcgm-log-level {name} (the default, as in dcgm-exporter) \
             logs nothing: give a level such as ERROR or INFO"
        ));
    }
    Ok(Some(severity))
}

/// `--dcgm-lib` as given, once its kind is checked (one `stat`), as `--nvml-lib` is: a FIFO,
/// a device or a directory is refused; a missing file is left to the loader to report.
fn dcgm_lib(path: Option<&PathBuf>) -> Result<Option<PathBuf>, DcgmConfigError> {
    let Some(p) = path else { return Ok(None) };
    refuse_not_regular(p).map_err(|source| DcgmConfigError::Lib {
        path: p.clone(),
        source,
    })?;
    Ok(Some(p.clone()))
}

/// The configuration file's `sources.dcgm.watch` limits that no flag or variable overrode, as
/// the file typed them (`config::file` checked them).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct FileWatch {
    /// `maxKeepAge`.
    keep_age: Option<Duration>,
    /// `maxKeepSamples`.
    keep_samples: Option<i32>,
}

/// The file's `sources.dcgm.watch` limits (keep age, keep samples) that no flag or variable
/// gave, by the merge's rule (a given flag wins, and a note says so).
pub(super) fn merge_file(
    cli: &Cli,
    (keep_age, keep_samples): (Option<Duration>, Option<i32>),
    m: &mut FileMerge,
) -> FileWatch {
    FileWatch {
        keep_age: m.given(
            cli.dcgm.watch_max_keep_age.is_some(),
            keep_age,
            Setting::WatchMaxKeepAge,
        ),
        keep_samples: m.given(
            cli.dcgm.watch_max_keep_samples.is_some(),
            keep_samples,
            Setting::WatchMaxKeepSamples,
        ),
    }
}

/// The DCGM client's options on `site` for a sampler ticking every `tick_interval`, checked:
/// `--dcgm-mode`, `-r`, `--dcgm-lib`, `--watch-max-keep-*` (else the file's `file`), `-s`,
/// the log. On a simulated node with its DCGM library, an unset mode is embedded and an unset
/// library is the simulated one.
pub(super) fn options(
    cli: &Cli,
    file: FileWatch,
    site: &super::site::Site,
    tick_interval: Duration,
    warnings: &mut Vec<String>,
) -> Result<DcgmOptions, DcgmConfigError> {
    use crate::dcgm::{Mode, parse_hostengine_address};
    let remote = match cli.dcgm.remote_hostengine_info.as_deref().map(str::trim) {
        Some(r) if !r.is_empty() => {
            Some(parse_hostengine_address(r).map_err(DcgmConfigError::Hostengine)?)
        }
        _ => None,
    };
    let given = cli.dcgm.dcgm_mode;
    let mode = match (given, remote) {
        (None | Some(DcgmMode::Remote), Some(a)) => Mode::Remote(a),
        (None | Some(DcgmMode::Off), None) => Mode::Off,
        (Some(DcgmMode::Remote), None) => {
            return Err(DcgmConfigError::Mode(
                "remote".into(),
                "needs the hostengine's address in -r/--remote-hostengine-info (or \
                 DCGM_REMOTE_HOSTENGINE_INFO)",
            ));
        }
        (Some(m @ (DcgmMode::Embedded | DcgmMode::Off)), Some(a)) => {
            let name = if m == DcgmMode::Off {
                "off"
            } else {
                "embedded"
            };
            warnings.push(format!(
                "-r/--remote-hostengine-info {a} is not used with --dcgm-mode {name}"
            ));
            if m == DcgmMode::Off {
                Mode::Off
            } else {
                Mode::Embedded
            }
        }
        (Some(DcgmMode::Embedded), None) => Mode::Embedded,
    };
    let (mode, lib) = site.dcgm(mode, given.is_some(), dcgm_lib(cli.dcgm.dcgm_lib.as_ref())?);
    let max_keep_age = match cli.dcgm.watch_max_keep_age.as_deref().map(str::trim) {
        Some(v) if !v.is_empty() => match v.parse::<u64>() {
            Ok(secs) => Duration::from_secs(secs),
            Err(_) => crate::base::duration::parse_go(v)
                .map_err(|e| DcgmConfigError::KeepAge(v.to_owned(), e))?,
        },
        _ => file.keep_age.unwrap_or(crate::dcgm::DEFAULT_MAX_KEEP_AGE),
    };
    let max_keep_samples = match cli.dcgm.watch_max_keep_samples.as_deref().map(str::trim) {
        Some(v) if !v.is_empty() => v
            .parse::<i32>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| DcgmConfigError::KeepSamples(v.to_owned()))?,
        _ => file.keep_samples.unwrap_or(0),
    };
    let log_severity = log_severity(cli, &mode, warnings)?;
    Ok(DcgmOptions {
        mode,
        lib,
        max_keep_age,
        max_keep_samples,
        deadline: crate::dcgm::deadline_for(tick_interval),
        switches: crate::gpu::switch_selection::SwitchSelection::parse(
            "-s/--switch-devices",
            &cli.dcgm.switch_devices,
        )
        .map_err(|e| DcgmConfigError::SwitchDevices(Box::new(e)))?,
        log_severity,
    })
}

#[cfg(test)]
mod tests {
    use crate::config::Config;
    use crate::dcgm::Mode;
    use std::time::Duration;

    fn err(args: &[&str]) -> String {
        Config::from_args(args)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    }

    fn warnings(args: &[&str]) -> Vec<String> {
        Config::from_args(args)
            .map(|c| c.warnings)
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// `--dcgm-log-level` takes DCGM's level names in any case and refuses others, naming the
    /// flag; the log is set only for an embedded hostengine, and each way of asking for it
    /// without effect is one warning.
    #[test]
    fn the_dcgm_log_flags_set_an_embedded_hostengines_log() {
        let severity = |args: &[&str]| {
            Config::from_args(args)
                .map(|c| c.dcgm.log_severity)
                .unwrap_or_else(|e| panic!("{args:?}: {e}"))
        };
        let embedded = ["--dcgm-mode", "embedded", "--enable-dcgm-log"];
        for (level, want) in [
            ("verb", 6),
            ("DEBUG", 5),
            (" Info ", 4),
            ("warn", 3),
            ("ERROR", 2),
        ] {
            let args = [&embedded[..], &["--dcgm-log-level", level]].concat();
            assert_eq!(severity(&args), Some(want), "{level}");
            assert!(
                warnings(&args).iter().all(|w| !w.contains("dcgm-log")),
                "{level}"
            );
        }
        assert_eq!(severity(&embedded), Some(0));
        assert!(warnings(&embedded).iter().any(
            |w| w.contains("--dcgm-log-level NONE (the default") && w.contains("logs nothing")
        ));
        assert_eq!(severity(&["--dcgm-mode", "embedded"]), None);
        let e = err(&[
            "--dcgm-mode",
            "embedded",
            "--enable-dcgm-log",
            "--dcgm-log-level",
            "LOUD",
        ]);
        assert!(
            e.contains("--dcgm-log-level") && e.contains("'LOUD'") && e.contains("VERB"),
            "{e}"
        );
        // A level without the log.
        let args = ["--dcgm-mode", "embedded", "--dcgm-log-level", "debug"];
        assert_eq!(severity(&args), None);
        assert!(
            warnings(&args)
                .iter()
                .any(|w| w.contains("has no effect without --enable-dcgm-log"))
        );
        // No embedded hostengine.
        let args = [
            "-r",
            "unix:///run/he.sock",
            "--enable-dcgm-log",
            "--dcgm-log-level",
            "info",
        ];
        assert_eq!(severity(&args), None);
        assert!(
            warnings(&args)
                .iter()
                .any(|w| w.contains("remote hostengine unix:///run/he.sock"))
        );
        let args = ["--enable-dcgm-log", "--dcgm-log-level", "info"];
        assert_eq!(severity(&args), None);
        assert!(
            warnings(&args)
                .iter()
                .any(|w| w.contains("--dcgm-mode off"))
        );
    }

    #[test]
    fn the_mode_follows_the_hostengine_address_unless_given() {
        let c = Config::from_args(&["-r", "unix:///run/he.sock"]).ok();
        let mode = c.as_ref().map(|c| c.dcgm.mode.clone());
        assert!(matches!(mode, Some(Mode::Remote(a)) if a.unix && a.target == "/run/he.sock"));
        let c = Config::from_args(&[]).ok();
        assert_eq!(c.map(|c| c.dcgm.mode), Some(Mode::Off));
        // On a simulated node with its DCGM library, an unset mode is embedded on it; a mode
        // or a library given is kept.
        let site = crate::config::Site {
            simulated: Some(crate::config::SimulatedNode {
                node_name: "sim".into(),
                nvml_lib: "/sim/libnvml.so".into(),
                dcgm_lib: Some("/sim/libdcgm.so.4".into()),
                kubelet_socket: "/sim/kubelet.sock".into(),
                proc_root: "/sim/proc".into(),
                dra_claims: false,
            }),
        };
        let on_site = |args: &[&str]| {
            let c = crate::config::test_support::cli(args)
                .merge_config_file()
                .and_then(|s| s.validate(&site))
                .unwrap_or_else(|e| panic!("{args:?}: {e}"));
            (c.dcgm.mode, c.dcgm.lib)
        };
        let sim_lib = Some(std::path::PathBuf::from("/sim/libdcgm.so.4"));
        assert_eq!(on_site(&[]), (Mode::Embedded, sim_lib.clone()));
        assert_eq!(on_site(&["--dcgm-mode", "off"]), (Mode::Off, sim_lib));
        let dir = tempfile::tempdir().unwrap();
        let own = dir.path().join("libdcgm.so.4");
        std::fs::write(&own, "").unwrap();
        assert_eq!(
            on_site(&["--dcgm-lib", own.to_str().unwrap()]),
            (Mode::Embedded, Some(own))
        );
        let c = Config::from_args(&["--dcgm-mode", "embedded", "-c", "1000"]).ok();
        assert_eq!(
            c.as_ref().map(|c| (c.dcgm.mode.clone(), c.dcgm.deadline)),
            Some((Mode::Embedded, Duration::from_millis(250)))
        );
        let c = Config::from_args(&[
            "--watch-max-keep-age",
            "90s",
            "--watch-max-keep-samples",
            "5",
        ]);
        let c = c.ok();
        assert_eq!(
            c.map(|c| (c.dcgm.max_keep_age, c.dcgm.max_keep_samples)),
            Some((Duration::from_secs(90), 5))
        );
    }

    #[test]
    fn dcgm_settings_that_cannot_work_name_their_flag() {
        assert!(err(&["--dcgm-mode", "remote"]).contains("-r/--remote-hostengine-info"));
        let e = err(&["--dcgm-mode", "standalone"]);
        assert!(
            e.contains("--dcgm-mode") && e.contains("[possible values: remote, embedded, off]"),
            "{e}"
        );
        assert!(err(&["-r", "host:0"]).starts_with("-r/--remote-hostengine-info"));
        assert!(err(&["--watch-max-keep-samples=-1"]).starts_with("--watch-max-keep-samples"));
        assert!(err(&["--watch-max-keep-age", "soon"]).starts_with("--watch-max-keep-age"));
        assert!(err(&["--dcgm-lib", "/dev/null"]).starts_with("--dcgm-lib /dev/null"));
    }

    #[test]
    fn the_config_files_watch_limits_apply_unless_a_flag_gives_them() {
        let Ok(dir) = tempfile::tempdir() else {
            panic!("no temporary directory");
        };
        let file = dir.path().join("config.yaml");
        let yaml =
            "version: 2\nsources:\n  dcgm:\n    watch: {maxKeepAge: 2m, maxKeepSamples: 7}\n";
        assert!(std::fs::write(&file, yaml).is_ok());
        let path = file.to_str().unwrap_or_default();
        let c = Config::from_args(&["--config-file", path]).ok();
        assert_eq!(
            c.map(|c| (c.dcgm.max_keep_age, c.dcgm.max_keep_samples)),
            Some((Duration::from_secs(120), 7))
        );
        let c = Config::from_args(&["--config-file", path, "--watch-max-keep-samples", "3"]).ok();
        let Some(c) = c else {
            panic!("the flag and the file do not combine");
        };
        assert_eq!(
            (c.dcgm.max_keep_age, c.dcgm.max_keep_samples),
            (Duration::from_secs(120), 3)
        );
        assert!(
            c.warnings
                .iter()
                .any(|w| w.contains("maxKeepSamples overridden by --watch-max-keep-samples"))
        );
    }

    /// The file's keep age reaches the client as the file wrote it: no text in between that
    /// would round it (it went through whole milliseconds, `1500us` became 1 ms), and an error
    /// about a file value names the file's key.
    #[test]
    fn the_config_files_keep_age_arrives_as_typed() {
        let Ok(dir) = tempfile::tempdir() else {
            panic!("no temporary directory");
        };
        let file = dir.path().join("config.yaml");
        let yaml = "version: 2\nsources:\n  dcgm:\n    watch: {maxKeepAge: 1500us}\n";
        assert!(std::fs::write(&file, yaml).is_ok());
        let path = file.to_str().unwrap_or_default();
        let c = Config::from_args(&["--config-file", path]).ok();
        assert_eq!(
            c.map(|c| c.dcgm.max_keep_age),
            Some(Duration::from_micros(1500))
        );
        let c = Config::from_args(&["--config-file", path, "--watch-max-keep-age", "7"]).ok();
        assert_eq!(c.map(|c| c.dcgm.max_keep_age), Some(Duration::from_secs(7)));
    }
}
