//! dcgm-exporter 4.10's profiling set on a node of mixed GPU models, end to end on the binary:
//! under `--compatibility dcgm-4.10` a profiling field one model lacks has no series on any
//! GPU, while a field every model supports has series on each, and the withheld field is named
//! with why in `/status`, on the landing page, in `gpu-exporter check` and once in the log;
//! under `native` the same node serves that field on the GPUs that support it. Both paths are
//! covered: DCGM on both GPUs (a100-l4: the simulated DCGM has no FP64 group on the L4), and
//! GPM on one against DCGM on the other (an H100 and an L4: no NVLink group on the L4).

#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{BIN, Exporter, label, series};

const ENGINE: &str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
const FP64: &str = "DCGM_FI_PROF_PIPE_FP64_ACTIVE";
const NVLINK: &str = "DCGM_FI_PROF_NVLINK_TX_BYTES";

/// An H100 (profiling from GPM) and an L4 (profiling from DCGM).
const H100_L4: &str = r#"
name = "h100-l4"
node = "sim-h100-l4-node"

[[gpus]]
model = "H100-SXM5-80GB"
workload = { kind = "training", level = 0.9, amplitude = 0.05, period = 60, memory = 0.8 }

[[gpus]]
model = "L4"
workload = { kind = "inference", level = 0.5, amplitude = 0.4, period = 10, memory = 0.5 }
"#;

/// A counters file of `fields`, in `dir`.
fn counters(dir: &Path, fields: &[&str]) -> String {
    let path = dir.join("prof.csv");
    let text: String = fields
        .iter()
        .map(|f| format!("{f}, gauge, {f}\n"))
        .collect();
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

/// The exporter on `--simulate scenario -f csv -c 300 --compatibility profile`, its log kept.
fn exporter(scenario: &str, csv: &str, profile: &str) -> Exporter {
    Exporter::builder()
        .args(["--simulate", scenario, "-f", csv, "-c", "300"])
        .args(["--compatibility", profile])
        .log_pipe()
        .start()
}

/// The GPUs (`gpu` label) that have a series of `name` in `text`, sorted.
fn gpus_with(text: &str, name: &str) -> Vec<String> {
    let mut gpus: Vec<String> = series(text, name)
        .iter()
        .map(|l| label(l, "gpu").to_owned())
        .collect();
    gpus.sort();
    gpus
}

/// `/status` of `e`, parsed.
fn status_of(e: &Exporter) -> serde_json::Value {
    let r = common::http_get(e.port, "/status", &[]).expect("/status");
    assert_eq!(r.status, 200, "{}", r.text());
    serde_json::from_slice(&r.body).unwrap()
}

/// `/status`'s entry for the withheld `field`, once there is one (a deadline of 60 s).
fn withheld_until(e: &Exporter, field: &str) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = status_of(e);
        if let Some(w) = st["withheld"]
            .as_array()
            .and_then(|ws| ws.iter().find(|w| w["field"] == field))
        {
            return w.clone();
        }
        assert!(
            Instant::now() < deadline,
            "{field} never withheld: {st}\nlog:\n{}",
            e.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The ticks so far, from a scrape.
fn ticks(text: &str) -> f64 {
    text.lines()
        .find(|l| l.starts_with("gpu_exporter_samples_total "))
        .map(common::value)
        .unwrap_or(0.0)
}

/// Under dcgm-4.10 on `scenario`: `common` has series on both GPUs and `lacking` (which GPU 1,
/// an L4, does not support) on none, over five more ticks once it is withheld; `/status` names
/// it with GPU 1, its model and the reason. Returns the exporter, still running.
fn withheld_on_every_gpu(scenario: &str, csv: &str, common: &str, lacking: &str) -> Exporter {
    let e = exporter(scenario, csv, "dcgm-4.10");
    let w = withheld_until(&e, lacking);
    assert_eq!(w["lacking"], serde_json::json!([1]), "{w}");
    let reason = w["reason"].as_str().unwrap();
    for part in [
        "withheld on every GPU",
        "GPU 1 of model NVIDIA L4 does not support it",
        "dcgm-exporter 4.10",
        "--compatibility native serves it on the GPUs that support it",
    ] {
        assert!(reason.contains(part), "{part:?} not in {reason:?}");
    }
    let first = e.metrics_until("the common field on both GPUs", |t| {
        gpus_with(t, common) == ["0", "1"]
    });
    let n = ticks(&first);
    let mut text = first;
    loop {
        assert_eq!(gpus_with(&text, common), ["0", "1"], "{text}");
        assert!(gpus_with(&text, lacking).is_empty(), "{lacking}:\n{text}");
        if ticks(&text) >= n + 5.0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(300));
        text = e.metrics();
    }
    // Still what NVML or DCGM found unsupported on the L4 itself, and only there.
    let unsupported: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.starts_with("gpu_exporter_field_unsupported")
                && l.contains(&format!("field=\"{lacking}\""))
        })
        .collect();
    assert_eq!(unsupported.len(), 1, "{text}");
    assert!(unsupported[0].contains("gpu=\"1\""), "{text}");
    e
}

/// Under native, the same node serves `lacking` on GPU 0, which supports it, and not on the
/// L4; `/status` lists nothing withheld.
fn served_where_supported(scenario: &str, csv: &str, common: &str, lacking: &str) {
    let e = exporter(scenario, csv, "native");
    let text = e.metrics_until("the field on the GPU that supports it", |t| {
        gpus_with(t, lacking) == ["0"] && gpus_with(t, common) == ["0", "1"]
    });
    assert!(gpus_with(&text, lacking) == ["0"], "{text}");
    let st = status_of(&e);
    assert!(st.get("withheld").is_none(), "{st}");
    assert!(!e.log().contains("withheld on every GPU"), "{}", e.log());
}

/// `gpu-exporter check` on `scenario` with `csv` under dcgm-4.10: the line of `field` in the
/// fields section and its fix.
fn check_lines(scenario: &str, csv: &str, field: &str) -> String {
    let address = format!("127.0.0.1:{}", common::free_port());
    let out = Command::new(BIN)
        .args(["check", "-a", &address, "--simulate", scenario, "-f", csv])
        .args(["--compatibility", "dcgm-4.10"])
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = report.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains(field) && l.contains("served on"))
        .unwrap_or_else(|| panic!("{field} not in the report:\n{report}"));
    lines[at..(at + 2).min(lines.len())].join("\n")
}

/// DCGM serves both GPUs of a100-l4; its L4 has no FP64 metric group.
#[test]
fn dcgm_4_10_withholds_a_field_one_model_lacks_on_every_gpu_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let csv = counters(dir.path(), &[ENGINE, FP64]);
    let e = withheld_on_every_gpu("a100-l4", &csv, ENGINE, FP64);

    let page = common::http_get(e.port, "/", &[]).unwrap().text();
    assert!(page.contains("Withheld profiling fields"), "{page}");
    let at = page.find("Withheld profiling fields").unwrap();
    let row = &page[at..];
    let row = &row[..row.find("</table>").unwrap()];
    assert!(row.contains(FP64), "{page}");
    assert!(row.contains("GPU 1 of model NVIDIA L4"), "{page}");
    assert!(row.contains("--compatibility native"), "{page}");

    // Logged once when decided, not per tick.
    let log = e.log();
    let decided: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(&format!("{FP64} (lacked by GPU 1 of model NVIDIA L4)")))
        .collect();
    assert_eq!(decided.len(), 1, "{log}");
    assert!(
        decided[0].contains(&format!("are served: {ENGINE}")),
        "{log}"
    );
    drop(e);

    let row = check_lines("a100-l4", &csv, FP64);
    for part in [
        "withheld on every GPU",
        "GPU 1 of model NVIDIA L4 does not support it",
        "fix: run with --compatibility native to serve it on the GPUs that support it",
    ] {
        assert!(row.contains(part), "{part:?} not in:\n{row}");
    }
    served_where_supported("a100-l4", &csv, ENGINE, FP64);
}

/// GPM serves the H100 and DCGM the L4, which has no NVLink metric group: the NVLink byte rate
/// is withheld under dcgm-4.10, and served on the H100 under native.
#[test]
fn dcgm_4_10_compares_the_gpm_and_the_dcgm_paths_alike() {
    let dir = tempfile::tempdir().unwrap();
    let csv = counters(dir.path(), &[ENGINE, NVLINK]);
    let scenario = dir.path().join("h100-l4.toml");
    std::fs::write(&scenario, H100_L4).unwrap();
    let scenario = scenario.to_str().unwrap();
    drop(withheld_on_every_gpu(scenario, &csv, ENGINE, NVLINK));
    served_where_supported(scenario, &csv, ENGINE, NVLINK);
}
