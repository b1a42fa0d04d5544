//! What a careless operator or a hostile client can do to the running binary, and what it must
//! survive: stray signals, SIGTERM with slow clients, logs written to a pipe.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Exporter, http_get};

fn spawn(extra: &[&str]) -> Exporter {
    Exporter::builder()
        .args(["--simulate", "a100-l4", "-c", "500"])
        .args(extra)
        .log_pipe()
        .start()
}

/// SIGUSR1, SIGUSR2 and SIGALRM, which end a process by default, are logged and ignored.
#[test]
fn stray_signals_are_logged_and_survived() {
    let e = spawn(&[]);
    for sig in ["USR1", "USR2", "ALRM", "USR1"] {
        e.signal(&format!("-{sig}"));
    }
    e.wait_log("SIGALRM received and ignored", Duration::from_secs(10));
    assert_eq!(http_get(e.port, "/health", &[]).unwrap().status, 200);
    let log = e.log();
    for sig in ["SIGUSR1", "SIGUSR2", "SIGALRM"] {
        let warnings = log
            .lines()
            .filter(|l| l.contains(&format!("{sig} received and ignored")))
            .count();
        assert_eq!(warnings, 1, "one warning for {sig}:\n{log}");
    }
}

/// Text logs written to a pipe carry no terminal colour codes.
#[test]
fn logs_to_a_pipe_have_no_colour_codes() {
    let e = spawn(&[]);
    let log = e.log();
    assert!(log.contains("serving /metrics"), "{log}");
    assert!(!log.contains('\u{1b}'), "escape codes in {log:?}");
}

/// SIGTERM ends the process in bounded time, exit 0, whatever the clients do: a half-sent
/// request (the read timeout is longer than the grace), an idle keep-alive connection, and a
/// connection that never sent anything.
#[test]
fn sigterm_exits_within_the_grace_despite_slow_clients() {
    let mut e = spawn(&["--web-read-timeout", "60s"]);
    let mut half = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
    half.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let mut idle = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut first = [0u8; 12];
    idle.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200");
    let _silent = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let status = e.sigterm();
    let took = started.elapsed();
    assert!(status.success(), "{status}");
    // The grace is 5 s; the half-sent request would otherwise hold the process for 60 s.
    assert!(took < Duration::from_secs(12), "{took:?}");
    let log = e.log();
    assert!(
        log.contains("shutdown: connections still open after the grace period were cut"),
        "{log}"
    );
}

/// A FIFO, a device or a directory given as a file stops start-up at once, naming the flag's
/// file and what it is, instead of blocking forever (or reading /dev/zero until memory runs
/// out).
#[test]
fn special_files_stop_start_up_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let fifo = fifo.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    for (flag, path, what) in [
        ("-f", fifo, "FIFO"),
        ("-f", "/dev/zero", "character device"),
        ("-f", d, "directory"),
        ("--web-config-file", fifo, "FIFO"),
        ("--config-file", fifo, "FIFO"),
    ] {
        let started = Instant::now();
        let out = std::process::Command::new("timeout")
            .args([
                "20",
                common::BIN,
                "--simulate",
                "a100-l4",
                "-a",
                "127.0.0.1:0",
                flag,
                path,
            ])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag} {path}: {err}");
        assert!(started.elapsed() < Duration::from_secs(10), "{flag} {path}");
        assert!(
            err.contains(path) && err.contains(&format!("not a regular file but a {what}")),
            "{flag} {path}: {err}"
        );
    }
}

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

/// A slowloris: 300 connections that each send half a request and stop. With
/// `--web-max-connections 100` the oldest are shed, a normal scrape during the flood succeeds,
/// the flood is logged, every flooding socket ends up closed by the server, and the memory it
/// cost stays bounded and is handed back (measured with 900 such connections, debug build:
/// cap 100, +2.5 MiB at the peak and +0.9 MiB once the flood is over; no cap, +13 MiB kept).
#[test]
fn slowloris_cannot_lock_prometheus_out() {
    let e = spawn(&["--web-max-connections", "100", "--web-read-timeout", "30s"]);
    assert_eq!(http_get(e.port, "/metrics", &[]).unwrap().status, 200);
    let before = rss_kib(e.pid());
    let mut flood = Vec::new();
    for _ in 0..300 {
        let mut s = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
            .unwrap();
        flood.push(s);
    }
    let started = Instant::now();
    let r = http_get(e.port, "/metrics", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.text().contains("DCGM_FI_DEV_GPU_TEMP{"));
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    e.wait_log("connection limit reached", Duration::from_secs(10));
    // The 200 oldest were shed; the server holds at most 100 of them.
    let mut open: Vec<&mut TcpStream> = flood.iter_mut().collect();
    for s in &mut open {
        s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(15);
    while open.len() > 100 && Instant::now() < deadline {
        open.retain_mut(|s| {
            let mut b = [0u8; 64];
            match s.read(&mut b) {
                Ok(0) => false,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => false,
                _ => true,
            }
        });
    }
    let closed = 300 - open.len();
    drop(open);
    drop(flood);
    std::thread::sleep(Duration::from_millis(500));
    let after = rss_kib(e.pid());
    assert!(
        after < before + 8 * 1024,
        "resident memory grew from {before} KiB to {after} KiB"
    );
    assert!(closed >= 200, "{closed} of 300 closed");
}

/// An idle keep-alive connection is closed once the read timeout passes.
#[test]
fn idle_keep_alive_connections_are_closed() {
    let e = spawn(&["--web-read-timeout", "1s"]);
    let mut s = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut head = [0u8; 12];
    s.read_exact(&mut head).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let r = s.read_to_end(&mut rest);
    assert!(r.is_ok(), "closed by the server: {r:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

/// `-d` selecting none of the GPUs present is a warning and a self-metric, not silence.
#[test]
fn a_device_selection_that_matches_nothing_is_said() {
    let e = spawn(&["-d", "g:42"]);
    e.wait_log("selects none of the 2 GPU(s)", Duration::from_secs(10));
    let m = e.metrics();
    assert!(m.contains("\ngpu_exporter_devices_selected 0\n"), "{m}");
    assert!(!m.contains("DCGM_FI_DEV_GPU_TEMP{"), "{m}");
    let e = spawn(&["-d", "g:1"]);
    let m = e.metrics();
    assert!(m.contains("\ngpu_exporter_devices_selected 1\n"), "{m}");
    assert!(!e.log().contains("selects none"));
}

/// A hung driver (the simulator's `hang` fault: every NVML call blocks): `/ready` turns 503
/// once the sampler has not finished a tick for the watchdog's limit (10 s with `-c 500`),
/// `/metrics` keeps serving the last values with `gpu_exporter_sampler_stalled_seconds`, the
/// log says so, and SIGTERM still ends the process promptly with exit 0.
#[test]
fn a_hung_driver_turns_ready_503_and_does_not_block_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("hang.toml");
    std::fs::write(
        &scenario,
        "name = \"hang\"\nnode = \"n\"\n\
         [[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\", level = 0.9 }\n\
         [[faults]]\nat = 4\ngpu = 0\nkind = \"hang\"\nuntil = 120\n",
    )
    .unwrap();
    let mut e = Exporter::builder()
        .args(["--simulate", scenario.to_str().unwrap(), "-c", "500"])
        .log_pipe()
        .start();
    assert_eq!(http_get(e.port, "/ready", &[]).unwrap().status, 200);
    e.wait_log(
        "the sampler has not finished a tick for",
        Duration::from_secs(40),
    );
    let r = http_get(e.port, "/ready", &[]).unwrap();
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(
        r.text().contains("an NVML call may be hung"),
        "{}",
        r.text()
    );
    let m = http_get(e.port, "/metrics", &[]).unwrap().text();
    assert!(m.contains("\ngpu_exporter_sampler_stalled_seconds "), "{m}");
    assert!(
        m.contains("DCGM_FI_DEV_GPU_TEMP{"),
        "the last values are still served"
    );
    let started = Instant::now();
    let status = e.sigterm();
    assert!(status.success(), "{status}");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(
        e.log().contains("exiting without waiting for it"),
        "{}",
        e.log()
    );
}
