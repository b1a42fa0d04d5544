//! The NVML C ABI: `#[unsafe(no_mangle)] extern "C"` functions with the signatures of
//! `nvml.h` (types from `nvml_wrapper_sys::bindings`), one file per API area, plus the
//! simulator's own control functions.
//!
//! This layer only checks pointers, decodes handles, takes the clock once per call, calls the
//! matching `Sim` method and copies the answer out. It never panics across the boundary: every
//! entry point runs inside [`run`], which catches panics and maps them to
//! `NVML_ERROR_UNKNOWN`.
//!
//! # Safety
//!
//! All functions follow the NVML contract: every pointer argument is either null (answered
//! with `NVML_ERROR_INVALID_ARGUMENT`) or valid for the access NVML documents, and string
//! buffers are at least `length` bytes long.
#![allow(non_snake_case, clippy::missing_safety_doc)]

pub mod control;
pub mod device;
pub mod events;
pub mod fields;
pub mod gpm;
pub mod mig;
pub mod nvlink;
pub mod processes;
pub mod system;
pub mod telemetry;

use std::ffi::c_char;
use std::os::raw::c_uint;
use std::panic::{AssertUnwindSafe, catch_unwind};

use nvml_wrapper_sys::bindings::{nvmlDevice_t, nvmlReturn_t};

use crate::handle;
use crate::ret;
use crate::sim::{Dev, NvmlResult, Sim};
use crate::state;

/// Runs `f` catching panics; a panic becomes `NVML_ERROR_UNKNOWN`.
pub(crate) fn guard(f: impl FnOnce() -> nvmlReturn_t) -> nvmlReturn_t {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(ret::UNKNOWN)
}

/// Runs `f` on the initialized machine with the scenario time of this call.
pub(crate) fn run(f: impl FnOnce(&mut Sim, f64) -> NvmlResult<()>) -> nvmlReturn_t {
    guard(|| {
        match state::with_sim(|sim| {
            let t = sim.now();
            f(sim, t)
        }) {
            Ok(()) => ret::SUCCESS,
            Err(code) => code,
        }
    })
}

/// Decodes a device handle and applies the scenario's checks for NVML function `func`.
pub(crate) fn dev(sim: &Sim, h: nvmlDevice_t, func: &str, t: f64) -> NvmlResult<Dev> {
    let d = handle::to_device(h).ok_or(ret::INVALID_ARGUMENT)?;
    sim.check(d, func, t)
}

/// An output pointer as a reference; null → INVALID_ARGUMENT.
pub(crate) unsafe fn out<'a, T>(p: *mut T) -> NvmlResult<&'a mut T> {
    // SAFETY: the caller passes a pointer that is null or valid for writes (NVML contract).
    unsafe { p.as_mut() }.ok_or(ret::INVALID_ARGUMENT)
}

/// The common shape of a device query with one output value: check the output pointer, check
/// the device for `func`, compute, write.
pub(crate) unsafe fn answer<T>(
    device: nvmlDevice_t,
    p: *mut T,
    func: &str,
    f: impl FnOnce(&mut Sim, Dev, f64) -> NvmlResult<T>,
) -> nvmlReturn_t {
    run(|sim, t| {
        // SAFETY: forwarded NVML contract on `p`.
        let o = unsafe { out(p) }?;
        let d = dev(sim, device, func, t)?;
        *o = f(sim, d, t)?;
        Ok(())
    })
}

/// Copies `s` and a NUL into `buf` of `len` bytes; null → INVALID_ARGUMENT, too short →
/// INSUFFICIENT_SIZE.
pub(crate) unsafe fn put_str(buf: *mut c_char, len: c_uint, s: &str) -> NvmlResult<()> {
    if buf.is_null() {
        return Err(ret::INVALID_ARGUMENT);
    }
    let bytes = s.as_bytes();
    if bytes.len() + 1 > len as usize {
        return Err(ret::INSUFFICIENT_SIZE);
    }
    // SAFETY: `buf` is valid for `len` bytes (NVML contract) and `len` > bytes.len().
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), buf, bytes.len());
        *buf.add(bytes.len()) = 0;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
