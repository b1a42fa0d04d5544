//! The node's diagnosis as one value: per GPU and MIG instance the pods that hold it, use,
//! limits and health; and the exporter's own state (sources, unsupported fields, ticks,
//! counters reloads). Built from the last published snapshot only; served as JSON at
//! `/status` and rendered as the landing page `/` (`landing.rs`).
//!
//! Owns the choice of what an operator sees first and how each value is derived from the
//! configured fields. It must not read NVML, the kubelet or the API (a page view must cost no
//! more than reading the snapshot), and it must not invent a value: a field that is not in
//! the counters file is reported as not configured, by name. Nor may it gather or judge a
//! health signal, or spell a reason: the signals are `health::signals()`'s, the verdict
//! `Snapshot::health`'s, and a reason's word is `snapshot::Reason::words`'s.

use serde::Serialize;

use crate::base::version::VERSION;
use crate::catalogue::csv::CounterSet;
use crate::gpu::reader::CLOCK_EVENT_REASONS;
use crate::health::{CLOCK_EVENTS, ECC_DBE, REMAP_FAILURE, REMAP_PENDING, SLOWDOWN, TEMP, XID};
use crate::snapshot::{Action, ActiveReason, EntitySample, Snapshot, SourceHealth, Verdict};

/// How far back "recent" Xids reach.
pub const XID_RECENT_SECONDS: f64 = 3600.0;

/// The whole diagnosis.
#[derive(Debug, Clone, Serialize)]
pub struct NodeStatus {
    /// Exporter version.
    pub version: &'static str,
    /// The node's name (the host label's value), when known.
    pub node: Option<String>,
    /// `/ready`'s answer.
    pub ready: bool,
    /// Whether NVML answered in the last tick.
    pub nvml_up: bool,
    /// Unix time of the snapshot.
    pub taken_at_unix: f64,
    /// Seconds from the snapshot to when this status was built (the landing page and /status
    /// are built once per tick, at the first request after it).
    pub age_seconds: f64,
    /// Ticks so far.
    pub ticks: u64,
    /// Duration of the last tick, milliseconds.
    pub tick_ms: f64,
    /// Seconds the sampler has not finished a tick beyond its limit (the watchdog), if stalled.
    pub stalled_seconds: Option<f64>,
    /// Every physical GPU, up or lost.
    pub gpus: Vec<GpuStatus>,
    /// Attribution sources (kubelet, pods, processes, …).
    pub sources: Vec<SourceHealth>,
    /// Fields NVML reported unsupported, per entity.
    pub unsupported: Vec<UnsupportedField>,
    /// Fields whose reads failed, with the error kind and count.
    pub field_errors: Vec<FieldErrors>,
    /// The counters file in use.
    pub counters: CountersStatus,
    /// Values the page cannot show because the counters file does not export their field:
    /// (signal, field to add). The health verdict watches its signals anyway.
    pub not_configured: Vec<(&'static str, &'static str)>,
}

/// One physical GPU.
#[derive(Debug, Clone, Serialize)]
pub struct GpuStatus {
    /// NVML index.
    pub gpu: u32,
    /// UUID.
    pub uuid: String,
    /// Model name.
    pub model: String,
    /// False when NVML lost the GPU.
    pub up: bool,
    /// Pods and containers holding the whole GPU (`namespace/pod/container`), every one of
    /// them on a shared GPU; on a lost GPU, those that held it when it was last seen.
    pub holders: Vec<String>,
    /// Processes on the GPU that are in no pod (the first few, by pid).
    pub outside_pods: Vec<ProcessStatus>,
    /// Use and limits of the GPU as a whole (absent when it is lost, or MIG-only).
    pub reading: Option<Reading>,
    /// Health at a glance.
    pub health: Health,
    /// MIG instances, with their holders and use.
    pub instances: Vec<InstanceStatus>,
}

/// One MIG instance.
#[derive(Debug, Clone, Serialize)]
pub struct InstanceStatus {
    /// MIG profile, e.g. `3g.40gb`.
    pub profile: String,
    /// GPU instance id.
    pub gpu_instance_id: u32,
    /// MIG device UUID.
    pub uuid: String,
    /// Holders (`namespace/pod/container`).
    pub holders: Vec<String>,
    /// Processes on the instance that are in no pod (the first few, by pid).
    pub outside_pods: Vec<ProcessStatus>,
    /// Use of the instance.
    pub reading: Reading,
    /// The health model's verdict of the instance: its GPU's whole-GPU reasons and its own
    /// application Xids (docs/health.md, "MIG instances").
    pub verdict: &'static str,
}

/// A process on a GPU or instance that no pod holds.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessStatus {
    /// Its pid (in the host's PID namespace).
    pub pid: u32,
    /// Its command name, when the proc tree shows it.
    pub name: Option<String>,
}

/// Current values of one entity; `None` where the field is not configured or not read.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Reading {
    /// GPU utilization, percent (`DCGM_FI_DEV_GPU_UTIL`, or graphics engine active × 100 on
    /// a MIG instance).
    pub util_percent: Option<f64>,
    /// Framebuffer used, MiB.
    pub fb_used_mib: Option<f64>,
    /// Framebuffer usable (used + free), MiB.
    pub fb_total_mib: Option<f64>,
    /// Temperature, °C.
    pub temp_c: Option<f64>,
    /// Temperature at which hardware slowdown starts, °C.
    pub temp_slowdown_c: Option<f64>,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// Enforced power limit, W.
    pub power_limit_w: Option<f64>,
}

/// Health signals of one GPU, as the health model gathers them (`health::signals()`), and its
/// verdict.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Health {
    /// The last Xid NVML reported (`DCGM_FI_DEV_XID_ERRORS`), 0 for none.
    pub last_xid: Option<u64>,
    /// Xid codes seen in the last hour: (code, occurrences since start, seconds ago).
    pub recent_xids: Vec<(u64, u64, f64)>,
    /// Volatile double-bit ECC errors.
    pub ecc_dbe: Option<f64>,
    /// Rows remapped for uncorrectable errors.
    pub remapped_rows_uncorrectable: Option<f64>,
    /// A row remap failed (1) or not (0).
    pub row_remap_failure: Option<f64>,
    /// A row remap is pending a GPU reset.
    pub row_remap_pending: Option<f64>,
    /// Active clock-event (throttle) reasons other than idle, by dcgm-exporter's names.
    pub throttle: Option<Vec<&'static str>>,
    /// NVLink links NVML reports down (every link is read, whatever `--nvlink-links` says).
    pub nvlink_down: Vec<u32>,
    /// NVLink 5 links whose bit error rate after FEC is above DCGM's limit (1e-12).
    pub nvlink_ber_high: Vec<u32>,
    /// NVSwitch fabric health summary (1 healthy, 2 unhealthy, 3 limited capacity), on GPUs
    /// attached to a fabric that report it.
    pub fabric_health: Option<u8>,
    /// The health model's verdict: `ok`, `warning` or `critical`.
    pub verdict: &'static str,
    /// Why the verdict is not `ok`, in words, worst first (empty when `ok`).
    pub reasons: Vec<String>,
    /// The same reasons, machine-readable (absent when `ok`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub causes: Vec<Cause>,
    /// The recommended action of the worst reason (absent when `ok`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<&'static str>,
    /// NVML's recovery action (0 none, 1 reset, 2 reboot, 3 drain P2P, 4 drain and reset),
    /// when read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_action: Option<u32>,
}

/// One reason of a verdict, as the health model gives it (docs/health.md).
#[derive(Debug, Clone, Serialize)]
pub struct Cause {
    /// The reason's word, e.g. `xid_hardware`.
    pub reason: &'static str,
    /// `warning` or `critical`.
    pub severity: &'static str,
    /// The Xid code, for the `xid_*` reasons.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xid: Option<u64>,
    /// The MIG GPU instance the cause belongs to (an application Xid NVML reported with
    /// one); absent for the whole GPU's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_instance_id: Option<u32>,
    /// What was seen.
    pub message: String,
    /// The recommended action's word, e.g. `reset_gpu`.
    pub action: &'static str,
    /// `false` when the cause is gone and the reason is held (flap damping).
    pub present: bool,
    /// Seconds since the cause was first seen in this episode.
    pub since_seconds: f64,
}

/// A field NVML does not support on an entity.
#[derive(Debug, Clone, Serialize)]
pub struct UnsupportedField {
    /// GPU index.
    pub gpu: u32,
    /// GPU instance id on a MIG instance.
    pub gpu_instance_id: Option<u32>,
    /// Field name.
    pub field: &'static str,
}

/// Read errors of one field.
#[derive(Debug, Clone, Serialize)]
pub struct FieldErrors {
    /// Field name.
    pub field: &'static str,
    /// Error kind.
    pub kind: &'static str,
    /// Failed reads so far.
    pub count: u64,
}

/// The counters file's state.
#[derive(Debug, Clone, Serialize)]
pub struct CountersStatus {
    /// Metric rows in use.
    pub metrics: usize,
    /// Whether the last reload attempt succeeded (`None` before any reload state exists).
    pub last_reload_ok: Option<bool>,
    /// Successful reloads since start.
    pub reloads: u64,
    /// Failed reloads since start.
    pub reload_failures: u64,
}

const UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
const GR_ACTIVE: &str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
const FB_FREE: &str = "DCGM_FI_DEV_FB_FREE";
const POWER: &str = "DCGM_FI_DEV_POWER_USAGE";
const POWER_LIMIT: &str = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT";

/// The signals the page shows and the field each needs.
const SIGNALS: &[(&str, &str)] = &[
    ("utilization", UTIL),
    ("memory", FB_USED),
    ("temperature", TEMP),
    ("slowdown temperature", SLOWDOWN),
    ("power", POWER),
    ("power limit", POWER_LIMIT),
    ("last Xid", XID),
    ("ECC double-bit errors", ECC_DBE),
    ("row remap failure", REMAP_FAILURE),
    ("row remap pending", REMAP_PENDING),
    ("throttle reasons", CLOCK_EVENTS),
];

/// Finds configured fields in an entity's value slots.
struct Slots<'a> {
    counters: &'a CounterSet,
}

impl Slots<'_> {
    fn slot(&self, field: &str) -> Option<usize> {
        // A field can be configured under a DCGM 4.7 name whose canonical field is the one
        // asked for; the catalogue resolves both to the same definition.
        self.counters.metrics().position(|r| r.field.name == field)
    }
    fn num(&self, e: &EntitySample, field: &str) -> Option<f64> {
        let v = e.values.get(self.slot(field)?)?.as_ref()?;
        Some(v.as_f64())
    }
}

/// `namespace/pod/container`, or the labels as `name=value` pairs when they name no pod (an
/// HPC job).
fn holder_text(l: &crate::snapshot::Labels) -> String {
    match (l.get("namespace"), l.get("pod"), l.get("container")) {
        (Some(ns), Some(pod), Some(c)) if !c.is_empty() => format!("{ns}/{pod}/{c}"),
        (Some(ns), Some(pod), _) => format!("{ns}/{pod}"),
        _ => l
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect::<Vec<_>>()
            .join(","),
    }
}

/// Every holder of entity `index`: each row of `gpu_allocation_info` (all the pods of a
/// time-sliced or MPS-shared GPU, whose series carry none), and the jobs on its series.
fn holders(snap: &Snapshot, index: usize) -> Vec<String> {
    let rows = snap
        .attribution
        .allocations()
        .filter(|(i, _)| *i == index)
        .map(|(_, l)| l);
    let series = snap.attribution.series_labels(index).iter();
    let mut out: Vec<String> = rows
        .chain(series)
        .filter(|l| !l.is_empty())
        .map(holder_text)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The last known holders of lost GPU `uuid` (its whole-GPU and instance rows).
fn lost_holders(snap: &Snapshot, uuid: &str) -> Vec<String> {
    let mut out: Vec<String> = snap
        .attribution
        .lost_rows(uuid)
        .map(|(gi, l)| match gi {
            Some(gi) => format!("{} (GI {gi})", holder_text(l)),
            None => holder_text(l),
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The processes on entity `index` that no pod holds.
fn outside_pods(snap: &Snapshot, index: usize) -> Vec<ProcessStatus> {
    snap.attribution
        .containers
        .iter()
        .filter(|c| c.entity == index && c.labels.is_empty())
        .flat_map(|c| c.pids.iter())
        .map(|(pid, name)| ProcessStatus {
            pid: *pid,
            name: name.clone(),
        })
        .collect()
}

fn reading(s: &Slots<'_>, e: &EntitySample) -> Reading {
    let used = s.num(e, FB_USED);
    let free = s.num(e, FB_FREE);
    Reading {
        util_percent: s
            .num(e, UTIL)
            .or_else(|| s.num(e, GR_ACTIVE).map(|r| r * 100.0)),
        fb_used_mib: used,
        fb_total_mib: used.zip(free).map(|(u, f)| u + f),
        temp_c: s.num(e, TEMP),
        temp_slowdown_c: s.num(e, SLOWDOWN),
        power_w: s.num(e, POWER),
        power_limit_w: s.num(e, POWER_LIMIT),
    }
}

/// The health block of GPU `gpu`: the health model's signals, read with the exported counter
/// set (a field the counters file does not export shows as `None`, as on the metrics), and
/// its verdict.
fn health(s: &Slots<'_>, snap: &Snapshot, gpu: u32, up: bool) -> Health {
    let sig = crate::health::signals(snap, s.counters, gpu, up);
    let mut h = Health {
        last_xid: sig.last_xid,
        ecc_dbe: sig.ecc_dbe,
        remapped_rows_uncorrectable: sig.remapped_rows,
        row_remap_failure: sig.remap_failure,
        row_remap_pending: sig.remap_pending,
        throttle: sig.clock_events.map(|bits| {
            CLOCK_EVENT_REASONS
                .iter()
                .filter(|(bit, name)| bits & bit != 0 && *name != "gpu_idle")
                .map(|(_, name)| *name)
                .collect()
        }),
        nvlink_down: sig.nvlink_down,
        nvlink_ber_high: sig.nvlink_ber_high,
        fabric_health: sig.fabric_health,
        ..Health::default()
    };
    if let Some(x) = snap.xids.iter().find(|x| x.id.gpu == gpu) {
        h.recent_xids = x
            .codes
            .iter()
            .filter_map(|(code, n, last)| {
                let ago = (snap.taken_at_unix - (*last)?).max(0.0);
                (*n > 0 && ago <= XID_RECENT_SECONDS).then_some((*code, *n, ago))
            })
            .collect();
    }
    // The verdict is the health model's (`Snapshot::health`): displayed, never judged here.
    let verdict = snap
        .health
        .iter()
        .find(|v| v.gpu == gpu && v.gpu_instance_id.is_none());
    h.verdict = verdict.map_or(Verdict::Ok, |v| v.verdict).as_str();
    if let Some(v) = verdict {
        h.reasons = v.reasons.iter().map(words).collect();
        h.causes = v
            .reasons
            .iter()
            .map(|r| Cause {
                reason: r.reason.as_str(),
                severity: r.severity.as_str(),
                xid: r.xid,
                gpu_instance_id: r.gpu_instance_id,
                message: r.message.clone(),
                action: r.action.as_str(),
                present: r.present,
                since_seconds: (snap.taken_at_unix - r.since_unix).max(0.0),
            })
            .collect();
        h.action = v.action().map(Action::as_str);
        h.recovery_action = v.recovery_action;
    }
    h
}

/// A reason in words: what was seen, what to do, and whether the cause is gone.
fn words(r: &ActiveReason) -> String {
    let held = if r.present {
        String::new()
    } else {
        " (gone; shown until the hold time has passed)".to_owned()
    };
    format!("{}: {}{held}", r.message, r.action.words())
}

/// Builds the status from the last snapshot. `now_unix` is the time of the request;
/// `stalled` is the watchdog's answer.
pub fn build(
    snap: &Snapshot,
    counters: &CounterSet,
    node: Option<&str>,
    ready: bool,
    now_unix: f64,
    stalled: Option<std::time::Duration>,
) -> NodeStatus {
    let s = Slots { counters };
    let gpus = snap
        .devices
        .iter()
        .map(|d| {
            let whole = snap
                .entities
                .iter()
                .position(|e| e.id.gpu == d.gpu && e.id.mig.is_none());
            let whole_e = whole.map(|i| &snap.entities[i]);
            let instances = snap
                .entities
                .iter()
                .enumerate()
                .filter(|(_, e)| e.id.gpu == d.gpu)
                .filter_map(|(i, e)| {
                    let m = e.id.mig.as_ref()?;
                    Some(InstanceStatus {
                        profile: m.profile.clone(),
                        gpu_instance_id: m.gpu_instance_id,
                        uuid: m.uuid.clone(),
                        holders: holders(snap, i),
                        outside_pods: outside_pods(snap, i),
                        reading: reading(&s, e),
                        verdict: snap
                            .health
                            .iter()
                            .find(|h| h.uuid == m.uuid)
                            .map_or(Verdict::Ok, |h| h.verdict)
                            .as_str(),
                    })
                })
                .collect();
            GpuStatus {
                gpu: d.gpu,
                uuid: d.uuid.clone(),
                model: d.model_name.clone(),
                up: d.up,
                holders: match whole {
                    Some(i) if d.up => holders(snap, i),
                    _ if !d.up => lost_holders(snap, &d.uuid),
                    _ => Vec::new(),
                },
                outside_pods: whole.map(|i| outside_pods(snap, i)).unwrap_or_default(),
                reading: whole_e.filter(|_| d.up).map(|e| reading(&s, e)),
                health: health(&s, snap, d.gpu, d.up),
                instances,
            }
        })
        .collect();
    let st = &snap.stats;
    NodeStatus {
        version: VERSION,
        node: node.map(str::to_owned),
        ready,
        nvml_up: st.nvml_up,
        taken_at_unix: snap.taken_at_unix,
        age_seconds: (now_unix - snap.taken_at_unix).max(0.0),
        ticks: st.ticks,
        tick_ms: st.duration.as_secs_f64() * 1000.0,
        stalled_seconds: stalled.map(|d| d.as_secs_f64()),
        gpus,
        sources: snap.attribution.sources.clone(),
        unsupported: st
            .unsupported
            .iter()
            .map(|u| UnsupportedField {
                gpu: u.gpu,
                gpu_instance_id: u.gpu_instance_id,
                field: u.field,
            })
            .collect(),
        field_errors: st
            .field_errors
            .iter()
            .map(|(field, kind, count)| FieldErrors {
                field,
                kind,
                count: *count,
            })
            .collect(),
        counters: CountersStatus {
            metrics: counters.metrics().count(),
            last_reload_ok: st.counters_reload.as_ref().map(|r| r.last_ok),
            reloads: st.counters_reload.as_ref().map_or(0, |r| r.successes),
            reload_failures: st.counters_reload.as_ref().map_or(0, |r| r.failures),
        },
        not_configured: SIGNALS
            .iter()
            .filter(|(_, f)| s.slot(f).is_none())
            .copied()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::csv::parse_counters;
    use crate::snapshot::{DeviceStatus, EntityId, Fabric, Interconnect, LinkSample, Value};

    fn link(link: u32, up: bool) -> LinkSample {
        LinkSample {
            link,
            up,
            errors: Vec::new(),
            tx_bytes: None,
            rx_bytes: None,
            tx_rate: None,
            rx_rate: None,
            symbol_errors: None,
            effective_errors: None,
            symbol_ber: None,
            effective_ber: None,
        }
    }

    /// A one-GPU snapshot whose GPU has links 0–2 (link 1 down) and the given fabric.
    fn reasons(fabric: Option<Fabric>) -> (&'static str, Vec<String>) {
        health_with(vec![link(0, true), link(1, false), link(2, true)], fabric)
    }

    /// The health verdict and reasons of a one-GPU snapshot with these links and fabric.
    fn health_with(links: Vec<LinkSample>, fabric: Option<Fabric>) -> (&'static str, Vec<String>) {
        let id = EntityId {
            gpu: 0,
            uuid: "GPU-0".into(),
            pci_bus_id: String::new(),
            device: "nvidia0".into(),
            model_name: "NVIDIA GB200".into(),
            mig: None,
        };
        let snap = Snapshot {
            devices: vec![DeviceStatus {
                gpu: 0,
                uuid: "GPU-0".into(),
                model_name: "NVIDIA GB200".into(),
                up: true,
            }],
            interconnect: vec![Interconnect { id, links, fabric }],
            ..Snapshot::default()
        };
        let counters = parse_counters("t.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t.\n").unwrap();
        let mut snap = snap;
        snap.health = crate::health::HealthModel::default().evaluate(&snap, &counters);
        let st = build(&snap, &counters, None, true, 0.0, None);
        let h = &st.gpus[0].health;
        // The page's words: the model's message, then what to do.
        let messages = h
            .reasons
            .iter()
            .map(|r| r.split(": check").next().unwrap_or(r).to_owned())
            .collect();
        (h.verdict, messages)
    }

    fn fabric(status: u32, health: Option<u8>) -> Fabric {
        Fabric {
            cluster_uuid: "c".into(),
            clique_id: 1,
            state: 3,
            status,
            health_mask: None,
            health_summary: health,
        }
    }

    #[test]
    fn an_effective_bit_error_rate_above_the_limit_is_a_warning() {
        let snap_with = |ber: f64| {
            let mut l = link(4, true);
            l.effective_ber = Some(ber);
            health_with(vec![link(3, true), l], None)
        };
        assert_eq!(
            snap_with(1e-12),
            ("ok", vec![]),
            "at the limit is not above it"
        );
        let (verdict, r) = snap_with(8e-11);
        assert_eq!(verdict, "warning");
        assert_eq!(
            r,
            ["NVLink errors get past FEC (bit error rate above 1e-12) on link(s): 4"]
        );
    }

    #[test]
    fn a_watched_signal_the_file_does_not_export_is_not_shown() {
        let counters = parse_counters("t.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t.\n").unwrap();
        let mut snap = Snapshot {
            devices: vec![DeviceStatus {
                gpu: 0,
                uuid: "GPU-0".into(),
                model_name: "NVIDIA H100".into(),
                up: true,
            }],
            ..Snapshot::default()
        };
        snap.entities.push(EntitySample {
            id: EntityId {
                gpu: 0,
                uuid: "GPU-0".into(),
                pci_bus_id: String::new(),
                device: "nvidia0".into(),
                model_name: "NVIDIA H100".into(),
                mig: None,
            },
            values: vec![Some(Value::Num(50.0))],
            labels: vec![],
        });
        let st = build(&snap, &counters, None, true, 0.0, None);
        let h = &st.gpus[0].health;
        assert_eq!(
            (h.ecc_dbe, h.row_remap_pending, h.last_xid),
            (None, None, None)
        );
        assert!(h.throttle.is_none());
        assert_eq!(st.gpus[0].reading.as_ref().unwrap().temp_c, Some(50.0));
        assert!(
            st.not_configured
                .contains(&("ECC double-bit errors", ECC_DBE))
        );
    }

    #[test]
    fn links_down_and_fabric_health_are_health_reasons() {
        let (verdict, r) = reasons(None);
        assert_eq!(
            (verdict, r),
            ("warning", vec!["NVLink link(s) down: 1".to_owned()])
        );
        let (verdict, r) = reasons(Some(fabric(0, Some(3))));
        assert_eq!(verdict, "warning");
        assert!(
            r.contains(&"NVSwitch fabric at limited capacity".to_owned()),
            "{r:?}"
        );
        let (verdict, r) = reasons(Some(fabric(0, Some(2))));
        assert_eq!(verdict, "critical");
        assert!(r.contains(&"NVSwitch fabric unhealthy".to_owned()), "{r:?}");
        let (verdict, r) = reasons(Some(fabric(5, Some(1))));
        assert_eq!(verdict, "critical");
        assert!(
            r.contains(&"NVSwitch fabric registration failed".to_owned()),
            "{r:?}"
        );
    }
}
