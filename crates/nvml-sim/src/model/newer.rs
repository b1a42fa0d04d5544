//! Presets of the boards added for NVLink-per-link and fabric health: H200 SXM5 141GB, B200
//! (HGX B200, 180 GB), the Blackwell GPU of a GB200 superchip (NVL72) and L40S, with their MIG
//! profile tables. The published limits behind each value are cited in `scenarios/README.md`
//! ("Models").
//!
//! Owns only constants, like the rest of `model`; it must not know about time, workloads or
//! scenarios. Values that NVIDIA does not publish (idle power and most clocks, reserved memory,
//! NVLink traffic at load, thermal response, subsystem ids, firmware strings, serial prefixes)
//! are plausible choices, not specs.

use nvml_wrapper_sys::bindings::{
    NVML_DEVICE_ARCH_ADA, NVML_DEVICE_ARCH_BLACKWELL, NVML_DEVICE_ARCH_HOPPER,
};

use super::types::{
    FOUR_G_IDS, MigProfile, Model, ONE_G_DOUBLE_IDS, ONE_G_IDS, SEVEN_G_IDS, THREE_G_IDS,
    TWO_G_IDS, Topology,
};

/// A MIG profile row: name, compute slices, memory slices, MiB, GPU-instance ids.
const fn profile(
    name: &'static str,
    compute_slices: u32,
    memory_slices: u32,
    memory_mib: u64,
    gi_ids: &'static [u32],
) -> MigProfile {
    MigProfile {
        name,
        compute_slices,
        memory_slices,
        memory_mib,
        gi_ids,
    }
}

/// H200 141GB: names, slices and instance counts from the MIG User Guide table "GPU Instance
/// Profiles on H200"; sizes from one public `nvidia-smi mig -lgip` output of an H200 (16.00,
/// 32.25, 69.50, 139.75 GiB; NVIDIA/mig-parted issue #120).
const H200_PROFILES: &[MigProfile] = &[
    profile("1g.18gb", 1, 1, 16384, ONE_G_IDS),
    profile("1g.35gb", 1, 2, 33024, ONE_G_DOUBLE_IDS),
    profile("2g.35gb", 2, 2, 33024, TWO_G_IDS),
    profile("3g.71gb", 3, 4, 71168, THREE_G_IDS),
    profile("4g.71gb", 4, 4, 71168, FOUR_G_IDS),
    profile("7g.141gb", 7, 8, 143104, SEVEN_G_IDS),
];

/// B200 180GB: names, slices and instance counts from the MIG User Guide table "GPU Instance
/// Profiles on B200"; 1g/2g sizes from a public `nvidia-smi mig -lgip` output (22.00, 44.25 GiB;
/// NVIDIA/gpu-operator PR #1242). No public output of the 3g/4g/7g rows could be read: their
/// sizes are scaled from the smaller rows, a plausible choice, not an observed value.
const B200_PROFILES: &[MigProfile] = &[
    profile("1g.23gb", 1, 1, 22528, ONE_G_IDS),
    profile("1g.45gb", 1, 2, 45312, ONE_G_DOUBLE_IDS),
    profile("2g.45gb", 2, 2, 45312, TWO_G_IDS),
    profile("3g.90gb", 3, 4, 91136, THREE_G_IDS),
    profile("4g.90gb", 4, 4, 91136, FOUR_G_IDS),
    profile("7g.180gb", 7, 8, 182528, SEVEN_G_IDS),
];

/// GB200 186GB: the MIG User Guide has no GB200 table. Names are those of NVIDIA mig-parted's
/// default configuration for GB200 (PCI 0x2941) as corrected for production boards; slices and
/// instance counts are B200's, which that configuration's counts agree with. 1g/2g sizes from a
/// public `nvidia-smi mig -lgip` output (22.00, 45.50 GiB; NVIDIA/mig-parted issue #227); the
/// 3g/4g/7g sizes are scaled from those, a plausible choice, not an observed value.
const GB200_PROFILES: &[MigProfile] = &[
    profile("1g.23gb", 1, 1, 22528, ONE_G_IDS),
    profile("1g.47gb", 1, 2, 46592, ONE_G_DOUBLE_IDS),
    profile("2g.47gb", 2, 2, 46592, TWO_G_IDS),
    profile("3g.93gb", 3, 4, 93696, THREE_G_IDS),
    profile("4g.93gb", 4, 4, 93696, FOUR_G_IDS),
    profile("7g.186gb", 7, 8, 188416, SEVEN_G_IDS),
];

/// H200 SXM5 on an HGX H200 baseboard: 141 GB HBM3e, 700 W, 18 NVLink 4 links (900 GB/s).
pub(super) const H200_SXM5_141GB: Model = Model {
    key: "H200-SXM5-141GB",
    name: "NVIDIA H200",
    arch: NVML_DEVICE_ARCH_HOPPER,
    memory_mib: 143771,
    reserved_mib: 551,
    power_limit_w: 700.0,
    idle_w: 75.0,
    sm_max_mhz: 1980,
    sm_idle_mhz: 345,
    mem_mhz: 3201,
    mem_idle_mhz: 3201,
    video_max_mhz: 1755,
    video_idle_mhz: 765,
    nvlink_links: 18,
    topology: Topology::HgxNvSwitch,
    nvlink_peak_bps: 180.0e9,
    pcie_gen: 5,
    pcie_width: 16,
    gpm: true,
    mig_profiles: H200_PROFILES,
    memory_temp: true,
    ambient_c: 27.0,
    thermal_c_per_w: 0.068,
    slowdown_c: 87.0,
    pci_device_id: 0x2335_10DE,
    pci_subsystem_id: 0x18BE_10DE,
    vbios: "96.00.A5.00.01",
    inforom_image: "G525.0200.00.05",
    serial_prefix: "16400000",
    bar1_mib: 262144,
};

/// B200 on an HGX B200 baseboard: 180 GB HBM3e, 1000 W, 18 NVLink 5 links (1.8 TB/s).
pub(super) const B200_SXM_180GB: Model = Model {
    key: "B200-SXM-180GB",
    name: "NVIDIA B200",
    arch: NVML_DEVICE_ARCH_BLACKWELL,
    memory_mib: 183359,
    reserved_mib: 640,
    power_limit_w: 1000.0,
    idle_w: 140.0,
    sm_max_mhz: 1965,
    sm_idle_mhz: 345,
    mem_mhz: 3996,
    mem_idle_mhz: 3996,
    video_max_mhz: 1860,
    video_idle_mhz: 765,
    nvlink_links: 18,
    topology: Topology::HgxNvSwitch,
    nvlink_peak_bps: 360.0e9,
    pcie_gen: 5,
    pcie_width: 16,
    gpm: true,
    mig_profiles: B200_PROFILES,
    memory_temp: true,
    ambient_c: 25.0,
    thermal_c_per_w: 0.045,
    slowdown_c: 87.0,
    pci_device_id: 0x2901_10DE,
    pci_subsystem_id: 0x1999_10DE,
    vbios: "97.00.70.00.01",
    inforom_image: "G525.0220.00.02",
    serial_prefix: "17524240",
    bar1_mib: 262144,
};

/// One Blackwell GPU of a GB200 superchip in a GB200 NVL72 rack: 186 GB HBM3e, 1200 W (the
/// datasheet's "configurable up to" TDP per GPU), 18 NVLink 5 links (1.8 TB/s) into the rack's
/// NVLink Switch trays.
pub(super) const GB200: Model = Model {
    key: "GB200",
    name: "NVIDIA GB200",
    arch: NVML_DEVICE_ARCH_BLACKWELL,
    memory_mib: 189471,
    reserved_mib: 640,
    power_limit_w: 1200.0,
    idle_w: 160.0,
    sm_max_mhz: 2062,
    sm_idle_mhz: 345,
    mem_mhz: 3996,
    mem_idle_mhz: 3996,
    video_max_mhz: 1950,
    video_idle_mhz: 765,
    nvlink_links: 18,
    topology: Topology::Nvl72,
    nvlink_peak_bps: 360.0e9,
    pcie_gen: 5,
    pcie_width: 16,
    gpm: true,
    mig_profiles: GB200_PROFILES,
    memory_temp: true,
    ambient_c: 25.0,
    thermal_c_per_w: 0.035,
    slowdown_c: 87.0,
    pci_device_id: 0x2941_10DE,
    pci_subsystem_id: 0x2046_10DE,
    vbios: "97.00.82.00.01",
    inforom_image: "G548.0201.00.04",
    serial_prefix: "17825240",
    bar1_mib: 262144,
};

/// L40S: 48 GB GDDR6 with ECC, 350 W, PCIe Gen4 x16, no NVLink, no MIG.
pub(super) const L40S: Model = Model {
    key: "L40S",
    name: "NVIDIA L40S",
    arch: NVML_DEVICE_ARCH_ADA,
    memory_mib: 46068,
    reserved_mib: 490,
    power_limit_w: 350.0,
    idle_w: 32.0,
    sm_max_mhz: 2520,
    sm_idle_mhz: 210,
    mem_mhz: 9001,
    mem_idle_mhz: 405,
    video_max_mhz: 1965,
    video_idle_mhz: 795,
    nvlink_links: 0,
    topology: Topology::Pcie,
    nvlink_peak_bps: 0.0,
    pcie_gen: 4,
    pcie_width: 16,
    gpm: false,
    mig_profiles: &[],
    memory_temp: false,
    ambient_c: 28.0,
    thermal_c_per_w: 0.13,
    slowdown_c: 88.0,
    pci_device_id: 0x26B9_10DE,
    pci_subsystem_id: 0x1851_10DE,
    vbios: "95.02.66.00.02",
    inforom_image: "G133.0242.00.03",
    serial_prefix: "13230237",
    bar1_mib: 65536,
};
