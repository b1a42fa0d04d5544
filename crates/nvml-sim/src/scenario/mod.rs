//! Scenario files: the TOML schema, its parsing and its validation into a resolved
//! [`Scenario`] (GPUs with their model preset, identity, workload, MIG layouts over time, and
//! the fault timeline turned into windows, counter bumps and events).
//!
//! Every error names the file (or built-in) and, where known, the line, and says what is
//! wrong. This module must not read clocks or global state; the format is documented in
//! `scenarios/README.md`.

mod dcgm;
mod faults;
mod links;
mod raw;
mod resolve;
mod switches;
#[cfg(test)]
mod tests;

use std::fmt;
use std::ops::Range;

use toml::Spanned;

use crate::builtin;
use crate::curves::Workload;
use crate::model::{MigProfile, Model};

pub use dcgm::{DcgmFault, DcgmFaultKind};
use faults::{apply_fault, check_appear_order};
pub use links::{FabricFault, FabricHealth, LinkDown};
use raw::RawScenario;
use resolve::{check_mig_uuids, check_unique_identities, resolve_gpu};
pub use switches::NvSwitch;

/// Largest number of GPUs a scenario may declare.
pub const MAX_GPUS: usize = 64;
/// "No instance" marker used by NVML for GPU/compute-instance ids of device-wide events.
pub const NO_INSTANCE: u32 = 0xFFFF_FFFF;
/// Xid the driver reports when a GPU falls off the bus.
pub const XID_GPU_LOST: u64 = 79;

/// Device-level NVML functions whose answer a scenario may mark unsupported
/// (`unsupported = ["nvmlDeviceGetPowerUsage"]`).
pub const DEVICE_FUNCTIONS: &[&str] = &[
    "nvmlDeviceGetApplicationsClock",
    "nvmlDeviceGetArchitecture",
    "nvmlDeviceGetBAR1MemoryInfo",
    "nvmlDeviceGetBrand",
    "nvmlDeviceGetClockInfo",
    "nvmlDeviceGetComputeInstanceId",
    "nvmlDeviceGetComputeRunningProcesses_v3",
    "nvmlDeviceGetCurrPcieLinkGeneration",
    "nvmlDeviceGetCurrPcieLinkWidth",
    "nvmlDeviceGetCurrentClocksEventReasons",
    "nvmlDeviceGetCurrentClocksThrottleReasons",
    "nvmlDeviceGetDecoderUtilization",
    "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
    "nvmlDeviceGetEncoderUtilization",
    "nvmlDeviceGetEnforcedPowerLimit",
    "nvmlDeviceGetFanSpeed_v2",
    "nvmlDeviceGetFieldValues",
    "nvmlDeviceGetGpuFabricInfo",
    "nvmlDeviceGetGpuFabricInfoV",
    "nvmlDeviceGetGpuInstanceId",
    "nvmlDeviceGetGraphicsRunningProcesses_v3",
    "nvmlDeviceGetGridLicensableFeatures_v4",
    "nvmlDeviceGetIndex",
    "nvmlDeviceGetInforomImageVersion",
    "nvmlDeviceGetInforomVersion",
    "nvmlDeviceGetMaxClockInfo",
    "nvmlDeviceGetMaxMigDeviceCount",
    "nvmlDeviceGetMaxPcieLinkGeneration",
    "nvmlDeviceGetMaxPcieLinkWidth",
    "nvmlDeviceGetMemoryInfo",
    "nvmlDeviceGetMemoryInfo_v2",
    "nvmlDeviceGetMigDeviceHandleByIndex",
    "nvmlDeviceGetMigMode",
    "nvmlDeviceGetMPSComputeRunningProcesses_v3",
    "nvmlDeviceGetMinorNumber",
    "nvmlDeviceGetName",
    "nvmlDeviceGetNvLinkErrorCounter",
    "nvmlDeviceGetNvLinkState",
    "nvmlDeviceGetPciInfo_v3",
    "nvmlDeviceGetPcieReplayCounter",
    "nvmlDeviceGetPcieThroughput",
    "nvmlDeviceGetPerformanceState",
    "nvmlDeviceGetPowerManagementDefaultLimit",
    "nvmlDeviceGetPowerManagementLimit",
    "nvmlDeviceGetPowerUsage",
    "nvmlDeviceGetProcessUtilization",
    "nvmlDeviceGetSerial",
    "nvmlDeviceGetSupportedEventTypes",
    "nvmlDeviceGetTemperature",
    "nvmlDeviceGetTemperatureThreshold",
    "nvmlDeviceGetTotalEccErrors",
    "nvmlDeviceGetTotalEnergyConsumption",
    "nvmlDeviceGetUUID",
    "nvmlDeviceGetUtilizationRates",
    "nvmlDeviceGetVbiosVersion",
    "nvmlDeviceGetViolationStatus",
    "nvmlDeviceIsMigDeviceHandle",
    "nvmlDeviceRegisterEvents",
    "nvmlGpmMigSampleGet",
    "nvmlGpmQueryDeviceSupport",
    "nvmlGpmQueryIfStreamingEnabled",
    "nvmlGpmSampleGet",
];

// ---------------------------------------------------------------------------------------------
// Resolved scenario
// ---------------------------------------------------------------------------------------------

/// A validated scenario: everything the simulator needs, nothing left to check.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Built-in name or file stem (or the file's `name`).
    pub name: String,
    /// Where it came from, as used in error messages ("scenario file /x.toml").
    pub origin: String,
    /// Node name (the exporter's `Hostname` label in simulate mode).
    pub node: String,
    /// Free text from the file.
    pub description: String,
    pub gpus: Vec<Gpu>,
    /// Every event of the timeline, sorted by time (file order within the same time).
    pub events: Vec<Event>,
    /// Scenario time from which `nvmlInit_v2` succeeds (before it: `DRIVER_NOT_LOADED`);
    /// 0 when the file does not set `driver_loaded_at`.
    pub driver_loaded_at: f64,
    /// Scenario time until which `nvmlInit_v2` blocks when called before it (a driver wedged
    /// in its initialisation); 0 when the file does not set `init_hangs_until`.
    pub init_hangs_until: f64,
    /// The DCGM fault timeline (`[[dcgm_faults]]`), for the simulated libdcgm; NVML ignores it.
    pub dcgm_faults: Vec<DcgmFault>,
    /// The NVSwitch chips DCGM sees (`[[nvswitches]]`); NVML ignores them.
    pub nvswitches: Vec<NvSwitch>,
    /// The TOML text the scenario was read from.
    pub text: String,
}

/// A physical GPU of the scenario.
#[derive(Debug, Clone)]
pub struct Gpu {
    pub index: usize,
    pub model: &'static Model,
    pub uuid: String,
    pub serial: String,
    pub pci: Pci,
    /// Power limit without faults, W.
    pub power_limit_w: f64,
    /// Workload when the GPU is not in MIG mode.
    pub workload: Workload,
    /// Processes when the GPU is not in MIG mode.
    pub processes: Vec<Process>,
    pub mig_enabled: bool,
    /// Every MIG instance identity that exists at some time, indexed by "uid".
    pub instances: Vec<Instance>,
    /// MIG layouts over time, sorted by `from`; the first starts at `f64::NEG_INFINITY`.
    pub layouts: Vec<Layout>,
    pub lost: Vec<Window>,
    pub unsupported: Vec<Unsupported>,
    pub bumps: Vec<Bump>,
    pub power_caps: Vec<PowerCap>,
    /// Thermal slowdown windows (`thermal` faults).
    pub thermal: Vec<Thermal>,
    /// Hardware power-brake windows (`power_brake` faults).
    pub power_brakes: Vec<Window>,
    /// Windows in which every call on the GPU blocks until the window ends (`hang` faults).
    pub hangs: Vec<Window>,
    /// Scenario time the GPU is enumerated from (an `appear` fault); `None`: from the start.
    pub appear_at: Option<f64>,
    /// Windows in which the GPU is not enumerated at all, as when its driver is unbound and
    /// bound again (`unbind` faults), each with the minor number it comes back with, if
    /// another. The GPUs after it move down one NVML index meanwhile (`Sim::nvml_index`).
    pub unbound: Vec<(Window, Option<u32>)>,
    /// NVLink links down inside a window (`nvlink_down` faults).
    pub links_down: Vec<LinkDown>,
    /// Fabric registration and health overrides inside a window (`fabric` faults).
    pub fabric: Vec<FabricFault>,
    /// `nvmlDeviceGetMinorNumber`: the file's `minor_number`, else the index.
    pub minor_number: u32,
    /// `None` on bare metal (NVML reports no licensing); `Some(licensed)` for a vGPU seen from
    /// inside its guest (the file's `vgpu_licence`).
    pub vgpu_licence: Option<bool>,
}

/// PCI location of a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pci {
    pub domain: u32,
    pub bus: u32,
    pub device: u32,
    pub function: u32,
}

impl Pci {
    /// `nvmlPciInfo_t.busId`: `"00000000:18:00.0"`.
    pub fn bus_id(&self) -> String {
        format!(
            "{:08X}:{:02X}:{:02X}.{:X}",
            self.domain, self.bus, self.device, self.function
        )
    }

    /// `nvmlPciInfo_t.busIdLegacy`: `"0000:18:00.0"`.
    pub fn bus_id_legacy(&self) -> String {
        format!(
            "{:04X}:{:02X}:{:02X}.{:X}",
            self.domain, self.bus, self.device, self.function
        )
    }

    /// Parses `"0000:18:00.0"`, `"00000000:18:00.0"` or `"18:00.0"`.
    pub fn parse(s: &str) -> Option<Pci> {
        let (head, function) = s.rsplit_once('.')?;
        let mut parts: Vec<&str> = head.split(':').collect();
        if parts.len() == 2 {
            parts.insert(0, "0");
        }
        if parts.len() != 3 {
            return None;
        }
        let hex = |p: &str, max: u32| u32::from_str_radix(p, 16).ok().filter(|v| *v <= max);
        Some(Pci {
            domain: hex(parts[0], 0xFFFF)?,
            bus: hex(parts[1], 0xFF)?,
            device: hex(parts[2], 0x1F)?,
            function: hex(function, 0x7)?,
        })
    }
}

/// A MIG device identity: the same GPU/compute-instance ids and profile mean the same device
/// (and the same handle) across layouts.
#[derive(Debug, Clone, PartialEq)]
pub struct Instance {
    pub gi: u32,
    pub ci: u32,
    pub profile: &'static MigProfile,
    pub uuid: String,
}

/// The MIG instances of a GPU from `from` until the next layout.
#[derive(Debug, Clone)]
pub struct Layout {
    pub from: f64,
    /// Sorted by (GPU instance id, compute instance id): the MIG device index order.
    pub members: Vec<Member>,
}

/// One instance present in a layout, with what runs on it.
#[derive(Debug, Clone)]
pub struct Member {
    pub uid: usize,
    pub workload: Workload,
    pub processes: Vec<Process>,
}

/// A process running on a GPU or MIG instance.
#[derive(Debug, Clone, PartialEq)]
pub struct Process {
    pub pid: u32,
    /// Fixed framebuffer use; `None` shares the workload's use equally.
    pub memory_mib: Option<u64>,
}

/// A half-open time window [from, until).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    pub from: f64,
    pub until: f64,
}

impl Window {
    pub fn contains(&self, t: f64) -> bool {
        t >= self.from && t < self.until
    }
}

/// What an `unsupported` entry switches off.
#[derive(Debug, Clone, PartialEq)]
pub enum Target {
    /// An NVML function by name (`nvmlDeviceGetPowerUsage`).
    Function(String),
    /// One field id of `nvmlDeviceGetFieldValues` (`field:82`).
    Field(u32),
    /// GPM sampling (`gpm`).
    Gpm,
}

impl Target {
    fn parse(s: &str) -> Result<Target, String> {
        if s == "gpm" {
            return Ok(Target::Gpm);
        }
        if let Some(id) = s.strip_prefix("field:") {
            return id
                .trim()
                .parse::<u32>()
                .map(Target::Field)
                .map_err(|_| format!("`{s}`: field id must be a number, e.g. \"field:82\""));
        }
        if DEVICE_FUNCTIONS.contains(&s) {
            return Ok(Target::Function(s.to_string()));
        }
        Err(format!(
            "unknown unsupported target \"{s}\" (expected \"gpm\", \"field:<id>\" or a device \
             function such as nvmlDeviceGetPowerUsage; known functions: {})",
            DEVICE_FUNCTIONS.join(", ")
        ))
    }
}

/// A read that returns `NVML_ERROR_NOT_SUPPORTED` inside a window.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsupported {
    pub target: Target,
    pub window: Window,
}

/// Error and health counters a fault can bump.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Counter {
    EccSbe,
    EccDbe,
    RemapCorrectable,
    RemapUncorrectable,
    RemapPending,
    RemapFailure,
    RetiredSbe,
    RetiredDbe,
    RetiredPending,
    NvlinkCrcFlit,
    NvlinkCrcData,
    NvlinkReplay,
    NvlinkRecovery,
    /// NVLink 5 errors FEC could not correct.
    NvlinkEffective,
    PcieReplay,
}

/// A counter change at a time: add `amount`, or (for state flags) set it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bump {
    pub at: f64,
    pub counter: Counter,
    pub amount: u64,
    pub set: bool,
    /// NVLink counters: the link the errors are on; `None` spreads them over every link.
    pub link: Option<u32>,
}

/// An enforced power limit other than the default inside a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PowerCap {
    pub window: Window,
    pub watts: f64,
}

/// A thermal slowdown inside a window: the GPU die is at least `celsius` hot.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thermal {
    pub window: Window,
    pub celsius: f64,
}

/// An NVML event on the timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Event {
    pub t: f64,
    pub gpu: usize,
    /// `nvmlEventType*` bit.
    pub event_type: u64,
    /// Xid for Xid events, 0 otherwise.
    pub data: u64,
    pub gi: u32,
    pub ci: u32,
}

impl Scenario {
    /// Looks a GPU up by index.
    pub fn gpu(&self, index: usize) -> Option<&Gpu> {
        self.gpus.get(index)
    }
}

impl Gpu {
    /// The MIG layout at `t` (`None` when the GPU is not in MIG mode).
    pub fn layout_at(&self, t: f64) -> Option<&Layout> {
        if !self.mig_enabled {
            return None;
        }
        self.layouts.iter().rev().find(|l| l.from <= t)
    }

    /// The member for instance `uid` at `t`, if the instance exists then.
    pub fn member_at(&self, uid: usize, t: f64) -> Option<&Member> {
        self.layout_at(t)?.members.iter().find(|m| m.uid == uid)
    }

    /// Whether the GPU is enumerated at `t` (it has appeared, or never had to, and is not
    /// unbound then).
    pub fn present(&self, t: f64) -> bool {
        self.appear_at.is_none_or(|a| t >= a) && !self.unbound.iter().any(|(w, _)| w.contains(t))
    }

    /// `nvmlDeviceGetMinorNumber` at `t`: the one the GPU came back with from its last unbind
    /// that gave one, else the file's.
    pub fn minor_at(&self, t: f64) -> u32 {
        self.unbound
            .iter()
            .filter(|(w, m)| m.is_some() && w.until <= t)
            .max_by(|a, b| a.0.until.total_cmp(&b.0.until))
            .and_then(|(_, m)| *m)
            .unwrap_or(self.minor_number)
    }

    /// Whether the GPU has fallen off the bus at `t`.
    pub fn is_lost(&self, t: f64) -> bool {
        self.lost.iter().any(|w| w.contains(t))
    }

    /// Whether `target` is switched off at `t`.
    pub fn is_unsupported(&self, target: &Target, t: f64) -> bool {
        self.unsupported
            .iter()
            .any(|u| u.target == *target && u.window.contains(t))
    }

    /// Whether the NVML function `name` is switched off at `t`.
    pub fn function_unsupported(&self, name: &str, t: f64) -> bool {
        self.unsupported
            .iter()
            .any(|u| matches!(&u.target, Target::Function(f) if f == name) && u.window.contains(t))
    }

    /// Value of a counter at `t`: the sum of bumps so far, or the last value set.
    pub fn counter(&self, counter: Counter, t: f64) -> u64 {
        let mut value: u64 = 0;
        for b in self
            .bumps
            .iter()
            .filter(|b| b.counter == counter && b.at <= t)
        {
            value = if b.set {
                b.amount
            } else {
                value.saturating_add(b.amount)
            };
        }
        value
    }

    /// Enforced power limit at `t`, W.
    pub fn power_limit_at(&self, t: f64) -> f64 {
        self.power_caps
            .iter()
            .rev()
            .find(|c| c.window.contains(t))
            .map_or(self.power_limit_w, |c| c.watts)
    }

    /// Die temperature a `thermal` fault forces at `t` (the hottest of the windows open
    /// then), °C; `None` outside every window.
    pub fn thermal_at(&self, t: f64) -> Option<f64> {
        self.thermal
            .iter()
            .filter(|w| w.window.contains(t))
            .map(|w| w.celsius)
            .max_by(f64::total_cmp)
    }

    /// How long a call on the GPU at `t` blocks: the rest of a `hang` window holding `t`.
    pub fn hang_left(&self, t: f64) -> Option<f64> {
        self.hangs
            .iter()
            .find(|w| w.contains(t))
            .map(|w| w.until - t)
    }

    /// Whether a `power_brake` fault holds the GPU's clocks down at `t`.
    pub fn power_braked(&self, t: f64) -> bool {
        self.power_brakes.iter().any(|w| w.contains(t))
    }
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// A scenario that cannot be loaded: the message names the file and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    message: String,
}

impl ScenarioError {
    fn new(message: String) -> Self {
        Self { message }
    }

    /// The full message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// Where errors point: origin plus the text to turn byte offsets into lines.
struct Ctx<'a> {
    origin: &'a str,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: Option<Range<usize>>, msg: impl fmt::Display) -> ScenarioError {
        match span {
            Some(span) => {
                let end = span.start.min(self.text.len());
                let line = self.text.as_bytes()[..end]
                    .iter()
                    .filter(|b| **b == b'\n')
                    .count()
                    + 1;
                ScenarioError::new(format!("{}: line {line}: {msg}", self.origin))
            }
            None => ScenarioError::new(format!("{}: {msg}", self.origin)),
        }
    }
}

/// A top-level time key (`driver_loaded_at`, `init_hangs_until`): a number of seconds ≥ 0,
/// 0 when absent.
fn seconds(ctx: &Ctx<'_>, key: &str, value: Option<&Spanned<f64>>) -> Result<f64, ScenarioError> {
    let Some(d) = value else { return Ok(0.0) };
    let v = *d.get_ref();
    if !(v.is_finite() && v >= 0.0) {
        return Err(ctx.err(
            Some(d.span()),
            format!("{key} = {v} must be a number of seconds ≥ 0"),
        ));
    }
    Ok(v)
}

/// Loads a scenario by built-in name or file path.
pub fn load(spec: &str) -> Result<Scenario, ScenarioError> {
    if let Some(text) = builtin::get(spec) {
        return parse(text, &format!("built-in scenario {spec}"), spec);
    }
    match read_scenario_file(spec) {
        Ok(text) => load_text(&text, spec),
        Err(e) => Err(ScenarioError::new(format!(
            "scenario \"{spec}\": not a built-in scenario (built-ins: {}) and cannot be read as \
             a file: {e}",
            builtin::names().join(", ")
        ))),
    }
}

/// The largest scenario file read (the largest built-in is under 20 KiB).
pub const MAX_SCENARIO_FILE: u64 = 4 << 20;

/// Reads the scenario file at `path`: a regular file (symlinks followed) of at most
/// [`MAX_SCENARIO_FILE`] bytes, in UTF-8. It is opened without blocking, so a FIFO or a device
/// is refused at once instead of blocking or filling memory.
fn read_scenario_file(path: &str) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(
            "not a regular file (a FIFO, device, socket or directory)",
        ));
    }
    if meta.len() > MAX_SCENARIO_FILE {
        return Err(std::io::Error::other(format!(
            "{} bytes, over the {MAX_SCENARIO_FILE}-byte limit for a scenario file",
            meta.len()
        )));
    }
    let mut buf = String::new();
    f.take(MAX_SCENARIO_FILE + 1).read_to_string(&mut buf)?;
    if buf.len() as u64 > MAX_SCENARIO_FILE {
        return Err(std::io::Error::other(format!(
            "grew past the {MAX_SCENARIO_FILE}-byte limit for a scenario file while read"
        )));
    }
    Ok(buf)
}

/// Parses the text of the scenario file at `path`, which the caller has read (the exporter
/// reads it with its bounded reader, so a FIFO, a device or an oversized file never gets here).
/// The file's stem is the scenario's name unless it has a `name`.
pub fn load_text(text: &str, path: &str) -> Result<Scenario, ScenarioError> {
    let stem = std::path::Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string());
    parse(text, &format!("scenario file {path}"), &stem)
}

/// Parses and validates scenario text. `origin` prefixes error messages; `default_name` is
/// used when the file has no `name`.
pub fn parse(text: &str, origin: &str, default_name: &str) -> Result<Scenario, ScenarioError> {
    let ctx = Ctx { origin, text };
    let raw: RawScenario = toml::from_str(text).map_err(|e| ctx.err(e.span(), e.message()))?;
    if raw.gpus.len() > MAX_GPUS {
        return Err(ctx.err(
            None,
            format!("{} GPUs declared, at most {MAX_GPUS}", raw.gpus.len()),
        ));
    }
    let node = raw.node.unwrap_or_else(|| "sim-node".to_string());
    let mut gpus = Vec::with_capacity(raw.gpus.len());
    for (index, g) in raw.gpus.iter().enumerate() {
        gpus.push(resolve_gpu(&ctx, &node, index, g)?);
    }
    check_unique_identities(&ctx, &raw.gpus, &gpus)?;
    let mut events = Vec::new();
    for f in &raw.faults {
        apply_fault(&ctx, &mut gpus, &mut events, f)?;
    }
    check_appear_order(&ctx, &raw.faults, &gpus)?;
    let driver_loaded_at = seconds(&ctx, "driver_loaded_at", raw.driver_loaded_at.as_ref())?;
    let init_hangs_until = seconds(&ctx, "init_hangs_until", raw.init_hangs_until.as_ref())?;
    for g in &mut gpus {
        g.layouts.sort_by(|a, b| a.from.total_cmp(&b.from));
        if g.layouts.windows(2).any(|w| w[0].from == w[1].from) {
            return Err(ctx.err(
                None,
                format!("GPU {}: two mig_layout faults at the same time", g.index),
            ));
        }
    }
    check_mig_uuids(&ctx, &gpus)?;
    let nvswitches = switches::resolve_switches(&ctx, &raw.nvswitches)?;
    let dcgm_faults = dcgm::resolve_dcgm_faults(&ctx, &raw.dcgm_faults, gpus.len(), &nvswitches)?;
    events.sort_by(|a: &Event, b: &Event| a.t.total_cmp(&b.t));
    Ok(Scenario {
        name: raw.name.unwrap_or_else(|| default_name.to_string()),
        origin: origin.to_string(),
        node,
        description: raw.description.unwrap_or_default(),
        gpus,
        events,
        driver_loaded_at,
        init_hangs_until,
        dcgm_faults,
        nvswitches,
        text: text.to_string(),
    })
}
