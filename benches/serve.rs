//! Serving benchmark (custom harness; prints figures, asserts nothing about speed).
//!
//! 1. `/metrics` under concurrent keep-alive scrapes of the 8 × H100 (7 MIG instances each)
//!    exposition, gzip accepted as Prometheus does, against a baseline server that returns the
//!    same bytes from a constant (the cost floor of the HTTP stack itself).
//!    Then the landing page `/` alone, and `/metrics` again while 4 more clients keep loading
//!    `/`, against 4 more clients scraping `/metrics` (the control): a page view must cost no
//!    more than a scrape (the page is built once per tick).
//! 2. The release binary on that simulated node: time from start to `/ready`, and RSS after
//!    start-up and after a burst of scrapes.
//!
//! Run: `cargo bench --bench serve`. Loops are bounded and traffic stays on 127.0.0.1.

// Benchmark harness: a failed set-up step should stop the run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use bytes::Bytes;
use gpu_exporter::config::Config;
use gpu_exporter::exposition::counted::Counted;
use gpu_exporter::exposition::publish::Shared;
use gpu_exporter::exposition::publish::render;

const SCENARIO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/benches/fixtures/h100-8x7.toml"
);
const CLIENTS: usize = 8;
const REQUESTS_PER_CLIENT: usize = 500;

/// One keep-alive GET; returns the body length.
fn keepalive_get(stream: &mut BufReader<TcpStream>, path: &str) -> usize {
    write!(
        stream.get_mut(),
        "GET {path} HTTP/1.1\r\nHost: bench\r\nAccept-Encoding: gzip\r\n\r\n"
    )
    .unwrap();
    let mut len = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        stream.read_line(&mut line).unwrap();
        if line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            len = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0u8; len];
    stream.read_exact(&mut body).unwrap();
    len
}

fn load(addr: SocketAddr, path: &'static str) -> (Vec<Duration>, Duration, usize) {
    let started = Instant::now();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|_| {
            std::thread::spawn(move || {
                let tcp = TcpStream::connect(addr).unwrap();
                tcp.set_nodelay(true).unwrap();
                let mut s = BufReader::new(tcp);
                let mut lat = Vec::with_capacity(REQUESTS_PER_CLIENT);
                let mut bytes = 0;
                for _ in 0..REQUESTS_PER_CLIENT {
                    let t = Instant::now();
                    bytes = keepalive_get(&mut s, path);
                    lat.push(t.elapsed());
                }
                (lat, bytes)
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut size = 0;
    for t in threads {
        let (l, b) = t.join().unwrap();
        all.extend(l);
        size = b;
    }
    let wall = started.elapsed();
    all.sort();
    (all, wall, size)
}

fn pct(v: &[Duration], p: f64) -> Duration {
    v[((v.len() as f64 * p).ceil() as usize)
        .saturating_sub(1)
        .min(v.len() - 1)]
}

fn report(label: &str, (lat, wall, size): &(Vec<Duration>, Duration, usize)) {
    println!(
        "{label:<28} {size:>7} B/resp  p50 {:>8.1} µs  p99 {:>8.1} µs  max {:>8.1} µs  {:>8.0} req/s",
        pct(lat, 0.50).as_secs_f64() * 1e6,
        pct(lat, 0.99).as_secs_f64() * 1e6,
        lat.last().unwrap().as_secs_f64() * 1e6,
        lat.len() as f64 / wall.as_secs_f64()
    );
}

fn rss_kib(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

fn serving() {
    let node = common::SimNode::new(SCENARIO, 1);
    let counters = common::default_counters();
    let mut sampler = node.sampler(counters.clone());
    node.set_time(10.0);
    sampler.tick(10.0);
    node.set_time(15.0);
    let snap = sampler.tick(15.0);
    let mut cfg = Config::from_args(&[]).expect("default flags");
    cfg.hostname = Some("bench-node".into());
    let opts = cfg.encode_options();
    let published = render(snap, &Counted::default(), &counters, &opts);
    let (plain_len, gzip_len) = (published.plain.len(), published.gzip.len());
    let gz: Bytes = published.gzip.clone();
    let shared = Arc::new(Shared::new(published));

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (ours, baseline) = rt.block_on(async {
        let a = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let b = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let (aa, ba) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let a = gpu_exporter::serve::with_nodelay(a);
        let b = gpu_exporter::serve::with_nodelay(b);
        tokio::spawn(async move { axum::serve(a, gpu_exporter::serve::app(shared)).await });
        let static_app = Router::new().route(
            "/metrics",
            get(move || {
                let gz = gz.clone();
                async move { ([("content-encoding", "gzip")], gz) }
            }),
        );
        tokio::spawn(async move { axum::serve(b, static_app).await });
        (aa, ba)
    });
    println!(
        "exposition: {plain_len} bytes plain, {gzip_len} bytes gzip; {CLIENTS} clients x {REQUESTS_PER_CLIENT} keep-alive requests"
    );
    // Warm both, then measure alternately.
    load(ours, "/metrics");
    load(baseline, "/metrics");
    report("gpu-exporter /metrics", &load(ours, "/metrics"));
    report("baseline (constant bytes)", &load(baseline, "/metrics"));
    // The landing page is built once per tick from the same snapshot, like /metrics: what serving
    // it costs, and what /metrics costs while 4 more clients keep loading it.
    report("gpu-exporter / (landing)", &load(ours, "/"));
    // The control: the same 4 extra clients scraping /metrics instead.
    for (label, extra) in [
        ("/metrics, 4 clients on /", "/"),
        ("/metrics, 4 more on /metrics", "/metrics"),
    ] {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let others: Vec<_> = (0..4)
            .map(|_| {
                let stop = Arc::clone(&stop);
                std::thread::spawn(move || {
                    let tcp = TcpStream::connect(ours).unwrap();
                    tcp.set_nodelay(true).unwrap();
                    let mut s = BufReader::new(tcp);
                    let mut n = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        keepalive_get(&mut s, extra);
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        let busy = load(ours, "/metrics");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let n: u64 = others.into_iter().map(|t| t.join().unwrap()).sum();
        report(label, &busy);
        println!("  (the 4 extra clients got {extra} {n} times meanwhile)");
    }
    drop(rt);
}

fn binary() {
    let bin = env!("CARGO_BIN_EXE_gpu-exporter");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let started = Instant::now();
    let mut child = Command::new(bin)
        .args([
            "--simulate",
            SCENARIO,
            "-c",
            "1000",
            "-a",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("--nvml-lib")
        .arg(common::built_sim_lib())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ready_after = loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = write!(
                s,
                "GET /ready HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n"
            );
            let mut r = String::new();
            let _ = s.read_to_string(&mut r);
            if r.starts_with("HTTP/1.1 200") {
                break started.elapsed();
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "binary never became ready"
        );
        std::thread::sleep(Duration::from_millis(2));
    };
    std::thread::sleep(Duration::from_secs(3));
    let rss_idle = rss_kib(child.id());
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let scraped = load(addr, "/metrics");
    std::thread::sleep(Duration::from_secs(2));
    let rss_after = rss_kib(child.id());
    println!(
        "binary: ready {:.0} ms after spawn (process start + NVML init + first tick + encode)",
        ready_after.as_secs_f64() * 1e3
    );
    report("binary /metrics", &scraped);
    println!(
        "binary: RSS {:.1} MiB after start-up, {:.1} MiB after {} scrapes",
        rss_idle as f64 / 1024.0,
        rss_after as f64 / 1024.0,
        CLIENTS * REQUESTS_PER_CLIENT * 2
    );
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = child.wait();
}

fn main() {
    // `cargo test --benches` runs bench binaries with --test-ish flags; only measure under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    serving();
    binary();
}
