//! Where the alerts fire: the alerts expected on the simulated incidents node, the NVLink 5
//! node, the node whose driver never loads, the target that is down and, through a stand-in
//! kube-state-metrics, the Node-condition alerts, and nowhere else.

use super::*;

// ---------------------------------------------------------------------------------------------
// Where the alerts fire

/// The node of the `incidents` scenario.
pub(crate) const INCIDENTS_NODE: &str = "sim-incidents-node";

/// The node of the `nvlink5` test scenario (one B200, errors past FEC on link 4).
pub(crate) const NVLINK5_NODE: &str = "sim-nvlink5-node";

/// A node that kube-state-metrics still shows with the exporter's `GpuUnhealthy` condition
/// set, but that no exporter reports any more (removed).
pub(crate) const RETIRED_NODE: &str = "sim-retired-node";

/// The nodes whose alerts are compared key by key (`node alertname gpu/GI xid`): these and
/// the mixed fleet's (`mixed::MIXED`).
const NODES: [&str; 3] = [INCIDENTS_NODE, NVLINK5_NODE, RETIRED_NODE];

fn compared_node(host: &str) -> bool {
    NODES.contains(&host) || MIXED.iter().any(|m| m.node == host)
}

/// What kube-state-metrics exports of the Node conditions here: the incidents node with
/// `GpuUnhealthy` and `GpuRebootRequired` (its GPU 4 falls off the bus) and not cordoned, and
/// the retired node with `GpuUnhealthy` left set.
pub(crate) fn kube_state_metrics_text() -> String {
    let mut out = String::from("# TYPE kube_node_status_condition gauge\n");
    // The incidents node in the full label shape (mixed::MIXED) has the same conditions: its
    // exporter judges the same GPUs.
    let full: Vec<&str> = MIXED
        .iter()
        .filter(|m| !m.dcgm_only)
        .map(|m| m.node)
        .collect();
    let mut conditions = vec![
        (INCIDENTS_NODE, "GpuUnhealthy"),
        (INCIDENTS_NODE, "GpuRebootRequired"),
        (RETIRED_NODE, "GpuUnhealthy"),
    ];
    for node in &full {
        conditions.push((node, "GpuUnhealthy"));
        conditions.push((node, "GpuRebootRequired"));
    }
    for (node, condition) in conditions {
        for (status, v) in [("true", 1), ("false", 0), ("unknown", 0)] {
            out.push_str(&format!(
                "kube_node_status_condition{{node=\"{node}\",condition=\"{condition}\",status=\"{status}\"}} {v}\n"
            ));
        }
    }
    // The priced node's pool (alerts/gpu-prices.example.rules.yaml reads the instance type),
    // and OpenCost's price of the A100 MIG node's GPUs (no price of their own there).
    out.push_str(&format!(
        "# TYPE kube_node_labels gauge\n\
         kube_node_labels{{node=\"{COST_NODE}\",label_node_kubernetes_io_instance_type=\"p5.48xlarge\"}} 1\n\
         # TYPE node_gpu_hourly_cost gauge\n\
         node_gpu_hourly_cost{{node=\"{A100_MIG_NODE}\",instance_type=\"a2-ultragpu-1g\"}} {OPENCOST_PRICE}\n"
    ));
    out.push_str("# TYPE kube_node_spec_unschedulable gauge\n");
    for node in [INCIDENTS_NODE, RETIRED_NODE].into_iter().chain(full) {
        out.push_str(&format!(
            "kube_node_spec_unschedulable{{node=\"{node}\"}} 0\n"
        ));
    }
    out
}

/// Serves `text` at every path on 127.0.0.1 from a thread that lives as long as the test
/// process (a stand-in kube-state-metrics for Prometheus to scrape); returns its port.
pub(crate) fn serve_text(text: String) -> u16 {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 65536 {
                match conn.read(&mut buf) {
                    Ok(n) if n > 0 => head.extend_from_slice(&buf[..n]),
                    _ => break,
                }
            }
            let _ = write!(
                conn,
                "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{text}",
                text.len()
            );
        }
    });
    port
}

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
        // The health model's verdicts: GPUs 2 and 4 critical, 0, 3, 6 (an application Xid of
        // its instance 3) and 7 warning.
        "GpuHealthCritical 2",
        "GpuHealthCritical 4",
        "GpuHealthWarning 0",
        "GpuHealthWarning 3",
        "GpuHealthWarning 6",
        "GpuHealthWarning 7",
    ]
    .iter()
    .map(|s| format!("{INCIDENTS_NODE} {s}"))
    .collect();
    want.insert(format!("{NVLINK5_NODE} GpuNvlinkEffectiveBerHigh 0"));
    // From kube-state-metrics: the incidents node needs a reboot and is not cordoned; the
    // retired node's condition is stale (pending: both wait 15 minutes).
    want.insert(format!("{INCIDENTS_NODE} GpuNodeNeedsDrain -"));
    want.insert(format!("{RETIRED_NODE} GpuNodeConditionStale -"));
    // The same errors past FEC are a warning of the health model.
    want.insert(format!("{NVLINK5_NODE} GpuHealthWarning 0"));
    for name in ["GpuExporterNvmlDown", "GpuExporterSamplesStale"] {
        want.insert(format!("127.0.0.1:{no_driver} {name}"));
    }
    want.insert(format!("127.0.0.1:{down} GpuExporterDown"));
    want
}

/// An alert as `alertname gpu[/GI][ xid=N]`, or `alertname -` for an alert about no GPU
/// (the keys of [`expected_alerts`] after the node, and of `inhibit`'s groups).
pub(crate) fn device_key(labels: &Value) -> String {
    let l = |k: &str| str_of(labels, k).unwrap_or("");
    let mut k = format!("{} ", l("alertname"));
    k.push_str(&match (l("gpu"), l("GPU_I_ID")) {
        ("", _) => "-".to_owned(),
        (g, "") => g.to_owned(),
        (g, gi) => format!("{g}/{gi}"),
    });
    if !l("xid").is_empty() {
        k.push_str(&format!(" xid={}", l("xid")));
    }
    k
}

/// Compares the `ALERTS` of the incidents node and of the two broken exporters with `want`.
pub(crate) fn alert_placement(port: u16, want: &BTreeSet<String>) -> Result<(), String> {
    let data = prom_api(port, "/api/v1/query", &[("query", "ALERTS")]).map_err(|e| match e {
        ApiError::Fatal(m) | ApiError::Transient(m) => format!("ALERTS: {m}"),
    })?;
    let exporters: BTreeSet<String> = want
        .iter()
        .filter_map(|k| k.split_once(' ').map(|(t, _)| t.to_owned()))
        .filter(|t| !compared_node(t))
        .collect();
    let mut got = BTreeSet::new();
    for s in array(&data, "result") {
        let m = s.get("metric").cloned().unwrap_or(Value::Null);
        let label = |k: &str| str_of(&m, k).unwrap_or("").to_owned();
        let name = label("alertname");
        // The device alerts carry our `Hostname`, the Node-condition ones kube-state-metrics'
        // `node`.
        let host = match label("Hostname") {
            h if h.is_empty() => label("node"),
            h => h,
        };
        let key = if compared_node(&host) {
            format!("{host} {}", device_key(&m))
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
