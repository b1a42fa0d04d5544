//! Tests of the simulated machine's NVML semantics, without the C ABI.

use super::*;
use crate::physics::MIB;
use crate::scenario::{NO_INSTANCE, load, parse};

fn h100(seed: u64) -> Sim {
    Sim::new(load("h100-mig").unwrap(), seed, Some(0.0))
}

#[test]
fn deterministic_for_a_seed() {
    let mut a = h100(7);
    let mut b = h100(7);
    let mut c = h100(8);
    let mut differs = false;
    for t in [0.0, 12.5, 300.0, 1234.5] {
        for g in 0..8 {
            let d = Dev::Gpu(g);
            assert_eq!(a.power_mw(d, t), b.power_mw(d, t));
            assert_eq!(a.energy_mj(d, t), b.energy_mj(d, t));
            assert_eq!(a.memory(d, t), b.memory(d, t));
            assert_eq!(a.readings(d, t), b.readings(d, t));
            differs |= a.power_mw(d, t) != c.power_mw(d, t);
            let _ = c.energy_mj(d, t);
        }
    }
    assert!(differs, "another seed must give other values");
    // Identity does not depend on the seed.
    assert_eq!(a.uuid(Dev::Gpu(3)), c.uuid(Dev::Gpu(3)));
}

#[test]
fn energy_is_strictly_increasing() {
    let mut s = h100(1);
    let mut last = 0;
    for k in 0..400 {
        let t = f64::from(k) * 0.37;
        let e = s.energy_mj(Dev::Gpu(0), t).unwrap();
        assert!(e > last || k == 0, "energy went from {last} to {e} at {t}");
        last = e;
    }
    // ~700 W × 150 s ≈ 100 kJ at most, at least idle power.
    let e0 = s.energy_mj(Dev::Gpu(0), 0.0).unwrap();
    let delta = last - e0;
    assert!(delta > 78_000 * 147 && delta < 700_000 * 148, "{delta}");
}

#[test]
fn violation_grows_when_power_capped() {
    let sc = parse(
        "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\", level = 1.0, amplitude = 0 }\n[[faults]]\nat = 0\ngpu = 0\nkind = \"power_limit\"\nwatts = 400\n",
        "test",
        "test",
    )
    .unwrap();
    let mut s = Sim::new(sc, 1, Some(0.0));
    let (_, v1) = s.violation(Dev::Gpu(0), 0, 100.0).unwrap();
    let (_, v2) = s.violation(Dev::Gpu(0), 0, 200.0).unwrap();
    assert!(v2 > v1 && v1 > 10_000_000_000, "{v1} {v2}");
    assert_eq!(s.power_mw(Dev::Gpu(0), 150.0), Ok(400_000));
    let reasons = s.clock_reasons(Dev::Gpu(0), 150.0).unwrap();
    assert_ne!(reasons & 4, 0);
    assert_eq!(s.power_limit_mw(Dev::Gpu(0), 10.0), Ok(400_000));
}

#[test]
fn memory_sums_through_sim() {
    let s = h100(1);
    for g in 0..8 {
        let m = s.memory(Dev::Gpu(g), 42.0).unwrap();
        assert_eq!(m.used + m.free + m.reserved, m.total);
        for uid in s.mig_devices(g, 42.0) {
            let m = s.memory(Dev::Mig(g, uid), 42.0).unwrap();
            assert_eq!(m.used + m.free + m.reserved, m.total);
        }
    }
}

#[test]
fn mig_enumeration_and_names() {
    let s = h100(1);
    assert_eq!(s.mig_mode(Dev::Gpu(2)), Ok((1, 1)));
    assert_eq!(s.mig_mode(Dev::Gpu(0)), Ok((0, 0)));
    assert_eq!(s.max_mig_devices(Dev::Gpu(2)), Ok(7));
    assert_eq!(s.max_mig_devices(Dev::Gpu(0)), Ok(0));
    let devs: Vec<Dev> = (0..7)
        .map(|i| s.mig_handle_by_index(Dev::Gpu(2), i, 0.0).unwrap())
        .collect();
    assert_eq!(
        s.mig_handle_by_index(Dev::Gpu(2), 7, 0.0),
        Err(ret::NOT_FOUND)
    );
    let gis: Vec<u32> = devs.iter().map(|d| s.instance_ids(*d).unwrap().0).collect();
    assert_eq!(gis, vec![7, 8, 9, 10, 11, 12, 13]);
    assert_eq!(
        s.name(devs[0]).unwrap(),
        "NVIDIA H100 80GB HBM3 MIG 1g.10gb"
    );
    let d5 = s.mig_handle_by_index(Dev::Gpu(5), 0, 0.0).unwrap();
    assert_eq!(s.name(d5).unwrap(), "NVIDIA H100 80GB HBM3 MIG 3g.40gb");
    assert_eq!(s.instance_ids(d5), Ok((2, 0)));
    assert!(s.uuid(d5).unwrap().starts_with("MIG-"));
    assert_eq!(s.mig_parent(d5), Ok(Dev::Gpu(5)));
    assert_eq!(s.handle_by_uuid(&s.uuid(d5).unwrap(), 0.0), Ok(d5));
    // Device-wide telemetry is not answered on MIG devices, nor utilization on a MIG parent.
    assert_eq!(s.power_mw(d5, 0.0), Err(ret::NOT_SUPPORTED));
    assert_eq!(s.temperature(d5, 0, 0.0), Err(ret::NOT_SUPPORTED));
    assert_eq!(s.utilization(Dev::Gpu(5), 0.0), Err(ret::NOT_SUPPORTED));
    assert_eq!(
        s.codec_utilization(Dev::Gpu(5), true, 0.0),
        Err(ret::NOT_SUPPORTED)
    );
    assert!(s.utilization(Dev::Gpu(0), 0.0).is_ok());
    assert!(s.memory(d5, 0.0).unwrap().total == 40448 * MIB);
}

#[test]
fn gpm_metrics_between_two_samples() {
    let mut s = h100(1);
    let a = s.sample_alloc();
    let b = s.sample_alloc();
    s.sample_get(Dev::Gpu(0), None, a, 100.0).unwrap();
    s.sample_get(Dev::Gpu(0), None, b, 110.0).unwrap();
    let ids = [1, 2, 3, 5, 10, 11, 12, 13, 20, 21, 60, 61, 4];
    let v = s.metrics_get(a, b, &ids).unwrap();
    assert_eq!(v[12], Err(ret::NOT_SUPPORTED));
    let sm = v[1].unwrap();
    assert!(sm > 50.0 && sm <= 100.0, "{sm}");
    // The average equals the mean of the SM curve over the interval.
    let mut mean = 0.0;
    for k in 0..400 {
        let t = 100.0 + (f64::from(k) + 0.5) * 10.0 / 400.0;
        mean += 100.0 * physics::gpu_load(&s.scenario, 1, 0, t).sm / 400.0;
    }
    assert!((sm - mean).abs() < 0.5, "{sm} vs {mean}");
    assert!(v[10].unwrap() > 1000.0, "NVLink RX MiB/s {:?}", v[10]);
    // Same sample twice, or samples of different devices: invalid.
    assert_eq!(s.metrics_get(a, a, &ids), Err(ret::INVALID_ARGUMENT));
    let c = s.sample_alloc();
    s.sample_get(Dev::Gpu(1), None, c, 110.0).unwrap();
    assert_eq!(s.metrics_get(a, c, &ids), Err(ret::INVALID_ARGUMENT));
    // MIG samples give the instance's values.
    let m1 = s.sample_alloc();
    let m2 = s.sample_alloc();
    s.sample_get(Dev::Gpu(2), Some(12), m1, 50.0).unwrap();
    s.sample_get(Dev::Gpu(2), Some(12), m2, 60.0).unwrap();
    let idle = s.metrics_get(m1, m2, &[2]).unwrap();
    assert_eq!(idle[0], Ok(0.0));
    assert_eq!(
        s.sample_get(Dev::Gpu(2), Some(1), m1, 60.0),
        Err(ret::INVALID_ARGUMENT)
    );
    // Frozen time: both samples at the same instant give the instantaneous value.
    let f1 = s.sample_alloc();
    let f2 = s.sample_alloc();
    s.sample_get(Dev::Gpu(0), None, f1, 100.0).unwrap();
    s.sample_get(Dev::Gpu(0), None, f2, 100.0).unwrap();
    let v = s.metrics_get(f1, f2, &[2]).unwrap()[0].unwrap();
    let expect = 100.0 * physics::gpu_load(&s.scenario, 1, 0, 100.0).sm;
    assert!((v - expect).abs() < 1e-9);
    assert_eq!(s.sample_free(f1), Ok(()));
    assert_eq!(s.sample_free(f1), Err(ret::INVALID_ARGUMENT));
}

#[test]
fn gpm_not_on_non_hopper() {
    let mut s = Sim::new(load("a100-l4").unwrap(), 1, Some(0.0));
    assert_eq!(s.gpm_supported(Dev::Gpu(0)), Ok(false));
    let a = s.sample_alloc();
    assert_eq!(
        s.sample_get(Dev::Gpu(0), None, a, 1.0),
        Err(ret::NOT_SUPPORTED)
    );
}

#[test]
fn lost_window() {
    let s = h100(1);
    let d = Dev::Gpu(7);
    assert_eq!(s.check(d, "nvmlDeviceGetPowerUsage", 119.0), Ok(d));
    assert_eq!(
        s.check(d, "nvmlDeviceGetPowerUsage", 120.0),
        Err(ret::GPU_IS_LOST)
    );
    assert_eq!(s.handle_by_index(7, 150.0), Err(ret::GPU_IS_LOST));
    let uuid = s.uuid(d).unwrap();
    assert_eq!(s.handle_by_uuid(&uuid, 150.0), Err(ret::GPU_IS_LOST));
    assert_eq!(s.handle_by_index(7, 180.0), Ok(d));
    assert_eq!(s.device_count(150.0), 8);
}

#[test]
fn unsupported_window() {
    let s = h100(1);
    let d = Dev::Gpu(6);
    assert_eq!(s.check(d, "nvmlDeviceGetPowerUsage", 89.9), Ok(d));
    assert_eq!(
        s.check(d, "nvmlDeviceGetPowerUsage", 90.0),
        Err(ret::NOT_SUPPORTED)
    );
    assert_eq!(s.check(d, "nvmlDeviceGetTemperature", 90.0), Ok(d));
}

#[test]
fn field_values_per_model() {
    use nvml_wrapper_sys::bindings::field_id::*;
    let mut s = Sim::new(load("a100-l4").unwrap(), 1, Some(30.0));
    let l4 = Dev::Gpu(1);
    let a100 = Dev::Gpu(0);
    assert_eq!(
        s.field(l4, NVML_FI_DEV_MEMORY_TEMP, 30.0),
        Err(ret::NOT_SUPPORTED)
    );
    assert_eq!(
        s.field(l4, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 30.0),
        Err(ret::NOT_SUPPORTED)
    );
    assert!(s.field(a100, NVML_FI_DEV_MEMORY_TEMP, 30.0).unwrap() > 30);
    let tx1 = s
        .field(a100, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 30.0)
        .unwrap();
    let tx2 = s
        .field(a100, NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, 40.0)
        .unwrap();
    assert!(tx2 > tx1);
    let p = s.field(a100, NVML_FI_DEV_POWER_INSTANT, 30.0).unwrap();
    assert_eq!(Ok(p as u32), s.power_mw(a100, 30.0));
    assert_eq!(s.field(a100, NVML_FI_DEV_ECC_DBE_VOL_TOTAL, 30.0), Ok(0));
    assert_eq!(s.field(a100, 9999, 30.0), Err(ret::NOT_SUPPORTED));
    // Clock-event reason times are the violation times under their field ids.
    assert_eq!(
        s.field(a100, NVML_FI_DEV_PERF_POLICY_POWER, 30.0).ok(),
        s.violation(a100, 0, 30.0).ok().map(|v| v.1)
    );
    assert_eq!(
        s.field(
            a100,
            NVML_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN,
            30.0
        )
        .ok(),
        s.violation(a100, 1, 30.0).ok().map(|v| v.1)
    );
    assert_eq!(
        s.field(
            a100,
            NVML_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN,
            30.0
        ),
        Ok(0)
    );
    assert_eq!(s.field(Dev::Mig(0, 0), 82, 30.0), Err(ret::NOT_SUPPORTED));
    // The L4 decodes video.
    let (dec, period) = s.codec_utilization(l4, true, 30.0).unwrap();
    assert!(dec > 0 && period == CODEC_SAMPLING_US);
}

#[test]
fn ecc_and_remap_from_faults() {
    use nvml_wrapper_sys::bindings::field_id::*;
    let mut s = h100(1);
    let d = Dev::Gpu(3);
    assert_eq!(s.ecc_total(d, 1, 0, 59.0), Ok(0));
    assert_eq!(s.ecc_total(d, 1, 0, 66.0), Ok(2));
    assert_eq!(s.field(d, NVML_FI_DEV_ECC_DBE_AGG_TOTAL, 80.0), Ok(3));
    assert_eq!(s.field(d, NVML_FI_DEV_REMAPPED_UNC, 80.0), Ok(3));
    assert_eq!(s.field(d, NVML_FI_DEV_REMAPPED_PENDING, 80.0), Ok(1));
}

#[test]
fn mig_layout_change() {
    let sc = parse(
        r#"
        [[gpus]]
        model = "H100-SXM5-80GB"
        mig = [
          { profile = "3g.40gb", workload = { kind = "training" } },
          { profile = "1g.10gb" },
        ]
        [[faults]]
        at = 100
        gpu = 0
        kind = "mig_layout"
        mig = [{ profile = "3g.40gb" }, { profile = "2g.20gb" }, { profile = "2g.20gb" }]
        "#,
        "test",
        "test",
    )
    .unwrap();
    let s = Sim::new(sc, 1, Some(0.0));
    let before: Vec<Dev> = (0..2)
        .map(|i| s.mig_handle_by_index(Dev::Gpu(0), i, 50.0).unwrap())
        .collect();
    let small = before[1];
    assert_eq!(s.instance_ids(small), Ok((7, 0)));
    assert_eq!(
        s.check(small, "nvmlDeviceGetMemoryInfo_v2", 150.0),
        Err(ret::INVALID_ARGUMENT)
    );
    assert_eq!(
        s.handle_by_uuid(&s.uuid(small).unwrap(), 150.0),
        Err(ret::NOT_FOUND)
    );
    // The 3g.40gb instance survives the change with the same handle.
    let after: Vec<Dev> = (0..3)
        .map(|i| s.mig_handle_by_index(Dev::Gpu(0), i, 150.0).unwrap())
        .collect();
    assert_eq!(after[0], before[0]);
    let gis: Vec<u32> = after
        .iter()
        .map(|d| s.instance_ids(*d).unwrap().0)
        .collect();
    assert_eq!(gis, vec![2, 3, 4]);
    assert_eq!(
        s.mig_handle_by_index(Dev::Gpu(0), 3, 150.0),
        Err(ret::NOT_FOUND)
    );
}

#[test]
fn processes_listed_per_entity() {
    let s = h100(1);
    let rows = s.processes(Dev::Gpu(0), 10.0).unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!((rows[0].pid, rows[0].gi), (41001, NO_INSTANCE));
    assert!(rows[0].used_bytes > 60_000 * MIB);
    let parent = s.processes(Dev::Gpu(5), 10.0).unwrap();
    let pids: Vec<(u32, u32)> = parent.iter().map(|r| (r.pid, r.gi)).collect();
    assert_eq!(pids, vec![(45001, 2), (45002, 3)]);
    let d = s.mig_handle_by_index(Dev::Gpu(2), 6, 10.0).unwrap();
    let rows = s.processes(d, 10.0).unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].gi, 13);
    let util = s.process_utilization(Dev::Gpu(0), 0, 10.0).unwrap();
    assert_eq!(util.len(), 1);
    assert_eq!(
        s.process_utilization(Dev::Gpu(0), u64::MAX, 10.0),
        Err(ret::NOT_FOUND)
    );
}

/// GPU 0: a busy H100; GPU 1: a busy H100 in MIG mode (one 7g.80gb instance); `faults`
/// appended.
fn busy_pair(faults: &str) -> Sim {
    let text = format!(
        "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = {{ kind = \"training\" }}\n\
         [[gpus]]\nmodel = \"H100-SXM5-80GB\"\n\
         mig = [{{ profile = \"7g.80gb\", workload = {{ kind = \"training\" }} }}]\n{faults}"
    );
    Sim::new(parse(&text, "test", "test").unwrap(), 1, Some(0.0))
}

#[test]
fn thermal_fault_through_sim() {
    use nvml_wrapper_sys::bindings::field_id::NVML_FI_DEV_MEMORY_TEMP;
    let mut base = busy_pair("");
    let mut s = busy_pair(
        "[[faults]]\nat = 60\ngpu = 0\nkind = \"thermal\"\ncelsius = 97\nuntil = 160\n\
         [[faults]]\nat = 60\ngpu = 1\nkind = \"thermal\"\ncelsius = 97\nuntil = 160\n",
    );
    for g in 0..2 {
        let d = Dev::Gpu(g);
        for t in [30.0, 59.0, 160.0, 250.0] {
            assert_eq!(s.temperature(d, 0, t), base.temperature(d, 0, t), "{g} {t}");
            assert_eq!(s.clock_reasons(d, t), base.clock_reasons(d, t), "{g} {t}");
            assert_eq!(s.clock_mhz(d, 0, false, t), base.clock_mhz(d, 0, false, t));
            assert_eq!(
                s.field(d, NVML_FI_DEV_MEMORY_TEMP, t),
                base.field(d, NVML_FI_DEV_MEMORY_TEMP, t)
            );
        }
        for t in [60.0, 100.0, 159.0] {
            assert_eq!(s.temperature(d, 0, t), Ok(97), "{g} {t}");
            let normal_temp = f64::from(base.temperature(d, 0, t).unwrap());
            let hbm = s.field(d, NVML_FI_DEV_MEMORY_TEMP, t).unwrap() as f64;
            let normal_hbm = base.field(d, NVML_FI_DEV_MEMORY_TEMP, t).unwrap() as f64;
            // Same delta (± rounding of both readings).
            assert!(
                ((hbm - normal_hbm) - (97.0 - normal_temp)).abs() <= 2.0,
                "{hbm} {normal_hbm} {normal_temp}"
            );
            let reasons = s.clock_reasons(d, t).unwrap();
            assert_eq!(reasons & 0x60, 0x60, "{reasons:#x}");
            let sm = s.clock_mhz(d, 0, false, t).unwrap();
            let normal_sm = base.clock_mhz(d, 0, false, t).unwrap();
            assert!(
                sm < normal_sm && sm.is_multiple_of(15) && sm >= 345,
                "{sm} {normal_sm}"
            );
            // The graphics clock reads the same; the max clock is untouched.
            assert_eq!(s.clock_mhz(d, 1, false, t), Ok(sm));
            assert_eq!(s.clock_mhz(d, 0, true, t), Ok(1980));
            assert_eq!(s.power_mw(d, t), base.power_mw(d, t));
        }
        // The thermal violation counter grows 1 s per s inside the window only.
        let v = |s: &mut Sim, t: f64| s.violation(d, 1, t).unwrap().1 as f64;
        let (v0, v60, v160, v300) = (
            v(&mut s, 0.0),
            v(&mut s, 60.0),
            v(&mut s, 160.0),
            v(&mut s, 300.0),
        );
        assert_eq!(v0, 0.0);
        assert!(v60 < 1e6, "{v60}");
        assert!((v160 - v60 - 100e9).abs() < 1e6, "{v60} {v160}");
        assert_eq!(v300 - v160, v(&mut base, 300.0) - v(&mut base, 160.0));
        // The power violation counter is not affected.
        assert_eq!(
            s.violation(d, 0, 300.0).map(|v| v.1),
            base.violation(d, 0, 300.0).map(|v| v.1)
        );
    }
    // MIG devices still answer NOT_SUPPORTED for device-wide telemetry.
    let mig = s.mig_handle_by_index(Dev::Gpu(1), 0, 100.0).unwrap();
    assert_eq!(s.temperature(mig, 0, 100.0), Err(ret::NOT_SUPPORTED));
    assert_eq!(s.clock_reasons(mig, 100.0), Err(ret::NOT_SUPPORTED));
}

#[test]
fn power_brake_through_sim() {
    let mut base = busy_pair("");
    let mut s = busy_pair(
        "[[faults]]\nat = 60\ngpu = 0\nkind = \"power_brake\"\nuntil = 160\n\
         [[faults]]\nat = 60\ngpu = 1\nkind = \"power_brake\"\n",
    );
    for g in 0..2 {
        let d = Dev::Gpu(g);
        assert_eq!(s.clock_reasons(d, 59.0), base.clock_reasons(d, 59.0));
        assert_eq!(s.power_mw(d, 59.0), base.power_mw(d, 59.0));
        for t in [60.0, 100.0, 159.0] {
            assert_eq!(s.clock_reasons(d, t), Ok(0x88), "{g} {t}");
            assert_eq!(s.clock_mhz(d, 0, false, t), Ok(345), "{g} {t}");
            let p = s.power_mw(d, t).unwrap();
            let normal = base.power_mw(d, t).unwrap();
            assert!(p < normal / 2 && p > 77_000, "{p} {normal}");
        }
        // Energy grows more slowly while braked.
        let e = |s: &mut Sim, t: f64| s.energy_mj(d, t).unwrap();
        assert!(
            e(&mut s, 160.0) - e(&mut s, 60.0) < (e(&mut base, 160.0) - e(&mut base, 60.0)) / 2
        );
    }
    // GPU 0's window ends at 160; GPU 1's never does.
    assert_eq!(
        s.clock_reasons(Dev::Gpu(0), 160.0),
        base.clock_reasons(Dev::Gpu(0), 160.0)
    );
    assert_eq!(
        s.clock_mhz(Dev::Gpu(0), 0, false, 160.0),
        base.clock_mhz(Dev::Gpu(0), 0, false, 160.0)
    );
    assert_eq!(s.clock_reasons(Dev::Gpu(1), 1000.0), Ok(0x88));
}

mod enumeration;
mod events;
mod nvlink;
