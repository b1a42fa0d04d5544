//! `--simulate`: finding and configuring the simulated DCGM library (`crates/dcgm-sim`, built
//! as `libdcgm_sim.so`) with the same scenario and seed as the simulated NVML library, so that
//! both show the same GPUs, UUIDs and MIG layout.
//!
//! The exporter's DCGM client then loads the same path through the ordinary loader (`dcgm`),
//! as it loads `libdcgm.so.4` on a real node. Simulator only (behind the `sim` feature): it
//! must not make DCGM calls beyond the simulator's control functions.

use std::ffi::{CString, c_char, c_int, c_ulonglong};
use std::path::{Path, PathBuf};

use crate::base::bounded_read::{MAX_CONFIG_FILE, read_regular_text};

/// File name of the simulated DCGM library.
pub const LIB_NAME: &str = "libdcgm_sim.so";

/// What went wrong with the simulated DCGM library; each names the file or the scenario.
#[derive(Debug, thiserror::Error)]
pub enum SimDcgmError {
    /// The file does not load, or lacks the simulator's control functions.
    #[error("cannot use the simulated DCGM library {}: {message}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The loader's error.
        message: String,
    },
    /// The simulator refused the scenario.
    #[error("the simulated DCGM library {} refused --simulate {scenario:?}: {message}", path.display())]
    Scenario {
        /// The file.
        path: PathBuf,
        /// The scenario as given.
        scenario: String,
        /// The simulator's explanation.
        message: String,
    },
}

type ConfigureFn = unsafe extern "C" fn(*const c_char, c_ulonglong) -> c_int;
type ConfigureTextFn = unsafe extern "C" fn(*const c_char, *const c_char, c_ulonglong) -> c_int;
type LastErrorFn = unsafe extern "C" fn() -> *const c_char;

/// The simulated DCGM library, opened and configured. Keep it alive while the client uses it.
pub struct SimDcgm {
    _lib: libloading::Library,
    path: PathBuf,
}

/// Finds the simulated DCGM library next to the executable (or at `explicit`), if there.
pub fn find(explicit: Option<&Path>) -> Option<PathBuf> {
    super::library::candidates_of(LIB_NAME, explicit)
        .into_iter()
        .find(|p| p.is_file())
}

impl SimDcgm {
    /// Opens the library at `path` and configures it with `scenario` (a built-in name when
    /// `builtin`, else a file, read with the bounded reader) and `seed`.
    pub fn open(
        path: &Path,
        scenario: &str,
        builtin: bool,
        seed: u64,
    ) -> Result<Self, SimDcgmError> {
        let open_err = |message: String| SimDcgmError::Open {
            path: path.to_path_buf(),
            message,
        };
        // SAFETY: loading our own simulated DCGM library; its initialisers have no side effects.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| open_err(e.to_string()))?;
        let last_error: LastErrorFn = sym(&lib, path, b"dcgmSimLastError\0")?;
        let c =
            CString::new(scenario).map_err(|_| open_err("the scenario has a NUL byte".into()))?;
        let rc = if builtin {
            let f: ConfigureFn = sym(&lib, path, b"dcgmSimConfigure\0")?;
            // SAFETY: a valid NUL-terminated string for the call.
            unsafe { f(c.as_ptr(), seed) }
        } else {
            let text = read_regular_text(Path::new(scenario), MAX_CONFIG_FILE)
                .map_err(|e| open_err(format!("--simulate {scenario}: {e}")))?;
            let text =
                CString::new(text).map_err(|_| open_err("the scenario has a NUL byte".into()))?;
            let f: ConfigureTextFn = sym(&lib, path, b"dcgmSimConfigureText\0")?;
            // SAFETY: valid NUL-terminated strings for the call.
            unsafe { f(text.as_ptr(), c.as_ptr(), seed) }
        };
        if rc != 0 {
            // SAFETY: NUL-terminated and valid until the library's next call, or null.
            let message = unsafe { super::library::c_message(last_error()) };
            return Err(SimDcgmError::Scenario {
                path: path.to_path_buf(),
                scenario: scenario.to_owned(),
                message,
            });
        }
        Ok(Self {
            _lib: lib,
            path: path.to_path_buf(),
        })
    }

    /// The library's path, for the DCGM client to load.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// One control function of the library at `path`.
fn sym<T: Copy>(lib: &libloading::Library, path: &Path, name: &[u8]) -> Result<T, SimDcgmError> {
    // SAFETY: the types above are the C signatures the simulator exports.
    unsafe { lib.get::<T>(name).map(|s| *s) }.map_err(|e| SimDcgmError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}
