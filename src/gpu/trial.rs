//! A trial load of the NVML library in a child process, before the exporter loads it itself.
//!
//! While the dynamic loader opens a library it holds a lock that any thread of the process may
//! need: to register a thread-local destructor (a server thread's first response does, for
//! hyper's date cache), to unwind, to exit. A `dlopen` that blocks (the library or one of its
//! dependencies on a mount that hangs, a FIFO among them, a constructor that never returns)
//! would freeze the HTTP server and the shutdown with it. So the daemon first has a child
//! process (this executable, run as `gpu-exporter __trial-load-nvml [PATH]`) open the library
//! and exit, and loads it itself only once the child has ended normally: by then the files are
//! in the page cache and the in-process load is quick. A child that blocks holds only the
//! sampler's thread, as a hung `nvmlInit` would (the watchdog reports it), and is killed when
//! that thread ends (`PR_SET_PDEATHSIG`), with the process.
//!
//! The child never initialises NVML (only the exporter talks to the driver), and this module
//! never reads NVML values.

use std::ffi::OsStr;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};

/// The first argument that makes the executable a trial child (dispatched by `main`; not a
/// user-facing subcommand).
pub const ARG: &str = "__trial-load-nvml";

/// How a trial child ended that makes the library unsafe to load into the exporter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TrialError {
    /// A signal killed the child while it only opened the library.
    #[error(
        "killed a trial process that only opened it (signal {signal}{})",
        if *core_dumped { ", core dumped" } else { "" }
    )]
    Killed {
        /// The signal's number.
        signal: i32,
        /// The child dumped core.
        core_dumped: bool,
    },
}

/// The child's side: opens `lib` (a path, or a name the loader searches for) and exits; its
/// exit code: 0 opened, 1 not (the loader's message on stderr), 2 no library named.
pub fn child_main(lib: Option<&OsStr>) -> u8 {
    let Some(lib) = lib else {
        eprintln!("{ARG}: no library named");
        return 2;
    };
    // SAFETY: the library's initialisers run in this throwaway process, which exits next.
    match unsafe { libloading::Library::new(lib) } {
        Ok(_) => 0,
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
}

/// Runs a trial child for `lib` (a path, or a name the loader searches for) and waits for it. `Ok` when the exporter may load the library
/// itself: the child opened it, or failed to in a way the exporter's own load reports in full,
/// or no child could be started (then the exporter loads it directly, as without a trial).
/// `Err` with the child's end when it was killed: the library crashed the loader, and would
/// crash the exporter.
pub fn run(lib: &OsStr) -> Result<(), TrialError> {
    let mut cmd = Command::new("/proc/self/exe");
    cmd.arg(ARG)
        .arg(lib)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: `prctl` is async-signal-safe and touches nothing of the parent's state.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let status = match cmd.spawn().and_then(|mut c| c.wait()) {
        Ok(s) => s,
        Err(e) => {
            tracing::debug!("no trial load of NVML in a child process ({e}); loading it directly");
            return Ok(());
        }
    };
    match status.signal() {
        Some(signal) => Err(TrialError::Killed {
            signal,
            core_dumped: status.core_dumped(),
        }),
        None => Ok(()),
    }
}
