//! Behaviour of the sampler + encoder on the simulated node, asserted property by property
//! (independent of the golden files): the contract's labels, MIG placement of fields,
//! unsupported fields left out, Xid, a lost GPU and its return.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashSet;

use common::{Run, label, series, value};
use gpu_exporter::exposition::EncodeOptions;
use gpu_exporter::gpu::reader::ReaderOptions;

/// The shipped default counters on `scenario` (seed 3), with `Hostname="sim-node"`.
fn run(scenario: &str) -> Run {
    Run::new(
        common::SimNode::new(scenario, 3),
        common::default_counters(),
        common::config(&[]).reader.clone(),
        common::config(&[]).encode_options(),
    )
}

#[test]
fn every_supported_default_field_appears_with_contract_labels() {
    let mut run = run("h100-mig");
    run.at(30.0);
    let text = run.at(35.0);
    let names: Vec<String> = run.counters.metrics().map(|r| r.name.clone()).collect();
    let unsupported_gpu0: HashSet<&str> = series(&text, "gpu_exporter_field_unsupported")
        .into_iter()
        .filter(|l| l.contains("gpu=\"0\""))
        .map(|l| label(l, "field"))
        .collect();
    // An H100 serves every default field, the vGPU licence as 0 outside a vGPU guest (as
    // DCGM reads it: NVML reports no licensing).
    assert!(unsupported_gpu0.is_empty(), "{unsupported_gpu0:?}");
    for l in series(&text, "DCGM_FI_DEV_VGPU_LICENSE_STATUS") {
        assert_eq!(value(l), 0.0, "{l}");
    }
    for name in &names {
        let gpu0: Vec<_> = series(&text, name)
            .into_iter()
            .filter(|l| l.contains("{gpu=\"0\","))
            .collect();
        assert_eq!(gpu0.len(), 1, "{name} on GPU 0: {gpu0:?}");
        // The lean shape: the identity and the node, nothing else (the full shape's order is
        // tests/golden/h100-mig.pods.full.prom's).
        let uuid = label(gpu0[0], "UUID");
        assert!(
            gpu0[0].starts_with(&format!(
                "{name}{{gpu=\"0\",UUID=\"{uuid}\",Hostname=\"sim-node\""
            )) && !gpu0[0].contains("modelName="),
            "label order: {}",
            gpu0[0]
        );
    }
    // The descriptions, in the contract's order, on the GPU's info series.
    let info: Vec<&str> = series(&text, "gpu_device_info")
        .into_iter()
        .filter(|l| l.contains("{gpu=\"0\","))
        .collect();
    assert_eq!(info.len(), 1, "{info:?}");
    assert!(
        info[0].contains(",device=\"nvidia0\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"sim-node\",DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 1"),
        "{}",
        info[0]
    );
    // One HELP and one TYPE per family.
    let types: Vec<&str> = text.lines().filter(|l| l.starts_with("# TYPE ")).collect();
    let unique: HashSet<&&str> = types.iter().collect();
    assert_eq!(types.len(), unique.len());
}

#[test]
fn mig_instances_carry_instance_fields_and_parents_keep_device_fields() {
    let mut run = run("h100-mig");
    run.at(30.0);
    let text = run.at(35.0);
    // GPU 2: seven 1g.10gb instances with their framebuffer and profiling values.
    let fb: Vec<_> = series(&text, "DCGM_FI_DEV_FB_USED")
        .into_iter()
        .filter(|l| l.contains("{gpu=\"2\","))
        .collect();
    assert_eq!(fb.len(), 7, "{fb:?}");
    for l in &fb {
        assert!(l.contains("GPU_I_PROFILE=\"1g.10gb\",GPU_I_ID=\""), "{l}");
        assert!(l.contains(",mig_uuid=\"MIG-"), "{l}");
    }
    let gi: HashSet<&str> = fb.iter().map(|l| label(l, "GPU_I_ID")).collect();
    assert_eq!(gi.len(), 7, "distinct GPU instance ids");
    let prof: Vec<_> = series(&text, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
        .into_iter()
        .filter(|l| l.contains("{gpu=\"5\","))
        .collect();
    let profiles: HashSet<&str> = prof.iter().map(|l| label(l, "GPU_I_PROFILE")).collect();
    assert_eq!(profiles, HashSet::from(["3g.40gb", "2g.20gb", "1g.10gb"]));
    for l in &prof {
        let v = value(l);
        assert!((0.0..=1.0).contains(&v), "ratio in [0,1]: {l}");
    }
    // Device-level fields once per physical GPU, never repeated on instances.
    for name in [
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_SM_CLOCK",
    ] {
        let s = series(&text, name);
        assert_eq!(s.len(), 8, "{name}: one per GPU");
        assert!(
            s.iter().all(|l| !l.contains("GPU_I_ID")),
            "{name} repeated on an instance"
        );
    }
    // Instance-level fields are not read on a MIG-enabled parent (no double counting).
    assert!(
        series(&text, "DCGM_FI_DEV_FB_USED")
            .iter()
            .all(|l| !l.contains("{gpu=\"2\",") || l.contains("GPU_I_ID"))
    );
}

#[test]
fn unsupported_fields_are_left_out_not_zero() {
    let mut run = run("a100-l4");
    run.at(30.0);
    let text = run.at(35.0);
    // The L4 (GPU 1) has GDDR memory without a temperature sensor, and no GPM.
    assert!(
        series(&text, "DCGM_FI_DEV_MEMORY_TEMP")
            .iter()
            .all(|l| !l.contains("{gpu=\"1\","))
    );
    assert!(
        text.contains(
            "gpu_exporter_field_unsupported{gpu=\"1\",field=\"DCGM_FI_DEV_MEMORY_TEMP\"} 1"
        )
    );
    for name in [
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    ] {
        assert!(
            series(&text, name).is_empty(),
            "{name} must be absent without GPM"
        );
        assert!(text.contains(&format!(
            "gpu_exporter_field_unsupported{{gpu=\"0\",field=\"{name}\"}} 1"
        )));
    }
    assert_eq!(
        series(&text, "DCGM_FI_DEV_MEMORY_TEMP").len(),
        1,
        "the A100 still reports it"
    );
}

#[test]
fn xid_last_value_with_code_and_message() {
    let mut run = run("h100-mig");
    let before = run.at(30.0);
    let l = series(&before, "DCGM_FI_DEV_XID_ERRORS")
        .into_iter()
        .find(|l| l.contains("{gpu=\"1\","))
        .unwrap();
    assert!(l.ends_with("err_code=\"0\",err_msg=\"No Error\"} 0"), "{l}");
    let after = run.at(45.0);
    let l = series(&after, "DCGM_FI_DEV_XID_ERRORS")
        .into_iter()
        .find(|l| l.contains("{gpu=\"1\","))
        .unwrap();
    assert!(
        l.ends_with("err_code=\"31\",err_msg=\"GPU memory page fault\"} 31"),
        "{l}"
    );
}

#[test]
fn lost_gpu_drops_its_series_and_comes_back() {
    let mut run = run("h100-mig");
    let up = run.at(110.0);
    assert!(up.contains("gpu_device_up{gpu=\"7\","));
    assert!(
        series(&up, "gpu_device_up")
            .iter()
            .all(|l| l.ends_with(" 1"))
    );
    let lost = run.at(130.0);
    let l = series(&lost, "gpu_device_up")
        .into_iter()
        .find(|l| l.contains("{gpu=\"7\","))
        .unwrap();
    assert!(l.ends_with(" 0"), "{l}");
    assert!(
        l.contains("UUID=\"GPU-"),
        "identity kept from before the loss: {l}"
    );
    assert!(
        !lost
            .lines()
            .any(|l| l.starts_with("DCGM_") && l.contains("{gpu=\"7\",")),
        "no series for the lost GPU"
    );
    // Every other GPU keeps flowing.
    assert_eq!(series(&lost, "DCGM_FI_DEV_GPU_TEMP").len(), 7);
    let back = run.at(190.0);
    assert!(
        series(&back, "gpu_device_up")
            .iter()
            .all(|l| l.ends_with(" 1"))
    );
    assert_eq!(series(&back, "DCGM_FI_DEV_GPU_TEMP").len(), 8);
}

#[test]
fn a_field_that_becomes_unsupported_is_dropped_once() {
    let mut run = run("h100-mig");
    let t = run.at(80.0);
    assert!(
        series(&t, "DCGM_FI_DEV_POWER_USAGE")
            .iter()
            .any(|l| l.contains("{gpu=\"6\","))
    );
    let t = run.at(95.0);
    assert!(
        !series(&t, "DCGM_FI_DEV_POWER_USAGE")
            .iter()
            .any(|l| l.contains("{gpu=\"6\","))
    );
    assert!(
        t.contains("gpu_exporter_field_unsupported{gpu=\"6\",field=\"DCGM_FI_DEV_POWER_USAGE\"} 1")
    );
    assert_eq!(series(&t, "DCGM_FI_DEV_POWER_USAGE").len(), 7);
}

#[test]
fn values_move_over_time_and_energy_only_grows() {
    let mut run = run("h100-mig");
    let energy = |t: &str| -> Vec<f64> {
        series(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
            .iter()
            .map(|l| value(l))
            .collect()
    };
    let a = run.at(10.0);
    let b = run.at(70.0);
    for (x, y) in energy(&a).iter().zip(energy(&b)) {
        assert!(y > *x, "energy must increase: {x} -> {y}");
    }
    let util = |t: &str| -> Vec<f64> {
        series(t, "DCGM_FI_DEV_POWER_USAGE")
            .iter()
            .map(|l| value(l))
            .collect()
    };
    assert_ne!(util(&a), util(&b), "power should move over a minute");
}

#[test]
fn dcgm_format_csv_with_legacy_names_exports_them_verbatim() {
    let node = common::SimNode::new("a100-l4", 3);
    let counters = common::counters_from("tests/fixtures/csv/dcgm-format.csv");
    let mut sampler = node.sampler(counters.clone());
    node.set_time(30.0);
    sampler.tick(30.0);
    node.set_time(35.0);
    let snap = sampler.tick(35.0);
    let opts = common::config(&[]).encode_options();
    let text = common::page(&snap, &counters, &opts);
    // Legacy 1.x names are emitted under the CSV's own spelling, with the quoted help intact.
    assert!(text.contains(
        "# HELP dcgm_sm_clock SM clock, legacy name (in MHz).\n# TYPE dcgm_sm_clock gauge\n"
    ));
    assert_eq!(series(&text, "dcgm_sm_clock").len(), 2);
    assert_eq!(series(&text, "dcgm_fb_used").len(), 2);
    assert!(
        text.contains("# HELP DCGM_FI_DEV_GPU_UTIL GPU busy, \"kernel running\" share, in %\n")
    );
    // Both label rows, sorted by name, on the GPU's info series (the lean shape).
    assert!(!series(&text, "dcgm_sm_clock")[0].contains("DCGM_FI_DRIVER_VERSION"));
    let l = series(&text, "gpu_device_info")[0];
    assert!(
        l.contains(",DCGM_FI_DEV_SERIAL=\"")
            && l.contains(",DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 1"),
        "{l}"
    );
    assert!(l.find("DCGM_FI_DEV_SERIAL").unwrap() < l.find("DCGM_FI_DRIVER_VERSION").unwrap());
}

#[test]
fn missing_nvml_serves_self_metrics_and_says_where_it_looked() {
    let missing = std::path::Path::new("/nonexistent/libnvidia-ml.so.1");
    let err = gpu_exporter::gpu::load(Some(missing)).unwrap_err();
    let msg = gpu_exporter::gpu::describe_load_error(Some(missing), &err);
    assert!(msg.contains("/nonexistent/libnvidia-ml.so.1"), "{msg}");
    let counters = common::default_counters();
    let mut sampler = gpu_exporter::sampler::Sampler::new(
        Box::new(move || gpu_exporter::gpu::open(Some(missing))),
        counters.clone(),
    );
    let snap = sampler.tick(1.0);
    assert!(!snap.stats.nvml_up);
    let text = common::page(&snap, &counters, &EncodeOptions::default());
    assert!(text.contains("gpu_exporter_nvml_up 0\n"));
    assert!(text.contains("gpu_exporter_build_info{"));
    assert!(!text.contains("DCGM_FI_"));
}

/// The first encoded tick already has the Xid fields at 0 on every GPU (the daemon's
/// settings: no per-tick wait for the Xid thread). Users alert on that 0; dcgm-exporter 4.8
/// dropping it was its #700 and #646.
#[test]
fn xid_fields_are_zero_from_the_first_tick() {
    let node = common::SimNode::new("h100-mig", 1);
    let counters = common::default_counters();
    let path = node.lib_path().to_path_buf();
    // The zero series for critical codes are opt-in (the series budget): asked for here.
    let options = common::config(&["--xid-initialized-codes", "48,62,64,74,79,95,119,120"])
        .reader
        .clone();
    assert!(!options.xid_sync, "the daemon's default");
    let mut sampler = gpu_exporter::sampler::Sampler::with_options(
        Box::new(move || gpu_exporter::gpu::open(Some(&path))),
        counters.clone(),
        options,
    );
    let snap = sampler.tick(1.0);
    let gpus = snap.devices.len();
    assert!(gpus > 0);
    let text = common::page(&snap, &counters, &EncodeOptions::default());
    let last = common::series(&text, "DCGM_FI_DEV_XID_ERRORS");
    assert_eq!(last.len(), gpus, "one last-Xid series per GPU:\n{text}");
    assert!(last.iter().all(|l| common::value(l) == 0.0), "{last:?}");
    let totals = common::series(&text, "gpu_xid_errors_total");
    assert!(
        totals.iter().any(|l| l.contains("xid=\"79\"")),
        "initialised Xid totals on the first tick:\n{text}"
    );
    assert!(totals.iter().all(|l| common::value(l) == 0.0), "{totals:?}");
}

/// The exposition of one tick on `h100-mig` with the counters `csv` (named `file`).
fn first_tick_with(file: &str, csv: &str) -> String {
    let counters = std::sync::Arc::new(
        gpu_exporter::catalogue::csv::parse_counters(file, csv).unwrap_or_else(|e| panic!("{e}")),
    );
    Run::new(
        common::SimNode::new("h100-mig", 1),
        counters,
        ReaderOptions::default(),
        EncodeOptions::default(),
    )
    .at(1.0)
}

/// A counters file written with DCGM 4.6 names (dcgm-exporter 4.9's) loads: each metric is
/// served under the name the file uses, with the value of the field that id carries, and
/// `DCGM_FI_SYSTEM_DRIVER_VERSION` is the driver label.
#[test]
fn dcgm_4_6_field_names_load_and_keep_the_written_name() {
    let csv = "DCGM_FI_DEV_GPU_TEMP_CELSIUS, gauge, t\n\
               DCGM_FI_DEV_GPU_TEMP, gauge, t\n\
               DCGM_FI_DEV_BOARD_POWER_WATTS, gauge, p\n\
               DCGM_FI_PROF_TENSOR_UTIL_RATIO, gauge, r\n\
               DCGM_FI_SYSTEM_DRIVER_VERSION, label, d\n";
    let text = first_tick_with("dcgm-4.9.csv", csv);
    let new = series(&text, "DCGM_FI_DEV_GPU_TEMP_CELSIUS");
    let old = series(&text, "DCGM_FI_DEV_GPU_TEMP");
    assert!(!new.is_empty(), "{text}");
    assert_eq!(new.len(), old.len());
    for (n, o) in new.iter().zip(&old) {
        assert_eq!(value(n), value(o), "same field, same value");
    }
    // The driver label describes the GPU: on its info series (the lean shape).
    let info = series(&text, "gpu_device_info");
    assert!(!info.is_empty(), "{text}");
    for l in info {
        assert!(
            label(l, "DCGM_FI_SYSTEM_DRIVER_VERSION").starts_with(char::is_numeric),
            "{l}"
        );
    }
    assert!(!series(&text, "DCGM_FI_DEV_BOARD_POWER_WATTS").is_empty());
}

/// DCGM 4.6's base-unit fields (and DCGM 4.7's, as dcgm-exporter 4.9 names them) read the
/// same NVML value as their legacy twins, converted: MHz → Hz, mJ → J, % → ratio, MiB → B.
#[test]
fn base_unit_fields_are_their_legacy_twins_in_base_units() {
    let csv = "DCGM_FI_DEV_SM_CLOCK, gauge, c\n\
               DCGM_FI_DEV_SM_CLOCK_HERTZ, gauge, c\n\
               DCGM_FI_DEV_MEM_CLOCK, gauge, m\n\
               DCGM_FI_DEV_MEMORY_CLOCK_HERTZ, gauge, m\n\
               DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, e\n\
               DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL, counter, e\n\
               DCGM_FI_DEV_GPU_UTIL, gauge, u\n\
               DCGM_FI_DEV_GPU_UTIL_RATIO, gauge, u\n\
               DCGM_FI_DEV_FB_USED, gauge, f\n\
               DCGM_FI_DEV_FB_USED_BYTES, gauge, f\n\
               DCGM_FI_DEV_FB_TOTAL, gauge, f\n\
               DCGM_FI_DEV_FB_CAPACITY_BYTES, gauge, f\n\
               DCGM_FI_DEV_POWER_VIOLATION, counter, v\n\
               DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS, counter, v\n\
               DCGM_FI_DEV_SM_MAX_CLOCK_HERTZ, gauge, x\n\
               DCGM_FI_DEV_BAR1_CAPACITY_BYTES, gauge, b\n\
               DCGM_FI_DEV_BAR1_USED_BYTES, gauge, b\n\
               DCGM_FI_DEV_FB_RESERVED, gauge, r\n\
               DCGM_FI_DEV_FB_USED_RATIO, gauge, r\n\
               DCGM_FI_DEV_APP_SM_CLOCK, gauge, a\n\
               DCGM_FI_DEV_SM_APP_CLOCK_HERTZ, gauge, a\n\
               DCGM_FI_DEV_MAX_SM_CLOCK, gauge, m\n\
               DCGM_FI_DEV_BAR1_TOTAL, gauge, b\n\
               DCGM_FI_DEV_MEM_COPY_UTIL, gauge, u\n\
               DCGM_FI_DEV_MEMORY_UTIL_RATIO, gauge, u\n\
               DCGM_FI_DEV_GPU_POWER_THROTTLE_SECONDS_TOTAL, counter, v\n";
    let text = first_tick_with("base.csv", csv);
    // (legacy, base, factor, relative tolerance): the energy counter is read twice and
    // advances between the two reads.
    for (legacy, base, factor, tolerance) in [
        (
            "DCGM_FI_DEV_SM_CLOCK",
            "DCGM_FI_DEV_SM_CLOCK_HERTZ",
            1e6,
            1e-12,
        ),
        (
            "DCGM_FI_DEV_MEM_CLOCK",
            "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ",
            1e6,
            1e-12,
        ),
        (
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL",
            1e-3,
            1e-6,
        ),
        (
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_DEV_GPU_UTIL_RATIO",
            0.01,
            1e-12,
        ),
        (
            "DCGM_FI_DEV_FB_USED",
            "DCGM_FI_DEV_FB_USED_BYTES",
            1_048_576.0,
            1e-12,
        ),
        (
            "DCGM_FI_DEV_FB_TOTAL",
            "DCGM_FI_DEV_FB_CAPACITY_BYTES",
            1_048_576.0,
            1e-12,
        ),
        (
            "DCGM_FI_DEV_APP_SM_CLOCK",
            "DCGM_FI_DEV_SM_APP_CLOCK_HERTZ",
            1e6,
            1e-12,
        ),
        (
            "DCGM_FI_DEV_MEM_COPY_UTIL",
            "DCGM_FI_DEV_MEMORY_UTIL_RATIO",
            0.01,
            1e-12,
        ),
        (
            "DCGM_FI_DEV_POWER_VIOLATION",
            "DCGM_FI_DEV_GPU_POWER_THROTTLE_SECONDS_TOTAL",
            1e-9,
            1e-12,
        ),
        (
            "DCGM_FI_DEV_MAX_SM_CLOCK",
            "DCGM_FI_DEV_SM_MAX_CLOCK_HERTZ",
            1e6,
            1e-12,
        ),
        (
            "DCGM_FI_DEV_BAR1_TOTAL",
            "DCGM_FI_DEV_BAR1_CAPACITY_BYTES",
            1_048_576.0,
            1e-12,
        ),
    ] {
        let l = series(&text, legacy);
        let b = series(&text, base);
        assert!(!l.is_empty(), "{legacy}:\n{text}");
        assert_eq!(l.len(), b.len(), "{base}");
        assert!(
            l.iter().any(|l| value(l) > 0.0),
            "{legacy} all zero:\n{text}"
        );
        for (l, b) in l.iter().zip(&b) {
            let want = value(l) * factor;
            assert!(
                (value(b) - want).abs() <= want.abs() * tolerance,
                "{base}: {} vs {legacy} × {factor} = {want}",
                value(b)
            );
        }
    }
    // The clock-event time under the power cap is the power violation time, from the first
    // tick on every GPU.
    let cap = series(&text, "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS");
    let viol = series(&text, "DCGM_FI_DEV_POWER_VIOLATION");
    assert!(!cap.is_empty(), "{text}");
    assert_eq!(cap.len(), viol.len());
    // DCGM's framebuffer ratio: used / (total - reserved).
    let ratio = series(&text, "DCGM_FI_DEV_FB_USED_RATIO");
    let (used, total, reserved) = (
        series(&text, "DCGM_FI_DEV_FB_USED"),
        series(&text, "DCGM_FI_DEV_FB_TOTAL"),
        series(&text, "DCGM_FI_DEV_FB_RESERVED"),
    );
    assert_eq!(ratio.len(), used.len(), "{text}");
    for (((r, u), t), res) in ratio.iter().zip(&used).zip(&total).zip(&reserved) {
        let want = value(u) / (value(t) - value(res));
        assert!(
            (value(r) - want).abs() < 1e-9 && value(r) <= 1.0,
            "{r} vs {want}"
        );
    }
    // Maximum clocks bound the current ones; BAR1 in bytes.
    let max = series(&text, "DCGM_FI_DEV_SM_MAX_CLOCK_HERTZ");
    let cur = series(&text, "DCGM_FI_DEV_SM_CLOCK_HERTZ");
    assert_eq!(max.len(), cur.len(), "{text}");
    for (m, c) in max.iter().zip(&cur) {
        assert!(value(m) >= value(c) && value(m) > 1e8, "{m} vs {c}");
    }
    let cap = series(&text, "DCGM_FI_DEV_BAR1_CAPACITY_BYTES");
    let used = series(&text, "DCGM_FI_DEV_BAR1_USED_BYTES");
    assert_eq!(cap.len(), used.len(), "{text}");
    for (c, u) in cap.iter().zip(&used) {
        assert!(value(c) >= value(u) && value(c) > 1e6, "{c} vs {u}");
    }
}

/// `--config-file` collections: a field of a 30 s collection is read when its interval has
/// passed and keeps its reading in between, while the other fields are read every tick.
#[test]
fn collection_fields_are_read_at_their_own_interval() {
    use gpu_exporter::gpu::collections::{Collection, Collections};
    use std::time::Duration;
    let csv =
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, e\nDCGM_FI_DEV_POWER_USAGE, gauge, p\n";
    let counters =
        std::sync::Arc::new(gpu_exporter::catalogue::csv::parse_counters("c.csv", csv).unwrap());
    let slow = Collections {
        base: Duration::from_secs(10),
        groups: vec![Collection::new(
            "slow-energy",
            Duration::from_secs(30),
            vec![glob::Pattern::new("DCGM_FI_DEV_TOTAL_ENERGY_*").unwrap()],
        )],
    };
    let run = |collections: Collections| {
        let mut r = Run::new(
            common::SimNode::new("h100-mig", 1),
            counters.clone(),
            ReaderOptions {
                collections: std::sync::Arc::new(collections),
                ..common::config(&[]).reader.clone()
            },
            EncodeOptions::default(),
        );
        [10.0, 20.0, 30.0, 40.0].map(|t| r.at(t))
    };
    let first = |text: &str, name: &str| value(series(text, name)[0]);
    let every = run(Collections::default());
    let held = run(slow);
    // Without collections the energy counter changes between ticks (else the test proves
    // nothing).
    assert_ne!(
        first(&every[0], "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"),
        first(&every[1], "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
    );
    // Held at 20 s and 30 s (less than 30 s after the 10 s reading), read again at 40 s.
    let e: Vec<f64> = held
        .iter()
        .map(|t| first(t, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"))
        .collect();
    assert_eq!(e[0], e[1]);
    assert_eq!(e[0], e[2]);
    assert_eq!(
        e[3],
        first(&every[3], "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
    );
    assert_ne!(e[3], e[0]);
    // A field outside the collection is read every tick.
    for (h, e) in held.iter().zip(&every) {
        assert_eq!(
            first(h, "DCGM_FI_DEV_POWER_USAGE"),
            first(e, "DCGM_FI_DEV_POWER_USAGE")
        );
    }
}

/// dcgm-exporter 4.10 fixed its Xid counters for a counters file that also has the Xid field as
/// a `label` row. Here the counters never depended on that row: under every profile, with
/// `DCGM_FI_DEV_XID_ERRORS` typed `label` (a number typed label: a load warning, and it labels
/// nothing), `DCGM_EXP_XID_ERRORS_TOTAL` counts each Xid and the window counts it too.
#[test]
fn xid_counters_count_when_the_xid_field_is_also_a_label() {
    use gpu_exporter::catalogue::profile::Profile;
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("xid.toml");
    std::fs::write(
        &scenario,
        "name = \"xid\"\nnode = \"n\"\n\
         [[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\", level = 0.5 }\n\
         [[faults]]\nat = 20\ngpu = 0\nkind = \"xid\"\nxid = 13\nrepeat = 3\nevery = 1\n",
    )
    .unwrap();
    let csv = "DCGM_FI_DEV_GPU_TEMP, gauge, t\n\
               DCGM_FI_DEV_XID_ERRORS, label, x\n\
               DCGM_EXP_XID_ERRORS_TOTAL, counter, n\n\
               DCGM_EXP_XID_ERRORS_COUNT, gauge, w\n";
    for profile in Profile::ALL {
        let counters = std::sync::Arc::new(
            gpu_exporter::catalogue::csv::parse_counters("xid.csv", csv).unwrap(),
        );
        assert!(
            counters
                .warnings
                .iter()
                .any(|w| w.contains("xid.csv:2:") && w.contains("a number typed label")),
            "{:?}",
            counters.warnings
        );
        let cfg = common::config(&["--compatibility", profile.name()]);
        let mut run = Run::new(
            common::SimNode::new(scenario.to_str().unwrap(), 1),
            counters,
            cfg.reader.clone(),
            cfg.encode_options(),
        );
        run.at(10.0);
        let before = run.at(15.0);
        assert!(
            series(&before, "DCGM_EXP_XID_ERRORS_TOTAL")
                .iter()
                .all(|l| !l.contains("xid=\"13\"")),
            "{}: {before}",
            profile.name()
        );
        run.at(25.0);
        let text = run.at(30.0);
        let what = profile.name();
        let total: Vec<&str> = series(&text, "DCGM_EXP_XID_ERRORS_TOTAL")
            .into_iter()
            .filter(|l| l.contains("xid=\"13\""))
            .collect();
        assert_eq!(total.len(), 1, "{what}: {text}");
        assert_eq!(value(total[0]), 3.0, "{what}: {text}");
        let window: Vec<&str> = series(&text, "DCGM_EXP_XID_ERRORS_COUNT")
            .into_iter()
            .filter(|l| l.contains("xid=\"13\""))
            .collect();
        assert_eq!(window.len(), 1, "{what}: {text}");
        assert_eq!(value(window[0]), 3.0, "{what}: {text}");
        // The other families keep their series; the label row adds no label.
        assert!(!series(&text, "DCGM_FI_DEV_GPU_TEMP").is_empty(), "{what}");
        assert!(
            !text.contains("DCGM_FI_DEV_XID_ERRORS=\""),
            "{what}: {text}"
        );
    }
}

/// `# TYPE` per profile, for a file that types a rate and a window count `counter` (as
/// dcgm-exporter's own files do): dcgm-exporter 4.8.3+ types
/// `DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL` gauge whatever the file says (its #658) and the
/// `DCGM_EXP_*_COUNT` windows gauge; 4.8.2 wrote every type as the file says; `native` keeps
/// the file's type except for the windows.
#[test]
fn types_are_written_per_profile() {
    use gpu_exporter::catalogue::profile::Profile;
    let csv = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, counter, n\n\
               DCGM_EXP_XID_ERRORS_COUNT, counter, x\n\
               DCGM_FI_DEV_GPU_TEMP, gauge, t\n";
    // (profile, NVLink bandwidth, Xid window)
    for (profile, nvlink, window) in [
        (Profile::Native, "counter", "gauge"),
        (Profile::Dcgm482, "counter", "counter"),
        (Profile::Dcgm484, "gauge", "gauge"),
        (Profile::Dcgm49, "gauge", "gauge"),
        (Profile::Dcgm410, "gauge", "gauge"),
    ] {
        let counters = std::sync::Arc::new(
            gpu_exporter::catalogue::csv::parse_counters("n.csv", csv).unwrap(),
        );
        let cfg = common::config(&["--compatibility", profile.name()]);
        let mut run = Run::new(
            common::SimNode::new("h100-mig", 1),
            counters,
            cfg.reader.clone(),
            cfg.encode_options(),
        );
        run.at(10.0);
        let text = run.at(15.0);
        for want in [
            format!("# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL {nvlink}\n"),
            format!("# TYPE DCGM_EXP_XID_ERRORS_COUNT {window}\n"),
            "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n".to_owned(),
        ] {
            assert!(text.contains(&want), "{}: {want}{text}", profile.name());
        }
    }
}

/// DCGM 4.7's `DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND` is the legacy NVLink
/// bandwidth (MiB/s here) in bytes per second.
#[test]
fn nvlink_bytes_per_second_is_the_bandwidth_in_base_units() {
    let csv = "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, gauge, n\n\
               DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND, gauge, b\n";
    let counters =
        std::sync::Arc::new(gpu_exporter::catalogue::csv::parse_counters("n.csv", csv).unwrap());
    let mut run = Run::new(
        common::SimNode::new("h100-mig", 1),
        counters,
        ReaderOptions::default(),
        EncodeOptions::default(),
    );
    run.at(10.0);
    let text = run.at(15.0);
    let mib = series(&text, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL");
    let bytes = series(&text, "DCGM_FI_DEV_NVLINK_THROUGHPUT_BYTES_PER_SECOND");
    assert!(!mib.is_empty() && mib.len() == bytes.len(), "{text}");
    assert!(mib.iter().any(|l| value(l) > 0.0), "{text}");
    for (m, b) in mib.iter().zip(&bytes) {
        let want = value(m) * 1_048_576.0;
        assert!((value(b) - want).abs() <= want * 1e-9, "{b} vs {m}");
    }
}

/// The temperature thresholds and the requested power limit (DCGM ids 151-160), under their
/// legacy names and DCGM 4.6's: the model's limits, on every GPU, equal under both names.
#[test]
fn temperature_thresholds_and_power_management_limit() {
    let csv = "DCGM_FI_DEV_SLOWDOWN_TEMP, gauge, s\n\
               DCGM_FI_DEV_SHUTDOWN_TEMP, gauge, s\n\
               DCGM_FI_DEV_GPU_MAX_OP_TEMP, gauge, g\n\
               DCGM_FI_DEV_MEM_MAX_OP_TEMP, gauge, m\n\
               DCGM_FI_DEV_POWER_MGMT_LIMIT, gauge, p\n\
               DCGM_FI_DEV_ENFORCED_POWER_LIMIT, gauge, e\n\
               DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS, gauge, s\n\
               DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS, gauge, p\n";
    let text = first_tick_with("thresholds.csv", csv);
    let slowdown = series(&text, "DCGM_FI_DEV_SLOWDOWN_TEMP");
    let gpus = series(&text, "DCGM_FI_DEV_ENFORCED_POWER_LIMIT").len();
    assert!(gpus > 0, "{text}");
    for (name, want) in [
        // H100-SXM5-80GB's preset in the simulator: slowdown 87 °C, shutdown 5 above it,
        // GPU max 2 below it, HBM max 95 °C, 700 W.
        ("DCGM_FI_DEV_SLOWDOWN_TEMP", 87.0),
        ("DCGM_FI_DEV_SHUTDOWN_TEMP", 92.0),
        ("DCGM_FI_DEV_GPU_MAX_OP_TEMP", 85.0),
        ("DCGM_FI_DEV_MEM_MAX_OP_TEMP", 95.0),
        ("DCGM_FI_DEV_POWER_MGMT_LIMIT", 700.0),
        ("DCGM_FI_DEV_GPU_TEMP_SLOWDOWN_CELSIUS", 87.0),
        ("DCGM_FI_DEV_BOARD_POWER_LIMIT_REQUESTED_WATTS", 700.0),
    ] {
        let s = series(&text, name);
        assert_eq!(s.len(), gpus, "{name} on every GPU:\n{text}");
        assert!(s.iter().all(|l| value(l) == want), "{name}: {s:?}");
    }
    assert_eq!(slowdown.len(), gpus);
}

/// Event-like fields whose absence would hide a state are there, at 0 or their value, in the
/// FIRST encoded tick (the daemon's settings: no wait for the Xid thread), on every GPU of
/// the 8 × H100 node (every one supports them): the ECC and NVLink error totals, the five
/// clock-event reason times, the Xid window count and the Xid totals. dcgm-exporter 4.5.3-4.8.2 left such
/// series out until they had a value (its #700, #646) and alerts on the 0 stopped working.
#[test]
fn error_counts_reason_times_and_xid_window_are_there_from_the_first_tick() {
    const FAMILIES: [&str; 15] = [
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
        "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_POWER_CAP_NS",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SYNC_BOOST_NS",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_SW_THERM_SLOWDOWN_NS",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_THERM_SLOWDOWN_NS",
        "DCGM_FI_DEV_CLOCKS_EVENT_REASON_HW_POWER_BRAKE_SLOWDOWN_NS",
        "DCGM_EXP_XID_ERRORS_COUNT",
        "DCGM_EXP_XID_ERRORS_TOTAL",
    ];
    let csv: String = FAMILIES
        .iter()
        .map(|f| {
            let kind = if f.ends_with("_COUNT") {
                "gauge"
            } else {
                "counter"
            };
            format!("{f}, {kind}, first tick\n")
        })
        .collect();
    let counters = std::sync::Arc::new(
        gpu_exporter::catalogue::csv::parse_counters("first.csv", &csv).unwrap(),
    );
    for (profile, repeated) in [("native", false), ("dcgm-4.8.2", true)] {
        let node = common::SimNode::new("h100-mig", 1);
        let path = node.lib_path().to_path_buf();
        // The Xid window's zero series come with the initialised codes, opt-in since the
        // series budget.
        let codes = ["--xid-initialized-codes", "48,62,64,74,79,95,119,120"];
        let flags: &[&str] = if repeated {
            &["--mig-repeat-device-fields", codes[0], codes[1]]
        } else {
            &codes
        };
        let options = common::config(flags).reader.clone();
        assert!(!options.xid_sync, "the daemon's default");
        let mut sampler = gpu_exporter::sampler::Sampler::with_options(
            Box::new(move || gpu_exporter::gpu::open(Some(&path))),
            counters.clone(),
            options,
        );
        node.set_time(1.0);
        let snap = sampler.tick(1.0);
        let text = common::page(&snap, &counters, &EncodeOptions::default());
        for family in FAMILIES {
            let lines = series(&text, family);
            let gpus: HashSet<&str> = lines.iter().map(|l| label(l, "gpu")).collect();
            assert_eq!(
                gpus.len(),
                8,
                "{profile}: {family} on every GPU in the first tick:\n{}",
                lines.join("\n")
            );
            // Error totals start at 0 on this node; the reason times are the GPU's own.
            if !family.ends_with("_NS") {
                assert!(
                    lines.iter().all(|l| value(l) == 0.0),
                    "{profile}: {family}: {lines:?}"
                );
            }
        }
        // The window count with no Xid yet: one series per GPU, 0, with no `xid` label.
        for l in series(&text, "DCGM_EXP_XID_ERRORS_COUNT") {
            assert_eq!(common::label_opt(l, "xid"), None, "{l}");
        }
    }
}

/// Inside a vGPU guest the licence state is the vGPU feature's: 1 licensed, 0 not.
#[test]
fn a_vgpu_guest_reports_each_gpus_licence() {
    let mut run = run(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/scenarios/vgpu-guest.toml"
    ));
    run.at(5.0);
    let text = run.at(10.0);
    let by_gpu: Vec<(&str, f64)> = series(&text, "DCGM_FI_DEV_VGPU_LICENSE_STATUS")
        .into_iter()
        .map(|l| (label(l, "gpu"), value(l)))
        .collect();
    assert_eq!(by_gpu, [("0", 1.0), ("1", 0.0)], "{text}");
    assert!(
        !series(&text, "gpu_exporter_field_unsupported")
            .iter()
            .any(|l| l.contains("VGPU")),
        "{text}"
    );
}

/// `DCGM_FI_DEV_MINOR_NUMBER` is the N of `/dev/nvidiaN`, which need not be the index.
#[test]
fn the_minor_number_is_the_device_nodes_not_the_index() {
    let counters = std::sync::Arc::new(
        gpu_exporter::catalogue::csv::parse_counters(
            "minor.csv",
            "DCGM_FI_DEV_MINOR_NUMBER, gauge, m\n",
        )
        .unwrap_or_else(|e| panic!("{e}")),
    );
    let text = Run::new(
        common::SimNode::new(
            concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/fixtures/scenarios/vgpu-guest.toml"
            ),
            1,
        ),
        counters,
        ReaderOptions::default(),
        EncodeOptions::default(),
    )
    .at(1.0);
    let by_gpu: Vec<(&str, f64)> = series(&text, "DCGM_FI_DEV_MINOR_NUMBER")
        .into_iter()
        .map(|l| (label(l, "gpu"), value(l)))
        .collect();
    assert_eq!(by_gpu, [("0", 3.0), ("1", 1.0)], "{text}");
}
