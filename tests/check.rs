//! `gpu-exporter check` on the simulated node, working and with each source broken in turn:
//! no kubelet socket, a socket path that is no socket or refuses, a bad counters line (the rest
//! still checked), a bad web config, a taken address, a lost GPU, NVML absent; each must
//! give the right exit code and a line that names the fix. Also the JSON and hardware-report
//! forms, and usage errors (exit 2).
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;

use common::{BIN, built_sim_lib, free_port};

fn check(args: &[&str]) -> (Option<i32>, String) {
    check_at(&format!("127.0.0.1:{}", free_port()), args)
}

/// `gpu-exporter check -a address args…`.
fn check_at(address: &str, args: &[&str]) -> (Option<i32>, String) {
    common::run_to_text(
        Command::new(BIN)
            .arg("check")
            .args(["-a", address])
            .args(args)
            .env_remove("NODE_NAME")
            .current_dir(env!("CARGO_MANIFEST_DIR")),
    )
}

fn line_with<'a>(out: &'a str, words: &[&str]) -> &'a str {
    out.lines()
        .find(|l| words.iter().all(|w| l.contains(w)))
        .unwrap_or_else(|| panic!("no line with {words:?} in:\n{out}"))
}

#[test]
fn a_working_simulated_node_checks_clean() {
    let (code, out) = check(&["--simulate", "h100-mig", "-k"]);
    assert_eq!(code, Some(0), "{out}");
    line_with(&out, &["ok", "library", "initialised in"]);
    line_with(&out, &["ok", "versions", "driver"]);
    line_with(&out, &["ok", "GPU 0", "MIG off", "Xid events watched"]);
    line_with(&out, &["ok", "GPU 5", "MIG: 3g.40gb (GI 2)"]);
    line_with(
        &out,
        &[
            "ok",
            "DCGM_FI_DEV_GPU_TEMP",
            "served on",
            "one read",
            "ms on all entities",
        ],
    );
    line_with(&out, &["ok", "GPU 0 GPM", "supported"]);
    line_with(&out, &["ok", "GPU 2 MIG mode", "enabled"]);
    line_with(&out, &["ok", "GPU 0 MIG mode", "disabled"]);
    line_with(&out, &["ok", "kubelet", "up"]);
    line_with(&out, &["ok", "resource nvidia.com/"]);
    line_with(&out, &["ok", "API client", "simulated API server"]);
    assert!(
        out.ends_with("check: everything configured works\n")
            || out.contains("everything configured works, "),
        "{out}"
    );
}

/// `check` on the simulated NVML with pod mapping through `socket` (no API features).
fn check_with_socket(socket: &str) -> (Option<i32>, String) {
    let lib = built_sim_lib();
    check(&[
        "--nvml-lib",
        lib.to_str().unwrap(),
        "-k",
        "--kubernetes-pod-metadata=false",
        "--pod-resources-kubelet-socket",
        socket,
    ])
}

#[test]
fn no_kubelet_socket_fails_and_names_the_mount() {
    let (code, out) = check_with_socket("/nonexistent/pod-resources/kubelet.sock");
    assert_eq!(code, Some(1), "{out}");
    line_with(&out, &["FAIL", "kubelet", "down"]);
    line_with(&out, &["fix:", "pod-resources", "uid 0"]);
    // NVML itself is fine.
    line_with(&out, &["ok", "library"]);
}

#[test]
fn a_socket_path_that_refuses_fails() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("kubelet.sock");
    std::fs::write(&sock, "not a socket").unwrap();
    let (code, out) = check_with_socket(sock.to_str().unwrap());
    assert_eq!(code, Some(1), "{out}");
    let l = line_with(&out, &["FAIL", "kubelet"]);
    assert!(l.contains("last:"), "the kubelet's error is shown: {l}");
    line_with(&out, &["FAIL", "pod-resources socket", "is not a socket"]);
}

#[test]
fn a_bad_counters_line_fails_and_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("bad.csv");
    std::fs::write(
        &csv,
        "DCGM_FI_DEV_GPU_TEMP, gauge, Temperature.\nDCGM_FI_DEV_NO_SUCH_FIELD, gauge, Nope.\n",
    )
    .unwrap();
    let (code, out) = check(&["--simulate", "h100-mig", "-f", csv.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}");
    let l = line_with(&out, &["FAIL", "counters file"]);
    assert!(l.contains("bad.csv") && l.contains(":2"), "{l}");
    line_with(&out, &["fix:", "line"]);
    // One bad line does not hide the rest of the node: NVML and the GPUs are still checked,
    // with the built-in set.
    line_with(
        &out,
        &["info", "counters file", "the checks below use", "built-in"],
    );
    line_with(&out, &["ok", "library", "initialised in"]);
    line_with(&out, &["ok", "GPU 0", "Xid events watched"]);
}

#[test]
fn a_stale_socket_that_refuses_connections_fails() {
    // A socket file whose listener is gone (the kubelet restarted elsewhere): connect() is
    // refused.
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("kubelet.sock");
    drop(std::os::unix::net::UnixListener::bind(&sock).unwrap());
    assert!(sock.exists());
    let (code, out) = check_with_socket(sock.to_str().unwrap());
    assert_eq!(code, Some(1), "{out}");
    let l = line_with(&out, &["FAIL", "kubelet", "down"]);
    assert!(l.contains("last:"), "the kubelet's error is shown: {l}");
    line_with(&out, &["fix:", "pod-resources"]);
}

#[test]
fn check_help_names_its_own_options() {
    let (code, out) = check(&["--help"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("--output human|json") && out.contains("--hardware-report"),
        "{out}"
    );
    assert!(
        !out.contains("Subcommands"),
        "the daemon's list is not check's: {out}"
    );
}

/// The daemon's `--help` (and `-h`) lists the subcommands `main` dispatches on, each with the
/// way to its own help, and each of those helps answers.
#[test]
fn the_daemons_help_lists_the_subcommands() {
    for flag in ["--help", "-h"] {
        let (code, out) = common::run_to_text(Command::new(BIN).arg(flag));
        assert_eq!(code, Some(0), "{out}");
        let tail = out
            .split_once("Subcommands (the first argument):")
            .map(|(_, t)| t)
            .unwrap_or_else(|| panic!("{flag}: no subcommand list: {out}"));
        for (sub, help) in [
            ("check [FLAGS...]", "gpu-exporter check --help"),
            ("probe <URL>", "gpu-exporter probe --help"),
        ] {
            assert!(tail.contains(sub) && tail.contains(help), "{flag}: {tail}");
        }
    }
    for sub in ["check", "probe"] {
        let (code, out) = common::run_to_text(Command::new(BIN).args([sub, "--help"]));
        assert_eq!(code, Some(0), "{sub} --help: {out}");
        assert!(out.contains("Usage:"), "{sub}: {out}");
    }
}

#[test]
fn the_daemons_short_flags_mean_the_same_under_check() {
    // `-o` is the daemon's --use-old-namespace (dcgm-exporter DaemonSets pass it); under
    // check it must not be taken for --output.
    let (code, out) = check(&["--simulate", "a100-l4", "-o", "-k"]);
    assert_eq!(code, Some(0), "{out}");
    line_with(&out, &["ok", "library"]);
}

#[test]
fn nvml_absent_fails_and_names_the_toolkit() {
    let (code, out) = check(&["--nvml-lib", "/nonexistent/libnvidia-ml.so.1"]);
    assert_eq!(code, Some(1), "{out}");
    line_with(&out, &["FAIL", "library", "/nonexistent/libnvidia-ml.so.1"]);
    line_with(&out, &["fix:", "NVIDIA runtime"]);
    // No GPU was read, so no field can be "ok" (it used to say "ok ... served on 0/0").
    let field_line = line_with(&out, &["DCGM_FI_DEV_GPU_TEMP"]);
    assert!(
        !field_line.contains("ok") && field_line.contains("not read"),
        "{field_line}"
    );
}

#[test]
fn json_and_hardware_report_forms() {
    let (code, out) = check(&["--simulate", "h100-mig", "--output", "json"]);
    assert_eq!(code, Some(0), "{out}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let items = v["items"].as_array().unwrap();
    assert!(
        items
            .iter()
            .any(|i| i["section"] == "fields" && i["level"] == "ok")
    );
    let (code, out) = check(&["--simulate", "h100-mig", "--hardware-report"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(out.starts_with("### gpu-exporter "), "{out}");
    assert!(out.contains("| nvml | library | ok |"), "{out}");
    assert!(out.contains("| gpus | GPU 0 | ok |"), "{out}");
    assert!(out.contains("| gpus | GPU 0 GPM | ok |"), "{out}");
    assert!(out.contains("ms per GPU"), "{out}");
    // The exposition excerpt docs/hardware.md asks for: GPU 0's series, in a code block.
    let block = out.split("```text\n").nth(1).expect("an excerpt block");
    assert!(block.contains("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\""), "{block}");
    assert!(!block.contains("gpu=\"1\""), "{block}");
}

#[test]
fn usage_errors_exit_2() {
    let (code, out) = check(&["--output", "yaml"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(out.contains("--output takes human or json"), "{out}");
    let (code, out) = check(&["--no-such-flag"]);
    assert_eq!(code, Some(2), "{out}");
}

/// An API server that answers 403 to everything, as one without the exporter's RBAC does.
fn forbidding_api() -> (u16, std::thread::JoinHandle<()>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        for stream in listener.incoming().take(64) {
            let Ok(mut stream) = stream else { break };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let status = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"system:serviceaccount:gpu:exporter\" cannot list resource \"pods\"","reason":"Forbidden","code":403}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{status}",
                status.len()
            );
        }
    });
    (port, handle)
}

#[test]
fn an_api_that_forbids_fails_and_names_rbac() {
    let (port, _server) = forbidding_api();
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:{port}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
        ),
    )
    .unwrap();
    let lib = built_sim_lib();
    let out = Command::new(BIN)
        .args(["check", "-a", &format!("127.0.0.1:{}", free_port())])
        .args(["--nvml-lib", lib.to_str().unwrap(), "-k"])
        .args([
            "--kubernetes-pod-metadata=true",
            "--kubernetes-process-metrics=false",
            "--kubernetes-enable-dra",
            "--kubernetes-node-conditions",
            "--kubernetes-events",
        ])
        .env("KUBECONFIG", &kubeconfig)
        .env("NODE_NAME", "gpu-node-1")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(1), "{text}");
    let l = line_with(&text, &["FAIL", "list pods"]);
    assert!(l.contains("403 Forbidden"), "{l}");
    let l = line_with(&text, &["FAIL", "pods on this node"]);
    assert!(l.contains("node gpu-node-1") && l.contains("403"), "{l}");
    line_with(&text, &["fix:", "ClusterRole"]);
    // Which configuration the client came from, and its server.
    line_with(
        &text,
        &[
            "ok",
            "API client",
            "kubeconfig",
            &format!("127.0.0.1:{port}"),
        ],
    );
    // With DRA, the ResourceSlices the DRA source lists are reviewed too; with the health
    // writes, what they write.
    line_with(&text, &["FAIL", "resourceslices"]);
    line_with(&text, &["FAIL", "patch nodes/status"]);
    line_with(&text, &["FAIL", "create events.events.k8s.io"]);
    line_with(&text, &["FAIL", "patch events.events.k8s.io"]);
}

/// With the health writes on, check reviews what they write, and the simulated API server
/// allows it.
#[test]
fn the_health_writes_permissions_are_reviewed() {
    let (code, out) = check(&[
        "--simulate",
        "h100-mig",
        "-k",
        "--kubernetes-node-conditions",
        "--kubernetes-events",
    ]);
    assert_eq!(code, Some(0), "{out}");
    line_with(&out, &["ok", "patch nodes/status", "allowed"]);
    line_with(&out, &["ok", "create events.events.k8s.io", "allowed"]);
    line_with(&out, &["ok", "patch events.events.k8s.io", "allowed"]);
    // Without them, nothing about writes is asked.
    let (_, out) = check(&["--simulate", "h100-mig", "-k"]);
    assert!(
        !out.contains("nodes/status") && !out.contains("events.k8s.io"),
        "{out}"
    );
}

/// Allocated device IDs that name no exported device (here: `-d` leaves GPUs out) are listed
/// by name, as a warning: attribution still works for the rest.
#[test]
fn unmatched_device_ids_are_named() {
    let (code, out) = check(&["--simulate", "h100-mig", "-k", "-d", "g:0"]);
    assert_eq!(code, Some(0), "{out}");
    let l = line_with(
        &out,
        &[
            "WARN",
            "device IDs",
            "name no exported GPU or MIG instance: ",
        ],
    );
    assert!(l.contains("GPU-") && l.contains("MIG-"), "{l}");
    line_with(&out, &["fix:", "-d excluding them"]);
}

#[test]
fn a_lost_gpu_and_an_unsupported_field_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("lost.toml");
    std::fs::write(
        &scenario,
        "name = \"lost\"\n[[gpus]]\nmodel = \"A100-SXM4-40GB\"\n[[gpus]]\nmodel = \"L4\"\n\
         [[faults]]\nat = 0\ngpu = 1\nkind = \"lost\"\n",
    )
    .unwrap();
    // DCGM off: with it, the simulated libdcgm would serve the A100's profiling fields.
    let args = [
        "--simulate",
        scenario.to_str().unwrap(),
        "-k",
        "--dcgm-mode",
        "off",
    ];
    let (code, out) = check(&args);
    assert_eq!(code, Some(1), "{out}");
    line_with(&out, &["FAIL", "GPU 1", "does not answer", "lost"]);
    line_with(&out, &["fix:", "dmesg", "Xid 79"]);
    // GPM fields on an A100 without DCGM: NVML's answer, not a failure.
    line_with(
        &out,
        &[
            "info",
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "unsupported on every entity",
        ],
    );
    // A scenario without processes still has a proc root (a node's /proc always exists).
    line_with(&out, &["ok", "proc root", "0 process(es) visible"]);
}

#[test]
fn a_bad_web_config_and_a_taken_address_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let web = dir.path().join("web.yml");
    std::fs::write(
        &web,
        "tls_server_config:\n  cert_file: /nonexistent/cert.pem\n",
    )
    .unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let (code, out) = check_at(
        &addr,
        &[
            "--simulate",
            "a100-l4",
            "--web-config-file",
            web.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{out}");
    let l = line_with(&out, &["FAIL", "--web-config-file"]);
    assert!(l.contains("web.yml"), "{l}");
    line_with(&out, &["WARN", "address", &addr]);
    // The rest is still checked.
    line_with(&out, &["ok", "library"]);
}

#[test]
fn nvlink_links_down_and_an_unhealthy_fabric_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("links.toml");
    std::fs::write(
        &scenario,
        "name = \"links\"\n[[gpus]]\nmodel = \"H100-SXM5-80GB\"\n[[gpus]]\nmodel = \"H100-SXM5-80GB\"\n\
         [[faults]]\nat = 0\ngpu = 0\nkind = \"nvlink_down\"\nlink = 4\n\
         [[faults]]\nat = 0\ngpu = 1\nkind = \"fabric\"\nhealth = \"unhealthy\"\n",
    )
    .unwrap();
    let (code, out) = check(&["--simulate", scenario.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}");
    line_with(&out, &["WARN", "GPU 0 NVLink", "18 link(s)", "down: 4"]);
    line_with(&out, &["ok", "GPU 1 NVLink", "18 link(s), all up"]);
    line_with(&out, &["ok", "GPU 0 fabric", "healthy"]);
    line_with(&out, &["FAIL", "GPU 1 fabric", "unhealthy"]);
    line_with(&out, &["fix:", "fabric manager"]);
}

#[test]
fn link_entity_and_nvswitch_rows_are_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("links.csv");
    std::fs::write(
        &csv,
        "DCGM_FI_DEV_GPU_TEMP, gauge, t\n\
         DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL, counter, flit per link\n\
         DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERRORS, counter, switch port\n",
    )
    .unwrap();
    let csv = csv.to_str().unwrap();
    let (_, out) = check(&["--simulate", "hgx-h200", "-k", "-f", csv]);
    line_with(
        &out,
        &[
            "ok",
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL",
            "per link: 144 links on 8 GPU(s)",
        ],
    );
    // The NVSwitch port row is served by DCGM (embedded on the simulated node), per up port.
    line_with(
        &out,
        &[
            "ok",
            "DCGM_FI_DEV_NVSWITCH_LINK_FLIT_ERRORS",
            "per NVSwitch port, from DCGM: 144 up ports on 4 of 4 (nvswitch0",
        ],
    );
    // On a board without NVLink the row is there, and check says why it stays empty.
    let (_, out) = check(&["--simulate", "l40s", "-k", "-f", csv]);
    line_with(
        &out,
        &[
            "info",
            "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_PER_LINK_TOTAL",
            "no GPU here has NVLink links",
        ],
    );
}

#[test]
fn errors_past_fec_on_nvlink_5_are_a_warning() {
    let (code, out) = check(&["--simulate", "tests/fixtures/scenarios/nvlink5.toml", "-k"]);
    assert_eq!(code, Some(0), "a warning, not a failure: {out}");
    line_with(
        &out,
        &[
            "WARN",
            "GPU 0 NVLink errors past FEC",
            "above 1e-12 on link(s) 4 (",
        ],
    );
    line_with(&out, &["fix:", "NVLink diagnostics"]);
    // A healthy NVLink 5 node has no such line.
    let (_, out) = check(&["--simulate", "hgx-b200", "-k"]);
    assert!(!out.contains("errors past FEC"), "{out}");
}

#[test]
fn every_interval_has_one_minimum_whatever_sets_it() {
    // The binary, daemon and check alike, refuses an interval under 100 ms from a flag, from
    // the configuration file's interval and from a collection, naming where it came from.
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, body).unwrap();
        p.to_str().unwrap().to_owned()
    };
    let interval = file("interval.yaml", "version: 1\ncollection: {interval: 1ms}\n");
    let group = file(
        "group.yaml",
        "version: 1\ncollection:\n  watchGroups: [{name: fast, interval: 1ns, fields: [DCGM_FI_DEV_GPU_TEMP]}]\n",
    );
    for (args, want) in [
        (
            vec!["-c", "50"],
            "-c/--collect-interval 50: must be at least 100 (milliseconds)".to_owned(),
        ),
        (
            vec!["--config-file", interval.as_str()],
            format!(
                "--config-file {interval}: collection.interval \"1ms\": must be at least 100 (milliseconds)"
            ),
        ),
        (
            vec!["--config-file", group.as_str()],
            format!(
                "--config-file {group}: collection.watchGroups[0].interval \"1ns\": must be at least 100 (milliseconds)"
            ),
        ),
    ] {
        let (code, out) = check(&[&["--simulate", "a100-l4"][..], &args].concat());
        assert_eq!(code, Some(1), "{args:?}: {out}");
        line_with(&out, &["FAIL", &want]);
        let daemon = Command::new(BIN)
            .args(["--simulate", "a100-l4", "-a", "127.0.0.1:0"])
            .args(&args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&daemon.stderr);
        assert_eq!(daemon.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(&want), "{args:?}: {err}");
    }
}

#[test]
fn the_dcgm_section_names_the_library_the_hostengine_and_the_profiling_groups() {
    let (code, out) = check(&["--simulate", "a100-l4"]);
    assert_eq!(code, Some(0), "{out}");
    line_with(&out, &["ok", "mode", "embedded (on the simulated libdcgm)"]);
    line_with(&out, &["ok", "library", "libdcgm_sim.so", "DCGM 4."]);
    line_with(&out, &["ok", "hostengine", "answers"]);
    line_with(&out, &["ok", "GPU 0 profiling groups", "(1001)"]);

    // A library of the user's own, named with --dcgm-lib on a simulated node, is not called
    // the simulated one (here a copy of it at another path).
    let dir = tempfile::tempdir().unwrap();
    let own = dir.path().join("libdcgm.so.4");
    let sim_lib = std::path::Path::new(BIN).with_file_name("libdcgm_sim.so");
    std::fs::copy(&sim_lib, &own).unwrap();
    let own = own.to_str().unwrap();
    let (code, out) = check(&[
        "--simulate",
        "a100-l4",
        "--dcgm-mode",
        "embedded",
        "--dcgm-lib",
        own,
    ]);
    assert_eq!(code, Some(0), "{out}");
    let mode = line_with(&out, &["ok", "mode", "embedded"]);
    assert!(!mode.contains("simulated"), "{mode}");
    line_with(&out, &["ok", "library", own]);
    line_with(
        &out,
        &["ok", "GPU 1 GPM", "DCGM serves the DCGM_FI_PROF_* fields"],
    );

    // A hostengine that is not there: the failure and its fix.
    let (code, out) = check(&["--simulate", "a100-l4", "-r", "unix:///nonexistent/he.sock"]);
    assert_eq!(code, Some(1), "{out}");
    line_with(
        &out,
        &[
            "ok",
            "mode",
            "remote, hostengine unix:///nonexistent/he.sock",
        ],
    );
    line_with(
        &out,
        &["FAIL", "hostengine", "does not answer", "return code -21"],
    );
    line_with(
        &out,
        &["fix:", "start nv-hostengine at unix:///nonexistent/he.sock"],
    );
    // The GPUs without GPM: DCGM is why, and the hint is about that hostengine, not about
    // giving -r (it was given).
    line_with(&out, &["WARN", "GPU 0 GPM", "DCGM", "is down"]);
    line_with(
        &out,
        &[
            "fix:",
            "once the hostengine at unix:///nonexistent/he.sock answers",
        ],
    );
    assert!(
        !out.contains("give the hostengine's address with -r"),
        "{out}"
    );

    // DCGM off: said, with how to turn it on.
    let (_, out) = check(&["--simulate", "a100-l4", "--dcgm-mode", "off"]);
    line_with(&out, &["info", "mode", "off"]);
    line_with(&out, &["fix:", "-r"]);
}

/// A driver wedged in `nvmlInit` (the simulator's `init_hangs_until`): `check` does not hang
/// with it. Past `--timeout` it says what it was waiting for and exits 1. A `--timeout` out of
/// range is a usage error naming the flag.
#[test]
fn a_hung_nvml_init_fails_the_check_at_its_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("init-hang.toml");
    std::fs::write(
        &scenario,
        "name = \"init-hang\"\nnode = \"n\"\ninit_hangs_until = 600\n[[gpus]]\nmodel = \"L4\"\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let out = Command::new(BIN)
        .args([
            "check",
            "--timeout",
            "3s",
            "-a",
            &format!("127.0.0.1:{}", free_port()),
        ])
        .args(["--nvml-lib", built_sim_lib().to_str().unwrap()])
        .env("NVML_SIM_SCENARIO", &scenario)
        .env_remove("NODE_NAME")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("the checks did not finish within 3 s (--timeout)") && text.contains("fix:"),
        "{text}"
    );
    // Bounded by the timeout (the slack is for a loaded machine), not by the 600 s hang.
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let (code, out) = check(&["--timeout", "0s"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("--timeout 0s: must be between 1s and 1h"),
        "{out}"
    );
}

#[test]
fn a_counters_file_over_the_label_limit_fails_the_labels_check() {
    // In the full label shape under --simulate (Kubernetes on) the widest family is
    // gpu_allocation_info with 23 labels; a DCGM family has the identity (5), the three
    // descriptions, the host label and the holder's 10 (container, namespace, pod and seven DRA
    // labels): 19, and five label-type rows make 24.
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("wide.csv");
    std::fs::write(
        &csv,
        "DCGM_FI_DEV_GPU_TEMP, gauge, Temperature.\n\
         DCGM_FI_DRIVER_VERSION, label, Driver.\n\
         DCGM_FI_DEV_VBIOS_VERSION, label, VBIOS.\n\
         DCGM_FI_NVML_VERSION, label, NVML.\n\
         DCGM_FI_DEV_SERIAL, label, Serial.\n\
         DCGM_FI_DEV_BRAND, label, Brand.\n",
    )
    .unwrap();
    let args = [
        "--simulate",
        "a100-l4",
        "--series-labels",
        "full",
        "--max-labels-per-series",
        "23",
    ];
    let (code, out) = check(&[&args[..], &["-f", csv.to_str().unwrap()]].concat());
    assert_eq!(code, Some(1), "{out}");
    let l = line_with(&out, &["FAIL", "labels per series"]);
    assert!(
        l.contains("DCGM_FI_DEV_GPU_TEMP would have 24 labels")
            && l.contains("--max-labels-per-series 23"),
        "{l}"
    );
    line_with(&out, &["fix:", "--drop-labels"]);
    // Without the label rows the same limit passes.
    std::fs::write(&csv, "DCGM_FI_DEV_GPU_TEMP, gauge, Temperature.\n").unwrap();
    let (_, out) = check(&[&args[..], &["-f", csv.to_str().unwrap()]].concat());
    assert!(!out.contains("labels per series"), "{out}");
}
