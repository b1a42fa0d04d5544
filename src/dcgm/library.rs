//! Loading `libdcgm.so.4` at run time: the path check, the trial load in a child process
//! (`gpu::trial`), the `dlopen`, the major-version check and the symbol table ([`Api`]).
//!
//! The library is never linked: where DCGM is absent the exporter runs as before. Once loaded
//! the library is kept for the life of the process (never unloaded). This module makes no DCGM
//! call beyond `dcgmVersionInfo`; it must not connect, watch or read.

use std::ffi::{CStr, OsStr};
use std::path::{Path, PathBuf};

use dcgm_abi::{Zeroed, c_text, dcgmVersionInfo_v2, dcgmVersionInfo_version2, sig};

use crate::base::bounded_read::{ReadError, refuse_not_regular};
use crate::gpu::trial;

/// The library name DCGM is loaded from when no path is given (resolved by the dynamic loader).
pub const DEFAULT_LIB: &str = "libdcgm.so.4";
/// The DCGM major version this client is written for.
pub const MAJOR: u32 = 4;

/// Why the DCGM library cannot be used. Each names where it was looked for.
#[derive(Debug, thiserror::Error)]
pub enum LibraryError {
    /// `--dcgm-lib` names something other than a regular file.
    #[error("--dcgm-lib {}: {source}; it is not handed to the dynamic loader", path.display())]
    File {
        /// The path given.
        path: PathBuf,
        /// What it is.
        source: ReadError,
    },
    /// The dynamic loader did not find the library.
    #[error(
        "the DCGM library was not found: looked for {place} ({message}); profiling fields on \
         GPUs without GPM are not exported. Install DCGM {MAJOR}.x (datacenter-gpu-manager-4), \
         use the image with libdcgm, pass --dcgm-lib PATH, or set --dcgm-mode off"
    )]
    NotFound {
        /// Where it was looked for.
        place: String,
        /// The loader's message.
        message: String,
    },
    /// The loader found it but could not load it.
    #[error("the DCGM library {place} could not be loaded: {message}")]
    Open {
        /// Where it was looked for.
        place: String,
        /// The loader's message.
        message: String,
    },
    /// The trial child was killed while only opening it.
    #[error("loading the DCGM library {place} {why}: it is not loaded into the exporter")]
    Trial {
        /// Where it was looked for.
        place: String,
        /// How the child ended.
        why: crate::gpu::trial::TrialError,
    },
    /// The library is not DCGM `MAJOR`.x.
    #[error(
        "the DCGM library {place} is version {found}; gpu-exporter needs DCGM {MAJOR}.x \
         (libdcgm.so.{MAJOR}): install DCGM {MAJOR} or point --dcgm-lib at its libdcgm.so.{MAJOR}"
    )]
    Version {
        /// Where it was loaded from.
        place: String,
        /// The version it reports (or what is known of it).
        found: String,
    },
}

/// Where the library is looked for, as messages name it.
pub fn place(lib: Option<&Path>) -> String {
    match lib {
        Some(p) => p.display().to_string(),
        None => format!(
            "{DEFAULT_LIB} through the dynamic loader (LD_LIBRARY_PATH={}, ldconfig cache, /usr/lib*)",
            std::env::var("LD_LIBRARY_PATH").unwrap_or_default()
        ),
    }
}

/// The calls the client makes, looked up once.
#[allow(missing_docs)]
pub struct Api {
    pub init: sig::dcgmInit,
    pub start_embedded: sig::dcgmStartEmbedded,
    pub start_embedded_v2: sig::dcgmStartEmbedded_v2,
    pub stop_embedded: sig::dcgmStopEmbedded,
    pub connect: sig::dcgmConnect_v2,
    pub disconnect: sig::dcgmDisconnect,
    pub all_devices: sig::dcgmGetAllSupportedDevices,
    pub entity_group_entities: sig::dcgmGetEntityGroupEntities,
    pub attributes: sig::dcgmGetDeviceAttributes,
    pub hierarchy: sig::dcgmGetGpuInstanceHierarchy,
    pub group_create: sig::dcgmGroupCreate,
    pub group_destroy: sig::dcgmGroupDestroy,
    pub group_add: sig::dcgmGroupAddEntity,
    pub field_group_create: sig::dcgmFieldGroupCreate,
    pub field_group_destroy: sig::dcgmFieldGroupDestroy,
    pub watch: sig::dcgmWatchFields,
    pub unwatch: sig::dcgmUnwatchFields,
    pub latest: sig::dcgmEntitiesGetLatestValues,
    pub metric_groups: sig::dcgmProfGetSupportedMetricGroups,
    pub error_string: sig::dcgmErrorString,
    pub health_set: sig::dcgmHealthSet,
    pub health_check: sig::dcgmHealthCheck,
    pub link_status: sig::dcgmGetNvLinkLinkStatus,
    /// The version the library reports (`4.2.3`).
    pub version: String,
    /// Where it was loaded from, as messages name it.
    pub place: String,
}

impl Api {
    /// DCGM's own words for a return code, with the code's name and number.
    pub fn describe(&self, rc: i32) -> String {
        // SAFETY: dcgmErrorString returns a static string or null.
        let p = unsafe { (self.error_string)(rc) };
        let text = (!p.is_null()).then(|| {
            // SAFETY: non-null, NUL-terminated and static, as DCGM documents.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        });
        describe_code(text.as_deref(), rc)
    }
}

/// A return code in words: the library's text (when it has one), the code's name from
/// `dcgm_abi::DCGM_ST_NAMES` (when the ABI crate knows it) and its number.
pub fn describe_code(text: Option<&str>, rc: i32) -> String {
    let text = text
        .filter(|t| !t.trim().is_empty())
        .unwrap_or("unknown error");
    match dcgm_abi::st_name(rc) {
        Some(name) => format!("{text} ({name}, DCGM return code {rc})"),
        None => format!("{text} (DCGM return code {rc})"),
    }
}

/// The version out of `dcgmVersionInfo`'s `key:value;…` text (`version:4.2.3;arch:…`).
pub fn parse_version(raw: &str) -> Option<String> {
    raw.split(';')
        .filter_map(|kv| kv.split_once(':'))
        .find(|(k, _)| k.trim() == "version")
        .map(|(_, v)| v.trim().to_owned())
}

/// The major number of a version (`4.2.3` → 4).
pub fn major_of(version: &str) -> Option<u32> {
    version.split('.').next()?.trim().parse().ok()
}

/// Opens the library (`lib`, else [`DEFAULT_LIB`] through the loader): checks the path, has a
/// child process load it first, loads it, checks the major version and looks up every call.
pub fn load(lib: Option<&Path>) -> Result<&'static Api, LibraryError> {
    let place = place(lib);
    if let Some(p) = lib {
        refuse_not_regular(p).map_err(|source| LibraryError::File {
            path: p.to_path_buf(),
            source,
        })?;
    }
    let name = lib.map(Path::as_os_str).unwrap_or(OsStr::new(DEFAULT_LIB));
    trial::run(name).map_err(|why| LibraryError::Trial {
        place: place.clone(),
        why,
    })?;
    // SAFETY: DCGM's initialisers; a library that crashes the loader was caught by the trial.
    let library = unsafe { libloading::Library::new(name) }.map_err(|e| {
        let message = e.to_string();
        if message.contains("No such file") || message.contains("cannot open shared object") {
            LibraryError::NotFound {
                place: place.clone(),
                message,
            }
        } else {
            LibraryError::Open {
                place: place.clone(),
                message,
            }
        }
    })?;
    // Kept for the life of the process: handles and threads of DCGM live in it.
    let library: &'static libloading::Library = Box::leak(Box::new(library));
    let missing = |symbol: &str, found: &str| LibraryError::Version {
        place: place.clone(),
        found: format!("{found} (it has no {symbol})"),
    };
    let version_info: sig::dcgmVersionInfo =
        sym(library, b"dcgmVersionInfo\0").map_err(|_| missing("dcgmVersionInfo", "unknown"))?;
    let mut info = dcgmVersionInfo_v2::zeroed();
    info.version = dcgmVersionInfo_version2;
    // SAFETY: a zeroed struct with its version word, as the header asks.
    let rc = unsafe { version_info(&mut *info) };
    let version = if rc == dcgm_abi::DCGM_ST_OK {
        parse_version(&c_text(&info.rawBuildInfoString)).unwrap_or_default()
    } else {
        String::new()
    };
    let shown = if version.is_empty() {
        "unknown (dcgmVersionInfo gave none)"
    } else {
        version.as_str()
    };
    if major_of(&version) != Some(MAJOR) {
        return Err(LibraryError::Version {
            place,
            found: shown.to_owned(),
        });
    }
    macro_rules! get {
        ($name:literal) => {
            sym(library, concat!($name, "\0").as_bytes()).map_err(|_| missing($name, shown))?
        };
    }
    let api = Api {
        init: get!("dcgmInit"),
        start_embedded: get!("dcgmStartEmbedded"),
        start_embedded_v2: get!("dcgmStartEmbedded_v2"),
        stop_embedded: get!("dcgmStopEmbedded"),
        connect: get!("dcgmConnect_v2"),
        disconnect: get!("dcgmDisconnect"),
        all_devices: get!("dcgmGetAllSupportedDevices"),
        entity_group_entities: get!("dcgmGetEntityGroupEntities"),
        attributes: get!("dcgmGetDeviceAttributes"),
        hierarchy: get!("dcgmGetGpuInstanceHierarchy"),
        group_create: get!("dcgmGroupCreate"),
        group_destroy: get!("dcgmGroupDestroy"),
        group_add: get!("dcgmGroupAddEntity"),
        field_group_create: get!("dcgmFieldGroupCreate"),
        field_group_destroy: get!("dcgmFieldGroupDestroy"),
        watch: get!("dcgmWatchFields"),
        unwatch: get!("dcgmUnwatchFields"),
        latest: get!("dcgmEntitiesGetLatestValues"),
        metric_groups: get!("dcgmProfGetSupportedMetricGroups"),
        error_string: get!("dcgmErrorString"),
        health_set: get!("dcgmHealthSet"),
        health_check: get!("dcgmHealthCheck"),
        link_status: get!("dcgmGetNvLinkLinkStatus"),
        version,
        place,
    };
    Ok(Box::leak(Box::new(api)))
}

/// One symbol of the leaked library.
fn sym<T: Copy>(library: &'static libloading::Library, name: &[u8]) -> Result<T, ()> {
    // SAFETY: the types are DCGM's C signatures (`dcgm_abi::sig`).
    unsafe { library.get::<T>(name).map(|s| *s) }.map_err(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code the ABI crate knows is named, whatever text the library gives (none, or
    /// its own); an unknown code keeps its number alone.
    #[test]
    fn return_codes_are_named() {
        assert_eq!(
            describe_code(None, dcgm_abi::DCGM_ST_NO_PERMISSION),
            "unknown error (DCGM_ST_NO_PERMISSION, DCGM return code -17)"
        );
        assert_eq!(
            describe_code(Some("The call timed out"), -11),
            "The call timed out (DCGM_ST_TIMEOUT, DCGM return code -11)"
        );
        assert_eq!(
            describe_code(Some(""), -999),
            "unknown error (DCGM return code -999)"
        );
        for (rc, name) in dcgm_abi::DCGM_ST_NAMES {
            assert!(describe_code(None, rc).contains(name), "{rc}");
        }
    }

    #[test]
    fn version_is_read_from_the_build_info() {
        let raw = "version:4.2.3;arch:x86_64;buildtype:Release;commit:abc";
        assert_eq!(parse_version(raw).as_deref(), Some("4.2.3"));
        assert_eq!(major_of("4.2.3"), Some(4));
        assert_eq!(major_of("3.3.9"), Some(3));
        assert_eq!(parse_version("arch:x86_64"), None);
        assert_eq!(major_of(""), None);
    }

    #[test]
    fn a_missing_library_is_one_clear_error() {
        let e = load(Some(Path::new("/nonexistent/libdcgm.so.4"))).err();
        let text = e.map(|e| e.to_string()).unwrap_or_default();
        assert!(text.contains("/nonexistent/libdcgm.so.4"), "{text}");
        assert!(text.contains("--dcgm-lib"), "{text}");
    }
}
