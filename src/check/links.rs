//! The NVLink and fabric items of `gpu-exporter check`: each GPU's links and fabric
//! registration, and how a counters file's link-entity row and NVSwitch row are served. Which
//! links are down or past FEC, and the fabric's health, are the health model's signals as it
//! gathered them (`EntityHealth::shown`), and how serious each is comes from its verdict
//! (`Snapshot::health`): the check never sorts links or judges them itself.
//!
//! Reads the snapshot only; it must not start anything or read NVML.

use super::report::{Report, Severity};
use crate::gpu::nvlink::EFFECTIVE_BER_LIMIT;
use crate::snapshot::{Reason, ShownSignals, Snapshot, Verdict};

/// The check's level of a verdict.
pub(super) fn severity(v: Verdict) -> Severity {
    match v {
        Verdict::Ok => Severity::Ok,
        Verdict::Warning => Severity::Warn,
        Verdict::Critical => Severity::Fail,
    }
}

/// The level the health model gives GPU `gpu` for any of `reasons` (the worst; ok if none).
pub(super) fn level(snap: &Snapshot, gpu: u32, reasons: &[Reason]) -> Severity {
    let worst = snap
        .health
        .iter()
        .filter(|h| h.gpu == gpu && h.gpu_instance_id.is_none())
        .flat_map(|h| &h.reasons)
        .filter(|r| reasons.contains(&r.reason))
        .map(|r| r.severity)
        .max()
        .unwrap_or(Verdict::Ok);
    severity(worst)
}

/// The signals the health model gathered for GPU `gpu` (its physical GPU's verdict). Every
/// GPU the tick read has one; `None` (no verdict) shows as nothing down and nothing past FEC.
fn signals(snap: &Snapshot, gpu: u32) -> Option<&ShownSignals> {
    snap.health
        .iter()
        .find(|h| h.gpu == gpu && h.gpu_instance_id.is_none())
        .map(|h| &h.shown)
}

/// Each GPU's links and fabric registration, for the GPUs that have either.
pub(super) fn interconnect(report: &mut Report, snap: &Snapshot) {
    // NVLink links and the NVSwitch fabric, per GPU that has either.
    for g in &snap.interconnect {
        let shown = signals(snap, g.id.gpu);
        if !g.links.is_empty() {
            let down: Vec<String> = shown
                .map(|s| s.nvlink_down.iter().map(u32::to_string).collect())
                .unwrap_or_default();
            let detail = format!("{} link(s)", g.links.len());
            if down.is_empty() {
                report.add(
                    "gpus",
                    format!("GPU {} NVLink", g.id.gpu),
                    Severity::Ok,
                    format!("{detail}, all up"),
                    None,
                );
            } else {
                report.add(
                "gpus",
                format!("GPU {} NVLink", g.id.gpu),
                level(snap, g.id.gpu, &[Reason::NvlinkDown]),
                format!("{detail}; down: {}", down.join(", ")),
                Some("nvidia-smi nvlink --status on the node; a link that stays down needs a GPU reset or the baseboard inspected"),
            );
            }
        }
        // The rate shown is the link's as read; which links are past FEC is the model's.
        let ber_high: Vec<String> = shown
            .map(|s| s.nvlink_ber_high.as_slice())
            .unwrap_or_default()
            .iter()
            .filter_map(|n| g.links.iter().find(|l| l.link == *n))
            .map(|l| format!("{} ({:.1e})", l.link, l.effective_ber.unwrap_or_default()))
            .collect();
        if !ber_high.is_empty() {
            report.add(
                "gpus",
                format!("GPU {} NVLink errors past FEC", g.id.gpu),
                level(snap, g.id.gpu, &[Reason::NvlinkBer]),
                format!(
                    "effective bit error rate above {EFFECTIVE_BER_LIMIT:e} on link(s) {}",
                    ber_high.join(", ")
                ),
                Some("drain the node and run the NVLink diagnostics (dcgmi diag or NVIDIA's field diagnostics); a rate that returns after a reset needs the tray, cable or baseboard inspected"),
            );
        }
        if let Some(f) = &g.fabric {
            let health = match shown.and_then(|s| s.fabric_health) {
                Some(1) => "healthy",
                Some(2) => "unhealthy",
                Some(3) => "limited capacity",
                _ => "health not reported",
            };
            let level = level(
                snap,
                g.id.gpu,
                &[Reason::FabricUnhealthy, Reason::FabricDegraded],
            );
            report.add(
            "gpus",
            format!("GPU {} fabric", g.id.gpu),
            level,
            format!(
                "state {}, status {}, clique {}, cluster {}; {health}",
                f.state, f.status, f.clique_id, f.cluster_uuid
            ),
            (level != Severity::Ok).then_some(
                "the NVIDIA fabric manager's log on the node (nvidia-fabricmanager), and nvidia-smi -q's Fabric section",
            ),
        );
        }
    }
}

/// A link-entity row of the counters file (`DCGM_FI_DEV_NVLINK_*_PER_LINK*`): served per link
/// from the interconnect read, so counted in links, not entities.
pub(super) fn link_row(report: &mut Report, snap: &Snapshot, name: &str) {
    // A link-entity row is served per link from the interconnect read.
    let gpus = snap.interconnect.iter().filter(|g| !g.links.is_empty());
    let (links, gpus) = gpus.fold((0, 0), |(l, n), g| (l + g.links.len(), n + 1));
    let (level, detail, fix) = if links > 0 {
        (
            Severity::Ok,
            format!("per link: {links} links on {gpus} GPU(s)"),
            None,
        )
    } else {
        (
            Severity::Info,
            "per link, and no GPU here has NVLink links".to_owned(),
            Some("it stays empty on boards without NVLink (PCIe cards such as the L4 or L40S)"),
        )
    };
    report.add("fields", name, level, detail, fix);
}

/// A switch-level or per-port NVSwitch row of the counters file (slot `slot`): served by DCGM
/// per switch (or per up port of a switch), so counted in switches, or why it is not served.
pub(super) fn switch_row(report: &mut Report, snap: &Snapshot, slot: usize, name: &str) {
    let has = |v: &[Option<crate::snapshot::Value>]| v.get(slot).is_some_and(Option::is_some);
    let served: Vec<String> = snap
        .switches
        .iter()
        .filter(|s| has(&s.values) || s.ports.iter().any(|p| has(&p.values)))
        .map(|s| format!("nvswitch{}", s.id))
        .collect();
    let ports: usize = snap
        .switches
        .iter()
        .map(|s| s.ports.iter().filter(|p| has(&p.values)).count())
        .sum();
    let (level, detail, fix) = match &snap.switches_not_served {
        _ if !served.is_empty() => (
            Severity::Ok,
            format!(
                "per NVSwitch{}, from DCGM: {}{} of {} ({})",
                if ports > 0 { " port" } else { "" },
                if ports > 0 {
                    format!("{ports} up ports on ")
                } else {
                    String::new()
                },
                served.len(),
                snap.switches.len(),
                served.join(", ")
            ),
            None,
        ),
        Some(why) => (
            Severity::Info,
            format!("not served: {why}"),
            Some(
                "only DCGM serves NVSwitch fields: run with --dcgm-mode embedded or remote on a node with NVSwitch chips, or remove it from the counters file",
            ),
        ),
        None => (
            Severity::Info,
            format!(
                "DCGM lists {} NVSwitch(es) but gives no value of this field (see the log)",
                snap.switches.len()
            ),
            None,
        ),
    };
    report.add("fields", name, level, detail, fix);
}
