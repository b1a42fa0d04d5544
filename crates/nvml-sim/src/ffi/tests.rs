//! Tests of the C ABI layer through the exported functions themselves: pointer checks,
//! buffer sizing, init/shutdown, the control API. They share the process-wide state, so each
//! takes `SERIAL` first.

use std::ffi::{CStr, c_char};
use std::os::raw::c_uint;
use std::ptr;
use std::sync::Mutex;

use nvml_wrapper_sys::bindings::*;

use super::control::*;
use super::device::*;
use super::events::*;
use super::fields::*;
use super::gpm::*;
use super::mig::*;
use super::system::*;
use super::telemetry::*;
use crate::ret;

static SERIAL: Mutex<()> = Mutex::new(());

/// Configures `scenario` at frozen time `t` and initializes; the guard serializes tests.
fn setup(scenario: &std::ffi::CStr, t: f64) -> std::sync::MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    unsafe {
        while nvmlShutdown() == ret::SUCCESS {}
        assert_eq!(nvmlSimConfigure(scenario.as_ptr(), 1), 0);
        nvmlSimSetTime(t);
        assert_eq!(nvmlInit_v2(), ret::SUCCESS);
    }
    guard
}

/// Writes `text` to a scenario file of its own and configures it (not initialized); the
/// guard serializes tests. The file is removed again once configured.
fn setup_text(name: &str, text: &str) -> std::sync::MutexGuard<'static, ()> {
    let guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = std::env::temp_dir().join(format!("nvml-sim-test-{}-{name}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(format!("{name}.toml"));
    assert!(std::fs::write(&path, text).is_ok());
    let cpath = std::ffi::CString::new(path.to_string_lossy().into_owned()).unwrap_or_default();
    unsafe {
        while nvmlShutdown() == ret::SUCCESS {}
        assert_eq!(nvmlSimConfigure(cpath.as_ptr(), 1), 0);
    }
    let _ = std::fs::remove_dir_all(&dir);
    guard
}

fn handle(i: u32) -> nvmlDevice_t {
    let mut d = ptr::null_mut();
    assert_eq!(
        unsafe { nvmlDeviceGetHandleByIndex_v2(i, &mut d) },
        ret::SUCCESS
    );
    d
}

fn string(f: impl FnOnce(*mut c_char, c_uint) -> nvmlReturn_t) -> Result<String, nvmlReturn_t> {
    let mut buf = vec![0 as c_char; 96];
    match f(buf.as_mut_ptr(), 96) {
        0 => Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned()),
        e => Err(e),
    }
}

#[test]
fn uninitialized_calls_and_refcount() {
    let _g = setup(c"a100-l4", 10.0);
    unsafe {
        assert_eq!(nvmlShutdown(), ret::SUCCESS);
        let mut n = 0;
        assert_eq!(nvmlDeviceGetCount_v2(&mut n), ret::UNINITIALIZED);
        assert_eq!(nvmlShutdown(), ret::UNINITIALIZED);
        assert_eq!(nvmlInitWithFlags(0), ret::SUCCESS);
        assert_eq!(nvmlInit_v2(), ret::SUCCESS);
        assert_eq!(nvmlShutdown(), ret::SUCCESS);
        assert_eq!(nvmlDeviceGetCount_v2(&mut n), ret::SUCCESS);
        assert_eq!(n, 2);
        assert_eq!(
            nvmlDeviceGetCount_v2(ptr::null_mut()),
            ret::INVALID_ARGUMENT
        );
        assert_eq!(
            CStr::from_ptr(nvmlErrorString(ret::GPU_IS_LOST)).to_str(),
            Ok("GPU is lost")
        );
    }
}

#[test]
fn init_before_the_driver_is_loaded() {
    let _g = setup_text(
        "driver",
        "driver_loaded_at = 20\n[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n",
    );
    unsafe {
        nvmlSimSetTime(5.0);
        assert_eq!(nvmlInit_v2(), ret::DRIVER_NOT_LOADED);
        assert_eq!(ret::DRIVER_NOT_LOADED, 9);
        assert_eq!(nvmlInitWithFlags(0), ret::DRIVER_NOT_LOADED);
        // Still uninitialized.
        let mut n = 0;
        assert_eq!(nvmlDeviceGetCount_v2(&mut n), ret::UNINITIALIZED);
        assert_eq!(nvmlShutdown(), ret::UNINITIALIZED);
        assert_eq!(
            CStr::from_ptr(nvmlErrorString(ret::DRIVER_NOT_LOADED)).to_str(),
            Ok("Driver Not Loaded")
        );
        nvmlSimSetTime(25.0);
        assert_eq!(nvmlInit_v2(), ret::SUCCESS);
        assert_eq!(nvmlDeviceGetCount_v2(&mut n), ret::SUCCESS);
        assert_eq!(n, 2);
        assert_eq!(nvmlShutdown(), ret::SUCCESS);
        assert_eq!(nvmlShutdown(), ret::UNINITIALIZED);
    }
}

/// `init_hangs_until`: init called before that time blocks until it (here 0.3 s of frozen
/// scenario time, waited in wall-clock time), then succeeds; called after it, it does not wait.
#[test]
fn init_blocks_until_init_hangs_until() {
    let _g = setup_text(
        "init-hang",
        "init_hangs_until = 10\n[[gpus]]\nmodel = \"L4\"\n",
    );
    unsafe {
        nvmlSimSetTime(9.7);
        let started = std::time::Instant::now();
        assert_eq!(nvmlInit_v2(), ret::SUCCESS);
        // A lower bound only: the call cannot return before the sleep is over.
        assert!(
            started.elapsed() >= std::time::Duration::from_millis(250),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(nvmlShutdown(), ret::SUCCESS);
        nvmlSimSetTime(10.0);
        assert_eq!(nvmlInit_v2(), ret::SUCCESS);
        assert_eq!(nvmlShutdown(), ret::SUCCESS);
    }
}

#[test]
fn gpus_appearing_later_through_the_abi() {
    let _g = setup_text(
        "appear",
        "[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n\
         [[faults]]\nat = 30\ngpu = 1\nkind = \"appear\"\n",
    );
    unsafe {
        nvmlSimSetTime(10.0);
        assert_eq!(nvmlInit_v2(), ret::SUCCESS);
        let mut n = 0;
        assert_eq!(nvmlDeviceGetCount_v2(&mut n), ret::SUCCESS);
        assert_eq!(n, 1);
        let mut d = ptr::null_mut();
        assert_eq!(
            nvmlDeviceGetHandleByIndex_v2(1, &mut d),
            ret::INVALID_ARGUMENT
        );
        assert_eq!(
            nvmlDeviceGetHandleByPciBusId_v2(c"0000:2a:00.0".as_ptr(), &mut d),
            ret::NOT_FOUND
        );
        nvmlSimSetTime(30.0);
        assert_eq!(nvmlDeviceGetCount_v2(&mut n), ret::SUCCESS);
        assert_eq!(n, 2);
        let d1 = handle(1);
        assert_eq!(
            nvmlDeviceGetHandleByPciBusId_v2(c"0000:2a:00.0".as_ptr(), &mut d),
            ret::SUCCESS
        );
        assert_eq!(d, d1);
        assert_eq!(nvmlShutdown(), ret::SUCCESS);
    }
}

#[test]
fn versions_and_strings() {
    let _g = setup(c"h100-mig", 10.0);
    assert_eq!(
        string(|b, l| unsafe { nvmlSystemGetDriverVersion(b, l) }).as_deref(),
        Ok("550.90.07")
    );
    assert_eq!(
        string(|b, l| unsafe { nvmlSystemGetNVMLVersion(b, l) }).as_deref(),
        Ok("12.550.90.07")
    );
    let mut cuda = 0;
    assert_eq!(unsafe { nvmlSystemGetCudaDriverVersion_v2(&mut cuda) }, 0);
    assert_eq!(cuda, 12040);
    let d = handle(0);
    let uuid = string(|b, l| unsafe { nvmlDeviceGetUUID(d, b, l) }).unwrap_or_default();
    assert!(uuid.starts_with("GPU-"));
    // Too short a buffer.
    let mut small = [0 as c_char; 8];
    assert_eq!(
        unsafe { nvmlDeviceGetUUID(d, small.as_mut_ptr(), 8) },
        ret::INSUFFICIENT_SIZE
    );
    assert_eq!(
        unsafe { nvmlDeviceGetName(d, ptr::null_mut(), 64) },
        ret::INVALID_ARGUMENT
    );
    // A foreign pointer is not a device.
    let bogus = 0x1000 as nvmlDevice_t;
    assert_eq!(
        string(|b, l| unsafe { nvmlDeviceGetName(bogus, b, l) }),
        Err(ret::INVALID_ARGUMENT)
    );
    // Handle by UUID gives the same handle back.
    let cuuid = std::ffi::CString::new(uuid).unwrap_or_default();
    let mut again = ptr::null_mut();
    assert_eq!(
        unsafe { nvmlDeviceGetHandleByUUID(cuuid.as_ptr(), &mut again) },
        0
    );
    assert_eq!(again, d);
    let mut pci: nvmlPciInfo_t = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { nvmlDeviceGetPciInfo_v3(d, &mut pci) }, 0);
    let bus = unsafe { CStr::from_ptr(pci.busId.as_ptr()) };
    let legacy = unsafe { CStr::from_ptr(pci.busIdLegacy.as_ptr()) };
    assert_eq!(bus.to_str(), Ok("00000000:18:00.0"));
    assert_eq!(legacy.to_str(), Ok("0000:18:00.0"));
}

#[test]
fn memory_v2_checks_version() {
    let _g = setup(c"h100-mig", 10.0);
    let d = handle(0);
    let mut m: nvmlMemory_v2_t = unsafe { std::mem::zeroed() };
    assert_eq!(
        unsafe { nvmlDeviceGetMemoryInfo_v2(d, &mut m) },
        ret::ARGUMENT_VERSION_MISMATCH
    );
    m.version = MEMORY_V2_VERSION;
    assert_eq!(unsafe { nvmlDeviceGetMemoryInfo_v2(d, &mut m) }, 0);
    assert_eq!(m.total, 81559 * 1024 * 1024);
    assert_eq!(m.used + m.free + m.reserved, m.total);
}

#[test]
fn field_values_fill_every_entry() {
    let _g = setup(c"a100-l4", 30.0);
    let l4 = handle(1);
    let mut values: Vec<nvmlFieldValue_t> = [82u32, 186, 138, 3, 9999]
        .iter()
        .map(|id| {
            let mut v: nvmlFieldValue_t = unsafe { std::mem::zeroed() };
            v.fieldId = *id;
            v
        })
        .collect();
    let rc = unsafe { nvmlDeviceGetFieldValues(l4, values.len() as i32, values.as_mut_ptr()) };
    assert_eq!(rc, ret::SUCCESS);
    let codes: Vec<nvmlReturn_t> = values.iter().map(|v| v.nvmlReturn).collect();
    assert_eq!(
        codes,
        vec![
            ret::NOT_SUPPORTED,
            0,
            ret::NOT_SUPPORTED,
            0,
            ret::NOT_SUPPORTED
        ]
    );
    let power = unsafe { values[1].value.ullVal };
    assert!(power > 16_000 && power <= 72_000, "{power}");
    assert!(values[1].timestamp > 0);
    assert_eq!(
        unsafe { nvmlDeviceGetFieldValues(l4, 1, ptr::null_mut()) },
        ret::INVALID_ARGUMENT
    );
    assert_eq!(
        unsafe { nvmlDeviceGetFieldValues(l4, 0, ptr::null_mut()) },
        0
    );
}

#[test]
fn lost_gpu_through_the_abi() {
    let _g = setup(c"h100-mig", 100.0);
    let d7 = handle(7);
    unsafe {
        nvmlSimSetTime(150.0);
        let mut p = 0;
        assert_eq!(nvmlDeviceGetPowerUsage(d7, &mut p), ret::GPU_IS_LOST);
        let mut d = ptr::null_mut();
        assert_eq!(nvmlDeviceGetHandleByIndex_v2(7, &mut d), ret::GPU_IS_LOST);
        nvmlSimSetTime(181.0);
        assert_eq!(nvmlDeviceGetPowerUsage(d7, &mut p), ret::SUCCESS);
        // Power unsupported on GPU 6 from 90 s; other reads still work.
        let d6 = handle(6);
        assert_eq!(nvmlDeviceGetPowerUsage(d6, &mut p), ret::NOT_SUPPORTED);
        let mut temp = 0;
        assert_eq!(nvmlDeviceGetTemperature(d6, 0, &mut temp), ret::SUCCESS);
    }
}

#[test]
fn mig_through_the_abi() {
    let _g = setup(c"h100-mig", 10.0);
    let parent = handle(5);
    unsafe {
        let (mut cur, mut pend) = (9, 9);
        assert_eq!(nvmlDeviceGetMigMode(parent, &mut cur, &mut pend), 0);
        assert_eq!((cur, pend), (1, 1));
        let mut mig = ptr::null_mut();
        assert_eq!(nvmlDeviceGetMigDeviceHandleByIndex(parent, 1, &mut mig), 0);
        let mut is_mig = 0;
        assert_eq!(nvmlDeviceIsMigDeviceHandle(mig, &mut is_mig), 0);
        assert_eq!(is_mig, 1);
        let mut gi = 0;
        assert_eq!(nvmlDeviceGetGpuInstanceId(mig, &mut gi), 0);
        assert_eq!(gi, 3);
        let name = string(|b, l| nvmlDeviceGetName(mig, b, l));
        assert_eq!(name.as_deref(), Ok("NVIDIA H100 80GB HBM3 MIG 2g.20gb"));
        let mut back = ptr::null_mut();
        assert_eq!(
            nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mig, &mut back),
            0
        );
        assert_eq!(back, parent);
        let mut missing = ptr::null_mut();
        assert_eq!(
            nvmlDeviceGetMigDeviceHandleByIndex(parent, 3, &mut missing),
            ret::NOT_FOUND
        );
        let mut u = nvmlUtilization_t { gpu: 0, memory: 0 };
        assert_eq!(
            nvmlDeviceGetUtilizationRates(parent, &mut u),
            ret::NOT_SUPPORTED
        );
        let mut p = 0;
        assert_eq!(nvmlDeviceGetPowerUsage(mig, &mut p), ret::NOT_SUPPORTED);
        assert_eq!(nvmlDeviceGetPowerUsage(parent, &mut p), ret::SUCCESS);
    }
}

#[test]
fn gpm_through_the_abi() {
    let _g = setup(c"h100-mig", 10.0);
    let d = handle(0);
    unsafe {
        let mut support = nvmlGpmSupport_t {
            version: NVML_GPM_SUPPORT_VERSION,
            isSupportedDevice: 0,
        };
        assert_eq!(nvmlGpmQueryDeviceSupport(d, &mut support), 0);
        assert_eq!(support.isSupportedDevice, 1);
        let (mut s1, mut s2) = (ptr::null_mut(), ptr::null_mut());
        assert_eq!(nvmlGpmSampleAlloc(&mut s1), 0);
        assert_eq!(nvmlGpmSampleAlloc(&mut s2), 0);
        assert_eq!(nvmlGpmSampleGet(d, s1), 0);
        nvmlSimSetTime(15.0);
        assert_eq!(nvmlGpmSampleGet(d, s2), 0);
        let mut req: nvmlGpmMetricsGet_t = std::mem::zeroed();
        req.version = NVML_GPM_METRICS_GET_VERSION;
        req.numMetrics = 2;
        req.sample1 = s1;
        req.sample2 = s2;
        req.metrics[0].metricId = 2;
        req.metrics[1].metricId = 4;
        assert_eq!(nvmlGpmMetricsGet(&mut req), 0);
        assert_eq!(req.metrics[0].nvmlReturn, 0);
        assert!(req.metrics[0].value > 50.0);
        assert!(!req.metrics[0].metricInfo.shortName.is_null());
        assert_eq!(req.metrics[1].nvmlReturn, ret::NOT_SUPPORTED);
        req.sample2 = s1;
        assert_eq!(nvmlGpmMetricsGet(&mut req), ret::INVALID_ARGUMENT);
        assert_eq!(nvmlGpmSampleFree(s1), 0);
        assert_eq!(nvmlGpmSampleFree(s1), ret::INVALID_ARGUMENT);
        assert_eq!(nvmlGpmSampleFree(s2), 0);
    }
}

#[test]
fn events_through_the_abi() {
    let _g = setup(c"h100-mig", 30.0);
    unsafe {
        let mut set = ptr::null_mut();
        assert_eq!(nvmlEventSetCreate(&mut set), 0);
        let d1 = handle(1);
        assert_eq!(
            nvmlDeviceRegisterEvents(d1, u64::from(nvmlEventTypeXidCriticalError), set),
            0
        );
        let mut data: nvmlEventData_t = std::mem::zeroed();
        // With nothing due the wait blocks for its whole timeout (it used to poll: return
        // TIMEOUT after at most 20 ms, so a caller's loop spun 50 times a second).
        let started = std::time::Instant::now();
        assert_eq!(nvmlEventSetWait_v2(set, &mut data, 300), ret::TIMEOUT);
        assert!(started.elapsed() >= std::time::Duration::from_millis(300));
        // A waiter blocked for 20 s wakes as soon as time is set past the Xid (at 40 s).
        let set_addr = set as usize;
        let waiter = std::thread::spawn(move || {
            let mut d: nvmlEventData_t = std::mem::zeroed();
            let started = std::time::Instant::now();
            let r = nvmlEventSetWait_v2(set_addr as nvmlEventSet_t, &mut d, 20_000);
            (r, d.eventData, started.elapsed())
        });
        std::thread::sleep(std::time::Duration::from_millis(200));
        nvmlSimSetTime(45.0);
        let (r, xid, waited) = waiter.join().unwrap();
        assert_eq!((r, xid), (0, 31));
        assert!(waited < std::time::Duration::from_secs(15), "{waited:?}");
        // A second set registered before the Xid (at 30 s) gets it too.
        nvmlSimSetTime(30.0);
        assert_eq!(nvmlEventSetFree(set), 0);
        let mut set = ptr::null_mut();
        assert_eq!(nvmlEventSetCreate(&mut set), 0);
        assert_eq!(
            nvmlDeviceRegisterEvents(d1, u64::from(nvmlEventTypeXidCriticalError), set),
            0
        );
        nvmlSimSetTime(45.0);
        assert_eq!(nvmlEventSetWait_v2(set, &mut data, 1000), 0);
        assert_eq!((data.eventType, data.eventData), (8, 31));
        assert_eq!(data.device, d1);
        assert_eq!(data.gpuInstanceId, 0xFFFF_FFFF);
        assert_eq!(nvmlEventSetWait_v2(set, &mut data, 0), ret::TIMEOUT);
        assert_eq!(nvmlEventSetFree(set), 0);
        assert_eq!(
            nvmlEventSetWait_v2(set, &mut data, 0),
            ret::INVALID_ARGUMENT
        );
    }
}

#[test]
fn thermal_and_power_brake_through_the_abi() {
    let _g = setup_text(
        "thermal",
        "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\" }\n\
         [[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\" }\n\
         [[faults]]\nat = 60\ngpu = 0\nkind = \"thermal\"\ncelsius = 96\nuntil = 160\n\
         [[faults]]\nat = 60\ngpu = 1\nkind = \"power_brake\"\nuntil = 160\n",
    );
    struct Read {
        temp: u32,
        reasons: u64,
        throttle: u64,
        sm: u32,
        thermal_ns: u64,
        power_mw: u32,
    }
    let read = |d: nvmlDevice_t| unsafe {
        let mut r = Read {
            temp: 0,
            reasons: 0,
            throttle: 0,
            sm: 0,
            thermal_ns: 0,
            power_mw: 0,
        };
        let mut viol: nvmlViolationTime_t = std::mem::zeroed();
        assert_eq!(
            nvmlDeviceGetTemperature(
                d,
                nvmlTemperatureSensors_enum_NVML_TEMPERATURE_GPU,
                &mut r.temp
            ),
            0
        );
        assert_eq!(nvmlDeviceGetCurrentClocksEventReasons(d, &mut r.reasons), 0);
        assert_eq!(
            nvmlDeviceGetCurrentClocksThrottleReasons(d, &mut r.throttle),
            0
        );
        assert_eq!(
            nvmlDeviceGetClockInfo(d, nvmlClockType_enum_NVML_CLOCK_SM, &mut r.sm),
            0
        );
        assert_eq!(
            nvmlDeviceGetViolationStatus(
                d,
                nvmlPerfPolicyType_enum_NVML_PERF_POLICY_THERMAL,
                &mut viol
            ),
            0
        );
        r.thermal_ns = viol.violationTime;
        assert_eq!(nvmlDeviceGetPowerUsage(d, &mut r.power_mw), 0);
        r
    };
    unsafe {
        nvmlSimSetTime(59.0);
        assert_eq!(nvmlInit_v2(), ret::SUCCESS);
        let (d0, d1) = (handle(0), handle(1));
        let hot_before = read(d0);
        let braked_before = read(d1);
        for r in [&hot_before, &braked_before] {
            assert!(r.temp < 90, "{}", r.temp);
            assert_eq!(r.reasons & 0xE8, 0, "{:#x}", r.reasons);
            assert!(r.sm > 1000, "{}", r.sm);
        }
        nvmlSimSetTime(100.0);
        let hot = read(d0);
        assert_eq!(hot.temp, 96);
        let thermal = u64::from(
            nvmlClocksThrottleReasonHwThermalSlowdown | nvmlClocksEventReasonSwThermalSlowdown,
        );
        assert_eq!(hot.reasons & thermal, thermal, "{:#x}", hot.reasons);
        assert_eq!(hot.throttle, hot.reasons);
        assert!(hot.sm < hot_before.sm && hot.sm >= 345, "{}", hot.sm);
        assert!(
            hot.thermal_ns >= hot_before.thermal_ns + 40_000_000_000,
            "{} {}",
            hot_before.thermal_ns,
            hot.thermal_ns
        );
        let braked = read(d1);
        let brake = u64::from(
            nvmlClocksThrottleReasonHwPowerBrakeSlowdown | nvmlClocksThrottleReasonHwSlowdown,
        );
        assert_eq!(braked.reasons, brake, "{:#x}", braked.reasons);
        assert_eq!(braked.throttle, brake);
        assert_eq!(braked.sm, 345);
        assert!(braked.power_mw < braked_before.power_mw / 2);
        nvmlSimSetTime(200.0);
        let cooled = read(d0);
        assert!(
            cooled.temp < 90 && cooled.reasons & 0x40 == 0,
            "{}",
            cooled.temp
        );
        let grown = cooled.thermal_ns - hot_before.thermal_ns;
        assert!(
            grown.abs_diff(100_000_000_000) < 1_000_000,
            "thermal violation grew {grown} ns from 59 s to 200 s"
        );
        let released = read(d1);
        assert_eq!(released.reasons & brake, 0);
        assert!(released.sm > 1000);
        assert_eq!(nvmlShutdown(), ret::SUCCESS);
    }
}

#[test]
fn control_api() {
    let _g = setup(c"h100-mig", 10.0);
    unsafe {
        assert_eq!(nvmlSimConfigure(c"/no/such/file.toml".as_ptr(), 1), -1);
        let err = CStr::from_ptr(nvmlSimLastError())
            .to_string_lossy()
            .into_owned();
        assert!(err.contains("/no/such/file.toml"), "{err}");
        assert_eq!(nvmlSimConfigure(ptr::null(), 1), -1);
        // The failed configure left the previous machine in place.
        let mut n = 0;
        assert_eq!(nvmlDeviceGetCount_v2(&mut n), 0);
        assert_eq!(n, 8);
        let needed = nvmlSimScenarioNames(ptr::null_mut(), 0);
        let mut buf = vec![0 as c_char; needed as usize];
        assert_eq!(nvmlSimScenarioNames(buf.as_mut_ptr(), needed), needed);
        assert_eq!(
            CStr::from_ptr(buf.as_ptr()).to_str(),
            Ok("h100-mig,a100-l4,incidents,hgx-h200,hgx-b200,gb200-nvl72,l40s,a100-mig-t4,batch")
        );
        let needed = nvmlSimNodeName(ptr::null_mut(), 0);
        let mut buf = vec![0 as c_char; needed as usize];
        nvmlSimNodeName(buf.as_mut_ptr(), needed);
        assert_eq!(CStr::from_ptr(buf.as_ptr()).to_str(), Ok("sim-h100-node"));
        assert!(nvmlSimScenarioText(ptr::null_mut(), 0) > 100);
        nvmlSimSetTime(12.5);
        assert_eq!(nvmlSimGetTime(), 12.5);
        // A bad file reports file and line.
        let dir = std::env::temp_dir().join(format!("nvml-sim-test-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("bad.toml");
        let _ = std::fs::write(&path, "[[gpus]]\nmodel = \"H900\"\n");
        let cpath = std::ffi::CString::new(path.to_string_lossy().into_owned()).unwrap_or_default();
        assert_eq!(nvmlSimConfigure(cpath.as_ptr(), 1), -1);
        let err = CStr::from_ptr(nvmlSimLastError())
            .to_string_lossy()
            .into_owned();
        assert_eq!(
            err,
            format!(
                "scenario file {}: line 2: unknown model \"H900\" (known models: \
                 H100-SXM5-80GB, A100-SXM4-40GB, L4, H200-SXM5-141GB, B200-SXM-180GB, GB200, \
                 L40S, A100-SXM4-80GB, T4)",
                path.display()
            )
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn exported_device_functions_match_the_unsupported_list() {
    // Every device function named in an ffi `dev(..)`/`answer(..)` check must be listed in
    // scenario::DEVICE_FUNCTIONS (so `unsupported` can target it), and vice versa.
    let sources = [
        include_str!("device.rs"),
        include_str!("telemetry.rs"),
        include_str!("fields.rs"),
        include_str!("mig.rs"),
        include_str!("gpm.rs"),
        include_str!("events.rs"),
        include_str!("processes.rs"),
        include_str!("nvlink.rs"),
    ];
    let mut named = std::collections::BTreeSet::new();
    for src in sources {
        for part in src.split('"').skip(1).step_by(2) {
            if part.starts_with("nvmlDevice") || part.starts_with("nvmlGpm") {
                named.insert(part.to_string());
            }
        }
    }
    let listed: std::collections::BTreeSet<String> = crate::scenario::DEVICE_FUNCTIONS
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(named, listed);
}

mod nvlink;
