//! The DCGM objects a session makes for its watches, in one place: entity groups, field groups
//! and the watches of one on the other, kept together so that they are unwatched and destroyed
//! together. A host engine keeps a connection's watches until the client unwatches them or
//! leaves: destroying only the groups would leave the watches behind, on a GPU that has gone
//! among others.
//!
//! Used by `watches` (the GPUs' watches) and `switches` (the NVSwitch chips' and ports'). It
//! only calls DCGM; which entities and fields to watch is its callers' business, and it must not
//! log.

use std::ffi::CString;
use std::time::Duration;

use dcgm_abi::{
    DCGM_GROUP_EMPTY, DCGM_ST_CONNECTION_NOT_VALID, DCGM_ST_OK, DCGM_ST_TIMEOUT,
    dcgmGroupEntityPair_t, dcgmHandle_t,
};

use super::health::Failed;
use super::library::Api;

/// A return code that ends the session (the hostengine is gone or did not answer).
pub fn lost(name: &'static str, rc: i32) -> Result<(), Failed> {
    if rc == DCGM_ST_CONNECTION_NOT_VALID || rc == DCGM_ST_TIMEOUT {
        Err((name, rc))
    } else {
        Ok(())
    }
}

/// What DCGM answered a step: `Ok(Err(refusal))` when it refused (the call and its code),
/// `Err` when the connection was lost (what was made goes with the session: drop the
/// [`Objects`] without destroying them).
pub type Step<T> = Result<Result<T, Failed>, Failed>;

/// The groups, field groups and watches made on one handle.
#[derive(Debug, Default)]
pub struct Objects {
    groups: Vec<usize>,
    field_groups: Vec<usize>,
    /// The (group, field group) pairs DCGM watches.
    watched: Vec<(usize, usize)>,
}

impl Objects {
    /// Makes an entity group named `name` holding `entities`.
    pub fn group(
        &mut self,
        api: &Api,
        handle: dcgmHandle_t,
        name: &str,
        entities: &[dcgmGroupEntityPair_t],
    ) -> Step<usize> {
        let name = CString::new(name).unwrap_or_default();
        let mut grp = 0usize;
        // SAFETY: valid name and out pointer.
        let rc = unsafe { (api.group_create)(handle, DCGM_GROUP_EMPTY, name.as_ptr(), &mut grp) };
        lost("dcgmGroupCreate", rc)?;
        if rc != DCGM_ST_OK {
            return Ok(Err(("dcgmGroupCreate", rc)));
        }
        self.groups.push(grp);
        for e in entities {
            // SAFETY: plain values.
            let rc = unsafe { (api.group_add)(handle, grp, e.entityGroupId, e.entityId) };
            lost("dcgmGroupAddEntity", rc)?;
        }
        Ok(Ok(grp))
    }

    /// Makes a field group named `name` of `fields` and watches it on `group` every `every`,
    /// with DCGM's cache `limits` (max keep age, max keep samples).
    pub fn watch(
        &mut self,
        api: &Api,
        handle: dcgmHandle_t,
        group: usize,
        (name, fields): (&str, &[u16]),
        every: Duration,
        limits: (Duration, i32),
    ) -> Step<()> {
        let name = CString::new(name).unwrap_or_default();
        let mut fg = 0usize;
        let n = i32::try_from(fields.len()).unwrap_or(i32::MAX);
        // SAFETY: `fields` holds `n` ids; valid name and out pointer.
        let rc =
            unsafe { (api.field_group_create)(handle, n, fields.as_ptr(), name.as_ptr(), &mut fg) };
        lost("dcgmFieldGroupCreate", rc)?;
        if rc != DCGM_ST_OK {
            return Ok(Err(("dcgmFieldGroupCreate", rc)));
        }
        self.field_groups.push(fg);
        let us = i64::try_from(every.as_micros()).unwrap_or(i64::MAX);
        let (keep_age, keep_samples) = limits;
        // SAFETY: plain values.
        let rc =
            unsafe { (api.watch)(handle, group, fg, us, keep_age.as_secs_f64(), keep_samples) };
        lost("dcgmWatchFields", rc)?;
        if rc != DCGM_ST_OK {
            return Ok(Err(("dcgmWatchFields", rc)));
        }
        self.watched.push((group, fg));
        Ok(Ok(()))
    }

    /// How many field groups were made so far (to name the next one).
    pub fn field_group_count(&self) -> usize {
        self.field_groups.len()
    }

    /// Unwatches every watch, then destroys the field groups and groups (errors ignored: they
    /// go with the handle).
    pub fn destroy(self, api: &Api, handle: dcgmHandle_t) {
        for (g, fg) in self.watched {
            // SAFETY: a group and field group this handle made and watched.
            unsafe { (api.unwatch)(handle, g, fg) };
        }
        for fg in self.field_groups {
            // SAFETY: a field group this handle made.
            unsafe { (api.field_group_destroy)(handle, fg) };
        }
        for g in self.groups {
            // SAFETY: a group this handle made.
            unsafe { (api.group_destroy)(handle, g) };
        }
    }
}
