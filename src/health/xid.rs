//! The one Xid table: each code NVIDIA's Xid catalogue lists that a datacenter GPU reports in
//! practice, with the text dcgm-exporter's `err_msg` label gives it (the exposition writes it
//! through [`err_msg`]), its class (application, driver, hardware, NVLink, memory), how
//! serious one occurrence is, and the catalogue's recommended resolution (the health model's
//! use). A code not in the table is class `unknown`, a warning, with "watch whether it
//! repeats" as its action, and `Unknown Error` as its text.
//!
//! Data and two lookups only: it must not read NVML or keep state.

use crate::snapshot::{Action, Reason, Verdict};

/// The catalogue's classes of Xid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XidClass {
    /// The job caused it (a bad kernel, a page fault in user code); the GPU is fine.
    Application,
    /// The driver or the GPU's firmware (GSP, micro-controllers).
    Driver,
    /// The GPU's hardware or its bus.
    Hardware,
    /// NVLink or the chip-to-chip link.
    Nvlink,
    /// Framebuffer memory: ECC, row remapping, page retirement.
    Memory,
    /// Not in the table.
    Unknown,
}

impl XidClass {
    /// The health reason of an Xid of this class.
    pub fn reason(self) -> Reason {
        match self {
            XidClass::Application => Reason::XidApplication,
            XidClass::Driver => Reason::XidDriver,
            XidClass::Hardware => Reason::XidHardware,
            XidClass::Nvlink => Reason::XidNvlink,
            XidClass::Memory => Reason::XidMemory,
            XidClass::Unknown => Reason::XidUnknown,
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct XidInfo {
    /// The Xid code.
    pub code: u64,
    /// dcgm-exporter's text for it: the `err_msg` label of `DCGM_FI_DEV_XID_ERRORS`, in the
    /// words of NVIDIA's Xid catalogue.
    pub err_msg: &'static str,
    /// Its class.
    pub class: XidClass,
    /// How serious one occurrence is.
    pub severity: Verdict,
    /// The recommended resolution.
    pub action: Action,
    /// What it means, in a few words.
    pub meaning: &'static str,
}

const fn row(
    code: u64,
    err_msg: &'static str,
    class: XidClass,
    severity: Verdict,
    action: Action,
    meaning: &'static str,
) -> XidInfo {
    XidInfo {
        code,
        err_msg,
        class,
        severity,
        action,
        meaning,
    }
}

use Action::*;
use Verdict::{Critical, Warning};
use XidClass::{Application, Driver, Hardware, Memory, Nvlink};

/// The table, by code.
pub const XID_TABLE: &[XidInfo] = &[
    row(
        8,
        "GPU stopped processing",
        Driver,
        Warning,
        RestartJob,
        "GPU stopped processing",
    ),
    row(
        13,
        "Graphics Engine Exception",
        Application,
        Warning,
        RestartJob,
        "graphics engine exception",
    ),
    row(
        31,
        "GPU memory page fault",
        Application,
        Warning,
        RestartJob,
        "GPU memory page fault",
    ),
    row(
        32,
        "Invalid or corrupted push buffer stream",
        Driver,
        Warning,
        RestartJob,
        "invalid or corrupted push buffer stream",
    ),
    row(
        38,
        "Driver firmware error",
        Driver,
        Warning,
        ResetGpu,
        "driver firmware error",
    ),
    row(
        43,
        "GPU stopped processing",
        Application,
        Warning,
        RestartJob,
        "GPU stopped processing (the job's channel)",
    ),
    row(
        45,
        "Preemptive cleanup, due to previous errors",
        Application,
        Warning,
        Watch,
        "preemptive cleanup after earlier errors",
    ),
    row(
        48,
        "Double Bit ECC Error",
        Memory,
        Critical,
        ResetGpu,
        "double-bit ECC error",
    ),
    row(
        61,
        "Internal micro-controller breakpoint/warning",
        Driver,
        Warning,
        ResetGpu,
        "internal micro-controller breakpoint or warning",
    ),
    row(
        62,
        "Internal micro-controller halt",
        Driver,
        Critical,
        ResetGpu,
        "internal micro-controller halt",
    ),
    row(
        63,
        "ECC page retirement or row remapping recording event",
        Memory,
        Warning,
        ResetGpu,
        "row remap or page retirement recorded",
    ),
    row(
        64,
        "ECC page retirement or row remapper recording failure",
        Memory,
        Critical,
        ResetGpu,
        "row remap or page retirement could not be recorded",
    ),
    row(
        68,
        "NVDEC0 Exception",
        Application,
        Warning,
        RestartJob,
        "video decoder exception",
    ),
    row(
        69,
        "Graphics Engine class error",
        Application,
        Warning,
        RestartJob,
        "graphics engine class error",
    ),
    row(
        74,
        "NVLINK Error",
        Nvlink,
        Critical,
        CheckNvlink,
        "NVLink error",
    ),
    row(
        79,
        "GPU has fallen off the bus",
        Hardware,
        Critical,
        RebootNode,
        "GPU has fallen off the bus",
    ),
    row(
        92,
        "High single-bit ECC error rate",
        Memory,
        Warning,
        Watch,
        "high single-bit ECC error rate",
    ),
    row(
        94,
        "Contained ECC error",
        Memory,
        Warning,
        RestartJob,
        "contained ECC error",
    ),
    row(
        95,
        "Uncontained ECC error",
        Memory,
        Critical,
        ResetGpu,
        "uncontained ECC error",
    ),
    row(
        109,
        "Context Switch Timeout Error",
        Application,
        Warning,
        RestartJob,
        "context switch timeout",
    ),
    row(
        119,
        "GSP RPC Timeout",
        Driver,
        Critical,
        ResetGpu,
        "GSP RPC timeout",
    ),
    row(120, "GSP Error", Driver, Critical, ResetGpu, "GSP error"),
    row(
        121,
        "C2C Link Error",
        Nvlink,
        Critical,
        ResetGpu,
        "C2C link error",
    ),
    row(
        140,
        "Unrecovered ECC Error",
        Memory,
        Critical,
        ResetGpu,
        "unrecovered ECC error",
    ),
    row(
        154,
        "GPU Recovery Action Changed",
        Driver,
        Warning,
        Watch,
        "GPU recovery action changed",
    ),
];

/// The `err_msg` label of `DCGM_FI_DEV_XID_ERRORS` for `code` (the last Xid; 0 for none yet).
pub fn err_msg(code: u64) -> &'static str {
    if code == 0 {
        "No Error"
    } else {
        classify(code).err_msg
    }
}

/// What the catalogue says about `code`.
pub fn classify(code: u64) -> XidInfo {
    match XID_TABLE.binary_search_by_key(&code, |r| r.code) {
        Ok(i) => XID_TABLE[i],
        Err(_) => row(
            code,
            "Unknown Error",
            XidClass::Unknown,
            Warning,
            Watch,
            "not in the Xid catalogue table",
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_sorted_by_code_without_repeats() {
        assert!(XID_TABLE.windows(2).all(|w| w[0].code < w[1].code));
    }

    #[test]
    fn codes_are_classified_as_the_catalogue_does() {
        let c = |code| {
            let i = classify(code);
            (i.class, i.severity, i.action)
        };
        assert_eq!(c(79), (Hardware, Critical, RebootNode));
        assert_eq!(c(48), (Memory, Critical, ResetGpu));
        for app in [13, 31, 43] {
            assert_eq!(c(app), (Application, Warning, RestartJob), "Xid {app}");
        }
        assert_eq!(c(74).0, Nvlink);
        assert_eq!(c(94), (Memory, Warning, RestartJob));
        assert_eq!(c(95), (Memory, Critical, ResetGpu));
        assert_eq!(c(63).0, Memory);
        assert_eq!(c(64), (Memory, Critical, ResetGpu));
        assert_eq!(c(119), (Driver, Critical, ResetGpu));
        assert_eq!(c(120).0, Driver);
        assert_eq!(c(92), (Memory, Warning, Watch));
        assert_eq!(c(4242), (XidClass::Unknown, Warning, Watch));
        assert_eq!(classify(4242).class.reason(), Reason::XidUnknown);
    }

    /// The `err_msg` label: dcgm-exporter's words for every code of the table (38 among
    /// them, which had none before the two tables were one), "No Error" for 0.
    #[test]
    fn err_msg_is_dcgm_exporters_text() {
        assert_eq!(err_msg(79), "GPU has fallen off the bus");
        assert_eq!(err_msg(38), "Driver firmware error");
        assert_eq!(err_msg(0), "No Error");
        assert_eq!(err_msg(9999), "Unknown Error");
        assert!(XID_TABLE.iter().all(|r| !r.err_msg.is_empty()));
    }
}
