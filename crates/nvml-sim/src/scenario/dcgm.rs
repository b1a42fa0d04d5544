//! The DCGM fault timeline (`[[dcgm_faults]]`): what the simulated libdcgm and its stand-in
//! host engine do wrong and when. The NVML simulator parses and validates the section with the
//! rest of the file (unknown keys and kinds are errors with their line) and otherwise ignores
//! it; `crates/dcgm-sim` acts on it.
//!
//! Kinds, each over the window [`at`, `until`):
//! - `hostengine_away`: the host engine drops its connections and refuses new ones.
//! - `watch_refused`: `dcgmWatchFields` answers `code` (default `DCGM_ST_NOT_SUPPORTED`, -6)
//!   when the field group holds `field` and the group an entity of `gpu` (any GPU if absent).
//! - `blank`: `field` of `gpu` (any GPU if absent) and its MIG instances reads the blank
//!   sentinel.
//! - `hang`: every call made in the window blocks until `until`.
//! - `sxid_fatal`, `sxid_non_fatal`: NVSwitch `switch` (a `[[nvswitches]]` id) reports SXid
//!   `sxid`: its `DCGM_FI_DEV_SXID_FATAL_ERROR` (856) or `..._NON_FATAL_ERROR` (857) reads
//!   that code in the window (DCGM's field holds the last SXid reported), 0 outside it.
//! - `nvswitch_port_down`: port `port` of NVSwitch `switch` is down in the window
//!   (`dcgmGetNvLinkLinkStatus` says so; its port fields read nothing).

use serde::Deserialize;
use toml::Spanned;

use super::switches::NvSwitch;
use super::{Ctx, ScenarioError, Window};

/// `DCGM_ST_NOT_SUPPORTED`, the code of a refused watch unless the file names one.
pub const DEFAULT_REFUSAL: i32 = -6;
/// The largest DCGM field id a fault may name.
pub const MAX_FIELD_ID: u32 = 65_535;

/// One `[[dcgm_faults]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawDcgmFault {
    kind: Spanned<String>,
    at: Spanned<f64>,
    until: Spanned<f64>,
    gpu: Option<Spanned<usize>>,
    field: Option<Spanned<u32>>,
    code: Option<Spanned<i32>>,
    switch: Option<Spanned<u32>>,
    sxid: Option<Spanned<u32>>,
    port: Option<Spanned<u32>>,
}

/// What a DCGM fault does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DcgmFaultKind {
    HostengineAway,
    WatchRefused,
    Blank,
    Hang,
    SxidFatal,
    SxidNonFatal,
    NvSwitchPortDown,
}

/// Kinds with the optional keys each accepts, and whether `field` is required.
const KINDS: &[(&str, DcgmFaultKind, &[&str])] = &[
    ("hostengine_away", DcgmFaultKind::HostengineAway, &[]),
    (
        "watch_refused",
        DcgmFaultKind::WatchRefused,
        &["field", "gpu", "code"],
    ),
    ("blank", DcgmFaultKind::Blank, &["field", "gpu"]),
    ("hang", DcgmFaultKind::Hang, &[]),
    ("sxid_fatal", DcgmFaultKind::SxidFatal, &["switch", "sxid"]),
    (
        "sxid_non_fatal",
        DcgmFaultKind::SxidNonFatal,
        &["switch", "sxid"],
    ),
    (
        "nvswitch_port_down",
        DcgmFaultKind::NvSwitchPortDown,
        &["switch", "port"],
    ),
];

/// A validated DCGM fault.
#[derive(Debug, Clone, PartialEq)]
pub struct DcgmFault {
    pub kind: DcgmFaultKind,
    pub window: Window,
    /// The GPU it applies to (with its MIG instances); `None`: every GPU.
    pub gpu: Option<usize>,
    /// The field it applies to (`watch_refused`, `blank`).
    pub field: Option<u16>,
    /// The `dcgmReturn_t` of a refused watch.
    pub code: i32,
    /// The NVSwitch (DCGM entity id) and the SXid it reports (`sxid_*`).
    pub sxid: Option<(u32, u32)>,
    /// The NVSwitch (DCGM entity id) and its port that is down (`nvswitch_port_down`).
    pub port: Option<(u32, u32)>,
}

impl DcgmFault {
    /// Whether the fault is of `kind` and covers `t`.
    pub fn active(&self, kind: DcgmFaultKind, t: f64) -> bool {
        self.kind == kind && self.window.contains(t)
    }

    /// Whether the fault names `field` of GPU `gpu`.
    pub fn covers(&self, gpu: usize, field: u16) -> bool {
        self.field == Some(field) && self.gpu.is_none_or(|g| g == gpu)
    }
}

pub(super) fn resolve_dcgm_faults(
    ctx: &Ctx<'_>,
    raw: &[Spanned<RawDcgmFault>],
    gpu_count: usize,
    switches: &[NvSwitch],
) -> Result<Vec<DcgmFault>, ScenarioError> {
    raw.iter()
        .map(|r| resolve_one(ctx, r, gpu_count, switches))
        .collect()
}

fn resolve_one(
    ctx: &Ctx<'_>,
    raw: &Spanned<RawDcgmFault>,
    gpu_count: usize,
    switches: &[NvSwitch],
) -> Result<DcgmFault, ScenarioError> {
    let f = raw.get_ref();
    let name = f.kind.get_ref().as_str();
    let (_, kind, allowed) = KINDS.iter().find(|(k, _, _)| *k == name).ok_or_else(|| {
        let names: Vec<&str> = KINDS.iter().map(|(k, _, _)| *k).collect();
        ctx.err(
            Some(f.kind.span()),
            format!(
                "unknown dcgm_faults kind \"{name}\" (expected one of: {})",
                names.join(", ")
            ),
        )
    })?;
    let present = [
        ("field", f.field.as_ref().map(Spanned::span)),
        ("gpu", f.gpu.as_ref().map(Spanned::span)),
        ("code", f.code.as_ref().map(Spanned::span)),
        ("switch", f.switch.as_ref().map(Spanned::span)),
        ("sxid", f.sxid.as_ref().map(Spanned::span)),
        ("port", f.port.as_ref().map(Spanned::span)),
    ];
    for (key, span) in present {
        if let Some(span) = span
            && !allowed.contains(&key)
        {
            return Err(ctx.err(
                Some(span),
                format!("dcgm_faults kind \"{name}\" takes no `{key}`"),
            ));
        }
    }
    let (at, until) = (*f.at.get_ref(), *f.until.get_ref());
    if !(at.is_finite() && at >= 0.0) {
        return Err(ctx.err(Some(f.at.span()), format!("at = {at} must be seconds ≥ 0")));
    }
    if !(until.is_finite() && until > at) {
        return Err(ctx.err(
            Some(f.until.span()),
            format!("until = {until} must be a time after at = {at}"),
        ));
    }
    if let Some(g) = &f.gpu
        && *g.get_ref() >= gpu_count
    {
        return Err(ctx.err(
            Some(g.span()),
            format!(
                "gpu = {} but the scenario has {gpu_count} GPUs",
                g.get_ref()
            ),
        ));
    }
    let field = match &f.field {
        Some(v) if (1..=MAX_FIELD_ID).contains(v.get_ref()) => Some(*v.get_ref() as u16),
        Some(v) => {
            return Err(ctx.err(
                Some(v.span()),
                format!(
                    "field = {} is not a DCGM field id (1 to {MAX_FIELD_ID})",
                    v.get_ref()
                ),
            ));
        }
        None if allowed.contains(&"field") && !allowed.contains(&"sxid") => {
            return Err(ctx.err(
                Some(raw.span()),
                format!("dcgm_faults kind \"{name}\" needs a `field` (a DCGM field id)"),
            ));
        }
        None => None,
    };
    let code = match &f.code {
        Some(c) if *c.get_ref() < 0 => *c.get_ref(),
        Some(c) => {
            return Err(ctx.err(
                Some(c.span()),
                format!("code = {} must be a DCGM error code (< 0)", c.get_ref()),
            ));
        }
        None => DEFAULT_REFUSAL,
    };
    let switch = |sw: &Spanned<u32>| {
        switches
            .iter()
            .find(|s| s.id == *sw.get_ref())
            .ok_or_else(|| {
                let ids: Vec<String> = switches.iter().map(|s| s.id.to_string()).collect();
                ctx.err(
                    Some(sw.span()),
                    format!(
                        "switch = {} but the scenario declares no such [[nvswitches]] id (ids: {})",
                        sw.get_ref(),
                        if ids.is_empty() {
                            "none".to_owned()
                        } else {
                            ids.join(", ")
                        }
                    ),
                )
            })
    };
    let port = match (&f.switch, &f.port) {
        _ if !allowed.contains(&"port") => None,
        (Some(sw), Some(p)) => {
            let links = switch(sw)?.links;
            if *p.get_ref() >= links {
                return Err(ctx.err(
                    Some(p.span()),
                    format!(
                        "port = {} but NVSwitch {} has {links} links (ports 0 to {})",
                        p.get_ref(),
                        sw.get_ref(),
                        links.saturating_sub(1)
                    ),
                ));
            }
            Some((*sw.get_ref(), *p.get_ref()))
        }
        _ => {
            return Err(ctx.err(
                Some(raw.span()),
                format!("dcgm_faults kind \"{name}\" needs a `switch` and a `port`"),
            ));
        }
    };
    let sxid = match (&f.switch, &f.sxid) {
        _ if !allowed.contains(&"sxid") => None,
        (Some(sw), Some(code)) => {
            switch(sw)?;
            if *code.get_ref() == 0 {
                return Err(ctx.err(Some(code.span()), "sxid = 0 is not an SXid (1 or more)"));
            }
            Some((*sw.get_ref(), *code.get_ref()))
        }
        _ => {
            return Err(ctx.err(
                Some(raw.span()),
                format!("dcgm_faults kind \"{name}\" needs a `switch` and an `sxid`"),
            ));
        }
    };
    Ok(DcgmFault {
        sxid,
        port,
        kind: *kind,
        window: Window { from: at, until },
        gpu: f.gpu.as_ref().map(|g| *g.get_ref()),
        field,
        code,
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    const GPUS: &str = "[[gpus]]\nmodel = \"L4\"\n[[gpus]]\nmodel = \"L4\"\n";

    fn err(extra: &str) -> String {
        match parse(&format!("{GPUS}{extra}"), "scenario file /x.toml", "x") {
            Ok(_) => panic!("expected an error for:\n{extra}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn dcgm_faults_parse_into_windows() {
        let text = format!(
            "{GPUS}[[dcgm_faults]]\nkind = \"hostengine_away\"\nat = 5\nuntil = 8.5\n\
             [[dcgm_faults]]\nkind = \"watch_refused\"\nat = 0\nuntil = 60\nfield = 1004\ngpu = 1\n\
             [[dcgm_faults]]\nkind = \"blank\"\nat = 2\nuntil = 4\nfield = 1001\n"
        );
        let sc = parse(&text, "scenario file /x.toml", "x").unwrap();
        assert_eq!(sc.dcgm_faults.len(), 3);
        let away = &sc.dcgm_faults[0];
        assert!(away.active(DcgmFaultKind::HostengineAway, 5.0));
        assert!(!away.active(DcgmFaultKind::HostengineAway, 8.5));
        let refused = &sc.dcgm_faults[1];
        assert_eq!(refused.code, DEFAULT_REFUSAL);
        assert!(refused.covers(1, 1004) && !refused.covers(0, 1004));
        assert!(sc.dcgm_faults[2].covers(0, 1001) && sc.dcgm_faults[2].covers(1, 1001));
    }

    #[test]
    fn sxid_faults_name_a_declared_switch() {
        let sw = "[[nvswitches]]\n[[nvswitches]]\nid = 5\n";
        let text = format!(
            "{GPUS}{sw}[[dcgm_faults]]\nkind = \"sxid_fatal\"\nat = 3\nuntil = 9\nswitch = 5\n\
             sxid = 12028\n"
        );
        let sc = parse(&text, "scenario file /x.toml", "x").unwrap();
        assert_eq!(sc.dcgm_faults[0].sxid, Some((5, 12028)));
        assert!(sc.dcgm_faults[0].active(DcgmFaultKind::SxidFatal, 3.0));
        let e = err(&format!(
            "{sw}[[dcgm_faults]]\nkind = \"sxid_non_fatal\"\nat = 0\nuntil = 2\nswitch = 2\n\
             sxid = 11004\n"
        ));
        assert!(e.contains("line 12") && e.contains("ids: 0, 5"), "{e}");
        let e = err(&format!(
            "{sw}[[dcgm_faults]]\nkind = \"sxid_fatal\"\nat = 0\nuntil = 2\nswitch = 0\n"
        ));
        assert!(e.contains("needs a `switch` and an `sxid`"), "{e}");
        let e = err("[[dcgm_faults]]\nkind = \"blank\"\nat = 0\nuntil = 2\nfield = 1\nsxid = 3\n");
        assert!(e.contains("takes no `sxid`"), "{e}");
    }

    #[test]
    fn port_down_faults_name_a_port_the_switch_has() {
        let sw = "[[nvswitches]]\nlinks = 8\n";
        let fault = |port: u32| {
            format!(
                "{sw}[[dcgm_faults]]\nkind = \"nvswitch_port_down\"\nat = 1\nuntil = 4\n\
                 switch = 0\nport = {port}\n"
            )
        };
        let sc = parse(&format!("{GPUS}{}", fault(7)), "scenario file /x.toml", "x").unwrap();
        assert_eq!(sc.dcgm_faults[0].port, Some((0, 7)));
        assert!(sc.dcgm_faults[0].active(DcgmFaultKind::NvSwitchPortDown, 1.0));
        let e = err(&fault(8));
        assert!(
            e.contains("port = 8 but NVSwitch 0 has 8 links (ports 0 to 7)"),
            "{e}"
        );
        let e = err(&format!(
            "{sw}[[dcgm_faults]]\nkind = \"nvswitch_port_down\"\nat = 1\nuntil = 4\nswitch = 0\n"
        ));
        assert!(e.contains("needs a `switch` and a `port`"), "{e}");
        let e = err(&format!(
            "{sw}[[dcgm_faults]]\nkind = \"sxid_fatal\"\nat = 1\nuntil = 4\nswitch = 0\n\
             sxid = 3\nport = 1\n"
        ));
        assert!(e.contains("takes no `port`"), "{e}");
    }

    #[test]
    fn dcgm_fault_errors_name_the_line() {
        let e = err(
            "[[dcgm_faults]]\nkind = \"blank\"\nat = 1\nuntil = 2\nfield = 1001\nseconds = 3\n",
        );
        assert!(e.contains("line 10") && e.contains("seconds"), "{e}");
        let e = err("[[dcgm_faults]]\nkind = \"gone\"\nat = 1\nuntil = 2\n");
        assert!(
            e.contains("line 6") && e.contains("unknown dcgm_faults kind"),
            "{e}"
        );
        let e = err("[[dcgm_faults]]\nkind = \"blank\"\nat = 1\nuntil = 2\n");
        assert!(e.contains("needs a `field`"), "{e}");
        let e = err("[[dcgm_faults]]\nkind = \"blank\"\nat = 3\nuntil = 2\nfield = 1\n");
        assert!(e.contains("line 8") && e.contains("until = 2"), "{e}");
        let e = err(
            "[[dcgm_faults]]\nkind = \"watch_refused\"\nat = 0\nuntil = 2\nfield = 1001\ngpu = 2\n",
        );
        assert!(e.contains("line 10") && e.contains("has 2 GPUs"), "{e}");
        let e = err("[[dcgm_faults]]\nkind = \"hang\"\nat = 0\nuntil = 2\nfield = 1001\n");
        assert!(e.contains("takes no `field`"), "{e}");
        let e = err(
            "[[dcgm_faults]]\nkind = \"watch_refused\"\nat = 0\nuntil = 2\nfield = 1001\ncode = 3\n",
        );
        assert!(e.contains("code = 3"), "{e}");
    }
}
