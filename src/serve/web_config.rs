//! `--web-config-file`: the `web-config.yml` format of Prometheus' exporter-toolkit (TLS,
//! client certificates, basic auth, extra response headers), read and checked at start-up.
//!
//! [`WebConfig::load`] parses the file strictly (an unknown key is an error, as with
//! exporter-toolkit), resolves relative paths against the file's directory, reads the
//! certificate, key and client CA once to prove they work, and checks that every password is a
//! bcrypt hash. Every error starts with the file and names the key. At run time
//! [`TlsServer::config`] hands out the current rustls configuration and rebuilds it when the
//! certificate, key or CA files change (cert-manager rotation); [`BasicAuth::check`] verifies
//! credentials off the async workers. See docs/web-config.md for the differences from
//! exporter-toolkit (TLS 1.0/1.1, HTTP/2, unauthenticated probes).

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arc_swap::ArcSwap;
use axum::http::{HeaderName, HeaderValue};
use rustls::crypto::{CryptoProvider, SupportedKxGroup, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ParsedCertificate, WebPkiClientVerifier};
use rustls::{
    DigitallySignedStruct, DistinguishedName, RootCertStore, ServerConfig, SignatureScheme,
    SupportedCipherSuite, SupportedProtocolVersion,
};
use serde::Deserialize;

use crate::base::file_stamp::FileStamp;

/// How often, at most, the certificate, key and CA files are checked for changes.
pub const RELOAD_CHECK_INTERVAL: Duration = Duration::from_secs(5);

/// Successful basic-auth checks remembered at most (the cache is emptied when full).
const AUTH_CACHE_MAX: usize = 1024;

/// bcrypt's limit: longer passwords are refused, as Go's bcrypt does.
const BCRYPT_MAX_PASSWORD: usize = 72;

/// A parsed and checked web config file.
pub struct WebConfig {
    /// The file as given on the command line.
    pub path: PathBuf,
    /// TLS, when `tls_server_config` sets a certificate.
    pub tls: Option<Arc<TlsServer>>,
    /// Basic auth, when `basic_auth_users` has at least one user.
    pub basic_auth: Option<Arc<BasicAuth>>,
    /// `http_server_config.headers`, added to every response.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// `http_server_config.http2` (accepted; only HTTP/1.1 is served).
    pub http2: bool,
    /// Things worth a warning at start-up (settings that mean less here than in Go).
    pub notes: Vec<String>,
}

impl fmt::Debug for WebConfig {
    // Leaves out keys and hashes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WebConfig")
            .field("path", &self.path)
            .field("tls", &self.tls.as_ref().map(|t| t.describe()))
            .field(
                "basic_auth_users",
                &self.basic_auth.as_ref().map_or(0, |b| b.user_count()),
            )
            .field("headers", &self.headers.len())
            .field("http2", &self.http2)
            .finish()
    }
}

/// A web config error: the file, the key and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebConfigError(pub String);

impl fmt::Display for WebConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WebConfigError {}

// ---------------------------------------------------------------------------------------------
// The file as written (exporter-toolkit's key names).

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    tls_server_config: Option<RawTls>,
    #[serde(default)]
    http_server_config: Option<RawHttp>,
    #[serde(default)]
    basic_auth_users: Option<BTreeMap<String, String>>,
    #[serde(default)]
    rate_limit: Option<serde::de::IgnoredAny>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTls {
    cert: Option<String>,
    key: Option<String>,
    client_ca: Option<String>,
    cert_file: Option<String>,
    key_file: Option<String>,
    client_auth_type: Option<String>,
    client_ca_file: Option<String>,
    cipher_suites: Option<Vec<String>>,
    curve_preferences: Option<Vec<String>>,
    min_version: Option<String>,
    max_version: Option<String>,
    prefer_server_cipher_suites: Option<bool>,
    client_allowed_sans: Option<Vec<String>>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHttp {
    http2: Option<bool>,
    headers: Option<BTreeMap<String, String>>,
}

/// Go treats an empty string like an absent key.
fn given(v: &Option<String>) -> Option<&str> {
    v.as_deref().filter(|s| !s.is_empty())
}

// ---------------------------------------------------------------------------------------------
// Loading.

impl WebConfig {
    /// Reads, parses and checks `path`.
    pub fn load(path: &Path) -> Result<Self, WebConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| WebConfigError(format!("{}: cannot read: {e}", path.display())))?;
        Self::parse(path, &text)
    }

    /// Parses `text` as the content of `path` (relative paths inside are resolved against
    /// `path`'s directory) and checks everything it refers to.
    pub fn parse(path: &Path, text: &str) -> Result<Self, WebConfigError> {
        let err = |msg: String| WebConfigError(format!("{}: {msg}", path.display()));
        let raw: RawConfig = if text.trim().is_empty() {
            RawConfig::default()
        } else {
            serde_saphyr::from_str(text).map_err(|e| err(yaml_error(&e.to_string())))?
        };
        if raw.rate_limit.is_some() {
            return Err(err(
                "rate_limit: not supported by gpu-exporter (remove the key; put a rate limit in \
                 front of the exporter if you need one)"
                    .into(),
            ));
        }
        let dir = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let mut notes = Vec::new();
        let tls = match raw.tls_server_config {
            Some(t) => TlsSettings::from_raw(path, &dir, t, &mut notes)?,
            None => None,
        };
        let tls = match tls {
            Some(settings) => Some(Arc::new(TlsServer::new(settings)?)),
            None => None,
        };
        let http = raw.http_server_config.unwrap_or_default();
        let headers = check_headers(http.headers.unwrap_or_default()).map_err(err)?;
        let users = raw.basic_auth_users.unwrap_or_default();
        let basic_auth = if users.is_empty() {
            None
        } else {
            Some(Arc::new(BasicAuth::new(users).map_err(err)?))
        };
        Ok(Self {
            path: path.to_path_buf(),
            tls,
            basic_auth,
            headers,
            http2: http.http2.unwrap_or(true),
            notes,
        })
    }

    /// One line for the start-up log: plain HTTP, TLS or mutual TLS.
    pub fn mode(&self) -> String {
        match &self.tls {
            None => "plain HTTP".into(),
            Some(t) => t.describe(),
        }
    }
}

/// The first line of a YAML error (the parser adds a source excerpt, which could show an
/// inline private key), without its `error: ` prefix.
fn yaml_error(msg: &str) -> String {
    let first = msg.lines().next().unwrap_or(msg).trim();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}

/// exporter-toolkit lets only these headers be set, some with fixed values.
const ALLOWED_HEADERS: &[(&str, &[&str])] = &[
    ("Strict-Transport-Security", &[]),
    ("X-Content-Type-Options", &["nosniff"]),
    ("X-Frame-Options", &["deny", "sameorigin"]),
    ("X-XSS-Protection", &[]),
    ("Content-Security-Policy", &[]),
];

fn check_headers(
    headers: BTreeMap<String, String>,
) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let key = format!("http_server_config.headers.{name}");
        let Some((_, values)) = ALLOWED_HEADERS.iter().find(|(n, _)| *n == name) else {
            let names: Vec<&str> = ALLOWED_HEADERS.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "{key}: this header cannot be configured (allowed: {})",
                names.join(", ")
            ));
        };
        if !values.is_empty() && !values.contains(&value.as_str()) {
            return Err(format!(
                "{key}: {value:?} is not allowed (expected one of: {})",
                values.join(", ")
            ));
        }
        let n = HeaderName::from_bytes(name.as_bytes()).map_err(|e| format!("{key}: {e}"))?;
        let v = HeaderValue::from_str(&value)
            .map_err(|_| format!("{key}: {value:?} is not a valid header value"))?;
        out.push((n, v));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// TLS settings.

/// exporter-toolkit's `client_auth_type` values (Go's `tls.ClientAuthType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientAuth {
    /// No client certificate is asked for.
    NoClientCert,
    /// A certificate is asked for, not required and not verified.
    RequestClientCert,
    /// A certificate is required but not verified against a CA.
    RequireAnyClientCert,
    /// A certificate is optional; when given it must chain to the client CA.
    VerifyClientCertIfGiven,
    /// A certificate is required and must chain to the client CA.
    RequireAndVerifyClientCert,
}

impl ClientAuth {
    fn parse(v: &str) -> Option<Self> {
        Some(match v {
            "" | "NoClientCert" => Self::NoClientCert,
            "RequestClientCert" => Self::RequestClientCert,
            // "RequireClientCert" is exporter-toolkit's old spelling.
            "RequireAnyClientCert" | "RequireClientCert" => Self::RequireAnyClientCert,
            "VerifyClientCertIfGiven" => Self::VerifyClientCertIfGiven,
            "RequireAndVerifyClientCert" => Self::RequireAndVerifyClientCert,
            _ => return None,
        })
    }

    fn verifies(self) -> bool {
        matches!(
            self,
            Self::VerifyClientCertIfGiven | Self::RequireAndVerifyClientCert
        )
    }
}

/// A PEM value: a file (`cert_file`, …) or inline text (`cert`, …), with its key name.
#[derive(Clone)]
struct Pem {
    key: &'static str,
    source: PemSource,
}

#[derive(Clone)]
enum PemSource {
    File(PathBuf),
    Inline(String),
}

impl Pem {
    fn pick(
        dir: &Path,
        file_key: &'static str,
        file: Option<&str>,
        inline_key: &'static str,
        inline: Option<&str>,
    ) -> Result<Option<Self>, String> {
        match (file, inline) {
            (Some(_), Some(_)) => Err(format!(
                "tls_server_config: set {file_key} or {inline_key}, not both"
            )),
            (Some(f), None) => Ok(Some(Self {
                key: file_key,
                source: PemSource::File(dir.join(f)),
            })),
            (None, Some(text)) => Ok(Some(Self {
                key: inline_key,
                source: PemSource::Inline(text.to_owned()),
            })),
            (None, None) => Ok(None),
        }
    }

    /// `tls_server_config.cert_file "/etc/tls/tls.crt"` or `tls_server_config.cert`.
    fn name(&self) -> String {
        match &self.source {
            PemSource::File(p) => format!("tls_server_config.{} {:?}", self.key, p.display()),
            PemSource::Inline(_) => format!("tls_server_config.{}", self.key),
        }
    }

    fn file(&self) -> Option<&Path> {
        match &self.source {
            PemSource::File(p) => Some(p),
            PemSource::Inline(_) => None,
        }
    }

    fn bytes(&self) -> Result<Vec<u8>, String> {
        match &self.source {
            PemSource::File(p) => {
                std::fs::read(p).map_err(|e| format!("{}: cannot read: {e}", self.name()))
            }
            PemSource::Inline(s) => Ok(s.as_bytes().to_vec()),
        }
    }

    fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, String> {
        let bytes = self.bytes()?;
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{}: not valid PEM: {e}", self.name()))?;
        if certs.is_empty() {
            return Err(format!("{}: no PEM CERTIFICATE block found", self.name()));
        }
        Ok(certs)
    }

    fn private_key(&self) -> Result<PrivateKeyDer<'static>, String> {
        let bytes = self.bytes()?;
        PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
            format!(
                "{}: no usable private key ({e}; expected an unencrypted PKCS#8, PKCS#1 or SEC1 \
                 PEM key)",
                self.name()
            )
        })
    }
}

/// TLS versions as exporter-toolkit names them.
fn tls_version(key: &str, v: &str) -> Result<u8, String> {
    match v {
        "TLS10" => Ok(10),
        "TLS11" => Ok(11),
        "TLS12" => Ok(12),
        "TLS13" => Ok(13),
        _ => Err(format!(
            "tls_server_config.{key}: unknown TLS version {v:?} (expected TLS10, TLS11, TLS12 or \
             TLS13)"
        )),
    }
}

/// Go's names of the TLS 1.2 suites rustls implements (with Go's older CHACHA20 spellings).
fn tls12_suite(name: &str) -> Option<SupportedCipherSuite> {
    use rustls::crypto::ring::cipher_suite as cs;
    Some(match name {
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256" => cs::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384" => cs::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"
        | "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305" => {
            cs::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        }
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" => cs::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384" => cs::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256" | "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305" => {
            cs::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
        }
        _ => return None,
    })
}

/// TLS 1.3 suite names Go knows; as in Go they cannot be restricted.
const TLS13_SUITES: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// Suites Go knows (some only as insecure) that rustls does not implement: CBC, RSA key
/// exchange, 3DES, RC4.
const GO_ONLY_SUITES: &[&str] = &[
    "TLS_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
];

fn curve(name: &str) -> Result<&'static dyn SupportedKxGroup, String> {
    use rustls::crypto::ring::kx_group;
    match name {
        "CurveP256" => Ok(kx_group::SECP256R1),
        "CurveP384" => Ok(kx_group::SECP384R1),
        "X25519" => Ok(kx_group::X25519),
        "CurveP521" => Err(
            "tls_server_config.curve_preferences: CurveP521 is not available (the TLS library \
             offers X25519, CurveP256 and CurveP384)"
                .into(),
        ),
        _ => Err(format!(
            "tls_server_config.curve_preferences: unknown curve {name:?} (expected X25519, \
             CurveP256 or CurveP384)"
        )),
    }
}

/// Checked TLS settings, from which a rustls configuration can be built again and again.
struct TlsSettings {
    file: PathBuf,
    cert: Pem,
    key: Pem,
    client_ca: Option<Pem>,
    client_auth: ClientAuth,
    versions: Vec<&'static SupportedProtocolVersion>,
    cipher_suites: Vec<SupportedCipherSuite>,
    kx_groups: Vec<&'static dyn SupportedKxGroup>,
    prefer_server_order: bool,
    allowed_sans: Option<Vec<String>>,
}

impl TlsSettings {
    /// `None` when the section sets nothing that turns TLS on (exporter-toolkit then serves
    /// plain HTTP).
    fn from_raw(
        path: &Path,
        dir: &Path,
        t: RawTls,
        notes: &mut Vec<String>,
    ) -> Result<Option<Self>, WebConfigError> {
        let err = |msg: String| WebConfigError(format!("{}: {msg}", path.display()));
        let enabled = [
            &t.cert,
            &t.key,
            &t.cert_file,
            &t.key_file,
            &t.client_ca,
            &t.client_ca_file,
            &t.client_auth_type,
        ]
        .iter()
        .any(|v| given(v).is_some());
        if !enabled {
            // Settings without a certificate would be silently unused: refuse them.
            let stray = [
                ("cipher_suites", t.cipher_suites.is_some()),
                ("curve_preferences", t.curve_preferences.is_some()),
                ("min_version", given(&t.min_version).is_some()),
                ("max_version", given(&t.max_version).is_some()),
                ("client_allowed_sans", t.client_allowed_sans.is_some()),
            ];
            if let Some((k, _)) = stray.iter().find(|(_, set)| *set) {
                return Err(err(format!(
                    "tls_server_config.{k} is set but TLS is off: set cert_file and key_file \
                     (or cert and key)"
                )));
            }
            return Ok(None);
        }
        let cert = Pem::pick(
            dir,
            "cert_file",
            given(&t.cert_file),
            "cert",
            given(&t.cert),
        )
        .map_err(err)?
        .ok_or_else(|| err("tls_server_config: missing cert_file (or cert)".into()))?;
        let key = Pem::pick(dir, "key_file", given(&t.key_file), "key", given(&t.key))
            .map_err(err)?
            .ok_or_else(|| err("tls_server_config: missing key_file (or key)".into()))?;
        let client_ca = Pem::pick(
            dir,
            "client_ca_file",
            given(&t.client_ca_file),
            "client_ca",
            given(&t.client_ca),
        )
        .map_err(err)?;
        let auth_name = given(&t.client_auth_type).unwrap_or("NoClientCert");
        let client_auth = ClientAuth::parse(auth_name).ok_or_else(|| {
            err(format!(
                "tls_server_config.client_auth_type: unknown value {auth_name:?} (expected \
                 NoClientCert, RequestClientCert, RequireAnyClientCert, \
                 VerifyClientCertIfGiven or RequireAndVerifyClientCert)"
            ))
        })?;
        if client_ca.is_some() && client_auth == ClientAuth::NoClientCert {
            return Err(err(
                "tls_server_config.client_ca_file is set but client_auth_type is NoClientCert: \
                 set client_auth_type (e.g. RequireAndVerifyClientCert)"
                    .into(),
            ));
        }
        if client_auth.verifies() && client_ca.is_none() {
            return Err(err(format!(
                "tls_server_config.client_auth_type {auth_name} needs client_ca_file (or \
                 client_ca): the CA that signs client certificates"
            )));
        }
        let allowed_sans = t.client_allowed_sans;
        if allowed_sans.as_ref().is_some_and(Vec::is_empty) {
            // In Go an empty list rejects every client; refuse the ambiguity.
            return Err(err(
                "tls_server_config.client_allowed_sans is empty: list the allowed SANs or \
                 remove the key"
                    .into(),
            ));
        }
        if allowed_sans.is_some()
            && !matches!(
                client_auth,
                ClientAuth::RequireAnyClientCert | ClientAuth::RequireAndVerifyClientCert
            )
        {
            return Err(err(format!(
                "tls_server_config.client_allowed_sans needs client_auth_type \
                 RequireAnyClientCert or RequireAndVerifyClientCert (it is {auth_name})"
            )));
        }

        // Versions: rustls has TLS 1.2 and 1.3 only.
        let min = match given(&t.min_version) {
            Some(v) => tls_version("min_version", v).map_err(err)?,
            None => 12,
        };
        let max = match given(&t.max_version) {
            Some(v) => tls_version("max_version", v).map_err(err)?,
            None => 13,
        };
        if max < 12 {
            return Err(err(format!(
                "tls_server_config.max_version: TLS{max} is not supported: TLS 1.0 and 1.1 are \
                 not available, the oldest version served is TLS12"
            )));
        }
        if min > max {
            return Err(err(format!(
                "tls_server_config.min_version TLS{min} is above max_version TLS{max}"
            )));
        }
        if min < 12 {
            notes.push(format!(
                "{}: tls_server_config.min_version TLS{min} means TLS12 here: TLS 1.0 and 1.1 \
                 are not available",
                path.display()
            ));
        }
        let mut tls12 = min <= 12;
        let tls13 = max >= 13;

        // Cipher suites restrict TLS 1.2 only, as in Go.
        let provider = rustls::crypto::ring::default_provider();
        let mut suites12: Vec<SupportedCipherSuite> = provider
            .cipher_suites
            .iter()
            .copied()
            .filter(|s| s.tls13().is_none())
            .collect();
        if let Some(names) = &t.cipher_suites
            && !names.is_empty()
        {
            suites12.clear();
            let mut tls13_named = Vec::new();
            for name in names {
                if let Some(s) = tls12_suite(name) {
                    if !suites12.iter().any(|x| x.suite() == s.suite()) {
                        suites12.push(s);
                    }
                } else if TLS13_SUITES.contains(&name.as_str()) {
                    tls13_named.push(name.as_str());
                } else if GO_ONLY_SUITES.contains(&name.as_str()) {
                    return Err(err(format!(
                        "tls_server_config.cipher_suites: {name} is not available: the TLS \
                         library implements only ECDHE key exchange with AES-GCM or \
                         ChaCha20-Poly1305 (use e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or \
                         TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)"
                    )));
                } else {
                    return Err(err(format!(
                        "tls_server_config.cipher_suites: unknown cipher suite {name:?}"
                    )));
                }
            }
            if !tls13_named.is_empty() {
                notes.push(format!(
                    "{}: tls_server_config.cipher_suites: {} are TLS 1.3 suites; as in Go, \
                     TLS 1.3 suites cannot be restricted and all of them stay enabled",
                    path.display(),
                    tls13_named.join(", ")
                ));
            }
            if suites12.is_empty() && tls12 {
                if !tls13 {
                    return Err(err(
                        "tls_server_config.cipher_suites lists no TLS 1.2 suite but max_version \
                         is TLS12: no connection could be made"
                            .into(),
                    ));
                }
                notes.push(format!(
                    "{}: tls_server_config.cipher_suites lists no TLS 1.2 suite: only TLS 1.3 \
                     is served",
                    path.display()
                ));
                tls12 = false;
            }
        }
        let mut cipher_suites: Vec<SupportedCipherSuite> = provider
            .cipher_suites
            .iter()
            .copied()
            .filter(|s| s.tls13().is_some())
            .collect();
        cipher_suites.extend(suites12);

        let kx_groups = match &t.curve_preferences {
            Some(names) if !names.is_empty() => {
                let mut v: Vec<&'static dyn SupportedKxGroup> = Vec::new();
                for n in names {
                    let g = curve(n).map_err(err)?;
                    if !v.iter().any(|x| x.name() == g.name()) {
                        v.push(g);
                    }
                }
                v
            }
            _ => provider.kx_groups.clone(),
        };

        let mut versions = Vec::new();
        if tls13 {
            versions.push(&rustls::version::TLS13);
        }
        if tls12 {
            versions.push(&rustls::version::TLS12);
        }
        let settings = Self {
            file: path.to_path_buf(),
            cert,
            key,
            client_ca,
            client_auth,
            versions,
            cipher_suites,
            kx_groups,
            prefer_server_order: t.prefer_server_cipher_suites.unwrap_or(true),
            allowed_sans,
        };
        Ok(Some(settings))
    }

    fn err(&self, msg: String) -> WebConfigError {
        WebConfigError(format!("{}: {msg}", self.file.display()))
    }

    /// Reads the files and builds a rustls configuration.
    fn build(&self) -> Result<ServerConfig, WebConfigError> {
        let certs = self.cert.certificates().map_err(|e| self.err(e))?;
        let key = self.key.private_key().map_err(|e| self.err(e))?;
        let provider = Arc::new(CryptoProvider {
            cipher_suites: self.cipher_suites.clone(),
            kx_groups: self.kx_groups.clone(),
            ..rustls::crypto::ring::default_provider()
        });
        let verifier = self.client_verifier(&provider)?;
        let mut cfg = ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&self.versions)
            .map_err(|e| self.err(format!("tls_server_config: {e}")))?
            .with_client_cert_verifier(verifier)
            .with_single_cert(certs, key)
            .map_err(|e| match e {
                rustls::Error::InconsistentKeys(_) => self.err(format!(
                    "{} does not match {}: the private key is not the certificate's key",
                    self.key.name(),
                    self.cert.name()
                )),
                other => self.err(format!(
                    "{} / {}: unusable certificate or key: {other}",
                    self.cert.name(),
                    self.key.name()
                )),
            })?;
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        cfg.ignore_client_order = self.prefer_server_order;
        Ok(cfg)
    }

    fn client_verifier(
        &self,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Arc<dyn ClientCertVerifier>, WebConfigError> {
        let roots = match &self.client_ca {
            Some(ca) => {
                let mut store = RootCertStore::empty();
                for (i, c) in ca
                    .certificates()
                    .map_err(|e| self.err(e))?
                    .into_iter()
                    .enumerate()
                {
                    store.add(c).map_err(|e| {
                        self.err(format!(
                            "{}: certificate #{} is not a usable CA certificate: {e}",
                            ca.name(),
                            i + 1
                        ))
                    })?;
                }
                Some(Arc::new(store))
            }
            None => None,
        };
        let algs = provider.signature_verification_algorithms;
        let verifier: Arc<dyn ClientCertVerifier> = match (self.client_auth, roots) {
            (ClientAuth::NoClientCert, _) => WebPkiClientVerifier::no_client_auth(),
            (ClientAuth::RequestClientCert | ClientAuth::RequireAnyClientCert, roots) => {
                Arc::new(AnyClientCert {
                    mandatory: self.client_auth == ClientAuth::RequireAnyClientCert,
                    hints: roots.map(|r| r.subjects()).unwrap_or_default(),
                    algs,
                })
            }
            (mode, Some(roots)) => {
                let mut b =
                    WebPkiClientVerifier::builder_with_provider(roots, Arc::clone(provider));
                if mode == ClientAuth::VerifyClientCertIfGiven {
                    b = b.allow_unauthenticated();
                }
                b.build()
                    .map_err(|e| self.err(format!("tls_server_config.client_ca_file: {e}")))?
            }
            (_, None) => {
                return Err(
                    self.err("tls_server_config.client_auth_type needs client_ca_file".into())
                );
            }
        };
        Ok(match &self.allowed_sans {
            Some(allowed) => Arc::new(SanCheck {
                inner: verifier,
                allowed: allowed.clone(),
            }),
            None => verifier,
        })
    }

    /// The stamps of the files whose change triggers a rebuild (`None`: unreadable now).
    fn stamps(&self) -> Vec<Option<FileStamp>> {
        [Some(&self.cert), Some(&self.key), self.client_ca.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(Pem::file)
            .map(|p| FileStamp::of(p).ok())
            .collect()
    }
}

/// Accepts any client certificate that parses (Go's `RequestClientCert` and
/// `RequireAnyClientCert`); the handshake still proves the client holds its key.
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
    hints: Vec<DistinguishedName>,
    algs: WebPkiSupportedAlgorithms,
}

impl ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        ParsedCertificate::try_from(end_entity)?;
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algs)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algs)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algs.supported_schemes()
    }
}

/// `client_allowed_sans`: after the inner verifier accepts the certificate, one of its subject
/// alternative names (DNS, e-mail, IP, URI; compared as exact strings, as exporter-toolkit
/// does) must be in the list.
#[derive(Debug)]
struct SanCheck {
    inner: Arc<dyn ClientCertVerifier>,
    allowed: Vec<String>,
}

impl ClientCertVerifier for SanCheck {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        let ok = self
            .inner
            .verify_client_cert(end_entity, intermediates, now)?;
        let sans = subject_alt_names(end_entity.as_ref()).unwrap_or_default();
        if sans.iter().any(|s| self.allowed.contains(s)) {
            Ok(ok)
        } else {
            tracing::debug!(
                ?sans,
                "client certificate has no SAN listed in client_allowed_sans"
            );
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

/// One DER element: (tag, content, rest).
fn der_next(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let mut len = 0usize;
        for &b in &rest[..n] {
            len = (len << 8) | usize::from(b);
        }
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// The subject alternative names of a DER certificate as strings, the way Go prints them:
/// DNS names, e-mail addresses, IP addresses and URIs. `None` when the DER is malformed.
pub fn subject_alt_names(cert: &[u8]) -> Option<Vec<String>> {
    const SEQUENCE: u8 = 0x30;
    let (tag, cert, _) = der_next(cert)?;
    if tag != SEQUENCE {
        return None;
    }
    let (tag, mut tbs, _) = der_next(cert)?;
    if tag != SEQUENCE {
        return None;
    }
    let mut out = Vec::new();
    while !tbs.is_empty() {
        let (tag, content, rest) = der_next(tbs)?;
        tbs = rest;
        // extensions [3] EXPLICIT SEQUENCE OF Extension
        if tag != 0xA3 {
            continue;
        }
        let (_, mut exts, _) = der_next(content)?;
        while !exts.is_empty() {
            let (_, ext, rest) = der_next(exts)?;
            exts = rest;
            let (tag, oid, mut body) = der_next(ext)?;
            // id-ce-subjectAltName 2.5.29.17
            if tag != 0x06 || oid != [0x55, 0x1D, 0x11] {
                continue;
            }
            let (mut tag, mut value, rest) = der_next(body)?;
            if tag == 0x01 {
                // critical flag
                body = rest;
                (tag, value, _) = der_next(body)?;
            }
            if tag != 0x04 {
                return None;
            }
            let (_, mut names, _) = der_next(value)?;
            while !names.is_empty() {
                let (tag, name, rest) = der_next(names)?;
                names = rest;
                match tag {
                    // rfc822Name, dNSName, uniformResourceIdentifier
                    0x81 | 0x82 | 0x86 => {
                        out.push(String::from_utf8_lossy(name).into_owned());
                    }
                    // iPAddress
                    0x87 => match name.len() {
                        4 => {
                            let b: [u8; 4] = name.try_into().ok()?;
                            out.push(std::net::Ipv4Addr::from(b).to_string());
                        }
                        16 => {
                            let b: [u8; 16] = name.try_into().ok()?;
                            let ip = std::net::Ipv6Addr::from(b);
                            out.push(match ip.to_ipv4_mapped() {
                                Some(v4) => v4.to_string(),
                                None => ip.to_string(),
                            });
                        }
                        _ => {}
                    },
                    _ => {}
                }
            }
        }
    }
    Some(out)
}

// ---------------------------------------------------------------------------------------------
// TLS at run time: the current configuration, rebuilt when the files change.

struct ReloadState {
    checked: Instant,
    stamps: Vec<Option<FileStamp>>,
}

/// The TLS side of a web config: settings plus the rustls configuration in use.
pub struct TlsServer {
    settings: TlsSettings,
    current: ArcSwap<ServerConfig>,
    reload: Mutex<ReloadState>,
}

impl TlsServer {
    fn new(settings: TlsSettings) -> Result<Self, WebConfigError> {
        let stamps = settings.stamps();
        let cfg = settings.build()?;
        Ok(Self {
            settings,
            current: ArcSwap::from_pointee(cfg),
            reload: Mutex::new(ReloadState {
                checked: Instant::now(),
                stamps,
            }),
        })
    }

    /// For the start-up log: `TLS (TLS 1.2 and 1.3)`, or `mTLS (TLS 1.3 only; client
    /// certificates: RequireAndVerifyClientCert, SANs restricted)`.
    pub fn describe(&self) -> String {
        let s = &self.settings;
        let has = |v: rustls::ProtocolVersion| s.versions.iter().any(|x| x.version == v);
        let versions = match (
            has(rustls::ProtocolVersion::TLSv1_2),
            has(rustls::ProtocolVersion::TLSv1_3),
        ) {
            (true, true) => "TLS 1.2 and 1.3",
            (true, false) => "TLS 1.2 only",
            _ => "TLS 1.3 only",
        };
        if s.client_auth == ClientAuth::NoClientCert {
            return format!("TLS ({versions})");
        }
        let sans = if s.allowed_sans.is_some() {
            ", SANs restricted"
        } else {
            ""
        };
        format!(
            "mTLS ({versions}; client certificates: {:?}{sans})",
            s.client_auth
        )
    }

    /// The client-certificate policy.
    pub fn client_auth(&self) -> ClientAuth {
        self.settings.client_auth
    }

    /// The configuration for a new connection. At most every [`RELOAD_CHECK_INTERVAL`] the
    /// certificate, key and CA files are checked (metadata only); when one changed, the
    /// configuration is rebuilt. A rebuild that fails keeps the previous configuration.
    pub fn config(&self) -> Arc<ServerConfig> {
        self.reload_if_changed(RELOAD_CHECK_INTERVAL);
        self.current.load_full()
    }

    /// Rebuilds when the files changed and `interval` passed since the last check. Returns
    /// `true` when a new configuration was installed.
    pub fn reload_if_changed(&self, interval: Duration) -> bool {
        // Another connection is already checking: use the current configuration.
        let Ok(mut state) = self.reload.try_lock() else {
            return false;
        };
        if state.checked.elapsed() < interval {
            return false;
        }
        state.checked = Instant::now();
        let stamps = self.settings.stamps();
        if stamps == state.stamps {
            return false;
        }
        // Remember the new state even when the rebuild fails: a half-written rotation changes
        // the files again when it completes.
        state.stamps = stamps;
        match self.settings.build() {
            Ok(cfg) => {
                self.current.store(Arc::new(cfg));
                tracing::info!(
                    cert = %self.settings.cert.name(),
                    "TLS certificate files changed: new connections use the new files"
                );
                true
            }
            Err(e) => {
                tracing::warn!(
                    "TLS files changed but cannot be used, keeping the previous ones: {e}"
                );
                false
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Basic auth.

/// `basic_auth_users`: user → bcrypt hash, with a cache of successful checks.
pub struct BasicAuth {
    users: BTreeMap<String, String>,
    /// Checked against when the user is unknown, so that unknown users cost as much as known
    /// ones (one of the configured hashes; the result is thrown away).
    decoy: String,
    /// Keys the cache entries, so that the cache holds no password-derived value that can be
    /// tested offline.
    cache_key: ring::hmac::Key,
    cache: Mutex<HashSet<[u8; 32]>>,
    /// Bounds the bcrypt checks running at once.
    gate: Arc<tokio::sync::Semaphore>,
    parallel: usize,
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
    pub fn new(users: BTreeMap<String, String>) -> Result<Self, String> {
        use std::str::FromStr;
        for (user, hash) in &users {
            // The value is never echoed: it may be a password written by mistake.
            match bcrypt::HashParts::from_str(hash) {
                Ok(parts) if (4..=31).contains(&parts.get_cost()) => {}
                Ok(parts) => {
                    return Err(format!(
                        "basic_auth_users.{user}: bcrypt cost {} is outside 4..31",
                        parts.get_cost()
                    ));
                }
                Err(e) => {
                    return Err(format!(
                        "basic_auth_users.{user}: the value is not a bcrypt hash ({e}); create \
                         one with e.g. `htpasswd -nbBC 10 USER PASSWORD`"
                    ));
                }
            }
        }
        let decoy = users
            .values()
            .next()
            .cloned()
            .ok_or_else(|| "basic_auth_users: no user".to_owned())?;
        let cache_key =
            ring::hmac::Key::generate(ring::hmac::HMAC_SHA256, &ring::rand::SystemRandom::new())
                .map_err(|_| "basic_auth_users: no random bytes for the cache key".to_owned())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<WebConfig, WebConfigError> {
        WebConfig::parse(Path::new("/etc/web/web.yml"), text)
    }

    fn error(text: &str) -> String {
        parse(text).unwrap_err().to_string()
    }

    /// A hash of "secret" at the lowest cost (fast tests).
    fn hash() -> String {
        bcrypt::hash("secret", 4).unwrap()
    }

    #[test]
    fn empty_file_means_plain_http_without_auth() {
        for text in ["", "\n", "tls_server_config:\n", "basic_auth_users: {}\n"] {
            let c = parse(text).unwrap();
            assert!(c.tls.is_none() && c.basic_auth.is_none(), "{text:?}");
            assert!(c.http2);
            assert_eq!(c.mode(), "plain HTTP");
        }
    }

    #[test]
    fn unknown_keys_are_errors_naming_file_and_key() {
        let e = error("tls_server_config:\n  cert_file: a.crt\n  certfile: b\n");
        assert!(e.starts_with("/etc/web/web.yml: "), "{e}");
        assert!(e.contains("certfile") && e.contains("line 3"), "{e}");
        let e = error("basic_auth_user:\n  a: b\n");
        assert!(e.contains("basic_auth_user") && e.contains("line 1"), "{e}");
        let e = error("http_server_config:\n  http3: true\n");
        assert!(e.contains("http3"), "{e}");
        // The parser's source excerpt is left out (it could show an inline key).
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    #[test]
    fn rate_limit_is_refused_not_ignored() {
        let e = error("rate_limit:\n  interval: 1s\n  burst: 5\n");
        assert!(
            e.contains("/etc/web/web.yml: rate_limit: not supported"),
            "{e}"
        );
    }

    #[test]
    fn tls_settings_without_a_certificate_are_refused() {
        let e = error("tls_server_config:\n  min_version: TLS13\n");
        assert!(
            e.contains("tls_server_config.min_version is set but TLS is off"),
            "{e}"
        );
        let e = error("tls_server_config:\n  key_file: k.pem\n");
        assert!(e.contains("missing cert_file"), "{e}");
        let e = error("tls_server_config:\n  cert_file: c.pem\n");
        assert!(e.contains("missing key_file"), "{e}");
        let e = error("tls_server_config:\n  cert_file: c.pem\n  cert: x\n  key_file: k\n");
        assert!(e.contains("set cert_file or cert, not both"), "{e}");
    }

    #[test]
    fn relative_paths_resolve_against_the_file_directory() {
        let e = error("tls_server_config:\n  cert_file: tls/c.pem\n  key_file: /abs/k.pem\n");
        assert!(
            e.contains("tls_server_config.cert_file \"/etc/web/tls/c.pem\": cannot read"),
            "{e}"
        );
    }

    fn tls_error(extra: &str) -> String {
        error(&format!(
            "tls_server_config:\n  cert_file: c.pem\n  key_file: k.pem\n{extra}"
        ))
    }

    #[test]
    fn versions_suites_and_curves_are_checked_before_files() {
        let e = tls_error("  max_version: TLS11\n");
        assert!(
            e.contains("tls_server_config.max_version: TLS11 is not supported"),
            "{e}"
        );
        let e = tls_error("  min_version: TLS14\n");
        assert!(e.contains("unknown TLS version \"TLS14\""), "{e}");
        let e = tls_error("  min_version: TLS13\n  max_version: TLS12\n");
        assert!(e.contains("above max_version"), "{e}");
        let e = tls_error("  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA]\n");
        assert!(
            e.contains("cipher_suites: TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA is not available"),
            "{e}"
        );
        let e = tls_error("  cipher_suites: [TLS_RSA_WITH_AES_128_GCM_SHA256]\n");
        assert!(
            e.contains("TLS_RSA_WITH_AES_128_GCM_SHA256 is not available"),
            "{e}"
        );
        let e = tls_error("  cipher_suites: [NOPE]\n");
        assert!(e.contains("unknown cipher suite \"NOPE\""), "{e}");
        let e = tls_error("  cipher_suites: [TLS_AES_128_GCM_SHA256]\n  max_version: TLS12\n");
        assert!(
            e.contains("lists no TLS 1.2 suite but max_version is TLS12"),
            "{e}"
        );
        let e = tls_error("  curve_preferences: [CurveP521]\n");
        assert!(
            e.contains("curve_preferences: CurveP521 is not available"),
            "{e}"
        );
        let e = tls_error("  curve_preferences: [P256]\n");
        assert!(e.contains("unknown curve \"P256\""), "{e}");
        let e = tls_error("  client_auth_type: RequireSomething\n");
        assert!(e.contains("client_auth_type: unknown value"), "{e}");
        let e = tls_error("  client_auth_type: RequireAndVerifyClientCert\n");
        assert!(e.contains("needs client_ca_file"), "{e}");
        let e = tls_error("  client_ca_file: ca.pem\n");
        assert!(e.contains("client_auth_type is NoClientCert"), "{e}");
        let e = tls_error(
            "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.pem\n  client_allowed_sans: [a]\n",
        );
        assert!(
            e.contains("client_allowed_sans needs client_auth_type"),
            "{e}"
        );
        let e = tls_error("  client_auth_type: RequireAnyClientCert\n  client_allowed_sans: []\n");
        assert!(
            e.contains("tls_server_config.client_allowed_sans is empty"),
            "{e}"
        );
        // All of those were found before reading the (missing) files; this one is not.
        let e = tls_error("  min_version: TLS10\n");
        assert!(
            e.contains("cert_file \"/etc/web/c.pem\": cannot read"),
            "{e}"
        );
    }

    #[test]
    fn suite_and_curve_names_map_to_rustls() {
        let s = tls12_suite("TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256").unwrap();
        assert_eq!(
            s.suite(),
            rustls::CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        );
        let s = tls12_suite("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305").unwrap();
        assert_eq!(
            s.suite(),
            rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        );
        assert!(tls12_suite("TLS_AES_128_GCM_SHA256").is_none());
        assert_eq!(curve("X25519").unwrap().name(), rustls::NamedGroup::X25519);
        assert_eq!(
            curve("CurveP384").unwrap().name(),
            rustls::NamedGroup::secp384r1
        );
    }

    #[test]
    fn headers_follow_exporter_toolkit_rules() {
        let c = parse(
            "http_server_config:\n  http2: false\n  headers:\n    X-Frame-Options: deny\n    Strict-Transport-Security: max-age=31536000\n",
        )
        .unwrap();
        assert!(!c.http2);
        let names: Vec<&str> = c.headers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["strict-transport-security", "x-frame-options"]);
        let e = error("http_server_config:\n  headers:\n    X-Powered-By: me\n");
        assert!(
            e.contains("http_server_config.headers.X-Powered-By: this header cannot be configured"),
            "{e}"
        );
        let e = error("http_server_config:\n  headers:\n    X-Content-Type-Options: sniff\n");
        assert!(
            e.contains("\"sniff\" is not allowed (expected one of: nosniff)"),
            "{e}"
        );
    }

    #[test]
    fn users_need_bcrypt_hashes_and_values_are_not_echoed() {
        let c = parse(&format!("basic_auth_users:\n  prom: {}\n", hash())).unwrap();
        assert_eq!(c.basic_auth.as_ref().unwrap().user_count(), 1);
        let e = error("basic_auth_users:\n  prom: hunter2\n");
        assert!(
            e.contains("basic_auth_users.prom: the value is not a bcrypt hash"),
            "{e}"
        );
        assert!(!e.contains("hunter2"), "{e}");
        let mut high = hash();
        high.replace_range(4..6, "32");
        let e = error(&format!("basic_auth_users:\n  prom: \"{high}\"\n"));
        assert!(e.contains("cost 32 is outside 4..31"), "{e}");
    }

    fn header(user: &str, pass: &str) -> HeaderValue {
        use base64::Engine as _;
        let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"));
        HeaderValue::from_str(&format!("Basic {b}")).unwrap()
    }

    #[tokio::test]
    async fn basic_auth_checks_and_caches_only_successes() {
        let auth = BasicAuth::new(BTreeMap::from([
            ("prom".to_owned(), hash()),
            (
                "other".to_owned(),
                bcrypt::hash("pw:with:colons", 4).unwrap(),
            ),
        ]))
        .unwrap();
        assert!(auth.max_parallel_checks() >= 1);
        assert!(!auth.check(None).await);
        assert!(
            !auth
                .check(Some(&HeaderValue::from_static("Bearer x")))
                .await
        );
        assert!(
            !auth
                .check(Some(&HeaderValue::from_static("Basic !!!")))
                .await
        );
        assert!(!auth.check(Some(&header("prom", "wrong"))).await);
        // The decoy is one of the real hashes: another user's password must not pass.
        assert!(!auth.check(Some(&header("nobody", "secret"))).await);
        assert!(!auth.check(Some(&header("other", "secret"))).await);
        assert_eq!(auth.cache.lock().unwrap().len(), 0);
        assert!(auth.check(Some(&header("prom", "secret"))).await);
        assert!(auth.check(Some(&header("other", "pw:with:colons"))).await);
        assert_eq!(auth.cache.lock().unwrap().len(), 2);
        assert!(auth.check(Some(&header("prom", "secret"))).await);
        assert_eq!(auth.cache.lock().unwrap().len(), 2);
        // The scheme name is case-insensitive.
        let lower = HeaderValue::from_str(
            &header("prom", "secret")
                .to_str()
                .unwrap()
                .replace("Basic", "basic"),
        )
        .unwrap();
        assert!(auth.check(Some(&lower)).await);
    }

    #[test]
    fn passwords_past_72_bytes_are_refused() {
        let long = "x".repeat(80);
        let auth = BasicAuth::new(BTreeMap::from([(
            "u".to_owned(),
            bcrypt::hash(&long, 4).unwrap(),
        )]))
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert!(!rt.block_on(auth.check(Some(&header("u", &long)))));
    }

    /// Makes a self-signed P-256 certificate `<name>.pem` and key `<name>.key` in `dir` with
    /// the `openssl` command (present here and in CI).
    fn openssl_pair(dir: &Path, name: &str, san: &str) -> (PathBuf, PathBuf) {
        let (pem, key) = (
            dir.join(format!("{name}.pem")),
            dir.join(format!("{name}.key")),
        );
        let status = std::process::Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec"])
            .args([
                "-pkeyopt",
                "ec_paramgen_curve:P-256",
                "-nodes",
                "-days",
                "1",
            ])
            .args(["-subj", &format!("/CN={name}")])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&pem)
            .args(["-addext", &format!("subjectAltName={san}")])
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run openssl");
        assert!(status.success());
        (pem, key)
    }

    fn openssl_cert(san: &str) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        let (pem, _) = openssl_pair(dir.path(), "c", san);
        CertificateDer::from_pem_file(pem).unwrap().to_vec()
    }

    fn indented(path: &Path) -> String {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| format!("    {l}\n"))
            .collect()
    }

    #[test]
    fn inline_pems_and_notes_for_settings_that_mean_less_here() {
        let dir = tempfile::tempdir().unwrap();
        let (pem, key) = openssl_pair(dir.path(), "server", "IP:127.0.0.1");
        let inline = format!(
            "tls_server_config:\n  cert: |\n{}  key: |\n{}",
            indented(&pem),
            indented(&key)
        );
        let c = parse(&format!(
            "{inline}  min_version: TLS10\n  cipher_suites: [TLS_AES_128_GCM_SHA256, \
             TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n"
        ))
        .unwrap();
        assert_eq!(c.mode(), "TLS (TLS 1.2 and 1.3)");
        assert_eq!(c.notes.len(), 2, "{:?}", c.notes);
        assert!(
            c.notes[0].contains("min_version TLS10 means TLS12"),
            "{:?}",
            c.notes
        );
        assert!(c.notes[1].contains("TLS_AES_128_GCM_SHA256 are TLS 1.3 suites"));
        let cfg = c.tls.as_ref().unwrap().config();
        let suites: Vec<_> = cfg
            .crypto_provider()
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        assert!(suites.contains(&rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256));
        assert!(!suites.contains(&rustls::CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384));
        assert!(suites.contains(&rustls::CipherSuite::TLS13_AES_256_GCM_SHA384));
        // Only TLS 1.3 names: TLS 1.2 is off, and the log says so.
        let c = parse(&format!(
            "{inline}  cipher_suites: [TLS_AES_128_GCM_SHA256]\n"
        ))
        .unwrap();
        assert_eq!(c.mode(), "TLS (TLS 1.3 only)");
        assert!(c.notes.iter().any(|n| n.contains("only TLS 1.3 is served")));
        // A client CA with a verifying mode.
        let c = parse(&format!(
            "{inline}  client_auth_type: VerifyClientCertIfGiven\n  client_ca: |\n{}",
            indented(&pem)
        ))
        .unwrap();
        assert_eq!(
            c.mode(),
            "mTLS (TLS 1.2 and 1.3; client certificates: VerifyClientCertIfGiven)"
        );
        // A CA file that is not PEM.
        std::fs::write(dir.path().join("ca.pem"), "not a certificate").unwrap();
        let e = WebConfig::parse(
            &dir.path().join("web.yml"),
            &format!(
                "{inline}  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n"
            ),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("tls_server_config.client_ca_file") && e.contains("no PEM CERTIFICATE"),
            "{e}"
        );
    }

    #[test]
    fn changed_files_rebuild_the_configuration_and_bad_ones_keep_the_old() {
        let dir = tempfile::tempdir().unwrap();
        let (pem, key) = openssl_pair(dir.path(), "server", "IP:127.0.0.1");
        let web = dir.path().join("web.yml");
        let c = WebConfig::parse(
            &web,
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n",
        )
        .unwrap();
        let tls = c.tls.as_ref().unwrap();
        let first = tls.config();
        assert!(
            !tls.reload_if_changed(Duration::ZERO),
            "nothing changed yet"
        );
        assert!(Arc::ptr_eq(&first, &tls.config()));
        // A certificate whose key is not there yet: refused, the old configuration stays.
        let (next_pem, next_key) = openssl_pair(dir.path(), "next", "IP:127.0.0.1");
        std::fs::rename(&next_pem, &pem).unwrap();
        assert!(!tls.reload_if_changed(Duration::ZERO));
        assert!(Arc::ptr_eq(&first, &tls.config()));
        // The key follows: now the new pair is used.
        std::fs::rename(&next_key, &key).unwrap();
        assert!(tls.reload_if_changed(Duration::ZERO));
        let second = tls.config();
        assert!(!Arc::ptr_eq(&first, &second));
        // Within the interval nothing is looked at.
        assert!(!tls.reload_if_changed(Duration::from_secs(3600)));
    }

    #[test]
    fn subject_alt_names_are_read_like_go_prints_them() {
        let der = openssl_cert(
            "DNS:scraper.example,email:ops@example.com,IP:10.1.2.3,IP:2001:db8::1,URI:spiffe://cluster/ns/monitoring/sa/prometheus",
        );
        assert_eq!(
            subject_alt_names(&der).unwrap(),
            [
                "scraper.example",
                "ops@example.com",
                "10.1.2.3",
                "2001:db8::1",
                "spiffe://cluster/ns/monitoring/sa/prometheus"
            ]
        );
        assert_eq!(subject_alt_names(&der[..der.len() / 2]), None);
        assert_eq!(subject_alt_names(b"\x30\x00"), None);
    }
}
