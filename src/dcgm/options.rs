//! The client's settings ([`DcgmOptions`]): the mode, the hostengine address in
//! dcgm-exporter's forms ([`parse_hostengine_address`]), the watch limits and the per-tick
//! deadline; and the plain data a tick exchanges with the DCGM thread ([`Target`],
//! [`Wanted`]).
//!
//! Plain data and parsing; it must not call DCGM or log.

use std::path::PathBuf;
use std::time::Duration;

use crate::gpu::switch_selection::SwitchSelection;

/// dcgm-exporter 4.8.4's default `--watch-max-keep-age`.
pub const DEFAULT_MAX_KEEP_AGE: Duration = Duration::from_secs(600);
/// The hostengine's port when an address names none.
pub const DEFAULT_PORT: u16 = 5555;
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

/// A hostengine address as `dcgmConnect_v2` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostengineAddress {
    /// `host:port`, or a socket path.
    pub target: String,
    /// `addressIsUnixSocket`.
    pub unix: bool,
}

impl std::fmt::Display for HostengineAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.unix {
            write!(f, "unix://{}", self.target)
        } else {
            f.write_str(&self.target)
        }
    }
}

/// A hostengine address that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HostengineAddressError {
    /// Empty, or a scheme other than `tcp://` and `unix://`.
    #[error(
        "{0:?}: not a hostengine address (expected host:port, host, tcp://host:port or \
         unix:///path/to/socket)"
    )]
    Form(String),
    /// The port is not a number from 1 to 65535.
    #[error("{0:?}: the port is not a number from 1 to 65535")]
    Port(String),
}

/// Parses dcgm-exporter's forms of `-r`: `host:port`, `host` (port 5555), `tcp://host:port`,
/// `unix:///path`.
pub fn parse_hostengine_address(text: &str) -> Result<HostengineAddress, HostengineAddressError> {
    let t = text.trim();
    if let Some(path) = t.strip_prefix("unix://") {
        if !path.starts_with('/') {
            return Err(HostengineAddressError::Form(text.to_owned()));
        }
        return Ok(HostengineAddress {
            target: path.to_owned(),
            unix: true,
        });
    }
    let hp = t.strip_prefix("tcp://").unwrap_or(t);
    if hp.is_empty() || hp.contains("://") || hp.contains('/') || hp.contains(char::is_whitespace) {
        return Err(HostengineAddressError::Form(text.to_owned()));
    }
    // `[v6]:port`, `[v6]`, `host:port`, `host`.
    let (host, port) = if let Some(rest) = hp.strip_prefix('[') {
        let (h, after) = rest
            .split_once(']')
            .ok_or_else(|| HostengineAddressError::Form(text.to_owned()))?;
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match hp.split_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (hp.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(HostengineAddressError::Form(text.to_owned()));
    }
    let port = match port {
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(HostengineAddressError::Port(text.to_owned())),
        },
        None => DEFAULT_PORT,
    };
    Ok(HostengineAddress {
        target: format!("{host}:{port}"),
        unix: false,
    })
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

/// An entity DCGM is asked about: a GPU (by UUID) or one of its MIG GPU instances (by NVML
/// GPU-instance id).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    /// The physical GPU's UUID.
    pub uuid: String,
    /// The NVML GPU-instance id, for a MIG instance.
    pub gi: Option<u32>,
}

impl Target {
    /// The target under which switch fields DCGM refused are listed (no GPU has an empty
    /// UUID).
    pub fn switches() -> Self {
        Self {
            uuid: String::new(),
            gi: None,
        }
    }

    /// Whether this is [`Target::switches`].
    pub fn is_switches(&self) -> bool {
        self.uuid.is_empty()
    }
}

/// What one tick asks DCGM for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Wanted {
    /// The entities, sorted.
    pub targets: Vec<Target>,
    /// The DCGM field ids with each one's collection interval, sorted by id.
    pub fields: Vec<(u16, Duration)>,
    /// Each GPU's health check (`DCGM_EXP_GPU_HEALTH_STATUS` is in the counters).
    pub health: bool,
    /// The switch-level NVSwitch field ids with each one's collection interval, sorted by
    /// id: watched on every switch the hostengine lists.
    pub switch_fields: Vec<(u16, Duration)>,
    /// The per-port NVSwitch field ids with each one's collection interval, sorted by id:
    /// watched on every up port of those switches.
    pub port_fields: Vec<(u16, Duration)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_in_dcgm_exporters_forms() {
        let a = |s: &str| parse_hostengine_address(s).map(|a| (a.target, a.unix)).ok();
        assert_eq!(a("localhost:5555"), Some(("localhost:5555".into(), false)));
        assert_eq!(
            a("nv-hostengine"),
            Some(("nv-hostengine:5555".into(), false))
        );
        assert_eq!(
            a("tcp://10.0.0.1:5566"),
            Some(("10.0.0.1:5566".into(), false))
        );
        assert_eq!(a("[::1]:5555"), Some(("[::1]:5555".into(), false)));
        assert_eq!(a("[::1]"), Some(("[::1]:5555".into(), false)));
        assert_eq!(
            a("unix:///run/dcgm/he.sock"),
            Some(("/run/dcgm/he.sock".into(), true))
        );
        for bad in [
            "",
            "unix://rel/path",
            "http://x:1",
            "host:0",
            "host:99999",
            "host:x",
            ":5",
        ] {
            assert!(parse_hostengine_address(bad).is_err(), "{bad:?} accepted");
        }
        let e = parse_hostengine_address("host:0")
            .err()
            .map(|e| e.to_string());
        assert!(e.is_some_and(|e| e.contains("port")));
    }

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
