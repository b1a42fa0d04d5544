//! How the daemon's process ends: [`Exit`] (what `run` tells `main`), [`leave_now`] (an exit
//! that skips the exit handlers) and the exit [`Guard`]: a last resort that ends the process at the
//! end of the shutdown grace even when nothing else can run.
//!
//! All three exist for one hazard: a thread stuck inside NVML, or inside the dynamic loader
//! while it loads NVML, holding a lock that other code needs. The dynamic loader's lock is
//! taken by an ordinary exit (`_dl_fini`) and by any thread registering a thread-local
//! destructor, which the HTTP server's threads do on their first response and the log writer on
//! a thread's first line; a stuck `nvmlInit` or NVML call may hold NVML's own lock, which its
//! destructors may take. This file must not decide exit codes (`main` does) nor when the
//! shutdown starts (the signals do).

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

/// How the process is to end once `daemon::run` has returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Every thread the daemon waits for has stopped: return from `main`.
    Return,
    /// The sampler is still inside NVML (or the dynamic loader) after the grace: end with
    /// [`leave_now`], because an ordinary exit can wait on it forever.
    Now,
}

/// Ends the process at once with `code`, the log flushed, without the exit handlers that
/// returning from `main` runs: those unload libraries (`_dl_fini` takes the dynamic loader's
/// lock, which a thread stuck in `dlopen` holds) and run the libraries' destructors (NVML's
/// may wait for its own lock, which a thread stuck in an NVML call holds). The kernel releases
/// everything the process holds; nothing of the exporter needs a destructor at exit.
pub fn leave_now(code: u8) -> ! {
    let _ = std::io::stderr().flush();
    let _ = std::io::stdout().flush();
    // SAFETY: `_exit` only ends the process.
    unsafe { libc::_exit(i32::from(code)) }
}

/// The exit guard, armed: its SIGTERM and SIGINT actions are registered (by
/// `signals::EarlySignals`, with the other handlers, before the signals are unblocked), and a
/// signal that arrives before [`Guard::start`] is kept in its socket for the thread.
pub struct Guard {
    wait: UnixStream,
}

impl Guard {
    /// Registers the SIGTERM and SIGINT actions: each writes one byte to a socket the guard's
    /// thread reads once started.
    pub fn arm() -> std::io::Result<Self> {
        let (wait, wake) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        let fd = wake.as_raw_fd();
        // The write end stays open for the life of the process.
        std::mem::forget(wake);
        for sig in [libc::SIGTERM, libc::SIGINT] {
            // SAFETY: the action only calls `write` (async-signal-safe) on a non-blocking socket.
            unsafe {
                signal_hook_registry::register(sig, move || {
                    let _ = libc::write(fd, [1u8].as_ptr().cast(), 1);
                })
            }?;
        }
        Ok(Self { wait })
    }

    /// Starts the guard's thread: `grace` after the first SIGTERM or SIGINT (the ordinary
    /// shutdown, which ends sooner and logs why it left anything behind, uses less of it; for a
    /// signal that arrived before this call, `grace` from this call), it writes one line to
    /// stderr and ends the process with exit 0. Call it before NVML is first loaded (starting a
    /// thread may need the dynamic loader's lock). Until the signal it waits in `read`; after
    /// it, it uses only `nanosleep`, `write` and `_exit`: no allocation, no thread-local
    /// storage, no lock, so that nothing a stuck thread holds can stop it. The line is JSON
    /// with `json` (as the log is), without a time stamp. A failure to start it is returned
    /// for the caller to log: the ordinary shutdown still works without it.
    pub fn start(self, grace: Duration, json: bool) -> std::io::Result<()> {
        let mut wait = self.wait;
        let text = format!(
            "the shutdown did not end within {} s of SIGTERM or Ctrl-C (a thread stuck inside NVML \
         or the dynamic loader holds what it needs): exiting now",
            grace.as_secs()
        );
        let line = if json {
            format!(
                "{}\n",
                serde_json::json!({"level": "WARN", "fields": {"message": text}, "target": module_path!()})
            )
        } else {
            format!(" WARN {}: {text}\n", module_path!())
        };
        std::thread::Builder::new()
            .name("exit-guard".into())
            .spawn(move || {
                let mut byte = [0u8; 1];
                // Until the first signal (for good if the socket fails).
                loop {
                    match wait.read(&mut byte) {
                        Ok(1) => break,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                        _ => return,
                    }
                }
                std::thread::sleep(grace);
                // SAFETY: `write` of a buffer we own, then `_exit`, which only ends the process.
                unsafe {
                    let _ = libc::write(2, line.as_ptr().cast(), line.len());
                    libc::_exit(0)
                }
            })?;
        Ok(())
    }
}
