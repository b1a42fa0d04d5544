//! The landing page at `/`: the node as an operator wants to see it first, rendered from
//! [`status::NodeStatus`](super::status::NodeStatus) — per GPU and MIG instance the pods
//! holding it, utilization and memory as bars, temperature, power against its limit, health
//! at a glance; then the exporter's own state.
//!
//! Owns the HTML only. One self-contained page: no external assets, no JavaScript, bars drawn
//! with text so that a terminal browser shows them too. It must not compute a value the
//! status does not hold, and every string from outside (pod names, models, errors) is escaped.

use std::fmt::Write as _;

use super::status::{GpuStatus, NodeStatus, ProcessStatus, Reading};

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// A ten-cell text bar with the value after it: `[######····] 61 %`. The bar and the value
/// each stay on one line; where the column is narrow the value goes under the bar.
fn bar(fraction: f64, text: &str) -> String {
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
    format!(
        "<span class=\"bar {class}\">[{}{}]</span> <span class=\"nw\">{}</span>",
        "#".repeat(full),
        "·".repeat(10 - full),
        esc(text)
    )
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

const DASH: &str = "<span class=\"na\">–</span>";

fn util_cell(r: &Reading) -> String {
    r.util_percent
        .map(|u| bar(u / 100.0, &format!("{} %", num(u))))
        .unwrap_or_else(|| DASH.to_owned())
}

fn memory_cell(r: &Reading) -> String {
    match (r.fb_used_mib, r.fb_total_mib) {
        (Some(u), Some(t)) if t > 0.0 => {
            bar(u / t, &format!("{:.1} / {:.1} GiB", u / 1024.0, t / 1024.0))
        }
        (Some(u), _) => format!("{:.1} GiB used", u / 1024.0),
        _ => DASH.to_owned(),
    }
}

fn power_cell(r: &Reading) -> String {
    match (r.power_w, r.power_limit_w) {
        (Some(p), Some(l)) if l > 0.0 => bar(p / l, &format!("{} / {} W", num(p), num(l))),
        (Some(p), _) => format!("{} W", num(p)),
        _ => DASH.to_owned(),
    }
}

/// The pods holding an entity; with none, the processes on it that no pod holds (pid and
/// name), so a busy GPU without a pod says whose work it runs.
fn holders_cell(h: &[String], outside: &[ProcessStatus]) -> String {
    let procs = || {
        outside
            .iter()
            .map(|p| match &p.name {
                Some(n) => format!("pid {} ({})", p.pid, esc(n)),
                None => format!("pid {}", p.pid),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    match (h.is_empty(), outside.is_empty()) {
        (true, true) => "<span class=\"na\">none</span>".to_owned(),
        (true, false) => format!("<span class=\"na\">no pod;</span> {}", procs()),
        (false, true) => h.iter().map(|s| esc(s)).collect::<Vec<_>>().join("<br>"),
        (false, false) => format!(
            "{}<br><small>outside pods: {}</small>",
            h.iter().map(|s| esc(s)).collect::<Vec<_>>().join("<br>"),
            procs()
        ),
    }
}

fn gpu_rows(out: &mut String, g: &GpuStatus) {
    let state = if !g.up {
        "<b class=\"critical\">LOST</b>".to_owned()
    } else {
        format!("<b class=\"{0}\">{0}</b>", g.health.verdict)
    };
    let _ = write!(
        out,
        "<tr class=\"gpu\"><td>GPU {}</td><td>{}<br><small>{}</small></td><td>{state}</td><td class=\"who\">{}</td>",
        g.gpu,
        esc(&g.model),
        esc(&g.uuid),
        if g.instances.is_empty() {
            holders_cell(&g.holders, &g.outside_pods)
        } else {
            "<span class=\"na\">MIG</span>".to_owned()
        },
    );
    match &g.reading {
        Some(r) => {
            let _ = write!(
                out,
                "<td>{}</td><td>{}</td><td>{}</td><td>{}</td>",
                util_cell(r),
                memory_cell(r),
                match (r.temp_c, r.temp_slowdown_c) {
                    (Some(t), Some(l)) => format!(
                        "<span class=\"{}\"><span class=\"nw\">{} /</span> <span class=\"nw\">{} °C</span></span>",
                        if t >= l { "critical" } else { "t" },
                        num(t),
                        num(l)
                    ),
                    (Some(t), None) => format!("{} °C", num(t)),
                    _ => DASH.to_owned(),
                },
                power_cell(r)
            );
        }
        None => out.push_str(&format!("<td>{DASH}</td>").repeat(4)),
    }
    out.push_str("<td class=\"why\">");
    // A healthy GPU says "ok" in its state cell and nothing here.
    let reasons: Vec<String> = g.health.reasons.iter().map(|r| esc(r)).collect();
    out.push_str(&reasons.join("<br>"));
    out.push_str("</td></tr>\n");
    for i in &g.instances {
        let _ = writeln!(
            out,
            "<tr class=\"mig\"><td>&nbsp;&nbsp;└ MIG {} (GI {})</td><td><small>{}</small></td><td><b class=\"{}\">{}</b></td><td class=\"who\">{}</td><td>{}</td><td>{}</td><td></td><td></td><td></td></tr>",
            esc(&i.profile),
            i.gpu_instance_id,
            esc(&i.uuid),
            // The instance's own verdict (its causes are listed on its GPU's row).
            i.verdict,
            i.verdict,
            holders_cell(&i.holders, &i.outside_pods),
            util_cell(&i.reading),
            memory_cell(&i.reading),
        );
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
.why{min-width:18em;max-width:28em}.who{min-width:10em;overflow-wrap:anywhere}\
tr.mig td{background:#fafafa}small{color:#666}.nw{white-space:nowrap}";

/// Renders the page.
pub fn render(s: &NodeStatus) -> String {
    let mut out = String::with_capacity(16384);
    let node = s.node.as_deref().unwrap_or("this node");
    let _ = write!(
        out,
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpu-exporter · {}</title><style>{STYLE}</style></head><body>",
        esc(node)
    );
    let _ = write!(
        out,
        "<h1>gpu-exporter {} on {}</h1>",
        esc(s.version),
        esc(node)
    );
    let lost = s.gpus.iter().filter(|g| !g.up).count();
    let instances: usize = s.gpus.iter().map(|g| g.instances.len()).sum();
    out.push_str("<p>");
    out.push_str(if s.ready {
        "<b class=\"ok\">Ready</b>"
    } else {
        "<b class=\"critical\">Not ready</b>: no tick in which NVML answered has been encoded yet"
    });
    let _ = write!(
        out,
        " · NVML {} · {} GPU(s){} · {} MIG instance(s) · last tick at {} UTC, took {:.1} ms · {} ticks</p>",
        if s.nvml_up {
            "<span class=\"ok\">up</span>"
        } else {
            "<b class=\"critical\">down</b>"
        },
        s.gpus.len(),
        if lost > 0 {
            format!(" (<b class=\"critical\">{lost} lost</b>)")
        } else {
            String::new()
        },
        instances,
        utc_time(s.taken_at_unix),
        s.tick_ms,
        s.ticks,
    );
    if let Some(st) = s.stalled_seconds {
        let _ = write!(
            out,
            "<p><b class=\"critical\">The sampler is stalled</b>: no tick finished for {st:.0} s beyond its limit (NVML or a file read is hanging); /ready answers 503.</p>"
        );
    }
    out.push_str("<p><a href=\"/metrics\">/metrics</a> · <a href=\"/status\">/status</a> (this page as JSON) · <a href=\"/health\">/health</a> · <a href=\"/ready\">/ready</a></p>");

    out.push_str("<h2>GPUs</h2><table><tr><th>GPU</th><th>Model / UUID</th><th>State</th><th>Held by (namespace/<wbr>pod/<wbr>container)</th><th>Utilization</th><th>Memory</th><th>Temp / slowdown</th><th>Power / limit</th><th>Health</th></tr>\n");
    for g in &s.gpus {
        gpu_rows(&mut out, g);
    }
    out.push_str("</table>");
    if s.gpus.is_empty() {
        out.push_str(
            "<p class=\"critical\">No GPU: NVML has not answered, or -d selects none.</p>",
        );
    }

    out.push_str("<h2>Exporter</h2><table><tr><th>Source</th><th>State</th><th>Last answer</th><th>Errors</th></tr>");
    if s.sources.is_empty() {
        out.push_str(
            "<tr><td colspan=\"4\" class=\"na\">no attribution source (-k is off)</td></tr>",
        );
    }
    for src in &s.sources {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(src.source),
            if src.up {
                "<span class=\"ok\">up</span>"
            } else {
                "<b class=\"critical\">down</b>"
            },
            match (src.age_seconds, src.up) {
                (Some(a), _) => format!("{a:.0} s ago"),
                (None, true) => DASH.to_owned(),
                (None, false) => "never".to_owned(),
            },
            match &src.last_error {
                Some(e) => format!("{} (last: {})", src.errors, esc(e)),
                None => src.errors.to_string(),
            }
        );
    }
    out.push_str("</table>");

    let _ = write!(
        out,
        "<p>Counters file: {} metrics; reloads: {}{}.</p>",
        s.counters.metrics,
        s.counters.reloads,
        match s.counters.last_reload_ok {
            Some(false) => format!(
                ", <b class=\"critical\">the last reload failed</b> ({} failure(s); the previous set is in use)",
                s.counters.reload_failures
            ),
            _ if s.counters.reload_failures > 0 => {
                format!(", {} failed earlier", s.counters.reload_failures)
            }
            _ => String::new(),
        }
    );
    if !s.not_configured.is_empty() {
        out.push_str("<p>Values not shown because the counters file does not export their field (the health verdict watches them anyway): ");
        let items: Vec<String> = s
            .not_configured
            .iter()
            .map(|(what, field)| format!("{} (<code>{}</code>)", esc(what), esc(field)))
            .collect();
        out.push_str(&items.join(", "));
        out.push_str(".</p>");
    }

    out.push_str("<h3>Unsupported fields</h3>");
    if s.unsupported.is_empty() {
        out.push_str("<p class=\"na\">none: NVML answered every configured field</p>");
    } else {
        let mut by_field: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for u in &s.unsupported {
            by_field
                .entry(u.field)
                .or_default()
                .push(match u.gpu_instance_id {
                    Some(gi) => format!("GPU {} GI {gi}", u.gpu),
                    None => format!("GPU {}", u.gpu),
                });
        }
        out.push_str("<table><tr><th>Field</th><th>Unsupported on</th></tr>");
        for (field, on) in by_field {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td></tr>",
                esc(field),
                esc(&on.join(", "))
            );
        }
        out.push_str("</table>");
    }
    if !s.field_errors.is_empty() {
        out.push_str(
            "<h3>Read errors</h3><table><tr><th>Field</th><th>Error</th><th>Count</th></tr>",
        );
        for e in &s.field_errors {
            let _ = write!(
                out,
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                esc(e.field),
                esc(e.kind),
                e.count
            );
        }
        out.push_str("</table>");
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_strings_are_escaped_and_bars_clamped() {
        assert_eq!(
            esc("<script>\"x\"&'y'\u{1b}[31m"),
            "&lt;script&gt;&quot;x&quot;&amp;&#39;y&#39;\u{fffd}[31m"
        );
        assert!(bar(1.7, "x").contains("[##########]"));
        assert!(bar(-1.0, "x").contains("[··········]"));
        assert!(bar(f64::NAN, "x").contains("[··········]"));
        assert!(
            bar(0.5, "<b>").contains("[#####·····]</span> <span class=\"nw\">&lt;b&gt;</span>")
        );
        assert_eq!(utc_time(1_795_578_824.2), "03:53:44");
        assert_eq!(utc_time(f64::NAN), "00:00:00");
    }
}
