//! The simulated health module: what `dcgmHealthCheck` reports for one GPU at a scenario time,
//! from the NVML simulator's fault timeline, with DCGM's mapping of each condition to a watch
//! (`DCGM_HEALTH_WATCH_*`), a result (warn or fail) and a `DCGM_FR_*` code.
//!
//! As DCGM 4.x's health module does: current state for volatile double-bit ECC errors, row
//! remapping failures, links down (not on a GPU in MIG mode, where DCGM treats them as
//! disabled) and a GPU off the bus; the last minute for Xid errors and thermal slowdown
//! (`dcgmHealthCheck` looks back one minute). Owns no state: the watches per group are the
//! `engine`'s.

use dcgm_abi as abi;
use nvml_sim::scenario::{Counter, Gpu, Scenario};

use crate::proto::{Entity, Incident};

/// `nvmlEventTypeXidCriticalError`, the event type of an Xid on the timeline.
const XID_EVENT: u64 = 0x8;

/// How far back a check looks for events (DCGM: one minute before now).
pub const LOOKBACK_S: f64 = 60.0;

/// (watch, result, `DCGM_FR_*` code) of an Xid DCGM's health module knows; `None` for others.
/// Xids reported under `ALL` are watched whatever systems the group asked for.
pub fn xid_incident(xid: u64) -> Option<(u32, u32, u32)> {
    use abi::{
        DCGM_FR_CLOCKS_EVENT_POWER as POWER_EV, DCGM_FR_CLOCKS_EVENT_THERMAL as THERMAL_EV,
        DCGM_FR_FALLEN_OFF_BUS as OFF_BUS, DCGM_FR_PENDING_PAGE_RETIREMENTS as PAGES,
        DCGM_FR_ROW_REMAP_FAILURE as REMAP, DCGM_FR_UNCONTAINED_ERROR as UNCONTAINED,
        DCGM_FR_XID_ERROR as XID, DCGM_HEALTH_RESULT_FAIL as FAIL, DCGM_HEALTH_RESULT_WARN as WARN,
        DCGM_HEALTH_WATCH_ALL as ALL, DCGM_HEALTH_WATCH_MEM as MEM,
        DCGM_HEALTH_WATCH_NVLINK as NVLINK, DCGM_HEALTH_WATCH_PCIE as PCIE,
        DCGM_HEALTH_WATCH_POWER as POWER, DCGM_HEALTH_WATCH_THERMAL as THERMAL,
    };
    Some(match xid {
        48 | 74 | 119 | 120 | 140 => (ALL, FAIL, XID),
        79 => (ALL, FAIL, OFF_BUS),
        95 => (ALL, FAIL, UNCONTAINED),
        31 | 32 | 43 => (MEM, WARN, XID),
        63 => (MEM, WARN, PAGES),
        64 => (MEM, FAIL, REMAP),
        38 | 39 | 42 => (PCIE, WARN, XID),
        60 => (THERMAL, WARN, THERMAL_EV),
        61 | 62 => (THERMAL, WARN, XID),
        54 | 56 | 58 | 78 => (POWER, WARN, XID),
        57 => (POWER, WARN, POWER_EV),
        67 | 73 | 121 | 137 => (NVLINK, WARN, XID),
        _ => return None,
    })
}

/// The incidents of GPU `gpu` at `t`, for the watches in `systems` (a `dcgmHealthSystems_t`
/// mask; `ALL`-system incidents always count).
pub fn incidents(sc: &Scenario, gpu: &Gpu, systems: u32, t: f64) -> Vec<Incident> {
    let entity = Entity {
        group: abi::DCGM_FE_GPU,
        id: gpu.index as u32,
    };
    let mut out = Vec::new();
    let mut add = |system: u32, health: u32, code: u32, message: String| {
        if system == abi::DCGM_HEALTH_WATCH_ALL || systems & system != 0 {
            out.push(Incident {
                system,
                health,
                code,
                message,
                entity,
            });
        }
    };
    let g = gpu.index;
    if gpu.is_lost(t) {
        add(
            abi::DCGM_HEALTH_WATCH_ALL,
            abi::DCGM_HEALTH_RESULT_FAIL,
            abi::DCGM_FR_FALLEN_OFF_BUS,
            format!("GPU {g} has fallen off the bus"),
        );
    }
    let from = t - LOOKBACK_S;
    for e in sc
        .events
        .iter()
        .filter(|e| e.gpu == g && e.event_type == XID_EVENT && e.t > from && e.t <= t)
    {
        if let Some((system, health, code)) = xid_incident(e.data) {
            add(system, health, code, format!("Xid {} on GPU {g}", e.data));
        }
    }
    let dbe = gpu.counter(Counter::EccDbe, t);
    if dbe > 0 {
        add(
            abi::DCGM_HEALTH_WATCH_MEM,
            abi::DCGM_HEALTH_RESULT_FAIL,
            abi::DCGM_FR_VOLATILE_DBE_DETECTED,
            format!("{dbe} volatile double-bit ECC error(s) on GPU {g}"),
        );
    }
    if gpu.counter(Counter::RemapFailure, t) > 0 {
        add(
            abi::DCGM_HEALTH_WATCH_MEM,
            abi::DCGM_HEALTH_RESULT_FAIL,
            abi::DCGM_FR_ROW_REMAP_FAILURE,
            format!("row remapping failed on GPU {g}"),
        );
    }
    if !gpu.mig_enabled {
        for d in gpu.links_down.iter().filter(|d| d.window.contains(t)) {
            add(
                abi::DCGM_HEALTH_WATCH_NVLINK,
                abi::DCGM_HEALTH_RESULT_FAIL,
                abi::DCGM_FR_NVLINK_DOWN,
                format!("NVLink {} of GPU {g} is down", d.link),
            );
        }
    }
    let slowdown = gpu.model.slowdown_c;
    if gpu
        .thermal
        .iter()
        .any(|w| w.celsius >= slowdown && w.window.from <= t && w.window.until > from)
    {
        add(
            abi::DCGM_HEALTH_WATCH_THERMAL,
            abi::DCGM_HEALTH_RESULT_WARN,
            abi::DCGM_FR_CLOCKS_EVENT_THERMAL,
            format!("GPU {g} slowed its clocks for temperature in the last minute"),
        );
    }
    out
}

/// The worst result of `incidents` (pass when there are none).
pub fn overall(incidents: &[Incident]) -> u32 {
    incidents
        .iter()
        .map(|i| i.health)
        .max()
        .unwrap_or(abi::DCGM_HEALTH_RESULT_PASS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(faults: &str) -> Scenario {
        let text = format!("name = \"h\"\n[[gpus]]\nmodel = \"A100-SXM4-40GB\"\n{faults}");
        match nvml_sim::scenario::parse(&text, "test", "h") {
            Ok(sc) => sc,
            Err(e) => panic!("{}", e.message()),
        }
    }

    fn codes(sc: &Scenario, t: f64) -> Vec<(u32, u32, u32)> {
        incidents(sc, &sc.gpus[0], abi::DCGM_HEALTH_WATCH_ALL, t)
            .into_iter()
            .map(|i| (i.system, i.health, i.code))
            .collect()
    }

    #[test]
    fn faults_map_to_dcgms_watches_and_codes() {
        let sc = scenario(
            "[[faults]]\nat = 10\ngpu = 0\nkind = \"nvlink_down\"\nlink = 2\nuntil = 20\n\
             [[faults]]\nat = 30\ngpu = 0\nkind = \"xid\"\nxid = 48\n\
             [[faults]]\nat = 200\ngpu = 0\nkind = \"ecc\"\ndbe = 1\n",
        );
        assert!(codes(&sc, 5.0).is_empty());
        assert_eq!(
            codes(&sc, 15.0),
            vec![(
                abi::DCGM_HEALTH_WATCH_NVLINK,
                abi::DCGM_HEALTH_RESULT_FAIL,
                abi::DCGM_FR_NVLINK_DOWN
            )]
        );
        let xid = (
            abi::DCGM_HEALTH_WATCH_ALL,
            abi::DCGM_HEALTH_RESULT_FAIL,
            abi::DCGM_FR_XID_ERROR,
        );
        assert_eq!(codes(&sc, 31.0), vec![xid]);
        assert_eq!(codes(&sc, 89.0), vec![xid], "an Xid counts for a minute");
        assert!(codes(&sc, 91.0).is_empty());
        assert_eq!(
            codes(&sc, 300.0),
            vec![(
                abi::DCGM_HEALTH_WATCH_MEM,
                abi::DCGM_HEALTH_RESULT_FAIL,
                abi::DCGM_FR_VOLATILE_DBE_DETECTED
            )]
        );
        // A group watching only PCIe sees the devastating Xid, not the link.
        let only_pcie = |t| incidents(&sc, &sc.gpus[0], abi::DCGM_HEALTH_WATCH_PCIE, t).len();
        assert_eq!((only_pcie(15.0), only_pcie(31.0)), (0, 1));
        assert_eq!(overall(&incidents(&sc, &sc.gpus[0], u32::MAX, 300.0)), 20);
    }
}
