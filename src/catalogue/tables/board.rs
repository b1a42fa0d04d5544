//! Board fields: the BAR1 aperture, application and maximum clocks, temperature thresholds,
//! the requested power limit and fan speed, in DCGM's legacy units (ids 90–191) and as DCGM
//! 4.6's base-unit twins (1600–1612), which dcgm-exporter users' own counters files name.
//!
//! Owns these rows, ordered by DCGM id. Ids are DCGM's (`dcgm_fields.h`, checked against
//! go-dcgm's `const_fields.go`). Data only: it must not call NVML or read files. Base-unit
//! twins of fields that are not board fields belong in `since_dcgm_4_6`.

use super::super::field::{
    ClockKind, FieldDef, Getter, MemKind, Scale, TEMP_THRESHOLD_GPU_MAX, TEMP_THRESHOLD_MEM_MAX,
    TEMP_THRESHOLD_SHUTDOWN, TEMP_THRESHOLD_SLOWDOWN, dev,
};

/// MHz → Hz.
const MHZ_TO_HZ: Scale = Scale::Mul(1e6);
/// Bytes (how NVML reports BAR1) → MiB (DCGM's legacy BAR1 unit).
const BYTES_TO_MIB: Scale = Scale::Mul(1.0 / 1_048_576.0);

/// Every field of this table, ordered by id.
pub static BOARD: &[FieldDef] = &[
    // ---- BAR1 (90-93), in MiB as DCGM reports it ----
    dev(
        "DCGM_FI_DEV_BAR1_TOTAL",
        90,
        "MiB",
        Getter::Bar1(MemKind::Total),
        "Size of the BAR1 aperture (in MiB).",
    )
    .scaled(BYTES_TO_MIB),
    dev(
        "DCGM_FI_DEV_BAR1_USED",
        92,
        "MiB",
        Getter::Bar1(MemKind::Used),
        "BAR1 aperture in use (in MiB).",
    )
    .scaled(BYTES_TO_MIB),
    dev(
        "DCGM_FI_DEV_BAR1_FREE",
        93,
        "MiB",
        Getter::Bar1(MemKind::Free),
        "BAR1 aperture not in use (in MiB).",
    )
    .scaled(BYTES_TO_MIB),
    // ---- Application and maximum clocks (110-115), MHz ----
    dev(
        "DCGM_FI_DEV_APP_SM_CLOCK",
        110,
        "MHz",
        Getter::AppClock(ClockKind::Sm),
        "Application clock of the streaming multiprocessors (in MHz).",
    ),
    dev(
        "DCGM_FI_DEV_APP_MEM_CLOCK",
        111,
        "MHz",
        Getter::AppClock(ClockKind::Mem),
        "Application clock of the memory (in MHz).",
    ),
    dev(
        "DCGM_FI_DEV_MAX_SM_CLOCK",
        113,
        "MHz",
        Getter::MaxClock(ClockKind::Sm),
        "Highest streaming-multiprocessor clock the GPU supports (in MHz).",
    ),
    dev(
        "DCGM_FI_DEV_MAX_MEM_CLOCK",
        114,
        "MHz",
        Getter::MaxClock(ClockKind::Mem),
        "Highest memory clock the GPU supports (in MHz).",
    ),
    dev(
        "DCGM_FI_DEV_MAX_VIDEO_CLOCK",
        115,
        "MHz",
        Getter::MaxClock(ClockKind::Video),
        "Highest video encoder/decoder clock the GPU supports (in MHz).",
    ),
    // ---- Temperature thresholds (151-159), C, and the requested power limit (160), W ----
    dev(
        "DCGM_FI_DEV_MEM_MAX_OP_TEMP",
        151,
        "C",
        Getter::TempThreshold(TEMP_THRESHOLD_MEM_MAX),
        "Memory temperature above which the GPU slows down (in C).",
    ),
    dev(
        "DCGM_FI_DEV_GPU_MAX_OP_TEMP",
        152,
        "C",
        Getter::TempThreshold(TEMP_THRESHOLD_GPU_MAX),
        "GPU temperature above which clocks may fall below base (in C).",
    ),
    dev(
        "DCGM_FI_DEV_SLOWDOWN_TEMP",
        158,
        "C",
        Getter::TempThreshold(TEMP_THRESHOLD_SLOWDOWN),
        "GPU temperature at which hardware slowdown starts (in C).",
    ),
    dev(
        "DCGM_FI_DEV_SHUTDOWN_TEMP",
        159,
        "C",
        Getter::TempThreshold(TEMP_THRESHOLD_SHUTDOWN),
        "GPU temperature at which the GPU shuts down to protect itself (in C).",
    ),
    dev(
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
        160,
        "W",
        Getter::PowerMgmtLimit,
        "Power limit requested for the board, before other limiters apply (in W).",
    ),
    // ---- Fan (191), percent of its maximum speed ----
    dev(
        "DCGM_FI_DEV_FAN_SPEED",
        191,
        "%",
        Getter::FanSpeed,
        "Speed of the first fan, as a share of its maximum (in %).",
    ),
    // ---- DCGM 4.6 base-unit twins (1600-1612) ----
    dev(
        "DCGM_FI_DEV_BAR1_CAPACITY_BYTES",
        1600,
        "B",
        Getter::Bar1(MemKind::Total),
        "Size of the BAR1 aperture (in bytes).",
    ),
    dev(
        "DCGM_FI_DEV_BAR1_USED_BYTES",
        1601,
        "B",
        Getter::Bar1(MemKind::Used),
        "BAR1 aperture in use (in bytes).",
    ),
    dev(
        "DCGM_FI_DEV_BAR1_FREE_BYTES",
        1602,
        "B",
        Getter::Bar1(MemKind::Free),
        "BAR1 aperture not in use (in bytes).",
    ),
    dev(
        "DCGM_FI_DEV_SM_APP_CLOCK_HERTZ",
        1606,
        "Hz",
        Getter::AppClock(ClockKind::Sm),
        "Application clock of the streaming multiprocessors (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_MEMORY_APP_CLOCK_HERTZ",
        1607,
        "Hz",
        Getter::AppClock(ClockKind::Mem),
        "Application clock of the memory (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_SM_MAX_CLOCK_HERTZ",
        1608,
        "Hz",
        Getter::MaxClock(ClockKind::Sm),
        "Highest streaming-multiprocessor clock the GPU supports (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_MEMORY_MAX_CLOCK_HERTZ",
        1609,
        "Hz",
        Getter::MaxClock(ClockKind::Mem),
        "Highest memory clock the GPU supports (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_VIDEO_MAX_CLOCK_HERTZ",
        1610,
        "Hz",
        Getter::MaxClock(ClockKind::Video),
        "Highest video encoder/decoder clock the GPU supports (in Hz).",
    )
    .scaled(MHZ_TO_HZ),
    dev(
        "DCGM_FI_DEV_FAN_SPEED_RATIO",
        1612,
        "ratio",
        Getter::FanSpeed,
        "Speed of the first fan, as a share of its maximum (0-1).",
    )
    .scaled(Scale::Mul(0.01)),
];

#[cfg(test)]
mod tests {
    #[test]
    fn spot_check_ids_against_dcgm_fields_h() {
        for (name, id) in [
            ("DCGM_FI_DEV_BAR1_TOTAL", 90),
            ("DCGM_FI_DEV_APP_SM_CLOCK", 110),
            ("DCGM_FI_DEV_MAX_VIDEO_CLOCK", 115),
            ("DCGM_FI_DEV_MEM_MAX_OP_TEMP", 151),
            ("DCGM_FI_DEV_GPU_MAX_OP_TEMP", 152),
            ("DCGM_FI_DEV_SLOWDOWN_TEMP", 158),
            ("DCGM_FI_DEV_SHUTDOWN_TEMP", 159),
            ("DCGM_FI_DEV_POWER_MGMT_LIMIT", 160),
            ("DCGM_FI_DEV_FAN_SPEED", 191),
            ("DCGM_FI_DEV_BAR1_CAPACITY_BYTES", 1600),
            ("DCGM_FI_DEV_MEMORY_APP_CLOCK_HERTZ", 1607),
            ("DCGM_FI_DEV_SM_MAX_CLOCK_HERTZ", 1608),
            ("DCGM_FI_DEV_FAN_SPEED_RATIO", 1612),
        ] {
            assert_eq!(crate::catalogue::by_id(id).map(|f| f.name), Some(name));
        }
    }

    #[test]
    fn base_units_scale_the_legacy_reading() {
        let f = |n: &str| crate::catalogue::lookup(n).expect(n);
        assert_eq!(f("DCGM_FI_DEV_SM_MAX_CLOCK_HERTZ").convert(1980.0), 1.98e9);
        assert_eq!(f("DCGM_FI_DEV_BAR1_TOTAL").convert(268_435_456.0), 256.0);
        assert_eq!(f("DCGM_FI_DEV_FAN_SPEED_RATIO").convert(40.0), 0.4);
    }
}
