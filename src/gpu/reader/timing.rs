//! How long reading each field of a counter set takes, for `gpu-exporter check`: every field
//! read alone on every selected entity, three times, minus the cost of a read with no field
//! (device enumeration and identity), the median kept. A slow field (some NVML queries take
//! milliseconds per GPU) shows up here before it makes ticks late.
//!
//! Owns only the measurement. It must not change the daemon's reader: it uses a reader of its
//! own, which it drops when done.

use std::time::{Duration, Instant};

use nvml_wrapper::Nvml;

use super::{Reader, ReaderOptions};
use crate::catalogue::csv::CounterSet;

/// Reads per measurement; the median is kept.
const REPEATS: usize = 3;

fn median_read(reader: &mut Reader, set: &CounterSet, now: f64) -> Duration {
    let mut times: Vec<Duration> = (0..REPEATS)
        .map(|_| {
            let t = Instant::now();
            let _ = reader.read(set, now);
            t.elapsed()
        })
        .collect();
    times.sort();
    times[REPEATS / 2]
}

/// (field name, time one read of it took on all selected entities) for every metric row of
/// `counters`, in file order.
pub fn time_fields(
    nvml: &'static Nvml,
    opts: ReaderOptions,
    counters: &CounterSet,
    now: f64,
) -> Vec<(&'static str, Duration)> {
    let mut reader = Reader::with_options(nvml, opts);
    let empty = CounterSet {
        origin: counters.origin.clone(),
        rows: Vec::new(),
        warnings: Vec::new(),
    };
    // Warm the identity caches first, so that the baseline and every field pay the same.
    let _ = reader.read(&empty, now);
    let baseline = median_read(&mut reader, &empty, now);
    counters
        .metrics()
        .map(|row| {
            let one = CounterSet {
                origin: counters.origin.clone(),
                rows: vec![row.clone()],
                warnings: Vec::new(),
            };
            let t = median_read(&mut reader, &one, now);
            (row.field.name, t.saturating_sub(baseline))
        })
        .collect()
}
