//! `DCGM_EXP_GPU_HEALTH_STATUS` computed from NVML, for a node without a DCGM hostengine:
//! each reason of the verdict is put under the DCGM health watch that would report it, with
//! the `DCGM_FR_*` error code DCGM uses for it, in dcgm-exporter's shape (the GPU's eleven
//! watches, each 0 pass, 10 warn or 20 fail, `ALL` the worst). The mapping is documented in
//! docs/health.md.
//!
//! Pure: it must not read NVML or DCGM.

use dcgm_abi::{
    DCGM_FR_OK, DCGM_HEALTH_RESULT_FAIL, DCGM_HEALTH_RESULT_PASS, DCGM_HEALTH_RESULT_WARN,
    GPU_WATCHES, fr_name, watch_name,
};

use crate::snapshot::{ActiveReason, HealthWatch, Reason, Verdict};

/// The watch and the `DCGM_FR_*` code of a reason; `None` for reasons no DCGM watch covers
/// (an application's Xid, an Xid the table does not know, DCGM's own watches).
pub fn watch_of(r: &ActiveReason) -> Option<(&'static str, u32)> {
    Some(match r.reason {
        Reason::GpuLost => ("PCIE", 120),
        Reason::XidHardware if r.xid == Some(79) => ("PCIE", 120),
        Reason::XidHardware => ("SM", 101),
        Reason::XidMemory => ("MEM", 101),
        Reason::XidNvlink => ("NVLINK", 101),
        Reason::XidDriver => ("DRIVER", 101),
        Reason::XidApplication | Reason::XidUnknown => return None,
        Reason::EccDbe => ("MEM", 4),
        Reason::RowRemapPending => ("MEM", 85),
        Reason::RowRemapFailed => ("MEM", 80),
        Reason::ThermalSlowdown => ("THERMAL", 10),
        Reason::OverSlowdownTemp => ("THERMAL", 42),
        Reason::PowerBrake | Reason::HwSlowdown => ("POWER", 12),
        Reason::NvlinkDown => ("NVLINK", 14),
        Reason::NvlinkBer => ("NVLINK", 119),
        Reason::FabricUnhealthy | Reason::FabricDegraded => ("NVLINK", 123),
        Reason::RecoveryReset => ("DRIVER", 125),
        Reason::RecoveryReboot => ("DRIVER", 126),
        Reason::RecoveryDrainP2p => ("DRIVER", 127),
        Reason::RecoveryDrainAndReset => ("DRIVER", 128),
        Reason::RecoveryOther => ("DRIVER", 1),
        Reason::DcgmWatchWarning | Reason::DcgmWatchFailure => return None,
    })
}

fn result(v: Verdict) -> u32 {
    match v {
        Verdict::Ok => DCGM_HEALTH_RESULT_PASS,
        Verdict::Warning => DCGM_HEALTH_RESULT_WARN,
        Verdict::Critical => DCGM_HEALTH_RESULT_FAIL,
    }
}

/// The eleven watches of a GPU whose verdict has `reasons` (worst first): a watch takes the
/// first (worst) reason mapped to it; `ALL` takes the worst of all.
pub fn from_reasons(reasons: &[ActiveReason]) -> Vec<HealthWatch> {
    let mut worst: Option<HealthWatch> = None;
    let mut out: Vec<HealthWatch> = GPU_WATCHES
        .iter()
        .filter_map(|w| watch_name(*w))
        .filter(|w| *w != "ALL")
        .map(|watch| {
            let hit = reasons.iter().find_map(|r| {
                watch_of(r)
                    .filter(|(w, _)| *w == watch)
                    .map(|(_, c)| (r, c))
            });
            let w = match hit {
                Some((r, code)) => HealthWatch {
                    watch,
                    code: fr_name(code),
                    result: result(r.severity),
                },
                None => HealthWatch {
                    watch,
                    code: fr_name(DCGM_FR_OK),
                    result: DCGM_HEALTH_RESULT_PASS,
                },
            };
            if worst.as_ref().is_none_or(|b| w.result > b.result) {
                worst = Some(w.clone());
            }
            w
        })
        .collect();
    let all = worst.map_or_else(
        || HealthWatch {
            watch: "ALL",
            code: fr_name(DCGM_FR_OK),
            result: DCGM_HEALTH_RESULT_PASS,
        },
        |w| HealthWatch { watch: "ALL", ..w },
    );
    out.push(all);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Action;

    fn reason(reason: Reason, severity: Verdict) -> ActiveReason {
        ActiveReason {
            reason,
            severity,
            xid: None,
            gpu_instance_id: None,
            message: String::new(),
            action: Action::Watch,
            since_unix: 0.0,
            last_seen_unix: 0.0,
            present: true,
        }
    }

    fn get<'a>(w: &'a [HealthWatch], name: &str) -> (&'a str, u32) {
        let w = w.iter().find(|w| w.watch == name).unwrap();
        (&w.code, w.result)
    }

    #[test]
    fn a_healthy_gpu_passes_every_watch_in_dcgm_exporters_order() {
        let w = from_reasons(&[]);
        assert_eq!(w.len(), 11);
        assert_eq!(w.last().unwrap().watch, "ALL");
        assert!(w.iter().all(|w| w.result == 0 && w.code == "DCGM_FR_OK"));
    }

    #[test]
    fn reasons_go_under_their_watch_and_all_takes_the_worst() {
        let w = from_reasons(&[
            reason(Reason::EccDbe, Verdict::Critical),
            reason(Reason::RowRemapPending, Verdict::Warning),
            reason(Reason::PowerBrake, Verdict::Warning),
            reason(Reason::XidApplication, Verdict::Warning),
        ]);
        assert_eq!(get(&w, "MEM"), ("DCGM_FR_VOLATILE_DBE_DETECTED", 20));
        assert_eq!(get(&w, "POWER"), ("DCGM_FR_CLOCK_THROTTLE_POWER", 10));
        assert_eq!(get(&w, "ALL"), ("DCGM_FR_VOLATILE_DBE_DETECTED", 20));
        assert_eq!(get(&w, "SM"), ("DCGM_FR_OK", 0));
        let lost = from_reasons(&[reason(Reason::GpuLost, Verdict::Critical)]);
        assert_eq!(get(&lost, "PCIE"), ("DCGM_FR_FALLEN_OFF_BUS", 20));
    }
}
