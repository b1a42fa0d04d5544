//! The daemon's memory after start-up: the code and constant pages that only start-up read are
//! given back (`daemon::trim`), the program file's unused pages leave the page cache, and the
//! exporter keeps serving fresh samples afterwards.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::fd::AsRawFd;
use std::process::Command;
use std::time::Duration;

use common::{BIN, Exporter, ExporterBuilder, series, value};
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

/// Pages of `file` that are in the page cache, by `mincore` on a mapping of the whole file that
/// this test never reads (mapping a file does not read it).
fn cached_pages(file: &std::path::Path) -> usize {
    let f = std::fs::File::open(file).unwrap();
    let page = usize::try_from(procfs::page_size()).unwrap();
    let len = usize::try_from(f.metadata().unwrap().len()).unwrap();
    // SAFETY: a fresh read-only shared mapping of an open file, unmapped below; mincore writes
    // one byte per page into a vector of that many bytes.
    unsafe {
        let addr = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(addr, libc::MAP_FAILED, "mmap {}", file.display());
        let mut vec = vec![0u8; len.div_ceil(page)];
        assert_eq!(libc::mincore(addr, len, vec.as_mut_ptr()), 0);
        libc::munmap(addr, len);
        vec.iter().filter(|b| **b & 1 == 1).count()
    }
}

/// The program file leaves the page cache once start-up is over, except what steady state
/// maps: the binary is copied (every page written through the cache) and synced (written back,
/// so that the kernel may drop them), then run; the release drops what no mapping uses (of a
/// debug build, mostly the debug information, which is never mapped, and start-up's code).
#[test]
fn the_binary_pages_steady_state_does_not_use_leave_the_page_cache() {
    // On the target's disk, not /tmp (a tmpfs keeps its pages: they are the file); removed
    // when the test ends, failed or not.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let bin = dir.path().join("gpu-exporter");
    std::fs::copy(BIN, &bin).unwrap();
    std::fs::File::open(&bin).unwrap().sync_all().unwrap();
    let mut exp = ExporterBuilder::wrapped(Command::new("env"), &bin)
        .args(["--simulate", "h100-mig", "-c", "200"])
        .log_pipe()
        .spawn();
    exp.wait_ready();
    let before = cached_pages(&bin);
    exp.wait_log("start-up over", Duration::from_secs(60));
    let first = energy(&exp.metrics());
    exp.metrics_until("a later tick", |t| energy(t) > first);
    let after = cached_pages(&bin);
    let total = std::fs::metadata(&bin)
        .unwrap()
        .len()
        .div_ceil(procfs::page_size());
    let log = exp.log();
    let line = log.lines().find(|l| l.contains("start-up over")).unwrap();
    assert!(line.contains("cache_dropped=true"), "{line}");
    assert!(
        after * 2 < before,
        "the binary's pages did not leave the page cache: {before} of {total} cached before the release, {after} after\n{log}"
    );
    assert!(exp.sigterm().success());
}
