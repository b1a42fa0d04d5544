//! The exporter's own families: `gpu_exporter_*` and `gpu_device_up`.
//!
//! They follow Prometheus conventions (base units, `_total` on counters, `_info` for
//! identity) because they are ours, not dcgm-exporter's. Written after the GPU families by
//! `encode`; reads only the snapshot and what the layers above counted (`counted::Counted`).

use std::fmt::Write as _;

use crate::base::version::VERSION;
use crate::exposition::counted::{Counted, DropReason, KubeWrites};
use crate::exposition::text::{EncodeOptions, write_header, write_value};
use crate::snapshot::{Attribution, ReloadStats, SampleStats, Snapshot};

/// Appends the self-metrics of `snap` and of `counted` to `out`, one group of families after
/// the other.
pub fn encode(out: &mut String, snap: &Snapshot, counted: &Counted, opts: &EncodeOptions) {
    let st = &snap.stats;
    sampler_families(out, st);
    if let Some(p) = &st.process {
        process_families(out, p);
    }
    if let Some(r) = &st.counters_reload {
        reload_families(out, r);
    }
    field_families(out, st);
    attribution_families(out, &snap.attribution);
    server_families(out, counted);
    if let Some(w) = &counted.kube_writes {
        kube_write_families(out, w);
    }
    device_families(out, snap, opts);
}

/// The build, NVML and DCGM state and the sampler's tick figures.
fn sampler_families(out: &mut String, st: &SampleStats) {
    write_header(
        out,
        "gpu_exporter_build_info",
        "Build information of gpu-exporter; always 1.",
        "gauge",
    );
    let _ = writeln!(out, "gpu_exporter_build_info{{version=\"{VERSION}\"}} 1");

    write_header(
        out,
        "gpu_exporter_nvml_up",
        "1 when NVML answered in the last sample, 0 when it is missing or failing.",
        "gauge",
    );
    let _ = writeln!(out, "gpu_exporter_nvml_up {}", u8::from(st.nvml_up));

    if let Some(up) = st.dcgm.up() {
        write_header(
            out,
            "gpu_exporter_dcgm_up",
            "1 when DCGM (embedded or the remote hostengine) answered in the last sample, 0 \
             when its library is missing or it is unreachable; absent with --dcgm-mode off.",
            "gauge",
        );
        let _ = writeln!(out, "gpu_exporter_dcgm_up {}", u8::from(up));
    }

    write_header(
        out,
        "gpu_exporter_sample_duration_seconds",
        "Wall time of the last sampling tick, NVML calls included.",
        "gauge",
    );
    out.push_str("gpu_exporter_sample_duration_seconds ");
    write_value(out, st.duration.as_secs_f64());
    out.push('\n');

    write_header(
        out,
        "gpu_exporter_samples_total",
        "Sampling ticks since start.",
        "counter",
    );
    let _ = writeln!(out, "gpu_exporter_samples_total {}", st.ticks);

    write_header(
        out,
        "gpu_exporter_last_sample_success_timestamp_seconds",
        "Unix time of the last tick in which NVML answered; 0 if none yet.",
        "gauge",
    );
    out.push_str("gpu_exporter_last_sample_success_timestamp_seconds ");
    write_value(out, st.last_success_unix);
    out.push('\n');
}

/// The counters file's hot reload.
fn reload_families(out: &mut String, r: &ReloadStats) {
    write_header(
        out,
        "gpu_exporter_counters_last_reload_successful",
        "1 when the counters file last read (at start, on change or on SIGHUP) was applied; 0 when it could not be read or parsed and the previous set is still in use.",
        "gauge",
    );
    let _ = writeln!(
        out,
        "gpu_exporter_counters_last_reload_successful {}",
        u8::from(r.last_ok)
    );
    write_header(
        out,
        "gpu_exporter_counters_last_reload_success_timestamp_seconds",
        "Unix time at which the counter set in use was loaded.",
        "gauge",
    );
    out.push_str("gpu_exporter_counters_last_reload_success_timestamp_seconds ");
    write_value(out, r.last_success_unix);
    out.push('\n');
    write_header(
        out,
        "gpu_exporter_counters_reloads_total",
        "Counters file reloads since start, by result (the start-up load is not counted).",
        "counter",
    );
    let _ = writeln!(
        out,
        "gpu_exporter_counters_reloads_total{{result=\"success\"}} {}",
        r.successes
    );
    let _ = writeln!(
        out,
        "gpu_exporter_counters_reloads_total{{result=\"failure\"}} {}",
        r.failures
    );
}

/// Failed and unsupported field reads.
fn field_families(out: &mut String, st: &SampleStats) {
    if !st.field_errors.is_empty() {
        write_header(
            out,
            "gpu_exporter_field_read_errors_total",
            "Failed NVML reads per field and NVML error kind (unsupported fields excluded; they are listed in gpu_exporter_field_unsupported).",
            "counter",
        );
        for (field, reason, n) in &st.field_errors {
            let _ = writeln!(
                out,
                "gpu_exporter_field_read_errors_total{{field=\"{field}\",reason=\"{reason}\"}} {n}"
            );
        }
    }

    if !st.unsupported.is_empty() {
        write_header(
            out,
            "gpu_exporter_field_unsupported",
            "1 for each configured field that NVML does not support on an entity; it is left out, not exported as 0.",
            "gauge",
        );
        for u in &st.unsupported {
            let _ = write!(out, "gpu_exporter_field_unsupported{{gpu=\"{}\"", u.gpu);
            if let Some(gi) = u.gpu_instance_id {
                let _ = write!(out, ",GPU_I_ID=\"{gi}\"");
            }
            let _ = writeln!(out, ",field=\"{}\"}} 1", u.field);
        }
    }
}

/// The attribution sources' health and the kubelet's unmatched devices.
fn attribution_families(out: &mut String, attribution: &Attribution) {
    let sources = &attribution.sources;
    if !sources.is_empty() {
        write_header(
            out,
            "gpu_exporter_pod_map_up",
            "1 when the attribution source (kubelet, pods, resourceslices, hpc_jobs, processes) answered its last attempt.",
            "gauge",
        );
        for s in sources {
            let _ = writeln!(
                out,
                "gpu_exporter_pod_map_up{{source=\"{}\"}} {}",
                s.source,
                u8::from(s.up)
            );
        }
        write_header(
            out,
            "gpu_exporter_pod_map_errors_total",
            "Failed attempts of each attribution source since start.",
            "counter",
        );
        for s in sources {
            let _ = writeln!(
                out,
                "gpu_exporter_pod_map_errors_total{{source=\"{}\"}} {}",
                s.source, s.errors
            );
        }
        if sources.iter().any(|s| s.age_seconds.is_some()) {
            write_header(
                out,
                "gpu_exporter_pod_map_age_seconds",
                "Seconds since the source last answered: the age of the pod labels in use.",
                "gauge",
            );
            for s in sources {
                if let Some(age) = s.age_seconds {
                    let _ = write!(
                        out,
                        "gpu_exporter_pod_map_age_seconds{{source=\"{}\"}} ",
                        s.source
                    );
                    write_value(out, age);
                    out.push('\n');
                }
            }
        }
    }
    if let Some(join) = &attribution.join {
        write_header(
            out,
            "gpu_exporter_pod_map_unmatched_devices",
            "GPU device IDs the kubelet lists that match no exported GPU or MIG instance (logged once each).",
            "gauge",
        );
        let _ = writeln!(
            out,
            "gpu_exporter_pod_map_unmatched_devices {}",
            join.unmatched
        );
    }
}

/// What the HTTP server counted.
fn server_families(out: &mut String, counted: &Counted) {
    if counted.stalled_responses_cut > 0 {
        write_header(
            out,
            "gpu_exporter_stalled_responses_cut_total",
            "Connections cut because responses their clients did not read held pages replaced since, over the server's memory budget; present once one was cut.",
            "counter",
        );
        let _ = writeln!(
            out,
            "gpu_exporter_stalled_responses_cut_total {}",
            counted.stalled_responses_cut
        );
    }
}

/// What the Kubernetes writers counted.
fn kube_write_families(out: &mut String, w: &KubeWrites) {
    write_header(
        out,
        "gpu_exporter_kube_writes_total",
        "Writes to the Kubernetes API (Node conditions, Events) by kind and result (success, failure: refused, errored or unreachable, timeout: no answer within 5 s).",
        "counter",
    );
    for (kind, result, n) in [
        ("event", "failure", w.events_failed),
        ("event", "success", w.events_ok),
        ("event", "timeout", w.events_timed_out),
        ("node_condition", "failure", w.conditions_failed),
        ("node_condition", "success", w.conditions_ok),
        ("node_condition", "timeout", w.conditions_timed_out),
    ] {
        let _ = writeln!(
            out,
            "gpu_exporter_kube_writes_total{{kind=\"{kind}\",result=\"{result}\"}} {n}"
        );
    }
    write_header(
        out,
        "gpu_exporter_kube_writes_dropped_total",
        "Events dropped, by reason: queue_full (the write queue was full; pod Events go first), retries_expired (retried for 10 minutes in vain), rejected (refused for good: 400, 404, 409, 422), invalid (a request that cannot be built).",
        "counter",
    );
    for reason in DropReason::ALL {
        let _ = writeln!(
            out,
            "gpu_exporter_kube_writes_dropped_total{{reason=\"{}\"}} {}",
            reason.label(),
            w.dropped_for(reason)
        );
    }
    write_header(
        out,
        "gpu_exporter_kube_events_merged_total",
        "Events merged into one already waiting for the same object and cause (written once, its count raised).",
        "counter",
    );
    let _ = writeln!(out, "gpu_exporter_kube_events_merged_total {}", w.merged);
}

/// The GPUs selected and each one's up state.
fn device_families(out: &mut String, snap: &Snapshot, opts: &EncodeOptions) {
    if snap.stats.nvml_up {
        write_header(
            out,
            "gpu_exporter_devices_selected",
            "GPUs on this node that -d/--devices selects (0: the selection matches none of them).",
            "gauge",
        );
        let _ = writeln!(out, "gpu_exporter_devices_selected {}", snap.devices.len());
    }

    // Ours, not the version's: left out under a dcgm-exporter profile unless asked for.
    if opts.own_families && !snap.devices.is_empty() {
        write_header(
            out,
            "gpu_device_up",
            "1 while NVML answers for the GPU, 0 once it is lost or unreachable.",
            "gauge",
        );
        for d in &snap.devices {
            out.push_str("gpu_device_up");
            super::health::labels(out, d, opts);
            let _ = writeln!(out, "}} {}", u8::from(d.up));
        }
    }
}

/// The `process_*` families under the names and types Prometheus client libraries use.
fn process_families(out: &mut String, p: &crate::base::process::ProcessFigures) {
    let families: [(&str, &str, &str, f64); 8] = [
        (
            "process_cpu_seconds_total",
            "Total user and system CPU time spent in seconds.",
            "counter",
            p.cpu_seconds,
        ),
        (
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            "gauge",
            p.resident_bytes,
        ),
        (
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            "gauge",
            p.virtual_bytes,
        ),
        (
            "process_virtual_memory_max_bytes",
            "Maximum amount of virtual memory available in bytes (-1: unlimited).",
            "gauge",
            p.virtual_max_bytes.unwrap_or(-1.0),
        ),
        (
            "process_open_fds",
            "Number of open file descriptors.",
            "gauge",
            p.open_fds,
        ),
        (
            "process_max_fds",
            "Maximum number of open file descriptors (-1: unlimited).",
            "gauge",
            p.max_fds.unwrap_or(-1.0),
        ),
        (
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            "gauge",
            p.start_time_seconds,
        ),
        (
            "process_threads",
            "Number of OS threads in the process.",
            "gauge",
            p.threads,
        ),
    ];
    for (name, help, kind, v) in families {
        write_header(out, name, help, kind);
        out.push_str(name);
        out.push(' ');
        write_value(out, v);
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::SampleStats;

    #[test]
    fn read_errors_carry_field_and_reason() {
        let snap = Snapshot {
            stats: SampleStats {
                field_errors: vec![
                    ("DCGM_FI_DEV_POWER_USAGE", "timeout", 2),
                    ("nvml_device_count", "driver_not_loaded", 1),
                ],
                ..SampleStats::default()
            },
            ..Snapshot::default()
        };
        let mut out = String::new();
        encode(
            &mut out,
            &snap,
            &Counted::default(),
            &EncodeOptions::default(),
        );
        assert!(
            out.contains(
                "gpu_exporter_field_read_errors_total{field=\"DCGM_FI_DEV_POWER_USAGE\",reason=\"timeout\"} 2\n"
            ),
            "{out}"
        );
        assert!(out.contains(
            "gpu_exporter_field_read_errors_total{field=\"nvml_device_count\",reason=\"driver_not_loaded\"} 1\n"
        ));
        assert_eq!(
            out.matches("# TYPE gpu_exporter_field_read_errors_total counter")
                .count(),
            1
        );
    }

    /// The count of connections cut for holding old pages unread appears once one was cut.
    #[test]
    fn stalled_responses_cut_appear_once_counted() {
        let snap = Snapshot::default();
        let mut out = String::new();
        encode(
            &mut out,
            &snap,
            &Counted::default(),
            &EncodeOptions::default(),
        );
        assert!(
            !out.contains("gpu_exporter_stalled_responses_cut_total"),
            "{out}"
        );
        let counted = Counted {
            stalled_responses_cut: 3,
            ..Counted::default()
        };
        out.clear();
        encode(&mut out, &snap, &counted, &EncodeOptions::default());
        assert!(
            out.contains("# TYPE gpu_exporter_stalled_responses_cut_total counter\n"),
            "{out}"
        );
        assert!(
            out.contains("\ngpu_exporter_stalled_responses_cut_total 3\n"),
            "{out}"
        );
    }
}
