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
//! This file only dispatches: [`main`] runs `run` on a thread of its own within `--timeout` and
//! returns a [`Status`] for `main.rs`, which alone turns it into the process's exit.

pub mod args;
mod findings;
mod links;
mod report;
mod run;

pub use findings::{api, excerpt, from_snapshot, proc_root, socket};
pub use report::{Finding, Report, Severity};
pub use run::run;

/// How `gpu-exporter check` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// The report was printed; the exit status (0 everything configured works, 1 not).
    Done(u8),
    /// The checks did not finish within `--timeout` (a hung NVML or DCGM load, init or call);
    /// it has been said on stderr. Exit 1 without the exit handlers
    /// (`daemon::leave_now`): the stuck thread may hold the dynamic loader's lock, which they
    /// take.
    Hung,
}

/// `gpu-exporter check …` (`args`: the process's arguments): parses them, runs the checks on a
/// thread of their own within `--timeout`, and prints the report in the form asked for. A usage
/// error is clap's (it exits 2, or 0 for `--help`).
pub fn main(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<Status, clap::Error> {
    let a = args::parse(args)?;
    let (tx, rx) = std::sync::mpsc::channel();
    let daemon = a.daemon;
    let spawned = std::thread::Builder::new()
        .name("check".into())
        .spawn(move || {
            let _ = tx.send(run(daemon));
        });
    if let Err(e) = spawned {
        eprintln!("gpu-exporter check: cannot start a thread for the checks: {e}");
        return Ok(Status::Done(1));
    }
    let report = match rx.recv_timeout(a.timeout) {
        Ok(report) => report,
        Err(_) => {
            eprintln!(
                "gpu-exporter check: FAIL: the checks did not finish within {} s (--timeout): \
                 loading or initialising NVML (or DCGM), or a call into it, does not return. \
                 fix: look for a wedged driver (dmesg: Xid, \"NVRM\"), a hung mount under the \
                 library's path, or a stuck nvidia-persistenced; the daemon on this node \
                 reports the same stall on /health and gpu_exporter_sampler_stalled_seconds",
                a.timeout.as_secs()
            );
            return Ok(Status::Hung);
        }
    };
    match a.output {
        args::Output::HardwareReport => {
            print!("{}", report.hardware_report(crate::base::version::VERSION));
        }
        args::Output::Json => match serde_json::to_string_pretty(&report) {
            Ok(t) => println!("{t}"),
            Err(e) => {
                eprintln!("gpu-exporter check: {e}");
                return Ok(Status::Done(1));
            }
        },
        args::Output::Human => print!("{}", report.human()),
    }
    Ok(Status::Done(report.exit_code()))
}
