//! Pod churn on a batch node, in process: the simulated cluster's job stream
//! (`tests/fixtures/scenarios/churn.toml`) brings a new pod to each slot (a whole GPU, two MIG
//! instances, two time-sliced replicas) every 4 s of scenario time, through the simulated
//! kubelet and API server. Scenario time is frozen at each step; the sampler ticks until the
//! attribution has caught up with the kubelet (its refresh is 50 ms here), then the page is
//! checked. Covers: holders that appear and vanish on time in every device form, and in the
//! API server's list and watch; a vanished pod's series gone from the next page; no state
//! keyed by pod that grows over hundreds of jobs; Events that name only the job that was hit.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use gpu_exporter::catalogue::csv::CounterSet;
use gpu_exporter::exposition::EncodeOptions;
use gpu_exporter::exposition::counted::Counted;
use gpu_exporter::exposition::publish::{Shared, render};
use gpu_exporter::notify::counts::WriteCounts;
use gpu_exporter::notify::{self, NotifyOptions};
use gpu_exporter::sampler::Sampler;
use gpu_exporter::snapshot::Snapshot;
use serde_json::Value;

use crate::common::{self, Cluster, SimNode, label, label_opt, series, wait_until};

const SCENARIO: &str = "tests/fixtures/scenarios/churn.toml";
/// The stream's period, duration and slots (see the scenario).
const EVERY: f64 = 4.0;
const DURATION: f64 = 3.0;
const SLOTS: u64 = 5;

/// A sampler with pod attribution over the churn scenario's simulated cluster.
struct Churn {
    // Dropped first: it reads through the node's library and the cluster's runtime.
    sampler: Sampler,
    cluster: Cluster,
    node: SimNode,
    counters: Arc<CounterSet>,
    opts: EncodeOptions,
}

impl Churn {
    fn new(args: &[&str]) -> Self {
        let node = SimNode::new(SCENARIO, 5);
        let cluster = Cluster::start(&node);
        let counters = common::default_counters();
        let cfg = common::config(args);
        let mut k = common::config_on(args, &cluster.site())
            .kubernetes
            .expect("-k");
        k.kubelet.interval = Duration::from_millis(50);
        let sampler = node
            .sampler_with(counters.clone(), cfg.reader.clone(), 0.0)
            .with_attribution(cluster.attributor(&k))
            .with_health(cfg.health_options());
        Self {
            sampler,
            cluster,
            node,
            counters,
            opts: cfg.encode_options(),
        }
    }

    fn page(&self, snap: &Snapshot) -> String {
        common::page(snap, &self.counters, &self.opts)
    }

    /// Freezes scenario time at `t` and ticks there until the page's holders are the pods
    /// that exist at `t`; returns that tick's snapshot and page.
    fn at(&mut self, t: f64) -> (Snapshot, String) {
        self.node.set_time(t);
        let want = expected(t);
        let mut out = None;
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while out.is_none() {
            let snap = self.sampler.tick(t);
            let page = self.page(&snap);
            let last = holders(&page);
            if last == want {
                out = Some((snap, page));
            } else {
                assert!(
                    std::time::Instant::now() < deadline,
                    "t = {t}: holders {last:?}, want {want:?}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        out.unwrap()
    }

    /// The simulated API server's pods, by `namespace/name`.
    fn api_pods(&self) -> BTreeSet<String> {
        let port = api_port(&self.cluster);
        let list = common::sim_api(port, "/api/v1/pods");
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                format!(
                    "{}/{}",
                    p["metadata"]["namespace"].as_str().unwrap(),
                    p["metadata"]["name"].as_str().unwrap()
                )
            })
            .collect()
    }
}

fn api_port(c: &Cluster) -> u16 {
    c.sim.api.url().rsplit(':').next().unwrap().parse().unwrap()
}

/// The job running on `slot` at `t`, by the scenario's rule (round k from 4k to 4k + 3).
fn job_at(t: f64, slot: u64) -> Option<String> {
    let k = (t / EVERY).floor();
    (t - k * EVERY < DURATION).then(|| format!("ci/ci-{}", k as u64 * SLOTS + slot))
}

/// The pods that hold a device at `t`: the round's jobs and `web/svc` from 6 s to 14 s.
fn expected(t: f64) -> BTreeSet<String> {
    let mut out: BTreeSet<String> = (0..SLOTS).filter_map(|s| job_at(t, s)).collect();
    if (6.0..14.0).contains(&t) {
        out.insert("web/svc".into());
    }
    out
}

/// `namespace/pod` of every `gpu_allocation_info` row.
fn holders(page: &str) -> BTreeSet<String> {
    series(page, "gpu_allocation_info")
        .into_iter()
        .map(|l| format!("{}/{}", label(l, "namespace"), label(l, "pod")))
        .collect()
}

/// The `gpu_allocation_info` row of `pod` (`namespace/name`).
fn row<'a>(page: &'a str, pod: &str) -> &'a str {
    let (ns, name) = pod.split_once('/').unwrap();
    let rows: Vec<&str> = series(page, "gpu_allocation_info")
        .into_iter()
        .filter(|l| label(l, "namespace") == ns && label(l, "pod") == name)
        .collect();
    assert_eq!(rows.len(), 1, "{pod}: {rows:?}");
    rows[0]
}

/// Each device form's holder is on its device, only while its job runs; the API server lists
/// exactly the pods of the moment, and its watch tells each start (`ADDED`) and end
/// (`DELETED`) in order, with resourceVersions that only grow.
#[test]
fn holders_appear_and_vanish_on_time_in_every_device_form() {
    let mut c = Churn::new(&["-k"]);
    let port = api_port(&c.cluster);
    let rv0: u64 = common::sim_api(port, "/api/v1/pods")["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut failures = common::Failures::default();
    for t in [0.5, 2.9, 3.5, 4.0, 6.5, 8.5, 11.0, 14.2] {
        let (_, page) = c.at(t);
        let want = expected(t);
        if c.api_pods() != want {
            failures.add(format!("t = {t}: API server lists {:?}", c.api_pods()));
        }
        let Some(whole) = job_at(t, 0) else {
            assert!(holders(&page).iter().all(|p| !p.starts_with("ci/")));
            continue;
        };
        let r = row(&page, &whole);
        if label(r, "gpu") != "0" || label_opt(r, "GPU_I_ID").is_some() {
            failures.add(format!("t = {t}: {whole} not on GPU 0 whole: {r}"));
        }
        for (slot, gi) in [(1, "7"), (2, "8")] {
            let pod = job_at(t, slot).unwrap();
            let r = row(&page, &pod);
            if label(r, "gpu") != "1" || label_opt(r, "GPU_I_ID") != Some(gi) {
                failures.add(format!("t = {t}: {pod} not on GPU 1 instance {gi}: {r}"));
            }
        }
        for (slot, replica) in [(3, "0"), (4, "1")] {
            let pod = job_at(t, slot).unwrap();
            let r = row(&page, &pod);
            if label(r, "gpu") != "2" || label_opt(r, "vgpu") != Some(replica) {
                failures.add(format!(
                    "t = {t}: {pod} not on GPU 2 replica {replica}: {r}"
                ));
            }
            if label_opt(r, "workload_kind") != Some("Job") || label(r, "workload_name") != "ci" {
                failures.add(format!("t = {t}: {pod}'s workload is not Job ci: {r}"));
            }
        }
    }
    // The watch from before the first step: each job ADDED, then DELETED, in time order.
    let watch = common::http_get(
        port,
        &format!("/api/v1/pods?watch=true&resourceVersion={rv0}&timeoutSeconds=1"),
        &[],
    )
    .unwrap()
    .text();
    let mut last_rv = rv0;
    let mut seen: Vec<(String, String)> = Vec::new();
    for line in watch.lines() {
        let e: Value = serde_json::from_str(line).unwrap();
        let rv: u64 = e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse()
            .unwrap();
        if rv <= last_rv {
            failures.add(format!("resourceVersion {rv} after {last_rv}"));
        }
        last_rv = rv;
        let name = e["object"]["metadata"]["name"].as_str().unwrap().to_owned();
        seen.push((e["type"].as_str().unwrap().to_owned(), name));
    }
    let of = |name: &str| -> Vec<&str> {
        seen.iter()
            .filter(|(_, n)| n == name)
            .map(|(ty, _)| ty.as_str())
            .collect()
    };
    // ci-0 (round 0) ends at 3; ci-5 (round 1) starts at 4 and ends at 7; ci-10 from 8 to 11;
    // ci-15 from 12 (14.2 is its last step): ADDED and not yet DELETED; svc from 6 to 14.
    for (pod, want) in [
        ("ci-5", &["ADDED", "DELETED"][..]),
        ("ci-10", &["ADDED", "DELETED"][..]),
        ("ci-15", &["ADDED"][..]),
        ("svc", &["ADDED", "DELETED"][..]),
    ] {
        if of(pod) != want {
            failures.add(format!(
                "watch events of {pod}: {:?}, want {want:?}",
                of(pod)
            ));
        }
    }
    let uid = |name: &str| {
        c.cluster
            .sim
            .api
            .pod("ci", name)
            .map(|p| p["metadata"]["uid"].as_str().unwrap().to_owned())
    };
    if uid("ci-15").is_none() || uid("ci-15") == uid("ci-16") || uid("ci-5").is_some() {
        failures.add("ci-15 and ci-16 have their own UIDs, ci-5 is gone".to_string());
    }
    failures.finish("churn holders");
}

/// Every series that names a pod that ended is gone from the page on which its holder row is
/// gone (no family keeps a pod that the kubelet no longer lists), in both native shapes (lean:
/// only `gpu_allocation_info` names the pod; full: its device's series too); with the pod's
/// own process (svc's 71003) in the proc tree only while it runs.
#[test]
fn a_vanished_pods_series_are_gone_from_the_next_page() {
    for shape in ["lean", "full"] {
        let mut c = Churn::new(&[
            "-k",
            "--kubernetes-enable-pod-labels",
            "--series-labels",
            shape,
        ]);
        let proc = c.cluster.sim.proc_root.join("71003");
        let (_, page) = c.at(12.5);
        assert!(proc.exists(), "svc's process runs at 12.5 s");
        let svc_uid = label(row(&page, "web/svc"), "pod_uid").to_owned();
        let ci15_uid = label(row(&page, "ci/ci-15"), "pod_uid").to_owned();
        let named = |page: &str, pod: &str, uid: &str| -> Vec<String> {
            page.lines()
                .filter(|l| !l.starts_with('#'))
                .filter(|l| l.contains(&format!("pod=\"{pod}\"")) || l.contains(uid))
                .map(str::to_owned)
                .collect()
        };
        let on_devices = named(&page, "ci-15", &ci15_uid)
            .iter()
            .filter(|l| !l.starts_with("gpu_allocation_info"))
            .count();
        match shape {
            "full" => assert!(on_devices > 10, "{shape}: ci-15 on its device's series"),
            _ => assert_eq!(on_devices, 0, "{shape}: ci-15 only on gpu_allocation_info"),
        }
        let (_, page) = c.at(15.5);
        let left = named(&page, "ci-15", &ci15_uid);
        assert!(left.is_empty(), "{shape}: ci-15 ended at 15 s: {left:#?}");
        let left = named(&page, "svc", &svc_uid);
        assert!(left.is_empty(), "{shape}: svc ended at 14 s: {left:#?}");
        assert!(!proc.exists(), "svc's process ended with it at 14 s");
    }
}

/// Hundreds of jobs come and go (the test prints how many the attribution saw): every map the attribution keeps over ticks, the API pod
/// index, `/status` and the landing page stay the size one round needs.
#[test]
fn nothing_keyed_by_pod_grows_over_hundreds_of_jobs() {
    let mut c = Churn::new(&["-k"]);
    let measure = |c: &mut Churn, t: f64| {
        let (snap, _) = c.at(t);
        let sizes = c.sampler.attributor().unwrap().state_sizes();
        let status = gpu_exporter::serve::status::build(
            &snap,
            &c.counters,
            Some("sim-churn-node"),
            true,
            t,
            None,
        );
        let json = serde_json::to_string(&status).unwrap();
        let landing = gpu_exporter::serve::landing::render(&status);
        // Both name the pods of the moment (so their size would grow with remembered ones).
        let now = format!("ci-{}", (t / EVERY) as u64 * SLOTS);
        assert!(json.contains(&now), "/status names {now}");
        assert!(landing.contains(&now), "the landing page names {now}");
        (sizes, json.len(), landing.len())
    };
    let mut seen = BTreeSet::new();
    // After the scenario's last fault (23.5 s), so that the Xid history is the same in both.
    let first = measure(&mut c, 8.0 * EVERY + 0.5);
    // 60 rounds (300 jobs): one tick each, after the player (50 ms) and the kubelet source
    // (50 ms) have had time to follow, so most rounds' pods reach the page.
    for k in 9..69u64 {
        let t = k as f64 * EVERY + 0.5;
        c.node.set_time(t);
        std::thread::sleep(Duration::from_millis(120));
        let snap = c.sampler.tick(t);
        seen.extend(holders(&c.page(&snap)));
    }
    let last = measure(&mut c, 69.0 * EVERY + 0.5);
    println!(
        "job pods seen: {}; state {:?}; /status {} -> {} bytes; landing page {} -> {} bytes",
        seen.len(),
        last.0,
        first.1,
        last.1,
        first.2,
        last.2
    );
    assert!(
        seen.len() >= 150,
        "the attribution saw {} job pods of 300",
        seen.len()
    );
    let (a, b) = (first.0, last.0);
    assert_eq!(a, b, "state sizes after 8 rounds and after 69");
    assert_eq!(
        b.pod_index, 5,
        "one round's pods in the API pod index: {b:?}"
    );
    assert_eq!(b.allocations, 5, "{b:?}");
    // The pages differ only by the job numbers' digits (ci-40 vs ci-345): 5 pods × a few
    // bytes each, far from the growth of one entry per job seen.
    for (what, x, y) in [
        ("/status", first.1, last.1),
        ("landing page", first.2, last.2),
    ] {
        assert!(
            y <= x + 200,
            "{what}: {x} bytes after 8 rounds, {y} after 69"
        );
    }
}

/// A fault on a GPU while a job runs reaches that job's pod (an Event on it, named on the
/// Node's); a pod that ended is not named for a later fault, on the next job's pod or with
/// no job running.
#[test]
fn events_name_only_the_job_that_was_hit() {
    let mut c = Churn::new(&["-k", "--health-hold", "1s"]);
    let shared = Arc::new(Shared::new(render(
        Default::default(),
        &Counted::default(),
        &c.counters,
        &c.opts,
    )));
    let counts = Arc::new(WriteCounts::default());
    notify::spawn(
        c.cluster.sim.client.clone(),
        NotifyOptions {
            node: c.cluster.sim.node.clone(),
            conditions: true,
            events: true,
            interval: Duration::from_millis(50),
            timeout: Duration::from_millis(300),
            queue: 64,
            event_retry_for: Duration::from_secs(10),
        },
        Arc::clone(&shared),
        Arc::clone(&counts),
        c.cluster.rt.handle(),
    );
    let events = |c: &Churn| -> Vec<Value> { c.cluster.sim.api.events() };
    let on_pods = |c: &Churn| -> BTreeSet<String> {
        events(c)
            .iter()
            .filter(|e| e["regarding"]["kind"] == "Pod")
            .map(|e| {
                format!(
                    "{}/{}",
                    e["regarding"]["namespace"].as_str().unwrap(),
                    e["regarding"]["name"].as_str().unwrap()
                )
            })
            .collect()
    };
    let node_notes = |c: &Churn| -> Vec<String> {
        events(c)
            .iter()
            .filter(|e| e["regarding"]["kind"] == "Node" && e["reason"] != "GpuRecovered")
            .map(|e| e["note"].as_str().unwrap().to_owned())
            .collect()
    };
    let step = |c: &mut Churn, t: f64| {
        let (snap, _) = c.at(t);
        let counted = Counted {
            kube_writes: Some(counts.figures()),
            ..Counted::default()
        };
        shared.publish(render(snap, &counted, &c.counters, &c.opts), true);
    };
    for t in [12.5, 13.2, 13.6] {
        step(&mut c, t);
    }
    wait_until("an Event on ci-15", || !on_pods(&c).is_empty());
    assert_eq!(on_pods(&c), BTreeSet::from(["ci/ci-15".to_string()]));
    // GPU 0 recovers; ci-15 ends at 15; the next fault (21 s) hits ci-25.
    for t in [15.5, 19.0, 20.5, 21.2, 21.6] {
        step(&mut c, t);
    }
    wait_until("an Event on ci-25", || on_pods(&c).len() == 2);
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        on_pods(&c),
        BTreeSet::from(["ci/ci-15".to_string(), "ci/ci-25".to_string()])
    );
    // 23.5 s: between two jobs, no pod holds GPU 0: the Node's Event names none.
    let before = node_notes(&c).len();
    for t in [23.2, 23.6, 23.9] {
        step(&mut c, t);
    }
    wait_until("the Node Event of the third fault", || {
        node_notes(&c).len() > before
    });
    std::thread::sleep(Duration::from_millis(300));
    let notes = node_notes(&c);
    assert!(
        notes.iter().any(|n| n.contains("held by ci/ci-15")),
        "{notes:#?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("held by ci/ci-25")),
        "{notes:#?}"
    );
    let third = notes.last().unwrap();
    assert!(!third.contains("held by"), "no job runs at 23.5 s: {third}");
    assert_eq!(on_pods(&c).len(), 2, "no Event on a pod that ended");
}
