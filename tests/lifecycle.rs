//! The NVML side through a node's life, driven by `tests/fixtures/scenarios/lifecycle.toml`:
//! a driver that loads late, a burst of repeated Xids, the Xid and clock-event windows, a MIG
//! layout change mid-run, a GPU lost and back, a GPU that appears later, a GPU without GPM,
//! and the NVML library itself arriving after start.
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{Run, label, series, value};
use gpu_exporter::catalogue::csv::{CounterSet, parse_counters};
use gpu_exporter::exposition::EncodeOptions;
use gpu_exporter::gpu::reader::{CLOCK_EVENT_REASONS, ReaderOptions};
use gpu_exporter::sampler::Sampler;

fn scenario() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/scenarios/lifecycle.toml")
        .display()
        .to_string()
}

/// The default counters plus the two window rows, SM activity and the clock-event bitmask.
fn counters() -> Arc<CounterSet> {
    let mut text = gpu_exporter::config::BUILTIN_DEFAULT_COUNTERS.to_owned();
    text.push_str(
        "DCGM_EXP_XID_ERRORS_COUNT, gauge, Xid errors in the window.\n\
         DCGM_EXP_CLOCK_EVENTS_COUNT, gauge, Clock events in the window.\n\
         DCGM_FI_PROF_SM_ACTIVE, gauge, SM active.\n\
         DCGM_FI_DEV_CLOCKS_EVENT_REASONS, gauge, Clock-event reasons bitmask.\n",
    );
    Arc::new(parse_counters("lifecycle counters", &text).unwrap())
}

/// The Xid codes dcgm-exporter-style alerts watch, initialised at 0 where a test asks.
const CRITICAL_CODES: &[u64] = &[48, 62, 64, 74, 79, 95, 119, 120];

fn run(options: ReaderOptions) -> Run {
    Run::new(
        common::SimNode::new(&scenario(), 5),
        counters(),
        options,
        EncodeOptions::default(),
    )
}

/// The one series of `name` on GPU `gpu` whose line contains every part of `with`.
fn one<'a>(text: &'a str, name: &str, gpu: u32, with: &[&str]) -> &'a str {
    let found: Vec<&str> = series(text, name)
        .into_iter()
        .filter(|l| l.contains(&format!("{{gpu=\"{gpu}\",")))
        .filter(|l| with.iter().all(|w| l.contains(w)))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "{name} on GPU {gpu} with {with:?}: {found:?}"
    );
    found[0]
}

fn instance_ids(text: &str, gpu: u32) -> BTreeSet<String> {
    series(text, "DCGM_FI_DEV_FB_USED")
        .into_iter()
        .filter(|l| l.contains(&format!("{{gpu=\"{gpu}\",")) && l.contains("GPU_I_ID"))
        .map(|l| format!("{}:{}", label(l, "GPU_I_ID"), label(l, "GPU_I_PROFILE")))
        .collect()
}

#[test]
fn driver_not_loaded_at_start_then_loaded() {
    let mut run = run(ReaderOptions::default());
    // Before 20 s nvmlInit_v2 answers DRIVER_NOT_LOADED: self-metrics only, not ready.
    run.node.set_time(5.0);
    let snap = run.sampler.tick(5.0);
    assert!(!snap.stats.nvml_up);
    let text = common::page(&snap, &run.counters, &EncodeOptions::default());
    assert!(text.contains("gpu_exporter_nvml_up 0\n"), "{text}");
    assert!(!text.contains("DCGM_FI_"), "{text}");
    // The driver arrives; the sampler retries after its first back-off step (1 s).
    run.node.set_time(25.0);
    std::thread::sleep(Duration::from_millis(1100));
    let text = run.at(25.0);
    assert!(text.contains("gpu_exporter_nvml_up 1\n"), "{text}");
    assert_eq!(
        series(&text, "DCGM_FI_DEV_GPU_TEMP").len(),
        3,
        "GPUs 0-2 (3 appears at 50 s)"
    );
}

#[test]
fn describe_driver_not_loaded_says_so_and_where() {
    let node = common::SimNode::new(&scenario(), 5);
    node.set_time(1.0);
    let err = gpu_exporter::gpu::load(Some(node.lib_path())).unwrap_err();
    let msg = gpu_exporter::gpu::describe_load_error(Some(node.lib_path()), &err);
    assert!(msg.contains("kernel driver is not loaded"), "{msg}");
    assert!(
        msg.contains(&node.lib_path().display().to_string()),
        "{msg}"
    );
}

#[test]
fn nvml_library_absent_at_start_then_present() {
    let dir = tempfile::tempdir().unwrap();
    let path: PathBuf = dir.path().join(gpu_exporter::sim::library::LIB_NAME);
    let loader_path = path.clone();
    let counters = counters();
    let mut sampler = Sampler::new(
        Box::new(move || gpu_exporter::gpu::open(Some(&loader_path))),
        counters.clone(),
    );
    let snap = sampler.tick(1.0);
    assert!(!snap.stats.nvml_up);
    assert!(snap.entities.is_empty());
    // The library arrives (the GPU Operator's driver container finished).
    std::fs::copy(common::built_sim_lib(), &path).unwrap();
    let sim = gpu_exporter::sim::library::SimLib::open(&path).unwrap();
    sim.configure("a100-l4", 1).unwrap();
    sim.set_time(30.0).unwrap();
    // Within the back-off the sampler does not retry; after it, it does.
    let snap = sampler.tick(2.0);
    assert!(!snap.stats.nvml_up, "retried inside the back-off");
    std::thread::sleep(Duration::from_millis(1100));
    let snap = sampler.tick(3.0);
    assert!(snap.stats.nvml_up);
    let text = common::page(&snap, &counters, &EncodeOptions::default());
    assert_eq!(series(&text, "DCGM_FI_DEV_GPU_TEMP").len(), 2, "{text}");
}

#[test]
fn burst_of_repeated_xids_is_counted_in_full() {
    // Zero series for critical codes are opt-in (the series budget): ask for them.
    let mut run = run(ReaderOptions {
        xid_initialized_codes: CRITICAL_CODES.to_vec(),
        ..ReaderOptions::default()
    });
    let before = run.at(30.0);
    // Critical codes exist at 0 before anything happens, so a first occurrence is an increase.
    assert_eq!(
        value(one(&before, "gpu_xid_errors_total", 0, &["xid=\"48\""])),
        0.0
    );
    assert!(
        series(&before, "gpu_xid_errors_total")
            .iter()
            .all(|l| !l.contains("xid=\"13\""))
    );
    assert!(series(&before, "gpu_xid_last_seen_timestamp_seconds").is_empty());
    // 20 x Xid 13 within one second at 40 s, then Xid 48 at 42 and 43 s: one tick sees all.
    let text = run.at(45.0);
    assert_eq!(
        value(one(&text, "gpu_xid_errors_total", 0, &["xid=\"13\""])),
        20.0
    );
    assert_eq!(
        value(one(&text, "gpu_xid_errors_total", 0, &["xid=\"48\""])),
        2.0
    );
    let seen = value(one(
        &text,
        "gpu_xid_last_seen_timestamp_seconds",
        0,
        &["xid=\"13\""],
    ));
    assert!((40.0..=45.0).contains(&seen), "{seen}");
    // dcgm-exporter's gauge keeps its meaning: the last code, with code and message labels.
    let last = one(&text, "DCGM_FI_DEV_XID_ERRORS", 0, &[]);
    assert!(
        last.contains("err_code=\"48\",err_msg=\"Double Bit ECC Error\""),
        "{last}"
    );
    assert_eq!(value(last), 48.0);
    // Other GPUs saw nothing.
    assert_eq!(value(one(&text, "DCGM_FI_DEV_XID_ERRORS", 2, &[])), 0.0);
    // Counters never go back.
    let later = run.at(50.0);
    assert_eq!(
        value(one(&later, "gpu_xid_errors_total", 0, &["xid=\"13\""])),
        20.0
    );
}

#[test]
fn xid_window_counts_then_empties() {
    let mut run = run(common::config(&["-x", "10000"]).reader.clone());
    run.at(30.0);
    let text = run.at(45.0);
    assert!(text.contains("# TYPE DCGM_EXP_XID_ERRORS_COUNT gauge\n"));
    let w13 = one(&text, "DCGM_EXP_XID_ERRORS_COUNT", 0, &["xid=\"13\""]);
    assert!(w13.contains("window_size_in_ms=\"10000\""), "{w13}");
    assert_eq!(value(w13), 20.0);
    assert_eq!(
        value(one(&text, "DCGM_EXP_XID_ERRORS_COUNT", 0, &["xid=\"48\""])),
        2.0
    );
    // A GPU without Xids in the window: one series of 0 without an xid label.
    let quiet = one(&text, "DCGM_EXP_XID_ERRORS_COUNT", 2, &[]);
    assert!(!quiet.contains("xid="), "{quiet}");
    assert_eq!(value(quiet), 0.0);
    // 15 s later the events have left the 10 s window, but the totals stay.
    let text = run.at(60.0);
    let gone = one(&text, "DCGM_EXP_XID_ERRORS_COUNT", 0, &[]);
    assert!(!gone.contains("xid="), "{gone}");
    assert_eq!(value(gone), 0.0);
    assert_eq!(
        value(one(&text, "gpu_xid_errors_total", 0, &["xid=\"13\""])),
        20.0
    );
}

#[test]
fn clock_event_window_counts_samples_per_reason() {
    let mut run = run(
        common::config(&["--clock-events-count-window-size", "12000"])
            .reader
            .clone(),
    );
    // The L4 (GPU 3, from 50 s) is idle: every sample has the gpu_idle reason.
    run.at(50.0);
    run.at(55.0);
    let text = run.at(60.0);
    assert!(text.contains("# TYPE DCGM_EXP_CLOCK_EVENTS_COUNT gauge\n"));
    let idle = one(
        &text,
        "DCGM_EXP_CLOCK_EVENTS_COUNT",
        3,
        &["clock_event=\"gpu_idle\""],
    );
    assert!(idle.contains("window_size_in_ms=\"12000\""), "{idle}");
    assert_eq!(value(idle), 3.0);
    // Samples older than the window drop out: 50 s is outside (53, 65].
    let text = run.at(65.0);
    assert_eq!(
        value(one(
            &text,
            "DCGM_EXP_CLOCK_EVENTS_COUNT",
            3,
            &["clock_event=\"gpu_idle\""]
        )),
        3.0
    );
    let bits = value(one(&text, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 3, &[]));
    assert_eq!(bits as u64 & 1, 1, "the bitmask itself is still served");
}

#[test]
fn mig_layout_change_is_picked_up_without_restart() {
    let mut run = run(ReaderOptions::default());
    run.at(50.0);
    let before = run.at(55.0);
    assert_eq!(
        instance_ids(&before, 1),
        ["1:3g.40gb", "2:3g.40gb"].map(String::from).into()
    );
    // GPM needs two samples of the same instance: the old instances have it.
    assert_eq!(
        series(&before, "DCGM_FI_PROF_SM_ACTIVE")
            .iter()
            .filter(|l| l.contains("{gpu=\"1\","))
            .count(),
        2
    );
    // The layout changes at 60 s. The next tick shows the new instances, and every other
    // GPU keeps flowing.
    let after = run.at(62.0);
    assert_eq!(
        instance_ids(&after, 1),
        ["3:2g.20gb", "7:1g.10gb", "8:1g.10gb"]
            .map(String::from)
            .into()
    );
    for gpu in [0, 2, 3] {
        one(&after, "DCGM_FI_DEV_GPU_TEMP", gpu, &[]);
    }
    one(&after, "DCGM_FI_DEV_GPU_TEMP", 1, &[]);
    let uuids: BTreeSet<&str> = series(&after, "DCGM_FI_DEV_FB_USED")
        .into_iter()
        .filter(|l| l.contains("{gpu=\"1\",") && l.contains("mig_uuid"))
        .map(|l| label(l, "mig_uuid"))
        .collect();
    assert_eq!(uuids.len(), 3);
    // The new instances get profiling from their second sample on.
    let text = run.at(67.0);
    assert_eq!(
        series(&text, "DCGM_FI_PROF_SM_ACTIVE")
            .iter()
            .filter(|l| l.contains("{gpu=\"1\","))
            .count(),
        3
    );
    assert!(
        !text.contains("gpu_exporter_field_unsupported{gpu=\"1\",GPU_I_ID"),
        "no field of the new instances is unsupported: {text}"
    );
}

#[test]
fn gpu_lost_and_back_others_keep_flowing() {
    let (logs, _guard) = common::capture_logs();
    let mut run = run(ReaderOptions::default());
    run.at(65.0);
    let lost = run.at(75.0);
    run.at(80.0);
    assert!(lost.contains("gpu_device_up{gpu=\"2\","));
    assert!(one(&lost, "gpu_device_up", 2, &[]).ends_with(" 0"));
    assert!(
        series(&lost, "DCGM_FI_DEV_GPU_TEMP")
            .iter()
            .all(|l| !l.contains("{gpu=\"2\","))
    );
    for gpu in [0, 1, 3] {
        one(&lost, "DCGM_FI_DEV_GPU_TEMP", gpu, &[]);
    }
    // Xid 79 announces the loss; its count stays visible while the GPU is down.
    assert_eq!(
        value(one(&lost, "gpu_xid_errors_total", 2, &["xid=\"79\""])),
        1.0
    );
    let back = run.at(95.0);
    assert!(one(&back, "gpu_device_up", 2, &[]).ends_with(" 1"));
    // The loss and the return are logged once each, with the GPU's identity.
    let log = logs.text();
    let lines = |what: &str| {
        log.lines()
            .filter(|l| l.contains(what) && l.contains("gpu=2") && l.contains("uuid=GPU-"))
            .count()
    };
    assert_eq!(lines("GPU lost"), 1, "{log}");
    assert_eq!(lines("GPU back"), 1, "{log}");
    one(&back, "DCGM_FI_DEV_GPU_TEMP", 2, &[]);
    assert_eq!(
        value(one(&back, "gpu_xid_errors_total", 2, &["xid=\"79\""])),
        1.0
    );
    // Back in the event set from the tick that saw it return: an Xid at 100 s is counted.
    let text = run.at(105.0);
    assert_eq!(
        value(one(&text, "gpu_xid_errors_total", 2, &["xid=\"63\""])),
        1.0
    );
    assert!(one(&text, "DCGM_FI_DEV_XID_ERRORS", 2, &[]).contains("err_code=\"63\""));
}

#[test]
fn gpu_that_appears_later_is_picked_up() {
    let mut run = run(ReaderOptions::default());
    let early = run.at(30.0);
    assert_eq!(series(&early, "gpu_device_up").len(), 3);
    let later = run.at(52.0);
    assert_eq!(series(&later, "gpu_device_up").len(), 4);
    one(&later, "DCGM_FI_DEV_GPU_TEMP", 3, &[]);
    let l4 = one(&later, "gpu_device_info", 3, &[]);
    assert!(l4.contains("modelName=\"NVIDIA L4\""), "{l4}");
    // Its Xid events are watched too.
    one(&later, "DCGM_FI_DEV_XID_ERRORS", 3, &[]);
}

#[test]
fn gpu_without_gpm_reports_profiling_unsupported_once() {
    let mut run = run(ReaderOptions::default());
    run.at(30.0);
    run.at(35.0);
    let text = run.at(40.0);
    // The A100 (GPU 2) has no GPM: no profiling series, one unsupported entry per field.
    for name in ["DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_SM_ACTIVE"] {
        assert!(
            series(&text, name)
                .iter()
                .all(|l| !l.contains("{gpu=\"2\","))
        );
        let entry = format!("gpu_exporter_field_unsupported{{gpu=\"2\",field=\"{name}\"}} 1");
        assert_eq!(text.matches(&entry).count(), 1, "{entry}");
        // The H100 has them.
        one(&text, name, 0, &[]);
    }
    // Not a read error: nothing counted as failing.
    assert!(!text.contains("gpu_exporter_field_read_errors_total{field=\"DCGM_FI_PROF"));
}

/// dcgm-exporter 4.8.3's cumulative counters: `DCGM_EXP_XID_ERRORS_TOTAL` counts every Xid
/// per code (the `--xid-initialized-codes` at 0 from the first tick);
/// `DCGM_EXP_CLOCK_EVENTS_TOTAL` counts each reason's inactive → active edges, every reason at
/// 0 from the first tick, a reason active at start not counted.
#[test]
fn cumulative_xid_and_clock_event_counters() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("totals.toml");
    std::fs::write(
        &scenario,
        "name = \"totals\"\nnode = \"n\"\n\
         [[gpus]]\nmodel = \"H100-SXM5-80GB\"\nworkload = { kind = \"training\", level = 0.9 }\n\
         [[faults]]\nat = 20\ngpu = 0\nkind = \"thermal\"\ncelsius = 97\nuntil = 40\n\
         [[faults]]\nat = 60\ngpu = 0\nkind = \"thermal\"\ncelsius = 97\nuntil = 80\n\
         [[faults]]\nat = 30\ngpu = 0\nkind = \"xid\"\nxid = 13\nrepeat = 3\nevery = 1\n",
    )
    .unwrap();
    let counters = parse_counters(
        "totals",
        "DCGM_EXP_XID_ERRORS_TOTAL, counter, x\nDCGM_EXP_CLOCK_EVENTS_TOTAL, counter, c\n",
    )
    .unwrap();
    let mut run = Run::new(
        common::SimNode::new(scenario.to_str().unwrap(), 5),
        Arc::new(counters),
        common::config(&["--xid-initialized-codes", "79"])
            .reader
            .clone(),
        EncodeOptions::default(),
    );
    let reason = |text: &str, r: &str| {
        value(one(
            text,
            "DCGM_EXP_CLOCK_EVENTS_TOTAL",
            0,
            &[&format!("clock_event=\"{r}\"")],
        ))
    };
    let text = run.at(10.0);
    assert!(
        text.contains("# TYPE DCGM_EXP_XID_ERRORS_TOTAL counter\n"),
        "{text}"
    );
    let x79 = one(&text, "DCGM_EXP_XID_ERRORS_TOTAL", 0, &["xid=\"79\""]);
    assert!(!x79.contains("window_size_in_ms"), "{x79}");
    assert_eq!(value(x79), 0.0);
    assert_eq!(
        series(&text, "DCGM_EXP_CLOCK_EVENTS_TOTAL").len(),
        CLOCK_EVENT_REASONS.len()
    );
    assert_eq!(reason(&text, "sw_thermal"), 0.0);
    // Inside the first thermal window: one edge, counted once however long it lasts.
    run.at(25.0);
    let text = run.at(35.0);
    assert_eq!(reason(&text, "sw_thermal"), 1.0);
    assert_eq!(reason(&text, "hw_thermal"), 1.0);
    assert_eq!(
        value(one(&text, "DCGM_EXP_XID_ERRORS_TOTAL", 0, &["xid=\"13\""])),
        3.0
    );
    run.at(50.0);
    let text = run.at(65.0);
    assert_eq!(reason(&text, "sw_thermal"), 2.0, "a second edge");
    assert_eq!(reason(&text, "hw_power_brake"), 0.0);
}
