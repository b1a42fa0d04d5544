//! DCGM's NVSwitch fields (`DCGM_FI_DEV_NVSWITCH_*`, `DCGM_FI_DEV_SXID_*`, 701–878 and 1524)
//! by their DCGM 4.6 names, with their older names.
//!
//! Owns these rows and their older names; the table is ordered by DCGM id, the ids and
//! names being those of `dcgm_fields.h` (DCGM 4.6). Data only: it must not do I/O or call
//! NVML. The fields are known so that a counters file naming them loads with a warning that
//! says why they stay empty: NVML serves nothing about an NVSwitch. The
//! per-lane rows (`…_L0_TOTAL` … `…_L7_TOTAL`) are written out: they are 16 rows inside this
//! id-ordered table, in two id blocks of their own.

use super::super::field::{FieldDef, never};

/// Why the NVSwitch fields stay empty.
const WHY_EMPTY: &str = "it describes an NVSwitch or one of its ports, and NVML shows a GPU \
    exporter GPUs only; the GPU side of each link is in the link-entity fields (DCGM_FI_DEV_NVLINK_*_PER_LINK*) \
    and gpu_nvlink_*";

/// An NVSwitch field.
const fn switch(name: &'static str, id: u32) -> FieldDef {
    never(
        name,
        id,
        WHY_EMPTY,
        "NVSwitch value as DCGM reads it from the switch.",
    )
}

/// DCGM's NVSwitch fields, by their DCGM 4.6 names.
pub static NVSWITCH: &[FieldDef] = &[
    switch("DCGM_FI_DEV_NVSWITCH_VOLTAGE_MVOLT", 701),
    switch("DCGM_FI_DEV_NVSWITCH_CURRENT_IDDQ", 702),
    switch("DCGM_FI_DEV_NVSWITCH_CURRENT_IDDQ_REV", 703),
    switch("DCGM_FI_DEV_NVSWITCH_CURRENT_IDDQ_DVDD", 704),
    switch("DCGM_FI_DEV_NVSWITCH_POWER_VDD_WATTS", 705),
    switch("DCGM_FI_DEV_NVSWITCH_POWER_DVDD_WATTS", 706),
    switch("DCGM_FI_DEV_NVSWITCH_POWER_HVDD_WATTS", 707),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX", 780),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_RX", 781),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_FATAL_ERRORS", 782),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS", 783),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_REPLAY_ERROR_TOTAL", 784),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_RECOVERY_ERROR_TOTAL", 785),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERROR_TOTAL", 786),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_TOTAL", 787),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_TOTAL", 788),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_LOW_VC0", 789),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_LOW_VC1", 790),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_LOW_VC2", 791),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_LOW_VC3", 792),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_MEDIUM_VC0", 793),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_MEDIUM_VC1", 794),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_MEDIUM_VC2", 795),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_MEDIUM_VC3", 796),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_HIGH_VC0", 797),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_HIGH_VC1", 798),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_HIGH_VC2", 799),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_HIGH_VC3", 800),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_PANIC_VC0", 801),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_PANIC_VC1", 802),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_PANIC_VC2", 803),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_PANIC_VC3", 804),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC0_TOTAL", 805),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC1_TOTAL", 806),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC2_TOTAL", 807),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC3_TOTAL", 808),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L0_TOTAL", 809),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L1_TOTAL", 810),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L2_TOTAL", 811),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L3_TOTAL", 812),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L0_TOTAL", 813),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L1_TOTAL", 814),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L2_TOTAL", 815),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L3_TOTAL", 816),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L4_TOTAL", 817),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L5_TOTAL", 818),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L6_TOTAL", 819),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L7_TOTAL", 820),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L4_TOTAL", 821),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L5_TOTAL", 822),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L6_TOTAL", 823),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L7_TOTAL", 824),
    switch("DCGM_FI_DEV_SXID_FATAL_ERROR", 856),
    switch("DCGM_FI_DEV_SXID_NON_FATAL_ERROR", 857),
    switch("DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS", 858),
    switch("DCGM_FI_DEV_NVSWITCH_TEMP_SLOWDOWN_CELSIUS", 859),
    switch("DCGM_FI_DEV_NVSWITCH_TEMP_SHUTDOWN_CELSIUS", 860),
    switch("DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX", 861),
    switch("DCGM_FI_DEV_NVSWITCH_THROUGHPUT_RX", 862),
    switch("DCGM_FI_DEV_NVSWITCH_PHYSICAL_ID", 863),
    switch("DCGM_FI_DEV_NVSWITCH_RESET_REQUIRED", 864),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_ID", 865),
    switch("DCGM_FI_DEV_NVSWITCH_PCIE_DOMAIN", 866),
    switch("DCGM_FI_DEV_NVSWITCH_PCIE_BUS", 867),
    switch("DCGM_FI_DEV_NVSWITCH_PCIE_DEVICE", 868),
    switch("DCGM_FI_DEV_NVSWITCH_PCIE_FUNCTION", 869),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_STATUS", 870),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_TYPE", 871),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_PCIE_DOMAIN", 872),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_PCIE_BUS", 873),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_PCIE_DEVICE", 874),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_PCIE_FUNCTION", 875),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_LINK_ID", 876),
    switch("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_LINK_SID", 877),
    switch("DCGM_FI_DEV_NVSWITCH_UUID", 878),
    switch("DCGM_FI_DEV_NVSWITCH_FIRMWARE_VERSION", 1524),
];

/// Older names of the NVSwitch fields (`dcgm_fields.h` synonyms): (old, DCGM 4.6).
pub(super) static RENAMED: &[(&str, &str)] = &[
    (
        "DCGM_FI_DEV_NVSWITCH_POWER_VDD",
        "DCGM_FI_DEV_NVSWITCH_POWER_VDD_WATTS",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_POWER_DVDD",
        "DCGM_FI_DEV_NVSWITCH_POWER_DVDD_WATTS",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_POWER_HVDD",
        "DCGM_FI_DEV_NVSWITCH_POWER_HVDD_WATTS",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_REPLAY_ERRORS",
        "DCGM_FI_DEV_NVSWITCH_LINK_REPLAY_ERROR_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_RECOVERY_ERRORS",
        "DCGM_FI_DEV_NVSWITCH_LINK_RECOVERY_ERROR_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERRORS",
        "DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERROR_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS",
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERRORS",
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_COUNT_VC0",
        "DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC0_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_COUNT_VC1",
        "DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC1_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_COUNT_VC2",
        "DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC2_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_COUNT_VC3",
        "DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC3_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS_LANE0",
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L0_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS_LANE1",
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L1_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS_LANE2",
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L2_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS_LANE3",
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L3_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS_LANE4",
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L4_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS_LANE5",
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L5_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS_LANE6",
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L6_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERRORS_LANE7",
        "DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L7_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERRORS_LANE0",
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L0_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERRORS_LANE1",
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L1_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERRORS_LANE2",
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L2_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERRORS_LANE3",
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L3_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERRORS_LANE4",
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L4_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERRORS_LANE5",
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L5_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERRORS_LANE6",
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L6_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERRORS_LANE7",
        "DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L7_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT",
        "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_TEMPERATURE_LIMIT_SLOWDOWN",
        "DCGM_FI_DEV_NVSWITCH_TEMP_SLOWDOWN_CELSIUS",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_TEMPERATURE_LIMIT_SHUTDOWN",
        "DCGM_FI_DEV_NVSWITCH_TEMP_SHUTDOWN_CELSIUS",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_PHYS_ID",
        "DCGM_FI_DEV_NVSWITCH_PHYSICAL_ID",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_FATAL_ERRORS",
        "DCGM_FI_DEV_SXID_FATAL_ERROR",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_NON_FATAL_ERRORS",
        "DCGM_FI_DEV_SXID_NON_FATAL_ERROR",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_DEVICE_LINK_ID",
        "DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_LINK_ID",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_LINK_DEVICE_LINK_SID",
        "DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_LINK_SID",
    ),
    (
        "DCGM_FI_DEV_NVSWITCH_DEVICE_UUID",
        "DCGM_FI_DEV_NVSWITCH_UUID",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{Source, by_id, lookup};

    #[test]
    fn switch_ids_match_dcgm_fields_h_and_none_is_read() {
        for (name, id) in [
            ("DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERROR_TOTAL", 786),
            ("DCGM_FI_DEV_SXID_FATAL_ERROR", 856),
        ] {
            assert_eq!(by_id(id).map(|f| f.name), Some(name));
        }
        assert!(
            NVSWITCH
                .iter()
                .all(|f| matches!(f.source, Source::Unavailable(_)))
        );
    }

    #[test]
    fn older_switch_names_resolve() {
        let f = |n: &str| lookup(n).map(|f| f.id);
        assert_eq!(f("DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERRORS"), Some(786));
        assert_eq!(f("dcgm_fi_dev_nvswitch_fatal_errors"), Some(856));
        assert_eq!(f("DCGM_FI_DEV_NVSWITCH_LINK_NOPE"), None);
        for (old, new) in RENAMED {
            assert!(lookup(new).is_some(), "{old} -> {new}");
        }
    }
}
