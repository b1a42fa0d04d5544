//! The health model on the binary: with the DEFAULT counters file (which exports neither the
//! throttle reasons nor ECC or remap pending), `--simulate incidents` shows each faulted GPU
//! as `warning` or `critical` on `/status` with the model's reasons, the verdict metrics on
//! the right GPUs, `DCGM_EXP_GPU_HEALTH_STATUS` computed from NVML without DCGM, and a reason
//! that clears only after the hold time once its cause is gone.
//!
//! Bounded: each test waits at most 60 s for the scenario's faults (they start between 1 and
//! 16 s), polling; nothing is timed.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{Exporter, http_get, label, series, value};
use serde_json::Value;

fn status(e: &Exporter) -> Value {
    serde_json::from_str(&http_get(e.port, "/status", &[]).unwrap().text()).unwrap()
}

/// Polls `/status` until `cond` holds (at most 60 s).
fn status_until(e: &Exporter, what: &str, cond: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let s = status(e);
        if cond(&s) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "not within 60 s: {what}\n{s:#}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn gpu(s: &Value, i: u64) -> &Value {
    s["gpus"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["gpu"] == i)
        .unwrap()
}

fn causes(g: &Value) -> Vec<String> {
    g["health"]["causes"]
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| c["reason"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// `gpu_health_status` and the `gpu_health_reason`s of GPU `i` in an exposition.
fn metric_health(text: &str, i: u64) -> (f64, Vec<String>) {
    let gpu = i.to_string();
    let status = series(text, "gpu_health_status")
        .into_iter()
        .find(|l| label(l, "gpu") == gpu)
        .map_or(-1.0, value);
    let reasons = series(text, "gpu_health_reason")
        .into_iter()
        .filter(|l| label(l, "gpu") == gpu)
        .map(|l| label(l, "reason").to_owned())
        .collect();
    (status, reasons)
}

#[test]
fn incidents_with_the_default_counters_shows_each_faulted_gpu() {
    let e = Exporter::builder()
        .args(["--simulate", "incidents", "-c", "500"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .start();
    // Every fault is there once GPU 4 is lost (16 s) and GPU 2's remap failed (14 s).
    let s = status_until(&e, "GPU 4 lost and GPU 2's remap failed", |s| {
        gpu(s, 4)["up"] == false && causes(gpu(s, 2)).contains(&"row_remap_failed".to_owned())
    });
    let want: [(u64, &str, &[&str]); 8] = [
        (0, "warning", &["thermal_slowdown", "over_slowdown_temp"]),
        (1, "ok", &[]),
        (
            2,
            "critical",
            &[
                "ecc_dbe",
                "row_remap_failed",
                "xid_memory",
                "recovery_reset",
            ],
        ),
        (3, "warning", &["power_brake", "xid_application"]),
        (4, "critical", &["gpu_lost", "xid_hardware"]),
        (5, "ok", &[]),
        // The application Xid 31 of its MIG instance 3 (12 s).
        (6, "warning", &["xid_application"]),
        (7, "warning", &["nvlink_down"]),
    ];
    let text = e.metrics();
    for (i, verdict, reasons) in want {
        let g = gpu(&s, i);
        assert_eq!(
            g["health"]["verdict"], verdict,
            "GPU {i}: {:#}",
            g["health"]
        );
        let got = causes(g);
        for r in reasons {
            assert!(got.contains(&r.to_string()), "GPU {i} lacks {r}: {got:?}");
        }
        let (level, metric_reasons) = metric_health(&text, i);
        let want_level = match verdict {
            "ok" => 0.0,
            "warning" => 1.0,
            _ => 2.0,
        };
        assert_eq!(level, want_level, "gpu_health_status of GPU {i}");
        for r in reasons {
            assert!(
                metric_reasons.contains(&r.to_string()),
                "gpu_health_reason of GPU {i} lacks {r}: {metric_reasons:?}"
            );
        }
        if verdict == "ok" {
            assert!(got.is_empty(), "GPU {i}: {got:?}");
            assert!(g["health"].get("causes").is_none(), "no causes when ok");
            assert!(metric_reasons.is_empty(), "GPU {i}: {metric_reasons:?}");
        }
    }
    // GPU 2's Xid 48: classified as memory, with the catalogue's action.
    let xid48 = gpu(&s, 2)["health"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["xid"] == 48)
        .cloned()
        .unwrap();
    assert_eq!(xid48["reason"], "xid_memory");
    assert_eq!(xid48["action"], "reset_gpu");
    assert_eq!(gpu(&s, 4)["health"]["action"], "reboot_node");
    // GPU 2's double-bit ECC error asks for a reset, its failed row remap for service: the
    // GPU needs the more drastic.
    assert_eq!(gpu(&s, 2)["health"]["action"], "service_gpu");
    // The exported DCGM series stay those of the default file: the watched fields are not
    // exported.
    for absent in [
        "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "DCGM_FI_DEV_ROW_REMAP_PENDING",
        "DCGM_FI_DEV_SLOWDOWN_TEMP",
        "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION",
    ] {
        assert!(series(&text, absent).is_empty(), "{absent} is exported");
    }
}

#[test]
fn dcgm_health_status_is_computed_from_nvml_and_a_reason_clears_after_the_hold() {
    let dir = tempfile::tempdir().unwrap();
    let counters = dir.path().join("counters.csv");
    std::fs::write(
        &counters,
        "DCGM_FI_DEV_GPU_TEMP, gauge, t.\nDCGM_EXP_GPU_HEALTH_STATUS, gauge, h.\n",
    )
    .unwrap();
    let e = Exporter::builder()
        .args([
            "--simulate",
            "tests/fixtures/scenarios/health-clear.toml",
            "--dcgm-mode",
            "off",
            "--health-hold",
            "3s",
            "-c",
            "200",
            "-f",
        ])
        .arg(&counters)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .start();
    let watch = |text: &str, gpu: &str, w: &str| -> (f64, String) {
        let l = series(text, "DCGM_EXP_GPU_HEALTH_STATUS")
            .into_iter()
            .find(|l| label(l, "gpu") == gpu && label(l, "health_watch") == w)
            .unwrap_or_else(|| panic!("no {w} watch of GPU {gpu}:\n{text}"));
        (value(l), label(l, "health_error_code").to_owned())
    };
    // The power brake (1 s to 4 s): a warning under the POWER watch, computed from NVML.
    let text = e.metrics_until("GPU 0's power brake", |t| {
        metric_health(t, 0).1.contains(&"power_brake".to_owned())
    });
    assert_eq!(
        watch(&text, "0", "POWER"),
        (10.0, "DCGM_FR_CLOCK_THROTTLE_POWER".to_owned())
    );
    assert_eq!(watch(&text, "0", "ALL").0, 10.0);
    assert_eq!(watch(&text, "1", "ALL"), (0.0, "DCGM_FR_OK".to_owned()));
    assert_eq!(series(&text, "DCGM_EXP_GPU_HEALTH_STATUS").len(), 22);
    // Released at 4 s: the reason is held (not present) for the hold time, then cleared.
    let held = status_until(&e, "the power brake held after its release", |s| {
        gpu(s, 0)["health"]["causes"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["present"] == false))
    });
    assert_eq!(gpu(&held, 0)["health"]["verdict"], "warning");
    let cleared = status_until(&e, "GPU 0 ok again", |s| {
        gpu(s, 0)["health"]["verdict"] == "ok"
    });
    assert!(causes(gpu(&cleared, 0)).is_empty());
    let text = e.metrics_until("gpu_health_status of GPU 0 back to 0", |t| {
        metric_health(t, 0) == (0.0, vec![])
    });
    assert_eq!(watch(&text, "0", "POWER"), (0.0, "DCGM_FR_OK".to_owned()));
}
