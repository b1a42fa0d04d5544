//! What a careless operator or a hostile client can do to the running binary, and what it must
//! survive: stray signals (also during start-up), SIGTERM with slow clients, clients that do
//! not read their response (and the memory they hold), connection floods, a low open-file
//! limit, special and oversized files, logs written to a pipe.
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

/// The exporter on `h100-mig` with an HPC job directory that lists 200 jobs on each of its 8
/// GPUs: every series of a GPU is written once per job, so `/metrics` is about 10 MiB, more
/// than the kernel buffers on a loopback connection whose client reads nothing (the sending
/// side grows to 4 MiB at most, `net.ipv4.tcp_wmem`). A large counters file alone does not do
/// it: `counters/recommended.csv` makes 0.2 MiB, which the kernel takes whole.
fn spawn_big_page(extra: &[&str]) -> (Exporter, tempfile::TempDir) {
    spawn_with_jobs(200, "2000", extra)
}

/// The exporter on `h100-mig` ticking every `interval_ms`, with `jobs` HPC jobs on each GPU
/// (about 50 KiB of `/metrics` per job: the full label shape copies every series of a GPU per
/// job).
fn spawn_with_jobs(
    jobs: usize,
    interval_ms: &str,
    extra: &[&str],
) -> (Exporter, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let list: String = (0..jobs).map(|j| format!("slurm-job-{j:05}\n")).collect();
    for gpu in 0..8 {
        std::fs::write(dir.path().join(gpu.to_string()), &list).unwrap();
    }
    let e = Exporter::builder()
        .args([
            "--simulate",
            "h100-mig",
            "-c",
            interval_ms,
            "--series-labels",
            "full",
            "--hpc-job-mapping-dir",
        ])
        .arg(dir.path())
        .args(extra)
        .log_pipe()
        .start();
    (e, dir)
}

/// A connection to the exporter whose receive buffer is 4 KiB (set before connecting, so the
/// window stays small): what it does not read stays in the exporter. With its local port.
fn small_window_client(port: u16) -> (TcpStream, u16) {
    use std::os::fd::FromRawFd;
    // SAFETY: a fresh socket is configured and connected with plain values on the stack; the
    // descriptor is handed to exactly one TcpStream, which closes it.
    let s = unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let s = TcpStream::from_raw_fd(fd);
        let size: libc::c_int = 4096;
        let rc = libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        assert_eq!(rc, 0, "SO_RCVBUF: {}", std::io::Error::last_os_error());
        let addr = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: port.to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes([127, 0, 0, 1]),
            },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(
            fd,
            (&addr as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(rc, 0, "connect: {}", std::io::Error::last_os_error());
        s
    };
    let local = s.local_addr().unwrap().port();
    (s, local)
}

/// The exporter's end of the loopback connection from `client_port`, as the kernel lists it
/// in /proc/net/tcp: its state (1: established) and the bytes queued to send; `None` once it
/// is gone.
fn server_side(port: u16, client_port: u16) -> Option<(u8, u64)> {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap();
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let port_of = |addr: &str| u16::from_str_radix(addr.rsplit(':').next()?, 16).ok();
        if port_of(f.get(1)?)? != port || port_of(f.get(2)?)? != client_port {
            return None;
        }
        let state = u8::from_str_radix(f.get(3)?, 16).ok()?;
        let queued = u64::from_str_radix(f.get(4)?.split(':').next()?, 16).ok()?;
        Some((state, queued))
    })
}

const ESTABLISHED: u8 = 1;

/// Waits up to 20 s until the exporter has started to send its response on the connection
/// from `client_port` (bytes queued).
fn wait_response_started(port: u16, client_port: u16) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while server_side(port, client_port).is_none_or(|(_, queued)| queued == 0) {
        assert!(Instant::now() < deadline, "the response never started");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Reads a response on `s` until its whole body or the end of the connection: the
/// Content-Length and the body bytes received.
fn read_response(s: &mut TcpStream) -> (usize, usize) {
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut got = Vec::new();
    let mut chunk = vec![0u8; 1 << 16];
    let mut want: Option<(usize, usize)> = None;
    loop {
        if let Some((head, len)) = want
            && got.len() >= head + len
        {
            break;
        }
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("reading the response: {e}"),
        }
        if want.is_none()
            && let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n")
        {
            let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
            let len = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or_else(|| panic!("no Content-Length in {head}"));
            want = Some((end + 4, len));
        }
    }
    let (head, len) = want.expect("no response head");
    (len, got.len() - head)
}

const SCRAPE: &[u8] = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";

/// `n` connections that each send half a request and stay open.
fn half_sent_requests(port: u16, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
            s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
            s
        })
        .collect()
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
/// request (the read timeout is longer than the grace), a client that never reads its large
/// `/metrics` response (the write timeout is longer than the grace too), a client that sent the
/// HTTP/2 prior-knowledge preface and idles, an idle keep-alive connection, and a connection
/// that never sent anything. The log says how many connections were cut.
#[test]
fn sigterm_exits_within_the_grace_despite_slow_clients() {
    let (mut e, _jobs) =
        spawn_big_page(&["--web-read-timeout", "60s", "--web-write-timeout", "60s"]);
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
    let (mut not_reading, not_reading_port) = small_window_client(e.port);
    not_reading.write_all(SCRAPE).unwrap();
    wait_response_started(e.port, not_reading_port);
    let mut h2 = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let status = e.sigterm();
    let took = started.elapsed();
    assert!(status.success(), "{status}");
    // The grace is 5 s; the half-sent request would otherwise hold the process for 60 s, the
    // client that does not read for 60 s too.
    assert!(took < Duration::from_secs(12), "{took:?}");
    let log = e.log();
    let cut: usize = log
        .lines()
        .find_map(|l| {
            let rest = &l[l.find("shutdown: ")? + "shutdown: ".len()..];
            let (n, rest) = rest.split_once(' ')?;
            rest.starts_with("connection(s) still open after the grace period were cut")
                .then(|| n.parse().ok())?
        })
        .unwrap_or_else(|| panic!("no line with the number of connections cut:\n{log}"));
    // At least the half-sent request and the response nobody reads.
    assert!(cut >= 2, "{cut} cut:\n{log}");
}

/// A client that asks for a large `/metrics` and never reads it is cut once
/// `--web-write-timeout` (2 s) has passed, and so is one that never reads but sends a byte
/// every 200 ms (bytes read do not extend the write deadline); a normal scrape meanwhile
/// succeeds. The read timeout is 60 s and the write timeout's default 30 s, so only the 2 s
/// write timeout can close them within the 20 s the test waits.
#[test]
fn clients_that_never_read_are_cut_at_the_write_timeout() {
    let (e, _jobs) = spawn_big_page(&["--web-write-timeout", "2s", "--web-read-timeout", "60s"]);
    let (mut silent, silent_port) = small_window_client(e.port);
    silent.write_all(SCRAPE).unwrap();
    let (mut trickler, trickler_port) = small_window_client(e.port);
    trickler.write_all(SCRAPE).unwrap();
    wait_response_started(e.port, silent_port);
    wait_response_started(e.port, trickler_port);
    let r = http_get(e.port, "/metrics", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert!(
        r.body.len() > 6 << 20,
        "the page must outsize the kernel's buffers: {} bytes",
        r.body.len()
    );
    assert!(r.text().contains("DCGM_FI_DEV_GPU_TEMP{"));
    let open = |client| server_side(e.port, client).is_some_and(|(state, _)| state == ESTABLISHED);
    let deadline = Instant::now() + Duration::from_secs(20);
    while open(silent_port) || open(trickler_port) {
        assert!(
            Instant::now() < deadline,
            "a client that does not read still holds its connection after 20 s (silent: {}, \
             trickling: {})",
            open(silent_port),
            open(trickler_port)
        );
        // Fails once the exporter has reset the connection.
        let _ = trickler.write(b"x");
        std::thread::sleep(Duration::from_millis(200));
    }
    let (len, got) = read_response(&mut silent);
    assert!(got < len, "the response was cut: {got} of {len} bytes");
}

/// A scrape in flight is not shed by a connection flood: while a large `/metrics` response is
/// being sent to a client that has not read it yet, 400 connections with half-sent requests
/// arrive and stay open with `--web-max-connections 50`; the idle ones are shed, and the scrape
/// then reads its whole response.
#[test]
fn a_scrape_in_flight_survives_a_connection_flood() {
    let (e, _jobs) = spawn_big_page(&[
        "--web-max-connections",
        "50",
        "--web-read-timeout",
        "60s",
        "--web-write-timeout",
        "60s",
    ]);
    let (mut scrape, scrape_port) = small_window_client(e.port);
    scrape.write_all(SCRAPE).unwrap();
    wait_response_started(e.port, scrape_port);
    let flood = half_sent_requests(e.port, 400);
    // The first connection shed is logged: by then the oldest connection, the scrape, would
    // have gone under a policy that sheds the oldest.
    e.wait_log("connection limit reached", Duration::from_secs(10));
    let (len, got) = read_response(&mut scrape);
    assert!(len > 6 << 20, "{len}");
    assert_eq!(got, len, "the scrape in flight was cut");
    drop(flood);
}

/// A pipe whose buffer is full: (its read end, its write end). A process whose stderr it is
/// blocks at its first log line until the read end is read.
fn full_pipe() -> (std::fs::File, std::os::fd::OwnedFd) {
    use std::os::fd::FromRawFd;
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: the two new descriptors are each owned by exactly one value; the writes read a
    // buffer on the stack.
    unsafe {
        assert_eq!(libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC), 0);
        let (r, w) = (
            std::fs::File::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        );
        assert_eq!(libc::fcntl(fds[1], libc::F_SETFL, libc::O_NONBLOCK), 0);
        let filler = [b'.'; 4096];
        while libc::write(fds[1], filler.as_ptr().cast(), filler.len()) > 0 {}
        while libc::write(fds[1], filler.as_ptr().cast(), 1) > 0 {}
        // The exporter's writes must block, not fail.
        assert_eq!(libc::fcntl(fds[1], libc::F_SETFL, 0), 0);
        (r, w)
    }
}

/// Whether process `pid` has a handler for signal `sig` (`SigCgt` in /proc/PID/status).
fn catches(pid: u32, sig: libc::c_int) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("SigCgt:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (sig - 1)) != 0)
}

/// A stray SIGUSR1 during start-up does not end the process: its handler is installed first
/// thing. The exporter's stderr is a full pipe, so it blocks at its first log line, before
/// the counters, NVML or the listener; its SIGUSR1 handler must already be in place then (per
/// /proc), the signal is sent, and once the pipe is read the exporter becomes ready and logs
/// the signal.
#[test]
fn a_stray_signal_during_start_up_is_survived() {
    let (read_end, write_end) = full_pipe();
    let mut e = Exporter::builder()
        .args(["--simulate", "a100-l4", "-c", "500"])
        .stderr(std::process::Stdio::from(write_end))
        .spawn();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !catches(e.pid(), libc::SIGUSR1) {
        assert!(
            e.child.try_wait().unwrap().is_none(),
            "the exporter exited during start-up"
        );
        assert!(
            Instant::now() < deadline,
            "SIGUSR1 is not caught while start-up is held at the first log line"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        http_get(e.port, "/ready", &[]).is_none(),
        "still starting: not listening yet"
    );
    e.signal("-USR1");
    let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&log);
    std::thread::spawn(move || {
        let mut read_end = read_end;
        let mut chunk = [0u8; 4096];
        while let Ok(n) = read_end.read(&mut chunk) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&chunk[..n]);
        }
    });
    e.wait_ready();
    let text = || String::from_utf8_lossy(&log.lock().unwrap()).into_owned();
    common::wait_until("SIGUSR1 logged", || {
        text().contains("SIGUSR1 received and ignored")
    });
}

/// A FIFO, a device or a directory given as a file stops start-up at once, naming the flag's
/// file and what it is, instead of blocking forever (or reading /dev/zero until memory runs
/// out).
#[test]
fn special_files_stop_start_up_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(&dir.path().join("fifo"));
    let fifo = fifo.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    for (flag, path, what) in [
        ("-f", fifo, "FIFO"),
        ("-f", "/dev/zero", "character device"),
        ("-f", d, "directory"),
        ("--web-config-file", fifo, "FIFO"),
        ("--config-file", fifo, "FIFO"),
    ] {
        let err = refused_at_start(flag, path);
        assert!(
            err.contains(path) && err.contains(&format!("not a regular file but a {what}")),
            "{flag} {path}: {err}"
        );
    }
}

/// Makes a FIFO at `path` (with no writer: a blocking open of it would wait for ever).
fn mkfifo(path: &std::path::Path) -> std::path::PathBuf {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .unwrap();
    assert!(made.success());
    path.to_path_buf()
}

/// Starts the exporter on the simulated node with `flag path`, which must stop start-up with
/// exit 1 well within the 20 s the process is given (no hang on the file); its stderr.
fn refused_at_start(flag: &str, path: &str) -> String {
    refused(&["--simulate", "a100-l4", flag, path])
}

/// Starts the exporter with `args`, which must stop start-up with exit 1 well within the 20 s
/// the process is given; its stderr.
fn refused(args: &[&str]) -> String {
    let started = Instant::now();
    let out = std::process::Command::new("timeout")
        .args(["20", common::BIN, "-a", "127.0.0.1:0"])
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{args:?}");
    err
}

/// `--simulate PATH` goes through the same bounded reader as every other file: `/dev/zero`, a
/// FIFO with no writer, a directory and a sparse 8 GiB file are refused at once by the daemon
/// and by `check`, each naming `--simulate`, the path and what the file is (before, the
/// daemon read `/dev/zero` until memory ran out and waited on the FIFO for ever).
#[test]
fn simulate_refuses_special_and_oversized_files_promptly_daemon_and_check() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(&dir.path().join("scenario.fifo"));
    let big = dir.path().join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let (fifo, big) = (fifo.to_str().unwrap(), big.to_str().unwrap());
    let d = dir.path().to_str().unwrap();
    for (path, what) in [
        ("/dev/zero", "not a regular file but a character device"),
        (fifo, "not a regular file but a FIFO"),
        (d, "not a regular file but a directory"),
        (big, "over the 4194304-byte limit"),
    ] {
        for check in [false, true] {
            let started = Instant::now();
            let mut c = std::process::Command::new("timeout");
            c.arg("20").arg(common::BIN);
            if check {
                c.arg("check");
            }
            let out = c
                .args(["--simulate", path, "-a", "127.0.0.1:0"])
                .output()
                .unwrap();
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                matches!(out.status.code(), Some(1 | 2)),
                "check={check} {path}: {:?} {text}",
                out.status
            );
            assert!(
                text.contains(&format!("--simulate {path}: not a built-in scenario"))
                    && text.contains(what),
                "check={check} {path}: {text}"
            );
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "check={check} {path}"
            );
        }
    }
}

/// `--nvml-lib` naming a FIFO (directly or through a symlink), a device or a directory stops
/// start-up at once, naming the flag and the path, on a real node's path and with
/// `--simulate` (where it names the simulated library): the dynamic loader would wait on a
/// FIFO for a writer, holding a lock that every thread of the process may need.
#[test]
fn an_nvml_library_that_is_not_a_file_stops_start_up_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = mkfifo(&dir.path().join("libnvidia-ml.so.1"));
    let link = dir.path().join("link.so");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    let (fifo, link) = (fifo.to_str().unwrap(), link.to_str().unwrap());
    let d = dir.path().to_str().unwrap();
    for (path, what) in [
        (fifo, "FIFO"),
        (link, "FIFO"),
        ("/dev/zero", "character device"),
        (d, "directory"),
    ] {
        for simulate in [false, true] {
            let mut args = vec!["--nvml-lib", path];
            if simulate {
                args.extend(["--simulate", "a100-l4"]);
            }
            let err = refused(&args);
            assert!(
                err.contains(&format!(
                    "--nvml-lib {path}: not a regular file but a {what}"
                )),
                "{args:?}: {err}"
            );
        }
    }
}

/// A counters file over the 4 MiB limit stops start-up at once, naming the file and the
/// limit: a 5 MiB file of comments and a sparse 8 GiB file (reading that one would take the
/// memory and minutes).
#[test]
fn an_oversized_counters_file_stops_start_up_promptly() {
    let dir = tempfile::tempdir().unwrap();
    let padded = dir.path().join("padded.csv");
    let mut text = "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (C).\n".to_owned();
    while text.len() <= 5 << 20 {
        text.push_str("# a comment line that pads the file past the limit\n");
    }
    std::fs::write(&padded, text).unwrap();
    let sparse = dir.path().join("sparse.csv");
    std::fs::File::create(&sparse)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    for path in [padded, sparse] {
        let path = path.to_str().unwrap();
        let err = refused_at_start("-f", path);
        assert!(
            err.contains(path) && err.contains("over the 4194304-byte limit"),
            "{path}: {err}"
        );
    }
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
    let before = common::rss_kib(e.pid());
    let mut flood = half_sent_requests(e.port, 300);
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
    let after = common::rss_kib(e.pid());
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
    sigterm_ends_it(&mut e, "exiting without waiting for it");
}

/// Waits (at most 40 s) for the watchdog's log line, then checks what a stuck first tick looks
/// like from outside: `/health` answers 200 and says so, `/ready` answers 503 and says so,
/// `/metrics` carries `gpu_exporter_sampler_stalled_seconds` and no tick has been published.
fn stalled_before_the_first_tick(e: &Exporter) {
    e.wait_log(
        "the sampler has not finished a tick for",
        Duration::from_secs(40),
    );
    assert!(
        e.log()
            .contains("since start: loading or initialising NVML may be hung"),
        "{}",
        e.log()
    );
    let h = http_get(e.port, "/health", &[]).unwrap();
    assert_eq!(h.status, 200, "{}", h.text());
    assert!(
        h.text().contains("the sampler has not finished a tick for"),
        "{}",
        h.text()
    );
    let r = http_get(e.port, "/ready", &[]).unwrap();
    assert_eq!(r.status, 503, "{}", r.text());
    assert!(
        r.text()
            .contains("loading or initialising NVML may be hung"),
        "{}",
        r.text()
    );
    let m = http_get(e.port, "/metrics", &[]).unwrap().text();
    assert!(m.contains("\ngpu_exporter_sampler_stalled_seconds "), "{m}");
    // The start-up page: no tick has finished.
    assert!(m.contains("\ngpu_exporter_samples_total 0\n"), "{m}");
}

/// SIGTERM, which must end the process with exit 0 although the sampler is stuck (within the
/// 20 s `sigterm` waits; the grace is 5 s), with `why` in the log: the daemon's line for the
/// sampler it leaves behind, or the exit guard's.
fn sigterm_ends_it(e: &mut Exporter, why: &str) {
    let started = Instant::now();
    let status = e.sigterm();
    assert!(status.success(), "{status}");
    // The process bounds itself by the grace; the slack is for a loaded test machine (the
    // structural checks are the log lines: the drain's and the guard's, which names the grace).
    assert!(
        started.elapsed() < gpu_exporter::serve::SHUTDOWN_GRACE + Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(e.log().contains(why), "{}", e.log());
}

/// [`sigterm_ends_it`] in the ordinary shutdown, which leaves the stuck sampler behind.
fn sigterm_leaves_the_stuck_sampler(e: &mut Exporter) {
    sigterm_ends_it(e, "exiting without waiting for it");
}

/// A driver wedged in `nvmlInit` from the start (the simulator's `init_hangs_until`), on a
/// real node's path (`--nvml-lib`, no `--simulate`): before any tick has finished, the stall is
/// logged, `/health` reports it, `/ready` is 503 and `/metrics` carries
/// `gpu_exporter_sampler_stalled_seconds`; SIGTERM still ends the process within the grace.
#[test]
fn a_hung_nvml_init_is_reported_before_the_first_tick_and_does_not_block_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("init-hang.toml");
    std::fs::write(
        &scenario,
        "name = \"init-hang\"\nnode = \"n\"\ninit_hangs_until = 600\n\
         [[gpus]]\nmodel = \"L4\"\n",
    )
    .unwrap();
    let mut e = Exporter::builder()
        .env("NVML_SIM_SCENARIO", &scenario)
        .args(["-c", "500"])
        .log_pipe()
        .spawn();
    stalled_before_the_first_tick(&e);
    sigterm_leaves_the_stuck_sampler(&mut e);
}

/// Compiles `source` (C) into the shared library `dir/name` with `cc` (the C compiler cargo
/// links with), passing `extra` to it.
fn c_library(
    dir: &std::path::Path,
    name: &str,
    source: &str,
    extra: &[&str],
) -> std::path::PathBuf {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, source).unwrap();
    let out = std::process::Command::new("cc")
        .current_dir(dir)
        .args(["-shared", "-fPIC", "-o", name])
        .arg(&c)
        .args(extra)
        .output()
        .unwrap_or_else(|e| panic!("cc (the C compiler cargo links with): {e}"));
    assert!(out.status.success(), "cc {name}: {out:?}");
    dir.join(name)
}

/// A library whose loading blocks inside the dynamic loader itself: it needs a library that is
/// a FIFO in its run path, which the loader opens and waits on (while holding its lock, which
/// a server thread needs for its first response). The exporter has a child process try the
/// load first, so the HTTP server keeps answering; the stall is reported before any tick
/// finished, SIGTERM ends the process within the grace, and the child dies with it.
#[test]
fn a_library_that_blocks_the_dynamic_loader_freezes_neither_serving_nor_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dep = c_library(d, "libdep.so", "int dep(void) { return 1; }\n", &[]);
    let rpath = format!("-Wl,-rpath,{}", d.display());
    let stub = c_library(
        d,
        "libstub.so",
        "int dep(void);\nint nvmlInit_v2(void) { return dep(); }\n",
        &["-L.", "-ldep", &rpath],
    );
    std::fs::remove_file(&dep).unwrap();
    mkfifo(&dep);
    let mut e = Exporter::builder()
        .nvml_lib(&stub)
        .args(["-c", "500"])
        .log_pipe()
        .spawn();
    // Served while the load is blocked: each server thread's first response needs the
    // loader's lock (it registers a thread-local destructor), so without the trial process the
    // first answer never comes. The sampler starts right after the address is bound, and the
    // second waited here lets it reach the load first.
    e.wait_log("serving /metrics", Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(1));
    for _ in 0..4 {
        let mut s = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(b"GET /health HTTP/1.0\r\n\r\n").unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        assert_eq!(
            answer.split(' ').nth(1),
            Some("200"),
            "{answer:?}\n{}",
            e.log()
        );
    }
    stalled_before_the_first_tick(&e);
    sigterm_leaves_the_stuck_sampler(&mut e);
    // The trial process, blocked on the FIFO, did not outlive the exporter.
    let stub = stub.to_str().unwrap().to_owned();
    common::wait_until("the trial process gone", || {
        !std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
            std::fs::read(p.path().join("cmdline"))
                .is_ok_and(|c| String::from_utf8_lossy(&c).contains(&stub))
        })
    });
}

/// The exporter on a library whose constructor never returns inside the exporter, though it
/// does in the trial process (a hang the trial cannot foresee): the sampler's thread is then
/// stuck inside the dynamic loader, holding its lock. Returned once the sampler is in there.
fn wedged_in_the_loader(dir: &std::path::Path) -> Exporter {
    let source = format!(
        "#include <fcntl.h>\n#include <string.h>\n#include <unistd.h>\n\
         __attribute__((constructor)) static void wedge(void) {{\n\
           char b[4096]; int fd = open(\"/proc/self/cmdline\", O_RDONLY);\n\
           ssize_t n = fd < 0 ? 0 : read(fd, b, sizeof b - 1);\n\
           for (ssize_t i = 0; i < n; i++) if (b[i] == 0) b[i] = ' ';\n\
           b[n > 0 ? n : 0] = 0;\n\
           if (strstr(b, \"{}\")) return;\n\
           for (;;) pause();\n\
         }}\n\
         int nvmlInit_v2(void) {{ return 0; }}\n",
        gpu_exporter::gpu::trial::ARG
    );
    let lib = c_library(dir, "libwedge.so", &source, &[]);
    let e = Exporter::builder()
        .nvml_lib(&lib)
        .args(["-c", "500"])
        .log_pipe()
        .spawn();
    e.wait_log("serving /metrics", Duration::from_secs(20));
    // The sampler reaches the constructor within this second; a trial process has come and gone.
    std::thread::sleep(Duration::from_secs(1));
    e
}

/// A load stuck inside the exporter's dynamic loader: an ordinary exit would wait for the
/// loader's lock (`_dl_fini`). SIGTERM still ends the process within the grace, with exit 0:
/// the daemon leaves with `_exit`. No request is sent (see the next test).
#[test]
fn a_load_stuck_inside_the_exporter_does_not_block_its_exit() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = wedged_in_the_loader(dir.path());
    sigterm_leaves_the_stuck_sampler(&mut e);
}

/// The same, after requests: each server thread's first response needs the loader's lock, so
/// both wait on it, and the ordinary shutdown, which needs them to see the signal, never
/// starts. The exit guard ends the process at the grace (5 s), with exit 0 and a line saying
/// why.
#[test]
fn a_shutdown_that_cannot_run_is_ended_by_the_exit_guard() {
    let dir = tempfile::tempdir().unwrap();
    let mut e = wedged_in_the_loader(dir.path());
    let port = e.port;
    let clients: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
                s.write_all(b"GET /health HTTP/1.0\r\n\r\n").unwrap();
                let _ = s.read_to_end(&mut Vec::new());
            })
        })
        .collect();
    for c in clients {
        c.join().unwrap();
    }
    sigterm_ends_it(
        &mut e,
        "did not end within 5 s of SIGTERM or Ctrl-C (a thread stuck inside NVML or the dynamic \
         loader",
    );
}

/// A client that never reads its response holds no `--max-concurrent-scrapes` slot (a request
/// counts only until its response is in the connection's write buffer): with a limit of 1,
/// while 5 such clients hold large responses unread, normal scrapes get 200.
#[test]
fn clients_that_never_read_hold_no_scrape_slot() {
    let (e, _jobs) = spawn_big_page(&[
        "--max-concurrent-scrapes",
        "1",
        "--web-write-timeout",
        "60s",
    ]);
    let mut unread = Vec::new();
    for _ in 0..5 {
        let (mut s, port) = small_window_client(e.port);
        s.write_all(SCRAPE).unwrap();
        wait_response_started(e.port, port);
        unread.push(s);
    }
    for _ in 0..3 {
        let r = http_get(e.port, "/metrics", &[]).unwrap();
        assert_eq!(r.status, 200, "{}", r.text());
    }
    drop(unread);
}

/// Clients that never read each hold the page of the tick they asked in, until the write
/// timeout (60 s here). NON_READERS of them (more, up to MAX_NON_READERS, until the budget is
/// exceeded: a loaded machine ticks slower) arrive 40 ms apart while a page of about 1 MiB is
/// published every 100 ms (each pipelines 50 requests, with a 4 KiB receive window): unbounded,
/// they would hold a page each. Pages replaced since, beyond the one replaced last, may hold
/// 8 MiB (`STALE_BUDGET`): the connections holding the oldest are cut, which is logged once
/// and counted in `gpu_exporter_stalled_responses_cut_total`, and resident memory grows by
/// less than RSS_GROWTH_MIB; a normal scrape meanwhile gets its whole page. (Debug build, 1.3
/// MB pages: it grew by 16 MiB; with the budget switched off, by 77 MiB.)
#[test]
fn pages_held_by_clients_that_never_read_are_bounded() {
    const NON_READERS: usize = 200;
    const MAX_NON_READERS: usize = 600;
    const RSS_GROWTH_MIB: u64 = 32;
    let (e, _jobs) = spawn_with_jobs(
        20,
        "100",
        &["--web-write-timeout", "60s", "--web-read-timeout", "60s"],
    );
    let page = http_get(e.port, "/metrics", &[]).unwrap().body.len();
    let before = common::rss_kib(e.pid());
    let mut unread = Vec::new();
    // NON_READERS at least; more while the budget has not been exceeded yet (on a loaded
    // machine ticks come slower than every 100 ms, so fewer distinct pages are held), up to
    // MAX_NON_READERS.
    let over = "responses that clients do not read hold";
    while unread.len() < NON_READERS || (unread.len() < MAX_NON_READERS && !e.log().contains(over))
    {
        let (mut s, _) = small_window_client(e.port);
        s.write_all(&SCRAPE.repeat(50)).unwrap();
        unread.push(s);
        std::thread::sleep(Duration::from_millis(40));
    }
    std::thread::sleep(Duration::from_millis(500));
    let grown = common::rss_kib(e.pid()).saturating_sub(before);
    assert!(
        grown < RSS_GROWTH_MIB << 10,
        "{NON_READERS} clients that never read, pages of {page} bytes: resident memory grew by \
         {grown} KiB"
    );
    let r = http_get(e.port, "/metrics", &[]).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.text().contains("DCGM_FI_DEV_GPU_TEMP{"));
    e.wait_log(over, Duration::from_secs(10));
    e.metrics_until("the connections cut, counted", |m| {
        m.contains("\ngpu_exporter_stalled_responses_cut_total ")
    });
    drop(unread);
}

/// With an open-file limit of 256 that cannot be raised (soft and hard), the connection cap is
/// lowered to fit and that is logged; 300 connections with half-sent requests then arrive and
/// stay (the read timeout is 60 s): the oldest are closed for the newer ones, scrapes keep
/// getting their page, and "Too many open files" is not logged over and over (at most once).
/// With a soft limit of 256 under a hard one of 4096, the soft limit is raised instead.
#[test]
fn a_low_open_file_limit_lowers_the_connection_cap() {
    let raised = Exporter::builder()
        .open_files(256, 4096)
        .args(["--simulate", "a100-l4", "-c", "500"])
        .log_pipe()
        .start();
    raised.wait_log(
        "raised the soft limit on open files from 256 to",
        Duration::from_secs(10),
    );
    assert!(!raised.log().contains("lowered"), "{}", raised.log());
    drop(raised);
    let e = Exporter::builder()
        .open_files(256, 256)
        .args([
            "--simulate",
            "a100-l4",
            "-c",
            "500",
            "--web-read-timeout",
            "60s",
        ])
        .log_pipe()
        .start();
    e.wait_log(
        "--web-max-connections lowered from 512 to",
        Duration::from_secs(10),
    );
    let flood = half_sent_requests(e.port, 300);
    for _ in 0..5 {
        let mut s = TcpStream::connect(("127.0.0.1", e.port)).unwrap();
        s.write_all(SCRAPE).unwrap();
        let (len, got) = read_response(&mut s);
        assert!(len > 0 && got == len, "{got} of {len} bytes");
    }
    let log = e.log();
    let storm = log
        .lines()
        .filter(|l| l.contains("Too many open files"))
        .count();
    assert!(storm <= 1, "{storm} lines say so:\n{log}");
    drop(flood);
}
