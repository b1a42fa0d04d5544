//! The binary end to end: `--simulate` serving over a real socket, graceful SIGTERM, a
//! malformed counters CSV stopping start-up with a message naming the line, dcgm-exporter's
//! flags and variables as Go's flag library reads them (the ones without meaning here warned
//! once each), the compatibility profiles and `--config-file`.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{BIN, Exporter, http_get};

/// Starts `--simulate` on a free port and waits until `/ready` answers 200.
fn spawn_ready(node_name: Option<&str>) -> Exporter {
    spawn_ready_with(node_name, "h100-mig", &[])
}

/// As [`spawn_ready`], with a scenario and extra flags.
fn spawn_ready_with(node_name: Option<&str>, scenario: &str, extra: &[&str]) -> Exporter {
    let mut exporter = Exporter::builder()
        .args(["--simulate", scenario, "-c", "500"])
        .args(extra)
        .env_remove("NODE_NAME")
        .log_pipe();
    if let Some(n) = node_name {
        exporter = exporter.env("NODE_NAME", n);
    }
    exporter.start()
}

#[test]
fn simulate_uses_the_scenario_node_name_without_node_name() {
    let e = spawn_ready(None);
    let body = http_get(e.port, "/metrics", &[]).unwrap().text();
    drop(e);
    assert!(body.contains("Hostname=\"sim-h100-node\""));
}

#[test]
fn simulate_serves_metrics_and_stops_on_sigterm() {
    let mut e = spawn_ready(Some("test-node"));
    let port = e.port;
    let r = http_get(port, "/metrics", &[]).unwrap();
    assert_eq!(r.status, 200);
    let body = r.text();
    assert!(body.contains("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-"));
    assert!(body.contains("Hostname=\"test-node\""));
    assert!(body.contains("GPU_I_PROFILE=\"3g.40gb\""));
    let gz = http_get(port, "/metrics", &[("Accept-Encoding", "gzip")]).unwrap();
    let page = http_get(port, "/", &[]).unwrap();
    assert!(page.text().contains("NVIDIA H100 80GB HBM3"));
    assert_eq!(gz.header("Content-Encoding"), Some("gzip"));
    assert!(gz.body.starts_with(&[0x1f, 0x8b]), "not a gzip stream");

    // SAFETY-free SIGTERM through the kill command.
    let status = e.sigterm();
    let err = e.log();
    assert!(status.success(), "exit status {status:?}; stderr:\n{err}");
    assert!(err.contains("SIGTERM received"), "{err}");
}

/// The sampler waits for its next tick parked, and SIGTERM wakes it: with a tick a minute
/// away the process still ends at once, the sampler joined (not left behind as one stuck in
/// NVML would be).
#[test]
fn sigterm_wakes_a_sampler_waiting_for_a_distant_tick() {
    let mut e = spawn_ready_with(None, "a100-l4", &["-c", "60000"]);
    // The first tick has been published (ready); the next one is a minute away.
    std::thread::sleep(Duration::from_millis(300));
    let status = e.sigterm();
    let err = e.log();
    assert!(status.success(), "exit status {status:?}; stderr:\n{err}");
    // Not woken, the daemon would wait out its drain (4 s) and then leave the sampler.
    assert!(!err.contains("still inside a tick"), "{err}");
}

#[test]
fn malformed_csv_stops_startup_naming_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("bad.csv");
    std::fs::write(&csv, "# comment\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature.\nDCGM_FI_DEV_GPU_TMEP, gauge, typo\n").unwrap();
    let port = common::free_port();
    let out = Command::new(BIN)
        .args(["--simulate", "-a", &format!("127.0.0.1:{port}"), "-f"])
        .arg(&csv)
        .arg("--nvml-lib")
        .arg(common::built_sim_lib())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:3", csv.display())),
        "names file:line: {err}"
    );
    assert!(
        err.contains("DCGM_FI_DEV_GPU_TMEP"),
        "quotes the offending text: {err}"
    );
    assert!(
        err.contains("DCGM_FI_DEV_GPU_TEMP"),
        "suggests the nearest name: {err}"
    );
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "must not serve"
    );
}

#[test]
fn missing_counters_file_is_an_error_naming_the_path() {
    let out = Command::new(BIN)
        .args([
            "--simulate",
            "-a",
            "127.0.0.1:1",
            "-f",
            "/nonexistent/counters.csv",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/counters.csv"));
}

#[test]
fn bad_flag_value_names_the_flag() {
    let out = Command::new(BIN).args(["-c", "10"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--collect-interval"));
}

#[test]
fn dcgm_environment_variables_are_read() {
    let out = Command::new(BIN)
        .env("DCGM_EXPORTER_INTERVAL", "10")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    // The message names the variable that gave the value, and its flag.
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("DCGM_EXPORTER_INTERVAL (-c/--collect-interval) 10: must be at least")
    );
    let out = Command::new(BIN)
        .env("DCGM_EXPORTER_COLLECTORS", "/nonexistent/env.csv")
        .arg("--simulate")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/env.csv"));
}

#[test]
fn daemon_counts_every_xid_of_a_burst_in_real_time() {
    // The scenario runs on the wall clock: a burst of 20 x Xid 13 at 3 s, Xid 48 at 4 s.
    let scenario = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/scenarios/xid-burst.toml");
    let e = Exporter::builder()
        .arg("--simulate")
        .arg(&scenario)
        .args(["-c", "200", "-d", "g:0"])
        .spawn();
    let want13 = "xid=\"13\"} 20\n";
    let want48 = "xid=\"48\"} 1\n";
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = String::new();
    while Instant::now() < deadline {
        if let Some(r) = http_get(e.port, "/metrics", &[]) {
            last = r.text();
            let totals: Vec<&str> = last
                .lines()
                .filter(|l| l.starts_with("gpu_xid_errors_total{"))
                .collect();
            if totals.iter().any(|l| l.ends_with(want13.trim_end()))
                && totals.iter().any(|l| l.ends_with(want48.trim_end()))
            {
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(e);
    assert!(last.contains(want13), "{last}");
    assert!(last.contains(want48), "{last}");
    assert!(
        last.contains("err_code=\"48\",err_msg=\"Double Bit ECC Error\"} 48"),
        "{last}"
    );
}

#[test]
fn simulate_shows_pods_on_whole_gpus_mig_instances_and_time_sliced_gpus() {
    // The full label shape: the holder on every series of its device, as dcgm-exporter
    // writes it (the lean default has them on gpu_allocation_info only: tests/cardinality.rs).
    let e = spawn_ready_with(
        None,
        "h100-mig",
        &["--kubernetes-enable-pod-labels", "--series-labels", "full"],
    );
    // The kubelet, the pod watch and the ResourceSlice watch each answer on their own time.
    let text = e.metrics_until("pods attributed", |t| {
        t.lines().any(|l| {
            l.starts_with("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\"") && l.contains("app=\"llm-train\"")
        }) && t.contains("dra_device_name=")
    });
    drop(e);
    let util = common::series(&text, "DCGM_FI_DEV_GPU_UTIL");
    let whole = util
        .iter()
        .find(|l| common::label(l, "gpu") == "0")
        .unwrap();
    assert_eq!(common::label(whole, "pod"), "llm-train-0");
    assert_eq!(common::label(whole, "app"), "llm-train");
    let fb = common::series(&text, "DCGM_FI_DEV_FB_USED");
    let mig = fb
        .iter()
        .find(|l| common::label(l, "gpu") == "2" && common::label_opt(l, "GPU_I_ID") == Some("7"))
        .unwrap();
    assert_eq!(common::label(mig, "pod"), "chat-api-7d4b9c8f6d-x2k4p");
    // GPU 4 is time-sliced between two pods: no pod on the device series, both pods in the
    // allocation info and in the per-container families.
    let shared = util
        .iter()
        .find(|l| common::label(l, "gpu") == "4")
        .unwrap();
    assert_eq!(common::label_opt(shared, "pod"), None);
    for family in ["gpu_allocation_info", "gpu_container_memory_used_bytes"] {
        let mut pods: Vec<&str> = common::series(&text, family)
            .into_iter()
            .filter(|l| common::label(l, "gpu") == "4")
            .map(|l| common::label(l, "pod"))
            .collect();
        pods.sort();
        assert_eq!(pods, ["rerank-a", "rerank-b"], "{family}");
    }
    // The DRA claim on GPU 6, with its workload.
    let dra = common::series(&text, "gpu_allocation_info")
        .into_iter()
        .find(|l| common::label(l, "gpu") == "6")
        .unwrap();
    assert_eq!(common::label(dra, "dra_device_name"), "gpu-6");
    assert_eq!(common::label(dra, "workload_kind"), "StatefulSet");
    assert_eq!(common::label(dra, "workload_name"), "render-farm");
}

#[test]
fn hpc_job_files_label_the_series_of_their_gpus() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/hpc");
    // File 0: one job; file 1: two jobs.
    let want = [
        ("0", "slurm-1001"),
        ("1", "slurm-1002"),
        ("1", "slurm-1003"),
    ];
    let jobs = |text: &str, family: &str| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = common::series(text, family)
            .into_iter()
            .filter_map(|l| {
                Some((
                    common::label(l, "gpu").to_owned(),
                    common::label_opt(l, "hpc_job")?.to_owned(),
                ))
            })
            .collect();
        v.sort();
        v
    };
    let owned = |v: &[(&str, &str)]| -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    };
    // Lean (the default): one gpu_allocation_info row per job and GPU; the device series
    // carry no job.
    let e = spawn_ready_with(None, "a100-l4", &["--hpc-job-mapping-dir", dir]);
    let text = e.metrics_until("jobs attributed", |t| t.contains("hpc_job="));
    drop(e);
    assert_eq!(jobs(&text, "gpu_allocation_info"), owned(&want));
    assert!(jobs(&text, "DCGM_FI_DEV_GPU_UTIL").is_empty(), "{text}");
    // Full: the job on the series, so GPU 1's series come twice.
    let e = spawn_ready_with(
        None,
        "a100-l4",
        &["--hpc-job-mapping-dir", dir, "--series-labels", "full"],
    );
    let text = e.metrics_until("jobs attributed", |t| t.contains("hpc_job="));
    drop(e);
    assert_eq!(jobs(&text, "DCGM_FI_DEV_GPU_UTIL"), owned(&want));
}

/// Every flag dcgm-exporter 4.8.3 and 4.8.4 added starts the binary: the ones that mean
/// something are applied, the others are accepted with one warning each, none exits 2.
#[test]
fn dcgm_4_8_3_and_4_8_4_flags_start_the_exporter() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("config.yaml");
    std::fs::write(&yaml, "version: 1\ncollection:\n  interval: 500ms\n").unwrap();
    let e = spawn_ready_with(
        None,
        "h100-mig",
        &[
            "--web-read-timeout",
            "10s",
            "--web-write-timeout",
            "30s",
            "--max-concurrent-scrapes",
            "16",
            "--health-require-gpus",
            "--container-labels",
            "--container-runtime-socket",
            "/run/containerd/containerd.sock",
            "--watch-max-keep-age",
            "10m",
            "--watch-max-keep-samples",
            "0",
            "--dump-enabled",
            "--dump-directory",
            "/tmp/dcgm-dumps",
            "--dump-retention",
            "24",
            "--dump-compression",
            "--config-file",
            yaml.to_str().unwrap(),
        ],
    );
    let body = http_get(e.port, "/health", &[]).unwrap();
    assert_eq!(body.status, 200, "{}", body.text());
    let log = e.log();
    for flag in ["--container-labels", "--dump-enabled"] {
        let lines = log
            .lines()
            .filter(|l| {
                l.contains(flag) && l.contains("is accepted for dcgm-exporter compatibility")
            })
            .count();
        assert_eq!(lines, 1, "one warning for {flag}:\n{log}");
    }
    assert!(!log.contains("unexpected argument"), "{log}");
    // The ones applied are not said to be ignored.
    for flag in ["--web-read-timeout", "--web-write-timeout", "--config-file"] {
        assert!(
            !log.lines()
                .any(|l| l.contains(flag) && l.contains("is accepted for")),
            "{flag}: {log}"
        );
    }
}

/// `--web-read-timeout`: a client that sends half a request is disconnected when the timeout
/// passes, while a complete request on another connection is answered meanwhile; the plain
/// port speaks HTTP/1.1 only.
#[test]
fn web_read_timeout_closes_half_sent_requests() {
    use std::io::{Read, Write};
    let e = spawn_ready_with(None, "a100-l4", &["--web-read-timeout", "1s"]);
    let mut slow = std::net::TcpStream::connect(("127.0.0.1", e.port)).unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let started = std::time::Instant::now();
    assert_eq!(http_get(e.port, "/health", &[]).unwrap().status, 200);
    let mut rest = Vec::new();
    // The server closes the connection (possibly after a 408): read returns end of stream.
    let r = slow.read_to_end(&mut rest);
    let waited = started.elapsed();
    assert!(r.is_ok(), "closed, not timed out on our side: {r:?}");
    assert!(
        waited >= Duration::from_millis(900) && waited < Duration::from_secs(15),
        "{waited:?}"
    );
    // HTTP/2 with prior knowledge is not spoken on the plain port.
    let mut h2 = std::net::TcpStream::connect(("127.0.0.1", e.port)).unwrap();
    h2.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    let _ = h2.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 "),
        "{answer}"
    );
}

/// The same flags through their environment variables (how DaemonSets set them).
#[test]
fn dcgm_4_8_4_environment_variables_start_the_exporter() {
    let e = Exporter::builder()
        .args(["--simulate", "h100-mig", "-c", "500"])
        .env("DCGM_EXPORTER_WEB_READ_TIMEOUT", "10s")
        .env("DCGM_EXPORTER_WEB_WRITE_TIMEOUT", "30s")
        .env("DCGM_EXPORTER_MAX_CONCURRENT_SCRAPES", "4")
        .env("DCGM_EXPORTER_HEALTH_REQUIRE_GPUS", "true")
        .env("DCGM_EXPORTER_ENABLE_EXPORTER_METRICS", "true")
        .env("DCGM_EXPORTER_CONTAINER_LABELS", "false")
        .env("DCGM_EXPORTER_WATCH_MAX_KEEP_AGE", "10m")
        .env("DCGM_EXPORTER_WATCH_MAX_KEEP_SAMPLES", "0")
        .log_pipe()
        .start();
    assert_eq!(http_get(e.port, "/health", &[]).unwrap().status, 200);
}

/// A Go duration that does not parse is a configuration error naming the flag.
#[test]
fn bad_web_timeout_names_the_flag() {
    let out = Command::new(BIN)
        .args(["--simulate", "--web-read-timeout", "ten seconds"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--web-read-timeout \"ten seconds\": not a duration"),
        "{err}"
    );
}

/// Go's flag syntax: `-rbmn` is `--replace-blanks-in-model-name`, and long flags work with
/// one dash (`-address`, `-collect-interval=500`).
#[test]
fn go_flag_syntax_rbmn_and_single_dash_long_names() {
    let e = Exporter::builder()
        .args([
            "-simulate=h100-mig",
            "-collect-interval=500",
            "-rbmn",
            "-no-hostname",
        ])
        .log_pipe()
        .start();
    let text = e.metrics();
    assert!(
        text.contains("modelName=\"NVIDIA-H100-80GB-HBM3\""),
        "-rbmn replaces the blanks:\n{}",
        &text[..text.len().min(2000)]
    );
    assert!(!text.contains("Hostname="), "-no-hostname applies");
    assert!(!e.log().contains("host engine"), "{}", e.log());
}

/// `--enable-exporter-metrics` adds the `process_*` families, with this process's figures;
/// without it they are absent.
#[test]
fn exporter_metrics_are_the_process_families() {
    let e = spawn_ready_with(None, "h100-mig", &["--enable-exporter-metrics"]);
    let text = e.metrics_until("process_* families", |t| t.contains("process_open_fds "));
    let value = |name: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name}:\n{text}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(text.contains("# TYPE process_cpu_seconds_total counter"));
    assert!(value("process_resident_memory_bytes") > 1e6);
    assert!(value("process_virtual_memory_bytes") >= value("process_resident_memory_bytes"));
    assert!(value("process_open_fds") >= 3.0);
    assert!(value("process_threads") >= 2.0);
    let started = value("process_start_time_seconds");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    assert!(
        started > now - 300.0 && started <= now + 1.0,
        "{started} vs {now}"
    );
    // The exporter's own figure: its /proc/<pid>/limits says the same soft limit.
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", e.pid())).unwrap();
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .unwrap();
    let want = if soft == "unlimited" {
        -1.0
    } else {
        soft.parse().unwrap()
    };
    assert_eq!(value("process_max_fds"), want);
    drop(e);
    let plain = spawn_ready(None);
    assert!(!plain.metrics().contains("process_"), "off by default");
}

/// `--compatibility`: each profile writes the host label, the MIG shape and the pod-label
/// names its dcgm-exporter version writes; the default is our own shape.
#[test]
fn compatibility_profiles_change_what_dashboards_see() {
    // (profile, host label, device fields repeated on MIG instances)
    let cases = [
        (None, "Hostname", false),
        (Some("native"), "Hostname", false),
        (Some("dcgm-4.8.2"), "Hostname", true),
        (Some("dcgm-4.8.4"), "hostname", true),
        (Some("dcgm-4.9"), "hostname", true),
        (Some("dcgm-4.10"), "hostname", true),
    ];
    for (profile, host, repeated) in cases {
        let mut args = vec!["-k"];
        if let Some(p) = profile {
            args.extend(["--compatibility", p]);
        }
        let e = spawn_ready_with(Some("node-a"), "h100-mig", &args);
        // (The NVLink bandwidth, a rate, is there from the second tick.)
        let text = e.metrics_until("pods attributed, NVLink rates", |t| {
            t.contains("pod=\"") && t.contains("# TYPE DCGM_FI_DEV_NVLINK_")
        });
        let what = profile.unwrap_or("(default)");
        let other = if host == "Hostname" {
            "hostname"
        } else {
            "Hostname"
        };
        assert!(
            text.contains(&format!("{host}=\"node-a\"")),
            "{what}: {host} label"
        );
        assert!(
            !text.contains(&format!("{other}=\"")),
            "{what}: no {other} label"
        );
        // dcgm-4.9's built-in set (and 4.10's): DCGM 4.6/4.7 names in base units, the driver
        // label renamed.
        let v410 = profile == Some("dcgm-4.10");
        let v49 = profile == Some("dcgm-4.9") || v410;
        let (sm, driver) = if v49 {
            (
                "DCGM_FI_DEV_SM_CLOCK_HERTZ{",
                "DCGM_FI_SYSTEM_DRIVER_VERSION=\"",
            )
        } else {
            ("DCGM_FI_DEV_SM_CLOCK{", "DCGM_FI_DRIVER_VERSION=\"")
        };
        // The driver label: on every series under a dcgm-* profile, on gpu_device_info in
        // native's lean shape.
        let described = if profile.is_some_and(|p| p.starts_with("dcgm-")) {
            sm
        } else {
            "gpu_device_info{"
        };
        assert!(
            text.lines()
                .any(|l| l.starts_with(described) && l.contains(driver)),
            "{what}: {described} with {driver}"
        );
        assert_eq!(text.contains("DCGM_FI_DEV_GPU_TEMP{"), !v49, "{what}");
        assert_eq!(
            text.contains("DCGM_FI_DEV_FB_CAPACITY_BYTES{"),
            v49,
            "{what}"
        );
        // dcgm-4.10's: the PCIe byte rates under their ..._BYTES_PER_SECOND names, typed
        // gauge, the NVLink pair off (optional in 4.10's set).
        for dir in ["TX", "RX"] {
            let new = format!("DCGM_FI_PROF_PCIE_{dir}_BYTES_PER_SECOND");
            assert_eq!(text.contains(&format!("{new}{{")), v410, "{what}: {new}");
            assert_eq!(
                text.contains(&format!("# TYPE {new} gauge\n")),
                v410,
                "{what}: {new}"
            );
            let old = format!("DCGM_FI_PROF_PCIE_{dir}_BYTES{{");
            assert_eq!(text.contains(&old), !v410, "{what}: {old}");
        }
        assert!(!text.contains("DCGM_FI_PROF_NVLINK_TX_BYTES"), "{what}");
        // Dashboard 23382 lists MIG instances with their pods through a device field.
        let sm_on_mig = text
            .lines()
            .filter(|l| l.starts_with(sm) && l.contains("GPU_I_ID=\""))
            .filter(|l| l.contains("pod=\""))
            .count();
        assert_eq!(sm_on_mig > 0, repeated, "{what}: SM clock on MIG instances");
        // GPU 2 is MIG-enabled: its physical GPU has series of its own only in our shape
        // (dcgm-exporter represents it by its instances only), and the instance series carry
        // `mig_uuid` under every profile.
        let gpu2: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("DCGM_") && l.contains("{gpu=\"2\","))
            .collect();
        assert!(!gpu2.is_empty(), "{what}");
        assert_eq!(
            gpu2.iter().any(|l| !l.contains("GPU_I_ID=\"")),
            !repeated,
            "{what}: series of the physical GPU 2"
        );
        assert!(
            gpu2.iter()
                .filter(|l| l.contains("GPU_I_ID=\""))
                .all(|l| l.contains("mig_uuid=\"MIG-")),
            "{what}: mig_uuid on instance series"
        );
        // `# TYPE` of the NVLink bandwidth with the built-in set: the type dcgm-exporter 4.8.2
        // wrote (its file's counter), gauge for the others (ours fixed, 4.8.3+'s renderer).
        let nvlink = if v49 {
            "DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND"
        } else {
            "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL"
        };
        let kind = if profile == Some("dcgm-4.8.2") {
            "counter"
        } else {
            "gauge"
        };
        assert!(
            text.contains(&format!("# TYPE {nvlink} {kind}\n")),
            "{what}: {nvlink} typed {kind}"
        );
        let log = e.log();
        assert_eq!(
            log.contains("--compatibility dcgm-4.9: unverified: "),
            profile == Some("dcgm-4.9"),
            "{what}: {log}"
        );
        assert_eq!(
            log.contains("--compatibility dcgm-4.10: unverified: "),
            v410,
            "{what}: {log}"
        );
    }
    let out = Command::new(BIN)
        .args(["--compatibility", "4.8.4"])
        .output()
        .unwrap();
    // A usage error now (clap's, as for every enum-valued flag): the flag and the profiles.
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("invalid value '4.8.4' for '--compatibility <PROFILE>'")
            && err
                .contains("[possible values: native, dcgm-4.8.2, dcgm-4.8.4, dcgm-4.9, dcgm-4.10]"),
        "{err}"
    );
}

/// dcgm-4.9 and dcgm-4.10 serve gpu-exporter's shipped 4.8-named sets, unmodified, as their
/// own versions (dcgm-exporter 4.9's and 4.10's images hold their sets at the same paths); a
/// file of the user's own, even one byte away from a shipped set, is served as written, its
/// 4.8 names (the PCIe byte rates' `DCGM_FI_PROF_PCIE_TX_BYTES` included) kept.
#[test]
fn dcgm_4_9_and_4_10_serve_the_shipped_sets_in_their_own_version() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = include_str!("../counters/dcp-metrics-included.csv");
    let own = format!("{shipped}DCGM_FI_DEV_POWER_VIOLATION, counter, v\n");
    for profile in ["dcgm-4.9", "dcgm-4.10"] {
        for (text, swapped) in [(shipped.to_owned(), true), (own.clone(), false)] {
            let f = dir.path().join("dcp-metrics-included.csv");
            std::fs::write(&f, &text).unwrap();
            let e = spawn_ready_with(
                None,
                "h100-mig",
                &["--compatibility", profile, "-f", f.to_str().unwrap()],
            );
            // (The profiling byte rates are there from the second tick.)
            let m = e.metrics_until("PCIe byte rates", |t| t.contains("DCGM_FI_PROF_PCIE_RX"));
            let what = format!("{profile}, swapped {swapped}");
            assert_eq!(
                m.contains("DCGM_FI_DEV_GPU_TEMP_CELSIUS{"),
                swapped,
                "{what}"
            );
            assert_eq!(m.contains("DCGM_FI_DEV_GPU_TEMP{"), !swapped, "{what}");
            let renamed = swapped && profile == "dcgm-4.10";
            assert_eq!(
                m.contains("DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND{"),
                renamed,
                "{what}"
            );
            assert_eq!(
                m.contains("DCGM_FI_PROF_PCIE_RX_BYTES{"),
                !renamed,
                "{what}"
            );
            assert_eq!(
                e.log()
                    .contains(&format!("served as {profile}-dcp-metrics-included.csv")),
                swapped,
                "{what}"
            );
        }
    }
}

/// dcgm-4.8.2 serves gpu-exporter's shipped sets, unmodified, as dcgm-exporter 4.8.2's own
/// (its types: the NVLink bandwidth counter), so that a 4.8.2 user sees the `# TYPE` lines
/// they saw; a file of the user's own keeps its types, windows included.
#[test]
fn dcgm_4_8_2_serves_the_shipped_sets_with_4_8_2_types() {
    let dir = tempfile::tempdir().unwrap();
    let shipped = include_str!("../counters/default-counters.csv");
    let own = format!("{shipped}DCGM_EXP_XID_ERRORS_COUNT, counter, w\n");
    for (text, swapped) in [(shipped.to_owned(), true), (own, false)] {
        let f = dir.path().join("default-counters.csv");
        std::fs::write(&f, &text).unwrap();
        let e = spawn_ready_with(
            None,
            "h100-mig",
            &["--compatibility", "dcgm-4.8.2", "-f", f.to_str().unwrap()],
        );
        let m = e.metrics_until("the NVLink rate", |t| {
            t.contains("# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")
        });
        let nvlink = if swapped { "counter" } else { "gauge" };
        assert!(
            m.contains(&format!(
                "# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL {nvlink}\n"
            )),
            "{m}"
        );
        assert_eq!(
            m.contains("# TYPE DCGM_EXP_XID_ERRORS_COUNT counter\n"),
            !swapped,
            "{m}"
        );
        assert_eq!(
            e.log()
                .contains("served as dcgm-4.8.2-default-counters.csv"),
            swapped
        );
    }
}

/// `--config-file` as dcgm-exporter 4.8.3+ reads it: its inline fields are the counters, its
/// v2 switches apply, unknown keys are logged, and an environment variable given explicitly
/// wins over the file (the log says which).
#[test]
fn config_file_sets_counters_and_switches_and_env_wins() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("dcgm-exporter.yaml");
    std::fs::write(
        &yaml,
        "version: 2\n\
         metrics:\n  enableExporterMetrics: true\n  fields:\n\
         \x20   - {name: DCGM_FI_DEV_GPU_TEMP, prometheusType: gauge, help: \"Die temperature, C.\"}\n\
         \x20   - {name: DCGM_FI_DEV_POWER_USAGE, prometheusType: gauge}\n\
         collection: {interval: 1s}\n\
         collections: [{name: slow-power, every: 3s, metrics: {include: [DCGM_FI_DEV_POWER_*]}}]\n\
         server: {maxConcurrentScrapes: 4}\n\
         telemetry: {enabled: true}\n",
    )
    .unwrap();
    let e = Exporter::builder()
        .args([
            "--simulate",
            "a100-l4",
            "--config-file",
            yaml.to_str().unwrap(),
        ])
        .env("DCGM_EXPORTER_MAX_CONCURRENT_SCRAPES", "9")
        .log_pipe()
        .start();
    let m = e.metrics();
    assert!(
        m.contains("# HELP DCGM_FI_DEV_GPU_TEMP Die temperature, C.\n"),
        "{m}"
    );
    assert!(m.contains("DCGM_FI_DEV_POWER_USAGE{"), "{m}");
    assert!(
        !m.contains("DCGM_FI_DEV_SM_CLOCK{"),
        "only the file's fields: {m}"
    );
    assert!(
        m.contains("process_resident_memory_bytes "),
        "enableExporterMetrics: {m}"
    );
    let log = e.log();
    assert!(log.contains("telemetry: unknown key, ignored"), "{log}");
    assert!(
        log.contains("server.maxConcurrentScrapes overridden by --max-concurrent-scrapes"),
        "{log}"
    );
    drop(e);
    // A file that stops start-up: exit 1, its message naming the file and what is wrong. (Under
    // `timeout`, so that a start-up that wrongly succeeds fails the test, not hangs it.)
    let refused = |text: &str, want: &str| {
        std::fs::write(&yaml, text).unwrap();
        let out = Command::new("timeout")
            .args([
                "30",
                BIN,
                "-a",
                "127.0.0.1:0",
                "--simulate",
                "a100-l4",
                "--config-file",
            ])
            .arg(&yaml)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        let want = format!("--config-file {}: {want}", yaml.display());
        assert!(err.contains(&want), "{want}: {err}");
    };
    // A collection that matches no field of the counters set, naming both.
    refused(
        "version: 1\ncollection:\n  watchGroups: [{name: nv, interval: 5s, fields: [\"DCGM_FI_DEV_NVSWITCH_*\"]}]\n",
        "collection \"nv\" matches no field",
    );
    // A key that is nearly a known one, naming the key it looks like (a key far from every
    // known one, as `telemetry` above, is only logged).
    refused(
        "version: 2\nserver:\n  maxConcurentScrapes: 2\n",
        "server.maxConcurentScrapes: unknown key (did you mean server.maxConcurrentScrapes?)",
    );
}

/// Bad numbers name their flag, or the environment variable they came from, and the range.
#[test]
fn bad_numbers_name_the_flag_or_variable_and_the_range() {
    let run = |args: &[&str], env: Option<(&str, &str)>| {
        let mut c = Command::new(BIN);
        c.args(args).env_remove("DCGM_EXPORTER_INTERVAL");
        if let Some((k, v)) = env {
            c.env(k, v);
        }
        let out = c.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    // A negative number, or one past a day: the flag and the accepted range, not clap's
    // "invalid digit".
    for (args, flag, range) in [
        (&["-c", "-1"][..], "'--collect-interval", "100..=86400000"),
        (
            &["--collect-interval=-1"],
            "'--collect-interval",
            "100..=86400000",
        ),
        (
            &["-c", "99999999999"],
            "'--collect-interval",
            "100..=86400000",
        ),
        (&["-x", "-5"], "'--xid-count-window-size", "1..=86400000"),
        (
            &["--clock-events-count-window-size", "-5"],
            "'--clock-events-count-window-size",
            "1..=86400000",
        ),
    ] {
        let (code, err) = run(args, None);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: {err}");
        assert!(
            err.contains(&format!(
                "expected a whole number of milliseconds in {range}"
            )),
            "{args:?}: {err}"
        );
        assert!(!err.contains("invalid digit"), "{args:?}: {err}");
    }
    let (code, err) = run(&["--simulate"], Some(("DCGM_EXPORTER_INTERVAL", "5s")));
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("environment variable DCGM_EXPORTER_INTERVAL: invalid value '5s'"),
        "{err}"
    );
}

/// Runs the binary with `args` and `env` up to the point where it reads its counters file (a
/// path that does not exist): exit 1 means the command line parsed, 2 that it did not.
fn parse_only(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut c = Command::new(BIN);
    c.args(args)
        .args(["-f", "/nonexistent/parse-only.csv"])
        .env_remove("DCGM_EXPORTER_COLLECTORS");
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Go's flag syntax for on/off switches: an attached value (`--kubernetes=true`, `-k=false`)
/// in every spelling of Go's `strconv.ParseBool`, the same spellings in the environment, a
/// switch given twice (the last wins), `--rbmn`, and `--dump-compression` without a value.
#[test]
fn go_flag_syntax_boolean_values_and_spellings() {
    for v in [
        "1", "t", "T", "TRUE", "true", "True", "0", "f", "F", "FALSE", "false", "False",
    ] {
        for (args, env) in [
            (vec![format!("--kubernetes={v}")], None),
            (vec![format!("-k={v}")], None),
            (vec![format!("-kubernetes={v}")], None),
            (vec![format!("--dump-compression={v}")], None),
            (vec![], Some(("DCGM_EXPORTER_KUBERNETES", v))),
            (vec![], Some(("DCGM_EXPORTER_NO_HOSTNAME", v))),
            (vec![], Some(("DCGM_EXPORTER_DUMP_COMPRESSION", v))),
        ] {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let env: Vec<(&str, &str)> = env.into_iter().collect();
            let (code, err) = parse_only(&args, &env);
            assert_eq!(code, Some(1), "{args:?} {env:?}: {err}");
            assert!(err.contains("parse-only.csv"), "{args:?} {env:?}: {err}");
        }
    }
    for args in [
        &["--dump-compression"][..],
        &["--rbmn"],
        &["--rbmn=false"],
        &["-rbmn=1"],
        &["-k", "-k"],
        &["-k=true", "-k=false"],
        &["-ko"],
        &["-k=1", "-o"],
    ] {
        let (code, err) = parse_only(args, &[]);
        assert_eq!(code, Some(1), "{args:?}: {err}");
    }
    // What Go refuses is refused, naming the flag (or the variable) and the spellings.
    let (code, err) = parse_only(&["--kubernetes=yes"], &[]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("'--kubernetes") && err.contains("True"),
        "{err}"
    );
    let (code, err) = parse_only(&[], &[("DCGM_EXPORTER_KUBERNETES", "on")]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("environment variable DCGM_EXPORTER_KUBERNETES: invalid value 'on'"),
        "{err}"
    );
    // And the values take effect: on, then off again, through attached values and variables.
    let on = Exporter::builder()
        .args([
            "--simulate=h100-mig",
            "-c",
            "500",
            "--kubernetes=true",
            "--rbmn",
            "-n=T",
            "--enable-exporter-metrics=1",
        ])
        .log_pipe()
        .start();
    let text = on.metrics();
    assert!(
        text.contains("modelName=\"NVIDIA-H100-80GB-HBM3\""),
        "--rbmn"
    );
    assert!(!text.contains("Hostname="), "-n=T");
    assert!(text.contains("process_open_fds "), "=1");
    drop(on);
    let off = Exporter::builder()
        .args(["--simulate=h100-mig", "-c", "500", "-rbmn=false", "-n=F"])
        .env("DCGM_EXPORTER_ENABLE_EXPORTER_METRICS", "False")
        .env("DCGM_EXPORTER_REPLACE_BLANKS_IN_MODEL_NAME", "t")
        .log_pipe()
        .start();
    let text = off.metrics();
    assert!(
        text.contains("modelName=\"NVIDIA H100 80GB HBM3\""),
        "-rbmn=false wins over the variable"
    );
    assert!(text.contains("Hostname="), "-n=F");
    assert!(!text.contains("process_open_fds "), "False");
}

/// Every flag of dcgm-exporter 4.8.2 that has no meaning here starts the binary, alone, on
/// the command line or through its environment variable, with exactly one warning naming it
/// (not one per tick).
#[test]
fn dcgm_4_8_2_flags_without_meaning_start_with_one_warning_each() {
    // (flag as the warning names it, command-line arguments, environment variable and value)
    // (`-s/--switch-devices` is not among them: it narrows DCGM's NVSwitch rows; nor are
    // `--enable-dcgm-log` and `--dcgm-log-level`: they set an embedded hostengine's log.)
    let cases: [(&str, &[&str], (&str, &str)); 12] = [
        (
            "--web-systemd-socket",
            &["--web-systemd-socket"],
            ("DCGM_EXPORTER_SYSTEMD_SOCKET", "true"),
        ),
        (
            "--disable-startup-validate",
            &["--disable-startup-validate"],
            ("DISABLE_STARTUP_VALIDATE", "T"),
        ),
        (
            "--enable-gpu-bind-unbind-watch",
            &["--enable-gpu-bind-unbind-watch"],
            ("DCGM_EXPORTER_ENABLE_GPU_BIND_UNBIND_WATCH", "TRUE"),
        ),
        (
            "--gpu-bind-unbind-poll-interval",
            &["--gpu-bind-unbind-poll-interval", "2s"],
            ("DCGM_EXPORTER_GPU_BIND_UNBIND_POLL_INTERVAL", "1s"),
        ),
        (
            "--enable-pprof",
            &["--enable-pprof"],
            ("DCGM_EXPORTER_ENABLE_PPROF", "True"),
        ),
        (
            "--fake-gpus",
            &["--fake-gpus"],
            ("DCGM_EXPORTER_USE_FAKE_GPUS", "t"),
        ),
        (
            "-m/--configmap-data",
            &["-m", "gpu-monitoring:exporter-metrics-config-map"],
            ("DCGM_EXPORTER_CONFIGMAP_DATA", "default:metrics"),
        ),
        (
            "-p/--cpu-devices",
            &["-p", "g"],
            ("DCGM_EXPORTER_CPU_DEVICES_STR", "i:0-3"),
        ),
        (
            "--dump-enabled",
            &["--dump-enabled"],
            ("DCGM_EXPORTER_DUMP_ENABLED", "true"),
        ),
        (
            "--dump-directory",
            &["--dump-directory", "/tmp/dcgm-exporter-debug"],
            ("DCGM_EXPORTER_DUMP_DIRECTORY", "/tmp/dumps"),
        ),
        (
            "--dump-retention",
            &["--dump-retention", "24"],
            ("DCGM_EXPORTER_DUMP_RETENTION", "48"),
        ),
        (
            "--dump-compression",
            &["--dump-compression"],
            ("DCGM_EXPORTER_DUMP_COMPRESSION", "false"),
        ),
    ];
    let mut failures = common::Failures::default();
    for (flag, args, (var, value)) in cases {
        for (how, builder) in [
            (
                format!("{args:?}"),
                Exporter::builder()
                    .args(["--simulate", "h100-mig", "-c", "200"])
                    .args(args),
            ),
            (
                format!("{var}={value}"),
                Exporter::builder()
                    .args(["--simulate", "h100-mig", "-c", "200"])
                    .env(var, value),
            ),
        ] {
            let e = builder.log_pipe().start();
            // A few ticks: the warning is a start-up one, not repeated.
            std::thread::sleep(Duration::from_millis(700));
            assert_eq!(http_get(e.port, "/health", &[]).unwrap().status, 200);
            let log = e.log();
            let warned = log
                .lines()
                .filter(|l| {
                    l.contains("WARN")
                        && l.contains(&format!(
                            "{flag} is accepted for dcgm-exporter compatibility but "
                        ))
                })
                .count();
            if warned != 1 {
                failures.add(format!("{how}: {warned} warnings naming {flag}:\n{log}"));
            }
        }
    }
    failures.finish("dcgm-exporter 4.8.2 flags without meaning");
}

/// `--config-file` collections match fields by what they read, not by name: under
/// `dcgm-4.9`, with a shipped 4.8-named set served as its 4.9 version, a collection written
/// with 4.8 names (`DCGM_FI_DEV_GPU_TEMP`, `DCGM_FI_DEV_SM_CLOCK`) holds the 4.9 rows
/// (`DCGM_FI_DEV_GPU_TEMP_CELSIUS`, same field id; `DCGM_FI_DEV_SM_CLOCK_HERTZ`, its base-unit
/// twin) and start-up goes on.
#[test]
fn config_file_collections_match_fields_by_id_across_renames() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("default-counters.csv");
    std::fs::write(&csv, include_str!("../counters/default-counters.csv")).unwrap();
    let yaml = dir.path().join("dcgm-exporter.yaml");
    std::fs::write(
        &yaml,
        format!(
            "version: 1\nmetrics:\n  file: {}\ncollection:\n  interval: 500ms\n  watchGroups:\n\
             \x20   - {{name: thermals, interval: 2s, fields: [DCGM_FI_DEV_GPU_TEMP, DCGM_FI_DEV_SM_CLOCK]}}\n",
            csv.display()
        ),
    )
    .unwrap();
    let e = Exporter::builder()
        .args(["--simulate", "a100-l4", "--compatibility", "dcgm-4.9"])
        .arg("--config-file")
        .arg(&yaml)
        .log_pipe()
        .start();
    let m = e.metrics();
    assert!(m.contains("DCGM_FI_DEV_GPU_TEMP_CELSIUS{"), "{m}");
    assert!(m.contains("DCGM_FI_DEV_SM_CLOCK_HERTZ{"), "{m}");
    let log = e.log();
    assert!(
        log.contains("served as dcgm-4.9-default-counters.csv"),
        "{log}"
    );
    assert!(!log.contains("matches no field"), "{log}");
}

/// Runs the binary (under `timeout`, so that a start-up that wrongly succeeds fails instead of
/// hanging) with `args` on the simulated node: its exit code and stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new("timeout")
        .args(["30", BIN, "--simulate", "a100-l4"])
        .args(args)
        .env_remove("DCGM_EXPORTER_LISTEN")
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A negative or overflowing whole number names its flag and the range, as `-c -1` does (not
/// clap's "unexpected argument '-1'"); `-a :99999` says the port is out of range; a GPU index
/// past any integer is quoted as written, never wrapped to 18446744073709551615.
#[test]
fn negative_and_overflowing_numbers_name_the_flag() {
    for (args, flag, range) in [
        (
            &["--simulate-seed", "-1"][..],
            "'--simulate-seed",
            "0..=18446744073709551615",
        ),
        (
            &["--simulate-seed", "18446744073709551616"],
            "'--simulate-seed",
            "0..=18446744073709551615",
        ),
        (
            &["--max-concurrent-scrapes", "-1"],
            "'--max-concurrent-scrapes",
            "0..=4294967295",
        ),
        (
            &["--web-max-connections", "-1"],
            "'--web-max-connections",
            "1..=65536",
        ),
        (
            &["--web-max-connections", "0"],
            "'--web-max-connections",
            "1..=65536",
        ),
    ] {
        let (code, err) = refused(args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains(flag) && err.contains(&format!("expected a whole number in {range}")),
            "{args:?}: {err}"
        );
        assert!(!err.contains("unexpected argument"), "{args:?}: {err}");
    }
    for flag in [
        "--pod-resources-timeout",
        "--pod-resources-refresh-interval",
    ] {
        let (code, err) = refused(&[flag, "-1"]);
        assert_eq!(code, Some(2), "{flag}: {err}");
        assert!(
            err.contains(&format!("'{flag}"))
                && err.contains("expected a whole number of milliseconds in 100..=86400000"),
            "{flag}: {err}"
        );
    }
    let (code, err) = refused(&["-a", ":99999"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("-a/--address \":99999\": port 99999 is out of range (0 to 65535)"),
        "{err}"
    );
    // The same value from the variable the GPU Operator sets names that variable; with both,
    // the flag wins and is named.
    for (args, named) in [
        (&[][..], "DCGM_EXPORTER_LISTEN (-a/--address) \":99999\""),
        (&["-a", ":99998"][..], "-a/--address \":99998\""),
    ] {
        let out = Command::new("timeout")
            .args(["30", BIN, "--simulate", "a100-l4"])
            .args(args)
            .env("DCGM_EXPORTER_LISTEN", ":99999")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("{named}: port ")) && !err.contains("(-a/--address) \":99998"),
            "{args:?}: {err}"
        );
    }
    let (code, err) = refused(&["-a", "127.0.0.1:0", "-d", "g:99999999999999999999"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(
            "-d/--devices \"g:99999999999999999999\": \"99999999999999999999\": GPU index \
             99999999999999999999 is out of range (0 to 63)"
        ) && !err.contains("18446744073709551615"),
        "{err}"
    );
}

/// `--config-file` errors are ours on the binary too (every message is in
/// `config::file`'s unit tests): a duplicate key and a file past the parser's budget name the
/// file, the line and the key, and none of the YAML library's words gets out.
#[test]
fn config_file_yaml_errors_are_in_our_words() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("dcgm-exporter.yaml");
    let many = format!("version: 1\nmetrics:\n  x: [{}]\n", "1,".repeat(250_001));
    for (text, want, theirs) in [
        (
            "version: 1\nversion: 2\n",
            "line 2, column 1, key version: this key is given twice",
            "DuplicateKeyPolicy",
        ),
        (
            many.as_str(),
            "line 3, column 499993, key metrics.x: the file is too large or too deeply nested",
            "budget breached",
        ),
    ] {
        std::fs::write(&yaml, text).unwrap();
        let (code, err) = refused(&["-a", "127.0.0.1:0", "--config-file", yaml.to_str().unwrap()]);
        assert_eq!(code, Some(1), "{err}");
        let ours = format!("--config-file {}: {want}", yaml.display());
        assert!(err.contains(&ours) && !err.contains(theirs), "{err}");
    }
}

/// A `metrics.file` path and unknown keys with a newline or a terminal escape in them are
/// shown quoted and escaped in every log line and message, so they cannot forge a log line.
#[test]
fn config_file_paths_and_keys_are_escaped_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("c\n2026-01-01T00:00:00Z ERROR forged.csv");
    std::fs::write(&csv, "DCGM_FI_DEV_GPU_TEMP, gauge, t\n").unwrap();
    let yaml = dir.path().join("dcgm-exporter.yaml");
    let quoted = format!("{:?}", csv.to_str().unwrap());
    std::fs::write(
        &yaml,
        format!("version: 1\nmetrics: {{file: {quoted}}}\n\"\\e[31mkey\\nERROR forged\": 1\n"),
    )
    .unwrap();
    let e = Exporter::builder()
        .args([
            "--simulate",
            "a100-l4",
            "--config-file",
            yaml.to_str().unwrap(),
        ])
        .env_remove("DCGM_EXPORTER_COLLECTORS")
        .log_pipe()
        .start();
    let log = e.log();
    drop(e);
    assert!(log.contains("unknown key, ignored"), "{log}");
    assert!(log.contains("\\u{1b}[31mkey\\nERROR forged"), "{log}");
    assert!(log.contains(&quoted), "{log}");
    assert!(!log.contains('\u{1b}'), "{log}");
    assert!(
        !log.lines()
            .any(|l| l.starts_with("ERROR forged") || l.starts_with("2026-01-01")),
        "{log}"
    );
    // The same path missing: the error escapes it too.
    std::fs::remove_file(&csv).unwrap();
    let (code, err) = refused(&["-a", "127.0.0.1:0", "--config-file", yaml.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains(&quoted), "{err}");
    assert!(!err.lines().any(|l| l.starts_with("2026-01-01")), "{err}");
}

/// Every environment variable the binary reads, set but blank (a Helm `value: ""`), counts as
/// not set, as dcgm-exporter's flag library skips an empty variable: the exporter starts,
/// serves and logs as without them. `DCGM_EXPORTER_LISTEN` blank (no `-a`) passes validation
/// too: the start stops only at the missing counters file.
#[test]
fn blank_environment_variables_count_as_unset() {
    use clap::CommandFactory;
    let vars: Vec<String> = gpu_exporter::config::Cli::command()
        .get_arguments()
        .filter_map(|a| a.get_env())
        .map(|v| v.to_string_lossy().into_owned())
        .chain(["RUST_LOG".into(), "NODE_NAME".into()])
        .collect();
    assert!(vars.len() > 40, "{vars:?}");
    let mut b = Exporter::builder()
        .args(["--simulate", "a100-l4", "-c", "500"])
        .log_pipe();
    for (i, v) in vars.iter().enumerate() {
        // Empty, or only blanks: the same rule.
        b = b.env(v, if i % 2 == 0 { "" } else { "  " });
    }
    let e = b.start();
    let body = http_get(e.port, "/metrics", &[]).unwrap().text();
    let log = e.log();
    drop(e);
    assert!(body.contains("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\""), "{body}");
    assert!(body.contains("Hostname=\""), "{body}");
    // A blank RUST_LOG does not turn the log off.
    assert!(
        log.contains("INFO") && log.contains("serving /metrics"),
        "{log}"
    );
    let mut c = Command::new("timeout");
    c.args([
        "30",
        BIN,
        "--simulate",
        "a100-l4",
        "-f",
        "/nonexistent/blank.csv",
    ]);
    for v in &vars {
        c.env(v, "");
    }
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/nonexistent/blank.csv: cannot read counters file"),
        "{err}"
    );
}

/// A family filter under which no GPU family would be served stops start-up naming the flag
/// or key and its value (it served 0 series without a word); a reloaded counters file under
/// which the filter would serve nothing is refused, and the counters in use stay.
#[test]
fn family_filters_that_serve_nothing_stop_startup_and_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("c.yaml");
    std::fs::write(
        &yaml,
        "version: 1\nmetrics:\n  includeFamilies: [\"NOMATCH_*\"]\n",
    )
    .unwrap();
    let file_key = format!(
        "--config-file {}: metrics.includeFamilies \"NOMATCH_*\"",
        yaml.display()
    );
    for (args, want) in [
        (
            vec!["--include-families", "NOMATCH_"],
            "--include-families \"NOMATCH_\"",
        ),
        (vec!["--exclude-families", "*"], "--exclude-families \"*\""),
        (
            vec!["--config-file", yaml.to_str().unwrap()],
            file_key.as_str(),
        ),
    ] {
        let mut all = vec!["-a", "127.0.0.1:0"];
        all.extend(args);
        let (code, err) = refused(&all);
        assert_eq!(code, Some(1), "{all:?}: {err}");
        assert!(
            err.contains(&format!("{want}: serves none of the GPU families"))
                && err.contains("DCGM_FI_DEV_GPU_TEMP"),
            "{all:?}: {err}"
        );
    }
    let csv = dir.path().join("counters.csv");
    std::fs::write(
        &csv,
        "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_DEV_POWER_USAGE, gauge, p\n",
    )
    .unwrap();
    let e = Exporter::builder()
        .args([
            "--simulate",
            "a100-l4",
            "-c",
            "500",
            "--include-families",
            "DCGM_FI_DEV_GPU_*",
        ])
        .args(["-f", csv.to_str().unwrap()])
        .log_pipe()
        .start();
    std::fs::write(&csv, "DCGM_FI_DEV_POWER_USAGE, gauge, p\n").unwrap();
    e.signal("-HUP");
    e.wait_log("serves none of the GPU families", Duration::from_secs(30));
    let body = e.metrics();
    assert!(body.contains("DCGM_FI_DEV_GPU_TEMP{"), "{body}");
    // (The reload's self-metrics are left out by the filter itself.)
}

/// A negative duration given as its own argument reaches the flag (Go's flag library takes
/// the next argument as the value) and is refused saying what is wanted, not clap's
/// "unexpected argument '-5'"; a negative millisecond count names its range.
#[test]
fn negative_durations_say_what_is_wanted() {
    for (args, code, want) in [
        (
            &["--health-hold", "-5m"][..],
            1,
            "--health-hold \"-5m\": a negative duration (expected a duration of 0 or more, e.g. --health-hold 10s)",
        ),
        (
            &["--web-read-timeout", "-1s"],
            1,
            "--web-read-timeout \"-1s\": a negative duration",
        ),
        (
            &["--web-write-timeout", "-1s"],
            1,
            "--web-write-timeout \"-1s\": a negative duration",
        ),
        (
            &["--watch-max-keep-age", "-5m"],
            1,
            "--watch-max-keep-age \"-5m\": a negative duration",
        ),
        (
            &["-c", "-5m"],
            2,
            "invalid value '-5m' for '--collect-interval",
        ),
        (
            &["--pod-resources-timeout", "-5s"],
            2,
            "invalid value '-5s' for '--pod-resources-timeout",
        ),
        (
            &["--max-labels-per-series", "-5"],
            1,
            "--max-labels-per-series \"-5\": expected a number of labels",
        ),
    ] {
        let mut all = vec!["-a", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let (got, err) = refused(&all);
        assert_eq!(got, Some(code), "{args:?}: {err}");
        assert!(
            err.contains(want) && !err.contains("unexpected argument"),
            "{args:?}: {err}"
        );
    }
}

/// In the configuration file a boolean key takes true or false: a quoted "yes" is a text
/// (it was read as true), and so is a bare yes under YAML 1.2; `version: !!str 1` says it is
/// a text; a 3 MB value is shown as its first characters and its size, not echoed whole.
#[test]
fn config_file_booleans_tags_and_long_values() {
    let dir = tempfile::tempdir().unwrap();
    let yaml = dir.path().join("c.yaml");
    let big = "A".repeat(3_000_000);
    for (text, want) in [
        (
            "version: 2\nmetrics:\n  enableExporterMetrics: \"yes\"\n".to_owned(),
            "line 3, column 3, key metrics.enableExporterMetrics: expected true or false, found the text \"yes\"",
        ),
        (
            "version: 2\nmetrics:\n  enableExporterMetrics: \"on\"\n".to_owned(),
            "key metrics.enableExporterMetrics: expected true or false, found the text \"on\"",
        ),
        (
            "version: 2\nmetrics:\n  enableExporterMetrics: yes\n".to_owned(),
            "key metrics.enableExporterMetrics: expected true or false, found the text \"yes\"",
        ),
        (
            "version: !!str 1\n".to_owned(),
            "key version: expected a whole number from 0 to 4294967295, found the text \"1\" tagged !!str",
        ),
        (
            format!("version: 1\ncollection: {{interval: {big}}}\n"),
            "collection.interval: \"AAAA",
        ),
        (
            format!("version: 1\nmetrics: {{includeFamilies: [\"{big}\"]}}\n"),
            "metrics.includeFamilies \"AAAA",
        ),
    ] {
        std::fs::write(&yaml, &text).unwrap();
        let (code, err) = refused(&["-a", "127.0.0.1:0", "--config-file", yaml.to_str().unwrap()]);
        assert_eq!(code, Some(1), "{}", &err[..err.len().min(500)]);
        assert!(err.len() < 1000, "{} bytes: {}", err.len(), &err[..500]);
        assert!(
            err.contains(&format!("--config-file {}: ", yaml.display())) && err.contains(want),
            "{err}"
        );
    }
}

/// docs/flags.md names every flag the command line defines (hidden ones included) and the
/// configuration file's key of every setting the file shares with a flag, as
/// docs/architecture.md's row for a new flag asks.
#[test]
fn the_flags_page_names_every_flag_and_file_key() {
    use clap::CommandFactory;
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/flags.md"))
        .expect("docs/flags.md");
    let cmd = gpu_exporter::config::Cli::command();
    let longs: Vec<&str> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|l| !["help", "version"].contains(l))
        .collect();
    assert!(longs.len() > 60, "{longs:?}");
    for long in longs {
        assert!(
            doc.contains(&format!("--{long}")),
            "docs/flags.md lacks --{long}"
        );
    }
    for &s in gpu_exporter::config::Setting::ALL {
        if let Some(key) = s.file_key() {
            let last = key.rsplit('.').next().unwrap_or(key);
            assert!(doc.contains(last), "docs/flags.md lacks {key} ({s:?})");
        }
    }
}
