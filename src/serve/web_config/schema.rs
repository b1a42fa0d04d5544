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
    /// A key's value, or a file it names, is unusable.
    #[error("{}: {source}", file.display())]
    Key {
        /// The web config file.
        file: PathBuf,
        /// Which key and why.
        source: KeyError,
    },
}

/// What is wrong with one key, as found by the helpers that check a single value. `name` is
/// the key as written, with the file it names when it names one
/// (`tls_server_config.cert_file "/etc/tls/tls.crt"`).
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// Both the file key and the inline key are set.
    #[error("tls_server_config: set {file_key} or {inline_key}, not both")]
    Both {
        /// E.g. `cert_file`.
        file_key: &'static str,
        /// E.g. `cert`.
        inline_key: &'static str,
    },
    /// A PEM file cannot be read.
    #[error("{name}: cannot read: {source}")]
    PemRead {
        /// The key and file.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// The PEM text does not parse.
    #[error("{name}: not valid PEM: {source}")]
    NotPem {
        /// The key (and file).
        name: String,
        /// The parser's reason.
        source: rustls::pki_types::pem::Error,
    },
    /// No `CERTIFICATE` block.
    #[error("{name}: no PEM CERTIFICATE block found")]
    NoCertificate {
        /// The key (and file).
        name: String,
    },
    /// No private key block of a supported kind.
    #[error(
        "{name}: no usable private key ({source}; expected an unencrypted PKCS#8, PKCS#1 or SEC1 PEM key)"
    )]
    NoPrivateKey {
        /// The key (and file).
        name: String,
        /// The parser's reason.
        source: rustls::pki_types::pem::Error,
    },
    /// `min_version`/`max_version` names no TLS version.
    #[error(
        "tls_server_config.{key}: unknown TLS version {value:?} (expected TLS10, TLS11, TLS12 or TLS13)"
    )]
    TlsVersion {
        /// `min_version` or `max_version`.
        key: &'static str,
        /// The value as written.
        value: String,
    },
    /// A curve Go knows that the TLS library does not offer.
    #[error(
        "tls_server_config.curve_preferences: {name} is not available (the TLS library offers X25519, CurveP256 and CurveP384)"
    )]
    CurveUnavailable {
        /// The curve's Go name.
        name: String,
    },
    /// A curve name nobody knows.
    #[error(
        "tls_server_config.curve_preferences: unknown curve {name:?} (expected X25519, CurveP256 or CurveP384)"
    )]
    UnknownCurve {
        /// The value as written.
        name: String,
    },
    /// A header exporter-toolkit does not let users set.
    #[error("{key}: this header cannot be configured (allowed: {allowed})")]
    HeaderNotAllowed {
        /// `http_server_config.headers.NAME`.
        key: String,
        /// The headers that may be set, comma-separated.
        allowed: String,
    },
    /// A header value outside its fixed set.
    #[error("{key}: {value:?} is not allowed (expected one of: {allowed})")]
    HeaderValueNotAllowed {
        /// `http_server_config.headers.NAME`.
        key: String,
        /// The value as written.
        value: String,
        /// The values accepted, comma-separated.
        allowed: String,
    },
    /// A header name HTTP does not accept.
    #[error("{key}: {source}")]
    HeaderName {
        /// `http_server_config.headers.NAME`.
        key: String,
        /// Why.
        source: axum::http::header::InvalidHeaderName,
    },
    /// A header value HTTP does not accept.
    #[error("{key}: {value:?} is not a valid header value")]
    HeaderValue {
        /// `http_server_config.headers.NAME`.
        key: String,
        /// The value as written.
        value: String,
    },
    /// A bcrypt hash whose cost is out of bcrypt's range. The hash itself is never echoed: it
    /// may be a password written by mistake.
    #[error("basic_auth_users.{user}: bcrypt cost {cost} is outside 4..31")]
    BcryptCost {
        /// The user.
        user: String,
        /// The cost read from the hash.
        cost: u32,
    },
    /// A bcrypt hash whose verification would take longer here than a scrape's timeout.
    #[error(
        "basic_auth_users.{user}: a bcrypt hash of cost {cost} takes about {estimate} to verify on this machine ({how}), over the {limit} s a scrape may take: re-hash the password with cost 10 to 12, e.g. `htpasswd -nbBC 10 USER PASSWORD`"
    )]
    BcryptTooSlow {
        /// The user (or users, comma-separated) with that cost.
        user: String,
        /// The cost read from the hash.
        cost: u32,
        /// The estimated time of one verification, with its unit.
        estimate: String,
        /// How the estimate was made (the time measured, at which cost).
        how: String,
        /// The limit, in seconds.
        limit: u64,
    },
    /// bcrypt failed to hash the calibration password.
    #[error("basic_auth_users: cannot time a bcrypt verification on this machine: {source}")]
    Calibration {
        /// bcrypt's reason.
        source: bcrypt::BcryptError,
    },
    /// A value that is not a bcrypt hash (not echoed).
    #[error(
        "basic_auth_users.{user}: the value is not a bcrypt hash ({source}); create one with e.g. `htpasswd -nbBC 10 USER PASSWORD`"
    )]
    NotBcrypt {
        /// The user.
        user: String,
        /// bcrypt's reason.
        source: bcrypt::BcryptError,
    },
    /// `basic_auth_users` is empty.
    #[error("basic_auth_users: no user")]
    NoUser,
    /// The system gave no random bytes for the auth cache key.
    #[error("basic_auth_users: no random bytes for the cache key")]
    NoRandom,
}

impl KeyError {
    /// The error as the web config `file`'s.
    pub(super) fn in_file(self, file: &std::path::Path) -> WebConfigError {
        WebConfigError::Key {
            file: file.to_owned(),
            source: self,
        }
    }
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
    /// A plain boolean only: a quoted `"yes"` is a text, refused naming the key.
    #[serde(default, deserialize_with = "crate::base::yaml::boolean")]
    pub(super) prefer_server_cipher_suites: Option<bool>,
    pub(super) client_allowed_sans: Option<Vec<String>>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawHttp {
    /// A plain boolean only, as `prefer_server_cipher_suites`.
    #[serde(default, deserialize_with = "crate::base::yaml::boolean")]
    pub(super) http2: Option<bool>,
    pub(super) headers: Option<BTreeMap<String, String>>,
}

/// Go treats an empty string like an absent key.
pub(super) fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}
