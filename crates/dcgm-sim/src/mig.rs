//! DCGM's numbering of MIG entries in its hierarchy (`dcgmGetGpuInstanceHierarchy`): the
//! profile ids of GPU and compute instances by their compute slices, and the "no instance"
//! compute-instance id of a GPU-instance entry.
//!
//! Pure functions; it must not know about the engine's state.

/// The compute-instance id of a GPU-instance entry (none: NVML's "no instance").
pub fn abi_no_instance() -> u32 {
    nvml_sim::scenario::NO_INSTANCE
}

/// `DcgmMigProfileGpuInstanceSlice*` of a GPU instance with `slices` compute slices.
pub fn gi_profile_id(slices: u32) -> u32 {
    match slices {
        1..=4 => slices,
        7 => 5,
        8 => 6,
        6 => 7,
        _ => 0,
    }
}

/// `DcgmMigProfileComputeInstanceSlice*` of a compute instance with `slices` slices.
pub fn ci_profile_id(slices: u32) -> u32 {
    match slices {
        1..=4 => 29 + slices,
        7 => 34,
        8 => 35,
        6 => 36,
        _ => 0,
    }
}
