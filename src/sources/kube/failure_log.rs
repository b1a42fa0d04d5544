//! A reflector's failure log ([`FailureLog`]): which failures of a pod or ResourceSlice
//! watch are warned about (one per cause) and which only go to the debug log, so an outage of
//! any length is one warning per cause, not one per retry.
//!
//! Logging only; it must not count failures (the sources' `SourceStatus` does) or retry.

/// A reflector's failure log: a warning for a failure of another kind than the last one
/// logged (`meta::failure_kind`: another status code, or another start of the error chain; a
/// refused connection and a reset one are the same kind), a debug line for a repeat, so an
/// outage of any length is one warning per cause; a success (a complete list) forgets it, so
/// the next failure warns again. The failures are counted apart (`SourceStatus::errors`).
#[derive(Default)]
pub(crate) struct FailureLog {
    last: Option<String>,
}

impl FailureLog {
    /// Logs `line`, a failure of kind `kind`, at the level its kind calls for.
    pub(crate) fn note(&mut self, kind: String, line: &str) {
        if self.last.as_deref() == Some(kind.as_str()) {
            tracing::debug!("{line}");
        } else {
            tracing::warn!("{line} (logged again only when the cause changes)");
            self.last = Some(kind);
        }
    }

    /// A success: the next failure warns again.
    pub(crate) fn ok(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeat of the last kind is not warned again; another kind is; a success resets.
    #[test]
    fn one_warning_per_cause_until_a_success() {
        let mut log = FailureLog::default();
        let warned = |log: &FailureLog, kind: &str| log.last.as_deref() == Some(kind);
        log.note("listing 403".into(), "refused");
        assert!(warned(&log, "listing 403"));
        log.note("listing 403".into(), "refused again");
        assert!(warned(&log, "listing 403"));
        log.note("listing failed: ServiceError".into(), "unreachable");
        assert!(warned(&log, "listing failed: ServiceError"));
        log.ok();
        assert_eq!(log.last, None);
    }
}
