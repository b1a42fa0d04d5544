//! Counters hot reload: the sampler re-reads the counters CSV when the file changes or when
//! the process gets SIGHUP, and applies the new set from that tick on.
//!
//! The file is checked once per tick with one `stat` that follows symlinks, so a Kubernetes
//! ConfigMap volume works: the kubelet writes the new data into a fresh directory and swaps the
//! `..data` symlink, which gives the path a new inode. (A `subPath` mount never sees the update;
//! that is a Kubernetes limitation, see deploy/README.md.) A changed stamp whose bytes are the
//! same as the set in use is not a reload.
//!
//! A file being written (an editor, `kubectl cp`, a plain `cp` that pauses) must never reach
//! the page, so a changed file is judged only once its bytes have read the same for
//! [`SETTLE`] (measured on the monotonic clock, whatever the tick interval), its last line must
//! be complete (the file ends with a newline), and a version that removes more than half of the
//! metric families in use must read the same for [`LARGE_DROP_SETTLE`]. SIGHUP skips these
//! waits: the file as it is then is applied if it parses.
//!
//! A file that cannot be read or parsed, or that the daemon's validator refuses (the
//! labels-per-series guard, given by the caller), keeps the old set: the error (with
//! `file:line` or the file) is logged once per distinct content, and the self-metrics say the
//! last reload failed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use crate::base::bounded_read::{MAX_CONFIG_FILE, ReadError, not_utf8, read_regular};
use crate::base::file_stamp::FileStamp;
use crate::base::shown::shown_path;
use crate::catalogue::csv::{CounterSet, CsvError, parse_counters};
use crate::catalogue::profile::Profile;
use crate::snapshot::ReloadStats;

/// How long a changed counters file must read the same bytes before it is applied (or, if
/// broken, reported): a writer that pauses for less never has its partial file judged.
pub const SETTLE: Duration = Duration::from_secs(2);

/// How long a changed file that removes more than half of the metric families in use must
/// read the same before it is applied: the first lines of a file whose writer paused longer
/// than [`SETTLE`] at a line boundary look like that. SIGHUP applies it at once.
pub const LARGE_DROP_SETTLE: Duration = Duration::from_secs(30);

/// A changed version of the file, not applied yet.
struct Pending {
    bytes: Vec<u8>,
    /// When a check first read these bytes.
    since: Instant,
    /// Whether the wait for a large drop has been logged.
    announced: bool,
}

/// Watches the counters file the exporter was started with.
pub struct CountersFile {
    path: PathBuf,
    /// The path as messages show it (escaped when it holds control characters).
    shown: String,
    stamp: Option<FileStamp>,
    /// The bytes of the set in use, to tell a real change from a touch.
    loaded: Vec<u8>,
    /// The metric names of the set in use, to tell how many families a new version drops.
    families: Vec<String>,
    /// The bytes whose parse failed last, so one broken version is logged once.
    last_bad: Option<Vec<u8>>,
    /// Set by the SIGHUP listener; the next tick re-reads the file whatever its stamp.
    hangup: Arc<AtomicBool>,
    stats: ReloadStats,
    started: bool,
    /// Whose shipped sets stand in for gpu-exporter's 4.8-named ones.
    profile: Profile,
    /// New content seen at an earlier check, judged once it has read the same for
    /// [`SETTLE`].
    pending: Option<Pending>,
    /// The last failure logged, so that a lasting one is logged once, not every tick.
    last_error: Option<String>,
    /// Checks a parsed new version against the rest of the configuration (the daemon's
    /// labels-per-series guard); an `Err` refuses the version with its message.
    validator: Option<Validator>,
}

/// A check run on every parsed new version before it applies; `Err` holds why it is refused.
pub type Validator = Box<dyn Fn(&CounterSet) -> Result<(), Refused> + Send>;

/// Why a [`Validator`] refuses a new version, in the validator's own words. The reload only
/// logs it (after the file's name) and keeps the version in use, so it is a message, not a
/// cause to match on: the checks behind it and their errors belong to the layer that made
/// the validator (the daemon's configuration).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// Parses a counters file's text. Under `dcgm-4.8.2`, `dcgm-4.9` and `dcgm-4.10` one of
/// gpu-exporter's shipped 4.8-named sets, unmodified, is served as that version's set (see
/// [`Profile::stand_in`]); the origin of every message says so.
/// A set without any metric row (an empty, truncated or all-commented file) is refused: it
/// would silently serve no GPU series at all.
fn parse_as(profile: Profile, origin: &str, text: &str) -> Result<CounterSet, CsvError> {
    let set = match profile.stand_in(text) {
        Some((name, set)) => parse_counters(
            &format!(
                "{origin} (gpu-exporter's own set, served as {name} for {})",
                profile.name()
            ),
            set,
        ),
        None => parse_counters(origin, text),
    }?;
    if set.metrics().next().is_none() {
        return Err(CsvError::Io {
            origin: origin.to_owned(),
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "no metric rows ({} bytes: an empty, truncated or all-commented file?)",
                    text.len()
                ),
            ),
        });
    }
    Ok(set)
}

/// Reads the counters file: a regular file, at most [`MAX_CONFIG_FILE`] bytes, without
/// blocking on a FIFO.
fn read_counters(path: &Path) -> Result<Vec<u8>, ReadError> {
    read_regular(path, MAX_CONFIG_FILE)
}

/// What a changed version of the file comes to.
enum Judged {
    /// Applied from this tick.
    Apply(CounterSet),
    /// Refused: the message (naming the file and line).
    Broken(String),
    /// A large drop that has not read the same for [`LARGE_DROP_SETTLE`] yet.
    Wait,
}

/// The metric families (distinct names) of `set`, sorted.
fn families(set: &CounterSet) -> Vec<String> {
    let mut v: Vec<String> = set.metrics().map(|r| r.name.clone()).collect();
    v.sort_unstable();
    v.dedup();
    v
}

impl CountersFile {
    /// Loads the counters from `path` and watches it from then on. The stamp is taken before
    /// the read, so a change during the read shows as a new stamp at the next check.
    pub fn open(path: PathBuf, profile: Profile) -> Result<(Self, CounterSet), CsvError> {
        let origin = shown_path(&path);
        let io = |source| CsvError::Io {
            origin: origin.clone(),
            source,
        };
        let stamp = FileStamp::of(&path).map_err(io)?;
        let bytes = read_counters(&path).map_err(|e| io(e.into()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let at = e.utf8_error().valid_up_to();
            io(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                not_utf8(&e.as_bytes()[..at]),
            ))
        })?;
        let set = parse_as(profile, &origin, &text)?;
        let watch = Self {
            path,
            shown: origin,
            stamp: Some(stamp),
            loaded: text.into_bytes(),
            families: families(&set),
            last_bad: None,
            hangup: Arc::new(AtomicBool::new(false)),
            stats: ReloadStats {
                last_ok: true,
                ..ReloadStats::default()
            },
            started: false,
            profile,
            pending: None,
            last_error: None,
            validator: None,
        };
        Ok((watch, set))
    }

    /// Runs `check` on every new version once it parses; a version it refuses is reported as
    /// a failed reload (naming the file) and the set in use stays.
    pub fn with_validator(mut self, check: Validator) -> Self {
        self.validator = Some(check);
        self
    }

    /// The flag a SIGHUP listener sets (see [`listen_for_hangup`]).
    pub fn hangup_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.hangup)
    }

    /// The watched path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The watched path as messages show it (escaped when it holds control characters).
    pub fn shown_path(&self) -> &str {
        &self.shown
    }

    /// The reload state so far.
    pub fn stats(&self) -> &ReloadStats {
        &self.stats
    }

    /// Checks the file; returns the new set when it changed, settled and parsed. `now_unix`
    /// stamps the first call (the start-up load) and every successful reload; `now` (the
    /// monotonic clock) measures how long a changed version has read the same.
    pub fn poll(&mut self, now_unix: f64, now: Instant) -> Option<CounterSet> {
        if !self.started {
            self.started = true;
            self.stats.last_success_unix = now_unix;
        }
        let forced = self.hangup.swap(false, Ordering::AcqRel);
        if forced {
            info!(file = %self.shown, "SIGHUP: re-reading the counters file");
        }
        if !self.may_have_changed(forced) {
            return None;
        }
        let bytes = self.read_file()?;
        if self.is_known(&bytes, forced) {
            return None;
        }
        let waited = if forced {
            None
        } else {
            match self.pending.as_ref() {
                Some(p) if p.bytes == bytes => Some(now.saturating_duration_since(p.since)),
                _ => {
                    // Changed since the last check (or first seen): judged once it settles.
                    self.pending = Some(Pending {
                        bytes,
                        since: now,
                        announced: false,
                    });
                    return None;
                }
            }
        };
        if waited.is_some_and(|w| w < SETTLE) {
            return None;
        }
        match self.judge(&bytes, waited) {
            Judged::Wait => None,
            Judged::Broken(e) => {
                self.pending = None;
                self.last_bad = Some(bytes);
                self.fail(&format!("{e}; keeping the counters in use"));
                None
            }
            Judged::Apply(set) => Some(self.apply(bytes, set, now_unix)),
        }
    }

    /// Whether the file may have changed since the last check: a new stamp (taken as the
    /// file's from now), a version pending, or SIGHUP (`forced`). A file that cannot be
    /// stat'ed has not (the failure is reported, once for a missing file, and any pending
    /// version forgotten).
    fn may_have_changed(&mut self, forced: bool) -> bool {
        let current = match FileStamp::of(&self.path) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!(
                    "{}: cannot read counters file: {e}; keeping the counters in use",
                    self.shown
                );
                // A missing file is reported once, not on every tick.
                if forced || self.stamp.is_some() {
                    self.fail(&msg);
                }
                self.stamp = None;
                self.pending = None;
                return false;
            }
        };
        if !forced && self.pending.is_none() && self.stamp.as_ref() == Some(&current) {
            return false;
        }
        self.stamp = Some(current);
        true
    }

    /// The file's bytes; `None` when it cannot be read (reported, any pending version
    /// forgotten).
    fn read_file(&mut self) -> Option<Vec<u8>> {
        match read_counters(&self.path) {
            Ok(b) => Some(b),
            Err(e) => {
                // An I/O error may pass: read again next tick. A FIFO, a directory or an
                // oversized file stays what it is until the path changes (a new stamp).
                if matches!(e, ReadError::Io(_)) {
                    self.stamp = None;
                }
                self.pending = None;
                self.fail(&format!(
                    "{}: cannot read counters file: {e}; keeping the counters in use",
                    self.shown
                ));
                None
            }
        }
    }

    /// Whether `bytes` are a version already judged: the set in use (back to it after a
    /// broken version is logged, and so is an unchanged file on SIGHUP, `forced`) or, without
    /// SIGHUP, the version refused last. Either forgets any pending version.
    fn is_known(&mut self, bytes: &[u8], forced: bool) -> bool {
        if bytes == self.loaded {
            self.pending = None;
            if !self.stats.last_ok {
                // Back to the content in use: the broken version is gone.
                info!(file = %self.shown, "counters file is back to the set in use");
                self.stats.last_ok = true;
                self.last_bad = None;
                self.last_error = None;
            } else if forced {
                info!(file = %self.shown, "counters file unchanged");
            }
            return true;
        }
        if !forced && self.last_bad.as_deref() == Some(bytes) {
            self.pending = None;
            return true;
        }
        false
    }

    /// Takes `set`, parsed from `bytes`, as the set in use from this tick: logged with its
    /// warnings and counted as a successful reload at `now_unix`.
    fn apply(&mut self, bytes: Vec<u8>, set: CounterSet, now_unix: f64) -> CounterSet {
        self.pending = None;
        self.last_error = None;
        info!(
            file = %self.shown,
            metrics = set.metrics().count(),
            labels = set.labels().count(),
            "counters reloaded; the new set applies from this tick"
        );
        for w in &set.warnings {
            warn!("{w}");
        }
        self.loaded = bytes;
        self.families = families(&set);
        self.last_bad = None;
        self.stats.last_ok = true;
        self.stats.successes += 1;
        self.stats.last_success_unix = now_unix;
        set
    }

    /// Judges a changed version that has read the same for `waited` (`None`: SIGHUP, no wait).
    fn judge(&mut self, bytes: &[u8], waited: Option<Duration>) -> Judged {
        let origin = &self.shown;
        if waited.is_some() && !bytes.is_empty() && !bytes.ends_with(b"\n") {
            let line = bytes.iter().filter(|b| **b == b'\n').count() + 1;
            return Judged::Broken(format!(
                "{origin}:{line}: the last line does not end with a newline, so the file looks \
                 half-written and is not applied; end the file with a newline (or send SIGHUP \
                 to apply it as it is)"
            ));
        }
        let set = match std::str::from_utf8(bytes) {
            Err(e) => {
                return Judged::Broken(format!(
                    "{origin}: {}",
                    not_utf8(&bytes[..e.valid_up_to()])
                ));
            }
            Ok(text) => match parse_as(self.profile, origin, text) {
                Ok(set) => set,
                Err(e) => return Judged::Broken(e.to_string()),
            },
        };
        if let Some(Err(e)) = self.validator.as_ref().map(|check| check(&set)) {
            return Judged::Broken(format!("{origin}: {e}"));
        }
        let Some(waited) = waited else {
            return Judged::Apply(set);
        };
        let new = families(&set);
        let dropped = self
            .families
            .iter()
            .filter(|f| new.binary_search(f).is_err())
            .count();
        if dropped * 2 > self.families.len() && waited < LARGE_DROP_SETTLE {
            if let Some(p) = self.pending.as_mut().filter(|p| !p.announced) {
                p.announced = true;
                warn!(
                    file = %origin,
                    "the counters file's new version removes {dropped} of the {} metric \
                     families in use; it applies once it has not changed for {} s (send SIGHUP \
                     to apply it now)",
                    self.families.len(),
                    LARGE_DROP_SETTLE.as_secs()
                );
            }
            return Judged::Wait;
        }
        Judged::Apply(set)
    }

    /// Records a failed reload; logs it unless it is the failure logged last.
    fn fail(&mut self, msg: &str) {
        self.stats.last_ok = false;
        if self.last_error.as_deref() == Some(msg) {
            return;
        }
        error!("counters reload failed: {msg}");
        self.stats.failures += 1;
        self.last_error = Some(msg.to_owned());
    }
}

/// Sets `flag` on every SIGHUP of `hangups` (registered by the caller first thing at start-up,
/// so an early SIGHUP cannot end the process), on `runtime`. With no flag (built-in counters)
/// SIGHUP is logged and otherwise ignored: it must never fall through to its default action,
/// which would end the process.
pub fn listen_for_hangup(
    runtime: &tokio::runtime::Handle,
    mut hangups: tokio::signal::unix::Signal,
    flag: Option<Arc<AtomicBool>>,
) {
    runtime.spawn(async move {
        while hangups.recv().await.is_some() {
            match &flag {
                Some(f) => f.store(true, Ordering::Release),
                None => {
                    info!("SIGHUP: the built-in counters are in use, there is no file to re-read")
                }
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n";
    const B: &str =
        "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\nDCGM_FI_DEV_POWER_USAGE, gauge, power\n";
    /// Four families, for the large-drop rule.
    const C: &str = "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n\
                     DCGM_FI_DEV_POWER_USAGE, gauge, power\n\
                     DCGM_FI_DEV_SM_CLOCK, gauge, clock\n\
                     DCGM_FI_DEV_FB_USED, gauge, framebuffer\n";

    /// A check at `t` seconds: `t` is both the wall clock and the monotonic clock's offset
    /// from a fixed origin.
    fn poll(w: &mut CountersFile, t: f64) -> Option<CounterSet> {
        static ORIGIN: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        let origin = *ORIGIN.get_or_init(Instant::now);
        w.poll(t, origin + Duration::from_secs_f64(t))
    }

    fn names(set: &CounterSet) -> Vec<String> {
        set.metrics().map(|r| r.name.clone()).collect()
    }

    fn watch(content: &str) -> (tempfile::TempDir, PathBuf, CountersFile) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, content).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(poll(&mut w, 1.0).is_none());
        (dir, p, w)
    }

    #[test]
    fn unchanged_file_is_not_reloaded() {
        let (_dir, p, mut w) = watch(A);
        assert!(poll(&mut w, 11.0).is_none());
        assert_eq!(w.stats().last_success_unix, 1.0);
        assert_eq!(w.stats().successes, 0);
        // Rewritten with the same bytes: a new stamp, but no reload.
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, A).unwrap();
        assert!(poll(&mut w, 12.0).is_none());
        assert!(poll(&mut w, 20.0).is_none());
        assert_eq!(w.stats().successes, 0);
        assert!(w.stats().last_ok);
    }

    #[test]
    fn changed_file_is_reloaded_once_after_the_settle_time() {
        let (dir, p, mut w) = watch(A);
        let tmp = dir.path().join("c.tmp");
        std::fs::write(&tmp, B).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        // Seen changed at 2 s: applied at the first check 2 s later, however many checks
        // come between.
        assert!(poll(&mut w, 2.0).is_none());
        for t in [2.5, 3.0, 3.9] {
            assert!(poll(&mut w, t).is_none(), "{t}: not settled yet");
        }
        let set = poll(&mut w, 4.0).expect("reloaded");
        assert_eq!(
            names(&set),
            ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"]
        );
        assert!(poll(&mut w, 7.0).is_none());
        assert_eq!(w.stats().successes, 1);
        assert_eq!(w.stats().last_success_unix, 4.0);
    }

    #[test]
    fn a_long_tick_applies_at_the_next_check() {
        let (_dir, p, mut w) = watch(A);
        std::fs::write(&p, B).unwrap();
        assert!(poll(&mut w, 31.0).is_none());
        assert!(poll(&mut w, 61.0).is_some(), "two checks 30 s apart");
    }

    #[test]
    fn broken_file_keeps_old_set_and_recovers() {
        let (_dir, p, mut w) = watch(A);
        std::fs::write(
            &p,
            "# ok\nDCGM_FI_DEV_GPU_TEMP, gauge, t\nNOT_A_FIELD, gauge, x\n",
        )
        .unwrap();
        assert!(poll(&mut w, 2.0).is_none());
        assert!(w.stats().last_ok, "not judged before it settles");
        assert!(poll(&mut w, 4.0).is_none());
        assert!(!w.stats().last_ok);
        assert_eq!(w.stats().failures, 1);
        // The same broken content is not counted again on the next ticks.
        assert!(poll(&mut w, 5.0).is_none());
        assert!(poll(&mut w, 9.0).is_none());
        assert_eq!(w.stats().failures, 1);
        // Fixed: reloaded once it has settled.
        std::fs::write(&p, B).unwrap();
        assert!(poll(&mut w, 10.0).is_none());
        assert!(poll(&mut w, 12.0).is_some());
        assert!(w.stats().last_ok);
        assert_eq!(w.stats().last_success_unix, 12.0);
    }

    #[test]
    fn missing_file_is_a_failure_reported_once() {
        let (_dir, p, mut w) = watch(A);
        std::fs::remove_file(&p).unwrap();
        assert!(poll(&mut w, 2.0).is_none());
        assert!(poll(&mut w, 3.0).is_none());
        assert_eq!(w.stats().failures, 1);
        assert!(!w.stats().last_ok);
        // It comes back with the content in use: no reload, healthy again.
        std::fs::write(&p, A).unwrap();
        assert!(poll(&mut w, 4.0).is_none());
        assert!(w.stats().last_ok);
    }

    #[test]
    fn hangup_forces_a_read_even_with_an_unchanged_stamp() {
        let (_dir, p, mut w) = watch(A);
        // Same length, same inode, same mtime: invisible to the stamp.
        let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
        let same_len = A.replace("temperature", "TEMPERATURE");
        std::fs::write(&p, &same_len).unwrap();
        std::fs::File::options()
            .write(true)
            .open(&p)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        assert!(
            poll(&mut w, 2.0).is_none(),
            "the stamp alone does not see it"
        );
        w.hangup_flag().store(true, Ordering::Release);
        let set = poll(&mut w, 2.1).expect("SIGHUP re-reads, and applies at once");
        assert_eq!(set.rows[0].help, "TEMPERATURE");
    }

    /// A writer that stops in the middle of a line, for as long as it likes: the part written
    /// parses (the cut falls in a help text), but it is never applied; once it has read the
    /// same for the settle time it is reported, naming the line; the completed file applies.
    #[test]
    fn a_file_cut_in_the_middle_of_a_line_is_never_applied() {
        let (_dir, p, mut w) = watch(A);
        let cut = B.len() - 4;
        assert!(parse_counters("x", &B[..cut]).is_ok(), "the part parses");
        std::fs::write(&p, &B[..cut]).unwrap();
        for t in [2.0, 3.0, 4.0, 30.0, 100.0, 1000.0] {
            assert!(poll(&mut w, t).is_none(), "{t}");
        }
        assert!(!w.stats().last_ok);
        assert_eq!(w.stats().failures, 1, "reported once");
        let e = w.last_error.clone().unwrap();
        assert!(
            e.contains("c.csv:2: the last line does not end with a newline")
                && e.contains("send SIGHUP"),
            "{e}"
        );
        std::fs::write(&p, B).unwrap();
        assert!(poll(&mut w, 1001.0).is_none());
        assert_eq!(poll(&mut w, 1003.0).map(|s| names(&s).len()), Some(2));
        assert!(w.stats().last_ok);
        // SIGHUP applies a file without a final newline as it is.
        std::fs::write(&p, A.trim_end()).unwrap();
        assert!(poll(&mut w, 1004.0).is_none());
        w.hangup_flag().store(true, Ordering::Release);
        assert_eq!(poll(&mut w, 1004.5).map(|s| names(&s).len()), Some(1));
    }

    /// The first lines of a file whose writer paused at a line boundary: a version that
    /// removes more than half of the families in use waits 30 s, unchanged, before it applies
    /// (logged once); completed meanwhile, the complete file applies after the usual settle
    /// time; SIGHUP applies a large drop at once; removing half or less waits only the settle
    /// time.
    #[test]
    fn a_version_that_drops_most_families_waits_longer() {
        let (_dir, p, mut w) = watch(C);
        let first = &C[..C.find('\n').unwrap() + 1];
        std::fs::write(&p, first).unwrap();
        for t in [2.0, 4.0, 10.0, 31.9] {
            assert!(poll(&mut w, t).is_none(), "{t}");
        }
        assert!(w.stats().last_ok, "waiting is not a failure");
        // Completed (one more family than before) before the 30 s are up: applied once settled.
        let more = format!("{C}DCGM_FI_DEV_MEM_CLOCK, gauge, memory clock\n");
        std::fs::write(&p, &more).unwrap();
        assert!(poll(&mut w, 33.0).is_none());
        assert_eq!(poll(&mut w, 35.0).map(|s| names(&s).len()), Some(5));
        // Left as it is, the first line alone applies 30 s after it was first read.
        std::fs::write(&p, first).unwrap();
        assert!(poll(&mut w, 100.0).is_none());
        assert!(poll(&mut w, 129.0).is_none());
        assert_eq!(poll(&mut w, 130.0).map(|s| names(&s).len()), Some(1));
        // Back to C: from one family to four drops nothing.
        std::fs::write(&p, C).unwrap();
        assert!(poll(&mut w, 200.0).is_none());
        assert!(poll(&mut w, 202.0).is_some());
        // Half of the families dropped is not a large drop.
        std::fs::write(&p, &C[..C.match_indices('\n').nth(1).unwrap().0 + 1]).unwrap();
        assert!(poll(&mut w, 300.0).is_none());
        assert_eq!(poll(&mut w, 302.0).map(|s| names(&s).len()), Some(2));
        // SIGHUP applies a large drop at once.
        std::fs::write(&p, C).unwrap();
        assert!(poll(&mut w, 400.0).is_none());
        assert!(poll(&mut w, 402.0).is_some());
        std::fs::write(&p, first).unwrap();
        assert!(poll(&mut w, 403.0).is_none());
        w.hangup_flag().store(true, Ordering::Release);
        assert_eq!(poll(&mut w, 403.1).map(|s| names(&s).len()), Some(1));
        assert_eq!(w.stats().failures, 0);
    }

    #[test]
    fn empty_and_half_written_files_never_replace_the_set() {
        let (dir, p, mut w) = watch(A);
        // Truncated to nothing (the first step of a plain `cp`), left so: refused, logged once.
        std::fs::write(&p, "").unwrap();
        assert!(poll(&mut w, 2.0).is_none());
        assert!(poll(&mut w, 4.0).is_none());
        assert!(poll(&mut w, 6.0).is_none());
        assert!(!w.stats().last_ok);
        assert_eq!(w.stats().failures, 1);
        // Half of B written: it parses, but it is still changing at the next checks.
        let half = &B[..B.find('\n').unwrap() + 1];
        std::fs::write(&p, half).unwrap();
        assert!(poll(&mut w, 7.0).is_none());
        std::fs::write(&p, B).unwrap();
        assert!(poll(&mut w, 8.5).is_none(), "B seen for the first time");
        let set = poll(&mut w, 10.5).expect("B applied once settled");
        assert_eq!(set.metrics().count(), 2);
        assert!(w.stats().last_ok);
        // An empty file at start-up stops it, naming the file.
        let e = CountersFile::open(dir.path().join("empty.csv"), Profile::Native);
        assert!(e.is_err());
        std::fs::write(dir.path().join("empty.csv"), "# nothing\n").unwrap();
        let e = CountersFile::open(dir.path().join("empty.csv"), Profile::Native)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("empty.csv") && e.contains("no metric rows"),
            "{e}"
        );
    }

    #[test]
    fn invalid_utf8_names_the_line() {
        let (_dir, p, mut w) = watch(A);
        std::fs::write(
            &p,
            b"DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_POWER_USAGE, gauge, \xe9\n",
        )
        .unwrap();
        assert!(poll(&mut w, 2.0).is_none());
        assert!(poll(&mut w, 4.0).is_none());
        assert_eq!(w.stats().failures, 1);
        assert_eq!(
            w.last_error
                .as_deref()
                .map(|e| e.contains("invalid byte on line 2")),
            Some(true),
            "{:?}",
            w.last_error
        );
        std::fs::write(&p, b"\xff").unwrap();
        let e = CountersFile::open(p.clone(), Profile::Native)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("c.csv") && e.contains("invalid byte on line 1"),
            "{e}"
        );
    }

    #[test]
    fn a_path_with_control_characters_is_shown_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c\n2026-01-01 ERROR forged\u{1b}[31m.csv");
        std::fs::write(&p, A).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(
            !w.shown_path().contains(['\n', '\u{1b}']),
            "{}",
            w.shown_path()
        );
        assert!(poll(&mut w, 1.0).is_none());
        std::fs::remove_file(&p).unwrap();
        assert!(poll(&mut w, 2.0).is_none());
        let e = w.last_error.clone().unwrap();
        assert!(!e.contains(['\n', '\u{1b}']), "{e}");
        assert!(
            e.contains("c\\n2026-01-01 ERROR forged\\u{1b}[31m.csv"),
            "{e}"
        );
        std::fs::write(&p, "DCGM_FI_NOPE, gauge, x\n").unwrap();
        let e = CountersFile::open(p.clone(), Profile::Native)
            .err()
            .unwrap()
            .to_string();
        assert!(!e.contains(['\n', '\u{1b}']), "{e}");
    }

    #[test]
    fn a_fifo_or_a_directory_at_the_path_is_refused_once_without_blocking() {
        let (_dir, p, mut w) = watch(A);
        std::fs::remove_file(&p).unwrap();
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&p)
                .status()
                .unwrap()
                .success()
        );
        assert!(
            poll(&mut w, 2.0).is_none(),
            "returns at once: no writer needed"
        );
        assert!(poll(&mut w, 3.0).is_none());
        assert_eq!(w.stats().failures, 1, "the FIFO, logged once");
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        for t in 4..10 {
            assert!(poll(&mut w, f64::from(t)).is_none());
        }
        assert_eq!(w.stats().failures, 2, "the directory is logged once");
        let e = CountersFile::open(p.clone(), Profile::Native)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a regular file but a directory"), "{e}");
    }
}
