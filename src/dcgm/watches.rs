//! The GPUs' watches of one DCGM session: the wanted entities grouped by interval and field
//! set, each GPU's profiling fields resolved to metric groups DCGM can watch together, one
//! entity group, field group and watch per set (what DCGM refuses found one entity and field at
//! a time, so that one refused field leaves the others watched), and all of it unwatched and
//! destroyed together (`objects`) when what is wanted changes.
//!
//! Called by `session`, which owns the handle and lists the GPUs; it must not log.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use dcgm_abi::{DCGM_FE_GPU, DCGM_FE_GPU_I, DCGM_ST_OK, dcgmGroupEntityPair_t, dcgmHandle_t};

use super::groups::{MetricGroup, resolve};
use super::health::Failed;
use super::library::Api;
use super::objects::Objects;
use super::wanted::{Target, Wanted};

/// A GPU as the session's DCGM lists it.
pub struct Listed {
    /// DCGM's GPU id.
    pub id: u32,
    /// NVML GPU-instance id → DCGM `GPU_I` entity id.
    pub instances: HashMap<u32, u32>,
    /// Its profiling metric groups, or why there are none.
    pub groups: Result<Vec<MetricGroup>, String>,
}

/// The watches in place, and what they were made for.
pub struct Watches {
    wanted: Wanted,
    objects: Objects,
    /// Each watched entity, its DCGM pair and the fields watched on it.
    pub entities: Vec<(Target, dcgmGroupEntityPair_t, Vec<u16>)>,
    /// What could not be watched, with the reason in words.
    pub refused: Vec<(Target, u16, String)>,
}

/// An entity asked about, and its DCGM pair.
type Entity = (Target, dcgmGroupEntityPair_t);

/// Whether a wanted GPU or GPU instance is missing from `gpus` (one bound again, or made,
/// since the session listed them).
pub fn unlisted(gpus: &HashMap<String, Listed>, wanted: &Wanted) -> bool {
    wanted.targets.iter().any(|t| {
        gpus.get(&t.uuid)
            .is_none_or(|g| t.gi.is_some_and(|gi| !g.instances.contains_key(&gi)))
    })
}

impl Watches {
    /// Whether these watches were made for `wanted`.
    pub fn made_for(&self, wanted: &Wanted) -> bool {
        self.wanted == *wanted
    }

    /// Makes the watches for `wanted` on the GPUs the session lists, with DCGM's cache
    /// `limits` (max keep age, max keep samples). A lost connection is an error (what was made
    /// goes with the session).
    pub fn make(
        api: &Api,
        handle: dcgmHandle_t,
        gpus: &HashMap<String, Listed>,
        wanted: &Wanted,
        limits: (Duration, i32),
    ) -> Result<Self, Failed> {
        let field_ids: Vec<u16> = wanted.fields.iter().map(|(f, _)| *f).collect();
        let interval: HashMap<u16, Duration> = wanted.fields.iter().copied().collect();
        let mut refused = Vec::new();
        // (interval, fields) → the entities that watch exactly those fields at that interval.
        let mut buckets: BTreeMap<(Duration, Vec<u16>), Vec<Entity>> = BTreeMap::new();
        for t in &wanted.targets {
            let Some(gpu) = gpus.get(&t.uuid) else {
                for f in &field_ids {
                    let why = "DCGM does not list this GPU (no GPU with its UUID)";
                    refused.push((t.clone(), *f, why.to_owned()));
                }
                continue;
            };
            let pair = match t.gi {
                None => Some(dcgmGroupEntityPair_t {
                    entityGroupId: DCGM_FE_GPU,
                    entityId: gpu.id,
                }),
                Some(gi) => gpu.instances.get(&gi).map(|e| dcgmGroupEntityPair_t {
                    entityGroupId: DCGM_FE_GPU_I,
                    entityId: *e,
                }),
            };
            let Some(pair) = pair else {
                for f in &field_ids {
                    let why = "DCGM lists no GPU instance with this id on the GPU";
                    refused.push((t.clone(), *f, why.to_owned()));
                }
                continue;
            };
            let ok = match &gpu.groups {
                Ok(groups) => {
                    let r = resolve(&field_ids, groups);
                    refused.extend(r.refused.into_iter().map(|(f, w)| (t.clone(), f, w)));
                    r.watch
                }
                Err(why) => {
                    refused.extend(field_ids.iter().map(|f| (t.clone(), *f, why.clone())));
                    Vec::new()
                }
            };
            let mut per: BTreeMap<Duration, Vec<u16>> = BTreeMap::new();
            for f in ok {
                per.entry(interval.get(&f).copied().unwrap_or_default())
                    .or_default()
                    .push(f);
            }
            for (iv, fs) in per {
                buckets.entry((iv, fs)).or_default().push((t.clone(), pair));
            }
        }
        let mut w = Watches {
            wanted: wanted.clone(),
            objects: Objects::default(),
            entities: Vec::new(),
            refused: Vec::new(),
        };
        for ((iv, fields), ents) in buckets {
            let rc = w.set(api, handle, &ents, &fields, iv, limits)?;
            if rc == DCGM_ST_OK {
                for (t, p) in ents {
                    w.entities.push((t, p, fields.clone()));
                }
                continue;
            }
            if ents.len() == 1 && fields.len() == 1 {
                refuse_all(&mut refused, &ents, &fields, refusal(api, rc));
                continue;
            }
            // DCGM refuses a watch as a whole: find what it refuses, one entity and one field
            // at a time, so that one refused field leaves the others watched.
            for e in &ents {
                let mut kept = Vec::new();
                for f in &fields {
                    let one = std::slice::from_ref(e);
                    let rc = w.set(api, handle, one, std::slice::from_ref(f), iv, limits)?;
                    if rc == DCGM_ST_OK {
                        kept.push(*f);
                    } else {
                        refuse_all(&mut refused, one, &[*f], refusal(api, rc));
                    }
                }
                if !kept.is_empty() {
                    w.entities.push((e.0.clone(), e.1, kept));
                }
            }
        }
        w.refused = refused;
        Ok(w)
    }

    /// Makes one group of `ents`, one field group of `fields` and watches them every `every`
    /// with DCGM's cache `limits`. Returns `DCGM_ST_OK` or the code DCGM refused a step with
    /// (what was made is kept, to be destroyed with the watches); a lost connection is an
    /// error.
    fn set(
        &mut self,
        api: &Api,
        handle: dcgmHandle_t,
        ents: &[Entity],
        fields: &[u16],
        every: Duration,
        limits: (Duration, i32),
    ) -> Result<i32, Failed> {
        let pairs: Vec<dcgmGroupEntityPair_t> = ents.iter().map(|(_, p)| *p).collect();
        let grp = match self.objects.group(api, handle, "gpu-exporter", &pairs)? {
            Ok(g) => g,
            Err((_, rc)) => return Ok(rc),
        };
        let name = format!("gpu-exporter-{}", self.objects.field_group_count());
        Ok(
            match self
                .objects
                .watch(api, handle, grp, (&name, fields), every, limits)?
            {
                Ok(()) => DCGM_ST_OK,
                Err((_, rc)) => rc,
            },
        )
    }

    /// Unwatches every watch and destroys the groups (errors ignored: they go with the handle).
    pub fn destroy(self, api: &Api, handle: dcgmHandle_t) {
        self.objects.destroy(api, handle);
    }
}

/// Why DCGM would not make a watch, in words, with DCGM's own reason.
fn refusal(api: &Api, rc: i32) -> String {
    format!("DCGM refused the watch: {}", api.describe(rc))
}

fn refuse_all(
    refused: &mut Vec<(Target, u16, String)>,
    ents: &[Entity],
    fields: &[u16],
    why: String,
) {
    for (t, _) in ents {
        for f in fields {
            refused.push((t.clone(), *f, why.clone()));
        }
    }
}
