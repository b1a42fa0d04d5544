//! DCGM's NVLink fields that name one link each (`…_L0` … `…_L17`): the error counters and
//! the bandwidth of each link (`DCGM_FI_DEV_NVLINK_*_L<n>`, 400–496) and its traffic through
//! GPM (`DCGM_FI_PROF_NVLINK_L<n>_{TX,RX}_BYTES`, 1040–1075), with the DCGM 4.6 names of the
//! error counters.
//!
//! Owns these rows and the DCGM 4.6 per-link name rule. No row is written out: the names are
//! spelt per link at compile time and the ids come from DCGM's id ranges ([`ID_RANGES`],
//! [`PROF_FIRST_ID`]), those of `dcgm_fields.h`, where links 6–11 and 15–17 were added later
//! and sit in other ranges. Each table is ordered by DCGM id. Data only: it must not do I/O or
//! call NVML; the link-entity fields (one field, one series per link) are in `link_entity`.

use super::super::field::{FieldDef, Getter, Scale, dev};

/// How many links DCGM names fields for: `_L0` … `_L17`.
const LINKS: usize = 18;

/// The names `<before><link><after>` of links 0 … 17, spelt at compile time.
macro_rules! per_link_names {
    ($before:literal, $after:literal) => {
        per_link_names!(@spell $before, $after; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17)
    };
    (@spell $before:literal, $after:literal; $($link:literal)+) => {
        [$(concat!($before, $link, $after)),+]
    };
}

/// KiB/s of NVLink data → MiB/s, the unit of DCGM's bandwidth fields.
const KIB_TO_MIB: Scale = Scale::Mul(1.0 / 1024.0);

/// What the fields of one family read on their link.
#[derive(Clone, Copy)]
enum Reading {
    /// `nvmlDeviceGetNvLinkErrorCounter` counter `n` (0 replay, 1 recovery, 2 CRC flit,
    /// 3 CRC data).
    Errors(u32),
    /// Data sent plus received, MiB/s.
    Bandwidth,
}

/// One family of per-link fields: its name for each link and what it reads.
struct Family {
    names: [&'static str; LINKS],
    reading: Reading,
}

/// The families, in the order DCGM numbers them inside each id range.
const FAMILIES: [Family; 5] = [
    Family {
        names: per_link_names!("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_L", ""),
        reading: Reading::Errors(2),
    },
    Family {
        names: per_link_names!("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_L", ""),
        reading: Reading::Errors(3),
    },
    Family {
        names: per_link_names!("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_L", ""),
        reading: Reading::Errors(0),
    },
    Family {
        names: per_link_names!("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_L", ""),
        reading: Reading::Errors(1),
    },
    Family {
        names: per_link_names!("DCGM_FI_DEV_NVLINK_BANDWIDTH_L", ""),
        reading: Reading::Bandwidth,
    },
];

/// One of DCGM's id ranges of the per-link fields: the links it numbers, in id order, and the
/// id of its first link in each family ([`FAMILIES`] order); a family's ids inside a range
/// are consecutive.
struct IdRange {
    links: &'static [u32],
    first_ids: [u32; FAMILIES.len()],
}

/// DCGM's id ranges (`dcgm_fields.h`): links 0–5 and 12–14 share one block of ten ids per
/// family from 400 (the block's last id, 409, 419, …, is the family's GPU total, listed with
/// dcgm-exporter 4.8's fields); links 6–11 (451–480) and 15–17 (481–496) were numbered later.
const ID_RANGES: [IdRange; 3] = [
    IdRange {
        links: &[0, 1, 2, 3, 4, 5, 12, 13, 14],
        first_ids: [400, 410, 420, 430, 440],
    },
    IdRange {
        links: &[6, 7, 8, 9, 10, 11],
        first_ids: [451, 457, 463, 469, 475],
    },
    IdRange {
        links: &[15, 16, 17],
        first_ids: [481, 484, 487, 491, 494],
    },
];

/// The field of `family` for `link`, with DCGM id `id`.
const fn link_field(family: &Family, link: u32, id: u32) -> FieldDef {
    let name = family.names[link as usize];
    match family.reading {
        Reading::Errors(counter) => dev(
            name,
            id,
            "count",
            Getter::NvLinkErrorCounter(counter, link),
            "NVLink errors of one kind on one link, as the name says (kind, then L<link>).",
        ),
        Reading::Bandwidth => dev(
            name,
            id,
            "MiB/s",
            Getter::NvLinkLinkRate(link, KIB_TO_MIB),
            "NVLink data sent plus received on the link the name ends with (in MiB/s).",
        ),
    }
}

/// How many fields the id ranges number: each of their links once per family.
const BY_LINK_FIELDS: usize = {
    let mut links = 0;
    let mut r = 0;
    while r < ID_RANGES.len() {
        links += ID_RANGES[r].links.len();
        r += 1;
    }
    links * FAMILIES.len()
};

/// The fields of [`ID_RANGES`] in id order: range by range, then family by family, then link
/// by link.
const fn by_link_fields() -> [FieldDef; BY_LINK_FIELDS] {
    // Every entry is overwritten below; the count check makes sure of it.
    let mut fields = [link_field(&FAMILIES[0], 0, 0); BY_LINK_FIELDS];
    let mut n = 0;
    let mut r = 0;
    while r < ID_RANGES.len() {
        let range = &ID_RANGES[r];
        let mut f = 0;
        while f < FAMILIES.len() {
            let mut i = 0;
            while i < range.links.len() {
                let id = range.first_ids[f] + i as u32;
                fields[n] = link_field(&FAMILIES[f], range.links[i], id);
                n += 1;
                i += 1;
            }
            f += 1;
        }
        r += 1;
    }
    assert!(n == BY_LINK_FIELDS);
    fields
}

/// The error counters and bandwidth of each link, ordered by DCGM id.
pub static NVLINK_BY_LINK: &[FieldDef] = &by_link_fields();

/// DCGM's first per-link profiling id, `DCGM_FI_PROF_NVLINK_L0_TX_BYTES`; each link has two
/// consecutive ids, TX then RX.
const PROF_FIRST_ID: u32 = 1040;
/// NVML's first per-link GPM metric, `NVML_GPM_METRIC_NVLINK_L0_RX_PER_SEC`; each link has two
/// consecutive metrics, RX then TX.
const GPM_FIRST_METRIC: u32 = 62;

/// NVLink traffic of one link through GPM (`NVML_GPM_METRIC_NVLINK_L<n>_{RX,TX}_PER_SEC`,
/// MiB/s), in bytes per second like DCGM's profiling fields. Hopper and later.
const fn gpm_link(name: &'static str, id: u32, metric: u32) -> FieldDef {
    dev(
        name,
        id,
        "B/s",
        Getter::Gpm(metric, Scale::Mul(1_048_576.0)),
        "NVLink traffic of the link the name gives, headers included, in bytes per second (GPM).",
    )
}

/// The profiling fields of each link in id order: link by link, TX then RX.
const fn gpm_by_link_fields() -> [FieldDef; 2 * LINKS] {
    let tx: [&str; LINKS] = per_link_names!("DCGM_FI_PROF_NVLINK_L", "_TX_BYTES");
    let rx: [&str; LINKS] = per_link_names!("DCGM_FI_PROF_NVLINK_L", "_RX_BYTES");
    // Every entry is overwritten below.
    let mut fields = [gpm_link("", 0, 0); 2 * LINKS];
    let mut link = 0;
    while link < LINKS {
        let (id, metric) = (
            PROF_FIRST_ID + 2 * link as u32,
            GPM_FIRST_METRIC + 2 * link as u32,
        );
        fields[2 * link] = gpm_link(tx[link], id, metric + 1);
        fields[2 * link + 1] = gpm_link(rx[link], id + 1, metric);
        link += 1;
    }
    fields
}

/// DCGM's per-link profiling fields (`DCGM_FI_PROF_NVLINK_L0_TX_BYTES` … `L17_RX_BYTES`),
/// ordered by DCGM id.
pub static NVLINK_GPM_BY_LINK: &[FieldDef] = &gpm_by_link_fields();

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
                .filter(|f| match f.getter {
                    Getter::NvLinkErrorCounter(_, l) => l == link,
                    Getter::NvLinkLinkRate(l, _) => l == link,
                    _ => false,
                })
                .count();
            assert_eq!(n, 5, "link {link}");
        }
    }

    #[test]
    fn each_name_says_the_link_and_the_reading() {
        for f in NVLINK_BY_LINK {
            let (kind, link) = match f.getter {
                Getter::NvLinkErrorCounter(counter, link) => {
                    let kinds = ["REPLAY", "RECOVERY", "CRC_FLIT", "CRC_DATA"];
                    (format!("{}_ERROR_COUNT", kinds[counter as usize]), link)
                }
                Getter::NvLinkLinkRate(link, _) => ("BANDWIDTH".to_owned(), link),
                other => panic!("{}: {other:?}", f.name),
            };
            assert_eq!(f.name, format!("DCGM_FI_DEV_NVLINK_{kind}_L{link}"));
        }
        for f in NVLINK_GPM_BY_LINK {
            let Getter::Gpm(metric, _) = f.getter else {
                panic!("{}: {:?}", f.name, f.getter);
            };
            let (link, tx) = ((metric - 62) / 2, (metric - 62) % 2 == 1);
            let dir = if tx { "TX" } else { "RX" };
            assert_eq!(f.name, format!("DCGM_FI_PROF_NVLINK_L{link}_{dir}_BYTES"));
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
        let metric = |n| lookup(n).map(|f| f.getter);
        assert_eq!(
            metric("DCGM_FI_PROF_NVLINK_L5_RX_BYTES"),
            Some(Getter::Gpm(72, Scale::Mul(1_048_576.0)))
        );
    }
}
