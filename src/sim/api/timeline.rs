//! The scenario's API server faults (`[kubernetes] api_faults`): write faults that begin and
//! end at scenario times, validated here and played onto the fake API server as the scenario
//! clock passes them, so `--simulate` (and the tests on the binary) can show an API server
//! that refuses, errors, is slow or cannot be reached, and then recovers; and the table's
//! `rbac` rules, read here and applied for the whole run by the simulated cluster.
//!
//! It must not serve requests (the server does) or decide what a fault does to a write
//! (`WriteFault` and the server's fault middleware, `faults`, do).

use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use super::FakeApi;
use super::store::{Inner, WriteFault};
use crate::gpu::xid::Clock;

/// How often the player looks at the scenario clock.
const POLL: Duration = Duration::from_millis(50);

/// The longest delay a fault may ask for.
const MAX_DELAY_S: f64 = 600.0;

/// One entry of `[kubernetes] api_faults`, as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApiFault {
    at: f64,
    until: Option<f64>,
    #[serde(default)]
    path: String,
    status: Option<u16>,
    #[serde(default)]
    delay: f64,
    #[serde(default)]
    unreachable: bool,
}

/// The scenario's `[kubernetes]` table, as far as the API server uses it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawKubernetes {
    #[serde(default)]
    api_faults: Vec<RawApiFault>,
    /// The exporter's RBAC rules, for the whole run ([`FakeApi::set_rbac`]); none: all allowed.
    pub rbac: Option<Vec<super::RbacRule>>,
}

/// Why `[kubernetes] api_faults` cannot be played; names the entry and key.
#[derive(Debug, thiserror::Error)]
pub enum ApiFaultError {
    /// A value is out of range.
    #[error("scenario [kubernetes] api_faults[{index}].{key}: {problem}")]
    Invalid {
        /// The entry's place in the list, from 0.
        index: usize,
        /// The key at fault.
        key: &'static str,
        /// What is wrong with it.
        problem: String,
    },
}

/// A write fault from scenario time `at` until `until` (for good when `None`).
#[derive(Debug, Clone, PartialEq)]
pub struct TimedWriteFault {
    /// When it begins, in scenario seconds.
    pub at: f64,
    /// When it ends, in scenario seconds.
    pub until: Option<f64>,
    /// What it does meanwhile.
    pub fault: WriteFault,
}

/// The validated timeline of a scenario's `[kubernetes]` table (empty without one).
pub fn parse(raw: Option<RawKubernetes>) -> Result<Vec<TimedWriteFault>, ApiFaultError> {
    let raw = raw.unwrap_or_default();
    let mut out = Vec::with_capacity(raw.api_faults.len());
    for (index, f) in raw.api_faults.into_iter().enumerate() {
        let bad = |key, problem: String| ApiFaultError::Invalid {
            index,
            key,
            problem,
        };
        if !f.at.is_finite() || f.at < 0.0 {
            return Err(bad("at", format!("{} is not a time >= 0", f.at)));
        }
        if let Some(u) = f.until
            && (!u.is_finite() || u <= f.at)
        {
            return Err(bad("until", format!("{u} is not after at = {}", f.at)));
        }
        if let Some(s) = f.status
            && !(400..=599).contains(&s)
        {
            return Err(bad(
                "status",
                format!("{s} is not an error status (400-599)"),
            ));
        }
        if !f.delay.is_finite() || !(0.0..=MAX_DELAY_S).contains(&f.delay) {
            return Err(bad(
                "delay",
                format!("{} is not 0 to {MAX_DELAY_S} seconds", f.delay),
            ));
        }
        if f.unreachable {
            if f.status.is_some() || f.delay != 0.0 || !f.path.is_empty() {
                return Err(bad(
                    "unreachable",
                    "takes no status, delay or path: the whole server is down".to_owned(),
                ));
            }
        } else if f.status.is_none() && f.delay == 0.0 {
            return Err(bad(
                "status",
                "a fault needs a status, a delay, both, or unreachable = true".to_owned(),
            ));
        }
        out.push(TimedWriteFault {
            at: f.at,
            until: f.until,
            fault: WriteFault {
                path_prefix: f.path,
                status: f.status,
                delay: Duration::from_secs_f64(f.delay),
                unreachable: f.unreachable,
            },
        });
    }
    Ok(out)
}

/// The faults in force at scenario time `t`, in the timeline's order.
pub fn active(timeline: &[TimedWriteFault], t: f64) -> Vec<WriteFault> {
    timeline
        .iter()
        .filter(|f| f.at <= t && f.until.is_none_or(|u| t < u))
        .map(|f| f.fault.clone())
        .collect()
}

impl FakeApi {
    /// Plays `timeline` onto this server's write faults as `clock` (scenario seconds) passes
    /// its times, on the current tokio runtime, until the server is dropped. It replaces
    /// whatever [`FakeApi::set_write_faults`] set whenever the faults in force change.
    pub fn play_write_faults(&self, timeline: Vec<TimedWriteFault>, clock: Clock) {
        if timeline.is_empty() {
            return;
        }
        let inner: Arc<Inner> = Arc::clone(&self.inner);
        let apply = |inner: &Inner, now: &[WriteFault]| {
            inner.set_faults(now.to_vec());
            tracing::info!(
                faults = now.len(),
                "simulated API server: write faults now {now:?}"
            );
        };
        // The faults in force now, before any client can connect.
        let mut last = active(&timeline, clock());
        apply(&inner, &last);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(POLL).await;
                let now = active(&timeline, clock());
                if inner.lock().closed {
                    return;
                }
                if last != now {
                    apply(&inner, &now);
                    last = now;
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn table(text: &str) -> Result<Vec<TimedWriteFault>, ApiFaultError> {
        parse(Some(toml::from_str(text).unwrap()))
    }

    #[test]
    fn faults_are_in_force_between_at_and_until() {
        let t = table(
            "api_faults = [{ at = 1, until = 3, path = \"/api/v1/nodes/\", status = 403 },\
             { at = 2, delay = 7.5 }]",
        )
        .unwrap();
        assert!(active(&t, 0.5).is_empty());
        assert_eq!(active(&t, 1.0)[0].status, Some(403));
        assert_eq!(active(&t, 1.0)[0].path_prefix, "/api/v1/nodes/");
        assert_eq!(active(&t, 2.5).len(), 2);
        let late = active(&t, 100.0);
        assert_eq!(late.len(), 1);
        assert_eq!(late[0].delay, Duration::from_millis(7500));
        assert_eq!(late[0].status, None);
        assert!(parse(None).unwrap().is_empty());
        let t = table("api_faults = [{ at = 4, until = 9, unreachable = true }]").unwrap();
        assert!(active(&t, 3.9).is_empty());
        assert!(active(&t, 4.0)[0].unreachable);
    }

    #[test]
    fn bad_entries_name_their_key() {
        for (text, want) in [
            (
                "api_faults = [{ at = -1, status = 500 }]",
                "api_faults[0].at",
            ),
            (
                "api_faults = [{ at = 0, status = 500 }, { at = 2, until = 1, status = 500 }]",
                "api_faults[1].until",
            ),
            (
                "api_faults = [{ at = 0, status = 200 }]",
                "api_faults[0].status",
            ),
            (
                "api_faults = [{ at = 0, delay = -2 }]",
                "api_faults[0].delay",
            ),
            ("api_faults = [{ at = 0 }]", "api_faults[0].status"),
            (
                "api_faults = [{ at = 0, unreachable = true, status = 500 }]",
                "api_faults[0].unreachable",
            ),
            (
                "api_faults = [{ at = 0, unreachable = true, path = \"/api/\" }]",
                "api_faults[0].unreachable",
            ),
        ] {
            let e = table(text).unwrap_err().to_string();
            assert!(e.contains(want), "{text}: {e}");
        }
        assert!(toml::from_str::<RawKubernetes>("api_fault = []").is_err());
    }

    #[test]
    fn rbac_rules_are_a_cluster_roles_rules() {
        let raw: RawKubernetes = toml::from_str(
            "rbac = [{ apiGroups = [\"resource.k8s.io\"], resources = [\"resourceslices\"], \
             verbs = [\"get\", \"list\", \"watch\"] }]",
        )
        .unwrap();
        assert_eq!(
            raw.rbac,
            Some(vec![super::super::RbacRule::new(
                &["resource.k8s.io"],
                &["resourceslices"],
                &["get", "list", "watch"]
            )])
        );
        let e = toml::from_str::<RawKubernetes>("rbac = [{ apiGroups = [], verb = [] }]")
            .unwrap_err()
            .to_string();
        assert!(e.contains("verb"), "{e}");
        assert!(toml::from_str::<RawKubernetes>("").unwrap().rbac.is_none());
    }
}
