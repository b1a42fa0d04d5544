//! DCGM's state as one tick saw it, the plain data every surface shows (the landing page,
//! `/status`, `check`, `gpu_exporter_dcgm_up`): the mode and hostengine address, whether it
//! answers ([`DcgmState`]) and since when, its last error, and the profiling values it should
//! have filled this tick and did not ([`Unserved`]), with why ([`DcgmStatus::missing`]).
//!
//! Data and accessors only: the DCGM client (`dcgm`) keeps the state and the sampler copies it
//! here each tick; nothing here calls DCGM or judges health.

/// Whether DCGM answers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DcgmState {
    /// `--dcgm-mode off`: no DCGM client.
    #[default]
    Off,
    /// Loading the library or connecting, before its first answer.
    Connecting,
    /// It answered the last tick.
    Up,
    /// It did not answer the last tick (library unusable, hostengine away, a call that hangs).
    Down,
}

impl DcgmState {
    /// `off`, `connecting`, `up` or `down`: the word `/status` and the page show.
    pub fn as_str(self) -> &'static str {
        match self {
            DcgmState::Off => "off",
            DcgmState::Connecting => "connecting",
            DcgmState::Up => "up",
            DcgmState::Down => "down",
        }
    }
}

/// A profiling value DCGM should have served this tick on an entity and did not.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unserved {
    /// GPU index.
    pub gpu: u32,
    /// GPU instance id on a MIG instance.
    pub gpu_instance_id: Option<u32>,
    /// Canonical field name.
    pub field: &'static str,
}

/// DCGM's state at the end of one tick (by default: off).
#[derive(Debug, Clone, PartialEq)]
pub struct DcgmStatus {
    /// `off`, `embedded` or `remote` (`--dcgm-mode` as in use).
    pub mode: &'static str,
    /// The hostengine's address in remote mode (`-r`).
    pub address: Option<String>,
    /// Whether it answers.
    pub state: DcgmState,
    /// Unix time at which the current state began (0 with DCGM off).
    pub since_unix: f64,
    /// Unix time of its last answer, if it ever answered.
    pub last_answer_unix: Option<f64>,
    /// Ticks in which it gave no answer, since start.
    pub failed_ticks: u64,
    /// Why its last tick gave nothing (or failed in part), while that lasts.
    pub last_error: Option<String>,
    /// The profiling values it should have filled this tick and did not, sorted. A value
    /// listed unsupported on its entity is not here (DCGM refused it there, or its library
    /// cannot be used and NVML's verdict stands).
    pub unserved: Vec<Unserved>,
}

impl Default for DcgmStatus {
    fn default() -> Self {
        Self {
            mode: "off",
            address: None,
            state: DcgmState::Off,
            since_unix: 0.0,
            last_answer_unix: None,
            failed_ticks: 0,
            last_error: None,
            unserved: Vec::new(),
        }
    }
}

impl DcgmStatus {
    /// `gpu_exporter_dcgm_up`: `None` with DCGM off, else whether it answered this tick.
    pub fn up(&self) -> Option<bool> {
        match self.state {
            DcgmState::Off => None,
            s => Some(s == DcgmState::Up),
        }
    }

    /// Why a value DCGM serves is missing, as (a few words for a table cell, the sentence
    /// with DCGM's own error).
    pub fn missing(&self) -> (&'static str, String) {
        let detail = self.last_error.as_deref();
        match (self.state, detail) {
            (DcgmState::Off, _) => ("DCGM off", "DCGM is off (--dcgm-mode off)".to_owned()),
            (DcgmState::Connecting, None) => {
                ("DCGM connecting", "DCGM has not answered yet".to_owned())
            }
            (DcgmState::Connecting, Some(e)) => {
                ("DCGM connecting", format!("DCGM has not answered yet: {e}"))
            }
            (DcgmState::Down, e) => (
                "DCGM down",
                format!("DCGM is down: {}", e.unwrap_or("no answer")),
            ),
            (DcgmState::Up, None) => (
                "no DCGM value",
                "DCGM answered without a value for it this tick".to_owned(),
            ),
            (DcgmState::Up, Some(e)) => (
                "no DCGM value",
                format!("DCGM answered, but not with this value: {e}"),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn up_is_none_when_off_and_the_reason_carries_the_error() {
        let mut s = DcgmStatus::default();
        assert_eq!((s.up(), s.mode), (None, "off"));
        s.state = DcgmState::Down;
        s.last_error = Some("the hostengine at h:5555 does not answer".into());
        assert_eq!(s.up(), Some(false));
        assert_eq!(
            s.missing(),
            (
                "DCGM down",
                "DCGM is down: the hostengine at h:5555 does not answer".to_owned()
            )
        );
        s.state = DcgmState::Up;
        s.last_error = None;
        assert_eq!(s.up(), Some(true));
        assert_eq!(s.missing().0, "no DCGM value");
    }
}
