//! Where the alerts fire: the alerts expected on the simulated incidents node, the NVLink 5
//! node, the node whose driver never loads and the target that is down, and nowhere else.

use super::*;

// ---------------------------------------------------------------------------------------------
// Where the alerts fire

/// The node of the `incidents` scenario.
pub(crate) const INCIDENTS_NODE: &str = "sim-incidents-node";

/// The node of the `nvlink5` test scenario (one B200, errors past FEC on link 4).
pub(crate) const NVLINK5_NODE: &str = "sim-nvlink5-node";

/// The nodes whose alerts are compared key by key (`node alertname gpu/GI xid`).
const NODES: [&str; 2] = [INCIDENTS_NODE, NVLINK5_NODE];

/// The alerts (pending or firing) expected on the `incidents` and `nvlink5` nodes and on the
/// exporters without a driver (`no_driver`) and without a process (`down`), as
/// `alertname gpu/GI xid` keys: every alert has a cause there, and nothing else on those
/// targets alerts.
pub(crate) fn expected_alerts(no_driver: u16, down: u16) -> BTreeSet<String> {
    let mut want: BTreeSet<String> = [
        "GpuTemperatureHigh 0",
        "GpuThermalSlowdown 0",
        "GpuFramebufferNearFull 1",
        "GpuXidCritical 2 xid=48",
        "GpuEccUncorrectableErrors 2",
        "GpuRowRemapPending 2",
        "GpuRowRemapFailure 2",
        "GpuNvlinkErrors 2",
        "GpuNvlinkLinkErrors 2",
        "GpuNvlinkLinkDown 7",
        "GpuPowerBrake 3",
        "GpuLost 4",
        "GpuXidCritical 4 xid=79",
        "GpuCountDropped -",
        "GpuUnderutilized 5",
        "GpuUnderutilized 6/2",
        "GpuAllocatedIdle 5",
        "GpuAllocatedIdle 6/2",
        // The health model's verdicts: GPUs 2 and 4 critical, 0, 3 and 7 warning.
        "GpuHealthCritical 2",
        "GpuHealthCritical 4",
        "GpuHealthWarning 0",
        "GpuHealthWarning 3",
        "GpuHealthWarning 7",
    ]
    .iter()
    .map(|s| format!("{INCIDENTS_NODE} {s}"))
    .collect();
    want.insert(format!("{NVLINK5_NODE} GpuNvlinkEffectiveBerHigh 0"));
    // The same errors past FEC are a warning of the health model.
    want.insert(format!("{NVLINK5_NODE} GpuHealthWarning 0"));
    for name in ["GpuExporterNvmlDown", "GpuExporterSamplesStale"] {
        want.insert(format!("127.0.0.1:{no_driver} {name}"));
    }
    want.insert(format!("127.0.0.1:{down} GpuExporterDown"));
    want
}

/// Compares the `ALERTS` of the incidents node and of the two broken exporters with `want`.
pub(crate) fn alert_placement(port: u16, want: &BTreeSet<String>) -> Result<(), String> {
    let data = prom_api(port, "/api/v1/query", &[("query", "ALERTS")]).map_err(|e| match e {
        ApiError::Fatal(m) | ApiError::Transient(m) => format!("ALERTS: {m}"),
    })?;
    let exporters: BTreeSet<String> = want
        .iter()
        .filter_map(|k| k.split_once(' ').map(|(t, _)| t.to_owned()))
        .filter(|t| !NODES.contains(&t.as_str()))
        .collect();
    let mut got = BTreeSet::new();
    for s in array(&data, "result") {
        let m = s.get("metric").cloned().unwrap_or(Value::Null);
        let label = |k: &str| str_of(&m, k).unwrap_or("").to_owned();
        let name = label("alertname");
        let host = label("Hostname");
        let key = if NODES.contains(&host.as_str()) {
            let mut k = format!("{host} {name} ");
            k.push_str(&match (label("gpu"), label("GPU_I_ID")) {
                (g, _) if g.is_empty() => "-".to_owned(),
                (g, gi) if gi.is_empty() => g,
                (g, gi) => format!("{g}/{gi}"),
            });
            if !label("xid").is_empty() {
                k.push_str(&format!(" xid={}", label("xid")));
            }
            k
        } else if exporters.contains(&label("instance")) {
            format!("{} {name}", label("instance"))
        } else {
            continue;
        };
        got.insert(key);
    }
    if &got == want {
        return Ok(());
    }
    Err(format!(
        "alerts not where the scenarios put their causes: missing {:?}, unexpected {:?}",
        want.difference(&got).collect::<Vec<_>>(),
        got.difference(want).collect::<Vec<_>>()
    ))
}
