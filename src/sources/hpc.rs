//! HPC job mapping: dcgm-exporter's `--hpc-job-mapping-dir`.
//!
//! A batch scheduler (a Slurm prolog, say) writes one file per GPU into a directory: the file
//! is named after the GPU index, `<gpu>`, or after a MIG GPU instance, `<gpu>.<gi>`, and each
//! non-empty line of it (whitespace trimmed) is the ID of a job using that GPU or instance. The
//! exporter then writes every metric of a mapped GPU or instance once per job, with the label
//! `hpc_job="<id>"`.
//!
//! [`read_dir`] reads the directory once; [`HpcWatcher`] keeps the result between readings and
//! re-reads only when something in the directory changed (or every 30 s at the latest);
//! [`HpcSource`] runs a watcher on its own thread, checking every second, and publishes the
//! jobs, so the sampler thread never touches the file system for them.
//!
//! Rules, as dcgm-exporter's:
//! - a file name must match `^\d+(\.\d+)?$`; other names are skipped with a warning;
//! - names starting with `.` are skipped silently (a ConfigMap volume's `..data` and
//!   `..<timestamp>` entries); symbolic links are followed;
//! - an unreadable or non-UTF-8 file is skipped with a warning;
//! - a job ID listed twice in one file counts once (first position kept).
//!
//! Unlike dcgm-exporter, a job file is read only if it is a regular file (after symlinks; the
//! open never blocks, so a FIFO is skipped, not waited on) of at most [`MAX_JOB_FILE`] bytes,
//! and file names, which whoever writes the directory chooses, are quoted and escaped in
//! warnings (Rust's `{:?}`), so a name holding a newline or a terminal escape cannot forge a
//! log line.
//!
//! A MIG instance with no file of its own (or an empty one) takes the jobs of its parent GPU's
//! file: a job that holds the whole GPU holds its instances.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use crate::base::bounded_read::read_regular;

/// The largest job file read: a few thousand job IDs for one GPU (each job copies every series
/// of the GPU). A larger file is skipped with a warning.
pub const MAX_JOB_FILE: u64 = 64 << 10;

/// Which entity a job file names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobTarget {
    /// A physical GPU by NVML index: a file named `<gpu>`.
    Gpu(u32),
    /// A MIG GPU instance: a file named `<gpu>.<gi>`.
    Instance {
        /// The parent GPU's NVML index.
        gpu: u32,
        /// The GPU instance id (as in the `GPU_I_ID` label).
        gpu_instance: u32,
    },
}

impl JobTarget {
    /// Parses a job file name, `<gpu>` or `<gpu>.<gi>` (ASCII digits only); `None` otherwise.
    pub fn parse(name: &str) -> Option<Self> {
        fn number(s: &str) -> Option<u32> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            s.parse().ok()
        }
        match name.split_once('.') {
            None => Some(Self::Gpu(number(name)?)),
            Some((gpu, gi)) => Some(Self::Instance {
                gpu: number(gpu)?,
                gpu_instance: number(gi)?,
            }),
        }
    }
}

/// Jobs per target, read from the directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HpcJobs {
    /// Only targets with at least one job.
    jobs: BTreeMap<JobTarget, Vec<String>>,
    files: usize,
}

impl HpcJobs {
    /// Job IDs for a physical GPU (`Gpu(gpu)`).
    pub fn for_gpu(&self, gpu: u32) -> &[String] {
        self.get(JobTarget::Gpu(gpu))
    }

    /// Job IDs for a MIG instance: its own file `<gpu>.<gi>`; if there is none (or it lists no
    /// job), those of the parent GPU file `<gpu>` (a job holding the whole GPU holds its
    /// instances).
    pub fn for_instance(&self, gpu: u32, gpu_instance: u32) -> &[String] {
        let own = self.get(JobTarget::Instance { gpu, gpu_instance });
        if own.is_empty() {
            self.for_gpu(gpu)
        } else {
            own
        }
    }

    /// Whether no GPU or instance has a job.
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Number of job files read.
    pub fn files(&self) -> usize {
        self.files
    }

    /// Every target with its jobs, in target order.
    pub fn iter(&self) -> impl Iterator<Item = (JobTarget, &[String])> {
        self.jobs.iter().map(|(t, j)| (*t, j.as_slice()))
    }

    fn get(&self, target: JobTarget) -> &[String] {
        self.jobs.get(&target).map_or(&[], Vec::as_slice)
    }
}

/// Error reading the directory itself (missing, not a directory, unreadable).
#[derive(Debug, thiserror::Error)]
pub enum HpcError {
    /// The directory could not be listed (missing, or no permission).
    #[error("HPC job mapping directory {}: {source}", path.display())]
    Read {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The path exists but is not a directory.
    #[error("HPC job mapping directory {}: not a directory", path.display())]
    NotADirectory {
        /// The path.
        path: PathBuf,
    },
}

/// Reads the directory. Problems that do not stop the reading (a file name that is not
/// `<gpu>[.<gi>]`, an unreadable, special or oversized file, a non-UTF-8 file) are returned in
/// the warnings, each naming the file path (quoted and escaped) and the reason; duplicate job
/// ids in one file are kept once (first order preserved).
pub fn read_dir(dir: &Path) -> Result<(HpcJobs, Vec<String>), HpcError> {
    let read_err = |source| HpcError::Read {
        path: dir.to_path_buf(),
        source,
    };
    let meta = std::fs::metadata(dir).map_err(read_err)?;
    if !meta.is_dir() {
        return Err(HpcError::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    let mut entries: Vec<(String, PathBuf)> = Vec::new();
    let mut warnings = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_err)? {
        let entry = entry.map_err(read_err)?;
        let path = entry.path();
        match entry.file_name().into_string() {
            Ok(name) if name.starts_with('.') => {}
            Ok(name) => entries.push((name, path)),
            Err(_) => warnings.push(format!(
                "{path:?}: file name is not <gpu> or <gpu>.<gpu_instance>, skipped"
            )),
        }
    }
    entries.sort();

    let mut jobs = HpcJobs::default();
    for (name, path) in entries {
        let Some(target) = JobTarget::parse(&name) else {
            warnings.push(format!(
                "{path:?}: file name is not <gpu> or <gpu>.<gpu_instance>, skipped"
            ));
            continue;
        };
        let bytes = match read_regular(&path, MAX_JOB_FILE) {
            Ok(bytes) => bytes,
            Err(e) => {
                warnings.push(format!("{path:?}: {e}, skipped"));
                continue;
            }
        };
        let Ok(text) = String::from_utf8(bytes) else {
            warnings.push(format!("{path:?}: not valid UTF-8, skipped"));
            continue;
        };
        jobs.files += 1;
        let list = jobs.jobs.entry(target).or_default();
        if !list.is_empty() {
            // `0` and `00` name the same GPU: the second adds to the first.
            warnings.push(format!(
                "{path:?}: names the same GPU or instance as another file; job lists merged"
            ));
        }
        for line in text.lines() {
            let job = line.trim();
            if !job.is_empty() && !list.iter().any(|j| j == job) {
                list.push(job.to_string());
            }
        }
    }
    jobs.jobs.retain(|_, list| !list.is_empty());
    Ok((jobs, warnings))
}

/// How long [`HpcWatcher`] keeps a reading when nothing seems to have changed.
pub const DEFAULT_MAX_AGE: Duration = Duration::from_secs(30);

/// What the watcher compares between ticks: the directory's mtime and each entry's name, mtime
/// and size (through symbolic links).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Fingerprint {
    dir_mtime: Option<SystemTime>,
    entries: Vec<(std::ffi::OsString, Option<SystemTime>, u64)>,
}

fn fingerprint(dir: &Path) -> std::io::Result<Fingerprint> {
    let dir_mtime = std::fs::metadata(dir)?.modified().ok();
    let mut entries = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = std::fs::metadata(entry.path()).ok();
        let mtime = meta.as_ref().and_then(|m| m.modified().ok());
        let len = meta.as_ref().map_or(0, |m| m.len());
        entries.push((entry.file_name(), mtime, len));
    }
    entries.sort();
    Ok(Fingerprint { dir_mtime, entries })
}

/// Caches the directory between ticks: re-reads only when the directory's or any file's mtime
/// (or size, or the set of names) changed, or every `max_age` (30 s by default) at the latest.
#[derive(Debug)]
pub struct HpcWatcher {
    dir: PathBuf,
    max_age: Duration,
    jobs: HpcJobs,
    /// The fingerprint and time of the last good reading; `None` forces a re-read.
    last: Option<(Fingerprint, Instant)>,
    errors: u64,
    /// Messages logged at the last reading: each is logged again only after it went away.
    logged: HashSet<String>,
}

impl HpcWatcher {
    /// A watcher on `dir`; nothing is read until the first [`HpcWatcher::jobs`].
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            max_age: DEFAULT_MAX_AGE,
            jobs: HpcJobs::default(),
            last: None,
            errors: 0,
            logged: HashSet::new(),
        }
    }

    /// The same watcher, re-reading at least every `max_age` instead of every 30 s.
    pub fn with_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// The watched directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Current jobs; re-reads if needed. Warnings and errors are logged with `tracing::warn!`
    /// once per distinct message (not every tick); on error it returns empty jobs and counts
    /// the error.
    pub fn jobs(&mut self) -> &HpcJobs {
        let now = Instant::now();
        let current = fingerprint(&self.dir);
        if let (Ok(fp), Some((last_fp, at))) = (&current, &self.last)
            && fp == last_fp
            && now.duration_since(*at) < self.max_age
        {
            return &self.jobs;
        }
        match current.map_err(|source| HpcError::Read {
            path: self.dir.clone(),
            source,
        }) {
            Ok(fp) => match read_dir(&self.dir) {
                Ok((jobs, warnings)) => {
                    self.jobs = jobs;
                    self.last = Some((fp, now));
                    self.log(warnings);
                }
                Err(e) => self.fail(e),
            },
            Err(e) => self.fail(e),
        }
        &self.jobs
    }

    /// Errors so far (directory unreadable).
    pub fn errors(&self) -> u64 {
        self.errors
    }

    fn fail(&mut self, error: HpcError) {
        self.errors += 1;
        self.jobs = HpcJobs::default();
        self.last = None;
        self.log(vec![error.to_string()]);
    }

    fn log(&mut self, messages: Vec<String>) {
        let messages: HashSet<String> = messages.into_iter().collect();
        for message in &messages {
            if !self.logged.contains(message) {
                tracing::warn!("{message}");
            }
        }
        self.logged = messages;
    }
}

/// How often [`HpcSource`]'s thread checks the directory for changes.
pub const CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// What the background thread publishes.
#[derive(Debug, Default)]
struct LatestJobs {
    jobs: arc_swap::ArcSwap<HpcJobs>,
    errors: std::sync::atomic::AtomicU64,
    /// Whether the last check of the directory succeeded.
    ok: std::sync::atomic::AtomicBool,
}

/// An [`HpcWatcher`] on a thread of its own: the directory is checked every
/// [`CHECK_INTERVAL`] (read again only when it changed) and the latest jobs are published for
/// [`HpcSource::jobs`]. The thread ends within one interval after the source is dropped.
#[derive(Debug)]
pub struct HpcSource {
    dir: PathBuf,
    shared: std::sync::Arc<LatestJobs>,
}

impl HpcSource {
    /// Reads `dir` once now (so the first tick already sees the jobs), then starts the thread.
    pub fn spawn(dir: PathBuf, interval: Duration) -> std::io::Result<Self> {
        use std::sync::atomic::Ordering;
        let mut watcher = HpcWatcher::new(dir.clone());
        let shared = std::sync::Arc::new(LatestJobs::default());
        shared
            .jobs
            .store(std::sync::Arc::new(watcher.jobs().clone()));
        shared.errors.store(watcher.errors(), Ordering::Relaxed);
        shared.ok.store(watcher.errors() == 0, Ordering::Relaxed);
        let weak = std::sync::Arc::downgrade(&shared);
        std::thread::Builder::new()
            .name("hpc-jobs".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(interval);
                    let Some(shared) = weak.upgrade() else { return };
                    let before = watcher.errors();
                    let jobs = watcher.jobs();
                    if **shared.jobs.load() != *jobs {
                        shared.jobs.store(std::sync::Arc::new(jobs.clone()));
                    }
                    shared.errors.store(watcher.errors(), Ordering::Relaxed);
                    shared
                        .ok
                        .store(watcher.errors() == before, Ordering::Relaxed);
                }
            })?;
        Ok(Self { dir, shared })
    }

    /// The latest jobs (empty while the directory cannot be read).
    pub fn jobs(&self) -> std::sync::Arc<HpcJobs> {
        self.shared.jobs.load_full()
    }

    /// Failed readings so far.
    pub fn errors(&self) -> u64 {
        self.shared
            .errors
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The watched directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The source's state in the form every source reports: up while the last check of the
    /// directory succeeded.
    pub fn health(&self) -> crate::sources::health::Health {
        use std::sync::atomic::Ordering;
        let up = self.shared.ok.load(Ordering::Relaxed);
        crate::sources::health::Health {
            up,
            last_success_unix: None,
            errors: self.errors(),
            last_error: (!up).then(|| format!("cannot read {}", self.dir.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn jobs(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn set_mtime(path: &Path, secs: u64) {
        let file = fs::File::options().write(true).open(path).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
            .unwrap();
    }

    #[test]
    fn parses_names() {
        assert_eq!(JobTarget::parse("0"), Some(JobTarget::Gpu(0)));
        assert_eq!(JobTarget::parse("12"), Some(JobTarget::Gpu(12)));
        assert_eq!(
            JobTarget::parse("2.3"),
            Some(JobTarget::Instance {
                gpu: 2,
                gpu_instance: 3
            })
        );
        for bad in [
            "",
            "a",
            "1.",
            ".1",
            "1.2.3",
            "+1",
            "-1",
            "1 ",
            "gpu0",
            "99999999999",
        ] {
            assert_eq!(JobTarget::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn gpu_and_instance_files() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("0"), "job-1\njob-2\n").unwrap();
        fs::write(tmp.path().join("1.3"), "job-3").unwrap();
        let (got, warnings) = read_dir(tmp.path()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(got.files(), 2);
        assert!(!got.is_empty());
        assert_eq!(got.for_gpu(0), jobs(&["job-1", "job-2"]));
        assert_eq!(got.for_gpu(1), jobs(&[]));
        assert_eq!(got.for_instance(1, 3), jobs(&["job-3"]));
        assert_eq!(got.for_instance(1, 4), jobs(&[]));
        assert_eq!(got.for_gpu(2), jobs(&[]));
        assert_eq!(got.iter().count(), 2);
    }

    #[test]
    fn instance_falls_back_to_parent() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("0"), "whole-gpu\n").unwrap();
        fs::write(tmp.path().join("0.1"), "own\n").unwrap();
        fs::write(tmp.path().join("0.2"), "\n  \n").unwrap();
        let (got, _) = read_dir(tmp.path()).unwrap();
        assert_eq!(got.files(), 3);
        assert_eq!(got.for_instance(0, 1), jobs(&["own"]));
        assert_eq!(got.for_instance(0, 2), jobs(&["whole-gpu"]));
        assert_eq!(got.for_instance(0, 7), jobs(&["whole-gpu"]));
        assert_eq!(got.for_instance(1, 1), jobs(&[]));
    }

    #[test]
    fn blank_lines_whitespace_and_duplicates() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("3"), "\n  a  \r\n\tb\n\na\n  \nc").unwrap();
        fs::write(tmp.path().join("4"), "").unwrap();
        let (got, warnings) = read_dir(tmp.path()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(got.for_gpu(3), jobs(&["a", "b", "c"]));
        assert_eq!(got.for_gpu(4), jobs(&[]));
        assert_eq!(got.files(), 2);
    }

    #[test]
    fn bad_names_warned_hidden_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("0"), "j").unwrap();
        fs::write(tmp.path().join("gpu1"), "j").unwrap();
        fs::write(tmp.path().join("1.x"), "j").unwrap();
        fs::write(tmp.path().join(".hidden"), "j").unwrap();
        fs::create_dir(tmp.path().join("..data")).unwrap();
        fs::create_dir(tmp.path().join("2")).unwrap();
        fs::write(tmp.path().join("5"), [0xff, 0xfe, b'\n']).unwrap();
        let (got, warnings) = read_dir(tmp.path()).unwrap();
        assert_eq!(got.files(), 1);
        assert_eq!(got.for_gpu(0), jobs(&["j"]));
        assert_eq!(warnings.len(), 4, "{warnings:?}");
        let has = |name: &str, why: &str| {
            let path = tmp.path().join(name).display().to_string();
            warnings
                .iter()
                .any(|w| w.contains(&path) && w.contains(why))
        };
        assert!(has("gpu1", "file name"), "{warnings:?}");
        assert!(has("1.x", "file name"), "{warnings:?}");
        assert!(has("2", "not a regular file"), "{warnings:?}");
        assert!(has("5", "UTF-8"), "{warnings:?}");
        assert!(
            !warnings
                .iter()
                .any(|w| w.contains("hidden") || w.contains("..data"))
        );
    }

    /// A FIFO is skipped at once (a blocking open would wait for a writer forever), and so is a
    /// file over the limit; the other files are read.
    #[test]
    fn fifos_and_oversized_files_are_skipped_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("0"), "j\n").unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(tmp.path().join("1"))
            .status()
            .unwrap();
        assert!(status.success());
        let big = "x\n".repeat(MAX_JOB_FILE as usize / 2 + 1);
        fs::write(tmp.path().join("2"), &big).unwrap();
        fs::write(tmp.path().join("3"), &big[..MAX_JOB_FILE as usize]).unwrap();
        let (got, warnings) = read_dir(tmp.path()).unwrap();
        assert_eq!(got.for_gpu(0), jobs(&["j"]));
        assert_eq!(got.for_gpu(3), jobs(&["x"]), "a file at the limit is read");
        assert_eq!(got.files(), 2);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].contains("/1\"") && warnings[0].contains("not a regular file but a FIFO"),
            "{warnings:?}"
        );
        assert!(
            warnings[1].contains("/2\"") && warnings[1].contains("over the 65536-byte limit"),
            "{warnings:?}"
        );
    }

    /// File names come from whoever writes the directory: one holding a newline or a terminal
    /// escape is quoted and escaped in the warning, never written raw.
    #[test]
    fn file_names_are_escaped_in_warnings() {
        let tmp = tempfile::tempdir().unwrap();
        let evil = "7\n2026-01-01T00:00:00Z ERROR forged line \u{1b}[31mred";
        fs::write(tmp.path().join(evil), "j\n").unwrap();
        let bad_utf8 = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"9\xff\n");
        fs::write(tmp.path().join(bad_utf8), "j\n").unwrap();
        let (got, warnings) = read_dir(tmp.path()).unwrap();
        assert!(got.is_empty());
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        for w in &warnings {
            assert!(!w.contains('\n') && !w.contains('\u{1b}'), "raw: {w:?}");
            assert!(w.contains("file name is not <gpu>"), "{w}");
        }
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("7\\n2026-01-01T00:00:00Z ERROR forged line \\u{1b}[31mred\"")),
            "{warnings:?}"
        );
        assert!(
            warnings.iter().any(|w| w.contains("9\\xFF\\n\"")),
            "{warnings:?}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn configmap_symlinks_are_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("..2024_01_01");
        fs::create_dir(&data).unwrap();
        fs::write(data.join("0"), "cm-job\n").unwrap();
        std::os::unix::fs::symlink("..2024_01_01", tmp.path().join("..data")).unwrap();
        std::os::unix::fs::symlink("..data/0", tmp.path().join("0")).unwrap();
        let (got, warnings) = read_dir(tmp.path()).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(got.for_gpu(0), jobs(&["cm-job"]));
    }

    #[test]
    fn missing_dir_and_file_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("nope");
        let err = read_dir(&missing).unwrap_err();
        assert!(matches!(err, HpcError::Read { .. }));
        assert!(err.to_string().contains(&missing.display().to_string()));

        let file = tmp.path().join("file");
        fs::write(&file, "x").unwrap();
        let err = read_dir(&file).unwrap_err();
        assert!(matches!(err, HpcError::NotADirectory { .. }));
        assert!(err.to_string().contains(&file.display().to_string()));
    }

    #[test]
    fn fixture_dir() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hpc");
        let (got, warnings) = read_dir(&dir).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(got.files(), 3);
        assert_eq!(got.for_gpu(0), jobs(&["slurm-1001"]));
        assert_eq!(got.for_gpu(1), jobs(&["slurm-1002", "slurm-1003"]));
        assert_eq!(got.for_instance(2, 3), jobs(&["slurm-1004"]));
        assert_eq!(got.for_instance(1, 5), jobs(&["slurm-1002", "slurm-1003"]));
    }

    #[test]
    fn watcher_rereads_on_mtime_change_only() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("0");
        fs::write(&file, "job-a\n").unwrap();
        set_mtime(&file, 1_000);
        let mut watcher = HpcWatcher::new(tmp.path().to_path_buf());
        assert_eq!(watcher.dir(), tmp.path());
        assert_eq!(watcher.jobs().for_gpu(0), jobs(&["job-a"]));

        // Same size, same mtime: the cached reading stands.
        fs::write(&file, "job-b\n").unwrap();
        set_mtime(&file, 1_000);
        assert_eq!(watcher.jobs().for_gpu(0), jobs(&["job-a"]));

        // A new mtime: re-read.
        set_mtime(&file, 2_000);
        assert_eq!(watcher.jobs().for_gpu(0), jobs(&["job-b"]));

        // A new file (the directory changes): re-read.
        fs::write(tmp.path().join("1"), "job-c\n").unwrap();
        assert_eq!(watcher.jobs().for_gpu(1), jobs(&["job-c"]));
        assert_eq!(watcher.errors(), 0);
    }

    #[test]
    fn watcher_rereads_after_max_age() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("0");
        fs::write(&file, "job-a\n").unwrap();
        set_mtime(&file, 1_000);
        let mut watcher = HpcWatcher::new(tmp.path().to_path_buf()).with_max_age(Duration::ZERO);
        assert_eq!(watcher.jobs().for_gpu(0), jobs(&["job-a"]));
        fs::write(&file, "job-b\n").unwrap();
        set_mtime(&file, 1_000);
        assert_eq!(watcher.jobs().for_gpu(0), jobs(&["job-b"]));
    }

    #[test]
    fn watcher_counts_errors_and_recovers() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("jobs");
        let mut watcher = HpcWatcher::new(dir.clone());
        assert!(watcher.jobs().is_empty());
        assert!(watcher.jobs().is_empty());
        assert_eq!(watcher.errors(), 2);

        fs::create_dir(&dir).unwrap();
        fs::write(dir.join("0"), "j\n").unwrap();
        assert_eq!(watcher.jobs().for_gpu(0), jobs(&["j"]));

        fs::remove_file(dir.join("0")).unwrap();
        fs::remove_dir(&dir).unwrap();
        assert!(watcher.jobs().is_empty());
        assert_eq!(watcher.errors(), 3);
    }

    #[test]
    fn source_reads_at_start_and_publishes_changes_from_its_thread() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("0"), "job-a\n").unwrap();
        let src = HpcSource::spawn(dir.path().to_owned(), Duration::from_millis(20)).unwrap();
        // Read before spawn returns: the first tick sees the jobs.
        assert_eq!(src.jobs().for_gpu(0), ["job-a".to_owned()]);
        fs::write(dir.path().join("1"), "job-b\n").unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while src.jobs().for_gpu(1).is_empty() {
            assert!(
                Instant::now() < deadline,
                "the thread never published job-b"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(src.jobs().for_gpu(1), ["job-b".to_owned()]);
        assert_eq!(src.errors(), 0);
        assert!(src.health().up);
    }

    #[test]
    fn source_counts_a_missing_directory_as_errors() {
        let src = HpcSource::spawn(
            "/nonexistent/gpu-exporter-hpc".into(),
            Duration::from_millis(20),
        )
        .unwrap();
        assert!(src.errors() >= 1);
        assert!(src.jobs().is_empty());
        let h = src.health();
        assert!(!h.up);
        assert!(
            h.last_error
                .is_some_and(|e| e.contains("/nonexistent/gpu-exporter-hpc"))
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while src.errors() < 2 {
            assert!(Instant::now() < deadline, "the thread never retried");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
