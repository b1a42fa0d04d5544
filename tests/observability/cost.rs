//! The cost rules against the test's own arithmetic, on the priced node (COST_SCENARIO) in the
//! same Prometheus as the other checks, and OpenCost's GPU usage query against our series.
//!
//! `check_cost`: the price comes from the example prices (the H100's price in the node's pool,
//! which kube-state-metrics' stand-in gives it); who holds what share comes from the scenario
//! file (listed in HOLDERS); how busy each device is comes from the raw series Prometheus
//! scraped (the graphics engine's activity, else the driver's utilization). From these the
//! test computes each namespace's and team's cost and waste an hour, the unallocated GPUs and
//! their cost, the right-sizing hint, and the dollars over the hour so far (its own integral
//! of the recorded rate), and compares them with what the rules recorded at the same instant.
//! `check_opencost`: OpenCost's query returns one value per pod holding a GPU alone on a node in
//! the full label shape (the A100's MIG instances through DCGM), each its device's, and none
//! for the pods of a node in the default lean shape (the priced node), whose DCGM series carry
//! no holder.

use super::*;

/// The priced node.
pub(crate) const COST_NODE: &str = "sim-cost-node";
/// What kube-state-metrics' stand-in says OpenCost charges per GPU-hour on the A100 MIG node.
pub(crate) const OPENCOST_PRICE: f64 = 1.75;
/// The H100's price in pool p5.48xlarge (alerts/gpu-prices.example.rules.yaml), the pool the
/// stand-in puts COST_NODE in; the model's price without a pool (4.00) must not apply there.
const POOL_PRICE: f64 = 2.10;
/// The cost scenario's GPUs.
const GPUS: usize = 5;

/// One holder of the cost scenario: namespace, team, pod, GPU index, GPU instance, and its
/// share of the GPU (a MIG instance's slices of 7; a time-slice half of its GPU).
struct Holder {
    namespace: &'static str,
    team: &'static str,
    pod: &'static str,
    gpu: &'static str,
    gi: &'static str,
    share: f64,
}

const HOLDERS: [Holder; 6] = [
    Holder {
        namespace: "ml-research",
        team: "ml",
        pod: "trainer-0",
        gpu: "0",
        gi: "",
        share: 1.0,
    },
    Holder {
        namespace: "web-serving",
        team: "web",
        pod: "api-5d8f7c9b6a-x2k4p",
        gpu: "1",
        gi: "2",
        share: 3.0 / 7.0,
    },
    Holder {
        namespace: "ml-research",
        team: "ml",
        pod: "tune-0",
        gpu: "1",
        gi: "3",
        share: 2.0 / 7.0,
    },
    Holder {
        namespace: "web-serving",
        team: "web",
        pod: "rerank-7b9c8d6e5f-a1b2c",
        gpu: "2",
        gi: "",
        share: 0.5,
    },
    Holder {
        namespace: "web-serving",
        team: "web",
        pod: "rerank-7b9c8d6e5f-d3e4f",
        gpu: "2",
        gi: "",
        share: 0.5,
    },
    Holder {
        namespace: "data-lab",
        team: "data",
        pod: "notebook-0",
        gpu: "4",
        gi: "",
        share: 1.0,
    },
];
/// GPU-equivalents no one holds: GPU 1's free 1g.10gb and its one slice not partitioned, and
/// GPU 3.
const UNALLOCATED: f64 = 2.0 / 7.0 + 1.0;

/// The one value of `q` at `time`.
fn one_at(port: u16, q: &str, time: f64) -> Result<f64, String> {
    match query_at(port, q, time)?.as_slice() {
        [(_, v)] => Ok(*v),
        other => Err(format!("{q}: want one series, got {}", other.len())),
    }
}

fn label_of<'a>(m: &'a BTreeMap<String, String>, l: &str) -> &'a str {
    m.get(l).map_or("", String::as_str)
}

fn near(got: f64, want: f64, tolerance: f64) -> bool {
    (got - want).abs() <= tolerance
}

/// How busy each device of COST_NODE was at `time`, by (gpu, GPU_I_ID): the graphics engine's
/// activity where served, else the driver's utilization.
fn busy_at(port: u16, time: f64) -> Result<BTreeMap<(String, String), f64>, String> {
    let mut out = BTreeMap::new();
    let key = |m: &BTreeMap<String, String>| {
        (
            label_of(m, "gpu").to_owned(),
            label_of(m, "GPU_I_ID").to_owned(),
        )
    };
    for (m, v) in query_at(
        port,
        &format!("DCGM_FI_DEV_GPU_UTIL{{Hostname=\"{COST_NODE}\"}}"),
        time,
    )? {
        out.insert(key(&m), v / 100.0);
    }
    for (m, v) in query_at(
        port,
        &format!("DCGM_FI_PROF_GR_ENGINE_ACTIVE{{Hostname=\"{COST_NODE}\"}}"),
        time,
    )? {
        out.insert(key(&m), v);
    }
    Ok(out)
}

/// Every disagreement between the rules and the test's figures at `time`.
fn cost_problems(port: u16, time: f64) -> Result<Vec<String>, String> {
    let mut problems = Vec::new();
    let busy = busy_at(port, time)?;
    // Cost and waste an hour per holder, summed per namespace and per team.
    let mut want: BTreeMap<(&str, String), (f64, f64)> = BTreeMap::new();
    for h in &HOLDERS {
        let b = *busy
            .get(&(h.gpu.to_owned(), h.gi.to_owned()))
            .ok_or_else(|| {
                format!(
                    "no utilization scraped for {}'s GPU {} instance {:?}",
                    h.pod, h.gpu, h.gi
                )
            })?;
        let cost = h.share * POOL_PRICE;
        let waste = cost * (1.0 - b).max(0.0);
        for key in [
            ("namespace", h.namespace.to_owned()),
            ("team", h.team.to_owned()),
        ] {
            let e = want.entry(key).or_default();
            e.0 += cost;
            e.1 += waste;
        }
    }
    // The rules read values up to two seconds older than the raw samples at `time`: a cent
    // an hour covers how far a device's activity moves in that time here.
    for ((level, name), (cost, waste)) in &want {
        for (what, w) in [("cost", cost), ("waste", waste)] {
            let q =
                format!("{level}:accelerator_{what}_dollars_per_hour:sum{{{level}=\"{name}\"}}");
            match one_at(port, &q, time) {
                Ok(got) if near(got, *w, 0.01 + 0.01 * w) => {}
                Ok(got) => problems.push(format!("{q} = {got:.4}, the test computes {w:.4}")),
                Err(e) => problems.push(e),
            }
        }
    }
    let node = |q: &str| format!("{q}{{Hostname=\"{COST_NODE}\"}}");
    for (q, w) in [
        (
            node("node:accelerator_price_dollars_per_hour:sum"),
            GPUS as f64 * POOL_PRICE,
        ),
        (node("node:accelerator_unallocated_gpus:sum"), UNALLOCATED),
        (
            node("node:accelerator_unallocated_cost_dollars_per_hour:sum"),
            UNALLOCATED * POOL_PRICE,
        ),
    ] {
        match one_at(port, &q, time) {
            Ok(got) if near(got, w, 1e-9) => {}
            Ok(got) => problems.push(format!("{q} = {got}, the test computes {w}")),
            Err(e) => problems.push(e),
        }
    }
    // Every GPU of the node at the pool's price.
    match query_at(port, &node("gpu:accelerator_price_dollars_per_hour:max"), time) {
        Ok(r) if r.len() == GPUS && r.iter().all(|(_, v)| near(*v, POOL_PRICE, 1e-9)) => {}
        Ok(r) => problems.push(format!(
            "gpu:accelerator_price_dollars_per_hour:max on {COST_NODE}: want {GPUS} GPUs at {POOL_PRICE}, got {:?}",
            r.iter().map(|(_, v)| v).collect::<Vec<_>>()
        )),
        Err(e) => problems.push(e),
    }
    // The notebook that barely uses its whole H100 fits a 1g.10gb; nothing else is hinted.
    match query_at(port, &node("allocation:accelerator_rightsizing:info"), time) {
        Ok(r) => {
            let got: Vec<(String, String)> = r
                .iter()
                .map(|(m, _)| {
                    (
                        label_of(m, "pod").to_owned(),
                        label_of(m, "fits").to_owned(),
                    )
                })
                .collect();
            if got != [("notebook-0".to_owned(), "1g.10gb".to_owned())] {
                problems.push(format!(
                    "right-sizing hints on {COST_NODE}: {got:?}, want notebook-0 → 1g.10gb"
                ));
            }
        }
        Err(e) => problems.push(e),
    }
    Ok(problems)
}

/// The dollars a namespace spent in the last hour, as the rule says, against the test's own
/// integral of the recorded rate over the hour (every second Prometheus has it).
fn increase_problem(port: u16, namespace: &str, time: f64) -> Option<String> {
    let rate =
        format!("namespace:accelerator_cost_dollars_per_hour:sum{{namespace=\"{namespace}\"}}");
    let (start, end) = (format!("{:.3}", time - 3600.0), format!("{time:.3}"));
    let data = match prom_api(
        port,
        "/api/v1/query_range",
        &[
            ("query", &rate),
            ("start", &start),
            ("end", &end),
            ("step", "1"),
        ],
    ) {
        Ok(d) => d,
        Err(ApiError::Fatal(m) | ApiError::Transient(m)) => return Some(format!("{rate}: {m}")),
    };
    // The range query repeats a sample for up to 5 minutes after it (lookback): only points
    // whose time a recorded sample exists for count, one second each.
    let points = array(&data, "result")
        .first()
        .map(|r| array(r, "values").to_vec())
        .unwrap_or_default();
    let integral: f64 = points
        .iter()
        .filter_map(|p| p[1].as_str().and_then(|s| s.parse::<f64>().ok()))
        .sum::<f64>()
        / 3600.0;
    let q = format!("namespace:accelerator_cost_dollars:increase1h{{namespace=\"{namespace}\"}}");
    match one_at(port, &q, time) {
        // The two differ by how the first and last evaluations fall between the seconds.
        Ok(got)
            if integral > 0.0
                && near(got, integral, 0.1 * integral + 2.0 * POOL_PRICE / 3600.0) =>
        {
            None
        }
        Ok(got) => Some(format!(
            "{q} = {got:.5}; the test integrates {integral:.5} over {} points",
            points.len()
        )),
        Err(e) => Some(e),
    }
}

pub(crate) fn check_cost(port: u16, f: &mut Failures) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last;
    loop {
        let now = unix_now();
        // A moment every series has been scraped and evaluated for.
        let time = now - 2.0;
        last = match cost_problems(port, time) {
            Ok(mut p) => {
                p.extend(increase_problem(port, "ml-research", time));
                p
            }
            Err(e) => vec![e],
        };
        if last.is_empty() || Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    for p in last {
        f.add(format!("cost rules on {COST_NODE}: {p}"));
    }
}

/// OpenCost's GPU usage query (its allocation model reads it per container).
const OPENCOST_QUERY: &str = "avg(avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{container!=\"\"}[1m])) by (container, pod, namespace)";

/// The exporter arguments of the A100 MIG node: OpenCost's query needs the holder's labels on
/// the DCGM series, which only the full label shape puts there (docs/cost.md).
pub(crate) const OPENCOST_SHAPE: [&str; 2] = ["--series-labels", "full"];

/// The pods OpenCost must see, with their device (node, gpu, GPU_I_ID): on the A100 MIG node
/// (full label shape) two MIG holders whose names no other simulated node uses (DCGM;
/// OpenCost's query groups by pod name and namespace, so a name two nodes share would mix
/// their values).
const OPENCOST_PODS: [(&str, &str, &str, &str); 2] = [
    ("rag-api-6c8f7d9b5a-m4n7p", A100_MIG_NODE, "0", "3"),
    ("batch-embed-29110400-k2x8d", A100_MIG_NODE, "0", "7"),
];
/// The priced node's namespaces. It serves the default lean shape, whose DCGM series carry no
/// holder: OpenCost must list none of its pods (docs/cost.md says to run such nodes with
/// `--series-labels full`), while the cost rules price every holder of it (check_cost).
const COST_NAMESPACES: [&str; 3] = ["ml-research", "web-serving", "data-lab"];

pub(crate) fn check_opencost(port: u16, f: &mut Failures) {
    let now = unix_now();
    let time = now - 2.0;
    let got = match query_at(port, OPENCOST_QUERY, time) {
        Ok(r) => r,
        Err(e) => return f.add(format!("OpenCost's query: {e}")),
    };
    let by_pod: BTreeMap<String, f64> = got
        .iter()
        .map(|(m, v)| (label_of(m, "pod").to_owned(), *v))
        .collect();
    let mut wanted = BTreeSet::new();
    for (pod, node, gpu, gi) in OPENCOST_PODS {
        wanted.insert(pod.to_owned());
        let device = format!(
            "avg_over_time(DCGM_FI_PROF_GR_ENGINE_ACTIVE{{Hostname=\"{node}\",gpu=\"{gpu}\",GPU_I_ID=\"{gi}\"}}[1m])"
        );
        match (by_pod.get(pod), one_at(port, &device, time)) {
            (Some(v), Ok(d)) if near(*v, d, 1e-9) && (0.0..=1.0).contains(v) => {}
            (Some(v), Ok(d)) => f.add(format!(
                "OpenCost's query gives pod {pod} {v}, its device ({node} GPU {gpu} instance {gi:?}) {d}"
            )),
            (None, _) => f.add(format!("OpenCost's query has no value for pod {pod}: {OPENCOST_QUERY}")),
            (_, Err(e)) => f.add(format!("pod {pod}'s device: {e}")),
        }
    }
    // Nothing of the priced node's namespaces: its lean series name no holder.
    for (m, _) in &got {
        let pod = label_of(m, "pod");
        if COST_NAMESPACES.contains(&label_of(m, "namespace")) {
            f.add(format!(
                "OpenCost's query gives pod {pod} of the lean priced node, whose DCGM series carry no holder"
            ));
        }
    }
}
