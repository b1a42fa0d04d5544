//! `basic_auth_users`: bcrypt-verified HTTP basic auth, checked on the blocking pool behind a
//! semaphore, successful checks cached under an HMAC so a scrape costs one bcrypt per restart.
//!
//! It must not do TLS or parse the YAML.

use super::schema::{AUTH_CACHE_MAX, BCRYPT_MAX_PASSWORD, KeyError};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex};

use axum::http::HeaderValue;

/// `basic_auth_users`: user → bcrypt hash, with a cache of successful checks.
pub struct BasicAuth {
    pub(super) users: BTreeMap<String, String>,
    /// Checked against when the user is unknown, so that unknown users cost as much as known
    /// ones (one of the configured hashes; the result is thrown away).
    pub(super) decoy: String,
    /// Keys the cache entries, so that the cache holds no password-derived value that can be
    /// tested offline.
    pub(super) cache_key: ring::hmac::Key,
    pub(super) cache: Mutex<HashSet<[u8; 32]>>,
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

impl BasicAuth {
    /// Checks every hash; `users` must not be empty.
    pub fn new(users: BTreeMap<String, String>) -> Result<Self, KeyError> {
        use std::str::FromStr;
        for (user, hash) in &users {
            // The value is never echoed: it may be a password written by mistake.
            match bcrypt::HashParts::from_str(hash) {
                Ok(parts) if (4..=31).contains(&parts.get_cost()) => {}
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
            cache: Mutex::new(HashSet::new()),
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

    fn tag(&self, user: &[u8], password: &[u8], hash: &str) -> [u8; 32] {
        let mut ctx = ring::hmac::Context::with_key(&self.cache_key);
        for part in [user, password, hash.as_bytes()] {
            ctx.update(&(part.len() as u64).to_be_bytes());
            ctx.update(part);
        }
        let mut out = [0u8; 32];
        out.copy_from_slice(ctx.sign().as_ref());
        out
    }

    /// `true` when `authorization` holds the credentials of a configured user. A bcrypt
    /// check runs on the blocking pool, behind a semaphore; a success is cached so that the
    /// same credentials are then accepted without bcrypt.
    pub async fn check(&self, authorization: Option<&HeaderValue>) -> bool {
        let Some((user, password)) = authorization.and_then(parse_basic) else {
            return false;
        };
        let known = std::str::from_utf8(&user)
            .ok()
            .and_then(|u| self.users.get(u));
        let hash = known.unwrap_or(&self.decoy).clone();
        let tag = self.tag(&user, &password, &hash);
        if known.is_some() && self.cache.lock().is_ok_and(|c| c.contains(&tag)) {
            return true;
        }
        let Ok(permit) = Arc::clone(&self.gate).acquire_owned().await else {
            return false;
        };
        let too_long = password.len() > BCRYPT_MAX_PASSWORD;
        let verified = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            bcrypt::verify(&password, &hash).unwrap_or(false)
        })
        .await
        .unwrap_or(false);
        let ok = verified && known.is_some() && !too_long;
        if ok && let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= AUTH_CACHE_MAX {
                cache.clear();
            }
            cache.insert(tag);
        }
        ok
    }
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
