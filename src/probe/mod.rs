//! `gpu-exporter probe URL`: checks a running exporter from outside, as a scraper sees it —
//! `/ready` answers 200 (retried until `--wait` runs out), `/metrics` answers 200 with GPU
//! series, and with `--expect-node` that those series are the given node's (its host label).
//! The image has no shell and no curl, so this is what the Helm chart's `helm test` pod runs
//! (deploy/helm/gpu-exporter/templates/tests/).
//!
//! Owns the probe's flags, its HTTP(S) client requests and its verdict. It must not start an
//! exporter, touch NVML or the kubelet, or import any layer but `base` (whose Go-duration
//! reader it shares with the daemon's flags): it only speaks HTTP to a server, so it checks
//! the served contract and nothing behind it.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;

/// What can go wrong in a probe: its flags (a duration clap rejects), what stops it before it
/// reaches a verdict (the URL, the CA file, the password file), and a request that got no
/// readable answer (not an error of the probe: its message goes into a failed check of the
/// [`ProbeReport`]).
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// `--wait` or `--timeout` is not a Go duration (clap reports it as a usage error).
    #[error("{text}: {source}")]
    Duration {
        /// The value given.
        text: String,
        /// Why it is not a duration.
        source: crate::base::duration::DurationError,
    },
    /// A request got no answer (the transport's error).
    #[error("{0}")]
    Request(#[source] Box<ureq::Error>),
    /// A request was answered with `code`, but its body could not be read.
    #[error("{code}, body unreadable: {source}")]
    Body {
        /// The status the server answered.
        code: u16,
        /// Why the body could not be read.
        source: Box<ureq::Error>,
    },
    /// `--ca-file` could not be read or holds no certificate.
    #[error("--ca-file {path}: {reason}")]
    CaFile {
        /// The file given.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// The URL is not `http://` or `https://`.
    #[error("URL {0}: give http://HOST:PORT or https://HOST:PORT")]
    Url(String),
    /// `--basic-auth-password-file` could not be read.
    #[error("--basic-auth-password-file {path}: {source}")]
    Password {
        /// The file given.
        path: PathBuf,
        /// The read error.
        source: std::io::Error,
    },
}

/// `gpu-exporter probe`: the flags.
#[derive(Debug, Parser)]
#[command(
    name = "gpu-exporter probe",
    about = "Check a running exporter over HTTP: /ready, then /metrics (exit 0 ok, 1 a check failed, 2 usage)"
)]
pub struct ProbeArgs {
    /// The exporter's base URL, e.g. `http://gpu-exporter.monitoring.svc:9400`.
    pub url: String,
    /// Require the GPU series to carry this node's name in their host label (Hostname or
    /// hostname, whichever the compatibility profile uses).
    #[arg(long, env = "PROBE_EXPECT_NODE")]
    pub expect_node: Option<String>,
    /// How long to retry /ready before failing (Go duration: 30s, 2m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub wait: Duration,
    /// Timeout of each request.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// PEM file of the CA that signed the server's certificate (https only).
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
    /// User name for basic auth.
    #[arg(long, env = "PROBE_BASIC_AUTH_USERNAME")]
    pub basic_auth_username: Option<String>,
    /// File holding the basic-auth password (a mounted Secret key).
    #[arg(long, env = "PROBE_BASIC_AUTH_PASSWORD_FILE")]
    pub basic_auth_password_file: Option<PathBuf>,
}

fn parse_duration(s: &str) -> Result<Duration, ProbeError> {
    crate::base::duration::parse_go(s).map_err(|source| ProbeError::Duration {
        text: s.to_owned(),
        source,
    })
}

/// One check's line: what was checked, and whether it held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// True when the check held.
    pub ok: bool,
    /// What was seen, for a person.
    pub line: String,
}

/// The probe's verdict: every check, in order.
#[derive(Debug, Default)]
pub struct ProbeReport {
    /// The checks made.
    pub checks: Vec<Check>,
}

impl ProbeReport {
    fn push(&mut self, ok: bool, line: String) {
        self.checks.push(Check { ok, line });
    }
    /// True when every check held.
    pub fn passed(&self) -> bool {
        !self.checks.is_empty() && self.checks.iter().all(|c| c.ok)
    }
    /// One line per check, `ok` or `FAIL` first.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for c in &self.checks {
            let _ = writeln!(out, "{} {}", if c.ok { "ok  " } else { "FAIL" }, c.line);
        }
        out
    }
}

/// Body limit for /metrics: far above any node's page (a 16-GPU MIG node is ~1 MiB).
const MAX_BODY: u64 = 64 << 20;

/// `gpu-exporter probe URL …` (`args`: the process's arguments after the program name's
/// `probe`): parses them, runs the probe and prints its report. Returns the exit status: 0
/// when every check holds, 1 when one fails or the probe cannot run; a usage error is clap's
/// (it exits 2).
pub fn main(args: impl IntoIterator<Item = std::ffi::OsString>) -> Result<u8, clap::Error> {
    use clap::Parser;
    let args = ProbeArgs::try_parse_from(args.into_iter().skip(1))?;
    match run(&args) {
        Ok(report) => {
            print!("{}", report.render());
            if report.passed() {
                println!("probe: {} passed", args.url);
                Ok(0)
            } else {
                println!("probe: {} FAILED", args.url);
                Ok(1)
            }
        }
        Err(e) => {
            eprintln!("gpu-exporter probe: error: {e}");
            Ok(1)
        }
    }
}

/// Runs the probe: `/ready` until it answers 200 or `--wait` runs out, then `/metrics`.
pub fn run(args: &ProbeArgs) -> Result<ProbeReport, ProbeError> {
    let base = args.url.trim_end_matches('/').to_owned();
    let https = base.starts_with("https://");
    if !https && !base.starts_with("http://") {
        return Err(ProbeError::Url(args.url.clone()));
    }
    let agent = agent(args, https)?;
    let auth = basic_auth(args)?;
    let mut report = ProbeReport::default();

    let ready_url = format!("{base}/ready");
    let start = Instant::now();
    loop {
        let last = match get(&agent, &ready_url, auth.as_deref()) {
            Ok((200, _)) => {
                report.push(
                    true,
                    format!(
                        "GET {ready_url}: 200 after {:.1} s",
                        start.elapsed().as_secs_f64()
                    ),
                );
                break;
            }
            Ok((code, body)) => format!("{code} {}", first_line(&body)),
            Err(e) => e.to_string(),
        };
        if start.elapsed() >= args.wait {
            report.push(
                false,
                format!(
                    "GET {ready_url}: not 200 within {:?}; last answer: {last}",
                    args.wait
                ),
            );
            return Ok(report);
        }
        std::thread::sleep(Duration::from_millis(500));
    }

    let metrics_url = format!("{base}/metrics");
    match get(&agent, &metrics_url, auth.as_deref()) {
        Ok((200, body)) => check_metrics(
            &mut report,
            &metrics_url,
            &body,
            args.expect_node.as_deref(),
        ),
        Ok((code, body)) => report.push(
            false,
            format!("GET {metrics_url}: {code} {}", first_line(&body)),
        ),
        Err(e) => report.push(false, format!("GET {metrics_url}: {e}")),
    }
    Ok(report)
}

/// What a /metrics page must hold: GPU series, and with `node` the node's host label on them.
pub fn check_metrics(report: &mut ProbeReport, url: &str, body: &str, node: Option<&str>) {
    let samples: Vec<&str> = body.lines().filter(|l| l.starts_with("DCGM_FI_")).collect();
    let gpus: std::collections::BTreeSet<&str> =
        samples.iter().filter_map(|l| label(l, "UUID")).collect();
    if samples.is_empty() {
        report.push(
            false,
            format!(
                "GET {url}: 200 but no DCGM_FI_* series ({} bytes): no GPU is exported",
                body.len()
            ),
        );
        return;
    }
    report.push(
        true,
        format!(
            "GET {url}: 200, {} DCGM_FI_* samples on {} GPU(s)",
            samples.len(),
            gpus.len()
        ),
    );
    if let Some(node) = node {
        let hosts: std::collections::BTreeSet<&str> = samples
            .iter()
            .filter_map(|l| label(l, "Hostname").or_else(|| label(l, "hostname")))
            .collect();
        if hosts.contains(node) {
            report.push(
                true,
                format!("the series are node {node}'s (host label {node})"),
            );
        } else {
            let seen: Vec<&str> = hosts.into_iter().take(5).collect();
            report.push(
                false,
                format!(
                    "no series carries host label {node}; seen: {} (is the Service's \
                     internalTrafficPolicy Local, and NODE_NAME set from spec.nodeName?)",
                    if seen.is_empty() {
                        "no host label at all".to_owned()
                    } else {
                        seen.join(", ")
                    }
                ),
            );
        }
    }
}

/// The value of label `name` in one exposition line (`name="value"` directly after `{` or
/// `,`); label values of host names and UUIDs hold no escapes.
fn label<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let open = line.find('{')?;
    let labels = &line[open + 1..line.rfind('}')?];
    let mut rest = labels;
    loop {
        let eq = rest.find("=\"")?;
        let key = rest[..eq].trim_start_matches(',');
        let after = &rest[eq + 2..];
        let end = find_unescaped_quote(after)?;
        if key == name {
            return Some(&after[..end]);
        }
        rest = &after[end + 1..];
    }
}

fn find_unescaped_quote(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

fn first_line(body: &str) -> &str {
    let l = body.lines().next().unwrap_or("").trim();
    match l.char_indices().nth(200) {
        Some((i, _)) => &l[..i],
        None => l,
    }
}

fn agent(args: &ProbeArgs, https: bool) -> Result<ureq::Agent, ProbeError> {
    let mut config = ureq::Agent::config_builder()
        .timeout_global(Some(args.timeout))
        .http_status_as_error(false);
    if https {
        let mut tls = ureq::tls::TlsConfig::builder().provider(ureq::tls::TlsProvider::Rustls);
        if let Some(path) = &args.ca_file {
            let bad = |reason: String| ProbeError::CaFile {
                path: path.clone(),
                reason,
            };
            let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
            let certs: Vec<ureq::tls::Certificate<'static>> = ureq::tls::parse_pem(&pem)
                .filter_map(|item| match item {
                    Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                    _ => None,
                })
                .collect();
            if certs.is_empty() {
                return Err(bad("no PEM certificate in it".to_owned()));
            }
            tls = tls.root_certs(ureq::tls::RootCerts::Specific(Arc::new(certs)));
        }
        config = config.tls_config(tls.build());
    }
    Ok(config.build().new_agent())
}

fn basic_auth(args: &ProbeArgs) -> Result<Option<String>, ProbeError> {
    let (Some(user), Some(path)) = (&args.basic_auth_username, &args.basic_auth_password_file)
    else {
        return Ok(None);
    };
    let password = std::fs::read_to_string(path).map_err(|source| ProbeError::Password {
        path: path.clone(),
        source,
    })?;
    use base64::Engine as _;
    let token = base64::engine::general_purpose::STANDARD.encode(format!(
        "{user}:{}",
        password.trim_end_matches(['\r', '\n'])
    ));
    Ok(Some(format!("Basic {token}")))
}

/// GET `url`: the status and the body (up to [`MAX_BODY`]), or the transport error.
fn get(agent: &ureq::Agent, url: &str, auth: Option<&str>) -> Result<(u16, String), ProbeError> {
    let mut req = agent.get(url);
    if let Some(a) = auth {
        req = req.header("Authorization", a);
    }
    let mut resp = req.call().map_err(|e| ProbeError::Request(Box::new(e)))?;
    let code = resp.status().as_u16();
    let body = resp
        .body_mut()
        .with_config()
        .limit(MAX_BODY)
        .read_to_string()
        .map_err(|e| ProbeError::Body {
            code,
            source: Box::new(e),
        })?;
    Ok((code, body))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "# HELP DCGM_FI_DEV_GPU_TEMP x\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n\
        DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-a\",pci_bus_id=\"x\",device=\"nvidia0\",modelName=\"H100 \\\"SXM\\\"\",Hostname=\"node-1\"} 41\n\
        DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"node-1\"} 40\n";

    #[test]
    fn labels_are_read_past_escaped_quotes() {
        let line = PAGE.lines().nth(2).unwrap();
        assert_eq!(label(line, "UUID"), Some("GPU-a"));
        assert_eq!(label(line, "Hostname"), Some("node-1"));
        assert_eq!(label(line, "hostname"), None);
        assert_eq!(label(line, "modelName"), Some("H100 \\\"SXM\\\""));
    }

    #[test]
    fn metrics_page_verdicts() {
        let mut r = ProbeReport::default();
        check_metrics(&mut r, "u", PAGE, Some("node-1"));
        assert!(r.passed(), "{}", r.render());
        assert!(r.render().contains("2 GPU(s)"), "{}", r.render());

        let mut r = ProbeReport::default();
        check_metrics(&mut r, "u", PAGE, Some("node-2"));
        assert!(!r.passed());
        assert!(r.render().contains("seen: node-1"), "{}", r.render());

        let mut r = ProbeReport::default();
        check_metrics(&mut r, "u", "# nothing\ngpu_exporter_up 1\n", None);
        assert!(!r.passed());
        assert!(r.render().contains("no DCGM_FI_* series"), "{}", r.render());
    }

    #[test]
    fn an_empty_report_does_not_pass() {
        assert!(!ProbeReport::default().passed());
    }
}
