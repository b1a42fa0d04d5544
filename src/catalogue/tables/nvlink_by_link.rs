//! DCGM's NVLink fields that name one link each (`…_L0` … `…_L17`): the error counters and
//! the bandwidth of each link (`DCGM_FI_DEV_NVLINK_*_L<n>`, 400–496) and its traffic through
//! GPM (`DCGM_FI_PROF_NVLINK_L<n>_{TX,RX}_BYTES`, 1040–1075), with the DCGM 4.6 names of the
//! error counters.
//!
//! Owns these rows and the DCGM 4.6 per-link name rule. Each table is ordered by DCGM id; the
//! ids are those of `dcgm_fields.h`, where links 6–11 and 15–17 were added later and sit in
//! other id ranges. Data only: it must not do I/O or call NVML; the link-entity fields (one
//! field, one series per link) are in `link_entity`.

use super::super::field::{FieldDef, Scale, Source, dev};

/// KiB/s of NVLink data → MiB/s, the unit of DCGM's bandwidth fields.
const KIB_TO_MIB: Scale = Scale::Mul(1.0 / 1024.0);

/// `nvmlDeviceGetNvLinkErrorCounter` counter `counter` (0 replay, 1 recovery, 2 CRC flit,
/// 3 CRC data) of one link.
const fn err(name: &'static str, id: u32, counter: u32, link: u32) -> FieldDef {
    dev(
        name,
        id,
        "count",
        Source::NvLinkErrorCounter(counter, link),
        "NVLink errors of one kind on one link, as the name says (kind, then L<link>).",
    )
}

/// Data sent plus received on one link, MiB/s.
const fn bandwidth(name: &'static str, id: u32, link: u32) -> FieldDef {
    dev(
        name,
        id,
        "MiB/s",
        Source::NvLinkLinkRate(link, KIB_TO_MIB),
        "NVLink data sent plus received on the link the name ends with (in MiB/s).",
    )
}

/// NVLink traffic of one link through GPM (`NVML_GPM_METRIC_NVLINK_L<n>_{RX,TX}_PER_SEC`,
/// MiB/s), in bytes per second like DCGM's profiling fields. Hopper and later.
const fn gpm_link(name: &'static str, id: u32, metric: u32) -> FieldDef {
    dev(
        name,
        id,
        "B/s",
        Source::Gpm(metric, Scale::Mul(1_048_576.0)),
        "NVLink traffic of the link the name gives, headers included, in bytes per second (GPM).",
    )
}

/// DCGM's per-link profiling fields (`DCGM_FI_PROF_NVLINK_L0_TX_BYTES` … `L17_RX_BYTES`).
pub static NVLINK_GPM_BY_LINK: &[FieldDef] = &[
    gpm_link("DCGM_FI_PROF_NVLINK_L0_TX_BYTES", 1040, 63),
    gpm_link("DCGM_FI_PROF_NVLINK_L0_RX_BYTES", 1041, 62),
    gpm_link("DCGM_FI_PROF_NVLINK_L1_TX_BYTES", 1042, 65),
    gpm_link("DCGM_FI_PROF_NVLINK_L1_RX_BYTES", 1043, 64),
    gpm_link("DCGM_FI_PROF_NVLINK_L2_TX_BYTES", 1044, 67),
    gpm_link("DCGM_FI_PROF_NVLINK_L2_RX_BYTES", 1045, 66),
    gpm_link("DCGM_FI_PROF_NVLINK_L3_TX_BYTES", 1046, 69),
    gpm_link("DCGM_FI_PROF_NVLINK_L3_RX_BYTES", 1047, 68),
    gpm_link("DCGM_FI_PROF_NVLINK_L4_TX_BYTES", 1048, 71),
    gpm_link("DCGM_FI_PROF_NVLINK_L4_RX_BYTES", 1049, 70),
    gpm_link("DCGM_FI_PROF_NVLINK_L5_TX_BYTES", 1050, 73),
    gpm_link("DCGM_FI_PROF_NVLINK_L5_RX_BYTES", 1051, 72),
    gpm_link("DCGM_FI_PROF_NVLINK_L6_TX_BYTES", 1052, 75),
    gpm_link("DCGM_FI_PROF_NVLINK_L6_RX_BYTES", 1053, 74),
    gpm_link("DCGM_FI_PROF_NVLINK_L7_TX_BYTES", 1054, 77),
    gpm_link("DCGM_FI_PROF_NVLINK_L7_RX_BYTES", 1055, 76),
    gpm_link("DCGM_FI_PROF_NVLINK_L8_TX_BYTES", 1056, 79),
    gpm_link("DCGM_FI_PROF_NVLINK_L8_RX_BYTES", 1057, 78),
    gpm_link("DCGM_FI_PROF_NVLINK_L9_TX_BYTES", 1058, 81),
    gpm_link("DCGM_FI_PROF_NVLINK_L9_RX_BYTES", 1059, 80),
    gpm_link("DCGM_FI_PROF_NVLINK_L10_TX_BYTES", 1060, 83),
    gpm_link("DCGM_FI_PROF_NVLINK_L10_RX_BYTES", 1061, 82),
    gpm_link("DCGM_FI_PROF_NVLINK_L11_TX_BYTES", 1062, 85),
    gpm_link("DCGM_FI_PROF_NVLINK_L11_RX_BYTES", 1063, 84),
    gpm_link("DCGM_FI_PROF_NVLINK_L12_TX_BYTES", 1064, 87),
    gpm_link("DCGM_FI_PROF_NVLINK_L12_RX_BYTES", 1065, 86),
    gpm_link("DCGM_FI_PROF_NVLINK_L13_TX_BYTES", 1066, 89),
    gpm_link("DCGM_FI_PROF_NVLINK_L13_RX_BYTES", 1067, 88),
    gpm_link("DCGM_FI_PROF_NVLINK_L14_TX_BYTES", 1068, 91),
    gpm_link("DCGM_FI_PROF_NVLINK_L14_RX_BYTES", 1069, 90),
    gpm_link("DCGM_FI_PROF_NVLINK_L15_TX_BYTES", 1070, 93),
    gpm_link("DCGM_FI_PROF_NVLINK_L15_RX_BYTES", 1071, 92),
    gpm_link("DCGM_FI_PROF_NVLINK_L16_TX_BYTES", 1072, 95),
    gpm_link("DCGM_FI_PROF_NVLINK_L16_RX_BYTES", 1073, 94),
    gpm_link("DCGM_FI_PROF_NVLINK_L17_TX_BYTES", 1074, 97),
    gpm_link("DCGM_FI_PROF_NVLINK_L17_RX_BYTES", 1075, 96),
];

/// The error counters and bandwidth of each link.
pub static NVLINK_BY_LINK: &[FieldDef] = &[
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L0", 400, 2, 0),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L1", 401, 2, 1),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L2", 402, 2, 2),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L3", 403, 2, 3),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L4", 404, 2, 4),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L5", 405, 2, 5),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L12", 406, 2, 12),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L13", 407, 2, 13),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L14", 408, 2, 14),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L0", 410, 3, 0),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L1", 411, 3, 1),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L2", 412, 3, 2),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L3", 413, 3, 3),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L4", 414, 3, 4),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L5", 415, 3, 5),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L12", 416, 3, 12),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L13", 417, 3, 13),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L14", 418, 3, 14),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L0", 420, 0, 0),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L1", 421, 0, 1),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L2", 422, 0, 2),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L3", 423, 0, 3),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L4", 424, 0, 4),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L5", 425, 0, 5),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L12", 426, 0, 12),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L13", 427, 0, 13),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L14", 428, 0, 14),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L0", 430, 1, 0),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L1", 431, 1, 1),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L2", 432, 1, 2),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L3", 433, 1, 3),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L4", 434, 1, 4),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L5", 435, 1, 5),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L12", 436, 1, 12),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L13", 437, 1, 13),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L14", 438, 1, 14),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", 440, 0),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L1", 441, 1),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L2", 442, 2),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L3", 443, 3),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L4", 444, 4),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L5", 445, 5),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L12", 446, 12),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L13", 447, 13),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L14", 448, 14),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L6", 451, 2, 6),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L7", 452, 2, 7),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L8", 453, 2, 8),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L9", 454, 2, 9),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L10", 455, 2, 10),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L11", 456, 2, 11),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L6", 457, 3, 6),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L7", 458, 3, 7),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L8", 459, 3, 8),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L9", 460, 3, 9),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L10", 461, 3, 10),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L11", 462, 3, 11),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L6", 463, 0, 6),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L7", 464, 0, 7),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L8", 465, 0, 8),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L9", 466, 0, 9),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L10", 467, 0, 10),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L11", 468, 0, 11),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L6", 469, 1, 6),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L7", 470, 1, 7),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L8", 471, 1, 8),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L9", 472, 1, 9),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L10", 473, 1, 10),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L11", 474, 1, 11),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L6", 475, 6),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L7", 476, 7),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L8", 477, 8),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L9", 478, 9),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L10", 479, 10),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L11", 480, 11),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L15", 481, 2, 15),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L16", 482, 2, 16),
    err("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L17", 483, 2, 17),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L15", 484, 3, 15),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L16", 485, 3, 16),
    err("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L17", 486, 3, 17),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L15", 487, 0, 15),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L16", 488, 0, 16),
    err("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L17", 489, 0, 17),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L15", 491, 1, 15),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L16", 492, 1, 16),
    err("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L17", 493, 1, 17),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L15", 494, 15),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L16", 495, 16),
    bandwidth("DCGM_FI_DEV_NVLINK_BANDWIDTH_L17", 496, 17),
];

/// The field a DCGM 4.6 name of a per-link error counter stands for (same id), ASCII
/// case-insensitive: `DCGM_FI_DEV_NVLINK_<KIND>_ERROR_L<n>_TOTAL` for
/// `…_<KIND>_ERROR_COUNT_L<n>`. (DCGM 4.6 kept the `…_BANDWIDTH_L<n>` names.)
pub(super) fn canonical_name(name: &str) -> Option<&'static str> {
    let upper = name.to_ascii_uppercase();
    let rest = upper.strip_prefix("DCGM_FI_DEV_NVLINK_")?;
    let body = rest.strip_suffix("_TOTAL")?;
    let (kind, link) = body.rsplit_once("_L")?;
    let kind = kind.strip_suffix("_ERROR")?;
    let wanted = format!("DCGM_FI_DEV_NVLINK_{kind}_ERROR_COUNT_L{link}");
    NVLINK_BY_LINK
        .iter()
        .find(|f| f.name == wanted)
        .map(|f| f.name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{by_id, lookup};

    #[test]
    fn every_link_has_its_five_fields_and_ids_match_dcgm_fields_h() {
        for (name, id) in [
            ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L0", 400),
            ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L6", 451),
            ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L12", 406),
            ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L17", 483),
            ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L15", 484),
            ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L11", 468),
            ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L15", 491),
            ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L17", 493),
            ("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0", 440),
            ("DCGM_FI_DEV_NVLINK_BANDWIDTH_L6", 475),
            ("DCGM_FI_DEV_NVLINK_BANDWIDTH_L12", 446),
            ("DCGM_FI_DEV_NVLINK_BANDWIDTH_L17", 496),
        ] {
            assert_eq!(by_id(id).map(|f| f.name), Some(name));
        }
        for link in 0..18u32 {
            let n = NVLINK_BY_LINK
                .iter()
                .filter(|f| match f.source {
                    Source::NvLinkErrorCounter(_, l) => l == link,
                    Source::NvLinkLinkRate(l, _) => l == link,
                    _ => false,
                })
                .count();
            assert_eq!(n, 5, "link {link}");
        }
    }

    #[test]
    fn dcgm_4_6_names_resolve_to_the_same_field() {
        let f = |n: &str| lookup(n).map(|f| f.id);
        assert_eq!(f("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_L7_TOTAL"), Some(452));
        assert_eq!(f("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_L0_TOTAL"), Some(410));
        assert_eq!(f("dcgm_fi_dev_nvlink_recovery_error_l16_total"), Some(492));
        assert_eq!(f("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_L18_TOTAL"), None);
    }

    #[test]
    fn gpm_traffic_of_each_link() {
        let f = |n: &str| lookup(n).map(|f| f.id);
        assert_eq!(f("DCGM_FI_PROF_NVLINK_L0_TX_BYTES"), Some(1040));
        assert_eq!(f("DCGM_FI_PROF_NVLINK_L17_RX_BYTES"), Some(1075));
        let metric = |n| lookup(n).map(|f| f.source);
        assert_eq!(
            metric("DCGM_FI_PROF_NVLINK_L5_RX_BYTES"),
            Some(Source::Gpm(72, Scale::Mul(1_048_576.0)))
        );
    }
}
