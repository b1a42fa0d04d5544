//! The second static field table: fields DCGM added in 4.6 and later, which dcgm-exporter 4.8.3+
//! and 4.9 name — the clock-event reason times (1420–1424), the base-unit fields (1600–1611)
//! (those of the board fields are in `fields_board`) and the DCGM 4.7 base-unit fields
//! dcgm-exporter 4.9 collects by default.
//!
//! Also dcgm-exporter 4.8.3's cumulative `DCGM_EXP_XID_ERRORS_TOTAL` and
//! `DCGM_EXP_CLOCK_EVENTS_TOTAL`. DCGM 4.6 ids are DCGM's (`dcgm_fields.h`). DCGM 4.7's framebuffer-in-bytes and 0–1 ratio
//! fields have no published id we could verify: they get ids in 9100–9199, a range DCGM does
//! not use, and counters files name them (they never number them). Their names follow
//! dcgm-exporter 4.9's release text; `counters/README.md` marks them as inferred.
//!
//! Data only: it must not call NVML or read files.

use super::field::{ClockKind, FieldDef, MemKind, Scale, Source, UtilKind, WindowKind, dev, inst};

/// MHz → Hz.
const MHZ_TO_HZ: Scale = Scale::Mul(1e6);
/// MiB (how the framebuffer sources report) → bytes.
const MIB_TO_BYTES: Scale = Scale::Mul(1_048_576.0);
/// Percent → 0–1 ratio.
const PERCENT_TO_RATIO: Scale = Scale::Mul(0.01);

/// Every field of this table, ordered by id.
pub static FIELDS_NEW: &[FieldDef] = &[
    // ---- Clock-event reason times (1420–1424), NVML field values in ns ----
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS",
        1420,
        "ns",
        Source::NvmlField(74, Scale::Identity),
        "Time the clocks were held down by the software power cap (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST_NS",
        1421,
        "ns",
        Source::NvmlField(76, Scale::Identity),
        "Time the clocks were held down to match a sync-boost group (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN_NS",
        1422,
        "ns",
        Source::NvmlField(251, Scale::Identity),
        "Time the clocks were held down by software thermal slowdown (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN_NS",
        1423,
        "ns",
        Source::NvmlField(252, Scale::Identity),
        "Time the clocks were held down by hardware thermal slowdown (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN_NS",
        1424,
        "ns",
        Source::NvmlField(253, Scale::Identity),
        "Time the clocks were held down by the external power brake (in ns).",
    ),
    // ---- DCGM 4.6 base-unit fields (1603–1605, 1611): new ids, readings in base units; the
    // board ones (BAR1, application and maximum clocks, fan) are in fields_board.rs ----
    dev(
        "DCGM_FI_DEV_SM_CLOCK_HERTZ",
        1603,
        "Hz",
        Source::Clock(ClockKind::Sm),
        "Current streaming-multiprocessor clock (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ",
        1604,
        "Hz",
        Source::Clock(ClockKind::Mem),
        "Current memory clock (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_VIDEO_CLOCK_HERTZ",
        1605,
        "Hz",
        Source::Clock(ClockKind::Video),
        "Current video encoder/decoder clock (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL",
        1611,
        "J",
        Source::TotalEnergy,
        "Energy the GPU has used since the driver was loaded (in J).",
    )
    .scaled(Scale::Mul(0.001)),
    // ---- dcgm-exporter 4.8.3's cumulative counters (its ids not verified; 9005-9006 ours) ----
    dev(
        "DCGM_EXP_XID_ERRORS_TOTAL",
        9005,
        "count",
        Source::Total(WindowKind::Xid),
        "Xid errors seen since the exporter started, one series per Xid code.",
    ),
    dev(
        "DCGM_EXP_CLOCK_EVENTS_TOTAL",
        9006,
        "count",
        Source::Total(WindowKind::ClockEvents),
        "Clock-event reasons that became active since the exporter started, one series per reason.",
    ),
    // ---- DCGM 4.7 base-unit fields (ids not published; 9100–9199 are ours) ----
    dev(
        "DCGM_FI_DEV_GPU_UTIL_RATIO",
        9100,
        "ratio",
        Source::Utilization(UtilKind::Gpu),
        "Share of time a kernel was running (0-1).",
    )
    .scaled(PERCENT_TO_RATIO),
    inst(
        "DCGM_FI_DEV_FB_CAPACITY_BYTES",
        9101,
        "B",
        Source::Memory(MemKind::Total),
        "Size of the framebuffer (in bytes).",
    )
    .scaled(MIB_TO_BYTES),
    inst(
        "DCGM_FI_DEV_FB_FREE_BYTES",
        9102,
        "B",
        Source::Memory(MemKind::Free),
        "Framebuffer memory not in use (in bytes).",
    )
    .scaled(MIB_TO_BYTES),
    inst(
        "DCGM_FI_DEV_FB_USED_BYTES",
        9103,
        "B",
        Source::Memory(MemKind::Used),
        "Framebuffer memory in use (in bytes).",
    )
    .scaled(MIB_TO_BYTES),
    inst(
        "DCGM_FI_DEV_FB_RESERVED_BYTES",
        9104,
        "B",
        Source::Memory(MemKind::Reserved),
        "Framebuffer memory held back by the driver (in bytes).",
    )
    .scaled(MIB_TO_BYTES),
    inst(
        "DCGM_FI_DEV_FB_USED_RATIO",
        9105,
        "ratio",
        Source::Memory(MemKind::UsedRatio),
        "Share of the framebuffer not reserved by the driver that is in use (0-1).",
    ),
    dev(
        "DCGM_FI_DEV_MEM_COPY_UTIL_RATIO",
        9106,
        "ratio",
        Source::Utilization(UtilKind::MemCopy),
        "Share of time device memory was being read or written (0-1).",
    )
    .scaled(PERCENT_TO_RATIO),
    dev(
        "DCGM_FI_DEV_ENC_UTIL_RATIO",
        9107,
        "ratio",
        Source::Utilization(UtilKind::Encoder),
        "Busy share of the video encoder (0-1).",
    )
    .scaled(PERCENT_TO_RATIO),
    dev(
        "DCGM_FI_DEV_DEC_UTIL_RATIO",
        9108,
        "ratio",
        Source::Utilization(UtilKind::Decoder),
        "Busy share of the video decoder (0-1).",
    )
    .scaled(PERCENT_TO_RATIO),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordered_by_id_and_after_the_first_table_ends_its_dcgm_range() {
        for pair in FIELDS_NEW.windows(2) {
            assert!(
                pair[0].id < pair[1].id,
                "{} before {}",
                pair[0].name,
                pair[1].name
            );
        }
    }

    #[test]
    fn spot_check_ids_against_dcgm_fields_h() {
        for (name, id) in [
            ("DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS", 1420),
            (
                "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN_NS",
                1424,
            ),
            ("DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", 1611),
        ] {
            assert_eq!(super::super::by_id(id).map(|f| f.name), Some(name));
        }
    }

    #[test]
    fn base_units_scale_the_legacy_reading() {
        let f = |n: &str| super::super::lookup(n).expect(n);
        assert_eq!(f("DCGM_FI_DEV_FB_USED_BYTES").convert(2.0), 2_097_152.0);
        assert_eq!(f("DCGM_FI_DEV_GPU_UTIL_RATIO").convert(42.0), 0.42);
        assert_eq!(f("DCGM_FI_DEV_FB_USED_RATIO").convert(0.5), 0.5);
    }
}
