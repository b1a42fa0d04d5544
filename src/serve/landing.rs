//! The landing page at `/`: the node at a glance, rendered from the last snapshot.
//!
//! Shows every GPU (up or down) and MIG instance with a few key current values, and links to
//! the endpoints. Reads only the snapshot; values not in the counter set show as "–".

use std::fmt::Write as _;

use crate::base::version::VERSION;
use crate::catalogue::csv::CounterSet;
use crate::snapshot::{EntitySample, Snapshot};

/// Key columns: (header, canonical field, unit suffix).
const COLUMNS: &[(&str, &str, &str)] = &[
    ("Temp", "DCGM_FI_DEV_GPU_TEMP", " °C"),
    ("Power", "DCGM_FI_DEV_POWER_USAGE", " W"),
    ("SM clock", "DCGM_FI_DEV_SM_CLOCK", " MHz"),
    ("GPU util", "DCGM_FI_DEV_GPU_UTIL", " %"),
    ("Graphics active", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", ""),
    ("FB used", "DCGM_FI_DEV_FB_USED", " MiB"),
    ("FB free", "DCGM_FI_DEV_FB_FREE", " MiB"),
    ("Last Xid", "DCGM_FI_DEV_XID_ERRORS", ""),
];

fn html_escape(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
}

fn cell(out: &mut String, e: &EntitySample, slot: Option<usize>, unit: &str) {
    out.push_str("<td>");
    match slot.and_then(|s| e.values.get(s)).and_then(|v| v.as_ref()) {
        Some(v) => {
            let v = v.as_f64();
            if v.fract() == 0.0 {
                let _ = write!(out, "{v}{unit}");
            } else {
                let _ = write!(out, "{v:.2}{unit}");
            }
        }
        None => out.push('–'),
    }
    out.push_str("</td>");
}

/// Renders the page.
pub fn render(snap: &Snapshot, counters: &CounterSet, ready: bool) -> String {
    let slots: Vec<Option<usize>> = COLUMNS
        .iter()
        .map(|(_, field, _)| counters.metrics().position(|r| r.field.name == *field))
        .collect();
    let mut out = String::with_capacity(8192);
    out.push_str("<!doctype html><html><head><meta charset=\"utf-8\"><title>gpu-exporter</title>");
    out.push_str("<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#eee}td.l{text-align:left}.down{color:#b00}.mig td.l:first-child{padding-left:2em}</style></head><body>");
    let _ = write!(out, "<h1>gpu-exporter {VERSION}</h1><p>");
    out.push_str(if ready {
        "Ready"
    } else {
        "<b class=\"down\">Not ready</b>: no GPU sample yet"
    });
    let st = &snap.stats;
    let _ = write!(
        out,
        " · NVML {} · {} GPU(s), {} MIG instance(s) · last tick {:.1} ms · {} metric families configured</p>",
        if st.nvml_up {
            "up"
        } else {
            "<b class=\"down\">down</b>"
        },
        snap.devices.len(),
        snap.entities.iter().filter(|e| e.id.mig.is_some()).count(),
        st.duration.as_secs_f64() * 1000.0,
        counters.metrics().count(),
    );
    out.push_str("<p><a href=\"/metrics\">/metrics</a> · <a href=\"/health\">/health</a> · <a href=\"/ready\">/ready</a></p>");
    out.push_str(
        "<table><tr><th>GPU</th><th>Instance</th><th>Model</th><th>UUID</th><th>State</th>",
    );
    for (h, _, _) in COLUMNS {
        let _ = write!(out, "<th>{h}</th>");
    }
    out.push_str("</tr>");
    for d in &snap.devices {
        let rows: Vec<&EntitySample> = snap.entities.iter().filter(|e| e.id.gpu == d.gpu).collect();
        if rows.is_empty() {
            let _ = write!(
                out,
                "<tr><td class=\"l\">{}</td><td class=\"l\"></td><td class=\"l\">",
                d.gpu
            );
            html_escape(&mut out, &d.model_name);
            out.push_str("</td><td class=\"l\">");
            html_escape(&mut out, &d.uuid);
            let _ = write!(
                out,
                "</td><td class=\"down\">down</td><td colspan=\"{}\"></td></tr>",
                COLUMNS.len()
            );
            continue;
        }
        for e in rows {
            let mig = e.id.mig.as_ref();
            let _ = write!(
                out,
                "<tr{}><td class=\"l\">{}</td><td class=\"l\">",
                if mig.is_some() { " class=\"mig\"" } else { "" },
                e.id.gpu
            );
            if let Some(m) = mig {
                html_escape(
                    &mut out,
                    &format!("{} (GI {})", m.profile, m.gpu_instance_id),
                );
            }
            out.push_str("</td><td class=\"l\">");
            html_escape(&mut out, &e.id.model_name);
            out.push_str("</td><td class=\"l\">");
            html_escape(&mut out, mig.map(|m| m.uuid.as_str()).unwrap_or(&e.id.uuid));
            out.push_str("</td><td>up</td>");
            for ((_, _, unit), slot) in COLUMNS.iter().zip(&slots) {
                cell(&mut out, e, *slot, unit);
            }
            out.push_str("</tr>");
        }
    }
    out.push_str("</table></body></html>\n");
    out
}
