//! The types that describe one field: its entity level, how NVML serves it ([`Getter`]), its
//! scale and unit ([`FieldDef`]).
//!
//! Plain data, shared by the field tables (`tables`), the lookups (`catalogue`) and the CSV
//! parser; it must not hold a table of fields, do I/O or call NVML.

/// Which entity a field's value belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Level {
    /// A property of the physical GPU (power, temperature, clocks, ECC, PCIe, NVLink, labels).
    /// Exported once, on the physical GPU's series, also when the GPU is in MIG mode.
    Device,
    /// Readable per MIG GPU instance (framebuffer, profiling). On a GPU without MIG it is read
    /// on the GPU itself; on a MIG-enabled GPU it is read on each instance and not on the parent.
    Instance,
    /// One value per NVLink link of the physical GPU (DCGM's `DCGM_FE_LINK` entity): served
    /// from the per-link read, one series per link with an `nvlink` label, never per entity.
    Link,
    /// A property of one NVSwitch chip (DCGM's `DCGM_FE_SWITCH` entity) or of one of its ports
    /// (`Getter::DcgmSwitchPort`): served by the DCGM client only, one series per switch with
    /// an `nvswitch` label (per port: with an `nvlink` label too), never per GPU.
    Switch,
}

/// NVML clock domains read through `nvmlDeviceGetClockInfo`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClockKind {
    /// Graphics clock.
    Graphics,
    /// Streaming-multiprocessor clock.
    Sm,
    /// Memory clock.
    Mem,
    /// Video clock.
    Video,
}

/// Which part of `nvmlDeviceGetMemoryInfo_v2` a framebuffer field reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// Total framebuffer.
    Total,
    /// Free framebuffer.
    Free,
    /// Used framebuffer.
    Used,
    /// Reserved by the driver/firmware.
    Reserved,
    /// Used as a percentage of total (used / total * 100).
    UsedPercent,
    /// Used as a 0–1 ratio of what is not reserved (used / (total - reserved)), DCGM's
    /// definition of `DCGM_FI_DEV_FB_USED_RATIO`.
    UsedRatio,
}

/// Utilization readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UtilKind {
    /// `nvmlDeviceGetUtilizationRates().gpu`.
    Gpu,
    /// `nvmlDeviceGetUtilizationRates().memory` (memory copy engine).
    MemCopy,
    /// `nvmlDeviceGetEncoderUtilization`.
    Encoder,
    /// `nvmlDeviceGetDecoderUtilization`.
    Decoder,
}

/// String-valued device properties, used as `label` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TextKind {
    /// `nvmlSystemGetDriverVersion`.
    DriverVersion,
    /// `nvmlSystemGetNVMLVersion`.
    NvmlVersion,
    /// `nvmlDeviceGetName`.
    Name,
    /// `nvmlDeviceGetBrand`, spelt like DCGM does.
    Brand,
    /// `nvmlDeviceGetSerial`.
    Serial,
    /// `nvmlDeviceGetUUID`.
    Uuid,
    /// `nvmlDeviceGetPciInfo_v3().busId`.
    PciBusId,
    /// `nvmlDeviceGetVbiosVersion`.
    VbiosVersion,
    /// `nvmlDeviceGetInforomVersion(NVML_INFOROM_OEM)`.
    InforomOem,
    /// `nvmlDeviceGetInforomVersion(NVML_INFOROM_ECC)`.
    InforomEcc,
    /// `nvmlDeviceGetInforomVersion(NVML_INFOROM_POWER)`.
    InforomPower,
    /// `nvmlDeviceGetInforomImageVersion`.
    InforomImage,
    /// The NVSwitch fabric cluster UUID (`nvmlDeviceGetGpuFabricInfoV`).
    FabricClusterUuid,
}

/// One number of the GPU's NVSwitch fabric registration (`nvmlDeviceGetGpuFabricInfoV`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FabricPart {
    /// The registration state in DCGM's numbering (1 not started, 2 in progress, 3 success,
    /// 4 failure): NVML's completed state split by its status.
    ManagerStatus,
    /// NVML's return code of a completed registration (0 success).
    ErrorCode,
    /// The fabric clique id.
    CliqueId,
    /// The health bit mask.
    HealthMask,
    /// The health summary (0 not reported, 1 healthy, 2 unhealthy, 3 limited capacity).
    HealthSummary,
}

/// One number of one NVLink link, as the per-link read gives it (DCGM's link-entity fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LinkPart {
    /// 1 when the link is active, 0 when it is down.
    State,
    /// The link's error counter whose `error` label (in `gpu_nvlink_errors_total`) is this.
    Errors(&'static str),
    /// Data payload sent plus received, bytes per second (before the field's scale).
    Throughput,
    /// Data payload sent, bytes per second (before the field's scale).
    Transmit,
    /// Data payload received, bytes per second (before the field's scale).
    Receive,
}

/// Throttling-duration counters from `nvmlDeviceGetViolationStatus` (ns).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Violation {
    /// `NVML_PERF_POLICY_POWER`.
    Power,
    /// `NVML_PERF_POLICY_THERMAL`.
    Thermal,
    /// `NVML_PERF_POLICY_SYNC_BOOST`.
    SyncBoost,
    /// `NVML_PERF_POLICY_BOARD_LIMIT`.
    BoardLimit,
    /// `NVML_PERF_POLICY_LOW_UTILIZATION`.
    LowUtil,
    /// `NVML_PERF_POLICY_RELIABILITY`.
    Reliability,
}

/// Conversion applied to a raw NVML number to reach the field's DCGM unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// The NVML value is already in the DCGM unit.
    Identity,
    /// Multiply by this factor (e.g. mW → W is `Mul(0.001)`).
    Mul(f64),
}

impl Scale {
    /// Applies the conversion.
    pub fn apply(self, v: f64) -> f64 {
        match self {
            Scale::Identity => v,
            Scale::Mul(f) => v * f,
        }
    }
}

/// `NVML_TEMPERATURE_THRESHOLD_SHUTDOWN`.
pub const TEMP_THRESHOLD_SHUTDOWN: u32 = 0;
/// `NVML_TEMPERATURE_THRESHOLD_SLOWDOWN`.
pub const TEMP_THRESHOLD_SLOWDOWN: u32 = 1;
/// `NVML_TEMPERATURE_THRESHOLD_MEM_MAX`.
pub const TEMP_THRESHOLD_MEM_MAX: u32 = 2;
/// `NVML_TEMPERATURE_THRESHOLD_GPU_MAX`.
pub const TEMP_THRESHOLD_GPU_MAX: u32 = 3;

/// How the reader gets a field's value: which NVML (or DCGM) call serves it, or which of our own
/// counters (an Xid window, a total). The reader in `gpu` interprets it; the DCGM client
/// (`dcgm::select`) picks out its `Dcgm*` kinds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Getter {
    /// `nvmlDeviceGetClockInfo` (MHz).
    Clock(ClockKind),
    /// `nvmlDeviceGetMaxClockInfo` (MHz).
    MaxClock(ClockKind),
    /// `nvmlDeviceGetBAR1MemoryInfo` (bytes): `Total`, `Used` or `Free`.
    Bar1(MemKind),
    /// `nvmlDeviceGetApplicationsClock` (MHz).
    AppClock(ClockKind),
    /// `nvmlDeviceGetFanSpeed_v2` of fan 0 (% of its maximum).
    FanSpeed,
    /// `nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)` (°C).
    GpuTemperature,
    /// `nvmlDeviceGetPowerUsage` (mW, scaled to W).
    PowerUsage,
    /// `nvmlDeviceGetEnforcedPowerLimit` (mW, scaled to W).
    PowerLimit,
    /// `nvmlDeviceGetPowerManagementLimit` (mW, scaled to W).
    PowerMgmtLimit,
    /// `nvmlDeviceGetTemperatureThreshold` with this `nvmlTemperatureThresholds_t` (°C).
    TempThreshold(u32),
    /// `nvmlDeviceGetTotalEnergyConsumption` (mJ).
    TotalEnergy,
    /// `nvmlDeviceGetPcieReplayCounter`.
    PcieReplay,
    /// `nvmlDeviceGetGridLicensableFeatures_v4`: 1 when the vGPU feature is licensed, 0 when
    /// not or when the GPU has no licensing (bare metal), as DCGM reads it.
    VgpuLicence,
    /// `nvmlDeviceGetMinorNumber`: the N of the GPU's `/dev/nvidiaN`.
    MinorNumber,
    /// `nvmlDeviceGetPcieThroughput` (KB/s); `true` is TX.
    PcieThroughput(bool),
    /// Utilization (%).
    Utilization(UtilKind),
    /// `nvmlDeviceGetMemoryInfo_v2` (bytes, scaled to MiB).
    Memory(MemKind),
    /// `nvmlDeviceGetViolationStatus` (ns).
    Violation(Violation),
    /// `nvmlDeviceGetCurrentClocksEventReasons` bitmask.
    ClockEventReasons,
    /// `nvmlDeviceGetFieldValues` with this NVML field id (`NVML_FI_*`), then scaled.
    NvmlField(u32, Scale),
    /// `nvmlDeviceGetFieldValues` with this NVML field id, an NVLink bit error rate decoded
    /// from NVML's mantissa/exponent encoding.
    NvmlFieldBer(u32),
    /// Rate from two successive readings of the sum of these NVML counter fields, per second,
    /// then scaled (NVLink bandwidth from the throughput counters).
    NvmlFieldRate(&'static [u32], Scale),
    /// `nvmlDeviceGetNvLinkErrorCounter(link, counter)`: (`nvmlNvLinkErrorCounter_t`, link).
    NvLinkErrorCounter(u32, u32),
    /// Rate of the data sent plus received over one link (NVML fields 138 and 139 with the
    /// link as scope, KiB), per second, then scaled.
    NvLinkLinkRate(u32, Scale),
    /// A number of the GPU's NVSwitch fabric registration.
    Fabric(FabricPart),
    /// A number of one NVLink link ([`Level::Link`] fields only): the sampler's per-link read
    /// serves it, the field reader never does.
    Link(LinkPart),
    /// NVML GPM metric (`NVML_GPM_METRIC_*` id) averaged over the sampling interval, scaled
    /// (percent → ratio, MiB/s → B/s). Hopper and later.
    Gpm(u32, Scale),
    /// Last Xid seen through the NVML event set (`nvmlEventSetWait_v2`).
    Xid,
    /// A string property, exported as a label.
    Text(TextKind),
    /// Number of GPUs NVML reports (`nvmlDeviceGetCount_v2`).
    DeviceCount,
    /// The NVML device index.
    NvmlIndex,
    /// A count over a sliding window computed by the exporter (`DCGM_EXP_*_COUNT`), one
    /// series per Xid code or clock-event reason.
    Window(WindowKind),
    /// A count since the exporter started (`DCGM_EXP_*_TOTAL`), one series per Xid code or
    /// clock-event reason; clock events are counted on each reason's inactive → active edge.
    Total(WindowKind),
    /// DCGM's health watches (`dcgmHealthCheck`), one series per watch
    /// (`DCGM_EXP_GPU_HEALTH_STATUS`): served by the DCGM client only, never by NVML.
    DcgmHealth,
    /// A number DCGM reads from an NVSwitch chip ([`Level::Switch`] fields only): served by the
    /// DCGM client on the switches the hostengine lists, never by NVML.
    DcgmSwitch,
    /// A number DCGM reads from one port of an NVSwitch chip (a `DCGM_FE_LINK` entity under a
    /// `DCGM_FE_SWITCH`; [`Level::Switch`] fields only): served by the DCGM client on the up
    /// ports of the switches the hostengine lists, one series per port, never by NVML.
    DcgmSwitchPort,
    /// A string DCGM reads from an NVSwitch chip ([`Level::Switch`] fields only): a `label`
    /// row of it adds the label to every series of that switch (and of its ports); served by
    /// the DCGM client, never by NVML.
    DcgmSwitchText,
    /// Known to DCGM but not readable through NVML on this build; the reason is logged once.
    Unavailable(&'static str),
}

/// What a windowed `DCGM_EXP_*_COUNT` (or cumulative `DCGM_EXP_*_TOTAL`) field counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WindowKind {
    /// Xid events per code (`DCGM_EXP_XID_ERRORS_COUNT`, `--xid-count-window-size`).
    Xid,
    /// Samples with each clock-event reason set (`DCGM_EXP_CLOCK_EVENTS_COUNT`,
    /// `--clock-events-count-window-size`).
    ClockEvents,
}

/// The static description of one field.
#[derive(Debug, Clone, Copy)]
pub struct FieldDef {
    /// Canonical DCGM name, e.g. `DCGM_FI_DEV_GPU_TEMP`.
    pub name: &'static str,
    /// DCGM numeric field id (`dcgm_fields.h`); `DCGM_EXP_*` use dcgm-exporter's 9001–9004.
    pub id: u32,
    /// Entity level.
    pub level: Level,
    /// Unit of the exported value, for documentation (`C`, `W`, `MHz`, `MiB`, `%`, `ratio`, …).
    pub unit: &'static str,
    /// How the reader gets its value.
    pub getter: Getter,
    /// Default help text (used by docs; the CSV's help wins in the exposition).
    pub help: &'static str,
    /// Applied to the number read through [`Getter`]: a base-unit field (`…_HERTZ`,
    /// `…_JOULES_TOTAL`) reads the same NVML value as its legacy twin and converts it.
    pub scale: Scale,
}

/// A field read on the physical GPU.
pub(super) const fn dev(
    name: &'static str,
    id: u32,
    unit: &'static str,
    getter: Getter,
    help: &'static str,
) -> FieldDef {
    FieldDef {
        name,
        id,
        level: Level::Device,
        unit,
        getter,
        help,
        scale: Scale::Identity,
    }
}

/// A field read per MIG GPU instance (or on the GPU itself when MIG is off).
pub(super) const fn inst(
    name: &'static str,
    id: u32,
    unit: &'static str,
    getter: Getter,
    help: &'static str,
) -> FieldDef {
    FieldDef {
        level: Level::Instance,
        ..dev(name, id, unit, getter, help)
    }
}

/// A field known to DCGM that NVML cannot serve here, for the reason `why` (logged once, and
/// the counters file loader warns with it).
pub(super) const fn never(
    name: &'static str,
    id: u32,
    why: &'static str,
    help: &'static str,
) -> FieldDef {
    dev(name, id, "", Getter::Unavailable(why), help)
}

impl FieldDef {
    /// The same field with its reading converted by `scale`.
    pub(super) const fn scaled(self, scale: Scale) -> Self {
        Self { scale, ..self }
    }

    /// `v` in the field's unit.
    pub fn convert(&self, v: f64) -> f64 {
        self.scale.apply(v)
    }
}
