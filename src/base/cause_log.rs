//! A log that speaks once per cause ([`CauseLog`]): whether a failure is of another cause than
//! the last one logged, and whether a success ends a run of failures; and [`cause`], the part
//! of a one-line error that names its cause. The Kubernetes writers and reflectors use it so
//! an outage of any length is one warning per cause, not one per call or retry.
//!
//! State and text only; it must not log (its callers choose the words and the level) or count.

/// The cause of the last failure logged, until a success.
#[derive(Debug, Default)]
pub struct CauseLog {
    last: Option<String>,
}

impl CauseLog {
    /// A failure of cause `cause`: true when it is not the cause logged last (log it then).
    pub fn is_new(&mut self, cause: String) -> bool {
        if self.last.as_deref() == Some(cause.as_str()) {
            false
        } else {
            self.last = Some(cause);
            true
        }
    }

    /// A success: true when it ends a run of failures (say so then); the next failure is new.
    pub fn ok(&mut self) -> bool {
        self.last.take().is_some()
    }
}

/// The first `parts` `:`-separated parts of `line`, which name its cause (`403 Forbidden`,
/// `failed to perform initial object list: ServiceError`) while the rest carries a detail that
/// may change from one failure to the next (a message, "closed" or "reset").
pub fn cause(line: &str, parts: usize) -> String {
    line.splitn(parts + 1, ':')
        .take(parts)
        .collect::<Vec<_>>()
        .join(":")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repeat of the last cause is not new; another cause is; a success that ends a run
    /// says so, and makes the same cause new again.
    #[test]
    fn once_per_cause_until_a_success() {
        let mut log = CauseLog::default();
        assert!(!log.ok(), "no run of failures to end");
        assert!(log.is_new("listing 403".into()));
        assert!(!log.is_new("listing 403".into()));
        assert!(log.is_new("listing failed: ServiceError".into()));
        assert!(log.ok());
        assert!(!log.ok());
        assert!(log.is_new("listing failed: ServiceError".into()));
    }

    #[test]
    fn the_cause_is_the_first_parts() {
        assert_eq!(
            cause("403 Forbidden: nodes is forbidden", 1),
            "403 Forbidden"
        );
        assert_eq!(
            cause(
                "failed to perform initial object list: ServiceError: client error",
                2
            ),
            "failed to perform initial object list: ServiceError"
        );
        assert_eq!(cause("no colon", 2), "no colon");
    }
}
