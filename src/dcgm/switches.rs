//! The NVSwitch chips of a session: which switches the hostengine lists
//! (`dcgmGetEntityGroupEntities(DCGM_FE_SWITCH)`), one group of them with the switch-level
//! fields watched in field groups of their own (one per collection interval), and each tick's
//! latest values, keyed by DCGM's switch entity id (the id each switch's series carry); and
//! [`number`], how any latest value becomes a number (the session's reads use it too).
//!
//! Runs on the DCGM thread only, through the session that owns the handle. It must not log
//! or wait on anything but DCGM.

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::time::Duration;

use dcgm_abi::{
    DCGM_FE_SWITCH, DCGM_FT_DOUBLE, DCGM_FT_INT64, DCGM_GROUP_EMPTY, DCGM_ST_CONNECTION_NOT_VALID,
    DCGM_ST_OK, DCGM_ST_TIMEOUT, dcgmFieldValue_v2, dcgmGroupEntityPair_t, dcgmHandle_t,
    fp64_is_blank, int64_is_blank,
};

use super::health::Failed;
use super::library::Api;

/// The most switches asked for at once (DCGM's `DCGM_MAX_NUM_SWITCHES`).
pub const MAX_SWITCHES: usize = 32;

/// Each switch's values, by DCGM entity id.
pub type SwitchValues = Vec<(u32, HashMap<u16, f64>)>;

/// The switches' group and field groups, and what they were made for.
pub struct SwitchWatch {
    /// The fields with their intervals the watches were made for.
    wanted: Vec<(u16, Duration)>,
    group: Option<usize>,
    field_groups: Vec<usize>,
    /// The fields DCGM watches on the switches.
    watched: Vec<u16>,
    /// Fields DCGM refused, with its reason.
    pub refused: Vec<(u16, String)>,
}

/// A return code that ends the session (the hostengine is gone or did not answer).
fn lost(name: &'static str, rc: i32) -> Result<(), Failed> {
    if rc == DCGM_ST_CONNECTION_NOT_VALID || rc == DCGM_ST_TIMEOUT {
        Err((name, rc))
    } else {
        Ok(())
    }
}

/// The switches the hostengine lists, by DCGM entity id; a refusal other than a lost
/// connection is an empty list.
pub fn list(api: &Api, handle: dcgmHandle_t) -> Result<Result<Vec<u32>, Failed>, Failed> {
    let mut ids = [0u32; MAX_SWITCHES];
    let mut count = MAX_SWITCHES as i32;
    let name = "dcgmGetEntityGroupEntities";
    // SAFETY: `ids` has room for `count` ids, as the call requires.
    let rc = unsafe {
        (api.entity_group_entities)(handle, DCGM_FE_SWITCH, ids.as_mut_ptr(), &mut count, 0)
    };
    lost(name, rc)?;
    if rc != DCGM_ST_OK {
        return Ok(Err((name, rc)));
    }
    let n = usize::try_from(count).unwrap_or(0).min(MAX_SWITCHES);
    Ok(Ok(ids[..n].to_vec()))
}

impl SwitchWatch {
    /// Whether the watches were made for `fields`.
    pub fn made_for(&self, fields: &[(u16, Duration)]) -> bool {
        self.wanted == fields
    }

    /// Makes one group of `switches` and watches `fields` on it, one field group per
    /// interval, with DCGM's cache `limits` (max keep age, max keep samples). A field group
    /// DCGM refuses leaves its fields refused with DCGM's reason; a lost connection is an
    /// error (what was made goes with the session).
    pub fn make(
        api: &Api,
        handle: dcgmHandle_t,
        switches: &[u32],
        fields: &[(u16, Duration)],
        limits: (Duration, i32),
    ) -> Result<Self, Failed> {
        let mut w = Self {
            wanted: fields.to_vec(),
            group: None,
            field_groups: Vec::new(),
            watched: Vec::new(),
            refused: Vec::new(),
        };
        let refuse = |w: &mut Self, fs: &[u16], name: &str, rc: i32| {
            let why = format!(
                "DCGM refused the switch watch: {name}: {}",
                api.describe(rc)
            );
            w.refused.extend(fs.iter().map(|f| (*f, why.clone())));
        };
        let ids: Vec<u16> = fields.iter().map(|(f, _)| *f).collect();
        let mut grp = 0usize;
        let gname = c"gpu-exporter-nvswitch";
        // SAFETY: valid name and out pointer.
        let rc = unsafe { (api.group_create)(handle, DCGM_GROUP_EMPTY, gname.as_ptr(), &mut grp) };
        lost("dcgmGroupCreate", rc)?;
        if rc != DCGM_ST_OK {
            refuse(&mut w, &ids, "dcgmGroupCreate", rc);
            return Ok(w);
        }
        w.group = Some(grp);
        for s in switches {
            // SAFETY: plain values.
            let rc = unsafe { (api.group_add)(handle, grp, DCGM_FE_SWITCH, *s) };
            lost("dcgmGroupAddEntity", rc)?;
        }
        let mut per: BTreeMap<Duration, Vec<u16>> = BTreeMap::new();
        for (f, iv) in fields {
            per.entry(*iv).or_default().push(*f);
        }
        let (keep_age, keep_samples) = limits;
        for (iv, fs) in per {
            let fname = CString::new(format!("gpu-exporter-nvswitch-{}", w.field_groups.len()))
                .unwrap_or_default();
            let mut fg = 0usize;
            let n = i32::try_from(fs.len()).unwrap_or(i32::MAX);
            // SAFETY: `fs` holds `n` ids; valid name and out pointer.
            let rc = unsafe {
                (api.field_group_create)(handle, n, fs.as_ptr(), fname.as_ptr(), &mut fg)
            };
            lost("dcgmFieldGroupCreate", rc)?;
            if rc != DCGM_ST_OK {
                refuse(&mut w, &fs, "dcgmFieldGroupCreate", rc);
                continue;
            }
            w.field_groups.push(fg);
            let us = i64::try_from(iv.as_micros()).unwrap_or(i64::MAX);
            // SAFETY: plain values.
            let rc =
                unsafe { (api.watch)(handle, grp, fg, us, keep_age.as_secs_f64(), keep_samples) };
            lost("dcgmWatchFields", rc)?;
            if rc == DCGM_ST_OK {
                w.watched.extend(&fs);
            } else {
                refuse(&mut w, &fs, "dcgmWatchFields", rc);
            }
        }
        w.watched.sort_unstable();
        Ok(w)
    }

    /// This tick's latest values of the watched fields on `switches` (a blank or a failed
    /// value is left out).
    pub fn read(
        &self,
        api: &Api,
        handle: dcgmHandle_t,
        switches: &[u32],
    ) -> Result<SwitchValues, Failed> {
        let mut out: SwitchValues = switches.iter().map(|s| (*s, HashMap::new())).collect();
        if self.watched.is_empty() || switches.is_empty() {
            return Ok(out);
        }
        let mut pairs: Vec<dcgmGroupEntityPair_t> = switches
            .iter()
            .map(|s| dcgmGroupEntityPair_t {
                entityGroupId: DCGM_FE_SWITCH,
                entityId: *s,
            })
            .collect();
        let mut fields = self.watched.clone();
        let nf = fields.len();
        let mut values = vec![dcgmFieldValue_v2::zeroed(); pairs.len() * nf];
        // SAFETY: `values` holds switches × fields entries, as the call fills.
        let rc = unsafe {
            (api.latest)(
                handle,
                pairs.as_mut_ptr(),
                pairs.len() as u32,
                fields.as_mut_ptr(),
                nf as u32,
                0,
                values.as_mut_ptr(),
            )
        };
        if rc != DCGM_ST_OK {
            return Err(("dcgmEntitiesGetLatestValues", rc));
        }
        for (i, (_, got)) in out.iter_mut().enumerate() {
            for (j, f) in fields.iter().enumerate() {
                if let Some(v) = values.get(i * nf + j).and_then(number) {
                    got.insert(*f, v);
                }
            }
        }
        Ok(out)
    }

    /// Destroys the group and field groups (errors ignored: they go with the handle).
    pub fn destroy(self, api: &Api, handle: dcgmHandle_t) {
        for fg in self.field_groups {
            // SAFETY: a field group this handle made.
            unsafe { (api.field_group_destroy)(handle, fg) };
        }
        if let Some(g) = self.group {
            // SAFETY: a group this handle made.
            unsafe { (api.group_destroy)(handle, g) };
        }
    }
}

/// One value as a number: `None` for a non-OK status, a blank sentinel or a non-numeric type.
pub fn number(v: &dcgmFieldValue_v2) -> Option<f64> {
    if v.status != DCGM_ST_OK {
        return None;
    }
    // SAFETY: the union member read is the one `fieldType` names.
    match v.fieldType {
        DCGM_FT_DOUBLE => {
            let d = unsafe { v.value.dbl };
            (!fp64_is_blank(d)).then_some(d)
        }
        DCGM_FT_INT64 => {
            let i = unsafe { v.value.i64_ };
            (!int64_is_blank(i)).then_some(i as f64)
        }
        _ => None,
    }
}
