//! A reflector's failure log (`FailureLog`): which failures of a pod or ResourceSlice
//! watch are warned about (one per cause) and which only go to the debug log, so an outage of
//! any length is one warning per cause, not one per retry.
//!
//! Logging only; it must not count failures (the reflectors' `ReflectorStatus` does) or retry.

use crate::base::cause_log::CauseLog;

/// A reflector's failure log: a warning for a failure of another cause than the last one
/// logged (`api_error::failure_kind`: another status code, or another start of the error chain; a
/// refused connection and a reset one are the same cause), a debug line for a repeat; a
/// success (a complete list) forgets it, so the next failure warns again. The failures are
/// counted apart (`ReflectorStatus::errors`).
#[derive(Default)]
pub(crate) struct FailureLog {
    causes: CauseLog,
}

impl FailureLog {
    /// Logs `line`, a failure of cause `kind`, at the level its cause calls for.
    pub(crate) fn note(&mut self, kind: String, line: &str) {
        if self.causes.is_new(kind) {
            tracing::warn!("{line} (logged again only when the cause changes)");
        } else {
            tracing::debug!("{line}");
        }
    }

    /// A success: the next failure warns again.
    pub(crate) fn ok(&mut self) {
        self.causes.ok();
    }
}
