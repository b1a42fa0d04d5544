//! Shared helpers for the integration tests: a private copy of the simulated NVML library per
//! test (so parallel tests never share its state), and a sampler over it; the exporter binary
//! run as a process ([`Exporter`]); [`Failures`] collected across one check; a real kubectl
//! ([`kubectl`]).

#![allow(dead_code)]
// Test support: a failed set-up step should stop the test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

pub mod kubectl;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use gpu_exporter::catalogue::csv::{CounterSet, parse_counters};
use gpu_exporter::config::BUILTIN_DEFAULT_COUNTERS;
use gpu_exporter::exposition::counted::Counted;
use gpu_exporter::exposition::{EncodeOptions, encode};
use gpu_exporter::gpu::reader::ReaderOptions;
use gpu_exporter::sampler::Sampler;
use gpu_exporter::sim::library::{LIB_NAME, SimLib};
use gpu_exporter::snapshot::Snapshot;

/// Finds the simulated library built by cargo for this test run (it is a dev-dependency, so
/// `cargo test` builds `target/<profile>/deps/libnvml_sim.so`).
pub fn built_sim_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps dir");
    for cand in [
        deps.join(LIB_NAME),
        deps.parent().expect("profile dir").join(LIB_NAME),
    ] {
        if cand.is_file() {
            return cand;
        }
    }
    panic!(
        "{LIB_NAME} not found next to {}; run `cargo build --workspace`",
        exe.display()
    );
}

/// A simulated node private to one test.
pub struct SimNode {
    pub dir: tempfile::TempDir,
    pub path: PathBuf,
    pub sim: SimLib,
}

impl SimNode {
    /// Copies the library to a fresh directory and configures `scenario` with `seed`.
    pub fn new(scenario: &str, seed: u64) -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(LIB_NAME);
        std::fs::copy(built_sim_lib(), &path).expect("copy sim lib");
        let sim = SimLib::open(&path).expect("open sim");
        sim.configure(scenario, seed).expect("configure scenario");
        Self { dir, path, sim }
    }

    /// A sampler that loads NVML from this node's library. Xid events are time-stamped with
    /// scenario time, so ticks should be taken at `now_unix` = scenario time.
    pub fn sampler(&self, counters: Arc<CounterSet>) -> Sampler {
        self.sampler_with(counters, ReaderOptions::default(), 0.0)
    }

    /// A sampler with reader options; Xid events are stamped `epoch` + scenario time.
    pub fn sampler_with(
        &self,
        counters: Arc<CounterSet>,
        mut options: ReaderOptions,
        epoch: f64,
    ) -> Sampler {
        let path = self.path.clone();
        let sim_clock = self.sim.clock().expect("sim clock");
        options.clock = Arc::new(move || epoch + sim_clock());
        // Scenario time jumps between ticks: each tick must see the events up to its time.
        // The simulator's event wait blocks for its whole timeout, as NVML's does, and a
        // flush waits for up to two of them: a short one keeps synced ticks quick.
        options.xid_sync = true;
        options.xid_poll = std::time::Duration::from_millis(10);
        Sampler::with_options(
            Box::new(move || gpu_exporter::gpu::open(Some(&path))),
            counters,
            options,
        )
    }

    pub fn set_time(&self, t: f64) {
        self.sim.set_time(t).expect("set time");
    }

    pub fn lib_path(&self) -> &Path {
        &self.path
    }
}

/// The configuration a node started with `args` runs with (the daemon's flags, read as the
/// daemon reads them), its host label `sim-node`: tests build their reader and encoder options
/// from it (`Config::reader`, `encode_options()`), as the daemon does.
pub fn config(args: &[&str]) -> gpu_exporter::config::Config {
    let mut cfg = gpu_exporter::config::Config::from_args(args).expect("valid flags");
    cfg.hostname = Some("sim-node".into());
    cfg
}

/// The shipped default counter set.
pub fn default_counters() -> Arc<CounterSet> {
    Arc::new(
        parse_counters("default-counters.csv", BUILTIN_DEFAULT_COUNTERS)
            .expect("default counters parse"),
    )
}

/// Every row of both shipped files (default + dcp), for tests that want every field.
pub fn counters_from(path: &str) -> Arc<CounterSet> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .expect("read counters");
    Arc::new(parse_counters(path, &text).expect("counters parse"))
}

/// A sampler over a simulated node, ticked at chosen scenario times.
pub struct Run {
    pub node: SimNode,
    pub sampler: Sampler,
    pub counters: Arc<CounterSet>,
    pub encode: EncodeOptions,
}

impl Run {
    /// Xid events are stamped with scenario time, so `at(t)` ticks at `now_unix` = `t`.
    pub fn new(
        node: SimNode,
        counters: Arc<CounterSet>,
        options: ReaderOptions,
        encode: EncodeOptions,
    ) -> Self {
        let sampler = node.sampler_with(counters.clone(), options, 0.0);
        Self {
            node,
            sampler,
            counters,
            encode,
        }
    }

    /// Exposition of a tick at scenario time `t`.
    pub fn at(&mut self, t: f64) -> String {
        self.node.set_time(t);
        let snap = self.sampler.tick(t);
        page(&snap, &self.counters, &self.encode)
    }
}

/// The exposition of one snapshot as a scrape serves it, with nothing counted by the server
/// (the figures the daemon's server and notifier add are not the tests' here).
pub fn page(snap: &Snapshot, counters: &CounterSet, opts: &EncodeOptions) -> String {
    String::from_utf8(encode(snap, &Counted::default(), counters, opts)).expect("utf-8")
}

/// The series lines of family `name`.
pub fn series<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    let prefix = format!("{name}{{");
    text.lines().filter(|l| l.starts_with(&prefix)).collect()
}

/// The value of label `name` on a series line, if it has one.
pub fn label_opt<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = format!("{name}=\"");
    let rest = &line[line.find(&start)? + start.len()..];
    Some(&rest[..rest.find('"')?])
}

/// The value of label `name` on a series line (which must have it).
pub fn label<'a>(line: &'a str, name: &str) -> &'a str {
    label_opt(line, name).unwrap_or_else(|| panic!("no label {name} on {line}"))
}

/// The sample value of a series line.
pub fn value(line: &str) -> f64 {
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// A simulated cluster (kubelet, API server, proc tree) for a node's scenario, with the
/// runtime its servers and the attribution sources run on.
pub struct Cluster {
    pub rt: tokio::runtime::Runtime,
    pub sim: gpu_exporter::sim::cluster::SimCluster,
}

impl Cluster {
    /// Starts the scenario's simulated cluster.
    pub fn start(node: &SimNode) -> Self {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let sim = rt
            .block_on(gpu_exporter::sim::cluster::SimCluster::start(
                &node.sim,
                Some(node.lib_path()),
            ))
            .unwrap();
        Self { rt, sim }
    }

    /// The site validation points the components at on this cluster (its simulated libraries
    /// are the test's own, loaded by path).
    pub fn site(&self) -> gpu_exporter::config::Site {
        gpu_exporter::config::Site {
            simulated: Some(self.sim.simulated_node(PathBuf::new(), None)),
        }
    }

    /// Attribution settings pointed at this cluster: `-k` validated on [`Cluster::site`], as
    /// the daemon validates it with `--simulate`.
    pub fn config(&self) -> gpu_exporter::attribution::KubernetesOptions {
        config_on(&["-k"], &self.site())
            .kubernetes
            .expect("-k enables pod attribution")
    }

    /// An attributor over this cluster with `k`, once every source has answered.
    pub fn attributor(
        &self,
        k: &gpu_exporter::attribution::KubernetesOptions,
    ) -> gpu_exporter::attribution::Attributor {
        let a = gpu_exporter::attribution::start(
            k,
            None,
            Some(self.sim.client.clone()),
            None,
            self.rt.handle(),
        );
        wait_until("attribution sources ready", || a.ready());
        a
    }
}

/// The configuration of `args` (after the program name) validated on `site`, as the daemon
/// validates it.
#[allow(dead_code)]
pub fn config_on(args: &[&str], site: &gpu_exporter::config::Site) -> gpu_exporter::config::Config {
    let argv = std::iter::once("gpu-exporter")
        .chain(args.iter().copied())
        .map(std::ffi::OsString::from);
    gpu_exporter::config::Cli::try_parse_go_style(argv)
        .expect("flags parse")
        .merge_config_file()
        .and_then(|s| s.validate(site))
        .unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Polls `cond` every 20 ms for up to 20 s (a deadline, not a timing assertion).
pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !cond() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting: {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Runs `cmd` to its end: (exit code, stdout then stderr as text).
pub fn run_to_text(cmd: &mut Command) -> (Option<i32>, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

/// A loopback port that was free a moment ago (bound, then released), taken below the
/// kernel's ephemeral range (32768-60999 by default): the ports that servers binding port 0
/// get (the simulated API server, Prometheus's clients) come from that range, so they cannot
/// take a port handed out here between its release and its use. Spread by process and call.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const LOW: u32 = 20_000;
    const SPAN: u32 = 12_000;
    let start = std::process::id().wrapping_mul(7919);
    for _ in 0..SPAN {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (LOW + start.wrapping_add(n.wrapping_mul(13)) % SPAN) as u16;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// An HTTP response as the tests look at it.
pub struct HttpResponse {
    /// The status code.
    pub status: u16,
    /// Header names (lower case) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body as sent (not decompressed).
    pub body: Vec<u8>,
}

impl HttpResponse {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text (lossy).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// `GET http://127.0.0.1:<port><path>` with `headers`, through ureq (no redirects, no
/// decompression, 5 s connect and 60 s overall timeouts); `None` when no response came.
pub fn http_get(port: u16, path: &str, headers: &[(&str, &str)]) -> Option<HttpResponse> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_connect(Some(Duration::from_secs(5)))
        .timeout_global(Some(Duration::from_secs(60)))
        .build()
        .into();
    let mut req = agent.get(&format!("http://127.0.0.1:{port}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let mut resp = req.call().ok()?;
    let status = resp.status().as_u16();
    let headers = resp
        .headers()
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    let body = resp
        .body_mut()
        .with_config()
        .limit(256 << 20)
        .read_to_vec()
        .ok()?;
    Some(HttpResponse {
        status,
        headers,
        body,
    })
}

/// The exporter binary cargo built for these tests.
pub const BIN: &str = env!("CARGO_BIN_EXE_gpu-exporter");

/// Every problem found by one test; [`Failures::finish`] panics once with all of them.
#[derive(Default)]
pub struct Failures(pub Vec<String>);

impl Failures {
    pub fn add(&mut self, msg: impl Into<String>) {
        self.0.push(msg.into());
    }

    pub fn finish(self, what: &str) {
        if !self.0.is_empty() {
            panic!(
                "{what}: {} problem(s):\n  - {}",
                self.0.len(),
                self.0.join("\n  - ")
            );
        }
    }
}

/// Sends SIGTERM (through the `kill` command) and waits up to 20 s for the exit.
pub fn sigterm(child: &mut Child) -> ExitStatus {
    signal(child, "-TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(Instant::now() < deadline, "no exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Sends `sig` (`-HUP`, `-TERM`, ...) to `child` with the `kill` command.
pub fn signal(child: &Child, sig: &str) {
    let rc = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(rc.success(), "kill {sig}: {rc}");
}

/// Where the exporter's stderr is to go.
enum Stderr {
    Null,
    File(PathBuf),
    Pipe,
    /// Whatever the test set up (its log is the test's to read).
    Given(Stdio),
}

/// Where a running exporter's stderr goes.
enum Log {
    Discarded,
    File(PathBuf),
    /// Collected line by line by a reader thread.
    Pipe {
        text: Arc<Mutex<String>>,
        reader: Option<JoinHandle<()>>,
    },
}

/// How to run the exporter: on a free loopback port (`-a 127.0.0.1:<port>`), loading NVML from
/// `--nvml-lib` (the simulated library unless told otherwise), stdin null, stdout null unless
/// a file is asked for, stderr discarded unless a log file or a pipe is asked for.
pub struct ExporterBuilder {
    cmd: Command,
    port: u16,
    nvml_lib: PathBuf,
    stderr: Stderr,
    stdout: Option<PathBuf>,
    scrape_deadline: Duration,
}

impl ExporterBuilder {
    /// The binary itself.
    pub fn new() -> Self {
        Self::from_command(Command::new(BIN))
    }

    /// The exporter binary `bin` run by `prefix`, a command such as `setpriv ... --`.
    pub fn wrapped(mut prefix: Command, bin: impl AsRef<OsStr>) -> Self {
        prefix.arg(bin);
        Self::from_command(prefix)
    }

    fn from_command(mut cmd: Command) -> Self {
        let port = free_port();
        cmd.args(["-a", &format!("127.0.0.1:{port}")]);
        Self {
            cmd,
            port,
            nvml_lib: built_sim_lib(),
            stderr: Stderr::Null,
            stdout: None,
            scrape_deadline: Duration::from_secs(30),
        }
    }

    /// The port the exporter will listen on.
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.cmd.arg(arg);
        self
    }

    pub fn args<S: AsRef<OsStr>>(mut self, args: impl IntoIterator<Item = S>) -> Self {
        self.cmd.args(args);
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.cmd.env(key, value);
        self
    }

    pub fn env_remove(mut self, key: impl AsRef<OsStr>) -> Self {
        self.cmd.env_remove(key);
        self
    }

    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cmd.current_dir(dir);
        self
    }

    /// The NVML library to load (`--nvml-lib`).
    pub fn nvml_lib(mut self, lib: impl Into<PathBuf>) -> Self {
        self.nvml_lib = lib.into();
        self
    }

    /// Stderr to the file `path`.
    pub fn log_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.stderr = Stderr::File(path.into());
        self
    }

    /// Stderr collected through a pipe.
    pub fn log_pipe(mut self) -> Self {
        self.stderr = Stderr::Pipe;
        self
    }

    /// Stdout into the file `path` (else discarded): what a library loaded into the process
    /// writes there, such as DCGM's log.
    pub fn stdout_to(mut self, path: impl Into<PathBuf>) -> Self {
        self.stdout = Some(path.into());
        self
    }

    /// Stderr to `stdio`, set up by the test ([`Exporter::log`] is then empty).
    pub fn stderr(mut self, stdio: Stdio) -> Self {
        self.stderr = Stderr::Given(stdio);
        self
    }

    /// Starts the process with the open-file limits `soft` and `hard` (`RLIMIT_NOFILE`).
    pub fn open_files(mut self, soft: u64, hard: u64) -> Self {
        use std::os::unix::process::CommandExt;
        let lim = libc::rlimit {
            rlim_cur: soft,
            rlim_max: hard,
        };
        // SAFETY: setrlimit, async-signal-safe, reads a struct copied into the closure; it runs
        // in the forked child before exec and touches nothing else.
        unsafe {
            self.cmd.pre_exec(move || {
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) == 0 {
                    Ok(())
                } else {
                    Err(std::io::Error::last_os_error())
                }
            });
        }
        self
    }

    /// How long [`Exporter::metrics_until`] waits (30 s unless told).
    pub fn scrape_deadline(mut self, within: Duration) -> Self {
        self.scrape_deadline = within;
        self
    }

    /// Starts the process without waiting for it.
    pub fn spawn(mut self) -> Exporter {
        self.cmd
            .arg("--nvml-lib")
            .arg(&self.nvml_lib)
            .stdin(Stdio::null())
            .stdout(match &self.stdout {
                Some(path) => Stdio::from(std::fs::File::create(path).unwrap()),
                None => Stdio::null(),
            });
        let (stderr, kind) = match self.stderr {
            Stderr::Null => (Stdio::null(), Stderr::Null),
            Stderr::File(path) => (
                Stdio::from(std::fs::File::create(&path).unwrap()),
                Stderr::File(path),
            ),
            Stderr::Pipe => (Stdio::piped(), Stderr::Pipe),
            Stderr::Given(stdio) => (stdio, Stderr::Null),
        };
        let mut child = self
            .cmd
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {:?}: {e}", self.cmd));
        let log = match kind {
            Stderr::Null | Stderr::Given(_) => Log::Discarded,
            Stderr::File(path) => Log::File(path),
            Stderr::Pipe => {
                let text = Arc::new(Mutex::new(String::new()));
                let stderr = child.stderr.take().unwrap();
                let sink = Arc::clone(&text);
                let reader = std::thread::spawn(move || {
                    use std::io::BufRead;
                    for line in std::io::BufReader::new(stderr).lines() {
                        let Ok(line) = line else { break };
                        let mut l = sink.lock().unwrap();
                        l.push_str(&line);
                        l.push('\n');
                    }
                });
                Log::Pipe {
                    text,
                    reader: Some(reader),
                }
            }
        };
        Exporter {
            child,
            port: self.port,
            log,
            scrape_deadline: self.scrape_deadline,
        }
    }

    /// Starts the process and waits until `/ready` answers 200.
    pub fn start(self) -> Exporter {
        let mut e = self.spawn();
        e.wait_ready();
        e
    }
}

impl Default for ExporterBuilder {
    fn default() -> Self {
        Self::new()
    }
}

/// A running exporter, killed on drop.
pub struct Exporter {
    pub child: Child,
    pub port: u16,
    log: Log,
    scrape_deadline: Duration,
}

impl Exporter {
    /// How to run the binary; see [`ExporterBuilder`].
    pub fn builder() -> ExporterBuilder {
        ExporterBuilder::new()
    }

    /// Waits up to 60 s until `/ready` answers 200; fails with the log if the process exits.
    pub fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if http_get(self.port, "/ready", &[]).is_some_and(|r| r.status == 200) {
                return;
            }
            if let Some(s) = self.child.try_wait().unwrap() {
                panic!(
                    "exporter exited with {s} before /ready; log:\n{}",
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "exporter never became ready; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// A scrape of `/metrics`, which must answer 200: the body.
    pub fn metrics(&self) -> String {
        let r = http_get(self.port, "/metrics", &[]).expect("scrape");
        assert_eq!(r.status, 200, "{}", r.text());
        r.text()
    }

    /// Scrapes until `cond` holds (a deadline, not a timing assertion); returns that scrape.
    pub fn metrics_until(&self, what: &str, cond: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + self.scrape_deadline;
        loop {
            let text = self.metrics();
            if cond(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting: {what}\nlast scrape:\n{text}\nlog:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The log so far (empty when stderr is discarded).
    pub fn log(&self) -> String {
        match &self.log {
            Log::Discarded => String::new(),
            Log::File(path) => std::fs::read_to_string(path).unwrap_or_default(),
            Log::Pipe { text, .. } => text.lock().unwrap().clone(),
        }
    }

    /// Waits up to `within` until the log contains `needle`.
    pub fn wait_log(&self, needle: &str, within: Duration) {
        let deadline = Instant::now() + within;
        while !self.log().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "{needle:?} never logged; log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `sig` (`-HUP`, ...) with the `kill` command.
    pub fn signal(&self, sig: &str) {
        signal(&self.child, sig);
    }

    /// SIGTERM, then waits for the exit; the log is complete afterwards.
    pub fn sigterm(&mut self) -> ExitStatus {
        let status = sigterm(&mut self.child);
        if let Log::Pipe { reader, .. } = &mut self.log
            && let Some(r) = reader.take()
        {
            r.join().unwrap();
        }
        status
    }

    /// `path` on this exporter over HTTPS.
    pub fn https(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Resident memory of process `pid`, in KiB.
pub fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .expect("VmRSS of the process")
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS in KiB")
}

/// A line on stderr that the test harness does not capture (`eprintln!` output is shown only
/// for failing tests): for loud "SKIPPED" notices.
pub fn say(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// The files directly in `dir` whose extension is one of `exts`, sorted; none when `dir`
/// cannot be read.
pub fn files_with(dir: &Path, exts: &[&str]) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| exts.contains(&e))
        })
        .collect();
    out.sort();
    out
}

/// The last component of `p`, or "" when it has none.
pub fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// What this thread logs through `tracing`, as text without colour codes.
#[derive(Clone, Default)]
pub struct LogBuf(Arc<std::sync::Mutex<Vec<u8>>>);

impl LogBuf {
    /// Everything logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for LogBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Captures the current thread's `tracing` output (the sampler's, when the test ticks it)
/// until the guard is dropped.
#[allow(dead_code)] // not every test crate captures logs
pub fn capture_logs() -> (LogBuf, tracing::subscriber::DefaultGuard) {
    let buf = LogBuf::default();
    let writer = buf.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    (buf, tracing::subscriber::set_default(subscriber))
}

/// An outside program a test runs: the path in `$env`, else `name` on PATH.
pub fn tool(env: &str, name: &str) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os(env) {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// GET `path` on the simulated API server at `port` (`--simulate -k`), as JSON.
pub fn sim_api(port: u16, path: &str) -> serde_json::Value {
    serde_json::from_str(&http_get(port, path, &[]).expect("API answers").text()).unwrap()
}

/// The simulated API server's port, from the exporter's log (`api=http://127.0.0.1:PORT`).
pub fn sim_api_port(e: &Exporter) -> u16 {
    e.wait_log("api=http://127.0.0.1:", Duration::from_secs(10));
    e.log()
        .split("api=http://127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|p| p.parse().ok())
        .expect("the simulated API server's port in the log")
}
