//! Go's duration syntax (`10s`, `1m30s`, `500ms`, `1h`), as dcgm-exporter's flags and
//! configuration file write it: the one parser of every flag, key and subcommand option that
//! takes a duration.
//!
//! Pure; it must not know which flag or key the text came from (callers name it in their own
//! errors, with the limits they add).

use std::time::Duration;

/// Why a text is not a duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not Go's syntax.
    #[error("not a duration such as 30s, 1m30s or 500ms")]
    Syntax,
    /// Below zero.
    #[error("a negative duration")]
    Negative,
}

/// Parses a Go duration; a negative one is refused.
pub fn parse_go(text: &str) -> Result<Duration, DurationError> {
    let ns = go_parse_duration::parse_duration(text).map_err(|_| DurationError::Syntax)?;
    u64::try_from(ns)
        .map(Duration::from_nanos)
        .map_err(|_| DurationError::Negative)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_and_what_is_not_one() {
        assert_eq!(parse_go("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_go("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_go("0s"), Ok(Duration::ZERO));
        assert_eq!(parse_go("-1s"), Err(DurationError::Negative));
        assert_eq!(parse_go("10"), Err(DurationError::Syntax));
        assert_eq!(parse_go("ten seconds"), Err(DurationError::Syntax));
    }
}
