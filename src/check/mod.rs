//! `gpu-exporter check`: what this node's exporter can and cannot see, and why, in one report —
//! the files and flags, NVML (library, driver, init time), every GPU and MIG instance, every
//! configured field (served, unsupported, failed), and the attribution sources (kubelet
//! pod-resources, the Kubernetes API, processes) with their errors and the fix to try.
//!
//! - `args`: check's own arguments on top of the daemon's flags (clap);
//! - `run`: the daemon's configuration and pipeline, ticked a few times, one function per
//!   section of the report;
//! - `findings` (with `links` for NVLink and the fabric): how each finding reads;
//! - `report`: the report's items, verdict and forms (human, JSON, hardware report).
//!
//! This file only dispatches; [`main`] returns the exit status for `main.rs`, which alone
//! turns it into the process's.

pub mod args;
mod findings;
mod links;
mod report;
mod run;

pub use findings::{api, excerpt, from_snapshot, proc_root, socket};
pub use report::{Item, Report, Severity};
pub use run::run;

/// `gpu-exporter check …` (`args`: the process's arguments): parses them, runs the checks and
/// prints the report in the form asked for. Returns the exit status: 0 when everything
/// configured works, 1 when something does not (or the report cannot be printed); a usage
/// error is clap's (it exits 2, or 0 for `--help`).
pub fn main(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<u8, clap::Error> {
    let a = args::parse(args)?;
    let report = run(a.daemon);
    match a.output {
        args::Output::HardwareReport => {
            print!("{}", report.hardware_report(crate::base::version::VERSION));
        }
        args::Output::Json => match serde_json::to_string_pretty(&report) {
            Ok(t) => println!("{t}"),
            Err(e) => {
                eprintln!("gpu-exporter check: {e}");
                return Ok(1);
            }
        },
        args::Output::Human => print!("{}", report.human()),
    }
    Ok(report.exit_code())
}
