//! One connected DCGM handle and the calls made on it: connecting (embedded or remote), the
//! GPUs DCGM sees (by UUID) and their MIG GPU instances, the profiling metric groups, the
//! watches (one per interval and field set) and each tick's latest values; the NVSwitch
//! chips and ports it lists and their values (made and read through `switches`).
//!
//! Runs only on the DCGM thread (`client`), which owns it. It must not log (the client says
//! what changed, once) and must not wait on anything but DCGM.

use std::collections::HashMap;
use std::ffi::CString;
use std::time::Duration;

use dcgm_abi::{
    DCGM_FE_GPU_I, DCGM_MAX_NUM_DEVICES, DCGM_OPERATION_MODE_AUTO, DCGM_ST_ALREADY_INITIALIZED,
    DCGM_ST_CONNECTION_NOT_VALID, DCGM_ST_OK, DCGM_ST_TIMEOUT, Zeroed, c_text,
    dcgmConnectV2Params_v2, dcgmConnectV2Params_version2, dcgmDeviceAttributes_v3,
    dcgmDeviceAttributes_version3, dcgmFieldValue_v2, dcgmGroupEntityPair_t, dcgmHandle_t,
    dcgmMigHierarchy_v2, dcgmMigHierarchy_version2, dcgmProfGetMetricGroups_v3,
    dcgmProfGetMetricGroups_version3, dcgmStartEmbeddedV2Params_v1,
    dcgmStartEmbeddedV2Params_version1,
};

use super::groups::MetricGroup;
use super::health::{Failed, GpuHealth, HealthGroup};
use super::library::Api;
use super::options::Mode;
use super::switches::{SwitchReading, Switches, number};
use super::wanted::{Target, Wanted};
use super::watches::{self, Listed, Watches};
use crate::gpu::switch_selection::SwitchSelection;

/// A DCGM call that failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SessionError {
    /// The call returned an error code.
    #[error("{call} failed: {text}")]
    Call {
        /// The DCGM function.
        call: &'static str,
        /// Its return code.
        rc: i32,
        /// DCGM's words for it, with the code.
        text: String,
    },
}

impl SessionError {
    /// The hostengine is gone (or did not answer): the handle is no longer usable.
    pub fn lost(&self) -> bool {
        let SessionError::Call { rc, .. } = self;
        matches!(*rc, DCGM_ST_CONNECTION_NOT_VALID | DCGM_ST_TIMEOUT)
    }
}

/// A connected handle.
pub struct Session {
    api: &'static Api,
    handle: dcgmHandle_t,
    embedded: bool,
    gpus: HashMap<String, Listed>,
    watches: Option<Watches>,
    /// The health watches' group, once asked for.
    health: Option<HealthGroup>,
    /// The NVSwitch chips and ports the hostengine lists (again every `switches::RELIST`),
    /// and their watches.
    switches: Switches,
}

/// What a tick read: values by (entity, field), and the fields refused per entity.
#[derive(Debug, Default)]
pub struct Reading {
    pub values: HashMap<(Target, u16), f64>,
    pub refused: Vec<(Target, u16, String)>,
    /// What was read of the NVSwitches and their ports.
    pub switch: SwitchReading,
}

/// A GPU's profiling support, for `gpu-exporter check`.
#[derive(Debug, Clone)]
pub struct GpuGroups {
    /// The GPU's UUID.
    pub uuid: String,
    /// Its metric groups (major, minor, fields), or why DCGM gives none.
    pub groups: Result<Vec<MetricGroup>, String>,
}

/// A failed call (from `watches`, `switches`, `health`) as the session's error.
fn failed(api: &Api, (name, rc): Failed) -> SessionError {
    SessionError::Call {
        call: name,
        rc,
        text: api.describe(rc),
    }
}

fn call(api: &Api, name: &'static str, rc: i32) -> Result<(), SessionError> {
    if rc == DCGM_ST_OK {
        Ok(())
    } else {
        Err(SessionError::Call {
            call: name,
            rc,
            text: api.describe(rc),
        })
    }
}

/// `dcgmInit`, once per process (a second call's "already initialized" is fine).
pub fn init(api: &Api) -> Result<(), SessionError> {
    // SAFETY: no arguments.
    let rc = unsafe { (api.init)() };
    if rc == DCGM_ST_ALREADY_INITIALIZED {
        return Ok(());
    }
    call(api, "dcgmInit", rc)
}

impl Session {
    /// Starts an embedded hostengine or connects to a remote one (waiting at most `timeout`),
    /// then learns the GPUs, their MIG instances and their metric groups, and the NVSwitches
    /// and up ports `sel` chooses. An embedded hostengine given `log` (a
    /// `DcgmLoggingSeverity_t`) logs to standard output at that severity
    /// (`dcgmStartEmbedded_v2`); without it, DCGM's defaults apply.
    pub fn open(
        api: &'static Api,
        mode: &Mode,
        timeout: Duration,
        sel: &SwitchSelection,
        log: Option<i32>,
    ) -> Result<Self, SessionError> {
        let mut handle: dcgmHandle_t = 0;
        let embedded = match mode {
            Mode::Remote(addr) => {
                let mut params = dcgmConnectV2Params_v2 {
                    version: dcgmConnectV2Params_version2,
                    persistAfterDisconnect: 0,
                    timeoutMs: u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX),
                    addressIsUnixSocket: u32::from(addr.unix),
                };
                let c = CString::new(addr.target.as_str()).map_err(|_| SessionError::Call {
                    call: "dcgmConnect_v2",
                    rc: dcgm_abi::DCGM_ST_BADPARAM,
                    text: "the address contains a NUL byte".into(),
                })?;
                // SAFETY: valid pointers for the duration of the call.
                let rc = unsafe { (api.connect)(c.as_ptr(), &mut params, &mut handle) };
                call(api, "dcgmConnect_v2", rc)?;
                false
            }
            _ => {
                match log {
                    None => {
                        // SAFETY: a valid out pointer.
                        let rc =
                            unsafe { (api.start_embedded)(DCGM_OPERATION_MODE_AUTO, &mut handle) };
                        call(api, "dcgmStartEmbedded", rc)?;
                    }
                    Some(severity) => {
                        let mut params = dcgmStartEmbeddedV2Params_v1 {
                            version: dcgmStartEmbeddedV2Params_version1,
                            opMode: DCGM_OPERATION_MODE_AUTO,
                            dcgmHandle: 0,
                            logFile: c"-".as_ptr(),
                            severity,
                            denyListCount: 0,
                            denyList: [0; dcgm_abi::DCGM_MODULE_ID_COUNT_V1],
                        };
                        // SAFETY: a valid, versioned struct; `logFile` is a static C string.
                        let rc = unsafe { (api.start_embedded_v2)(&mut params) };
                        call(api, "dcgmStartEmbedded_v2", rc)?;
                        handle = params.dcgmHandle;
                    }
                }
                true
            }
        };
        let mut s = Self {
            api,
            handle,
            embedded,
            gpus: HashMap::new(),
            watches: None,
            health: None,
            switches: Switches::default(),
        };
        s.discover()?;
        s.switches = match Switches::list(api, handle, sel) {
            Ok(listed) => listed,
            Err((name, rc)) => {
                call(api, name, rc)?;
                Switches::unlisted(sel)
            }
        };
        Ok(s)
    }

    fn discover(&mut self) -> Result<(), SessionError> {
        let api = self.api;
        let mut ids = [0u32; DCGM_MAX_NUM_DEVICES];
        let mut count: i32 = 0;
        // SAFETY: `ids` holds DCGM_MAX_NUM_DEVICES entries, as the call requires.
        let rc = unsafe { (api.all_devices)(self.handle, ids.as_mut_ptr(), &mut count) };
        call(api, "dcgmGetAllSupportedDevices", rc)?;
        let n = usize::try_from(count)
            .unwrap_or(0)
            .min(DCGM_MAX_NUM_DEVICES);
        let mut hier = dcgmMigHierarchy_v2::zeroed();
        hier.version = dcgmMigHierarchy_version2;
        // SAFETY: a zeroed struct with its version word.
        let rc = unsafe { (api.hierarchy)(self.handle, &mut *hier) };
        let hier_ok = rc == DCGM_ST_OK;
        if !hier_ok && rc == DCGM_ST_CONNECTION_NOT_VALID {
            call(api, "dcgmGetGpuInstanceHierarchy", rc)?;
        }
        for &id in &ids[..n] {
            let mut attrs = dcgmDeviceAttributes_v3::zeroed();
            attrs.version = dcgmDeviceAttributes_version3;
            // SAFETY: a zeroed struct with its version word.
            let rc = unsafe { (api.attributes)(self.handle, id, &mut *attrs) };
            call(api, "dcgmGetDeviceAttributes", rc)?;
            let uuid = c_text(&attrs.identifiers.uuid);
            let mut instances = HashMap::new();
            if hier_ok {
                let count = (hier.count as usize).min(hier.entityList.len());
                for e in &hier.entityList[..count] {
                    if e.entity.entityGroupId == DCGM_FE_GPU_I && c_text(&e.info.gpuUuid) == uuid {
                        instances.insert(e.info.nvmlInstanceId, e.entity.entityId);
                    }
                }
            }
            let mut mg = dcgmProfGetMetricGroups_v3::zeroed();
            mg.version = dcgmProfGetMetricGroups_version3;
            mg.gpuId = id;
            // SAFETY: a zeroed struct with its version word and GPU id.
            let rc = unsafe { (api.metric_groups)(self.handle, &mut *mg) };
            if rc == DCGM_ST_CONNECTION_NOT_VALID {
                call(api, "dcgmProfGetSupportedMetricGroups", rc)?;
            }
            let groups = if rc == DCGM_ST_OK {
                let k = (mg.numMetricGroups as usize).min(mg.metricGroups.len());
                Ok(mg.metricGroups[..k]
                    .iter()
                    .map(|g| MetricGroup {
                        major: g.majorId,
                        minor: g.minorId,
                        fields: g.fieldIds[..(g.numFieldIds as usize).min(g.fieldIds.len())]
                            .to_vec(),
                    })
                    .collect())
            } else {
                Err(format!(
                    "dcgmProfGetSupportedMetricGroups: {}",
                    api.describe(rc)
                ))
            };
            self.gpus.insert(
                uuid,
                Listed {
                    id,
                    instances,
                    groups,
                },
            );
        }
        Ok(())
    }

    /// Each GPU's metric groups, by UUID.
    pub fn metric_groups(&self) -> Vec<GpuGroups> {
        let mut out: Vec<GpuGroups> = self
            .gpus
            .iter()
            .map(|(uuid, g)| GpuGroups {
                uuid: uuid.clone(),
                groups: g.groups.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.uuid.cmp(&b.uuid));
        out
    }

    /// Whether the watches in place were made for `wanted`.
    pub fn watches_match(&self, wanted: &Wanted) -> bool {
        self.watches.as_ref().is_some_and(|w| w.made_for(wanted))
    }

    /// Makes the watches for `wanted` unless they are in place already (the old ones unwatched
    /// and destroyed first).
    fn ensure_watches(
        &mut self,
        wanted: &Wanted,
        keep_age: Duration,
        keep_samples: i32,
    ) -> Result<(), SessionError> {
        if self.watches_match(wanted) {
            return Ok(());
        }
        self.drop_watches();
        // A GPU or GPU instance this session has not seen (one bound again, or made, since the
        // session listed them): list them again before looking its DCGM id up.
        if watches::unlisted(&self.gpus, wanted) {
            self.gpus.clear();
            self.discover()?;
        }
        let made = Watches::make(
            self.api,
            self.handle,
            &self.gpus,
            wanted,
            (keep_age, keep_samples),
        );
        self.watches = Some(made.map_err(|f| failed(self.api, f))?);
        Ok(())
    }

    /// Unwatches the watches in place and destroys their groups (errors ignored: they go with
    /// the handle).
    fn drop_watches(&mut self) {
        if let Some(w) = self.watches.take() {
            w.destroy(self.api, self.handle);
        }
    }

    /// This tick's values of `wanted` (watches made first when they changed).
    pub fn read(
        &mut self,
        wanted: &Wanted,
        keep_age: Duration,
        keep_samples: i32,
    ) -> Result<Reading, SessionError> {
        self.ensure_watches(wanted, keep_age, keep_samples)?;
        let mut out = Reading {
            switch: self.read_switches(wanted, (keep_age, keep_samples))?,
            ..Reading::default()
        };
        let Some(w) = self.watches.as_ref() else {
            return Ok(out);
        };
        out.refused.clone_from(&w.refused);
        let mut fields: Vec<u16> = w
            .entities
            .iter()
            .flat_map(|(_, _, f)| f.iter().copied())
            .collect();
        fields.sort_unstable();
        fields.dedup();
        if fields.is_empty() || w.entities.is_empty() {
            return Ok(out);
        }
        let mut pairs: Vec<dcgmGroupEntityPair_t> = w.entities.iter().map(|(_, p, _)| *p).collect();
        let mut values = vec![dcgmFieldValue_v2::zeroed(); pairs.len() * fields.len()];
        let (np, nf) = (pairs.len() as u32, fields.len() as u32);
        // SAFETY: `values` holds entities × fields entries, as the call fills.
        let rc = unsafe {
            (self.api.latest)(
                self.handle,
                pairs.as_mut_ptr(),
                np,
                fields.as_mut_ptr(),
                nf,
                0,
                values.as_mut_ptr(),
            )
        };
        call(self.api, "dcgmEntitiesGetLatestValues", rc)?;
        for (i, (t, _, watched)) in w.entities.iter().enumerate() {
            for (j, f) in fields.iter().enumerate() {
                if !watched.contains(f) {
                    continue;
                }
                if let Some(v) = values.get(i * fields.len() + j).and_then(number) {
                    out.values.insert((t.clone(), *f), v);
                }
            }
        }
        Ok(out)
    }

    /// This tick's values of the wanted switch and port fields (`switches`).
    fn read_switches(
        &mut self,
        wanted: &Wanted,
        limits: (Duration, i32),
    ) -> Result<SwitchReading, SessionError> {
        let api = self.api;
        let fields = (
            wanted.switch_fields.as_slice(),
            wanted.port_fields.as_slice(),
        );
        self.switches
            .read(api, self.handle, fields, limits)
            .map_err(|f| failed(api, f))
    }

    /// This tick's health check of every GPU (the health group made on the first call).
    pub fn health(&mut self) -> Result<GpuHealth, SessionError> {
        let api = self.api;
        if self.health.is_none() {
            let gpus = self.gpus.iter().map(|(u, g)| (g.id, u.clone())).collect();
            let group = HealthGroup::make(api, self.handle, gpus).map_err(|f| failed(api, f))?;
            self.health = Some(group);
        }
        match self.health.as_mut().map(|g| g.check(api, self.handle)) {
            Some(checked) => checked.map_err(|f| failed(api, f)),
            None => Ok(GpuHealth::new()),
        }
    }

    /// Ends the session: stops the embedded hostengine or disconnects.
    pub fn close(mut self) {
        self.drop_watches();
        self.switches.destroy(self.api, self.handle);
        if let Some(g) = self.health.take() {
            g.destroy(self.api, self.handle);
        }
        // SAFETY: the handle this session holds; nothing uses it afterwards.
        unsafe {
            if self.embedded {
                (self.api.stop_embedded)(self.handle);
            } else {
                (self.api.disconnect)(self.handle);
            }
        }
    }

    /// Forgets the handle without calls (the hostengine is gone).
    pub fn abandon(self) {
        if !self.embedded {
            // SAFETY: frees the client side of a dead connection.
            unsafe { (self.api.disconnect)(self.handle) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dcgm_abi::{DCGM_FP64_BLANK, DCGM_FT_STRING, DCGM_INT64_BLANK, DCGM_ST_NO_DATA};
    use dcgm_abi::{DCGM_FT_DOUBLE, DCGM_FT_INT64};

    #[test]
    fn blanks_and_failed_statuses_are_no_value() {
        let mut v = dcgmFieldValue_v2::zeroed();
        v.fieldType = DCGM_FT_DOUBLE;
        v.value.dbl = 0.42;
        assert_eq!(number(&v), Some(0.42));
        v.value.dbl = DCGM_FP64_BLANK;
        assert_eq!(number(&v), None);
        v.value.dbl = f64::NAN;
        assert_eq!(number(&v), None);
        v.fieldType = DCGM_FT_INT64;
        v.value.i64_ = 1_000_000;
        assert_eq!(number(&v), Some(1e6));
        v.value.i64_ = DCGM_INT64_BLANK + 3;
        assert_eq!(number(&v), None);
        v.value.i64_ = 7;
        v.status = DCGM_ST_NO_DATA;
        assert_eq!(number(&v), None);
        v.status = DCGM_ST_OK;
        v.fieldType = DCGM_FT_STRING;
        assert_eq!(number(&v), None);
    }
}
