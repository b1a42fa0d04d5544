//! The landing page `/` and `/status`, seen as a person sees them: the exporter runs
//! `--simulate incidents -k` (with the recommended counters, which hold the throttle, ECC,
//! remap and power-limit fields the page's health column reads, plus the slowdown
//! temperature), a real headless Chromium
//! (Debian's `chromium`, installed by scripts/test.sh) loads the page, and the text it
//! rendered must show the pods, the lost GPU, the throttled GPU, the critical GPU and an
//! unsupported field. The screenshot is kept as `target/test-artifacts/landing.png`.
//!
//! The layout is measured too, at 1,280 and 1,920 px wide: no horizontal scrolling, and every
//! Health cell at least 18 em wide (a probe script, added to a copy of the page, reports what
//! Chromium laid out); screenshots of both widths are kept next to the first. A second page,
//! with the DCGM hostengine away, must say DCGM is down where a person looks and fit 1,280 px.
//!
//! Chromium comes from `$CHROMIUM`, else `chromium` on PATH; without it the test fails unless
//! `GPU_EXPORTER_SKIP_BROWSER=1` says to skip it.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::{Exporter, http_get};

fn chromium() -> Option<PathBuf> {
    common::tool("CHROMIUM", "chromium")
}

/// Runs headless Chromium on `url` with `mode` (`--dump-dom` or `--screenshot=…`).
fn run_chromium(bin: &Path, url: &str, mode: &str) -> String {
    run_chromium_sized(bin, url, mode, "1600,1300")
}

/// [`run_chromium`] in a window of `size` (`W,H` in CSS pixels).
fn run_chromium_sized(bin: &Path, url: &str, mode: &str, size: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ])
        .arg(format!("--window-size={size}"))
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(mode)
        .arg(url)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    assert!(
        out.status.success(),
        "chromium {mode} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The text a reader sees: the DOM after rendering, without markup, the style sheet and
/// anything a style could hide (the page has no script and hides nothing; both are checked).
fn visible_text(dom: &str) -> String {
    assert!(!dom.contains("<script"), "the page must need no JavaScript");
    assert!(!dom.contains("display:none") && !dom.contains("hidden"));
    let body = dom.split("</style>").nth(1).unwrap_or(dom);
    let mut text = String::new();
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push(' ');
            }
            '>' => in_tag = false,
            c if !in_tag => text.push(c),
            _ => {}
        }
    }
    let text = text
        .replace("&amp;", "&")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&nbsp;", " ");
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Fails naming every text of `wants` that the page's visible `text` lacks.
fn assert_visible(text: &str, wants: &[&str]) {
    let missing: Vec<&&str> = wants.iter().filter(|w| !text.contains(**w)).collect();
    assert!(
        missing.is_empty(),
        "not visible on the page: {missing:?}\npage text:\n{text}"
    );
}

#[test]
fn landing_page_shows_pods_and_health_per_gpu_in_a_real_browser() {
    let Some(bin) = chromium() else {
        if std::env::var_os("GPU_EXPORTER_SKIP_BROWSER").is_some() {
            eprintln!("skipped: no chromium (GPU_EXPORTER_SKIP_BROWSER is set)");
            return;
        }
        panic!(
            "no chromium: install Debian's chromium (scripts/test.sh does) or set GPU_EXPORTER_SKIP_BROWSER=1"
        );
    };
    // The recommended set plus the slowdown temperature, the limit the page compares with.
    let dir = tempfile::tempdir().unwrap();
    let counters = dir.path().join("counters.csv");
    let recommended = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("counters/recommended.csv"),
    )
    .unwrap();
    std::fs::write(
        &counters,
        format!("{recommended}\nDCGM_FI_DEV_SLOWDOWN_TEMP, gauge, Slowdown temperature (in C).\n"),
    )
    .unwrap();
    let e = Exporter::builder()
        .args(["--simulate", "incidents", "-k", "-c", "500", "-f"])
        .arg(&counters)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NODE_NAME")
        .log_pipe()
        .start();
    // The scenario loses GPU 4 at 16 s: wait for /status to say so.
    let start = Instant::now();
    loop {
        let status: serde_json::Value =
            serde_json::from_str(&http_get(e.port, "/status", &[]).unwrap().text()).unwrap();
        let lost = status["gpus"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["up"] == false);
        if lost {
            assert_eq!(status["node"], "sim-incidents-node");
            assert_eq!(status["ready"], true);
            // The lost GPU keeps the pod that held it when it was last seen.
            assert_eq!(
                status["gpus"][4]["holders"],
                serde_json::json!(["batch/batch-embed-28811600-4kx7w/worker"]),
                "{status:#}"
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "no GPU was lost within 40 s:\n{status:#}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let url = format!("http://127.0.0.1:{}/", e.port);
    let text = visible_text(&run_chromium(&bin, &url, "--dump-dom"));

    assert_visible(
        &text,
        &[
            "gpu-exporter 0.1.0 on sim-incidents-node",
            "Ready",
            "1 lost",
            // pods holding GPUs and MIG instances
            "research/llm-train-0/trainer",
            "sandbox/notebook-carol/notebook",
            // the lost GPU, and the pod that held it
            "GPU 4",
            "LOST",
            "batch/batch-embed-28811600-4kx7w/worker",
            "lost: NVML no longer answers for this GPU",
            // the overheating GPU 0 and the power-braked GPU 3
            "throttled: sw_thermal, hw_thermal",
            "at or above the slowdown temperature (87 °C)",
            "/ 87 °C",
            "hw_power_brake",
            // GPU 2: Xid 48, ECC, row remap
            "critical",
            "row remap failed: the GPU needs service",
            "Xid 48",
            // GPU 7's NVLink link 3, down from 10 s
            "NVLink link(s) down: 3",
            // bars and limits
            "/ 700 W",
            "GiB",
            // the exporter's own state
            "kubelet",
            "Unsupported fields",
            "DCGM_FI_DEV_GPU_UTIL GPU 6",
        ],
    );

    // The screenshot, kept for people (and the README's picture).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    let png = dir.join("landing.png");
    let _ = std::fs::remove_file(&png);
    run_chromium(&bin, &url, &format!("--screenshot={}", png.display()));
    check_screenshot(&png, "landing page screenshot");

    // The layout at the widths people use: one exporter, both widths.
    let html = http_get(e.port, "/", &[]).unwrap().text();
    for width in [1280, 1920] {
        check_layout(&bin, &html, &url, (width, "landing"), 8, &dir);
    }
}

/// A hostengine that is not there, with the GPU Operator's profiling counters on an A100 in
/// MIG mode and a T4: the page shows, in a real browser, that DCGM is down (the status line,
/// why each MIG instance's utilization is missing, DCGM's row with its error, the values it
/// did not serve), and still fits 1,280 px without scrolling sideways.
#[test]
fn dcgm_down_is_visible_and_the_page_still_fits() {
    let Some(bin) = chromium() else {
        if std::env::var_os("GPU_EXPORTER_SKIP_BROWSER").is_some() {
            eprintln!("skipped: no chromium (GPU_EXPORTER_SKIP_BROWSER is set)");
            return;
        }
        panic!("no chromium: install Debian's chromium or set GPU_EXPORTER_SKIP_BROWSER=1");
    };
    let e = Exporter::builder()
        .args(["--simulate", "a100-mig-t4", "-k", "-c", "500"])
        .args(["-f", "counters/dcp-metrics-included.csv"])
        .args(["-r", "unix:///nonexistent/nv-hostengine.sock"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("NODE_NAME")
        .start();
    common::wait_until("DCGM down on /status", || {
        let status: serde_json::Value =
            serde_json::from_str(&http_get(e.port, "/status", &[]).unwrap().text()).unwrap();
        status["sources"].as_array().is_some_and(|s| {
            s.iter()
                .any(|s| s["source"] == "dcgm" && s["state"] == "down")
        })
    });
    let url = format!("http://127.0.0.1:{}/", e.port);
    let text = visible_text(&run_chromium(&bin, &url, "--dump-dom"));
    assert_visible(
        &text,
        &[
            "Ready, degraded · NVML up · DCGM down",
            "DCGM is down since ",
            "the hostengine at unix:///nonexistent/nv-hostengine.sock does not answer",
            "/ready still answers 200",
            "research/finetune-0/trainer DCGM down",
            // the A100 itself: NVML gives no utilization for a GPU in MIG mode as a whole
            "ok MIG per MIG instance",
            "dcgm remote, unix:///nonexistent/nv-hostengine.sock down since",
            "Values DCGM did not serve",
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "GPU 0 GI 2, GPU 0 GI 3, GPU 0 GI 7, GPU 0 GI 8, GPU 1",
        ],
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/test-artifacts");
    std::fs::create_dir_all(&dir).unwrap();
    let html = http_get(e.port, "/", &[]).unwrap().text();
    check_layout(&bin, &html, &url, (1280, "landing-dcgm-down"), 2, &dir);
}

/// The probe added to a copy of the page: what Chromium laid out, as JSON in a `<pre>` that
/// `--dump-dom` returns. The served page itself has no script.
const LAYOUT_PROBE: &str = r#"<script>(function () {
  var d = document.documentElement, cells = [];
  document.querySelectorAll("td.why").forEach(function (td) {
    var r = td.getBoundingClientRect();
    cells.push({ width: r.width, em: parseFloat(getComputedStyle(td).fontSize),
                 text: td.textContent.slice(0, 40) });
  });
  var right = 0;
  document.querySelectorAll("td,th,table,p,h1,h2,h3").forEach(function (el) {
    right = Math.max(right, el.getBoundingClientRect().right);
  });
  var pre = document.createElement("pre");
  pre.id = "layout-probe";
  pre.textContent = JSON.stringify({ innerWidth: window.innerWidth, clientWidth: d.clientWidth,
                                     scrollWidth: d.scrollWidth, right: right, health: cells });
  document.body.appendChild(pre);
})();</script>"#;

/// At `width` px (900 high): the page does not scroll sideways, no cell runs past the right
/// edge, and every Health cell (at least `cells` of them) is at least 18 em wide, so its
/// reasons read as sentences and are not squeezed to a few words a line. Keeps a screenshot
/// `{name}-{width}.png` in `dir`.
fn check_layout(
    bin: &Path,
    html: &str,
    url: &str,
    (width, name): (u32, &str),
    cells: usize,
    dir: &Path,
) {
    let size = format!("{width},900");
    let tmp = tempfile::tempdir().unwrap();
    let probe = tmp.path().join("landing-probe.html");
    assert!(html.contains("</body>"));
    std::fs::write(
        &probe,
        html.replacen("</body>", &format!("{LAYOUT_PROBE}</body>"), 1),
    )
    .unwrap();
    let dom = run_chromium_sized(
        bin,
        &format!("file://{}", probe.display()),
        "--dump-dom",
        &size,
    );
    let json = dom
        .split("<pre id=\"layout-probe\">")
        .nth(1)
        .and_then(|rest| rest.split("</pre>").next())
        .unwrap_or_else(|| panic!("the layout probe did not run at {width} px:\n{dom}"))
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    let m: serde_json::Value = serde_json::from_str(&json).unwrap();
    let px = |k: &str| m[k].as_f64().unwrap_or_else(|| panic!("no {k} in {m}"));
    assert_eq!(
        px("innerWidth"),
        f64::from(width),
        "window size not applied: {m}"
    );
    // No horizontal overflow: nothing wider than the viewport less its scroll bar.
    assert!(
        px("scrollWidth") <= px("clientWidth") && px("clientWidth") <= px("innerWidth"),
        "the page scrolls sideways at {width} px: {m}"
    );
    assert!(
        px("right") <= px("clientWidth") + 0.5,
        "a cell runs off the right edge at {width} px: {m}"
    );
    let health = m["health"].as_array().unwrap();
    assert!(health.len() >= cells, "a Health cell per GPU expected: {m}");
    for cell in health {
        let (w, em) = (
            cell["width"].as_f64().unwrap(),
            cell["em"].as_f64().unwrap(),
        );
        assert!(
            w >= 18.0 * em - 0.5,
            "a Health cell is {w:.0} px wide at {width} px, under 18 em ({:.0} px): {cell}",
            18.0 * em
        );
    }
    eprintln!("layout at {width} px: {m}");

    let png = dir.join(format!("{name}-{width}.png"));
    let _ = std::fs::remove_file(&png);
    run_chromium_sized(bin, url, &format!("--screenshot={}", png.display()), &size);
    check_screenshot(&png, &format!("landing page screenshot at {width} px"));
}

/// Asserts that `png` is a picture of the page (a PNG, not a blank few bytes) and says where
/// it is, as `what`.
fn check_screenshot(png: &Path, what: &str) {
    let bytes = std::fs::read(png).unwrap();
    assert!(
        bytes.starts_with(b"\x89PNG") && bytes.len() > 20_000,
        "screenshot {} is not a picture of the page ({} bytes)",
        png.display(),
        bytes.len()
    );
    eprintln!("{what}: {}", png.display());
}

/// `/status` is the same diagnosis as JSON, and a page view costs nothing on `/metrics`' path.
#[test]
fn status_json_matches_the_page() {
    let e = Exporter::builder()
        .args(["--simulate", "h100-mig", "-c", "500"])
        .env("NODE_NAME", "node-a")
        .start();
    let r = http_get(e.port, "/status", &[]).unwrap();
    assert_eq!(r.header("content-type"), Some("application/json"));
    let status: serde_json::Value = serde_json::from_str(&r.text()).unwrap();
    assert_eq!(status["node"], "node-a");
    let gpus = status["gpus"].as_array().unwrap();
    assert!(!gpus.is_empty());
    let page = http_get(e.port, "/", &[]).unwrap().text();
    // One self-contained page: nothing loaded from elsewhere, links only to its own paths.
    for outside in [
        "src=", "<link", "url(", "@import", "http://", "https://", "//",
    ] {
        let rest = page.replace("<!--", "").replace("-->", "");
        assert!(
            !rest.contains(outside),
            "the page loads or links something outside itself ({outside})"
        );
    }
    assert!(page.contains("href=\"/metrics\""));
    for g in gpus {
        let uuid = g["uuid"].as_str().unwrap();
        assert!(
            page.contains(uuid),
            "{uuid} is in /status but not on the page"
        );
        for i in g["instances"].as_array().unwrap() {
            let mig = i["uuid"].as_str().unwrap();
            assert!(
                page.contains(mig),
                "{mig} is in /status but not on the page"
            );
        }
    }
    // The default counters lack the throttle and ECC fields: the page says so by name.
    let missing: Vec<&str> = status["not_configured"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p[1].as_str().unwrap())
        .collect();
    assert!(
        missing.contains(&"DCGM_FI_DEV_CLOCKS_EVENT_REASONS"),
        "{missing:?}"
    );
    assert!(page.contains("DCGM_FI_DEV_CLOCKS_EVENT_REASONS"));
}

/// Every holder of a time-sliced GPU is named, and a busy GPU or MIG instance that no pod
/// holds names its processes (pid and command name) and says no pod holds it.
#[test]
fn shared_gpus_list_every_holder_and_podless_work_names_its_processes() {
    let e = Exporter::builder()
        .args(["--simulate", "h100-mig", "-k", "-c", "500"])
        .env("NODE_NAME", "node-a")
        .start();
    let status: serde_json::Value =
        serde_json::from_str(&http_get(e.port, "/status", &[]).unwrap().text()).unwrap();
    let gpu = |n: usize| &status["gpus"][n];
    // GPU 4 is time-sliced between two pods.
    assert_eq!(
        gpu(4)["holders"],
        serde_json::json!(["inference/rerank-a/server", "inference/rerank-b/server"]),
        "{status:#}"
    );
    // GPU 7 and MIG instance 13 of GPU 2 run a host batch runner, in no pod.
    assert_eq!(gpu(7)["holders"], serde_json::json!([]));
    assert_eq!(
        gpu(7)["outside_pods"],
        serde_json::json!([{"pid": 47001, "name": "batch-runner"}])
    );
    let gi13 = gpu(2)["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["gpu_instance_id"] == 13)
        .expect("GI 13 on GPU 2");
    assert_eq!(gi13["holders"], serde_json::json!([]));
    assert_eq!(
        gi13["outside_pods"],
        serde_json::json!([
            {"pid": 42007, "name": "batch-runner"},
            {"pid": 42017, "name": "batch-runner"}
        ])
    );
    let page = http_get(e.port, "/", &[]).unwrap().text();
    for want in [
        "inference/rerank-a/server<br>inference/rerank-b/server",
        "no pod;</span> pid 47001 (batch-runner)",
        "no pod;</span> pid 42007 (batch-runner), pid 42017 (batch-runner)",
    ] {
        assert!(page.contains(want), "{want:?} not on the page:\n{page}");
    }
}
