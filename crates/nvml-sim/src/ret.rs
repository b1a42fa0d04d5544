//! NVML return codes used by the simulator, with the strings `nvmlErrorString` gives them.
//!
//! Owns only the code ↔ text table; which code a situation gets is decided in `sim`.

use std::ffi::CStr;

use nvml_wrapper_sys::bindings::*;

pub const SUCCESS: nvmlReturn_t = nvmlReturn_enum_NVML_SUCCESS;
pub const UNINITIALIZED: nvmlReturn_t = nvmlReturn_enum_NVML_ERROR_UNINITIALIZED;
pub const INVALID_ARGUMENT: nvmlReturn_t = nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT;
pub const NOT_SUPPORTED: nvmlReturn_t = nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED;
pub const NOT_FOUND: nvmlReturn_t = nvmlReturn_enum_NVML_ERROR_NOT_FOUND;
pub const INSUFFICIENT_SIZE: nvmlReturn_t = nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE;
pub const DRIVER_NOT_LOADED: nvmlReturn_t = nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED;
pub const TIMEOUT: nvmlReturn_t = nvmlReturn_enum_NVML_ERROR_TIMEOUT;
pub const GPU_IS_LOST: nvmlReturn_t = nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST;
pub const ARGUMENT_VERSION_MISMATCH: nvmlReturn_t =
    nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
pub const UNKNOWN: nvmlReturn_t = nvmlReturn_enum_NVML_ERROR_UNKNOWN;

/// The text of a return code, as `nvmlErrorString` returns it.
#[allow(non_upper_case_globals)] // matching on the bindgen constant names
pub fn describe(code: nvmlReturn_t) -> &'static CStr {
    match code {
        nvmlReturn_enum_NVML_SUCCESS => c"Success",
        nvmlReturn_enum_NVML_ERROR_UNINITIALIZED => c"Uninitialized",
        nvmlReturn_enum_NVML_ERROR_INVALID_ARGUMENT => c"Invalid Argument",
        nvmlReturn_enum_NVML_ERROR_NOT_SUPPORTED => c"Not Supported",
        nvmlReturn_enum_NVML_ERROR_NO_PERMISSION => c"Insufficient Permissions",
        nvmlReturn_enum_NVML_ERROR_ALREADY_INITIALIZED => c"Already Initialized",
        nvmlReturn_enum_NVML_ERROR_NOT_FOUND => c"Not Found",
        nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE => c"Insufficient Size",
        nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_POWER => c"Insufficient External Power",
        nvmlReturn_enum_NVML_ERROR_DRIVER_NOT_LOADED => c"Driver Not Loaded",
        nvmlReturn_enum_NVML_ERROR_TIMEOUT => c"Timeout",
        nvmlReturn_enum_NVML_ERROR_IRQ_ISSUE => c"Interrupt Request Issue",
        nvmlReturn_enum_NVML_ERROR_LIBRARY_NOT_FOUND => c"NVML Shared Library Not Found",
        nvmlReturn_enum_NVML_ERROR_FUNCTION_NOT_FOUND => c"Function Not Found",
        nvmlReturn_enum_NVML_ERROR_CORRUPTED_INFOROM => c"Corrupted infoROM",
        nvmlReturn_enum_NVML_ERROR_GPU_IS_LOST => c"GPU is lost",
        nvmlReturn_enum_NVML_ERROR_RESET_REQUIRED => c"GPU requires restart",
        nvmlReturn_enum_NVML_ERROR_OPERATING_SYSTEM => {
            c"The operating system has blocked the request"
        }
        nvmlReturn_enum_NVML_ERROR_LIB_RM_VERSION_MISMATCH => {
            c"RM has detected an NVML/RM version mismatch"
        }
        nvmlReturn_enum_NVML_ERROR_IN_USE => c"In use by another client",
        nvmlReturn_enum_NVML_ERROR_MEMORY => c"Insufficient Memory",
        nvmlReturn_enum_NVML_ERROR_NO_DATA => c"No data",
        nvmlReturn_enum_NVML_ERROR_ARGUMENT_VERSION_MISMATCH => c"Argument version mismatch",
        nvmlReturn_enum_NVML_ERROR_DEPRECATED => c"Deprecated",
        nvmlReturn_enum_NVML_ERROR_NOT_READY => c"Not ready",
        _ => c"Unknown Error",
    }
}
