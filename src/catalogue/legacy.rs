//! Other names that resolve to a field of the catalogue ([`all`](super::all)).
//!
//! Three kinds, all accepted by dcgm-exporter 4.8 through go-dcgm's field lookup:
//!
//! - the lowercase names of DCGM 1.x (`dcgm_gpu_temp`), still used by counters files written
//!   for `--use-old-namespace` (dcgm-exporter's `1.x-compatibility-metrics.csv`);
//! - the DCGM 4.6 names (dcgm-exporter 4.9's files) of fields we list, same id, and the four
//!   profiling byte rates dcgm-exporter 4.10 renames (`…_BYTES_PER_SECOND`);
//! - synonyms from `dcgm_fields.h`: a deprecated spelling of a field we list
//!   (`DCGM_FI_DEV_CLOCK_THROTTLE_REASONS`), or the newer spelling of one
//!   (`DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL`, the current name of id 449). Only synonyms that
//!   share the field's numeric id, and so its value and unit, are listed.
//!
//! Only names whose target is in the catalogue appear here; a test checks each target.
//! Lookup is ASCII case-insensitive on the alias.
//!
//! Owns this alias list only: it must not hold fields (a renamed field whose unit changed is
//! a row of its own in `tables`), nor the older names the NVLink, fabric, port-register and
//! NVSwitch tables keep beside their rows.

/// Alias → canonical field name.
pub(super) static ALIASES: &[(&str, &str)] = &[
    // DCGM 1.x lowercase names (go-dcgm's legacy table).
    ("dcgm_sm_clock", "DCGM_FI_DEV_SM_CLOCK"),
    ("dcgm_memory_clock", "DCGM_FI_DEV_MEM_CLOCK"),
    ("dcgm_memory_temp", "DCGM_FI_DEV_MEMORY_TEMP"),
    ("dcgm_gpu_temp", "DCGM_FI_DEV_GPU_TEMP"),
    ("dcgm_power_usage", "DCGM_FI_DEV_POWER_USAGE"),
    (
        "dcgm_total_energy_consumption",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    ),
    ("dcgm_pcie_tx_throughput", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"),
    ("dcgm_pcie_rx_throughput", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT"),
    (
        "dcgm_pcie_replay_counter",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    ),
    ("dcgm_gpu_utilization", "DCGM_FI_DEV_GPU_UTIL"),
    ("dcgm_mem_copy_utilization", "DCGM_FI_DEV_MEM_COPY_UTIL"),
    ("dcgm_enc_utilization", "DCGM_FI_DEV_ENC_UTIL"),
    ("dcgm_dec_utilization", "DCGM_FI_DEV_DEC_UTIL"),
    ("dcgm_xid_errors", "DCGM_FI_DEV_XID_ERRORS"),
    ("dcgm_power_violation", "DCGM_FI_DEV_POWER_VIOLATION"),
    ("dcgm_thermal_violation", "DCGM_FI_DEV_THERMAL_VIOLATION"),
    (
        "dcgm_sync_boost_violation",
        "DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
    ),
    (
        "dcgm_board_limit_violation",
        "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
    ),
    ("dcgm_low_util_violation", "DCGM_FI_DEV_LOW_UTIL_VIOLATION"),
    (
        "dcgm_reliability_violation",
        "DCGM_FI_DEV_RELIABILITY_VIOLATION",
    ),
    ("dcgm_fb_free", "DCGM_FI_DEV_FB_FREE"),
    ("dcgm_fb_used", "DCGM_FI_DEV_FB_USED"),
    (
        "dcgm_ecc_sbe_volatile_total",
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    ),
    (
        "dcgm_ecc_dbe_volatile_total",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    ),
    (
        "dcgm_ecc_sbe_aggregate_total",
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    ),
    (
        "dcgm_ecc_dbe_aggregate_total",
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    ),
    ("dcgm_retired_pages_sbe", "DCGM_FI_DEV_RETIRED_SBE"),
    ("dcgm_retired_pages_dbe", "DCGM_FI_DEV_RETIRED_DBE"),
    ("dcgm_retired_pages_pending", "DCGM_FI_DEV_RETIRED_PENDING"),
    (
        "dcgm_nvlink_flit_crc_error_count_total",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    ),
    (
        "dcgm_nvlink_data_crc_error_count_total",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    ),
    (
        "dcgm_nvlink_replay_error_count_total",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    ),
    (
        "dcgm_nvlink_recovery_error_count_total",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    ),
    (
        "dcgm_nvlink_bandwidth_total",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    ),
    (
        "dcgm_fi_prof_gr_engine_active",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    ),
    ("dcgm_fi_prof_sm_active", "DCGM_FI_PROF_SM_ACTIVE"),
    ("dcgm_fi_prof_sm_occupancy", "DCGM_FI_PROF_SM_OCCUPANCY"),
    (
        "dcgm_fi_prof_pipe_tensor_active",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    ),
    ("dcgm_fi_prof_dram_active", "DCGM_FI_PROF_DRAM_ACTIVE"),
    ("dcgm_fi_prof_pcie_tx_bytes", "DCGM_FI_PROF_PCIE_TX_BYTES"),
    ("dcgm_fi_prof_pcie_rx_bytes", "DCGM_FI_PROF_PCIE_RX_BYTES"),
    // Synonyms from dcgm_fields.h (same numeric id).
    (
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
    ),
    (
        "DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_THROUGHPUT_L0",
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_L0",
    ),
    // DCGM 4.6 names (DCGM's field naming standard), which dcgm-exporter 4.9's counters files
    // use: each keeps the numeric id of the name it replaces, and so its value and unit.
    // DCGM_FI_DEV_GPU_UTIL_RATIO and DCGM_FI_DEV_FB_USED_RATIO are not aliases: their names
    // promise a 0-1 ratio while DCGM 4.6 gives them the percentage ids, so they are fields of
    // their own, served as ratios (tables/since_dcgm_4_6.rs).
    ("DCGM_FI_SYSTEM_DRIVER_VERSION", "DCGM_FI_DRIVER_VERSION"),
    ("DCGM_FI_SYSTEM_NVML_VERSION", "DCGM_FI_NVML_VERSION"),
    ("DCGM_FI_SYSTEM_GPU_QUANTITY", "DCGM_FI_DEV_COUNT"),
    ("DCGM_FI_DEV_GPU_NAME", "DCGM_FI_DEV_NAME"),
    ("DCGM_FI_DEV_GPU_BRAND", "DCGM_FI_DEV_BRAND"),
    ("DCGM_FI_DEV_BOARD_SERIAL", "DCGM_FI_DEV_SERIAL"),
    ("DCGM_FI_DEV_GPU_UUID", "DCGM_FI_DEV_UUID"),
    ("DCGM_FI_DEV_GPU_MINOR_NUMBER", "DCGM_FI_DEV_MINOR_NUMBER"),
    (
        "DCGM_FI_DEV_INFOROM_OEM_VERSION",
        "DCGM_FI_DEV_OEM_INFOROM_VER",
    ),
    ("DCGM_FI_DEV_PCI_BUS_ID", "DCGM_FI_DEV_PCI_BUSID"),
    (
        "DCGM_FI_DEV_INFOROM_ECC_VERSION",
        "DCGM_FI_DEV_ECC_INFOROM_VER",
    ),
    (
        "DCGM_FI_DEV_INFOROM_POWER_VERSION",
        "DCGM_FI_DEV_POWER_INFOROM_VER",
    ),
    (
        "DCGM_FI_DEV_INFOROM_IMAGE_VERSION",
        "DCGM_FI_DEV_INFOROM_IMAGE_VER",
    ),
    ("DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", "DCGM_FI_DEV_MEMORY_TEMP"),
    ("DCGM_FI_DEV_GPU_TEMP_CELSIUS", "DCGM_FI_DEV_GPU_TEMP"),
    (
        "DCGM_FI_DEV_MEMORY_MAX_OP_TEMP_CELSIUS",
        "DCGM_FI_DEV_MEM_MAX_OP_TEMP",
    ),
    (
        "DCGM_FI_DEV_GPU_MAX_OP_TEMP_CELSIUS",
        "DCGM_FI_DEV_GPU_MAX_OP_TEMP",
    ),
    (
        "DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS",
        "DCGM_FI_DEV_SLOWDOWN_TEMP",
    ),
    (
        "DCGM_FI_DEV_GPU_TEMP_SHUTDOWN_CELSIUS",
        "DCGM_FI_DEV_SHUTDOWN_TEMP",
    ),
    (
        "DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS",
        "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    ),
    ("DCGM_FI_DEV_BOARD_POWER_WATTS", "DCGM_FI_DEV_POWER_USAGE"),
    (
        "DCGM_FI_DEV_BOARD_POWER_RAW_WATTS",
        "DCGM_FI_DEV_POWER_USAGE_INSTANT",
    ),
    (
        "DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS",
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
    ),
    (
        "DCGM_FI_DEV_PCIE_REPLAY_TOTAL",
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
    ),
    ("DCGM_FI_DEV_XID_ERROR", "DCGM_FI_DEV_XID_ERRORS"),
    (
        "DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL",
        "DCGM_FI_DEV_RETIRED_SBE",
    ),
    (
        "DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL",
        "DCGM_FI_DEV_RETIRED_DBE",
    ),
    (
        "DCGM_FI_DEV_PAGE_RETIRED_PENDING",
        "DCGM_FI_DEV_RETIRED_PENDING",
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL",
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILED",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
    ),
    (
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
    ),
    (
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
    ),
    (
        "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    ),
    ("DCGM_FI_PROF_SM_UTIL_RATIO", "DCGM_FI_PROF_SM_ACTIVE"),
    (
        "DCGM_FI_PROF_SM_OCCUPANCY_RATIO",
        "DCGM_FI_PROF_SM_OCCUPANCY",
    ),
    (
        "DCGM_FI_PROF_TENSOR_UTIL_RATIO",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    ),
    ("DCGM_FI_PROF_DRAM_UTIL_RATIO", "DCGM_FI_PROF_DRAM_ACTIVE"),
    (
        "DCGM_FI_PROF_FP64_UTIL_RATIO",
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    ),
    (
        "DCGM_FI_PROF_FP32_UTIL_RATIO",
        "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
    ),
    (
        "DCGM_FI_PROF_FP16_UTIL_RATIO",
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
    ),
    // The names dcgm-exporter 4.10 (DCGM 4.8) gives the profiling byte rates. Its release
    // notes say the four are renamed and still in bytes per second; that they keep ids
    // 1009-1012 (renamed in place, as DCGM 4.7 renamed 1001-1008) is our assumption: DCGM
    // 4.8's dcgm_fields.h was not available to check.
    (
        "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND",
        "DCGM_FI_PROF_PCIE_TX_BYTES",
    ),
    (
        "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND",
        "DCGM_FI_PROF_PCIE_RX_BYTES",
    ),
    (
        "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND",
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
    ),
    (
        "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND",
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
    ),
];

/// The canonical name an alias stands for (ASCII case-insensitive), if it is one.
pub(super) fn canonical_name(name: &str) -> Option<&'static str> {
    ALIASES
        .iter()
        .find(|(alias, _)| alias.eq_ignore_ascii_case(name))
        .map(|(_, canonical)| *canonical)
}

#[cfg(test)]
mod tests {
    use super::super::all;
    use super::*;

    #[test]
    fn every_alias_targets_a_known_field() {
        for (alias, canonical) in ALIASES {
            assert!(
                all().any(|f| f.name == *canonical),
                "{alias} points at unknown {canonical}"
            );
        }
    }

    #[test]
    fn aliases_are_unique_and_never_shadow_a_canonical_name() {
        for (i, (a, _)) in ALIASES.iter().enumerate() {
            // Lowercase spellings of canonical names (dcgm_fi_prof_*) are real 1.x names;
            // only an exact copy of a canonical name would be pointless.
            assert!(
                !all().any(|f| f.name == *a),
                "{a} is already a canonical name"
            );
            for (b, _) in &ALIASES[i + 1..] {
                assert!(!a.eq_ignore_ascii_case(b), "duplicate alias {a}");
            }
        }
    }

    #[test]
    fn lookup_ignores_ascii_case() {
        assert_eq!(
            canonical_name("dcgm_sm_clock"),
            Some("DCGM_FI_DEV_SM_CLOCK")
        );
        assert_eq!(
            canonical_name("DCGM_SM_CLOCK"),
            Some("DCGM_FI_DEV_SM_CLOCK")
        );
        assert_eq!(
            canonical_name("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"),
            Some("DCGM_FI_DEV_CLOCKS_EVENT_REASONS")
        );
        assert_eq!(canonical_name("dcgm_nope"), None);
    }

    #[test]
    fn the_go_dcgm_legacy_table_is_complete() {
        // go-dcgm's lowercase legacy names with their DCGM ids; all of them must resolve to
        // the field with that id.
        let expected: &[(&str, u32)] = &[
            ("dcgm_board_limit_violation", 243),
            ("dcgm_dec_utilization", 207),
            ("dcgm_ecc_dbe_aggregate_total", 313),
            ("dcgm_ecc_dbe_volatile_total", 311),
            ("dcgm_ecc_sbe_aggregate_total", 312),
            ("dcgm_ecc_sbe_volatile_total", 310),
            ("dcgm_enc_utilization", 206),
            ("dcgm_fb_free", 251),
            ("dcgm_fb_used", 252),
            ("dcgm_fi_prof_dram_active", 1005),
            ("dcgm_fi_prof_gr_engine_active", 1001),
            ("dcgm_fi_prof_pcie_rx_bytes", 1010),
            ("dcgm_fi_prof_pcie_tx_bytes", 1009),
            ("dcgm_fi_prof_pipe_tensor_active", 1004),
            ("dcgm_fi_prof_sm_active", 1002),
            ("dcgm_fi_prof_sm_occupancy", 1003),
            ("dcgm_gpu_temp", 150),
            ("dcgm_gpu_utilization", 203),
            ("dcgm_low_util_violation", 244),
            ("dcgm_mem_copy_utilization", 204),
            ("dcgm_memory_clock", 101),
            ("dcgm_memory_temp", 140),
            ("dcgm_nvlink_bandwidth_total", 449),
            ("dcgm_nvlink_data_crc_error_count_total", 419),
            ("dcgm_nvlink_flit_crc_error_count_total", 409),
            ("dcgm_nvlink_recovery_error_count_total", 439),
            ("dcgm_nvlink_replay_error_count_total", 429),
            ("dcgm_pcie_replay_counter", 202),
            ("dcgm_pcie_rx_throughput", 201),
            ("dcgm_pcie_tx_throughput", 200),
            ("dcgm_power_usage", 155),
            ("dcgm_power_violation", 240),
            ("dcgm_reliability_violation", 245),
            ("dcgm_retired_pages_dbe", 391),
            ("dcgm_retired_pages_pending", 392),
            ("dcgm_retired_pages_sbe", 390),
            ("dcgm_sm_clock", 100),
            ("dcgm_sync_boost_violation", 242),
            ("dcgm_thermal_violation", 241),
            ("dcgm_total_energy_consumption", 156),
            ("dcgm_xid_errors", 230),
            ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 112),
            ("DCGM_FI_DEV_NVLINK_THROUGHPUT_TOTAL", 449),
            ("DCGM_FI_DEV_NVLINK_THROUGHPUT_L0", 440),
            // DCGM 4.6 names with the ids DCGM gives them.
            ("DCGM_FI_SYSTEM_DRIVER_VERSION", 1),
            ("DCGM_FI_SYSTEM_NVML_VERSION", 2),
            ("DCGM_FI_SYSTEM_GPU_QUANTITY", 4),
            ("DCGM_FI_DEV_GPU_NAME", 50),
            ("DCGM_FI_DEV_GPU_BRAND", 51),
            ("DCGM_FI_DEV_BOARD_SERIAL", 53),
            ("DCGM_FI_DEV_GPU_UUID", 54),
            ("DCGM_FI_DEV_GPU_MINOR_NUMBER", 55),
            ("DCGM_FI_DEV_INFOROM_OEM_VERSION", 56),
            ("DCGM_FI_DEV_PCI_BUS_ID", 57),
            ("DCGM_FI_DEV_INFOROM_ECC_VERSION", 80),
            ("DCGM_FI_DEV_INFOROM_POWER_VERSION", 81),
            ("DCGM_FI_DEV_INFOROM_IMAGE_VERSION", 82),
            ("DCGM_FI_DEV_MEMORY_TEMP_CELSIUS", 140),
            ("DCGM_FI_DEV_GPU_TEMP_CELSIUS", 150),
            ("DCGM_FI_DEV_MEMORY_MAX_OP_TEMP_CELSIUS", 151),
            ("DCGM_FI_DEV_GPU_MAX_OP_TEMP_CELSIUS", 152),
            ("DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS", 158),
            ("DCGM_FI_DEV_GPU_TEMP_SHUTDOWN_CELSIUS", 159),
            ("DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS", 160),
            ("DCGM_FI_DEV_BOARD_POWER_WATTS", 155),
            ("DCGM_FI_DEV_BOARD_POWER_RAW_WATTS", 157),
            ("DCGM_FI_DEV_BOARD_POWER_LIMIT_ENFORCED_WATTS", 164),
            ("DCGM_FI_DEV_PCIE_REPLAY_TOTAL", 202),
            ("DCGM_FI_DEV_XID_ERROR", 230),
            ("DCGM_FI_DEV_PAGE_RETIRED_SBE_TOTAL", 390),
            ("DCGM_FI_DEV_PAGE_RETIRED_DBE_TOTAL", 391),
            ("DCGM_FI_DEV_PAGE_RETIRED_PENDING", 392),
            ("DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL", 393),
            ("DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL", 394),
            ("DCGM_FI_DEV_ROW_REMAP_FAILED", 395),
            ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_TOTAL", 409),
            ("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_TOTAL", 419),
            ("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_TOTAL", 429),
            ("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_TOTAL", 439),
            ("DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", 1001),
            ("DCGM_FI_PROF_SM_UTIL_RATIO", 1002),
            ("DCGM_FI_PROF_SM_OCCUPANCY_RATIO", 1003),
            ("DCGM_FI_PROF_TENSOR_UTIL_RATIO", 1004),
            ("DCGM_FI_PROF_DRAM_UTIL_RATIO", 1005),
            ("DCGM_FI_PROF_FP64_UTIL_RATIO", 1006),
            ("DCGM_FI_PROF_FP32_UTIL_RATIO", 1007),
            ("DCGM_FI_PROF_FP16_UTIL_RATIO", 1008),
            // dcgm-exporter 4.10's names (ids assumed kept; see ALIASES).
            ("DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", 1009),
            ("DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", 1010),
            ("DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND", 1011),
            ("DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND", 1012),
        ];
        assert_eq!(expected.len(), ALIASES.len());
        for (alias, id) in expected {
            assert_eq!(
                super::super::lookup(alias).map(|f| f.id),
                Some(*id),
                "{alias}"
            );
        }
    }
}
