//! Counters hot reload, end to end on the binary: a ConfigMap-style symlink swap applies the
//! new set at a tick without any scrape seeing an empty or mixed set; a broken file keeps the
//! old set, logs `file:line` and shows in the self-metrics; an oversized file or a symlink to
//! `/dev/zero` is refused without being read; a file truncated to nothing or rewritten in two
//! halves never empties the page; SIGHUP forces a re-read; SIGHUP with the built-in set does
//! not end the process; a new version over `--max-labels-per-series` is refused like a broken
//! one.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{Exporter, http_get};

/// Set A: temperature and power.
const SET_A: &str = "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (C).\n\
                     DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (W).\n";
/// Set B: temperature and SM clock, no power.
const SET_B: &str = "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (C).\n\
                     DCGM_FI_DEV_SM_CLOCK, gauge, SM clock (MHz).\n";

/// Starts the exporter on the simulated `a100-l4` node with `extra` flags, its log in `dir`,
/// and waits until it is ready.
fn start(dir: &Path, extra: &[&str]) -> Exporter {
    Exporter::builder()
        .args(["--simulate", "a100-l4", "-c", "200"])
        .args(extra)
        .env_remove("NODE_NAME")
        .env("RUST_LOG", "info")
        .log_file(dir.join("exporter.log"))
        .start()
}

/// The exporter's tick count.
fn samples(exp: &Exporter) -> u64 {
    self_value(&exp.metrics(), "gpu_exporter_samples_total") as u64
}

/// The value of an unlabelled (or fully written) series.
fn self_value(text: &str, series: &str) -> f64 {
    let prefix = format!("{series} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("{series} missing in:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

fn has_family(text: &str, name: &str) -> bool {
    text.lines().any(|l| l.starts_with(&format!("{name}{{")))
}

/// The kubelet's ConfigMap volume layout: `<dir>/<key>` → `..data/<key>`, `..data` → a
/// timestamped directory holding the real file.
struct ConfigMapVolume {
    dir: PathBuf,
    version: u32,
}

impl ConfigMapVolume {
    const KEY: &str = "default-counters.csv";

    fn new(dir: &Path, content: &str) -> Self {
        let mut v = Self {
            dir: dir.to_path_buf(),
            version: 0,
        };
        v.write_version(content);
        std::os::unix::fs::symlink(format!("..data/{}", Self::KEY), v.dir.join(Self::KEY)).unwrap();
        v
    }

    fn file(&self) -> PathBuf {
        self.dir.join(Self::KEY)
    }

    fn write_version(&mut self, content: &str) {
        self.version += 1;
        let ts = format!(
            "..2026_11_21_00_00_0{}.{}",
            self.version,
            100 + self.version
        );
        std::fs::create_dir(self.dir.join(&ts)).unwrap();
        std::fs::write(self.dir.join(&ts).join(Self::KEY), content).unwrap();
        // As the kubelet's atomic writer: a new symlink, renamed over `..data`.
        let tmp = self.dir.join("..data_tmp");
        std::os::unix::fs::symlink(&ts, &tmp).unwrap();
        std::fs::rename(&tmp, self.dir.join("..data")).unwrap();
    }

    /// Publishes `content` and removes the previous version's directory.
    fn update(&mut self, content: &str) {
        let old = std::fs::read_link(self.dir.join("..data")).unwrap();
        self.write_version(content);
        std::fs::remove_dir_all(self.dir.join(old)).unwrap();
    }
}

#[test]
fn configmap_symlink_swap_applies_the_new_set_without_empty_or_mixed_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let vol_dir = dir.path().join("counters");
    std::fs::create_dir(&vol_dir).unwrap();
    let mut vol = ConfigMapVolume::new(&vol_dir, SET_A);
    let exp = start(dir.path(), &["-f", vol.file().to_str().unwrap()]);
    let first = exp.metrics();
    assert!(has_family(&first, "DCGM_FI_DEV_POWER_USAGE"), "{first}");
    assert!(!has_family(&first, "DCGM_FI_DEV_SM_CLOCK"), "{first}");
    assert_eq!(
        self_value(&first, "gpu_exporter_counters_last_reload_successful"),
        1.0
    );

    // Scrape continuously while the volume is swapped.
    let stop = Arc::new(AtomicBool::new(false));
    let port = exp.port;
    let scraper = {
        let stop = Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut bodies = Vec::new();
            while !stop.load(Ordering::Acquire) {
                let r = http_get(port, "/metrics", &[]).expect("scrape");
                bodies.push((r.status, r.text()));
            }
            bodies
        })
    };
    // Let the scraper see the old set first.
    let before = samples(&exp);
    common::wait_until("two more ticks", || samples(&exp) >= before + 2);
    vol.update(SET_B);
    let after = exp.metrics_until("set B served", |t| {
        has_family(t, "DCGM_FI_DEV_SM_CLOCK") && !has_family(t, "DCGM_FI_DEV_POWER_USAGE")
    });
    let applied = samples(&exp);
    common::wait_until("two more ticks", || samples(&exp) >= applied + 2);
    stop.store(true, Ordering::Release);
    let bodies = scraper.join().unwrap();

    let (mut old, mut new) = (0, 0);
    for (status, body) in &bodies {
        assert_eq!(*status, 200, "{body}");
        assert!(
            has_family(body, "DCGM_FI_DEV_GPU_TEMP"),
            "a scrape without the GPU families:\n{body}"
        );
        match (
            has_family(body, "DCGM_FI_DEV_POWER_USAGE"),
            has_family(body, "DCGM_FI_DEV_SM_CLOCK"),
        ) {
            (true, false) => old += 1,
            (false, true) => new += 1,
            other => panic!("a scrape with a mixed counter set {other:?}:\n{body}"),
        }
    }
    assert!(old > 0 && new > 0, "old {old}, new {new}");
    assert_eq!(
        self_value(
            &after,
            "gpu_exporter_counters_reloads_total{result=\"success\"}"
        ),
        1.0
    );
    assert_eq!(
        self_value(&after, "gpu_exporter_counters_last_reload_successful"),
        1.0
    );
    assert!(exp.log().contains("counters reloaded"), "{}", exp.log());
}

#[test]
fn broken_file_keeps_the_old_set_logs_the_line_and_shows_in_self_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("c.csv");
    std::fs::write(&csv, SET_A).unwrap();
    let exp = start(dir.path(), &["-f", csv.to_str().unwrap()]);

    // Line 3 names no field.
    let tmp = dir.path().join("c.tmp");
    std::fs::write(
        &tmp,
        format!("{SET_B}DCGM_FI_DEV_NOT_A_FIELD, gauge, nothing.\n"),
    )
    .unwrap();
    std::fs::rename(&tmp, &csv).unwrap();
    let text = exp.metrics_until("the failed reload to show", |t| {
        t.contains("gpu_exporter_counters_last_reload_successful 0")
    });
    // The old set is still served, whole.
    assert!(has_family(&text, "DCGM_FI_DEV_POWER_USAGE"), "{text}");
    assert!(!has_family(&text, "DCGM_FI_DEV_SM_CLOCK"), "{text}");
    assert_eq!(
        self_value(
            &text,
            "gpu_exporter_counters_reloads_total{result=\"failure\"}"
        ),
        1.0
    );
    let log = exp.log();
    let line = format!("{}:3:", csv.display());
    assert!(
        log.contains("counters reload failed") && log.contains(&line),
        "the log should name {line}:\n{log}"
    );
    // The same broken file is reported once, not on every tick.
    let seen = samples(&exp);
    common::wait_until("three more ticks", || samples(&exp) >= seen + 3);
    assert_eq!(exp.log().matches("counters reload failed").count(), 1);

    // Fixed: the new set applies and the state is healthy again.
    std::fs::write(&tmp, SET_B).unwrap();
    std::fs::rename(&tmp, &csv).unwrap();
    let text = exp.metrics_until("the fixed file to apply", |t| {
        has_family(t, "DCGM_FI_DEV_SM_CLOCK")
    });
    assert!(!has_family(&text, "DCGM_FI_DEV_POWER_USAGE"), "{text}");
    assert_eq!(
        self_value(&text, "gpu_exporter_counters_last_reload_successful"),
        1.0
    );
}

#[test]
fn sighup_rereads_a_file_whose_stamp_did_not_change() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("c.csv");
    std::fs::write(&csv, SET_A).unwrap();
    let exp = start(dir.path(), &["-f", csv.to_str().unwrap()]);
    assert!(
        exp.metrics()
            .contains("# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (C).")
    );

    // Same length, same inode, same mtime: the per-tick check cannot see it.
    let mtime = std::fs::metadata(&csv).unwrap().modified().unwrap();
    let edited = SET_A.replace("GPU temperature (C).", "GPU TEMPERATURE (C).");
    assert_eq!(edited.len(), SET_A.len());
    std::fs::write(&csv, &edited).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&csv)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let seen = samples(&exp);
    common::wait_until("three more ticks", || samples(&exp) >= seen + 3);
    assert!(
        exp.metrics()
            .contains("# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (C)."),
        "the edit should be invisible without SIGHUP"
    );

    exp.signal("-HUP");
    exp.metrics_until("the SIGHUP re-read", |t| {
        t.contains("# HELP DCGM_FI_DEV_GPU_TEMP GPU TEMPERATURE (C).")
    });
    assert!(exp.log().contains("SIGHUP: re-reading"), "{}", exp.log());
}

#[test]
fn sighup_with_the_built_in_set_keeps_serving() {
    if Path::new(gpu_exporter::config::DEFAULT_COLLECTORS).exists() {
        eprintln!("skipped: a counters file exists at the default path on this machine");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let exp = start(dir.path(), &[]);
    let text = exp.metrics();
    // Without a file there is no reload state to show.
    assert!(!text.contains("gpu_exporter_counters_last_reload_successful"));
    exp.signal("-HUP");
    exp.wait_log("no file to re-read", Duration::from_secs(20));
    let seen = samples(&exp);
    common::wait_until("two more ticks", || samples(&exp) >= seen + 2);
    assert!(has_family(&exp.metrics(), "DCGM_FI_DEV_GPU_TEMP"));
}

/// Scrapes `/metrics` on `port` until told to stop: every (status, body) seen.
struct Scraper {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(u16, String)>>,
}

impl Scraper {
    fn start(port: u16) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut bodies = Vec::new();
            while !flag.load(Ordering::Acquire) {
                let r = http_get(port, "/metrics", &[]).expect("scrape");
                bodies.push((r.status, r.text()));
            }
            bodies
        });
        Self { stop, thread }
    }

    /// Stops, and checks that every scrape answered 200 with the GPU families; returns how
    /// many there were.
    fn finish(self) -> usize {
        self.stop.store(true, Ordering::Release);
        let bodies = self.thread.join().unwrap();
        for (status, body) in &bodies {
            assert_eq!(*status, 200, "{body}");
            assert!(
                has_family(body, "DCGM_FI_DEV_GPU_TEMP"),
                "a scrape without the GPU families:\n{body}"
            );
        }
        bodies.len()
    }
}

/// Makes a file with `make` beside `path` and renames it over `path` in one step, as `mv`
/// does.
fn replace_with(path: &Path, make: impl FnOnce(&Path)) {
    let tmp = path.with_extension("tmp");
    make(&tmp);
    std::fs::rename(&tmp, path).unwrap();
}

/// A counters path replaced at runtime by a file over the 4 MiB limit (a sparse 8 GiB one),
/// then by a symlink to `/dev/zero`: each is refused without being read (resident memory
/// stays put), the set in use stays, `gpu_exporter_counters_last_reload_successful` is 0, and
/// each is logged once however many ticks see it.
#[test]
fn oversized_files_and_devices_at_reload_are_refused_without_reading_them() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("c.csv");
    std::fs::write(&csv, SET_A).unwrap();
    let exp = start(dir.path(), &["-f", csv.to_str().unwrap()]);
    let before = common::rss_kib(exp.pid());
    let scraper = Scraper::start(exp.port);

    replace_with(&csv, |tmp| {
        std::fs::File::create(tmp)
            .unwrap()
            .set_len(8 << 30)
            .unwrap()
    });
    let text = exp.metrics_until("the oversized file refused", |t| {
        t.contains("gpu_exporter_counters_last_reload_successful 0")
    });
    assert!(
        has_family(&text, "DCGM_FI_DEV_POWER_USAGE"),
        "set A kept:\n{text}"
    );
    let seen = samples(&exp);
    common::wait_until("three more ticks", || samples(&exp) >= seen + 3);
    let log = exp.log();
    let failures: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("counters reload failed"))
        .collect();
    assert_eq!(failures.len(), 1, "logged once:\n{log}");
    assert!(
        failures[0].contains(&csv.display().to_string())
            && failures[0].contains("over the 4194304-byte limit"),
        "{}",
        failures[0]
    );

    replace_with(&csv, |tmp| {
        std::os::unix::fs::symlink("/dev/zero", tmp).unwrap()
    });
    exp.wait_log(
        "not a regular file but a character device",
        Duration::from_secs(20),
    );
    let seen = samples(&exp);
    common::wait_until("three more ticks", || samples(&exp) >= seen + 3);
    let text = exp.metrics();
    assert!(
        has_family(&text, "DCGM_FI_DEV_POWER_USAGE"),
        "set A kept:\n{text}"
    );
    assert_eq!(
        self_value(&text, "gpu_exporter_counters_last_reload_successful"),
        0.0
    );
    assert_eq!(
        exp.log().matches("counters reload failed").count(),
        2,
        "each refusal logged once:\n{}",
        exp.log()
    );
    let after = common::rss_kib(exp.pid());
    assert!(
        after < before + 64 * 1024,
        "resident memory grew from {before} KiB to {after} KiB"
    );
    assert!(scraper.finish() > 0);
}

/// The counters file truncated to nothing in place, then rewritten in two halves with a pause
/// of several ticks between them (the first half ends in the middle of the first metric's
/// name): the empty and the half-written file are refused, no scrape meanwhile lacks the GPU
/// families, and the complete file applies.
#[test]
fn a_file_emptied_or_rewritten_in_two_halves_never_empties_the_page() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("c.csv");
    std::fs::write(&csv, SET_A).unwrap();
    let exp = start(dir.path(), &["-f", csv.to_str().unwrap()]);
    let scraper = Scraper::start(exp.port);

    std::fs::File::create(&csv).unwrap();
    exp.metrics_until("the empty file refused", |t| {
        t.contains("gpu_exporter_counters_last_reload_successful 0")
    });
    assert!(exp.log().contains("no metric rows"), "{}", exp.log());
    let seen = samples(&exp);
    common::wait_until("three more ticks", || samples(&exp) >= seen + 3);

    let content = format!("# Counters for this node\n# (written in two halves)\n{SET_B}");
    let cut = content.find("DCGM_FI_DEV_GPU_TEMP").unwrap() + "DCGM_FI_".len();
    let mut f = std::fs::File::create(&csv).unwrap();
    use std::io::Write as _;
    f.write_all(&content.as_bytes()[..cut]).unwrap();
    f.flush().unwrap();
    let seen = samples(&exp);
    common::wait_until("five more ticks", || samples(&exp) >= seen + 5);
    f.write_all(&content.as_bytes()[cut..]).unwrap();
    drop(f);
    let text = exp.metrics_until("set B applied", |t| has_family(t, "DCGM_FI_DEV_SM_CLOCK"));
    assert!(!has_family(&text, "DCGM_FI_DEV_POWER_USAGE"), "{text}");
    assert_eq!(
        self_value(&text, "gpu_exporter_counters_last_reload_successful"),
        1.0
    );
    assert!(scraper.finish() > 0);
}

/// Six families; [`SET_D`] replaces the last one.
const SET_C: &str = "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (C).\n\
                     DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (W).\n\
                     DCGM_FI_DEV_SM_CLOCK, gauge, SM clock (MHz).\n\
                     DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock (MHz).\n\
                     DCGM_FI_DEV_FB_USED, gauge, Framebuffer used (MiB).\n\
                     DCGM_FI_DEV_FB_FREE, gauge, Framebuffer free (MiB).\n";
const SET_D: &str = "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (C).\n\
                     DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (W).\n\
                     DCGM_FI_DEV_SM_CLOCK, gauge, SM clock (MHz).\n\
                     DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock (MHz).\n\
                     DCGM_FI_DEV_FB_USED, gauge, Framebuffer used (MiB).\n\
                     DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (%).\n";

/// The `DCGM_FI_*` families a page serves, sorted.
fn dcgm_families(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("DCGM_FI_"))
        .map(str::to_owned)
        .collect();
    v.sort();
    v
}

/// Writes `content` into `path` in place, in two parts with a pause of `pause` between them,
/// as an editor or `kubectl cp` whose writer stalls does.
fn write_slowly(path: &Path, content: &str, cut: usize, pause: Duration) {
    use std::io::Write as _;
    let mut f = std::fs::File::create(path).unwrap();
    f.write_all(&content.as_bytes()[..cut]).unwrap();
    f.flush().unwrap();
    std::thread::sleep(pause);
    f.write_all(&content.as_bytes()[cut..]).unwrap();
}

/// A writer that stops for 3 s (15 ticks, longer than the 2 s settle time) in the middle of
/// a line, then one that stops as long at a line boundary after two of six families: no
/// scrape meanwhile shows the partial set (every scrape serves the old set or the complete
/// new one), and the complete set applies after each. The part written before the first pause
/// parses (the cut falls in a help text), so only the complete-last-line rule keeps it out;
/// the second part is whole lines, kept out by the rule for a version that drops more than
/// half of the families.
#[test]
fn a_slow_writer_never_has_its_partial_set_served() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("c.csv");
    std::fs::write(&csv, SET_C).unwrap();
    let exp = start(dir.path(), &["-f", csv.to_str().unwrap()]);
    let (c, d) = (dcgm_families(&exp.metrics()), {
        let mut v: Vec<String> = SET_D
            .lines()
            .map(|l| l.split(',').next().unwrap().to_owned())
            .collect();
        v.sort();
        v
    });
    assert_eq!(c.len(), 6, "{c:?}");
    let scraper = {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let port = exp.port;
        let thread = std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !flag.load(Ordering::Acquire) {
                let r = http_get(port, "/metrics", &[]).expect("scrape");
                assert_eq!(r.status, 200);
                seen.push(dcgm_families(&r.text()));
                std::thread::sleep(Duration::from_millis(20));
            }
            seen
        });
        (stop, thread)
    };

    // In the middle of the fifth line's help text.
    let cut = SET_D.find("Framebuffer used").unwrap() + "Frame".len();
    write_slowly(&csv, SET_D, cut, Duration::from_secs(3));
    exp.metrics_until("set D applied", |t| dcgm_families(t) == d);
    assert!(
        exp.log()
            .contains("the last line does not end with a newline"),
        "{}",
        exp.log()
    );

    // Back to C, then C's first two lines, a pause, and the rest.
    std::fs::write(&csv, SET_C).unwrap();
    exp.metrics_until("set C applied", |t| dcgm_families(t) == c);
    let cut = SET_C.match_indices('\n').nth(1).unwrap().0 + 1;
    write_slowly(&csv, SET_D, cut, Duration::from_secs(3));
    let text = exp.metrics_until("set D applied again", |t| dcgm_families(t) == d);
    assert_eq!(
        self_value(&text, "gpu_exporter_counters_last_reload_successful"),
        1.0
    );

    scraper.0.store(true, Ordering::Release);
    let seen = scraper.1.join().unwrap();
    assert!(seen.len() > 100, "{} scrapes", seen.len());
    for families in &seen {
        assert!(
            *families == c || *families == d,
            "a scrape served a partial set: {families:?}"
        );
    }
    assert!(
        exp.log()
            .contains("removes 4 of the 6 metric families in use")
    );
}

#[test]
fn a_new_version_over_the_label_limit_is_refused_and_the_old_set_stays() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("c.csv");
    std::fs::write(&csv, SET_A).unwrap();
    let exp = start(
        dir.path(),
        &[
            "-f",
            csv.to_str().unwrap(),
            "--series-labels",
            "full",
            "--max-labels-per-series",
            "23",
        ],
    );
    // `--simulate` turns Kubernetes on: in the full label shape gpu_allocation_info has 23
    // labels, a DCGM family 19 (identity, descriptions, host, holder with the seven dra_*
    // labels); five label-type rows put it at 24.
    let tmp = dir.path().join("c.tmp");
    std::fs::write(
        &tmp,
        format!(
            "{SET_B}DCGM_FI_DRIVER_VERSION, label, Driver.\n\
             DCGM_FI_DEV_VBIOS_VERSION, label, VBIOS.\n\
             DCGM_FI_NVML_VERSION, label, NVML.\n\
             DCGM_FI_DEV_SERIAL, label, Serial.\n\
             DCGM_FI_DEV_BRAND, label, Brand.\n"
        ),
    )
    .unwrap();
    std::fs::rename(&tmp, &csv).unwrap();
    let text = exp.metrics_until("the refused reload to show", |t| {
        t.contains("gpu_exporter_counters_last_reload_successful 0")
    });
    assert!(has_family(&text, "DCGM_FI_DEV_POWER_USAGE"), "{text}");
    assert!(!has_family(&text, "DCGM_FI_DEV_SM_CLOCK"), "{text}");
    assert!(!text.contains("driver_version"), "{text}");
    let log = exp.log();
    assert!(
        log.contains("counters reload failed")
            && log.contains(&csv.display().to_string())
            && log.contains("would have 24 labels")
            && log.contains("--max-labels-per-series 23"),
        "{log}"
    );
    // Within the limit again: it applies.
    std::fs::write(&tmp, SET_B).unwrap();
    std::fs::rename(&tmp, &csv).unwrap();
    exp.metrics_until("the fitting file to apply", |t| {
        has_family(t, "DCGM_FI_DEV_SM_CLOCK")
    });
}
