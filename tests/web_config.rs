//! `--web-config-file` end to end: the real binary on a simulated node, driven by real TLS
//! clients (`curl`, raw sockets), with certificates made by the `openssl` command in a
//! temporary directory. Covers TLS, TLS versions and cipher suites, mutual TLS, allowed client
//! SANs, basic auth (including a flood of wrong passwords), certificate rotation, plain HTTP on
//! the TLS port, stalled handshakes, and broken files stopping start-up.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{BIN, Exporter};

// ------------------------------------------------------------------------------------------
// Certificates.

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("the openssl command is needed for these tests");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A self-signed CA `<name>.pem` / `<name>.key` in `dir`.
fn make_ca(dir: &Path, name: &str) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-days",
            "2",
            "-subj",
            &format!("/CN={name}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
        ],
    );
}

/// A P-256 leaf `<name>.pem` / `<name>.key` signed by CA `ca`, with common name `cn` and
/// the extensions `ext` (OpenSSL config lines).
fn make_leaf(dir: &Path, ca: &str, name: &str, cn: &str, ext: &str) {
    std::fs::write(dir.join(format!("{name}.ext")), ext).unwrap();
    openssl(
        dir,
        &[
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
            "-nodes",
            "-subj",
            &format!("/CN={cn}"),
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.csr"),
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &format!("{name}.csr"),
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            &format!("{name}.ext"),
            "-out",
            &format!("{name}.pem"),
        ],
    );
}

const SERVER_EXT: &str = "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n";

fn client_ext(san: &str) -> String {
    format!("subjectAltName={san}\nextendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n")
}

/// A directory with `ca` and a server certificate `server` for 127.0.0.1.
fn pki() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    make_ca(dir.path(), "ca");
    make_leaf(dir.path(), "ca", "server", "first", SERVER_EXT);
    dir
}

// ------------------------------------------------------------------------------------------
// The exporter.

/// Starts `--simulate a100-l4` with `--web-config-file web` on a free port, its stderr
/// collected for messages, and waits until its web config is logged (the listener is bound
/// by then).
fn start(web: &Path) -> Exporter {
    let e = Exporter::builder()
        .args(["--simulate", "a100-l4", "-c", "500", "--web-config-file"])
        .arg(web)
        .env_remove("NODE_NAME")
        .env_remove("RUST_LOG")
        .log_pipe()
        .spawn();
    e.wait_log("web config: ", Duration::from_secs(60));
    e
}

/// A curl run: exit code, HTTP status (0 when none), output, stderr.
struct Curl {
    exit: Option<i32>,
    status: u16,
    out: String,
    err: String,
}

fn curl(args: &[&str], url: &str) -> Curl {
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "20", "-w", "\n%{http_code}"])
        .args(args)
        .arg(url)
        .output()
        .expect("the curl command is needed for these tests");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    Curl {
        exit: out.status.code(),
        status: code.trim().parse().unwrap_or(0),
        out: body.to_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Polls `url` with curl until `/ready`-style success (HTTP 200), so that later failures are
/// TLS's doing, not a server still starting.
fn wait_https_ready(e: &Exporter, args: &[&str]) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = curl(args, &e.https("/ready"));
        if r.status == 200 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "never ready: exit {:?} status {} {}\nlog:\n{}",
            r.exit,
            r.status,
            r.err,
            e.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Minimal HTTP/1.1 GET over plain TCP; returns the raw response.
/// A GET written on a raw socket, the response as text: for plain HTTP sent to the TLS port,
/// where the raw answer is what the test looks at.
fn raw_get(port: u16, path: &str, extra: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

fn status_line(resp: &str) -> &str {
    resp.lines().next().unwrap_or("")
}

/// The `Authorization` value for basic auth.
fn basic(user: &str, password: &str) -> String {
    use base64::Engine as _;
    let b = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    format!("Basic {b}")
}

/// A GET through the shared client, with basic-auth credentials when `auth` is not empty.
fn get(port: u16, path: &str, auth: &str) -> common::HttpResponse {
    let headers: Vec<(&str, &str)> = if auth.is_empty() {
        Vec::new()
    } else {
        vec![("Authorization", auth)]
    };
    common::http_get(port, path, &headers).unwrap_or_else(|| panic!("GET {path}: no response"))
}

fn write_config(dir: &Path, text: &str) -> PathBuf {
    let p = dir.join("web.yml");
    std::fs::write(&p, text).unwrap();
    p
}

// ------------------------------------------------------------------------------------------
// TLS.

#[test]
fn tls_serves_metrics_refuses_plain_http_and_survives_stalled_handshakes() {
    let dir = pki();
    // Relative paths: resolved against the web config's directory.
    let web = write_config(
        dir.path(),
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n\
         http_server_config:\n  headers:\n    X-Content-Type-Options: nosniff\n",
    );
    let mut e = start(&web);
    assert!(
        e.log()
            .contains("web config: TLS (TLS 1.2 and 1.3), no basic auth"),
        "{}",
        e.log()
    );
    let ca = dir.path().join("ca.pem");
    let ca = ca.to_str().unwrap();
    wait_https_ready(&e, &["--cacert", ca]);

    let r = curl(&["--cacert", ca, "-D", "-"], &e.https("/metrics"));
    assert_eq!(r.status, 200, "{}", r.err);
    assert!(r.out.contains("DCGM_FI_DEV_GPU_TEMP{"), "{}", r.out);
    assert!(
        r.out
            .to_ascii_lowercase()
            .contains("x-content-type-options: nosniff"),
        "{}",
        r.out
    );

    // Plain HTTP on the TLS port: a 400 that says so, no metrics.
    let resp = raw_get(e.port, "/metrics", "");
    assert!(status_line(&resp).starts_with("HTTP/1.0 400"), "{resp}");
    assert!(
        resp.contains("https://") && !resp.contains("DCGM_"),
        "{resp}"
    );
    let r = curl(&[], &format!("http://127.0.0.1:{}/metrics", e.port));
    assert_eq!(r.status, 400, "{} {}", r.out, r.err);

    // Two clients that stall: one sends nothing, one half a TLS record header. A third,
    // opened after them, completes while they are still open.
    let mut silent = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
    let mut partial = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
    partial.write_all(&[0x16, 0x03]).unwrap();
    let r = curl(&["--cacert", ca], &e.https("/metrics"));
    assert_eq!(r.status, 200, "{}", r.err);
    for s in [&mut silent, &mut partial] {
        s.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut b = [0u8; 1];
        let still_open = matches!(s.read(&mut b), Err(ref x) if matches!(x.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut));
        assert!(still_open, "the stalled connection should still be open");
    }

    // Graceful shutdown over TLS.
    let status = e.sigterm();
    assert!(status.success(), "{status:?}\n{}", e.log());
}

#[test]
fn min_version_tls13_refuses_a_tls12_client() {
    let dir = pki();
    let web = write_config(
        dir.path(),
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n  min_version: TLS13\n",
    );
    let e = start(&web);
    let ca = dir.path().join("ca.pem");
    let ca = ca.to_str().unwrap();
    assert!(
        e.log().contains("web config: TLS (TLS 1.3 only)"),
        "{}",
        e.log()
    );
    wait_https_ready(&e, &["--cacert", ca, "--tlsv1.3"]);
    let r = curl(&["--cacert", ca, "--tls-max", "1.2"], &e.https("/metrics"));
    assert_ne!(r.exit, Some(0), "a TLS 1.2 client must fail: {}", r.out);
    assert_eq!(r.status, 0);
    let r = curl(&["--cacert", ca, "--tlsv1.3"], &e.https("/metrics"));
    assert_eq!(r.status, 200, "{}", r.err);
}

#[test]
fn cipher_suites_restrict_what_a_tls12_client_can_negotiate() {
    let dir = pki();
    let web = write_config(
        dir.path(),
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n\
         \x20 cipher_suites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]\n\
         \x20 curve_preferences: [CurveP256, X25519]\n",
    );
    let e = start(&web);
    let ca = dir.path().join("ca.pem");
    let ca = ca.to_str().unwrap();
    wait_https_ready(&e, &["--cacert", ca]);
    let tls12 = |cipher: &str| {
        curl(
            &["--cacert", ca, "--tls-max", "1.2", "--ciphers", cipher],
            &e.https("/metrics"),
        )
    };
    let r = tls12("ECDHE-ECDSA-AES256-GCM-SHA384");
    assert_ne!(r.exit, Some(0), "an excluded suite must fail: {}", r.out);
    assert_eq!(r.status, 0);
    let r = tls12("ECDHE-ECDSA-CHACHA20-POLY1305");
    assert_ne!(r.exit, Some(0), "an excluded suite must fail: {}", r.out);
    let r = tls12("ECDHE-ECDSA-AES128-GCM-SHA256");
    assert_eq!(r.status, 200, "the allowed suite must work: {}", r.err);
    // TLS 1.3 suites are not restricted (as in Go).
    let r = curl(&["--cacert", ca, "--tlsv1.3"], &e.https("/metrics"));
    assert_eq!(r.status, 200, "{}", r.err);
}

#[test]
fn mutual_tls_requires_a_certificate_from_the_client_ca() {
    let dir = pki();
    let p = dir.path();
    make_leaf(
        p,
        "ca",
        "client",
        "scraper",
        &client_ext("DNS:scraper.example"),
    );
    make_ca(p, "other-ca");
    make_leaf(
        p,
        "other-ca",
        "stranger",
        "scraper",
        &client_ext("DNS:scraper.example"),
    );
    let web = write_config(
        p,
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n\
         \x20 client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n",
    );
    let e = start(&web);
    assert!(
        e.log().contains(
            "web config: mTLS (TLS 1.2 and 1.3; client certificates: RequireAndVerifyClientCert)"
        ),
        "{}",
        e.log()
    );
    let s = |f: &str| p.join(f).to_str().unwrap().to_owned();
    let (ca, client, client_key) = (s("ca.pem"), s("client.pem"), s("client.key"));
    let good = ["--cacert", &ca, "--cert", &client, "--key", &client_key];
    wait_https_ready(&e, &good);

    let r = curl(&["--cacert", &ca], &e.https("/metrics"));
    assert_eq!(r.status, 0, "no client certificate must fail: {}", r.out);
    assert_ne!(r.exit, Some(0));
    let (stranger, stranger_key) = (s("stranger.pem"), s("stranger.key"));
    let r = curl(
        &["--cacert", &ca, "--cert", &stranger, "--key", &stranger_key],
        &e.https("/metrics"),
    );
    assert_eq!(
        r.status, 0,
        "a certificate from another CA must fail: {}",
        r.out
    );
    assert_ne!(r.exit, Some(0));
    let r = curl(&good, &e.https("/metrics"));
    assert_eq!(r.status, 200, "{}", r.err);
    assert!(r.out.contains("DCGM_FI_DEV_GPU_TEMP{"));
}

#[test]
fn client_allowed_sans_limit_which_client_certificates_pass() {
    let dir = pki();
    let p = dir.path();
    make_leaf(
        p,
        "ca",
        "allowed",
        "a",
        &client_ext("DNS:scraper.example,IP:10.0.0.7"),
    );
    make_leaf(p, "ca", "denied", "b", &client_ext("DNS:intruder.example"));
    let web = write_config(
        p,
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n\
         \x20 client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.pem\n\
         \x20 client_allowed_sans: [10.0.0.7]\n",
    );
    let e = start(&web);
    let s = |f: &str| p.join(f).to_str().unwrap().to_owned();
    let ca = s("ca.pem");
    let (a, ak, d, dk) = (
        s("allowed.pem"),
        s("allowed.key"),
        s("denied.pem"),
        s("denied.key"),
    );
    let allowed = ["--cacert", &ca, "--cert", &a, "--key", &ak];
    wait_https_ready(&e, &allowed);
    let r = curl(
        &["--cacert", &ca, "--cert", &d, "--key", &dk],
        &e.https("/metrics"),
    );
    assert_eq!(r.status, 0, "a SAN outside the list must fail: {}", r.out);
    assert_ne!(r.exit, Some(0));
    let r = curl(&allowed, &e.https("/metrics"));
    assert_eq!(r.status, 200, "{}", r.err);
}

#[test]
fn require_any_client_cert_takes_an_unverified_certificate_but_not_none() {
    let dir = pki();
    let p = dir.path();
    make_ca(p, "self");
    let web = write_config(
        p,
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n\
         \x20 client_auth_type: RequireAnyClientCert\n",
    );
    let e = start(&web);
    let s = |f: &str| p.join(f).to_str().unwrap().to_owned();
    let (ca, own, own_key) = (s("ca.pem"), s("self.pem"), s("self.key"));
    let with_cert = ["--cacert", &ca, "--cert", &own, "--key", &own_key];
    wait_https_ready(&e, &with_cert);
    let r = curl(&["--cacert", &ca], &e.https("/metrics"));
    assert_eq!(r.status, 0, "no certificate must fail: {}", r.out);
    let r = curl(&with_cert, &e.https("/metrics"));
    assert_eq!(r.status, 200, "{}", r.err);
}

#[test]
fn a_rotated_certificate_is_served_to_new_connections() {
    let dir = pki();
    let p = dir.path();
    let web = write_config(
        p,
        "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n",
    );
    let e = start(&web);
    let ca = p.join("ca.pem");
    let ca = ca.to_str().unwrap();
    wait_https_ready(&e, &["--cacert", ca]);
    let r = curl(&["--cacert", ca, "-v"], &e.https("/health"));
    assert!(r.err.contains("CN=first"), "{}", r.err);

    // Like a Secret update: new files written aside, then renamed over the old ones.
    make_leaf(p, "ca", "next", "second", SERVER_EXT);
    std::fs::rename(p.join("next.key"), p.join("server.key")).unwrap();
    std::fs::rename(p.join("next.pem"), p.join("server.pem")).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = curl(&["--cacert", ca, "-v"], &e.https("/health"));
        assert_eq!(r.status, 200, "{}", r.err);
        if r.err.contains("CN=second") {
            break;
        }
        assert!(r.err.contains("CN=first"), "{}", r.err);
        assert!(
            Instant::now() < deadline,
            "the new certificate was never served; log:\n{}",
            e.log()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(
        e.log().contains("TLS certificate files changed"),
        "{}",
        e.log()
    );
}

// ------------------------------------------------------------------------------------------
// Basic auth.

/// Starts a plain-HTTP exporter with one user `prom` whose password is `secret` at `cost`,
/// and waits until `/ready` (open without credentials) answers 200.
fn start_with_user(dir: &Path, cost: u32) -> Exporter {
    let hash = bcrypt::hash("secret", cost).unwrap();
    let web = write_config(dir, &format!("basic_auth_users:\n  prom: \"{hash}\"\n"));
    let mut e = start(&web);
    e.wait_ready();
    e
}

#[test]
fn basic_auth_protects_everything_but_the_probes() {
    let dir = tempfile::tempdir().unwrap();
    let e = start_with_user(dir.path(), 4);
    assert!(
        e.log()
            .contains("web config: plain HTTP, basic auth for 1 user(s)"),
        "{}",
        e.log()
    );
    for path in ["/metrics", "/"] {
        for creds in [
            String::new(),
            basic("prom", "wrong"),
            basic("nobody", "secret"),
        ] {
            let resp = get(e.port, path, &creds);
            assert_eq!(resp.status, 401, "{path} {creds:?}: {}", resp.text());
            assert!(
                resp.header("WWW-Authenticate")
                    .is_some_and(|v| v.to_ascii_lowercase().starts_with("basic")),
                "{:?}",
                resp.headers
            );
            assert!(!resp.text().contains("DCGM_"), "{}", resp.text());
        }
    }
    let resp = get(e.port, "/metrics", &basic("prom", "secret"));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert!(
        resp.text().contains("DCGM_FI_DEV_GPU_TEMP{"),
        "{}",
        resp.text()
    );
    for path in ["/health", "/ready"] {
        let resp = get(e.port, path, "");
        assert_eq!(resp.status, 200, "{path}: {}", resp.text());
    }
}

#[test]
fn wrong_passwords_do_not_delay_a_scraper_with_the_right_one() {
    const WRONG: usize = 6;
    let dir = tempfile::tempdir().unwrap();
    // A costly hash: each wrong password costs a full bcrypt check.
    let e = start_with_user(dir.path(), 12);
    let port = e.port;
    // The scraper's first request pays bcrypt once; later ones hit the cache.
    let resp = get(port, "/metrics", &basic("prom", "secret"));
    assert_eq!(resp.status, 200, "{}", resp.text());

    let done = Arc::new(AtomicUsize::new(0));
    let (sent_tx, sent_rx) = std::sync::mpsc::channel();
    let flood: Vec<_> = (0..WRONG)
        .map(|i| {
            let done = Arc::clone(&done);
            let sent = sent_tx.clone();
            // A raw socket: the request must be known to be sent before the right
            // password's request starts, which a client library does not let us see.
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
                write!(
                    s,
                    "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: {}\r\nConnection: close\r\n\r\n",
                    basic("prom", &format!("guess-{i}"))
                )
                .unwrap();
                sent.send(()).unwrap();
                let mut buf = Vec::new();
                let _ = s.read_to_end(&mut buf);
                done.fetch_add(1, Ordering::SeqCst);
                String::from_utf8_lossy(&buf).into_owned()
            })
        })
        .collect();
    for _ in 0..WRONG {
        sent_rx.recv().unwrap();
    }
    let resp = get(port, "/metrics", &basic("prom", "secret"));
    let wrong_done_before = done.load(Ordering::SeqCst);
    eprintln!(
        "wrong-password requests answered before the right one: {wrong_done_before} of {WRONG}"
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    for t in flood {
        let resp = t.join().unwrap();
        assert!(status_line(&resp).contains(" 401 "), "{resp}");
    }
    assert_eq!(done.load(Ordering::SeqCst), WRONG);
    assert!(
        wrong_done_before <= 1,
        "the right password waited for {wrong_done_before} of {WRONG} wrong ones"
    );
}

/// A GET of `/metrics` with `auth` on a raw socket that gives up after `patience`, as a
/// scraper at its timeout does (the connection is closed); the status line when the answer
/// came in time.
fn scrape_with_timeout(port: u16, auth: &str, patience: Duration) -> Option<String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(patience)).unwrap();
    write!(
        s,
        "GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut buf = [0u8; 64];
    match s.read(&mut buf) {
        Ok(n) if n > 0 => Some(status_line(&String::from_utf8_lossy(&buf[..n])).to_owned()),
        _ => None,
    }
}

/// A scraper whose timeout is shorter than one bcrypt verification still gets in: the
/// verification its first request started runs to its end after that request gave up, and its
/// success is cached (or a later request waits for it), so a later request with the same
/// timeout is answered. Before, each request's verification was thrown away with it and every
/// scrape timed out (T5-5: 4 of 4). The cost is picked so that one hash here takes at least
/// 1.5 s (this build's bcrypt, the binary's too), and the scraper waits a fifth of that.
#[test]
fn a_scraper_that_gives_up_during_bcrypt_gets_in_on_a_later_scrape() {
    let mut cost = 8;
    let (hash, took) = loop {
        let t = Instant::now();
        let hash = bcrypt::hash("secret", cost).unwrap();
        let took = t.elapsed();
        if took >= Duration::from_millis(1500) || cost == 20 {
            break (hash, took);
        }
        cost += 1;
    };
    let patience = took / 5;
    eprintln!("cost {cost}: one hash took {took:?}; the scraper waits {patience:?}");
    let dir = tempfile::tempdir().unwrap();
    let web = write_config(
        dir.path(),
        &format!("basic_auth_users:\n  prom: \"{hash}\"\n"),
    );
    let mut e = start(&web);
    e.wait_ready();
    let auth = basic("prom", "secret");
    assert_eq!(
        scrape_with_timeout(e.port, &auth, patience),
        None,
        "the first scrape waits for a whole bcrypt verification"
    );
    // A deadline, not a timing assertion: every scrape gives up after `patience`.
    let deadline = Instant::now() + took * 20 + Duration::from_secs(30);
    let mut scrapes = 1;
    loop {
        scrapes += 1;
        if let Some(status) = scrape_with_timeout(e.port, &auth, patience) {
            assert!(status.contains(" 200 "), "{status}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{scrapes} scrapes, each giving up after {patience:?}, never got in; log:\n{}",
            e.log()
        );
    }
    eprintln!("in at scrape {scrapes}");
    // From the cache now: a wrong password is still refused.
    let resp = get(e.port, "/metrics", &basic("prom", "wrong"));
    assert_eq!(resp.status, 401, "{}", resp.text());
}

/// A hash whose cost this machine cannot verify within a scrape's timeout stops start-up,
/// naming the file, the user, the cost and the estimate, judged without hashing at that cost:
/// cost 31 would take days, yet the refusal is prompt. Before, it was accepted silently and
/// no scrape ever got in.
#[test]
fn a_bcrypt_cost_too_slow_for_a_scrape_stops_start_up() {
    let dir = tempfile::tempdir().unwrap();
    // A valid hash whose cost field says 31 (a real one cannot be made in reasonable time).
    let hash = bcrypt::hash("secret", 4)
        .unwrap()
        .replacen("$04$", "$31$", 1);
    let web = write_config(
        dir.path(),
        &format!(
            "basic_auth_users:\n  ok: \"{}\"\n  prom: \"{hash}\"\n",
            bcrypt::hash("x", 4).unwrap()
        ),
    );
    let port = common::free_port();
    let log = dir.path().join("log");
    let mut child = Command::new(BIN)
        .args(["--simulate", "a100-l4", "-a", &format!("127.0.0.1:{port}")])
        .arg("--nvml-lib")
        .arg(common::built_sim_lib())
        .arg("--web-config-file")
        .arg(&web)
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "a cost-31 hash did not stop start-up; log:\n{}",
                std::fs::read_to_string(&log).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let err = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    for wanted in [
        format!("--web-config-file {}: ", web.display()),
        "basic_auth_users.prom: a bcrypt hash of cost 31 takes about ".into(),
        "measured here at cost 6, doubled for each of the 25 steps above".into(),
        "over the 10 s a scrape may take".into(),
    ] {
        assert!(err.contains(&wanted), "wants {wanted:?} in: {err}");
    }
    assert!(!err.contains(&hash), "the hash is not echoed: {err}");
}

/// `http2: true` asks for what this server does not do: a warning names the file and the key.
/// Before, it was accepted without a word.
#[test]
fn http2_true_is_a_warning_naming_file_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let web = write_config(dir.path(), "http_server_config:\n  http2: true\n");
    let mut e = start(&web);
    e.wait_log(
        &format!(
            "--web-config-file {}: http_server_config.http2: true is not supported",
            web.display()
        ),
        Duration::from_secs(30),
    );
    assert!(e.log().contains("WARN"), "{}", e.log());
    e.wait_ready();
    // `false` is what is served: nothing to say.
    let web = write_config(dir.path(), "http_server_config:\n  http2: false\n");
    let mut e = start(&web);
    e.wait_ready();
    assert!(!e.log().contains("http2"), "{}", e.log());
}

// ------------------------------------------------------------------------------------------
// Broken files.

#[test]
fn bad_web_config_files_stop_startup_naming_file_and_key() {
    let dir = pki();
    let p = dir.path();
    make_ca(p, "unrelated");
    let tls = "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n";
    let cases: Vec<(String, &[&str])> = vec![
        (
            format!("{tls}  ciphers: []\n"),
            &["line 4, column 3, key tls_server_config.ciphers: unknown key"],
        ),
        (
            "tls_server_config:\n  cert_file: missing.pem\n  key_file: server.key\n".into(),
            &["tls_server_config.cert_file", "missing.pem"],
        ),
        (
            "tls_server_config:\n  cert_file: server.pem\n  key_file: unrelated.key\n".into(),
            &["tls_server_config.key_file", "does not match"],
        ),
        (
            "basic_auth_users:\n  prom: plaintext-password\n".into(),
            &["basic_auth_users.prom", "not a bcrypt hash"],
        ),
        (
            format!("{tls}  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA]\n"),
            &[
                "tls_server_config.cipher_suites",
                "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
            ],
        ),
        (
            format!("{tls}  max_version: TLS11\n"),
            &["tls_server_config.max_version", "TLS11"],
        ),
    ];
    for (text, wanted) in cases {
        let web = write_config(p, &text);
        let port = common::free_port();
        let out = Command::new(BIN)
            .args(["--simulate", "a100-l4", "-a", &format!("127.0.0.1:{port}")])
            .arg("--nvml-lib")
            .arg(common::built_sim_lib())
            .arg("--web-config-file")
            .arg(&web)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text}\n{err}");
        assert!(
            err.contains(&format!("--web-config-file {}: ", web.display())),
            "names the file: {err}"
        );
        for w in wanted {
            assert!(err.contains(w), "{text}: wants {w:?} in: {err}");
        }
        assert!(!err.contains("plaintext-password"), "{err}");
        assert!(
            TcpStream::connect(("127.0.0.1", port)).is_err(),
            "must not serve"
        );
    }
    // A file that does not exist (checked in config's unit tests before the web config moved
    // to main): the same message, from the binary.
    let out = Command::new(BIN)
        .args(["--simulate", "a100-l4", "-a", "127.0.0.1:0"])
        .arg("--nvml-lib")
        .arg(common::built_sim_lib())
        .args(["--web-config-file", "/nonexistent/w.yml"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("gpu-exporter: error: --web-config-file /nonexistent/w.yml: cannot read"),
        "{err}"
    );
}
