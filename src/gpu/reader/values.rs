//! Reading one counter row into a [`Value`]: NVML field values, the typed getters (clocks,
//! memory, utilization, power, temperature, throttling, PCIe, ECC), windows and texts, with a
//! per-tick cache of calls that serve several fields.
//!
//! Returns values or NVML errors; it must not decide what an error means (that is `book`).

use super::book::{Book, Place, clone_err};
use super::gpm::read_gpm;
use super::options::{CLOCK_EVENT_REASONS, MIB, ReaderOptions};
use super::state::{EntityState, GpuState, TickCache};
use std::collections::{BTreeMap, HashMap};

use nvml_wrapper::enum_wrappers::device::InfoRom;
use nvml_wrapper::enum_wrappers::device::{
    Clock, PcieUtilCounter, PerformancePolicy, TemperatureSensor,
};
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, Nvml};

use crate::catalogue::csv::CounterRow;
use crate::catalogue::{
    ClockKind, FieldDef, Getter, MemKind, TextKind, UtilKind, Violation, WindowKind,
};
use crate::gpu::xid::{Watch, XidWatcher};
use crate::gpu::{licence, nvlink, text};
use crate::snapshot::{Value, WindowCounts};

/// What every read of one tick shares.
pub(super) struct Ctx<'a> {
    pub(super) nvml: &'static Nvml,
    pub(super) xid: Option<&'a XidWatcher>,
    pub(super) opts: &'a ReaderOptions,
    pub(super) now: f64,
}

/// Reads the metric rows accepted by `wanted` on one entity.
#[allow(clippy::too_many_arguments)]
pub(super) fn read_rows(
    ctx: &Ctx<'_>,
    dev: &Device<'static>,
    parent: Option<(&Device<'static>, u32)>,
    at: &Place<'_>,
    rows: &[&CounterRow],
    wanted: &dyn Fn(&FieldDef) -> bool,
    gpu: &mut GpuState,
    ent: &mut EntityState,
    book: &mut Book,
    lost: &mut bool,
) -> Vec<Option<Value>> {
    // Decided once per tick, before any read can mark a field unsupported.
    let active_rows: Vec<bool> = rows
        .iter()
        .map(|r| wanted(r.field) && !book.is_unsupported(at.key, r.field))
        .collect();
    let held = held_rows(ctx, rows, ent);
    let active_rows: Vec<bool> = active_rows
        .iter()
        .zip(&held)
        .map(|(a, h)| *a && h.is_none())
        .collect();
    let mut cache = TickCache::default();
    let active = || {
        rows.iter()
            .zip(&active_rows)
            .filter(|(_, a)| **a)
            .map(|(r, _)| *r)
    };
    read_field_values(ctx, dev, active(), &mut cache);
    // GPM: one sample per tick, metrics against the previous tick's sample.
    let gpm_ids: Vec<u32> = active()
        .filter_map(|r| match r.field.getter {
            Getter::Gpm(id, _) => Some(id),
            _ => None,
        })
        .collect();
    if !gpm_ids.is_empty() {
        let elsewhere = ctx.opts.gpm_elsewhere;
        read_gpm(
            ctx.nvml, dev, parent, gpu, ent, &gpm_ids, &mut cache, elsewhere,
        );
    }
    let collections = !ctx.opts.collections.groups.is_empty();
    let mut values = Vec::with_capacity(rows.len());
    for ((row, active), held) in rows.iter().zip(&active_rows).zip(held) {
        let f = row.field;
        if let Some(v) = held {
            values.push(v);
            continue;
        }
        if !active {
            values.push(None);
            continue;
        }
        let r = read_value(ctx, at, dev, f, gpu, ent, &mut cache).map(|v| match v {
            Some(Value::Num(n)) => Some(Value::Num(f.convert(n))),
            other => other,
        });
        let v = book.settle(at, f, lost, r);
        if collections {
            ent.held.insert(row.name.clone(), (ctx.now, v.clone()));
        }
        values.push(v);
    }
    values
}

/// Each row's held reading, when it belongs to a `--config-file` collection slower than the
/// tick whose interval has not passed since its last reading (half a tick of slack absorbs
/// timer jitter); `None`: read it this tick.
fn held_rows(ctx: &Ctx<'_>, rows: &[&CounterRow], ent: &EntityState) -> Vec<Option<Option<Value>>> {
    let cols = &ctx.opts.collections;
    rows.iter()
        .map(|r| {
            if cols.groups.is_empty() {
                return None;
            }
            let (t, v) = ent.held.get(&r.name)?;
            let slack = cols.tick().as_secs_f64() / 2.0;
            (ctx.now - t + slack < cols.interval_for(&r.name, r.field).as_secs_f64())
                .then(|| v.clone())
        })
        .collect()
}

/// One nvmlDeviceGetFieldValues call for every field-value row of `active` on `dev`, its
/// samples (or the call's error, for each id) into `cache`.
fn read_field_values<'r>(
    ctx: &Ctx<'_>,
    dev: &Device<'static>,
    active: impl Iterator<Item = &'r CounterRow>,
    cache: &mut TickCache,
) {
    let mut ids: Vec<u32> = Vec::new();
    for row in active {
        match row.field.getter {
            Getter::NvmlField(id, _) | Getter::NvmlFieldBer(id) => ids.push(id),
            Getter::NvmlFieldRate(list, _) => ids.extend_from_slice(list),
            _ => {}
        }
    }
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        return;
    }
    // The NVLink throughput counters and NVLink 5's counters take the link as scope; all links
    // summed is scope UINT_MAX (scope 0 would be link 0 alone). Every other field ignores the
    // scope.
    let req: Vec<(u32, u32)> = ids
        .iter()
        .map(|&i| {
            (
                i,
                if nvlink::is_link_scoped(i) {
                    u32::MAX
                } else {
                    0
                },
            )
        })
        .collect();
    match nvlink::scoped_fields(ctx.nvml, dev, &req) {
        Ok(samples) => {
            for (id, v) in ids.iter().zip(samples) {
                cache.fields.insert(*id, v);
            }
        }
        Err(e) => {
            for id in &ids {
                cache.fields.insert(*id, Err(clone_err(&e)));
            }
        }
    }
}

pub(super) fn num(v: f64) -> Result<Option<Value>, NvmlError> {
    Ok(Some(Value::Num(v)))
}

/// The rate of a counter reading (`sum` at NVML time stamp `ts`, µs) against the entity's
/// previous reading of field `id`, per second and scaled; none on the first reading or when
/// the counter went back (a driver reload).
fn rate(
    ent: &mut EntityState,
    id: u32,
    sum: f64,
    ts: i64,
    scale: crate::catalogue::Scale,
) -> Result<Option<Value>, NvmlError> {
    match nvlink::per_second(ent.rate_prev.insert(id, (sum, ts)), (sum, ts)) {
        Some(r) => num(scale.apply(r)),
        None => Ok(None),
    }
}

/// Reads one numeric field on one entity: the getter says which kind of read serves it.
pub(super) fn read_value(
    ctx: &Ctx<'_>,
    at: &Place<'_>,
    dev: &Device<'static>,
    f: &'static FieldDef,
    gpu: &mut GpuState,
    ent: &mut EntityState,
    cache: &mut TickCache,
) -> Result<Option<Value>, NvmlError> {
    match f.getter {
        Getter::Clock(k) => num(f64::from(dev.clock_info(clock(k))?)),
        Getter::MaxClock(k) => num(f64::from(dev.max_clock_info(clock(k))?)),
        Getter::AppClock(k) => num(f64::from(dev.applications_clock(clock(k))?)),
        Getter::FanSpeed => num(f64::from(dev.fan_speed(0)?)),
        Getter::Bar1(k) => bar1(dev, k),
        Getter::GpuTemperature => num(f64::from(dev.temperature(TemperatureSensor::Gpu)?)),
        Getter::PowerUsage => num(f64::from(dev.power_usage()?) / 1000.0),
        Getter::PowerLimit => num(f64::from(dev.enforced_power_limit()?) / 1000.0),
        Getter::PowerMgmtLimit => num(f64::from(dev.power_management_limit()?) / 1000.0),
        Getter::TempThreshold(t) => temp_threshold(dev, t),
        Getter::TotalEnergy => num(dev.total_energy_consumption()? as f64),
        Getter::PcieReplay => num(f64::from(dev.pcie_replay_counter()?)),
        Getter::MinorNumber => num(f64::from(dev.minor_number()?)),
        Getter::VgpuLicence => Ok(licence::vgpu_licensed(ctx.nvml, dev)?.map(Value::Num)),
        Getter::PcieThroughput(tx) => num(f64::from(dev.pcie_throughput(if tx {
            PcieUtilCounter::Send
        } else {
            PcieUtilCounter::Receive
        })?)),
        Getter::Utilization(k) => utilization(dev, k, cache),
        Getter::Memory(k) => memory(dev, k, cache),
        Getter::Violation(v) => violation(dev, v),
        Getter::ClockEventReasons => num(clock_event_reasons(dev, cache)? as f64),
        Getter::NvmlField(id, scale) => batched(&cache.fields, id, |(v, _)| scale.apply(*v)),
        Getter::NvmlFieldBer(id) => {
            batched(&cache.fields, id, |(v, _)| nvlink::decode_ber(*v as u64))
        }
        Getter::NvmlFieldRate(ids, scale) => field_rate(ent, f.id, ids, scale, cache),
        Getter::Gpm(id, scale) => batched(&cache.gpm, id, |v| scale.apply(*v)),
        Getter::NvLinkErrorCounter(counter, link) => {
            num(nvlink::error_counter(ctx.nvml, dev, link, counter)? as f64)
        }
        Getter::NvLinkLinkRate(link, scale) => link_rate(ctx, dev, ent, f.id, link, scale),
        Getter::Fabric(part) => fabric(gpu, part),
        Getter::Xid => last_xid(ctx, at),
        Getter::Window(WindowKind::Xid) => xid_window(ctx, at),
        Getter::Total(WindowKind::Xid) => xid_total(ctx, at),
        Getter::Window(WindowKind::ClockEvents) => clock_event_window(ctx, dev, gpu, cache),
        Getter::Total(WindowKind::ClockEvents) => clock_event_total(ctx, dev, gpu, cache),
        Getter::DeviceCount => num(f64::from(ctx.nvml.device_count()?)),
        Getter::NvmlIndex => num(f64::from(dev.index()?)),
        // Label rows only (`read_text_field`).
        Getter::Text(_) => Err(NvmlError::NotSupported),
        // Served per link from the interconnect read, never per entity.
        Getter::Link(_) => Ok(None),
        // Filled in by the DCGM client when there is one.
        Getter::DcgmHealth if ctx.opts.gpm_elsewhere => Ok(None),
        Getter::DcgmHealth => Err(NvmlError::FailedToLoadSymbol(
            "GPU health checks come from DCGM's health watches, and DCGM is off or its \
             library cannot be used (--dcgm-mode, --dcgm-lib)"
                .into(),
        )),
        // Switch rows are never read on a GPU (the DCGM client serves them per switch).
        Getter::DcgmSwitch | Getter::DcgmSwitchPort | Getter::DcgmSwitchText => Ok(None),
        Getter::Unavailable(why) => Err(NvmlError::FailedToLoadSymbol(why.into())),
    }
}

/// NVML's clock of a catalogue clock kind.
fn clock(k: ClockKind) -> Clock {
    match k {
        ClockKind::Graphics => Clock::Graphics,
        ClockKind::Sm => Clock::SM,
        ClockKind::Mem => Clock::Memory,
        ClockKind::Video => Clock::Video,
    }
}

/// A BAR1 memory figure, bytes (BAR1 has no reserved part and no ratio).
fn bar1(dev: &Device<'static>, k: MemKind) -> Result<Option<Value>, NvmlError> {
    let b = dev.bar1_memory_info()?;
    match k {
        MemKind::Total => num(b.total as f64),
        MemKind::Used => num(b.used as f64),
        MemKind::Free => num(b.free as f64),
        MemKind::Reserved | MemKind::UsedPercent | MemKind::UsedRatio => Ok(None),
    }
}

/// One of the temperature thresholds, °C (unsupported for a threshold NVML does not name).
fn temp_threshold(dev: &Device<'static>, t: u32) -> Result<Option<Value>, NvmlError> {
    use crate::catalogue::{
        TEMP_THRESHOLD_GPU_MAX, TEMP_THRESHOLD_MEM_MAX, TEMP_THRESHOLD_SHUTDOWN,
        TEMP_THRESHOLD_SLOWDOWN,
    };
    use nvml_wrapper::enum_wrappers::device::TemperatureThreshold as T;
    let kind = match t {
        TEMP_THRESHOLD_SHUTDOWN => T::Shutdown,
        TEMP_THRESHOLD_SLOWDOWN => T::Slowdown,
        TEMP_THRESHOLD_MEM_MAX => T::MemoryMax,
        TEMP_THRESHOLD_GPU_MAX => T::GpuMax,
        _ => return Err(NvmlError::NotSupported),
    };
    num(f64::from(dev.temperature_threshold(kind)?))
}

/// A utilization, %: the GPU and memory-copy figures from one call per entity and tick.
fn utilization(
    dev: &Device<'static>,
    k: UtilKind,
    cache: &mut TickCache,
) -> Result<Option<Value>, NvmlError> {
    match k {
        UtilKind::Gpu | UtilKind::MemCopy => {
            let u = cache.util.get_or_insert_with(|| dev.utilization_rates());
            let u = u.as_ref().map_err(clone_err)?;
            num(f64::from(if k == UtilKind::Gpu { u.gpu } else { u.memory }))
        }
        UtilKind::Encoder => num(f64::from(dev.encoder_utilization()?.utilization)),
        UtilKind::Decoder => num(f64::from(dev.decoder_utilization()?.utilization)),
    }
}

/// A frame-buffer memory figure, MiB (or its share used), from one call per entity and tick.
fn memory(
    dev: &Device<'static>,
    k: MemKind,
    cache: &mut TickCache,
) -> Result<Option<Value>, NvmlError> {
    let m = cache.mem.get_or_insert_with(|| dev.memory_info());
    let m = m.as_ref().map_err(clone_err)?;
    let b = |x: u64| x as f64 / MIB;
    num(match k {
        MemKind::Total => b(m.total),
        MemKind::Free => b(m.free),
        MemKind::Used => b(m.used),
        MemKind::Reserved => b(m.reserved),
        MemKind::UsedPercent if m.total > 0 => m.used as f64 * 100.0 / m.total as f64,
        MemKind::UsedPercent => return Ok(None),
        MemKind::UsedRatio if m.total > m.reserved => m.used as f64 / (m.total - m.reserved) as f64,
        MemKind::UsedRatio => return Ok(None),
    })
}

/// The time spent under one performance policy's violation, ns.
fn violation(dev: &Device<'static>, v: Violation) -> Result<Option<Value>, NvmlError> {
    let policy = match v {
        Violation::Power => PerformancePolicy::Power,
        Violation::Thermal => PerformancePolicy::Thermal,
        Violation::SyncBoost => PerformancePolicy::SyncBoost,
        Violation::BoardLimit => PerformancePolicy::BoardLimit,
        Violation::LowUtil => PerformancePolicy::LowUtilization,
        Violation::Reliability => PerformancePolicy::Reliability,
    };
    num(dev.violation_status(policy)?.violation_time as f64)
}

/// A value the entity's batched reads of this tick got for `id` (one `nvmlDeviceGetFieldValues`
/// call, or the GPM sample), as `value` makes it a number; none when it was not read.
fn batched<T>(
    got: &HashMap<u32, Result<T, NvmlError>>,
    id: u32,
    value: impl FnOnce(&T) -> f64,
) -> Result<Option<Value>, NvmlError> {
    match got.get(&id) {
        Some(Ok(v)) => num(value(v)),
        Some(Err(e)) => Err(clone_err(e)),
        None => Ok(None),
    }
}

/// The rate of the sum of the field values `ids` from this tick's batched read, against the
/// entity's previous sum for field `field` (see [`rate`]).
fn field_rate(
    ent: &mut EntityState,
    field: u32,
    ids: &[u32],
    scale: crate::catalogue::Scale,
    cache: &TickCache,
) -> Result<Option<Value>, NvmlError> {
    let mut sum = 0.0;
    let mut ts = i64::MIN;
    for id in ids {
        match cache.fields.get(id) {
            Some(Ok((v, t))) => {
                sum += v;
                ts = ts.max(*t);
            }
            Some(Err(e)) => return Err(clone_err(e)),
            None => return Ok(None),
        }
    }
    rate(ent, field, sum, ts, scale)
}

/// The data rate of one NVLink link (transmitted plus received), read with the link as the
/// field values' scope, against the entity's previous reading for field `field`.
fn link_rate(
    ctx: &Ctx<'_>,
    dev: &Device<'static>,
    ent: &mut EntityState,
    field: u32,
    link: u32,
    scale: crate::catalogue::Scale,
) -> Result<Option<Value>, NvmlError> {
    let req = [(nvlink::FIELD_DATA_TX, link), (nvlink::FIELD_DATA_RX, link)];
    let mut sum = 0.0;
    let mut ts = i64::MIN;
    for r in nvlink::scoped_fields(ctx.nvml, dev, &req)? {
        let (v, t) = r?;
        sum += v;
        ts = ts.max(t);
    }
    rate(ent, field, sum, ts, scale)
}

/// One part of this tick's fabric registration (unsupported on a GPU outside any fabric).
fn fabric(gpu: &GpuState, part: crate::catalogue::FabricPart) -> Result<Option<Value>, NvmlError> {
    let Some(fab) = &gpu.fabric else {
        return Ok(None);
    };
    let fab = fab.as_ref().map_err(clone_err)?;
    match nvlink::fabric_part(fab, part) {
        Some(v) => num(v),
        None if fab.state == 0 => Err(NvmlError::NotSupported),
        None => Ok(None),
    }
}

/// The last Xid the GPU reported, 0 for none.
fn last_xid(ctx: &Ctx<'_>, at: &Place<'_>) -> Result<Option<Value>, NvmlError> {
    Ok(xid_watch(ctx, at)?.map(|w| Value::Xid(w.get(at.uuid).and_then(|g| g.last).unwrap_or(0))))
}

/// The Xids the GPU reported within `--xid-count-window`, per code.
fn xid_window(ctx: &Ctx<'_>, at: &Place<'_>) -> Result<Option<Value>, NvmlError> {
    let Some(w) = xid_watch(ctx, at)? else {
        return Ok(None);
    };
    let counts = w
        .get(at.uuid)
        .map(|g| g.window_counts(ctx.now, ctx.opts.xid_count_window))
        .unwrap_or_default();
    Ok(Some(Value::Window(WindowCounts {
        label: "xid",
        window_ms: Some(ctx.opts.xid_count_window.as_millis() as u64),
        counts: counts
            .into_iter()
            .map(|(c, n)| (c.to_string(), n))
            .collect(),
    })))
}

/// The Xids the GPU reported since start, per code: every code seen, and the
/// `--xid-initialized-codes` at 0 before they occur.
fn xid_total(ctx: &Ctx<'_>, at: &Place<'_>) -> Result<Option<Value>, NvmlError> {
    let Some(w) = xid_watch(ctx, at)? else {
        return Ok(None);
    };
    let mut counts: BTreeMap<u64, u64> = ctx
        .opts
        .xid_initialized_codes
        .iter()
        .map(|c| (*c, 0))
        .collect();
    if let Some(g) = w.get(at.uuid) {
        counts.extend(g.codes.iter().map(|(c, (n, _))| (*c, *n)));
    }
    Ok(Some(Value::Window(WindowCounts {
        label: "xid",
        window_ms: None,
        counts: counts
            .into_iter()
            .map(|(c, n)| (c.to_string(), n))
            .collect(),
    })))
}

/// The ticks within `--clock-events-count-window` each clock-event reason was active in.
fn clock_event_window(
    ctx: &Ctx<'_>,
    dev: &Device<'static>,
    gpu: &mut GpuState,
    cache: &mut TickCache,
) -> Result<Option<Value>, NvmlError> {
    let bits = clock_event_reasons(dev, cache)?;
    let window = ctx.opts.clock_events_count_window;
    let hist = &mut gpu.clock_events;
    if hist.back().map(|(t, _)| *t) != Some(ctx.now) {
        hist.push_back((ctx.now, bits));
    }
    let from = ctx.now - window.as_secs_f64();
    while hist.front().is_some_and(|(t, _)| *t <= from) {
        hist.pop_front();
    }
    let counts = CLOCK_EVENT_REASONS
        .iter()
        .filter_map(|(bit, name)| {
            let n = hist.iter().filter(|(_, b)| b & bit != 0).count() as u64;
            (n > 0).then(|| ((*name).to_owned(), n))
        })
        .collect();
    Ok(Some(Value::Window(WindowCounts {
        label: "clock_event",
        window_ms: Some(window.as_millis() as u64),
        counts,
    })))
}

/// How many times each clock-event reason became active since start.
fn clock_event_total(
    ctx: &Ctx<'_>,
    dev: &Device<'static>,
    gpu: &mut GpuState,
    cache: &mut TickCache,
) -> Result<Option<Value>, NvmlError> {
    let bits = clock_event_reasons(dev, cache)?;
    let now = ctx.now;
    // The first reading sets the state without counting (a reason already active at
    // start is not an event); each reason then counts on its inactive → active edge,
    // once per tick however many entities repeat the GPU's fields.
    let (at_tick, prev, totals) = gpu.clock_event_totals.get_or_insert_with(|| {
        let zero = CLOCK_EVENT_REASONS.iter().map(|(_, n)| (*n, 0)).collect();
        (now, bits, zero)
    });
    if *at_tick != now {
        for (bit, name) in CLOCK_EVENT_REASONS {
            if bits & bit != 0 && *prev & bit == 0 {
                *totals.entry(name).or_default() += 1;
            }
        }
        (*at_tick, *prev) = (now, bits);
    }
    Ok(Some(Value::Window(WindowCounts {
        label: "clock_event",
        window_ms: None,
        counts: totals.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect(),
    })))
}

/// `nvmlDeviceGetCurrentClocksEventReasons`, read once per entity and tick.
pub(super) fn clock_event_reasons(
    dev: &Device<'static>,
    cache: &mut TickCache,
) -> Result<u64, NvmlError> {
    cache
        .reasons
        .get_or_insert_with(|| dev.current_throttle_reasons().map(|r| r.bits()))
        .as_ref()
        .map(|b| *b)
        .map_err(clone_err)
}

/// The Xid watcher when the entity's GPU is watched; `Ok(None)` while registration is
/// pending, unsupported when the GPU offers no Xid events.
pub(super) fn xid_watch<'a>(
    ctx: &Ctx<'a>,
    at: &Place<'_>,
) -> Result<Option<&'a XidWatcher>, NvmlError> {
    let Some(w) = ctx.xid else {
        return Err(NvmlError::FailedToLoadSymbol(
            "the Xid event thread could not be started".into(),
        ));
    };
    match w.status(at.uuid) {
        Some(Watch::Watching) => Ok(Some(w)),
        Some(Watch::Unsupported) => Err(NvmlError::FailedToLoadSymbol(
            "the GPU offers no Xid events (see the log for why)".into(),
        )),
        None => Ok(None),
    }
}

/// The string behind a label row, read once per GPU (or once per process for the driver and
/// NVML versions) and cached; `Ok(None)` when NVML returns an empty string.
pub(super) fn read_text_field(
    nvml: &Nvml,
    dev: &Device<'_>,
    f: &FieldDef,
    gpu: &mut GpuState,
    system: &mut HashMap<TextKind, Result<String, NvmlError>>,
) -> Result<Option<String>, NvmlError> {
    let kind = match f.getter {
        Getter::Text(k) => k,
        // A switch's string labels that switch's series (the DCGM client), never a GPU's; a
        // numeric switch field as a label is warned of at load and labels nothing.
        Getter::DcgmSwitchText | Getter::DcgmSwitch | Getter::DcgmSwitchPort => return Ok(None),
        Getter::Unavailable(why) => return Err(NvmlError::FailedToLoadSymbol(why.into())),
        // A numeric field as a label row is not supported (reported once as unavailable).
        _ => {
            return Err(NvmlError::FailedToLoadSymbol(
                "only string fields can be labels here".into(),
            ));
        }
    };
    match kind {
        TextKind::DriverVersion | TextKind::NvmlVersion => {
            let r = system.entry(kind).or_insert_with(|| {
                if kind == TextKind::DriverVersion {
                    nvml.sys_driver_version()
                } else {
                    nvml.sys_nvml_version()
                }
            });
            match r {
                Ok(v) => Ok(Some(v.clone())),
                Err(e) => Err(super::book::clone_err(e)),
            }
        }
        // This tick's registration: it completes (or is redone) while the exporter runs.
        TextKind::FabricClusterUuid => match &gpu.fabric {
            Some(Ok(f)) => {
                Ok((f.state == nvlink::FABRIC_COMPLETED).then(|| f.cluster_uuid.clone()))
            }
            Some(Err(e)) => Err(clone_err(e)),
            None => Ok(None),
        },
        _ => {
            if let Some(v) = gpu.texts.get(&kind) {
                return Ok(Some(v.clone()));
            }
            let s = match kind {
                TextKind::Name => dev.name()?,
                TextKind::Brand => text::brand_name(&dev.brand()?),
                TextKind::Serial => dev.serial()?,
                TextKind::Uuid => dev.uuid()?,
                TextKind::PciBusId => dev.pci_info()?.bus_id,
                TextKind::VbiosVersion => dev.vbios_version()?,
                TextKind::InforomOem => dev.info_rom_version(InfoRom::OEM)?,
                TextKind::InforomEcc => dev.info_rom_version(InfoRom::ECC)?,
                TextKind::InforomPower => dev.info_rom_version(InfoRom::Power)?,
                TextKind::InforomImage => dev.info_rom_image_version()?,
                TextKind::DriverVersion | TextKind::NvmlVersion | TextKind::FabricClusterUuid => {
                    return Ok(None);
                }
            };
            if s.is_empty() {
                return Ok(None);
            }
            gpu.texts.insert(kind, s.clone());
            Ok(Some(s))
        }
    }
}
