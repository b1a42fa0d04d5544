//! The health model's families, per physical GPU, with `gpu_device_up`'s labels (so a lost
//! GPU keeps its series): `gpu_health_status` (0 ok, 1 warning, 2 critical),
//! `gpu_health_reason` (1 per active reason, `reason` from the bounded set of
//! docs/health.md, present only while the reason is) and `gpu_recovery_action` (NVML's
//! recovery action, where the driver reports it). A MIG instance has no series of its own
//! (the series budget): its verdict differs from its GPU's only by an application Xid of
//! another instance, and the GPU's verdict already holds every instance's reasons.
//!
//! Writes text only; it must not judge health (`health` does) or read NVML.

use std::fmt::Write as _;

use super::text::{EncodeOptions, write_header, write_label, write_value};
use crate::catalogue::labels;
use crate::snapshot::{DeviceStatus, EntityHealth, Snapshot};

/// `{gpu, UUID, [modelName in the full shape], host label`: a physical GPU's labels on the
/// families of its state (`gpu_device_up` too), which a lost GPU keeps.
pub(super) fn labels(out: &mut String, d: &DeviceStatus, opts: &EncodeOptions) {
    let _ = write!(out, "{{{}=\"{}\"", labels::GPU.name, d.gpu);
    let mut first = false;
    write_label(
        out,
        &mut first,
        labels::UUID.spelt(opts.use_old_namespace),
        &d.uuid,
    );
    if opts.shape.full() {
        write_label(
            out,
            &mut first,
            labels::MODEL_NAME.name,
            &labels::model_name(&d.model_name, opts.replace_blanks_in_model_name),
        );
    }
    if let Some(h) = &opts.hostname {
        write_label(out, &mut first, opts.host_label, h);
    }
}

/// Appends the health families of `snap` to `out` (nothing before the first verdict).
pub fn encode(out: &mut String, snap: &Snapshot, opts: &EncodeOptions) {
    let gpus: Vec<(&DeviceStatus, &EntityHealth)> = snap
        .devices
        .iter()
        .filter_map(|d| {
            let h = snap
                .health
                .iter()
                .find(|h| h.gpu == d.gpu && h.gpu_instance_id.is_none())?;
            Some((d, h))
        })
        .collect();
    if gpus.is_empty() {
        return;
    }
    write_header(
        out,
        "gpu_health_status",
        "The GPU's health verdict: 0 ok, 1 warning, 2 critical (docs/health.md).",
        "gauge",
    );
    for (d, h) in &gpus {
        out.push_str("gpu_health_status");
        labels(out, d, opts);
        out.push_str("} ");
        write_value(out, f64::from(h.verdict.level()));
        out.push('\n');
    }
    let mut header = false;
    for (d, h) in &gpus {
        let mut reasons: Vec<&str> = h.reasons.iter().map(|r| r.reason.as_str()).collect();
        reasons.sort_unstable();
        reasons.dedup();
        for reason in reasons {
            if !header {
                write_header(
                    out,
                    "gpu_health_reason",
                    "1 for each reason of the GPU's health verdict while it holds (reason: docs/health.md); no series when the GPU is ok.",
                    "gauge",
                );
                header = true;
            }
            out.push_str("gpu_health_reason");
            labels(out, d, opts);
            let _ = write!(out, ",reason=\"{reason}\"");
            out.push_str("} 1\n");
        }
    }
    let mut header = false;
    for (d, h) in &gpus {
        let Some(a) = h.recovery_action else { continue };
        if !header {
            write_header(
                out,
                "gpu_recovery_action",
                "NVML's GPU recovery action: 0 none, 1 reset the GPU, 2 reboot the node, 3 drain peer-to-peer, 4 drain and reset.",
                "gauge",
            );
            header = true;
        }
        out.push_str("gpu_recovery_action");
        labels(out, d, opts);
        out.push_str("} ");
        write_value(out, f64::from(a));
        out.push('\n');
    }
}
