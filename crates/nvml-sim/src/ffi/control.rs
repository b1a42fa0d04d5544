//! The simulator's own C API (not part of NVML), exported from the same library so the
//! exporter can drive it through `libloading` before `nvmlInit_v2`:
//!
//! ```c
//! int          nvmlSimConfigure(const char *scenario, unsigned long long seed); // 0 / -1
//! int          nvmlSimConfigureText(const char *text, const char *path,
//!                                   unsigned long long seed);              // 0 / -1
//! const char  *nvmlSimLastError(void);
//! void         nvmlSimSetTime(double seconds);          // < 0: back to real time
//! double       nvmlSimGetTime(void);                    // scenario time now; -1 unconfigured
//! unsigned int nvmlSimScenarioNames(char *buf, unsigned int len);
//! unsigned int nvmlSimNodeName(char *buf, unsigned int len);
//! unsigned int nvmlSimScenarioText(char *buf, unsigned int len);
//! ```
//!
//! The three string getters return the length the answer needs including its NUL and copy it
//! only when `buf` is non-null and `len` is at least that; 0 means there is no answer.

use std::ffi::{CStr, c_char, c_int, c_uint};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::builtin;
use crate::state;

/// Loads `scenario` (a built-in name or a TOML file path) with `seed`, replacing all state.
/// Returns 0 on success and -1 on error (see `nvmlSimLastError`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSimConfigure(scenario: *const c_char, seed: u64) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if scenario.is_null() {
            state::record_error("nvmlSimConfigure: scenario is null");
            return -1;
        }
        // SAFETY: non-null and NUL-terminated (documented contract).
        let Ok(spec) = unsafe { CStr::from_ptr(scenario) }.to_str() else {
            state::record_error("nvmlSimConfigure: scenario is not UTF-8");
            return -1;
        };
        match state::configure(spec, seed) {
            Ok(()) => 0,
            Err(_) => -1,
        }
    }));
    result.unwrap_or(-1)
}

/// Loads the scenario whose TOML `text` the caller read from the file at `path` (named in
/// errors; its stem names the scenario unless the text has a `name`) with `seed`, replacing all
/// state. The exporter reads `--simulate PATH` itself with its bounded reader and hands the
/// text over here. Returns 0 on success and -1 on error (see `nvmlSimLastError`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSimConfigureText(
    text: *const c_char,
    path: *const c_char,
    seed: u64,
) -> c_int {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if text.is_null() || path.is_null() {
            state::record_error("nvmlSimConfigureText: text or path is null");
            return -1;
        }
        // SAFETY: non-null and NUL-terminated (documented contract).
        let (text, path) = unsafe { (CStr::from_ptr(text), CStr::from_ptr(path)) };
        let (Ok(text), Ok(path)) = (text.to_str(), path.to_str()) else {
            state::record_error("nvmlSimConfigureText: text or path is not UTF-8");
            return -1;
        };
        match state::configure_text(text, path, seed) {
            Ok(()) => 0,
            Err(_) => -1,
        }
    }));
    result.unwrap_or(-1)
}

/// The last configuration error as a NUL-terminated string ("" when none). The pointer stays
/// valid until the next `nvmlSimConfigure` (or `nvmlInit_v2` that configures).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSimLastError() -> *const c_char {
    catch_unwind(state::last_error_ptr).unwrap_or(c"nvml-sim: internal error".as_ptr())
}

/// Freezes scenario time at `seconds` since scenario start; a negative (or NaN) value returns
/// to real time (seconds since configuration).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSimSetTime(seconds: f64) {
    let t = (seconds >= 0.0 && seconds.is_finite()).then_some(seconds);
    let _ = catch_unwind(|| state::set_time(t));
}

/// Scenario time now, seconds; -1 when nothing is configured.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSimGetTime() -> f64 {
    catch_unwind(state::now).ok().flatten().unwrap_or(-1.0)
}

/// Copies `s` with its NUL into `buf` when it fits; returns the length needed.
unsafe fn copy_out(s: &str, buf: *mut c_char, len: c_uint) -> c_uint {
    let needed = s.len() + 1;
    if !buf.is_null() && len as usize >= needed {
        // SAFETY: `buf` is valid for `len` >= needed bytes (documented contract).
        unsafe {
            std::ptr::copy_nonoverlapping(s.as_ptr().cast::<c_char>(), buf, s.len());
            *buf.add(s.len()) = 0;
        }
    }
    c_uint::try_from(needed).unwrap_or(c_uint::MAX)
}

/// Built-in scenario names, comma-separated ("h100-mig,a100-l4"), default first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSimScenarioNames(buf: *mut c_char, len: c_uint) -> c_uint {
    let names = builtin::names().join(",");
    unsafe { copy_out(&names, buf, len) }
}

/// Node name of the configured scenario; 0 when nothing is configured.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSimNodeName(buf: *mut c_char, len: c_uint) -> c_uint {
    match catch_unwind(state::node_name).ok().flatten() {
        Some(name) => unsafe { copy_out(&name, buf, len) },
        None => 0,
    }
}

/// TOML text of the configured scenario (so the exporter can read its own sections, such as
/// `[[pods]]`, from built-ins too); 0 when nothing is configured.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn nvmlSimScenarioText(buf: *mut c_char, len: c_uint) -> c_uint {
    match catch_unwind(state::scenario_text).ok().flatten() {
        Some(text) => unsafe { copy_out(&text, buf, len) },
        None => 0,
    }
}
