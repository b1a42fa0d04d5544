//! DCGM's link-entity fields (entity group `DCGM_FE_LINK`: one value per NVLink link of a
//! GPU, ids 1508 and 1525–1533, the form dcgm-exporter renders with an `nvlink` label), the
//! NVLink port-counter fields DCGM reads from the link's registers (`…_PPCNT_*`, `…_PPRM_*`),
//! and DCGM's NVSwitch fields (`DCGM_FI_DEV_NVSWITCH_*`, `DCGM_FI_DEV_SXID_*`).
//!
//! Plain data like `fields`; it must not do I/O or call NVML. The ids and names are those of
//! `dcgm_fields.h` (DCGM 4.6). The port-counter and NVSwitch fields are known so that a counters
//! file naming them loads with a warning that says why they stay empty: NVML serves neither a
//! GPU's port registers as field values nor anything about an NVSwitch.

use super::field::{FieldDef, Level, LinkPart, Scale, Source, dev};

/// Bytes/s → MiB/s, the unit of DCGM's per-link throughput fields (as of its `…_BANDWIDTH_L<n>`).
const B_TO_MIB: Scale = Scale::Mul(1.0 / 1_048_576.0);

/// A link-entity field.
const fn link(
    name: &'static str,
    id: u32,
    unit: &'static str,
    part: LinkPart,
    help: &'static str,
) -> FieldDef {
    FieldDef {
        level: Level::Link,
        ..dev(name, id, unit, Source::Link(part), help)
    }
}

/// Why the NVLink port-counter fields stay empty.
const PORT_REGISTERS: &str = "DCGM reads it from the NVLink port's counter registers, which NVML \
    does not serve as a field value; gpu_nvlink_errors_total and the per-link error fields carry \
    the link's errors";

/// Why the NVSwitch fields stay empty.
const NVSWITCH: &str = "it describes an NVSwitch or one of its ports, and NVML shows a GPU \
    exporter GPUs only; the GPU side of each link is in the link-entity fields (DCGM_FI_DEV_NVLINK_*_PER_LINK*) \
    and gpu_nvlink_*";

/// A field known to DCGM that NVML cannot serve here, for the reason `why`.
const fn never(name: &'static str, id: u32, why: &'static str, help: &'static str) -> FieldDef {
    dev(name, id, "", Source::Unavailable(why), help)
}

/// An NVLink port-register field.
const fn port(name: &'static str, id: u32) -> FieldDef {
    never(
        name,
        id,
        PORT_REGISTERS,
        "NVLink port counter of one link (port registers).",
    )
}

/// An NVSwitch field.
const fn switch(name: &'static str, id: u32) -> FieldDef {
    never(
        name,
        id,
        NVSWITCH,
        "NVSwitch value as DCGM reads it from the switch.",
    )
}

/// The link-entity fields: one series per link of each GPU.
pub static FIELDS_LINK: &[FieldDef] = &[
    link(
        "DCGM_FI_DEV_NVLINK_GET_STATE",
        1508,
        "",
        LinkPart::State,
        "NVLink link state: 1 up, 0 down.",
    ),
    link(
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL",
        1525,
        "count",
        LinkPart::Errors("crc_flit"),
        "NVLink flow-control CRC errors on the link.",
    ),
    link(
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_PER_LINK_TOTAL",
        1526,
        "count",
        LinkPart::Errors("crc_data"),
        "NVLink data CRC errors on the link.",
    ),
    link(
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_PER_LINK_TOTAL",
        1527,
        "count",
        LinkPart::Errors("replay"),
        "NVLink replay errors on the link.",
    ),
    link(
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_PER_LINK_TOTAL",
        1528,
        "count",
        LinkPart::Errors("recovery"),
        "NVLink recovery errors on the link.",
    ),
    link(
        "DCGM_FI_DEV_NVLINK_THROUGHPUT_PER_LINK",
        1529,
        "MiB/s",
        LinkPart::Throughput,
        "NVLink data sent plus received on the link (in MiB/s).",
    )
    .scaled(B_TO_MIB),
    link(
        "DCGM_FI_DEV_NVLINK_TX_THROUGHPUT_PER_LINK",
        1530,
        "MiB/s",
        LinkPart::Transmit,
        "NVLink data sent on the link (in MiB/s).",
    )
    .scaled(B_TO_MIB),
    link(
        "DCGM_FI_DEV_NVLINK_RX_THROUGHPUT_PER_LINK",
        1531,
        "MiB/s",
        LinkPart::Receive,
        "NVLink data received on the link (in MiB/s).",
    )
    .scaled(B_TO_MIB),
    link(
        "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_LINK",
        1532,
        "B/s",
        LinkPart::Transmit,
        "NVLink data sent on the link, bytes per second (from the link's data counters, not GPM).",
    ),
    link(
        "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK",
        1533,
        "B/s",
        LinkPart::Receive,
        "NVLink data received on the link, bytes per second (from the link's data counters, not GPM).",
    ),
    port("DCGM_FI_DEV_NVLINK_PPRM_OPER_RECOVERY", 580),
    port("DCGM_FI_DEV_NVLINK_PPCNT_RECOVERY_TIME_SINCE_LAST", 581),
    port(
        "DCGM_FI_DEV_NVLINK_PPCNT_RECOVERY_TIME_BETWEEN_LAST_TWO",
        582,
    ),
    port("DCGM_FI_DEV_NVLINK_PPCNT_RECOVERY_SUCCESSFUL_TOTAL", 583),
    port(
        "DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_RECOVERY_SUCCESSFUL_TOTAL",
        584,
    ),
    port("DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_LINK_DOWN_TOTAL", 585),
    port("DCGM_FI_DEV_NVLINK_PPCNT_PLR_RX_CODE_TOTAL", 586),
    port("DCGM_FI_DEV_NVLINK_PPCNT_PLR_RX_CODE_ERROR_TOTAL", 587),
    port(
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_RX_CODE_UNCORRECTABLE_TOTAL",
        588,
    ),
    port("DCGM_FI_DEV_NVLINK_PPCNT_PLR_TX_CODE_TOTAL", 589),
    port("DCGM_FI_DEV_NVLINK_PPCNT_PLR_TX_RETRY_CODE_TOTAL", 590),
    port("DCGM_FI_DEV_NVLINK_PPCNT_PLR_TX_RETRY_EVENT_TOTAL", 591),
    port("DCGM_FI_DEV_NVLINK_PPCNT_PLR_SYNC_EVENT_TOTAL", 592),
    port("DCGM_FI_DEV_NVLINK_PPCNT_IBPC_PORT_XMIT_WAIT", 1509),
];

/// DCGM's NVSwitch fields, by their DCGM 4.6 names.
pub static FIELDS_NVSWITCH: &[FieldDef] = &[
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

/// Older names of the port-counter and NVSwitch fields (`dcgm_fields.h` synonyms): (old, DCGM 4.6).
static RENAMED: &[(&str, &str)] = &[
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_RECOVERY_TOTAL_SUCCESSFUL_EVENTS",
        "DCGM_FI_DEV_NVLINK_PPCNT_RECOVERY_SUCCESSFUL_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_SUCCESSFUL_RECOVERY_EVENTS",
        "DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_RECOVERY_SUCCESSFUL_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_LINK_DOWN_COUNTER",
        "DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_LINK_DOWN_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_RCV_CODES",
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_RX_CODE_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_RCV_CODE_ERR",
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_RX_CODE_ERROR_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_RCV_UNCORRECTABLE_CODE",
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_RX_CODE_UNCORRECTABLE_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_XMIT_CODES",
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_TX_CODE_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_XMIT_RETRY_CODES",
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_TX_RETRY_CODE_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_XMIT_RETRY_EVENTS",
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_TX_RETRY_EVENT_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_SYNC_EVENTS",
        "DCGM_FI_DEV_NVLINK_PPCNT_PLR_SYNC_EVENT_TOTAL",
    ),
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

/// The field an older port-counter or NVSwitch name stands for, ASCII case-insensitive.
pub(super) fn canonical_name(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    RENAMED
        .iter()
        .find(|(old, _)| *old == upper)
        .map(|(_, new)| *new)
}

#[cfg(test)]
mod tests {
    use super::super::{by_id, lookup};
    use super::*;

    #[test]
    fn link_entity_ids_match_dcgm_fields_h() {
        for (name, id) in [
            ("DCGM_FI_DEV_NVLINK_GET_STATE", 1508),
            ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL", 1525),
            ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_PER_LINK_TOTAL", 1528),
            ("DCGM_FI_DEV_NVLINK_THROUGHPUT_PER_LINK", 1529),
            ("DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK", 1533),
            ("DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_LINK_DOWN_TOTAL", 585),
            ("DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERROR_TOTAL", 786),
            ("DCGM_FI_DEV_SXID_FATAL_ERROR", 856),
        ] {
            assert_eq!(by_id(id).map(|f| f.name), Some(name));
        }
        for f in FIELDS_LINK {
            let from_links = matches!(f.source, Source::Link(_));
            assert_eq!(f.level == Level::Link, from_links, "{}", f.name);
        }
        assert!(
            FIELDS_NVSWITCH
                .iter()
                .all(|f| matches!(f.source, Source::Unavailable(_)))
        );
    }

    #[test]
    fn older_switch_and_port_names_resolve() {
        let f = |n: &str| lookup(n).map(|f| f.id);
        assert_eq!(f("DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERRORS"), Some(786));
        assert_eq!(f("dcgm_fi_dev_nvswitch_fatal_errors"), Some(856));
        assert_eq!(f("DCGM_FI_DEV_NVLINK_PPCNT_PLR_SYNC_EVENTS"), Some(592));
        assert_eq!(f("DCGM_FI_DEV_NVSWITCH_LINK_NOPE"), None);
        for (old, new) in RENAMED {
            assert!(lookup(new).is_some(), "{old} -> {new}");
        }
    }
}
