//! The health rules: one GPU's signals in one tick ([`Signals`]) to what is wrong with it
//! now, each a `snapshot::ActiveReason` with its reason, severity, message and recommended
//! action, present and seen at the tick's time (or an Xid's own), for `damping` to hold.
//!
//! Pure: no state, no time but the tick's; the flap damping is `damping`'s. It must not read
//! NVML or the snapshot (`signals` gathers what it needs).

use dcgm_abi::{DCGM_HEALTH_RESULT_FAIL, DCGM_HEALTH_RESULT_WARN};

use super::xid::classify;
use crate::gpu::nvlink::EFFECTIVE_BER_LIMIT;
use crate::gpu::reader::{
    CLOCK_EVENT_REASONS, HW_POWER_BRAKE, HW_SLOWDOWN, HW_THERMAL, SW_THERMAL,
};
use crate::snapshot::{
    Action, ActiveReason, HealthWatch, Reason, ShownSignals, Verdict, XidCounts,
};

/// What the model knows about one physical GPU in one tick; `None` where the signal was not
/// read (not supported, or the GPU is lost).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Signals {
    /// NVML answers for the GPU.
    pub up: bool,
    /// The whole GPU's Xid codes seen since start: (code, occurrences, Unix time last seen);
    /// an application Xid NVML reported with a MIG GPU instance is not among them.
    pub xids: XidCounts,
    /// Application Xids NVML reported with a MIG GPU instance, per GPU instance id: they
    /// are that instance's (docs/health.md, "MIG instances").
    pub instance_xids: Vec<(u32, XidCounts)>,
    /// The signals `/status` shows, as read (whether the counters file exports their fields
    /// or not; `health::shown` keeps what it exports). The rules judge the ECC errors, row
    /// remaps, NVLink and fabric health here; the last Xid, the recent Xids and the remapped
    /// rows are only shown (the rules judge `xids`). Its throttle reasons stay `None` here:
    /// the clock events are held once, as `clock_events`, and `health::shown` names them.
    pub shown: ShownSignals,
    /// The clock-event reasons bit mask: what the rules judge, and what the shown throttle
    /// reasons are named from.
    pub clock_events: Option<u64>,
    /// Temperature, °C.
    pub temp: Option<f64>,
    /// Slowdown temperature, °C.
    pub slowdown_temp: Option<f64>,
    /// The fabric registration completed with an error.
    pub fabric_failed: bool,
    /// NVML's recovery action.
    pub recovery_action: Option<u32>,
    /// DCGM's health watches, when DCGM answered for the GPU.
    pub dcgm: Option<Vec<HealthWatch>>,
}

/// One thing wrong with a GPU in one tick, seen at `seen_at` (the tick's time, or an Xid's
/// own): present, its episode starting and last seen then (`damping` keeps the start of an
/// episode that goes on).
fn seen(
    reason: Reason,
    severity: Verdict,
    action: Action,
    message: String,
    seen_at: f64,
) -> ActiveReason {
    ActiveReason {
        reason,
        severity,
        xid: None,
        gpu_instance_id: None,
        message,
        action,
        since_unix: seen_at,
        last_seen_unix: seen_at,
        present: true,
    }
}

fn links(l: &[u32]) -> String {
    l.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
}

/// What is wrong with the GPU at `now`; Xids count when seen within `xid_window` seconds.
/// One family of signals after the other, the reasons coming out in this order: whether it
/// answers, its memory, its clocks and temperature, its interconnect, NVML's recovery action,
/// DCGM's health watches, then the Xids.
pub fn observe(s: &Signals, now: f64, xid_window: f64) -> Vec<ActiveReason> {
    let mut found = Found {
        now,
        out: Vec::new(),
    };
    if !s.up {
        found.add(
            Reason::GpuLost,
            Verdict::Critical,
            Action::RebootNode,
            "lost: NVML no longer answers for this GPU (fallen off the bus)".into(),
        );
    }
    memory(s, &mut found);
    clocks(s, &mut found);
    interconnect(s, &mut found);
    recovery_action(s, &mut found);
    dcgm_watches(s, &mut found);
    let mut out = found.out;
    xid_observations(&s.xids, None, now, xid_window, &mut out);
    for (gi, codes) in &s.instance_xids {
        xid_observations(codes, Some(*gi), now, xid_window, &mut out);
    }
    out
}

/// The reasons found so far in one tick, each seen at the tick's time `now`.
struct Found {
    now: f64,
    out: Vec<ActiveReason>,
}

impl Found {
    fn add(&mut self, reason: Reason, severity: Verdict, action: Action, message: String) {
        self.out
            .push(seen(reason, severity, action, message, self.now));
    }
}

/// The memory: double-bit ECC errors and row remapping (failed, or pending a reset).
fn memory(s: &Signals, found: &mut Found) {
    use Verdict::{Critical, Warning};
    if s.shown.ecc_dbe.is_some_and(|v| v > 0.0) {
        let n = s.shown.ecc_dbe.unwrap_or_default();
        found.add(
            Reason::EccDbe,
            Critical,
            Action::ResetGpu,
            format!("{n} double-bit ECC error(s) since the driver loaded"),
        );
    }
    if s.shown.remap_failure.is_some_and(|v| v > 0.0) {
        found.add(
            Reason::RowRemapFailed,
            Critical,
            Action::ServiceGpu,
            "row remap failed: the GPU needs service".into(),
        );
    }
    if s.shown.remap_pending.is_some_and(|v| v > 0.0) {
        found.add(
            Reason::RowRemapPending,
            Warning,
            Action::ResetGpu,
            "row remap pending: reset the GPU to apply it".into(),
        );
    }
}

/// The clocks and temperature: the clock-event reasons that slow the GPU down (thermal, the
/// power brake, other hardware slowdown), and a temperature at or above the slowdown one.
fn clocks(s: &Signals, found: &mut Found) {
    use Verdict::Warning;
    if let Some(bits) = s.clock_events {
        // The message names the active bits as dcgm-exporter does (`throttled: hw_thermal`).
        let named = |mask: u64| {
            let names: Vec<&str> = CLOCK_EVENT_REASONS
                .iter()
                .filter(|(bit, _)| bits & mask & bit != 0)
                .map(|(_, name)| *name)
                .collect();
            format!("throttled: {}", names.join(", "))
        };
        if bits & (SW_THERMAL | HW_THERMAL) != 0 {
            let m = named(SW_THERMAL | HW_THERMAL);
            found.add(Reason::ThermalSlowdown, Warning, Action::CheckCooling, m);
        }
        if bits & HW_POWER_BRAKE != 0 {
            let m = named(HW_SLOWDOWN | HW_POWER_BRAKE);
            found.add(Reason::PowerBrake, Warning, Action::CheckPower, m);
        }
        if bits & HW_SLOWDOWN != 0 && bits & (HW_THERMAL | HW_POWER_BRAKE) == 0 {
            let m = named(HW_SLOWDOWN);
            found.add(Reason::HwSlowdown, Warning, Action::CheckPower, m);
        }
    }
    if let (Some(t), Some(limit)) = (s.temp, s.slowdown_temp)
        && limit > 0.0
        && t >= limit
    {
        found.add(
            Reason::OverSlowdownTemp,
            Warning,
            Action::CheckCooling,
            format!("{t:.0} °C: at or above the slowdown temperature ({limit:.0} °C)"),
        );
    }
}

/// The interconnect: NVLink links down or with a bit error rate past FEC, and the NVSwitch
/// fabric (its registration, its health).
fn interconnect(s: &Signals, found: &mut Found) {
    use Verdict::{Critical, Warning};
    if !s.shown.nvlink_down.is_empty() {
        found.add(
            Reason::NvlinkDown,
            Warning,
            Action::CheckNvlink,
            format!("NVLink link(s) down: {}", links(&s.shown.nvlink_down)),
        );
    }
    if !s.shown.nvlink_ber_high.is_empty() {
        found.add(
            Reason::NvlinkBer,
            Warning,
            Action::CheckNvlink,
            format!(
                "NVLink errors get past FEC (bit error rate above {EFFECTIVE_BER_LIMIT:e}) on link(s): {}",
                links(&s.shown.nvlink_ber_high)
            ),
        );
    }
    if s.fabric_failed {
        found.add(
            Reason::FabricUnhealthy,
            Critical,
            Action::CheckNvlink,
            "NVSwitch fabric registration failed".into(),
        );
    }
    match s.shown.fabric_health {
        Some(2) => found.add(
            Reason::FabricUnhealthy,
            Critical,
            Action::CheckNvlink,
            "NVSwitch fabric unhealthy".into(),
        ),
        Some(3) => found.add(
            Reason::FabricDegraded,
            Warning,
            Action::CheckNvlink,
            "NVSwitch fabric at limited capacity".into(),
        ),
        _ => {}
    }
}

/// NVML's recovery action, where it asks for one (non-zero).
fn recovery_action(s: &Signals, found: &mut Found) {
    if let Some(a) = s.recovery_action.filter(|a| *a != 0) {
        let (reason, severity, action) = recovery(a);
        found.add(
            reason,
            severity,
            action,
            // The cause only: every surface appends the action's own words after it.
            format!("NVML's recovery-action field is {a}"),
        );
    }
}

/// DCGM's health watches, where DCGM answered for the GPU: the failing ones as one reason,
/// the warning ones as another (`ALL`, the worst of the others, is left out).
fn dcgm_watches(s: &Signals, found: &mut Found) {
    use Verdict::{Critical, Warning};
    let Some(watches) = &s.dcgm else {
        return;
    };
    for (result, reason, severity) in [
        (DCGM_HEALTH_RESULT_FAIL, Reason::DcgmWatchFailure, Critical),
        (DCGM_HEALTH_RESULT_WARN, Reason::DcgmWatchWarning, Warning),
    ] {
        let hit: Vec<String> = watches
            .iter()
            .filter(|w| w.watch != "ALL" && w.result == result)
            .map(|w| format!("{} ({})", w.watch, w.code))
            .collect();
        if !hit.is_empty() {
            let action = if severity == Critical {
                Action::ResetGpu
            } else {
                Action::Watch
            };
            found.add(
                reason,
                severity,
                action,
                format!("DCGM health watch(es): {}", hit.join(", ")),
            );
        }
    }
}

/// The Xids of `codes` seen within `xid_window` seconds of `now`, on the whole GPU or on GPU
/// instance `gi`.
fn xid_observations(
    codes: &[(u64, u64, f64)],
    gi: Option<u32>,
    now: f64,
    xid_window: f64,
    out: &mut Vec<ActiveReason>,
) {
    for (code, n, last) in codes {
        if *n == 0 || now - last > xid_window {
            continue;
        }
        let info = classify(*code);
        let on = gi
            .map(|gi| format!(" on MIG instance {gi}"))
            .unwrap_or_default();
        let message = format!(
            "Xid {code}{on}: {} (×{n}, last {:.0} s ago)",
            info.meaning,
            (now - last).max(0.0)
        );
        out.push(ActiveReason {
            xid: Some(*code),
            gpu_instance_id: gi,
            ..seen(
                info.class.reason(),
                info.severity,
                info.action,
                message,
                *last,
            )
        });
    }
}

/// The reason, severity and action of a non-zero recovery action
/// (`nvmlDeviceGpuRecoveryAction_t`).
pub fn recovery(action: u32) -> (Reason, Verdict, Action) {
    match action {
        1 => (Reason::RecoveryReset, Verdict::Critical, Action::ResetGpu),
        2 => (
            Reason::RecoveryReboot,
            Verdict::Critical,
            Action::RebootNode,
        ),
        3 => (Reason::RecoveryDrainP2p, Verdict::Warning, Action::DrainP2p),
        4 => (
            Reason::RecoveryDrainAndReset,
            Verdict::Critical,
            Action::DrainAndReset,
        ),
        // 6: reset the GPU's PCIe bus; 7: reboot the system; 5 (IMEX domain) and later ones.
        6 => (Reason::RecoveryOther, Verdict::Critical, Action::ResetGpu),
        7 => (Reason::RecoveryOther, Verdict::Critical, Action::RebootNode),
        _ => (
            Reason::RecoveryOther,
            Verdict::Critical,
            Action::CheckNvlink,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy() -> Signals {
        Signals {
            up: true,
            ..Signals::default()
        }
    }

    fn showing(shown: ShownSignals) -> Signals {
        Signals { shown, ..healthy() }
    }

    fn reasons(s: &Signals) -> Vec<(Reason, Verdict)> {
        observe(s, 100.0, 60.0)
            .into_iter()
            .map(|o| (o.reason, o.severity))
            .collect()
    }

    /// A recovery action's message names the field and its value, not the action, which every
    /// surface appends (`message: action`): "reset the GPU" once, not twice.
    #[test]
    fn a_recovery_actions_message_does_not_repeat_the_action() {
        for a in 1..=4 {
            let o = observe(
                &Signals {
                    recovery_action: Some(a),
                    ..healthy()
                },
                100.0,
                60.0,
            );
            let [o] = o.as_slice() else {
                panic!("{a}: {o:?}")
            };
            assert_eq!(o.message, format!("NVML's recovery-action field is {a}"));
            let shown = format!("{}: {}", o.message, o.action.words());
            assert_eq!(shown.matches(o.action.words()).count(), 1, "{shown}");
        }
    }

    #[test]
    fn a_healthy_gpu_has_nothing_to_say() {
        assert!(observe(&healthy(), 100.0, 60.0).is_empty());
        let s = Signals {
            shown: ShownSignals {
                ecc_dbe: Some(0.0),
                remap_pending: Some(0.0),
                remap_failure: Some(0.0),
                fabric_health: Some(1),
                ..ShownSignals::default()
            },
            clock_events: Some(0x1 | 0x4),
            temp: Some(40.0),
            slowdown_temp: Some(87.0),
            recovery_action: Some(0),
            ..healthy()
        };
        assert!(observe(&s, 100.0, 60.0).is_empty());
    }

    #[test]
    fn each_input_gives_its_reason() {
        use Reason::*;
        use Verdict::*;
        let cases: Vec<(Signals, Vec<(Reason, Verdict)>)> = vec![
            (Signals::default(), vec![(GpuLost, Critical)]),
            (
                showing(ShownSignals {
                    ecc_dbe: Some(1.0),
                    ..ShownSignals::default()
                }),
                vec![(EccDbe, Critical)],
            ),
            (
                showing(ShownSignals {
                    remap_pending: Some(1.0),
                    ..ShownSignals::default()
                }),
                vec![(RowRemapPending, Warning)],
            ),
            (
                showing(ShownSignals {
                    remap_failure: Some(1.0),
                    ..ShownSignals::default()
                }),
                vec![(RowRemapFailed, Critical)],
            ),
            (
                Signals {
                    clock_events: Some(0x40 | 0x20 | 0x8),
                    ..healthy()
                },
                vec![(ThermalSlowdown, Warning)],
            ),
            (
                Signals {
                    clock_events: Some(0x80 | 0x8),
                    ..healthy()
                },
                vec![(PowerBrake, Warning)],
            ),
            (
                Signals {
                    clock_events: Some(0x8),
                    ..healthy()
                },
                vec![(HwSlowdown, Warning)],
            ),
            (
                Signals {
                    temp: Some(92.0),
                    slowdown_temp: Some(87.0),
                    ..healthy()
                },
                vec![(OverSlowdownTemp, Warning)],
            ),
            (
                showing(ShownSignals {
                    nvlink_down: vec![3],
                    ..ShownSignals::default()
                }),
                vec![(NvlinkDown, Warning)],
            ),
            (
                showing(ShownSignals {
                    nvlink_ber_high: vec![4],
                    ..ShownSignals::default()
                }),
                vec![(NvlinkBer, Warning)],
            ),
            (
                Signals {
                    fabric_failed: true,
                    ..healthy()
                },
                vec![(FabricUnhealthy, Critical)],
            ),
            (
                showing(ShownSignals {
                    fabric_health: Some(2),
                    ..ShownSignals::default()
                }),
                vec![(FabricUnhealthy, Critical)],
            ),
            (
                showing(ShownSignals {
                    fabric_health: Some(3),
                    ..ShownSignals::default()
                }),
                vec![(FabricDegraded, Warning)],
            ),
            (
                Signals {
                    recovery_action: Some(1),
                    ..healthy()
                },
                vec![(RecoveryReset, Critical)],
            ),
            (
                Signals {
                    recovery_action: Some(2),
                    ..healthy()
                },
                vec![(RecoveryReboot, Critical)],
            ),
            (
                Signals {
                    recovery_action: Some(3),
                    ..healthy()
                },
                vec![(RecoveryDrainP2p, Warning)],
            ),
            (
                Signals {
                    recovery_action: Some(4),
                    ..healthy()
                },
                vec![(RecoveryDrainAndReset, Critical)],
            ),
            (
                Signals {
                    xids: vec![(13, 1, 90.0), (79, 1, 99.0), (48, 0, 0.0)],
                    ..healthy()
                },
                vec![(XidApplication, Warning), (XidHardware, Critical)],
            ),
        ];
        for (s, want) in cases {
            assert_eq!(reasons(&s), want, "{s:?}");
        }
    }

    #[test]
    fn an_xid_older_than_the_window_is_not_observed() {
        let s = Signals {
            xids: vec![(48, 3, 10.0)],
            ..healthy()
        };
        assert!(observe(&s, 100.0, 60.0).is_empty());
        let o = observe(&s, 100.0, 120.0);
        assert_eq!(o[0].last_seen_unix, 10.0, "an Xid is seen at its own time");
        assert_eq!(o[0].xid, Some(48));
        assert!(
            o[0].message.starts_with("Xid 48: double-bit ECC error (×3"),
            "{}",
            o[0].message
        );
    }

    #[test]
    fn dcgm_watches_that_warn_or_fail_are_reasons() {
        let w = |watch, result| HealthWatch {
            watch,
            code: "DCGM_FR_X".into(),
            result,
        };
        let s = Signals {
            dcgm: Some(vec![w("MEM", 20), w("PCIE", 10), w("SM", 0), w("ALL", 20)]),
            ..healthy()
        };
        assert_eq!(
            reasons(&s),
            [
                (Reason::DcgmWatchFailure, Verdict::Critical),
                (Reason::DcgmWatchWarning, Verdict::Warning)
            ]
        );
    }
}
