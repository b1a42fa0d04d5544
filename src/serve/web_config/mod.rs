//! `--web-config-file`: the `web-config.yml` format of Prometheus' exporter-toolkit (TLS,
//! client certificates, basic auth, extra response headers), read and checked at start-up.
//!
//! [`WebConfig::load`] parses the file strictly (an unknown key is an error, as with
//! exporter-toolkit), resolves relative paths against the file's directory, reads the
//! certificate, key and client CA once to prove they work, and checks that every password is a
//! bcrypt hash whose cost this machine can verify within a scrape's timeout. Every error starts
//! with the file and names the key; a key that means less here than in Go (`http2: true`, a
//! TLS 1.0 minimum, a slow bcrypt cost) is a note, logged as a warning. At run time
//! [`TlsServer::config`] hands out the current rustls configuration and rebuilds it when the
//! certificate, key or CA files change (cert-manager rotation); [`BasicAuth::check`] verifies
//! credentials off the async workers. See docs/web-config.md for the differences from
//! exporter-toolkit (TLS 1.0/1.1, HTTP/2, unauthenticated probes).
//!
//! This file owns loading and checking the file (and the `headers` allow-list); the parts live
//! beside it: `schema` (the YAML as written, the error type), `tls` (TLS policy and the rustls
//! configuration), `client_cert` (client-certificate verifiers, SANs), `reload` (certificate
//! rotation), `basic_auth`. It must not accept connections: that is `serve`.

use tls::TlsSettings;
mod basic_auth;
mod client_cert;
mod reload;
mod schema;
mod tls;

pub use basic_auth::{BCRYPT_NOTE_OVER, BCRYPT_REFUSE_OVER, BasicAuth};
pub use client_cert::subject_alt_names;
pub use reload::TlsServer;
use schema::RawConfig;
pub use schema::{KeyError, RELOAD_CHECK_INTERVAL, WebConfigError};
pub use tls::ClientAuth;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::http::{HeaderName, HeaderValue};

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
    /// `http_server_config.http2` (only HTTP/1.1 is served: `true`, when written, is a note).
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

// ---------------------------------------------------------------------------------------------
// Loading.

impl WebConfig {
    /// Reads, parses and checks `path`.
    pub fn load(path: &Path) -> Result<Self, WebConfigError> {
        let text = crate::base::bounded_read::read_regular_text(
            path,
            crate::base::bounded_read::MAX_CONFIG_FILE,
        )
        .map_err(|e| WebConfigError::Read {
            file: path.to_owned(),
            source: e.into(),
        })?;
        Self::parse(path, &text)
    }

    /// Parses `text` as the content of `path` (relative paths inside are resolved against
    /// `path`'s directory) and checks everything it refers to.
    pub fn parse(path: &Path, text: &str) -> Result<Self, WebConfigError> {
        let err = |message: String| WebConfigError::Invalid {
            file: path.to_owned(),
            message,
        };
        let raw: RawConfig = if text.trim().is_empty() {
            RawConfig::default()
        } else {
            crate::base::yaml::from_str(text).map_err(|e| err(e.to_string()))?
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
        if text.trim().is_empty() {
            // Notes are logged as warnings: an empty file is more likely a failed mount or
            // template than a wish for plain HTTP without authentication.
            notes.push(format!(
                "--web-config-file {}: the file is empty: serving plain HTTP without basic auth",
                path.display()
            ));
        }
        let tls = match raw.tls_server_config {
            Some(t) => TlsSettings::from_raw(path, &dir, t, &mut notes)?,
            None => None,
        };
        let tls = match tls {
            Some(settings) => Some(Arc::new(TlsServer::new(settings)?)),
            None => None,
        };
        let http = raw.http_server_config.unwrap_or_default();
        let headers =
            check_headers(http.headers.unwrap_or_default()).map_err(|e| e.in_file(path))?;
        if http.http2 == Some(true) {
            // Said, not ignored: the key asks for something this server does not do.
            notes.push(format!(
                "--web-config-file {}: http_server_config.http2: true is not supported and has \
                 no effect: gpu-exporter serves HTTP/1.1 only, over TLS too (ALPN offers \
                 http/1.1, and Prometheus falls back to it); remove the key or set it to false",
                path.display()
            ));
        }
        let users = raw.basic_auth_users.unwrap_or_default();
        let basic_auth = if users.is_empty() {
            None
        } else {
            let mut auth_notes = Vec::new();
            let auth = BasicAuth::new(users, &mut auth_notes).map_err(|e| e.in_file(path))?;
            notes.extend(
                auth_notes
                    .into_iter()
                    .map(|n| format!("--web-config-file {}: {n}", path.display())),
            );
            Some(Arc::new(auth))
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
) -> Result<Vec<(HeaderName, HeaderValue)>, KeyError> {
    let mut out = Vec::new();
    for (name, value) in headers {
        let key = format!("http_server_config.headers.{name}");
        let Some((_, values)) = ALLOWED_HEADERS.iter().find(|(n, _)| *n == name) else {
            let names: Vec<&str> = ALLOWED_HEADERS.iter().map(|(n, _)| *n).collect();
            return Err(KeyError::HeaderNotAllowed {
                key,
                allowed: names.join(", "),
            });
        };
        if !values.is_empty() && !values.contains(&value.as_str()) {
            return Err(KeyError::HeaderValueNotAllowed {
                key,
                value,
                allowed: values.join(", "),
            });
        }
        let n = match HeaderName::from_bytes(name.as_bytes()) {
            Ok(n) => n,
            Err(source) => return Err(KeyError::HeaderName { key, source }),
        };
        let v = match HeaderValue::from_str(&value) {
            Ok(v) => v,
            Err(_) => return Err(KeyError::HeaderValue { key, value }),
        };
        out.push((n, v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::tls::{curve, tls12_suite};
    use super::*;
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    use std::time::Duration;

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
            // An empty file is said as a warning (the notes are logged at WARN).
            let empty = text.trim().is_empty();
            assert_eq!(
                c.notes.iter().any(|n| n.contains("the file is empty")),
                empty,
                "{text:?}: {:?}",
                c.notes
            );
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

    /// A YAML refusal names the exact key path: a key of a nested mapping, an item of a list,
    /// an unknown key; with the line and column, in our words.
    #[test]
    fn yaml_errors_name_the_exact_key_path() {
        let mut wrong = Vec::new();
        for (text, want) in [
            (
                "tls_server_config:\n  prefer_server_cipher_suites: maybe\n",
                "line 2, column 3, key tls_server_config.prefer_server_cipher_suites: expected \
                 true or false, found the text \"maybe\"",
            ),
            (
                "basic_auth_users:\n  a: x\n  prom: {hash: x}\n",
                "line 3, column 9, key basic_auth_users.prom: ",
            ),
            (
                "tls_server_config:\n  cipher_suites: [TLS_AES_128_GCM_SHA256, [x]]\n",
                "line 2, column 43, key tls_server_config.cipher_suites[1]: ",
            ),
            (
                "http_server_config:\n  http2: true\n  http3: true\n",
                "line 3, column 3, key http_server_config.http3: unknown key (expected one of: \
                 http2, headers); remove it or correct its spelling",
            ),
            (
                "tls_server_config:\n  cert_file: a\n  cert_file: b\n",
                "line 3, column 3, key tls_server_config.cert_file: this key is given twice",
            ),
        ] {
            let e = error(text);
            if !e.starts_with(&format!("/etc/web/web.yml: {want}")) {
                wrong.push(format!("{text:?}: {e}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
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
        let auth = BasicAuth::new(
            BTreeMap::from([
                ("prom".to_owned(), hash()),
                (
                    "other".to_owned(),
                    bcrypt::hash("pw:with:colons", 4).unwrap(),
                ),
            ]),
            &mut Vec::new(),
        )
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
        assert_eq!(auth.state.lock().unwrap().good.len(), 0);
        assert!(auth.check(Some(&header("prom", "secret"))).await);
        assert!(auth.check(Some(&header("other", "pw:with:colons"))).await);
        assert_eq!(auth.state.lock().unwrap().good.len(), 2);
        assert!(auth.check(Some(&header("prom", "secret"))).await);
        assert_eq!(auth.state.lock().unwrap().good.len(), 2);
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

    /// A cost this machine cannot verify within a scrape's timeout is refused from the
    /// estimate, without hashing at that cost (which, at 31, would take days).
    #[test]
    fn a_cost_far_over_a_scrapes_budget_is_refused_from_the_estimate() {
        let high = hash().replacen("$04$", "$31$", 1);
        let e = error(&format!("basic_auth_users:\n  prom: \"{high}\"\n"));
        assert!(
            e.starts_with(
                "/etc/web/web.yml: basic_auth_users.prom: a bcrypt hash of cost 31 takes about "
            ) && e.contains("measured here at cost 6, doubled for each of the 25 steps above")
                && e.contains("over the 10 s a scrape may take"),
            "{e}"
        );
        assert!(!e.contains(&high), "{e}");
        // Cost 4 is measured as it is, and is nothing to warn about.
        let c = parse(&format!("basic_auth_users:\n  prom: {}\n", hash())).unwrap();
        assert!(c.notes.is_empty(), "{:?}", c.notes);
    }

    #[test]
    fn http2_true_is_a_note_not_silence() {
        let c = parse("http_server_config:\n  http2: true\n").unwrap();
        assert_eq!(c.notes.len(), 1, "{:?}", c.notes);
        assert!(
            c.notes[0].starts_with(
                "--web-config-file /etc/web/web.yml: http_server_config.http2: true is not \
                 supported and has no effect"
            ),
            "{:?}",
            c.notes
        );
        for text in [
            "http_server_config:\n  http2: false\n",
            "http_server_config: {}\n",
        ] {
            assert!(parse(text).unwrap().notes.is_empty(), "{text}");
        }
    }

    /// A quoted value is a text, never a boolean: `"yes"` or `"true"` for a boolean key is
    /// refused naming the key (it was read as true).
    #[test]
    fn a_quoted_boolean_is_refused_naming_the_key() {
        for (text, key) in [
            (
                "http_server_config:\n  http2: \"yes\"\n",
                "http_server_config.http2",
            ),
            (
                "tls_server_config:\n  prefer_server_cipher_suites: \"true\"\n",
                "tls_server_config.prefer_server_cipher_suites",
            ),
        ] {
            let Err(e) = parse(text) else {
                panic!("accepted: {text}")
            };
            let e = e.to_string();
            assert!(
                e.contains(key) && e.contains("expected true or false"),
                "{e}"
            );
        }
    }

    /// A check whose caller goes away (a scraper at its timeout) still runs to its end, and
    /// its success is cached; a check of the same credentials meanwhile waits for it instead
    /// of starting another. A wrong password is not cached.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandoned_check_finishes_and_is_cached() {
        use futures::FutureExt as _;
        let auth = Arc::new(
            BasicAuth::new(
                BTreeMap::from([("prom".to_owned(), bcrypt::hash("secret", 8).unwrap())]),
                &mut Vec::new(),
            )
            .unwrap(),
        );
        let right = header("prom", "secret");
        // Polled once (the bcrypt check is started), then dropped.
        let first = auth.check(Some(&right)).now_or_never();
        let running = auth.state.lock().unwrap().running.len();
        // Started, and still running (or, on a very fast machine, already done and cached).
        assert!(
            (first.is_none() && running == 1) || first == Some(true),
            "{first:?} {running}"
        );
        // The same credentials meanwhile: no second bcrypt check.
        let second = tokio::spawn({
            let auth = Arc::clone(&auth);
            let right = right.clone();
            async move { auth.check(Some(&right)).await }
        });
        assert!(second.await.unwrap());
        assert_eq!(auth.state.lock().unwrap().good.len(), 1);
        assert!(auth.state.lock().unwrap().running.is_empty());
        // Dropped before the end again, with a wrong password: finished, not cached.
        assert_eq!(
            auth.check(Some(&header("prom", "wrong"))).now_or_never(),
            None
        );
        common_wait(|| auth.state.lock().unwrap().running.is_empty()).await;
        assert_eq!(auth.state.lock().unwrap().good.len(), 1);
        assert!(!auth.check(Some(&header("prom", "wrong"))).await);
        assert_eq!(auth.gate.available_permits(), auth.max_parallel_checks());
    }

    /// Polls `cond` every 10 ms, for at most 60 s.
    async fn common_wait(mut cond: impl FnMut() -> bool) {
        for _ in 0..6000 {
            if cond() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("condition never held");
    }

    #[test]
    fn passwords_past_72_bytes_are_refused() {
        let long = "x".repeat(80);
        let auth = BasicAuth::new(
            BTreeMap::from([("u".to_owned(), bcrypt::hash(&long, 4).unwrap())]),
            &mut Vec::new(),
        )
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
