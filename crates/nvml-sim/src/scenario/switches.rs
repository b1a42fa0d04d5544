//! The NVSwitch chips of a scenario (`[[nvswitches]]`): what the simulated DCGM shows as its
//! `DCGM_FE_SWITCH` entities. NVML shows no NVSwitch to a GPU exporter, so the NVML simulator
//! validates the section with the rest of the file and otherwise ignores it; `crates/dcgm-sim`
//! serves it (temperatures, throughput, and the SXid fields from `[[dcgm_faults]]`).
//!
//! Owns the section's schema and its validation; it must not compute values over time.

use serde::Deserialize;
use toml::Spanned;

use super::{Ctx, ScenarioError};

/// The most NVSwitch chips a scenario may declare (an HGX A100 board has 6).
pub const MAX_SWITCHES: usize = 16;
/// Ports of a switch wired to GPUs when the file names none (an HGX H100/H200 board's
/// smaller switches: 4 links to each of 8 GPUs).
pub const DEFAULT_LINKS: u32 = 32;
/// The most NVLink ports one switch chip has (a third-generation NVSwitch has 64).
pub const MAX_LINKS: u32 = 72;
/// The core temperature of an idle switch unless the file names one, °C.
pub const DEFAULT_TEMPERATURE_C: f64 = 42.0;

/// One `[[nvswitches]]` entry as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSwitch {
    id: Option<Spanned<u32>>,
    links: Option<Spanned<u32>>,
    temperature_c: Option<Spanned<f64>>,
}

/// A validated NVSwitch chip.
#[derive(Debug, Clone, PartialEq)]
pub struct NvSwitch {
    /// DCGM's entity id (default: its place in the file, from 0).
    pub id: u32,
    /// Ports wired to GPUs on the board (all up: they carry the GPUs' NVLink traffic).
    pub links: u32,
    /// Core temperature at rest, °C (it rises with the GPUs' NVLink traffic).
    pub temperature_c: f64,
}

pub(super) fn resolve_switches(
    ctx: &Ctx<'_>,
    raw: &[Spanned<RawSwitch>],
) -> Result<Vec<NvSwitch>, ScenarioError> {
    if raw.len() > MAX_SWITCHES {
        return Err(ctx.err(
            None,
            format!("{} nvswitches declared, at most {MAX_SWITCHES}", raw.len()),
        ));
    }
    let mut out: Vec<NvSwitch> = Vec::with_capacity(raw.len());
    for (i, r) in raw.iter().enumerate() {
        let s = r.get_ref();
        let id = s.id.as_ref().map_or(i as u32, |v| *v.get_ref());
        if out.iter().any(|o| o.id == id) {
            let span = s.id.as_ref().map_or_else(|| r.span(), Spanned::span);
            return Err(ctx.err(Some(span), format!("nvswitch id {id} is declared twice")));
        }
        let links = match &s.links {
            Some(v) if (1..=MAX_LINKS).contains(v.get_ref()) => *v.get_ref(),
            Some(v) => {
                return Err(ctx.err(
                    Some(v.span()),
                    format!("links = {} must be 1 to {MAX_LINKS}", v.get_ref()),
                ));
            }
            None => DEFAULT_LINKS,
        };
        let temperature_c = match &s.temperature_c {
            Some(v) if (0.0..=120.0).contains(v.get_ref()) => *v.get_ref(),
            Some(v) => {
                return Err(ctx.err(
                    Some(v.span()),
                    format!("temperature_c = {} must be 0 to 120 °C", v.get_ref()),
                ));
            }
            None => DEFAULT_TEMPERATURE_C,
        };
        out.push(NvSwitch {
            id,
            links,
            temperature_c,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    const GPUS: &str = "[[gpus]]\nmodel = \"L4\"\n";

    #[test]
    fn switches_take_their_place_as_id_unless_named() {
        let text = format!(
            "{GPUS}[[nvswitches]]\n[[nvswitches]]\nid = 9\nlinks = 40\ntemperature_c = 50\n"
        );
        let sc = parse(&text, "scenario file /x.toml", "x").unwrap();
        let ids: Vec<u32> = sc.nvswitches.iter().map(|s| s.id).collect();
        assert_eq!(ids, vec![0, 9]);
        assert_eq!(sc.nvswitches[1].links, 40);
        assert_eq!(sc.nvswitches[0].links, super::DEFAULT_LINKS);
    }

    #[test]
    fn switch_errors_name_the_line() {
        let e = parse(
            &format!("{GPUS}[[nvswitches]]\nid = 1\n[[nvswitches]]\nid = 1\n"),
            "scenario file /x.toml",
            "x",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 6") && e.contains("declared twice"), "{e}");
        let e = parse(
            &format!("{GPUS}[[nvswitches]]\nlinks = 0\n"),
            "scenario file /x.toml",
            "x",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("line 4") && e.contains("links = 0"), "{e}");
    }
}
