//! The NVLink part of DCGM 4.x's C ABI: `dcgmNvLinkStatus_v5` as `dcgmGetNvLinkLinkStatus`
//! fills it (`dcgm_structs.h`, DCGM 4.6), its link states and limits, and the packing of a
//! link entity id (`dcgm_link_t`): the id a `DCGM_FE_LINK` entity carries.
//!
//! Written from the header's published layout, checked in the tests below against the sizes
//! its arithmetic gives on 64-bit Linux. Data and pure functions only: no calls, no I/O.

use std::ffi::c_uint;

use super::{DCGM_MAX_NUM_DEVICES, Zeroed, dcgm_field_eid_t, dcgm_field_entity_group_t};

/// `DCGM_MAX_NUM_SWITCHES`: the most NVSwitches DCGM describes.
pub const DCGM_MAX_NUM_SWITCHES: usize = 12;
/// `DCGM_NVLINK_MAX_LINKS_PER_GPU`.
pub const DCGM_NVLINK_MAX_LINKS_PER_GPU: usize = 36;
/// `DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH`.
pub const DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH: usize = 256;

/// `dcgmNvLinkLinkState_t`, a C enum.
pub type dcgmNvLinkLinkState_t = c_uint;
/// The link is not supported (GPUs' default).
pub const DcgmNvLinkLinkStateNotSupported: dcgmNvLinkLinkState_t = 0;
/// Supported but disabled (NVSwitches' default).
pub const DcgmNvLinkLinkStateDisabled: dcgmNvLinkLinkState_t = 1;
/// Down (inactive).
pub const DcgmNvLinkLinkStateDown: dcgmNvLinkLinkState_t = 2;
/// Up (active).
pub const DcgmNvLinkLinkStateUp: dcgmNvLinkLinkState_t = 3;

/// `dcgmNvLinkGpuLinkStatus_v4`: one GPU's link states.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct dcgmNvLinkGpuLinkStatus_v4 {
    pub entityId: dcgm_field_eid_t,
    pub linkState: [dcgmNvLinkLinkState_t; DCGM_NVLINK_MAX_LINKS_PER_GPU],
}

/// `dcgmNvLinkNvSwitchLinkStatus_t`: one NVSwitch's port states.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct dcgmNvLinkNvSwitchLinkStatus_t {
    pub entityId: dcgm_field_eid_t,
    pub linkState: [dcgmNvLinkLinkState_t; DCGM_NVLINK_MAX_LINKS_PER_NVSWITCH],
}

/// `dcgmNvLinkStatus_v5`: every NVLink of the GPUs and NVSwitches DCGM sees.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct dcgmNvLinkStatus_v5 {
    pub version: c_uint,
    pub numGpus: c_uint,
    pub gpus: [dcgmNvLinkGpuLinkStatus_v4; DCGM_MAX_NUM_DEVICES],
    pub numNvSwitches: c_uint,
    pub nvSwitches: [dcgmNvLinkNvSwitchLinkStatus_t; DCGM_MAX_NUM_SWITCHES],
}
/// `dcgmNvLinkStatus_version5`.
pub const dcgmNvLinkStatus_version5: c_uint =
    super::make_version(size_of::<dcgmNvLinkStatus_v5>(), 5);

impl Zeroed for dcgmNvLinkStatus_v5 {}

/// The entity id of port `index` of the entity `parent` of group `group` (`dcgm_link_t.raw`):
/// bits 0–7 the group, bits 8–23 the port index, bits 24–31 the parent's id, as the header's
/// packed bit fields lay them out (DCGM's own tests: switch 1, port 10 is `0x01000A03`).
pub const fn link_id(group: dcgm_field_entity_group_t, parent: u32, index: u32) -> u32 {
    (group & 0xff) | ((index & 0xffff) << 8) | ((parent & 0xff) << 24)
}

/// The parts of a link entity id: (group, parent id, port index).
pub const fn link_parts(raw: u32) -> (dcgm_field_entity_group_t, u32, u32) {
    (raw & 0xff, raw >> 24, (raw >> 8) & 0xffff)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// `dcgmNvLinkStatus_v5` by the header's arithmetic: 4 + 4 + 32 × (4 + 36 × 4) + 4 +
    /// 12 × (4 + 256 × 4) bytes, all members 4-byte aligned.
    #[test]
    fn link_status_layout_matches_dcgm_structs_h() {
        assert_eq!(size_of::<dcgmNvLinkGpuLinkStatus_v4>(), 148);
        assert_eq!(size_of::<dcgmNvLinkNvSwitchLinkStatus_t>(), 1028);
        assert_eq!(offset_of!(dcgmNvLinkStatus_v5, gpus), 8);
        assert_eq!(offset_of!(dcgmNvLinkStatus_v5, numNvSwitches), 8 + 32 * 148);
        assert_eq!(offset_of!(dcgmNvLinkStatus_v5, nvSwitches), 4748);
        assert_eq!(size_of::<dcgmNvLinkStatus_v5>(), 4748 + 12 * 1028);
        assert_eq!(dcgmNvLinkStatus_version5, 0x0500_42bc);
    }

    #[test]
    fn link_ids_pack_as_dcgm_link_t() {
        let sw = super::super::DCGM_FE_SWITCH;
        let gpu = super::super::DCGM_FE_GPU;
        // The figures of DCGM's dcgmi tests.
        assert_eq!(link_id(sw, 1, 10), 0x0100_0A03);
        assert_eq!(link_id(sw, 2, 64), 0x0200_4003);
        assert_eq!(link_id(gpu, 1, 17), 0x0100_1101);
        assert_eq!(link_parts(0x0200_4003), (sw, 2, 64));
    }
}
