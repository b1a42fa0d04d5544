//! HTTP endpoints driven through the router (no socket): `/metrics` plain and gzip,
//! `/health`, `/ready` before and after the first sample, and the landing page and `/status`
//! (DCGM among the sources, off here).
#![cfg(feature = "sim")]
// runs the simulated node: needs the default `sim` feature

// Integration-test crate: every function here is test code.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Read;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use gpu_exporter::catalogue::csv::CounterSet;
use gpu_exporter::exposition::EncodeOptions;
use gpu_exporter::exposition::counted::Counted;
use gpu_exporter::exposition::publish::Shared;
use gpu_exporter::exposition::publish::{Published, render};
use gpu_exporter::serve::{CONTENT_TYPE, app};
use gpu_exporter::snapshot::Snapshot;
use http_body_util::BodyExt;
use tower::ServiceExt;

async fn get(
    shared: &Arc<Shared>,
    path: &str,
    gzip: bool,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut req = Request::get(path);
    if gzip {
        req = req.header(header::ACCEPT_ENCODING, "gzip, deflate");
    }
    let resp = app(Arc::clone(shared))
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let headers = resp.headers().clone();
    let body = resp
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    (status, headers, body)
}

fn node_state() -> (
    common::SimNode,
    Arc<Shared>,
    gpu_exporter::sampler::Sampler,
    Arc<gpu_exporter::catalogue::csv::CounterSet>,
) {
    let node = common::SimNode::new("h100-mig", 1);
    node.set_time(20.0);
    let counters = common::default_counters();
    let sampler = node.sampler(counters.clone());
    let shared = Arc::new(Shared::new(page(Snapshot::default(), &counters)));
    (node, shared, sampler, counters)
}

/// `snap` rendered with the default options and nothing counted.
fn page(snap: Snapshot, counters: &Arc<CounterSet>) -> Published {
    render(
        snap,
        &Counted::default(),
        counters,
        &EncodeOptions::default(),
    )
}

/// Publishes `snap` as the sampler does after a tick that read NVML.
fn publish(shared: &Shared, snap: Snapshot, counters: &Arc<CounterSet>) {
    shared.publish(page(snap, counters), true);
}

#[tokio::test]
async fn endpoints_before_and_after_the_first_sample() {
    let (_node, shared, mut sampler, counters) = node_state();

    let (s, _, body) = get(&shared, "/health", false).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(body, b"ok\n");
    let (s, _, _) = get(&shared, "/ready", false).await;
    assert_eq!(
        s,
        StatusCode::SERVICE_UNAVAILABLE,
        "not ready before the first sample"
    );
    let (s, h, body) = get(&shared, "/metrics", false).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h[header::CONTENT_TYPE], CONTENT_TYPE);
    let text = String::from_utf8(body).unwrap();
    assert!(
        text.contains("gpu_exporter_build_info{"),
        "self-metrics served before NVML: {text}"
    );
    assert!(!text.contains("DCGM_FI_"));

    let snap = sampler.tick(1.0);
    publish(&shared, snap, &counters);
    let (s, _, body) = get(&shared, "/ready", false).await;
    assert_eq!(s, StatusCode::OK, "{}", String::from_utf8_lossy(&body));

    let (s, h, plain) = get(&shared, "/metrics", false).await;
    assert_eq!(s, StatusCode::OK);
    assert!(h.get(header::CONTENT_ENCODING).is_none());
    let plain_text = String::from_utf8(plain.clone()).unwrap();
    assert!(plain_text.contains("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\""));

    let (s, h, gz) = get(&shared, "/metrics", true).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(h[header::CONTENT_ENCODING], "gzip");
    assert_eq!(h[header::VARY], "Accept-Encoding");
    assert!(
        gz.len() < plain.len() / 3,
        "gzip should shrink the exposition"
    );
    let mut unzipped = Vec::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_end(&mut unzipped)
        .unwrap();
    assert_eq!(unzipped, plain, "gzip body decodes to the plain body");

    let (s, h, page) = get(&shared, "/", false).await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        h[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let page = String::from_utf8(page).unwrap();
    assert!(page.contains("NVIDIA H100 80GB HBM3"));
    assert!(page.contains("1g.10gb (GI "), "MIG instances listed");
    for link in ["/metrics", "/health", "/ready"] {
        assert!(page.contains(&format!("href=\"{link}\"")));
    }
    // No DCGM client (`--dcgm-mode off`): DCGM is a source all the same, off, on the page too.
    assert!(
        page.contains("<tr id=\"dcgm\"><td>dcgm</td><td><span class=\"na\">off</span>"),
        "{page}"
    );
    let (s, _, body) = get(&shared, "/status", false).await;
    assert_eq!(s, StatusCode::OK);
    let status: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let dcgm = status["sources"]
        .as_array()
        .and_then(|s| s.iter().find(|s| s["source"] == "dcgm"))
        .unwrap_or_else(|| panic!("no dcgm source: {status}"));
    assert_eq!(
        (&dcgm["mode"], &dcgm["state"], &dcgm["up"]),
        (&"off".into(), &"off".into(), &false.into()),
        "{dcgm}"
    );
    assert!(dcgm["since_unix"].is_null(), "{dcgm}");
    assert_eq!(status["unavailable"], serde_json::json!([]), "{status}");

    let (s, _, _) = get(&shared, "/nope", false).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}

/// `--health-require-gpus`: `/health` fails until a tick has exported a GPU, then passes.
#[tokio::test]
async fn health_requires_gpus_when_asked() {
    use gpu_exporter::serve::{ServeOptions, app_with};
    let (_node, shared, mut sampler, counters) = node_state();
    let opts = ServeOptions {
        health_require_gpus: true,
        ..ServeOptions::default()
    };
    let health = || async {
        let resp = app_with(Arc::clone(&shared), opts.clone())
            .oneshot(Request::get("/health").body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8_lossy(&body).into_owned())
    };
    let (s, body) = health().await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert!(body.contains("--health-require-gpus"), "{body}");
    // Without the option, the same state is healthy.
    let (s, _, _) = get(&shared, "/health", false).await;
    assert_eq!(s, StatusCode::OK);

    let snap = sampler.tick(1.0);
    publish(&shared, snap, &counters);
    let (s, body) = health().await;
    assert_eq!(s, StatusCode::OK, "{body}");
}

/// `--max-concurrent-scrapes`: a scrape counts until its body has been sent; one more than the
/// limit gets 503, and a slot frees when a body is done.
#[tokio::test]
async fn scrapes_beyond_the_limit_get_503() {
    use gpu_exporter::serve::{ServeOptions, app_with};
    let (_node, shared, mut sampler, counters) = node_state();
    let snap = sampler.tick(1.0);
    publish(&shared, snap, &counters);
    let router = app_with(
        Arc::clone(&shared),
        ServeOptions {
            max_concurrent_scrapes: 2,
            ..ServeOptions::default()
        },
    );
    let scrape = || {
        router
            .clone()
            .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
    };
    // Two scrapes whose bodies are not read yet hold both slots.
    let first = scrape().await.unwrap();
    let second = scrape().await.unwrap();
    assert_eq!(first.status(), StatusCode::OK);
    assert_eq!(second.status(), StatusCode::OK);
    let third = scrape().await.unwrap();
    assert_eq!(third.status(), StatusCode::SERVICE_UNAVAILABLE);
    let why = third.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&why).contains("--max-concurrent-scrapes"));
    // Sending the first body frees its slot.
    let text = first.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&text).contains("DCGM_FI_DEV_GPU_TEMP{"));
    assert_eq!(scrape().await.unwrap().status(), StatusCode::OK);
    drop(second);
}

/// The watchdog: a sampler that stops publishing for longer than the limit turns `/ready` 503,
/// and `/metrics` (plain text even when gzip is asked for) carries
/// `gpu_exporter_sampler_stalled_seconds`; the next publish clears both.
#[tokio::test]
async fn a_stalled_sampler_turns_ready_503() {
    let (_node, shared, mut sampler, counters) = node_state();
    shared.set_stall_after(std::time::Duration::from_millis(200));
    let snap = sampler.tick(1.0);
    publish(&shared, snap, &counters);
    assert_eq!(get(&shared, "/ready", false).await.0, StatusCode::OK);
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let (s, _, body) = get(&shared, "/ready", false).await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE);
    let body = String::from_utf8(body).unwrap();
    assert!(
        body.contains("the sampler has not finished a tick for"),
        "{body}"
    );
    let (s, h, text) = get(&shared, "/metrics", true).await;
    assert_eq!(s, StatusCode::OK);
    assert!(h.get(header::CONTENT_ENCODING).is_none());
    let text = String::from_utf8(text).unwrap();
    assert!(
        text.contains("DCGM_FI_DEV_GPU_TEMP{"),
        "the last values stay"
    );
    let stalled: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("gpu_exporter_sampler_stalled_seconds "))
        .collect();
    assert_eq!(stalled.len(), 1, "{text}");
    assert!(common::value(stalled[0]) >= 0.2, "{}", stalled[0]);
    // The sampler comes back.
    let snap = sampler.tick(2.0);
    publish(&shared, snap, &counters);
    assert_eq!(get(&shared, "/ready", false).await.0, StatusCode::OK);
    let (_, h, _) = get(&shared, "/metrics", true).await;
    assert_eq!(h[header::CONTENT_ENCODING], "gzip");
}
