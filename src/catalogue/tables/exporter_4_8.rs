//! The fields dcgm-exporter 4.8's shipped counters files name (active or commented out), by
//! their pre-4.6 DCGM names: identity and versions, clocks, temperature and power, PCIe and
//! utilization, errors and throttling, framebuffer, ECC and row remapping, NVLink totals, vGPU
//! and profiling; a few identity fields the exporter reads for its own labels; and
//! dcgm-exporter's four computed `DCGM_EXP_*` fields (9001–9004).
//!
//! Owns these rows, ordered by DCGM id. Names and ids are DCGM's (`dcgm_fields.h`); the
//! `DCGM_EXP_*` ids are the ones dcgm-exporter assigns. Help texts are ours; a counters CSV
//! may override them. Data only: it must not call NVML or read files. Board fields (BAR1,
//! application and maximum clocks, thresholds, fan) belong in `board`, fields DCGM added in
//! 4.6 and later in `since_dcgm_4_6`, NVLink fields that name a link in `nvlink_by_link`.

use super::super::field::{
    ClockKind, FieldDef, Getter, MemKind, Scale, TextKind, UtilKind, Violation, WindowKind, dev,
    inst,
};

/// GPM percentages become 0–1 ratios, like DCGM's profiling fields.
const PERCENT_TO_RATIO: Scale = Scale::Mul(0.01);
/// GPM bandwidth metrics are MiB/s; DCGM's byte fields are bytes per second.
const MIB_TO_BYTES: Scale = Scale::Mul(1_048_576.0);

/// The fields of dcgm-exporter 4.8's shipped counters files, ordered by DCGM id.
pub static EXPORTER_4_8: &[FieldDef] = &[
    // ---- System and identity (1–85) ----
    dev(
        "DCGM_FI_DRIVER_VERSION",
        1,
        "",
        Getter::Text(TextKind::DriverVersion),
        "Version string of the installed NVIDIA kernel driver.",
    ),
    dev(
        "DCGM_FI_NVML_VERSION",
        2,
        "",
        Getter::Text(TextKind::NvmlVersion),
        "Version string of the NVML library the exporter talks to.",
    ),
    dev(
        "DCGM_FI_DEV_COUNT",
        4,
        "",
        Getter::DeviceCount,
        "How many GPUs NVML can see on this node.",
    ),
    dev(
        "DCGM_FI_DEV_NAME",
        50,
        "",
        Getter::Text(TextKind::Name),
        "Product name of the GPU.",
    ),
    dev(
        "DCGM_FI_DEV_BRAND",
        51,
        "",
        Getter::Text(TextKind::Brand),
        "Brand family of the GPU (for example Tesla or Quadro).",
    ),
    dev(
        "DCGM_FI_DEV_NVML_INDEX",
        52,
        "",
        Getter::NvmlIndex,
        "Index NVML uses for this GPU.",
    ),
    dev(
        "DCGM_FI_DEV_SERIAL",
        53,
        "",
        Getter::Text(TextKind::Serial),
        "Board serial number.",
    ),
    dev(
        "DCGM_FI_DEV_UUID",
        54,
        "",
        Getter::Text(TextKind::Uuid),
        "Globally unique identifier of the GPU (GPU-...).",
    ),
    dev(
        "DCGM_FI_DEV_MINOR_NUMBER",
        55,
        "",
        Getter::MinorNumber,
        "Minor number of the GPU's /dev/nvidiaN device node.",
    ),
    dev(
        "DCGM_FI_DEV_OEM_INFOROM_VER",
        56,
        "",
        Getter::Text(TextKind::InforomOem),
        "Version of the OEM object in the GPU's InfoROM.",
    ),
    dev(
        "DCGM_FI_DEV_PCI_BUSID",
        57,
        "",
        Getter::Text(TextKind::PciBusId),
        "PCI bus address of the GPU (domain:bus:device.function).",
    ),
    dev(
        "DCGM_FI_DEV_ECC_INFOROM_VER",
        80,
        "",
        Getter::Text(TextKind::InforomEcc),
        "Version of the ECC object in the GPU's InfoROM.",
    ),
    dev(
        "DCGM_FI_DEV_POWER_INFOROM_VER",
        81,
        "",
        Getter::Text(TextKind::InforomPower),
        "Version of the power-management object in the GPU's InfoROM.",
    ),
    dev(
        "DCGM_FI_DEV_INFOROM_IMAGE_VER",
        82,
        "",
        Getter::Text(TextKind::InforomImage),
        "Version of the whole InfoROM image.",
    ),
    dev(
        "DCGM_FI_DEV_VBIOS_VERSION",
        85,
        "",
        Getter::Text(TextKind::VbiosVersion),
        "Version of the video BIOS flashed on the board.",
    ),
    // ---- Clocks (100–112) ----
    dev(
        "DCGM_FI_DEV_SM_CLOCK",
        100,
        "MHz",
        Getter::Clock(ClockKind::Sm),
        "Current streaming-multiprocessor clock (in MHz).",
    ),
    dev(
        "DCGM_FI_DEV_MEM_CLOCK",
        101,
        "MHz",
        Getter::Clock(ClockKind::Mem),
        "Current memory clock (in MHz).",
    ),
    dev(
        "DCGM_FI_DEV_VIDEO_CLOCK",
        102,
        "MHz",
        Getter::Clock(ClockKind::Video),
        "Current video encoder/decoder clock (in MHz).",
    ),
    dev(
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        112,
        "bitmask",
        Getter::ClockEventReasons,
        "Bitmask of the reasons currently holding the clocks down (idle, power cap, thermal, ...).",
    ),
    // ---- Temperature and power (140–164) ----
    dev(
        "DCGM_FI_DEV_MEMORY_TEMP",
        140,
        "C",
        Getter::NvmlField(82, Scale::Identity),
        "Temperature of the GPU memory (in C).",
    ),
    dev(
        "DCGM_FI_DEV_GPU_TEMP",
        150,
        "C",
        Getter::GpuTemperature,
        "Temperature of the GPU die (in C).",
    ),
    dev(
        "DCGM_FI_DEV_POWER_USAGE",
        155,
        "W",
        Getter::PowerUsage,
        "Power the board is drawing, averaged by the driver (in W).",
    ),
    dev(
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        156,
        "mJ",
        Getter::TotalEnergy,
        "Energy the GPU has used since the driver was loaded (in mJ).",
    ),
    dev(
        "DCGM_FI_DEV_POWER_USAGE_INSTANT",
        157,
        "W",
        Getter::NvmlField(186, Scale::Mul(0.001)),
        "Power the board is drawing right now, without averaging (in W).",
    ),
    dev(
        "DCGM_FI_DEV_ENFORCED_POWER_LIMIT",
        164,
        "W",
        Getter::PowerLimit,
        "Power limit the driver enforces after every limiter is applied (in W).",
    ),
    // ---- PCIe and utilization (200–207) ----
    dev(
        "DCGM_FI_DEV_PCIE_TX_THROUGHPUT",
        200,
        "KB/s",
        Getter::PcieThroughput(true),
        "Data the GPU is sending over PCIe, sampled by NVML (in KB/s).",
    ),
    dev(
        "DCGM_FI_DEV_PCIE_RX_THROUGHPUT",
        201,
        "KB/s",
        Getter::PcieThroughput(false),
        "Data the GPU is receiving over PCIe, sampled by NVML (in KB/s).",
    ),
    dev(
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        202,
        "count",
        Getter::PcieReplay,
        "PCIe packets the link had to resend since the driver was loaded.",
    ),
    dev(
        "DCGM_FI_DEV_GPU_UTIL",
        203,
        "%",
        Getter::Utilization(UtilKind::Gpu),
        "Share of the last sample period in which a kernel was running (in %).",
    ),
    dev(
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        204,
        "%",
        Getter::Utilization(UtilKind::MemCopy),
        "Share of the last sample period in which device memory was being read or written (in %).",
    ),
    dev(
        "DCGM_FI_DEV_ENC_UTIL",
        206,
        "%",
        Getter::Utilization(UtilKind::Encoder),
        "Busy share of the video encoder (in %).",
    ),
    dev(
        "DCGM_FI_DEV_DEC_UTIL",
        207,
        "%",
        Getter::Utilization(UtilKind::Decoder),
        "Busy share of the video decoder (in %).",
    ),
    // ---- Errors and throttling (230–245) ----
    dev(
        "DCGM_FI_DEV_XID_ERRORS",
        230,
        "",
        Getter::Xid,
        "Code of the most recent Xid error the driver reported for this GPU.",
    ),
    dev(
        "DCGM_FI_DEV_POWER_VIOLATION",
        240,
        "ns",
        Getter::Violation(Violation::Power),
        "Time the clocks were held down by the power limit (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_THERMAL_VIOLATION",
        241,
        "ns",
        Getter::Violation(Violation::Thermal),
        "Time the clocks were held down by temperature (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_SYNC_BOOST_VIOLATION",
        242,
        "ns",
        Getter::Violation(Violation::SyncBoost),
        "Time the clocks were held down to match a sync-boost group (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_BOARD_LIMIT_VIOLATION",
        243,
        "ns",
        Getter::Violation(Violation::BoardLimit),
        "Time the clocks were held down by a board limit (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_LOW_UTIL_VIOLATION",
        244,
        "ns",
        Getter::Violation(Violation::LowUtil),
        "Time the clocks were lowered because the GPU was lightly used (in ns).",
    ),
    dev(
        "DCGM_FI_DEV_RELIABILITY_VIOLATION",
        245,
        "ns",
        Getter::Violation(Violation::Reliability),
        "Time the clocks were held down for board reliability (in ns).",
    ),
    // ---- Framebuffer (250–254) ----
    inst(
        "DCGM_FI_DEV_FB_TOTAL",
        250,
        "MiB",
        Getter::Memory(MemKind::Total),
        "Size of the framebuffer (in MiB).",
    ),
    inst(
        "DCGM_FI_DEV_FB_FREE",
        251,
        "MiB",
        Getter::Memory(MemKind::Free),
        "Framebuffer memory not in use (in MiB).",
    ),
    inst(
        "DCGM_FI_DEV_FB_USED",
        252,
        "MiB",
        Getter::Memory(MemKind::Used),
        "Framebuffer memory in use (in MiB).",
    ),
    inst(
        "DCGM_FI_DEV_FB_RESERVED",
        253,
        "MiB",
        Getter::Memory(MemKind::Reserved),
        "Framebuffer memory set aside by the driver and firmware (in MiB).",
    ),
    inst(
        "DCGM_FI_DEV_FB_USED_PERCENT",
        254,
        "%",
        Getter::Memory(MemKind::UsedPercent),
        "Framebuffer memory in use as a share of the total (in %).",
    ),
    // ---- ECC, retired pages and row remapping (310–396) ----
    dev(
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        310,
        "count",
        Getter::NvmlField(3, Scale::Identity),
        "Corrected single-bit ECC errors since the driver was loaded.",
    ),
    dev(
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        311,
        "count",
        Getter::NvmlField(4, Scale::Identity),
        "Uncorrectable double-bit ECC errors since the driver was loaded.",
    ),
    dev(
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        312,
        "count",
        Getter::NvmlField(5, Scale::Identity),
        "Corrected single-bit ECC errors over the life of the board.",
    ),
    dev(
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        313,
        "count",
        Getter::NvmlField(6, Scale::Identity),
        "Uncorrectable double-bit ECC errors over the life of the board.",
    ),
    dev(
        "DCGM_FI_DEV_RETIRED_SBE",
        390,
        "pages",
        Getter::NvmlField(29, Scale::Identity),
        "Memory pages taken out of service after repeated single-bit errors.",
    ),
    dev(
        "DCGM_FI_DEV_RETIRED_DBE",
        391,
        "pages",
        Getter::NvmlField(30, Scale::Identity),
        "Memory pages taken out of service after a double-bit error.",
    ),
    dev(
        "DCGM_FI_DEV_RETIRED_PENDING",
        392,
        "pages",
        Getter::NvmlField(31, Scale::Identity),
        "Memory pages waiting to be retired at the next driver reload.",
    ),
    dev(
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        393,
        "rows",
        Getter::NvmlField(143, Scale::Identity),
        "Memory rows replaced by spares because of uncorrectable errors.",
    ),
    dev(
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        394,
        "rows",
        Getter::NvmlField(142, Scale::Identity),
        "Memory rows replaced by spares because of correctable errors.",
    ),
    dev(
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        395,
        "bool",
        Getter::NvmlField(145, Scale::Identity),
        "1 when a memory row could not be remapped, otherwise 0.",
    ),
    dev(
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        396,
        "bool",
        Getter::NvmlField(144, Scale::Identity),
        "1 when a row remap waits for a GPU reset, otherwise 0.",
    ),
    // ---- NVLink (409–449) ----
    dev(
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        409,
        "count",
        Getter::NvmlField(38, Scale::Identity),
        "NVLink flow-control CRC errors, summed over all links.",
    ),
    dev(
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        419,
        "count",
        Getter::NvmlField(45, Scale::Identity),
        "NVLink data CRC errors, summed over all links.",
    ),
    dev(
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        429,
        "count",
        Getter::NvmlField(52, Scale::Identity),
        "NVLink transmissions that had to be replayed, summed over all links.",
    ),
    dev(
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        439,
        "count",
        Getter::NvmlField(59, Scale::Identity),
        "NVLink link-recovery events, summed over all links.",
    ),
    dev(
        "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL",
        449,
        "MiB/s",
        Getter::NvmlFieldRate(&[138, 139], Scale::Mul(1.0 / 1024.0)),
        "NVLink traffic sent plus received over all links (in MiB/s).",
    ),
    // ---- vGPU (526) ----
    dev(
        "DCGM_FI_DEV_VGPU_LICENSE_STATUS",
        526,
        "",
        Getter::VgpuLicence,
        "Licence state of a vGPU (1 licensed, 0 not; 0 outside a vGPU guest).",
    ),
    // ---- Profiling (1001–1012), read through NVML GPM ----
    inst(
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        1001,
        "ratio",
        Getter::Gpm(1, PERCENT_TO_RATIO),
        "Share of time the graphics or compute engine was busy (0 to 1).",
    ),
    inst(
        "DCGM_FI_PROF_SM_ACTIVE",
        1002,
        "ratio",
        Getter::Gpm(2, PERCENT_TO_RATIO),
        "Share of SM cycles with at least one warp resident, averaged over all SMs (0 to 1).",
    ),
    inst(
        "DCGM_FI_PROF_SM_OCCUPANCY",
        1003,
        "ratio",
        Getter::Gpm(3, PERCENT_TO_RATIO),
        "Resident warps as a share of the most an SM can hold, averaged over all SMs (0 to 1).",
    ),
    inst(
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        1004,
        "ratio",
        Getter::Gpm(5, PERCENT_TO_RATIO),
        "Share of cycles the tensor-core pipes were busy (0 to 1).",
    ),
    inst(
        "DCGM_FI_PROF_DRAM_ACTIVE",
        1005,
        "ratio",
        Getter::Gpm(10, PERCENT_TO_RATIO),
        "Share of cycles the device-memory interface was moving data (0 to 1).",
    ),
    inst(
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
        1006,
        "ratio",
        Getter::Gpm(11, PERCENT_TO_RATIO),
        "Share of cycles the double-precision pipe was busy (0 to 1).",
    ),
    inst(
        "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
        1007,
        "ratio",
        Getter::Gpm(12, PERCENT_TO_RATIO),
        "Share of cycles the single-precision pipe was busy (0 to 1).",
    ),
    inst(
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
        1008,
        "ratio",
        Getter::Gpm(13, PERCENT_TO_RATIO),
        "Share of cycles the half-precision pipe was busy (0 to 1).",
    ),
    inst(
        "DCGM_FI_PROF_PCIE_TX_BYTES",
        1009,
        "B/s",
        Getter::Gpm(20, MIB_TO_BYTES),
        "PCIe traffic sent by the GPU, headers included (in bytes per second).",
    ),
    inst(
        "DCGM_FI_PROF_PCIE_RX_BYTES",
        1010,
        "B/s",
        Getter::Gpm(21, MIB_TO_BYTES),
        "PCIe traffic received by the GPU, headers included (in bytes per second).",
    ),
    inst(
        "DCGM_FI_PROF_NVLINK_TX_BYTES",
        1011,
        "B/s",
        Getter::Gpm(61, MIB_TO_BYTES),
        "NVLink traffic sent by the GPU, headers included (in bytes per second).",
    ),
    inst(
        "DCGM_FI_PROF_NVLINK_RX_BYTES",
        1012,
        "B/s",
        Getter::Gpm(60, MIB_TO_BYTES),
        "NVLink traffic received by the GPU, headers included (in bytes per second).",
    ),
    // ---- dcgm-exporter's computed fields (9001–9004) ----
    dev(
        "DCGM_EXP_XID_ERRORS_COUNT",
        9001,
        "count",
        Getter::Window(WindowKind::Xid),
        "Xid errors seen in the recent window, one series per Xid code.",
    ),
    dev(
        "DCGM_EXP_CLOCK_EVENTS_COUNT",
        9002,
        "count",
        Getter::Window(WindowKind::ClockEvents),
        "Clock-event reasons seen in the recent window, one series per reason.",
    ),
    dev(
        "DCGM_EXP_GPU_HEALTH_STATUS",
        9003,
        "enum",
        Getter::DcgmHealth,
        "Result of DCGM's health checks per subsystem (0 pass, 10 warn, 20 fail).",
    ),
    dev(
        "DCGM_EXP_P2P_STATUS",
        9004,
        "enum",
        Getter::Unavailable(
            "the per-pair NVLink P2P status comes from DCGM's topology API, which gpu-exporter does not read",
        ),
        "Peer-to-peer NVLink status towards each other GPU.",
    ),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::Level;

    #[test]
    fn exporter_fields_use_dcgm_exporter_ids() {
        for (name, id) in [
            ("DCGM_EXP_XID_ERRORS_COUNT", 9001),
            ("DCGM_EXP_CLOCK_EVENTS_COUNT", 9002),
            ("DCGM_EXP_GPU_HEALTH_STATUS", 9003),
            ("DCGM_EXP_P2P_STATUS", 9004),
        ] {
            assert_eq!(
                crate::catalogue::lookup(name).map(|f| f.id),
                Some(id),
                "{name}"
            );
        }
    }

    #[test]
    fn spot_check_ids_against_dcgm_fields_h() {
        for (name, id) in [
            ("DCGM_FI_DEV_VBIOS_VERSION", 85),
            ("DCGM_FI_DEV_ECC_INFOROM_VER", 80),
            ("DCGM_FI_DEV_INFOROM_IMAGE_VER", 82),
            ("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 112),
            ("DCGM_FI_DEV_ROW_REMAP_FAILURE", 395),
            ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", 449),
            ("DCGM_FI_DEV_VGPU_LICENSE_STATUS", 526),
            ("DCGM_FI_PROF_NVLINK_RX_BYTES", 1012),
        ] {
            assert_eq!(crate::catalogue::by_id(id).map(|f| f.name), Some(name));
        }
    }

    #[test]
    fn profiling_and_framebuffer_are_instance_level() {
        for f in EXPORTER_4_8 {
            let instance =
                f.name.starts_with("DCGM_FI_PROF_") || f.name.starts_with("DCGM_FI_DEV_FB_");
            assert_eq!(f.level == Level::Instance, instance, "{}", f.name);
        }
    }
}
