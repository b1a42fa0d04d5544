//! Which rows and entities DCGM serves, and the merge of its values into the tick's entities:
//! NVML first, DCGM only for the empty profiling rows of GPUs without GPM, and for the
//! health rows and the NVSwitch rows (DCGM's alone; switches and their ports are their own
//! entities); and which profiling values it should have filled and did not ([`unserved`]).
//!
//! Pure functions on the snapshot's entities; it must not call DCGM or log.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use super::switches::{SwitchError, SwitchTexts, SwitchValues};
use super::wanted::{Target, Wanted};
use crate::catalogue::csv::CounterRow;
use crate::catalogue::{FieldDef, Getter, Level};
use crate::gpu::collections::Collections;
use crate::snapshot::{EntitySample, HealthWatch, PortSample, SwitchSample, Unserved, Value};

/// Whether DCGM may serve this field in place of NVML: a GPM (profiling) field per entity
/// whose DCGM value is already in the exposition's unit (a ratio, or bytes per second).
pub fn serves(f: &FieldDef) -> bool {
    matches!(f.getter, Getter::Gpm(..))
        && f.level == Level::Instance
        && u16::try_from(f.id).is_ok()
        && matches!(f.unit, "ratio" | "B/s")
}

/// The entities DCGM serves: those of GPUs in `no_gpm`, except a GPU in MIG mode itself
/// (profiling is per GPU instance there, as on the GPM path).
fn served<'a>(
    entities: &'a [EntitySample],
    no_gpm: &'a HashSet<String>,
) -> impl Iterator<Item = (usize, Target)> + 'a {
    let mig_parents: HashSet<&str> = entities
        .iter()
        .filter(|e| e.id.mig.is_some())
        .map(|e| e.id.uuid.as_str())
        .collect();
    entities
        .iter()
        .enumerate()
        .filter(move |(_, e)| no_gpm.contains(&e.id.uuid))
        .filter(move |(_, e)| e.id.mig.is_some() || !mig_parents.contains(e.id.uuid.as_str()))
        .map(|(i, e)| {
            let t = Target {
                uuid: e.id.uuid.clone(),
                gi: e.id.mig.as_ref().map(|m| m.gpu_instance_id),
            };
            (i, t)
        })
}

/// The DCGM ids of the rows `keep` takes, each with its collection interval, sorted by id.
fn intervals(
    rows: &[&CounterRow],
    collections: &Collections,
    keep: impl Fn(&FieldDef) -> bool,
) -> Vec<(u16, Duration)> {
    let mut out: Vec<(u16, Duration)> = rows
        .iter()
        .filter(|r| keep(r.field))
        .filter_map(|r| {
            let id = u16::try_from(r.field.id).ok()?;
            Some((id, collections.interval_for(&r.name, r.field)))
        })
        .collect();
    out.sort();
    out.dedup_by_key(|(id, _)| *id);
    out
}

/// What to ask DCGM for this tick: every entity of a GPU in `no_gpm` (UUIDs of GPUs whose GPM
/// is not supported), and every counters row DCGM may serve, at its collection interval.
pub fn wanted(
    entities: &[EntitySample],
    rows: &[&CounterRow],
    no_gpm: &HashSet<String>,
    collections: &Collections,
) -> Wanted {
    let mut targets: Vec<Target> = served(entities, no_gpm).map(|(_, t)| t).collect();
    targets.sort();
    targets.dedup();
    let mut fields = intervals(rows, collections, serves);
    if targets.is_empty() {
        fields.clear();
    }
    let health = rows.iter().any(|r| r.field.getter == Getter::DcgmHealth);
    let switch_fields = intervals(rows, collections, |f| f.getter == Getter::DcgmSwitch);
    let port_fields = intervals(rows, collections, |f| f.getter == Getter::DcgmSwitchPort);
    Wanted {
        targets,
        fields,
        health,
        switch_fields,
        port_fields,
    }
}

/// The DCGM ids of the switch `label` rows (`Getter::DcgmSwitchText`) with their collection
/// intervals, merged into `fields` (the switch fields wanted), sorted by id.
pub fn switch_label_fields(
    mut fields: Vec<(u16, Duration)>,
    label_rows: &[&CounterRow],
    collections: &Collections,
) -> Vec<(u16, Duration)> {
    fields.extend(intervals(label_rows, collections, |f| {
        f.getter == Getter::DcgmSwitchText
    }));
    fields.sort();
    fields.dedup_by_key(|(id, _)| *id);
    fields
}

/// Why the switch-level rows have no series, from what DCGM said of the switches (`None`:
/// served, or not asked for).
pub fn switches_not_served(switches: Option<&Result<SwitchValues, SwitchError>>) -> Option<String> {
    match switches? {
        Ok(list) if list.is_empty() => Some(
            "the DCGM hostengine lists no NVSwitch (a board without NVSwitch chips, or switches \
             it cannot see)"
                .to_owned(),
        ),
        Ok(_) => None,
        Err(why) => Some(format!("DCGM would not list the NVSwitches: {why}")),
    }
}

/// Each row's value of `getter` among `values`, in the rows' units (a value DCGM did not give
/// stays absent).
fn row_values(
    rows: &[&CounterRow],
    getter: Getter,
    values: &HashMap<u16, f64>,
) -> Vec<Option<Value>> {
    rows.iter()
        .map(|row| {
            if row.field.getter != getter {
                return None;
            }
            let f = u16::try_from(row.field.id).ok()?;
            values.get(&f).map(|v| Value::Num(row.field.convert(*v)))
        })
        .collect()
}

/// One series row per switch DCGM read: each switch's values of the switch-level rows, its
/// strings of the switch `label` rows (`label_rows`, from `texts`), and each of its up ports'
/// values of the per-port rows (`ports`, by link entity id; a port of a switch not in
/// `switches` is left out).
pub fn switch_samples(
    (rows, label_rows): (&[&CounterRow], &[&CounterRow]),
    switches: &[(u32, HashMap<u16, f64>)],
    texts: &SwitchTexts,
    ports: &[(u32, HashMap<u16, f64>)],
) -> Vec<SwitchSample> {
    let mut out: Vec<SwitchSample> = switches
        .iter()
        .map(|(id, values)| SwitchSample {
            id: *id,
            values: row_values(rows, Getter::DcgmSwitch, values),
            labels: label_rows
                .iter()
                .map(|row| {
                    let f = u16::try_from(row.field.id).ok()?;
                    let own = texts.get(id)?;
                    own.get(&f)
                        .filter(|_| row.field.getter == Getter::DcgmSwitchText)
                        .cloned()
                })
                .collect(),
            ports: Vec::new(),
        })
        .collect();
    for (link, values) in ports {
        let (_, switch, port) = dcgm_abi::link_parts(*link);
        if let Some(s) = out.iter_mut().find(|s| s.id == switch) {
            s.ports.push(PortSample {
                port,
                values: row_values(rows, Getter::DcgmSwitchPort, values),
            });
        }
    }
    for s in &mut out {
        s.ports.sort_by_key(|p| p.port);
    }
    out.sort_by_key(|s| s.id);
    out
}

/// Puts each GPU's health watches into its `DCGM_EXP_GPU_HEALTH_STATUS` rows: on the physical
/// GPU's entity only (not its MIG instances), as dcgm-exporter labels them.
pub fn merge_health(
    entities: &mut [EntitySample],
    rows: &[&CounterRow],
    health: &HashMap<String, Vec<HealthWatch>>,
) {
    if health.is_empty() {
        return;
    }
    for e in entities.iter_mut().filter(|e| e.id.mig.is_none()) {
        let Some(watches) = health.get(&e.id.uuid) else {
            continue;
        };
        for (slot, row) in rows.iter().enumerate() {
            if row.field.getter == Getter::DcgmHealth
                && let Some(dst) = e.values.get_mut(slot)
            {
                *dst = Some(Value::Health(watches.clone()));
            }
        }
    }
}

/// Fills the empty DCGM-servable rows of the entities DCGM serves (those of `no_gpm` GPUs) with this tick's DCGM
/// values (a value DCGM did not give stays absent).
pub fn merge(
    entities: &mut [EntitySample],
    rows: &[&CounterRow],
    values: &HashMap<(Target, u16), f64>,
    no_gpm: &HashSet<String>,
) {
    if values.is_empty() {
        return;
    }
    let targets: Vec<(usize, Target)> = served(entities, no_gpm).collect();
    for (i, target) in targets {
        let Some(e) = entities.get_mut(i) else {
            continue;
        };
        for (slot, row) in rows.iter().enumerate() {
            if !serves(row.field) {
                continue;
            }
            let Ok(id) = u16::try_from(row.field.id) else {
                continue;
            };
            if let Some(dst) = e.values.get_mut(slot)
                && dst.is_none()
                && let Some(v) = values.get(&(target.clone(), id))
            {
                *dst = Some(Value::Num(row.field.convert(*v)));
            }
        }
    }
}

/// The profiling values DCGM should have filled this tick (after [`merge`]) and did not: each
/// DCGM-servable row still empty on an entity DCGM serves, except the fields DCGM refused on
/// that entity (`refused`: those are unsupported there), sorted.
pub fn unserved(
    entities: &[EntitySample],
    rows: &[&CounterRow],
    no_gpm: &HashSet<String>,
    refused: &BTreeMap<(Target, u16), String>,
) -> Vec<Unserved> {
    let mut out = Vec::new();
    for (i, target) in served(entities, no_gpm) {
        let Some(e) = entities.get(i) else {
            continue;
        };
        for (slot, row) in rows.iter().enumerate() {
            let Ok(id) = u16::try_from(row.field.id) else {
                continue;
            };
            let empty = e.values.get(slot).is_some_and(Option::is_none);
            if serves(row.field) && empty && !refused.contains_key(&(target.clone(), id)) {
                out.push(Unserved {
                    gpu: e.id.gpu,
                    gpu_instance_id: target.gi,
                    field: row.field.name,
                });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dcgm_serves_the_profiling_fields_in_exposition_units() {
        let name = |n| crate::catalogue::lookup(n);
        for n in [
            "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
            "DCGM_FI_PROF_DRAM_ACTIVE",
            "DCGM_FI_PROF_PCIE_TX_BYTES",
            "DCGM_FI_PROF_NVLINK_RX_BYTES",
        ] {
            let f = name(n);
            assert!(f.is_some_and(serves), "{n}");
        }
        let temp = name("DCGM_FI_DEV_GPU_TEMP");
        assert!(temp.is_some_and(|f| !serves(f)));
        // DCGM's ratio is the exposition's ratio (GPM's percent is scaled): no conversion.
        let f = name("DCGM_FI_PROF_GR_ENGINE_ACTIVE");
        assert_eq!(f.map(|f| f.convert(0.5)), Some(0.5));
    }

    fn entity(uuid: &str, gi: Option<u32>, values: Vec<Option<Value>>) -> EntitySample {
        EntitySample {
            id: crate::snapshot::EntityId {
                gpu: 0,
                uuid: uuid.into(),
                pci_bus_id: String::new(),
                device: "nvidia0".into(),
                model_name: String::new(),
                mig: gi.map(|g| crate::snapshot::MigIdentity {
                    profile: "3g.20gb".into(),
                    gpu_instance_id: g,
                    compute_instance_id: 0,
                    uuid: format!("MIG-{g}"),
                }),
            },
            values,
            labels: Vec::new(),
        }
    }

    #[test]
    fn nvml_first_dcgm_fills_only_the_empty_profiling_rows_of_gpus_without_gpm() {
        let set = crate::catalogue::csv::parse_counters(
            "test",
            "DCGM_FI_DEV_GPU_TEMP, gauge, t\nDCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, g\n\
             DCGM_FI_PROF_PCIE_RX_BYTES, gauge, rx\n",
        )
        .ok();
        let Some(set) = set else {
            panic!("counters do not parse");
        };
        let rows: Vec<&CounterRow> = set.metrics().collect();
        let mut ents = vec![
            // A100 in MIG mode: its parent and one instance; an H100 whose GPM answered.
            entity("GPU-a", None, vec![Some(Value::Num(40.0)), None, None]),
            entity("GPU-a", Some(1), vec![None, None, None]),
            entity(
                "GPU-h",
                None,
                vec![Some(Value::Num(50.0)), Some(Value::Num(0.7)), None],
            ),
        ];
        let no_gpm: HashSet<String> = ["GPU-a".to_owned()].into();
        let w = wanted(&ents, &rows, &no_gpm, &Collections::default());
        let inst = Target {
            uuid: "GPU-a".into(),
            gi: Some(1),
        };
        assert_eq!(
            w.targets,
            vec![inst.clone()],
            "the MIG parent is not asked about"
        );
        let ids: Vec<u16> = w.fields.iter().map(|(f, _)| *f).collect();
        assert_eq!(ids, vec![1001, 1010]);
        // Each field's watch interval is its collection's (`--config-file`), else the base.
        let slow = crate::gpu::collections::Collection::new(
            "pcie",
            Duration::from_secs(60),
            glob::Pattern::new("DCGM_FI_PROF_PCIE_*")
                .into_iter()
                .collect(),
        );
        let cols = Collections {
            base: Duration::from_secs(5),
            groups: vec![slow],
        };
        let w2 = wanted(&ents, &rows, &no_gpm, &cols);
        assert_eq!(
            w2.fields,
            vec![
                (1001, Duration::from_secs(5)),
                (1010, Duration::from_secs(60))
            ]
        );
        let parent = Target {
            uuid: "GPU-a".into(),
            gi: None,
        };
        let h100 = Target {
            uuid: "GPU-h".into(),
            gi: None,
        };
        // DCGM gave the instance's engine activity (not its PCIe rate: a blank), a value for
        // the parent and one for the H100: only the instance's is used.
        let values: HashMap<(Target, u16), f64> = [
            ((inst, 1001), 0.25),
            ((parent, 1001), 0.5),
            ((h100, 1001), 0.9),
        ]
        .into();
        merge(&mut ents, &rows, &values, &no_gpm);
        assert_eq!(ents[1].values, vec![None, Some(Value::Num(0.25)), None]);
        // The instance's PCIe rate is the one value DCGM should have given and did not; once
        // DCGM refused it there, it is no longer "unserved" (it is unsupported).
        let gap = Unserved {
            gpu: 0,
            gpu_instance_id: Some(1),
            field: "DCGM_FI_PROF_PCIE_RX_BYTES",
        };
        assert_eq!(unserved(&ents, &rows, &no_gpm, &BTreeMap::new()), [gap]);
        let refused: BTreeMap<(Target, u16), String> = [(
            (
                Target {
                    uuid: "GPU-a".into(),
                    gi: Some(1),
                },
                1010,
            ),
            "conflicts".to_owned(),
        )]
        .into();
        assert!(unserved(&ents, &rows, &no_gpm, &refused).is_empty());
        assert_eq!(ents[0].values, vec![Some(Value::Num(40.0)), None, None]);
        assert_eq!(ents[2].values[1], Some(Value::Num(0.7)));
    }
}
