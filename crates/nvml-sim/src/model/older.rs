//! Presets of the boards the DCGM simulator's profiling guides use that predate GPM: the A100
//! SXM4 80GB (HBM2e, MIG with the 80 GB profile table) and the Tesla T4 (Turing, PCIe, no
//! MIG, no NVLink). The published limits (memory, power, clocks, link width) follow NVIDIA's
//! datasheets; values NVIDIA does not publish (idle power, reserved memory, thermal response,
//! subsystem ids, firmware strings, serial prefixes) are plausible choices, not specs.
//!
//! Owns only constants, like the rest of `model`; it must not know about time, workloads or
//! scenarios.

use nvml_wrapper_sys::bindings::{NVML_DEVICE_ARCH_AMPERE, NVML_DEVICE_ARCH_TURING};

use super::types::{
    FOUR_G_IDS, MigProfile, Model, ONE_G_DOUBLE_IDS, ONE_G_IDS, SEVEN_G_IDS, THREE_G_IDS,
    TWO_G_IDS, Topology,
};

/// A100 80GB GPU-instance profiles, as `nvidia-smi mig -lgip` lists them.
const A100_80_PROFILES: &[MigProfile] = &[
    MigProfile {
        name: "1g.10gb",
        compute_slices: 1,
        memory_slices: 1,
        memory_mib: 9728,
        gi_ids: ONE_G_IDS,
    },
    MigProfile {
        name: "1g.20gb",
        compute_slices: 1,
        memory_slices: 2,
        memory_mib: 19968,
        gi_ids: ONE_G_DOUBLE_IDS,
    },
    MigProfile {
        name: "2g.20gb",
        compute_slices: 2,
        memory_slices: 2,
        memory_mib: 19968,
        gi_ids: TWO_G_IDS,
    },
    MigProfile {
        name: "3g.40gb",
        compute_slices: 3,
        memory_slices: 4,
        memory_mib: 40192,
        gi_ids: THREE_G_IDS,
    },
    MigProfile {
        name: "4g.40gb",
        compute_slices: 4,
        memory_slices: 4,
        memory_mib: 40192,
        gi_ids: FOUR_G_IDS,
    },
    MigProfile {
        name: "7g.80gb",
        compute_slices: 7,
        memory_slices: 8,
        memory_mib: 80384,
        gi_ids: SEVEN_G_IDS,
    },
];

/// A100 SXM4 80GB: 80 GB HBM2e at 1593 MHz, 400 W, 12 NVLink 3 links to NVSwitch, PCIe Gen4.
pub(super) const A100_SXM4_80GB: Model = Model {
    key: "A100-SXM4-80GB",
    name: "NVIDIA A100-SXM4-80GB",
    arch: NVML_DEVICE_ARCH_AMPERE,
    memory_mib: 81920,
    reserved_mib: 567,
    power_limit_w: 400.0,
    idle_w: 62.0,
    sm_max_mhz: 1410,
    sm_idle_mhz: 210,
    mem_mhz: 1593,
    mem_idle_mhz: 1593,
    video_max_mhz: 1290,
    video_idle_mhz: 585,
    nvlink_links: 12,
    topology: Topology::HgxNvSwitch,
    nvlink_peak_bps: 110.0e9,
    pcie_gen: 4,
    pcie_width: 16,
    gpm: false,
    mig_profiles: A100_80_PROFILES,
    memory_temp: true,
    ambient_c: 26.0,
    thermal_c_per_w: 0.1,
    slowdown_c: 88.0,
    pci_device_id: 0x20B2_10DE,
    pci_subsystem_id: 0x1463_10DE,
    vbios: "92.00.36.00.10",
    inforom_image: "G506.0210.00.01",
    serial_prefix: "13236210",
    bar1_mib: 131072,
};

/// Tesla T4: 16 GB GDDR6 (15360 MiB visible), 70 W, PCIe Gen3 x16, no NVLink, no MIG.
pub(super) const T4: Model = Model {
    key: "T4",
    name: "Tesla T4",
    arch: NVML_DEVICE_ARCH_TURING,
    memory_mib: 15360,
    reserved_mib: 257,
    power_limit_w: 70.0,
    idle_w: 10.0,
    sm_max_mhz: 1590,
    sm_idle_mhz: 300,
    mem_mhz: 5001,
    mem_idle_mhz: 405,
    video_max_mhz: 1470,
    video_idle_mhz: 540,
    nvlink_links: 0,
    topology: Topology::Pcie,
    nvlink_peak_bps: 0.0,
    pcie_gen: 3,
    pcie_width: 16,
    gpm: false,
    mig_profiles: &[],
    memory_temp: false,
    ambient_c: 30.0,
    thermal_c_per_w: 0.62,
    slowdown_c: 87.0,
    pci_device_id: 0x1EB8_10DE,
    pci_subsystem_id: 0x12A2_10DE,
    vbios: "90.04.96.00.A0",
    inforom_image: "G183.0200.00.02",
    serial_prefix: "13221190",
    bar1_mib: 256,
};

#[cfg(test)]
mod tests {
    use super::super::find;
    use super::*;

    #[test]
    fn a100_80gb_and_t4_match_the_published_specs() {
        let a100 = find("A100-SXM4-80GB").unwrap();
        assert_eq!(a100.arch, NVML_DEVICE_ARCH_AMPERE);
        assert_eq!((a100.memory_mib / 1024, a100.power_limit_w), (80, 400.0));
        assert!(!a100.gpm && a100.mig_capable());
        let names: Vec<&str> = a100.mig_profiles.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            [
                "1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"
            ]
        );
        let t4 = find("t4").unwrap();
        assert_eq!((t4.name, t4.arch), ("Tesla T4", NVML_DEVICE_ARCH_TURING));
        assert_eq!(
            (t4.power_limit_w, t4.pcie_gen, t4.nvlink_links),
            (70.0, 3, 0)
        );
        assert!(!t4.gpm && !t4.mig_capable());
    }
}
