//! DCGM 4.x's health watches (`dcgm_structs.h`, `dcgm_agent.h`, `dcgm_errors.h`): the watch
//! systems and results, the incident and `dcgmHealthResponse_v5` layouts, their version
//! words, the `DCGM_FR_*` error codes the health module reports, and each code's name as
//! dcgm-exporter writes it in its `health_error_code` label.
//!
//! Layouts as a C compiler gives them for DCGM 4.x's headers (checked in the tests). Plain
//! data only: no behaviour, no I/O.

use std::ffi::{c_char, c_uint};

use crate::{dcgmGroupEntityPair_t, make_version};

// Health systems (`dcgmHealthSystems_t`, a bit mask).
pub const DCGM_HEALTH_WATCH_PCIE: c_uint = 0x1;
pub const DCGM_HEALTH_WATCH_NVLINK: c_uint = 0x2;
pub const DCGM_HEALTH_WATCH_PMU: c_uint = 0x4;
pub const DCGM_HEALTH_WATCH_MCU: c_uint = 0x8;
pub const DCGM_HEALTH_WATCH_MEM: c_uint = 0x10;
pub const DCGM_HEALTH_WATCH_SM: c_uint = 0x20;
pub const DCGM_HEALTH_WATCH_INFOROM: c_uint = 0x40;
pub const DCGM_HEALTH_WATCH_THERMAL: c_uint = 0x80;
pub const DCGM_HEALTH_WATCH_POWER: c_uint = 0x100;
pub const DCGM_HEALTH_WATCH_DRIVER: c_uint = 0x200;
pub const DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL: c_uint = 0x400;
pub const DCGM_HEALTH_WATCH_NVSWITCH_FATAL: c_uint = 0x800;
/// Every system; also the `system` of an incident that is not any one system's (a GPU that
/// fell off the bus, an uncontained error).
pub const DCGM_HEALTH_WATCH_ALL: c_uint = 0xffff_ffff;

// Results (`dcgmHealthWatchResults_t`).
pub const DCGM_HEALTH_RESULT_PASS: c_uint = 0;
pub const DCGM_HEALTH_RESULT_WARN: c_uint = 10;
pub const DCGM_HEALTH_RESULT_FAIL: c_uint = 20;

/// `DCGM_GROUP_MAX_ENTITIES_V2` (also `DCGM_HEALTH_WATCH_MAX_INCIDENTS_V2`).
pub const DCGM_GROUP_MAX_ENTITIES_V2: usize = 1024;

/// `dcgmDiagErrorDetail_t`: an error's message and `DCGM_FR_*` code.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmDiagErrorDetail_t {
    pub msg: [c_char; 1024],
    pub code: c_uint,
}

/// `dcgmIncidentInfo_t`: one health incident of one entity.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmIncidentInfo_t {
    /// `dcgmHealthSystems_t`.
    pub system: c_uint,
    /// `dcgmHealthWatchResults_t`.
    pub health: c_uint,
    pub error: dcgmDiagErrorDetail_t,
    pub entityInfo: dcgmGroupEntityPair_t,
}

/// `dcgmHealthResponse_v5`: what `dcgmHealthCheck` fills (about 1 MB).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmHealthResponse_v5 {
    pub version: c_uint,
    pub overallHealth: c_uint,
    pub incidentCount: c_uint,
    pub incidents: [dcgmIncidentInfo_t; DCGM_GROUP_MAX_ENTITIES_V2],
}
/// `dcgmHealthResponse_version5`.
pub const dcgmHealthResponse_version5: c_uint = make_version(size_of::<dcgmHealthResponse_v5>(), 5);

impl crate::Zeroed for dcgmHealthResponse_v5 {}

// The `DCGM_FR_*` codes the simulated health module reports (`dcgm_errors.h`).
pub const DCGM_FR_OK: c_uint = 0;
pub const DCGM_FR_PCI_REPLAY_RATE: c_uint = 3;
pub const DCGM_FR_VOLATILE_DBE_DETECTED: c_uint = 4;
pub const DCGM_FR_PENDING_PAGE_RETIREMENTS: c_uint = 6;
pub const DCGM_FR_CLOCKS_EVENT_THERMAL: c_uint = 10;
pub const DCGM_FR_CLOCKS_EVENT_POWER: c_uint = 12;
pub const DCGM_FR_NVLINK_DOWN: c_uint = 14;
pub const DCGM_FR_NVSWITCH_FATAL_ERROR: c_uint = 15;
pub const DCGM_FR_NVSWITCH_NON_FATAL_ERROR: c_uint = 16;
pub const DCGM_FR_ROW_REMAP_FAILURE: c_uint = 80;
pub const DCGM_FR_UNCONTAINED_ERROR: c_uint = 81;
pub const DCGM_FR_PENDING_ROW_REMAP: c_uint = 85;
pub const DCGM_FR_XID_ERROR: c_uint = 101;
pub const DCGM_FR_SXID_ERROR: c_uint = 109;
pub const DCGM_FR_FALLEN_OFF_BUS: c_uint = 120;

/// Each `DCGM_FR_*` code dcgm-exporter names, with the name it writes (for a code with two
/// names in `dcgm_errors.h`, the older one: `DCGM_FR_CLOCK_THROTTLE_THERMAL` for 10).
const FR_NAMES: &[(c_uint, &str)] = &[
    (0, "DCGM_FR_OK"),
    (1, "DCGM_FR_UNKNOWN"),
    (2, "DCGM_FR_UNRECOGNIZED"),
    (3, "DCGM_FR_PCI_REPLAY_RATE"),
    (4, "DCGM_FR_VOLATILE_DBE_DETECTED"),
    (5, "DCGM_FR_VOLATILE_SBE_DETECTED"),
    (6, "DCGM_FR_PENDING_PAGE_RETIREMENTS"),
    (7, "DCGM_FR_RETIRED_PAGES_LIMIT"),
    (8, "DCGM_FR_RETIRED_PAGES_DBE_LIMIT"),
    (9, "DCGM_FR_CORRUPT_INFOROM"),
    (10, "DCGM_FR_CLOCK_THROTTLE_THERMAL"),
    (11, "DCGM_FR_POWER_UNREADABLE"),
    (12, "DCGM_FR_CLOCK_THROTTLE_POWER"),
    (13, "DCGM_FR_NVLINK_ERROR_THRESHOLD"),
    (14, "DCGM_FR_NVLINK_DOWN"),
    (15, "DCGM_FR_NVSWITCH_FATAL_ERROR"),
    (16, "DCGM_FR_NVSWITCH_NON_FATAL_ERROR"),
    (17, "DCGM_FR_NVSWITCH_DOWN"),
    (18, "DCGM_FR_NO_ACCESS_TO_FILE"),
    (19, "DCGM_FR_NVML_API"),
    (20, "DCGM_FR_DEVICE_COUNT_MISMATCH"),
    (21, "DCGM_FR_BAD_PARAMETER"),
    (22, "DCGM_FR_CANNOT_OPEN_LIB"),
    (23, "DCGM_FR_DENYLISTED_DRIVER"),
    (24, "DCGM_FR_NVML_LIB_BAD"),
    (25, "DCGM_FR_GRAPHICS_PROCESSES"),
    (26, "DCGM_FR_HOSTENGINE_CONN"),
    (27, "DCGM_FR_FIELD_QUERY"),
    (28, "DCGM_FR_BAD_CUDA_ENV"),
    (29, "DCGM_FR_PERSISTENCE_MODE"),
    (30, "DCGM_FR_LOW_BANDWIDTH"),
    (31, "DCGM_FR_HIGH_LATENCY"),
    (32, "DCGM_FR_CANNOT_GET_FIELD_TAG"),
    (33, "DCGM_FR_FIELD_VIOLATION"),
    (34, "DCGM_FR_FIELD_THRESHOLD"),
    (35, "DCGM_FR_FIELD_VIOLATION_DBL"),
    (36, "DCGM_FR_FIELD_THRESHOLD_DBL"),
    (37, "DCGM_FR_UNSUPPORTED_FIELD_TYPE"),
    (38, "DCGM_FR_FIELD_THRESHOLD_TS"),
    (39, "DCGM_FR_FIELD_THRESHOLD_TS_DBL"),
    (40, "DCGM_FR_THERMAL_VIOLATIONS"),
    (41, "DCGM_FR_THERMAL_VIOLATIONS_TS"),
    (42, "DCGM_FR_TEMP_VIOLATION"),
    (43, "DCGM_FR_THROTTLING_VIOLATION"),
    (44, "DCGM_FR_INTERNAL"),
    (45, "DCGM_FR_PCIE_GENERATION"),
    (46, "DCGM_FR_PCIE_WIDTH"),
    (47, "DCGM_FR_ABORTED"),
    (48, "DCGM_FR_TEST_DISABLED"),
    (49, "DCGM_FR_CANNOT_GET_STAT"),
    (50, "DCGM_FR_STRESS_LEVEL"),
    (51, "DCGM_FR_CUDA_API"),
    (52, "DCGM_FR_FAULTY_MEMORY"),
    (53, "DCGM_FR_CANNOT_SET_WATCHES"),
    (54, "DCGM_FR_CUDA_UNBOUND"),
    (55, "DCGM_FR_ECC_DISABLED"),
    (56, "DCGM_FR_MEMORY_ALLOC"),
    (57, "DCGM_FR_CUDA_DBE"),
    (58, "DCGM_FR_MEMORY_MISMATCH"),
    (59, "DCGM_FR_CUDA_DEVICE"),
    (60, "DCGM_FR_ECC_UNSUPPORTED"),
    (61, "DCGM_FR_ECC_PENDING"),
    (62, "DCGM_FR_MEMORY_BANDWIDTH"),
    (63, "DCGM_FR_TARGET_POWER"),
    (64, "DCGM_FR_API_FAIL"),
    (65, "DCGM_FR_API_FAIL_GPU"),
    (66, "DCGM_FR_CUDA_CONTEXT"),
    (67, "DCGM_FR_DCGM_API"),
    (68, "DCGM_FR_CONCURRENT_GPUS"),
    (69, "DCGM_FR_TOO_MANY_ERRORS"),
    (70, "DCGM_FR_NVLINK_CRC_ERROR_THRESHOLD"),
    (71, "DCGM_FR_NVLINK_ERROR_CRITICAL"),
    (72, "DCGM_FR_ENFORCED_POWER_LIMIT"),
    (73, "DCGM_FR_MEMORY_ALLOC_HOST"),
    (74, "DCGM_FR_GPU_OP_MODE"),
    (75, "DCGM_FR_NO_MEMORY_CLOCKS"),
    (76, "DCGM_FR_NO_GRAPHICS_CLOCKS"),
    (77, "DCGM_FR_HAD_TO_RESTORE_STATE"),
    (78, "DCGM_FR_L1TAG_UNSUPPORTED"),
    (79, "DCGM_FR_L1TAG_MISCOMPARE"),
    (80, "DCGM_FR_ROW_REMAP_FAILURE"),
    (81, "DCGM_FR_UNCONTAINED_ERROR"),
    (82, "DCGM_FR_EMPTY_GPU_LIST"),
    (83, "DCGM_FR_DBE_PENDING_PAGE_RETIREMENTS"),
    (84, "DCGM_FR_UNCORRECTABLE_ROW_REMAP"),
    (85, "DCGM_FR_PENDING_ROW_REMAP"),
    (86, "DCGM_FR_BROKEN_P2P_MEMORY_DEVICE"),
    (87, "DCGM_FR_BROKEN_P2P_WRITER_DEVICE"),
    (88, "DCGM_FR_NVSWITCH_NVLINK_DOWN"),
    (89, "DCGM_FR_EUD_BINARY_PERMISSIONS"),
    (90, "DCGM_FR_EUD_NON_ROOT_USER"),
    (91, "DCGM_FR_EUD_SPAWN_FAILURE"),
    (92, "DCGM_FR_EUD_TIMEOUT"),
    (93, "DCGM_FR_EUD_ZOMBIE"),
    (94, "DCGM_FR_EUD_NON_ZERO_EXIT_CODE"),
    (95, "DCGM_FR_EUD_TEST_FAILED"),
    (96, "DCGM_FR_FILE_CREATE_PERMISSIONS"),
    (97, "DCGM_FR_PAUSE_RESUME_FAILED"),
    (98, "DCGM_FR_PCIE_H_REPLAY_VIOLATION"),
    (99, "DCGM_FR_GPU_EXPECTED_NVLINKS_UP"),
    (100, "DCGM_FR_NVSWITCH_EXPECTED_NVLINKS_UP"),
    (101, "DCGM_FR_XID_ERROR"),
    (102, "DCGM_FR_SBE_VIOLATION"),
    (103, "DCGM_FR_DBE_VIOLATION"),
    (104, "DCGM_FR_PCIE_REPLAY_VIOLATION"),
    (105, "DCGM_FR_SBE_THRESHOLD_VIOLATION"),
    (106, "DCGM_FR_DBE_THRESHOLD_VIOLATION"),
    (107, "DCGM_FR_PCIE_REPLAY_THRESHOLD_VIOLATION"),
    (108, "DCGM_FR_CUDA_FM_NOT_INITIALIZED"),
    (109, "DCGM_FR_SXID_ERROR"),
    (110, "DCGM_FR_GFLOPS_THRESHOLD_VIOLATION"),
    (111, "DCGM_FR_NAN_VALUE"),
    (112, "DCGM_FR_FABRIC_MANAGER_TRAINING_ERROR"),
    (113, "DCGM_FR_BROKEN_P2P_PCIE_MEMORY_DEVICE"),
    (114, "DCGM_FR_BROKEN_P2P_PCIE_WRITER_DEVICE"),
    (115, "DCGM_FR_BROKEN_P2P_NVLINK_MEMORY_DEVICE"),
    (116, "DCGM_FR_BROKEN_P2P_NVLINK_WRITER_DEVICE"),
    (117, "DCGM_FR_TEST_SKIPPED"),
    (118, "DCGM_FR_SRAM_THRESHOLD"),
    (119, "DCGM_FR_NVLINK_EFFECTIVE_BER_THRESHOLD"),
    (120, "DCGM_FR_FALLEN_OFF_BUS"),
    (121, "DCGM_FR_NVLINK_SYMBOL_BER_THRESHOLD"),
    (122, "DCGM_FR_IMEX_UNHEALTHY"),
    (123, "DCGM_FR_FABRIC_PROBE_STATE"),
    (124, "DCGM_FR_BINARY_PERMISSIONS"),
    (125, "DCGM_FR_GPU_RECOVERY_RESET"),
    (126, "DCGM_FR_GPU_RECOVERY_REBOOT"),
    (127, "DCGM_FR_GPU_RECOVERY_DRAIN_P2P"),
    (128, "DCGM_FR_GPU_RECOVERY_DRAIN_RESET"),
    (129, "DCGM_FR_NCCL_ERROR"),
    (130, "DCGM_FR_RETEST_REQUESTED"),
    (133, "DCGM_FR_ERROR_SENTINEL"),
];

/// The `health_error_code` label of `code`: its name, or `DCGM_FR_UNKNOWN(<code>)` for a code
/// dcgm-exporter does not name (codes past 999 share one value, keeping the label bounded).
pub fn fr_name(code: c_uint) -> std::borrow::Cow<'static, str> {
    match FR_NAMES.binary_search_by_key(&code, |(c, _)| *c) {
        Ok(i) => std::borrow::Cow::Borrowed(FR_NAMES[i].1),
        Err(_) if code < 1000 => std::borrow::Cow::Owned(format!("DCGM_FR_UNKNOWN({code})")),
        Err(_) => std::borrow::Cow::Borrowed("DCGM_FR_UNKNOWN"),
    }
}

/// The `health_watch` label of a system, as dcgm-exporter writes it; `None` for a value that
/// is not one system (or `ALL`).
pub fn watch_name(system: c_uint) -> Option<&'static str> {
    Some(match system {
        DCGM_HEALTH_WATCH_PCIE => "PCIE",
        DCGM_HEALTH_WATCH_NVLINK => "NVLINK",
        DCGM_HEALTH_WATCH_PMU => "PMU",
        DCGM_HEALTH_WATCH_MCU => "MCU",
        DCGM_HEALTH_WATCH_MEM => "MEM",
        DCGM_HEALTH_WATCH_SM => "SM",
        DCGM_HEALTH_WATCH_INFOROM => "INFOROM",
        DCGM_HEALTH_WATCH_THERMAL => "THERMAL",
        DCGM_HEALTH_WATCH_POWER => "POWER",
        DCGM_HEALTH_WATCH_DRIVER => "DRIVER",
        DCGM_HEALTH_WATCH_NVSWITCH_NONFATAL => "NVSWITCH_NONFATAL",
        DCGM_HEALTH_WATCH_NVSWITCH_FATAL => "NVSWITCH_FATAL",
        DCGM_HEALTH_WATCH_ALL => "ALL",
        _ => return None,
    })
}

/// The watches one GPU's `DCGM_EXP_GPU_HEALTH_STATUS` series cover, in dcgm-exporter's order.
pub const GPU_WATCHES: [c_uint; 11] = [
    DCGM_HEALTH_WATCH_PCIE,
    DCGM_HEALTH_WATCH_NVLINK,
    DCGM_HEALTH_WATCH_PMU,
    DCGM_HEALTH_WATCH_MCU,
    DCGM_HEALTH_WATCH_MEM,
    DCGM_HEALTH_WATCH_SM,
    DCGM_HEALTH_WATCH_INFOROM,
    DCGM_HEALTH_WATCH_THERMAL,
    DCGM_HEALTH_WATCH_POWER,
    DCGM_HEALTH_WATCH_DRIVER,
    DCGM_HEALTH_WATCH_ALL,
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// Sizes, offsets and the version word as gcc lays out DCGM 4.x's `dcgm_structs.h` on
    /// 64-bit Linux (`sizeof`/`offsetof`).
    #[test]
    fn health_layouts_match_dcgm_headers() {
        assert_eq!(size_of::<dcgmDiagErrorDetail_t>(), 1028);
        assert_eq!(offset_of!(dcgmDiagErrorDetail_t, code), 1024);
        assert_eq!(size_of::<dcgmIncidentInfo_t>(), 1044);
        assert_eq!(offset_of!(dcgmIncidentInfo_t, health), 4);
        assert_eq!(offset_of!(dcgmIncidentInfo_t, error), 8);
        assert_eq!(offset_of!(dcgmIncidentInfo_t, entityInfo), 1036);
        assert_eq!(size_of::<dcgmHealthResponse_v5>(), 1_069_068);
        assert_eq!(offset_of!(dcgmHealthResponse_v5, overallHealth), 4);
        assert_eq!(offset_of!(dcgmHealthResponse_v5, incidentCount), 8);
        assert_eq!(offset_of!(dcgmHealthResponse_v5, incidents), 12);
        assert_eq!(dcgmHealthResponse_version5, 0x0510_500c);
    }

    #[test]
    fn error_codes_are_named_as_dcgm_exporter_names_them() {
        assert!(
            FR_NAMES.windows(2).all(|w| w[0].0 < w[1].0),
            "sorted, unique"
        );
        assert_eq!(fr_name(DCGM_FR_OK), "DCGM_FR_OK");
        assert_eq!(fr_name(DCGM_FR_XID_ERROR), "DCGM_FR_XID_ERROR");
        assert_eq!(
            fr_name(DCGM_FR_CLOCKS_EVENT_THERMAL),
            "DCGM_FR_CLOCK_THROTTLE_THERMAL"
        );
        assert_eq!(fr_name(DCGM_FR_FALLEN_OFF_BUS), "DCGM_FR_FALLEN_OFF_BUS");
        assert_eq!(fr_name(131), "DCGM_FR_UNKNOWN(131)");
        assert_eq!(fr_name(70_000), "DCGM_FR_UNKNOWN");
        assert_eq!(watch_name(DCGM_HEALTH_WATCH_ALL), Some("ALL"));
        assert_eq!(watch_name(0x3), None);
    }
}
