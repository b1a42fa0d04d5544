//! `-d/--devices` ranges and `--mig-repeat-device-fields` on the simulated H100 node
//! (GPU 2: 7 × 1g.10gb, GI 7-13; GPU 5: 3g.40gb GI 2, 2g.20gb GI 3, 1g.10gb GI 7).
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeSet;

use common::{label_opt, series};
use gpu_exporter::exposition::EncodeOptions;
use gpu_exporter::gpu::reader::ReaderOptions;

/// Exposition of the second of two ticks (30 s, 35 s) with `options`.
fn exposition(options: ReaderOptions) -> String {
    let node = common::SimNode::new("h100-mig", 2);
    let counters = common::default_counters();
    let mut sampler = node.sampler_with(counters.clone(), options, 0.0);
    node.set_time(30.0);
    sampler.tick(30.0);
    node.set_time(35.0);
    let snap = sampler.tick(35.0);
    common::page(&snap, &counters, &EncodeOptions::default())
}

fn select(devices: &str) -> String {
    // With the Xid zero series (opt-in) every selected GPU has a `gpu_xid_errors_total`.
    exposition(
        common::config(&["-d", devices, "--xid-initialized-codes", "79"])
            .reader
            .clone(),
    )
}

/// Entities (`gpu` or `gpu.gi`) that carry series of `name`.
fn entities(text: &str, name: &str) -> BTreeSet<String> {
    series(text, name)
        .into_iter()
        .map(|l| {
            let gpu = label_opt(l, "gpu").unwrap();
            match label_opt(l, "GPU_I_ID") {
                Some(gi) => format!("{gpu}.{gi}"),
                None => gpu.to_owned(),
            }
        })
        .collect()
}

/// The distinct values of `name` over the series of GPU `gpu` (and its instances).
fn distinct_values<'a>(text: &'a str, name: &str, gpu: u32) -> BTreeSet<&'a str> {
    let prefix = format!("{name}{{gpu=\"{gpu}\",");
    series(text, name)
        .into_iter()
        .filter(|l| l.starts_with(&prefix))
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn flex_exports_every_gpu_and_instance() {
    let text = select("f");
    // Instance-level fields (framebuffer) sit on the instances of a MIG-enabled GPU and on
    // the GPU itself otherwise; device-level fields (temperature) on every GPU.
    let fb = entities(&text, "DCGM_FI_DEV_FB_USED");
    assert_eq!(fb.len(), 6 + 7 + 3, "{fb:?}");
    assert_eq!(entities(&text, "DCGM_FI_DEV_GPU_TEMP").len(), 8);
    assert_eq!(series(&text, "gpu_device_up").len(), 8);
}

#[test]
fn gpu_list_exports_those_gpus_only() {
    let text = select("g:0,2-3");
    assert_eq!(
        entities(&text, "DCGM_FI_DEV_GPU_TEMP"),
        set(&["0", "2", "3"])
    );
    // `g` means the GPUs' own series: GPU 2's instances (which carry its framebuffer in
    // MIG mode) are not selected.
    assert_eq!(entities(&text, "DCGM_FI_DEV_FB_USED"), set(&["0", "3"]));
    assert_eq!(entities(&text, "gpu_device_up"), set(&["0", "2", "3"]));
    assert_eq!(
        entities(&text, "gpu_xid_errors_total"),
        set(&["0", "2", "3"])
    );
}

#[test]
fn instance_list_exports_those_instances_only() {
    let text = select("i:2.7-8,5");
    assert_eq!(
        entities(&text, "DCGM_FI_DEV_FB_USED"),
        set(&["2.7", "2.8", "5.2", "5.3", "5.7"])
    );
    // No GPU-level series: device-level fields are not exported at all.
    assert!(series(&text, "DCGM_FI_DEV_GPU_TEMP").is_empty());
    assert_eq!(entities(&text, "gpu_device_up"), set(&["2", "5"]));
}

#[test]
fn several_ranges_at_once() {
    // dcgm-exporter refuses to mix GPU and instance ranges; here they are a union.
    let text = select("g:0,i:5.3");
    assert_eq!(entities(&text, "DCGM_FI_DEV_FB_USED"), set(&["0", "5.3"]));
    assert_eq!(entities(&text, "DCGM_FI_DEV_GPU_TEMP"), set(&["0"]));
    let text = select("g:7; i:2.13");
    assert_eq!(entities(&text, "DCGM_FI_DEV_FB_USED"), set(&["7", "2.13"]));
}

#[test]
fn repeat_flag_puts_device_fields_on_each_instance() {
    let text = exposition(
        common::config(&["--mig-repeat-device-fields"])
            .reader
            .clone(),
    );
    let temp = entities(&text, "DCGM_FI_DEV_GPU_TEMP");
    // MIG-enabled GPUs 2 and 5 are represented only by their instances, as in dcgm-exporter.
    assert!(!temp.contains("2") && !temp.contains("5"), "{temp:?}");
    for gi in 7..=13 {
        assert!(temp.contains(&format!("2.{gi}")), "{temp:?}");
    }
    for e in ["5.2", "5.3", "5.7", "0", "7"] {
        assert!(temp.contains(e), "{temp:?}");
    }
    // The repeated value is the GPU's: every instance of GPU 5 shows the same power.
    let power = distinct_values(&text, "DCGM_FI_DEV_POWER_USAGE", 5);
    assert_eq!(power.len(), 1, "{power:?}");
    // Instance fields stay per instance.
    let fb = distinct_values(&text, "DCGM_FI_DEV_FB_USED", 5);
    assert_eq!(fb.len(), 3, "{fb:?}");
    // Without the flag the GPU carries its device fields once and instances carry none.
    let text = select("f");
    let temp = entities(&text, "DCGM_FI_DEV_GPU_TEMP");
    assert!(temp.contains("5") && !temp.contains("5.2"), "{temp:?}");
}
