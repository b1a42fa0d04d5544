//! `basic_auth_users`: bcrypt-verified HTTP basic auth, checked on the blocking pool behind a
//! semaphore, successful checks cached under an HMAC so a scrape costs one bcrypt per restart;
//! and, at start-up, what the hashes' costs take to verify on this machine (refused over
//! [`BCRYPT_REFUSE_OVER`], a note over [`BCRYPT_NOTE_OVER`]).
//!
//! A verification, once started, runs to its end and its result is recorded even when the
//! request that started it has gone (a scraper that gave up at its timeout): a success is
//! cached, and a request with the same credentials meanwhile waits for that verification
//! instead of starting its own. It must not do TLS or parse the YAML.

use super::schema::{AUTH_CACHE_MAX, BCRYPT_MAX_PASSWORD, KeyError};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::http::HeaderValue;
use tokio::sync::watch;

/// A hash whose verification is estimated to take longer than this on this machine is
/// refused: Prometheus' default scrape timeout, which every scrape after a restart would
/// exceed until the first verification ends.
pub const BCRYPT_REFUSE_OVER: Duration = Duration::from_secs(10);

/// Over this, the estimate is logged as a warning: the first scrape after each restart waits
/// that long.
pub const BCRYPT_NOTE_OVER: Duration = Duration::from_secs(1);

/// The cost the estimate is measured at (or the hash's own, when lower); each cost step above
/// it doubles the time.
const CALIBRATION_COST: u32 = 6;

/// Cache key of one set of credentials checked against one hash.
type Tag = [u8; 32];

/// The successes remembered and the verifications running, by tag.
#[derive(Default)]
pub(super) struct Verifications {
    pub(super) good: HashSet<Tag>,
    pub(super) running: HashMap<Tag, watch::Receiver<Option<bool>>>,
}

/// `basic_auth_users`: user → bcrypt hash, with a cache of successful checks.
pub struct BasicAuth {
    pub(super) users: BTreeMap<String, String>,
    /// Checked against when the user is unknown, so that unknown users cost as much as known
    /// ones (one of the configured hashes; the result is thrown away).
    pub(super) decoy: String,
    /// Keys the cache entries, so that the cache holds no password-derived value that can be
    /// tested offline.
    pub(super) cache_key: ring::hmac::Key,
    pub(super) state: Arc<Mutex<Verifications>>,
    /// Bounds the bcrypt checks running at once.
    pub(super) gate: Arc<tokio::sync::Semaphore>,
    pub(super) parallel: usize,
}

impl fmt::Debug for BasicAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BasicAuth")
            .field("users", &self.users.len())
            .finish_non_exhaustive()
    }
}

/// What one verification at `cost` takes here: measured at [`CALIBRATION_COST`] (or `cost`
/// when lower), the best of three, and [`extrapolate`]d. Nothing is hashed at `cost` itself,
/// so a cost of 31 is judged in milliseconds. Returns the estimate, the cost measured at and
/// the time measured.
fn estimate(cost: u32) -> Result<(Duration, u32, Duration), KeyError> {
    let at = cost.min(CALIBRATION_COST);
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        bcrypt::hash_with_salt(b"calibration", at, [0u8; 16])
            .map_err(|source| KeyError::Calibration { source })?;
        best = best.min(t.elapsed());
    }
    Ok((extrapolate(best, at, cost), at, best))
}

/// The time at `cost` from `measured` at the lower cost `at`: each step doubles the work.
fn extrapolate(measured: Duration, at: u32, cost: u32) -> Duration {
    measured.saturating_mul(1u32 << cost.saturating_sub(at).min(31))
}

/// What start-up makes of a hash whose verification takes `time` here.
#[derive(Debug, PartialEq, Eq)]
enum HashCost {
    Fine,
    /// Over [`BCRYPT_NOTE_OVER`]: a warning.
    Note,
    /// Over [`BCRYPT_REFUSE_OVER`]: an error.
    Refuse,
}

fn hash_cost(time: Duration) -> HashCost {
    if time > BCRYPT_REFUSE_OVER {
        HashCost::Refuse
    } else if time > BCRYPT_NOTE_OVER {
        HashCost::Note
    } else {
        HashCost::Fine
    }
}

/// Milliseconds or seconds, for the messages.
fn shown(d: Duration) -> String {
    if d < Duration::from_secs(10) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{} s", d.as_secs())
    }
}

impl BasicAuth {
    /// Checks every hash; `users` must not be empty. A hash whose cost takes longer than
    /// [`BCRYPT_REFUSE_OVER`] to verify here is refused, one over [`BCRYPT_NOTE_OVER`] gets a
    /// line in `notes` (logged as a warning), both with the estimate and what it came from.
    pub fn new(users: BTreeMap<String, String>, notes: &mut Vec<String>) -> Result<Self, KeyError> {
        use std::str::FromStr;
        let mut costs: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for (user, hash) in &users {
            // The value is never echoed: it may be a password written by mistake.
            match bcrypt::HashParts::from_str(hash) {
                Ok(parts) if (4..=31).contains(&parts.get_cost()) => {
                    costs.entry(parts.get_cost()).or_default().push(user);
                }
                Ok(parts) => {
                    return Err(KeyError::BcryptCost {
                        user: user.clone(),
                        cost: parts.get_cost(),
                    });
                }
                Err(source) => {
                    return Err(KeyError::NotBcrypt {
                        user: user.clone(),
                        source,
                    });
                }
            }
        }
        // The highest cost first: a refusal names the slowest hash.
        for (&cost, names) in costs.iter().rev() {
            let (time, at, measured) = estimate(cost)?;
            let how = if at == cost {
                format!("measured here: {}", shown(measured))
            } else {
                format!(
                    "{} measured here at cost {at}, doubled for each of the {} steps above",
                    shown(measured),
                    cost - at
                )
            };
            match hash_cost(time) {
                HashCost::Fine => {}
                HashCost::Refuse => {
                    return Err(KeyError::BcryptTooSlow {
                        user: names.join(", "),
                        cost,
                        estimate: shown(time),
                        how,
                        limit: BCRYPT_REFUSE_OVER.as_secs(),
                    });
                }
                HashCost::Note => notes.push(format!(
                    "basic_auth_users.{}: a bcrypt hash of cost {cost} takes about {} to verify \
                     on this machine ({how}): the first scrape after each restart waits that \
                     long (the success is then cached); a hash of cost 10 to 12 is plenty",
                    names.join(", "),
                    shown(time)
                )),
            }
        }
        let decoy = users.values().next().cloned().ok_or(KeyError::NoUser)?;
        let cache_key =
            ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
                .map_err(|_| KeyError::NoRandom)?;
        let parallel = std::thread::available_parallelism()
            .map(|n| n.get() / 2)
            .unwrap_or(1)
            .clamp(1, 4);
        Ok(Self {
            users,
            decoy,
            cache_key,
            state: Arc::new(Mutex::new(Verifications::default())),
            gate: Arc::new(tokio::sync::Semaphore::new(parallel)),
            parallel,
        })
    }

    /// Number of users.
    pub fn user_count(&self) -> usize {
        self.users.len()
    }

    /// Bcrypt checks allowed to run at once (half the CPUs, 1 to 4).
    pub fn max_parallel_checks(&self) -> usize {
        self.parallel
    }

    fn tag(&self, user: &[u8], password: &[u8], hash: &str) -> Tag {
        let mut ctx = ring::hmac::Context::with_key(&self.cache_key);
        for part in [user, password, hash.as_bytes()] {
            ctx.update(&(part.len() as u64).to_be_bytes());
            ctx.update(part);
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }

    /// A cached success for `tag` (`Ok(true)`), the verification of the same credentials
    /// already running (`Err`), or neither (`Ok(false)`).
    fn lookup(&self, tag: &Tag) -> Result<bool, watch::Receiver<Option<bool>>> {
        let state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.good.contains(tag) {
            return Ok(true);
        }
        match state.running.get(tag) {
            Some(rx) => Err(rx.clone()),
            None => Ok(false),
        }
    }

    /// `true` when `authorization` holds the credentials of a configured user. A bcrypt
    /// check runs on the blocking pool, behind a semaphore; a success is cached so that the
    /// same credentials are then accepted without bcrypt. Once started, a check runs to its
    /// end and is recorded even if this future is dropped (the client went away); a call with
    /// the same credentials meanwhile waits for it.
    pub async fn check(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some((user, password)) = authorization.and_then(parse_basic) else {
            return false;
        };
        let known = std::str::from_utf8(&user)
            .ok()
            .and_then(|u| self.users.get(u));
        let hash = known.unwrap_or(&self.decoy).clone();
        let tag = self.tag(&user, &password, &hash);
        // Only a known user's password of at most 72 bytes can pass (nor be cached).
        let can_pass = known.is_some() && password.len() <= BCRYPT_MAX_PASSWORD;
        match self.lookup(&tag) {
            Ok(true) => return can_pass,
            Err(running) => return can_pass && outcome(running).await,
            Ok(false) => {}
        }
        let Ok(permit) = Arc::clone(&self.gate).acquire_owned().await else {
            return false;
        };
        // While this waited for the permit, the same credentials may have been verified or
        // be under way: looked at again, and the verification registered, under one lock.
        let started = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.good.contains(&tag) {
                Err(None)
            } else if let Some(rx) = state.running.get(&tag) {
                Err(Some(rx.clone()))
            } else {
                let (tx, rx) = watch::channel(None);
                state.running.insert(tag, rx.clone());
                let running = Running {
                    state: Arc::clone(&self.state),
                    tag,
                    tx,
                    passed: false,
                };
                Ok((running, rx))
            }
        };
        let (running, rx) = match started {
            Ok(new) => new,
            Err(None) => return can_pass,
            Err(Some(running)) => {
                drop(permit);
                return can_pass && outcome(running).await;
            }
        };
        // Detached: neither the permit nor the result depends on this future from here on.
        drop(tokio::task::spawn_blocking(move || {
            let mut running = running;
            // Dropped before `running` (declared after it): the permit is free again by the
            // time the outcome is announced.
            let _permit = permit;
            // Run for unknown users and overlong passwords too: they cost the same time.
            let verified = bcrypt::verify(&password, &hash).unwrap_or(false);
            running.passed = can_pass && verified;
        }));
        outcome(rx).await && can_pass
    }
}

/// A verification under way; dropped when it ends (or if it never runs, or panics), it
/// records the outcome, clears its place in `running` and wakes the requests waiting for it.
struct Running {
    state: Arc<Mutex<Verifications>>,
    tag: Tag,
    tx: watch::Sender<Option<bool>>,
    passed: bool,
}

impl Drop for Running {
    fn drop(&mut self) {
        {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            state.running.remove(&self.tag);
            if self.passed {
                if state.good.len() >= AUTH_CACHE_MAX {
                    state.good.clear();
                }
                state.good.insert(self.tag);
            }
        }
        self.tx.send_replace(Some(self.passed));
    }
}

/// The outcome of a verification under way: `false` if it ended without one.
async fn outcome(mut rx: watch::Receiver<Option<bool>>) -> bool {
    rx.wait_for(Option::is_some)
        .await
        .is_ok_and(|v| *v == Some(true))
}

/// `Basic base64(user:password)` → (user, password) bytes.
fn parse_basic(v: &HeaderValue) -> Option<(Vec<u8>, Vec<u8>)> {
    use base64::Engine as _;
    let v = v.as_bytes();
    if v.len() < 6 || !v[..6].eq_ignore_ascii_case(b"basic ") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(v[6..].trim_ascii())
        .ok()?;
    let colon = decoded.iter().position(|&b| b == b':')?;
    Some((decoded[..colon].to_vec(), decoded[colon + 1..].to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cost_step_doubles_the_estimate_and_the_limits_judge_it() {
        let ms = Duration::from_millis;
        assert_eq!(extrapolate(ms(4), 6, 6), ms(4));
        assert_eq!(extrapolate(ms(4), 6, 10), ms(64));
        // Cost 18 from 4 ms at cost 6: about 16 s, over the limit.
        assert_eq!(extrapolate(ms(4), 6, 18), ms(16_384));
        assert_eq!(hash_cost(extrapolate(ms(4), 6, 18)), HashCost::Refuse);
        assert_eq!(hash_cost(extrapolate(ms(4), 6, 15)), HashCost::Note);
        assert_eq!(hash_cost(extrapolate(ms(4), 6, 12)), HashCost::Fine);
        assert_eq!(hash_cost(BCRYPT_NOTE_OVER), HashCost::Fine);
        assert_eq!(hash_cost(BCRYPT_REFUSE_OVER), HashCost::Note);
        // Cost 31 does not overflow.
        assert_eq!(hash_cost(extrapolate(ms(1), 4, 31)), HashCost::Refuse);
    }
}
