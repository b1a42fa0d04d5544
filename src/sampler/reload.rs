//! Counters hot reload: the sampler re-reads the counters CSV when the file changes or when
//! the process gets SIGHUP, and applies the new set from that tick on.
//!
//! The file is checked once per tick with one `stat` that follows symlinks, so a Kubernetes
//! ConfigMap volume works: the kubelet writes the new data into a fresh directory and swaps the
//! `..data` symlink, which gives the path a new inode. (A `subPath` mount never sees the update;
//! that is a Kubernetes limitation, see deploy/README.md.) A changed stamp whose bytes are the
//! same as the set in use is not a reload.
//!
//! A file that cannot be read or parsed keeps the old set: the error (with `file:line`) is
//! logged once per distinct content, and the self-metrics say the last reload failed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tracing::{error, info, warn};

use crate::base::bounded_read::{MAX_CONFIG_FILE, ReadError, not_utf8, read_regular};
use crate::base::file_stamp::FileStamp;
use crate::catalogue::csv::{CounterSet, CsvError, parse_counters};
use crate::catalogue::profile::Profile;
use crate::snapshot::ReloadStats;

/// Watches the counters file the exporter was started with.
pub struct CountersFile {
    path: PathBuf,
    stamp: Option<FileStamp>,
    /// The bytes of the set in use, to tell a real change from a touch.
    loaded: Vec<u8>,
    /// The bytes whose parse failed last, so one broken version is logged once.
    last_bad: Option<Vec<u8>>,
    /// Set by the SIGHUP listener; the next tick re-reads the file whatever its stamp.
    hangup: Arc<AtomicBool>,
    stats: ReloadStats,
    started: bool,
    /// Whose shipped sets stand in for gpu-exporter's 4.8-named ones.
    profile: Profile,
    /// New content that parsed, seen at the last check: applied when the next check reads the
    /// same bytes, so a file caught in the middle of a plain `cp` is not applied half-written.
    pending: Option<Vec<u8>>,
    /// The last failure logged, so that a lasting one is logged once, not every tick.
    last_error: Option<String>,
}

/// Parses a counters file's text. Under `dcgm-4.9` one of gpu-exporter's shipped 4.8-named
/// sets, unmodified, is served as its 4.9 version (see [`Profile::stand_in`]); the origin of
/// every message says so.
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

impl CountersFile {
    /// Loads the counters from `path` and watches it from then on. The stamp is taken before
    /// the read, so a change during the read shows as a new stamp at the next check.
    pub fn open(path: PathBuf, profile: Profile) -> Result<(Self, CounterSet), CsvError> {
        let origin = path.display().to_string();
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
            stamp: Some(stamp),
            loaded: text.into_bytes(),
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
        };
        Ok((watch, set))
    }

    /// The flag a SIGHUP listener sets (see [`listen_for_hangup`]).
    pub fn hangup_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.hangup)
    }

    /// The watched path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The reload state so far.
    pub fn stats(&self) -> &ReloadStats {
        &self.stats
    }

    /// Checks the file; returns the new set when it changed and parsed. `now_unix` stamps the
    /// first call (the start-up load) and every successful reload.
    pub fn poll(&mut self, now_unix: f64) -> Option<CounterSet> {
        if !self.started {
            self.started = true;
            self.stats.last_success_unix = now_unix;
        }
        let forced = self.hangup.swap(false, Ordering::AcqRel);
        if forced {
            info!(file = %self.path.display(), "SIGHUP: re-reading the counters file");
        }
        let current = match FileStamp::of(&self.path) {
            Ok(s) => s,
            Err(e) => {
                let msg = format!(
                    "{}: cannot read counters file: {e}; keeping the counters in use",
                    self.path.display()
                );
                // A missing file is reported once, not on every tick.
                if forced || self.stamp.is_some() {
                    self.fail(&msg);
                }
                self.stamp = None;
                return None;
            }
        };
        if !forced && self.pending.is_none() && self.stamp.as_ref() == Some(&current) {
            return None;
        }
        self.stamp = Some(current);
        let bytes = match read_counters(&self.path) {
            Ok(b) => b,
            Err(e) => {
                // An I/O error may pass: read again next tick. A FIFO, a directory or an
                // oversized file stays what it is until the path changes (a new stamp).
                if matches!(e, ReadError::Io(_)) {
                    self.stamp = None;
                }
                self.pending = None;
                self.fail(&format!(
                    "{}: cannot read counters file: {e}; keeping the counters in use",
                    self.path.display()
                ));
                return None;
            }
        };
        if bytes == self.loaded {
            self.pending = None;
            if !self.stats.last_ok {
                // Back to the content in use: the broken version is gone.
                info!(file = %self.path.display(), "counters file is back to the set in use");
                self.stats.last_ok = true;
                self.last_bad = None;
                self.last_error = None;
            } else if forced {
                info!(file = %self.path.display(), "counters file unchanged");
            }
            return None;
        }
        if !forced && self.last_bad.as_deref() == Some(bytes.as_slice()) {
            return None;
        }
        let origin = self.path.display().to_string();
        let parsed = std::str::from_utf8(&bytes)
            .map_err(|e| format!("{origin}: {}", not_utf8(&bytes[..e.valid_up_to()])))
            .and_then(|text| parse_as(self.profile, &origin, text).map_err(|e| e.to_string()));
        match parsed {
            Ok(_) if !forced && self.pending.as_deref() != Some(bytes.as_slice()) => {
                // Changed since the last check: apply it once it has stopped changing.
                self.pending = Some(bytes);
                None
            }
            Ok(set) => {
                self.pending = None;
                self.last_error = None;
                info!(
                    file = %origin,
                    metrics = set.metrics().count(),
                    labels = set.labels().count(),
                    "counters reloaded; the new set applies from this tick"
                );
                for w in &set.warnings {
                    warn!("{w}");
                }
                self.loaded = bytes;
                self.last_bad = None;
                self.stats.last_ok = true;
                self.stats.successes += 1;
                self.stats.last_success_unix = now_unix;
                Some(set)
            }
            Err(e) => {
                self.pending = None;
                self.last_bad = Some(bytes);
                self.fail(&format!("{e}; keeping the counters in use"));
                None
            }
        }
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

    fn names(set: &CounterSet) -> Vec<String> {
        set.metrics().map(|r| r.name.clone()).collect()
    }

    #[test]
    fn unchanged_file_is_not_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, A).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(w.poll(10.0).is_none());
        assert!(w.poll(11.0).is_none());
        assert_eq!(w.stats().last_success_unix, 10.0);
        assert_eq!(w.stats().successes, 0);
        // Rewritten with the same bytes: a new stamp, but no reload.
        std::fs::remove_file(&p).unwrap();
        std::fs::write(&p, A).unwrap();
        assert!(w.poll(12.0).is_none());
        assert_eq!(w.stats().successes, 0);
        assert!(w.stats().last_ok);
    }

    #[test]
    fn changed_file_is_reloaded_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, A).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(w.poll(1.0).is_none());
        let tmp = dir.path().join("c.tmp");
        std::fs::write(&tmp, B).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        // Seen changed: applied at the next check if it has not changed again.
        assert!(w.poll(2.0).is_none());
        let set = w.poll(3.0).expect("reloaded");
        assert_eq!(
            names(&set),
            ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE"]
        );
        assert!(w.poll(4.0).is_none());
        assert_eq!(w.stats().successes, 1);
        assert_eq!(w.stats().last_success_unix, 3.0);
    }

    #[test]
    fn broken_file_keeps_old_set_and_recovers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, A).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(w.poll(1.0).is_none());
        std::fs::write(
            &p,
            "# ok\nDCGM_FI_DEV_GPU_TEMP, gauge, t\nNOT_A_FIELD, gauge, x\n",
        )
        .unwrap();
        assert!(w.poll(2.0).is_none());
        assert!(!w.stats().last_ok);
        assert_eq!(w.stats().failures, 1);
        // The same broken content is not counted again on the next ticks.
        assert!(w.poll(3.0).is_none());
        assert_eq!(w.stats().failures, 1);
        // Fixed: reloaded once it has settled.
        std::fs::write(&p, B).unwrap();
        assert!(w.poll(4.0).is_none());
        assert!(w.poll(5.0).is_some());
        assert!(w.stats().last_ok);
        assert_eq!(w.stats().last_success_unix, 5.0);
    }

    #[test]
    fn missing_file_is_a_failure_reported_once() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, A).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(w.poll(1.0).is_none());
        std::fs::remove_file(&p).unwrap();
        assert!(w.poll(2.0).is_none());
        assert!(w.poll(3.0).is_none());
        assert_eq!(w.stats().failures, 1);
        assert!(!w.stats().last_ok);
        // It comes back with the content in use: no reload, healthy again.
        std::fs::write(&p, A).unwrap();
        assert!(w.poll(4.0).is_none());
        assert!(w.stats().last_ok);
    }

    #[test]
    fn hangup_forces_a_read_even_with_an_unchanged_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, A).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(w.poll(1.0).is_none());
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
        assert!(w.poll(2.0).is_none(), "the stamp alone does not see it");
        w.hangup_flag().store(true, Ordering::Release);
        let set = w.poll(3.0).expect("SIGHUP re-reads");
        assert_eq!(set.rows[0].help, "TEMPERATURE");
    }

    #[test]
    fn empty_and_half_written_files_never_replace_the_set() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, A).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(w.poll(1.0).is_none());
        // Truncated to nothing (the first step of a plain `cp`): refused, logged once.
        std::fs::write(&p, "").unwrap();
        assert!(w.poll(2.0).is_none());
        assert!(w.poll(3.0).is_none());
        assert!(!w.stats().last_ok);
        assert_eq!(w.stats().failures, 1);
        // Half of B written: it parses, but it is still changing at the next check.
        let half = &B[..B.find('\n').unwrap() + 1];
        std::fs::write(&p, half).unwrap();
        assert!(w.poll(4.0).is_none());
        std::fs::write(&p, B).unwrap();
        assert!(w.poll(5.0).is_none(), "B seen for the first time");
        let set = w.poll(6.0).expect("B applied once settled");
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
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, A).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(w.poll(1.0).is_none());
        std::fs::write(
            &p,
            b"DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_POWER_USAGE, gauge, \xe9\n",
        )
        .unwrap();
        assert!(w.poll(2.0).is_none());
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
    fn a_fifo_or_a_directory_at_the_path_is_refused_once_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.csv");
        std::fs::write(&p, A).unwrap();
        let (mut w, _) = CountersFile::open(p.clone(), Profile::Native).unwrap();
        assert!(w.poll(1.0).is_none());
        std::fs::remove_file(&p).unwrap();
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&p)
                .status()
                .unwrap()
                .success()
        );
        assert!(w.poll(2.0).is_none(), "returns at once: no writer needed");
        assert!(w.poll(3.0).is_none());
        assert_eq!(w.stats().failures, 1, "the FIFO, logged once");
        std::fs::remove_file(&p).unwrap();
        std::fs::create_dir(&p).unwrap();
        for t in 4..10 {
            assert!(w.poll(f64::from(t)).is_none());
        }
        assert_eq!(w.stats().failures, 2, "the directory is logged once");
        let e = CountersFile::open(p.clone(), Profile::Native)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("not a regular file but a directory"), "{e}");
    }
}
