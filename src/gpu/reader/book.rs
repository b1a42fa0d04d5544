//! The bookkeeping of unsupported fields and failed reads: logged once per entity, counted in
//! `gpu_exporter_field_read_errors_total{field,reason}` with NVML's error kind as the reason.
//!
//! It must not call NVML.

use std::collections::{BTreeMap, HashSet};

use nvml_wrapper::error::NvmlError;
use tracing::{info, warn};

use crate::catalogue::FieldDef;
use crate::snapshot::Unsupported;

/// Bookkeeping of unsupported fields and read errors.
#[derive(Default)]
pub(super) struct Book {
    pub(super) unsupported: HashSet<(String, u32)>,
    pub(super) unsupported_list: Vec<Unsupported>,
    pub(super) warned: HashSet<(String, u32)>,
    /// (entity key, step) of device-level steps already warned about (see [`Book::failed`]).
    pub(super) warned_steps: HashSet<(String, &'static str)>,
    /// Failed reads per (field or step, reason).
    pub(super) errors: BTreeMap<(&'static str, &'static str), u64>,
}

/// Where an entity sits, for bookkeeping and logs.
pub(super) struct Place<'a> {
    /// Key of the unsupported-field memory.
    pub(super) key: &'a str,
    /// UUID of the physical GPU.
    pub(super) uuid: &'a str,
    pub(super) gpu: u32,
    pub(super) gi: Option<u32>,
}

impl Book {
    /// Counts a failed device-level step (`step` is its name in
    /// `gpu_exporter_field_read_errors_total`) and warns once per entity and step, as field
    /// read failures are.
    pub(super) fn failed(
        &mut self,
        step: &'static str,
        key: &str,
        gpu: u32,
        what: &str,
        e: &NvmlError,
    ) {
        *self.errors.entry((step, reason(e))).or_default() += 1;
        if self.warned_steps.insert((key.to_owned(), step)) {
            warn!(
                gpu,
                "{what} failed: {e} (further failures are counted in \
                 gpu_exporter_field_read_errors_total{{field=\"{step}\"}})"
            );
        }
    }

    pub(super) fn is_unsupported(&self, key: &str, field: &FieldDef) -> bool {
        self.unsupported.contains(&(key.to_owned(), field.id))
    }

    pub(super) fn mark_unsupported(&mut self, at: &Place<'_>, field: &'static FieldDef, why: &str) {
        if self.unsupported.insert((at.key.to_owned(), field.id)) {
            let entity = match at.gi {
                Some(gi) => format!("GPU {} instance {gi}", at.gpu),
                None => format!("GPU {}", at.gpu),
            };
            info!(
                field = field.name,
                gpu = at.gpu,
                "{} is not available on {entity} ({}): {why}; it will not be exported for it",
                field.name,
                at.key
            );
            self.unsupported_list.push(Unsupported {
                gpu: at.gpu,
                gpu_instance_id: at.gi,
                field: field.name,
            });
            self.unsupported_list.sort();
        }
    }

    /// Classifies a read result (a value or a label string). Returns what to export, if any.
    pub(super) fn settle<T>(
        &mut self,
        at: &Place<'_>,
        field: &'static FieldDef,
        lost: &mut bool,
        r: Result<Option<T>, NvmlError>,
    ) -> Option<T> {
        match r {
            Ok(v) => v,
            Err(e) if is_unsupported(&e) => {
                let why = match e {
                    // Carries either the loader's "undefined symbol" text or our own reason.
                    NvmlError::FailedToLoadSymbol(s) => s,
                    e => e.to_string(),
                };
                self.mark_unsupported(at, field, &why);
                None
            }
            Err(NvmlError::GpuLost) => {
                *lost = true;
                None
            }
            Err(e) => {
                *self.errors.entry((field.name, reason(&e))).or_default() += 1;
                if self.warned.insert((at.key.to_owned(), field.id)) {
                    warn!(
                        field = field.name,
                        gpu = at.gpu,
                        "reading {} failed: {e} (further failures are counted in gpu_exporter_field_read_errors_total)",
                        field.name
                    );
                }
                None
            }
        }
    }
}

pub(super) fn is_unsupported(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::NotSupported | NvmlError::FailedToLoadSymbol(_) | NvmlError::FunctionNotFound
    )
}

/// `NvmlError` is not `Clone` (it can wrap a loader error); a cached result is handed out
/// again as a copy that keeps NVML's error kind. Only the loader and C-string errors, which
/// cannot occur on a read, become `Unknown`.
#[allow(deprecated)] // AlreadyInitialized: still a variant, kept as it is
pub(super) fn clone_err(e: &NvmlError) -> NvmlError {
    match e {
        NvmlError::SetReleaseFailed => NvmlError::SetReleaseFailed,
        NvmlError::GetPciInfoFailed => NvmlError::GetPciInfoFailed,
        NvmlError::PciInfoToCFailed => NvmlError::PciInfoToCFailed,
        NvmlError::Uninitialized => NvmlError::Uninitialized,
        NvmlError::InvalidArg => NvmlError::InvalidArg,
        NvmlError::NotSupported => NvmlError::NotSupported,
        NvmlError::NoPermission => NvmlError::NoPermission,
        NvmlError::AlreadyInitialized => NvmlError::AlreadyInitialized,
        NvmlError::NotFound => NvmlError::NotFound,
        NvmlError::InsufficientPower => NvmlError::InsufficientPower,
        NvmlError::DriverNotLoaded => NvmlError::DriverNotLoaded,
        NvmlError::Timeout => NvmlError::Timeout,
        NvmlError::IrqIssue => NvmlError::IrqIssue,
        NvmlError::LibraryNotFound => NvmlError::LibraryNotFound,
        NvmlError::FunctionNotFound => NvmlError::FunctionNotFound,
        NvmlError::CorruptedInfoROM => NvmlError::CorruptedInfoROM,
        NvmlError::GpuLost => NvmlError::GpuLost,
        NvmlError::ResetRequired => NvmlError::ResetRequired,
        NvmlError::OperatingSystem => NvmlError::OperatingSystem,
        NvmlError::LibRmVersionMismatch => NvmlError::LibRmVersionMismatch,
        NvmlError::InUse => NvmlError::InUse,
        NvmlError::InsufficientMemory => NvmlError::InsufficientMemory,
        NvmlError::NoData => NvmlError::NoData,
        NvmlError::VgpuEccNotSupported => NvmlError::VgpuEccNotSupported,
        NvmlError::Unknown => NvmlError::Unknown,
        NvmlError::FailedToLoadSymbol(s) => NvmlError::FailedToLoadSymbol(s.clone()),
        NvmlError::StringTooLong {
            max_len,
            actual_len,
        } => NvmlError::StringTooLong {
            max_len: *max_len,
            actual_len: *actual_len,
        },
        NvmlError::IncorrectBits(b) => NvmlError::IncorrectBits(b.clone()),
        NvmlError::UnexpectedVariant(v) => NvmlError::UnexpectedVariant(*v),
        NvmlError::InsufficientSize(n) => NvmlError::InsufficientSize(*n),
        NvmlError::NulError(_) | NvmlError::LibloadingError(_) | NvmlError::Utf8Error(_) => {
            NvmlError::Unknown
        }
    }
}

/// The `reason` label of `gpu_exporter_field_read_errors_total`: NVML's error kind in
/// snake_case (`timeout`, `gpu_is_lost`, `no_permission`, `insufficient_size`, `unknown`, …).
#[allow(deprecated)] // AlreadyInitialized: still a variant, named as it is
pub fn reason(e: &NvmlError) -> &'static str {
    match e {
        NvmlError::Uninitialized => "uninitialized",
        NvmlError::InvalidArg => "invalid_argument",
        NvmlError::NotSupported => "not_supported",
        NvmlError::NoPermission => "no_permission",
        NvmlError::AlreadyInitialized => "already_initialized",
        NvmlError::NotFound => "not_found",
        NvmlError::InsufficientSize(_) => "insufficient_size",
        NvmlError::InsufficientPower => "insufficient_power",
        NvmlError::DriverNotLoaded => "driver_not_loaded",
        NvmlError::Timeout => "timeout",
        NvmlError::IrqIssue => "irq_issue",
        NvmlError::LibraryNotFound => "library_not_found",
        NvmlError::FunctionNotFound | NvmlError::FailedToLoadSymbol(_) => "function_not_found",
        NvmlError::CorruptedInfoROM => "corrupted_inforom",
        NvmlError::GpuLost => "gpu_is_lost",
        NvmlError::ResetRequired => "reset_required",
        NvmlError::OperatingSystem => "operating_system",
        NvmlError::LibRmVersionMismatch => "lib_rm_version_mismatch",
        NvmlError::InUse => "in_use",
        NvmlError::InsufficientMemory => "insufficient_memory",
        NvmlError::NoData => "no_data",
        NvmlError::VgpuEccNotSupported => "vgpu_ecc_not_supported",
        NvmlError::StringTooLong { .. }
        | NvmlError::IncorrectBits(_)
        | NvmlError::UnexpectedVariant(_)
        | NvmlError::SetReleaseFailed
        | NvmlError::GetPciInfoFailed
        | NvmlError::PciInfoToCFailed
        | NvmlError::NulError(_)
        | NvmlError::LibloadingError(_)
        | NvmlError::Utf8Error(_) => "invalid_answer",
        NvmlError::Unknown => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn place() -> Place<'static> {
        Place {
            key: "GPU-0",
            uuid: "GPU-0",
            gpu: 0,
            gi: None,
        }
    }

    #[test]
    fn failed_reads_are_counted_per_field_and_nvml_error_kind() {
        let power = crate::catalogue::lookup("DCGM_FI_DEV_POWER_USAGE").unwrap();
        let temp = crate::catalogue::lookup("DCGM_FI_DEV_GPU_TEMP").unwrap();
        let mut book = Book::default();
        let mut lost = false;
        for e in [
            NvmlError::Timeout,
            NvmlError::Timeout,
            NvmlError::NoPermission,
        ] {
            assert_eq!(book.settle::<f64>(&place(), power, &mut lost, Err(e)), None);
        }
        book.settle::<f64>(&place(), temp, &mut lost, Err(NvmlError::Unknown));
        // Neither unsupported nor lost is a read error.
        book.settle::<f64>(&place(), temp, &mut lost, Err(NvmlError::NotSupported));
        assert!(!lost);
        book.settle::<f64>(&place(), power, &mut lost, Err(NvmlError::GpuLost));
        assert!(lost);
        let got: Vec<_> = book.errors.iter().map(|((f, r), n)| (*f, *r, *n)).collect();
        assert_eq!(
            got,
            vec![
                ("DCGM_FI_DEV_GPU_TEMP", "unknown", 1),
                ("DCGM_FI_DEV_POWER_USAGE", "no_permission", 1),
                ("DCGM_FI_DEV_POWER_USAGE", "timeout", 2),
            ]
        );
        book.failed(
            "processes",
            "GPU-0",
            0,
            "listing processes",
            &NvmlError::InsufficientSize(Some(8)),
        );
        assert_eq!(
            book.errors.get(&("processes", "insufficient_size")),
            Some(&1)
        );
    }

    #[test]
    fn a_cached_error_keeps_its_kind() {
        for e in [
            NvmlError::Timeout,
            NvmlError::GpuLost,
            NvmlError::NoPermission,
            NvmlError::InsufficientSize(Some(3)),
            NvmlError::ResetRequired,
            NvmlError::NoData,
            NvmlError::FailedToLoadSymbol("nvmlX".into()),
        ] {
            assert_eq!(reason(&clone_err(&e)), reason(&e), "{e:?}");
            assert_eq!(clone_err(&e).to_string(), e.to_string());
        }
        assert_eq!(reason(&NvmlError::GpuLost), "gpu_is_lost");
        assert_eq!(reason(&NvmlError::Timeout), "timeout");
    }
}
