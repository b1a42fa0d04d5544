//! Benchmarks of the per-tick pipeline on the 8 × H100 (7 MIG instances each) simulated node
//! with the full default counter set: one sampler tick (NVML calls into the simulated library
//! included), encoding the exposition, and gzip; and the NVML read with and without the health
//! model's watched fields. Run: `cargo bench --bench pipeline`.

// Benchmark harness: a failed set-up step should stop the run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::hint::black_box;
use std::sync::Arc;

use gpu_exporter::catalogue::csv::CounterSet;
use gpu_exporter::config::{Cli, Config};
use gpu_exporter::daemon::pipeline::{Pipeline, Simulated};
use gpu_exporter::exposition::counted::Counted;
use gpu_exporter::exposition::{EncodeOptions, encode, gzip};
use gpu_exporter::sampler::Sampler;
use gpu_exporter::snapshot::Snapshot;

const SCENARIO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/benches/fixtures/h100-8x7.toml"
);

fn main() {
    divan::main();
}

struct Node {
    node: common::SimNode,
    sampler: Sampler,
    counters: Arc<CounterSet>,
    t: f64,
}

fn node() -> Node {
    let node = common::SimNode::new(SCENARIO, 1);
    let counters = common::default_counters();
    // As the daemon runs it: the tick never waits for the Xid thread (tests make it wait).
    let path = node.lib_path().to_path_buf();
    let mut sampler = Sampler::new(
        Box::new(move || gpu_exporter::gpu::open(Some(&path))),
        counters.clone(),
    );
    node.set_time(10.0);
    sampler.tick(10.0);
    Node {
        node,
        sampler,
        counters,
        t: 10.0,
    }
}

/// The encoder's options of a node with the default flags, named `bench-node`.
fn encode_options() -> EncodeOptions {
    let mut cfg = Config::from_args(&[]).expect("default flags");
    cfg.hostname = Some("bench-node".into());
    cfg.encode_options()
}

fn snapshot() -> (Snapshot, Arc<CounterSet>) {
    let mut n = node();
    n.node.set_time(15.0);
    let snap = n.sampler.tick(15.0);
    assert_eq!(snap.entities.len(), 8 + 56, "8 GPUs + 56 MIG instances");
    (snap, n.counters)
}

/// One sampler tick: enumerate 8 GPUs and 56 MIG instances and read every default field.
#[divan::bench(sample_count = 200)]
fn sampler_tick(bencher: divan::Bencher) {
    let mut n = node();
    bencher.bench_local(|| {
        n.t += 1.0;
        n.node.set_time(n.t);
        black_box(n.sampler.tick(n.t))
    });
}

/// Encoding one snapshot into the text exposition.
#[divan::bench(sample_count = 500)]
fn encode_exposition(bencher: divan::Bencher) {
    let (snap, counters) = snapshot();
    let opts = encode_options();
    bencher.bench_local(|| black_box(encode(&snap, &Counted::default(), &counters, &opts)));
}

/// Gzip of the encoded exposition (done once per tick, not per scrape).
#[divan::bench(sample_count = 200)]
fn gzip_exposition(bencher: divan::Bencher) {
    let (snap, counters) = snapshot();
    let plain = encode(&snap, &Counted::default(), &counters, &encode_options());
    println!(
        "exposition: {} bytes plain, {} bytes gzip",
        plain.len(),
        gzip(&plain).len()
    );
    bencher.bench_local(|| black_box(gzip(&plain)));
}

/// The 8 × A100 node (7 MIG instances each, no GPM) through the daemon's own pipeline, with
/// the GPU Operator's counters (`dcp-metrics-included.csv`: five profiling fields), DCGM in
/// `mode` (`embedded`: the simulated libdcgm; `off`: NVML only, the profiling rows unsupported).
fn a100_pipeline(
    mode: &str,
) -> (
    gpu_exporter::daemon::pipeline::Pipeline,
    tokio::runtime::Runtime,
) {
    let scenario = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/benches/fixtures/a100-8x7.toml"
    );
    let counters_file = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/counters/dcp-metrics-included.csv"
    );
    let nvml = common::built_sim_lib();
    let argv = [
        "gpu-exporter",
        "--simulate",
        scenario,
        "--nvml-lib",
        nvml.to_str().unwrap(),
        "-f",
        counters_file,
        "--dcgm-mode",
        mode,
        "-c",
        "1000",
    ];
    // As the daemon starts: the merged flags, the simulated node, then the configuration
    // validated for it.
    let settings = Cli::try_parse_go_style(argv.into_iter().map(Into::into))
        .expect("flags")
        .merge_config_file()
        .expect("flags");
    let rt = gpu_exporter::daemon::runtime().expect("runtime");
    let (simulated, site) =
        Simulated::start(settings.simulation().expect("flags").as_ref(), &rt).expect("simulate");
    let cfg = settings.validate(&site).expect("flags");
    let counters = Arc::new(cfg.load_counters().expect("counters").set);
    let room = cfg.fit_labels(&counters).expect("labels");
    let mut p = Pipeline::build(&cfg, &counters, room, &rt, simulated).expect("pipeline");
    // Until DCGM serves (watches made, first values cached), or a few ticks without it.
    for _ in 0..50 {
        let snap = p.sampler.tick(gpu_exporter::base::clock::unix_now());
        assert_eq!(snap.entities.len(), 8 + 56, "8 GPUs + 56 MIG instances");
        if mode == "off" || snap.stats.dcgm.up() == Some(true) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    (p, rt)
}

/// One tick of the 8 × A100 node, profiling for the 56 MIG instances read from DCGM
/// (embedded, simulated libdcgm) within the tick.
#[divan::bench(sample_count = 200)]
fn sampler_tick_a100_dcgm(bencher: divan::Bencher) {
    let (mut p, _rt) = a100_pipeline("embedded");
    bencher.bench_local(|| black_box(p.sampler.tick(gpu_exporter::base::clock::unix_now())));
}

/// The same node and counters with DCGM off (the profiling rows listed unsupported).
#[divan::bench(sample_count = 200)]
fn sampler_tick_a100_no_dcgm(bencher: divan::Bencher) {
    let (mut p, _rt) = a100_pipeline("off");
    bencher.bench_local(|| black_box(p.sampler.tick(gpu_exporter::base::clock::unix_now())));
}

/// A reader over the bench node and the default counter set.
fn reader() -> (
    common::SimNode,
    gpu_exporter::gpu::reader::Reader,
    Arc<CounterSet>,
) {
    let node = common::SimNode::new(SCENARIO, 1);
    let nvml = gpu_exporter::gpu::open(Some(node.lib_path())).unwrap();
    let mut r = gpu_exporter::gpu::reader::Reader::new(nvml);
    node.set_time(10.0);
    let counters = common::default_counters();
    r.read(&counters, 10.0).unwrap();
    (node, r, counters)
}

/// The NVML read of a tick as it was before the health model: the default counters file's
/// rows only (compare with `read_watched_and_judge`).
#[divan::bench(sample_count = 200)]
fn read_exported_only(bencher: divan::Bencher) {
    let (node, mut r, counters) = reader();
    let mut t = 10.0;
    bencher.bench_local(|| {
        t += 1.0;
        node.set_time(t);
        black_box(r.read(&counters, t).unwrap())
    });
}

/// The NVML read of a tick with the health model's watched fields added to the default
/// counters file's rows, the model's verdict, and the watched slots taken off again: what
/// the sampler does now.
#[divan::bench(sample_count = 200)]
fn read_watched_and_judge(bencher: divan::Bencher) {
    use gpu_exporter::health;
    let (node, mut r, counters) = reader();
    let watched = health::watched_set(&counters);
    r.read(&watched, 10.5).unwrap();
    let mut model = health::HealthModel::default();
    let mut t = 10.0;
    bencher.bench_local(|| {
        t += 1.0;
        node.set_time(t);
        let data = r.read(&watched, t).unwrap();
        let mut snap = Snapshot {
            taken_at_unix: t,
            entities: data.entities,
            devices: data.devices,
            xids: data.xids,
            interconnect: data.interconnect,
            ..Snapshot::default()
        };
        snap.health = model.evaluate(&snap, &watched, &counters);
        health::exported_only(&mut snap.entities, &counters);
        black_box(snap)
    });
}
