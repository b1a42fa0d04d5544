//! Shared by the tests on the built `libdcgm_sim.so`: finding and loading it (next to the
//! test binary, or `$DCGM_SIM_LIB`), typed access to its DCGM functions through
//! `dcgm_abi::sig`, and small helpers (watch a field group, read latest values).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_ushort};
use std::path::PathBuf;

use dcgm_abi::{self as abi, Zeroed, sig};

/// Where the built cdylib is, or why it is not there.
pub fn library_path() -> PathBuf {
    if let Some(p) = std::env::var_os("DCGM_SIM_LIB") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test binary path");
    let deps = exe.parent().map(PathBuf::from).unwrap_or_default();
    let mut candidates = vec![deps.join("libdcgm_sim.so")];
    if let Some(profile) = deps.parent() {
        candidates.push(profile.join("libdcgm_sim.so"));
    }
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| {
            panic!("libdcgm_sim.so not found at {candidates:?}; cargo build -p dcgm-sim")
        })
}

/// The hostengine binary built beside the tests.
pub fn hostengine_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_dcgm-sim-hostengine"))
}

/// A running `dcgm-sim-hostengine`, killed when dropped.
pub struct Hostengine {
    pub child: std::process::Child,
    /// What it printed it listens on (`127.0.0.1:PORT` or the socket path).
    pub address: String,
}

impl Hostengine {
    /// Starts it with `args` and waits (at most 20 s) for its "listening on" line.
    pub fn start(args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = std::process::Command::new(hostengine_path())
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("spawn dcgm-sim-hostengine");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = std::io::BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("hostengine ready within 20 s");
        let address = line
            .trim()
            .rsplit_once("listening on ")
            .map(|(_, a)| a.to_string())
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        Self { child, address }
    }

    /// Kills it and waits for it to go.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Hostengine {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A socket path of its own under the temp directory.
pub fn socket_path(tag: &str) -> PathBuf {
    std::env::temp_dir().join(format!("dcgm-sim-{tag}-{}.sock", std::process::id()))
}

/// The loaded library.
pub struct Dcgm {
    pub lib: libloading::Library,
}

macro_rules! f {
    ($self:ident, $name:ident) => {
        // Used inside `unsafe`: the symbol has the signature dcgm_abi::sig gives it.
        *$self
            .lib
            .get::<sig::$name>(concat!(stringify!($name), "\0").as_bytes())
            .expect(stringify!($name))
    };
}

impl Dcgm {
    pub fn open() -> Self {
        // SAFETY: our own library; its initialisers are trivial.
        let lib = unsafe { libloading::Library::new(library_path()) }.expect("load libdcgm_sim.so");
        Self { lib }
    }

    pub fn configure(&self, scenario: &str, seed: u64) {
        let f = unsafe {
            self.lib
                .get::<unsafe extern "C" fn(*const c_char, u64) -> c_int>(b"dcgmSimConfigure\0")
        }
        .expect("dcgmSimConfigure");
        let s = CString::new(scenario).expect("no NUL");
        let rc = unsafe { f(s.as_ptr(), seed) };
        assert_eq!(rc, 0, "configure {scenario}: {}", self.last_error());
    }

    pub fn configure_text(&self, text: &str, path: &str, seed: u64) -> Result<(), String> {
        let f = unsafe {
            self.lib
                .get::<unsafe extern "C" fn(*const c_char, *const c_char, u64) -> c_int>(
                    b"dcgmSimConfigureText\0",
                )
        }
        .expect("dcgmSimConfigureText");
        let (t, p) = (
            CString::new(text).expect("t"),
            CString::new(path).expect("p"),
        );
        match unsafe { f(t.as_ptr(), p.as_ptr(), seed) } {
            0 => Ok(()),
            _ => Err(self.last_error()),
        }
    }

    pub fn last_error(&self) -> String {
        let f = unsafe {
            self.lib
                .get::<unsafe extern "C" fn() -> *const c_char>(b"dcgmSimLastError\0")
        }
        .expect("dcgmSimLastError");
        unsafe { CStr::from_ptr(f()) }
            .to_string_lossy()
            .into_owned()
    }

    pub fn set_time(&self, t: f64) {
        let f = unsafe {
            self.lib
                .get::<unsafe extern "C" fn(f64)>(b"dcgmSimSetTime\0")
        }
        .expect("dcgmSimSetTime");
        unsafe { f(t) }
    }

    pub fn get_time(&self) -> f64 {
        let f = unsafe {
            self.lib
                .get::<unsafe extern "C" fn() -> f64>(b"dcgmSimGetTime\0")
        }
        .expect("dcgmSimGetTime");
        unsafe { f() }
    }

    pub fn init(&self) -> i32 {
        unsafe { f!(self, dcgmInit)() }
    }

    pub fn shutdown(&self) -> i32 {
        unsafe { f!(self, dcgmShutdown)() }
    }

    pub fn start_embedded(&self, mode: c_uint) -> Result<usize, i32> {
        let mut h = 0usize;
        match unsafe { f!(self, dcgmStartEmbedded)(mode, &mut h) } {
            0 => Ok(h),
            rc => Err(rc),
        }
    }

    pub fn stop_embedded(&self, h: usize) -> i32 {
        unsafe { f!(self, dcgmStopEmbedded)(h) }
    }

    pub fn connect(&self, address: &str, unix: bool, timeout_ms: u32) -> Result<usize, i32> {
        let mut h = 0usize;
        let mut p = abi::dcgmConnectV2Params_v2 {
            version: abi::dcgmConnectV2Params_version2,
            persistAfterDisconnect: 0,
            timeoutMs: timeout_ms,
            addressIsUnixSocket: u32::from(unix),
        };
        let a = CString::new(address).expect("address");
        match unsafe { f!(self, dcgmConnect_v2)(a.as_ptr(), &mut p, &mut h) } {
            0 => Ok(h),
            rc => Err(rc),
        }
    }

    pub fn disconnect(&self, h: usize) -> i32 {
        unsafe { f!(self, dcgmDisconnect)(h) }
    }

    pub fn devices(&self, h: usize) -> Result<Vec<u32>, i32> {
        let mut ids = [0u32; abi::DCGM_MAX_NUM_DEVICES];
        let mut n: c_int = 0;
        match unsafe { f!(self, dcgmGetAllSupportedDevices)(h, ids.as_mut_ptr(), &mut n) } {
            0 => Ok(ids[..n as usize].to_vec()),
            rc => Err(rc),
        }
    }

    /// `dcgmGetEntityGroupEntities` with room for `room` ids.
    pub fn entities(&self, h: usize, group: u32, room: usize) -> Result<Vec<u32>, (i32, i32)> {
        let mut ids = vec![0u32; room];
        let mut n = room as c_int;
        match unsafe { f!(self, dcgmGetEntityGroupEntities)(h, group, ids.as_mut_ptr(), &mut n, 0) }
        {
            0 => Ok(ids[..n as usize].to_vec()),
            rc => Err((rc, n)),
        }
    }

    pub fn attributes(&self, h: usize, gpu: u32) -> Result<Box<abi::dcgmDeviceAttributes_v3>, i32> {
        let mut a = abi::dcgmDeviceAttributes_v3::zeroed();
        a.version = abi::dcgmDeviceAttributes_version3;
        match unsafe { f!(self, dcgmGetDeviceAttributes)(h, gpu, &mut *a) } {
            0 => Ok(a),
            rc => Err(rc),
        }
    }

    pub fn hierarchy(&self, h: usize) -> Result<Box<abi::dcgmMigHierarchy_v2>, i32> {
        let mut m = abi::dcgmMigHierarchy_v2::zeroed();
        m.version = abi::dcgmMigHierarchy_version2;
        match unsafe { f!(self, dcgmGetGpuInstanceHierarchy)(h, &mut *m) } {
            0 => Ok(m),
            rc => Err(rc),
        }
    }

    pub fn group(&self, h: usize, entities: &[(u32, u32)]) -> Result<usize, i32> {
        let mut g = 0usize;
        let rc =
            unsafe { f!(self, dcgmGroupCreate)(h, abi::DCGM_GROUP_EMPTY, c"g".as_ptr(), &mut g) };
        if rc != 0 {
            return Err(rc);
        }
        for (eg, id) in entities {
            let rc = unsafe { f!(self, dcgmGroupAddEntity)(h, g, *eg, *id) };
            if rc != 0 {
                return Err(rc);
            }
        }
        Ok(g)
    }

    pub fn field_group(&self, h: usize, fields: &[u16]) -> Result<usize, i32> {
        let mut fg = 0usize;
        match unsafe {
            f!(self, dcgmFieldGroupCreate)(
                h,
                fields.len() as c_int,
                fields.as_ptr(),
                c"f".as_ptr(),
                &mut fg,
            )
        } {
            0 => Ok(fg),
            rc => Err(rc),
        }
    }

    pub fn watch(&self, h: usize, g: usize, fg: usize) -> i32 {
        unsafe { f!(self, dcgmWatchFields)(h, g, fg, 1_000_000, 60.0, 0) }
    }

    pub fn unwatch(&self, h: usize, g: usize, fg: usize) -> i32 {
        unsafe { f!(self, dcgmUnwatchFields)(h, g, fg) }
    }

    pub fn update_all(&self, h: usize) -> i32 {
        unsafe { f!(self, dcgmUpdateAllFields)(h, 1) }
    }

    /// Latest values, entity-major.
    pub fn latest(
        &self,
        h: usize,
        entities: &[(u32, u32)],
        fields: &[u16],
    ) -> Result<Vec<abi::dcgmFieldValue_v2>, i32> {
        let mut pairs: Vec<abi::dcgmGroupEntityPair_t> = entities
            .iter()
            .map(|(g, id)| abi::dcgmGroupEntityPair_t {
                entityGroupId: *g,
                entityId: *id,
            })
            .collect();
        let mut fl: Vec<c_ushort> = fields.to_vec();
        let mut out = vec![abi::dcgmFieldValue_v2::zeroed(); pairs.len() * fl.len()];
        match unsafe {
            f!(self, dcgmEntitiesGetLatestValues)(
                h,
                pairs.as_mut_ptr(),
                pairs.len() as c_uint,
                fl.as_mut_ptr(),
                fl.len() as c_uint,
                abi::DCGM_FV_FLAG_LIVE_DATA,
                out.as_mut_ptr(),
            )
        } {
            0 => Ok(out),
            rc => Err(rc),
        }
    }

    pub fn metric_groups(&self, h: usize, gpu: u32) -> Result<Vec<(u16, u16, Vec<u16>)>, i32> {
        let mut m = abi::dcgmProfGetMetricGroups_v3::zeroed();
        m.version = abi::dcgmProfGetMetricGroups_version3;
        m.gpuId = gpu;
        match unsafe { f!(self, dcgmProfGetSupportedMetricGroups)(h, &mut *m) } {
            0 => Ok(m.metricGroups[..m.numMetricGroups as usize]
                .iter()
                .map(|g| {
                    (
                        g.majorId,
                        g.minorId,
                        g.fieldIds[..g.numFieldIds as usize].to_vec(),
                    )
                })
                .collect()),
            rc => Err(rc),
        }
    }

    pub fn error_string(&self, rc: i32) -> String {
        let p = unsafe { f!(self, dcgmErrorString)(rc) };
        if p.is_null() {
            return String::new();
        }
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

/// A double value, or None for a blank.
pub fn dbl(v: &abi::dcgmFieldValue_v2) -> Option<f64> {
    let d = unsafe { v.value.dbl };
    (v.status == 0 && !abi::fp64_is_blank(d)).then_some(d)
}

/// An int64 value, or None for a blank.
pub fn int(v: &abi::dcgmFieldValue_v2) -> Option<i64> {
    let i = unsafe { v.value.i64_ };
    (v.status == 0 && !abi::int64_is_blank(i)).then_some(i)
}

/// A string value.
pub fn text(v: &abi::dcgmFieldValue_v2) -> String {
    abi::c_text(unsafe { &v.value.str_ })
}
