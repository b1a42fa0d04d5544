//! The plain data of a health verdict, so that every layer from the snapshot up can hold it:
//! [`Verdict`], the bounded [`Reason`] set (every one in [`Reason::ALL`]) with its one table
//! of words ([`Reason::words`]), the recommended [`Action`], and one entity's
//! [`EntityHealth`] with the signals it was judged from as `/status` shows them
//! ([`ShownSignals`]). The words of `as_str` are label
//! values and API: they are documented in docs/health.md, and a change to one is a breaking
//! change.
//!
//! Data and accessors only: which signals give which reason is the `health` layer's.

/// A health verdict, worst last (the words the landing page shows).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    /// Nothing to say.
    #[default]
    Ok,
    /// Degraded or at risk; the GPU still works.
    Warning,
    /// Failed or about to: work on it is lost or wrong.
    Critical,
}

impl Verdict {
    /// `ok`, `warning` or `critical`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Warning => "warning",
            Verdict::Critical => "critical",
        }
    }

    /// 0 ok, 1 warning, 2 critical (`gpu_health_status`).
    pub fn level(self) -> u8 {
        self as u8
    }
}

/// Declares [`Reason`] and [`Reason::ALL`] from one list of variants, so that a new reason
/// is in `ALL` by construction (and `Reason::words`' match fails to compile until it has its
/// words).
macro_rules! reasons {
    ($($(#[doc = $doc:literal])* $variant:ident,)*) => {
        /// Why a verdict is not `ok`: a bounded set, used as a label value
        /// (`gpu_health_reason`) and by the Kubernetes outputs as a key. The words are
        /// documented in docs/health.md.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Reason {
            $($(#[doc = $doc])* $variant,)*
        }

        impl Reason {
            /// Every reason, in the order of its declaration (the order verdicts sort by).
            pub const ALL: &'static [Reason] = &[$(Reason::$variant,)*];
        }
    };
}

reasons! {
    /// The GPU fell off the bus, or NVML no longer answers for it.
    GpuLost,
    /// An Xid of the catalogue's hardware class.
    XidHardware,
    /// An Xid of the catalogue's memory class (ECC, row remap, page retirement).
    XidMemory,
    /// An Xid of the catalogue's NVLink / C2C class.
    XidNvlink,
    /// An Xid of the catalogue's driver / firmware (GSP) class.
    XidDriver,
    /// An Xid of the catalogue's application class (the job's fault, not the GPU's).
    XidApplication,
    /// An Xid code the catalogue table does not list.
    XidUnknown,
    /// Volatile double-bit (uncorrectable) ECC errors.
    EccDbe,
    /// A row remap waits for a GPU reset.
    RowRemapPending,
    /// A row remap failed.
    RowRemapFailed,
    /// Hardware or software thermal slowdown.
    ThermalSlowdown,
    /// The external power brake is asserted.
    PowerBrake,
    /// Hardware slowdown without a thermal or power-brake cause.
    HwSlowdown,
    /// The temperature is at or above the slowdown temperature.
    OverSlowdownTemp,
    /// NVLink link(s) down.
    NvlinkDown,
    /// NVLink errors get past FEC.
    NvlinkBer,
    /// The NVSwitch fabric registration failed or the fabric is unhealthy.
    FabricUnhealthy,
    /// The NVSwitch fabric runs at limited capacity.
    FabricDegraded,
    /// NVML's recovery action: reset the GPU.
    RecoveryReset,
    /// NVML's recovery action: reboot the node.
    RecoveryReboot,
    /// NVML's recovery action: drain peer-to-peer traffic.
    RecoveryDrainP2p,
    /// NVML's recovery action: drain peer-to-peer traffic, then reset the GPU.
    RecoveryDrainAndReset,
    /// NVML's recovery action, a value newer than this exporter knows.
    RecoveryOther,
    /// A DCGM health watch warns.
    DcgmWatchWarning,
    /// A DCGM health watch fails.
    DcgmWatchFailure,
}

/// A reason's words, every spelling of it in one row of [`Reason::words`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReasonWords {
    /// The label value and JSON word (`gpu_health_reason`, `/status`), e.g. `ecc_dbe`.
    pub label: &'static str,
    /// The Kubernetes condition and Event reason, PascalCase, e.g. `EccDoubleBitError`.
    pub event: &'static str,
    /// The reason in stable human words (no counts, no ages), for condition messages.
    pub text: &'static str,
}

impl Reason {
    /// The one table of a reason's words: its label value, its Kubernetes reason and its
    /// human text. Every output that names a reason takes its word from here.
    pub fn words(self) -> ReasonWords {
        let (label, event, text) = match self {
            Reason::GpuLost => (
                "gpu_lost",
                "GpuLost",
                "lost (fell off the bus or NVML no longer answers)",
            ),
            Reason::XidHardware => ("xid_hardware", "XidHardware", "xid hardware"),
            Reason::XidMemory => ("xid_memory", "XidMemory", "xid memory"),
            Reason::XidNvlink => ("xid_nvlink", "XidNvlink", "xid nvlink"),
            Reason::XidDriver => ("xid_driver", "XidDriver", "xid driver"),
            Reason::XidApplication => ("xid_application", "XidApplication", "xid application"),
            Reason::XidUnknown => ("xid_unknown", "XidUnknown", "xid unknown"),
            Reason::EccDbe => ("ecc_dbe", "EccDoubleBitError", "ecc dbe"),
            Reason::RowRemapPending => {
                ("row_remap_pending", "RowRemapPending", "row remap pending")
            }
            Reason::RowRemapFailed => ("row_remap_failed", "RowRemapFailed", "row remap failed"),
            Reason::ThermalSlowdown => ("thermal_slowdown", "ThermalSlowdown", "thermal slowdown"),
            Reason::PowerBrake => ("power_brake", "PowerBrake", "power brake"),
            Reason::HwSlowdown => ("hw_slowdown", "HardwareSlowdown", "hw slowdown"),
            Reason::OverSlowdownTemp => (
                "over_slowdown_temp",
                "OverSlowdownTemperature",
                "over slowdown temp",
            ),
            Reason::NvlinkDown => ("nvlink_down", "NvlinkDown", "nvlink down"),
            Reason::NvlinkBer => ("nvlink_ber", "NvlinkErrors", "nvlink ber"),
            Reason::FabricUnhealthy => ("fabric_unhealthy", "FabricUnhealthy", "fabric unhealthy"),
            Reason::FabricDegraded => ("fabric_degraded", "FabricDegraded", "fabric degraded"),
            Reason::RecoveryReset => ("recovery_reset", "RecoveryReset", "recovery reset"),
            Reason::RecoveryReboot => ("recovery_reboot", "RecoveryReboot", "recovery reboot"),
            Reason::RecoveryDrainP2p => (
                "recovery_drain_p2p",
                "RecoveryDrainP2p",
                "recovery drain p2p",
            ),
            Reason::RecoveryDrainAndReset => (
                "recovery_drain_and_reset",
                "RecoveryDrainAndReset",
                "recovery drain and reset",
            ),
            Reason::RecoveryOther => ("recovery_other", "RecoveryOther", "recovery other"),
            Reason::DcgmWatchWarning => (
                "dcgm_watch_warning",
                "DcgmHealthWarning",
                "dcgm watch warning",
            ),
            Reason::DcgmWatchFailure => (
                "dcgm_watch_failure",
                "DcgmHealthFailure",
                "dcgm watch failure",
            ),
        };
        ReasonWords { label, event, text }
    }

    /// The label value, e.g. `xid_hardware` ([`Reason::words`]).
    pub fn as_str(self) -> &'static str {
        self.words().label
    }

    /// The Kubernetes condition and Event reason, e.g. `XidHardware` ([`Reason::words`]).
    pub fn event_reason(self) -> &'static str {
        self.words().event
    }

    /// The reason in stable words for a message (no counts, no ages); an `xid_*` reason with
    /// its code names it: `Xid 79 (hardware)`.
    pub fn text(self, xid: Option<u64>) -> String {
        match xid {
            Some(code) => format!("Xid {code} ({})", self.as_str().trim_start_matches("xid_")),
            None => self.words().text.to_owned(),
        }
    }
}

/// What the operator should do about a reason (the Xid catalogue's resolutions, and their
/// equivalents for the other signals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Nothing yet: watch whether it repeats.
    Watch,
    /// Restart the job (the application's fault).
    RestartJob,
    /// Reset the GPU (`nvidia-smi -r`) once its processes are stopped.
    ResetGpu,
    /// Reboot the node.
    RebootNode,
    /// Drain peer-to-peer (NVLink) traffic.
    DrainP2p,
    /// Drain peer-to-peer traffic, then reset the GPU.
    DrainAndReset,
    /// Check the NVLink cabling, the NVSwitch fabric and the fabric manager.
    CheckNvlink,
    /// Check cooling (airflow, fans, inlet temperature).
    CheckCooling,
    /// Check the power supply and the board's power-brake signal.
    CheckPower,
    /// Update the driver or firmware, then reset the GPU.
    UpdateDriver,
    /// Take the GPU out of service and have it repaired (RMA).
    ServiceGpu,
}

impl Action {
    /// A short machine word, e.g. `reset_gpu`.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Watch => "watch",
            Action::RestartJob => "restart_job",
            Action::ResetGpu => "reset_gpu",
            Action::RebootNode => "reboot_node",
            Action::DrainP2p => "drain_p2p",
            Action::DrainAndReset => "drain_and_reset",
            Action::CheckNvlink => "check_nvlink",
            Action::CheckCooling => "check_cooling",
            Action::CheckPower => "check_power",
            Action::UpdateDriver => "update_driver",
            Action::ServiceGpu => "service_gpu",
        }
    }

    /// How drastic the action is, from 0 (watch) to 10 (take the GPU out of service): where
    /// reasons ask for several, the most drastic is what the GPU needs (a reset does not
    /// repair a GPU whose row remapping failed; a node reboot includes a GPU reset).
    pub fn urgency(self) -> u8 {
        match self {
            Action::Watch => 0,
            Action::RestartJob => 1,
            Action::CheckCooling => 2,
            Action::CheckPower => 3,
            Action::CheckNvlink => 4,
            Action::DrainP2p => 5,
            Action::ResetGpu => 6,
            Action::DrainAndReset => 7,
            Action::UpdateDriver => 8,
            Action::RebootNode => 9,
            Action::ServiceGpu => 10,
        }
    }

    /// The same in words, for a message: "the node needs a reboot".
    pub fn words(self) -> &'static str {
        match self {
            Action::Watch => "watch whether it repeats",
            Action::RestartJob => "restart the job",
            Action::ResetGpu => "reset the GPU",
            Action::RebootNode => "reboot the node",
            Action::DrainP2p => "drain peer-to-peer traffic",
            Action::DrainAndReset => "drain peer-to-peer traffic, then reset the GPU",
            Action::CheckNvlink => "check NVLink, the NVSwitch fabric and the fabric manager",
            Action::CheckCooling => "check cooling",
            Action::CheckPower => "check the power supply",
            Action::UpdateDriver => "update the driver or firmware, then reset the GPU",
            Action::ServiceGpu => "take the GPU out of service for repair",
        }
    }
}

/// One reason of a verdict, while it is active or held; also what the health rules observe
/// in one tick (present, first and last seen when it was seen), before the flap damping holds
/// it.
#[derive(Debug, Clone, PartialEq)]
pub struct ActiveReason {
    /// The reason.
    pub reason: Reason,
    /// How serious this occurrence is.
    pub severity: Verdict,
    /// The Xid code, for the `xid_*` reasons.
    pub xid: Option<u64>,
    /// The MIG GPU instance the cause belongs to (an application Xid NVML reported with
    /// one); `None`: the whole GPU.
    pub gpu_instance_id: Option<u32>,
    /// What was seen, in words (free text: never a label value).
    pub message: String,
    /// The recommended action.
    pub action: Action,
    /// Unix time the cause was first seen in this episode.
    pub since_unix: f64,
    /// Unix time the cause was last seen; the reason clears a hold time after it.
    pub last_seen_unix: f64,
    /// `false` when the cause is gone and the reason is only held (flap damping).
    pub present: bool,
}

/// NVML's recovery action (`NVML_FI_DEV_GET_GPU_RECOVERY_ACTION`, `gpu_recovery_action`).
pub type RecoveryAction = u32;

/// A GPU's health signals as `/status` shows them, and the one shape of them from the health
/// model to `/status`'s `health` object, whose first keys they are (serialized as they are;
/// where `/status`'s key differs from the field's name, the `rename` here is the one place
/// that says so). The model gathers them once per GPU and tick (`health::signals`) and keeps
/// each field-backed value only where the counters file exports its field
/// (`health::SHOWN_FIELDS`): `None` where the file lacks it (the model may still watch it,
/// but the page says "not configured" rather than show a value the metrics do not carry) or
/// it was not read. The recent Xids, NVLink and fabric signals need no field.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct ShownSignals {
    /// The last Xid NVML reported (`DCGM_FI_DEV_XID_ERRORS`), 0 for none.
    pub last_xid: Option<u64>,
    /// Xid codes seen in the last hour (`health::XID_RECENT_SECONDS`): (code, occurrences
    /// since start, seconds ago).
    pub recent_xids: Vec<(u64, u64, f64)>,
    /// Volatile double-bit ECC errors.
    pub ecc_dbe: Option<f64>,
    /// Rows remapped for uncorrectable errors.
    #[serde(rename = "remapped_rows_uncorrectable")]
    pub remapped_rows: Option<f64>,
    /// A row remap failed (1) or not (0).
    #[serde(rename = "row_remap_failure")]
    pub remap_failure: Option<f64>,
    /// A row remap is pending a GPU reset (non-zero).
    #[serde(rename = "row_remap_pending")]
    pub remap_pending: Option<f64>,
    /// The active clock-event (throttle) reasons other than idle, by dcgm-exporter's names.
    #[serde(rename = "throttle")]
    pub clock_events: Option<Vec<&'static str>>,
    /// NVLink links NVML reports down (every link is read, whatever `--nvlink-links` says).
    pub nvlink_down: Vec<u32>,
    /// NVLink 5 links whose bit error rate after FEC is above DCGM's limit (1e-12).
    pub nvlink_ber_high: Vec<u32>,
    /// NVSwitch fabric health summary (1 healthy, 2 unhealthy, 3 limited capacity), on GPUs
    /// attached to a fabric that report it.
    pub fabric_health: Option<u8>,
}

/// The health of one physical GPU or MIG instance.
#[derive(Debug, Clone, PartialEq)]
pub struct EntityHealth {
    /// NVML index of the physical GPU.
    pub gpu: u32,
    /// The minor number of the physical GPU's device node, when ever read
    /// ([`DeviceStatus::minor`](crate::snapshot::DeviceStatus::minor)): what Events and Node
    /// conditions name it by.
    pub minor: Option<u32>,
    /// GPU instance id on a MIG instance. An instance's reasons are its GPU's whole-GPU
    /// reasons and its own (application Xids reported with it); a GPU's are its own and
    /// every instance's, each naming its instance.
    pub gpu_instance_id: Option<u32>,
    /// UUID of the GPU or of the MIG device.
    pub uuid: String,
    /// The worst severity of the reasons.
    pub verdict: Verdict,
    /// Worst first; empty when the verdict is `ok`.
    pub reasons: Vec<ActiveReason>,
    /// NVML's recovery action, when read (0 none, 1 reset, 2 reboot, 3 drain P2P, 4 drain and
    /// reset; later drivers add more).
    pub recovery_action: Option<RecoveryAction>,
    /// The signals the verdict was judged from, as shown ([`ShownSignals`]); on a MIG
    /// instance, its GPU's (every signal but an instance's application Xids is the GPU's).
    pub shown: ShownSignals,
}

impl EntityHealth {
    /// The recommended action: the most drastic ([`Action::urgency`]) among the reasons of
    /// the verdict's severity, if any (the worst reason's own may be a lesser one: a
    /// double-bit ECC error asks for a reset, the row remap that failed with it for service).
    pub fn action(&self) -> Option<Action> {
        self.reasons
            .iter()
            .filter(|r| r.severity == self.verdict)
            .map(|r| r.action)
            .max_by_key(|a| a.urgency())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reasons_text_is_its_label_in_words_but_for_a_lost_gpu() {
        use Reason::*;
        for r in Reason::ALL.iter().copied().filter(|r| *r != GpuLost) {
            assert_eq!(r.text(None), r.as_str().replace('_', " "), "{r:?}");
        }
        assert_eq!(EccDbe.event_reason(), "EccDoubleBitError");
        assert_eq!(XidHardware.text(Some(79)), "Xid 79 (hardware)");
        assert_eq!(
            GpuLost.text(None),
            "lost (fell off the bus or NVML no longer answers)"
        );
    }

    #[test]
    fn every_reason_is_listed_once_in_order_with_words_of_its_own() {
        for (i, r) in Reason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i, "{r:?}");
        }
        let mut labels: Vec<&str> = Reason::ALL.iter().map(|r| r.as_str()).collect();
        let mut events: Vec<&str> = Reason::ALL.iter().map(|r| r.event_reason()).collect();
        labels.sort_unstable();
        labels.dedup();
        events.sort_unstable();
        events.dedup();
        assert_eq!(labels.len(), Reason::ALL.len());
        assert_eq!(events.len(), Reason::ALL.len());
    }
}
