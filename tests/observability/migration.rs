//! The migration from dcgm-exporter, end to end: for each compatibility profile, the exporter
//! is started the way the dcgm-exporter Helm chart and the GPU Operator DaemonSet start
//! dcgm-exporter (their arguments and environment, unchanged but for the listen port and
//! `/etc/dcgm-exporter/` being the repository's `counters/`, which the image copies there), plus
//! `GPU_EXPORTER_COMPATIBILITY` and `--simulate`; a real Prometheus scrapes them as the GPU
//! Operator's ServiceMonitor does (`honor_labels: false`, target labels `namespace`, `pod`,
//! `service` of the exporter pod, so the workload's pod becomes `exported_pod`); and the
//! queries users' dashboards and rules run must return data.
//!
//! The queries are written here in our own words after what grafana.com dashboards 12239
//! (per GPU: temperature, power, SM clock, utilization, framebuffer, tensor activity) and 23382
//! (MIG instances with the pod holding each, through a device-level field repeated per
//! instance) and the GPU Operator's recording rules (per GPU averages of utilization, power,
//! temperature, SM and memory clocks, memory copy utilization) ask. The recording rule over
//! `DCGM_FI_DEV_FB_TOTAL` is left out: no counters file dcgm-exporter ships collects that field,
//! so it is empty under dcgm-exporter too.
//!
//! Besides the H100 MIG node (profiling from NVML's GPM), each profile runs the GPU Operator
//! deployment on the A100 MIG node with a T4 (`a100-mig-t4`: profiling from the simulated
//! libdcgm, embedded), where 23382's utilization panels must have data per MIG instance with
//! its pod and on the T4, and move with the workload.

use super::*;

/// What a profile's dashboards call things.
struct Names {
    profile: &'static str,
    host: &'static str,
    temp: &'static str,
    power: &'static str,
    sm_clock: &'static str,
    mem_clock: &'static str,
    util: &'static str,
    fb_used: &'static str,
    tensor: &'static str,
    gr_engine: &'static str,
    dram: &'static str,
}

const PROFILES: [Names; 4] = [
    Names {
        profile: "dcgm-4.8.2",
        host: "Hostname",
        temp: "DCGM_FI_DEV_GPU_TEMP",
        power: "DCGM_FI_DEV_POWER_USAGE",
        sm_clock: "DCGM_FI_DEV_SM_CLOCK",
        mem_clock: "DCGM_FI_DEV_MEM_CLOCK",
        util: "DCGM_FI_DEV_GPU_UTIL",
        fb_used: "DCGM_FI_DEV_FB_USED",
        tensor: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        gr_engine: "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        dram: "DCGM_FI_PROF_DRAM_ACTIVE",
    },
    Names {
        profile: "dcgm-4.8.4",
        host: "hostname",
        temp: "DCGM_FI_DEV_GPU_TEMP",
        power: "DCGM_FI_DEV_POWER_USAGE",
        sm_clock: "DCGM_FI_DEV_SM_CLOCK",
        mem_clock: "DCGM_FI_DEV_MEM_CLOCK",
        util: "DCGM_FI_DEV_GPU_UTIL",
        fb_used: "DCGM_FI_DEV_FB_USED",
        tensor: "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
        gr_engine: "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        dram: "DCGM_FI_PROF_DRAM_ACTIVE",
    },
    DCGM_4_9,
    // 4.10 renames only the profiling byte rates, which these dashboards do not chart.
    Names {
        profile: "dcgm-4.10",
        ..DCGM_4_9
    },
];

/// dcgm-exporter 4.9: DCGM 4.7's names in base units, `hostname`.
const DCGM_4_9: Names = Names {
    profile: "dcgm-4.9",
    host: "hostname",
    temp: "DCGM_FI_DEV_GPU_TEMP_CELSIUS",
    power: "DCGM_FI_DEV_BOARD_POWER_WATTS",
    sm_clock: "DCGM_FI_DEV_SM_CLOCK_HERTZ",
    mem_clock: "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ",
    util: "DCGM_FI_DEV_GPU_UTIL_RATIO",
    fb_used: "DCGM_FI_DEV_FB_USED_BYTES",
    tensor: "DCGM_FI_PROF_TENSOR_UTIL_RATIO",
    gr_engine: "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO",
    dram: "DCGM_FI_PROF_DRAM_UTIL_RATIO",
};

/// The queries one profile's users run, each restricted to that profile's exporters.
fn queries(n: &Names) -> Vec<(String, String)> {
    let sel = format!("{{profile=\"{}\"}}", n.profile);
    let (h, p) = (n.host, n.profile);
    let mut q = vec![
        // 12239, per GPU.
        (
            format!("{p} 12239 temperature"),
            format!("max by ({h}, gpu) ({}{sel})", n.temp),
        ),
        (
            format!("{p} 12239 power"),
            format!("sum by ({h}) ({}{sel})", n.power),
        ),
        (
            format!("{p} 12239 SM clock"),
            format!("avg by ({h}, gpu) ({}{sel})", n.sm_clock),
        ),
        (
            format!("{p} 12239 utilization"),
            format!("avg by ({h}, gpu) ({}{sel})", n.util),
        ),
        (
            format!("{p} 12239 framebuffer used"),
            format!("sum by ({h}, gpu) ({}{sel})", n.fb_used),
        ),
        (
            format!("{p} 12239 tensor activity"),
            format!("avg by ({h}, gpu) ({}{sel})", n.tensor),
        ),
        // 23382: every MIG instance with the workload pod holding it, through the SM clock.
        (
            format!("{p} 23382 MIG instances with their pods"),
            format!(
                "count by ({h}, gpu, GPU_I_PROFILE, GPU_I_ID, exported_namespace, exported_pod) \
                 ({}{{profile=\"{p}\", GPU_I_ID!=\"\", exported_pod!=\"\"}})",
                n.sm_clock
            ),
        ),
        // Workload pods appear as exported_pod, the exporter's own pod as pod.
        (
            format!("{p} exporter pod and workload pod side by side"),
            format!(
                "{}{{profile=\"{p}\", pod=~\"nvidia-dcgm-exporter-.*\", exported_pod!=\"\"}}",
                n.util
            ),
        ),
    ];
    // The GPU Operator's recording rules (4.8 names: the operator ships them for those).
    if !matches!(p, "dcgm-4.9" | "dcgm-4.10") {
        for field in [
            "DCGM_FI_DEV_GPU_UTIL",
            "DCGM_FI_DEV_POWER_USAGE",
            "DCGM_FI_DEV_GPU_TEMP",
            "DCGM_FI_DEV_SM_CLOCK",
            "DCGM_FI_DEV_MEM_CLOCK",
            "DCGM_FI_DEV_MEM_COPY_UTIL",
        ] {
            q.push((
                format!("{p} GPU Operator rule over {field}"),
                format!("avg by ({h}, gpu, UUID) ({field}{sel})"),
            ));
        }
    } else {
        q.push((
            format!("{p} memory clock"),
            format!("avg by ({h}, gpu) ({}{sel})", n.mem_clock),
        ));
    }
    q
}

/// A simulated node the exporters run on: its built-in scenario, its `NODE_NAME` and the
/// deployments started there.
struct Node {
    scenario: &'static str,
    name: &'static str,
    deployments: &'static [&'static str],
}

/// The node of the A100 MIG + T4 scenario (profiling from DCGM).
const A100_NODE: &str = "gpu-node-a100";

/// The A100's MIG instances in `a100-mig-t4`, each held by a pod.
const A100_MIG_INSTANCES: usize = 4;

const NODES: [Node; 2] = [
    Node {
        scenario: "h100-mig",
        name: "gpu-node-1",
        deployments: &["helm", "gpu-operator"],
    },
    Node {
        scenario: "a100-mig-t4",
        name: A100_NODE,
        deployments: &["gpu-operator"],
    },
];

/// The queries of 23382's utilization panels on the A100 MIG node, where DCGM serves
/// profiling. The dashboard's panel queries could not be looked up here, so these follow what
/// NVIDIA's MIG guides chart per GPU instance: graphics engine, tensor and DRAM activity by
/// `GPU_I_ID`, with the pod holding each instance; and the same per T4 (no `GPU_I_ID`).
/// `DCGM_FI_PROF_SM_ACTIVE` is left out: `dcp-metrics-included.csv` (the GPU Operator's file)
/// leaves it commented out, so it is empty under dcgm-exporter too.
fn a100_queries(n: &Names) -> Vec<(String, String)> {
    let (h, p) = (n.host, n.profile);
    let sel = format!("profile=\"{p}\", {h}=\"{A100_NODE}\"");
    let mut q = Vec::new();
    for (panel, field) in [
        ("graphics engine", n.gr_engine),
        ("tensor", n.tensor),
        ("DRAM", n.dram),
    ] {
        q.push((
            format!("{p} 23382 {panel} activity on each of the A100's {A100_MIG_INSTANCES} MIG instances with its pod"),
            format!(
                "count(avg by ({h}, gpu, GPU_I_PROFILE, GPU_I_ID, exported_namespace, exported_pod) \
                 ({field}{{{sel}, GPU_I_ID!=\"\", exported_pod!=\"\"}})) == {A100_MIG_INSTANCES}"
            ),
        ));
        q.push((
            format!("{p} 23382 {panel} activity on the T4 with its pod"),
            format!(
                "avg by ({h}, gpu, exported_namespace, exported_pod) \
                 ({field}{{{sel}, modelName=~\".*T4\", GPU_I_ID=\"\", exported_pod!=\"\"}})"
            ),
        ));
    }
    // The series move with the workload: values that differ between evaluations. One 1g.10gb
    // instance runs a bursty workload that may sit idle through the whole run, so three of the
    // four instances must move.
    q.push((
        format!("{p} 23382 graphics engine activity moves on at least 3 A100 MIG instances"),
        format!(
            "count(changes({}{{{sel}, GPU_I_ID!=\"\"}}[30s]) > 0) >= {}",
            n.gr_engine,
            A100_MIG_INSTANCES - 1
        ),
    ));
    q.push((
        format!("{p} 23382 graphics engine activity moves on the T4"),
        format!(
            "changes({}{{{sel}, modelName=~\".*T4\", GPU_I_ID=\"\"}}[30s]) > 0",
            n.gr_engine
        ),
    ));
    q
}

/// How a deployment starts dcgm-exporter: (name, arguments, environment). `{counters}` stands
/// for `/etc/dcgm-exporter`.
type Deployment = (
    &'static str,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

const DEPLOYMENTS: [Deployment; 2] = [
    (
        "helm",
        &["-f", "{counters}/default-counters.csv"],
        &[("DCGM_EXPORTER_KUBERNETES", "true")],
    ),
    (
        "gpu-operator",
        &[],
        &[
            ("DCGM_EXPORTER_KUBERNETES", "true"),
            (
                "DCGM_EXPORTER_COLLECTORS",
                "{counters}/dcp-metrics-included.csv",
            ),
        ],
    ),
];

pub(crate) fn check_migration() {
    let test = "migration_queries_return_data_for_every_profile";
    let Some(tools) = tools_or_skip(&["prometheus"], test) else {
        return;
    };
    let started = Instant::now();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let counters = root.join("counters").display().to_string();
    let mut procs = Procs {
        children: Vec::new(),
        dir: tempfile::tempdir().unwrap(),
    };
    let mut targets = Vec::new();
    for node in &NODES {
        for n in &PROFILES {
            for (deployment, args, env) in DEPLOYMENTS {
                if !node.deployments.contains(&deployment) {
                    continue;
                }
                let port = common::free_port();
                let mut cmd = Command::new(BIN);
                cmd.args(args.iter().map(|a| a.replace("{counters}", &counters)))
                    .env("DCGM_EXPORTER_LISTEN", format!("127.0.0.1:{port}"))
                    .env("NODE_NAME", node.name)
                    .env("GPU_EXPORTER_COMPATIBILITY", n.profile)
                    .args(["--simulate", node.scenario, "-c", "1000", "--nvml-lib"])
                    .arg(common::built_sim_lib())
                    .env_remove("RUST_LOG")
                    .env_remove("GPU_EXPORTER_SIMULATE")
                    .env_remove("DCGM_EXPORTER_COLLECTORS");
                for (k, v) in env {
                    cmd.env(k, v.replace("{counters}", &counters));
                }
                let name = format!("{}-{}-{deployment}", node.scenario, n.profile);
                let idx = procs.spawn(&name, &mut cmd);
                procs.wait_http(idx, port, "/ready", Duration::from_secs(60));
                targets.push((port, n.profile, deployment, node.name));
            }
        }
    }
    // One static target per exporter pod, labelled as the ServiceMonitor's endpoints are.
    let mut config = String::from(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
         scrape_configs:\n  - job_name: nvidia-dcgm-exporter\n    honor_labels: false\n    static_configs:\n",
    );
    for (i, (port, profile, deployment, _)) in targets.iter().enumerate() {
        config.push_str(&format!(
            "      - targets: [\"127.0.0.1:{port}\"]\n        labels: {{namespace: gpu-operator, \
             pod: nvidia-dcgm-exporter-{i}, service: nvidia-dcgm-exporter, profile: {profile}, \
             deployment: {deployment}}}\n"
        ));
    }
    let prom_port = procs.start_prometheus(&tools[0], &config);

    let mut checks: Vec<Check> = PROFILES
        .iter()
        .flat_map(|n| queries(n).into_iter().chain(a100_queries(n)))
        .map(|(what, q)| Check::new(what, Ask::Query(q)))
        .collect();
    // Each deployment of each profile answers on its own: the queries again, per deployment.
    for (_, profile, deployment, node) in &targets {
        let n = PROFILES.iter().find(|n| n.profile == *profile).unwrap();
        checks.push(Check::new(
            format!("{profile} via {deployment} on {node}: SM clock on MIG instances with pods"),
            Ask::Query(format!(
                "{}{{profile=\"{profile}\", deployment=\"{deployment}\", GPU_I_ID!=\"\", exported_pod!=\"\", {}=\"{node}\"}}",
                n.sm_clock, n.host
            )),
        ));
    }
    let deadline = Instant::now() + EVAL_DEADLINE;
    loop {
        for c in checks.iter_mut().filter(|c| !c.done()) {
            c.ask(prom_port);
        }
        if checks.iter().all(Check::done) || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    let mut f = Failures::default();
    for c in &checks {
        if let Some(why) = &c.last {
            f.add(format!("{}: {why}: {}", c.what, c.shown()));
        }
    }
    // The wrong names are absent: no profile leaks another's host label or metric names.
    for n in &PROFILES {
        let other_host = if n.host == "Hostname" {
            "hostname"
        } else {
            "Hostname"
        };
        let q = format!("count({{profile=\"{}\", {other_host}!=\"\"}})", n.profile);
        match prom_api(prom_port, "/api/v1/query", &[("query", &q)]) {
            Ok(d)
                if d.get("result")
                    .and_then(Value::as_array)
                    .is_some_and(Vec::is_empty) => {}
            other => f.add(format!(
                "{}: series with {other_host}: {q}: {other:?}",
                n.profile
            )),
        }
    }
    say(&format!(
        "migration: {} exporters ({} profiles on {} nodes), {} queries through Prometheus in {:.1} s",
        targets.len(),
        PROFILES.len(),
        NODES.len(),
        checks.len(),
        started.elapsed().as_secs_f64()
    ));
    drop(procs);
    f.finish("the migration queries");
}
