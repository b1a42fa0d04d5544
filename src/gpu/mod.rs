//! The NVML side: loading the library and reading every entity once per tick.
//!
//! [`load`] opens `libnvidia-ml.so.1` (or the simulated library) through nvml-wrapper and keeps
//! the handle for the life of the process. [`reader::Reader`] turns the counter set into NVML
//! calls and returns plain data; it never encodes, never serves and never panics on NVML errors.

pub mod nvlink;
pub mod plan;
pub mod processes;
pub mod reader;
pub mod selection;
mod text;
pub mod xid;

pub use text::xid_message;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;

/// The library name NVML is loaded from when no path is given (resolved by the dynamic loader).
pub const DEFAULT_LIB: &str = "libnvidia-ml.so.1";

/// Loads and initialises NVML from `lib` (or [`DEFAULT_LIB`]) and leaks the handle so that
/// device handles, event sets and GPM samples can live for the rest of the process.
pub fn load(lib: Option<&Path>) -> Result<&'static Nvml, NvmlError> {
    let mut builder = Nvml::builder();
    let path = lib.map(Path::as_os_str).unwrap_or(OsStr::new(DEFAULT_LIB));
    builder.lib_path(path);
    let nvml = builder.init()?;
    Ok(Box::leak(Box::new(nvml)))
}

/// NVML could not be loaded or initialised: where it was looked for, and NVML's error.
/// Displayed as [`describe_load_error`] writes it.
#[derive(Debug, thiserror::Error)]
#[error("{}", describe_load_error(lib.as_deref(), source))]
pub struct LoadError {
    /// The path given, `None` for [`DEFAULT_LIB`] through the dynamic loader.
    pub lib: Option<PathBuf>,
    /// NVML's error, kind kept.
    pub source: NvmlError,
}

/// [`load`], with the error saying where NVML was looked for.
pub fn open(lib: Option<&Path>) -> Result<&'static Nvml, LoadError> {
    load(lib).map_err(|source| LoadError {
        lib: lib.map(Path::to_path_buf),
        source,
    })
}

/// Describes an NVML load failure for an operator: what is missing and where it looked.
pub fn describe_load_error(lib: Option<&Path>, err: &NvmlError) -> String {
    let place = match lib {
        Some(p) => format!("{}", p.display()),
        None => format!(
            "{DEFAULT_LIB} through the dynamic loader (LD_LIBRARY_PATH={}, ldconfig cache, /usr/lib*)",
            std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
        ),
    };
    match err {
        NvmlError::LibloadingError(e) => format!(
            "the NVML library could not be loaded from {place}: {e}; is the NVIDIA driver \
             installed and the library mounted into the container (NVIDIA container toolkit)?"
        ),
        NvmlError::DriverNotLoaded => format!(
            "NVML was found at {place} but reports that the NVIDIA kernel driver is not loaded"
        ),
        NvmlError::NoPermission => {
            format!("NVML at {place} refused access (no permission to the /dev/nvidia* devices)")
        }
        other => format!("NVML at {place} failed to initialise: {other}"),
    }
}
