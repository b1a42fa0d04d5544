//! The daemon's memory after start-up: the code and constant pages that only start-up read are
//! given back (`daemon::trim`), and the exporter keeps serving fresh samples afterwards.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{Exporter, series, value};
use gpu_exporter::daemon::trim::releasable;
use procfs::process::{MMapPath, Process};

/// Resident KiB of the exporter binary's clean read-only mappings (its code and constants).
fn binary_clean_kib(pid: u32) -> u64 {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
    let pid = i32::try_from(pid).unwrap();
    Process::new(pid)
        .unwrap()
        .smaps()
        .unwrap()
        .into_iter()
        .filter(|m| matches!(&m.pathname, MMapPath::Path(p) if *p == exe))
        .filter(|m| releasable(m, |_| true))
        .map(|m| m.extension.map.get("Rss").copied().unwrap_or(0) / 1024)
        .sum()
}

fn energy(text: &str) -> f64 {
    series(text, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
        .first()
        .map(|l| value(l))
        .expect("an energy series")
}

#[test]
fn start_up_pages_are_given_back_and_serving_goes_on() {
    let mut exp = Exporter::builder()
        .args(["--simulate", "h100-mig", "-c", "200"])
        .log_pipe()
        .spawn();
    exp.wait_ready();
    let before = binary_clean_kib(exp.pid());
    exp.wait_log("start-up over", Duration::from_secs(60));
    let after = binary_clean_kib(exp.pid());
    assert!(
        after < before,
        "the binary's clean pages did not shrink: {before} KiB before the release, {after} KiB after\n{}",
        exp.log()
    );
    let log = exp.log();
    let line = log.lines().find(|l| l.contains("start-up over")).unwrap();
    assert!(line.contains("refused=0"), "{line}");
    assert!(!line.contains("kib=0 "), "{line}");
    // Code runs from the file again: ticks go on and the page changes.
    let first = energy(&exp.metrics());
    let later = exp.metrics_until("a later tick", |t| energy(t) > first);
    assert!(energy(&later) > first);
    assert!(exp.sigterm().success());
}
