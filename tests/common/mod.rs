//! Shared helpers for the integration tests: a private copy of the simulated NVML library per
//! test (so parallel tests never share its state), and a sampler over it.

#![allow(dead_code)]
// Test support: a failed set-up step should stop the test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use gpu_exporter::catalogue::csv::{CounterSet, parse_counters};
use gpu_exporter::config::BUILTIN_DEFAULT_COUNTERS;
use gpu_exporter::encode::{EncodeOptions, encode};
use gpu_exporter::gpu::reader::ReaderOptions;
use gpu_exporter::sampler::Sampler;
use gpu_exporter::simulate::{LIB_NAME, SimLib};

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
        options.xid_sync = true;
        Sampler::with_options(
            Box::new(move || gpu_exporter::gpu::load(Some(&path)).map_err(|e| e.to_string())),
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
        String::from_utf8(encode(&snap, &self.counters, &self.encode)).expect("utf-8")
    }
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
    pub sim: gpu_exporter::sim_cluster::SimCluster,
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
            .block_on(gpu_exporter::sim_cluster::SimCluster::start(
                &node.sim,
                Some(node.lib_path()),
            ))
            .unwrap();
        Self { rt, sim }
    }

    /// Attribution settings pointed at this cluster.
    pub fn config(&self) -> gpu_exporter::config::KubernetesConfig {
        let mut k = gpu_exporter::config::KubernetesConfig::with_socket(self.sim.socket.clone());
        self.sim.configure(&mut k);
        k
    }

    /// An attributor over this cluster with `k`, once every source has answered.
    pub fn attributor(
        &self,
        k: &gpu_exporter::config::KubernetesConfig,
    ) -> gpu_exporter::attribution::Attributor {
        let a = gpu_exporter::attribution::start(
            k,
            false,
            Some(self.sim.client.clone()),
            None,
            self.rt.handle(),
        );
        wait_until("attribution sources ready", || a.ready());
        a
    }
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

/// A loopback port that was free a moment ago (bound, then released).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Minimal HTTP/1.1 GET; returns (status line, raw response).
pub fn http_get(port: u16, path: &str, extra: &str) -> Option<(String, Vec<u8>)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\n{extra}Connection: close\r\n\r\n"
    )
    .ok()?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).ok()?;
    let status = String::from_utf8_lossy(&buf).lines().next()?.to_owned();
    Some((status, buf))
}
