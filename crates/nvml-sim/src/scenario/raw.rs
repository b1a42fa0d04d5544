//! The serde schema of scenario files, exactly as written (with spans for error lines).
//! Validation and resolution live in `resolve` and `faults`.

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) name: Option<String>,
    pub(super) description: Option<String>,
    pub(super) node: Option<String>,
    /// Scenario time before which `nvmlInit_v2` returns `DRIVER_NOT_LOADED`.
    pub(super) driver_loaded_at: Option<Spanned<f64>>,
    /// Scenario time before which `nvmlInit_v2` blocks (until that time).
    pub(super) init_hangs_until: Option<Spanned<f64>>,
    #[serde(default)]
    pub(super) gpus: Vec<Spanned<RawGpu>>,
    #[serde(default)]
    pub(super) faults: Vec<Spanned<RawFault>>,
    /// The DCGM simulator's fault timeline; validated here, acted on by dcgm-sim.
    #[serde(default)]
    pub(super) dcgm_faults: Vec<Spanned<super::dcgm::RawDcgmFault>>,
    /// The NVSwitch chips the simulated DCGM shows; validated here, served by dcgm-sim.
    #[serde(default)]
    pub(super) nvswitches: Vec<Spanned<super::switches::RawSwitch>>,
    /// Reserved for the exporter's simulated kubelet; the library ignores it.
    #[allow(dead_code)]
    pub(super) pods: Option<toml::Value>,
    /// The exporter's job streams (short-lived pods); the library ignores them.
    #[allow(dead_code)]
    pub(super) jobs: Option<toml::Value>,
    /// Reserved for the exporter's simulated Kubernetes side; the library ignores it.
    #[allow(dead_code)]
    pub(super) kubernetes: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGpu {
    pub(super) model: Spanned<String>,
    pub(super) uuid: Option<Spanned<String>>,
    pub(super) serial: Option<String>,
    pub(super) pci_bus: Option<Spanned<String>>,
    pub(super) power_limit_w: Option<Spanned<f64>>,
    /// `/dev/nvidiaN`'s N when it is not the index (the driver numbers GPUs in probe order).
    pub(super) minor_number: Option<u32>,
    /// `"licensed"` or `"unlicensed"`: the GPU is a vGPU seen from inside its guest.
    pub(super) vgpu_licence: Option<Spanned<String>>,
    pub(super) workload: Option<Spanned<RawWorkload>>,
    pub(super) mig: Option<Vec<Spanned<RawMig>>>,
    #[serde(default)]
    pub(super) unsupported: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) processes: Vec<Spanned<RawProcess>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawMig {
    pub(super) profile: Spanned<String>,
    pub(super) gi: Option<u32>,
    pub(super) ci: Option<u32>,
    pub(super) uuid: Option<String>,
    pub(super) workload: Option<Spanned<RawWorkload>>,
    #[serde(default)]
    pub(super) processes: Vec<Spanned<RawProcess>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWorkload {
    pub(super) kind: Spanned<String>,
    pub(super) level: Option<f64>,
    pub(super) amplitude: Option<f64>,
    pub(super) period: Option<f64>,
    pub(super) duty: Option<f64>,
    pub(super) memory: Option<f64>,
    pub(super) video: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProcess {
    pub(super) pid: u32,
    pub(super) memory_mib: Option<u64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFault {
    pub(super) at: f64,
    pub(super) gpu: usize,
    pub(super) kind: Spanned<String>,
    pub(super) until: Option<f64>,
    pub(super) xid: Option<u64>,
    pub(super) gi: Option<u32>,
    pub(super) repeat: Option<u32>,
    pub(super) every: Option<f64>,
    pub(super) what: Option<Spanned<String>>,
    pub(super) mig: Option<Vec<Spanned<RawMig>>>,
    pub(super) sbe: Option<u64>,
    pub(super) dbe: Option<u64>,
    pub(super) correctable: Option<u64>,
    pub(super) uncorrectable: Option<u64>,
    pub(super) pending: Option<bool>,
    pub(super) failure: Option<bool>,
    pub(super) crc_flit: Option<u64>,
    pub(super) crc_data: Option<u64>,
    pub(super) replay: Option<u64>,
    pub(super) recovery: Option<u64>,
    /// NVLink 5 errors left after FEC (`nvlink_errors`).
    pub(super) effective: Option<u64>,
    pub(super) count: Option<u64>,
    pub(super) watts: Option<f64>,
    pub(super) celsius: Option<f64>,
    /// NVLink link index (`nvlink_down`, `nvlink_errors`).
    pub(super) link: Option<Spanned<u32>>,
    /// Fabric registration state name (`fabric`).
    pub(super) state: Option<Spanned<String>>,
    /// Fabric registration status, an `nvmlReturn_t` (`fabric`).
    pub(super) status: Option<Spanned<u32>>,
    /// Fabric health summary name (`fabric`).
    pub(super) health: Option<Spanned<String>>,
    /// The minor number a GPU comes back with (`unbind`).
    pub(super) minor: Option<u32>,
}

impl RawFault {
    /// Names of the optional keys present, to check them against the kind.
    pub(super) fn present(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        let mut add = |present: bool, name: &'static str| {
            if present {
                keys.push(name);
            }
        };
        add(self.until.is_some(), "until");
        add(self.xid.is_some(), "xid");
        add(self.gi.is_some(), "gi");
        add(self.repeat.is_some(), "repeat");
        add(self.every.is_some(), "every");
        add(self.what.is_some(), "what");
        add(self.mig.is_some(), "mig");
        add(self.sbe.is_some(), "sbe");
        add(self.dbe.is_some(), "dbe");
        add(self.correctable.is_some(), "correctable");
        add(self.uncorrectable.is_some(), "uncorrectable");
        add(self.pending.is_some(), "pending");
        add(self.failure.is_some(), "failure");
        add(self.crc_flit.is_some(), "crc_flit");
        add(self.crc_data.is_some(), "crc_data");
        add(self.replay.is_some(), "replay");
        add(self.recovery.is_some(), "recovery");
        add(self.effective.is_some(), "effective");
        add(self.count.is_some(), "count");
        add(self.watts.is_some(), "watts");
        add(self.celsius.is_some(), "celsius");
        add(self.link.is_some(), "link");
        add(self.state.is_some(), "state");
        add(self.status.is_some(), "status");
        add(self.health.is_some(), "health");
        add(self.minor.is_some(), "minor");
        keys
    }
}

/// Fault kinds with the optional keys each accepts.
pub(super) const FAULT_KINDS: &[(&str, &[&str])] = &[
    ("xid", &["xid", "gi", "repeat", "every"]),
    ("lost", &["until"]),
    ("hang", &["until"]),
    ("unsupported", &["what", "until"]),
    ("mig_layout", &["mig"]),
    ("ecc", &["sbe", "dbe"]),
    (
        "remap",
        &["correctable", "uncorrectable", "pending", "failure"],
    ),
    ("retire", &["sbe", "dbe", "pending"]),
    (
        "nvlink_errors",
        &[
            "crc_flit",
            "crc_data",
            "replay",
            "recovery",
            "effective",
            "link",
            "repeat",
            "every",
        ],
    ),
    ("nvlink_down", &["link", "until"]),
    ("fabric", &["state", "status", "health", "until"]),
    ("pcie_replay", &["count"]),
    ("power_limit", &["watts", "until"]),
    ("thermal", &["celsius", "until"]),
    ("power_brake", &["until"]),
    ("appear", &[]),
    ("unbind", &["until", "minor"]),
];
