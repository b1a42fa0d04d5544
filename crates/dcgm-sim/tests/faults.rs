//! The scenario's `[[dcgm_faults]]` through the built `libdcgm_sim.so`: a watch refused for a
//! named field and GPU, a field left blank for a window, a call that hangs (embedded, and in
//! remote mode past the connection's timeout), and a host engine that leaves and returns.
//!
//! The loaded library has one global state, so the tests take turns (`serial`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::{Dcgm, Hostengine, dbl};
use dcgm_abi as abi;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const GPU: u32 = abi::DCGM_FE_GPU;

/// The built-in a100-l4 with `faults` appended.
fn scenario(faults: &str) -> String {
    format!("{}\n{faults}", nvml_sim::builtin::get("a100-l4").unwrap())
}

fn embedded(d: &Dcgm, text: &str, t: f64) -> usize {
    d.set_time(t);
    d.configure_text(text, "/faults.toml", 1).unwrap();
    assert_eq!(d.init(), 0);
    d.start_embedded(abi::DCGM_OPERATION_MODE_AUTO).unwrap()
}

fn finish(d: &Dcgm, h: usize) {
    assert_eq!(d.stop_embedded(h), 0);
    assert_eq!(d.shutdown(), 0);
    d.set_time(-1.0);
}

#[test]
fn a_watch_refused_for_a_field_and_gpu_inside_its_window() {
    let _s = serial();
    let d = Dcgm::open();
    let text = scenario(
        "[[dcgm_faults]]\nkind = \"watch_refused\"\nat = 10\nuntil = 20\nfield = 1004\ngpu = 1\ncode = -17\n",
    );
    let h = embedded(&d, &text, 15.0);
    let l4 = d.group(h, &[(GPU, 1)]).unwrap();
    let a100 = d.group(h, &[(GPU, 0)]).unwrap();
    let tensor = d.field_group(h, &[1001, 1004]).unwrap();
    assert_eq!(d.watch(h, l4, tensor), abi::DCGM_ST_NO_PERMISSION);
    assert_eq!(d.watch(h, a100, tensor), 0, "the fault names GPU 1 only");
    d.set_time(25.0);
    assert_eq!(d.watch(h, l4, tensor), 0, "after the window");
    finish(&d, h);
}

#[test]
fn a_field_left_blank_for_a_window() {
    let _s = serial();
    let d = Dcgm::open();
    let text = scenario("[[dcgm_faults]]\nkind = \"blank\"\nat = 30\nuntil = 40\nfield = 1001\n");
    let h = embedded(&d, &text, 29.0);
    let g = d.group(h, &[(GPU, 0), (GPU, 1)]).unwrap();
    let fg = d.field_group(h, &[1001, 1002]).unwrap();
    assert_eq!(d.watch(h, g, fg), 0);
    let read = || d.latest(h, &[(GPU, 0), (GPU, 1)], &[1001, 1002]).unwrap();
    let before = read();
    assert!(dbl(&before[0]).is_some() && dbl(&before[2]).is_some());
    d.set_time(35.0);
    let inside = read();
    for gpu in 0..2 {
        let v = &inside[gpu * 2];
        assert_eq!(v.status, abi::DCGM_ST_OK);
        assert_eq!(
            unsafe { v.value.dbl },
            abi::DCGM_FP64_BLANK,
            "GPU {gpu} blank"
        );
        assert!(
            dbl(&inside[gpu * 2 + 1]).is_some(),
            "other fields keep their values"
        );
    }
    d.set_time(40.0);
    assert!(dbl(&read()[0]).is_some(), "back after the window");
    finish(&d, h);
}

#[test]
fn an_embedded_call_in_a_hang_window_returns_when_it_ends() {
    let _s = serial();
    let d = Dcgm::open();
    let text = scenario("[[dcgm_faults]]\nkind = \"hang\"\nat = 50\nuntil = 51\n");
    let h = embedded(&d, &text, 50.2);
    let started = Instant::now();
    assert_eq!(d.devices(h), Ok(vec![0, 1]));
    assert!(
        started.elapsed() >= Duration::from_millis(750),
        "the call blocked for the window"
    );
    finish(&d, h);
}

/// Waits (at most 20 s) until `f` holds.
fn wait_until(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    false
}

fn write_scenario(tag: &str, faults: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("dcgm-sim-{tag}-{}.toml", std::process::id()));
    std::fs::write(&path, scenario(faults)).unwrap();
    path
}

#[test]
fn a_hostengine_that_leaves_and_returns() {
    let _s = serial();
    let d = Dcgm::open();
    assert_eq!(d.init(), 0);
    // Host-engine time starts when it loads the scenario, just before it listens.
    let path = write_scenario(
        "away",
        "[[dcgm_faults]]\nkind = \"hostengine_away\"\nat = 2\nuntil = 5\n",
    );
    let he = Hostengine::start(&["--scenario", path.to_str().unwrap(), "-p", "0"]);
    let started = Instant::now();
    let h = d
        .connect(&he.address, false, 2000)
        .expect("connect before the window");
    assert_eq!(d.devices(h), Ok(vec![0, 1]));
    std::thread::sleep(Duration::from_millis(2300).saturating_sub(started.elapsed()));
    assert_eq!(
        d.devices(h),
        Err(abi::DCGM_ST_CONNECTION_NOT_VALID),
        "dropped while away"
    );
    assert_eq!(
        d.connect(&he.address, false, 1000),
        Err(abi::DCGM_ST_CONNECTION_NOT_VALID),
        "refused while away"
    );
    let mut back = None;
    assert!(
        wait_until(|| {
            back = d.connect(&he.address, false, 1000).ok();
            back.is_some()
        }),
        "connects again once the window is over"
    );
    assert_eq!(d.devices(back.unwrap()), Ok(vec![0, 1]));
    assert_eq!(d.shutdown(), 0);
    let _ = std::fs::remove_file(path);
}

#[test]
fn a_remote_call_that_hangs_past_the_timeout() {
    let _s = serial();
    let d = Dcgm::open();
    assert_eq!(d.init(), 0);
    let path = write_scenario(
        "hang",
        "[[dcgm_faults]]\nkind = \"hang\"\nat = 1.5\nuntil = 12\n",
    );
    let he = Hostengine::start(&["--scenario", path.to_str().unwrap(), "-p", "0"]);
    let started = Instant::now();
    let h = d
        .connect(&he.address, false, 1000)
        .expect("connect before the hang");
    std::thread::sleep(Duration::from_millis(2000).saturating_sub(started.elapsed()));
    let call = Instant::now();
    assert_eq!(d.devices(h), Err(abi::DCGM_ST_TIMEOUT));
    assert!(
        call.elapsed() < Duration::from_secs(6),
        "returned at the connection's deadline, not the hang's end"
    );
    assert_eq!(
        d.devices(h),
        Err(abi::DCGM_ST_CONNECTION_NOT_VALID),
        "the connection is broken after it"
    );
    assert_eq!(d.shutdown(), 0);
    drop(he);
    let _ = std::fs::remove_file(path);
}
