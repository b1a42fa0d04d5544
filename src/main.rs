//! The `gpu-exporter` binary: flag parsing, logging set-up and one call into the library —
//! [`daemon::run`] (the exporter), `check` or `probe` (or, run by the daemon itself, a trial
//! load of NVML in a child process: `gpu::trial`).
//!
//! Only this file decides exit codes: 0 after a shutdown on SIGTERM or Ctrl-C (ended with
//! `daemon::leave_now` when a thread is stuck inside NVML), 1 for a configuration error (bad
//! flag, bad counters CSV, unusable `--simulate`) or a failed start, 2 for command-line syntax
//! (from clap). `check` and `probe` return theirs (0 passed, 1 failed; a `check` that timed out
//! on a hung NVML or DCGM ends with `leave_now(1)`).

use std::ffi::{OsStr, OsString};
use std::process::ExitCode;

use gpu_exporter::config::{Cli, LogConfig};
use gpu_exporter::daemon::{
    self,
    signals::{self, EarlySignals},
};
use gpu_exporter::gpu::trial;
use gpu_exporter::{check, probe};

fn init_logging(log: LogConfig) {
    // kube's client logs every failed API call at ERROR (`failed with status 500`), and its
    // watcher every refused list or watch at WARN (`watch list error with 403`, each retry);
    // the exporter reports each failure itself, once per change of state (notify::writer,
    // sources::kube), so those lines are left out unless asked for (--debug or RUST_LOG).
    let default = if log.debug {
        "debug"
    } else {
        "info,kube_client::client::builder=off,kube_runtime::watcher=error"
    };
    // A blank RUST_LOG counts as unset, as every blank variable does.
    let filter = gpu_exporter::config::env_value("RUST_LOG")
        .and_then(|v| v.into_string().ok())
        .and_then(|v| tracing_subscriber::EnvFilter::try_new(v).ok())
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new(default));
    // Colour codes only on a terminal: a DaemonSet's stderr is a pipe to a log file.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(std::io::stderr);
    if log.json {
        builder.json().init();
    } else {
        builder.init();
    }
}

/// A subcommand's status, or its usage error printed (clap exits 2, or 0 for `--help`).
fn status(result: Result<u8, clap::Error>) -> ExitCode {
    result.map_or_else(|e| e.exit(), ExitCode::from)
}

fn main() -> ExitCode {
    // First of all, before any thread exists: the signals the daemon handles wait, blocked,
    // until their handlers are installed (their default action ends the process).
    let blocked = signals::block_early();
    let args: Vec<OsString> = std::env::args_os().collect();
    match args.get(1).map(OsString::as_os_str) {
        Some(s) if s == OsStr::new("probe") => {
            blocked.restore();
            return status(probe::main(args));
        }
        Some(s) if s == OsStr::new("check") => {
            blocked.restore();
            return match check::main(args) {
                Ok(check::Status::Done(code)) => ExitCode::from(code),
                Ok(check::Status::Hung) => daemon::leave_now(1),
                Err(e) => e.exit(),
            };
        }
        // The daemon's trial load of NVML in a child process.
        Some(s) if s == OsStr::new(trial::ARG) => {
            blocked.restore();
            return ExitCode::from(trial::child_main(args.get(2).map(OsString::as_os_str)));
        }
        _ => {}
    }
    // One malloc arena and large blocks mapped on their own, set before the first thread
    // starts (base::process); a refusal leaves glibc's default, which only costs memory.
    let _ = gpu_exporter::base::process::heap_settings();
    // The runtime first, and the signals that would end the process registered on it before
    // anything else happens; then they are unblocked, and one sent meanwhile reaches its
    // handler.
    let rt = match daemon::runtime() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("gpu-exporter: error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let early = EarlySignals::register(rt.handle(), blocked);
    let settings = match Cli::try_parse_go_style(args).map(Cli::merge_config_file) {
        Err(e) => e.exit(),
        Ok(Err(e)) => {
            eprintln!("gpu-exporter: error: {e}");
            return ExitCode::FAILURE;
        }
        Ok(Ok(settings)) => settings,
    };
    init_logging(settings.log());
    match daemon::run(settings, rt, early) {
        Ok(daemon::Exit::Return) => ExitCode::SUCCESS,
        Ok(daemon::Exit::Now) => daemon::leave_now(0),
        Err(e) => {
            eprintln!("gpu-exporter: error: {e}");
            ExitCode::FAILURE
        }
    }
}
