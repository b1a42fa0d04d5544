//! What the reader is asked to do ([`ReaderOptions`]: device selection, MIG shape, windows,
//! processes) and the constants it exports by default.
//!
//! Plain data; it must not call NVML.

use std::time::Duration;

use std::sync::Arc;

use crate::gpu::collections::Collections;
use crate::gpu::selection::DeviceSelection;
use crate::gpu::xid::{self};

pub(super) const MIB: f64 = 1024.0 * 1024.0;

/// `--xid-initialized-codes`' default: none. A code listed there has its
/// `gpu_xid_errors_total` series at 0 from the start, so that its first occurrence is an
/// increase Prometheus can see; by default a code's series appears at its first occurrence
/// (the shipped GpuXidCritical catches that one through its `unless … offset` arm).
pub const DEFAULT_XID_INITIALIZED: &[u64] = &[];

/// Clock-event bit: hardware slowdown (`nvmlClocksEventReasonHwSlowdown`).
pub const HW_SLOWDOWN: u64 = 0x8;
/// Clock-event bit: software thermal slowdown.
pub const SW_THERMAL: u64 = 0x20;
/// Clock-event bit: hardware thermal slowdown.
pub const HW_THERMAL: u64 = 0x40;
/// Clock-event bit: the external power brake.
pub const HW_POWER_BRAKE: u64 = 0x80;

/// Clock-event reason bits (NVML `nvmlClocksEventReason*`, the same values as DCGM's) and the
/// `clock_event` label dcgm-exporter gives each in `DCGM_EXP_CLOCK_EVENTS_COUNT`: the one
/// table of them (the health rules name the bits they judge by the constants above).
pub const CLOCK_EVENT_REASONS: &[(u64, &str)] = &[
    (0x1, "gpu_idle"),
    (0x2, "clocks_setting"),
    (0x4, "power_cap"),
    (HW_SLOWDOWN, "hw_slowdown"),
    (0x10, "sync_boost"),
    (SW_THERMAL, "sw_thermal"),
    (HW_THERMAL, "hw_thermal"),
    (HW_POWER_BRAKE, "hw_power_brake"),
    (0x100, "display_clocks"),
];

/// `--nvlink-links`: whether the exporter's NVLink families (`gpu_nvlink_*`) have one series
/// per link, or one per GPU. Every link's state and error counters are read either way (the
/// status page, `check` and `gpu_nvlink_links_down` need them); its data counters only for
/// per-link series ([`ReaderOptions::nvlink_throughput`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvlinkLinks {
    /// `per-link`: one series per link (`nvlink` label) in the `gpu_nvlink_*` families.
    PerLink,
    /// `totals` (the default): per GPU, the error counters summed over its links and the
    /// worst link's bit error ratios.
    Totals,
}

/// How the reader selects, shapes and times what it reads.
#[derive(Clone)]
pub struct ReaderOptions {
    /// `-d/--devices`.
    pub devices: DeviceSelection,
    /// `--mig-repeat-device-fields`: represent a MIG-enabled GPU only by its instances, each
    /// carrying the GPU's device-level fields (dcgm-exporter's behaviour).
    pub mig_repeat_device_fields: bool,
    /// `-x/--xid-count-window-size`.
    pub xid_count_window: Duration,
    /// `--clock-events-count-window-size`.
    pub clock_events_count_window: Duration,
    /// `--xid-initialized-codes`.
    pub xid_initialized_codes: Vec<u64>,
    /// Longest blocking wait of the Xid thread.
    pub xid_poll: Duration,
    /// Make each tick wait (up to a few polls) until the Xid thread has recorded every event
    /// pending at the tick, so values are exactly as of the tick. Off in the daemon, where an
    /// event that arrives during a tick simply shows at the next one; on in tests.
    pub xid_sync: bool,
    /// Time stamps of Xid events (Unix seconds).
    pub clock: xid::Clock,
    /// List each entity's processes (per-container attribution on shared GPUs).
    pub processes: bool,
    /// Per-field read intervals (`--config-file` collections): a field whose interval is
    /// longer than the tick keeps its last reading until the interval has passed.
    pub collections: Arc<Collections>,
    /// Read every NVLink link's data counters (bytes sent and received) each tick: the
    /// per-link byte and rate series of `--nvlink-links per-link` need them. A counters file
    /// with a link-entity throughput row turns the read on by itself; otherwise it is left
    /// out (one NVML call per GPU with two entries per link, and no series uses it).
    pub nvlink_throughput: bool,
    /// Another source (DCGM) may serve the GPM fields of a GPU without GPM, and the DCGM-only
    /// fields (health): leave them empty there instead of listing them as unsupported.
    pub gpm_elsewhere: bool,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        Self {
            devices: DeviceSelection::all(),
            mig_repeat_device_fields: false,
            xid_count_window: Duration::from_secs(300),
            clock_events_count_window: Duration::from_secs(300),
            xid_initialized_codes: DEFAULT_XID_INITIALIZED.to_vec(),
            xid_poll: Duration::from_millis(100),
            xid_sync: false,
            clock: Arc::new(crate::base::clock::unix_now),
            processes: false,
            collections: Arc::new(Collections::default()),
            nvlink_throughput: false,
            gpm_elsewhere: false,
        }
    }
}

impl std::fmt::Debug for ReaderOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReaderOptions")
            .field("devices", &self.devices)
            .field("repeat_device_fields", &self.mig_repeat_device_fields)
            .field("xid_window", &self.xid_count_window)
            .field("clock_events_window", &self.clock_events_count_window)
            .field("xid_initialized", &self.xid_initialized_codes)
            .field("xid_poll", &self.xid_poll)
            .field("xid_sync", &self.xid_sync)
            .field("processes", &self.processes)
            .field("collections", &self.collections)
            .field("nvlink_throughput", &self.nvlink_throughput)
            .finish_non_exhaustive()
    }
}
