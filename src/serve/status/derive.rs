//! How each value of the node's diagnosis ([`NodeStatus`]) is derived from the last published
//! snapshot and the counter set it was encoded with: use and limits from the exported fields'
//! slots, holders from the attribution join, the health block from the health model's
//! verdict and shown signals (`Snapshot::health`), and DCGM's entry among the sources, its
//! unserved values and why a value it serves is missing, from DCGM's state in the snapshot
//! (`snapshot::DcgmStatus`) (and why a GPU in MIG mode has no utilization as a whole).
//!
//! Owns the choice of what an operator sees first and how each value is derived from the
//! configured fields. It must not read NVML, the kubelet or the API (a page view must cost no
//! more than reading the snapshot), and it must not invent a value: a field that is not in
//! the counters file is reported as not configured, by name (the health signals' by the
//! model's rule, `health::not_exported`). Nor may it gather or judge a health signal, or
//! spell a reason: the signals and the verdict are the model's (`snapshot::EntityHealth`,
//! computed once per tick), and a reason's word is `snapshot::Reason::words`'s.

use super::display::{
    Cause, CountersStatus, CurrentValues, DcgmSource, FieldErrors, GpuStatus, InstanceStatus,
    Missing, NodeStatus, ProcessStatus, ShownHealth, SourceStatus, UnavailableField,
    UnsupportedField, WithheldField,
};
use crate::base::version::VERSION;
use crate::catalogue::csv::CounterSet;
use crate::catalogue::labels;
use crate::health::{SLOWDOWN, TEMP};
use crate::snapshot::{
    Action, ActiveReason, DcgmState, DcgmStatus, DeviceStatus, EntitySample, Snapshot,
    SourceHealth, Verdict,
};

const UTIL: &str = "DCGM_FI_DEV_GPU_UTIL";
const GR_ACTIVE: &str = "DCGM_FI_PROF_GR_ENGINE_ACTIVE";
const FB_USED: &str = "DCGM_FI_DEV_FB_USED";
const FB_FREE: &str = "DCGM_FI_DEV_FB_FREE";
const POWER: &str = "DCGM_FI_DEV_POWER_USAGE";
const POWER_LIMIT: &str = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT";

/// The readings the page shows and the field each needs; the health signals' follow them in
/// the not-configured list (`health::SHOWN_FIELDS`).
const READINGS: &[(&str, &str)] = &[
    ("utilization", UTIL),
    ("memory", FB_USED),
    ("temperature", TEMP),
    ("slowdown temperature", SLOWDOWN),
    ("power", POWER),
    ("power limit", POWER_LIMIT),
];

/// Finds configured fields in an entity's value slots.
struct Slots<'a> {
    counters: &'a CounterSet,
}

impl Slots<'_> {
    fn slot(&self, field: &str) -> Option<usize> {
        self.counters.slot(field)
    }
    fn num(&self, e: &EntitySample, field: &str) -> Option<f64> {
        let v = e.values.get(self.slot(field)?)?.as_ref()?;
        Some(v.as_f64())
    }
}

/// `namespace/pod/container`, or the labels as `name=value` pairs when they name no pod (an
/// HPC job).
fn holder_text(l: &crate::snapshot::Labels) -> String {
    match (
        l.get(labels::NAMESPACE.name),
        l.get(labels::POD.name),
        l.get(labels::CONTAINER.name),
    ) {
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

fn reading(s: &Slots<'_>, e: &EntitySample, snap: &Snapshot) -> CurrentValues {
    let (dcgm, unsupported) = (&snap.stats.dcgm, &snap.stats.unsupported);
    let used = s.num(e, FB_USED);
    let free = s.num(e, FB_FREE);
    let util_percent = s
        .num(e, UTIL)
        .or_else(|| s.num(e, GR_ACTIVE).map(|r| r * 100.0));
    // Missing because DCGM did not serve the engine activity it stands for: say why. So too
    // where NVML left it unsupported while DCGM, which would serve it, is down (its library
    // cannot be used).
    let gi = e.id.mig.as_ref().map(|m| m.gpu_instance_id);
    let here =
        |gpu: u32, at: Option<u32>, field: &str| gpu == e.id.gpu && at == gi && field == GR_ACTIVE;
    let unserved = dcgm
        .unserved
        .iter()
        .any(|u| here(u.gpu, u.gpu_instance_id, u.field));
    let unusable = dcgm.state == DcgmState::Down
        && unsupported
            .iter()
            .any(|u| here(u.gpu, u.gpu_instance_id, u.field));
    let util_missing = (util_percent.is_none() && (unserved || unusable)).then(|| {
        let (why, detail) = dcgm.missing();
        Missing {
            source: "dcgm",
            why,
            detail,
        }
    });
    CurrentValues {
        util_percent,
        util_missing,
        fb_used_mib: used,
        fb_total_mib: used.zip(free).map(|(u, f)| u + f),
        temp_c: s.num(e, TEMP),
        temp_slowdown_c: s.num(e, SLOWDOWN),
        power_w: s.num(e, POWER),
        power_limit_w: s.num(e, POWER_LIMIT),
    }
}

/// The health block of GPU `gpu`: the health model's verdict of it and the signals it judged,
/// as the model shows them (a field the counters file does not export is `None`, as on the
/// metrics).
fn health(snap: &Snapshot, gpu: u32) -> ShownHealth {
    // The verdict is the health model's (`Snapshot::health`): displayed, never judged here.
    let Some(v) = snap
        .health
        .iter()
        .find(|v| v.gpu == gpu && v.gpu_instance_id.is_none())
    else {
        return ShownHealth {
            verdict: Verdict::Ok.as_str(),
            ..ShownHealth::default()
        };
    };
    ShownHealth {
        signals: v.shown.clone(),
        verdict: v.verdict.as_str(),
        reasons: v.reasons.iter().map(words).collect(),
        causes: v
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
            .collect(),
        action: v.action().map(Action::as_str),
        recovery_action: v.recovery_action,
    }
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

/// A whole GPU's use and limits; in MIG mode, where NVML gives no utilization for the GPU as
/// a whole (its utilization field unsupported there), it says so: each instance has its own.
fn whole_reading(snap: &Snapshot, s: &Slots<'_>, e: &EntitySample) -> CurrentValues {
    let mut r = reading(s, e, snap);
    let gpu = e.id.gpu;
    let mig = snap
        .entities
        .iter()
        .any(|i| i.id.gpu == gpu && i.id.mig.is_some());
    let unsupported = snap
        .stats
        .unsupported
        .iter()
        .any(|u| u.gpu == gpu && u.gpu_instance_id.is_none() && u.field == UTIL);
    if mig && unsupported && r.util_percent.is_none() && r.util_missing.is_none() {
        r.util_missing = Some(Missing {
            source: "nvml",
            why: "per MIG instance",
            detail: format!(
                "NVML gives no {UTIL} for a GPU in MIG mode as a whole: each MIG instance's row \
                 shows its own"
            ),
        });
    }
    r
}

/// DCGM's entry among the sources: its health in the form every source has, and its mode,
/// address, state and since when (times against the snapshot's).
fn dcgm_source(d: &DcgmStatus, taken_at_unix: f64) -> SourceStatus {
    let on = d.state != DcgmState::Off;
    SourceStatus {
        health: SourceHealth {
            source: "dcgm",
            up: d.state == DcgmState::Up,
            age_seconds: d.last_answer_unix.map(|t| (taken_at_unix - t).max(0.0)),
            errors: d.failed_ticks,
            last_error: d.last_error.clone(),
        },
        dcgm: Some(DcgmSource {
            mode: d.mode,
            address: d.address.clone(),
            state: d.state.as_str(),
            since_unix: on.then_some(d.since_unix),
            since_seconds: on.then(|| (taken_at_unix - d.since_unix).max(0.0)),
        }),
    }
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
        .map(|d| gpu_status(snap, &s, d))
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
        sources: snap
            .attribution
            .sources
            .iter()
            .map(|h| SourceStatus {
                health: h.clone(),
                dcgm: None,
            })
            .chain(std::iter::once(dcgm_source(&st.dcgm, snap.taken_at_unix)))
            .collect(),
        unsupported: st
            .unsupported
            .iter()
            .map(|u| UnsupportedField {
                gpu: u.gpu,
                gpu_instance_id: u.gpu_instance_id,
                field: u.field,
            })
            .collect(),
        withheld: st
            .withheld
            .iter()
            .map(|w| WithheldField {
                field: w.field,
                lacking: w.lacking.iter().map(|(gpu, _)| *gpu).collect(),
                reason: w.reason.clone(),
            })
            .collect(),
        unavailable: {
            let reason = st.dcgm.missing().1;
            st.dcgm
                .unserved
                .iter()
                .map(|u| UnavailableField {
                    gpu: u.gpu,
                    gpu_instance_id: u.gpu_instance_id,
                    field: u.field,
                    reason: reason.clone(),
                })
                .collect()
        },
        field_errors: st
            .field_errors
            .iter()
            .map(|(field, kind, count)| FieldErrors {
                field,
                kind,
                count: *count,
            })
            .collect(),
        counters: counters_status(snap, counters),
        not_configured: READINGS
            .iter()
            .filter(|(_, f)| s.slot(f).is_none())
            .copied()
            .chain(crate::health::not_exported(counters))
            .collect(),
    }
}

/// One physical GPU's status: its holders (those it had, when it is lost), its reading, its
/// health and its MIG instances.
fn gpu_status(snap: &Snapshot, s: &Slots<'_>, d: &DeviceStatus) -> GpuStatus {
    let whole = snap
        .entities
        .iter()
        .position(|e| e.id.gpu == d.gpu && e.id.mig.is_none());
    let whole_e = whole.map(|i| &snap.entities[i]);
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
        reading: whole_e.filter(|_| d.up).map(|e| whole_reading(snap, s, e)),
        health: health(snap, d.gpu),
        instances: instances(snap, s, d.gpu),
    }
}

/// The MIG instances of GPU `gpu`: each one's holders, reading and verdict.
fn instances(snap: &Snapshot, s: &Slots<'_>, gpu: u32) -> Vec<InstanceStatus> {
    snap.entities
        .iter()
        .enumerate()
        .filter(|(_, e)| e.id.gpu == gpu)
        .filter_map(|(i, e)| {
            let m = e.id.mig.as_ref()?;
            Some(InstanceStatus {
                profile: m.profile.clone(),
                gpu_instance_id: m.gpu_instance_id,
                uuid: m.uuid.clone(),
                holders: holders(snap, i),
                outside_pods: outside_pods(snap, i),
                reading: reading(s, e, snap),
                verdict: snap
                    .health
                    .iter()
                    .find(|h| h.uuid == m.uuid)
                    .map_or(Verdict::Ok, |h| h.verdict)
                    .as_str(),
            })
        })
        .collect()
}

/// The counters file in use: its metrics and its reloads.
fn counters_status(snap: &Snapshot, counters: &CounterSet) -> CountersStatus {
    let reload = snap.stats.counters_reload.as_ref();
    CountersStatus {
        metrics: counters.metrics().count(),
        last_reload_ok: reload.map(|r| r.last_ok),
        reloads: reload.map_or(0, |r| r.successes),
        reload_failures: reload.map_or(0, |r| r.failures),
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
                pci_bus_id: String::new(),
                minor: None,
                up: true,
            }],
            interconnect: vec![Interconnect { id, links, fabric }],
            ..Snapshot::default()
        };
        let counters = parse_counters("t.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t.\n").unwrap();
        let mut snap = snap;
        snap.health = crate::health::HealthModel::default().evaluate(&snap, &counters, &counters);
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
    fn a_watched_signal_the_file_does_not_export_is_judged_but_not_shown() {
        use crate::health::{ECC_DBE, watched_set};
        let counters = parse_counters("t.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t.\n").unwrap();
        let read = watched_set(&counters);
        let mut values = vec![None; read.metrics().count()];
        values[0] = Some(Value::Num(50.0));
        let ecc = read
            .metrics()
            .position(|r| r.field.name == ECC_DBE)
            .unwrap();
        values[ecc] = Some(Value::Num(2.0));
        let mut snap = Snapshot {
            devices: vec![DeviceStatus {
                gpu: 0,
                uuid: "GPU-0".into(),
                model_name: "NVIDIA H100".into(),
                pci_bus_id: String::new(),
                minor: None,
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
            values,
            labels: vec![],
        });
        // The sampler's evaluate step: judged on the read set, then the watched slots dropped.
        snap.health = crate::health::HealthModel::default().evaluate(&snap, &read, &counters);
        crate::health::exported_only(&mut snap.entities, &counters);
        let st = build(&snap, &counters, None, true, 0.0, None);
        let h = &st.gpus[0].health;
        assert_eq!(h.verdict, "critical", "the model watches ECC anyway");
        assert_eq!(h.causes[0].reason, "ecc_dbe");
        assert_eq!(
            (
                h.signals.ecc_dbe,
                h.signals.remap_pending,
                h.signals.last_xid
            ),
            (None, None, None)
        );
        assert!(h.signals.clock_events.is_none());
        assert_eq!(st.gpus[0].reading.as_ref().unwrap().temp_c, Some(50.0));
        assert!(
            st.not_configured
                .contains(&("ECC double-bit errors", ECC_DBE))
        );
        // The readings' gaps first, then the health signals', in the page's order.
        let names: Vec<&str> = st.not_configured.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            [
                "utilization",
                "memory",
                "slowdown temperature",
                "power",
                "power limit",
                "last Xid",
                "ECC double-bit errors",
                "row remap failure",
                "row remap pending",
                "throttle reasons"
            ]
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
