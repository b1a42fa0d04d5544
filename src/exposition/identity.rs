//! The labels that name an entity on its series (`gpu`, `UUID`, the MIG instance's, the host
//! label; in the `full` label shape the descriptions too), and the counters file's `label`
//! rows, spelt from `catalogue::labels`: one writer for every family of a GPU or MIG
//! instance and for `gpu_device_info`.
//!
//! Pure string building; it must not decide which series exist.

use std::fmt::Write as _;

use super::text::{EncodeOptions, write_label};
use crate::catalogue::labels;
use crate::snapshot::{EntityId, EntitySample};

/// Writes the labels that name an entity on each of its series, in the compatibility-contract
/// order: `gpu`, `UUID`, in the `full` shape the descriptions, then the MIG instance's labels
/// and the host label.
pub(super) fn write_identity(
    out: &mut String,
    first: &mut bool,
    id: &EntityId,
    opts: &EncodeOptions,
) {
    write_named(out, first, id, opts, opts.shape.full());
}

/// [`write_identity`] with the descriptions (`pci_bus_id`, `device`, `modelName`) whatever the
/// shape, as `gpu_device_info` writes them.
pub(super) fn write_described(
    out: &mut String,
    first: &mut bool,
    id: &EntityId,
    opts: &EncodeOptions,
) {
    write_named(out, first, id, opts, true);
}

fn write_named(
    out: &mut String,
    first: &mut bool,
    id: &EntityId,
    opts: &EncodeOptions,
    described: bool,
) {
    let _ = write!(out, "{}=\"{}\"", labels::GPU.name, id.gpu);
    *first = false;
    write_label(
        out,
        first,
        labels::UUID.spelt(opts.use_old_namespace),
        &id.uuid,
    );
    if described {
        write_label(out, first, labels::PCI_BUS_ID.name, &id.pci_bus_id);
        write_label(out, first, labels::DEVICE.name, &id.device);
        write_label(
            out,
            first,
            labels::MODEL_NAME.name,
            &labels::model_name(&id.model_name, opts.replace_blanks_in_model_name),
        );
    }
    if let Some(mig) = &id.mig {
        write_label(out, first, labels::GPU_I_PROFILE.name, &mig.profile);
        let _ = write!(
            out,
            ",{}=\"{}\"",
            labels::GPU_I_ID.name,
            mig.gpu_instance_id
        );
        write_label(out, first, labels::MIG_UUID.name, &mig.uuid);
    }
    if let Some(h) = &opts.hostname {
        write_label(out, first, opts.host_label, h);
    }
}

/// The counters file's `label` rows of an entity (sorted by name), as the `full` shape puts
/// them on every series and `gpu_device_info` in either shape.
pub(super) fn write_csv_labels(
    out: &mut String,
    first: &mut bool,
    e: &EntitySample,
    label_order: &[(usize, &str)],
) {
    for (i, name) in label_order {
        if let Some(Some(v)) = e.labels.get(*i) {
            write_label(out, first, name, v);
        }
    }
}
