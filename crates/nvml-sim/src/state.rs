//! The process-wide simulator state behind one mutex: the configured machine, the NVML
//! init/shutdown reference count, the frozen clock setting and the last configuration error;
//! and the bell (a condition variable on that mutex) that an event wait sleeps on, rung by
//! every change that can make an event due (configuration, time set, shutdown).
//!
//! Only the `ffi` layer calls into this module. A poisoned mutex is recovered (the state is
//! plain data), so a panic in one call can never wedge later ones.

use std::ffi::{CStr, CString};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use nvml_wrapper_sys::bindings::nvmlReturn_t;

use crate::builtin;
use crate::ret;
use crate::scenario;
use crate::sim::Sim;

/// Environment variable naming the scenario when `nvmlInit_v2` runs unconfigured.
pub const ENV_SCENARIO: &str = "NVML_SIM_SCENARIO";
/// Environment variable with the seed when `nvmlInit_v2` runs unconfigured.
pub const ENV_SEED: &str = "NVML_SIM_SEED";
/// Seed used when none is given.
pub const DEFAULT_SEED: u64 = 1;

struct Global {
    sim: Option<Sim>,
    init_count: u32,
    frozen: Option<f64>,
    last_error: Option<CString>,
    /// Highest handle id handed out by any earlier machine (ids are never reused).
    id_floor: u64,
}

static GLOBAL: Mutex<Global> = Mutex::new(Global {
    sim: None,
    init_count: 0,
    frozen: None,
    last_error: None,
    id_floor: 0,
});

/// Rung (notify_all) on every change that can make an event due or end a wait: a new machine,
/// a time set, a shutdown. Waits are on GLOBAL's guard, so a ring is never missed between the
/// waiter's check and its sleep.
static BELL: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, Global> {
    GLOBAL
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn set_error(g: &mut Global, message: &str) {
    let clean: String = message.chars().filter(|c| *c != '\0').collect();
    g.last_error = CString::new(clean).ok();
}

fn configure_locked(g: &mut Global, spec: &str, seed: u64) -> Result<(), String> {
    install(g, scenario::load(spec), seed)
}

/// Makes `loaded` the machine (or records why it is not).
fn install(
    g: &mut Global,
    loaded: Result<scenario::Scenario, scenario::ScenarioError>,
    seed: u64,
) -> Result<(), String> {
    match loaded {
        Ok(sc) => {
            let floor = g
                .sim
                .as_ref()
                .map_or(g.id_floor, |s| s.next_id().max(g.id_floor));
            let mut sim = Sim::new(sc, seed, g.frozen);
            sim.set_id_floor(floor);
            g.id_floor = floor;
            g.sim = Some(sim);
            g.last_error = None;
            BELL.notify_all();
            Ok(())
        }
        Err(e) => {
            let msg = e.to_string();
            set_error(g, &msg);
            Err(msg)
        }
    }
}

/// Loads scenario `spec` (built-in name or file) with `seed`, replacing the machine and all
/// its state (devices, clock origin, event sets, GPM samples). A frozen time stays frozen.
pub fn configure(spec: &str, seed: u64) -> Result<(), String> {
    configure_locked(&mut lock(), spec, seed)
}

/// As [`configure`], with the text of the scenario file at `path`, read by the caller.
pub fn configure_text(text: &str, path: &str, seed: u64) -> Result<(), String> {
    install(&mut lock(), scenario::load_text(text, path), seed)
}

/// Records an error for `nvmlSimLastError` (e.g. a bad argument to a control function).
pub fn record_error(message: &str) {
    set_error(&mut lock(), message);
}

/// `nvmlInit_v2`: configures from the environment when nothing is configured yet, blocks
/// until `init_hangs_until` when called before it, then counts one more user — unless the
/// scenario's driver is not loaded yet (scenario time before `driver_loaded_at`): then
/// DRIVER_NOT_LOADED, and the count stays as it was (the machine configured here stays
/// configured, so its clock keeps running from now).
pub fn init() -> nvmlReturn_t {
    let mut g = lock();
    if g.sim.is_none() {
        let spec = std::env::var(ENV_SCENARIO).unwrap_or_else(|_| builtin::DEFAULT.to_string());
        let seed = match std::env::var(ENV_SEED) {
            Ok(s) => match s.trim().parse::<u64>() {
                Ok(v) => v,
                Err(_) => {
                    let msg = format!("{ENV_SEED}=\"{s}\" is not an unsigned integer");
                    set_error(&mut g, &msg);
                    report(&msg);
                    return ret::UNKNOWN;
                }
            },
            Err(_) => DEFAULT_SEED,
        };
        if let Err(msg) = configure_locked(&mut g, &spec, seed) {
            report(&msg);
            return ret::UNKNOWN;
        }
    }
    if let Some(sim) = g.sim.as_ref() {
        let left = sim.scenario.init_hangs_until - sim.now();
        if left > 0.0 {
            // A driver wedged in its initialisation: the call (and, through the lock, every
            // other call into the library) returns only at `init_hangs_until`.
            std::thread::sleep(std::time::Duration::from_secs_f64(left));
        }
    }
    if let Some(sim) = g.sim.as_ref()
        && sim.now() < sim.scenario.driver_loaded_at
    {
        return ret::DRIVER_NOT_LOADED;
    }
    g.init_count = g.init_count.saturating_add(1);
    ret::SUCCESS
}

/// Writes a configuration failure to stderr once, as a real library would log it.
fn report(msg: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "nvml-sim: {msg}");
}

/// `nvmlShutdown`: one user fewer; UNINITIALIZED when nobody had initialized.
pub fn shutdown() -> nvmlReturn_t {
    let mut g = lock();
    if g.init_count == 0 {
        return ret::UNINITIALIZED;
    }
    g.init_count -= 1;
    BELL.notify_all();
    ret::SUCCESS
}

/// Runs `f` on the machine when NVML is initialized; UNINITIALIZED otherwise.
pub fn with_sim<T>(f: impl FnOnce(&mut Sim) -> Result<T, nvmlReturn_t>) -> Result<T, nvmlReturn_t> {
    let mut g = lock();
    if g.init_count == 0 {
        return Err(ret::UNINITIALIZED);
    }
    match g.sim.as_mut() {
        Some(sim) => f(sim),
        None => Err(ret::UNINITIALIZED),
    }
}

/// `nvmlSimSetTime`: freeze at `t` seconds, or real time when `t` is `None`.
pub fn set_time(t: Option<f64>) {
    let mut g = lock();
    g.frozen = t;
    if let Some(sim) = g.sim.as_mut() {
        sim.clock.set(t);
    }
    BELL.notify_all();
}

/// `nvmlEventSetWait_v2`: the set's next due event, waiting up to `timeout` for one. The wait
/// blocks (no polling): it sleeps until the set's next event on the timeline falls due (real
/// time only; a frozen clock moves only by `set_time`), the bell rings, or the timeout ends.
pub fn wait_event(set: u64, timeout: Duration) -> Result<Option<scenario::Event>, nvmlReturn_t> {
    let deadline = Instant::now() + timeout;
    let mut g = lock();
    loop {
        if g.init_count == 0 {
            return Err(ret::UNINITIALIZED);
        }
        let sim = g.sim.as_mut().ok_or(ret::UNINITIALIZED)?;
        let t = sim.now();
        if let Some(e) = sim.next_event(set, t)? {
            return Ok(Some(e));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(None);
        }
        let until_due = match (sim.clock.frozen(), sim.next_due_after(set, t)?) {
            (None, Some(due)) => Duration::from_secs_f64((due - t).max(0.0)),
            _ => left,
        };
        g = BELL
            .wait_timeout(g, left.min(until_due))
            .map_or_else(|poisoned| poisoned.into_inner().0, |(guard, _)| guard);
    }
}

/// `nvmlSimLastError`: the last configuration error, or an empty string. The pointer stays
/// valid until the next configuration call.
pub fn last_error_ptr() -> *const std::ffi::c_char {
    let g = lock();
    match &g.last_error {
        // The CString lives in the static and is only replaced by a later configure call.
        Some(e) => e.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// The node name of the configured scenario, if one is configured.
pub fn node_name() -> Option<String> {
    lock().sim.as_ref().map(|s| s.scenario.node.clone())
}

/// The TOML text of the configured scenario.
pub fn scenario_text() -> Option<String> {
    lock().sim.as_ref().map(|s| s.scenario.text.clone())
}

/// Text of the last error as a Rust string (for tests).
pub fn last_error() -> String {
    lock()
        .last_error
        .as_deref()
        .map(CStr::to_string_lossy)
        .map(|s| s.into_owned())
        .unwrap_or_default()
}

/// Scenario time now, if a scenario is configured.
pub fn now() -> Option<f64> {
    lock().sim.as_ref().map(Sim::now)
}
