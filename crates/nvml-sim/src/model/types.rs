//! The types GPU model presets are written in: [`Model`] (a board's static facts), its MIG
//! profiles ([`MigProfile`]) and NVLink [`Topology`], and the MIG slice counts and
//! GPU-instance id tables the preset tables share.
//!
//! Owns only types and constants; the presets themselves are in `model` and `model/newer.rs`.

use nvml_wrapper_sys::bindings::{
    NVML_DEVICE_ARCH_AMPERE, NVML_DEVICE_ARCH_BLACKWELL, NVML_DEVICE_ARCH_HOPPER,
};

/// A MIG GPU-instance profile of one model (e.g. `3g.40gb` on an H100 80GB).
#[derive(Debug, PartialEq)]
pub struct MigProfile {
    /// Profile name as `nvidia-smi mig -lgip` prints it, without the `MIG ` prefix.
    pub name: &'static str,
    /// Compute slices (the `Ng` part); a GPU has 7.
    pub compute_slices: u32,
    /// Memory slices; a GPU has 8.
    pub memory_slices: u32,
    /// Framebuffer of the instance, MiB.
    pub memory_mib: u64,
    /// GPU-instance ids NVML hands out for this profile, in placement order.
    pub gi_ids: &'static [u32],
}

/// How a board's NVLink links reach its peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Topology {
    /// No NVLink: PCIe only.
    Pcie,
    /// Every link goes to the NVSwitch chips of an 8-GPU HGX baseboard.
    HgxNvSwitch,
    /// Every link goes to the NVLink Switch trays of a GB200 NVL72 rack: one NVLink domain of
    /// 72 GPUs (18 compute trays of 4).
    Nvl72,
}

/// Static facts of one GPU board.
#[derive(Debug, PartialEq)]
pub struct Model {
    /// Key used in scenario files (`model = "H100-SXM5-80GB"`).
    pub key: &'static str,
    /// `nvmlDeviceGetName` answer.
    pub name: &'static str,
    /// `nvmlDeviceArchitecture_t` value.
    pub arch: u32,
    /// Total framebuffer, MiB.
    pub memory_mib: u64,
    /// Framebuffer reserved by the driver/firmware (`nvmlMemory_v2_t.reserved`), MiB.
    pub reserved_mib: u64,
    /// Default (and enforced, unless overridden) power limit, W.
    pub power_limit_w: f64,
    /// Power drawn when idle, W.
    pub idle_w: f64,
    /// Maximum SM/graphics clock, MHz.
    pub sm_max_mhz: u32,
    /// SM/graphics clock when idle, MHz.
    pub sm_idle_mhz: u32,
    /// Memory clock under load, MHz.
    pub mem_mhz: u32,
    /// Memory clock when idle, MHz (HBM does not down-clock).
    pub mem_idle_mhz: u32,
    /// Maximum video clock, MHz.
    pub video_max_mhz: u32,
    /// Video clock when idle, MHz.
    pub video_idle_mhz: u32,
    /// Number of NVLink links; 0 when the board has no NVLink.
    pub nvlink_links: u32,
    /// Where the NVLink links go.
    pub topology: Topology,
    /// NVLink traffic per direction at full training load, bytes/s.
    pub nvlink_peak_bps: f64,
    /// PCIe generation and width of the link.
    pub pcie_gen: u32,
    pub pcie_width: u32,
    /// Whether GPM (GPU performance monitoring) is supported (Hopper and newer).
    pub gpm: bool,
    /// MIG profiles; empty when the board has no MIG.
    pub mig_profiles: &'static [MigProfile],
    /// Whether `NVML_FI_DEV_MEMORY_TEMP` is available (HBM boards).
    pub memory_temp: bool,
    /// Inlet temperature, °C, and board heating per watt, °C/W.
    pub ambient_c: f64,
    pub thermal_c_per_w: f64,
    /// Temperature at which the software thermal slowdown starts, °C.
    pub slowdown_c: f64,
    /// PCI device id (device << 16 | vendor) and subsystem id.
    pub pci_device_id: u32,
    pub pci_subsystem_id: u32,
    /// Firmware strings.
    pub vbios: &'static str,
    pub inforom_image: &'static str,
    /// First digits of board serial numbers.
    pub serial_prefix: &'static str,
    /// Host-visible BAR1 aperture, MiB.
    pub bar1_mib: u64,
}

impl Model {
    /// Whether the board can run in MIG mode.
    pub fn mig_capable(&self) -> bool {
        !self.mig_profiles.is_empty()
    }

    /// Looks up a MIG profile by name (`"3g.40gb"`; a leading `"MIG "` is accepted).
    pub fn mig_profile(&self, name: &str) -> Option<(usize, &'static MigProfile)> {
        let name = name.strip_prefix("MIG ").unwrap_or(name);
        self.mig_profiles
            .iter()
            .enumerate()
            .find(|(_, p)| p.name.eq_ignore_ascii_case(name))
    }

    /// GPU temperature of the idle board once settled, °C (without noise).
    pub fn idle_temp_c(&self) -> f64 {
        self.ambient_c + self.thermal_c_per_w * self.idle_w
    }

    /// NVLink generation (3 on Ampere, 4 on Hopper, 5 on Blackwell); 0 without NVLink.
    pub fn nvlink_generation(&self) -> u32 {
        if self.nvlink_links == 0 {
            return 0;
        }
        match self.arch {
            NVML_DEVICE_ARCH_AMPERE => 3,
            NVML_DEVICE_ARCH_HOPPER => 4,
            NVML_DEVICE_ARCH_BLACKWELL => 5,
            _ => 0,
        }
    }

    /// Whether the GPU registers with an NVSwitch fabric and so answers
    /// `nvmlDeviceGetGpuFabricInfo` / `nvmlDeviceGetGpuFabricInfoV` (Hopper and newer on
    /// NVSwitch systems; NVML serves the call from Hopper on).
    pub fn fabric(&self) -> bool {
        self.topology != Topology::Pcie && self.arch >= NVML_DEVICE_ARCH_HOPPER
    }

    /// Whether `nvmlDeviceGetNvLinkErrorCounter` serves `NVML_NVLINK_ERROR_DL_ECC_DATA` (4):
    /// on the NVLink 4 and 5 links of Hopper and Blackwell, not on Ampere's NVLink 3.
    pub fn nvlink_ecc_counter(&self) -> bool {
        self.nvlink_generation() >= 4
    }

    /// Names of this model's MIG profiles, comma-separated (for error messages).
    pub fn mig_profile_names(&self) -> String {
        let names: Vec<&str> = self.mig_profiles.iter().map(|p| p.name).collect();
        names.join(", ")
    }
}

/// Compute slices of a full MIG-capable GPU.
pub const MIG_COMPUTE_SLICES: u32 = 7;
/// Memory slices of a full MIG-capable GPU.
pub const MIG_MEMORY_SLICES: u32 = 8;
/// `nvmlDeviceGetMaxMigDeviceCount` on a MIG-enabled GPU.
pub const MAX_MIG_DEVICES: u32 = 7;

pub(crate) const ONE_G_IDS: &[u32] = &[7, 8, 9, 10, 11, 12, 13];
pub(crate) const TWO_G_IDS: &[u32] = &[3, 4, 5];
pub(crate) const THREE_G_IDS: &[u32] = &[2, 1];
pub(crate) const FOUR_G_IDS: &[u32] = &[1];
pub(crate) const SEVEN_G_IDS: &[u32] = &[0];
pub(crate) const ONE_G_DOUBLE_IDS: &[u32] = &[9, 10, 11, 12];
