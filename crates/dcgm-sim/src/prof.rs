//! Profiling: which `DCGM_FI_PROF_*` fields each GPU architecture serves, in which metric
//! groups (major id, minor id) DCGM's profiling module puts them, and their values, taken from
//! the NVML simulator's physics (`physics::rates`, the same per-entity block NVML's GPM reads).
//!
//! Owns the tables and the value mapping only: no state, no clock, no C types.

use nvml_sim::model::Model;
use nvml_sim::physics::{self, GPM_CHANNELS, MIB};
use nvml_sim::scenario::Scenario;

// NVML architecture numbers (`nvmlDeviceArchitecture_t`), as the model table stores them.
const ARCH_VOLTA: u32 = 5;
const ARCH_TURING: u32 = 6;
const ARCH_AMPERE: u32 = 7;
const ARCH_ADA: u32 = 8;
const ARCH_HOPPER: u32 = 9;
const ARCH_BLACKWELL: u32 = 10;

pub const GR_ENGINE_ACTIVE: u16 = 1001;
pub const SM_ACTIVE: u16 = 1002;
pub const SM_OCCUPANCY: u16 = 1003;
pub const PIPE_TENSOR_ACTIVE: u16 = 1004;
pub const DRAM_ACTIVE: u16 = 1005;
pub const PIPE_FP64_ACTIVE: u16 = 1006;
pub const PIPE_FP32_ACTIVE: u16 = 1007;
pub const PIPE_FP16_ACTIVE: u16 = 1008;
pub const PCIE_TX_BYTES: u16 = 1009;
pub const PCIE_RX_BYTES: u16 = 1010;
pub const NVLINK_TX_BYTES: u16 = 1011;
pub const NVLINK_RX_BYTES: u16 = 1012;

/// Whether a field id is a profiling field (DCGM's profiling range).
pub fn is_prof(field: u16) -> bool {
    (1001..1100).contains(&field)
}

/// One metric group: fields in groups with the same major id and different minor ids cannot
/// be collected in one pass.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MetricGroup {
    pub major: u16,
    pub minor: u16,
    pub fields: Vec<u16>,
}

const A: u16 = 0;
const B: u16 = 1;
const C: u16 = 2;
const D: u16 = 3;
const E: u16 = 4;

/// Data-centre chips with NVLink and full-rate FP64 (V100, A100, A30, H100, H200, B200): the
/// grouping `dcgmi profile --list` prints on an A100 (A.1 SM, occupancy, tensor, FP32; A.2
/// FP64; A.3 FP16; B.0 DRAM; C.0 PCIe; D.0 graphics engine; E.0 NVLink).
const DATACENTER: &[(u16, u16, &[u16])] = &[
    (
        A,
        1,
        &[
            SM_ACTIVE,
            SM_OCCUPANCY,
            PIPE_TENSOR_ACTIVE,
            PIPE_FP32_ACTIVE,
        ],
    ),
    (A, 2, &[PIPE_FP64_ACTIVE]),
    (A, 3, &[PIPE_FP16_ACTIVE]),
    (B, 0, &[DRAM_ACTIVE]),
    (C, 0, &[PCIE_TX_BYTES, PCIE_RX_BYTES]),
    (D, 0, &[GR_ENGINE_ACTIVE]),
    (E, 0, &[NVLINK_TX_BYTES, NVLINK_RX_BYTES]),
];

/// PCIe-only inference boards (T4, L4, L40S): no NVLink group and no FP64 pipe group.
const PCIE_BOARD: &[(u16, u16, &[u16])] = &[
    (
        A,
        1,
        &[
            SM_ACTIVE,
            SM_OCCUPANCY,
            PIPE_TENSOR_ACTIVE,
            PIPE_FP32_ACTIVE,
        ],
    ),
    (A, 3, &[PIPE_FP16_ACTIVE]),
    (B, 0, &[DRAM_ACTIVE]),
    (C, 0, &[PCIE_TX_BYTES, PCIE_RX_BYTES]),
    (D, 0, &[GR_ENGINE_ACTIVE]),
];

/// The metric groups of a board; empty before Volta (no profiling).
pub fn metric_groups(model: &Model) -> Vec<MetricGroup> {
    let table: &[(u16, u16, &[u16])] = match model.arch {
        ARCH_VOLTA | ARCH_AMPERE | ARCH_HOPPER | ARCH_BLACKWELL if model.nvlink_links > 0 => {
            DATACENTER
        }
        ARCH_VOLTA | ARCH_AMPERE | ARCH_HOPPER | ARCH_BLACKWELL | ARCH_TURING | ARCH_ADA => {
            PCIE_BOARD
        }
        _ => &[],
    };
    table
        .iter()
        .map(|(major, minor, fields)| MetricGroup {
            major: *major,
            minor: *minor,
            fields: fields.to_vec(),
        })
        .collect()
}

/// The (major, minor) group of `field` on `model`, if the board serves it.
pub fn group_of(model: &Model, field: u16) -> Option<(u16, u16)> {
    metric_groups(model)
        .into_iter()
        .find(|g| g.fields.contains(&field))
        .map(|g| (g.major, g.minor))
}

/// Why a set of profiling fields cannot be watched together on `model`: a field the board
/// does not serve (`Err(field, None)`), or two fields in different groups of one major id
/// (`Err(field, Some(other))`).
pub fn check_single_pass(model: &Model, fields: &[u16]) -> Result<(), (u16, Option<u16>)> {
    let mut seen: Vec<(u16, u16, u16)> = Vec::new();
    for &f in fields.iter().filter(|f| is_prof(**f)) {
        let (major, minor) = group_of(model, f).ok_or((f, None))?;
        if let Some((_, _, other)) = seen.iter().find(|(ma, mi, _)| *ma == major && *mi != minor) {
            return Err((f, Some(*other)));
        }
        seen.push((major, minor, f));
    }
    Ok(())
}

/// A profiling value: a ratio (double) or bytes per second (int64).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ProfValue {
    Ratio(f64),
    Bytes(i64),
}

/// The value of profiling `field` of GPU `g` (`uid` `None`) or of MIG instance `uid` at `t`:
/// the entity's GPM block of `physics::rates` (percent → ratio, MiB/s → bytes/s). `None` when
/// the field is not one the simulator models.
pub fn value(
    sc: &Scenario,
    seed: u64,
    g: usize,
    uid: Option<usize>,
    t: f64,
    field: u16,
) -> Option<ProfValue> {
    let gpu = sc.gpu(g)?;
    let mut out = vec![0.0; physics::channel_count(gpu)];
    physics::rates(sc, seed, g, t, &mut out);
    let base = physics::gpm_base(uid);
    let block = out.get(base..base + GPM_CHANNELS)?;
    let ratio = |i: usize| ProfValue::Ratio((block[i] / 100.0).clamp(0.0, 1.0));
    let bytes = |i: usize| ProfValue::Bytes((block[i].max(0.0) * MIB as f64).round() as i64);
    Some(match field {
        GR_ENGINE_ACTIVE => ratio(0),
        SM_ACTIVE => ratio(1),
        SM_OCCUPANCY => ratio(2),
        PIPE_TENSOR_ACTIVE => ratio(3),
        DRAM_ACTIVE => ratio(4),
        PIPE_FP64_ACTIVE => ratio(5),
        PIPE_FP32_ACTIVE => ratio(6),
        PIPE_FP16_ACTIVE => ratio(7),
        PCIE_TX_BYTES => bytes(8),
        PCIE_RX_BYTES => bytes(9),
        NVLINK_RX_BYTES => bytes(10),
        NVLINK_TX_BYTES => bytes(11),
        _ => return None,
    })
}
