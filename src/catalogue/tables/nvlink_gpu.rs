//! NVLink and the NVSwitch fabric seen from the whole GPU: DCGM's NVLink error record
//! (`DCGM_FI_DEV_GPU_NVLINK_ERRORS`, 450), the GPU's fabric registration (170–175), NVLink 5's
//! counters summed over the GPU's links (1200–1220 and the FEC history 1404–1419), and the
//! DCGM 4.6 names of these fields.
//!
//! Owns these rows and their DCGM 4.6 names. Each table is ordered by DCGM id.
//! Data only: it must not do I/O or call NVML; the fields named per link (`…_L<n>`) are in
//! `nvlink_by_link`, the link-entity fields in `link_entity`.

use super::super::field::{FabricPart, FieldDef, Getter, Scale, TextKind, dev};

/// An NVLink 5 counter summed over the GPU's links: NVML field `nvml` with scope `UINT_MAX`.
const fn nv5(name: &'static str, id: u32, nvml: u32, unit: &'static str) -> FieldDef {
    dev(
        name,
        id,
        unit,
        Getter::NvmlField(nvml, Scale::Identity),
        "NVLink 5 counter of the GPU, all links summed, as the name says (Blackwell and later).",
    )
}

/// An NVLink 5 bit error rate of the GPU's links, decoded (`raw`: as NVML encodes it).
const fn ber(name: &'static str, id: u32, nvml: u32, raw: bool) -> FieldDef {
    let (unit, getter) = if raw {
        ("", Getter::NvmlField(nvml, Scale::Identity))
    } else {
        ("ratio", Getter::NvmlFieldBer(nvml))
    };
    dev(
        name,
        id,
        unit,
        getter,
        "NVLink 5 bit error rate of the GPU's links (raw: NVML's mantissa/exponent code).",
    )
}

/// NVLink 5 fields (Blackwell and later) of the whole GPU, by their pre-4.6 DCGM names.
pub static NVLINK5: &[FieldDef] = &[
    nv5("DCGM_FI_DEV_NVLINK_COUNT_TX_PACKETS", 1200, 201, "packets"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_TX_BYTES", 1201, 202, "bytes"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_RX_PACKETS", 1202, 203, "packets"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_RX_BYTES", 1203, 204, "bytes"),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_RX_MALFORMED_PACKET_ERRORS",
        1204,
        206,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_RX_BUFFER_OVERRUN_ERRORS",
        1205,
        207,
        "count",
    ),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_RX_ERRORS", 1206, 208, "count"),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_RX_REMOTE_ERRORS",
        1207,
        209,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_RX_GENERAL_ERRORS",
        1208,
        210,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_LOCAL_LINK_INTEGRITY_ERRORS",
        1209,
        211,
        "count",
    ),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_TX_DISCARDS", 1210, 212, "count"),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS",
        1211,
        213,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS",
        1212,
        214,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS",
        1213,
        215,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_RX_SYMBOL_ERRORS",
        1214,
        221,
        "count",
    ),
    ber("DCGM_FI_DEV_NVLINK_COUNT_SYMBOL_BER", 1215, 222, true),
    ber(
        "DCGM_FI_DEV_NVLINK_COUNT_SYMBOL_BER_FLOAT",
        1216,
        222,
        false,
    ),
    ber("DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER", 1217, 220, true),
    ber(
        "DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER_FLOAT",
        1218,
        220,
        false,
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS",
        1219,
        219,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL",
        1220,
        160,
        "count",
    ),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_0", 1404, 235, "count"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_1", 1405, 236, "count"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_2", 1406, 237, "count"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_3", 1407, 238, "count"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_4", 1408, 239, "count"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_5", 1409, 240, "count"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_6", 1410, 241, "count"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_7", 1411, 242, "count"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_8", 1412, 243, "count"),
    nv5("DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_9", 1413, 244, "count"),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_10",
        1414,
        245,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_11",
        1415,
        246,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_12",
        1416,
        247,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_13",
        1417,
        248,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_14",
        1418,
        249,
        "count",
    ),
    nv5(
        "DCGM_FI_DEV_NVLINK_COUNT_FEC_HISTORY_15",
        1419,
        250,
        "count",
    ),
];

/// DCGM 4.6 names of the NVLink 5 fields: (4.6 name, pre-4.6 name).
pub(super) const NVLINK5_RENAMED: &[(&str, &str)] = &[
    (
        "DCGM_FI_DEV_NVLINK_TX_PACKET_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_TX_PACKETS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_TX_BYTES_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_TX_BYTES",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RX_PACKET_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_RX_PACKETS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RX_BYTES_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_RX_BYTES",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RX_PACKET_MALFORMED_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_RX_MALFORMED_PACKET_ERRORS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RX_PACKET_DROPPED_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_RX_BUFFER_OVERRUN_ERRORS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RX_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_RX_ERRORS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RX_REMOTE_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_RX_REMOTE_ERRORS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RX_GENERAL_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_RX_GENERAL_ERRORS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_INTEGRITY_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_LOCAL_LINK_INTEGRITY_ERRORS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RECOVERY_SUCCESSFUL_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_SUCCESSFUL_EVENTS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RECOVERY_FAILED_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_FAILED_EVENTS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RECOVERY_EVENT_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RX_SYMBOL_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_RX_SYMBOL_ERRORS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_SYMBOL_BER_RAW",
        "DCGM_FI_DEV_NVLINK_COUNT_SYMBOL_BER",
    ),
    (
        "DCGM_FI_DEV_NVLINK_SYMBOL_BER_RATIO",
        "DCGM_FI_DEV_NVLINK_COUNT_SYMBOL_BER_FLOAT",
    ),
    (
        "DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RAW",
        "DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER",
    ),
    (
        "DCGM_FI_DEV_NVLINK_EFFECTIVE_BER_RATIO",
        "DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_BER_FLOAT",
    ),
    (
        "DCGM_FI_DEV_NVLINK_EFFECTIVE_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_ECC_DATA_ERROR_COUNT_TOTAL",
    ),
];

/// DCGM's NVLink error record of the GPU, which NVML does not offer (its own table: DCGM's id
/// falls between the per-link ranges, and the catalogue lists it after them).
pub static NVLINK_ERROR_RECORD: &[FieldDef] = &[dev(
    "DCGM_FI_DEV_GPU_NVLINK_ERRORS",
    450,
    "",
    Getter::Unavailable(
        "DCGM fills it from its own NVLink error events, which NVML does not offer; the per-link \
         counters (DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_L<n>, gpu_nvlink_errors_total) carry the errors",
    ),
    "NVLink error information of the GPU, as DCGM records it.",
)];

/// The GPU's NVSwitch fabric registration (`nvmlDeviceGetGpuFabricInfoV`).
pub static FABRIC: &[FieldDef] = &[
    dev(
        "DCGM_FI_DEV_FABRIC_MANAGER_STATUS",
        170,
        "",
        Getter::Fabric(FabricPart::ManagerStatus),
        "Fabric registration as DCGM counts it: 1 not started, 2 in progress, 3 success, 4 failure, 5 unrecognized.",
    ),
    dev(
        "DCGM_FI_DEV_FABRIC_MANAGER_ERROR_CODE",
        171,
        "",
        Getter::Fabric(FabricPart::ErrorCode),
        "NVML return code of a completed fabric registration (0 success); absent before it completes.",
    ),
    dev(
        "DCGM_FI_DEV_FABRIC_CLUSTER_UUID",
        172,
        "",
        Getter::Text(TextKind::FabricClusterUuid),
        "UUID of the NVSwitch fabric cluster the GPU belongs to.",
    ),
    dev(
        "DCGM_FI_DEV_FABRIC_CLIQUE_ID",
        173,
        "",
        Getter::Fabric(FabricPart::CliqueId),
        "ID of the fabric clique the GPU belongs to.",
    ),
    dev(
        "DCGM_FI_DEV_FABRIC_HEALTH_MASK",
        174,
        "",
        Getter::Fabric(FabricPart::HealthMask),
        "Fabric health bit mask as NVML reports it.",
    ),
    dev(
        "DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY",
        175,
        "",
        Getter::Fabric(FabricPart::HealthSummary),
        "Fabric health: 0 not reported, 1 healthy, 2 unhealthy, 3 limited capacity.",
    ),
];

/// DCGM 4.6 names of the fabric manager's error code and of the NVLink error record:
/// (4.6 name, pre-4.6 name).
pub(super) const FABRIC_RENAMED: &[(&str, &str)] = &[
    (
        "DCGM_FI_DEV_FABRIC_MANAGER_ERROR",
        "DCGM_FI_DEV_FABRIC_MANAGER_ERROR_CODE",
    ),
    ("DCGM_FI_DEV_NVLINK_ERROR", "DCGM_FI_DEV_GPU_NVLINK_ERRORS"),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{by_id, lookup};

    #[test]
    fn fabric_ids_match_dcgm_fields_h() {
        for (name, id) in [
            ("DCGM_FI_DEV_GPU_NVLINK_ERRORS", 450),
            ("DCGM_FI_DEV_FABRIC_MANAGER_STATUS", 170),
            ("DCGM_FI_DEV_FABRIC_HEALTH_SUMMARY", 175),
        ] {
            assert_eq!(by_id(id).map(|f| f.name), Some(name));
        }
    }

    #[test]
    fn dcgm_4_6_names_resolve_to_the_same_field() {
        let f = |n: &str| lookup(n).map(|f| f.id);
        assert_eq!(f("DCGM_FI_DEV_FABRIC_MANAGER_ERROR"), Some(171));
        assert_eq!(f("dcgm_fi_dev_nvlink_error"), Some(450));
        assert_eq!(f("DCGM_FI_DEV_NVLINK_RX_SYMBOL_ERROR_TOTAL"), Some(1214));
        assert_eq!(f("dcgm_fi_dev_nvlink_symbol_ber_ratio"), Some(1216));
        assert_eq!(f("DCGM_FI_DEV_NVLINK_ECC_ERROR_TOTAL"), Some(1220));
        for (new, old) in NVLINK5_RENAMED {
            assert_eq!(f(new), f(old), "{new}");
            assert!(f(old).is_some(), "{old}");
        }
    }
}
