//! A real `kubectl` for the tests that read the simulated API server as a user would: found
//! in `$KUBECTL`, else on PATH (scripts/test.sh installs it); without it a test fails unless
//! `GPU_EXPORTER_SKIP_KUBECTL=1` says to skip it. Each run has a time limit and its own
//! empty kubeconfig and cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest one kubectl command may take.
const KUBECTL_LIMIT: Duration = Duration::from_secs(60);

fn find() -> Option<PathBuf> {
    super::tool("KUBECTL", "kubectl")
}

/// Runs kubectl against `server` with an empty kubeconfig and its own cache directory;
/// returns stdout, failing the test on a non-zero exit (with stderr) or past the limit.
pub fn run(bin: &Path, server: &str, home: &Path, args: &[&str]) -> String {
    let config = home.join("config");
    std::fs::write(&config, "apiVersion: v1\nkind: Config\n").unwrap();
    let mut child = Command::new(bin)
        .arg(format!("--server={server}"))
        .arg(format!("--cache-dir={}", home.join("cache").display()))
        .args(args)
        .env("KUBECONFIG", &config)
        .env("HOME", home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > KUBECTL_LIMIT {
            let _ = child.kill();
            panic!("kubectl {args:?} ran past {KUBECTL_LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "kubectl {args:?} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
    stdout
}

/// kubectl, or `None` when it is missing and `GPU_EXPORTER_SKIP_KUBECTL` is set (the test is
/// then skipped, and says so); fails the test when it is missing otherwise.
pub fn find_or_skip() -> Option<PathBuf> {
    match find() {
        Some(bin) => Some(bin),
        None if std::env::var_os("GPU_EXPORTER_SKIP_KUBECTL").is_some() => {
            eprintln!("skipped: no kubectl (GPU_EXPORTER_SKIP_KUBECTL is set)");
            None
        }
        None => panic!(
            "no kubectl: install it (scripts/test.sh does) or set GPU_EXPORTER_SKIP_KUBECTL=1"
        ),
    }
}
