//! `--simulate`: finding and configuring the simulated NVML library.
//!
//! The simulated library (`crates/nvml-sim`, built as `libnvml_sim.so`) exports the NVML C
//! API plus a small control API. This module opens it, selects the scenario and seed through
//! `nvmlSimConfigure` (a built-in name) or `nvmlSimConfigureText` (a scenario file, which it
//! reads itself with the bounded reader of `base`), and hands the path to the ordinary NVML
//! loader, so the product runs exactly the code it runs on a real node. The opened library is kept alive by [`SimLib`];
//! NVML's own `dlopen` of the same path then shares its state.
//!
//! Simulator only (behind the `sim` feature): it must not call NVML itself; reads go through
//! `gpu` as on a real node.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_ulonglong};
use std::path::{Path, PathBuf};

use crate::base::bounded_read::{MAX_CONFIG_FILE, read_regular_text};
use crate::base::shown::shown;

/// File name of the simulated library.
pub const LIB_NAME: &str = "libnvml_sim.so";

/// Where the simulated library is looked for, in order, given the running executable.
pub fn candidates(explicit: Option<&Path>) -> Vec<PathBuf> {
    candidates_of(LIB_NAME, explicit)
}

/// Where a simulated library named `name` is looked for: `explicit`, else next to the
/// executable, in its `deps/`, one folder up, and in /usr/local/lib/gpu-exporter.
pub fn candidates_of(name: &str, explicit: Option<&Path>) -> Vec<PathBuf> {
    if let Some(p) = explicit {
        return vec![p.to_path_buf()];
    }
    let mut out = Vec::new();
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        out.push(dir.join(name));
        out.push(dir.join("deps").join(name));
        if let Some(up) = dir.parent() {
            out.push(up.join(name));
        }
    }
    out.push(PathBuf::from("/usr/local/lib/gpu-exporter").join(name));
    out
}

/// What went wrong with the simulated library; each names the file or the scenario.
#[derive(Debug, thiserror::Error)]
pub enum SimLibError {
    /// No candidate path holds the library.
    #[error(
        "--simulate: the simulated NVML library {LIB_NAME} was not found (looked in: {looked}); \
         build it with `cargo build --workspace` (or pass --nvml-lib PATH)"
    )]
    NotFound {
        /// The candidates, comma-separated.
        looked: String,
    },
    /// The file does not load.
    #[error("cannot open the simulated NVML library {}: {source}", path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The loader's error.
        source: libloading::Error,
    },
    /// The file loads but lacks the simulator's control functions.
    #[error("{} is not a simulated NVML library: {source}", path.display())]
    NotSimulator {
        /// The file.
        path: PathBuf,
        /// The missing symbol's error.
        source: libloading::Error,
    },
    /// The scenario name or path contains a NUL byte.
    #[error("--simulate {0:?}: contains a NUL byte")]
    Nul(String),
    /// `--simulate PATH` names no built-in scenario, and the file cannot be used.
    #[error(
        "--simulate {path}: not a built-in scenario (built-in scenarios: {names}), and not \
         usable as a scenario file: {problem}"
    )]
    File {
        /// The path as given (escaped when it holds control characters).
        path: String,
        /// What is wrong with the file (not a regular file, too large, missing, …).
        problem: String,
        /// The built-in scenario names.
        names: String,
    },
    /// The simulator refused the scenario.
    #[error("--simulate {scenario:?}: {message} (built-in scenarios: {names})")]
    Scenario {
        /// The scenario as given.
        scenario: String,
        /// The simulator's explanation.
        message: String,
        /// The built-in scenario names.
        names: String,
    },
}

/// A simulated library's error text (`*SimLastError`): "unknown error" for null.
///
/// # Safety
/// `p` is null or a NUL-terminated string that stays valid during the call.
pub unsafe fn c_message(p: *const c_char) -> String {
    if p.is_null() {
        String::from("unknown error")
    } else {
        // SAFETY: as the caller promises.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// Finds the simulated library or explains where it looked and how to build it.
pub fn find_library(explicit: Option<&Path>) -> Result<PathBuf, SimLibError> {
    let c = candidates(explicit);
    if let Some(p) = c.iter().find(|p| p.is_file()) {
        return Ok(p.clone());
    }
    let looked: Vec<String> = c.iter().map(|p| p.display().to_string()).collect();
    Err(SimLibError::NotFound {
        looked: looked.join(", "),
    })
}

type ConfigureFn = unsafe extern "C" fn(*const c_char, c_ulonglong) -> c_int;
type ConfigureTextFn = unsafe extern "C" fn(*const c_char, *const c_char, c_ulonglong) -> c_int;
type LastErrorFn = unsafe extern "C" fn() -> *const c_char;
type SetTimeFn = unsafe extern "C" fn(f64);
type GetTimeFn = unsafe extern "C" fn() -> f64;
type NamesFn = unsafe extern "C" fn(*mut c_char, c_uint) -> c_uint;

/// An opened simulated library. Keep it alive while NVML uses the same path.
pub struct SimLib {
    lib: libloading::Library,
    path: PathBuf,
}

impl SimLib {
    /// Opens the library at `path`.
    pub fn open(path: &Path) -> Result<Self, SimLibError> {
        // SAFETY: loading our own simulated NVML library; its initialisers have no side effects.
        let lib =
            unsafe { libloading::Library::new(path) }.map_err(|source| SimLibError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self {
            lib,
            path: path.to_path_buf(),
        })
    }

    /// Path the library was opened from (give it to `gpu::load`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sym<T: Copy>(&self, name: &[u8]) -> Result<T, SimLibError> {
        // SAFETY: the symbol types above match the simulated library's exports.
        unsafe { self.lib.get::<T>(name).map(|s| *s) }.map_err(|source| SimLibError::NotSimulator {
            path: self.path.clone(),
            source,
        })
    }

    /// Selects a scenario (built-in name or TOML path) and seed. Resets the simulation. A path
    /// is read here, by the bounded reader every file an operator names goes through (a
    /// regular file of at most 4 MiB; a FIFO, a device or a directory is refused at once), and
    /// its text handed to the library.
    pub fn configure(&self, scenario: &str, seed: u64) -> Result<(), SimLibError> {
        let last_error: LastErrorFn = self.sym(b"nvmlSimLastError\0")?;
        let names = self.scenario_names()?;
        let c = CString::new(scenario).map_err(|_| SimLibError::Nul(scenario.to_owned()))?;
        let rc = if names.split(',').any(|n| n == scenario) {
            let configure: ConfigureFn = self.sym(b"nvmlSimConfigure\0")?;
            // SAFETY: `c` is a valid NUL-terminated string for the duration of the call.
            unsafe { configure(c.as_ptr(), seed) }
        } else {
            let file = |problem: String| SimLibError::File {
                path: shown(scenario).into_owned(),
                problem,
                names: names.clone(),
            };
            let text = read_regular_text(Path::new(scenario), MAX_CONFIG_FILE)
                .map_err(|e| file(e.to_string()))?;
            let text = CString::new(text)
                .map_err(|_| file("it contains a NUL byte, which TOML does not allow".into()))?;
            let configure: ConfigureTextFn = self.sym(b"nvmlSimConfigureText\0")?;
            // SAFETY: both are valid NUL-terminated strings for the duration of the call.
            unsafe { configure(text.as_ptr(), c.as_ptr(), seed) }
        };
        if rc == 0 {
            return Ok(());
        }
        // SAFETY: the library returns a NUL-terminated string valid until its next call.
        let msg = unsafe { c_message(last_error()) };
        Err(SimLibError::Scenario {
            scenario: scenario.to_owned(),
            message: msg,
            names,
        })
    }

    /// Freezes scenario time at `seconds` (negative: follow the wall clock).
    pub fn set_time(&self, seconds: f64) -> Result<(), SimLibError> {
        let f: SetTimeFn = self.sym(b"nvmlSimSetTime\0")?;
        // SAFETY: plain value argument.
        unsafe { f(seconds) };
        Ok(())
    }

    /// Scenario time now, in seconds (-1 when nothing is configured).
    pub fn time(&self) -> Result<f64, SimLibError> {
        let f: GetTimeFn = self.sym(b"nvmlSimGetTime\0")?;
        // SAFETY: no arguments.
        Ok(unsafe { f() })
    }

    /// A clock that reads scenario time, for time stamps that must line up with the
    /// scenario (tests that freeze time). The library must stay loaded while it is used,
    /// which it does once NVML has been loaded from the same path (NVML is never unloaded).
    pub fn clock(&self) -> Result<crate::gpu::xid::Clock, SimLibError> {
        let f: GetTimeFn = self.sym(b"nvmlSimGetTime\0")?;
        // SAFETY: no arguments; see the lifetime note above.
        Ok(std::sync::Arc::new(move || unsafe { f() }))
    }

    /// Built-in scenario names, comma-separated.
    pub fn scenario_names(&self) -> Result<String, SimLibError> {
        self.string(b"nvmlSimScenarioNames\0")
    }

    /// The configured scenario's node name (the `Hostname` in simulate mode unless
    /// `NODE_NAME` is set).
    pub fn node_name(&self) -> Result<String, SimLibError> {
        self.string(b"nvmlSimNodeName\0")
    }

    /// The configured scenario's TOML text (for the simulated kubelet's `[[pods]]`).
    pub fn scenario_text(&self) -> Result<String, SimLibError> {
        let f: NamesFn = self.sym(b"nvmlSimScenarioText\0")?;
        // SAFETY: a null buffer asks for the length only.
        let need = unsafe { f(std::ptr::null_mut(), 0) };
        if need == 0 {
            return Ok(String::new());
        }
        let mut buf = vec![0u8; need as usize];
        // SAFETY: `buf` is writable for `need` bytes.
        unsafe { f(buf.as_mut_ptr().cast(), need) };
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }

    fn string(&self, symbol: &[u8]) -> Result<String, SimLibError> {
        let f: NamesFn = self.sym(symbol)?;
        let mut buf = vec![0u8; 4096];
        // SAFETY: `buf` is writable for its full length.
        unsafe { f(buf.as_mut_ptr().cast(), buf.len() as c_uint) };
        let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }
}
