//! The plain data one tick exchanges with the DCGM thread: the entities it asks about
//! ([`Target`]) and what it asks for them ([`Wanted`]).
//!
//! Plain data; it must not call DCGM.

use std::time::Duration;

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
