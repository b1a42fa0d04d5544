//! GPU model presets: the static facts of each simulated board (name, architecture, memory,
//! power envelope, clocks, NVLink and its topology, GPM, MIG profiles, PCI ids, firmware
//! strings).
//!
//! Owns only constants. It must not know about time, workloads or scenarios; `physics` turns
//! these facts into readings and `scenario` resolves a model key to one of these presets. The
//! types the presets are written in (`Model`, `MigProfile`, `Topology`, the MIG id tables) are in
//! `model/types.rs`; the H200, B200, GB200 and L40S presets live in `model/newer.rs`, the A100
//! 80GB and T4 in `model/older.rs`.

mod newer;
mod older;
mod types;

use types::{FOUR_G_IDS, ONE_G_DOUBLE_IDS, ONE_G_IDS, SEVEN_G_IDS, THREE_G_IDS, TWO_G_IDS};
pub use types::{
    MAX_MIG_DEVICES, MIG_COMPUTE_SLICES, MIG_MEMORY_SLICES, MigProfile, Model, Topology,
};

use nvml_wrapper_sys::bindings::{
    NVML_DEVICE_ARCH_ADA, NVML_DEVICE_ARCH_AMPERE, NVML_DEVICE_ARCH_HOPPER,
};

const H100_PROFILES: &[MigProfile] = &[
    MigProfile {
        name: "1g.10gb",
        compute_slices: 1,
        memory_slices: 1,
        memory_mib: 9984,
        gi_ids: ONE_G_IDS,
    },
    MigProfile {
        name: "1g.20gb",
        compute_slices: 1,
        memory_slices: 2,
        memory_mib: 20096,
        gi_ids: ONE_G_DOUBLE_IDS,
    },
    MigProfile {
        name: "2g.20gb",
        compute_slices: 2,
        memory_slices: 2,
        memory_mib: 20096,
        gi_ids: TWO_G_IDS,
    },
    MigProfile {
        name: "3g.40gb",
        compute_slices: 3,
        memory_slices: 4,
        memory_mib: 40448,
        gi_ids: THREE_G_IDS,
    },
    MigProfile {
        name: "4g.40gb",
        compute_slices: 4,
        memory_slices: 4,
        memory_mib: 40448,
        gi_ids: FOUR_G_IDS,
    },
    MigProfile {
        name: "7g.80gb",
        compute_slices: 7,
        memory_slices: 8,
        memory_mib: 81152,
        gi_ids: SEVEN_G_IDS,
    },
];

const A100_40_PROFILES: &[MigProfile] = &[
    MigProfile {
        name: "1g.5gb",
        compute_slices: 1,
        memory_slices: 1,
        memory_mib: 4864,
        gi_ids: ONE_G_IDS,
    },
    MigProfile {
        name: "2g.10gb",
        compute_slices: 2,
        memory_slices: 2,
        memory_mib: 9984,
        gi_ids: TWO_G_IDS,
    },
    MigProfile {
        name: "3g.20gb",
        compute_slices: 3,
        memory_slices: 4,
        memory_mib: 20096,
        gi_ids: THREE_G_IDS,
    },
    MigProfile {
        name: "4g.20gb",
        compute_slices: 4,
        memory_slices: 4,
        memory_mib: 20096,
        gi_ids: FOUR_G_IDS,
    },
    MigProfile {
        name: "7g.40gb",
        compute_slices: 7,
        memory_slices: 8,
        memory_mib: 40192,
        gi_ids: SEVEN_G_IDS,
    },
];

/// Every model the simulator knows.
pub const MODELS: &[Model] = &[
    Model {
        key: "H100-SXM5-80GB",
        name: "NVIDIA H100 80GB HBM3",
        arch: NVML_DEVICE_ARCH_HOPPER,
        memory_mib: 81559,
        reserved_mib: 551,
        power_limit_w: 700.0,
        idle_w: 78.0,
        sm_max_mhz: 1980,
        sm_idle_mhz: 345,
        mem_mhz: 2619,
        mem_idle_mhz: 2619,
        video_max_mhz: 1755,
        video_idle_mhz: 765,
        nvlink_links: 18,
        topology: Topology::HgxNvSwitch,
        nvlink_peak_bps: 180.0e9,
        pcie_gen: 5,
        pcie_width: 16,
        gpm: true,
        mig_profiles: H100_PROFILES,
        memory_temp: true,
        ambient_c: 27.0,
        thermal_c_per_w: 0.068,
        slowdown_c: 87.0,
        pci_device_id: 0x2330_10DE,
        pci_subsystem_id: 0x16C1_10DE,
        vbios: "96.00.99.00.01",
        inforom_image: "G520.0200.00.05",
        serial_prefix: "16529220",
        bar1_mib: 131072,
    },
    Model {
        key: "A100-SXM4-40GB",
        name: "NVIDIA A100-SXM4-40GB",
        arch: NVML_DEVICE_ARCH_AMPERE,
        memory_mib: 40960,
        reserved_mib: 379,
        power_limit_w: 400.0,
        idle_w: 54.0,
        sm_max_mhz: 1410,
        sm_idle_mhz: 210,
        mem_mhz: 1215,
        mem_idle_mhz: 1215,
        video_max_mhz: 1290,
        video_idle_mhz: 585,
        nvlink_links: 12,
        topology: Topology::HgxNvSwitch,
        nvlink_peak_bps: 110.0e9,
        pcie_gen: 4,
        pcie_width: 16,
        gpm: false,
        mig_profiles: A100_40_PROFILES,
        memory_temp: true,
        ambient_c: 26.0,
        thermal_c_per_w: 0.105,
        slowdown_c: 88.0,
        pci_device_id: 0x20B0_10DE,
        pci_subsystem_id: 0x134F_10DE,
        vbios: "92.00.45.00.06",
        inforom_image: "G503.0201.00.03",
        serial_prefix: "13230210",
        bar1_mib: 65536,
    },
    Model {
        key: "L4",
        name: "NVIDIA L4",
        arch: NVML_DEVICE_ARCH_ADA,
        memory_mib: 23034,
        reserved_mib: 382,
        power_limit_w: 72.0,
        idle_w: 16.0,
        sm_max_mhz: 2040,
        sm_idle_mhz: 210,
        mem_mhz: 6251,
        mem_idle_mhz: 405,
        video_max_mhz: 1770,
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
        thermal_c_per_w: 0.66,
        slowdown_c: 89.0,
        pci_device_id: 0x27B8_10DE,
        pci_subsystem_id: 0x16CA_10DE,
        vbios: "95.04.29.00.04",
        inforom_image: "G193.0200.00.01",
        serial_prefix: "13242230",
        bar1_mib: 32768,
    },
    newer::H200_SXM5_141GB,
    newer::B200_SXM_180GB,
    newer::GB200,
    newer::L40S,
    older::A100_SXM4_80GB,
    older::T4,
];

/// GPUs of one GB200 NVL72 compute tray: two GB200 superchips of two Blackwell GPUs each.
pub const GB200_GPUS_PER_TRAY: usize = 4;

/// Finds a model by key, case-insensitively.
pub fn find(key: &str) -> Option<&'static Model> {
    MODELS.iter().find(|m| m.key.eq_ignore_ascii_case(key))
}

/// All model keys, comma-separated (for error messages and docs).
pub fn keys() -> String {
    let keys: Vec<&str> = MODELS.iter().map(|m| m.key).collect();
    keys.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use nvml_wrapper_sys::bindings::NVML_DEVICE_ARCH_BLACKWELL;

    #[test]
    fn presets_are_consistent() {
        for m in MODELS {
            assert!(m.idle_w < m.power_limit_w, "{}", m.key);
            assert!(m.sm_idle_mhz < m.sm_max_mhz, "{}", m.key);
            assert!(m.reserved_mib < m.memory_mib, "{}", m.key);
            for p in m.mig_profiles {
                assert!(p.compute_slices <= MIG_COMPUTE_SLICES);
                assert!(p.memory_slices <= MIG_MEMORY_SLICES);
                assert!(p.memory_mib < m.memory_mib);
                assert!(!p.gi_ids.is_empty());
            }
        }
    }

    #[test]
    fn new_presets_match_the_published_specs() {
        let profiles = |m: &Model| m.mig_profiles.iter().map(|p| p.name).collect::<Vec<_>>();
        let gib = |m: &Model| m.memory_mib as f64 / 1024.0;

        let h200 = find("H200-SXM5-141GB").unwrap();
        assert_eq!(
            (h200.name, h200.arch),
            ("NVIDIA H200", NVML_DEVICE_ARCH_HOPPER)
        );
        assert!((140.0..141.0).contains(&gib(h200)), "{}", gib(h200));
        assert_eq!(h200.power_limit_w, 700.0);
        assert_eq!(h200.nvlink_links, 18);
        assert_eq!(h200.nvlink_generation(), 4);
        assert_eq!(h200.topology, Topology::HgxNvSwitch);
        assert_eq!((h200.pcie_gen, h200.pcie_width), (5, 16));
        assert!(h200.gpm && h200.memory_temp && h200.fabric() && h200.nvlink_ecc_counter());
        assert_eq!(
            profiles(h200),
            [
                "1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"
            ]
        );
        assert_eq!(
            h200.mig_profile("1g.18gb").map(|(_, p)| p.gi_ids.len()),
            Some(7)
        );

        let b200 = find("B200-SXM-180GB").unwrap();
        assert_eq!(
            (b200.name, b200.arch),
            ("NVIDIA B200", NVML_DEVICE_ARCH_BLACKWELL)
        );
        assert_eq!(NVML_DEVICE_ARCH_BLACKWELL, 10);
        assert!((179.0..180.0).contains(&gib(b200)), "{}", gib(b200));
        assert_eq!(b200.power_limit_w, 1000.0);
        assert_eq!((b200.nvlink_links, b200.nvlink_generation()), (18, 5));
        assert_eq!(b200.topology, Topology::HgxNvSwitch);
        assert!(b200.gpm && b200.memory_temp && b200.fabric() && b200.nvlink_ecc_counter());
        assert_eq!(
            profiles(b200),
            [
                "1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"
            ]
        );
        // NVLink 5 moves twice NVLink 4's bandwidth.
        assert_eq!(b200.nvlink_peak_bps, 2.0 * h200.nvlink_peak_bps);

        let gb200 = find("GB200").unwrap();
        assert_eq!(
            (gb200.name, gb200.arch),
            ("NVIDIA GB200", NVML_DEVICE_ARCH_BLACKWELL)
        );
        assert!((185.0..186.0).contains(&gib(gb200)), "{}", gib(gb200));
        assert_eq!(gb200.power_limit_w, 1200.0);
        assert_eq!((gb200.nvlink_links, gb200.nvlink_generation()), (18, 5));
        assert_eq!(gb200.topology, Topology::Nvl72);
        assert!(gb200.gpm && gb200.memory_temp && gb200.fabric());
        assert_eq!(
            profiles(gb200),
            [
                "1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"
            ]
        );
        assert_eq!(GB200_GPUS_PER_TRAY, 4);

        let l40s = find("L40S").unwrap();
        assert_eq!(
            (l40s.name, l40s.arch),
            ("NVIDIA L40S", NVML_DEVICE_ARCH_ADA)
        );
        assert!((44.5..45.0).contains(&gib(l40s)), "{}", gib(l40s));
        assert_eq!(l40s.power_limit_w, 350.0);
        assert_eq!((l40s.pcie_gen, l40s.pcie_width), (4, 16));
        assert_eq!((l40s.nvlink_links, l40s.nvlink_generation()), (0, 0));
        assert_eq!(l40s.topology, Topology::Pcie);
        assert!(!l40s.gpm && !l40s.memory_temp && !l40s.fabric() && !l40s.mig_capable());
    }

    #[test]
    fn nvlink_facts_of_the_older_presets() {
        let h100 = find("H100-SXM5-80GB").unwrap();
        assert!(h100.fabric() && h100.nvlink_ecc_counter());
        assert_eq!(h100.nvlink_generation(), 4);
        // HGX A100: NVSwitch, but no fabric registration API and no NVLink ECC counter.
        let a100 = find("A100-SXM4-40GB").unwrap();
        assert_eq!(a100.topology, Topology::HgxNvSwitch);
        assert!(!a100.fabric() && !a100.nvlink_ecc_counter());
        assert_eq!(a100.nvlink_generation(), 3);
        let l4 = find("L4").unwrap();
        assert_eq!(l4.topology, Topology::Pcie);
        assert!(!l4.fabric());
    }

    #[test]
    fn lookup_is_case_insensitive() {
        assert_eq!(
            find("h100-sxm5-80gb").map(|m| m.name),
            Some("NVIDIA H100 80GB HBM3")
        );
        assert!(find("H900").is_none());
        let h100 = find("H100-SXM5-80GB");
        assert_eq!(
            h100.and_then(|m| m.mig_profile("MIG 3g.40gb"))
                .map(|(_, p)| p.memory_mib),
            Some(40448)
        );
    }
}
