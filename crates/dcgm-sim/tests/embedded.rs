//! The built `libdcgm_sim.so` in embedded mode, through DCGM's C signatures: exported names,
//! version words, devices and attributes, the MIG hierarchy, profiling values against the NVML
//! simulator (GPM on Hopper, utilization elsewhere), metric groups per architecture, blanks,
//! and manual mode.
//!
//! The loaded library has one global state, so the tests take turns (`serial`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::{Mutex, MutexGuard};

use common::{Dcgm, dbl, int, text};
use dcgm_abi::{self as abi, Zeroed};
use nvml_sim::sim::{Dev, Sim};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

const GPU: u32 = abi::DCGM_FE_GPU;
const GPU_I: u32 = abi::DCGM_FE_GPU_I;
const PROF: [u16; 12] = [
    1001, 1002, 1003, 1004, 1005, 1006, 1007, 1008, 1009, 1010, 1011, 1012,
];

/// An embedded engine on `scenario` (seed 1), frozen at `t`.
fn embedded(d: &Dcgm, scenario: &str, t: f64, mode: u32) -> usize {
    d.set_time(t);
    d.configure(scenario, 1);
    assert_eq!(d.init(), 0);
    d.start_embedded(mode).expect("start embedded")
}

fn finish(d: &Dcgm, h: usize) {
    assert_eq!(d.stop_embedded(h), 0);
    assert_eq!(d.shutdown(), 0);
    d.set_time(-1.0);
}

fn nvml(scenario: &str, t: f64) -> Sim {
    Sim::new(
        nvml_sim::scenario::load(scenario).expect("scenario"),
        1,
        Some(t),
    )
}

#[test]
fn exports_dcgm_names_and_no_nvml_symbols() {
    let _s = serial();
    let d = Dcgm::open();
    for name in [
        "dcgmInit",
        "dcgmConnect_v2",
        "dcgmEntitiesGetLatestValues",
        "errorString",
        "dcgmSimSetTime",
    ] {
        let sym = format!("{name}\0");
        assert!(
            unsafe { d.lib.get::<*const ()>(sym.as_bytes()) }.is_ok(),
            "{name} missing"
        );
    }
    for name in ["nvmlInit_v2", "nvmlDeviceGetCount_v2", "nvmlSimConfigure"] {
        let sym = format!("{name}\0");
        assert!(
            unsafe { d.lib.get::<*const ()>(sym.as_bytes()) }.is_err(),
            "libdcgm_sim.so exports NVML's {name}"
        );
    }
    assert!(!d.error_string(abi::DCGM_ST_CONNECTION_NOT_VALID).is_empty());
}

#[test]
fn version_words_and_pointers_are_checked() {
    let _s = serial();
    let d = Dcgm::open();
    d.configure("a100-l4", 1);
    assert_eq!(
        d.start_embedded(abi::DCGM_OPERATION_MODE_AUTO),
        Err(abi::DCGM_ST_UNINITIALIZED)
    );
    let h = embedded(&d, "a100-l4", 10.0, abi::DCGM_OPERATION_MODE_AUTO);
    let f = unsafe {
        d.lib
            .get::<dcgm_abi::sig::dcgmVersionInfo>(b"dcgmVersionInfo\0")
    }
    .expect("sym");
    let mut v = abi::dcgmVersionInfo_v2::zeroed();
    v.version = abi::dcgmVersionInfo_version2;
    assert_eq!(unsafe { f(&mut *v) }, 0);
    let info = abi::c_text(&v.rawBuildInfoString);
    assert!(info.starts_with("version:4."), "{info}");
    assert!(info.contains(";arch:"), "{info}");
    v.version = abi::make_version(size_of::<abi::dcgmVersionInfo_v2>(), 1);
    assert_eq!(unsafe { f(&mut *v) }, abi::DCGM_ST_VER_MISMATCH);
    assert_eq!(unsafe { f(std::ptr::null_mut()) }, abi::DCGM_ST_BADPARAM);

    let attrs = unsafe {
        d.lib
            .get::<dcgm_abi::sig::dcgmGetDeviceAttributes>(b"dcgmGetDeviceAttributes\0")
    }
    .expect("sym");
    let mut a = abi::dcgmDeviceAttributes_v3::zeroed();
    a.version = abi::make_version(size_of::<abi::dcgmDeviceAttributes_v3>() - 4, 3);
    assert_eq!(unsafe { attrs(h, 0, &mut *a) }, abi::DCGM_ST_VER_MISMATCH);
    let mut m = abi::dcgmMigHierarchy_v2::zeroed();
    m.version = abi::make_version(size_of::<abi::dcgmMigHierarchy_v2>(), 1);
    let hier = unsafe {
        d.lib
            .get::<dcgm_abi::sig::dcgmGetGpuInstanceHierarchy>(b"dcgmGetGpuInstanceHierarchy\0")
    }
    .expect("sym");
    assert_eq!(unsafe { hier(h, &mut *m) }, abi::DCGM_ST_VER_MISMATCH);
    let mut c = abi::dcgmConnectV2Params_v2 {
        version: 0x0100_000c,
        ..Default::default()
    };
    let conn = unsafe {
        d.lib
            .get::<dcgm_abi::sig::dcgmConnect_v2>(b"dcgmConnect_v2\0")
    }
    .expect("sym");
    let mut out = 0usize;
    assert_eq!(
        unsafe { conn(c"127.0.0.1".as_ptr(), &mut c, &mut out) },
        abi::DCGM_ST_VER_MISMATCH
    );
    assert_eq!(
        d.devices(h + 1000),
        Err(abi::DCGM_ST_BADPARAM),
        "unknown handle"
    );
    assert_eq!(
        d.watch(h, 4242, 4343),
        abi::DCGM_ST_NOT_CONFIGURED,
        "unknown groups"
    );
    finish(&d, h);
}

#[test]
fn devices_and_attributes_are_the_nvml_simulators() {
    let _s = serial();
    let d = Dcgm::open();
    let h = embedded(&d, "a100-l4", 5.0, abi::DCGM_OPERATION_MODE_AUTO);
    let sc = nvml_sim::scenario::load("a100-l4").expect("scenario");
    assert_eq!(d.devices(h), Ok(vec![0, 1]));
    for (i, gpu) in sc.gpus.iter().enumerate() {
        let a = d.attributes(h, i as u32).expect("attributes");
        assert_eq!(abi::c_text(&a.identifiers.uuid), gpu.uuid);
        assert_eq!(abi::c_text(&a.identifiers.deviceName), gpu.model.name);
        assert_eq!(abi::c_text(&a.identifiers.pciBusId), gpu.pci.bus_id());
        assert_eq!(a.settings.migModeEnabled, u32::from(gpu.mig_enabled));
        assert!(a.memoryUsage.fbTotal > 0);
    }
    assert_eq!(d.attributes(h, 7).err(), Some(abi::DCGM_ST_BADPARAM));
    finish(&d, h);
}

#[test]
fn mig_hierarchy_of_h100_mig_matches_nvml() {
    let _s = serial();
    let d = Dcgm::open();
    let h = embedded(&d, "h100-mig", 5.0, abi::DCGM_OPERATION_MODE_AUTO);
    let m = d.hierarchy(h).expect("hierarchy");
    let list = &m.entityList[..m.count as usize];
    let sc = nvml_sim::scenario::load("h100-mig").expect("scenario");
    let gis: Vec<_> = list
        .iter()
        .filter(|e| e.entity.entityGroupId == GPU_I)
        .collect();
    let cis: Vec<_> = list
        .iter()
        .filter(|e| e.entity.entityGroupId == abi::DCGM_FE_GPU_CI)
        .collect();
    // GPU 2: seven 1g.10gb; GPU 5: 3g.40gb + 2g.20gb + 1g.10gb.
    assert_eq!(
        gis.len(),
        10,
        "{:?}",
        gis.iter().map(|e| e.entity.entityId).collect::<Vec<_>>()
    );
    assert_eq!(cis.len(), 10);
    for e in &gis {
        assert_eq!(e.parent.entityGroupId, GPU);
        let gpu = &sc.gpus[e.parent.entityId as usize];
        assert_eq!(abi::c_text(&e.info.gpuUuid), gpu.uuid);
        assert_eq!(e.info.nvmlGpuIndex, e.parent.entityId);
        let inst = gpu
            .instances
            .iter()
            .find(|i| i.gi == e.info.nvmlInstanceId)
            .expect("NVML's GI id");
        assert_eq!(e.info.nvmlProfileSlices, inst.profile.compute_slices);
    }
    let g5: Vec<u32> = gis
        .iter()
        .filter(|e| e.parent.entityId == 5)
        .map(|e| e.info.nvmlProfileSlices)
        .collect();
    assert_eq!(g5.iter().sum::<u32>(), 6);
    for c in &cis {
        assert_eq!(c.parent.entityGroupId, GPU_I);
        assert!(gis.iter().any(|g| g.entity.entityId == c.parent.entityId));
    }
    finish(&d, h);
}

/// Watches `fields` on `entities` and reads them.
fn read(
    d: &Dcgm,
    h: usize,
    entities: &[(u32, u32)],
    fields: &[u16],
) -> Vec<abi::dcgmFieldValue_v2> {
    let g = d.group(h, entities).expect("group");
    let fg = d.field_group(h, fields).expect("field group");
    assert_eq!(d.watch(h, g, fg), 0);
    d.latest(h, entities, fields).expect("latest")
}

#[test]
fn profiling_equals_gpm_on_hopper_at_the_same_time() {
    let _s = serial();
    let d = Dcgm::open();
    for t in [12.0, 47.5] {
        let h = embedded(&d, "h100-mig", t, abi::DCGM_OPERATION_MODE_AUTO);
        let mut sim = nvml("h100-mig", t);
        // GPU 0 (whole GPU) and GPU 5's first GPU instance (3g.40gb, DCGM id 5 * 8 + k).
        let m = d.hierarchy(h).expect("hierarchy");
        let gi5 = m.entityList[..m.count as usize]
            .iter()
            .find(|e| {
                e.entity.entityGroupId == GPU_I
                    && e.parent.entityId == 5
                    && e.info.nvmlProfileSlices == 3
            })
            .expect("3g instance on GPU 5");
        let entities = [(GPU, 0), (GPU_I, gi5.entity.entityId)];
        // One pass: A.1 + B + C + D + E.
        let fields = [
            1001u16, 1002, 1003, 1004, 1005, 1007, 1009, 1010, 1011, 1012,
        ];
        let vals = read(&d, h, &entities, &fields);
        let gpm_ids = [1u32, 2, 3, 5, 10, 12, 20, 21, 61, 60];
        for (k, gi) in [None, Some(gi5.info.nvmlInstanceId)]
            .into_iter()
            .enumerate()
        {
            let (s1, s2) = (sim.sample_alloc(), sim.sample_alloc());
            sim.sample_get(Dev::Gpu(if k == 0 { 0 } else { 5 }), gi, s1, t)
                .expect("sample");
            sim.sample_get(Dev::Gpu(if k == 0 { 0 } else { 5 }), gi, s2, t)
                .expect("sample");
            let gpm = sim.metrics_get(s1, s2, &gpm_ids).expect("gpm");
            for (j, f) in fields.iter().enumerate() {
                let v = &vals[k * fields.len() + j];
                assert_eq!(v.fieldId, *f);
                let want = gpm[j].expect("gpm value");
                if *f <= 1008 {
                    let got = dbl(v).expect("a ratio");
                    assert!(
                        (got * 100.0 - want).abs() < 1e-9,
                        "t {t} entity {k} field {f}: {got} vs GPM {want}%"
                    );
                } else {
                    let got = int(v).expect("bytes");
                    assert!(
                        (got as f64 - want * 1_048_576.0).abs() <= 1.0,
                        "t {t} entity {k} field {f}: {got} vs GPM {want} MiB/s"
                    );
                }
            }
        }
        finish(&d, h);
    }
}

#[test]
fn profiling_on_a100_and_l4_moves_with_the_workload_and_matches_utilization() {
    let _s = serial();
    let d = Dcgm::open();
    let mut seen: Vec<Vec<f64>> = Vec::new();
    for t in [3.0, 90.0, 200.0, 333.0] {
        let h = embedded(&d, "a100-l4", t, abi::DCGM_OPERATION_MODE_AUTO);
        let sim = nvml("a100-l4", t);
        let vals = read(&d, h, &[(GPU, 0), (GPU, 1)], &[1001, 1004, 1005]);
        let mut row = Vec::new();
        for gpu in 0..2 {
            let gr = dbl(&vals[gpu * 3]).expect("GR_ENGINE_ACTIVE");
            let tensor = dbl(&vals[gpu * 3 + 1]).expect("PIPE_TENSOR_ACTIVE");
            let dram = dbl(&vals[gpu * 3 + 2]).expect("DRAM_ACTIVE");
            let (util, mem) = sim.utilization(Dev::Gpu(gpu), t).expect("nvml utilization");
            assert!(
                (gr * 100.0 - f64::from(util)).abs() <= 0.5 + 1e-9,
                "t {t} GPU {gpu}: {gr} vs {util}%"
            );
            assert!(
                (dram * 100.0 - f64::from(mem)).abs() <= 0.5 + 1e-9,
                "t {t} GPU {gpu}: {dram} vs {mem}%"
            );
            assert!((0.0..=1.0).contains(&tensor) && tensor > 0.0);
            row.push(gr);
        }
        seen.push(row);
        finish(&d, h);
    }
    for gpu in 0..2 {
        let first = seen[0][gpu];
        assert!(
            seen.iter().any(|r| (r[gpu] - first).abs() > 1e-3),
            "GPU {gpu} profiling does not move: {seen:?}"
        );
    }
}

#[test]
fn metric_groups_per_architecture_and_single_pass_rules() {
    let _s = serial();
    let d = Dcgm::open();
    let h = embedded(&d, "a100-l4", 5.0, abi::DCGM_OPERATION_MODE_AUTO);
    let a100 = d.metric_groups(h, 0).expect("A100 groups");
    let l4 = d.metric_groups(h, 1).expect("L4 groups");
    let has = |groups: &[(u16, u16, Vec<u16>)], f: u16| groups.iter().any(|g| g.2.contains(&f));
    for f in PROF {
        assert!(has(&a100, f), "A100 lacks {f}");
    }
    assert!(
        !has(&l4, 1011) && !has(&l4, 1006),
        "the L4 has no NVLink or FP64 group: {l4:?}"
    );
    // SM_ACTIVE (A.1), FP64 (A.2) and FP16 (A.3) share a major id: DCGM multiplexes them.
    let g = d.group(h, &[(GPU, 0)]).expect("group");
    let fg = d.field_group(h, &[1002, 1006, 1008]).expect("fg");
    assert_eq!(d.watch(h, g, fg), 0);
    let g1 = d.group(h, &[(GPU, 1)]).expect("group");
    let fg1 = d.field_group(h, &[1001, 1011]).expect("fg");
    assert_eq!(d.watch(h, g1, fg1), abi::DCGM_ST_PROFILING_NOT_SUPPORTED);
    let fg2 = d
        .field_group(h, &[1001, 1002, 1004, 1005, 1009, 1010])
        .expect("fg");
    assert_eq!(d.watch(h, g1, fg2), 0);
    finish(&d, h);
}

#[test]
fn unwatched_and_unsupported_fields_read_blank() {
    let _s = serial();
    let d = Dcgm::open();
    let h = embedded(&d, "a100-l4", 5.0, abi::DCGM_OPERATION_MODE_AUTO);
    let v = d.latest(h, &[(GPU, 0)], &[1001]).expect("latest");
    assert_eq!(v[0].status, abi::DCGM_ST_NOT_WATCHED);
    assert!(abi::fp64_is_blank(unsafe { v[0].value.dbl }));
    // DCGM_FI_DEV_GPU_TEMP (150) is not one the simulator serves: NOT_SUPPORTED blank.
    let v = read(&d, h, &[(GPU, 0)], &[150, 54]);
    assert_eq!(v[0].status, abi::DCGM_ST_NOT_SUPPORTED);
    assert_eq!(unsafe { v[0].value.i64_ }, abi::DCGM_INT64_NOT_SUPPORTED);
    assert_eq!(v[1].status, 0);
    assert_eq!(v[1].fieldType, abi::DCGM_FT_STRING);
    assert!(text(&v[1]).starts_with("GPU-"), "{}", text(&v[1]));
    finish(&d, h);
}

#[test]
fn manual_mode_reads_the_last_update() {
    let _s = serial();
    let d = Dcgm::open();
    let h = embedded(&d, "a100-l4", 50.0, abi::DCGM_OPERATION_MODE_MANUAL);
    let v = read(&d, h, &[(GPU, 0)], &[1001]);
    assert_eq!(v[0].status, abi::DCGM_ST_NO_DATA, "no update yet");
    assert_eq!(d.update_all(h), 0);
    let first = d.latest(h, &[(GPU, 0)], &[1001]).expect("latest");
    let a = dbl(&first[0]).expect("value after an update");
    d.set_time(51.7);
    let again = d.latest(h, &[(GPU, 0)], &[1001]).expect("latest");
    assert_eq!(dbl(&again[0]), Some(a), "manual mode holds the last sample");
    assert_eq!(again[0].ts, first[0].ts);
    assert_eq!(d.update_all(h), 0);
    let later = d.latest(h, &[(GPU, 0)], &[1001]).expect("latest");
    assert_eq!(later[0].ts - first[0].ts, 1_700_000);
    finish(&d, h);
}

#[test]
fn a100_mig_t4_serves_profiling_per_instance_and_on_the_t4() {
    let _s = serial();
    let d = Dcgm::open();
    let h = embedded(&d, "a100-mig-t4", 20.0, abi::DCGM_OPERATION_MODE_AUTO);
    let a = d.attributes(h, 0).expect("A100");
    assert_eq!(
        abi::c_text(&a.identifiers.deviceName),
        "NVIDIA A100-SXM4-80GB"
    );
    assert_eq!(a.settings.migModeEnabled, 1);
    let t4 = d.attributes(h, 1).expect("T4");
    assert_eq!(abi::c_text(&t4.identifiers.deviceName), "Tesla T4");
    let m = d.hierarchy(h).expect("hierarchy");
    let gis: Vec<_> = m.entityList[..m.count as usize]
        .iter()
        .filter(|e| e.entity.entityGroupId == GPU_I)
        .map(|e| {
            (
                e.entity.entityId,
                e.info.nvmlInstanceId,
                e.info.nvmlProfileSlices,
            )
        })
        .collect();
    let mut slices: Vec<u32> = gis.iter().map(|g| g.2).collect();
    slices.sort_unstable();
    assert_eq!(slices, [1, 1, 2, 3], "{gis:?}");
    let t4_groups = d.metric_groups(h, 1).expect("T4 groups");
    assert!(
        t4_groups.iter().all(|g| !g.2.contains(&1011)),
        "no NVLink on a T4"
    );

    let mut entities: Vec<(u32, u32)> = gis.iter().map(|g| (GPU_I, g.0)).collect();
    entities.push((GPU, 0));
    entities.push((GPU, 1));
    let fields = [1001u16, 1002, 1004];
    let mut seen = Vec::new();
    for t in [20.0, 140.0] {
        d.set_time(t);
        let g = d.group(h, &entities).expect("group");
        let fg = d.field_group(h, &fields).expect("fg");
        assert_eq!(d.watch(h, g, fg), 0);
        let v = d.latest(h, &entities, &fields).expect("latest");
        let gr: Vec<f64> = (0..entities.len())
            .map(|i| dbl(&v[i * fields.len()]).expect("GR_ENGINE_ACTIVE"))
            .collect();
        // The whole A100 is its instances weighted by their share of the 7 slices.
        let weighted: f64 = gis
            .iter()
            .zip(&gr)
            .map(|(g, v)| v * f64::from(g.2) / 7.0)
            .sum();
        assert!((gr[gis.len()] - weighted).abs() < 1e-9, "{gr:?}");
        assert!(gr[gis.len() + 1] > 0.0, "the T4 is busy");
        seen.push(gr);
    }
    assert_ne!(seen[0], seen[1], "profiling moves with the workload");
    finish(&d, h);
}

/// The `DT_SONAME` of an ELF64 little-endian shared object, read from its dynamic section.
fn soname(path: &std::path::Path) -> Option<String> {
    let b = std::fs::read(path).ok()?;
    let u16_at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64_at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    let (shoff, shentsize, shnum) = (
        u64_at(0x28)? as usize,
        u16_at(0x3a)? as usize,
        u16_at(0x3c)? as usize,
    );
    let section = |i: usize| {
        let s = shoff + i * shentsize;
        Some((
            u32_at(s + 4)?,
            u64_at(s + 0x18)? as usize,
            u64_at(s + 0x20)? as usize,
            u32_at(s + 0x28)? as usize,
        ))
    };
    let (_, dyn_off, dyn_size, link) = (0..shnum).filter_map(section).find(|s| s.0 == 6)?;
    let (_, str_off, _, _) = section(link)?;
    (0..dyn_size / 16).find_map(|k| {
        let (tag, val) = (
            u64_at(dyn_off + 16 * k)?,
            u64_at(dyn_off + 16 * k + 8)? as usize,
        );
        (tag == 14).then(|| {
            let start = str_off + val;
            let end = b[start..]
                .iter()
                .position(|c| *c == 0)
                .map_or(b.len(), |n| start + n);
            String::from_utf8_lossy(&b[start..end]).into_owned()
        })
    })
}

#[test]
fn the_library_is_named_libdcgm_so_4() {
    let path = common::library_path();
    assert_eq!(
        soname(&path).as_deref(),
        Some("libdcgm.so.4"),
        "{}",
        path.display()
    );
}

/// The NVSwitches of hgx-h200: listed by `dcgmGetEntityGroupEntities`, watched and read as
/// `DCGM_FE_SWITCH` entities; the SXid fault on switch 2 only; per-port fields and scenarios
/// without switches answer as DCGM does.
#[test]
fn switches_of_hgx_h200_are_entities_with_their_sxids() {
    let _s = serial();
    let d = Dcgm::open();
    let h = embedded(&d, "hgx-h200", 30.0, abi::DCGM_OPERATION_MODE_AUTO);
    let sw = abi::DCGM_FE_SWITCH;
    assert_eq!(d.entities(h, sw, 32), Ok(vec![0, 1, 2, 3]));
    assert_eq!(d.entities(h, abi::DCGM_FE_GPU, 32), Ok((0..8).collect()));
    assert_eq!(
        d.entities(h, sw, 2),
        Err((abi::DCGM_ST_INSUFFICIENT_SIZE, 4)),
        "the count says how many there are"
    );
    let ents: Vec<(u32, u32)> = (0..4).map(|i| (sw, i)).collect();
    let g = d.group(h, &ents).unwrap();
    assert!(d.group(h, &[(sw, 7)]).is_err(), "no switch 7");
    let fields = [856, 857, 858, 861, 780];
    let fg = d.field_group(h, &fields).unwrap();
    assert_eq!(d.watch(h, g, fg), 0);
    let v = d.latest(h, &ents, &fields).unwrap();
    for s in 0..4 {
        let at = |k: usize| &v[s * fields.len() + k];
        assert_eq!(int(at(0)), Some(0), "no fatal SXid on switch {s}");
        let want = if s == 2 { 20034 } else { 0 };
        assert_eq!(int(at(1)), Some(want), "non-fatal SXid on switch {s}");
        assert!(
            int(at(2)).is_some_and(|c| (30..95).contains(&c)),
            "temperature"
        );
        assert!(
            int(at(3)).is_some_and(|b| b > 0),
            "bytes through the switch"
        );
        assert_eq!(at(4).status, abi::DCGM_ST_NOT_SUPPORTED, "a per-port field");
    }
    finish(&d, h);
    let h = embedded(&d, "a100-l4", 30.0, abi::DCGM_OPERATION_MODE_AUTO);
    assert_eq!(d.entities(h, sw, 32), Ok(vec![]));
    finish(&d, h);
}
