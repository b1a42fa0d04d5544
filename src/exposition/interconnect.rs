//! The exporter's NVLink and fabric families, per physical GPU: `gpu_nvlink_links_down`
//! (always); with `--nvlink-links per-link` `gpu_nvlink_up`, `gpu_nvlink_errors_total`,
//! `gpu_nvlink_{symbol,effective}_errors_total`, `gpu_nvlink_{symbol,effective}_bit_error_ratio`,
//! `gpu_nvlink_{transmit,receive}_bytes_total` (one series per link, `nvlink` label); with
//! `totals` (the default) the error counters summed over the GPU's links and the bit error
//! ratios of its worst link, without `nvlink`; and `gpu_fabric_*` (`_status` and
//! `_health_mask` with per-link only); and the counters file's link-entity rows (`DCGM_FI_DEV_NVLINK_*_PER_LINK*`,
//! `DCGM_FI_DEV_NVLINK_GET_STATE`) with dcgm-exporter's link labels, and its switch-level
//! NVSwitch rows, one series per switch DCGM read, labelled `nvswitch="nvswitch<id>"` with the
//! switch's own DCGM entity id and the host label, and its per-port NVSwitch rows, one series
//! per up port with `nvlink="<port>"` before those; the switch's `label` rows follow.
//!
//! Writes text only; it must not read NVML or decide which links exist (the snapshot says).

use std::fmt::Write as _;

use super::text::{EncodeOptions, write_header, write_label, write_value};
use crate::catalogue::Getter;
use crate::catalogue::LinkPart;
use crate::catalogue::csv::CounterRow;
use crate::catalogue::labels;
use crate::gpu::reader::NvlinkLinks;
use crate::snapshot::{EntityId, Fabric, Interconnect, LinkSample, Snapshot, Value};

/// Writes an entity's identity labels (the caller's compatibility-contract order).
pub(super) type IdentityWriter = fn(&mut String, &mut bool, &EntityId, &EncodeOptions);

/// (family, help, type, the series of one link: (`error` label, value)).
type LinkFamily = (
    &'static str,
    &'static str,
    &'static str,
    fn(&LinkSample) -> Vec<(Option<&'static str>, f64)>,
);

const LINK_FAMILIES: [LinkFamily; 8] = [
    (
        "gpu_nvlink_up",
        "1 when the NVLink link is active, 0 when it is down (every link the GPU has).",
        "gauge",
        |l| vec![(None, if l.up { 1.0 } else { 0.0 })],
    ),
    (
        "gpu_nvlink_errors_total",
        "NVLink link errors by kind (crc_flit, crc_data, replay, recovery, ecc_data) as NVML counts them.",
        "counter",
        |l| {
            l.errors
                .iter()
                .map(|(k, n)| (Some(*k), *n as f64))
                .collect()
        },
    ),
    (
        "gpu_nvlink_symbol_errors_total",
        "Symbol errors on the NVLink link that FEC corrected (NVLink 5 and later); a rising rate is an early sign of a degrading link.",
        "counter",
        |l| {
            l.symbol_errors
                .map(|n| (None, n as f64))
                .into_iter()
                .collect()
        },
    ),
    (
        "gpu_nvlink_effective_errors_total",
        "Errors on the NVLink link that FEC could not correct (NVLink 5 and later).",
        "counter",
        |l| {
            l.effective_errors
                .map(|n| (None, n as f64))
                .into_iter()
                .collect()
        },
    ),
    (
        "gpu_nvlink_symbol_bit_error_ratio",
        "Symbol bit error rate of the NVLink link as NVML reports it, before FEC (NVLink 5 and later).",
        "gauge",
        |l| l.symbol_ber.map(|r| (None, r)).into_iter().collect(),
    ),
    (
        "gpu_nvlink_effective_bit_error_ratio",
        "Bit error rate of the NVLink link after FEC as NVML reports it (NVLink 5 and later).",
        "gauge",
        |l| l.effective_ber.map(|r| (None, r)).into_iter().collect(),
    ),
    (
        "gpu_nvlink_transmit_bytes_total",
        "Data payload bytes sent over the NVLink link.",
        "counter",
        |l| l.tx_bytes.map(|b| (None, b as f64)).into_iter().collect(),
    ),
    (
        "gpu_nvlink_receive_bytes_total",
        "Data payload bytes received over the NVLink link.",
        "counter",
        |l| l.rx_bytes.map(|b| (None, b as f64)).into_iter().collect(),
    ),
];

/// `--nvlink-links totals`: (family, help, type, the GPU's series from all its links:
/// (`error` label, value)). Counters are summed over the links, ratios are the worst link's.
/// The symbol errors FEC corrected are left out: the symbol bit error ratio says the same.
const TOTAL_FAMILIES: [LinkFamily4Gpu; 4] = [
    (
        "gpu_nvlink_errors_total",
        "NVLink errors by kind (crc_flit, crc_data, replay, recovery, ecc_data), summed over the GPU's links (per link with --nvlink-links per-link).",
        "counter",
        |ls| {
            let mut sums: Vec<(Option<&'static str>, f64)> = Vec::new();
            for (k, n) in ls.iter().flat_map(|l| l.errors.iter()) {
                match sums.iter_mut().find(|(e, _)| *e == Some(*k)) {
                    Some((_, v)) => *v += *n as f64,
                    None => sums.push((Some(*k), *n as f64)),
                }
            }
            sums
        },
    ),
    (
        "gpu_nvlink_effective_errors_total",
        "Errors FEC could not correct, summed over the GPU's NVLink links (NVLink 5 and later).",
        "counter",
        |ls| sum(ls, |l| l.effective_errors.map(|n| n as f64)),
    ),
    (
        "gpu_nvlink_symbol_bit_error_ratio",
        "Symbol bit error rate before FEC of the GPU's worst NVLink link (NVLink 5 and later).",
        "gauge",
        |ls| worst(ls, |l| l.symbol_ber),
    ),
    (
        "gpu_nvlink_effective_bit_error_ratio",
        "Bit error rate after FEC of the GPU's worst NVLink link (NVLink 5 and later).",
        "gauge",
        |ls| worst(ls, |l| l.effective_ber),
    ),
];

/// (family, help, type, the series of one GPU from its links).
type LinkFamily4Gpu = (
    &'static str,
    &'static str,
    &'static str,
    fn(&[LinkSample]) -> Vec<(Option<&'static str>, f64)>,
);

/// The sum of one reading over the links that have it; nothing when none has.
fn sum(
    ls: &[LinkSample],
    pick: fn(&LinkSample) -> Option<f64>,
) -> Vec<(Option<&'static str>, f64)> {
    let vs: Vec<f64> = ls.iter().filter_map(pick).collect();
    if vs.is_empty() {
        return Vec::new();
    }
    vec![(None, vs.iter().sum())]
}

/// The highest of one reading over the links that have it.
fn worst(
    ls: &[LinkSample],
    pick: fn(&LinkSample) -> Option<f64>,
) -> Vec<(Option<&'static str>, f64)> {
    ls.iter()
        .filter_map(pick)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
        .map(|v| (None, v))
        .into_iter()
        .collect()
}

/// The fabric families served only with `--nvlink-links per-link`.
const FABRIC_DETAIL: [&str; 2] = ["gpu_fabric_status", "gpu_fabric_health_mask"];

type FabricFamily = (&'static str, &'static str, fn(&Fabric) -> Option<f64>);

const FABRIC_FAMILIES: [FabricFamily; 4] = [
    (
        "gpu_fabric_state",
        "NVSwitch fabric registration state: 1 not started, 2 in progress, 3 completed.",
        |f| Some(f64::from(f.state)),
    ),
    (
        "gpu_fabric_status",
        "NVML return code of the fabric registration (0 success).",
        |f| Some(f64::from(f.status)),
    ),
    (
        "gpu_fabric_health",
        "Fabric health: 0 not reported, 1 healthy, 2 unhealthy, 3 limited capacity.",
        |f| f.health_summary.map(f64::from),
    ),
    (
        "gpu_fabric_health_mask",
        "Fabric health bit mask as NVML reports it (nvmlGpuFabricInfoV healthMask).",
        |f| f.health_mask.map(f64::from),
    ),
];

/// Writes every interconnect family that has a series.
pub(super) fn encode(
    out: &mut String,
    snap: &Snapshot,
    opts: &EncodeOptions,
    identity: IdentityWriter,
) {
    let w = GpuSeries { identity, opts };
    encode_links_down(out, snap, w);
    match opts.nvlink_links {
        NvlinkLinks::Totals => encode_totals(out, snap, w),
        NvlinkLinks::PerLink => encode_per_link(out, snap, w),
    }
    encode_fabric_info(out, snap, w);
    encode_fabric_families(out, snap, w);
}

/// How one GPU's series of an interconnect family is written: its identity labels first.
#[derive(Clone, Copy)]
struct GpuSeries<'a> {
    identity: IdentityWriter,
    opts: &'a EncodeOptions,
}

impl GpuSeries<'_> {
    /// Writes the series' name and `g`'s identity labels; whether no label was written (for
    /// the next label's comma).
    fn start(self, out: &mut String, name: &str, g: &Interconnect) -> bool {
        out.push_str(name);
        out.push('{');
        let mut first = true;
        (self.identity)(out, &mut first, &g.id, self.opts);
        first
    }
}

/// Closes a series' labels and writes its value `v` and the line's end.
fn end_series(out: &mut String, v: f64) {
    out.push_str("} ");
    write_value(out, v);
    out.push('\n');
}

/// The GPUs of the snapshot that have NVLink links.
fn with_links(snap: &Snapshot) -> impl Iterator<Item = &Interconnect> {
    snap.interconnect.iter().filter(|g| !g.links.is_empty())
}

/// The GPUs of the snapshot registered with a fabric, with their registration.
fn fabrics(snap: &Snapshot) -> impl Iterator<Item = (&Interconnect, &Fabric)> {
    snap.interconnect
        .iter()
        .filter_map(|g| g.fabric.as_ref().map(|f| (g, f)))
}

/// `gpu_nvlink_links_down`: one series per GPU with links.
fn encode_links_down(out: &mut String, snap: &Snapshot, w: GpuSeries<'_>) {
    if with_links(snap).next().is_none() {
        return;
    }
    let name = "gpu_nvlink_links_down";
    write_header(
        out,
        name,
        "NVLink links of the GPU that NVML reports inactive (every link is read each tick).",
        "gauge",
    );
    for g in with_links(snap) {
        w.start(out, name, g);
        end_series(out, g.links.iter().filter(|l| !l.up).count() as f64);
    }
}

/// The per-GPU families of `--nvlink-links totals` ([`TOTAL_FAMILIES`]): the error counters
/// summed over the GPU's links, the worst link's bit error ratios, without `nvlink`.
fn encode_totals(out: &mut String, snap: &Snapshot, w: GpuSeries<'_>) {
    for (name, help, kind, series) in TOTAL_FAMILIES {
        let mut header = false;
        for g in with_links(snap) {
            for (error, v) in series(&g.links) {
                if !header {
                    write_header(out, name, help, kind);
                    header = true;
                }
                let mut first = w.start(out, name, g);
                if let Some(e) = error {
                    write_label(out, &mut first, "error", e);
                }
                end_series(out, v);
            }
        }
    }
}

/// The per-link families of `--nvlink-links per-link` ([`LINK_FAMILIES`]): one series per
/// link, `nvlink` labelled.
fn encode_per_link(out: &mut String, snap: &Snapshot, w: GpuSeries<'_>) {
    for &(name, help, kind, series) in &LINK_FAMILIES {
        let mut header = false;
        for g in &snap.interconnect {
            for l in &g.links {
                for (error, v) in series(l) {
                    if !header {
                        write_header(out, name, help, kind);
                        header = true;
                    }
                    let mut first = w.start(out, name, g);
                    let _ = write!(out, ",nvlink=\"{}\"", l.link);
                    if let Some(e) = error {
                        write_label(out, &mut first, "error", e);
                    }
                    end_series(out, v);
                }
            }
        }
    }
}

/// `gpu_fabric_info`: one series per GPU registered with a fabric, its cluster UUID and
/// clique as labels.
fn encode_fabric_info(out: &mut String, snap: &Snapshot, w: GpuSeries<'_>) {
    if fabrics(snap).next().is_none() {
        return;
    }
    let name = "gpu_fabric_info";
    write_header(
        out,
        name,
        "The NVSwitch fabric a GPU is registered with: cluster UUID and clique (value 1).",
        "gauge",
    );
    for (g, f) in fabrics(snap) {
        let mut first = w.start(out, name, g);
        write_label(out, &mut first, "cluster_uuid", &f.cluster_uuid);
        let _ = write!(out, ",clique_id=\"{}\"", f.clique_id);
        end_series(out, 1.0);
    }
}

/// The fabric registration's families ([`FABRIC_FAMILIES`]), one series per GPU that has
/// the value.
fn encode_fabric_families(out: &mut String, snap: &Snapshot, w: GpuSeries<'_>) {
    for (name, help, pick) in FABRIC_FAMILIES {
        // The registration's return code and the raw health bits are detail: `gpu_fabric_state`
        // and `gpu_fabric_health` say the same unless --nvlink-links per-link asks for it.
        if w.opts.nvlink_links == NvlinkLinks::Totals && FABRIC_DETAIL.contains(&name) {
            continue;
        }
        let mut header = false;
        for (g, f) in fabrics(snap) {
            let Some(v) = pick(f) else { continue };
            if !header {
                write_header(out, name, help, "gauge");
                header = true;
            }
            w.start(out, name, g);
            end_series(out, v);
        }
    }
}

/// One number of one link for a link-entity field, before the field's scale; `None` when
/// the link has no such reading (an error counter the GPU lacks, the first rate).
fn link_value(l: &LinkSample, part: LinkPart) -> Option<f64> {
    match part {
        LinkPart::State => Some(if l.up { 1.0 } else { 0.0 }),
        LinkPart::Errors(kind) => l
            .errors
            .iter()
            .find(|(k, _)| *k == kind)
            .map(|(_, n)| *n as f64),
        LinkPart::Throughput => Some(l.tx_rate? + l.rx_rate?),
        LinkPart::Transmit => l.tx_rate,
        LinkPart::Receive => l.rx_rate,
    }
}

/// A link-entity row of the counters file: one series per link of every GPU, labelled as
/// dcgm-exporter labels its link entities (`nvlink`, `gpu`, `gpu_uuid`, `pci_bus_id`,
/// `device`, `model_name`, `hostname`), then the pod labels of a GPU a pod holds.
pub(super) fn encode_link_row(
    out: &mut String,
    snap: &Snapshot,
    row: &CounterRow,
    opts: &EncodeOptions,
) {
    let Getter::Link(part) = row.field.getter else {
        return;
    };
    let mut header = false;
    for g in &snap.interconnect {
        // The physical GPU's own entity, for the pods that hold it (none in MIG mode; none in
        // the lean shape, where holders are on `gpu_allocation_info` only).
        let holders = snap
            .entities
            .iter()
            .position(|e| e.id.mig.is_none() && e.id.uuid == g.id.uuid)
            .filter(|_| opts.shape.full())
            .map(|i| snap.attribution.series_labels(i));
        for l in &g.links {
            let Some(v) = link_value(l, part) else {
                continue;
            };
            if !header {
                write_header(out, &row.name, &row.help, row.kind.as_str());
                header = true;
            }
            for holder in holders.unwrap_or(&[crate::snapshot::Labels::new()]) {
                out.push_str(&row.name);
                let _ = write!(out, "{{nvlink=\"{}\",gpu=\"{}\"", l.link, g.id.gpu);
                let mut first = false;
                write_label(out, &mut first, labels::LINK_GPU_UUID.name, &g.id.uuid);
                if opts.shape.full() {
                    write_label(out, &mut first, labels::PCI_BUS_ID.name, &g.id.pci_bus_id);
                    write_label(out, &mut first, labels::DEVICE.name, &g.id.device);
                    write_label(
                        out,
                        &mut first,
                        labels::LINK_MODEL_NAME.name,
                        &labels::model_name(&g.id.model_name, opts.replace_blanks_in_model_name),
                    );
                }
                if let Some(h) = &opts.hostname {
                    write_label(out, &mut first, "hostname", h);
                }
                holder.write_to(out);
                out.push_str("} ");
                write_value(out, row.field.convert(v));
                out.push('\n');
            }
        }
    }
}

/// A switch-level row (`Level::Switch`): slot `slot` of each switch, as dcgm-exporter writes
/// switch series (`nvswitch` first, then the host label), each switch under its own id; a
/// per-port row (`Getter::DcgmSwitchPort`) of each up port of each switch, as dcgm-exporter
/// writes its link series (`nvlink`, then `nvswitch`, then the host label); then the switch's
/// `label` rows in `label_order` (sorted by name), as dcgm-exporter puts labels after those.
pub(super) fn encode_switch_row(
    out: &mut String,
    snap: &Snapshot,
    (slot, row): (usize, &CounterRow),
    label_order: &[(usize, &str)],
    opts: &EncodeOptions,
) {
    let per_port = row.field.getter == Getter::DcgmSwitchPort;
    let mut header = false;
    for s in &snap.switches {
        let series: Vec<(Option<u32>, &Option<Value>)> = if per_port {
            s.ports
                .iter()
                .filter_map(|p| Some((Some(p.port), p.values.get(slot)?)))
                .collect()
        } else {
            s.values.get(slot).map(|v| (None, v)).into_iter().collect()
        };
        for (port, value) in series {
            let Some(Value::Num(v)) = value else {
                continue;
            };
            if !header {
                write_header(out, &row.name, &row.help, row.kind.as_str());
                header = true;
            }
            out.push_str(&row.name);
            out.push('{');
            if let Some(p) = port {
                let _ = write!(out, "nvlink=\"{p}\",");
            }
            let _ = write!(out, "nvswitch=\"nvswitch{}\"", s.id);
            let mut first = false;
            if let Some(h) = &opts.hostname {
                write_label(out, &mut first, opts.host_label, h);
            }
            for (i, name) in label_order {
                if let Some(Some(l)) = s.labels.get(*i) {
                    write_label(out, &mut first, name, l);
                }
            }
            out.push_str("} ");
            write_value(out, *v);
            out.push('\n');
        }
    }
}
