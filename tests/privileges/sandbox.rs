//! Running the exporter with fewer privileges: a private copy of the simulated library the
//! unprivileged user can read, `setpriv` arguments, and readers of `/proc/<pid>/status`, the
//! JSON log and the self-metrics.

use super::*;

// ---------------------------------------------------------------------------------------------
// Running the exporter with fewer privileges
// ---------------------------------------------------------------------------------------------

/// Who the exporter runs as.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Identity {
    /// uid/gid 65532, no supplementary groups, no capabilities.
    NonRoot,
    /// uid 0 with every capability dropped (bounding, inheritable, hence effective).
    RootWithoutCapabilities,
}

impl Identity {
    pub(crate) fn uid(self) -> u32 {
        match self {
            Identity::NonRoot => NONROOT,
            Identity::RootWithoutCapabilities => 0,
        }
    }
}

/// The fields of a `/proc/<pid>/status` line (`Uid:` → real, effective, saved, fs uid).
pub(crate) fn status_numbers(status: &str, key: &str) -> Vec<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} line in status:\n{status}"))
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

pub(crate) fn own_uid() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    status_numbers(&status, "Uid:")[0].parse().unwrap()
}

/// Whether the privilege tests can run here; panics when they cannot and skipping was not
/// asked for.
pub(crate) fn can_change_user(test: &str) -> bool {
    let root = own_uid() == 0;
    let setpriv = Command::new("setpriv")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if root && setpriv {
        return true;
    }
    let why = match (root, setpriv) {
        (false, _) => "the tests do not run as root, so they cannot change user",
        _ => "setpriv (util-linux) is not installed",
    };
    if std::env::var(SKIP_VAR).as_deref() == Ok("1") {
        eprintln!("\n*** SKIPPED {test}: {why} and {SKIP_VAR}=1 ***\n");
        return false;
    }
    panic!("{test}: {why}; run the tests as root with setpriv installed, or set {SKIP_VAR}=1");
}

/// A private directory the unprivileged user can read (tempdirs are 0700), holding the
/// simulated library, and the binary to run.
pub(crate) struct Sandbox {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) lib: PathBuf,
    pub(crate) bin: PathBuf,
}

impl Sandbox {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let lib = dir.path().join(gpu_exporter::sim::library::LIB_NAME);
        fs::copy(common::built_sim_lib(), &lib).unwrap();
        fs::set_permissions(&lib, fs::Permissions::from_mode(0o755)).unwrap();
        // The built binary, if the unprivileged user can reach it (a checkout under /root
        // cannot be); otherwise a copy.
        let reachable = Command::new("setpriv")
            .args(nonroot_args())
            .args(["--", "test", "-x", BIN])
            .status()
            .is_ok_and(|s| s.success());
        let bin = if reachable {
            PathBuf::from(BIN)
        } else {
            let copy = dir.path().join("gpu-exporter");
            fs::copy(BIN, &copy).unwrap();
            fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
            copy
        };
        Self { dir, lib, bin }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A directory inside the sandbox with `mode`.
    pub(crate) fn subdir(&self, name: &str, mode: u32) -> PathBuf {
        let p = self.path().join(name);
        fs::create_dir_all(&p).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    /// Starts the exporter as `who` on the simulated `a100-l4` node (two GPUs) with `args`,
    /// waits until `/ready` answers 200, and checks its identity.
    pub(crate) fn start(&self, who: Identity, args: &[&str]) -> Exporter {
        let mut setpriv = Command::new("setpriv");
        if who == Identity::NonRoot {
            setpriv.args(nonroot_args());
        }
        setpriv.args([
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
            "--",
        ]);
        let exporter = ExporterBuilder::wrapped(setpriv, &self.bin);
        let log = self
            .path()
            .join(format!("exporter-{}.log", exporter.port()));
        let ex = exporter
            .nvml_lib(&self.lib)
            .args(["-c", "200", "--log-format", "json"])
            .args(args)
            .env("NVML_SIM_SCENARIO", "a100-l4")
            .env("NODE_NAME", "privileges-test-node")
            .env_remove("RUST_LOG")
            .current_dir(self.path())
            .log_file(log)
            .scrape_deadline(Duration::from_secs(20))
            .start();
        assert_identity(&ex, who);
        ex
    }
}

pub(crate) fn nonroot_args() -> [String; 3] {
    [
        format!("--reuid={NONROOT}"),
        format!("--regid={NONROOT}"),
        "--clear-groups".to_owned(),
    ]
}

/// The running process has exactly the identity asked for: all four uids, no capability in
/// any set, no_new_privs.
pub(crate) fn assert_identity(ex: &Exporter, who: Identity) {
    let status = fs::read_to_string(format!("/proc/{}/status", ex.child.id())).unwrap();
    let uid = who.uid().to_string();
    assert_eq!(
        status_numbers(&status, "Uid:"),
        vec![uid.clone(); 4],
        "uids of the exporter run as {who:?}"
    );
    assert_eq!(status_numbers(&status, "Gid:"), vec![uid; 4], "gids");
    for caps in ["CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:"] {
        assert_eq!(
            status_numbers(&status, caps),
            vec!["0000000000000000".to_owned()],
            "{caps} of the exporter run as {who:?}"
        );
    }
    assert_eq!(status_numbers(&status, "NoNewPrivs:"), vec!["1".to_owned()]);
    if who == Identity::NonRoot {
        assert_eq!(status_numbers(&status, "Groups:"), Vec::<String>::new());
    }
}

/// The JSON log records (`--log-format json`).
pub(crate) fn log_records(ex: &Exporter) -> Vec<serde_json::Value> {
    ex.log()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The messages of the WARN records.
pub(crate) fn warnings(ex: &Exporter) -> Vec<(String, serde_json::Value)> {
    log_records(ex)
        .into_iter()
        .filter(|r| r["level"] == "WARN")
        .map(|r| {
            let msg = r["fields"]["message"].as_str().unwrap_or("").to_owned();
            (msg, r["fields"].clone())
        })
        .collect()
}

/// The value of the self-metric line `name{source="<source>"}`, if present.
pub(crate) fn source_metric(text: &str, name: &str, source: &str) -> Option<f64> {
    series(text, name)
        .into_iter()
        .find(|l| label_opt(l, "source") == Some(source))
        .map(value)
}

/// Value of an unlabelled series `name`.
pub(crate) fn plain_metric(text: &str, name: &str) -> Option<f64> {
    let prefix = format!("{name} ");
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .map(|l| l[prefix.len()..].trim().parse().unwrap())
}

pub(crate) fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}
