//! Text exposition format 0.0.4: snapshot + counter set → bytes.
//!
//! Families come out in counter-set order (stable across ticks), then the exporter's own
//! families (not under a dcgm-exporter profile unless asked for), then the self-metrics; the
//! operator's cardinality controls ([`filter`]) apply last. The figures that the server and the
//! Kubernetes writers count come in beside the snapshot ([`counted`]), never inside it. Each family has exactly one `# HELP`/`# TYPE` pair and is omitted when it has no
//! series. Metric names are the CSV names verbatim (no suffix added). Label values and help
//! text are escaped; NaN and ±Inf are written as Prometheus expects. This module does no I/O.

pub mod counted;
mod device_info;
pub mod filter;
mod health;
mod identity;
mod interconnect;
pub mod publish;
pub mod self_metrics;
pub mod text;

pub use text::{EncodeOptions, escape_help, escape_label, write_header, write_label, write_value};

use std::fmt::Write as _;
use std::io::Write as _;

use flate2::Compression;
use flate2::write::GzEncoder;

use crate::catalogue::Level;
use crate::catalogue::csv::{CounterRow, CounterSet};
use crate::health::xid::err_msg as xid_err_msg;
use crate::snapshot::{EntityId, Labels, Snapshot, Value};

use counted::Counted;
use identity::{write_csv_labels, write_identity};

/// Encodes the snapshot: GPU families in counter-set order, then self-metrics, with the
/// figures the layers above counted (`counted`: the server's, the Kubernetes writers') among
/// them; a caller with nothing counted (a test, `check`) passes `&Counted::default()`.
pub fn encode(
    snap: &Snapshot,
    counted: &Counted,
    counters: &CounterSet,
    opts: &EncodeOptions,
) -> Vec<u8> {
    let mut out = String::with_capacity(64 * 1024);
    // Label rows are written sorted by name, as dcgm-exporter does.
    let mut label_order: Vec<(usize, &str)> = counters
        .labels()
        .enumerate()
        .map(|(i, r)| (i, r.name.as_str()))
        .collect();
    label_order.sort_by(|a, b| a.1.cmp(b.1));
    let prefixes = entity_prefixes(snap, &label_order, opts);
    for (slot, row) in counters.metrics().enumerate() {
        match row.field.level {
            Level::Link => interconnect::encode_link_row(&mut out, snap, row, opts),
            Level::Switch => {
                interconnect::encode_switch_row(&mut out, snap, (slot, row), &label_order, opts);
            }
            _ => encode_row(&mut out, snap, (slot, row), &prefixes, opts),
        }
    }
    if opts.own_families {
        device_info::encode(&mut out, snap, &label_order, opts);
        encode_xid_totals(&mut out, snap, opts);
        interconnect::encode(&mut out, snap, opts, write_identity);
        health::encode(&mut out, snap, opts);
        encode_attribution(&mut out, snap, opts);
    }
    self_metrics::encode(&mut out, snap, counted, opts);
    if opts.cardinality.is_empty() {
        out.into_bytes()
    } else {
        opts.cardinality.apply(&out).into_bytes()
    }
}

/// One copy of each series, with no holder labels (the `lean` shape).
const NO_HOLDER: &[Labels] = &[Labels::new()];

/// Each entity's identity (and in the `full` shape its descriptions and CSV labels, in
/// `label_order`), written (and escaped) once per encode instead of once per series: every
/// family of the entity repeats them.
fn entity_prefixes(
    snap: &Snapshot,
    label_order: &[(usize, &str)],
    opts: &EncodeOptions,
) -> Vec<String> {
    snap.entities
        .iter()
        .map(|e| {
            let mut s = String::with_capacity(256);
            let mut first = true;
            write_identity(&mut s, &mut first, &e.id, opts);
            if opts.shape.full() {
                write_csv_labels(&mut s, &mut first, e, label_order);
            }
            s
        })
        .collect()
}

/// One counters row of an entity level (GPU, MIG instance): its header once, before the
/// first entity that has a value, then each entity's series.
fn encode_row(
    out: &mut String,
    snap: &Snapshot,
    (slot, row): (usize, &CounterRow),
    prefixes: &[String],
    opts: &EncodeOptions,
) {
    let mut header = false;
    for (ei, (e, prefix)) in snap.entities.iter().zip(prefixes).enumerate() {
        let Some(Some(value)) = e.values.get(slot) else {
            continue;
        };
        if !header {
            // A windowed count goes up and down: it is a gauge whatever the CSV says (a count
            // since start keeps the CSV's type), except where dcgm-exporter 4.8.2's types are
            // asked for.
            let kind = match value {
                _ if opts.types_as_written => row.kind.as_str(),
                Value::Window(w) if w.window_ms.is_some() => "gauge",
                _ if opts.gauge_fields.contains(&row.field.name) => "gauge",
                _ => row.kind.as_str(),
            };
            write_header(out, &row.name, &row.help, kind);
            header = true;
        }
        let holders = if opts.shape.full() {
            snap.attribution.series_labels(ei)
        } else {
            NO_HOLDER
        };
        encode_value(out, &row.name, prefix, holders, value);
    }
}

/// One entity's value of a row as its series: one per holder variant (usually exactly one),
/// and for a value with labels of its own (an Xid, DCGM's health watches, a windowed count)
/// one per label set.
fn encode_value(out: &mut String, name: &str, prefix: &str, holders: &[Labels], value: &Value) {
    let series = |out: &mut String, extra: &dyn Fn(&mut String, &mut bool), v: f64| {
        for holder in holders {
            out.push_str(name);
            out.push('{');
            out.push_str(prefix);
            // The prefix always holds `gpu`: what follows needs its comma.
            let mut first = false;
            holder.write_to(out);
            extra(out, &mut first);
            out.push_str("} ");
            write_value(out, v);
            out.push('\n');
        }
    };
    match value {
        Value::Num(v) => series(out, &|_, _| {}, *v),
        Value::Xid(code) => series(
            out,
            &|out, first| {
                let _ = write!(out, ",err_code=\"{code}\"");
                write_label(out, first, "err_msg", xid_err_msg(*code));
            },
            *code as f64,
        ),
        Value::Health(watches) => {
            for w in watches {
                series(
                    out,
                    &|out, first| {
                        write_label(out, first, "health_watch", w.watch);
                        write_label(out, first, "health_error_code", &w.code);
                    },
                    f64::from(w.result),
                );
            }
        }
        Value::Window(w) => {
            let window = w.window_ms.map(|ms| ms.to_string());
            if let (true, Some(window)) = (w.counts.is_empty(), &window) {
                series(
                    out,
                    &|out, first| write_label(out, first, "window_size_in_ms", window),
                    0.0,
                );
            }
            for (label, n) in &w.counts {
                series(
                    out,
                    &|out, first| {
                        write_label(out, first, w.label, label);
                        if let Some(window) = &window {
                            write_label(out, first, "window_size_in_ms", window);
                        }
                    },
                    *n as f64,
                );
            }
        }
    }
}

/// `gpu_xid_errors_total` and `gpu_xid_last_seen_timestamp_seconds`, per physical GPU and
/// Xid code. They are ours (not CSV rows): always on while Xid events are watched.
fn encode_xid_totals(out: &mut String, snap: &Snapshot, opts: &EncodeOptions) {
    let line = |out: &mut String, name: &str, id: &EntityId, code: u64, v: f64| {
        out.push_str(name);
        out.push('{');
        let mut first = true;
        write_identity(out, &mut first, id, opts);
        let _ = write!(out, ",xid=\"{code}\"");
        out.push_str("} ");
        write_value(out, v);
        out.push('\n');
    };
    // (family, help, type, value of one code: `None` leaves the series out).
    type Pick = fn(&(u64, u64, Option<f64>)) -> Option<f64>;
    let families: [(&str, &str, &str, Pick); 2] = [
        (
            "gpu_xid_errors_total",
            "Xid errors reported by the driver since the exporter started, per code; repeats are counted.",
            "counter",
            |(_, n, _)| Some(*n as f64),
        ),
        (
            "gpu_xid_last_seen_timestamp_seconds",
            "Unix time of the last Xid error of each code seen since the exporter started.",
            "gauge",
            |(_, _, t)| *t,
        ),
    ];
    for (name, help, kind, pick) in families {
        let mut header = false;
        for x in &snap.xids {
            for c in &x.codes {
                let Some(v) = pick(c) else { continue };
                if !header {
                    write_header(out, name, help, kind);
                    header = true;
                }
                line(out, name, &x.id, c.0, v);
            }
        }
    }
}

/// The attribution families: who holds each device, what the kubelet can allocate, and each
/// container's use of shared devices.
fn encode_attribution(out: &mut String, snap: &Snapshot, opts: &EncodeOptions) {
    let a = &snap.attribution;
    let entity_line = |out: &mut String, name: &str, entity: usize, suffix: &Labels, v: f64| {
        let Some(e) = snap.entities.get(entity) else {
            return;
        };
        out.push_str(name);
        out.push('{');
        let mut first = true;
        write_identity(out, &mut first, &e.id, opts);
        suffix.write_to(out);
        out.push_str("} ");
        write_value(out, v);
        out.push('\n');
    };
    if let Some(join) = &a.join {
        // The HPC jobs are holders too; the full shape has them on every series instead.
        let jobs = if opts.shape.full() {
            &[][..]
        } else {
            &join.jobs[..]
        };
        if !join.allocations.is_empty() || !jobs.is_empty() {
            write_header(
                out,
                "gpu_allocation_info",
                "A container (or HPC job) holding a GPU or MIG instance (one row per holder; value 1).",
                "gauge",
            );
            for (entity, suffix) in join.allocations.iter().chain(jobs) {
                entity_line(out, "gpu_allocation_info", *entity, suffix, 1.0);
            }
        }
        type Pick = fn(&(String, Option<usize>, usize)) -> Option<usize>;
        let families: [(&str, &str, Pick); 2] = [
            (
                "gpu_allocatable_devices",
                "Device IDs of a GPU resource the kubelet can allocate (GetAllocatableResources).",
                |(_, a, _)| *a,
            ),
            (
                "gpu_allocated_devices",
                "Device IDs of a GPU resource allocated to containers (pod-resources List).",
                |(_, _, n)| Some(*n),
            ),
        ];
        for (name, help, pick) in families {
            let mut header = false;
            for r in &join.resources {
                let Some(v) = pick(r) else { continue };
                if !header {
                    write_header(out, name, help, "gauge");
                    header = true;
                }
                out.push_str(name);
                out.push('{');
                let mut first = true;
                write_label(out, &mut first, "resource", &r.0);
                if let Some(h) = &opts.hostname {
                    write_label(out, &mut first, opts.host_label, h);
                }
                out.push_str("} ");
                write_value(out, v as f64);
                out.push('\n');
            }
        }
    }
    type Use = fn(&crate::snapshot::ContainerUse) -> Option<f64>;
    let families: [(&str, &str, Use); 3] = [
        (
            "gpu_container_memory_used_bytes",
            "Framebuffer used by a container's processes on a GPU or MIG instance (NVML running processes).",
            |c| c.memory_bytes,
        ),
        (
            "gpu_container_sm_utilization_ratio",
            "SM utilization of a container's processes on a GPU over the last interval, 0-1 (NVML process utilization; not served on MIG).",
            |c| c.sm_ratio,
        ),
        (
            "gpu_container_processes",
            "Processes of a container running on a GPU or MIG instance.",
            |c| Some(c.processes as f64),
        ),
    ];
    for (name, help, pick) in families {
        let mut header = false;
        for c in &a.containers {
            let Some(v) = pick(c) else { continue };
            if !header {
                write_header(out, name, help, "gauge");
                header = true;
            }
            entity_line(out, name, c.entity, &c.labels, v);
        }
    }
}

/// Gzip-compresses an exposition as one gzip member, at the fast level (it runs once per tick)
/// with the full 32 KiB window (smaller windows compress the page worse and more slowly). The
/// compressor (about 370 KiB of tables) lives for this call only.
pub fn gzip(data: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::with_capacity(data.len() / 8 + 64), Compression::fast());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(data);
    enc.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_makes_one_whole_member_per_call() {
        let big: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("m{{a=\"{}\"}} {}\n", i % 97, i % 10).into_bytes())
            .collect();
        for data in [&b"one\n"[..], &big[..], b"", &b"two\n"[..]] {
            let z = gzip(data);
            let mut back = Vec::new();
            std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&z[..]), &mut back)
                .unwrap();
            assert_eq!(back, data);
            assert_eq!(&z[..2], &[0x1f, 0x8b]);
            if data.len() > 1000 {
                assert!(
                    z.len() < data.len() / 2,
                    "{} bytes for {}",
                    z.len(),
                    data.len()
                );
            }
        }
    }

    #[test]
    fn label_escaping() {
        let mut s = String::new();
        escape_label(&mut s, "a\\b\"c\nd");
        assert_eq!(s, "a\\\\b\\\"c\\nd");
    }

    #[test]
    fn help_escaping_keeps_quotes() {
        let mut s = String::new();
        escape_help(&mut s, "say \"hi\"\\\nnext");
        assert_eq!(s, "say \"hi\"\\\\\\nnext");
    }

    #[test]
    fn values() {
        let cases = [
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (81559.0, "81559"),
            (0.25, "0.25"),
            (-3.5, "-3.5"),
            (1e21, "1000000000000000000000"),
        ];
        for (v, want) in cases {
            let mut s = String::new();
            write_value(&mut s, v);
            assert_eq!(s, want);
        }
    }

    #[test]
    fn gzip_round_trips() {
        use std::io::Read;
        let data = b"# HELP x y\n# TYPE x gauge\nx 1\n".repeat(100);
        let gz = gzip(&data);
        assert!(gz.len() < data.len());
        let mut back = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut back)
            .unwrap();
        assert_eq!(back, data);
    }
}
