//! The DCGM client's settings from the flags: `--dcgm-mode`, `-r/--remote-hostengine-info`,
//! `--dcgm-lib` and `--watch-max-keep-age`/`--watch-max-keep-samples`, validated once into
//! `dcgm::DcgmOptions`, errors naming the flag.
//!
//! It must not load the library or connect.

use std::path::PathBuf;
use std::time::Duration;

use super::cli::Cli;
use crate::base::bounded_read::{ReadError, check_regular};

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
    #[error("--dcgm-mode {0:?}: {1}")]
    Mode(String, &'static str),
    /// `-r/--remote-hostengine-info` is not an address.
    #[error("-r/--remote-hostengine-info (or DCGM_REMOTE_HOSTENGINE_INFO) {0}")]
    Hostengine(#[source] crate::dcgm::AddressError),
    /// `--watch-max-keep-age` is not a duration.
    #[error("--watch-max-keep-age {0:?}: not a duration (expected Go's form, e.g. 10m, 30s)")]
    KeepAge(String),
    /// `--watch-max-keep-samples` is not a whole number of at least 0.
    #[error("--watch-max-keep-samples {0:?}: expected a whole number of samples, 0 for no limit")]
    KeepSamples(String),
}

/// `--dcgm-lib` as given, once its kind is checked (one `stat`), as `--nvml-lib` is: a FIFO,
/// a device or a directory is refused; a missing file is left to the loader to report.
fn dcgm_lib(path: Option<&PathBuf>) -> Result<Option<PathBuf>, DcgmConfigError> {
    let Some(p) = path else { return Ok(None) };
    match check_regular(p) {
        Err(source @ ReadError::NotRegular(_)) => Err(DcgmConfigError::Lib {
            path: p.clone(),
            source,
        }),
        _ => Ok(Some(p.clone())),
    }
}

/// The DCGM client's settings: `--dcgm-mode`, `-r`, `--dcgm-lib`, `--watch-max-keep-*`; the
/// deadline from the tick interval. Also whether `--dcgm-mode` was given (with `--simulate`,
/// an unset mode becomes embedded on the simulated library).
pub(super) fn options(
    cli: &Cli,
    tick: Duration,
    warnings: &mut Vec<String>,
) -> Result<(crate::dcgm::DcgmOptions, bool), DcgmConfigError> {
    use crate::dcgm::{DcgmOptions, Mode, parse_address};
    let remote = match cli.remote_hostengine_info.as_deref().map(str::trim) {
        Some(r) if !r.is_empty() => Some(parse_address(r).map_err(DcgmConfigError::Hostengine)?),
        _ => None,
    };
    let given = cli
        .dcgm_mode
        .as_deref()
        .map(str::trim)
        .filter(|m| !m.is_empty());
    let mode = match (given, remote) {
        (None, Some(a)) | (Some("remote"), Some(a)) => Mode::Remote(a),
        (None, None) | (Some("off"), None) => Mode::Off,
        (Some("remote"), None) => {
            return Err(DcgmConfigError::Mode(
                "remote".into(),
                "needs the hostengine's address in -r/--remote-hostengine-info (or \
                 DCGM_REMOTE_HOSTENGINE_INFO)",
            ));
        }
        (Some(m @ ("embedded" | "off")), Some(a)) => {
            warnings.push(format!(
                "-r/--remote-hostengine-info {a} is not used with --dcgm-mode {m}"
            ));
            if m == "off" {
                Mode::Off
            } else {
                Mode::Embedded
            }
        }
        (Some("embedded"), None) => Mode::Embedded,
        (Some(other), _) => {
            return Err(DcgmConfigError::Mode(
                other.to_owned(),
                "expected remote, embedded or off",
            ));
        }
    };
    let max_keep_age = match cli.watch_max_keep_age.as_deref().map(str::trim) {
        Some(v) if !v.is_empty() => match v.parse::<u64>() {
            Ok(secs) => Duration::from_secs(secs),
            Err(_) => go_parse_duration::parse_duration(v)
                .ok()
                .and_then(|ns| u64::try_from(ns).ok())
                .map(Duration::from_nanos)
                .ok_or_else(|| DcgmConfigError::KeepAge(v.to_owned()))?,
        },
        _ => crate::dcgm::DEFAULT_MAX_KEEP_AGE,
    };
    let max_keep_samples = match cli.watch_max_keep_samples.as_deref().map(str::trim) {
        Some(v) if !v.is_empty() => v
            .parse::<i32>()
            .ok()
            .filter(|n| *n >= 0)
            .ok_or_else(|| DcgmConfigError::KeepSamples(v.to_owned()))?,
        _ => 0,
    };
    let opts = DcgmOptions {
        mode,
        lib: dcgm_lib(cli.dcgm_lib.as_ref())?,
        max_keep_age,
        max_keep_samples,
        deadline: crate::dcgm::deadline_for(tick),
    };
    Ok((opts, given.is_some()))
}
