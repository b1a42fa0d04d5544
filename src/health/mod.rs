//! The GPU health model: the one verdict per GPU and MIG instance that the landing page,
//! `/status`, `gpu-exporter check`, the health metrics and the Kubernetes outputs show.
//!
//! Each tick the sampler hands the model the snapshot (after the NVML read and the DCGM
//! merge) and the counter set it was read with; the model gathers each GPU's signals
//! (`Signals`: Xids, ECC, row remaps, a lost GPU, clock-event reasons, temperatures, NVLink
//! and fabric, NVML's recovery action, DCGM's health watches), turns them into reasons with
//! the `rules`, holds each reason for the hold time after its cause is gone (`damping`), and
//! returns one [`EntityHealth`] per GPU and MIG instance for `Snapshot::health`, with the
//! signals it judged as `/status` shows them ([`ShownSignals`]). [`signals`] is the one place
//! they are gathered, once per GPU and tick; `/status` displays the model's result. Every
//! signal is the physical GPU's except an application Xid NVML reported with a MIG GPU
//! instance, which is that instance's: an instance's verdict is the GPU's whole-GPU reasons
//! and its own; the GPU's is all of them, each instance's naming its instance.
//!
//! What is watched does not depend on what is exported: [`watched_set`] adds the fields the
//! model needs to the counter set the reader reads (after the file's own rows), and
//! [`exported_only`] takes them off again before the snapshot is encoded.
//!
//! The two counter sets are reconciled by one rule: the model *judges* every signal it read
//! (the read set: exported and watched fields), but *shows* a field's value only when the
//! counters file exports that field ([`shown`]); a watched-only field is judged and shown as
//! not configured ([`not_exported`] names those of [`SHOWN_FIELDS`]), so that `/status`
//! never shows a value the metrics do not carry. The recent Xids, NVLink and fabric signals
//! need no field and are always shown. [`SHOWN_FIELDS`] is the one list of the shown signals'
//! fields; [`WATCHED_FIELDS`] is made from its judged ones and those judged but not shown.
//! The shown signals are gathered in their one shape, `snapshot::ShownSignals`
//! (`Signals::shown`), which `/status` serializes as the model leaves it; the clock events are
//! gathered once, as NVML's bits (`Signals::clock_events`, what the rules judge), and [`shown`]
//! names them for display.
//!
//! Owns the reasons, their severity, messages and actions (`rules`, the Xid table in `xid`),
//! the hold, and the NVML-to-DCGM watch mapping (`dcgm_status`). It must not read NVML or DCGM,
//! encode, or serve.

pub mod damping;
pub mod dcgm_status;
pub mod rules;
pub mod xid;

use std::time::Duration;

use crate::catalogue::Getter;
use crate::catalogue::csv::{CounterRow, CounterSet, MetricType};
use crate::gpu::nvlink::{FABRIC_COMPLETED, errors_past_fec};
use crate::gpu::reader::CLOCK_EVENT_REASONS;
use crate::snapshot::{
    ActiveReason, EntityHealth, EntitySample, ShownSignals, Snapshot, Value, Verdict, XidCounts,
    XidTotals,
};
use damping::Damper;
use rules::Signals;

/// How long a reason stays after its cause is gone, unless `--health-hold` says otherwise.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(300);

/// The model's settings.
#[derive(Debug, Clone)]
pub struct HealthOptions {
    /// How long a reason stays after its cause was last seen (an Xid: after it occurred).
    pub hold: Duration,
}

impl Default for HealthOptions {
    fn default() -> Self {
        Self { hold: DEFAULT_HOLD }
    }
}

/// Volatile double-bit ECC errors.
pub const ECC_DBE: &str = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL";
/// A row remap waits for a reset.
pub const REMAP_PENDING: &str = "DCGM_FI_DEV_ROW_REMAP_PENDING";
/// A row remap failed.
pub const REMAP_FAILURE: &str = "DCGM_FI_DEV_ROW_REMAP_FAILURE";
/// Rows remapped for uncorrectable errors (shown, not judged).
pub const REMAPPED: &str = "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS";
/// The clock-event (throttle) reasons bit mask.
pub const CLOCK_EVENTS: &str = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS";
/// Temperature, °C.
pub const TEMP: &str = "DCGM_FI_DEV_GPU_TEMP";
/// Slowdown temperature, °C.
pub const SLOWDOWN: &str = "DCGM_FI_DEV_SLOWDOWN_TEMP";
/// NVML's recovery action.
pub const RECOVERY: &str = "DCGM_FI_DEV_GET_GPU_RECOVERY_ACTION";
/// The last Xid (shown, not judged: the model reads the Xid totals).
pub const XID: &str = "DCGM_FI_DEV_XID_ERRORS";

/// How far back the recent Xids `/status` shows reach (`ShownSignals::recent_xids`).
pub const XID_RECENT_SECONDS: f64 = 3600.0;

/// A signal that `/status` shows only where the counters file exports its field.
#[derive(Debug, Clone, Copy)]
pub struct ShownField {
    /// The field.
    pub field: &'static str,
    /// The signal in words, for `/status`'s not-configured list when the file lacks the
    /// field; `None`: not listed there (the uncorrectable remapped rows).
    pub words: Option<&'static str>,
    /// The rules judge it, so the model reads the field whatever the file exports
    /// ([`WATCHED_FIELDS`]).
    pub judged: bool,
    /// Takes the signal's value off a [`ShownSignals`].
    pub blank: fn(&mut ShownSignals),
}

/// Every field-backed signal of [`ShownSignals`], in the page's order: the one list of which
/// field backs which shown signal, what `/status` calls it when the file lacks the field
/// ([`not_exported`]) and whether the model watches it anyway.
pub const SHOWN_FIELDS: [ShownField; 6] = [
    ShownField {
        field: XID,
        words: Some("last Xid"),
        judged: false,
        blank: |s| s.last_xid = None,
    },
    ShownField {
        field: ECC_DBE,
        words: Some("ECC double-bit errors"),
        judged: true,
        blank: |s| s.ecc_dbe = None,
    },
    ShownField {
        field: REMAPPED,
        words: None,
        judged: false,
        blank: |s| s.remapped_rows = None,
    },
    ShownField {
        field: REMAP_FAILURE,
        words: Some("row remap failure"),
        judged: true,
        blank: |s| s.remap_failure = None,
    },
    ShownField {
        field: REMAP_PENDING,
        words: Some("row remap pending"),
        judged: true,
        blank: |s| s.remap_pending = None,
    },
    ShownField {
        field: CLOCK_EVENTS,
        words: Some("throttle reasons"),
        judged: true,
        blank: |s| s.clock_events = None,
    },
];

/// The fields the rules judge whose values `/status` does not show among the health signals.
const JUDGED_ONLY: [&str; 3] = [TEMP, SLOWDOWN, RECOVERY];

/// The fields the model reads whatever the counters file exports: the judged
/// [`SHOWN_FIELDS`], then the judged-only ones.
pub const WATCHED_FIELDS: [&str; 7] = watched_fields();

/// [`WATCHED_FIELDS`], from [`SHOWN_FIELDS`] and `JUDGED_ONLY` (its length is checked when
/// it compiles).
const fn watched_fields() -> [&'static str; 7] {
    let mut out = [""; 7];
    let mut n = 0;
    let mut i = 0;
    while i < SHOWN_FIELDS.len() {
        if SHOWN_FIELDS[i].judged {
            out[n] = SHOWN_FIELDS[i].field;
            n += 1;
        }
        i += 1;
    }
    let mut j = 0;
    while j < JUDGED_ONLY.len() {
        out[n] = JUDGED_ONLY[j];
        n += 1;
        j += 1;
    }
    assert!(
        n == out.len(),
        "WATCHED_FIELDS' length is the judged fields'"
    );
    out
}

/// Whether `counters` has a row for `field` (by its canonical name: a DCGM 4.7 alias in the
/// file resolves to the same definition).
fn exports(counters: &CounterSet, field: &str) -> bool {
    counters.metrics().any(|r| r.field.name == field)
}

/// The [`SHOWN_FIELDS`] listed as not configured that `exported` lacks: (signal in words,
/// field to add).
pub fn not_exported(
    exported: &CounterSet,
) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
    SHOWN_FIELDS
        .into_iter()
        .filter(|f| !exports(exported, f.field))
        .filter_map(|f| Some((f.words?, f.field)))
}

/// `sig`'s shown signals as `/status` shows them: the clock-event bits named (the active
/// reasons but idle), then each field-backed value only where `exported` exports its field
/// ([`SHOWN_FIELDS`], the module's rule), the rest as they are.
pub fn shown(sig: &Signals, exported: &CounterSet) -> ShownSignals {
    let mut out = sig.shown.clone();
    out.clock_events = sig.clock_events.map(throttle_names);
    for f in SHOWN_FIELDS.iter().filter(|f| !exports(exported, f.field)) {
        (f.blank)(&mut out);
    }
    out
}

/// The names of the active clock-event reasons of `bits` other than idle (dcgm-exporter's).
fn throttle_names(bits: u64) -> Vec<&'static str> {
    CLOCK_EVENT_REASONS
        .iter()
        .filter(|(bit, name)| bits & bit != 0 && *name != "gpu_idle")
        .map(|(_, name)| *name)
        .collect()
}

/// The Xids of `x` seen within [`XID_RECENT_SECONDS`] of `now`: (code, occurrences, seconds
/// ago).
fn recent_xids(x: &XidTotals, now: f64) -> Vec<(u64, u64, f64)> {
    x.codes
        .iter()
        .filter_map(|(code, n, last)| {
            let ago = (now - (*last)?).max(0.0);
            (*n > 0 && ago <= XID_RECENT_SECONDS).then_some((*code, *n, ago))
        })
        .collect()
}

/// `counters` with a gauge row appended for each watched field it lacks, so that the reader
/// reads them too. The file's rows keep their slots; the watched ones come after them.
pub fn watched_set(counters: &CounterSet) -> CounterSet {
    let mut out = counters.clone();
    for name in WATCHED_FIELDS {
        if exports(counters, name) {
            continue;
        }
        let Some(field) = crate::catalogue::lookup(name) else {
            continue;
        };
        out.rows.push(CounterRow {
            name: name.to_owned(),
            field,
            kind: MetricType::Gauge,
            help: String::new(),
            line: 0,
        });
    }
    out
}

/// Takes the watched-only slots off the entities, leaving one slot per metric row of
/// `exported` (the counter set that is encoded).
pub fn exported_only(entities: &mut [EntitySample], exported: &CounterSet) {
    let n = exported.metrics().count();
    for e in entities {
        e.values.truncate(n);
    }
}

/// Finds fields in an entity's value slots.
struct Slots<'a>(&'a CounterSet);

impl Slots<'_> {
    fn num(&self, e: &EntitySample, field: &str) -> Option<f64> {
        let slot = self.0.slot(field)?;
        Some(e.values.get(slot)?.as_ref()?.as_f64())
    }

    fn xid(&self, e: &EntitySample) -> Option<u64> {
        let slot = self.0.slot(XID)?;
        match e.values.get(slot)?.as_ref()? {
            Value::Xid(x) => Some(*x),
            other => Some(other.as_f64() as u64),
        }
    }

    fn dcgm(&self, e: &EntitySample) -> Option<Vec<crate::snapshot::HealthWatch>> {
        let slot = self
            .0
            .metrics()
            .position(|r| r.field.getter == Getter::DcgmHealth)?;
        match e.values.get(slot)?.as_ref()? {
            Value::Health(w) => Some(w.clone()),
            _ => None,
        }
    }
}

/// One GPU's signals from the snapshot; `read` is the counter set the values were read with
/// ([`watched_set`]). The one place that gathers a GPU's health signals; the model calls it
/// once per GPU and tick, and [`shown`] takes `/status`'s view from its result.
pub fn signals(snap: &Snapshot, read: &CounterSet, gpu: u32, up: bool) -> Signals {
    let s = Slots(read);
    // The physical GPU's own entity; with dcgm-exporter's MIG shape the device values sit on
    // the instances, and the first one stands in.
    let e = snap
        .entities
        .iter()
        .find(|e| e.id.gpu == gpu && e.id.mig.is_none())
        .or_else(|| snap.entities.iter().find(|e| e.id.gpu == gpu))
        .filter(|_| up);
    let mut out = Signals {
        up,
        ..Signals::default()
    };
    if let Some(e) = e {
        out.shown.ecc_dbe = s.num(e, ECC_DBE);
        out.shown.remap_pending = s.num(e, REMAP_PENDING);
        out.shown.remap_failure = s.num(e, REMAP_FAILURE);
        out.shown.remapped_rows = s.num(e, REMAPPED);
        out.shown.last_xid = s.xid(e);
        out.clock_events = s.num(e, CLOCK_EVENTS).map(|b| b as u64);
        out.temp = s.num(e, TEMP);
        out.slowdown_temp = s.num(e, SLOWDOWN);
        out.recovery_action = s.num(e, RECOVERY).map(|a| a as u32);
        out.dcgm = s.dcgm(e);
    }
    if let Some(x) = snap.xids.iter().find(|x| x.id.gpu == gpu) {
        (out.xids, out.instance_xids) = split_xids(x);
        out.shown.recent_xids = recent_xids(x, snap.taken_at_unix);
    }
    if let Some(g) = snap.interconnect.iter().find(|g| g.id.gpu == gpu) {
        out.shown.nvlink_down = g.links.iter().filter(|l| !l.up).map(|l| l.link).collect();
        out.shown.nvlink_ber_high = g
            .links
            .iter()
            .filter(|l| errors_past_fec(l))
            .map(|l| l.link)
            .collect();
        if let Some(f) = &g.fabric {
            out.fabric_failed = f.state == FABRIC_COMPLETED && f.status != 0;
            out.shown.fabric_health = f.health_summary;
        }
    }
    out
}

/// A GPU's Xids split by scope: the whole GPU's, and each MIG GPU instance's application
/// Xids (those NVML reported with the instance). Any other Xid is the whole GPU's wherever
/// it was reported; so is an application Xid without an instance.
fn split_xids(x: &XidTotals) -> XidScopes {
    let app = |c: u64| xid::classify(c).class == xid::XidClass::Application;
    let instances: Vec<(u32, XidCounts)> = x
        .instances
        .iter()
        .map(|(gi, codes)| (*gi, codes.iter().copied().filter(|c| app(c.0)).collect()))
        .filter(|(_, codes): &(u32, Vec<_>)| !codes.is_empty())
        .collect();
    // An application Xid's whole-GPU share is what NVML reported without an instance.
    let whole = x
        .codes
        .iter()
        .filter_map(|&(code, n, t)| {
            if app(code) {
                x.whole_gpu.iter().find(|c| c.0 == code).copied()
            } else {
                Some((code, n, t?))
            }
        })
        .collect();
    (whole, instances)
}

type XidScopes = (XidCounts, Vec<(u32, XidCounts)>);

/// The stateful model; the sampler owns one and calls [`HealthModel::evaluate`] every tick.
#[derive(Debug, Default)]
pub struct HealthModel {
    opts: HealthOptions,
    damper: Damper,
}

impl HealthModel {
    /// A model with `opts`.
    pub fn new(opts: HealthOptions) -> Self {
        Self {
            opts,
            damper: Damper::default(),
        }
    }

    /// The verdict of every GPU of `snap` and of each of its MIG instances, the GPU first;
    /// `read` is the counter set its values were read with ([`watched_set`]), `exported` the
    /// one that is encoded, which decides what each verdict's [`ShownSignals`] show.
    pub fn evaluate(
        &mut self,
        snap: &Snapshot,
        read: &CounterSet,
        exported: &CounterSet,
    ) -> Vec<EntityHealth> {
        if snap.devices.is_empty() {
            // NVML did not answer this tick: no verdict, and the held reasons are kept.
            return Vec::new();
        }
        let now = snap.taken_at_unix;
        let hold = self.opts.hold.as_secs_f64();
        let mut out = Vec::new();
        let mut keys = Vec::with_capacity(snap.devices.len());
        for d in &snap.devices {
            let key = if d.uuid.is_empty() {
                format!("#{}", d.gpu)
            } else {
                d.uuid.clone()
            };
            let s = signals(snap, read, d.gpu, d.up);
            let observed = rules::observe(&s, now, hold);
            let reasons = self.damper.update(&key, observed, now, hold);
            let gpu = EntityHealth {
                gpu: d.gpu,
                minor: d.minor,
                gpu_instance_id: None,
                uuid: d.uuid.clone(),
                verdict: reasons.first().map_or(Verdict::Ok, |r| r.severity),
                reasons,
                recovery_action: s.recovery_action,
                shown: shown(&s, exported),
            };
            let instances: Vec<EntityHealth> = snap
                .entities
                .iter()
                .filter(|e| e.id.gpu == d.gpu)
                .filter_map(|e| e.id.mig.as_ref())
                .map(|m| {
                    let gi = m.gpu_instance_id;
                    let reasons: Vec<ActiveReason> = gpu
                        .reasons
                        .iter()
                        .filter(|r| r.gpu_instance_id.is_none_or(|own| own == gi))
                        .cloned()
                        .collect();
                    EntityHealth {
                        gpu_instance_id: Some(gi),
                        uuid: m.uuid.clone(),
                        verdict: reasons.first().map_or(Verdict::Ok, |r| r.severity),
                        reasons,
                        ..gpu.clone()
                    }
                })
                .collect();
            out.push(gpu);
            out.extend(instances);
            keys.push(key);
        }
        self.damper.keep_only(&keys);
        out
    }
}

/// Fills the empty `DCGM_EXP_GPU_HEALTH_STATUS` slots of each physical GPU (no DCGM answer
/// for it this tick: DCGM off, not connected, or late) with the watches computed from its
/// verdict (`dcgm_status`).
pub fn fill_dcgm_status(
    entities: &mut [EntitySample],
    exported: &CounterSet,
    health: &[EntityHealth],
) {
    let Some(slot) = exported
        .metrics()
        .position(|r| r.field.getter == Getter::DcgmHealth)
    else {
        return;
    };
    for e in entities.iter_mut().filter(|e| e.id.mig.is_none()) {
        let Some(h) = health
            .iter()
            .find(|h| h.gpu == e.id.gpu && h.gpu_instance_id.is_none())
        else {
            continue;
        };
        if let Some(dst @ None) = e.values.get_mut(slot) {
            *dst = Some(Value::Health(dcgm_status::from_reasons(&h.reasons)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::csv::parse_counters;
    use crate::snapshot::{DeviceStatus, EntityId, MigIdentity, Reason};

    fn id(gpu: u32, mig: Option<u32>) -> EntityId {
        EntityId {
            gpu,
            uuid: format!("GPU-{gpu}"),
            pci_bus_id: String::new(),
            device: format!("nvidia{gpu}"),
            model_name: "NVIDIA H100".into(),
            mig: mig.map(|gi| MigIdentity {
                profile: "3g.40gb".into(),
                gpu_instance_id: gi,
                compute_instance_id: 0,
                uuid: format!("MIG-{gpu}-{gi}"),
            }),
        }
    }

    fn device(gpu: u32, up: bool) -> DeviceStatus {
        DeviceStatus {
            gpu,
            uuid: format!("GPU-{gpu}"),
            model_name: "NVIDIA H100".into(),
            pci_bus_id: String::new(),
            minor: None,
            up,
        }
    }

    #[test]
    fn the_watched_set_adds_only_what_the_file_lacks_after_its_rows() {
        let file = parse_counters("t.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t.\n").unwrap();
        let w = watched_set(&file);
        let names: Vec<&str> = w.metrics().map(|r| r.field.name).collect();
        assert_eq!(names[0], TEMP, "the file's rows keep their slots");
        assert_eq!(names.len(), WATCHED_FIELDS.len());
        assert_eq!(names.iter().filter(|n| **n == TEMP).count(), 1);
        let mut e = vec![EntitySample {
            id: id(0, None),
            values: vec![None; names.len()],
            labels: vec![],
        }];
        exported_only(&mut e, &file);
        assert_eq!(e[0].values.len(), 1);
    }

    #[test]
    fn watched_fields_give_reasons_and_instances_share_their_gpus_verdict() {
        let file = parse_counters("t.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t.\n").unwrap();
        let read = watched_set(&file);
        let slot = |name: &str| read.metrics().position(|r| r.field.name == name).unwrap();
        let mut values = vec![None; read.metrics().count()];
        values[slot(ECC_DBE)] = Some(Value::Num(2.0));
        values[slot(CLOCK_EVENTS)] = Some(Value::Num(f64::from(0x80 | 0x8)));
        values[slot(RECOVERY)] = Some(Value::Num(1.0));
        let snap = Snapshot {
            taken_at_unix: 100.0,
            devices: vec![device(0, true), device(1, false)],
            entities: vec![
                EntitySample {
                    id: id(0, None),
                    values,
                    labels: vec![],
                },
                EntitySample {
                    id: id(0, Some(1)),
                    values: vec![None; read.metrics().count()],
                    labels: vec![],
                },
            ],
            xids: vec![XidTotals {
                id: id(1, None),
                codes: vec![(79, 1, Some(99.0))],
                whole_gpu: vec![(79, 1, 99.0)],
                instances: vec![],
            }],
            ..Snapshot::default()
        };
        let h = HealthModel::default().evaluate(&snap, &read, &file);
        assert_eq!(h.len(), 3, "GPU 0, its instance, GPU 1");
        let reasons = |i: usize| -> Vec<Reason> { h[i].reasons.iter().map(|r| r.reason).collect() };
        assert_eq!(
            reasons(0),
            [Reason::EccDbe, Reason::RecoveryReset, Reason::PowerBrake]
        );
        assert_eq!(h[0].verdict, Verdict::Critical);
        assert_eq!(h[0].recovery_action, Some(1));
        assert_eq!(h[1].gpu_instance_id, Some(1));
        assert_eq!(h[1].uuid, "MIG-0-1");
        assert_eq!(h[1].reasons, h[0].reasons);
        assert_eq!(reasons(2), [Reason::GpuLost, Reason::XidHardware]);
        // Judged, but not shown: the file exports neither the ECC nor the clock-event field.
        assert_eq!(h[0].shown.ecc_dbe, None);
        assert_eq!(h[0].shown.clock_events, None);
        assert_eq!(
            h[1].shown, h[0].shown,
            "an instance shows its GPU's signals"
        );
    }

    #[test]
    fn a_signal_is_shown_only_where_the_file_exports_its_field() {
        let sig = Signals {
            up: true,
            shown: ShownSignals {
                ecc_dbe: Some(2.0),
                remap_pending: Some(1.0),
                last_xid: Some(48),
                nvlink_down: vec![3],
                fabric_health: Some(1),
                ..ShownSignals::default()
            },
            clock_events: Some(0x40),
            ..Signals::default()
        };
        let file = parse_counters(
            "t.csv",
            "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, e.\nDCGM_FI_DEV_XID_ERRORS, gauge, x.\n",
        )
        .unwrap();
        let s = shown(&sig, &file);
        assert_eq!((s.ecc_dbe, s.last_xid), (Some(2.0), Some(48)));
        assert_eq!((s.remap_pending, s.clock_events), (None, None));
        assert_eq!((s.nvlink_down, s.fabric_health), (vec![3], Some(1)));
        let missing: Vec<&str> = not_exported(&file).map(|(_, f)| f).collect();
        assert_eq!(missing, [REMAP_FAILURE, REMAP_PENDING, CLOCK_EVENTS]);
        // With every field exported (the read set), everything read is shown.
        let all = shown(&sig, &watched_set(&file));
        assert_eq!(
            (all.remap_pending, all.clock_events),
            (Some(1.0), Some(vec!["hw_thermal"]))
        );
    }

    #[test]
    fn the_throttle_reasons_are_the_active_bits_by_name_but_idle() {
        assert_eq!(
            throttle_names(0x1 | 0x20 | 0x40),
            ["sw_thermal", "hw_thermal"]
        );
        assert!(throttle_names(0x1).is_empty());
    }

    #[test]
    fn each_shown_field_blanks_a_signal_of_its_own() {
        let full = ShownSignals {
            last_xid: Some(1),
            ecc_dbe: Some(1.0),
            remapped_rows: Some(1.0),
            remap_failure: Some(1.0),
            remap_pending: Some(1.0),
            clock_events: Some(vec!["hw_thermal"]),
            ..ShownSignals::default()
        };
        let mut blanked = Vec::new();
        for f in SHOWN_FIELDS {
            let mut s = full.clone();
            (f.blank)(&mut s);
            assert_ne!(s, full, "{}", f.field);
            blanked.push(s);
        }
        for (i, a) in blanked.iter().enumerate() {
            assert!(
                blanked[i + 1..].iter().all(|b| b != a),
                "{}",
                SHOWN_FIELDS[i].field
            );
        }
    }

    #[test]
    fn a_tick_without_nvml_keeps_the_held_reasons() {
        let read =
            watched_set(&parse_counters("t.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t.\n").unwrap());
        let mut m = HealthModel::new(HealthOptions {
            hold: Duration::from_secs(60),
        });
        let lost = |t: f64, up: bool| Snapshot {
            taken_at_unix: t,
            devices: vec![device(0, up)],
            ..Snapshot::default()
        };
        assert_eq!(
            m.evaluate(&lost(0.0, false), &read, &read)[0].verdict,
            Verdict::Critical
        );
        let nothing = Snapshot {
            taken_at_unix: 1.0,
            ..Snapshot::default()
        };
        assert!(m.evaluate(&nothing, &read, &read).is_empty());
        let back = m.evaluate(&lost(2.0, true), &read, &read);
        assert_eq!(back[0].verdict, Verdict::Critical, "still held");
        assert!(!back[0].reasons[0].present);
        assert_eq!(
            m.evaluate(&lost(60.0, true), &read, &read)[0].verdict,
            Verdict::Ok
        );
    }

    #[test]
    fn an_application_xid_of_one_instance_is_that_instances_and_the_rest_stay_the_gpus() {
        let read =
            watched_set(&parse_counters("t.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t.\n").unwrap());
        let entity = |gpu: u32, mig: Option<u32>| EntitySample {
            id: id(gpu, mig),
            values: vec![None; read.metrics().count()],
            labels: vec![],
        };
        let snap = |xids: XidTotals| Snapshot {
            taken_at_unix: 100.0,
            devices: vec![device(0, true)],
            entities: vec![entity(0, None), entity(0, Some(7)), entity(0, Some(8))],
            xids: vec![xids],
            ..Snapshot::default()
        };
        let mut m = HealthModel::default();
        // Xid 31 twice on instance 7 (application), Xid 48 on instance 8 (memory: the GPU's).
        let h = m.evaluate(
            &snap(XidTotals {
                id: id(0, None),
                codes: vec![(31, 2, Some(99.0)), (48, 1, Some(98.0))],
                whole_gpu: vec![],
                instances: vec![(7, vec![(31, 2, 99.0)]), (8, vec![(48, 1, 98.0)])],
            }),
            &read,
            &read,
        );
        let of = |i: usize| -> Vec<(Reason, Option<u32>)> {
            h[i].reasons
                .iter()
                .map(|r| (r.reason, r.gpu_instance_id))
                .collect()
        };
        assert_eq!(
            of(0),
            [(Reason::XidMemory, None), (Reason::XidApplication, Some(7))],
            "the GPU: all, the instance's naming it"
        );
        assert_eq!(of(1), of(0), "instance 7: the GPU's and its own");
        assert_eq!(of(2), [(Reason::XidMemory, None)], "instance 8: not 7's");
        assert!(
            h[0].reasons[1]
                .message
                .starts_with("Xid 31 on MIG instance 7:")
        );
        // Without an instance, an application Xid is the whole GPU's, as before.
        let h = HealthModel::default().evaluate(
            &snap(XidTotals {
                id: id(0, None),
                codes: vec![(13, 1, Some(99.0))],
                whole_gpu: vec![(13, 1, 99.0)],
                instances: vec![],
            }),
            &read,
            &read,
        );
        assert!(h.iter().all(|e| e.verdict == Verdict::Warning
            && e.reasons.iter().all(|r| r.gpu_instance_id.is_none())));
    }

    #[test]
    fn each_instances_application_xid_is_held_and_cleared_on_its_own() {
        let read =
            watched_set(&parse_counters("t.csv", "DCGM_FI_DEV_GPU_TEMP, gauge, t.\n").unwrap());
        let entity = |mig: Option<u32>| EntitySample {
            id: id(0, mig),
            values: vec![None; read.metrics().count()],
            labels: vec![],
        };
        let at = |t: f64, instances: Vec<(u32, XidCounts)>| Snapshot {
            taken_at_unix: t,
            devices: vec![device(0, true)],
            entities: vec![entity(None), entity(Some(7)), entity(Some(8))],
            xids: vec![XidTotals {
                id: id(0, None),
                codes: vec![(13, instances.len() as u64, Some(t - 1.0))],
                whole_gpu: vec![],
                instances,
            }],
            ..Snapshot::default()
        };
        let mut m = HealthModel::new(HealthOptions {
            hold: Duration::from_secs(60),
        });
        let verdicts =
            |h: Vec<EntityHealth>| -> Vec<Verdict> { h.iter().map(|e| e.verdict).collect() };
        use Verdict::{Ok, Warning};
        assert_eq!(
            verdicts(m.evaluate(&at(100.0, vec![(7, vec![(13, 1, 99.0)])]), &read, &read)),
            [Warning, Warning, Ok]
        );
        let both = vec![(7, vec![(13, 1, 99.0)]), (8, vec![(13, 1, 129.0)])];
        assert_eq!(
            verdicts(m.evaluate(&at(130.0, both.clone()), &read, &read)),
            [Warning, Warning, Warning]
        );
        // 70 s after instance 7's Xid, 40 s after instance 8's: only 8's is still held.
        assert_eq!(
            verdicts(m.evaluate(&at(170.0, both), &read, &read)),
            [Warning, Ok, Warning]
        );
    }
}
