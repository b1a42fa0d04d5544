//! The DCGM client, end to end on the binary: profiling series from the simulated libdcgm
//! (`crates/dcgm-sim`, built by `cargo build --workspace`) on GPUs without GPM and their MIG
//! instances, in the same shape as the GPM path; fields DCGM will not watch together reported
//! with DCGM's reason; no library; a library that is not DCGM 4; remote mode against
//! `dcgm-sim-hostengine` on a unix socket that is killed and restarted, and what the landing
//! page, `/status` and `check` say of DCGM meanwhile (down, up, killed, back).

#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, Exporter, label, series, value};

const DCP: &str = "counters/dcp-metrics-included.csv";

/// A built artefact of the workspace next to the exporter binary.
fn built(name: &str) -> PathBuf {
    let p = Path::new(BIN).parent().unwrap().join(name);
    assert!(
        p.is_file(),
        "{} missing: run `cargo build --workspace`",
        p.display()
    );
    p
}

/// The exporter on `--simulate scenario -f counters -c 300` and `more`, its log kept, ready.
fn simulated(scenario: &str, counters: &str, more: &[&str]) -> Exporter {
    Exporter::builder()
        .args(["--simulate", scenario, "-f", counters, "-c", "300"])
        .args(more)
        .log_pipe()
        .start()
}

/// The built-in scenario a100-l4 with `extra` (DCGM faults) appended, as a file in `dir`.
fn a100_l4_with(dir: &Path, extra: &str) -> std::path::PathBuf {
    scenario_with(dir, "a100-l4", extra)
}

/// The built-in scenario `name` with `extra` (DCGM faults) appended, as a file in `dir`.
fn scenario_with(dir: &Path, name: &str, extra: &str) -> std::path::PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut scenario =
        std::fs::read_to_string(root.join(format!("scenarios/{name}.toml"))).unwrap();
    scenario.push('\n');
    scenario.push_str(extra);
    let file = dir.join(format!("{name}-faults.toml"));
    std::fs::write(&file, scenario).unwrap();
    file
}

/// Once DCGM is down, the ticks go on (five more), NVML's series with them, DCGM's series are
/// absent, no stall is reported and `/ready` stays 200.
fn ticks_go_on_without_dcgm(e: &Exporter) {
    let ticks = |t: &str| {
        t.lines()
            .find(|l| l.starts_with("gpu_exporter_samples_total "))
            .map(value)
            .unwrap_or(0.0)
    };
    let down = e.metrics_until("DCGM down", |t| t.contains("gpu_exporter_dcgm_up 0"));
    let n = ticks(&down);
    let later = e.metrics_until("five more ticks", |t| ticks(t) >= n + 5.0);
    assert!(
        at(&later, "DCGM_FI_DEV_GPU_TEMP", "0", None).is_some(),
        "{later}"
    );
    assert!(
        at(&later, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_none(),
        "{later}"
    );
    assert!(
        !later.contains("gpu_exporter_sampler_stalled_seconds"),
        "{later}"
    );
    assert_eq!(common::http_get(e.port, "/ready", &[]).unwrap().status, 200);
}

/// The value of `name` on GPU `gpu` (and GPU instance `gi`), if the scrape has it.
fn at(text: &str, name: &str, gpu: &str, gi: Option<&str>) -> Option<f64> {
    series(text, name)
        .into_iter()
        .find(|l| label(l, "gpu") == gpu && common::label_opt(l, "GPU_I_ID") == gi)
        .map(value)
}

/// A100 40GB in MIG mode (mixed profiles), an L4 and an H100 (GPM), as a scenario file.
const MIXED: &str = r#"
name = "a100-mig-l4-h100"
node = "sim-dcgm-node"

[[gpus]]
model = "A100-SXM4-40GB"
mig = [
  { profile = "3g.20gb", workload = { kind = "training", level = 0.9, amplitude = 0.05, period = 60, memory = 0.8 } },
  { profile = "2g.10gb", workload = { kind = "inference", level = 0.4, amplitude = 0.3, period = 20, memory = 0.5 } },
  { profile = "1g.5gb", workload = { kind = "idle" } },
]

[[gpus]]
model = "L4"
workload = { kind = "inference", level = 0.5, amplitude = 0.4, period = 10, memory = 0.5 }

[[gpus]]
model = "H100-SXM5-80GB"
workload = { kind = "training", level = 0.9, amplitude = 0.05, period = 60, memory = 0.8 }
"#;

#[test]
fn profiling_series_on_the_a100_and_the_l4_from_simulated_dcgm() {
    built("libdcgm_sim.so");
    let e = simulated("a100-l4", DCP, &[]);
    let first = e.metrics_until("profiling on both GPUs", |t| {
        at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_some()
            && at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "1", None).is_some()
    });
    assert!(first.contains("gpu_exporter_dcgm_up 1"), "{first}");
    for name in [
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_DRAM_ACTIVE",
    ] {
        for gpu in ["0", "1"] {
            let v = at(&first, name, gpu, None).unwrap_or(f64::NAN);
            assert!(
                (0.0..=1.0).contains(&v),
                "{name} on GPU {gpu} = {v} is not a ratio"
            );
        }
    }
    // Bytes per second, not MiB/s: the A100 trains with PCIe traffic well over 1 MiB/s.
    let rx = at(&first, "DCGM_FI_PROF_PCIE_RX_BYTES", "0", None).unwrap();
    assert!(rx > 1_048_576.0, "PCIe RX {rx} B/s");
    // The training A100 is busier than the half-loaded L4, as NVML's utilization says.
    let busy = |t: &str, g| at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", g, None).unwrap();
    assert!(busy(&first, "0") > busy(&first, "1"), "{first}");
    // The values move with the workload.
    let before = busy(&first, "1");
    e.metrics_until("the L4's engine activity to move", |t| {
        at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "1", None).is_some_and(|v| v != before)
    });
    // Nothing of it listed as unsupported.
    assert!(
        !first
            .lines()
            .any(|l| l.starts_with("gpu_exporter_field_unsupported") && l.contains("PROF")),
        "{first}"
    );
}

/// `--enable-dcgm-log --dcgm-log-level info`, dcgm-exporter's flags: the embedded hostengine
/// is started with its log on standard output at that level (`dcgmStartEmbedded_v2`), and the
/// simulated library writes its start-up line there. Without the flags DCGM is started as
/// before and logs nothing; the log alone, at the default level NONE, logs nothing and says so.
#[test]
fn enable_dcgm_log_gives_the_embedded_hostengine_its_log_on_stdout() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let run = |name: &str, more: &[&str]| {
        let out = dir.path().join(format!("{name}.stdout"));
        let e = Exporter::builder()
            .args(["--simulate", "a100-l4", "-f", DCP, "-c", "300"])
            .args(more)
            .stdout_to(&out)
            .log_pipe()
            .start();
        e.metrics_until("profiling from the embedded hostengine", |t| {
            t.contains("gpu_exporter_dcgm_up 1")
                && at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_some()
        });
        let log = e.log();
        drop(e);
        (std::fs::read_to_string(&out).unwrap(), log)
    };
    let started = "dcgm-sim: INFO embedded host engine started (log level INFO)";

    let (stdout, log) = run("info", &["--enable-dcgm-log", "--dcgm-log-level", "info"]);
    assert_eq!(
        stdout.matches(started).count(),
        1,
        "stdout: {stdout}\nlog: {log}"
    );
    assert!(
        !log.contains("dcgm-log"),
        "no warning about the flags: {log}"
    );

    let (stdout, log) = run("default", &[]);
    assert!(
        !stdout.contains("dcgm-sim"),
        "no DCGM log unless asked: {stdout}"
    );
    assert!(!log.contains("dcgm-log"), "{log}");

    let (stdout, log) = run("none", &["--enable-dcgm-log"]);
    assert!(
        !stdout.contains("dcgm-sim"),
        "level NONE logs nothing: {stdout}"
    );
    assert_eq!(
        log.matches("--enable-dcgm-log with --dcgm-log-level NONE")
            .count(),
        1,
        "{log}"
    );
}

#[test]
fn mig_instances_get_profiling_with_the_gpm_paths_shape() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("mixed.toml");
    std::fs::write(&scenario, MIXED).unwrap();
    let e = simulated(scenario.to_str().unwrap(), DCP, &[]);
    let name = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
    let text = e.metrics_until(
        "profiling on the A100's instances, the L4 and the H100",
        |t| {
            let lines = series(t, name);
            lines.iter().filter(|l| label(l, "gpu") == "0").count() == 3
                && at(t, name, "1", None).is_some()
                && at(t, name, "2", None).is_some()
        },
    );
    let lines = series(&text, name);
    // One series per GPU instance, each with its MIG labels, none for the MIG parent.
    let mut gis: Vec<&str> = lines
        .iter()
        .filter(|l| label(l, "gpu") == "0")
        .map(|l| label(l, "GPU_I_ID"))
        .collect();
    gis.sort();
    assert_eq!(gis.len(), 3, "{text}");
    let profiles: Vec<&str> = lines
        .iter()
        .filter(|l| label(l, "gpu") == "0")
        .map(|l| label(l, "GPU_I_PROFILE"))
        .collect();
    for p in ["3g.20gb", "2g.10gb", "1g.5gb"] {
        assert!(profiles.contains(&p), "{p} missing: {profiles:?}");
    }
    // The training instance is busier than the idle one.
    let by_profile = |p: &str| {
        lines
            .iter()
            .find(|l| label(l, "gpu") == "0" && label(l, "GPU_I_PROFILE") == p)
            .map(|l| value(l))
            .unwrap()
    };
    assert!(by_profile("3g.20gb") > by_profile("1g.5gb"), "{text}");
    // The same shape whichever source served it: the L4 (DCGM) and the H100 (GPM) series
    // carry the same labels in the same order, under one HELP and TYPE.
    let keys = |line: &str| -> Vec<String> {
        let inner = &line[line.find('{').unwrap() + 1..line.rfind('}').unwrap()];
        inner
            .split("\",")
            .map(|kv| kv.split('=').next().unwrap().to_owned())
            .collect()
    };
    let l4 = lines.iter().find(|l| label(l, "gpu") == "1").unwrap();
    let h100 = lines.iter().find(|l| label(l, "gpu") == "2").unwrap();
    assert_eq!(keys(l4), keys(h100), "{l4}\n{h100}");
    assert_eq!(text.matches(&format!("# TYPE {name} gauge\n")).count(), 1);
    for l in [l4, h100] {
        assert!((0.0..=1.0).contains(&value(l)), "{l}");
    }
}

/// Fields DCGM will not serve are listed unsupported on that entity and logged once per entity
/// with DCGM's reason: one no metric group of the GPU has (FP64 on the L4), and one whose watch
/// DCGM refuses (FP16 on the L4, refused with `DCGM_ST_PROFILING_MULTI_PASS` by the scenario's
/// `watch_refused` fault). Groups of one major id that DCGM multiplexes (tensor, FP16 and FP64 on
/// the A100) are all served.
#[test]
fn fields_dcgm_will_not_watch_together_are_reported_with_its_reason() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("prof.csv");
    std::fs::write(
        &csv,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, engine\n\
         DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, tensor\n\
         DCGM_FI_PROF_PIPE_FP16_ACTIVE, gauge, fp16\n\
         DCGM_FI_PROF_PIPE_FP64_ACTIVE, gauge, fp64\n",
    )
    .unwrap();
    let file = a100_l4_with(
        dir.path(),
        "[[dcgm_faults]]\nkind = \"watch_refused\"\nat = 0\nuntil = 36000\nfield = 1008\n\
         gpu = 1\ncode = -38\n",
    );
    let e = simulated(file.to_str().unwrap(), csv.to_str().unwrap(), &[]);
    let text = e.metrics_until("tensor activity on the L4 and FP64 on the A100", |t| {
        at(t, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "1", None).is_some()
            && at(t, "DCGM_FI_PROF_PIPE_FP64_ACTIVE", "0", None).is_some()
    });
    for f in [
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    ] {
        assert!(
            at(&text, f, "0", None).is_some(),
            "{f} on the A100:\n{text}"
        );
    }
    for f in [
        "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
        "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    ] {
        assert!(at(&text, f, "1", None).is_none(), "{f} on the L4:\n{text}");
        let listed = text.lines().any(|l| {
            l.starts_with("gpu_exporter_field_unsupported")
                && l.contains(&format!("field=\"{f}\""))
                && l.contains("gpu=\"1\"")
        });
        assert!(listed, "{f} not listed unsupported on GPU 1:\n{text}");
    }
    let log = e.log();
    let lines = |field: &str| -> Vec<String> {
        log.lines()
            .filter(|l| l.contains(&format!("{field} is not available from DCGM")))
            .map(str::to_owned)
            .collect()
    };
    // Once, on the L4 only, each with DCGM's reason.
    let fp16 = lines("DCGM_FI_PROF_PIPE_FP16_ACTIVE");
    assert_eq!(fp16.len(), 1, "{log}");
    assert!(
        fp16[0].contains("MULTI_PASS") || fp16[0].contains("-38"),
        "{log}"
    );
    let fp64 = lines("DCGM_FI_PROF_PIPE_FP64_ACTIVE");
    assert_eq!(fp64.len(), 1, "{log}");
    assert!(fp64[0].contains("no profiling metric group"), "{log}");
}

#[test]
fn no_libdcgm_is_one_clear_line_and_the_nvml_page_as_before() {
    let missing = "/nonexistent/dcgm/libdcgm.so.4";
    let e = simulated(
        "a100-l4",
        DCP,
        &["--dcgm-mode", "embedded", "--dcgm-lib", missing],
    );
    let text = e.metrics_until("two ticks", |t| {
        t.contains("gpu_exporter_dcgm_up 0")
            && !t.contains("gpu_exporter_samples_total 1\n")
            && t.contains("gpu_exporter_field_unsupported")
    });
    assert!(
        at(&text, "DCGM_FI_DEV_GPU_TEMP", "0", None).is_some(),
        "{text}"
    );
    assert!(
        at(&text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_none(),
        "{text}"
    );
    let log = e.log();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("DCGM"))
        .filter(|l| l.contains(missing))
        .collect();
    assert_eq!(lines.len(), 2, "{log}"); // the start-up line naming the library, and the one problem
    let problem: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("the DCGM library was not found"))
        .collect();
    assert_eq!(problem.len(), 1, "{log}");
    assert!(problem[0].contains("--dcgm-lib") && problem[0].contains("--dcgm-mode off"));
    assert!(
        !log.contains("DCGM is unavailable"),
        "a second line for the same cause:\n{log}"
    );
    // As before DCGM: the A100's profiling fields are listed unsupported (no GPM).
    assert!(
        text.lines()
            .any(|l| l.starts_with("gpu_exporter_field_unsupported")
                && l.contains("DCGM_FI_PROF_GR_ENGINE_ACTIVE")
                && l.contains("gpu=\"0\"")),
        "{text}"
    );
    // `/status`: DCGM down with the library's error; its fields listed once, unsupported,
    // not also as values DCGM did not serve.
    let st = status_of(&e);
    let dcgm = st["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["source"] == "dcgm"))
        .unwrap();
    assert_eq!(
        (&dcgm["mode"], &dcgm["state"]),
        (&"embedded".into(), &"down".into())
    );
    assert!(
        dcgm["last_error"]
            .as_str()
            .is_some_and(|m| m.contains("the DCGM library was not found") && m.contains(missing)),
        "{dcgm}"
    );
    assert_eq!(st["unavailable"], serde_json::json!([]), "{st}");
    assert!(
        st["unsupported"]
            .as_array()
            .unwrap()
            .iter()
            .any(|u| u["field"] == "DCGM_FI_PROF_GR_ENGINE_ACTIVE" && u["gpu"] == 0),
        "{st}"
    );
}

#[test]
fn a_library_that_is_not_dcgm_4_is_one_error_naming_the_versions() {
    // The simulated NVML library: a shared object, but not DCGM (no dcgmVersionInfo).
    let e = Exporter::builder()
        .args([
            "--simulate",
            "a100-l4",
            "-c",
            "300",
            "--dcgm-mode",
            "embedded",
        ])
        .args(["--dcgm-lib", built("libnvml_sim.so").to_str().unwrap()])
        .log_pipe()
        .start();
    e.metrics_until("dcgm down", |t| t.contains("gpu_exporter_dcgm_up 0"));
    one_version_error(&e, "is version");
}

/// The log has exactly one error saying DCGM 4.x is needed, and it contains `found`.
fn one_version_error(e: &Exporter, found: &str) {
    let log = e.log();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("gpu-exporter needs DCGM 4.x"))
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].contains("ERROR") && lines[0].contains(found),
        "{log}"
    );
}

/// A DCGM of another major version (the simulated library saying it is 3.3.9, as DCGM 3's
/// `dcgmVersionInfo` would): one error naming the version found and the one needed, and the
/// NVML page as before.
#[test]
fn a_dcgm_3_library_is_one_error_naming_3_3_9_and_4() {
    built("libdcgm_sim.so");
    let e = Exporter::builder()
        .args(["--simulate", "a100-l4", "-c", "300", "-f", DCP])
        .env("DCGM_SIM_VERSION", "3.3.9")
        .log_pipe()
        .start();
    let text = e.metrics_until("dcgm down", |t| t.contains("gpu_exporter_dcgm_up 0"));
    assert!(text.contains("DCGM_FI_DEV_GPU_TEMP{"), "{text}");
    assert!(
        at(&text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_none(),
        "{text}"
    );
    one_version_error(&e, "3.3.9");
}

/// `dcgm-sim-hostengine` serving `scenario` on the unix socket `sock`.
fn hostengine(scenario: &str, sock: &Path) -> Child {
    let _ = std::fs::remove_file(sock);
    let child = Command::new(built("dcgm-sim-hostengine"))
        .args([
            "--scenario",
            scenario,
            "--domain-socket",
            sock.to_str().unwrap(),
            "-n",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sock.exists() {
        assert!(
            Instant::now() < deadline,
            "the hostengine never made {}",
            sock.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

#[test]
fn remote_hostengine_that_leaves_and_returns() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("he.sock");
    let mut he = hostengine("a100-l4", &sock);
    let e = simulated(
        "a100-l4",
        DCP,
        &["-r", &format!("unix://{}", sock.display())],
    );
    let prof = |t: &str| at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_some();
    let nvml = |t: &str| {
        at(t, "DCGM_FI_DEV_GPU_TEMP", "0", None).is_some()
            && at(t, "DCGM_FI_DEV_GPU_TEMP", "1", None).is_some()
    };
    let text = e.metrics_until("remote profiling", prof);
    assert!(text.contains("gpu_exporter_dcgm_up 1"), "{text}");

    he.kill().unwrap();
    he.wait().unwrap();
    // NVML never gaps while DCGM is away; DCGM's series go, and dcgm_up says so.
    let gone = e.metrics_until("DCGM series gone", |t| {
        assert!(nvml(t), "an NVML series gapped:\n{t}");
        !prof(t) && t.contains("gpu_exporter_dcgm_up 0")
    });
    assert!(nvml(&gone));
    he = hostengine("a100-l4", &sock);
    let back = e.metrics_until("DCGM series back", |t| {
        assert!(nvml(t), "an NVML series gapped:\n{t}");
        prof(t) && t.contains("gpu_exporter_dcgm_up 1")
    });
    assert!(nvml(&back));
    let count = |needle: &str| e.log().lines().filter(|l| l.contains(needle)).count();
    common::wait_until("the log to say DCGM is back", || count("DCGM answers") >= 2);
    let log = e.log();
    assert_eq!(count("DCGM is unavailable"), 1, "{log}");
    assert_eq!(count("DCGM answers"), 2, "start, and back:\n{log}");
    he.kill().unwrap();
    he.wait().unwrap();
}

/// `/status` of `e`, parsed.
fn status_of(e: &Exporter) -> serde_json::Value {
    let r = common::http_get(e.port, "/status", &[]).expect("/status");
    assert_eq!(r.status, 200, "{}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// The `dcgm` entry of `/status`'s sources, once `state` is `want` (a deadline of 60 s: the
/// reconnection backoff grows to 8 s and more while the hostengine is away).
fn dcgm_until(e: &Exporter, want: &str) -> (serde_json::Value, serde_json::Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = status_of(e);
        let entry = st["sources"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["source"] == "dcgm"))
            .cloned()
            .unwrap_or_else(|| panic!("no dcgm entry among the sources: {st}"));
        if entry["state"] == want {
            return (st, entry);
        }
        assert!(
            Instant::now() < deadline,
            "DCGM never {want}: {entry}\nlog:\n{}",
            e.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The landing page of `e`.
fn page_of(e: &Exporter) -> String {
    let r = common::http_get(e.port, "/", &[]).expect("/");
    assert_eq!(r.status, 200);
    r.text()
}

/// `gpu-exporter check` with the GPU Operator's environment of [`operator_env`] and `-r`
/// `remote`: (exit code, report).
fn operator_check(remote: &str) -> (Option<i32>, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(["check", "--simulate", "a100-mig-t4"])
        .args(["-a", &format!("127.0.0.1:{}", common::free_port())])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    for (k, v) in operator_env(remote) {
        cmd.env(k, v);
    }
    common::run_to_text(&mut cmd)
}

/// What the GPU Operator sets on dcgm-exporter's container, with the hostengine at `remote`.
fn operator_env(remote: &str) -> [(&'static str, String); 4] {
    [
        ("DCGM_EXPORTER_KUBERNETES", "true".into()),
        ("DCGM_EXPORTER_COLLECTORS", DCP.into()),
        ("DCGM_REMOTE_HOSTENGINE_INFO", remote.into()),
        ("NODE_NAME", "n1".into()),
    ]
}

/// What every surface says while DCGM is down at `remote`, after `entry` (`/status`'s dcgm
/// source) was seen down with `st`: the source with its mode, address, error and since when;
/// each profiling value it should serve in `unavailable` with that error; the MIG instances'
/// utilization saying why it is missing; the page's status line ("Ready, degraded") and DCGM's
/// row; `/ready` 200.
fn says_dcgm_down(e: &Exporter, st: &serde_json::Value, entry: &serde_json::Value, remote: &str) {
    assert_eq!(entry["mode"], "remote", "{entry}");
    assert_eq!(entry["address"], remote, "{entry}");
    assert_eq!(entry["up"], false, "{entry}");
    let error = entry["last_error"].as_str().unwrap_or_default().to_owned();
    assert!(!error.is_empty(), "{entry}");
    assert!(entry["since_unix"].as_f64().unwrap() > 0.0, "{entry}");
    assert!(entry["since_seconds"].as_f64().unwrap() >= 0.0, "{entry}");
    // Every profiling row of the file on the A100's four instances and the T4 (not the A100
    // itself: in MIG mode profiling is per instance), with DCGM's error.
    let unavailable = st["unavailable"].as_array().unwrap();
    assert_eq!(unavailable.len(), 5 * 5, "{st}");
    for u in unavailable {
        assert_eq!(
            u["reason"].as_str(),
            Some(format!("DCGM is down: {error}").as_str()),
            "{u}"
        );
    }
    assert!(
        unavailable
            .iter()
            .any(|u| u["field"] == "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
                && u["gpu"] == 0
                && u["gpu_instance_id"] == 2),
        "{st}"
    );
    for i in st["gpus"][0]["instances"].as_array().unwrap() {
        let r = &i["reading"];
        assert!(r["util_percent"].is_null(), "{i}");
        assert_eq!(r["util_missing"]["source"], "dcgm", "{i}");
        assert_eq!(r["util_missing"]["why"], "DCGM down", "{i}");
        assert_eq!(
            r["util_missing"]["detail"].as_str(),
            Some(format!("DCGM is down: {error}").as_str()),
            "{i}"
        );
    }
    a100_says_per_instance(st);
    let page = page_of(e);
    assert!(
        page.contains("<b class=\"warning\">Ready, degraded</b>"),
        "{page}"
    );
    assert!(
        page.contains(" · DCGM <b class=\"critical\">down</b>"),
        "{page}"
    );
    assert!(
        page.contains("<b class=\"critical\">DCGM is down</b> since "),
        "{page}"
    );
    assert!(
        page.contains("<tr id=\"dcgm\"><td>dcgm<br><small>remote, "),
        "{page}"
    );
    // The instances' utilization cells: why, linked to DCGM's row, not a bare dash.
    assert!(
        page.matches(">DCGM down</a>").count() == 4,
        "one per A100 instance:\n{page}"
    );
    assert!(page.contains("Values DCGM did not serve"), "{page}");
    assert_eq!(common::http_get(e.port, "/ready", &[]).unwrap().status, 200);
}

/// The A100 in MIG mode, whose utilization NVML does not give as a whole, says so (DCGM up or
/// down).
fn a100_says_per_instance(st: &serde_json::Value) {
    let missing = &st["gpus"][0]["reading"]["util_missing"];
    assert_eq!(
        (&missing["source"], &missing["why"]),
        (&"nvml".into(), &"per MIG instance".into()),
        "{st}"
    );
}

/// `check`'s report while DCGM is down at `remote`: the hostengine fails with its fix about that
/// address, no profiling field is `ok` (served on 0 of 6 entities fails), and the GPM lines'
/// hints are about the hostengine at that address, not about giving `-r`.
fn check_says_dcgm_down(remote: &str) {
    let (code, out) = operator_check(remote);
    assert_eq!(code, Some(1), "{out}");
    let line = |words: &[&str]| {
        out.lines()
            .position(|l| words.iter().all(|w| l.contains(w)))
            .unwrap_or_else(|| panic!("no line with {words:?}:\n{out}"))
    };
    line(&[
        "FAIL",
        "hostengine",
        "does not answer",
        "down for",
        "tick(s) without an answer",
    ]);
    line(&[
        "fix:",
        &format!("start nv-hostengine at {remote}"),
        "address it listens on",
    ]);
    line(&[
        "FAIL",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "served on 0/6",
        "DCGM down",
    ]);
    assert!(
        !out.lines()
            .any(|l| l.contains("ok ") && l.contains("DCGM_FI_PROF_")),
        "a profiling field served nowhere is ok:\n{out}"
    );
    let gpm = line(&["WARN", "GPU 0 GPM", "is down"]);
    let fix = out.lines().nth(gpm + 1).unwrap();
    assert!(
        fix.contains(&format!("once the hostengine at {remote} answers")),
        "{out}"
    );
    assert!(
        !out.contains("give the hostengine's address with -r"),
        "{out}"
    );
}

/// DCGM on every surface, as the GPU Operator runs the exporter (its environment, a remote
/// hostengine) on an A100 in MIG mode and a T4: the hostengine not started yet, then started,
/// then killed mid-run, then started again. Down, the page, `/status` and `check` each say
/// so, with the error and since when, and list the profiling values it does not serve; up,
/// none of that, and the values are there.
#[test]
fn dcgm_down_up_killed_and_back_on_the_page_status_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("he.sock");
    let remote = format!("unix://{}", sock.display());
    let mut builder = Exporter::builder()
        .args(["--simulate", "a100-mig-t4", "-c", "300"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .log_pipe();
    for (k, v) in operator_env(&remote) {
        builder = builder.env(k, v);
    }
    let e = builder.start();

    // Never started.
    let (st, down) = dcgm_until(&e, "down");
    assert!(
        down["last_error"]
            .as_str()
            .is_some_and(|m| m.contains(&format!("the hostengine at {remote} does not answer"))),
        "{down}"
    );
    assert!(down["age_seconds"].is_null(), "never answered: {down}");
    says_dcgm_down(&e, &st, &down, &remote);
    check_says_dcgm_down(&remote);

    // Started: up, nothing unavailable, the values on the page, check clean.
    let mut he = hostengine("a100-mig-t4", &sock);
    let (st, up) = dcgm_until(&e, "up");
    assert_eq!(up["up"], true, "{up}");
    assert!(up["last_error"].is_null(), "{up}");
    assert!(
        up["since_unix"].as_f64() > down["since_unix"].as_f64(),
        "{up} after {down}"
    );
    let st = if st["unavailable"].as_array().unwrap().is_empty() {
        st
    } else {
        // The first tick after connecting makes the watches; values follow.
        std::thread::sleep(Duration::from_secs(1));
        status_of(&e)
    };
    assert_eq!(st["unavailable"], serde_json::json!([]), "{st}");
    a100_says_per_instance(&st);
    for i in st["gpus"][0]["instances"].as_array().unwrap() {
        assert!(i["reading"]["util_percent"].as_f64().is_some(), "{i}");
        assert!(i["reading"].get("util_missing").is_none(), "{i}");
    }
    let page = page_of(&e);
    assert!(page.contains("<b class=\"ok\">Ready</b>"), "{page}");
    assert!(
        page.contains(" · DCGM <span class=\"ok\">up</span>"),
        "{page}"
    );
    assert!(
        !page.contains("DCGM is down") && !page.contains(">DCGM down</a>"),
        "{page}"
    );
    let (code, out) = operator_check(&remote);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.lines().any(|l| l.contains("ok ")
            && l.contains("DCGM_FI_PROF_GR_ENGINE_ACTIVE")
            && l.contains("served on 5/6")),
        "{out}"
    );

    // Killed mid-run: down again, since the kill, with the error.
    he.kill().unwrap();
    he.wait().unwrap();
    let (st, lost) = dcgm_until(&e, "down");
    assert!(
        lost["since_unix"].as_f64() > up["since_unix"].as_f64(),
        "{lost} after {up}"
    );
    assert!(
        lost["age_seconds"].as_f64().is_some(),
        "it answered before: {lost}"
    );
    says_dcgm_down(&e, &st, &lost, &remote);
    check_says_dcgm_down(&remote);

    // Back.
    he = hostengine("a100-mig-t4", &sock);
    let (_, back) = dcgm_until(&e, "up");
    assert!(back["last_error"].is_null(), "{back}");
    assert!(
        back["since_unix"].as_f64() > lost["since_unix"].as_f64(),
        "{back} after {lost}"
    );
    e.metrics_until("profiling back", |t| {
        t.contains("gpu_exporter_dcgm_up 1")
            && at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", Some("2")).is_some()
    });
    he.kill().unwrap();
    he.wait().unwrap();
}

/// What the simulated hostengine at `sock` holds for its clients: (entity groups, field
/// groups, watched entity-field pairs), asked through its socket (the stand-in's own `Census`
/// request: a 4-byte big-endian length and JSON).
fn hostengine_census(sock: &Path) -> (u64, u64, u64) {
    use std::io::{Read, Write};
    let mut s = std::os::unix::net::UnixStream::connect(sock).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let body = br#""Census""#;
    s.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut reply = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut reply).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&reply).unwrap();
    let c = &v["Ok"]["Census"];
    let n = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {v}"));
    (n("groups"), n("field_groups"), n("watches"))
}

/// An A100 (DCGM serves its profiling) and an L4, the A100 unbound from its driver and bound again,
/// against a remote hostengine. The exporter starts while it is away (so its DCGM session
/// lists only the L4), then it returns, leaves again and returns again. Each time it is back,
/// its profiling series resume under the same labels as the first time, without a restart or a
/// reconnect. While it is away the L4's profiling series carry the L4's UUID at index 0, and
/// the hostengine watches fewer fields (the absent GPU's watches are unwatched, not only their
/// groups destroyed); after each return it holds exactly the groups, field groups and watches
/// it held after the first.
#[test]
fn a_gpu_bound_again_gets_its_dcgm_watches_back_and_none_leak() {
    let dir = tempfile::tempdir().unwrap();
    // An A100 and an L4 as in a100-l4, without its pods (the simulated cluster resolves a
    // pod's GPU through NVML when it starts, and the A100 is away then).
    let scenario = dir.path().join("rebind-dcgm.toml");
    std::fs::write(
        &scenario,
        "name = \"rebind-dcgm\"\nnode = \"sim-rebind-dcgm\"\n\
         [[gpus]]\nmodel = \"A100-SXM4-40GB\"\nworkload = { kind = \"training\", level = 0.9 }\n\
         [[gpus]]\nmodel = \"L4\"\nworkload = { kind = \"inference\", level = 0.5 }\n\
         [[faults]]\nat = 0\nuntil = 8\ngpu = 0\nkind = \"unbind\"\n\
         [[faults]]\nat = 16\nuntil = 22\ngpu = 0\nkind = \"unbind\"\n",
    )
    .unwrap();
    let sock = dir.path().join("he.sock");
    // The hostengine first: its scenario clock runs a little ahead of the exporter's, so a
    // GPU is back in DCGM when NVML shows it again.
    let mut he = hostengine(scenario.to_str().unwrap(), &sock);
    let e = simulated(
        scenario.to_str().unwrap(),
        DCP,
        &["-r", &format!("unix://{}", sock.display())],
    );
    const PROF: &str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
    let keys = |t: &str| -> std::collections::BTreeSet<String> {
        series(t, PROF)
            .into_iter()
            .map(|l| l.rsplit_once(' ').map_or(l, |(k, _)| k).to_owned())
            .collect()
    };
    let uuid = |t: &str, gpu: &str| {
        series(t, "DCGM_FI_DEV_GPU_TEMP")
            .into_iter()
            .find(|l| label(l, "gpu") == gpu)
            .map(|l| label(l, "UUID").to_owned())
    };
    // Started with the A100 away: the L4 alone, at index 0.
    let alone = e.metrics_until("the L4 alone, with profiling", |t| {
        series(t, "DCGM_FI_DEV_GPU_TEMP").len() == 1 && at(t, PROF, "0", None).is_some()
    });
    let l4 = uuid(&alone, "0").unwrap();
    let both = |t: &str| {
        series(t, "DCGM_FI_DEV_GPU_TEMP").len() == 2
            && at(t, PROF, "0", None).is_some()
            && at(t, PROF, "1", None).is_some()
    };
    let first = e.metrics_until("the A100 back with its DCGM profiling", both);
    let a100 = uuid(&first, "0").unwrap();
    assert_eq!(uuid(&first, "1").as_deref(), Some(l4.as_str()), "{first}");
    let first_keys = keys(&first);
    // Two ticks later the watches are settled.
    std::thread::sleep(Duration::from_secs(2));
    let full = hostengine_census(&sock);
    let gone = e.metrics_until("the A100 away again", |t| {
        series(t, "DCGM_FI_DEV_GPU_TEMP").len() == 1
    });
    for l in series(&gone, PROF) {
        assert_eq!(
            label(l, "UUID"),
            l4,
            "only the L4 while the A100 is away: {l}"
        );
        assert_eq!(label(l, "gpu"), "0", "the L4 at index 0: {l}");
    }
    common::wait_until("the hostengine to watch fewer fields", || {
        let c = hostengine_census(&sock);
        c.2 < full.2
    });
    let back = e.metrics_until("the A100 back again", |t| both(t) && keys(t) == first_keys);
    assert_eq!(uuid(&back, "0").as_deref(), Some(a100.as_str()), "{back}");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(
        hostengine_census(&sock),
        full,
        "(groups, field groups, watches) after the second return against after the first"
    );
    assert!(
        !e.log().contains("does not list this GPU"),
        "no refusal for the returned GPU:\n{}",
        e.log()
    );
    he.kill().unwrap();
    he.wait().unwrap();
}

#[test]
fn a_hostengine_that_never_answers_does_not_stall_the_ticks() {
    // A socket that accepts connections and never answers: every DCGM call waits.
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("silent.sock");
    let listener = std::os::unix::net::UnixListener::bind(&sock).unwrap();
    let held = std::thread::spawn(move || {
        let mut conns = Vec::new();
        for c in listener.incoming().take(64) {
            match c {
                Ok(c) => conns.push(c),
                Err(_) => break,
            }
        }
    });
    let e = simulated(
        "a100-l4",
        DCP,
        &["-r", &format!("unix://{}", sock.display())],
    );
    ticks_go_on_without_dcgm(&e);
    let log = e.log();
    assert_eq!(log.matches("DCGM is unavailable").count(), 1, "{log}");
    drop(e);
    drop(held);
}

/// An embedded host engine whose calls block inside the library for 6 s (the scenario's
/// `hang` fault): the ticks go on within their interval with NVML's series, the DCGM series go
/// absent and `gpu_exporter_dcgm_up` 0 (logged once), `/ready` stays 200; once the calls
/// return, DCGM's series come back (logged once).
#[test]
fn an_embedded_call_that_blocks_stalls_neither_the_ticks_nor_ready() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let file = a100_l4_with(
        dir.path(),
        "[[dcgm_faults]]\nkind = \"hang\"\nat = 4\nuntil = 10\n",
    );
    let e = simulated(file.to_str().unwrap(), DCP, &[]);
    e.metrics_until("profiling before the hang", |t| {
        at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_some()
    });
    ticks_go_on_without_dcgm(&e);
    e.metrics_until("profiling back after the hang", |t| {
        t.contains("gpu_exporter_dcgm_up 1")
            && at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_some()
    });
    let log = e.log();
    assert_eq!(log.matches("DCGM is unavailable").count(), 1, "{log}");
    assert_eq!(log.matches("DCGM answers").count(), 2, "{log}");
}

#[test]
fn the_gpu_operators_setting_alone_gives_profiling_through_the_loaders_libdcgm() {
    // As on a node: no --simulate, no DCGM flag. libdcgm.so.4 is found through
    // LD_LIBRARY_PATH, and DCGM_REMOTE_HOSTENGINE_INFO (what the GPU Operator sets) names the
    // hostengine.
    let dir = tempfile::tempdir().unwrap();
    let libdir = dir.path().join("lib");
    std::fs::create_dir(&libdir).unwrap();
    std::os::unix::fs::symlink(built("libdcgm_sim.so"), libdir.join("libdcgm.so.4")).unwrap();
    let sock = dir.path().join("he.sock");
    let mut he = hostengine("a100-l4", &sock);
    let e = Exporter::builder()
        .args(["-f", DCP, "-c", "300"])
        .env("NVML_SIM_SCENARIO", "a100-l4")
        .env("LD_LIBRARY_PATH", &libdir)
        .env(
            "DCGM_REMOTE_HOSTENGINE_INFO",
            format!("unix://{}", sock.display()),
        )
        .log_pipe()
        .start();
    let text = e.metrics_until("profiling on the A100 and the L4", |t| {
        at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_some()
            && at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "1", None).is_some()
    });
    assert!(text.contains("gpu_exporter_dcgm_up 1"), "{text}");
    let log = e.log();
    let loaded = log
        .lines()
        .find(|l| l.contains("DCGM library loaded"))
        .unwrap_or_default();
    assert!(
        loaded.contains("libdcgm.so.4 through the dynamic loader")
            && loaded.contains(libdir.to_str().unwrap()),
        "{log}"
    );
    assert!(
        !log.contains("is accepted for dcgm-exporter compatibility but"),
        "{log}"
    );
    he.kill().unwrap();
    he.wait().unwrap();
}

#[test]
fn a_counters_reload_makes_the_watches_again() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("prof.csv");
    std::fs::write(&csv, "DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, engine\n").unwrap();
    let e = simulated("a100-l4", csv.to_str().unwrap(), &[]);
    e.metrics_until("engine activity on the A100", |t| {
        at(t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "0", None).is_some()
    });
    std::fs::write(
        &csv,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, engine\n\
         DCGM_FI_PROF_DRAM_ACTIVE, gauge, dram\n",
    )
    .unwrap();
    e.signal("-HUP");
    let text = e.metrics_until("memory activity on both GPUs after the reload", |t| {
        at(t, "DCGM_FI_PROF_DRAM_ACTIVE", "0", None).is_some()
            && at(t, "DCGM_FI_PROF_DRAM_ACTIVE", "1", None).is_some()
    });
    assert!(
        at(&text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "1", None).is_some(),
        "{text}"
    );
    assert!(!e.log().contains("DCGM is unavailable"), "{}", e.log());
}

/// A counters file with one NVML field and the health family.
const HEALTH_CSV: &str = "DCGM_FI_DEV_GPU_TEMP, gauge, temperature\n\
                          DCGM_EXP_GPU_HEALTH_STATUS, gauge, health per watch\n";

/// GPU `gpu`'s health series: (health_watch, health_error_code, value), in exposition order.
fn health(text: &str, gpu: &str) -> Vec<(String, String, f64)> {
    series(text, "DCGM_EXP_GPU_HEALTH_STATUS")
        .into_iter()
        .filter(|l| label(l, "gpu") == gpu)
        .map(|l| {
            (
                label(l, "health_watch").to_owned(),
                label(l, "health_error_code").to_owned(),
                value(l),
            )
        })
        .collect()
}

/// The value and code of one watch of GPU `gpu`.
fn watch(text: &str, gpu: &str, name: &str) -> Option<(String, f64)> {
    health(text, gpu)
        .into_iter()
        .find(|(w, _, _)| w == name)
        .map(|(_, c, v)| (c, v))
}

/// Every watch of GPU `gpu` passes.
fn all_pass(text: &str, gpu: &str) -> bool {
    let h = health(text, gpu);
    h.len() == 11 && h.iter().all(|(_, c, v)| c == "DCGM_FR_OK" && *v == 0.0)
}

/// DCGM's health watches on a healthy simulated A100 and L4: eleven series per GPU in
/// dcgm-exporter's shape, all passing; a link that goes down fails NVLINK with
/// DCGM_FR_NVLINK_DOWN and passes again when it is back; an Xid 48 (double-bit ECC) fails ALL
/// with DCGM_FR_XID_ERROR on its GPU only.
#[test]
fn health_watches_pass_then_follow_the_fault_timeline() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("health.csv");
    std::fs::write(&csv, HEALTH_CSV).unwrap();
    let file = a100_l4_with(
        dir.path(),
        "[[faults]]\nat = 6\ngpu = 0\nkind = \"nvlink_down\"\nlink = 3\nuntil = 12\n\
         [[faults]]\nat = 6\ngpu = 1\nkind = \"xid\"\nxid = 48\n",
    );
    let e = simulated(file.to_str().unwrap(), csv.to_str().unwrap(), &[]);
    let healthy = e.metrics_until("health on both GPUs", |t| {
        !health(t, "0").is_empty() && !health(t, "1").is_empty()
    });
    assert!(healthy.contains("gpu_exporter_dcgm_up 1"), "{healthy}");
    for gpu in ["0", "1"] {
        assert!(all_pass(&healthy, gpu), "{healthy}");
        let watches: Vec<String> = health(&healthy, gpu).into_iter().map(|h| h.0).collect();
        assert_eq!(
            watches,
            [
                "PCIE", "NVLINK", "PMU", "MCU", "MEM", "SM", "INFOROM", "THERMAL", "POWER",
                "DRIVER", "ALL"
            ],
            "{healthy}"
        );
    }
    let line = series(&healthy, "DCGM_EXP_GPU_HEALTH_STATUS")[0];
    // Native's lean shape: the identity, the model on gpu_device_info only.
    assert!(
        line.contains("UUID=\"GPU-") && !line.contains("modelName="),
        "{line}"
    );
    assert!(
        healthy.contains("# TYPE DCGM_EXP_GPU_HEALTH_STATUS gauge"),
        "{healthy}"
    );

    let down = e.metrics_until("NVLINK failing on GPU 0", |t| {
        watch(t, "0", "NVLINK").is_some_and(|(_, v)| v == 20.0)
    });
    assert_eq!(
        watch(&down, "0", "NVLINK"),
        Some(("DCGM_FR_NVLINK_DOWN".to_owned(), 20.0))
    );
    assert_eq!(
        watch(&down, "0", "MEM"),
        Some(("DCGM_FR_OK".to_owned(), 0.0))
    );
    let xid = e.metrics_until("ALL failing on GPU 1", |t| {
        watch(t, "1", "ALL").is_some_and(|(_, v)| v == 20.0)
    });
    assert_eq!(
        watch(&xid, "1", "ALL"),
        Some(("DCGM_FR_XID_ERROR".to_owned(), 20.0))
    );
    assert_eq!(
        watch(&xid, "0", "ALL"),
        Some(("DCGM_FR_OK".to_owned(), 0.0))
    );
    e.metrics_until("GPU 0 passing again once the link is back", |t| {
        all_pass(t, "0")
    });
}

/// Without DCGM the health series are computed from NVML by the health model (issue 28;
/// docs/health.md has the mapping), in the same shape: with `--dcgm-mode off` (and no
/// `gpu_exporter_dcgm_up`), with a library that cannot be loaded (`gpu_exporter_dcgm_up 0`),
/// and after a remote hostengine goes away (`gpu_exporter_dcgm_up 0`), every watch of the
/// healthy A100 and L4 passes, and NVML's series go on.
#[test]
fn health_series_fall_back_to_nvml_without_dcgm() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("health.csv");
    std::fs::write(&csv, HEALTH_CSV).unwrap();
    let csv = csv.to_str().unwrap();
    let temp = |t: &str| at(t, "DCGM_FI_DEV_GPU_TEMP", "0", None).is_some();
    let passing = |t: &str| all_pass(t, "0") && all_pass(t, "1");
    let off = simulated("a100-l4", csv, &["--dcgm-mode", "off"]);
    let text = off.metrics_until("health computed from NVML", |t| temp(t) && passing(t));
    assert!(!text.contains("gpu_exporter_dcgm_up"), "{text}");
    drop(off);

    let missing = "/nonexistent/dcgm/libdcgm.so.4";
    let nolib = simulated(
        "a100-l4",
        csv,
        &["--dcgm-mode", "embedded", "--dcgm-lib", missing],
    );
    nolib.metrics_until("DCGM down, health from NVML", |t| {
        temp(t) && t.contains("gpu_exporter_dcgm_up 0") && passing(t)
    });
    drop(nolib);

    let sock = dir.path().join("he.sock");
    let mut he = hostengine("a100-l4", &sock);
    let e = simulated(
        "a100-l4",
        csv,
        &["-r", &format!("unix://{}", sock.display())],
    );
    let text = e.metrics_until("remote health", passing);
    assert!(text.contains("gpu_exporter_dcgm_up 1"), "{text}");
    he.kill().unwrap();
    he.wait().unwrap();
    e.metrics_until("health from NVML once the hostengine is gone", |t| {
        t.contains("gpu_exporter_dcgm_up 0") && temp(t) && passing(t)
    });
}

/// Switch-level NVSwitch rows and a GPU row.
const SWITCH_CSV: &str = "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature.\n\
DCGM_FI_DEV_SXID_FATAL_ERROR, gauge, Last fatal SXid.\n\
DCGM_FI_DEV_SXID_NON_FATAL_ERROR, gauge, Last non-fatal SXid.\n\
DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS, gauge, NVSwitch temperature.\n\
DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX, counter, Bytes the NVSwitch sent.\n";

const SWITCH_ROWS: [&str; 4] = [
    "DCGM_FI_DEV_SXID_FATAL_ERROR",
    "DCGM_FI_DEV_SXID_NON_FATAL_ERROR",
    "DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS",
    "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX",
];

/// The counters file `text`, as `name` in `dir`.
fn csv_in(dir: &Path, name: &str, text: &str) -> String {
    let csv = dir.join(name);
    std::fs::write(&csv, text).unwrap();
    csv.to_str().unwrap().to_owned()
}

/// The counters file of switch rows, in `dir`.
fn switch_csv(dir: &Path) -> String {
    csv_in(dir, "nvswitch.csv", SWITCH_CSV)
}

/// A simulated hostengine on `scenario` at a socket in `dir`, and its `-r` address.
fn hostengine_in(dir: &Path, scenario: &str) -> (Child, String) {
    let sock = dir.join("he.sock");
    let he = hostengine(scenario, &sock);
    (he, format!("unix://{}", sock.display()))
}

/// The value of `name` on switch `id` (`nvswitch<id>`), if the scrape has it.
fn on_switch(text: &str, name: &str, id: u32) -> Option<f64> {
    let want = format!("nvswitch{id}");
    series(text, name)
        .into_iter()
        .find(|l| common::label_opt(l, "nvswitch") == Some(want.as_str()))
        .map(value)
}

/// The line of `gpu-exporter check --simulate scenario -f csv more` that names `field`.
fn check_row(scenario: &str, csv: &str, more: &[&str], field: &str) -> String {
    let address = format!("127.0.0.1:{}", common::free_port());
    let out = Command::new(BIN)
        .args(["check", "-a", &address, "--simulate", scenario, "-f", csv])
        .args(more)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let row = report.lines().find(|l| l.contains(field));
    row.unwrap_or_else(|| panic!("{report}")).to_owned()
}

/// Checks the series of `name` in `text` are `want` (name and labels), in any order.
fn assert_series_are(text: &str, name: &str, mut want: Vec<String>) {
    let mut got: Vec<String> = series(text, name)
        .iter()
        .map(|l| l.rsplit_once(' ').unwrap().0.to_owned())
        .collect();
    want.sort();
    got.sort();
    assert_eq!(got, want, "{text}");
}

/// Checks every switch row has exactly one series per switch of hgx-h200, each labelled with
/// its own id and the host label `host` only, and that the SXid fault shows on switch 2 only.
fn check_switch_series(text: &str, host: &str) {
    for name in SWITCH_ROWS {
        let want = (0..4)
            .map(|i| format!("{name}{{nvswitch=\"nvswitch{i}\",{host}=\"sim-hgx-h200-node\"}}"))
            .collect();
        assert_series_are(text, name, want);
    }
    let sxid: Vec<Option<f64>> = (0..4)
        .map(|i| on_switch(text, "DCGM_FI_DEV_SXID_NON_FATAL_ERROR", i))
        .collect();
    assert_eq!(
        sxid,
        vec![Some(0.0), Some(0.0), Some(20034.0), Some(0.0)],
        "{text}"
    );
    for i in 0..4 {
        assert_eq!(
            on_switch(text, "DCGM_FI_DEV_SXID_FATAL_ERROR", i),
            Some(0.0)
        );
        assert!(on_switch(text, "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX", i).unwrap() > 0.0);
    }
    // The GPUs' own series go on beside them.
    assert_eq!(series(text, "DCGM_FI_DEV_GPU_TEMP").len(), 8, "{text}");
}

/// hgx-h200's four NVSwitches from DCGM (embedded, then a remote hostengine): one series per
/// switch and row, each with its own id (dcgm-exporter 4.8.2 labelled every switch
/// `nvswitch0`, its issue #728), the host label of the profile, and the SXid that the
/// scenario's fault puts on switch 2 on that switch only.
#[test]
fn nvswitch_series_carry_each_switchs_own_id_and_its_sxid() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let csv = switch_csv(dir.path());
    let sxid = |t: &str| on_switch(t, "DCGM_FI_DEV_SXID_NON_FATAL_ERROR", 2) == Some(20034.0);
    let e = simulated("hgx-h200", &csv, &[]);
    let text = e.metrics_until("SXid on nvswitch2", sxid);
    check_switch_series(&text, "Hostname");
    assert!(
        e.log().contains("NVSwitch fields are served by DCGM"),
        "{}",
        e.log()
    );
    drop(e);
    let row = check_row("hgx-h200", &csv, &[], "DCGM_FI_DEV_SXID_NON_FATAL_ERROR");
    assert!(
        row.contains("4 of 4 (nvswitch0, nvswitch1, nvswitch2, nvswitch3)"),
        "{row}"
    );

    let (mut he, remote) = hostengine_in(dir.path(), "hgx-h200");
    let e = simulated(
        "hgx-h200",
        &csv,
        &["-r", &remote, "--compatibility", "dcgm-4.8.4"],
    );
    let text = e.metrics_until("SXid on nvswitch2 from the hostengine", sxid);
    check_switch_series(&text, "hostname");
    drop(e);
    he.kill().unwrap();
    he.wait().unwrap();
}

/// No switch series where DCGM sees no NVSwitch (a100-l4) or is off: the rows are listed
/// unsupported on each GPU, the log says why once, and `check` says why.
#[test]
fn no_nvswitch_series_without_switches_or_without_dcgm() {
    let dir = tempfile::tempdir().unwrap();
    let csv = switch_csv(dir.path());
    let ticks = |t: &str| {
        at(t, "DCGM_FI_DEV_GPU_TEMP", "0", None).is_some()
            && !t.contains("gpu_exporter_samples_total 1\n")
            && t.contains("field=\"DCGM_FI_DEV_SXID_FATAL_ERROR\"")
    };
    for (scenario, more, why) in [
        ("a100-l4", &[][..], "lists no NVSwitch"),
        ("hgx-h200", &["--dcgm-mode", "off"][..], "--dcgm-mode off"),
    ] {
        let e = simulated(scenario, &csv, more);
        let text = e.metrics_until("two ticks with the rows unsupported", ticks);
        for name in SWITCH_ROWS {
            assert!(series(&text, name).is_empty(), "{scenario}: {text}");
            assert!(!text.contains(&format!("# TYPE {name} ")), "{text}");
        }
        assert!(
            text.contains(
                "gpu_exporter_field_unsupported{gpu=\"0\",field=\"DCGM_FI_DEV_SXID_NON_FATAL_ERROR\"} 1"
            ),
            "{scenario}: {text}"
        );
        if scenario == "a100-l4" {
            let log = e.log();
            let lines = log.lines().filter(|l| l.contains(why)).count();
            assert_eq!(lines, 1, "{log}");
        }
        drop(e);
        let row = check_row(scenario, &csv, more, "DCGM_FI_DEV_SXID_FATAL_ERROR");
        assert!(row.contains("not served") && row.contains(why), "{row}");
    }
}

/// A switch row and per-port rows of the NVSwitches.
const PORT_CSV: &str = "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX, counter, Bytes the NVSwitch sent.\n\
DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX, counter, Bytes the NVSwitch port sent.\n\
DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS, counter, Non-fatal errors of the port.\n";

/// The sum of `name` over the ports of switch `id`.
fn port_sum(text: &str, name: &str, id: u32) -> f64 {
    let want = format!("nvswitch{id}");
    series(text, name)
        .into_iter()
        .filter(|l| common::label_opt(l, "nvswitch") == Some(want.as_str()))
        .map(value)
        .sum()
}

/// Checks the per-port rows of hgx-h200 (4 switches of 40, 32, 32, 40 up ports): one series per up
/// port, labelled `nvlink`, `nvswitch`, then the host label `host`, in that order; switch 2's
/// SXid counted on its port 0 only; and the ports' bytes adding up to their switch's (the
/// ports are read after the switches in a tick, before the next tick's switches).
fn check_port_series(text: &str, later: &str, host: &str) {
    for name in [
        "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX",
        "DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS",
    ] {
        let want = [40, 32, 32, 40]
            .into_iter()
            .enumerate()
            .flat_map(|(s, n)| (0..n).map(move |p| (s, p)))
            .map(|(s, p)| {
                format!(
                    "{name}{{nvlink=\"{p}\",nvswitch=\"nvswitch{s}\",{host}=\"sim-hgx-h200-node\"}}"
                )
            })
            .collect();
        assert_series_are(text, name, want);
    }
    let errors = series(text, "DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS");
    let counted: Vec<&str> = errors.iter().filter(|l| value(l) > 0.0).copied().collect();
    assert_eq!(counted.len(), 1, "{text}");
    assert!(
        counted[0].contains("nvlink=\"0\",nvswitch=\"nvswitch2\""),
        "{text}"
    );
    for s in 0..4 {
        let ports = port_sum(text, "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX", s);
        let now = on_switch(text, "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX", s).unwrap();
        let next = on_switch(later, "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX", s).unwrap();
        assert!(ports > 0.0, "{text}");
        assert!(now <= ports && ports <= next, "{now} ≤ {ports} ≤ {next}");
    }
}

/// The per-port NVSwitch rows (DCGM's link entities under each switch), embedded then from a
/// remote hostengine: one series per up port of each switch, with dcgm-exporter's link
/// labels, the ports' traffic adding up to the switch's, and an SXid on one port's errors.
#[test]
fn nvswitch_port_series_one_per_up_port_adding_up_to_the_switch() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let csv = csv_in(dir.path(), "ports.csv", PORT_CSV);
    let sxid = |t: &str| {
        series(t, "DCGM_FI_DEV_NVSWITCH_LINK_NON_FATAL_ERRORS")
            .iter()
            .any(|l| value(l) > 0.0)
    };
    let next_tick = |e: &Exporter, text: &str| {
        let before = on_switch(text, "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX", 0);
        e.metrics_until("a later tick", |t| {
            on_switch(t, "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX", 0) > before
        })
    };
    let e = simulated("hgx-h200", &csv, &[]);
    let text = e.metrics_until("an SXid on a port", sxid);
    let later = next_tick(&e, &text);
    check_port_series(&text, &later, "Hostname");
    drop(e);
    let row = check_row(
        "hgx-h200",
        &csv,
        &[],
        "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX",
    );
    assert!(row.contains("4 of 4"), "{row}");

    let (mut he, remote) = hostengine_in(dir.path(), "hgx-h200");
    let more = ["-r", &remote, "--compatibility", "dcgm-4.8.4"];
    let e = simulated("hgx-h200", &csv, &more);
    let text = e.metrics_until("an SXid on a port from the hostengine", sxid);
    let later = next_tick(&e, &text);
    check_port_series(&text, &later, "hostname");
    drop(e);
    he.kill().unwrap();
    he.wait().unwrap();
}

/// The switches and their ports are listed again while the exporter runs (every 10 s): a port
/// that goes down loses its series at the next listing and gets them back once it is up again,
/// each change logged once, and the other ports' series never gap.
#[test]
fn a_port_that_goes_down_and_returns_is_seen_without_a_reconnect() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let csv = csv_in(dir.path(), "ports.csv", PORT_CSV);
    let down = "[[dcgm_faults]]\nkind = \"nvswitch_port_down\"\nat = 2\nuntil = 15\nswitch = 1\nport = 3\n";
    let file = scenario_with(dir.path(), "hgx-h200", down);
    let e = simulated(file.to_str().unwrap(), &csv, &[]);
    let ports = |t: &str| series(t, "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX").len();
    let has = |t: &str| {
        series(t, "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX")
            .iter()
            .any(|l| label(l, "nvswitch") == "nvswitch1" && label(l, "nvlink") == "3")
    };
    let first = e.metrics_until("port series", |t| ports(t) > 0);
    assert_eq!(ports(&first), 144, "listed at connection, before the fault");
    let gone = e.metrics_until("switch 1's port 3 gone", |t| !has(t));
    assert_eq!(ports(&gone), 143, "only the down port goes: {gone}");
    let back = e.metrics_until("switch 1's port 3 back", has);
    assert_eq!(ports(&back), 144);
    let log = e.log();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("DCGM now lists"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per change: {log}");
    assert!(
        lines[0].contains("143 up ports (was 4 NVSwitches (0, 1, 2, 3), 144 up ports)"),
        "{log}"
    );
    assert!(
        lines[1].contains("144 up ports (was 4 NVSwitches (0, 1, 2, 3), 143 up ports)"),
        "{log}"
    );
}

/// `-s/--switch-devices` narrows the NVSwitch rows: `g:` the switches, `i:` their ports, each
/// on its own; an id the hostengine does not list and a port no chosen switch has up are named
/// in one warning (with the ids that exist) and in `check`, and the flag is not called ignored.
#[test]
fn switch_devices_narrows_switches_and_ports_and_names_what_is_not_there() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let csv = csv_in(dir.path(), "ports.csv", PORT_CSV);
    let sel = ["-s", "g:1,3,7,i:0-1,99"];
    let e = simulated("hgx-h200", &csv, &sel);
    let ports = |t: &str| !series(t, "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX").is_empty();
    let text = e.metrics_until("port series", ports);
    let switches: Vec<String> = series(&text, "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX")
        .iter()
        .map(|l| label(l, "nvswitch").to_owned())
        .collect();
    assert_eq!(switches, ["nvswitch1", "nvswitch3"], "{text}");
    let mut got: Vec<(String, String)> = series(&text, "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX")
        .iter()
        .map(|l| {
            (
                label(l, "nvswitch").to_owned(),
                label(l, "nvlink").to_owned(),
            )
        })
        .collect();
    got.sort();
    let want: Vec<(String, String)> = [("1", "0"), ("1", "1"), ("3", "0"), ("3", "1")]
        .iter()
        .map(|(s, p)| (format!("nvswitch{s}"), (*p).to_owned()))
        .collect();
    assert_eq!(got, want, "{text}");
    let log = e.log();
    let warned: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("-s/--switch-devices names"))
        .collect();
    assert_eq!(warned.len(), 1, "{log}");
    for part in ["NVSwitch 7", "it lists 0, 1, 2, 3", "port 99", "0 to 39"] {
        assert!(warned[0].contains(part), "{part}: {log}");
    }
    assert!(!log.contains("selects NVSwitches and their ports"), "{log}");
    drop(e);
    let row = check_row("hgx-h200", &csv, &sel, "-s/--switch-devices");
    assert!(row.contains("NVSwitch 7"), "{row}");
}

/// A switch's strings as `label` rows: each switch's series (switch-level and per port) carry
/// its own `DCGM_FI_DEV_NVSWITCH_UUID` and its firmware version after the host label, sorted by
/// name; the GPUs' series carry neither.
#[test]
fn switch_label_rows_label_each_switchs_series() {
    built("libdcgm_sim.so");
    let dir = tempfile::tempdir().unwrap();
    let text = format!(
        "{PORT_CSV}DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature.\n\
         DCGM_FI_DEV_NVSWITCH_UUID, label, NVSwitch UUID.\n\
         DCGM_FI_DEV_NVSWITCH_FIRMWARE_VERSION, label, NVSwitch firmware.\n"
    );
    let csv = csv_in(dir.path(), "labels.csv", &text);
    let e = simulated("hgx-h200", &csv, &[]);
    let labelled = |t: &str| {
        let s = series(t, "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX");
        !s.is_empty()
            && s.iter()
                .all(|l| common::label_opt(l, "DCGM_FI_DEV_NVSWITCH_UUID").is_some())
    };
    let text = e.metrics_until("labelled switch series", labelled);
    let mut uuids = Vec::new();
    for l in series(&text, "DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX") {
        let names: Vec<&str> = l
            .split_once('{')
            .unwrap()
            .1
            .split("\",")
            .map(|kv| kv.split_once('=').unwrap().0)
            .collect();
        assert_eq!(
            names,
            [
                "nvswitch",
                "Hostname",
                "DCGM_FI_DEV_NVSWITCH_FIRMWARE_VERSION",
                "DCGM_FI_DEV_NVSWITCH_UUID"
            ],
            "{l}"
        );
        uuids.push((
            label(l, "nvswitch").to_owned(),
            label(l, "DCGM_FI_DEV_NVSWITCH_UUID").to_owned(),
        ));
    }
    let mut distinct: Vec<&String> = uuids.iter().map(|(_, u)| u).collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 4, "{text}");
    // A port's series carry its switch's UUID.
    for l in series(&text, "DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX") {
        let sw = label(l, "nvswitch");
        let own = uuids.iter().find(|(s, _)| s == sw).unwrap();
        assert_eq!(label(l, "DCGM_FI_DEV_NVSWITCH_UUID"), own.1, "{l}");
    }
    for l in series(&text, "DCGM_FI_DEV_GPU_TEMP") {
        assert!(!l.contains("NVSWITCH"), "{l}");
    }
}
