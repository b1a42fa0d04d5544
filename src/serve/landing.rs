//! The landing page at `/`: the node as an operator wants to see it first, rendered from
//! [`status::NodeStatus`](super::status::NodeStatus) — per GPU and MIG instance the pods
//! holding it, utilization and memory as bars, temperature, power against its limit, health
//! at a glance, and why a value DCGM serves is missing; then the exporter's own state, DCGM
//! among its sources (its state also on the status line).
//!
//! Owns the HTML only. One self-contained page: no external assets, no JavaScript, bars drawn
//! with text so that a terminal browser shows them too. It must not compute a value the
//! status does not hold.
//!
//! Written with maud's `html!` templates rather than askama's: the page is mostly branches
//! over the status (lost or up, MIG or not, which values are known), which read as the Rust
//! they are inside `html!`, checked by the compiler with no template files beside them; and
//! a fragment is a [`Markup`] while any other value is text, so every value is escaped by
//! construction and a cell built by a helper is not escaped twice (askama needs a `safe`
//! filter on each such fragment, the same thing to remember that the escape call was).
//! [`PreEscaped`] is used for the constant style sheet only and must never hold a value.
//! Strings from outside (pod names, models, reasons, errors) go through `Text`, which also
//! replaces control characters (a terminal escape in a process name) with U+FFFD.

use std::borrow::Cow;
use std::collections::BTreeMap;

use maud::{DOCTYPE, Markup, PreEscaped, Render, html};

use super::status::{
    CountersStatus, CurrentValues, DcgmSource, GpuStatus, NodeStatus, ProcessStatus, SourceStatus,
};

/// A string from outside the exporter: escaped as every value is, its control characters
/// replaced with U+FFFD.
struct Text<'a>(&'a str);

impl Render for Text<'_> {
    fn render_to(&self, buffer: &mut String) {
        let text = if self.0.chars().any(char::is_control) {
            Cow::Owned(
                self.0
                    .chars()
                    .map(|c| if c.is_control() { '\u{fffd}' } else { c })
                    .collect(),
            )
        } else {
            Cow::Borrowed(self.0)
        };
        text.render_to(buffer);
    }
}

/// A ten-cell text bar with the value after it: `[######····] 61 %`. The bar and the value
/// each stay on one line; where the column is narrow the value goes under the bar.
fn bar(fraction: f64, text: &str) -> Markup {
    let f = if fraction.is_finite() {
        fraction.clamp(0.0, 1.0)
    } else {
        0.0
    };
    let full = (f * 10.0).round() as usize;
    let class = if f >= 0.95 {
        "hi"
    } else if f >= 0.8 {
        "mid"
    } else {
        "lo"
    };
    html! {
        span.bar.(class) { "[" ("#".repeat(full)) ("·".repeat(10 - full)) "]" }
        " "
        span.nw { (Text(text)) }
    }
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 || v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// `HH:MM:SS` of a Unix time, UTC.
fn utc_time(unix: f64) -> String {
    let secs = if unix.is_finite() && unix > 0.0 {
        unix as u64 % 86_400
    } else {
        0
    };
    format!("{:02}:{:02}:{:02}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// A value that is not known.
fn dash() -> Markup {
    html! { span.na { "–" } }
}

fn util_cell(r: &CurrentValues) -> Markup {
    match (r.util_percent, &r.util_missing) {
        (Some(u), _) => bar(u / 100.0, &format!("{} %", num(u))),
        // Why, in a few words: DCGM's linked to its row (its error is there and on the
        // status line), the sentence as the tooltip.
        (None, Some(m)) if m.source == "dcgm" => html! {
            a.warning href="#dcgm" title=(Text(&m.detail)) { (m.why) }
        },
        (None, Some(m)) => html! { span.na title=(Text(&m.detail)) { (m.why) } },
        (None, None) => dash(),
    }
}

fn memory_cell(r: &CurrentValues) -> Markup {
    match (r.fb_used_mib, r.fb_total_mib) {
        (Some(u), Some(t)) if t > 0.0 => {
            bar(u / t, &format!("{:.1} / {:.1} GiB", u / 1024.0, t / 1024.0))
        }
        (Some(u), _) => html! { (format!("{:.1} GiB used", u / 1024.0)) },
        _ => dash(),
    }
}

fn temp_cell(r: &CurrentValues) -> Markup {
    match (r.temp_c, r.temp_slowdown_c) {
        (Some(t), Some(l)) => html! {
            span class=(if t >= l { "critical" } else { "t" }) {
                span.nw { (num(t)) " /" } " " span.nw { (num(l)) " °C" }
            }
        },
        (Some(t), None) => html! { (num(t)) " °C" },
        _ => dash(),
    }
}

fn power_cell(r: &CurrentValues) -> Markup {
    match (r.power_w, r.power_limit_w) {
        (Some(p), Some(l)) if l > 0.0 => bar(p / l, &format!("{} / {} W", num(p), num(l))),
        (Some(p), _) => html! { (num(p)) " W" },
        _ => dash(),
    }
}

/// Strings one per line.
fn lines(items: &[String]) -> Markup {
    html! {
        @for (i, s) in items.iter().enumerate() {
            @if i > 0 { br; }
            (Text(s))
        }
    }
}

/// The pods holding an entity; with none, the processes on it that no pod holds (pid and
/// name), so a busy GPU without a pod says whose work it runs.
fn holders_cell(h: &[String], outside: &[ProcessStatus]) -> Markup {
    let procs = html! {
        @for (i, p) in outside.iter().enumerate() {
            @if i > 0 { ", " }
            "pid " (p.pid)
            @if let Some(n) = &p.name { " (" (Text(n)) ")" }
        }
    };
    html! {
        @match (h.is_empty(), outside.is_empty()) {
            (true, true) => span.na { "none" },
            (true, false) => { span.na { "no pod;" } " " (procs) },
            (false, true) => (lines(h)),
            (false, false) => { (lines(h)) br; small { "outside pods: " (procs) } },
        }
    }
}

/// A GPU's row and its MIG instances' rows, each row on a line of its own.
fn gpu_rows(g: &GpuStatus) -> Markup {
    html! {
        tr.gpu {
            td { "GPU " (g.gpu) }
            td { (Text(&g.model)) br; small { (Text(&g.uuid)) } }
            td {
                @if g.up {
                    b class=(g.health.verdict) { (g.health.verdict) }
                } @else {
                    b.critical { "LOST" }
                }
            }
            td.who {
                @if g.instances.is_empty() {
                    (holders_cell(&g.holders, &g.outside_pods))
                } @else {
                    span.na { "MIG" }
                }
            }
            @match &g.reading {
                Some(r) => {
                    td { (util_cell(r)) }
                    td { (memory_cell(r)) }
                    td { (temp_cell(r)) }
                    td { (power_cell(r)) }
                },
                None => { @for _ in 0..4 { td { (dash()) } } },
            }
            // A healthy GPU says "ok" in its state cell and nothing here.
            td.why { (lines(&g.health.reasons)) }
        }
        "\n"
        @for i in &g.instances {
            tr.mig {
                td { "\u{a0}\u{a0}└ MIG " (Text(&i.profile)) " (GI " (i.gpu_instance_id) ")" }
                td { small { (Text(&i.uuid)) } }
                // The instance's own verdict (its causes are listed on its GPU's row).
                td { b class=(i.verdict) { (i.verdict) } }
                td.who { (holders_cell(&i.holders, &i.outside_pods)) }
                td { (util_cell(&i.reading)) }
                td { (memory_cell(&i.reading)) }
                td {}
                td {}
                td {}
            }
            "\n"
        }
    }
}

/// The layout must read at 1,280 px and wider without a horizontal scroll bar
/// (tests/landing_browser.rs measures it): the Health cell keeps at least 18 em so that its
/// reasons read as sentences, and the other columns give way instead: a bar's value wraps
/// under its bar, a temperature after its slash, a pod name longer than 10 em inside its
/// cell, the holders' header at its slashes. Auto table layout keeps every column at its
/// natural width when there is room.
const STYLE: &str = "body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin-bottom:1em}\
td,th{border:1px solid #ccc;padding:4px 6px;text-align:left;vertical-align:top}th{background:#eee}\
.bar{font-family:monospace;white-space:nowrap}.bar.lo{color:#2a7}.bar.mid{color:#c80}.bar.hi{color:#c22}\
.ok{color:#2a7}.warning{color:#c80}.critical{color:#c22}.na{color:#999}\
.why{min-width:18em;max-width:28em}.long{max-width:28em}.who{min-width:10em;overflow-wrap:anywhere}\
tr.mig td{background:#fafafa}small{color:#666}.nw{white-space:nowrap}";

/// DCGM's entry among the sources, if the status has one.
fn dcgm_of(s: &NodeStatus) -> Option<(&SourceStatus, &DcgmSource)> {
    s.sources
        .iter()
        .find_map(|src| src.dcgm.as_ref().map(|d| (src, d)))
}

/// A DCGM state word in its colour.
fn dcgm_state(state: &str) -> Markup {
    html! {
        @match state {
            "up" => span.ok { "up" },
            "down" => b.critical { "down" },
            "connecting" => span.warning { "connecting" },
            other => span.na { (Text(other)) },
        }
    }
}

/// `since HH:MM:SS UTC (N s)`, when the state has a start.
fn since(d: &DcgmSource) -> Markup {
    html! {
        @if let (Some(at), Some(secs)) = (d.since_unix, d.since_seconds) {
            "since " (utc_time(at)) " UTC (" (format!("{secs:.0}")) " s)"
        }
    }
}

/// The line under the status line while DCGM is down or has not answered yet: since when,
/// its error, and what it means for the series and `/ready`.
fn dcgm_note(src: &SourceStatus, d: &DcgmSource) -> Markup {
    let error = src.health.last_error.as_deref().unwrap_or("no answer");
    html! {
        @match d.state {
            "down" => p {
                b.critical { "DCGM is down" } " " (since(d)) ": " (Text(error)) ". "
                "The profiling values it serves are missing (listed below); NVML's series go on, "
                "and /ready still answers 200."
            },
            "connecting" => p {
                span.warning { "DCGM has not answered yet" } " (" (since(d)) "): " (Text(error)) "."
            },
            _ => {},
        }
    }
}

/// The title, the node's state in one line, and the links.
fn header(s: &NodeStatus, node: &str) -> Markup {
    let lost = s.gpus.iter().filter(|g| !g.up).count();
    let instances: usize = s.gpus.iter().map(|g| g.instances.len()).sum();
    let dcgm = dcgm_of(s);
    let degraded = dcgm.is_some_and(|(_, d)| d.state == "down");
    html! {
        h1 { "gpu-exporter " (Text(s.version)) " on " (Text(node)) }
        p {
            @if s.ready && degraded {
                b.warning { "Ready, degraded" }
            } @else if s.ready {
                b.ok { "Ready" }
            } @else {
                b.critical { "Not ready" }
                ": no tick in which NVML answered has been encoded yet"
            }
            " · NVML "
            @if s.nvml_up { span.ok { "up" } } @else { b.critical { "down" } }
            @if let Some((_, d)) = dcgm { " · DCGM " (dcgm_state(d.state)) }
            " · " (s.gpus.len()) " GPU(s)"
            @if lost > 0 { " (" b.critical { (lost) " lost" } ")" }
            " · " (instances) " MIG instance(s) · last tick at " (utc_time(s.taken_at_unix))
            " UTC, took " (format!("{:.1}", s.tick_ms)) " ms · " (s.ticks) " ticks"
        }
        @if let Some((src, d)) = dcgm { (dcgm_note(src, d)) }
        @if let Some(st) = s.stalled_seconds {
            p {
                b.critical { "The sampler is stalled" }
                ": no tick finished for " (format!("{st:.0}"))
                " s beyond its limit (NVML or a file read is hanging); /ready answers 503."
            }
        }
        p {
            a href="/metrics" { "/metrics" } " · "
            a href="/status" { "/status" } " (this page as JSON) · "
            a href="/health" { "/health" } " · "
            a href="/ready" { "/ready" }
        }
    }
}

/// The GPU table.
fn gpus(s: &NodeStatus) -> Markup {
    html! {
        h2 { "GPUs" }
        table {
            tr {
                th { "GPU" } th { "Model / UUID" } th { "State" }
                th { "Held by (namespace/" wbr; "pod/" wbr; "container)" }
                th { "Utilization" } th { "Memory" } th { "Temp / slowdown" }
                th { "Power / limit" } th { "Health" }
            }
            "\n"
            @for g in &s.gpus { (gpu_rows(g)) }
        }
        @if s.gpus.is_empty() {
            p.critical { "No GPU: NVML has not answered, or -d selects none." }
        }
    }
}

/// One source's row of the Exporter table; DCGM's with its mode, address and since when
/// (anchored `#dcgm`, where the cells of the values it did not serve link to).
fn source_row(src: &SourceStatus) -> Markup {
    let h = &src.health;
    html! {
        @match &src.dcgm {
            Some(d) if d.state == "off" => tr id="dcgm" {
                td { "dcgm" }
                td { (dcgm_state(d.state)) }
                td colspan="2" class="na" {
                    "--dcgm-mode off: DCGM_FI_PROF_* fields only on GPUs with GPM (Hopper and later)"
                }
            },
            Some(d) => tr id="dcgm" {
                td {
                    "dcgm" br;
                    small { (d.mode) @if let Some(a) = &d.address { ", " (Text(a)) } }
                }
                td { (dcgm_state(d.state)) br; small { (since(d)) } }
                td {
                    @match h.age_seconds {
                        Some(a) => { (format!("{a:.0}")) " s ago" },
                        None => "never",
                    }
                }
                td.long {
                    (h.errors) " tick(s) without an answer"
                    @if let Some(e) = &h.last_error { " (last: " (Text(e)) ")" }
                }
            },
            None => tr {
                td { (Text(h.source)) }
                td { @if h.up { span.ok { "up" } } @else { b.critical { "down" } } }
                td {
                    @match (h.age_seconds, h.up) {
                        (Some(a), _) => { (format!("{a:.0}")) " s ago" },
                        (None, true) => (dash()),
                        (None, false) => "never",
                    }
                }
                td {
                    (h.errors)
                    @if let Some(e) = &h.last_error { " (last: " (Text(e)) ")" }
                }
            },
        }
    }
}

/// The exporter's own state: attribution sources and DCGM, the counters file, fields not
/// shown, values DCGM did not serve, unsupported fields and read errors.
fn exporter(s: &NodeStatus) -> Markup {
    html! {
        h2 { "Exporter" }
        (sources(s))
        (counters_line(&s.counters))
        (not_configured(s))
        (unavailable(s))
        (unsupported(s))
        (withheld(s))
        (read_errors(s))
    }
}

/// `GPU <index>`, or `GPU <index> GI <id>` for a MIG instance.
fn entity(gpu: u32, gpu_instance_id: Option<u32>) -> String {
    match gpu_instance_id {
        Some(gi) => format!("GPU {gpu} GI {gi}"),
        None => format!("GPU {gpu}"),
    }
}

/// The table of the attribution sources and DCGM, one row each ([`source_row`]).
fn sources(s: &NodeStatus) -> Markup {
    html! {
        table {
            tr { th { "Source" } th { "State" } th { "Last answer" } th { "Errors" } }
            @if s.sources.iter().all(|src| src.dcgm.is_some()) {
                tr { td colspan="4" class="na" { "no attribution source (-k is off)" } }
            }
            @for src in &s.sources {
                (source_row(src))
            }
        }
    }
}

/// The counters file's line: its metrics, reloads and failed reloads.
fn counters_line(c: &CountersStatus) -> Markup {
    html! {
        p {
            "Counters file: " (c.metrics) " metrics; reloads: " (c.reloads)
            @match c.last_reload_ok {
                Some(false) => {
                    ", " b.critical { "the last reload failed" }
                    " (" (c.reload_failures) " failure(s); the previous set is in use)"
                },
                _ if c.reload_failures > 0 => { ", " (c.reload_failures) " failed earlier" },
                _ => {},
            }
            "."
        }
    }
}

/// The values not shown because the counters file does not export their field, if any.
fn not_configured(s: &NodeStatus) -> Markup {
    html! {
        @if !s.not_configured.is_empty() {
            p {
                "Values not shown because the counters file does not export their field (the health verdict watches them anyway): "
                @for (i, (what, field)) in s.not_configured.iter().enumerate() {
                    @if i > 0 { ", " }
                    (Text(what)) " (" code { (Text(field)) } ")"
                }
                "."
            }
        }
    }
}

/// The values DCGM did not serve, if any: per reason, the entities, and per entity list the
/// fields (one DCGM outage is one row, not one per field).
fn unavailable(s: &NodeStatus) -> Markup {
    let mut on: BTreeMap<(&str, &str), Vec<String>> = BTreeMap::new();
    for u in &s.unavailable {
        on.entry((u.reason.as_str(), u.field))
            .or_default()
            .push(entity(u.gpu, u.gpu_instance_id));
    }
    let mut unavailable: BTreeMap<(&str, String), Vec<&str>> = BTreeMap::new();
    for ((reason, field), entities) in on {
        unavailable
            .entry((reason, entities.join(", ")))
            .or_default()
            .push(field);
    }
    html! {
        @if !unavailable.is_empty() {
            h3 { "Values DCGM did not serve" }
            table {
                tr { th { "Fields" } th { "Missing on" } th { "Why" } }
                @for ((why, on), fields) in &unavailable {
                    tr {
                        td {
                            @for (i, f) in fields.iter().enumerate() {
                                @if i > 0 { br; }
                                code { (Text(f)) }
                            }
                        }
                        td { (Text(on)) }
                        td.long { (Text(why)) }
                    }
                }
            }
        }
    }
}

/// The fields NVML does not support, each with the entities it does not support them on.
fn unsupported(s: &NodeStatus) -> Markup {
    let mut unsupported: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for u in &s.unsupported {
        unsupported
            .entry(u.field)
            .or_default()
            .push(entity(u.gpu, u.gpu_instance_id));
    }
    html! {
        h3 { "Unsupported fields" }
        @if unsupported.is_empty() {
            p.na { "none: NVML answered every configured field" }
        } @else {
            table {
                tr { th { "Field" } th { "Unsupported on" } }
                @for (field, on) in &unsupported {
                    tr { td { code { (Text(field)) } } td { (Text(&on.join(", "))) } }
                }
            }
        }
    }
}

/// The profiling fields withheld on every GPU of a node of mixed models (`dcgm-4.10`), with why.
fn withheld(s: &NodeStatus) -> Markup {
    html! {
        @if !s.withheld.is_empty() {
            h3 { "Withheld profiling fields (GPU models mixed)" }
            table {
                tr { th { "Field" } th { "Not supported on" } th { "Why" } }
                @for w in &s.withheld {
                    tr {
                        td { code { (Text(w.field)) } }
                        td { (Text(&w.lacking.iter().map(|g| format!("GPU {g}")).collect::<Vec<_>>().join(", "))) }
                        td.long { (Text(&w.reason)) }
                    }
                }
            }
        }
    }
}

/// The fields' read errors, by kind with their counts, if any.
fn read_errors(s: &NodeStatus) -> Markup {
    html! {
        @if !s.field_errors.is_empty() {
            h3 { "Read errors" }
            table {
                tr { th { "Field" } th { "Error" } th { "Count" } }
                @for e in &s.field_errors {
                    tr { td { code { (Text(e.field)) } } td { (Text(e.kind)) } td { (e.count) } }
                }
            }
        }
    }
}

/// Renders the page.
pub fn render(s: &NodeStatus) -> String {
    let node = s.node.as_deref().unwrap_or("this node");
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { "gpu-exporter · " (Text(node)) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                (header(s, node))
                (gpus(s))
                (exporter(s))
            }
        }
        "\n"
    };
    page.into_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::status::{
        CountersStatus, FieldErrors, InstanceStatus, Missing, ShownHealth, UnavailableField,
        UnsupportedField, WithheldField,
    };
    use crate::snapshot::SourceHealth;

    fn text(s: &str) -> String {
        Text(s).render().into_string()
    }

    #[test]
    fn outside_strings_are_escaped_and_bars_clamped() {
        // maud escapes what can end a text or a double-quoted attribute (`'` cannot: every
        // attribute it writes is in double quotes); Text replaces the control characters.
        assert_eq!(
            text("<script>\"x\"&'y'\u{1b}[31m"),
            "&lt;script&gt;&quot;x&quot;&amp;'y'\u{fffd}[31m"
        );
        let bar = |f: f64, t: &str| bar(f, t).into_string();
        assert!(bar(1.7, "x").contains("[##########]"));
        assert!(bar(-1.0, "x").contains("[··········]"));
        assert!(bar(f64::NAN, "x").contains("[··········]"));
        assert!(
            bar(0.5, "<b>").contains("[#####·····]</span> <span class=\"nw\">&lt;b&gt;</span>")
        );
        assert_eq!(utc_time(1_795_578_824.2), "03:53:44");
        assert_eq!(utc_time(f64::NAN), "00:00:00");
    }

    fn process(pid: u32, name: &str) -> ProcessStatus {
        ProcessStatus {
            pid,
            name: Some(name.to_owned()),
        }
    }

    /// A node whose every string from outside is `s`: a GPU held by a pod with a process
    /// outside it, a GPU with only a process outside pods, a MIG instance likewise (whose
    /// utilization DCGM did not serve), a source with an error, DCGM down at an address with
    /// an error, a field not configured, a value DCGM did not serve, an unsupported field and
    /// a read error.
    fn node_with_strings(s: &'static str) -> NodeStatus {
        let reading = CurrentValues {
            util_percent: Some(61.0),
            util_missing: None,
            fb_used_mib: Some(2048.0),
            fb_total_mib: Some(81_920.0),
            temp_c: Some(88.0),
            temp_slowdown_c: Some(87.0),
            power_w: Some(350.5),
            power_limit_w: Some(700.0),
        };
        let gpu = |n: u32, holders: Vec<String>| GpuStatus {
            gpu: n,
            uuid: s.to_owned(),
            model: s.to_owned(),
            up: true,
            holders,
            outside_pods: vec![process(100 + n, s)],
            reading: Some(reading.clone()),
            health: ShownHealth {
                verdict: "critical",
                reasons: vec![s.to_owned()],
                ..ShownHealth::default()
            },
            instances: vec![],
        };
        let mut mig = gpu(2, vec![]);
        mig.reading = None;
        mig.instances = vec![InstanceStatus {
            profile: s.to_owned(),
            gpu_instance_id: 1,
            uuid: s.to_owned(),
            holders: vec![s.to_owned()],
            outside_pods: vec![process(300, s)],
            reading: CurrentValues {
                util_percent: None,
                util_missing: Some(Missing {
                    source: "dcgm",
                    why: "DCGM down",
                    detail: s.to_owned(),
                }),
                ..reading.clone()
            },
            verdict: "warning",
        }];
        NodeStatus {
            version: s,
            node: Some(s.to_owned()),
            ready: true,
            nvml_up: true,
            taken_at_unix: 1_795_578_824.2,
            age_seconds: 0.1,
            ticks: 7,
            tick_ms: 3.25,
            stalled_seconds: None,
            gpus: vec![gpu(0, vec![s.to_owned()]), gpu(1, vec![]), mig],
            sources: vec![
                SourceStatus {
                    health: SourceHealth {
                        source: s,
                        up: false,
                        age_seconds: Some(12.0),
                        errors: 3,
                        last_error: Some(s.to_owned()),
                    },
                    dcgm: None,
                },
                SourceStatus {
                    health: SourceHealth {
                        source: "dcgm",
                        up: false,
                        age_seconds: None,
                        errors: 4,
                        last_error: Some(s.to_owned()),
                    },
                    dcgm: Some(DcgmSource {
                        mode: "remote",
                        address: Some(s.to_owned()),
                        state: "down",
                        since_unix: Some(1_795_578_820.0),
                        since_seconds: Some(4.2),
                    }),
                },
            ],
            unavailable: vec![UnavailableField {
                gpu: 2,
                gpu_instance_id: Some(1),
                field: s,
                reason: s.to_owned(),
            }],
            unsupported: vec![UnsupportedField {
                gpu: 1,
                gpu_instance_id: None,
                field: s,
            }],
            withheld: vec![WithheldField {
                field: s,
                lacking: vec![1],
                reason: s.to_owned(),
            }],
            field_errors: vec![FieldErrors {
                field: s,
                kind: s,
                count: 2,
            }],
            counters: CountersStatus {
                metrics: 40,
                last_reload_ok: Some(true),
                reloads: 1,
                reload_failures: 0,
            },
            not_configured: vec![(s, s)],
        }
    }

    /// Every place a string from outside appears escapes it: a pod, process, model, host or
    /// source name, a reason or an error that holds markup, quotes, an ampersand or a terminal
    /// escape shows as text and opens no element.
    #[test]
    fn a_hostile_string_is_escaped_everywhere_it_appears() {
        const HOSTILE: &str = "<script>alert(\"x\" & 'y')</script>\u{1b}[31m";
        const SHOWN: &str =
            "&lt;script&gt;alert(&quot;x&quot; &amp; 'y')&lt;/script&gt;\u{fffd}[31m";
        let page = render(&node_with_strings(HOSTILE));
        for raw in ["<script", "</script", "alert(\"", "\" &", "& '", "\u{1b}"] {
            assert!(
                !page.contains(raw),
                "{raw:?} is on the page unescaped:\n{page}"
            );
        }
        // The places: the title and heading (node, and version in the heading); per GPU its
        // model, UUID, holder, process and reason (GPU 1: no holder; GPU 2: MIG, so no
        // holder or process on its row); the instance's profile, UUID, holder and process;
        // the instance's DCGM reason (a title); the source and its error; DCGM's error on the
        // status line, its address and error in its row; the field not configured and its
        // signal; the value DCGM did not serve and why; the unsupported field; the withheld
        // field and why; the read error's field and kind.
        let places = 3 + 5 + 4 + 3 + 4 + 1 + 2 + 3 + 2 + 2 + 1 + 2 + 2;
        assert_eq!(page.matches(SHOWN).count(), places, "{page}");
        // Everything else is the same page as with a harmless name.
        let plain = render(&node_with_strings("pod-a"));
        assert_eq!(page.replace(SHOWN, "pod-a"), plain);
    }
}
