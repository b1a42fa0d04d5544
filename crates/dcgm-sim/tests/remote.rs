//! The built `libdcgm_sim.so` in remote mode against `dcgm-sim-hostengine`: over a unix
//! socket and over 127.0.0.1 TCP, the same answers as embedded mode; a host engine that is
//! killed (CONNECTION_NOT_VALID, within the connection's timeout) and started again (a new
//! `dcgmConnect_v2` works); nothing listening.
//!
//! The loaded library has one global state, so the tests take turns (`serial`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::{Dcgm, Hostengine, dbl, int, socket_path, text};
use dcgm_abi as abi;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const GPU: u32 = abi::DCGM_FE_GPU;

/// Checks a connection answers like the scenario: devices, UUIDs, a profiling value.
fn check_answers(d: &Dcgm, h: usize) {
    let sc = nvml_sim::scenario::load("a100-l4").unwrap();
    assert_eq!(d.devices(h), Ok(vec![0, 1]));
    let a = d.attributes(h, 1).unwrap();
    assert_eq!(abi::c_text(&a.identifiers.uuid), sc.gpus[1].uuid);
    let g = d.group(h, &[(GPU, 0), (GPU, 1)]).unwrap();
    let fg = d.field_group(h, &[1001, 54]).unwrap();
    assert_eq!(d.watch(h, g, fg), 0);
    assert_eq!(d.update_all(h), 0);
    let v = d.latest(h, &[(GPU, 0), (GPU, 1)], &[1001, 54]).unwrap();
    for gpu in 0..2 {
        let gr = dbl(&v[gpu * 2]).expect("GR_ENGINE_ACTIVE over the socket");
        assert!((0.0..=1.0).contains(&gr));
        assert_eq!(text(&v[gpu * 2 + 1]), sc.gpus[gpu].uuid);
    }
    let groups = d.metric_groups(h, 0).unwrap();
    assert!(groups.iter().any(|g| g.2.contains(&1011)));
    assert_eq!(d.watch(h, 987_654, fg), abi::DCGM_ST_NOT_CONFIGURED);
}

#[test]
fn remote_over_a_unix_socket_and_over_tcp() {
    let _s = serial();
    let d = Dcgm::open();
    assert_eq!(d.init(), 0);
    let path = socket_path("remote");
    let unix = Hostengine::start(&[
        "--scenario",
        "a100-l4",
        "--domain-socket",
        path.to_str().unwrap(),
    ]);
    let h = d
        .connect(&unix.address, true, 3000)
        .expect("connect over the unix socket");
    check_answers(&d, h);
    assert_eq!(d.disconnect(h), 0);
    assert_eq!(d.devices(h), Err(abi::DCGM_ST_BADPARAM), "a closed handle");

    let tcp = Hostengine::start(&["--scenario", "a100-l4", "-p", "0", "--bind-ip", "127.0.0.1"]);
    assert!(tcp.address.starts_with("127.0.0.1:"), "{}", tcp.address);
    let h = d
        .connect(&tcp.address, false, 3000)
        .expect("connect over TCP");
    check_answers(&d, h);
    // Groups live in the host engine: a second connection sees the first one's.
    let h2 = d
        .connect(&tcp.address, false, 3000)
        .expect("second connection");
    assert_eq!(d.devices(h2), Ok(vec![0, 1]));
    assert_eq!(d.disconnect(h2), 0);
    assert_eq!(d.disconnect(h), 0);
    assert_eq!(d.shutdown(), 0);
    drop(unix);
    let _ = std::fs::remove_file(path);
}

#[test]
fn nothing_listening_is_connection_not_valid() {
    let _s = serial();
    let d = Dcgm::open();
    assert_eq!(d.init(), 0);
    let path = socket_path("absent");
    let _ = std::fs::remove_file(&path);
    assert_eq!(
        d.connect(path.to_str().unwrap(), true, 1000),
        Err(abi::DCGM_ST_CONNECTION_NOT_VALID)
    );
    // A port nothing listens on (bound, then released).
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    assert_eq!(
        d.connect(&format!("127.0.0.1:{port}"), false, 1000),
        Err(abi::DCGM_ST_CONNECTION_NOT_VALID)
    );
    assert_eq!(d.shutdown(), 0);
}

#[test]
fn hostengine_killed_then_restarted() {
    let _s = serial();
    let d = Dcgm::open();
    assert_eq!(d.init(), 0);
    let mut he = Hostengine::start(&["--scenario", "a100-l4", "-p", "0"]);
    let address = he.address.clone();
    let port = address.rsplit_once(':').unwrap().1.to_string();
    let h = d.connect(&address, false, 2000).expect("connect");
    assert_eq!(d.devices(h), Ok(vec![0, 1]));
    he.kill();
    let started = Instant::now();
    assert_eq!(d.devices(h), Err(abi::DCGM_ST_CONNECTION_NOT_VALID));
    assert_eq!(
        d.update_all(h),
        abi::DCGM_ST_CONNECTION_NOT_VALID,
        "stays broken"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "bounded by the connection timeout"
    );
    assert_eq!(
        d.connect(&address, false, 1000),
        Err(abi::DCGM_ST_CONNECTION_NOT_VALID)
    );
    let he2 = Hostengine::start(&["--scenario", "a100-l4", "-p", &port]);
    assert_eq!(he2.address, address);
    let h2 = d
        .connect(&address, false, 2000)
        .expect("reconnect once the host engine is back");
    assert_eq!(d.devices(h2), Ok(vec![0, 1]));
    assert_eq!(d.disconnect(h), 0);
    assert_eq!(d.disconnect(h2), 0);
    assert_eq!(d.shutdown(), 0);
}

#[test]
fn hostengine_flags_are_checked() {
    let out = std::process::Command::new(common::hostengine_path())
        .args(["--port", "99999"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--port 99999"));
    let out = std::process::Command::new(common::hostengine_path())
        .args(["--scenario", "no-such-scenario", "-p", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no-such-scenario"));
}

/// The host engine serves hgx-h200's NVSwitches over the socket as embedded mode does: the
/// same list, and the SXid fault (from 2 s) on switch 2 only.
#[test]
fn switches_over_the_socket() {
    let _s = serial();
    let d = Dcgm::open();
    assert_eq!(d.init(), 0);
    let path = socket_path("switches");
    let he = Hostengine::start(&[
        "--scenario",
        "hgx-h200",
        "--domain-socket",
        path.to_str().unwrap(),
    ]);
    let h = d.connect(&he.address, true, 3000).expect("connect");
    let sw = abi::DCGM_FE_SWITCH;
    assert_eq!(d.entities(h, sw, 32), Ok(vec![0, 1, 2, 3]));
    let ents: Vec<(u32, u32)> = (0..4).map(|i| (sw, i)).collect();
    let g = d.group(h, &ents).unwrap();
    let fg = d.field_group(h, &[856, 857]).unwrap();
    assert_eq!(d.watch(h, g, fg), 0);
    let end = Instant::now() + Duration::from_secs(10);
    let v = loop {
        let v = d.latest(h, &ents, &[856, 857]).unwrap();
        if int(&v[5]) == Some(20034) || Instant::now() > end {
            break v;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let non_fatal: Vec<Option<i64>> = (0..4).map(|s| int(&v[s * 2 + 1])).collect();
    assert_eq!(non_fatal, vec![Some(0), Some(0), Some(20034), Some(0)]);
    assert!((0..4).all(|s| int(&v[s * 2]) == Some(0)), "no fatal SXid");
    assert_eq!(d.disconnect(h), 0);
    assert_eq!(d.shutdown(), 0);
    drop(he);
    let _ = std::fs::remove_file(path);
}
