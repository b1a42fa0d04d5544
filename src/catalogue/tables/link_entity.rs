//! DCGM's link-entity fields (entity group `DCGM_FE_LINK`: one field, one value per NVLink
//! link of a GPU, ids 1508 and 1525–1533, the form dcgm-exporter renders with an `nvlink`
//! label) and the NVLink port-counter fields DCGM reads from the link's registers
//! (`…_PPCNT_*`, `…_PPRM_*`, 580–592 and 1509), with the older names of the latter.
//!
//! Owns these rows and their older names. Each table is ordered by DCGM id; the ids and
//! names are those of `dcgm_fields.h` (DCGM 4.6). Data only: it must not do I/O or call NVML.
//! The port-counter fields are known so that a counters file naming them loads with a warning
//! that says why they stay empty: NVML does not serve a GPU's port registers as field values.
//! The fields that name one link each (`…_L<n>`) are in `nvlink_by_link`.

use super::super::field::{FieldDef, Getter, Level, LinkPart, Scale, dev, never};

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
        ..dev(name, id, unit, Getter::Link(part), help)
    }
}

/// Why the NVLink port-counter fields stay empty.
const PORT_REGISTERS: &str = "DCGM reads it from the NVLink port's counter registers, which NVML \
    does not serve as a field value; gpu_nvlink_errors_total and the per-link error fields carry \
    the link's errors";

/// An NVLink port-register field.
const fn port(name: &'static str, id: u32) -> FieldDef {
    never(
        name,
        id,
        PORT_REGISTERS,
        "NVLink port counter of one link (port registers).",
    )
}

/// The link-entity fields: one series per link of each GPU.
pub static LINK_ENTITY: &[FieldDef] = &[
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
];

/// The NVLink port-counter fields, known and never read.
pub static NVLINK_PORT_REGISTERS: &[FieldDef] = &[
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

/// Older names of the port-counter fields (`dcgm_fields.h` synonyms): (old, DCGM 4.6).
pub(super) static RENAMED: &[(&str, &str)] = &[
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
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{by_id, lookup};

    #[test]
    fn link_entity_ids_match_dcgm_fields_h() {
        for (name, id) in [
            ("DCGM_FI_DEV_NVLINK_GET_STATE", 1508),
            ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL", 1525),
            ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_PER_LINK_TOTAL", 1528),
            ("DCGM_FI_DEV_NVLINK_THROUGHPUT_PER_LINK", 1529),
            ("DCGM_FI_PROF_NVLINK_RX_BYTES_PER_LINK", 1533),
            ("DCGM_FI_DEV_NVLINK_PPCNT_PHYSICAL_LINK_DOWN_TOTAL", 585),
        ] {
            assert_eq!(by_id(id).map(|f| f.name), Some(name));
        }
    }

    #[test]
    fn older_port_names_resolve() {
        let f = |n: &str| lookup(n).map(|f| f.id);
        assert_eq!(f("DCGM_FI_DEV_NVLINK_PPCNT_PLR_SYNC_EVENTS"), Some(592));
        assert_eq!(f("dcgm_fi_dev_nvlink_ppcnt_plr_sync_events"), Some(592));
        for (old, new) in RENAMED {
            assert!(lookup(new).is_some(), "{old} -> {new}");
        }
    }
}
