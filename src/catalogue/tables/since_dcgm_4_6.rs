//! Fields DCGM added in 4.6 and later, which dcgm-exporter 4.8.3+ and 4.9 name: the
//! clock-event reason times (1420–1424), NVML's GPU recovery action (1523), the base-unit fields (1603–1611), DCGM 4.7's
//! base-unit fields (utilization ratios, throttle seconds, framebuffer bytes, NVLink bytes per
//! second: 1613–1648), dcgm-exporter 4.8.3's cumulative `DCGM_EXP_XID_ERRORS_TOTAL` and
//! `DCGM_EXP_CLOCK_EVENTS_TOTAL` (9005–9006, our ids; dcgm-exporter's were not verified), and
//! `DCGM_FI_DEV_FB_USED_RATIO` with our id 9105 (DCGM gives id 254 that name; here 254 keeps
//! its legacy percentage).
//!
//! Owns these rows, ordered by id. DCGM 4.6 ids are DCGM's (`dcgm_fields.h`, via go-dcgm).
//! DCGM 4.7's ids come from a public write-up of NVIDIA's DCGM 4.7.0 field reference (read
//! 2026-09), not from the header itself: `counters/README.md` says so. Data only: it must not
//! call NVML or read files. The base-unit twins of board fields belong in `board`; a DCGM 4.6
//! *name* for a field listed elsewhere (same id) is an alias in `legacy`, not a row here.

use super::super::field::{
    ClockKind, FieldDef, Getter, MemKind, Scale, UtilKind, Violation, WindowKind, dev, inst,
};

/// MHz → Hz.
const MHZ_TO_HZ: Scale = Scale::Mul(1e6);
/// MiB (how the framebuffer sources report) → bytes.
const MIB_TO_BYTES: Scale = Scale::Mul(1_048_576.0);
/// Percent → 0–1 ratio.
const PERCENT_TO_RATIO: Scale = Scale::Mul(0.01);
/// Nanoseconds → seconds.
const NS_TO_S: Scale = Scale::Mul(1e-9);

/// Every field of this table, ordered by id.
pub static SINCE_DCGM_4_6: &[FieldDef] = &[
    // ---- Clock-event reason times (1420–1424), NVML field values in ns ----
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS",
        1420,
        "ns",
        Getter::NvmlField(74, Scale::Identity),
        "Time the clocks were held down by the software power cap (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST_NS",
        1421,
        "ns",
        Getter::NvmlField(76, Scale::Identity),
        "Time the clocks were held down to match a sync-boost group (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN_NS",
        1422,
        "ns",
        Getter::NvmlField(251, Scale::Identity),
        "Time the clocks were held down by software thermal slowdown (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN_NS",
        1423,
        "ns",
        Getter::NvmlField(252, Scale::Identity),
        "Time the clocks were held down by hardware thermal slowdown (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN_NS",
        1424,
        "ns",
        Getter::NvmlField(253, Scale::Identity),
        "Time the clocks were held down by the external power brake (in ns).",
    ),
    // ---- NVML's recovery action (1523, `dcgm_fields.h`; NVML field 230) ----
    dev(
        "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION",
        1523,
        "enum",
        Getter::NvmlField(230, Scale::Identity),
        "Recovery action NVML asks for (0 none, 1 GPU reset, 2 node reboot, 3 drain P2P, 4 drain P2P and reset).",
    ),
    // ---- DCGM 4.6 base-unit fields (1603–1605, 1611): new ids, readings in base units; the
    // board ones (BAR1, application and maximum clocks, fan) are in board.rs ----
    dev(
        "DCGM_FI_DEV_SM_CLOCK_HERTZ",
        1603,
        "Hz",
        Getter::Clock(ClockKind::Sm),
        "Current streaming-multiprocessor clock (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ",
        1604,
        "Hz",
        Getter::Clock(ClockKind::Mem),
        "Current memory clock (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_VIDEO_CLOCK_HERTZ",
        1605,
        "Hz",
        Getter::Clock(ClockKind::Video),
        "Current video encoder/decoder clock (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL",
        1611,
        "J",
        Getter::TotalEnergy,
        "Energy the GPU has used since the driver was loaded (in J).",
    )
    .scaled(Scale::Mul(0.001)),
    // ---- DCGM 4.7 base-unit fields (1613-1648): ids as DCGM 4.7's field reference gives
    // them (see the header) ----
    dev(
        "DCGM_FI_DEV_GPU_UTIL_RATIO",
        1613,
        "ratio",
        Getter::Utilization(UtilKind::Gpu),
        "Share of time a kernel was running (0-1).",
    )
    .scaled(PERCENT_TO_RATIO),
    dev(
        "DCGM_FI_DEV_MEMORY_UTIL_RATIO",
        1614,
        "ratio",
        Getter::Utilization(UtilKind::MemCopy),
        "Share of time device memory was being read or written (0-1).",
    )
    .scaled(PERCENT_TO_RATIO),
    dev(
        "DCGM_FI_DEV_ENC_UTIL_RATIO",
        1615,
        "ratio",
        Getter::Utilization(UtilKind::Encoder),
        "Busy share of the video encoder (0-1).",
    )
    .scaled(PERCENT_TO_RATIO),
    dev(
        "DCGM_FI_DEV_DEC_UTIL_RATIO",
        1616,
        "ratio",
        Getter::Utilization(UtilKind::Decoder),
        "Busy share of the video decoder (0-1).",
    )
    .scaled(PERCENT_TO_RATIO),
    dev(
        "DCGM_FI_DEV_GPU_POWER_THROTTLE_SECONDS_TOTAL",
        1617,
        "s",
        Getter::Violation(Violation::Power),
        "Time the clocks were held down by the power limit (in s).",
    )
    .scaled(NS_TO_S),
    dev(
        "DCGM_FI_DEV_GPU_THERMAL_THROTTLE_SECONDS_TOTAL",
        1618,
        "s",
        Getter::Violation(Violation::Thermal),
        "Time the clocks were held down by temperature (in s).",
    )
    .scaled(NS_TO_S),
    dev(
        "DCGM_FI_DEV_GPU_SYNC_BOOST_THROTTLE_SECONDS_TOTAL",
        1619,
        "s",
        Getter::Violation(Violation::SyncBoost),
        "Time the clocks were held down to match a sync-boost group (in s).",
    )
    .scaled(NS_TO_S),
    dev(
        "DCGM_FI_DEV_GPU_LIMIT_THROTTLE_SECONDS_TOTAL",
        1620,
        "s",
        Getter::Violation(Violation::BoardLimit),
        "Time the clocks were held down by a board limit (in s).",
    )
    .scaled(NS_TO_S),
    dev(
        "DCGM_FI_DEV_GPU_LOW_UTIL_THROTTLE_SECONDS_TOTAL",
        1621,
        "s",
        Getter::Violation(Violation::LowUtil),
        "Time the clocks were lowered because the GPU was lightly used (in s).",
    )
    .scaled(NS_TO_S),
    dev(
        "DCGM_FI_DEV_GPU_RELIABILITY_THROTTLE_SECONDS_TOTAL",
        1622,
        "s",
        Getter::Violation(Violation::Reliability),
        "Time the clocks were held down for board reliability (in s).",
    )
    .scaled(NS_TO_S),
    inst(
        "DCGM_FI_DEV_FB_CAPACITY_BYTES",
        1625,
        "B",
        Getter::Memory(MemKind::Total),
        "Size of the framebuffer (in bytes).",
    )
    .scaled(MIB_TO_BYTES),
    inst(
        "DCGM_FI_DEV_FB_FREE_BYTES",
        1626,
        "B",
        Getter::Memory(MemKind::Free),
        "Framebuffer memory not in use (in bytes).",
    )
    .scaled(MIB_TO_BYTES),
    inst(
        "DCGM_FI_DEV_FB_USED_BYTES",
        1627,
        "B",
        Getter::Memory(MemKind::Used),
        "Framebuffer memory in use (in bytes).",
    )
    .scaled(MIB_TO_BYTES),
    inst(
        "DCGM_FI_DEV_FB_RESERVED_BYTES",
        1628,
        "B",
        Getter::Memory(MemKind::Reserved),
        "Framebuffer memory held back by the driver (in bytes).",
    )
    .scaled(MIB_TO_BYTES),
    dev(
        "DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND",
        1648,
        "B/s",
        Getter::NvmlFieldRate(&[138, 139], Scale::Mul(1024.0)),
        "NVLink traffic sent plus received over all links (in bytes per second).",
    ),
    // ---- dcgm-exporter 4.8.3's cumulative counters (its ids not verified; 9005-9006 ours) ----
    dev(
        "DCGM_EXP_XID_ERRORS_TOTAL",
        9005,
        "count",
        Getter::Total(WindowKind::Xid),
        "Xid errors seen since the exporter started, one series per Xid code.",
    ),
    dev(
        "DCGM_EXP_CLOCK_EVENTS_TOTAL",
        9006,
        "count",
        Getter::Total(WindowKind::ClockEvents),
        "Clock-event reasons that became active since the exporter started, one series per reason.",
    ),
    // ---- gpu-exporter's own id (9105): DCGM gives this name to id 254, whose legacy name
    // serves a percentage here ----
    inst(
        "DCGM_FI_DEV_FB_USED_RATIO",
        9105,
        "ratio",
        Getter::Memory(MemKind::UsedRatio),
        "Share of the framebuffer not reserved by the driver that is in use (0-1).",
    ),
];

#[cfg(test)]
mod tests {
    #[test]
    fn spot_check_ids_against_dcgm_fields_h() {
        for (name, id) in [
            ("DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS", 1420),
            (
                "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN_NS",
                1424,
            ),
            ("DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION", 1523),
            ("DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", 1611),
            // DCGM 4.7.0's field reference.
            ("DCGM_FI_DEV_GPU_UTIL_RATIO", 1613),
            ("DCGM_FI_DEV_MEMORY_UTIL_RATIO", 1614),
            ("DCGM_FI_DEV_DEC_UTIL_RATIO", 1616),
            ("DCGM_FI_DEV_GPU_POWER_THROTTLE_SECONDS_TOTAL", 1617),
            ("DCGM_FI_DEV_GPU_RELIABILITY_THROTTLE_SECONDS_TOTAL", 1622),
            ("DCGM_FI_DEV_FB_CAPACITY_BYTES", 1625),
            ("DCGM_FI_DEV_FB_RESERVED_BYTES", 1628),
            ("DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND", 1648),
        ] {
            assert_eq!(crate::catalogue::by_id(id).map(|f| f.name), Some(name));
        }
    }

    #[test]
    fn base_units_scale_the_legacy_reading() {
        let f = |n: &str| crate::catalogue::lookup(n).expect(n);
        assert_eq!(f("DCGM_FI_DEV_FB_USED_BYTES").convert(2.0), 2_097_152.0);
        assert_eq!(f("DCGM_FI_DEV_GPU_UTIL_RATIO").convert(42.0), 0.42);
        assert_eq!(f("DCGM_FI_DEV_FB_USED_RATIO").convert(0.5), 0.5);
    }
}
