//! The process's signals: blocked on the first line of `main` ([`block_early`]), before any
//! thread exists, and delivered once every handler is installed ([`EarlySignals::register`]),
//! so that none of them can end the process by its default action after the dynamic loader
//! has handed over to `main`; then the shutdown signals (SIGTERM, Ctrl-C) the HTTP server waits
//! for ([`ShutdownSignals`]).
//!
//! SIGUSR1, SIGUSR2 and SIGALRM, which a DaemonSet's container may receive, are logged and
//! ignored once logging is up (`log_stray_signals`); SIGHUP is the counters reload, once the
//! file is known; SIGTERM and SIGINT are the shutdown, and also arm the exit guard
//! (`exit::Guard`), whose action is registered here with the others. A signal that arrives
//! before its listener runs is kept for it (tokio keeps one per kind; one sent while the set
//! was blocked is pending, and is delivered to the handlers when the set is unblocked). This
//! file must not decide what a signal does beyond logging it: the reload is the sampler's
//! (`sampler::reload`), the shutdown the daemon's.

use tokio::signal::unix::{Signal, SignalKind, signal};
use tracing::{error, info, warn};

use super::exit;

/// The signals the daemon handles, all blocked by [`block_early`] until their handlers are in.
pub const HANDLED: [libc::c_int; 6] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
];

/// The handled signals blocked on the main thread, with the mask the process started with.
/// Threads started while they are blocked (the async runtime's workers, and the blocking
/// threads those start) keep them blocked for good: the kernel delivers these signals to the
/// main thread or to a thread started after [`EarlySignals::register`], which is all the
/// handlers need.
pub struct Blocked {
    previous: Option<libc::sigset_t>,
    /// Why they could not be blocked, to be logged once logging is up.
    failure: Option<String>,
}

/// The signal set [`HANDLED`].
fn handled_set() -> libc::sigset_t {
    // SAFETY: sigemptyset and sigaddset only write the set we own; the signal numbers are
    // valid, so neither can fail.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in HANDLED {
            libc::sigaddset(&mut set, sig);
        }
        set
    }
}

/// Blocks SIGHUP, SIGINT, SIGTERM, SIGUSR1, SIGUSR2 and SIGALRM on the calling thread. Call it
/// on the first line of `main`, before any thread is started (threads inherit the mask): a
/// signal sent from then on stays pending, whatever its default action, until
/// [`EarlySignals::register`] has installed the handlers and unblocks it, or [`Blocked::restore`]
/// puts the process's own mask back (the subcommands, which keep the default actions).
pub fn block_early() -> Blocked {
    let set = handled_set();
    // SAFETY: pthread_sigmask reads `set` and writes `previous`, both ours.
    let (rc, previous) = unsafe {
        let mut previous: libc::sigset_t = std::mem::zeroed();
        let rc = libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut previous);
        (rc, previous)
    };
    if rc == 0 {
        Blocked {
            previous: Some(previous),
            failure: None,
        }
    } else {
        Blocked {
            previous: None,
            failure: Some(format!(
                "cannot block the signals during start-up ({}): one that arrives before its \
                 handler is installed ends the process",
                std::io::Error::from_raw_os_error(rc)
            )),
        }
    }
}

impl Blocked {
    /// Puts back the mask the process started with: a signal that arrived meanwhile is
    /// delivered now, with its default action. For the subcommands (`check`, `probe`), which
    /// install no handler.
    pub fn restore(self) {
        if let Some(previous) = self.previous {
            // SAFETY: pthread_sigmask reads a set we own.
            unsafe {
                libc::pthread_sigmask(libc::SIG_SETMASK, &previous, std::ptr::null_mut());
            }
        }
    }

    /// Unblocks the handled signals (whatever mask the process was started with: the daemon
    /// wants them all): those that arrived meanwhile are delivered to their handlers now.
    fn unblock(self) -> Option<String> {
        if self.previous.is_some() {
            let set = handled_set();
            // SAFETY: pthread_sigmask reads a set we own.
            let rc =
                unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
            if rc != 0 {
                return Some(format!(
                    "cannot unblock the signals after start-up ({}): SIGTERM, SIGHUP and the \
                     others are not received",
                    std::io::Error::from_raw_os_error(rc)
                ));
            }
        }
        self.failure
    }
}

/// SIGTERM's and SIGINT's listeners, registered early; [`ShutdownSignals::recv`] resolves at
/// the first of them, also one that arrived during start-up.
pub struct ShutdownSignals {
    terminate: Option<Signal>,
    interrupt: Option<Signal>,
}

/// The signals registered before anything else happens.
pub struct EarlySignals {
    stray: Vec<(&'static str, Signal)>,
    /// SIGHUP's listener, for the counters reload; `None` when it could not be registered.
    pub hangup: Option<Signal>,
    /// SIGTERM's and SIGINT's, for the shutdown; `None` once taken.
    pub shutdown: Option<ShutdownSignals>,
    /// The exit guard, armed by SIGTERM and SIGINT from now on; `None` when it could not be
    /// set up (logged with the failures) or once taken.
    pub guard: Option<exit::Guard>,
    /// The signals that could not be listened for, and why: logged once logging is up.
    pub failures: Vec<String>,
}

impl EarlySignals {
    /// Registers the listeners on `runtime`, then unblocks the signals `blocked` holds back: one
    /// that arrived since [`block_early`] reaches its listener now.
    pub fn register(runtime: &tokio::runtime::Handle, blocked: Blocked) -> Self {
        let _entered = runtime.enter();
        let mut failures = Vec::new();
        let mut stray = Vec::new();
        for (name, kind) in [
            ("SIGUSR1", SignalKind::user_defined1()),
            ("SIGUSR2", SignalKind::user_defined2()),
            ("SIGALRM", SignalKind::alarm()),
        ] {
            match signal(kind) {
                Ok(s) => stray.push((name, s)),
                Err(e) => failures.push(format!(
                    "cannot listen for {name} ({e}): it would end the process"
                )),
            }
        }
        let hangup = match signal(SignalKind::hangup()) {
            Ok(s) => Some(s),
            Err(e) => {
                failures.push(format!(
                    "cannot listen for SIGHUP ({e}): it would end the process, and counters \
                     reload on file change only"
                ));
                None
            }
        };
        let mut shutdown = |name: &str, kind: SignalKind| match signal(kind) {
            Ok(s) => Some(s),
            Err(e) => {
                failures.push(format!(
                    "cannot listen for {name} ({e}): it would end the process at once"
                ));
                None
            }
        };
        let shutdown = ShutdownSignals {
            terminate: shutdown("SIGTERM", SignalKind::terminate()),
            interrupt: shutdown("SIGINT", SignalKind::interrupt()),
        };
        let guard = match exit::Guard::arm() {
            Ok(g) => Some(g),
            Err(e) => {
                failures.push(format!(
                    "cannot set up the exit guard ({e}): a shutdown may wait on a thread stuck \
                     in NVML"
                ));
                None
            }
        };
        failures.extend(blocked.unblock());
        Self {
            stray,
            hangup,
            shutdown: Some(shutdown),
            guard,
            failures,
        }
    }

    /// Logs the registration failures, and from now on each stray signal (the first of a kind
    /// as a warning) on `runtime`. Call once logging is up.
    pub fn log_stray(&mut self, runtime: &tokio::runtime::Handle) {
        for f in &self.failures {
            warn!("{f}");
        }
        log_stray_signals(runtime, std::mem::take(&mut self.stray));
    }
}

/// Logs each of the stray signals registered early, the first of a kind as a warning, and
/// ignores them.
fn log_stray_signals(runtime: &tokio::runtime::Handle, stray: Vec<(&'static str, Signal)>) {
    for (name, mut s) in stray {
        runtime.spawn(async move {
            let mut seen: u64 = 0;
            while s.recv().await.is_some() {
                seen += 1;
                if seen == 1 {
                    warn!(
                        "{name} received and ignored (gpu-exporter reloads its counters on SIGHUP \
                         and stops on SIGTERM or SIGINT); further {name}s are logged at debug \
                         level"
                    );
                } else {
                    tracing::debug!(count = seen, "{name} received and ignored");
                }
            }
        });
    }
}

impl ShutdownSignals {
    /// Resolves at the first SIGTERM or Ctrl-C since [`EarlySignals::register`]; never when
    /// neither could be listened for (the failure was logged).
    pub async fn recv(self) {
        async fn first(s: Option<Signal>, name: &str) {
            match s {
                Some(mut s) => {
                    if s.recv().await.is_none() {
                        error!("the {name} listener ended: {name} is no longer received");
                        std::future::pending::<()>().await;
                    }
                }
                None => std::future::pending::<()>().await,
            }
        }
        tokio::select! {
            _ = first(self.interrupt, "SIGINT") => info!("Ctrl-C received, shutting down"),
            _ = first(self.terminate, "SIGTERM") => info!("SIGTERM received, shutting down"),
        }
    }
}
