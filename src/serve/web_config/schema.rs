//! The `web-config.yml` file as written (exporter-toolkit's key names, parsed strictly), the
//! error every loader step returns ([`WebConfigError`]: the file and what is wrong with which
//! key), and the limits shared by the other parts.
//!
//! Data and small helpers only; it must not read files or build TLS or auth state.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

/// How often, at most, the certificate, key and CA files are checked for changes.
pub const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(5);

/// Successful basic-auth checks remembered at most (the cache is emptied when full).
pub(super) const AUTH_CACHE_MAX: usize = 1024;

/// bcrypt's limit: longer passwords are refused, as Go's bcrypt does.
pub(super) const BCRYPT_MAX_PASSWORD: usize = 72;

/// A web config error: the file and what is wrong (naming the key).
#[derive(Debug, thiserror::Error)]
pub enum WebConfigError {
    /// The file (or a file it names) cannot be read.
    #[error("{}: cannot read: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file reads, but a key's value is wrong.
    #[error("{}: {message}", file.display())]
    Invalid {
        /// The web config file.
        file: PathBuf,
        /// What is wrong, naming the key.
        message: String,
    },
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    pub(super) tls_server_config: Option<RawTls>,
    #[serde(default)]
    pub(super) http_server_config: Option<RawHttp>,
    #[serde(default)]
    pub(super) basic_auth_users: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub(super) rate_limit: Option<serde::de::IgnoredAny>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTls {
    pub(super) cert: Option<String>,
    pub(super) key: Option<String>,
    pub(super) client_ca: Option<String>,
    pub(super) cert_file: Option<String>,
    pub(super) key_file: Option<String>,
    pub(super) client_auth_type: Option<String>,
    pub(super) client_ca_file: Option<String>,
    pub(super) cipher_suites: Option<Vec<String>>,
    pub(super) curve_preferences: Option<Vec<String>>,
    pub(super) min_version: Option<String>,
    pub(super) max_version: Option<String>,
    pub(super) prefer_server_cipher_suites: Option<bool>,
    pub(super) client_allowed_sans: Option<Vec<String>>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttp {
    pub(super) http2: Option<bool>,
    pub(super) headers: Option<BTreeMap<String, String>>,
}

/// Go treats an empty string like an absent key.
pub(super) fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}
