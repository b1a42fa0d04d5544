//! Signals at the very start of the real binary: sent the moment its `main` has run its first
//! line (seen in /proc), and sent right after exec by a parent that starts it with them
//! blocked (the only way to close the window before `main`, which the dynamic loader's work
//! fills: docs/limits.md). Neither a burst of SIGHUP, SIGUSR1, SIGUSR2 and SIGALRM nor an
//! early SIGTERM or SIGINT may end the process by the signal's default action: the burst is
//! survived and handled, the SIGTERM or SIGINT is a clean shutdown with exit 0.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{BIN, built_sim_lib, free_port, http_get};
use gpu_exporter::daemon::signals::HANDLED;

/// The exporter on a simulated node on `port`, stderr to `log`; with `blocked`, started with
/// [`HANDLED`] blocked, as a parent can do (the mask is kept across exec).
fn spawn(port: u16, log: &Path, blocked: bool) -> Child {
    let mut cmd = Command::new(BIN);
    cmd.args(["--simulate", "a100-l4", "-c", "500"])
        .args(["-a", &format!("127.0.0.1:{port}")])
        .arg("--nvml-lib")
        .arg(built_sim_lib())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap());
    if blocked {
        // SAFETY: sigemptyset, sigaddset and pthread_sigmask (async-signal-safe) on a set
        // owned by the closure, in the forked child before exec; std has reset the mask just
        // before (it empties it for every child), so this is the mask the exporter inherits.
        unsafe {
            cmd.pre_exec(|| {
                let mut set: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut set);
                for sig in HANDLED {
                    libc::sigaddset(&mut set, sig);
                }
                match libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) {
                    0 => Ok(()),
                    rc => Err(std::io::Error::from_raw_os_error(rc)),
                }
            });
        }
    }
    cmd.spawn().unwrap()
}

/// A signal mask line (`SigBlk`, `SigCgt`) of process `pid`; `None` once it is gone.
fn mask(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|m| u64::from_str_radix(m.trim_start_matches(':').trim(), 16).ok())
}

fn bit(sig: libc::c_int) -> u64 {
    1 << (sig - 1)
}

/// Busy-waits (bounded) until the exporter's `main` has begun: SIGHUP blocked (its first line)
/// or already caught (its handler installed). Panics if the process ends first.
fn wait_for_main(child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let blk = mask(child.id(), "SigBlk").unwrap_or(0);
        let cgt = mask(child.id(), "SigCgt").unwrap_or(0);
        if (blk | cgt) & bit(libc::SIGHUP) != 0 {
            return;
        }
        if let Some(s) = child.try_wait().unwrap() {
            panic!("the exporter ended before its main ran: {s}");
        }
        assert!(Instant::now() < deadline, "main never began");
        std::hint::spin_loop();
    }
}

/// Sends `sig` to `child` at once (no `kill` command in between).
fn send(child: &Child, sig: libc::c_int) {
    // SAFETY: kill with a pid we spawned and a valid signal number.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, sig) }, 0);
}

/// The burst: 50 SIGHUP, then SIGUSR1, SIGUSR2 and SIGALRM.
fn burst(child: &Child) {
    for _ in 0..50 {
        send(child, libc::SIGHUP);
    }
    for sig in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM] {
        send(child, sig);
    }
}

/// Waits up to 30 s for the exit.
fn exit_within(child: &mut Child, log: &Path) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "no exit within 30 s; log:\n{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn log_of(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// The burst, then SIGTERM (or SIGINT), all within microseconds of the moment `main` began:
/// before the fix the SIGTERM (not caught until the listener was bound) ended the process by
/// its default action, and SIGHUP or SIGUSR1 before their handlers did too. Now they wait,
/// blocked, for the handlers: the exporter starts, shuts down at once and exits 0.
#[test]
fn signals_the_moment_main_begins_end_in_a_clean_exit() {
    let dir = tempfile::tempdir().unwrap();
    for (name, stop) in [("SIGTERM", libc::SIGTERM), ("SIGINT", libc::SIGINT)] {
        let log = dir.path().join(format!("{name}.log"));
        let mut child = spawn(free_port(), &log, false);
        wait_for_main(&mut child);
        burst(&child);
        send(&child, stop);
        let status = exit_within(&mut child, &log);
        assert_eq!(
            (status.code(), status.signal()),
            (Some(0), None),
            "{name} with the burst at the start of main: {status}; log:\n{}",
            log_of(&log)
        );
        let text = log_of(&log);
        assert!(text.contains("received, shutting down"), "{name}: {text}");
    }
}

/// A parent that starts the exporter with its signals blocked closes the window before `main`
/// (the mask is kept across exec): the burst sent right after exec, during the dynamic
/// loader's work, is pending until the handlers are installed and then reaches them (the
/// exporter unblocks its signals whatever mask it inherited); it serves, logs the SIGUSR1 and
/// the SIGHUP, and a SIGTERM sent right after exec to another one is a clean exit 0. Before the
/// fix those signals stayed blocked for good: never logged, and SIGTERM never stopped it.
#[test]
fn signals_right_after_exec_under_a_blocking_parent_reach_their_handlers() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("burst.log");
    let port = free_port();
    let mut child = spawn(port, &log, true);
    burst(&child);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = log_of(&log);
        if text.contains("SIGUSR1 received and ignored")
            && text.contains("SIGHUP: the built-in counters are in use")
        {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the exporter ended: {:?}; log:\n{text}",
            child.try_wait()
        );
        assert!(
            Instant::now() < deadline,
            "the signals sent right after exec never reached their handlers; log:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        http_get(port, "/health", &[]).map(|r| r.status),
        Some(200),
        "{}",
        log_of(&log)
    );
    send(&child, libc::SIGTERM);
    let status = exit_within(&mut child, &log);
    assert_eq!(status.code(), Some(0), "{status}");

    let log = dir.path().join("term.log");
    let mut child = spawn(free_port(), &log, true);
    send(&child, libc::SIGTERM);
    let status = exit_within(&mut child, &log);
    assert_eq!(
        (status.code(), status.signal()),
        (Some(0), None),
        "SIGTERM right after exec: {status}; log:\n{}",
        log_of(&log)
    );
}
