//! The fault timeline: validates each `[[faults]]` entry against its kind and turns it into
//! windows, counter bumps, MIG layouts, link and fabric overrides and events on the GPUs.

use nvml_wrapper_sys::bindings::{
    nvmlEventTypeDoubleBitEccError, nvmlEventTypeSingleBitEccError, nvmlEventTypeXidCriticalError,
};
use toml::Spanned;

use super::links::{FABRIC_HEALTH_NAMES, FABRIC_STATE_NAMES};
use super::raw::{FAULT_KINDS, RawFault};
use super::resolve::resolve_layout;
use super::{
    Bump, Counter, Ctx, Event, FabricFault, Gpu, Layout, LinkDown, NO_INSTANCE, PowerCap,
    ScenarioError, Target, Thermal, Unsupported, Window, XID_GPU_LOST,
};
use crate::model;

/// Hottest die temperature a `thermal` fault may ask for, °C.
const MAX_FAULT_CELSIUS: f64 = 120.0;

pub(super) fn apply_fault(
    ctx: &Ctx<'_>,
    gpus: &mut [Gpu],
    events: &mut Vec<Event>,
    raw: &Spanned<RawFault>,
) -> Result<(), ScenarioError> {
    let f = raw.get_ref();
    let span = Some(raw.span());
    let kind = f.kind.get_ref().as_str();
    let allowed = FAULT_KINDS
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, keys)| *keys)
        .ok_or_else(|| {
            let kinds: Vec<&str> = FAULT_KINDS.iter().map(|(k, _)| *k).collect();
            ctx.err(
                Some(f.kind.span()),
                format!(
                    "unknown fault kind \"{kind}\" (expected one of: {})",
                    kinds.join(", ")
                ),
            )
        })?;
    for key in f.present() {
        if !allowed.contains(&key) {
            let takes = if allowed.is_empty() {
                "no keys besides at, gpu and kind".to_string()
            } else {
                allowed.join(", ")
            };
            return Err(ctx.err(
                span.clone(),
                format!("`{key}` does not apply to a \"{kind}\" fault (it takes: {takes})"),
            ));
        }
    }
    if !(f.at.is_finite() && f.at >= 0.0) {
        return Err(ctx.err(
            span,
            format!("fault time at = {} must be a number of seconds ≥ 0", f.at),
        ));
    }
    let gpu_count = gpus.len();
    let gpu = gpus.get_mut(f.gpu).ok_or_else(|| {
        ctx.err(
            span.clone(),
            format!(
                "{kind} fault names GPU {}, but the scenario has {gpu_count} GPU(s) (indices \
                 0..{})",
                f.gpu,
                gpu_count.saturating_sub(1)
            ),
        )
    })?;
    let until = match f.until {
        Some(u) if u <= f.at || u.is_nan() => {
            return Err(ctx.err(
                span,
                format!("until = {u} must be later than at = {}", f.at),
            ));
        }
        Some(u) => u,
        None => f64::INFINITY,
    };
    let window = Window { from: f.at, until };
    let need = |v: Option<u64>, name: &str| {
        v.ok_or_else(|| ctx.err(span.clone(), format!("a \"{kind}\" fault needs `{name}`")))
    };
    let mut bump = |counter: Counter, amount: Option<u64>, set: bool| {
        if let Some(amount) = amount {
            gpu.bumps.push(Bump {
                at: f.at,
                counter,
                amount,
                set,
                link: None,
            });
        }
    };
    match kind {
        "xid" => {
            let xid = need(f.xid, "xid")?;
            if xid == 0 || xid > 1000 {
                return Err(ctx.err(span, format!("xid = {xid} is outside 1..1000")));
            }
            let (repeat, every) = repetition(ctx, span.clone(), f)?;
            let (gi, ci) = match f.gi {
                None => (NO_INSTANCE, NO_INSTANCE),
                Some(gi) => {
                    let member_ci = gpu.layout_at_unsorted(f.at).and_then(|l| {
                        l.members
                            .iter()
                            .filter_map(|m| gpu.instances.get(m.uid))
                            .find(|i| i.gi == gi)
                            .map(|i| i.ci)
                    });
                    match member_ci {
                        Some(ci) => (gi, ci),
                        None => {
                            return Err(ctx.err(
                                span,
                                format!(
                                    "xid fault names GPU instance {gi} of GPU {}, which has no \
                                     such MIG instance at {} s",
                                    f.gpu, f.at
                                ),
                            ));
                        }
                    }
                }
            };
            for k in 0..repeat {
                events.push(Event {
                    t: f.at + f64::from(k) * every,
                    gpu: f.gpu,
                    event_type: u64::from(nvmlEventTypeXidCriticalError),
                    data: xid,
                    gi,
                    ci,
                });
            }
        }
        "lost" => {
            gpu.lost.push(window);
            events.push(Event {
                t: f.at,
                gpu: f.gpu,
                event_type: u64::from(nvmlEventTypeXidCriticalError),
                data: XID_GPU_LOST,
                gi: NO_INSTANCE,
                ci: NO_INSTANCE,
            });
        }
        "unsupported" => {
            let what = f
                .what
                .as_ref()
                .ok_or_else(|| ctx.err(span.clone(), "an \"unsupported\" fault needs `what`"))?;
            let target =
                Target::parse(what.get_ref()).map_err(|m| ctx.err(Some(what.span()), m))?;
            gpu.unsupported.push(Unsupported { target, window });
        }
        "mig_layout" => {
            let list = f
                .mig
                .as_ref()
                .ok_or_else(|| ctx.err(span.clone(), "a \"mig_layout\" fault needs `mig`"))?;
            if !gpu.mig_enabled {
                return Err(ctx.err(
                    span,
                    format!(
                        "mig_layout fault on GPU {} which is not in MIG mode (give it `mig = []`)",
                        f.gpu
                    ),
                ));
            }
            let layout = resolve_layout(ctx, gpu, list, f.at)?;
            gpu.layouts.push(layout);
        }
        "ecc" => {
            if f.sbe.is_none() && f.dbe.is_none() {
                return Err(ctx.err(span, "an \"ecc\" fault needs `sbe` and/or `dbe`"));
            }
            for (count, counter, event_type) in [
                (f.sbe, Counter::EccSbe, nvmlEventTypeSingleBitEccError),
                (f.dbe, Counter::EccDbe, nvmlEventTypeDoubleBitEccError),
            ] {
                if count.unwrap_or(0) > 0 {
                    events.push(Event {
                        t: f.at,
                        gpu: f.gpu,
                        event_type: u64::from(event_type),
                        data: 0,
                        gi: NO_INSTANCE,
                        ci: NO_INSTANCE,
                    });
                }
                bump(counter, count, false);
            }
        }
        "remap" => {
            if f.correctable.is_none()
                && f.uncorrectable.is_none()
                && f.pending.is_none()
                && f.failure.is_none()
            {
                return Err(ctx.err(
                    span,
                    "a \"remap\" fault needs correctable, uncorrectable, pending or failure",
                ));
            }
            bump(Counter::RemapCorrectable, f.correctable, false);
            bump(Counter::RemapUncorrectable, f.uncorrectable, false);
            bump(Counter::RemapPending, f.pending.map(u64::from), true);
            bump(Counter::RemapFailure, f.failure.map(u64::from), true);
        }
        "retire" => {
            if f.sbe.is_none() && f.dbe.is_none() && f.pending.is_none() {
                return Err(ctx.err(span, "a \"retire\" fault needs sbe, dbe or pending"));
            }
            bump(Counter::RetiredSbe, f.sbe, false);
            bump(Counter::RetiredDbe, f.dbe, false);
            bump(Counter::RetiredPending, f.pending.map(u64::from), true);
        }
        "nvlink_errors" => {
            if f.crc_flit.is_none()
                && f.crc_data.is_none()
                && f.replay.is_none()
                && f.recovery.is_none()
                && f.effective.is_none()
            {
                return Err(ctx.err(
                    span,
                    "an \"nvlink_errors\" fault needs crc_flit, crc_data, replay, recovery or \
                     effective",
                ));
            }
            let link = match &f.link {
                Some(l) => Some(check_link(ctx, gpu, f.gpu, kind, l)?),
                None => {
                    check_nvlink(ctx, span.clone(), gpu, f.gpu)?;
                    None
                }
            };
            if f.effective.is_some() && gpu.model.nvlink_generation() < 5 {
                let (index, model) = (f.gpu, gpu.model.key);
                return Err(ctx.err(
                    span,
                    format!(
                        "GPU {index}: model {model} has NVLink {}; `effective` (errors left \
                         after FEC) needs NVLink 5 (B200, GB200)",
                        gpu.model.nvlink_generation()
                    ),
                ));
            }
            let (repeat, every) = repetition(ctx, span, f)?;
            for k in 0..repeat {
                for (counter, amount) in [
                    (Counter::NvlinkCrcFlit, f.crc_flit),
                    (Counter::NvlinkCrcData, f.crc_data),
                    (Counter::NvlinkReplay, f.replay),
                    (Counter::NvlinkRecovery, f.recovery),
                    (Counter::NvlinkEffective, f.effective),
                ] {
                    if let Some(amount) = amount {
                        gpu.bumps.push(Bump {
                            at: f.at + f64::from(k) * every,
                            counter,
                            amount,
                            set: false,
                            link,
                        });
                    }
                }
            }
        }
        "nvlink_down" => {
            let raw = f
                .link
                .as_ref()
                .ok_or_else(|| ctx.err(span.clone(), "an \"nvlink_down\" fault needs `link`"))?;
            let link = check_link(ctx, gpu, f.gpu, kind, raw)?;
            gpu.links_down.push(LinkDown { link, window });
        }
        "fabric" => {
            let fault = resolve_fabric(ctx, span, gpu, f, window)?;
            gpu.fabric.push(fault);
        }
        "pcie_replay" => {
            let count = need(f.count, "count")?;
            bump(Counter::PcieReplay, Some(count), false);
        }
        "power_limit" => {
            let watts = f
                .watts
                .ok_or_else(|| ctx.err(span.clone(), "a \"power_limit\" fault needs `watts`"))?;
            let model = gpu.model;
            if !(watts > model.idle_w && watts <= model.power_limit_w * 1.5) {
                return Err(ctx.err(
                    span,
                    format!(
                        "watts = {watts} is outside {}..{} W for {}",
                        model.idle_w,
                        model.power_limit_w * 1.5,
                        model.key
                    ),
                ));
            }
            gpu.power_caps.push(PowerCap { window, watts });
        }
        "thermal" => {
            let celsius = f
                .celsius
                .ok_or_else(|| ctx.err(span.clone(), "a \"thermal\" fault needs `celsius`"))?;
            let model = gpu.model;
            let idle = model.idle_temp_c();
            if !(celsius > idle && celsius <= MAX_FAULT_CELSIUS) {
                return Err(ctx.err(
                    span,
                    format!(
                        "celsius = {celsius} is outside {idle:.1}..{MAX_FAULT_CELSIUS} °C for {} \
                         (above its idle temperature, at most {MAX_FAULT_CELSIUS})",
                        model.key
                    ),
                ));
            }
            gpu.thermal.push(Thermal { window, celsius });
        }
        "power_brake" => {
            gpu.power_brakes.push(window);
        }
        "hang" => {
            if !window.until.is_finite() {
                return Err(ctx.err(span, "a \"hang\" fault needs `until`"));
            }
            gpu.hangs.push(window);
        }
        "unbind" => {
            if f.minor.is_some() && !window.until.is_finite() {
                return Err(ctx.err(span, "an \"unbind\" fault with `minor` needs `until`"));
            }
            gpu.unbound.push((window, f.minor));
        }
        "appear" => {
            if let Some(earlier) = gpu.appear_at {
                return Err(ctx.err(
                    span,
                    format!(
                        "GPU {} already has an appear fault (at {earlier} s); a GPU appears at \
                         most once",
                        f.gpu
                    ),
                ));
            }
            gpu.appear_at = Some(f.at);
        }
        _ => {
            return Err(ctx.err(span, format!("unknown fault kind \"{kind}\"")));
        }
    }
    Ok(())
}

/// `repeat` (default 1, at most 10000) and `every` (default 5 s, > 0) of a repeating fault.
fn repetition(
    ctx: &Ctx<'_>,
    span: Option<std::ops::Range<usize>>,
    f: &RawFault,
) -> Result<(u32, f64), ScenarioError> {
    let repeat = f.repeat.unwrap_or(1);
    if repeat == 0 || repeat > 10_000 {
        return Err(ctx.err(span, format!("repeat = {repeat} is outside 1..10000")));
    }
    let every = f.every.unwrap_or(5.0);
    if !(every > 0.0 && every.is_finite()) {
        return Err(ctx.err(span, format!("every = {every} must be > 0 seconds")));
    }
    Ok((repeat, every))
}

/// The GPU's model must have NVLink.
fn check_nvlink(
    ctx: &Ctx<'_>,
    span: Option<std::ops::Range<usize>>,
    gpu: &Gpu,
    index: usize,
) -> Result<(), ScenarioError> {
    if gpu.model.nvlink_links == 0 {
        return Err(ctx.err(
            span,
            format!("GPU {index}: model {} has no NVLink", gpu.model.key),
        ));
    }
    Ok(())
}

/// A `link` key: the model must have NVLink and the index must be one of its links.
fn check_link(
    ctx: &Ctx<'_>,
    gpu: &Gpu,
    index: usize,
    kind: &str,
    link: &Spanned<u32>,
) -> Result<u32, ScenarioError> {
    let span = Some(link.span());
    check_nvlink(ctx, span.clone(), gpu, index)?;
    let l = *link.get_ref();
    let n = gpu.model.nvlink_links;
    if l >= n {
        return Err(ctx.err(
            span,
            format!(
                "{kind} fault: link = {l} on GPU {index}, but model {} has {n} NVLink links \
                 (0..{})",
                gpu.model.key,
                n - 1
            ),
        ));
    }
    Ok(l)
}

/// The value `table` gives the name written for `key` (if any), or an error naming the key,
/// the value and every accepted name.
fn named<T: Copy>(
    ctx: &Ctx<'_>,
    written: Option<&Spanned<String>>,
    key: &str,
    what: &str,
    table: &[(&str, T)],
) -> Result<Option<T>, ScenarioError> {
    let Some(w) = written else { return Ok(None) };
    let name = w.get_ref().as_str();
    match table.iter().find(|(n, _)| *n == name) {
        Some((_, v)) => Ok(Some(*v)),
        None => {
            let names: Vec<&str> = table.iter().map(|(n, _)| *n).collect();
            Err(ctx.err(
                Some(w.span()),
                format!(
                    "{key} = \"{name}\" is not {what} (expected {})",
                    names.join(", ")
                ),
            ))
        }
    }
}

/// A `fabric` fault: the model must register with an NVSwitch fabric; `state`, `status` and
/// `health` are checked against their names and codes.
fn resolve_fabric(
    ctx: &Ctx<'_>,
    span: Option<std::ops::Range<usize>>,
    gpu: &Gpu,
    f: &RawFault,
    window: Window,
) -> Result<FabricFault, ScenarioError> {
    if !gpu.model.fabric() {
        let keys: Vec<&str> = model::MODELS
            .iter()
            .filter(|m| m.fabric())
            .map(|m| m.key)
            .collect();
        return Err(ctx.err(
            span,
            format!(
                "GPU {}: model {} has no NVSwitch fabric (fabric faults apply to {})",
                f.gpu,
                gpu.model.key,
                keys.join(", ")
            ),
        ));
    }
    if f.state.is_none() && f.status.is_none() && f.health.is_none() {
        return Err(ctx.err(span, "a \"fabric\" fault needs state, status or health"));
    }
    let state = named(
        ctx,
        f.state.as_ref(),
        "state",
        "a fabric state",
        FABRIC_STATE_NAMES,
    )?;
    let status = match &f.status {
        None => None,
        Some(s) => {
            let v = *s.get_ref();
            if v > 29 && v != 999 {
                return Err(ctx.err(
                    Some(s.span()),
                    format!(
                        "status = {v} is not an NVML return code (0 success, 1..29, or 999 \
                         unknown)"
                    ),
                ));
            }
            Some(v)
        }
    };
    let health = named(
        ctx,
        f.health.as_ref(),
        "health",
        "a fabric health",
        FABRIC_HEALTH_NAMES,
    )?;
    Ok(FabricFault {
        window,
        state,
        status,
        health,
    })
}

/// NVML indices are dense, so only trailing GPUs may appear late: when GPU k appears at `a`,
/// every GPU after it must appear too, at `a` or later. The error points at GPU k's fault.
pub(super) fn check_appear_order(
    ctx: &Ctx<'_>,
    faults: &[Spanned<RawFault>],
    gpus: &[Gpu],
) -> Result<(), ScenarioError> {
    for (k, gpu) in gpus.iter().enumerate() {
        let Some(at) = gpu.appear_at else {
            continue;
        };
        let span = faults
            .iter()
            .find(|f| f.get_ref().gpu == k && f.get_ref().kind.get_ref() == "appear")
            .map(Spanned::span);
        for later in gpus.iter().skip(k + 1) {
            let problem = match later.appear_at {
                None => format!("GPU {} is there from the start", later.index),
                Some(b) if b < at => format!("GPU {} appears earlier, at {b} s", later.index),
                Some(_) => continue,
            };
            return Err(ctx.err(
                span,
                format!(
                    "appear fault on GPU {k} at {at} s, but {problem}: NVML indices are dense, \
                     so only trailing GPUs may appear late (every GPU after {k} needs an appear \
                     fault at ≥ {at} s)"
                ),
            ));
        }
    }
    Ok(())
}

impl Gpu {
    /// Layout lookup while layouts are still being added in file order (not yet sorted).
    fn layout_at_unsorted(&self, t: f64) -> Option<&Layout> {
        self.layouts
            .iter()
            .filter(|l| l.from <= t)
            .max_by(|a, b| a.from.total_cmp(&b.from))
    }
}
