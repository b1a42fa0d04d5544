//! The client's settings ([`DcgmOptions`]): the mode (a remote one with its hostengine
//! address, `dcgm::address`), the library, the watch limits, the log level and the per-tick
//! deadline.
//!
//! Plain data and parsing; it must not call DCGM or log.

use std::path::PathBuf;
use std::time::Duration;

use super::address::HostengineAddress;
use crate::gpu::switch_selection::SwitchSelection;

/// dcgm-exporter 4.8.4's default `--watch-max-keep-age`.
pub const DEFAULT_MAX_KEEP_AGE: Duration = Duration::from_secs(600);
/// The longest the sampler waits for the DCGM thread in one tick.
pub const MAX_DEADLINE: Duration = Duration::from_secs(2);
/// The shortest wait: a tick of 100 ms still leaves DCGM a chance to answer.
pub const MIN_DEADLINE: Duration = Duration::from_millis(50);

/// How the exporter reaches DCGM.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// No DCGM.
    Off,
    /// An in-process hostengine (`dcgmStartEmbedded`).
    Embedded,
    /// A standalone hostengine (`dcgmConnect_v2`).
    Remote(HostengineAddress),
}

impl Mode {
    /// The mode's name as `--dcgm-mode` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Embedded => "embedded",
            Mode::Remote(_) => "remote",
        }
    }
}

/// The client's settings.
#[derive(Debug, Clone)]
pub struct DcgmOptions {
    /// How DCGM is reached.
    pub mode: Mode,
    /// `--dcgm-lib`: the library path instead of the dynamic loader's search.
    pub lib: Option<PathBuf>,
    /// `--watch-max-keep-age`.
    pub max_keep_age: Duration,
    /// `--watch-max-keep-samples` (0: no limit).
    pub max_keep_samples: i32,
    /// How long the sampler waits for the DCGM thread in one tick ([`deadline_for`]).
    pub deadline: Duration,
    /// `-s/--switch-devices`: the NVSwitches and ports whose rows are watched.
    pub switches: SwitchSelection,
    /// `--enable-dcgm-log` with `--dcgm-log-level`: an embedded hostengine logs to standard
    /// output at this `DcgmLoggingSeverity_t`; `None`: DCGM's own default (its environment).
    pub log_severity: Option<i32>,
}

/// `DcgmLoggingSeverity_t`'s "no logging", `--dcgm-log-level`'s default.
pub const LOG_NONE: i32 = dcgm_abi::DcgmLoggingSeverityNone;

/// The severity `--dcgm-log-level` names (DCGM's names, in any case), or `None` for a word
/// that is not one of them.
pub fn parse_log_level(text: &str) -> Option<i32> {
    dcgm_abi::DCGM_LOGGING_SEVERITY_NAMES
        .iter()
        .position(|name| name.eq_ignore_ascii_case(text.trim()))
        .and_then(|i| i32::try_from(i).ok())
        .map(|i| dcgm_abi::DcgmLoggingSeverityNone + i)
}

impl Default for DcgmOptions {
    fn default() -> Self {
        Self {
            mode: Mode::Off,
            lib: None,
            max_keep_age: DEFAULT_MAX_KEEP_AGE,
            max_keep_samples: 0,
            deadline: MAX_DEADLINE,
            switches: SwitchSelection::default(),
            log_severity: None,
        }
    }
}

/// The DCGM deadline for a tick interval: a quarter of it, within [`MIN_DEADLINE`] and
/// [`MAX_DEADLINE`], so a hung hostengine costs a tick at most that.
pub fn deadline_for(tick: Duration) -> Duration {
    (tick / 4).clamp(MIN_DEADLINE, MAX_DEADLINE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_deadline_is_well_under_the_tick() {
        assert_eq!(
            deadline_for(Duration::from_secs(1)),
            Duration::from_millis(250)
        );
        assert_eq!(deadline_for(Duration::from_secs(30)), MAX_DEADLINE);
        assert_eq!(deadline_for(Duration::from_millis(100)), MIN_DEADLINE);
    }
}
