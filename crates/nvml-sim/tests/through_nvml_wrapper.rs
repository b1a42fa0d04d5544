//! End-to-end check of the built `libnvml_sim.so` through `nvml_wrapper`, loaded exactly as
//! the exporter loads `libnvidia-ml.so.1`: init, enumeration, identity, memory, MIG devices,
//! field values, NVLink per link, GPM, events, GPU lost, and a clean `Drop`.
//!
//! The library is found next to this test binary (`target/<profile>/deps/` or its parent), or
//! at `$NVML_SIM_LIB`. Everything runs in one test because the loaded library has one global
//! state.

use std::ffi::{CStr, OsStr, c_char, c_int, c_uint};
use std::path::PathBuf;

use nvml_wrapper::Nvml;
use nvml_wrapper::bitmasks::event::EventTypes;
use nvml_wrapper::enum_wrappers::nv_link::ErrorCounter;
use nvml_wrapper::enums::device::SampleValue;
use nvml_wrapper::enums::event::XidError;
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::structs::device::FieldId;
use nvml_wrapper::sys_exports::field_id::*;

const MIB: u64 = 1024 * 1024;

/// Where the built cdylib is, or why it is not there.
fn library_path() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("NVML_SIM_LIB") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let deps = exe.parent().map(PathBuf::from).unwrap_or_default();
    let mut candidates = vec![deps.join("libnvml_sim.so")];
    if let Some(profile) = deps.parent() {
        candidates.push(profile.join("libnvml_sim.so"));
    }
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .ok_or_else(|| {
            format!(
                "libnvml_sim.so not found (looked at {candidates:?}); build it with \
             `cargo build -p nvml-sim` or point NVML_SIM_LIB at it"
            )
        })
}

/// The control API of the simulator, loaded from the same library.
struct Control {
    lib: libloading::Library,
}

impl Control {
    fn open(path: &PathBuf) -> Result<Self, libloading::Error> {
        // SAFETY: loading our own library; its initialisers are trivial.
        Ok(Self {
            lib: unsafe { libloading::Library::new(path) }?,
        })
    }

    fn configure(&self, scenario: &CStr, seed: u64) -> Result<c_int, libloading::Error> {
        // SAFETY: signature as exported by nvml-sim.
        unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn(*const c_char, u64) -> c_int>(b"nvmlSimConfigure\0")?;
            Ok(f(scenario.as_ptr(), seed))
        }
    }

    fn last_error(&self) -> Result<String, libloading::Error> {
        // SAFETY: signature as exported by nvml-sim; the string is NUL-terminated.
        unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn() -> *const c_char>(b"nvmlSimLastError\0")?;
            Ok(CStr::from_ptr(f()).to_string_lossy().into_owned())
        }
    }

    fn set_time(&self, t: f64) -> Result<(), libloading::Error> {
        // SAFETY: signature as exported by nvml-sim.
        unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn(f64)>(b"nvmlSimSetTime\0")?;
            f(t);
        }
        Ok(())
    }

    fn scenario_names(&self) -> Result<String, libloading::Error> {
        // SAFETY: signature as exported by nvml-sim; the buffer is as long as we say.
        unsafe {
            let f = self
                .lib
                .get::<unsafe extern "C" fn(*mut c_char, c_uint) -> c_uint>(
                    b"nvmlSimScenarioNames\0",
                )?;
            let mut buf = vec![0 as c_char; 256];
            f(buf.as_mut_ptr(), 256);
            Ok(CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned())
        }
    }
}

#[test]
fn nvml_wrapper_drives_the_simulated_library() {
    let path = match library_path() {
        Ok(p) => p,
        Err(e) => panic!("{e}"),
    };
    let control = Control::open(&path).unwrap();

    // Without nvmlSimConfigure, init loads $NVML_SIM_SCENARIO or the default h100-mig.
    if std::env::var_os("NVML_SIM_SCENARIO").is_none() {
        let nvml = Nvml::builder().lib_path(OsStr::new(&path)).init().unwrap();
        assert_eq!(nvml.device_count().unwrap(), 8);
        drop(nvml);
    }

    assert!(control.scenario_names().unwrap().contains("h100-mig"));
    assert_eq!(control.configure(c"no-such-scenario", 1).unwrap(), -1);
    assert!(control.last_error().unwrap().contains("no-such-scenario"));
    assert_eq!(control.configure(c"h100-mig", 1).unwrap(), 0);
    control.set_time(75.0).unwrap();

    let nvml = Nvml::builder().lib_path(OsStr::new(&path)).init().unwrap();
    assert_eq!(nvml.sys_driver_version().unwrap(), "550.90.07");
    assert_eq!(nvml.sys_cuda_driver_version().unwrap(), 12040);
    assert_eq!(nvml.device_count().unwrap(), 8);

    // Identity and memory.
    let gpu0 = nvml.device_by_index(0).unwrap();
    let uuid0 = gpu0.uuid().unwrap();
    assert!(uuid0.starts_with("GPU-"), "{uuid0}");
    assert_eq!(gpu0.name().unwrap(), "NVIDIA H100 80GB HBM3");
    assert_eq!(gpu0.pci_info().unwrap().bus_id, "00000000:18:00.0");
    let mem = gpu0.memory_info().unwrap();
    assert_eq!(mem.total, 81559 * MIB);
    assert_eq!(mem.used + mem.free + mem.reserved, mem.total);
    assert_eq!(
        nvml.device_by_uuid(uuid0.as_str())
            .unwrap()
            .index()
            .unwrap(),
        0
    );
    assert!(gpu0.power_usage().unwrap() > 100_000);
    let e1 = gpu0.total_energy_consumption().unwrap();
    control.set_time(76.0).unwrap();
    assert!(gpu0.total_energy_consumption().unwrap() > e1);
    control.set_time(75.0).unwrap();

    // MIG enumeration on GPU 5: 3g.40gb (GI 2), 2g.20gb (GI 3), 1g.10gb (GI 7).
    let gpu5 = nvml.device_by_index(5).unwrap();
    assert_eq!(gpu5.mig_mode().unwrap().current, 1);
    let max = gpu5.mig_device_count().unwrap();
    assert_eq!(max, 7);
    let mut migs = Vec::new();
    for i in 0..max {
        match gpu5.mig_device_by_index(i) {
            Ok(d) => migs.push(d),
            Err(NvmlError::NotFound) => break,
            Err(e) => panic!("mig_device_by_index({i}): {e}"),
        }
    }
    let names: Vec<String> = migs.iter().map(|d| d.name().unwrap()).collect();
    assert_eq!(
        names,
        vec![
            "NVIDIA H100 80GB HBM3 MIG 3g.40gb",
            "NVIDIA H100 80GB HBM3 MIG 2g.20gb",
            "NVIDIA H100 80GB HBM3 MIG 1g.10gb",
        ]
    );
    assert!(migs[0].mig_is_mig_device_handle().unwrap());
    assert!(migs[0].uuid().unwrap().starts_with("MIG-"));
    assert_eq!(migs[0].memory_info().unwrap().total, 40448 * MIB);
    assert_eq!(
        migs[0].mig_parent_device().unwrap().uuid().unwrap(),
        gpu5.uuid().unwrap()
    );
    let mut gi: c_uint = 0;
    // SAFETY: a device handle from this Nvml and a valid out pointer.
    let rc = unsafe {
        nvml.lib()
            .nvmlDeviceGetGpuInstanceId(migs[1].handle(), &mut gi)
    };
    assert_eq!((rc, gi), (0, 3));
    assert!(matches!(
        migs[0].power_usage(),
        Err(NvmlError::NotSupported)
    ));
    assert!(matches!(
        gpu5.utilization_rates(),
        Err(NvmlError::NotSupported)
    ));

    // Field values, including per-entry NOT_SUPPORTED on the L4-less fields of an H100.
    let ids = [
        FieldId(NVML_FI_DEV_MEMORY_TEMP),
        FieldId(NVML_FI_DEV_POWER_INSTANT),
        FieldId(NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX),
        FieldId(NVML_FI_DEV_ECC_DBE_VOL_TOTAL),
        FieldId(9999),
    ];
    let gpu3 = nvml.device_by_index(3).unwrap();
    let values = gpu3.field_values_for(&ids).unwrap();
    let value = |i: usize| match &values[i] {
        Ok(s) => match s.value {
            Ok(SampleValue::U64(v)) => v,
            ref other => panic!("field {i}: {other:?}"),
        },
        Err(e) => panic!("field {i}: {e}"),
    };
    assert!(value(0) > 30);
    assert!(value(1) > 100_000);
    assert!(value(2) > 0);
    assert_eq!(value(3), 3);
    assert!(matches!(
        values[4].as_ref().map(|s| &s.value),
        Ok(Err(NvmlError::NotSupported))
    ));

    // NVLink per link and the fabric registration, through the library's own symbols.
    assert_eq!(gpu3.link_wrapper_for(17).is_active().ok(), Some(true));
    assert!(matches!(
        gpu3.link_wrapper_for(18).is_active(),
        Err(NvmlError::InvalidArg)
    ));
    assert_eq!(
        gpu3.link_wrapper_for(0)
            .error_counter(ErrorCounter::DlCrcFlit)
            .ok(),
        Some(0)
    );
    assert!(nvml.lib().nvmlDeviceGetGpuFabricInfoV.is_ok());
    assert!(nvml.lib().nvmlDeviceGetGpuFabricInfo.is_ok());

    // GPM between two samples, device-wide and per MIG instance.
    assert!(gpu0.gpm_support().unwrap());
    let s1 = gpu0.gpm_sample().unwrap();
    let m1 = gpu5.gpm_mig_sample(2).unwrap();
    control.set_time(85.0).unwrap();
    let s2 = gpu0.gpm_sample().unwrap();
    let m2 = gpu5.gpm_mig_sample(2).unwrap();
    let metrics = [
        GpmMetricId::SmUtil,
        GpmMetricId::AnyTensorUtil,
        GpmMetricId::IntegerUtil,
    ];
    let r = nvml_wrapper::gpm::gpm_metrics_get(&nvml, &s1, &s2, &metrics).unwrap();
    let sm = r[0].as_ref().unwrap();
    assert!(sm.value > 50.0 && sm.value <= 100.0, "{sm:?}");
    assert_eq!(sm.metric_info.unit, "%");
    assert!(r[1].is_ok());
    assert!(matches!(r[2], Err(NvmlError::NotSupported)));
    let r = nvml_wrapper::gpm::gpm_metrics_get(&nvml, &m1, &m2, &metrics).unwrap();
    assert!(r[0].as_ref().unwrap().value > 30.0);
    assert!(matches!(
        nvml_wrapper::gpm::gpm_metrics_get(&nvml, &s1, &m2, &metrics),
        Err(NvmlError::InvalidArg)
    ));
    drop((s1, s2, m1, m2));

    // Events: Xid 31 on GPU 1 at 40 s, Xid 48 three times on GPU 3 from 60 s. A set only
    // gets events that occur after its registration, so register before them.
    control.set_time(35.0).unwrap();
    let set = nvml.create_event_set().unwrap();
    let gpu1 = nvml.device_by_index(1).unwrap();
    let set = gpu1
        .register_events(EventTypes::CRITICAL_XID_ERROR, set)
        .unwrap();
    let set = gpu3
        .register_events(EventTypes::CRITICAL_XID_ERROR, set)
        .unwrap();
    control.set_time(85.0).unwrap();
    let mut seen = Vec::new();
    loop {
        match set.wait(50) {
            Ok(e) => {
                let XidError::Value(xid) = e.event_data.unwrap() else {
                    panic!("unknown xid");
                };
                seen.push((e.device.index().unwrap(), xid));
            }
            Err(NvmlError::Timeout) => break,
            Err(e) => panic!("wait: {e}"),
        }
    }
    assert_eq!(seen, vec![(1, 31), (3, 48), (3, 48), (3, 48)]);
    drop(set);

    // GPU 7 falls off the bus at 120 s and comes back at 180 s.
    let gpu7 = nvml.device_by_index(7).unwrap();
    control.set_time(150.0).unwrap();
    assert!(matches!(nvml.device_by_index(7), Err(NvmlError::GpuLost)));
    assert!(matches!(
        gpu7.temperature(nvml_wrapper::enum_wrappers::device::TemperatureSensor::Gpu),
        Err(NvmlError::GpuLost)
    ));
    control.set_time(181.0).unwrap();
    assert!(
        gpu7.temperature(nvml_wrapper::enum_wrappers::device::TemperatureSensor::Gpu)
            .is_ok()
    );

    // Drop calls nvmlShutdown; afterwards the library answers UNINITIALIZED.
    drop(nvml);
}
