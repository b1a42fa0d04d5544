//! What the Kubernetes outputs say about one snapshot: the exporter's Node conditions as they
//! should read now, and the Events a change since the last snapshot calls for (on the Node,
//! and on every pod holding the GPU or MIG instance that was hit, a lost GPU's last known
//! holders included). A cause that belongs to one MIG instance (an application Xid NVML
//! reported with it) reaches only the pods holding that instance.
//!
//! Pure planning with the memory of the last snapshot (which reasons were active, each Xid's
//! last occurrence); it must not call the API server, queue or log (`writer` does), and its
//! condition texts hold only stable words (a GPU, its UUID, a reason, an action), so that an
//! unchanged fault never rewrites a condition.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::catalogue::labels;
use crate::snapshot::{Action, EntityHealth, Labels, Reason, Snapshot, Verdict};

/// The condition types the exporter owns on its Node (negative polarity, as
/// node-problem-detector's: `True` means there is a problem). docs/health.md documents them.
pub const CONDITION_TYPES: [&str; 4] = [
    "GpuUnhealthy",
    "GpuDegraded",
    "GpuResetRequired",
    "GpuRebootRequired",
];

/// The longest condition message written (the API server takes 32 KiB; a Node's status is
/// read by every `kubectl describe node`).
const MAX_MESSAGE: usize = 1024;

/// One of the exporter's Node conditions as it should read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// One of [`CONDITION_TYPES`].
    pub type_: &'static str,
    /// `True` while a GPU has the problem.
    pub status: bool,
    /// PascalCase, from a bounded set.
    pub reason: &'static str,
    /// Which GPUs (index and UUID), why, and what to do.
    pub message: String,
}

/// A pod holding a GPU or MIG instance.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodRef {
    /// Namespace.
    pub namespace: String,
    /// Pod name.
    pub name: String,
    /// `metadata.uid`, when the pod metadata is known.
    pub uid: Option<String>,
    /// The container holding the device.
    pub container: String,
    /// The MIG GPU instance it holds, if it holds an instance.
    pub gpu_instance_id: Option<u32>,
}

/// An Event to publish.
#[derive(Debug, Clone, PartialEq)]
pub struct EventPlan {
    /// `None`: on the Node; else on this pod.
    pub pod: Option<PodRef>,
    /// `Warning` when `true`, else `Normal`.
    pub warning: bool,
    /// PascalCase, from a bounded set.
    pub reason: &'static str,
    /// Names the GPU (aggregation key: repeats of one reason on one GPU and object are one
    /// Event with a growing count).
    pub action: String,
    /// The human message.
    pub note: String,
}

/// The planner's memory between snapshots.
#[derive(Debug, Default)]
pub struct Planner {
    /// Per GPU UUID: the active reasons (reason, Xid code, GPU instance) → their last
    /// occurrence.
    active: HashMap<String, BTreeMap<ReasonKey, f64>>,
    /// The GPUs (UUIDs) whose verdict was not `ok` in the last snapshot: one back to `ok`
    /// gets its `GpuRecovered` Event (its reasons may have stopped being present a while
    /// before, during the hold).
    unwell: HashSet<String>,
    /// The first snapshot planned: faults already there then get their Events too.
    started: bool,
}

/// One active reason of a GPU: the reason, its Xid code, the MIG GPU instance it belongs to.
type ReasonKey = (Reason, Option<u64>, Option<u32>);

/// The physical GPUs' verdicts (one per GPU: the whole GPU's, else its first instance's).
fn gpus(snap: &Snapshot) -> Vec<&EntityHealth> {
    let mut out: Vec<&EntityHealth> = Vec::new();
    for h in &snap.health {
        match out.iter().position(|o| o.gpu == h.gpu) {
            Some(i) if out[i].gpu_instance_id.is_some() && h.gpu_instance_id.is_none() => {
                out[i] = h;
            }
            Some(_) => {}
            None => out.push(h),
        }
    }
    out
}

fn pod_of(labels: &Labels, gi: Option<u32>) -> Option<PodRef> {
    let get = |k: &str| labels.get(k).map(str::to_owned);
    Some(PodRef {
        namespace: get(labels::NAMESPACE.name)?,
        name: get(labels::POD.name)?,
        uid: get(labels::POD_UID.name),
        container: get(labels::CONTAINER.name).unwrap_or_default(),
        gpu_instance_id: gi,
    })
}

/// Every pod holding GPU `gpu` or one of its MIG instances: from this snapshot's allocation
/// rows and the holders whose pod still waits for its metadata (without a UID), or the last
/// known rows of a lost GPU.
pub fn holders(snap: &Snapshot, gpu: u32, uuid: &str) -> Vec<PodRef> {
    let a = &snap.attribution;
    let now = a
        .allocations()
        .chain(a.waiting())
        .filter_map(|(i, labels)| {
            let e = snap.entities.get(i).filter(|e| e.id.gpu == gpu)?;
            pod_of(labels, e.id.mig.as_ref().map(|m| m.gpu_instance_id))
        });
    let lost = a
        .lost_rows(uuid)
        .filter_map(|(gi, labels)| pod_of(labels, *gi));
    let mut out: Vec<PodRef> = now.chain(lost).collect();
    out.sort();
    out.dedup();
    out
}

/// The reasons of a GPU at its verdict's severity, in stable words: one line for the whole
/// GPU's ("GPU 2 (GPU-…): …; action") and one per MIG instance with its own
/// ("GPU 2 MIG instance 7 (GPU-…): …; action"), the action the most drastic of the line's.
fn scoped_lines(g: &EntityHealth) -> Vec<String> {
    let top: Vec<_> = g
        .reasons
        .iter()
        .filter(|r| r.severity == g.verdict)
        .collect();
    let mut scopes: Vec<Option<u32>> = top.iter().map(|r| r.gpu_instance_id).collect();
    scopes.sort();
    scopes.dedup();
    scopes
        .into_iter()
        .filter_map(|scope| {
            let mine: Vec<_> = top.iter().filter(|r| r.gpu_instance_id == scope).collect();
            let what: Vec<String> = mine.iter().map(|r| r.reason.text(r.xid)).collect();
            Some(format!(
                "{}: {}; {}",
                gpu_name(g, scope),
                what.join(", "),
                mine.iter()
                    .map(|r| r.action)
                    .max_by_key(|a| a.urgency())?
                    .words()
            ))
        })
        .collect()
}

/// "GPU 2 (GPU-…)", or "GPU 2 MIG instance 7 (GPU-…)" for a cause of one instance: the GPU
/// by its device node's minor number (`/dev/nvidia2`), which stays while NVML's indices
/// shift; a GPU whose identity is not known is named by its NVML index, as such.
fn gpu_name(g: &EntityHealth, gi: Option<u32>) -> String {
    let gpu = match g.minor {
        Some(minor) if !g.uuid.is_empty() => format!("GPU {minor}"),
        _ => format!("the GPU at NVML index {}", g.gpu),
    };
    let gpu = match gi {
        Some(gi) => format!("{gpu} MIG instance {gi}"),
        None => gpu,
    };
    if g.uuid.is_empty() {
        format!("{gpu} (UUID not known)")
    } else {
        format!("{gpu} ({})", g.uuid)
    }
}

/// The Event `action` naming a GPU: `Gpu2` after its device node, `GpuIndex2` after its NVML
/// index where no minor number is known.
fn gpu_action(g: &EntityHealth) -> String {
    match g.minor {
        Some(minor) if !g.uuid.is_empty() => format!("Gpu{minor}"),
        _ => format!("GpuIndex{}", g.gpu),
    }
}

/// The conditions for `snap` (all four, `False` where no GPU has the problem).
pub fn conditions(snap: &Snapshot) -> Vec<Condition> {
    let gpus = gpus(snap);
    let mut unhealthy = Vec::new();
    let mut degraded = Vec::new();
    let mut reset = Vec::new();
    let mut reboot = Vec::new();
    let mut first: [Option<&'static str>; 4] = [None; 4];
    for g in &gpus {
        let Some(worst) = g.reasons.first() else {
            continue;
        };
        let line = scoped_lines(g).join("; ");
        match g.verdict {
            Verdict::Critical => {
                first[0].get_or_insert(worst.reason.event_reason());
                unhealthy.push(line);
            }
            Verdict::Warning => {
                first[1].get_or_insert(worst.reason.event_reason());
                degraded.push(line);
            }
            Verdict::Ok => {}
        }
        let needs = |a: Action| g.reasons.iter().any(|r| r.present && r.action == a);
        if needs(Action::ResetGpu) || needs(Action::DrainAndReset) {
            first[2].get_or_insert(worst.reason.event_reason());
            reset.push(gpu_name(g, None));
        }
        if needs(Action::RebootNode) {
            first[3].get_or_insert(worst.reason.event_reason());
            reboot.push(gpu_name(g, None));
        }
    }
    let n = gpus.len();
    let cond = |i: usize, lines: Vec<String>, ok_reason: &'static str, ok: String| {
        let status = !lines.is_empty();
        let mut message = if status { lines.join("; ") } else { ok };
        if message.len() > MAX_MESSAGE {
            let mut cut = MAX_MESSAGE - 3;
            while !message.is_char_boundary(cut) {
                cut -= 1;
            }
            message.truncate(cut);
            message.push_str("...");
        }
        Condition {
            type_: CONDITION_TYPES[i],
            status,
            reason: if status {
                first[i].unwrap_or("GpuFault")
            } else {
                ok_reason
            },
            message,
        }
    };
    vec![
        cond(
            0,
            unhealthy,
            "GpusHealthy",
            format!("no GPU of {n} is critical"),
        ),
        cond(
            1,
            degraded,
            "GpusNotDegraded",
            format!("no GPU of {n} is degraded"),
        ),
        cond(
            2,
            reset,
            "NoResetRequired",
            format!("no GPU of {n} needs a reset"),
        ),
        cond(
            3,
            reboot,
            "NoRebootRequired",
            format!("no GPU of {n} needs the node rebooted"),
        ),
    ]
}

impl Planner {
    /// The Events `snap` calls for: one per reason that became active on a GPU since the last
    /// snapshot (or an Xid that occurred again), on the Node and on each holder; and a
    /// `Normal` one on the Node when a GPU is back to `ok`.
    pub fn events(&mut self, snap: &Snapshot) -> Vec<EventPlan> {
        let mut out = Vec::new();
        let mut seen: HashMap<String, BTreeMap<ReasonKey, f64>> = HashMap::new();
        let mut unwell = HashSet::new();
        for g in gpus(snap) {
            let before = self.active.get(&g.uuid);
            let now: BTreeMap<ReasonKey, f64> = g
                .reasons
                .iter()
                .filter(|r| r.present)
                .map(|r| ((r.reason, r.xid, r.gpu_instance_id), r.last_seen_unix))
                .collect();
            // Looked up only when a reason calls for Events (most snapshots have none).
            let mut holders_of_gpu: Option<Vec<PodRef>> = None;
            for r in g.reasons.iter().filter(|r| r.present) {
                let new = match before.and_then(|b| b.get(&(r.reason, r.xid, r.gpu_instance_id))) {
                    None => true,
                    // An Xid that occurred again while held.
                    Some(last) => r.xid.is_some() && r.last_seen_unix > *last,
                };
                if !new {
                    continue;
                }
                let scope = r.gpu_instance_id;
                let what = format!("{} reported {}", gpu_name(g, scope), r.message);
                let action = match scope {
                    Some(gi) => format!("{}Mig{gi}", gpu_action(g)),
                    None => gpu_action(g),
                };
                let todo = r.action.words();
                let reason = r.reason.event_reason();
                let all = holders_of_gpu.get_or_insert_with(|| holders(snap, g.gpu, &g.uuid));
                // A cause of one MIG instance reaches only the pods holding that instance.
                let pods: Vec<&PodRef> = all
                    .iter()
                    .filter(|p| scope.is_none() || p.gpu_instance_id == scope)
                    .collect();
                let held = if pods.is_empty() {
                    String::new()
                } else {
                    let names: Vec<String> = pods
                        .iter()
                        .map(|p| format!("{}/{} (container {})", p.namespace, p.name, p.container))
                        .collect();
                    format!(", held by {}", names.join(", "))
                };
                out.push(EventPlan {
                    pod: None,
                    warning: true,
                    reason,
                    action: action.clone(),
                    note: clip(format!("{what}{held}; {todo}")),
                });
                for p in pods {
                    let instance = p
                        .gpu_instance_id
                        .map(|gi| format!(" (MIG GPU instance {gi})"))
                        .unwrap_or_default();
                    out.push(EventPlan {
                        pod: Some((*p).clone()),
                        warning: true,
                        reason,
                        action: action.clone(),
                        note: clip(format!(
                            "{what}, while held by container {}{instance}; {todo}",
                            p.container
                        )),
                    });
                }
            }
            if self.started && g.verdict == Verdict::Ok && self.unwell.contains(&g.uuid) {
                out.push(EventPlan {
                    pod: None,
                    warning: false,
                    reason: "GpuRecovered",
                    action: gpu_action(g),
                    note: format!("{} is healthy again", gpu_name(g, None)),
                });
            }
            seen.insert(g.uuid.clone(), now);
            if g.verdict != Verdict::Ok {
                unwell.insert(g.uuid.clone());
            }
        }
        self.active = seen;
        self.unwell = unwell;
        self.started = true;
        out
    }
}

/// An Event note within the API's 1 kB.
fn clip(mut s: String) -> String {
    const MAX_NOTE: usize = 1000;
    if s.len() > MAX_NOTE {
        let mut cut = MAX_NOTE - 3;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("...");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::ActiveReason;

    fn snap(verdict: Verdict, present: Option<bool>) -> Snapshot {
        let reasons = present
            .map(|present| ActiveReason {
                reason: Reason::ThermalSlowdown,
                severity: Verdict::Warning,
                xid: None,
                gpu_instance_id: None,
                message: "throttled: hw_thermal".into(),
                action: Action::CheckCooling,
                since_unix: 10.0,
                last_seen_unix: 60.0,
                present,
            })
            .into_iter()
            .collect();
        Snapshot {
            health: vec![EntityHealth {
                gpu: 0,
                minor: Some(0),
                gpu_instance_id: None,
                uuid: "GPU-0".into(),
                verdict,
                reasons,
                recovery_action: None,
                shown: Default::default(),
            }],
            ..Snapshot::default()
        }
    }

    fn reasons(events: &[EventPlan]) -> Vec<&'static str> {
        events.iter().map(|e| e.reason).collect()
    }

    /// A verdict that clears after its hold (the cause gone, the reason held and no longer
    /// present) still gets its `GpuRecovered` Event, once.
    #[test]
    fn a_gpu_back_to_ok_after_the_hold_is_reported_recovered_once() {
        let mut p = Planner::default();
        assert_eq!(
            reasons(&p.events(&snap(Verdict::Warning, Some(true)))),
            ["ThermalSlowdown"]
        );
        assert!(p.events(&snap(Verdict::Warning, Some(false))).is_empty());
        let back = p.events(&snap(Verdict::Ok, None));
        assert_eq!(reasons(&back), ["GpuRecovered"]);
        assert!(!back[0].warning);
        assert!(p.events(&snap(Verdict::Ok, None)).is_empty());
    }
}
