//! DCGM's NVSwitch fields (`DCGM_FI_DEV_NVSWITCH_*`, `DCGM_FI_DEV_SXID_*`, 701–878 and 1524)
//! by their DCGM 4.6 names, with their older names.
//!
//! Owns these rows and their older names; the table is ordered by DCGM id, the ids and
//! names being those of `dcgm_fields.h` (DCGM 4.6). Data only: it must not do I/O or call
//! NVML. NVML serves nothing about an NVSwitch: the switch-level rows ([`Level::Switch`],
//! `Getter::DcgmSwitch`) are served by the DCGM client on the switches its hostengine lists,
//! one series per switch; the per-port rows (`Getter::DcgmSwitchPort`, DCGM's link entities
//! under a switch) on each up port of those switches, one series per port; the string rows
//! (`Getter::DcgmSwitchText`) as `label` rows, a label on every series of each switch. The
//! per-lane rows (`…_L0_TOTAL` … `…_L7_TOTAL`) are written out: they are 16 rows inside this
//! id-ordered table, in two id blocks of their own.

use super::super::field::{FieldDef, Getter, Level, dev};

/// `f` as an NVSwitch field ([`Level::Switch`]).
const fn on_switch(f: FieldDef) -> FieldDef {
    FieldDef {
        level: Level::Switch,
        ..f
    }
}

/// A string NVSwitch field: a `label` row of it labels each switch's series (from DCGM).
const fn text(name: &'static str, id: u32) -> FieldDef {
    let help = "NVSwitch string as DCGM reads it from the switch.";
    on_switch(dev(name, id, "", Getter::DcgmSwitchText, help))
}

/// A per-port NVSwitch field: served by the DCGM client on each up port of each switch
/// (DCGM's link entity under the switch), one series per port.
const fn port(name: &'static str, id: u32) -> FieldDef {
    let help = "NVSwitch port value as DCGM reads it from the switch.";
    on_switch(dev(name, id, "", Getter::DcgmSwitchPort, help))
}

/// A switch-level NVSwitch field: served by the DCGM client, one series per switch.
const fn switch(name: &'static str, id: u32, unit: &'static str) -> FieldDef {
    let help = "NVSwitch value as DCGM reads it from the switch.";
    on_switch(dev(name, id, unit, Getter::DcgmSwitch, help))
}

/// DCGM's NVSwitch fields, by their DCGM 4.6 names.
pub static NVSWITCH: &[FieldDef] = &[
    switch("DCGM_FI_DEV_NVSWITCH_VOLTAGE_MVOLT", 701, "mV"),
    switch("DCGM_FI_DEV_NVSWITCH_CURRENT_IDDQ", 702, ""),
    switch("DCGM_FI_DEV_NVSWITCH_CURRENT_IDDQ_REV", 703, ""),
    switch("DCGM_FI_DEV_NVSWITCH_CURRENT_IDDQ_DVDD", 704, ""),
    switch("DCGM_FI_DEV_NVSWITCH_POWER_VDD_WATTS", 705, "W"),
    switch("DCGM_FI_DEV_NVSWITCH_POWER_DVDD_WATTS", 706, "W"),
    switch("DCGM_FI_DEV_NVSWITCH_POWER_HVDD_WATTS", 707, "W"),
    port("DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX", 780),
    port("DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_RX", 781),
    port("DCGM_FI_DEV_NVSWITCH_LINK_FATAL_ERRORS", 782),
    port("DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS", 783),
    port("DCGM_FI_DEV_NVSWITCH_LINK_REPLAY_ERROR_TOTAL", 784),
    port("DCGM_FI_DEV_NVSWITCH_LINK_RECOVERY_ERROR_TOTAL", 785),
    port("DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERROR_TOTAL", 786),
    port("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_TOTAL", 787),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_TOTAL", 788),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_LOW_VC0", 789),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_LOW_VC1", 790),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_LOW_VC2", 791),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_LOW_VC3", 792),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_MEDIUM_VC0", 793),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_MEDIUM_VC1", 794),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_MEDIUM_VC2", 795),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_MEDIUM_VC3", 796),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_HIGH_VC0", 797),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_HIGH_VC1", 798),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_HIGH_VC2", 799),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_HIGH_VC3", 800),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_PANIC_VC0", 801),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_PANIC_VC1", 802),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_PANIC_VC2", 803),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_PANIC_VC3", 804),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC0_TOTAL", 805),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC1_TOTAL", 806),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC2_TOTAL", 807),
    port("DCGM_FI_DEV_NVSWITCH_LINK_LATENCY_SAMPLE_VC3_TOTAL", 808),
    port("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L0_TOTAL", 809),
    port("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L1_TOTAL", 810),
    port("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L2_TOTAL", 811),
    port("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L3_TOTAL", 812),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L0_TOTAL", 813),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L1_TOTAL", 814),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L2_TOTAL", 815),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L3_TOTAL", 816),
    port("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L4_TOTAL", 817),
    port("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L5_TOTAL", 818),
    port("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L6_TOTAL", 819),
    port("DCGM_FI_DEV_NVSWITCH_LINK_CRC_ERROR_L7_TOTAL", 820),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L4_TOTAL", 821),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L5_TOTAL", 822),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L6_TOTAL", 823),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ECC_ERROR_L7_TOTAL", 824),
    switch("DCGM_FI_DEV_SXID_FATAL_ERROR", 856, ""),
    switch("DCGM_FI_DEV_SXID_NON_FATAL_ERROR", 857, ""),
    switch("DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS", 858, "C"),
    switch("DCGM_FI_DEV_NVSWITCH_TEMP_SLOWDOWN_CELSIUS", 859, "C"),
    switch("DCGM_FI_DEV_NVSWITCH_TEMP_SHUTDOWN_CELSIUS", 860, "C"),
    switch("DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX", 861, ""),
    switch("DCGM_FI_DEV_NVSWITCH_THROUGHPUT_RX", 862, ""),
    switch("DCGM_FI_DEV_NVSWITCH_PHYSICAL_ID", 863, ""),
    switch("DCGM_FI_DEV_NVSWITCH_RESET_REQUIRED", 864, ""),
    port("DCGM_FI_DEV_NVSWITCH_LINK_ID", 865),
    switch("DCGM_FI_DEV_NVSWITCH_PCIE_DOMAIN", 866, ""),
    switch("DCGM_FI_DEV_NVSWITCH_PCIE_BUS", 867, ""),
    switch("DCGM_FI_DEV_NVSWITCH_PCIE_DEVICE", 868, ""),
    switch("DCGM_FI_DEV_NVSWITCH_PCIE_FUNCTION", 869, ""),
    port("DCGM_FI_DEV_NVSWITCH_LINK_STATUS", 870),
    port("DCGM_FI_DEV_NVSWITCH_LINK_TYPE", 871),
    port("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_PCIE_DOMAIN", 872),
    port("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_PCIE_BUS", 873),
    port("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_PCIE_DEVICE", 874),
    port("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_PCIE_FUNCTION", 875),
    port("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_LINK_ID", 876),
    port("DCGM_FI_DEV_NVSWITCH_LINK_REMOTE_LINK_SID", 877),
    text("DCGM_FI_DEV_NVSWITCH_UUID", 878),
    text("DCGM_FI_DEV_NVSWITCH_FIRMWARE_VERSION", 1524),
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
    use crate::catalogue::{Getter, by_id, lookup};

    #[test]
    fn switch_ids_match_dcgm_fields_h_and_switch_and_port_rows_are_served() {
        for (name, id) in [
            ("DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERROR_TOTAL", 786),
            ("DCGM_FI_DEV_SXID_FATAL_ERROR", 856),
        ] {
            assert_eq!(by_id(id).map(|f| f.name), Some(name));
        }
        // Switch-level rows come from DCGM per switch, per-port rows per port, string rows as
        // labels per switch.
        for f in NVSWITCH {
            let port = (780..=824).contains(&f.id) || (870..=877).contains(&f.id) || f.id == 865;
            if matches!(f.id, 878 | 1524) {
                assert_eq!(f.getter, Getter::DcgmSwitchText, "{}", f.name);
                assert_eq!(f.level, Level::Switch, "{}", f.name);
            } else if port {
                assert_eq!(f.getter, Getter::DcgmSwitchPort, "{}", f.name);
                assert_eq!(f.level, Level::Switch, "{}", f.name);
            } else {
                assert_eq!(f.getter, Getter::DcgmSwitch, "{}", f.name);
                assert_eq!(f.level, Level::Switch, "{}", f.name);
            }
        }
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
