//! TLS policy from `tls_server_config`: protocol versions, TLS 1.2 cipher suites, curves,
//! the certificate and key (file or inline PEM), the client CA and `client_auth_type`, built
//! into a rustls `ServerConfig`.
//!
//! It reads the PEM files it is pointed at; it must not accept connections or watch files.

use super::client_cert::{AnyClientCert, SanCheck};
use super::schema::{KeyError, RawTls, WebConfigError, given};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The largest PEM file read (a certificate chain is a few KiB).
const MAX_PEM_FILE: u64 = 1 << 20;

use rustls::crypto::{CryptoProvider, SupportedKxGroup};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::ClientCertVerifier;
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};

use crate::base::file_stamp::FileStamp;

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
    pub(super) fn parse(v: &str) -> Option<Self> {
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

    pub(super) fn verifies(self) -> bool {
        matches!(
            self,
            Self::VerifyClientCertIfGiven | Self::RequireAndVerifyClientCert
        )
    }
}

/// A PEM value: a file (`cert_file`, …) or inline text (`cert`, …), with its key name.
#[derive(Clone)]
pub(super) struct Pem {
    pub(super) key: &'static str,
    pub(super) source: PemSource,
}

#[derive(Clone)]
pub(super) enum PemSource {
    File(PathBuf),
    Inline(String),
}

impl Pem {
    pub(super) fn pick(
        dir: &Path,
        file_key: &'static str,
        file: Option<&str>,
        inline_key: &'static str,
        inline: Option<&str>,
    ) -> Result<Option<Self>, KeyError> {
        match (file, inline) {
            (Some(_), Some(_)) => Err(KeyError::Both {
                file_key,
                inline_key,
            }),
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
    pub(super) fn name(&self) -> String {
        match &self.source {
            PemSource::File(p) => format!("tls_server_config.{} {:?}", self.key, p.display()),
            PemSource::Inline(_) => format!("tls_server_config.{}", self.key),
        }
    }

    pub(super) fn file(&self) -> Option<&Path> {
        match &self.source {
            PemSource::File(p) => Some(p),
            PemSource::Inline(_) => None,
        }
    }

    pub(super) fn bytes(&self) -> Result<Vec<u8>, KeyError> {
        match &self.source {
            PemSource::File(p) => {
                crate::base::bounded_read::read_regular(p, MAX_PEM_FILE).map_err(|e| {
                    KeyError::PemRead {
                        name: self.name(),
                        source: e.into(),
                    }
                })
            }
            PemSource::Inline(s) => Ok(s.as_bytes().to_vec()),
        }
    }

    pub(super) fn certificates(&self) -> Result<Vec<CertificateDer<'static>>, KeyError> {
        let bytes = self.bytes()?;
        let certs = CertificateDer::pem_slice_iter(&bytes)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|source| KeyError::NotPem {
                name: self.name(),
                source,
            })?;
        if certs.is_empty() {
            return Err(KeyError::NoCertificate { name: self.name() });
        }
        Ok(certs)
    }

    pub(super) fn private_key(&self) -> Result<PrivateKeyDer<'static>, KeyError> {
        let bytes = self.bytes()?;
        PrivateKeyDer::from_pem_slice(&bytes).map_err(|source| KeyError::NoPrivateKey {
            name: self.name(),
            source,
        })
    }
}

/// TLS versions as exporter-toolkit names them.
pub(super) fn tls_version(key: &'static str, v: &str) -> Result<u8, KeyError> {
    match v {
        "TLS10" => Ok(10),
        "TLS11" => Ok(11),
        "TLS12" => Ok(12),
        "TLS13" => Ok(13),
        _ => Err(KeyError::TlsVersion {
            key,
            value: v.to_owned(),
        }),
    }
}

/// Go's names of the TLS 1.2 suites rustls implements (with Go's older CHACHA20 spellings).
pub(super) fn tls12_suite(name: &str) -> Option<SupportedCipherSuite> {
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
pub(super) const TLS13_SUITES: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
];

/// Suites Go knows (some only as insecure) that rustls does not implement: CBC, RSA key
/// exchange, 3DES, RC4.
pub(super) const GO_ONLY_SUITES: &[&str] = &[
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

pub(super) fn curve(name: &str) -> Result<&'static dyn SupportedKxGroup, KeyError> {
    use rustls::crypto::ring::kx_group;
    match name {
        "CurveP256" => Ok(kx_group::SECP256R1),
        "CurveP384" => Ok(kx_group::SECP384R1),
        "X25519" => Ok(kx_group::X25519),
        "CurveP521" => Err(KeyError::CurveUnavailable { name: name.into() }),
        _ => Err(KeyError::UnknownCurve { name: name.into() }),
    }
}

/// Checked TLS settings, from which a rustls configuration can be built again and again.
pub(super) struct TlsSettings {
    pub(super) file: PathBuf,
    pub(super) cert: Pem,
    pub(super) key: Pem,
    pub(super) client_ca: Option<Pem>,
    pub(super) client_auth: ClientAuth,
    pub(super) versions: Vec<&'static SupportedProtocolVersion>,
    pub(super) cipher_suites: Vec<SupportedCipherSuite>,
    pub(super) kx_groups: Vec<&'static dyn SupportedKxGroup>,
    pub(super) prefer_server_order: bool,
    pub(super) allowed_sans: Option<Vec<String>>,
}

/// `tls_server_config`'s error for the file at `path`.
fn invalid(path: &Path, message: String) -> WebConfigError {
    WebConfigError::Invalid {
        file: path.to_owned(),
        message,
    }
}

/// Whether the section turns TLS on (a certificate, key or client setting is given). Settings
/// that only shape TLS, without a certificate, would be silently unused: refused.
fn turns_tls_on(path: &Path, t: &RawTls) -> Result<bool, WebConfigError> {
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
    if enabled {
        return Ok(true);
    }
    let stray = [
        ("cipher_suites", t.cipher_suites.is_some()),
        ("curve_preferences", t.curve_preferences.is_some()),
        ("min_version", given(&t.min_version).is_some()),
        ("max_version", given(&t.max_version).is_some()),
        ("client_allowed_sans", t.client_allowed_sans.is_some()),
    ];
    if let Some((k, _)) = stray.iter().find(|(_, set)| *set) {
        return Err(invalid(
            path,
            format!(
                "tls_server_config.{k} is set but TLS is off: set cert_file and key_file \
                 (or cert and key)"
            ),
        ));
    }
    Ok(false)
}

/// The certificate, the key (both required) and the client CA, each a file or inline PEM.
fn pems(path: &Path, dir: &Path, t: &RawTls) -> Result<(Pem, Pem, Option<Pem>), WebConfigError> {
    let key_err = |e: KeyError| e.in_file(path);
    let cert = Pem::pick(
        dir,
        "cert_file",
        given(&t.cert_file),
        "cert",
        given(&t.cert),
    )
    .map_err(key_err)?
    .ok_or_else(|| {
        invalid(
            path,
            "tls_server_config: missing cert_file (or cert)".into(),
        )
    })?;
    let key = Pem::pick(dir, "key_file", given(&t.key_file), "key", given(&t.key))
        .map_err(key_err)?
        .ok_or_else(|| invalid(path, "tls_server_config: missing key_file (or key)".into()))?;
    let client_ca = Pem::pick(
        dir,
        "client_ca_file",
        given(&t.client_ca_file),
        "client_ca",
        given(&t.client_ca),
    )
    .map_err(key_err)?;
    Ok((cert, key, client_ca))
}

/// Which client certificates are asked for (`client_auth_type`, which must agree with whether
/// a client CA is given) and, when listed, the SANs one must carry.
fn client_policy(
    path: &Path,
    t: &RawTls,
    has_ca: bool,
) -> Result<(ClientAuth, Option<Vec<String>>), WebConfigError> {
    let auth_name = given(&t.client_auth_type).unwrap_or("NoClientCert");
    let client_auth = ClientAuth::parse(auth_name).ok_or_else(|| {
        invalid(
            path,
            format!(
                "tls_server_config.client_auth_type: unknown value {auth_name:?} (expected \
                 NoClientCert, RequestClientCert, RequireAnyClientCert, \
                 VerifyClientCertIfGiven or RequireAndVerifyClientCert)"
            ),
        )
    })?;
    if has_ca && client_auth == ClientAuth::NoClientCert {
        return Err(invalid(
            path,
            "tls_server_config.client_ca_file is set but client_auth_type is NoClientCert: \
             set client_auth_type (e.g. RequireAndVerifyClientCert)"
                .into(),
        ));
    }
    if client_auth.verifies() && !has_ca {
        return Err(invalid(
            path,
            format!(
                "tls_server_config.client_auth_type {auth_name} needs client_ca_file (or \
                 client_ca): the CA that signs client certificates"
            ),
        ));
    }
    let allowed_sans = t.client_allowed_sans.clone();
    if allowed_sans.as_ref().is_some_and(Vec::is_empty) {
        // In Go an empty list rejects every client; refuse the ambiguity.
        return Err(invalid(
            path,
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
        return Err(invalid(
            path,
            format!(
                "tls_server_config.client_allowed_sans needs client_auth_type \
                 RequireAnyClientCert or RequireAndVerifyClientCert (it is {auth_name})"
            ),
        ));
    }
    Ok((client_auth, allowed_sans))
}

/// Whether TLS 1.2 and TLS 1.3 are served, from `min_version` and `max_version` (rustls has
/// TLS 1.2 and 1.3 only: a lower minimum is a note).
fn version_range(
    path: &Path,
    t: &RawTls,
    notes: &mut Vec<String>,
) -> Result<(bool, bool), WebConfigError> {
    let key_err = |e: KeyError| e.in_file(path);
    let min = match given(&t.min_version) {
        Some(v) => tls_version("min_version", v).map_err(key_err)?,
        None => 12,
    };
    let max = match given(&t.max_version) {
        Some(v) => tls_version("max_version", v).map_err(key_err)?,
        None => 13,
    };
    if max < 12 {
        return Err(invalid(
            path,
            format!(
                "tls_server_config.max_version: TLS{max} is not supported: TLS 1.0 and 1.1 are \
                 not available, the oldest version served is TLS12"
            ),
        ));
    }
    if min > max {
        return Err(invalid(
            path,
            format!("tls_server_config.min_version TLS{min} is above max_version TLS{max}"),
        ));
    }
    if min < 12 {
        notes.push(format!(
            "{}: tls_server_config.min_version TLS{min} means TLS12 here: TLS 1.0 and 1.1 \
             are not available",
            path.display()
        ));
    }
    Ok((min <= 12, max >= 13))
}

/// The cipher suites: every TLS 1.3 suite, then the TLS 1.2 suites `cipher_suites` names (all
/// of them when it names none), as in Go. Also whether TLS 1.2 is still served: not when the
/// list names no TLS 1.2 suite and TLS 1.3 is on.
fn cipher_suites(
    path: &Path,
    provider: &CryptoProvider,
    names: Option<&[String]>,
    (tls12, tls13): (bool, bool),
    notes: &mut Vec<String>,
) -> Result<(Vec<SupportedCipherSuite>, bool), WebConfigError> {
    let mut tls12 = tls12;
    let mut suites12: Vec<SupportedCipherSuite> = provider
        .cipher_suites
        .iter()
        .copied()
        .filter(|s| s.tls13().is_none())
        .collect();
    if let Some(names) = names
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
                return Err(invalid(
                    path,
                    format!(
                        "tls_server_config.cipher_suites: {name} is not available: the TLS \
                         library implements only ECDHE key exchange with AES-GCM or \
                         ChaCha20-Poly1305 (use e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 or \
                         TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)"
                    ),
                ));
            } else {
                return Err(invalid(
                    path,
                    format!("tls_server_config.cipher_suites: unknown cipher suite {name:?}"),
                ));
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
                return Err(invalid(
                    path,
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
    let mut suites: Vec<SupportedCipherSuite> = provider
        .cipher_suites
        .iter()
        .copied()
        .filter(|s| s.tls13().is_some())
        .collect();
    suites.extend(suites12);
    Ok((suites, tls12))
}

/// The key exchange groups `curve_preferences` names, in its order (the provider's when it
/// names none).
fn kx_groups(
    path: &Path,
    provider: &CryptoProvider,
    names: Option<&[String]>,
) -> Result<Vec<&'static dyn SupportedKxGroup>, WebConfigError> {
    match names {
        Some(names) if !names.is_empty() => {
            let mut v: Vec<&'static dyn SupportedKxGroup> = Vec::new();
            for n in names {
                let g = curve(n).map_err(|e| e.in_file(path))?;
                if !v.iter().any(|x| x.name() == g.name()) {
                    v.push(g);
                }
            }
            Ok(v)
        }
        _ => Ok(provider.kx_groups.clone()),
    }
}

impl TlsSettings {
    /// `None` when the section sets nothing that turns TLS on (exporter-toolkit then serves
    /// plain HTTP). The steps, each checking its keys in this order: TLS on or off, the
    /// certificate and key, client certificates, versions, cipher suites, curves.
    pub(super) fn from_raw(
        path: &Path,
        dir: &Path,
        t: RawTls,
        notes: &mut Vec<String>,
    ) -> Result<Option<Self>, WebConfigError> {
        if !turns_tls_on(path, &t)? {
            return Ok(None);
        }
        let (cert, key, client_ca) = pems(path, dir, &t)?;
        let (client_auth, allowed_sans) = client_policy(path, &t, client_ca.is_some())?;
        let (tls12, tls13) = version_range(path, &t, notes)?;
        // Cipher suites restrict TLS 1.2 only, as in Go.
        let provider = rustls::crypto::ring::default_provider();
        let (cipher_suites, tls12) = cipher_suites(
            path,
            &provider,
            t.cipher_suites.as_deref(),
            (tls12, tls13),
            notes,
        )?;
        let kx_groups = kx_groups(path, &provider, t.curve_preferences.as_deref())?;
        let mut versions = Vec::new();
        if tls13 {
            versions.push(&rustls::version::TLS13);
        }
        if tls12 {
            versions.push(&rustls::version::TLS12);
        }
        Ok(Some(Self {
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
        }))
    }

    pub(super) fn err(&self, msg: String) -> WebConfigError {
        invalid(&self.file, msg)
    }

    /// Reads the files and builds a rustls configuration.
    pub(super) fn build(&self) -> Result<ServerConfig, WebConfigError> {
        let certs = self
            .cert
            .certificates()
            .map_err(|e| e.in_file(&self.file))?;
        let key = self.key.private_key().map_err(|e| e.in_file(&self.file))?;
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

    pub(super) fn client_verifier(
        &self,
        provider: &Arc<CryptoProvider>,
    ) -> Result<Arc<dyn ClientCertVerifier>, WebConfigError> {
        let roots = match &self.client_ca {
            Some(ca) => {
                let mut store = RootCertStore::empty();
                for (i, c) in ca
                    .certificates()
                    .map_err(|e| e.in_file(&self.file))?
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
    pub(super) fn stamps(&self) -> Vec<Option<FileStamp>> {
        [Some(&self.cert), Some(&self.key), self.client_ca.as_ref()]
            .into_iter()
            .flatten()
            .filter_map(Pem::file)
            .map(|p| FileStamp::of(p).ok())
            .collect()
    }
}
