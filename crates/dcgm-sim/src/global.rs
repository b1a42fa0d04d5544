//! The process-wide state of the simulated library behind one mutex: the configured machine
//! (the embedded host engine), the `dcgmInit` count, the frozen clock setting, the last
//! configuration error, and the open handles (embedded, or a connection to a host engine).
//!
//! Only the `ffi` layer calls into this module. A poisoned mutex is recovered (the state is
//! plain data). Calls on a remote handle run outside the lock, so a slow host engine never
//! holds up other handles.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex, MutexGuard};

use dcgm_abi as abi;
use nvml_sim::{builtin, scenario};

use crate::engine::Engine;
use crate::proto::{Request, Response};
use crate::remote::Remote;

/// Environment variable naming the scenario when `dcgmStartEmbedded` runs unconfigured.
pub const ENV_SCENARIO: &str = "DCGM_SIM_SCENARIO";
/// Environment variable with the seed when `dcgmStartEmbedded` runs unconfigured.
pub const ENV_SEED: &str = "DCGM_SIM_SEED";

/// What a handle stands for.
#[derive(Clone)]
enum Conn {
    Embedded,
    Remote(Arc<Remote>),
}

struct Global {
    engine: Option<Engine>,
    init_count: u32,
    frozen: Option<f64>,
    last_error: Option<CString>,
    handles: BTreeMap<usize, Conn>,
    next_handle: usize,
}

static GLOBAL: Mutex<Global> = Mutex::new(Global {
    engine: None,
    init_count: 0,
    frozen: None,
    last_error: None,
    handles: BTreeMap::new(),
    next_handle: 1,
});

fn lock() -> MutexGuard<'static, Global> {
    GLOBAL.lock().unwrap_or_else(|p| p.into_inner())
}

fn set_error(g: &mut Global, message: &str) {
    let clean: String = message.chars().filter(|c| *c != '\0').collect();
    g.last_error = CString::new(clean).ok();
}

fn install(
    g: &mut Global,
    loaded: Result<scenario::Scenario, scenario::ScenarioError>,
    seed: u64,
) -> Result<(), String> {
    match loaded {
        Ok(sc) => {
            g.engine = Some(Engine::new(sc, seed, g.frozen));
            g.last_error = None;
            Ok(())
        }
        Err(e) => {
            let msg = e.to_string();
            set_error(g, &msg);
            Err(msg)
        }
    }
}

/// Loads scenario `spec` (built-in name or file, read bounded) with `seed`, replacing the
/// embedded machine and its DCGM state; the clock starts now. A frozen time stays frozen.
pub fn configure(spec: &str, seed: u64) -> Result<(), String> {
    install(&mut lock(), scenario::load(spec), seed)
}

/// As [`configure`], with the scenario text the caller read from the file at `path`.
pub fn configure_text(text: &str, path: &str, seed: u64) -> Result<(), String> {
    install(&mut lock(), scenario::load_text(text, path), seed)
}

/// Records an error for `dcgmSimLastError`.
pub fn record_error(message: &str) {
    set_error(&mut lock(), message);
}

/// The last configuration error, or "". The pointer stays valid until the next configuration.
pub fn last_error_ptr() -> *const std::ffi::c_char {
    match &lock().last_error {
        Some(e) => e.as_ptr(),
        None => c"".as_ptr(),
    }
}

/// Freezes scenario time at `t`, or real time when `None`.
pub fn set_time(t: Option<f64>) {
    let mut g = lock();
    g.frozen = t;
    if let Some(e) = g.engine.as_mut() {
        e.clock.set(t);
    }
}

/// Scenario time of the embedded machine, if configured.
pub fn now() -> Option<f64> {
    lock().engine.as_ref().map(Engine::now)
}

/// `dcgmInit`.
pub fn init() -> i32 {
    let mut g = lock();
    g.init_count = g.init_count.saturating_add(1);
    abi::DCGM_ST_OK
}

/// `dcgmShutdown`: one user fewer; the last one closes every handle.
pub fn shutdown() -> i32 {
    let mut g = lock();
    if g.init_count == 0 {
        return abi::DCGM_ST_UNINITIALIZED;
    }
    g.init_count -= 1;
    if g.init_count == 0 {
        g.handles.clear();
    }
    abi::DCGM_ST_OK
}

fn new_handle(g: &mut Global, conn: Conn) -> usize {
    let h = g.next_handle;
    g.next_handle += 1;
    g.handles.insert(h, conn);
    h
}

/// `dcgmStartEmbedded`: configures from the environment when nothing is configured yet.
pub fn start_embedded(manual: bool) -> Result<usize, i32> {
    let mut g = lock();
    if g.init_count == 0 {
        return Err(abi::DCGM_ST_UNINITIALIZED);
    }
    if g.engine.is_none() {
        let spec = std::env::var(ENV_SCENARIO).unwrap_or_else(|_| builtin::DEFAULT.to_string());
        let seed = match std::env::var(ENV_SEED) {
            Ok(s) => match s.trim().parse::<u64>() {
                Ok(v) => v,
                Err(_) => {
                    set_error(
                        &mut g,
                        &format!("{ENV_SEED}=\"{s}\" is not an unsigned integer"),
                    );
                    return Err(abi::DCGM_ST_INIT_ERROR);
                }
            },
            Err(_) => nvml_sim::state::DEFAULT_SEED,
        };
        if install(&mut g, scenario::load(&spec), seed).is_err() {
            return Err(abi::DCGM_ST_INIT_ERROR);
        }
    }
    if let Some(e) = g.engine.as_mut() {
        e.manual = manual;
    }
    Ok(new_handle(&mut g, Conn::Embedded))
}

/// `dcgmConnect_v2`: the connection is made outside the lock.
pub fn connect(address: &str, unix: bool, timeout: std::time::Duration) -> Result<usize, i32> {
    if lock().init_count == 0 {
        return Err(abi::DCGM_ST_UNINITIALIZED);
    }
    let remote = Remote::connect(address, unix, timeout)?;
    Ok(new_handle(&mut lock(), Conn::Remote(Arc::new(remote))))
}

/// `dcgmStopEmbedded` / `dcgmDisconnect`: forgets the handle if it is of the right kind.
pub fn close(handle: usize, embedded: bool) -> i32 {
    let mut g = lock();
    match g.handles.get(&handle) {
        Some(Conn::Embedded) if embedded => {}
        Some(Conn::Remote(_)) if !embedded => {}
        Some(_) | None => return abi::DCGM_ST_BADPARAM,
    }
    g.handles.remove(&handle);
    abi::DCGM_ST_OK
}

/// Runs one call on the handle: in process for the embedded engine, over the socket for a
/// connection. An unknown handle is `DCGM_ST_BADPARAM`.
pub fn call(handle: usize, req: Request) -> Response {
    let conn = {
        let mut g = lock();
        match g.handles.get(&handle).cloned() {
            Some(Conn::Embedded) => {
                return match g.engine.as_mut() {
                    Some(e) => e.handle(req),
                    None => Err(abi::DCGM_ST_UNINITIALIZED),
                };
            }
            Some(Conn::Remote(r)) => r,
            None => return Err(abi::DCGM_ST_BADPARAM),
        }
    };
    conn.call(req)
}
