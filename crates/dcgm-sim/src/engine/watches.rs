//! The simulated host engine's watches: a group's members, a group and field group taken
//! together, making a watch (refused as DCGM refuses it: an empty group, an entity that is not
//! there, a scenario's `watch_refused` fault, profiling fields that need more than one pass
//! with what the GPU watches already) and asking whether a field is watched.
//!
//! Part of `engine` (methods on its `Engine`); it must not know about sockets or the C ABI.

use dcgm_abi as abi;
use nvml_sim::scenario::DcgmFaultKind;

use super::{Engine, GROUP_ALL_GPUS, Watch, switch_port};
use crate::prof;
use crate::proto::Entity;
use crate::switch;

impl Engine {
    /// The entities of a group (every GPU for `DCGM_GROUP_ALL_GPUS`).
    pub(super) fn members(&self, group: u64, t: f64) -> Result<Vec<Entity>, i32> {
        if group != GROUP_ALL_GPUS {
            return self
                .groups
                .get(&group)
                .cloned()
                .ok_or(abi::DCGM_ST_NOT_CONFIGURED);
        }
        Ok(self
            .gpu_ids(t)
            .into_iter()
            .map(|id| Entity {
                group: abi::DCGM_FE_GPU,
                id,
            })
            .collect())
    }

    /// The entities of a group (every GPU for `DCGM_GROUP_ALL_GPUS`) and the fields of a field
    /// group.
    pub(super) fn group_pair(
        &self,
        group: u64,
        field_group: u64,
        t: f64,
    ) -> Result<(Vec<Entity>, Vec<u16>), i32> {
        let entities = self.members(group, t)?;
        let fields = self
            .field_groups
            .get(&field_group)
            .cloned()
            .ok_or(abi::DCGM_ST_NOT_CONFIGURED)?;
        Ok((entities, fields))
    }

    pub(super) fn watch(
        &mut self,
        group: u64,
        field_group: u64,
        w: Watch,
        t: f64,
    ) -> Result<(), i32> {
        if w.freq_us <= 0 {
            return Err(abi::DCGM_ST_BADPARAM);
        }
        let (entities, fields) = self.group_pair(group, field_group, t)?;
        if entities.is_empty() {
            return Err(abi::DCGM_ST_GROUP_IS_EMPTY);
        }
        for e in &entities {
            if e.group == abi::DCGM_FE_SWITCH {
                switch::find(&self.sc, e.id).ok_or(abi::DCGM_ST_BADPARAM)?;
                continue;
            }
            if e.group == abi::DCGM_FE_LINK {
                switch_port(&self.sc, e.id).ok_or(abi::DCGM_ST_BADPARAM)?;
                continue;
            }
            let (g, _) = self.resolve(*e, t).ok_or(abi::DCGM_ST_BADPARAM)?;
            let Some(gpu) = self.sc.gpu(g) else {
                return Err(abi::DCGM_ST_BADPARAM);
            };
            if let Some(f) = self
                .faults_at(DcgmFaultKind::WatchRefused, t)
                .find(|f| fields.iter().any(|field| f.covers(g, *field)))
            {
                return Err(f.code);
            }
            // One profiling configuration per GPU: what is watched already on this GPU (any
            // of its entities) plus what is asked now must fit in one pass.
            let mut prof_fields: Vec<u16> = self
                .watches
                .keys()
                .filter(|(we, f)| {
                    prof::is_prof(*f) && self.resolve(*we, t).is_some_and(|(wg, _)| wg == g)
                })
                .map(|(_, f)| *f)
                .collect();
            prof_fields.extend(fields.iter().copied().filter(|f| prof::is_prof(*f)));
            prof_fields.sort_unstable();
            prof_fields.dedup();
            match prof::check_single_pass(gpu.model, &prof_fields) {
                Ok(()) => {}
                Err((_, None)) => return Err(abi::DCGM_ST_PROFILING_NOT_SUPPORTED),
                Err((_, Some(_))) => return Err(abi::DCGM_ST_PROFILING_MULTI_PASS),
            }
        }
        for e in &entities {
            for f in &fields {
                self.watches.insert((*e, *f), w);
            }
        }
        Ok(())
    }

    /// Whether `(entity, field)` is watched.
    pub fn is_watched(&self, e: Entity, field: u16) -> bool {
        self.watches.contains_key(&(e, field))
    }
}
