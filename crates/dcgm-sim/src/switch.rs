//! The scenario's NVSwitch chips as DCGM's `DCGM_FE_SWITCH` entities, and their ports as
//! `DCGM_FE_LINK` entities: which exist, each port's state, and the latest value of a switch
//! or port field at scenario time `t`. The switches carry the GPUs' NVLink traffic (each its
//! share by ports, split evenly over its up ports, so the ports add up to the switch), warm
//! with the GPUs' activity, and report the SXids of the `sxid_fatal` / `sxid_non_fatal` DCGM
//! faults (port 0 of the switch counts one fatal or non-fatal error per such fault begun);
//! each switch has a UUID of its own and a firmware version (strings). A field not modelled
//! here is "not supported".
//!
//! Pure functions of (scenario, seed, t) but for the traffic integral, which is cached; it must
//! not know about groups, watches or the wire.

use std::cell::RefCell;

use nvml_sim::integrator::Integrator;
use nvml_sim::physics;
use nvml_sim::scenario::{DcgmFaultKind, NvSwitch, Scenario};

use crate::proto::Val;

/// `DCGM_FI_DEV_NVSWITCH_VOLTAGE_MVOLT`.
pub const FI_VOLTAGE_MV: u16 = 701;
/// `DCGM_FI_DEV_NVSWITCH_POWER_VDD_WATTS`.
pub const FI_POWER_VDD_W: u16 = 705;
/// `DCGM_FI_DEV_SXID_FATAL_ERROR`: the last fatal SXid reported (0: none).
pub const FI_SXID_FATAL: u16 = 856;
/// `DCGM_FI_DEV_SXID_NON_FATAL_ERROR`: the last non-fatal SXid reported (0: none).
pub const FI_SXID_NON_FATAL: u16 = 857;
/// `DCGM_FI_DEV_NVSWITCH_TEMP_CELSIUS`, `_TEMP_SLOWDOWN_CELSIUS`, `_TEMP_SHUTDOWN_CELSIUS`.
pub const FI_TEMP: u16 = 858;
pub const FI_TEMP_SLOWDOWN: u16 = 859;
pub const FI_TEMP_SHUTDOWN: u16 = 860;
/// `DCGM_FI_DEV_NVSWITCH_THROUGHPUT_TX` / `_RX`: bytes through the switch since start.
pub const FI_THROUGHPUT_TX: u16 = 861;
pub const FI_THROUGHPUT_RX: u16 = 862;
/// `DCGM_FI_DEV_NVSWITCH_PHYSICAL_ID`, `DCGM_FI_DEV_NVSWITCH_RESET_REQUIRED`.
pub const FI_PHYSICAL_ID: u16 = 863;
pub const FI_RESET_REQUIRED: u16 = 864;

/// `DCGM_FI_DEV_NVSWITCH_UUID`, `DCGM_FI_DEV_NVSWITCH_FIRMWARE_VERSION`: strings.
pub const FI_UUID: u16 = 878;
pub const FI_FIRMWARE_VERSION: u16 = 1524;
/// The firmware version every simulated switch reports.
const FIRMWARE: &str = "96.10.6D.00.01";

/// `DCGM_FI_DEV_NVSWITCH_LINK_THROUGHPUT_TX` / `_RX`: bytes through one port since start.
pub const FI_LINK_THROUGHPUT_TX: u16 = 780;
pub const FI_LINK_THROUGHPUT_RX: u16 = 781;
/// `DCGM_FI_DEV_NVSWITCH_LINK_FATAL_ERRORS` / `_NON_FATAL_ERRORS`.
pub const FI_LINK_FATAL: u16 = 782;
pub const FI_LINK_NON_FATAL: u16 = 783;
/// `DCGM_FI_DEV_NVSWITCH_LINK_ID`, `DCGM_FI_DEV_NVSWITCH_LINK_STATUS`.
pub const FI_LINK_ID: u16 = 865;
pub const FI_LINK_STATUS: u16 = 870;

/// Ports a simulated switch chip reports (a third-generation NVSwitch has 64): those past the
/// scenario's `links` are disabled.
pub const PORTS: u32 = 64;

/// The slowdown and shutdown limits the simulated switches report, °C.
const SLOWDOWN_C: i64 = 95;
const SHUTDOWN_C: i64 = 105;
/// How much warmer a switch runs with every GPU fully active, °C.
const WARMING_C: f64 = 20.0;

/// The switches' traffic integral (channel 0: bytes the GPUs sent, 1: bytes they received).
#[derive(Debug)]
pub struct Traffic {
    integral: RefCell<Integrator>,
}

impl Default for Traffic {
    fn default() -> Self {
        Self {
            integral: RefCell::new(Integrator::new(2)),
        }
    }
}

/// The switch with DCGM entity id `id`.
pub fn find(sc: &Scenario, id: u32) -> Option<&NvSwitch> {
    sc.nvswitches.iter().find(|s| s.id == id)
}

/// The DCGM entity ids of the switches, in the scenario's order.
pub fn ids(sc: &Scenario) -> Vec<u32> {
    sc.nvswitches.iter().map(|s| s.id).collect()
}

/// The last SXid of `kind` switch `id` reports at `t` (0: none).
fn sxid(sc: &Scenario, id: u32, kind: DcgmFaultKind, t: f64) -> i64 {
    sc.dcgm_faults
        .iter()
        .filter(|f| f.active(kind, t))
        .filter_map(|f| f.sxid)
        .filter(|(sw, _)| *sw == id)
        .map(|(_, code)| i64::from(code))
        .next_back()
        .unwrap_or(0)
}

/// How many SXid faults of `kind` switch `id` has seen begin by `t` (what its port 0 counts).
fn sxids_begun(sc: &Scenario, id: u32, kind: DcgmFaultKind, t: f64) -> i64 {
    let n = sc
        .dcgm_faults
        .iter()
        .filter(|f| f.kind == kind && f.window.from <= t)
        .filter(|f| f.sxid.is_some_and(|(sw, _)| sw == id))
        .count();
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// Whether port `port` of switch `id` is down at `t` (an `nvswitch_port_down` fault).
fn port_down(sc: &Scenario, (id, port): (u32, u32), t: f64) -> bool {
    sc.dcgm_faults
        .iter()
        .any(|f| f.active(DcgmFaultKind::NvSwitchPortDown, t) && f.port == Some((id, port)))
}

/// Each port's `dcgmNvLinkLinkState_t` of switch `sw` at `t`: its `links` first ports up
/// (down while an `nvswitch_port_down` fault names one), the rest of its [`PORTS`] disabled.
pub fn port_states(sc: &Scenario, sw: &NvSwitch, t: f64) -> Vec<u32> {
    (0..sw.links.max(PORTS))
        .map(|p| {
            if p >= sw.links {
                dcgm_abi::DcgmNvLinkLinkStateDisabled
            } else if port_down(sc, (sw.id, p), t) {
                dcgm_abi::DcgmNvLinkLinkStateDown
            } else {
                dcgm_abi::DcgmNvLinkLinkStateUp
            }
        })
        .collect()
}

/// Port `port`'s part of `total` bytes split over `ports` ports: the parts add up to `total`.
fn port_share(total: i64, port: u32, ports: u32) -> i64 {
    let n = i128::from(ports.max(1));
    let t = i128::from(total);
    let part = t * i128::from(port + 1) / n - t * i128::from(port) / n;
    i64::try_from(part).unwrap_or(0)
}

impl Traffic {
    /// Bytes sent and received through every GPU's NVLink from 0 to `t`.
    fn total(&self, sc: &Scenario, seed: u64, t: f64) -> (f64, f64) {
        let v = self.integral.borrow_mut().value_at(t, |at, out| {
            out.iter_mut().for_each(|x| *x = 0.0);
            for g in &sc.gpus {
                if g.present(at) && !g.is_lost(at) {
                    let l = physics::gpu_load(sc, seed, g.index, at);
                    out[0] += l.nvlink_tx;
                    out[1] += l.nvlink_rx;
                }
            }
        });
        (
            v.first().copied().unwrap_or(0.0),
            v.get(1).copied().unwrap_or(0.0),
        )
    }

    /// The latest value of `field` of switch `id` at `t`; `None`: not supported.
    pub fn value(&self, sc: &Scenario, seed: u64, id: u32, field: u16, t: f64) -> Option<Val> {
        let sw = find(sc, id)?;
        match field {
            // Its own per switch and seed, in the form of a UUID.
            FI_UUID => {
                return Some(Val::Str(format!(
                    "SWX-5E1A{id:04X}-0000-4000-8000-{seed:012X}"
                )));
            }
            FI_FIRMWARE_VERSION => return Some(Val::Str(FIRMWARE.to_owned())),
            _ => {}
        }
        let fatal = sxid(sc, id, DcgmFaultKind::SxidFatal, t);
        Some(Val::Int(match field {
            FI_SXID_FATAL => fatal,
            FI_SXID_NON_FATAL => sxid(sc, id, DcgmFaultKind::SxidNonFatal, t),
            FI_RESET_REQUIRED => i64::from(fatal != 0),
            FI_PHYSICAL_ID => i64::from(sw.id),
            FI_VOLTAGE_MV => 850,
            FI_TEMP_SLOWDOWN => SLOWDOWN_C,
            FI_TEMP_SHUTDOWN => SHUTDOWN_C,
            FI_TEMP | FI_POWER_VDD_W => {
                let live: Vec<f64> = sc
                    .gpus
                    .iter()
                    .filter(|g| g.present(t) && !g.is_lost(t))
                    .map(|g| physics::gpu_load(sc, seed, g.index, t).activity)
                    .collect();
                let busy = live.iter().sum::<f64>() / live.len().max(1) as f64;
                if field == FI_TEMP {
                    (sw.temperature_c + WARMING_C * busy).round() as i64
                } else {
                    (25.0 + 0.5 * f64::from(sw.links) * busy).round() as i64
                }
            }
            FI_THROUGHPUT_TX | FI_THROUGHPUT_RX => {
                let all: u32 = sc.nvswitches.iter().map(|s| s.links).sum();
                let share = f64::from(sw.links) / f64::from(all.max(1));
                let (sent, received) = self.total(sc, seed, t);
                // What the switch sends is what the GPUs receive, and the other way round.
                let bytes = if field == FI_THROUGHPUT_TX {
                    received
                } else {
                    sent
                };
                (bytes * share) as i64
            }
            _ => return None,
        }))
    }
}

impl Traffic {
    /// The latest value of `field` of port `port` of switch `id` at `t`; `None`: not
    /// supported, or no such up port.
    pub fn port_value(
        &self,
        sc: &Scenario,
        seed: u64,
        (id, port): (u32, u32),
        field: u16,
        t: f64,
    ) -> Option<Val> {
        let sw = find(sc, id)?;
        if port >= sw.links || port_down(sc, (id, port), t) {
            return None;
        }
        let first = i64::from(port == 0);
        Some(Val::Int(match field {
            FI_LINK_THROUGHPUT_TX | FI_LINK_THROUGHPUT_RX => {
                let whole = if field == FI_LINK_THROUGHPUT_TX {
                    FI_THROUGHPUT_TX
                } else {
                    FI_THROUGHPUT_RX
                };
                let Some(Val::Int(total)) = self.value(sc, seed, id, whole, t) else {
                    return None;
                };
                port_share(total, port, sw.links)
            }
            FI_LINK_FATAL => first * sxids_begun(sc, id, DcgmFaultKind::SxidFatal, t),
            FI_LINK_NON_FATAL => first * sxids_begun(sc, id, DcgmFaultKind::SxidNonFatal, t),
            784..=788 | 809..=824 => 0,
            FI_LINK_ID => i64::from(port),
            FI_LINK_STATUS => i64::from(dcgm_abi::DcgmNvLinkLinkStateUp),
            _ => return None,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hgx() -> Scenario {
        nvml_sim::scenario::load("hgx-h200").unwrap()
    }

    /// An int64 value.
    fn num(v: Option<Val>) -> i64 {
        match v {
            Some(Val::Int(i)) => i,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_hgx_h200_has_four_switches_and_one_reports_an_sxid() {
        let sc = hgx();
        assert_eq!(ids(&sc), vec![0, 1, 2, 3]);
        let traffic = Traffic::default();
        let at = |id, f, t| traffic.value(&sc, 1, id, f, t);
        for id in 0..4 {
            assert_eq!(at(id, FI_SXID_FATAL, 30.0), Some(Val::Int(0)));
            let want = if id == 2 { 20034 } else { 0 };
            assert_eq!(
                at(id, FI_SXID_NON_FATAL, 30.0),
                Some(Val::Int(want)),
                "{id}"
            );
            assert_eq!(at(id, FI_SXID_NON_FATAL, 0.5), Some(Val::Int(0)), "{id}");
            assert_eq!(at(id, FI_PHYSICAL_ID, 1.0), Some(Val::Int(i64::from(id))));
        }
        assert_eq!(
            at(0, 780, 1.0),
            None,
            "a per-port field is not a switch field"
        );
        assert_eq!(at(9, FI_TEMP, 1.0), None, "no switch 9");
        let uuid = |id| match at(id, FI_UUID, 1.0) {
            Some(Val::Str(s)) => s,
            other => panic!("{other:?}"),
        };
        assert_ne!(uuid(0), uuid(1));
        assert!(matches!(at(0, FI_FIRMWARE_VERSION, 1.0), Some(Val::Str(_))));
    }

    #[test]
    fn ports_add_up_to_their_switch_and_count_its_sxids() {
        let sc = hgx();
        let traffic = Traffic::default();
        let sw = find(&sc, 2).unwrap();
        let states = port_states(&sc, sw, 1.0);
        assert_eq!(states.len() as u32, PORTS.max(sw.links));
        let up = states
            .iter()
            .filter(|s| **s == dcgm_abi::DcgmNvLinkLinkStateUp)
            .count();
        assert_eq!(up as u32, sw.links);
        for (port_f, switch_f) in [
            (FI_LINK_THROUGHPUT_TX, FI_THROUGHPUT_TX),
            (FI_LINK_THROUGHPUT_RX, FI_THROUGHPUT_RX),
        ] {
            let whole = num(traffic.value(&sc, 1, 2, switch_f, 20.0));
            let sum: i64 = (0..sw.links)
                .map(|p| num(traffic.port_value(&sc, 1, (2, p), port_f, 20.0)))
                .sum();
            assert!(whole > 0);
            assert_eq!(sum, whole);
        }
        // Switch 2 reports a non-fatal SXid from 2 s: its port 0 counts it (for good), no
        // other port.
        let at = |p, f, t| traffic.port_value(&sc, 1, (2, p), f, t);
        assert_eq!(at(0, FI_LINK_NON_FATAL, 30.0), Some(Val::Int(1)));
        assert_eq!(at(0, FI_LINK_NON_FATAL, 4000.0), Some(Val::Int(1)));
        assert_eq!(at(0, FI_LINK_NON_FATAL, 0.5), Some(Val::Int(0)));
        assert_eq!(at(1, FI_LINK_NON_FATAL, 30.0), Some(Val::Int(0)));
        assert_eq!(at(0, FI_LINK_FATAL, 30.0), Some(Val::Int(0)));
        assert_eq!(at(sw.links, FI_LINK_ID, 1.0), None, "a disabled port");
        assert_eq!(at(3, FI_LINK_ID, 1.0), Some(Val::Int(3)));
    }

    #[test]
    fn throughput_grows_and_temperature_stays_in_range() {
        let sc = hgx();
        let traffic = Traffic::default();
        let mut last = 0;
        for s in 1..20 {
            let t = f64::from(s) * 3.0;
            let tx = num(traffic.value(&sc, 1, 1, FI_THROUGHPUT_TX, t));
            assert!(tx > last, "{tx} after {last} at {t}");
            last = tx;
            let c = num(traffic.value(&sc, 1, 1, FI_TEMP, t));
            assert!((40..SLOWDOWN_C).contains(&c), "{c}");
        }
    }
}
