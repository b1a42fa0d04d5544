//! `gpu_device_info`: one series of value 1 per GPU and MIG instance, with the labels that
//! describe the device (`pci_bus_id`, `device`, `modelName` and the counters file's `label`
//! rows, such as `DCGM_FI_DRIVER_VERSION`) after its identity. In the `lean` shape
//! (`--series-labels`) it is the only series that carries them; a query that wants the model
//! of a series joins on the identity (`* on (UUID, GPU_I_ID) group_left (modelName)
//! gpu_device_info`). A lost GPU keeps its series, with what it last answered and without the
//! `label` rows (they were read on the GPU).
//!
//! Writes text only; it must not read NVML.

use super::text::{EncodeOptions, write_header};
use super::{write_csv_labels, write_described};
use crate::snapshot::{EntityId, Snapshot, device_node};

/// Appends `gpu_device_info` for every entity of `snap` and every GPU that is down.
pub(super) fn encode(
    out: &mut String,
    snap: &Snapshot,
    label_order: &[(usize, &str)],
    opts: &EncodeOptions,
) {
    let down: Vec<EntityId> = snap
        .devices
        .iter()
        .filter(|d| !d.up && !d.uuid.is_empty())
        .filter(|d| !snap.entities.iter().any(|e| e.id.uuid == d.uuid))
        .map(|d| EntityId {
            gpu: d.gpu,
            uuid: d.uuid.clone(),
            pci_bus_id: d.pci_bus_id.clone(),
            device: device_node(d.minor, d.gpu),
            model_name: d.model_name.clone(),
            mig: None,
        })
        .collect();
    if snap.entities.is_empty() && down.is_empty() {
        return;
    }
    write_header(
        out,
        "gpu_device_info",
        "What describes a GPU or MIG instance (model, PCI bus id, device node, the counters file's label fields); value 1. The other series carry only the identity labels to join on.",
        "gauge",
    );
    let line = |out: &mut String, id: &EntityId, csv: &dyn Fn(&mut String, &mut bool)| {
        out.push_str("gpu_device_info{");
        let mut first = true;
        write_described(out, &mut first, id, opts);
        csv(out, &mut first);
        out.push_str("} 1\n");
    };
    for e in &snap.entities {
        line(out, &e.id, &|out, first| {
            write_csv_labels(out, first, e, label_order)
        });
    }
    for id in &down {
        line(out, id, &|_, _| {});
    }
}
