//! The simulator's own C API (not part of DCGM), exported from the same library so a test or
//! the exporter's `--simulate` can drive it before `dcgmStartEmbedded`; it mirrors nvml-sim's
//! `nvmlSim*` functions:
//!
//! ```c
//! int         dcgmSimConfigure(const char *scenario_or_builtin, unsigned long long seed);
//! int         dcgmSimConfigureText(const char *text, const char *path,
//!                                  unsigned long long seed);           // 0 / -1
//! const char *dcgmSimLastError(void);
//! void        dcgmSimSetTime(double seconds);       // < 0: back to real time
//! double      dcgmSimGetTime(void);                 // scenario time now; -1 unconfigured
//! ```

use std::ffi::{CStr, c_char, c_int};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::global;

/// Loads `scenario` (a built-in name or a TOML file path, read bounded) with `seed`,
/// replacing the embedded machine and its DCGM state. 0 on success, -1 on error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmSimConfigure(scenario: *const c_char, seed: u64) -> c_int {
    catch_unwind(AssertUnwindSafe(|| {
        if scenario.is_null() {
            global::record_error("dcgmSimConfigure: scenario is null");
            return -1;
        }
        // SAFETY: non-null and NUL-terminated (documented contract).
        let Ok(spec) = unsafe { CStr::from_ptr(scenario) }.to_str() else {
            global::record_error("dcgmSimConfigure: scenario is not UTF-8");
            return -1;
        };
        match global::configure(spec, seed) {
            Ok(()) => 0,
            Err(_) => -1,
        }
    }))
    .unwrap_or(-1)
}

/// Loads the scenario whose TOML `text` the caller read from the file at `path` (named in
/// errors) with `seed`. 0 on success, -1 on error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmSimConfigureText(
    text: *const c_char,
    path: *const c_char,
    seed: u64,
) -> c_int {
    catch_unwind(AssertUnwindSafe(|| {
        if text.is_null() || path.is_null() {
            global::record_error("dcgmSimConfigureText: text or path is null");
            return -1;
        }
        // SAFETY: non-null and NUL-terminated (documented contract).
        let (text, path) = unsafe { (CStr::from_ptr(text), CStr::from_ptr(path)) };
        let (Ok(text), Ok(path)) = (text.to_str(), path.to_str()) else {
            global::record_error("dcgmSimConfigureText: text or path is not UTF-8");
            return -1;
        };
        match global::configure_text(text, path, seed) {
            Ok(()) => 0,
            Err(_) => -1,
        }
    }))
    .unwrap_or(-1)
}

/// The last configuration error ("" when none); valid until the next configuration call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmSimLastError() -> *const c_char {
    catch_unwind(global::last_error_ptr).unwrap_or(c"dcgm-sim: internal error".as_ptr())
}

/// Freezes scenario time at `seconds`; a negative (or NaN) value returns to real time.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmSimSetTime(seconds: f64) {
    let t = (seconds >= 0.0 && seconds.is_finite()).then_some(seconds);
    let _ = catch_unwind(|| global::set_time(t));
}

/// Scenario time now, seconds; -1 when nothing is configured.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmSimGetTime() -> f64 {
    catch_unwind(global::now).ok().flatten().unwrap_or(-1.0)
}
