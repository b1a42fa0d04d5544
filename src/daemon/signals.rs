//! The process's signals: the ones registered first thing, before the flags are even parsed,
//! so that none of them can end the process during start-up by its default action, and the
//! shutdown signals (SIGTERM, Ctrl-C) the HTTP server waits for.
//!
//! SIGUSR1, SIGUSR2 and SIGALRM, which a DaemonSet's container may receive, are logged and
//! ignored once logging is up (`log_stray_signals`); SIGHUP is the counters reload, once the
//! file is known. A signal that arrives before its listener runs is kept for it (tokio keeps one
//! per kind). This file must not decide what a signal does beyond logging it: the reload is the
//! sampler's (`sampler::reload`), the shutdown the daemon's.

use tokio::signal::unix::{Signal, SignalKind, signal};
use tracing::{error, info, warn};

/// The signals registered before anything else happens.
pub struct EarlySignals {
    stray: Vec<(&'static str, Signal)>,
    /// SIGHUP's listener, for the counters reload; `None` when it could not be registered.
    pub hangup: Option<Signal>,
    /// The signals that could not be listened for, and why: logged once logging is up.
    pub failures: Vec<String>,
}

impl EarlySignals {
    /// Registers the listeners on `runtime`.
    pub fn register(runtime: &tokio::runtime::Handle) -> Self {
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
        Self {
            stray,
            hangup,
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

/// Resolves at the first SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            error!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    let term = async {
        match signal(SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                error!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    tokio::select! {
        _ = ctrl_c => info!("Ctrl-C received, shutting down"),
        _ = term => info!("SIGTERM received, shutting down"),
    }
}
