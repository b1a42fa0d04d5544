//! Least privilege, shown on the real binary, and the container image's Dockerfile checked
//! without a container engine (docs/least-privilege.md, docs/container-image.md).
//!
//! The exporter runs under `setpriv`, either as uid/gid 65532 with no capabilities (the image's
//! user) or as uid 0 with every capability dropped (what the Helm chart runs when pod mapping
//! is on), always with `no_new_privs`. Each test reads the running exporter's
//! `/proc/<pid>/status`, so none can pass with more privilege than it claims. It loads the
//! simulated NVML library through `--nvml-lib`, the path a real node takes, from a private
//! directory that the unprivileged user can read.
//!
//! Changing user needs root. Where the tests do not run as root, or `setpriv` is missing, the
//! privilege tests fail, unless `GPU_EXPORTER_SKIP_PRIVILEGE_TESTS=1` says to skip them. The
//! Dockerfile and linking checks need neither.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{BIN, Exporter, ExporterBuilder, label_opt, series, value};
use gpu_exporter::sim::kubelet::FakeKubelet;
use gpu_exporter::sources::kubelet::client::{ContainerDevices, KubeletView, PodDevices};

const ROOT_DIR: &str = env!("CARGO_MANIFEST_DIR");
/// The image's user and group (Dockerfile `USER`), and the chart's `runAsUser` without pod
/// mapping.
const NONROOT: u32 = 65532;
/// The entrypoint the Helm chart relies on.
const ENTRYPOINT: &str = "/usr/bin/gpu-exporter";
const SKIP_VAR: &str = "GPU_EXPORTER_SKIP_PRIVILEGE_TESTS";

// ---------------------------------------------------------------------------------------------
// Running the exporter with fewer privileges
// ---------------------------------------------------------------------------------------------

/// Who the exporter runs as.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Identity {
    /// uid/gid 65532, no supplementary groups, no capabilities.
    NonRoot,
    /// uid 0 with every capability dropped (bounding, inheritable, hence effective).
    RootWithoutCapabilities,
}

impl Identity {
    fn uid(self) -> u32 {
        match self {
            Identity::NonRoot => NONROOT,
            Identity::RootWithoutCapabilities => 0,
        }
    }
}

/// The fields of a `/proc/<pid>/status` line (`Uid:` → real, effective, saved, fs uid).
fn status_numbers(status: &str, key: &str) -> Vec<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("no {key} line in status:\n{status}"))
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn own_uid() -> u32 {
    let status = fs::read_to_string("/proc/self/status").unwrap();
    status_numbers(&status, "Uid:")[0].parse().unwrap()
}

/// Whether the privilege tests can run here; panics when they cannot and skipping was not
/// asked for.
fn can_change_user(test: &str) -> bool {
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
struct Sandbox {
    dir: tempfile::TempDir,
    lib: PathBuf,
    bin: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
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

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A directory inside the sandbox with `mode`.
    fn subdir(&self, name: &str, mode: u32) -> PathBuf {
        let p = self.path().join(name);
        fs::create_dir_all(&p).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    /// Starts the exporter as `who` on the simulated `a100-l4` node (two GPUs) with `args`,
    /// waits until `/ready` answers 200, and checks its identity.
    fn start(&self, who: Identity, args: &[&str]) -> Exporter {
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

fn nonroot_args() -> [String; 3] {
    [
        format!("--reuid={NONROOT}"),
        format!("--regid={NONROOT}"),
        "--clear-groups".to_owned(),
    ]
}

/// The running process has exactly the identity asked for: all four uids, no capability in
/// any set, no_new_privs.
fn assert_identity(ex: &Exporter, who: Identity) {
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
fn log_records(ex: &Exporter) -> Vec<serde_json::Value> {
    ex.log()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// The messages of the WARN records.
fn warnings(ex: &Exporter) -> Vec<(String, serde_json::Value)> {
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
fn source_metric(text: &str, name: &str, source: &str) -> Option<f64> {
    series(text, name)
        .into_iter()
        .find(|l| label_opt(l, "source") == Some(source))
        .map(value)
}

/// Value of an unlabelled series `name`.
fn plain_metric(text: &str, name: &str) -> Option<f64> {
    let prefix = format!("{name} ");
    text.lines()
        .find(|l| l.starts_with(&prefix))
        .map(|l| l[prefix.len()..].trim().parse().unwrap())
}

fn tokio_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// The privilege tests
// ---------------------------------------------------------------------------------------------

/// NVML needs no privilege of its own: the exporter as uid 65532 with no capabilities becomes
/// ready and exports every GPU.
#[test]
fn nvml_works_as_non_root_without_capabilities() {
    if !can_change_user("nvml_works_as_non_root_without_capabilities") {
        return;
    }
    let sb = Sandbox::new();
    let ex = sb.start(Identity::NonRoot, &[]);
    let text = ex.metrics();
    assert_eq!(plain_metric(&text, "gpu_exporter_nvml_up"), Some(1.0));
    let temps = series(&text, "DCGM_FI_DEV_GPU_TEMP");
    let gpus: BTreeSet<_> = temps.iter().filter_map(|l| label_opt(l, "gpu")).collect();
    assert_eq!(
        gpus,
        BTreeSet::from(["0", "1"]),
        "both GPUs of the a100-l4 node:\n{text}"
    );
    assert!(
        temps.iter().all(|l| value(l) > 0.0),
        "temperatures read: {temps:?}"
    );
}

/// A pod-resources server in `dir`, its socket the way the kubelet leaves it: owned by root,
/// mode 0755. A pod holds GPU 0 (`nvidia0`, the device-node form of the ID).
fn kubelet(rt: &tokio::runtime::Runtime, dir: &Path) -> (FakeKubelet, PathBuf) {
    let socket = dir.join("kubelet.sock");
    let view = KubeletView {
        pods: vec![PodDevices {
            namespace: "ml".into(),
            name: "trainer-0".into(),
            containers: vec![ContainerDevices {
                name: "pytorch".into(),
                devices: vec![("nvidia.com/gpu".into(), vec!["nvidia0".into()])],
                claims: Vec::new(),
            }],
        }],
        allocatable: None,
    };
    let k = rt.block_on(FakeKubelet::start(&socket, view)).unwrap();
    fs::set_permissions(&socket, fs::Permissions::from_mode(0o755)).unwrap();
    let meta = fs::metadata(&socket).unwrap();
    assert_eq!(
        (meta.uid(), meta.mode() & 0o777),
        (0, 0o755),
        "socket as the kubelet creates it"
    );
    (k, socket)
}

fn kubelet_args(socket: &Path) -> Vec<String> {
    [
        "-k",
        "--pod-resources-kubelet-socket",
        socket.to_str().unwrap(),
        "--pod-resources-refresh-interval",
        "200",
        "--kubernetes-pod-metadata=false",
        "--kubernetes-process-metrics=false",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// A non-root exporter is refused by the kubelet socket: it says so in the log (naming the
/// socket and that uid 0 is needed), shows it in its self-metrics, never reaches the kubelet,
/// and keeps serving GPU metrics without pod labels.
fn assert_refused(ex: &Exporter, socket: &Path, kubelet: &FakeKubelet) {
    let text = ex.metrics_until("the kubelet error counted", |t| {
        source_metric(t, "gpu_exporter_pod_map_errors_total", "kubelet").is_some_and(|n| n >= 1.0)
    });
    assert_eq!(
        source_metric(&text, "gpu_exporter_pod_map_up", "kubelet"),
        Some(0.0)
    );
    let temps = series(&text, "DCGM_FI_DEV_GPU_TEMP");
    assert_eq!(temps.len(), 2, "GPU metrics still served:\n{text}");
    assert!(
        temps.iter().all(|l| label_opt(l, "pod").is_none()),
        "no pod label without the kubelet: {temps:?}"
    );
    assert_eq!(kubelet.lists(), 0, "no List call got through");
    let sock = socket.display().to_string();
    let warnings = warnings(ex);
    let refused = warnings
        .iter()
        .map(|(m, _)| m)
        .find(|m| m.contains(&sock))
        .unwrap_or_else(|| panic!("no warning names {sock}: {warnings:?}"));
    assert!(
        refused.contains("Permission denied") && refused.contains("permission denied:"),
        "the OS error and the hint: {refused}"
    );
    assert!(
        refused.contains("uid 0") && refused.contains("no capabilities"),
        "the warning says what to change: {refused}"
    );
}

/// Pod mapping needs uid 0 and nothing more. The kubelet's socket is owned by root with mode
/// 0755 (the kubelet does not chmod it; umask 022), and connecting to a unix socket needs
/// write permission on it: uid 65532 is refused, both on the socket (directory 0755) and on
/// the kubelet's own 0750 directory. uid 0 with every capability dropped (no
/// CAP_DAC_OVERRIDE) connects, as the owner.
#[test]
fn kubelet_socket_refuses_non_root_and_accepts_uid_0_without_capabilities() {
    if !can_change_user("kubelet_socket_refuses_non_root_and_accepts_uid_0_without_capabilities") {
        return;
    }
    let sb = Sandbox::new();
    let rt = tokio_runtime();
    let dir = sb.subdir("pod-resources", 0o755);
    let (kubelet, socket) = kubelet(&rt, &dir);
    let args = kubelet_args(&socket);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();

    // Refused by the socket's mode.
    {
        let ex = sb.start(Identity::NonRoot, &args);
        assert_refused(&ex, &socket, &kubelet);
    }

    // Refused by the directory, as the kubelet creates it (os.MkdirAll(dir, 0750)).
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o750)).unwrap();
    {
        let ex = sb.start(Identity::NonRoot, &args);
        assert_refused(&ex, &socket, &kubelet);
    }

    // uid 0 without any capability: connects, and the pod's labels reach GPU 0's series.
    let ex = sb.start(Identity::RootWithoutCapabilities, &args);
    let text = ex.metrics_until("the pod on GPU 0", |t| {
        series(t, "DCGM_FI_DEV_GPU_TEMP")
            .iter()
            .any(|l| label_opt(l, "gpu") == Some("0") && label_opt(l, "pod") == Some("trainer-0"))
    });
    assert_eq!(
        source_metric(&text, "gpu_exporter_pod_map_up", "kubelet"),
        Some(1.0)
    );
    assert!(kubelet.lists() >= 1);
    let sock = socket.display().to_string();
    assert!(
        warnings(&ex).iter().all(|(m, _)| !m.contains(&sock)),
        "no kubelet warning as uid 0: {:?}",
        warnings(&ex)
    );
}

/// Without hostPID the exporter's /proc holds none of the GPU processes' PIDs (NVML reports
/// host PIDs). It then reports their use without a pod, says why in the log (naming hostPID),
/// and marks the `processes` source down. A PID it can see is attributed (the control), and
/// reading `/proc/<pid>/cgroup` needs no privilege: the exporter runs as uid 65532.
#[test]
fn processes_outside_the_pid_namespace_are_reported_without_a_pod() {
    if !can_change_user("processes_outside_the_pid_namespace_are_reported_without_a_pod") {
        return;
    }
    let sb = Sandbox::new();
    // A container's /proc: its own init, plus (the control) one GPU process of GPU 0 in a
    // pod's cgroup. GPU 1's processes (52001, 52002 in scenarios/a100-l4.toml) are absent.
    let proc_root = sb.subdir("proc", 0o755);
    let pod_uid = "8f1c2a3b-4d5e-4f60-9a7b-1c2d3e4f5a6b";
    let cid = "a".repeat(64);
    for (pid, cgroup) in [
        ("1", "0::/\n".to_owned()),
        (
            "51001",
            format!(
                "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod{}.slice/cri-containerd-{cid}.scope\n",
                pod_uid.replace('-', "_")
            ),
        ),
    ] {
        let d = proc_root.join(pid);
        fs::create_dir(&d).unwrap();
        fs::set_permissions(&d, fs::Permissions::from_mode(0o555)).unwrap();
        fs::write(d.join("cgroup"), cgroup).unwrap();
        fs::set_permissions(d.join("cgroup"), fs::Permissions::from_mode(0o444)).unwrap();
    }
    let absent = sb.path().join("no-kubelet.sock");
    let ex = sb.start(
        Identity::NonRoot,
        &[
            "-k",
            "--pod-resources-kubelet-socket",
            absent.to_str().unwrap(),
            "--kubernetes-pod-metadata=false",
            "--kubernetes-process-metrics=true",
            "--proc-root",
            proc_root.to_str().unwrap(),
        ],
    );
    let text = ex.metrics_until("process series of both GPUs", |t| {
        let gpus: BTreeSet<_> = series(t, "gpu_container_processes")
            .iter()
            .filter_map(|l| label_opt(l, "gpu"))
            .collect();
        gpus.len() == 2
    });
    let procs = series(&text, "gpu_container_processes");
    let on = |gpu: &str| -> Vec<&str> {
        procs
            .iter()
            .copied()
            .filter(|l| label_opt(l, "gpu") == Some(gpu))
            .collect()
    };
    // GPU 0: its process is visible, so attributed to the pod its cgroup names.
    assert!(
        on("0")
            .iter()
            .any(|l| label_opt(l, "pod_uid") == Some(pod_uid)),
        "the visible PID is attributed: {procs:?}"
    );
    // GPU 1: its processes are not in this /proc, so reported, but without a pod.
    let gpu1 = on("1");
    assert!(!gpu1.is_empty());
    for l in &gpu1 {
        assert!(
            label_opt(l, "pod_uid").is_none() && label_opt(l, "pod").is_none(),
            "no pod for an invisible PID: {l}"
        );
        assert!(value(l) >= 1.0, "its processes are counted: {l}");
    }
    assert_eq!(
        source_metric(&text, "gpu_exporter_pod_map_up", "processes"),
        Some(0.0)
    );
    assert!(
        source_metric(&text, "gpu_exporter_pod_map_errors_total", "processes")
            .is_some_and(|n| n >= 1.0)
    );
    let root = proc_root.display().to_string();
    let warnings = warnings(&ex);
    assert!(
        warnings
            .iter()
            .any(|(m, f)| m.contains("hostPID") && f["root"].as_str() == Some(root.as_str())),
        "a warning names hostPID and the proc root {root}: {warnings:?}"
    );
}

/// Every library the binary loads at start is one that `gcr.io/distroless/cc` ships (glibc and
/// libgcc); NVML is opened with dlopen at run time, so it is not among them.
#[test]
fn binary_links_only_glibc_and_libgcc() {
    let out = Command::new("ldd").arg(BIN).output().unwrap();
    assert!(out.status.success(), "ldd {BIN}: {out:?}");
    let allowed = [
        "linux-vdso.so.1",
        "libc.so.6",
        "libm.so.6",
        "libgcc_s.so.1",
        "libpthread.so.0",
        "libdl.so.2",
        "librt.so.1",
        "ld-linux-x86-64.so.2",
        "ld-linux-aarch64.so.1",
    ];
    let text = String::from_utf8_lossy(&out.stdout);
    let libs: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(|l| l.rsplit('/').next().unwrap_or(l))
        .collect();
    assert!(libs.contains(&"libc.so.6"), "ldd output:\n{text}");
    let extra: Vec<_> = libs.iter().filter(|l| !allowed.contains(l)).collect();
    assert!(
        extra.is_empty(),
        "libraries distroless/cc does not ship: {extra:?}"
    );
    assert!(!libs.iter().any(|l| l.contains("nvidia-ml")));
}

// ---------------------------------------------------------------------------------------------
// The Dockerfile, checked without building it
// ---------------------------------------------------------------------------------------------

/// One instruction, continuation lines joined, with the line it starts on.
#[derive(Debug, Clone)]
struct Instr {
    line: usize,
    keyword: String,
    args: String,
}

/// One build stage.
#[derive(Debug)]
struct Stage {
    /// The base image, build arguments substituted.
    base: String,
    name: Option<String>,
    instrs: Vec<Instr>,
    /// The stage's build arguments (declared in the stage) with their defaults.
    args: BTreeMap<String, String>,
}

impl Stage {
    fn all(&self, keyword: &str) -> impl Iterator<Item = &Instr> {
        self.instrs.iter().filter(move |i| i.keyword == keyword)
    }

    fn subst(&self, s: &str) -> String {
        substitute(s, &self.args)
    }
}

/// A parsed COPY: flags, sources, destination.
#[derive(Debug)]
struct Copy {
    line: usize,
    from: Option<String>,
    sources: Vec<String>,
    dest: String,
}

impl Copy {
    /// Where source `src` lands.
    fn target_of(&self, src: &str) -> String {
        if self.dest.ends_with('/') {
            format!("{}{}", self.dest, src.rsplit('/').next().unwrap_or(src))
        } else {
            self.dest.clone()
        }
    }
}

fn read(rel: &str) -> String {
    fs::read_to_string(Path::new(ROOT_DIR).join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// Instructions of a Dockerfile: comments and blank lines dropped, `\` continuations joined.
fn instructions(text: &str) -> Vec<Instr> {
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (n, raw) in text.lines().enumerate() {
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (body, continues) = match trimmed.strip_suffix('\\') {
            Some(b) => (b.trim_end(), true),
            None => (trimmed, false),
        };
        let (line, mut acc) = pending.take().unwrap_or((n + 1, String::new()));
        if !acc.is_empty() {
            acc.push(' ');
        }
        acc.push_str(body);
        if continues {
            pending = Some((line, acc));
            continue;
        }
        let (kw, rest) = acc.split_once(char::is_whitespace).unwrap_or((&acc, ""));
        out.push(Instr {
            line,
            keyword: kw.to_ascii_uppercase(),
            args: rest.trim().to_owned(),
        });
    }
    assert!(
        pending.is_none(),
        "the Dockerfile ends inside a continuation"
    );
    out
}

/// `${NAME}` and `$NAME` replaced from `vars`; an unknown name fails the test.
fn substitute(s: &str, vars: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, tail) = if let Some(b) = after.strip_prefix('{') {
            let end = b.find('}').expect("closed ${");
            (&b[..end], &b[end + 1..])
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], &after[end..])
        };
        let v = vars
            .get(name)
            .unwrap_or_else(|| panic!("${name} is not a build argument with a default in {s}"));
        out.push_str(v);
        rest = tail;
    }
    out.push_str(rest);
    out
}

/// `NAME=default` of an ARG line (no default: inherits the global one).
fn arg_decl(args: &str, global: &BTreeMap<String, String>) -> (String, String) {
    match args.split_once('=') {
        Some((k, v)) => (k.trim().to_owned(), v.trim().trim_matches('"').to_owned()),
        None => {
            let k = args.trim().to_owned();
            let v = global.get(&k).cloned().unwrap_or_default();
            (k, v)
        }
    }
}

/// The stages of the repository's Dockerfile.
fn stages() -> Vec<Stage> {
    let mut global = BTreeMap::new();
    let mut stages: Vec<Stage> = Vec::new();
    for i in instructions(&read("Dockerfile")) {
        match (i.keyword.as_str(), stages.last_mut()) {
            ("ARG", None) => {
                let (k, v) = arg_decl(&i.args, &global);
                global.insert(k, v);
            }
            ("FROM", _) => {
                let words: Vec<&str> = i
                    .args
                    .split_whitespace()
                    .filter(|w| !w.starts_with("--"))
                    .collect();
                let name = match words.as_slice() {
                    [_] => None,
                    [_, kw, name] if kw.eq_ignore_ascii_case("as") => Some((*name).to_owned()),
                    _ => panic!("Dockerfile:{}: FROM {}", i.line, i.args),
                };
                stages.push(Stage {
                    base: substitute(words[0], &global),
                    name,
                    instrs: Vec::new(),
                    args: BTreeMap::new(),
                });
            }
            ("ARG", Some(stage)) => {
                let (k, v) = arg_decl(&i.args, &global);
                stage.args.insert(k, v);
                stage.instrs.push(i);
            }
            (_, Some(stage)) => stage.instrs.push(i),
            (kw, None) => panic!("Dockerfile:{}: {kw} before the first FROM", i.line),
        }
    }
    assert!(
        stages.len() >= 2,
        "a multi-stage build: {} stage(s)",
        stages.len()
    );
    stages
}

/// A JSON array argument (exec form), or `None` for the shell form.
fn json_array(args: &str) -> Option<Vec<String>> {
    args.trim_start()
        .starts_with('[')
        .then(|| serde_json::from_str(args).expect("a JSON array"))
}

fn copies(stage: &Stage) -> Vec<Copy> {
    stage
        .all("COPY")
        .map(|i| {
            let mut from = None;
            let mut words: Vec<String> = Vec::new();
            let args = stage.subst(&i.args);
            let mut rest = args.as_str();
            while let Some(flag) = rest.strip_prefix("--") {
                let (f, tail) = flag.split_once(char::is_whitespace).unwrap_or((flag, ""));
                if let Some(v) = f.strip_prefix("from=") {
                    from = Some(v.to_owned());
                }
                rest = tail.trim_start();
            }
            match json_array(rest) {
                Some(v) => words.extend(v),
                None => words.extend(rest.split_whitespace().map(str::to_owned)),
            }
            assert!(words.len() >= 2, "Dockerfile:{}: COPY {}", i.line, i.args);
            let dest = words.pop().unwrap();
            Copy {
                line: i.line,
                from,
                sources: words,
                dest,
            }
        })
        .collect()
}

/// `.dockerignore` as docker applies it: patterns in order, the last match wins, `!` re-
/// includes; a pattern that matches a parent directory matches everything below it.
struct DockerIgnore(Vec<(bool, String)>);

impl DockerIgnore {
    fn load() -> Self {
        let text =
            fs::read_to_string(Path::new(ROOT_DIR).join(".dockerignore")).unwrap_or_default();
        Self(
            text.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .map(|l| match l.strip_prefix('!') {
                    Some(p) => (false, p.trim_matches('/').to_owned()),
                    None => (true, l.trim_matches('/').to_owned()),
                })
                .collect(),
        )
    }

    fn excluded(&self, path: &str) -> bool {
        let path = path.trim_matches('/');
        let parts: Vec<&str> = path.split('/').collect();
        let mut excluded = false;
        for (exclude, pattern) in &self.0 {
            let pat: Vec<&str> = pattern.split('/').collect();
            // The path itself or any parent directory.
            let hit = (1..=parts.len()).any(|n| {
                n == pat.len()
                    && parts[..n]
                        .iter()
                        .zip(&pat)
                        .all(|(name, p)| glob_segment(p, name))
            });
            if hit {
                excluded = *exclude;
            }
        }
        excluded
    }
}

/// One path segment against a pattern segment with `*` and `?` (Go's filepath.Match without
/// character classes).
fn glob_segment(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

/// Every file under `rel` (itself if it is a file), relative to the repository root.
fn files_under(rel: &str) -> Vec<String> {
    let root = Path::new(ROOT_DIR);
    let mut out = Vec::new();
    let mut todo = vec![root.join(rel)];
    while let Some(p) = todo.pop() {
        if p.is_dir() {
            for e in fs::read_dir(&p).unwrap() {
                todo.push(e.unwrap().path());
            }
        } else {
            out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
        }
    }
    out
}

fn cargo_toml() -> toml::Table {
    read("Cargo.toml").parse().unwrap()
}

/// Every file a COPY takes from the build context exists in the repository and is not left
/// out of the context by `.dockerignore`; what the runtime stage copies from the builder is
/// what the builder's `cargo build` produces.
#[test]
fn dockerfile_copies_only_files_that_exist_and_reach_the_build_context() {
    let ignore = DockerIgnore::load();
    let stages = stages();
    let mut checked = 0;
    for stage in &stages {
        for c in copies(stage) {
            if c.from.is_some() {
                continue;
            }
            for src in &c.sources {
                assert!(
                    !src.contains(['*', '?', '[']),
                    "Dockerfile:{}: spell out {src}",
                    c.line
                );
                let rel = src.trim_start_matches("./");
                assert!(
                    Path::new(ROOT_DIR).join(rel).exists(),
                    "Dockerfile:{}: COPY source {src} does not exist",
                    c.line
                );
                let files = files_under(rel);
                assert!(!files.is_empty(), "Dockerfile:{}: {src} is empty", c.line);
                for f in files {
                    assert!(
                        !ignore.excluded(&f),
                        "Dockerfile:{}: {f} is excluded by .dockerignore",
                        c.line
                    );
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 0);
    // The large and private parts of the checkout stay out of the context.
    for f in [
        "target/release/gpu-exporter",
        ".git/HEAD",
        "tests/privileges.rs",
    ] {
        assert!(ignore.excluded(f), ".dockerignore should leave out {f}");
    }

    // COPY --from=<builder>: the builder's release binary, built there.
    let bins: Vec<String> = cargo_toml()["bin"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap().to_owned())
        .collect();
    let runtime = stages.last().unwrap();
    let from_builder: Vec<Copy> = copies(runtime)
        .into_iter()
        .filter(|c| c.from.is_some())
        .collect();
    assert_eq!(from_builder.len(), 1, "one COPY --from: {from_builder:?}");
    let c = &from_builder[0];
    let builder = stages
        .iter()
        .find(|s| s.name.as_deref() == c.from.as_deref())
        .unwrap_or_else(|| panic!("no stage named {:?}", c.from));
    let workdir = builder
        .all("WORKDIR")
        .last()
        .map(|i| builder.subst(&i.args))
        .expect("the builder sets WORKDIR");
    let build = builder
        .all("RUN")
        .map(|i| i.args.clone())
        .find(|r| r.contains("cargo build"))
        .expect("the builder runs cargo build");
    for flag in [
        "--release",
        "--locked",
        "--no-default-features",
        "-p gpu-exporter",
        "--bin gpu-exporter",
    ] {
        assert!(build.contains(flag), "cargo build {flag}: {build}");
    }
    assert!(bins.contains(&"gpu-exporter".to_owned()), "{bins:?}");
    assert_eq!(
        c.sources,
        vec![format!(
            "{}/target/release/gpu-exporter",
            workdir.trim_end_matches('/')
        )]
    );
}

/// The runtime stage runs the exporter as the numeric non-root user the chart expects, from
/// the entrypoint the chart expects, with the counters files at dcgm-exporter's paths and the
/// environment the NVIDIA container toolkit reads.
#[test]
fn dockerfile_runtime_stage_is_non_root_and_runs_the_exporter() {
    let stages = stages();
    let runtime = stages.last().unwrap();

    // USER: numeric (Kubernetes' runAsNonRoot cannot verify a name) and not root.
    let user = runtime
        .all("USER")
        .last()
        .map(|i| runtime.subst(&i.args))
        .expect("the runtime stage sets USER");
    let ids: Vec<u32> = user
        .split(':')
        .map(|p| {
            p.parse()
                .unwrap_or_else(|_| panic!("USER {user}: numeric uid:gid"))
        })
        .collect();
    assert_eq!(ids, vec![NONROOT, NONROOT], "USER {user}");

    // ENTRYPOINT, exec form, and the binary copied there.
    let entry = runtime.all("ENTRYPOINT").last().expect("ENTRYPOINT");
    assert_eq!(
        json_array(&entry.args),
        Some(vec![ENTRYPOINT.to_owned()]),
        "ENTRYPOINT {}",
        entry.args
    );
    let cs = copies(runtime);
    let landed: BTreeMap<String, String> = cs
        .iter()
        .flat_map(|c| c.sources.iter().map(move |s| (c.target_of(s), s.clone())))
        .collect();
    assert!(
        landed.contains_key(ENTRYPOINT),
        "nothing is copied to {ENTRYPOINT}: {landed:?}"
    );
    // The chart, where it exists, names no other binary, and its non-root runAsUser is the
    // image's user.
    let chart = Path::new(ROOT_DIR).join("deploy/helm/gpu-exporter");
    if chart.is_dir() {
        let mut templates = String::new();
        for f in files_under("deploy/helm/gpu-exporter") {
            let text = read(&f);
            for (i, _) in text.match_indices("/usr/bin/") {
                assert!(
                    text[i..].starts_with(ENTRYPOINT),
                    "{f} names a binary other than {ENTRYPOINT}"
                );
            }
            if f.contains("/templates/") {
                templates.push_str(&text);
            }
        }
        assert!(
            templates.contains(&format!("\"runAsUser\" {NONROOT}"))
                || templates.contains(&format!("runAsUser: {NONROOT}")),
            "the chart's templates set runAsUser {NONROOT}, the image's USER"
        );
    }

    // Counters at dcgm-exporter's paths: -f's default, and the file the GPU Operator's
    // DaemonSet names in DCGM_EXPORTER_COLLECTORS.
    let dir = Path::new(gpu_exporter::config::DEFAULT_COLLECTORS)
        .parent()
        .unwrap()
        .display()
        .to_string();
    for (file, at) in [
        (
            "counters/default-counters.csv",
            gpu_exporter::config::DEFAULT_COLLECTORS.to_owned(),
        ),
        (
            "counters/dcp-metrics-included.csv",
            format!("{dir}/dcp-metrics-included.csv"),
        ),
        ("counters/recommended.csv", format!("{dir}/recommended.csv")),
    ] {
        assert_eq!(
            landed.get(&at).map(String::as_str),
            Some(file),
            "{file} at {at}"
        );
    }

    // The port, and what the toolkit reads.
    let exposed: Vec<String> = runtime
        .all("EXPOSE")
        .flat_map(|i| {
            i.args
                .split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        exposed.iter().any(|p| p == "9400" || p == "9400/tcp"),
        "{exposed:?}"
    );
    let env: BTreeMap<String, String> = runtime
        .all("ENV")
        .flat_map(|i| {
            i.args
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(
        env.get("NVIDIA_VISIBLE_DEVICES").map(String::as_str),
        Some("all")
    );
    let caps = env
        .get("NVIDIA_DRIVER_CAPABILITIES")
        .expect("NVIDIA_DRIVER_CAPABILITIES");
    assert!(
        caps.split(',').any(|c| c == "utility"),
        "NVML needs utility: {caps}"
    );
    assert!(
        !env.contains_key("NVIDIA_MIG_MONITOR_DEVICES"),
        "the toolkit refuses NVIDIA_MIG_MONITOR_DEVICES in a container without CAP_SYS_ADMIN"
    );

    // The version label follows Cargo.toml.
    let version = cargo_toml()["package"]["version"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(runtime.args.get("VERSION"), Some(&version), "ARG VERSION");
}

/// The builder's Rust is at least Cargo.toml's rust-version, and builder and runtime are the
/// same Debian release (the binary links the builder's glibc).
#[test]
fn dockerfile_builder_rust_is_new_enough_and_matches_the_runtime_glibc() {
    let stages = stages();
    let builder = stages
        .iter()
        .find(|s| s.base.contains("rust:"))
        .expect("a builder stage on the official rust image");
    let tag = builder.base.rsplit_once(':').unwrap().1;
    let (version, distro) = tag
        .split_once('-')
        .expect("rust:<version>-<debian release>");
    let parse = |v: &str| -> Vec<u32> {
        v.split('.')
            .map(|n| n.parse().unwrap_or_else(|_| panic!("version {v}")))
            .collect()
    };
    let needed = cargo_toml()["package"]["rust-version"]
        .as_str()
        .unwrap()
        .to_owned();
    let have = parse(version);
    let need = parse(&needed);
    assert!(
        have[..2] >= need[..2.min(need.len())],
        "builder Rust {version} < rust-version {needed}"
    );
    let runtime = stages.last().unwrap();
    let debian = [("bookworm", "debian12"), ("trixie", "debian13")];
    let (_, suffix) = debian
        .iter()
        .find(|(name, _)| *name == distro)
        .unwrap_or_else(|| panic!("builder on an unknown Debian release {distro}"));
    assert!(
        runtime.base.contains(suffix),
        "builder on {distro}, runtime {} (want {suffix})",
        runtime.base
    );
}

/// The Dockerfile parser itself, on a sample with every construct it handles.
#[test]
fn dockerfile_parser_handles_continuations_args_and_ignore_patterns() {
    let text = "# c\nARG V=1.2\nFROM img:${V} AS b\nRUN a \\\n  # inner comment\n  && b\nCOPY --chown=1:1 x y /d/\n";
    let instrs = instructions(text);
    let kws: Vec<&str> = instrs.iter().map(|i| i.keyword.as_str()).collect();
    assert_eq!(kws, ["ARG", "FROM", "RUN", "COPY"]);
    assert_eq!(instrs[2].args, "a && b");
    assert_eq!(instrs[2].line, 4);
    let vars = BTreeMap::from([("V".to_owned(), "1.2".to_owned())]);
    assert_eq!(substitute("img:${V}-x $V", &vars), "img:1.2-x 1.2");
    assert!(glob_segment("*", "src"));
    assert!(glob_segment("*.csv", "a.csv"));
    assert!(!glob_segment("*.csv", "a.toml"));
    let ig = DockerIgnore(vec![
        (true, "*".into()),
        (false, "src".into()),
        (false, "crates/nvml-sim/Cargo.toml".into()),
    ]);
    assert!(ig.excluded("target/debug/x"));
    assert!(!ig.excluded("src/main.rs"));
    assert!(!ig.excluded("crates/nvml-sim/Cargo.toml"));
    assert!(ig.excluded("crates/nvml-sim/src/lib.rs"));
    let c = Copy {
        line: 1,
        from: None,
        sources: vec!["counters/a.csv".into()],
        dest: "/etc/x/".into(),
    };
    assert_eq!(c.target_of("counters/a.csv"), "/etc/x/a.csv");
}
