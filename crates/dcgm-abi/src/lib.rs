//! The part of DCGM 4.x's C ABI (`libdcgm.so.4`) that gpu-exporter's DCGM client and the
//! simulated `libdcgm` (`crates/dcgm-sim`) both use: the versioned structs, laid out byte for
//! byte as DCGM's public headers (`dcgm_structs.h`, `dcgm_fields.h`, `dcgm_agent.h`) lay them
//! out on 64-bit Linux, their version words, the return codes, entity groups, field types,
//! blank sentinels and the function signatures; the health watches' part is in [`health`], the
//! NVLink status and link ids in [`links`].
//!
//! Written from the headers' published layout (sizes and offsets checked in the tests below
//! against the figures a C compiler gives for DCGM 4.x's headers), not copied from them. This
//! crate owns no behaviour: no loading, no calls, no I/O. It must not depend on anything.

#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals)]

use std::ffi::{c_char, c_int, c_longlong, c_uint, c_ushort};

pub mod health;
pub use health::*;
pub mod links;
pub use links::*;

/// A connection (or embedded host engine) handle.
pub type dcgmHandle_t = usize;
/// A GPU (entity) group id.
pub type dcgmGpuGrp_t = usize;
/// A field group id.
pub type dcgmFieldGrp_t = usize;
/// Return code of every call: 0 or a negative `DCGM_ST_*`.
pub type dcgmReturn_t = c_int;
/// An entity group (`DCGM_FE_*`), a C enum.
pub type dcgm_field_entity_group_t = c_uint;
/// An entity id within its group.
pub type dcgm_field_eid_t = c_uint;

/// `MAKE_DCGM_VERSION`: the struct's size in the low 24 bits, its version above.
pub const fn make_version(size: usize, ver: u32) -> c_uint {
    (size as u32) | (ver << 24)
}

/// The version word's struct size (low 24 bits).
pub const fn version_size(version: c_uint) -> usize {
    (version & 0x00ff_ffff) as usize
}

/// The version word's version number (high 8 bits).
pub const fn version_number(version: c_uint) -> u32 {
    version >> 24
}

// Sizes and limits.
/// `DCGM_MAX_NUM_DEVICES`.
pub const DCGM_MAX_NUM_DEVICES: usize = 32;
/// `DCGM_MAX_STR_LENGTH`.
pub const DCGM_MAX_STR_LENGTH: usize = 256;
/// `DCGM_MAX_BLOB_LENGTH`.
pub const DCGM_MAX_BLOB_LENGTH: usize = 4096;
/// `DCGM_MAX_CLOCKS`.
pub const DCGM_MAX_CLOCKS: usize = 256;
/// `DCGM_MAX_TOTAL_INSTANCES_PER_GPU`.
pub const DCGM_MAX_TOTAL_INSTANCES_PER_GPU: usize = 14;
/// `DCGM_MAX_HIERARCHY_INFO`.
pub const DCGM_MAX_HIERARCHY_INFO: usize = DCGM_MAX_NUM_DEVICES * DCGM_MAX_TOTAL_INSTANCES_PER_GPU;
/// `DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP`.
pub const DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP: usize = 128;
/// `DCGM_PROF_MAX_NUM_GROUPS_V2`.
pub const DCGM_PROF_MAX_NUM_GROUPS_V2: usize = 10;
/// `DCGM_PROF_MAX_FIELD_IDS_PER_GROUP_V2`.
pub const DCGM_PROF_MAX_FIELD_IDS_PER_GROUP_V2: usize = 64;

// Return codes (`dcgmReturn_t`).
pub const DCGM_ST_OK: c_int = 0;
pub const DCGM_ST_BADPARAM: c_int = -1;
pub const DCGM_ST_GENERIC_ERROR: c_int = -3;
pub const DCGM_ST_MEMORY: c_int = -4;
pub const DCGM_ST_NOT_CONFIGURED: c_int = -5;
pub const DCGM_ST_NOT_SUPPORTED: c_int = -6;
pub const DCGM_ST_INIT_ERROR: c_int = -7;
pub const DCGM_ST_NVML_ERROR: c_int = -8;
pub const DCGM_ST_UNINITIALIZED: c_int = -10;
pub const DCGM_ST_TIMEOUT: c_int = -11;
pub const DCGM_ST_VER_MISMATCH: c_int = -12;
pub const DCGM_ST_UNKNOWN_FIELD: c_int = -13;
pub const DCGM_ST_NO_DATA: c_int = -14;
pub const DCGM_ST_STALE_DATA: c_int = -15;
pub const DCGM_ST_NOT_WATCHED: c_int = -16;
pub const DCGM_ST_NO_PERMISSION: c_int = -17;
pub const DCGM_ST_GPU_IS_LOST: c_int = -18;
pub const DCGM_ST_CONNECTION_NOT_VALID: c_int = -21;
pub const DCGM_ST_GPU_NOT_SUPPORTED: c_int = -22;
pub const DCGM_ST_GROUP_INCOMPATIBLE: c_int = -23;
pub const DCGM_ST_MAX_LIMIT: c_int = -24;
pub const DCGM_ST_REQUIRES_ROOT: c_int = -29;
pub const DCGM_ST_INSUFFICIENT_SIZE: c_int = -31;
pub const DCGM_ST_MODULE_NOT_LOADED: c_int = -33;
pub const DCGM_ST_IN_USE: c_int = -34;
pub const DCGM_ST_GROUP_IS_EMPTY: c_int = -35;
pub const DCGM_ST_PROFILING_NOT_SUPPORTED: c_int = -36;
pub const DCGM_ST_PROFILING_LIBRARY_ERROR: c_int = -37;
pub const DCGM_ST_PROFILING_MULTI_PASS: c_int = -38;
pub const DCGM_ST_INSTANCE_NOT_FOUND: c_int = -45;
pub const DCGM_ST_COMPUTE_INSTANCE_NOT_FOUND: c_int = -46;
pub const DCGM_ST_INSUFFICIENT_RESOURCES: c_int = -49;
pub const DCGM_ST_PAUSED: c_int = -54;
pub const DCGM_ST_ALREADY_INITIALIZED: c_int = -55;

/// The name of every return code above (`DCGM_ST_NO_PERMISSION` for -17): the one table that
/// messages use to name a code, whatever text the library gives for it.
pub const DCGM_ST_NAMES: [(c_int, &str); 34] = [
    (DCGM_ST_OK, "DCGM_ST_OK"),
    (DCGM_ST_BADPARAM, "DCGM_ST_BADPARAM"),
    (DCGM_ST_GENERIC_ERROR, "DCGM_ST_GENERIC_ERROR"),
    (DCGM_ST_MEMORY, "DCGM_ST_MEMORY"),
    (DCGM_ST_NOT_CONFIGURED, "DCGM_ST_NOT_CONFIGURED"),
    (DCGM_ST_NOT_SUPPORTED, "DCGM_ST_NOT_SUPPORTED"),
    (DCGM_ST_INIT_ERROR, "DCGM_ST_INIT_ERROR"),
    (DCGM_ST_NVML_ERROR, "DCGM_ST_NVML_ERROR"),
    (DCGM_ST_UNINITIALIZED, "DCGM_ST_UNINITIALIZED"),
    (DCGM_ST_TIMEOUT, "DCGM_ST_TIMEOUT"),
    (DCGM_ST_VER_MISMATCH, "DCGM_ST_VER_MISMATCH"),
    (DCGM_ST_UNKNOWN_FIELD, "DCGM_ST_UNKNOWN_FIELD"),
    (DCGM_ST_NO_DATA, "DCGM_ST_NO_DATA"),
    (DCGM_ST_STALE_DATA, "DCGM_ST_STALE_DATA"),
    (DCGM_ST_NOT_WATCHED, "DCGM_ST_NOT_WATCHED"),
    (DCGM_ST_NO_PERMISSION, "DCGM_ST_NO_PERMISSION"),
    (DCGM_ST_GPU_IS_LOST, "DCGM_ST_GPU_IS_LOST"),
    (DCGM_ST_CONNECTION_NOT_VALID, "DCGM_ST_CONNECTION_NOT_VALID"),
    (DCGM_ST_GPU_NOT_SUPPORTED, "DCGM_ST_GPU_NOT_SUPPORTED"),
    (DCGM_ST_GROUP_INCOMPATIBLE, "DCGM_ST_GROUP_INCOMPATIBLE"),
    (DCGM_ST_MAX_LIMIT, "DCGM_ST_MAX_LIMIT"),
    (DCGM_ST_REQUIRES_ROOT, "DCGM_ST_REQUIRES_ROOT"),
    (DCGM_ST_INSUFFICIENT_SIZE, "DCGM_ST_INSUFFICIENT_SIZE"),
    (DCGM_ST_MODULE_NOT_LOADED, "DCGM_ST_MODULE_NOT_LOADED"),
    (DCGM_ST_IN_USE, "DCGM_ST_IN_USE"),
    (DCGM_ST_GROUP_IS_EMPTY, "DCGM_ST_GROUP_IS_EMPTY"),
    (
        DCGM_ST_PROFILING_NOT_SUPPORTED,
        "DCGM_ST_PROFILING_NOT_SUPPORTED",
    ),
    (
        DCGM_ST_PROFILING_LIBRARY_ERROR,
        "DCGM_ST_PROFILING_LIBRARY_ERROR",
    ),
    (DCGM_ST_PROFILING_MULTI_PASS, "DCGM_ST_PROFILING_MULTI_PASS"),
    (DCGM_ST_INSTANCE_NOT_FOUND, "DCGM_ST_INSTANCE_NOT_FOUND"),
    (
        DCGM_ST_COMPUTE_INSTANCE_NOT_FOUND,
        "DCGM_ST_COMPUTE_INSTANCE_NOT_FOUND",
    ),
    (
        DCGM_ST_INSUFFICIENT_RESOURCES,
        "DCGM_ST_INSUFFICIENT_RESOURCES",
    ),
    (DCGM_ST_PAUSED, "DCGM_ST_PAUSED"),
    (DCGM_ST_ALREADY_INITIALIZED, "DCGM_ST_ALREADY_INITIALIZED"),
];

/// The name of a return code (`DCGM_ST_*`), `None` for a code this crate does not know.
pub fn st_name(rc: c_int) -> Option<&'static str> {
    DCGM_ST_NAMES
        .iter()
        .find(|(c, _)| *c == rc)
        .map(|(_, n)| *n)
}

// Entity groups (`dcgm_field_entity_group_t`).
pub const DCGM_FE_NONE: c_uint = 0;
pub const DCGM_FE_GPU: c_uint = 1;
pub const DCGM_FE_VGPU: c_uint = 2;
pub const DCGM_FE_SWITCH: c_uint = 3;
pub const DCGM_FE_GPU_I: c_uint = 4;
pub const DCGM_FE_GPU_CI: c_uint = 5;
pub const DCGM_FE_LINK: c_uint = 6;
pub const DCGM_FE_CPU: c_uint = 7;
pub const DCGM_FE_CPU_CORE: c_uint = 8;

// Field types (`DCGM_FT_*`, a char code in `dcgmFieldValue_v2::fieldType`).
pub const DCGM_FT_BINARY: c_ushort = b'b' as c_ushort;
pub const DCGM_FT_DOUBLE: c_ushort = b'd' as c_ushort;
pub const DCGM_FT_INT64: c_ushort = b'i' as c_ushort;
pub const DCGM_FT_STRING: c_ushort = b's' as c_ushort;
pub const DCGM_FT_TIMESTAMP: c_ushort = b't' as c_ushort;

// Blank sentinels: a value at or above these is "no value", never a reading.
pub const DCGM_INT32_BLANK: i64 = 0x7fff_fff0;
pub const DCGM_INT64_BLANK: i64 = 0x7fff_ffff_ffff_fff0;
pub const DCGM_FP64_BLANK: f64 = 140_737_488_355_328.0;
pub const DCGM_STR_BLANK: &str = "<<<NULL>>>";
/// `DCGM_INT64_NOT_SUPPORTED` (blank + 2), what a field the entity does not support reads.
pub const DCGM_INT64_NOT_SUPPORTED: i64 = DCGM_INT64_BLANK + 2;
/// `DCGM_FP64_NOT_SUPPORTED`.
pub const DCGM_FP64_NOT_SUPPORTED: f64 = DCGM_FP64_BLANK + 2.0;

// Operation modes and group types.
/// `DCGM_OPERATION_MODE_AUTO`: the host engine updates watched fields by itself.
pub const DCGM_OPERATION_MODE_AUTO: c_uint = 1;
/// `DCGM_OPERATION_MODE_MANUAL`: fields update only on `dcgmUpdateAllFields`.
pub const DCGM_OPERATION_MODE_MANUAL: c_uint = 2;
/// `DCGM_GROUP_DEFAULT`: every GPU of the node.
pub const DCGM_GROUP_DEFAULT: c_uint = 0;
/// `DCGM_GROUP_EMPTY`.
pub const DCGM_GROUP_EMPTY: c_uint = 1;
/// `DCGM_FV_FLAG_LIVE_DATA` for `dcgmEntitiesGetLatestValues`.
pub const DCGM_FV_FLAG_LIVE_DATA: c_uint = 1;

/// `dcgmConnectV2Params_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct dcgmConnectV2Params_v2 {
    pub version: c_uint,
    pub persistAfterDisconnect: c_uint,
    pub timeoutMs: c_uint,
    pub addressIsUnixSocket: c_uint,
}
/// `dcgmConnectV2Params_version2`.
pub const dcgmConnectV2Params_version2: c_uint =
    make_version(size_of::<dcgmConnectV2Params_v2>(), 2);

/// `DCGM_MODULE_ID_COUNT_V1`: the length of `dcgmStartEmbeddedV2Params_v1`'s deny list.
pub const DCGM_MODULE_ID_COUNT_V1: usize = 10;

/// `DcgmLoggingSeverity_t`: no logging.
pub const DcgmLoggingSeverityNone: c_int = 0;
/// `DcgmLoggingSeverity_t`: fatal errors.
pub const DcgmLoggingSeverityFatal: c_int = 1;
/// `DcgmLoggingSeverity_t`: errors.
pub const DcgmLoggingSeverityError: c_int = 2;
/// `DcgmLoggingSeverity_t`: warnings.
pub const DcgmLoggingSeverityWarning: c_int = 3;
/// `DcgmLoggingSeverity_t`: informative.
pub const DcgmLoggingSeverityInfo: c_int = 4;
/// `DcgmLoggingSeverity_t`: debug information.
pub const DcgmLoggingSeverityDebug: c_int = 5;
/// `DcgmLoggingSeverity_t`: verbose debugging information.
pub const DcgmLoggingSeverityVerbose: c_int = 6;

/// `DcgmLoggingSeverity_t`'s names as DCGM spells them (`__DCGM_DBG_LVL`, dcgm-exporter's
/// `--dcgm-log-level`), indexed by severity from `DcgmLoggingSeverityNone`.
pub const DCGM_LOGGING_SEVERITY_NAMES: [&str; 7] =
    ["NONE", "FATAL", "ERROR", "WARN", "INFO", "DEBUG", "VERB"];

/// `dcgmStartEmbeddedV2Params_v1` (DCGM 2.0 and later): `dcgmStartEmbedded_v2`'s in and out
/// parameters. `logFile` `-` is standard output, null no log.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct dcgmStartEmbeddedV2Params_v1 {
    pub version: c_uint,
    pub opMode: c_uint,
    pub dcgmHandle: dcgmHandle_t,
    pub logFile: *const c_char,
    pub severity: c_int,
    pub denyListCount: c_uint,
    pub denyList: [c_uint; DCGM_MODULE_ID_COUNT_V1],
}
/// `dcgmStartEmbeddedV2Params_version1`.
pub const dcgmStartEmbeddedV2Params_version1: c_uint =
    make_version(size_of::<dcgmStartEmbeddedV2Params_v1>(), 1);

/// `dcgmGroupEntityPair_t`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct dcgmGroupEntityPair_t {
    pub entityGroupId: dcgm_field_entity_group_t,
    pub entityId: dcgm_field_eid_t,
}

/// The value union of `dcgmFieldValue_v2`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union dcgmFieldValueUnion {
    pub i64_: i64,
    pub dbl: f64,
    pub str_: [c_char; DCGM_MAX_STR_LENGTH],
    pub blob: [c_char; DCGM_MAX_BLOB_LENGTH],
}

/// `dcgmFieldValue_v2`: one value of one field of one entity.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmFieldValue_v2 {
    pub version: c_uint,
    pub entityGroupId: dcgm_field_entity_group_t,
    pub entityId: dcgm_field_eid_t,
    pub fieldId: c_ushort,
    pub fieldType: c_ushort,
    pub status: c_int,
    pub unused: c_uint,
    /// Microseconds since 1970.
    pub ts: i64,
    pub value: dcgmFieldValueUnion,
}
/// `dcgmFieldValue_version2`.
pub const dcgmFieldValue_version2: c_uint = make_version(size_of::<dcgmFieldValue_v2>(), 2);

impl dcgmFieldValue_v2 {
    /// A zeroed value with its version word set, as a caller passes it in.
    pub fn zeroed() -> Self {
        // SAFETY: every field is an integer, a float or bytes: all-zero is a valid value.
        let mut v: Self = unsafe { std::mem::zeroed() };
        v.version = dcgmFieldValue_version2;
        v
    }
}

/// `dcgmMigEntityInfo_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmMigEntityInfo_t {
    pub gpuUuid: [c_char; 128],
    pub nvmlGpuIndex: c_uint,
    pub nvmlInstanceId: c_uint,
    pub nvmlComputeInstanceId: c_uint,
    pub nvmlMigProfileId: c_uint,
    pub nvmlProfileSlices: c_uint,
}

/// `dcgmMigHierarchyInfo_v2`: one GPU instance or compute instance and its parent.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmMigHierarchyInfo_v2 {
    pub entity: dcgmGroupEntityPair_t,
    pub parent: dcgmGroupEntityPair_t,
    pub info: dcgmMigEntityInfo_t,
}

/// `dcgmMigHierarchy_v2`: every MIG entity of the node.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmMigHierarchy_v2 {
    pub version: c_uint,
    pub count: c_uint,
    pub entityList: [dcgmMigHierarchyInfo_v2; DCGM_MAX_HIERARCHY_INFO],
}
/// `dcgmMigHierarchy_version2`.
pub const dcgmMigHierarchy_version2: c_uint = make_version(size_of::<dcgmMigHierarchy_v2>(), 2);

/// `dcgmClockSet_v1`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct dcgmClockSet_v1 {
    pub version: c_int,
    pub memClock: c_uint,
    pub smClock: c_uint,
}

/// `dcgmDeviceSupportedClockSets_v1`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmDeviceSupportedClockSets_v1 {
    pub version: c_uint,
    pub count: c_uint,
    pub clockSet: [dcgmClockSet_v1; DCGM_MAX_CLOCKS],
}

/// `dcgmDeviceThermals_v1`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct dcgmDeviceThermals_v1 {
    pub version: c_uint,
    pub slowdownTemp: c_uint,
    pub shutdownTemp: c_uint,
}

/// `dcgmDevicePowerLimits_v1`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct dcgmDevicePowerLimits_v1 {
    pub version: c_uint,
    pub curPowerLimit: c_uint,
    pub defaultPowerLimit: c_uint,
    pub enforcedPowerLimit: c_uint,
    pub minPowerLimit: c_uint,
    pub maxPowerLimit: c_uint,
}

/// `dcgmDeviceIdentifiers_v1`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmDeviceIdentifiers_v1 {
    pub version: c_uint,
    pub brandName: [c_char; DCGM_MAX_STR_LENGTH],
    pub deviceName: [c_char; DCGM_MAX_STR_LENGTH],
    pub pciBusId: [c_char; DCGM_MAX_STR_LENGTH],
    pub serial: [c_char; DCGM_MAX_STR_LENGTH],
    pub uuid: [c_char; DCGM_MAX_STR_LENGTH],
    pub vbios: [c_char; DCGM_MAX_STR_LENGTH],
    pub inforomImageVersion: [c_char; DCGM_MAX_STR_LENGTH],
    pub pciDeviceId: c_uint,
    pub pciSubSystemId: c_uint,
    pub driverVersion: [c_char; DCGM_MAX_STR_LENGTH],
    pub virtualizationMode: c_uint,
}

/// `dcgmDeviceMemoryUsage_v1`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct dcgmDeviceMemoryUsage_v1 {
    pub version: c_uint,
    pub bar1Total: c_uint,
    pub fbTotal: c_uint,
    pub fbUsed: c_uint,
    pub fbFree: c_uint,
}

/// `dcgmDeviceSettings_v2`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
pub struct dcgmDeviceSettings_v2 {
    pub version: c_uint,
    pub persistenceModeEnabled: c_uint,
    pub migModeEnabled: c_uint,
    pub confidentialComputeMode: c_uint,
}

/// `dcgmDeviceAttributes_v3`: what `dcgmGetDeviceAttributes` fills for one GPU.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmDeviceAttributes_v3 {
    pub version: c_uint,
    pub clockSets: dcgmDeviceSupportedClockSets_v1,
    pub thermalSettings: dcgmDeviceThermals_v1,
    pub powerLimits: dcgmDevicePowerLimits_v1,
    pub identifiers: dcgmDeviceIdentifiers_v1,
    pub memoryUsage: dcgmDeviceMemoryUsage_v1,
    pub settings: dcgmDeviceSettings_v2,
}
/// `dcgmDeviceAttributes_version3`.
pub const dcgmDeviceAttributes_version3: c_uint =
    make_version(size_of::<dcgmDeviceAttributes_v3>(), 3);

/// `dcgmProfMetricGroupInfo_v2`: one profiling metric group.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmProfMetricGroupInfo_v2 {
    /// Groups with the same major id cannot be watched together.
    pub majorId: c_ushort,
    pub minorId: c_ushort,
    pub numFieldIds: c_uint,
    pub fieldIds: [c_ushort; DCGM_PROF_MAX_FIELD_IDS_PER_GROUP_V2],
}

/// `dcgmProfGetMetricGroups_v3`: the profiling metric groups one GPU supports.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmProfGetMetricGroups_v3 {
    pub version: c_uint,
    pub unused: c_uint,
    pub gpuId: c_uint,
    pub numMetricGroups: c_uint,
    pub metricGroups: [dcgmProfMetricGroupInfo_v2; DCGM_PROF_MAX_NUM_GROUPS_V2],
}
/// `dcgmProfGetMetricGroups_version3`.
pub const dcgmProfGetMetricGroups_version3: c_uint =
    make_version(size_of::<dcgmProfGetMetricGroups_v3>(), 3);

/// `dcgmVersionInfo_v2`: `version:4.2.3;arch:x86_64;...` key-value pairs.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct dcgmVersionInfo_v2 {
    pub version: c_uint,
    pub rawBuildInfoString: [c_char; DCGM_MAX_STR_LENGTH * 2],
}
/// `dcgmVersionInfo_version2`.
pub const dcgmVersionInfo_version2: c_uint = make_version(size_of::<dcgmVersionInfo_v2>(), 2);

/// Zero-initialised versioned structs, as a caller fills them in before a call.
pub trait Zeroed: Sized {
    /// All zero (every field of these structs is an integer, a float or bytes).
    fn zeroed() -> Box<Self> {
        // SAFETY: implemented only for plain-data repr(C) structs, where all-zero is valid;
        // allocated on the heap because some are 70 KB.
        unsafe {
            let layout = std::alloc::Layout::new::<Self>();
            let p = std::alloc::alloc_zeroed(layout).cast::<Self>();
            if p.is_null() {
                std::alloc::handle_alloc_error(layout);
            }
            Box::from_raw(p)
        }
    }
}
impl Zeroed for dcgmMigHierarchy_v2 {}
impl Zeroed for dcgmDeviceAttributes_v3 {}
impl Zeroed for dcgmProfGetMetricGroups_v3 {}
impl Zeroed for dcgmVersionInfo_v2 {}

/// A NUL-terminated C string field as text (up to the first NUL, lossy UTF-8).
pub fn c_text(chars: &[c_char]) -> String {
    let bytes: Vec<u8> = chars
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Writes `text` into a C string field, truncated to leave room for the NUL.
pub fn set_c_text(dst: &mut [c_char], text: &str) {
    let n = text.len().min(dst.len().saturating_sub(1));
    for (d, s) in dst.iter_mut().zip(text.as_bytes()[..n].iter()) {
        *d = *s as c_char;
    }
    if let Some(end) = dst.get_mut(n) {
        *end = 0;
    }
}

/// Whether an int64 reading is a blank sentinel ("no value").
pub fn int64_is_blank(v: i64) -> bool {
    v >= DCGM_INT64_BLANK
}

/// Whether a double reading is a blank sentinel ("no value").
pub fn fp64_is_blank(v: f64) -> bool {
    v >= DCGM_FP64_BLANK || v.is_nan()
}

/// The C signatures of the calls, as the client looks them up with `dlsym`.
pub mod sig {
    use super::*;
    pub type dcgmInit = unsafe extern "C" fn() -> dcgmReturn_t;
    pub type dcgmShutdown = unsafe extern "C" fn() -> dcgmReturn_t;
    pub type dcgmStartEmbedded = unsafe extern "C" fn(c_uint, *mut dcgmHandle_t) -> dcgmReturn_t;
    pub type dcgmStartEmbedded_v2 =
        unsafe extern "C" fn(*mut dcgmStartEmbeddedV2Params_v1) -> dcgmReturn_t;
    pub type dcgmStopEmbedded = unsafe extern "C" fn(dcgmHandle_t) -> dcgmReturn_t;
    pub type dcgmConnect_v2 = unsafe extern "C" fn(
        *const c_char,
        *mut dcgmConnectV2Params_v2,
        *mut dcgmHandle_t,
    ) -> dcgmReturn_t;
    pub type dcgmDisconnect = unsafe extern "C" fn(dcgmHandle_t) -> dcgmReturn_t;
    pub type dcgmVersionInfo = unsafe extern "C" fn(*mut dcgmVersionInfo_v2) -> dcgmReturn_t;
    pub type dcgmHostengineVersionInfo =
        unsafe extern "C" fn(dcgmHandle_t, *mut dcgmVersionInfo_v2) -> dcgmReturn_t;
    pub type dcgmGetAllSupportedDevices =
        unsafe extern "C" fn(dcgmHandle_t, *mut c_uint, *mut c_int) -> dcgmReturn_t;
    pub type dcgmGetDeviceAttributes =
        unsafe extern "C" fn(dcgmHandle_t, c_uint, *mut dcgmDeviceAttributes_v3) -> dcgmReturn_t;
    pub type dcgmGetGpuInstanceHierarchy =
        unsafe extern "C" fn(dcgmHandle_t, *mut dcgmMigHierarchy_v2) -> dcgmReturn_t;
    pub type dcgmGroupCreate = unsafe extern "C" fn(
        dcgmHandle_t,
        c_uint,
        *const c_char,
        *mut dcgmGpuGrp_t,
    ) -> dcgmReturn_t;
    pub type dcgmGroupDestroy = unsafe extern "C" fn(dcgmHandle_t, dcgmGpuGrp_t) -> dcgmReturn_t;
    pub type dcgmGroupAddEntity = unsafe extern "C" fn(
        dcgmHandle_t,
        dcgmGpuGrp_t,
        dcgm_field_entity_group_t,
        dcgm_field_eid_t,
    ) -> dcgmReturn_t;
    pub type dcgmFieldGroupCreate = unsafe extern "C" fn(
        dcgmHandle_t,
        c_int,
        *const c_ushort,
        *const c_char,
        *mut dcgmFieldGrp_t,
    ) -> dcgmReturn_t;
    pub type dcgmFieldGroupDestroy =
        unsafe extern "C" fn(dcgmHandle_t, dcgmFieldGrp_t) -> dcgmReturn_t;
    /// (handle, group, field group, update frequency µs, max keep age s, max keep samples).
    pub type dcgmWatchFields = unsafe extern "C" fn(
        dcgmHandle_t,
        dcgmGpuGrp_t,
        dcgmFieldGrp_t,
        c_longlong,
        f64,
        c_int,
    ) -> dcgmReturn_t;
    pub type dcgmUnwatchFields =
        unsafe extern "C" fn(dcgmHandle_t, dcgmGpuGrp_t, dcgmFieldGrp_t) -> dcgmReturn_t;
    pub type dcgmUpdateAllFields = unsafe extern "C" fn(dcgmHandle_t, c_int) -> dcgmReturn_t;
    /// (handle, entities, entity count, fields, field count, flags, values out: entities ×
    /// fields of them, entity-major).
    pub type dcgmEntitiesGetLatestValues = unsafe extern "C" fn(
        dcgmHandle_t,
        *mut dcgmGroupEntityPair_t,
        c_uint,
        *mut c_ushort,
        c_uint,
        c_uint,
        *mut dcgmFieldValue_v2,
    ) -> dcgmReturn_t;
    pub type dcgmProfGetSupportedMetricGroups =
        unsafe extern "C" fn(dcgmHandle_t, *mut dcgmProfGetMetricGroups_v3) -> dcgmReturn_t;
    pub type dcgmErrorString = unsafe extern "C" fn(dcgmReturn_t) -> *const c_char;
    /// (handle, group, `dcgmHealthSystems_t` mask).
    pub type dcgmHealthSet =
        unsafe extern "C" fn(dcgmHandle_t, dcgmGpuGrp_t, c_uint) -> dcgmReturn_t;
    /// (handle, group, systems out).
    pub type dcgmHealthGet =
        unsafe extern "C" fn(dcgmHandle_t, dcgmGpuGrp_t, *mut c_uint) -> dcgmReturn_t;
    /// (handle, group, response with its version word set).
    pub type dcgmHealthCheck = unsafe extern "C" fn(
        dcgmHandle_t,
        dcgmGpuGrp_t,
        *mut health::dcgmHealthResponse_v5,
    ) -> dcgmReturn_t;
    /// (handle, entity group, ids out, capacity in / count out, flags).
    pub type dcgmGetEntityGroupEntities = unsafe extern "C" fn(
        dcgmHandle_t,
        dcgm_field_entity_group_t,
        *mut dcgm_field_eid_t,
        *mut c_int,
        c_uint,
    ) -> dcgmReturn_t;
    /// (handle, status with its version word set).
    pub type dcgmGetNvLinkLinkStatus =
        unsafe extern "C" fn(dcgmHandle_t, *mut links::dcgmNvLinkStatus_v5) -> dcgmReturn_t;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    /// Sizes, offsets and version words as a C compiler lays out DCGM 4.x's public headers on
    /// x86-64 and aarch64 Linux (`sizeof`/`offsetof` of each struct there).
    #[test]
    fn layouts_match_dcgm_headers() {
        assert_eq!(size_of::<dcgmConnectV2Params_v2>(), 16);
        assert_eq!(size_of::<dcgmStartEmbeddedV2Params_v1>(), 72);
        assert_eq!(offset_of!(dcgmStartEmbeddedV2Params_v1, dcgmHandle), 8);
        assert_eq!(offset_of!(dcgmStartEmbeddedV2Params_v1, logFile), 16);
        assert_eq!(offset_of!(dcgmStartEmbeddedV2Params_v1, severity), 24);
        assert_eq!(offset_of!(dcgmStartEmbeddedV2Params_v1, denyListCount), 28);
        assert_eq!(offset_of!(dcgmStartEmbeddedV2Params_v1, denyList), 32);
        assert_eq!(dcgmStartEmbeddedV2Params_version1, 16_777_288);
        assert_eq!(offset_of!(dcgmConnectV2Params_v2, timeoutMs), 8);
        assert_eq!(offset_of!(dcgmConnectV2Params_v2, addressIsUnixSocket), 12);
        assert_eq!(size_of::<dcgmGroupEntityPair_t>(), 8);
        assert_eq!(size_of::<dcgmFieldValue_v2>(), 4128);
        assert_eq!(offset_of!(dcgmFieldValue_v2, fieldId), 12);
        assert_eq!(offset_of!(dcgmFieldValue_v2, fieldType), 14);
        assert_eq!(offset_of!(dcgmFieldValue_v2, status), 16);
        assert_eq!(offset_of!(dcgmFieldValue_v2, ts), 24);
        assert_eq!(offset_of!(dcgmFieldValue_v2, value), 32);
        assert_eq!(size_of::<dcgmMigEntityInfo_t>(), 148);
        assert_eq!(size_of::<dcgmMigHierarchyInfo_v2>(), 164);
        assert_eq!(offset_of!(dcgmMigHierarchyInfo_v2, info), 16);
        assert_eq!(size_of::<dcgmMigHierarchy_v2>(), 73480);
        assert_eq!(offset_of!(dcgmMigHierarchy_v2, entityList), 8);
        assert_eq!(size_of::<dcgmDeviceSupportedClockSets_v1>(), 3080);
        assert_eq!(size_of::<dcgmDeviceThermals_v1>(), 12);
        assert_eq!(size_of::<dcgmDevicePowerLimits_v1>(), 24);
        assert_eq!(size_of::<dcgmDeviceIdentifiers_v1>(), 2064);
        assert_eq!(offset_of!(dcgmDeviceIdentifiers_v1, deviceName), 260);
        assert_eq!(offset_of!(dcgmDeviceIdentifiers_v1, uuid), 1028);
        assert_eq!(size_of::<dcgmDeviceMemoryUsage_v1>(), 20);
        assert_eq!(size_of::<dcgmDeviceSettings_v2>(), 16);
        assert_eq!(size_of::<dcgmDeviceAttributes_v3>(), 5220);
        assert_eq!(offset_of!(dcgmDeviceAttributes_v3, clockSets), 4);
        assert_eq!(offset_of!(dcgmDeviceAttributes_v3, thermalSettings), 3084);
        assert_eq!(offset_of!(dcgmDeviceAttributes_v3, powerLimits), 3096);
        assert_eq!(offset_of!(dcgmDeviceAttributes_v3, identifiers), 3120);
        assert_eq!(offset_of!(dcgmDeviceAttributes_v3, memoryUsage), 5184);
        assert_eq!(offset_of!(dcgmDeviceAttributes_v3, settings), 5204);
        assert_eq!(size_of::<dcgmProfMetricGroupInfo_v2>(), 136);
        assert_eq!(offset_of!(dcgmProfMetricGroupInfo_v2, fieldIds), 8);
        assert_eq!(size_of::<dcgmProfGetMetricGroups_v3>(), 1376);
        assert_eq!(offset_of!(dcgmProfGetMetricGroups_v3, metricGroups), 16);
        assert_eq!(size_of::<dcgmVersionInfo_v2>(), 516);

        assert_eq!(dcgmConnectV2Params_version2, 0x0200_0010);
        assert_eq!(dcgmFieldValue_version2, 0x0200_1020);
        assert_eq!(dcgmDeviceAttributes_version3, 0x0300_1464);
        assert_eq!(dcgmMigHierarchy_version2, 0x0201_1f08);
        assert_eq!(dcgmProfGetMetricGroups_version3, 0x0300_0560);
        assert_eq!(dcgmVersionInfo_version2, 0x0200_0204);
    }

    #[test]
    fn blank_sentinels_are_no_value() {
        assert!(int64_is_blank(DCGM_INT64_BLANK));
        assert!(int64_is_blank(DCGM_INT64_NOT_SUPPORTED));
        assert!(!int64_is_blank(DCGM_INT32_BLANK));
        assert!(fp64_is_blank(DCGM_FP64_NOT_SUPPORTED));
        assert!(!fp64_is_blank(0.97));
    }

    #[test]
    fn c_text_round_trips_and_truncates() {
        let mut buf = [0 as c_char; 8];
        set_c_text(&mut buf, "GPU-abcdefgh");
        assert_eq!(c_text(&buf), "GPU-abc");
        set_c_text(&mut buf, "ok");
        assert_eq!(c_text(&buf), "ok");
        assert_eq!(version_size(dcgmFieldValue_version2), 4128);
        assert_eq!(version_number(dcgmFieldValue_version2), 2);
    }
}
