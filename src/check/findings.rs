//! The findings of `gpu-exporter check`: what each part of the node's state (the last tick's
//! snapshot, the kubelet socket, the proc tree, the API server's answers) adds to the report,
//! and how each finding reads, with the fix to try.
//!
//! Pure functions of what they are handed; they must not start, open or tick anything (`run`
//! does, with the daemon's own pipeline).

use std::fmt::Write as _;

use super::report::{Report, Severity};
use crate::catalogue::csv::{CounterRow, CounterSet};
use crate::snapshot::{DeviceStatus, Snapshot};

/// What to do for a `DCGM_FI_PROF_*` field on GPUs without GPM while DCGM is off.
pub(super) const DCGM_FIX: &str = "NVML serves it only on GPUs with GPM (Hopper and later); \
     DCGM serves it on the others: give the hostengine's address with -r (the GPU Operator's \
     nv-hostengine), or --dcgm-mode embedded where DCGM is installed";

/// The series of GPU 0 (and its MIG instances) in an exposition, at most `max` lines.
pub fn excerpt(exposition: &str, max: usize) -> Vec<String> {
    exposition
        .lines()
        .filter(|l| !l.starts_with('#') && l.contains("gpu=\"0\""))
        .take(max)
        .map(str::to_owned)
        .collect()
}

/// The health model's verdict of GPU `gpu` as one item: its reasons, and the action of the
/// worst one as the fix.
fn health(report: &mut Report, snap: &Snapshot, gpu: u32) {
    let Some(h) = snap
        .health
        .iter()
        .find(|h| h.gpu == gpu && h.gpu_instance_id.is_none())
    else {
        return;
    };
    let detail = if h.reasons.is_empty() {
        "ok".to_owned()
    } else {
        let reasons: Vec<String> = h
            .reasons
            .iter()
            .map(|r| format!("{} [{}]", r.message, r.reason.as_str()))
            .collect();
        format!("{}: {}", h.verdict.as_str(), reasons.join("; "))
    };
    report.add(
        "gpus",
        format!("GPU {gpu} health"),
        super::links::severity(h.verdict),
        detail,
        h.action().map(|a| a.words()),
    );
}

/// Adds the GPU, field and source items read off the snapshots of a few ticks (the last one
/// is `snap`), one group after the other: the GPUs, their interconnect, the fields, then the
/// attribution sources and what the join allocated.
/// `timings` holds the time one read of each field took on all entities, where measured.
pub fn from_snapshot(
    report: &mut Report,
    snap: &Snapshot,
    counters: &CounterSet,
    timings: &[(&'static str, std::time::Duration)],
) {
    gpus(report, snap);
    super::links::interconnect(report, snap);
    switch_selection(report, snap);
    fields(report, snap, counters, timings);
    sources(report, snap);
    allocated(report, snap);
}

/// The GPUs and MIG instances: none exported while NVML answers, else each GPU and its
/// health.
fn gpus(report: &mut Report, snap: &Snapshot) {
    if snap.devices.is_empty() && snap.stats.nvml_up {
        report.add(
            "gpus",
            "devices",
            Severity::Fail,
            "NVML answered but no GPU is exported",
            Some("check -d/--devices (it may select none) and nvidia-smi -L on the node"),
        );
    }
    for d in &snap.devices {
        gpu(report, snap, d);
        health(report, snap, d.gpu);
    }
}

/// One GPU: its name and UUID, its MIG instances and whether its Xid events are watched; or
/// that it is lost.
fn gpu(report: &mut Report, snap: &Snapshot, d: &DeviceStatus) {
    let instances: Vec<String> = snap
        .entities
        .iter()
        .filter(|e| e.id.gpu == d.gpu)
        .filter_map(|e| e.id.mig.as_ref())
        .map(|m| format!("{} (GI {})", m.profile, m.gpu_instance_id))
        .collect();
    let mig = if instances.is_empty() {
        "MIG off or no instance".to_owned()
    } else {
        format!("MIG: {}", instances.join(", "))
    };
    let watched = snap.xids.iter().any(|x| x.id.gpu == d.gpu);
    let xid = if watched {
        "Xid events watched"
    } else {
        "Xid events NOT watched (NVML refused the registration; DCGM_FI_DEV_XID_ERRORS stays 0)"
    };
    let mig = format!("{mig}; {xid}");
    if d.up {
        report.add(
            "gpus",
            format!("GPU {}", d.gpu),
            if watched { Severity::Ok } else { Severity::Warn },
            format!("{} {}; {mig}", d.model_name, d.uuid),
            (!watched).then_some(
                "Xid events need the driver's event support (nvmlDeviceRegisterEvents); check the driver version and dmesg",
            ),
        );
    } else {
        report.add(
            "gpus",
            format!("GPU {}", d.gpu),
            super::links::level(snap, d.gpu, &[crate::snapshot::Reason::GpuLost]),
            if d.uuid.is_empty() {
                "NVML does not answer for it (lost before its name and UUID were read)".to_owned()
            } else {
                format!(
                    "{} {}: NVML no longer answers for it (lost)",
                    d.model_name, d.uuid
                )
            },
            Some(
                "dmesg on the node (Xid 79: fallen off the bus); the GPU needs a reset or service",
            ),
        );
    }
}

/// What `-s/--switch-devices` names that the DCGM hostengine does not list, as a warning.
fn switch_selection(report: &mut Report, snap: &Snapshot) {
    if let Some(note) = &snap.switch_selection_note {
        report.add(
            "fields",
            "-s/--switch-devices",
            Severity::Warn,
            note.clone(),
            Some("name NVSwitch ids and port indices the hostengine lists (`dcgmi discovery -l`), or leave -s at f"),
        );
    }
}

/// Every configured field: on how many entities it was served, unsupported, failed (a link's
/// or an NVSwitch's field as `links` reads it).
fn fields(
    report: &mut Report,
    snap: &Snapshot,
    counters: &CounterSet,
    timings: &[(&'static str, std::time::Duration)],
) {
    for (slot, row) in counters.metrics().enumerate() {
        if row.field.level == crate::catalogue::Level::Link {
            super::links::link_row(report, snap, &row.name);
        } else if row.field.level == crate::catalogue::Level::Switch {
            super::links::switch_row(report, snap, slot, &row.name);
        } else {
            field(report, snap, slot, row, timings);
        }
    }
}

/// One field of a GPU or MIG instance, in counter slot `slot`: where it was read, the verdict
/// on that, and the time one read of it took.
fn field(
    report: &mut Report,
    snap: &Snapshot,
    slot: usize,
    row: &CounterRow,
    timings: &[(&'static str, std::time::Duration)],
) {
    let field = row.field.name;
    let subject = if row.name == field {
        field.to_owned()
    } else {
        format!("{} ({field})", row.name)
    };
    let (level, detail, fix) = FieldReads::of(snap, slot, field).verdict(snap, row);
    let detail = match timings.iter().find(|(f, _)| *f == field) {
        Some((_, t)) => format!(
            "{detail}; one read {:.2} ms on all entities",
            t.as_secs_f64() * 1000.0
        ),
        None => detail,
    };
    report.add("fields", subject, level, detail, fix);
}

/// Where one field was read in the last tick.
struct FieldReads {
    /// The GPUs and MIG instances sampled.
    entities: usize,
    /// How many of them gave a value.
    served: usize,
    /// Those NVML does not offer it on.
    unsupported: Vec<String>,
    /// Those DCGM should have served it on this tick and did not.
    unserved: Vec<String>,
    /// Its read errors, `kind ×n` each.
    failed: Vec<String>,
}

impl FieldReads {
    fn of(snap: &Snapshot, slot: usize, field: &str) -> Self {
        let served = snap
            .entities
            .iter()
            .filter(|e| e.values.get(slot).is_some_and(Option::is_some))
            .count();
        let unsupported: Vec<String> = snap
            .stats
            .unsupported
            .iter()
            .filter(|u| u.field == field)
            .map(|u| entity_name(u.gpu, u.gpu_instance_id))
            .collect();
        let unserved: Vec<String> = snap
            .stats
            .dcgm
            .unserved
            .iter()
            .filter(|u| u.field == field)
            .map(|u| entity_name(u.gpu, u.gpu_instance_id))
            .collect();
        let failed: Vec<String> = snap
            .stats
            .field_errors
            .iter()
            .filter(|(f, _, _)| *f == field)
            .map(|(_, kind, n)| format!("{kind} ×{n}"))
            .collect();
        FieldReads {
            entities: snap.entities.len(),
            served,
            unsupported,
            unserved,
            failed,
        }
    }

    /// The item's level, detail and fix: read errors first, then nothing sampled, then withheld
    /// (GPU models mixed, `--compatibility dcgm-4.10`), then DCGM not serving it, then not
    /// offered or not served anywhere, then served.
    fn verdict(
        &self,
        snap: &Snapshot,
        row: &CounterRow,
    ) -> (Severity, String, Option<&'static str>) {
        let FieldReads {
            entities,
            served,
            unsupported,
            unserved,
            failed,
        } = self;
        if !failed.is_empty() {
            (
                Severity::Fail,
                format!(
                    "served on {served}/{entities}; read errors: {}",
                    failed.join(", ")
                ),
                Some("the exporter's log names each error; report it with --hardware-report"),
            )
        } else if *entities == 0 {
            (
                Severity::Info,
                "not read: no GPU or MIG instance was sampled (see the nvml rows)".to_owned(),
                None,
            )
        } else if let Some(w) = snap
            .stats
            .withheld
            .iter()
            .find(|w| w.field == row.field.name)
        {
            // A node of mixed GPU models under a profile that serves only the common fields.
            (
                Severity::Info,
                format!("served on {served}/{entities}; {}", w.reason),
                Some(
                    "run with --compatibility native to serve it on the GPUs that support it, or leave it out of the counters file",
                ),
            )
        } else if !unserved.is_empty() {
            // Configured, and DCGM does not serve it: never ok, a failure where nothing does.
            let also = if unsupported.is_empty() {
                String::new()
            } else {
                format!("; unsupported on {}", unsupported.join(", "))
            };
            (
                if *served == 0 {
                    Severity::Fail
                } else {
                    Severity::Warn
                },
                format!(
                    "served on {served}/{entities}; not on {} ({}, see the DCGM section){also}",
                    unserved.join(", "),
                    snap.stats.dcgm.missing().0
                ),
                Some(
                    "DCGM serves it on GPUs without GPM: the DCGM section says why it does not and what to do",
                ),
            )
        } else if *served == 0 && !unsupported.is_empty() {
            // A profiling field DCGM would serve: the fix is DCGM's, after the flags given.
            let fix = match snap.stats.dcgm.up() {
                _ if !crate::dcgm::serves(row.field) => {
                    "NVML does not offer it on these GPUs; remove it from the counters file"
                }
                None => DCGM_FIX,
                Some(false) => {
                    "NVML does not offer it on these GPUs, and DCGM, which would, \
                                does not answer: see the DCGM section"
                }
                Some(true) => {
                    "neither NVML nor DCGM offers it on these GPUs; remove it from \
                               the counters file"
                }
            };
            (
                Severity::Info,
                format!("unsupported on every entity ({})", unsupported.join(", ")),
                Some(fix),
            )
        } else if *served == 0 {
            (
                Severity::Warn,
                format!(
                    "served on 0/{entities}: no GPU or MIG instance gave a value in the last tick"
                ),
                Some(
                    "the exporter's log says why a field is left out; a field of another entity level (a MIG instance's on GPUs without MIG) has no series here",
                ),
            )
        } else if !unsupported.is_empty() {
            (
                Severity::Info,
                format!(
                    "served on {served}/{entities}; unsupported on {}",
                    unsupported.join(", ")
                ),
                None,
            )
        } else {
            (Severity::Ok, format!("served on {served}/{entities}"), None)
        }
    }
}

/// Each attribution source: up (and when it last answered) or down, with its errors.
fn sources(report: &mut Report, snap: &Snapshot) {
    for s in &snap.attribution.sources {
        let (level, fix) = if s.up {
            (Severity::Ok, None)
        } else {
            (Severity::Fail, Some(source_fix(s.source)))
        };
        let mut detail = match (s.up, s.age_seconds) {
            (true, Some(a)) => format!("up, answered {a:.1} s ago"),
            (true, None) => "up".to_owned(),
            (false, _) => "down".to_owned(),
        };
        if s.errors > 0 {
            let _ = write!(detail, "; {} error(s)", s.errors);
        }
        if let Some(e) = &s.last_error {
            let _ = write!(detail, "; last: {e}");
        }
        report.add("kubernetes", s.source, level, detail, fix);
    }
}

/// What the join allocated: the device IDs of each resource, and those that name no exported
/// GPU or MIG instance.
fn allocated(report: &mut Report, snap: &Snapshot) {
    let Some(j) = &snap.attribution.join else {
        return;
    };
    for (resource, allocatable, allocated) in &j.resources {
        report.add(
            "kubernetes",
            format!("resource {resource}"),
            Severity::Ok,
            format!(
                "{allocated} device ID(s) allocated{}",
                allocatable
                    .map(|n| format!(" of {n} allocatable"))
                    .unwrap_or_default()
            ),
            None,
        );
    }
    if j.unmatched > 0 {
        report.add(
            "kubernetes",
            "device IDs",
            Severity::Warn,
            format!(
                "{} allocated device ID(s) name no exported GPU or MIG instance: {}{}",
                j.unmatched,
                j.unmatched_ids.join(", "),
                match j.unmatched.saturating_sub(j.unmatched_ids.len()) {
                    0 => String::new(),
                    more => format!(" and {more} more (the first {} are listed)", j.unmatched_ids.len()),
                }
            ),
            Some("a device plugin naming devices by something other than UUID or index, or -d excluding them; see docs/kubernetes.md"),
        );
    }
}

/// The kubelet's pod-resources socket as a file: present, a socket, and connectable by this
/// process's user (the kubelet creates it root-owned, mode 0755: only uid 0 may connect).
pub fn socket(report: &mut Report, path: &std::path::Path) {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let subject = "pod-resources socket";
    let mount_fix = "mount the kubelet's pod-resources directory (hostPath /var/lib/kubelet/pod-resources) \
                     and point --pod-resources-kubelet-socket at kubelet.sock in it";
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) => {
            report.add(
                "kubernetes",
                subject,
                Severity::Fail,
                format!("{}: {e}", path.display()),
                Some(mount_fix),
            );
            return;
        }
    };
    if !meta.file_type().is_socket() {
        report.add(
            "kubernetes",
            subject,
            Severity::Fail,
            format!("{} exists but is not a socket", path.display()),
            Some(mount_fix),
        );
        return;
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    let mode = meta.mode() & 0o777;
    let detail = format!(
        "{}: socket, owner uid {}, mode {mode:04o}; this process runs as uid {euid}",
        path.display(),
        meta.uid()
    );
    let writable = euid == 0 || (meta.uid() == euid && mode & 0o200 != 0) || mode & 0o002 != 0;
    if writable {
        report.add("kubernetes", subject, Severity::Ok, detail, None);
    } else {
        report.add(
            "kubernetes",
            subject,
            Severity::Fail,
            format!("{detail}: connecting needs write permission on it"),
            Some("run the container as uid 0 (the chart does when kubernetes.podMapping is on), still without capabilities"),
        );
    }
}

/// The proc tree process attribution reads: NVML reports host PIDs, so the exporter must see
/// the host's processes (`hostPID: true`). A process that is PID 1 of `/proc` is in a PID
/// namespace of its own.
pub fn proc_root(report: &mut Report, root: &std::path::Path, own_pid: u32) {
    let subject = "proc root";
    let fix = "set hostPID: true on the pod (the chart does with kubernetes.processMetrics), or turn --kubernetes-process-metrics off";
    let pids = match std::fs::read_dir(root) {
        Ok(d) => d
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
            })
            .count(),
        Err(e) => {
            report.add(
                "kubernetes",
                subject,
                Severity::Fail,
                format!("{}: {e}", root.display()),
                Some(fix),
            );
            return;
        }
    };
    if root == std::path::Path::new("/proc") && own_pid == 1 {
        report.add(
            "kubernetes",
            subject,
            Severity::Fail,
            format!("this process is PID 1 of /proc ({pids} process(es) visible): the container has a PID namespace of its own, so NVML's host PIDs cannot be found"),
            Some(fix),
        );
    } else {
        report.add(
            "kubernetes",
            subject,
            Severity::Ok,
            format!("{}: {pids} process(es) visible", root.display()),
            None,
        );
    }
}

/// The API's answers: one item per reviewed verb, and the node-scoped pod list where the
/// exporter watches pods (`None`: the pod watch is off, so nothing is listed).
pub fn api(
    report: &mut Report,
    reviews: &[crate::sources::kube::access::Access],
    pods: Option<Result<usize, crate::sources::kube::access::AccessError>>,
    node: Option<&str>,
) {
    let rbac_fix = "grant it to the exporter's service account: the chart's ClusterRole \
                    (rbac.create=true), docs/kubernetes-rbac.md, docs/least-privilege.md";
    for a in reviews {
        let what = if a.group.is_empty() {
            format!("{} {}", a.verb, a.resource)
        } else {
            format!("{} {}.{}", a.verb, a.resource, a.group)
        };
        let reason = a
            .reason
            .as_deref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        match &a.allowed {
            Ok(true) => report.add(
                "kubernetes",
                what,
                Severity::Ok,
                format!("allowed{reason}"),
                None,
            ),
            Ok(false) => report.add(
                "kubernetes",
                what,
                Severity::Fail,
                format!("denied{reason}"),
                Some(rbac_fix),
            ),
            Err(e) => {
                let refused = e.refused();
                report.add(
                    "kubernetes",
                    what,
                    if refused { Severity::Fail } else { Severity::Warn },
                    format!("could not be reviewed: {e}"),
                    Some(if refused {
                        "the API server refuses the exporter's credentials or the review itself: check the service account token and RBAC"
                    } else {
                        "the API server did not answer the SelfSubjectAccessReview; see its error"
                    }),
                );
            }
        }
    }
    let Some(pods) = pods else {
        return;
    };
    let scope = node
        .map(|n| format!("node {n}"))
        .unwrap_or_else(|| "every node (NODE_NAME is unset)".to_owned());
    match pods {
        Ok(0) => report.add(
            "kubernetes",
            "pods on this node",
            Severity::Warn,
            format!("the API lists no pod on {scope}"),
            Some("set NODE_NAME from the downward API (spec.nodeName); the chart does"),
        ),
        Ok(n) => report.add(
            "kubernetes",
            "pods on this node",
            Severity::Ok,
            format!("the API lists {n} pod(s) on {scope}"),
            None,
        ),
        Err(e) => report.add(
            "kubernetes",
            "pods on this node",
            Severity::Fail,
            format!("listing pods on {scope}: {e}"),
            Some(rbac_fix),
        ),
    }
}

/// `GPU 0`, or `GPU 0 GI 2` for a MIG instance.
fn entity_name(gpu: u32, gpu_instance_id: Option<u32>) -> String {
    match gpu_instance_id {
        Some(gi) => format!("GPU {gpu} GI {gi}"),
        None => format!("GPU {gpu}"),
    }
}

/// The fix to try when an attribution source is down.
fn source_fix(source: &str) -> &'static str {
    match source {
        "kubelet" => {
            "mount the kubelet's pod-resources directory (hostPath /var/lib/kubelet/pod-resources, \
             or --pod-resources-kubelet-socket) and run as uid 0: the socket is root's, mode 0755"
        }
        "pods" | "resourceslices" => {
            "the pod's service account needs get/list/watch on pods (and resourceslices with DRA): \
             the chart's ClusterRole (rbac.create=true); or turn --kubernetes-pod-metadata off"
        }
        "hpc_jobs" => "check --hpc-job-mapping-dir: it must be a readable directory",
        "processes" => {
            "per-process attribution reads /proc of the host: set hostPID: true \
             (kubernetes.processMetrics in the chart) or turn --kubernetes-process-metrics off"
        }
        _ => "see the exporter's log",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdict_and_forms() {
        let mut r = Report::default();
        r.add("nvml", "library", Severity::Ok, "loaded", None);
        r.add(
            "fields",
            "DCGM_FI_X",
            Severity::Info,
            "unsupported | here",
            Some("remove it"),
        );
        assert_eq!(r.exit_code(), 0);
        let h = r.human();
        assert!(h.contains("NVML\n  ok    library"), "{h}");
        assert!(h.contains("fix: remove it"), "{h}");
        assert!(h.ends_with("check: everything configured works\n"), "{h}");
        let md = r.hardware_report("0.1.0");
        assert!(
            md.contains("| fields | DCGM_FI_X | info | unsupported \\| here |"),
            "{md}"
        );
        r.add(
            "kubernetes",
            "kubelet",
            Severity::Fail,
            "down",
            Some(source_fix("kubelet")),
        );
        assert_eq!(r.exit_code(), 1);
        assert!(r.human().contains("1 thing(s) configured do not work"));
        // The hardware report leaves out what is not about the hardware.
        assert!(!r.hardware_report("0.1.0").contains("kubelet"));
        let mut p = Report::default();
        proc_root(&mut p, std::path::Path::new("/proc"), 1);
        assert_eq!(p.items[0].severity, Severity::Fail, "{:?}", p.items);
        assert!(p.items[0].detail.contains("PID namespace of its own"));
        let mut p = Report::default();
        proc_root(&mut p, std::path::Path::new("/proc"), std::process::id());
        assert_eq!(p.items[0].severity, Severity::Ok, "{:?}", p.items);
        let mut p = Report::default();
        proc_root(&mut p, std::path::Path::new("/nonexistent-proc"), 7);
        assert_eq!(p.items[0].severity, Severity::Fail);
        let json: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert_eq!(json["items"][2]["level"], "fail");
    }
}
