//! The NVML side: loading the library and reading every entity once per tick.
//!
//! [`open`] checks the library path (a regular file, or the loader's own search), then [`load`]
//! opens `libnvidia-ml.so.1` (or the simulated library) through nvml-wrapper and keeps the
//! handle for the life of the process; the daemon has a child process load it first
//! ([`trial`], [`open_after_trial`]). [`reader::Reader`] turns the counter set into NVML calls
//! and returns plain data; it never encodes, never serves and never panics on NVML errors.

pub mod collections;
mod licence;
pub mod nvlink;
pub mod processes;
pub mod reader;
pub mod selection;
mod selection_grammar;
pub mod switch_selection;
mod text;
pub mod trial;
pub mod xid;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use nvml_wrapper::Nvml;
use nvml_wrapper::error::NvmlError;

use crate::base::bounded_read::{ReadError, check_regular};

/// A symbol of the loaded library that nvml-wrapper does not wrap in the form needed; a
/// library without it (an older driver) is an NVML error the reader's book counts.
pub(crate) fn sym<'a, T>(s: Result<&'a T, &libloading::Error>) -> Result<&'a T, NvmlError> {
    s.map_err(|e| NvmlError::FailedToLoadSymbol(e.to_string()))
}

/// The library name NVML is loaded from when no path is given (resolved by the dynamic loader).
pub const DEFAULT_LIB: &str = "libnvidia-ml.so.1";

/// Loads and initialises NVML from `lib` (or [`DEFAULT_LIB`]) and leaks the handle so that
/// device handles, event sets and GPM samples can live for the rest of the process. The path
/// is handed to the dynamic loader as it is: [`open`] checks it first.
pub fn load(lib: Option<&Path>) -> Result<&'static Nvml, NvmlError> {
    let mut builder = Nvml::builder();
    let path = lib.map(Path::as_os_str).unwrap_or(OsStr::new(DEFAULT_LIB));
    builder.lib_path(path);
    let nvml = builder.init()?;
    Ok(Box::leak(Box::new(nvml)))
}

/// NVML could not be loaded or initialised: where it was looked for, and why.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The path given is not a regular file (a FIFO, a device, a directory): the dynamic
    /// loader is not asked.
    #[error(
        "the NVML library {}: {source}; it is not handed to the dynamic loader",
        lib.display()
    )]
    File {
        /// The path given.
        lib: PathBuf,
        /// What it is.
        source: ReadError,
    },
    /// The trial load in a child process ([`trial`]) did not end normally.
    #[error(
        "loading the NVML library {} {why}: it is not loaded into the exporter",
        place(lib.as_deref())
    )]
    Trial {
        /// The path given, `None` for [`DEFAULT_LIB`] through the dynamic loader.
        lib: Option<PathBuf>,
        /// How the child ended.
        why: trial::TrialError,
    },
    /// The dynamic loader or NVML failed. Displayed as [`describe_load_error`] writes it.
    #[error("{}", describe_load_error(lib.as_deref(), source))]
    Nvml {
        /// The path given, `None` for [`DEFAULT_LIB`] through the dynamic loader.
        lib: Option<PathBuf>,
        /// NVML's error, kind kept.
        source: NvmlError,
    },
}

/// [`load`], with the error saying where NVML was looked for. A path given is checked first
/// with one `stat`: a FIFO, a device or a directory is refused, never handed to the dynamic
/// loader, which would wait on it while holding a lock the whole process needs. A missing file
/// is left to the loader to report (the library may arrive later).
pub fn open(lib: Option<&Path>) -> Result<&'static Nvml, LoadError> {
    check_path(lib)?;
    load_described(lib)
}

/// [`open`], with a trial load of the library in a child process ([`trial`]) between the
/// check and the load, so that a `dlopen` that blocks blocks there and not in the exporter.
/// The daemon loads NVML this way.
pub fn open_after_trial(lib: Option<&Path>) -> Result<&'static Nvml, LoadError> {
    check_path(lib)?;
    trial::run(lib.map(Path::as_os_str).unwrap_or(OsStr::new(DEFAULT_LIB))).map_err(|why| {
        LoadError::Trial {
            lib: lib.map(Path::to_path_buf),
            why,
        }
    })?;
    load_described(lib)
}

/// Refuses a path that is there but is not a regular file.
fn check_path(lib: Option<&Path>) -> Result<(), LoadError> {
    if let Some(p) = lib
        && let Err(source @ ReadError::NotRegular(_)) = check_regular(p)
    {
        return Err(LoadError::File {
            lib: p.to_path_buf(),
            source,
        });
    }
    Ok(())
}

/// [`load`], its error with the place.
fn load_described(lib: Option<&Path>) -> Result<&'static Nvml, LoadError> {
    load(lib).map_err(|source| LoadError::Nvml {
        lib: lib.map(Path::to_path_buf),
        source,
    })
}

/// Where NVML is looked for, as messages name it.
fn place(lib: Option<&Path>) -> String {
    match lib {
        Some(p) => format!("{}", p.display()),
        None => format!(
            "{DEFAULT_LIB} through the dynamic loader (LD_LIBRARY_PATH={}, ldconfig cache, /usr/lib*)",
            std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
        ),
    }
}

/// Describes an NVML load failure for an operator: what is missing and where it looked.
pub fn describe_load_error(lib: Option<&Path>, err: &NvmlError) -> String {
    let place = place(lib);
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
