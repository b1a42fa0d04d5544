//! DCGM 4.x's C functions as `libdcgm.so.4` exports them (names and signatures of
//! `dcgm_agent.h`, checked against `dcgm_abi::sig` in the tests): start-up and connection,
//! version, devices and MIG hierarchy, groups, field groups, watches, latest values,
//! profiling metric groups and error strings.

use std::ffi::{CStr, c_char, c_int, c_longlong, c_uint, c_ushort};
use std::time::Duration;

use dcgm_abi::{self as abi, set_c_text};

use super::{check_version, guard, out};
use crate::engine::{build_info, field_type};
use crate::global;
use crate::proto::{Entity, Reply, Request, Val};
use crate::remote::DEFAULT_TIMEOUT;

/// A `dcgmReturn_t` as a result.
fn status(code: abi::dcgmReturn_t) -> Result<(), i32> {
    match code {
        abi::DCGM_ST_OK => Ok(()),
        code => Err(code),
    }
}

fn unexpected<T>(_: Reply) -> Result<T, i32> {
    Err(abi::DCGM_ST_GENERIC_ERROR)
}

fn id_of(handle: abi::dcgmHandle_t, req: Request) -> Result<u64, i32> {
    match global::call(handle, req)? {
        Reply::Id(id) => Ok(id),
        other => unexpected(other),
    }
}

fn done(handle: abi::dcgmHandle_t, req: Request) -> Result<(), i32> {
    match global::call(handle, req)? {
        Reply::Done => Ok(()),
        other => unexpected(other),
    }
}

/// A C string argument that may be null (then empty).
unsafe fn text(p: *const c_char) -> String {
    if p.is_null() {
        return String::new();
    }
    // SAFETY: non-null and NUL-terminated (DCGM contract).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmInit() -> abi::dcgmReturn_t {
    guard(|| status(global::init()))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmShutdown() -> abi::dcgmReturn_t {
    guard(|| status(global::shutdown()))
}

/// `opMode` `DCGM_OPERATION_MODE_AUTO` or `_MANUAL`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmStartEmbedded(
    op_mode: c_uint,
    handle: *mut abi::dcgmHandle_t,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(handle) }?;
        let manual = match op_mode {
            abi::DCGM_OPERATION_MODE_AUTO => false,
            abi::DCGM_OPERATION_MODE_MANUAL => true,
            _ => return Err(abi::DCGM_ST_BADPARAM),
        };
        *o = global::start_embedded(manual)?;
        Ok(())
    })
}

/// `dcgmStartEmbedded` with a log: `logFile` `-` is standard output, another path a file
/// appended to, null no log; at `severity` Info or above the simulated host engine writes one
/// line there when it starts, as DCGM's own log would begin.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmStartEmbedded_v2(
    params: *mut abi::dcgmStartEmbeddedV2Params_v1,
) -> abi::dcgmReturn_t {
    guard(|| {
        let p = unsafe { out(params) }?;
        check_version(p.version, abi::dcgmStartEmbeddedV2Params_version1)?;
        let manual = match p.opMode {
            abi::DCGM_OPERATION_MODE_AUTO => false,
            abi::DCGM_OPERATION_MODE_MANUAL => true,
            _ => return Err(abi::DCGM_ST_BADPARAM),
        };
        if !(abi::DcgmLoggingSeverityNone..=abi::DcgmLoggingSeverityVerbose).contains(&p.severity)
            && p.severity != -1
        {
            return Err(abi::DCGM_ST_BADPARAM);
        }
        // SAFETY: null or NUL-terminated (DCGM contract).
        let log = unsafe { text(p.logFile) };
        p.dcgmHandle = global::start_embedded(manual)?;
        if !log.is_empty() && p.severity >= abi::DcgmLoggingSeverityInfo {
            let level = usize::try_from(p.severity - abi::DcgmLoggingSeverityNone)
                .ok()
                .and_then(|i| abi::DCGM_LOGGING_SEVERITY_NAMES.get(i))
                .unwrap_or(&"?");
            let line = format!("dcgm-sim: INFO embedded host engine started (log level {level})\n");
            use std::io::Write;
            // A log that cannot be written is not an error of the start, as in DCGM.
            let _ = if log == "-" {
                std::io::stdout().lock().write_all(line.as_bytes())
            } else {
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .and_then(|mut f| f.write_all(line.as_bytes()))
            };
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmStopEmbedded(handle: abi::dcgmHandle_t) -> abi::dcgmReturn_t {
    guard(|| status(global::close(handle, true)))
}

/// `ipAddress` is `host[:port]` (port 5555 when none) or, with `addressIsUnixSocket`, a
/// socket path; `timeoutMs` 0 means 5 s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmConnect_v2(
    ip_address: *const c_char,
    params: *mut abi::dcgmConnectV2Params_v2,
    handle: *mut abi::dcgmHandle_t,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(handle) }?;
        if ip_address.is_null() {
            return Err(abi::DCGM_ST_BADPARAM);
        }
        // SAFETY: non-null, valid for reads (DCGM contract).
        let p = *unsafe { out(params) }?;
        check_version(p.version, abi::dcgmConnectV2Params_version2)?;
        let timeout = match p.timeoutMs {
            0 => DEFAULT_TIMEOUT,
            ms => Duration::from_millis(u64::from(ms)),
        };
        let address = unsafe { text(ip_address) };
        *o = global::connect(&address, p.addressIsUnixSocket != 0, timeout)?;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmDisconnect(handle: abi::dcgmHandle_t) -> abi::dcgmReturn_t {
    guard(|| status(global::close(handle, false)))
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmVersionInfo(info: *mut abi::dcgmVersionInfo_v2) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(info) }?;
        check_version(o.version, abi::dcgmVersionInfo_version2)?;
        set_c_text(&mut o.rawBuildInfoString, &build_info());
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmHostengineVersionInfo(
    handle: abi::dcgmHandle_t,
    info: *mut abi::dcgmVersionInfo_v2,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(info) }?;
        check_version(o.version, abi::dcgmVersionInfo_version2)?;
        match global::call(handle, Request::HostengineVersion)? {
            Reply::Version(v) => set_c_text(&mut o.rawBuildInfoString, &v),
            other => return unexpected(other),
        }
        Ok(())
    })
}

/// `gpuIdList` has room for `DCGM_MAX_NUM_DEVICES` ids.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmGetAllSupportedDevices(
    handle: abi::dcgmHandle_t,
    gpu_ids: *mut c_uint,
    count: *mut c_int,
) -> abi::dcgmReturn_t {
    guard(|| {
        let n = unsafe { out(count) }?;
        if gpu_ids.is_null() {
            return Err(abi::DCGM_ST_BADPARAM);
        }
        let Reply::Devices(ids) = global::call(handle, Request::Devices)? else {
            return Err(abi::DCGM_ST_GENERIC_ERROR);
        };
        let ids = &ids[..ids.len().min(abi::DCGM_MAX_NUM_DEVICES)];
        // SAFETY: room for DCGM_MAX_NUM_DEVICES ids (DCGM contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(gpu_ids, ids.len()) };
        dst.copy_from_slice(ids);
        *n = ids.len() as c_int;
        Ok(())
    })
}

/// `entities` has room for `*count` ids; on return `*count` is how many the group has
/// (`DCGM_ST_INSUFFICIENT_SIZE` when they do not fit). `DCGM_FE_GPU` and `DCGM_FE_SWITCH`
/// only; `flags` is accepted and ignored.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmGetEntityGroupEntities(
    handle: abi::dcgmHandle_t,
    group: abi::dcgm_field_entity_group_t,
    entities: *mut abi::dcgm_field_eid_t,
    count: *mut c_int,
    _flags: c_uint,
) -> abi::dcgmReturn_t {
    guard(|| {
        let n = unsafe { out(count) }?;
        let room = usize::try_from(*n).map_err(|_| abi::DCGM_ST_BADPARAM)?;
        if entities.is_null() && room > 0 {
            return Err(abi::DCGM_ST_BADPARAM);
        }
        let Reply::Devices(ids) = global::call(handle, Request::EntityGroupEntities { group })?
        else {
            return Err(abi::DCGM_ST_GENERIC_ERROR);
        };
        *n = c_int::try_from(ids.len()).map_err(|_| abi::DCGM_ST_GENERIC_ERROR)?;
        if ids.len() > room {
            return Err(abi::DCGM_ST_INSUFFICIENT_SIZE);
        }
        if !ids.is_empty() {
            // SAFETY: room for `room` ids (DCGM contract), and ids.len() ≤ room.
            let dst = unsafe { std::slice::from_raw_parts_mut(entities, ids.len()) };
            dst.copy_from_slice(&ids);
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmGetDeviceAttributes(
    handle: abi::dcgmHandle_t,
    gpu_id: c_uint,
    attrs: *mut abi::dcgmDeviceAttributes_v3,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(attrs) }?;
        check_version(o.version, abi::dcgmDeviceAttributes_version3)?;
        let Reply::Attributes(a) = global::call(handle, Request::Attributes { gpu: gpu_id })?
        else {
            return Err(abi::DCGM_ST_GENERIC_ERROR);
        };
        let id = &mut o.identifiers;
        set_c_text(&mut id.brandName, &a.brand);
        set_c_text(&mut id.deviceName, &a.name);
        set_c_text(&mut id.pciBusId, &a.pci_bus_id);
        set_c_text(&mut id.serial, &a.serial);
        set_c_text(&mut id.uuid, &a.uuid);
        set_c_text(&mut id.vbios, &a.vbios);
        set_c_text(&mut id.inforomImageVersion, &a.inforom);
        set_c_text(&mut id.driverVersion, &a.driver_version);
        id.pciDeviceId = a.pci_device_id;
        id.pciSubSystemId = a.pci_subsystem_id;
        o.memoryUsage.bar1Total = a.bar1_mib;
        o.memoryUsage.fbTotal = a.fb_total_mib;
        o.memoryUsage.fbUsed = a.fb_used_mib;
        o.memoryUsage.fbFree = a.fb_free_mib;
        o.settings.migModeEnabled = u32::from(a.mig_enabled);
        o.settings.persistenceModeEnabled = 1;
        o.powerLimits.curPowerLimit = a.power_limit_w;
        o.powerLimits.enforcedPowerLimit = a.power_limit_w;
        o.powerLimits.defaultPowerLimit = a.default_power_limit_w;
        o.powerLimits.maxPowerLimit = a.default_power_limit_w;
        o.thermalSettings.slowdownTemp = a.slowdown_c;
        o.thermalSettings.shutdownTemp = a.slowdown_c + 5;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmGetGpuInstanceHierarchy(
    handle: abi::dcgmHandle_t,
    hierarchy: *mut abi::dcgmMigHierarchy_v2,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(hierarchy) }?;
        check_version(o.version, abi::dcgmMigHierarchy_version2)?;
        let Reply::Hierarchy(entries) = global::call(handle, Request::Hierarchy)? else {
            return Err(abi::DCGM_ST_GENERIC_ERROR);
        };
        if entries.len() > abi::DCGM_MAX_HIERARCHY_INFO {
            return Err(abi::DCGM_ST_INSUFFICIENT_SIZE);
        }
        for (slot, e) in o.entityList.iter_mut().zip(&entries) {
            slot.entity = pair(e.entity);
            slot.parent = pair(e.parent);
            set_c_text(&mut slot.info.gpuUuid, &e.gpu_uuid);
            slot.info.nvmlGpuIndex = e.gpu_index;
            slot.info.nvmlInstanceId = e.instance_id;
            slot.info.nvmlComputeInstanceId = e.compute_instance_id;
            slot.info.nvmlMigProfileId = e.profile_id;
            slot.info.nvmlProfileSlices = e.slices;
        }
        o.count = entries.len() as c_uint;
        Ok(())
    })
}

fn pair(e: Entity) -> abi::dcgmGroupEntityPair_t {
    abi::dcgmGroupEntityPair_t {
        entityGroupId: e.group,
        entityId: e.id,
    }
}

/// `type` `DCGM_GROUP_EMPTY` or `DCGM_GROUP_DEFAULT` (every GPU).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmGroupCreate(
    handle: abi::dcgmHandle_t,
    kind: c_uint,
    name: *const c_char,
    group: *mut abi::dcgmGpuGrp_t,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(group) }?;
        if name.is_null() {
            return Err(abi::DCGM_ST_BADPARAM);
        }
        let name = unsafe { text(name) };
        *o = id_of(handle, Request::GroupCreate { kind, name })? as abi::dcgmGpuGrp_t;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmGroupDestroy(
    handle: abi::dcgmHandle_t,
    group: abi::dcgmGpuGrp_t,
) -> abi::dcgmReturn_t {
    guard(|| {
        done(
            handle,
            Request::GroupDestroy {
                group: group as u64,
            },
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmGroupAddEntity(
    handle: abi::dcgmHandle_t,
    group: abi::dcgmGpuGrp_t,
    entity_group: abi::dcgm_field_entity_group_t,
    entity_id: abi::dcgm_field_eid_t,
) -> abi::dcgmReturn_t {
    guard(|| {
        let entity = Entity {
            group: entity_group,
            id: entity_id,
        };
        done(
            handle,
            Request::GroupAdd {
                group: group as u64,
                entity,
            },
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmFieldGroupCreate(
    handle: abi::dcgmHandle_t,
    num_fields: c_int,
    field_ids: *const c_ushort,
    name: *const c_char,
    field_group: *mut abi::dcgmFieldGrp_t,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(field_group) }?;
        let n = usize::try_from(num_fields).map_err(|_| abi::DCGM_ST_BADPARAM)?;
        if field_ids.is_null()
            || name.is_null()
            || n == 0
            || n > abi::DCGM_MAX_FIELD_IDS_PER_FIELD_GROUP
        {
            return Err(abi::DCGM_ST_BADPARAM);
        }
        // SAFETY: `field_ids` holds `num_fields` ids (DCGM contract).
        let fields = unsafe { std::slice::from_raw_parts(field_ids, n) }.to_vec();
        let name = unsafe { text(name) };
        *o = id_of(handle, Request::FieldGroupCreate { fields, name })? as abi::dcgmFieldGrp_t;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmFieldGroupDestroy(
    handle: abi::dcgmHandle_t,
    field_group: abi::dcgmFieldGrp_t,
) -> abi::dcgmReturn_t {
    guard(|| {
        done(
            handle,
            Request::FieldGroupDestroy {
                id: field_group as u64,
            },
        )
    })
}

/// Update frequency in µs, max keep age in s, max keep samples.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmWatchFields(
    handle: abi::dcgmHandle_t,
    group: abi::dcgmGpuGrp_t,
    field_group: abi::dcgmFieldGrp_t,
    update_freq_us: c_longlong,
    max_keep_age_s: f64,
    max_keep_samples: c_int,
) -> abi::dcgmReturn_t {
    guard(|| {
        done(
            handle,
            Request::Watch {
                group: group as u64,
                field_group: field_group as u64,
                freq_us: update_freq_us,
                keep_age_s: max_keep_age_s,
                keep_samples: max_keep_samples,
            },
        )
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmUnwatchFields(
    handle: abi::dcgmHandle_t,
    group: abi::dcgmGpuGrp_t,
    field_group: abi::dcgmFieldGrp_t,
) -> abi::dcgmReturn_t {
    guard(|| {
        done(
            handle,
            Request::Unwatch {
                group: group as u64,
                field_group: field_group as u64,
            },
        )
    })
}

/// Takes one sample of every watched field (what manual mode reads); `waitForUpdate` is
/// accepted and has nothing to wait for.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmUpdateAllFields(
    handle: abi::dcgmHandle_t,
    _wait_for_update: c_int,
) -> abi::dcgmReturn_t {
    guard(|| done(handle, Request::UpdateAll))
}

/// Fills `values[entity * fieldCount + field]` (entity-major), each with its own status.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmEntitiesGetLatestValues(
    handle: abi::dcgmHandle_t,
    entities: *mut abi::dcgmGroupEntityPair_t,
    entity_count: c_uint,
    fields: *mut c_ushort,
    field_count: c_uint,
    _flags: c_uint,
    values: *mut abi::dcgmFieldValue_v2,
) -> abi::dcgmReturn_t {
    guard(|| {
        let (ne, nf) = (entity_count as usize, field_count as usize);
        if entities.is_null() || fields.is_null() || values.is_null() || ne == 0 || nf == 0 {
            return Err(abi::DCGM_ST_BADPARAM);
        }
        let total = ne.checked_mul(nf).ok_or(abi::DCGM_ST_BADPARAM)?;
        // SAFETY: arrays of the lengths passed (DCGM contract).
        let (ents, flds) = unsafe {
            (
                std::slice::from_raw_parts(entities, ne),
                std::slice::from_raw_parts(fields, nf),
            )
        };
        let req = Request::Latest {
            entities: ents
                .iter()
                .map(|p| Entity {
                    group: p.entityGroupId,
                    id: p.entityId,
                })
                .collect(),
            fields: flds.to_vec(),
        };
        let Reply::Values(vals) = global::call(handle, req)? else {
            return Err(abi::DCGM_ST_GENERIC_ERROR);
        };
        if vals.len() != total {
            return Err(abi::DCGM_ST_GENERIC_ERROR);
        }
        // SAFETY: `values` has room for entity_count × field_count values (DCGM contract).
        let dst = unsafe { std::slice::from_raw_parts_mut(values, total) };
        for (slot, v) in dst.iter_mut().zip(vals) {
            *slot = abi::dcgmFieldValue_v2::zeroed();
            slot.entityGroupId = v.entity.group;
            slot.entityId = v.entity.id;
            slot.fieldId = v.field;
            slot.fieldType = field_type(v.field);
            slot.status = v.status;
            slot.ts = v.ts;
            match v.val {
                Val::Int(i) => slot.value.i64_ = i,
                Val::Dbl(d) => slot.value.dbl = d,
                // SAFETY: writing the string member of a plain-data union.
                Val::Str(s) => set_c_text(unsafe { &mut slot.value.str_ }, &s),
            }
        }
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmProfGetSupportedMetricGroups(
    handle: abi::dcgmHandle_t,
    groups: *mut abi::dcgmProfGetMetricGroups_v3,
) -> abi::dcgmReturn_t {
    guard(|| {
        let o = unsafe { out(groups) }?;
        check_version(o.version, abi::dcgmProfGetMetricGroups_version3)?;
        let Reply::MetricGroups(list) =
            global::call(handle, Request::MetricGroups { gpu: o.gpuId })?
        else {
            return Err(abi::DCGM_ST_GENERIC_ERROR);
        };
        let n = list.len().min(abi::DCGM_PROF_MAX_NUM_GROUPS_V2);
        for (slot, g) in o.metricGroups.iter_mut().zip(&list[..n]) {
            slot.majorId = g.major;
            slot.minorId = g.minor;
            let k = g
                .fields
                .len()
                .min(abi::DCGM_PROF_MAX_FIELD_IDS_PER_GROUP_V2);
            slot.fieldIds[..k].copy_from_slice(&g.fields[..k]);
            slot.numFieldIds = k as c_uint;
        }
        o.numMetricGroups = n as c_uint;
        Ok(())
    })
}

/// The text of a return code, in our words; null for a code DCGM does not define here.
fn message(code: abi::dcgmReturn_t) -> Option<&'static CStr> {
    Some(match code {
        abi::DCGM_ST_OK => c"Success",
        abi::DCGM_ST_BADPARAM => c"A bad parameter was passed to a function",
        abi::DCGM_ST_GENERIC_ERROR => c"A generic, unspecified error",
        abi::DCGM_ST_MEMORY => c"An out of memory error occurred",
        abi::DCGM_ST_NOT_CONFIGURED => c"Setting not configured",
        abi::DCGM_ST_NOT_SUPPORTED => c"Feature not supported",
        abi::DCGM_ST_INIT_ERROR => c"DCGM initialization error",
        abi::DCGM_ST_UNINITIALIZED => c"DCGM is not initialized",
        abi::DCGM_ST_TIMEOUT => c"The call timed out",
        abi::DCGM_ST_VER_MISMATCH => c"The version of a structure does not match the library",
        abi::DCGM_ST_UNKNOWN_FIELD => c"Unknown field id",
        abi::DCGM_ST_NO_DATA => c"No data is available",
        abi::DCGM_ST_NOT_WATCHED => c"The field is not being watched",
        abi::DCGM_ST_GPU_IS_LOST => c"The GPU has fallen off the bus",
        abi::DCGM_ST_CONNECTION_NOT_VALID => c"The connection to the host engine is not valid",
        abi::DCGM_ST_MAX_LIMIT => c"Too many objects of this kind exist",
        abi::DCGM_ST_GROUP_IS_EMPTY => c"The group has no entities",
        abi::DCGM_ST_PROFILING_NOT_SUPPORTED => c"Profiling is not supported for this field or GPU",
        abi::DCGM_ST_PROFILING_MULTI_PASS => {
            c"These profiling fields cannot be collected together in one pass"
        }
        abi::DCGM_ST_INSUFFICIENT_SIZE => c"The output buffer is too small",
        _ => return None,
    })
}

/// `errorString` (the name `dcgm_agent.h` gives it).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn errorString(code: abi::dcgmReturn_t) -> *const c_char {
    message(code).map_or(std::ptr::null(), CStr::as_ptr)
}

/// The same text under the name the client looks up first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn dcgmErrorString(code: abi::dcgmReturn_t) -> *const c_char {
    message(code).map_or(std::ptr::null(), CStr::as_ptr)
}
