//! Which GPU a reading, a verdict, a Node condition or an Event names, on the binary, while
//! GPUs are lost and NVML's indices shift under them: every surface names a GPU by the UUID
//! NVML answers now (a lost GPU by the one it last answered with at a verified place), and its
//! pods are its own. Two timelines: the one that named a healthy GPU as lost (a GPU lost while
//! one before it is unbound), and a MIG node with a GPU lost at every index while another is
//! unbound, one of them coming back with another minor number. Each scrape, `/status`, the
//! Node's conditions and, at the end, every Event are checked against what the scenario says.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{Exporter, label, label_opt, series, sim_api as api, sim_api_port as api_port, value};
use serde_json::Value;

const NODE: &str = "sim-identity-node";

/// One GPU of the scenario as the exporter first showed it.
#[derive(Debug, Clone)]
struct Gpu {
    /// Its place in the scenario (PCI bus order).
    at: usize,
    minor: u32,
    /// Pods holding the whole GPU.
    pods: BTreeSet<String>,
    /// MIG instances: GPU instance id → (MIG UUID, pod).
    instances: BTreeMap<String, (String, String)>,
}

/// The scenario's faults: the GPUs lost at some time (scenario index) and the minor number a
/// GPU comes back with.
struct Plan {
    lost: BTreeSet<usize>,
    new_minor: Option<(usize, u32)>,
    /// When the last fault is over (seconds after start).
    end: f64,
}

/// Every `GPU-…` UUID a text mentions.
fn uuids_in(text: &str) -> BTreeSet<String> {
    text.match_indices("GPU-")
        .map(|(i, _)| {
            let rest: String = text[i + 4..]
                .chars()
                .take_while(|c| c.is_ascii_hexdigit() || *c == '-')
                .collect();
            format!("GPU-{}", rest.trim_end_matches('-'))
        })
        .collect()
}

/// The UUID the scenario gives GPU `i`, and that of its MIG instance `gi`.
fn uuid(i: usize) -> String {
    format!("GPU-00000000-0000-4000-8000-{i:012}")
}

fn mig_uuid(i: usize, gi: u32) -> String {
    format!("MIG-00000000-0000-4000-8000-{i:06}{gi:06}")
}

/// One GPU of a scenario: its MIG instances `(gi, pod)`, and the pod holding it whole.
type GpuSpec<'a> = (Vec<(u32, &'a str)>, Option<&'a str>);

/// The scenario's GPUs (`[[gpus]]` with their UUIDs, MIG instances) and pods; the GPUs as the
/// checks know them, by UUID.
fn scenario(name: &str, gpus: &[GpuSpec<'_>], faults: &str) -> (String, BTreeMap<String, Gpu>) {
    let mut toml = format!("name = \"{name}\"\nnode = \"{NODE}\"\n");
    let mut pods = String::new();
    let mut known = BTreeMap::new();
    for (i, (instances, pod)) in gpus.iter().enumerate() {
        toml.push_str(&format!(
            "[[gpus]]\nmodel = \"H100-SXM5-80GB\"\nuuid = \"{}\"\n",
            uuid(i)
        ));
        let mut g = Gpu {
            at: i,
            minor: i as u32,
            pods: BTreeSet::new(),
            instances: BTreeMap::new(),
        };
        if !instances.is_empty() {
            let list: Vec<String> = instances
                .iter()
                .map(|(gi, _)| {
                    format!(
                        "{{ profile = \"1g.10gb\", gi = {gi}, uuid = \"{}\" }}",
                        mig_uuid(i, *gi)
                    )
                })
                .collect();
            toml.push_str(&format!("mig = [{}]\n", list.join(", ")));
        }
        for (gi, p) in instances {
            pods.push_str(&format!(
                "[[pods]]\nname = \"{p}\"\nnamespace = \"t\"\n\
                 containers = [{{ name = \"c\", mig = [\"{i}.{gi}\"] }}]\n"
            ));
            g.instances
                .insert(gi.to_string(), (mig_uuid(i, *gi), (*p).to_owned()));
        }
        if let Some(p) = pod {
            pods.push_str(&format!(
                "[[pods]]\nname = \"{p}\"\nnamespace = \"t\"\n\
                 containers = [{{ name = \"c\", gpus = [{i}] }}]\n"
            ));
            g.pods.insert((*p).to_owned());
        }
        known.insert(uuid(i), g);
    }
    (format!("{toml}{faults}{pods}"), known)
}

/// What one run saw, for the assertions on coverage at the end.
#[derive(Default)]
struct Seen {
    /// Lost GPUs (scenario index) seen down while fewer GPUs than the scenario's were listed
    /// (another one unbound, so the indices had shifted).
    down_while_shifted: BTreeSet<usize>,
    /// GPUs seen down at all.
    down: BTreeSet<usize>,
    /// (GPU, device label) pairs served.
    devices: BTreeSet<(usize, String)>,
    scrapes: usize,
}

/// Runs the exporter on `toml` and checks every surface on every scrape until `plan.end`.
fn run(dir: &Path, toml: &str, gpus: &BTreeMap<String, Gpu>, plan: &Plan) -> (Seen, Value, String) {
    let path = dir.join("scenario.toml");
    std::fs::write(&path, toml).unwrap();
    let e = Exporter::builder()
        .args(["--simulate"])
        .arg(&path)
        .args(["-k", "-c", "200", "--kubernetes-node-conditions"])
        .args(["--kubernetes-events", "--health-hold", "1s"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("NODE_NAME", NODE)
        .log_pipe()
        .start();
    let started = Instant::now();
    let port = api_port(&e);
    let n = gpus.len();
    let at = |u: &str| gpus.get(u).map(|g| g.at);
    let lost_uuids: BTreeSet<&str> = gpus
        .iter()
        .filter(|(_, g)| plan.lost.contains(&g.at))
        .map(|(u, _)| u.as_str())
        .collect();
    let mut seen = Seen::default();
    let mut problems: Vec<String> = Vec::new();
    let mut problem = |p: String| {
        if problems.len() < 20 {
            problems.push(p);
        }
    };
    while started.elapsed().as_secs_f64() < plan.end + 1.0 {
        let t = e.metrics();
        seen.scrapes += 1;
        // gpu_device_up: each GPU once, under its own UUID; down only for a GPU that is lost.
        let up = series(&t, "gpu_device_up");
        let mut listed = BTreeMap::new();
        for l in &up {
            let u = label(l, "UUID");
            let Some(g) = at(u) else {
                problem(format!("an unknown UUID: {l}"));
                continue;
            };
            if listed
                .insert(u.to_owned(), label(l, "gpu").to_owned())
                .is_some()
            {
                problem(format!(
                    "{u} listed twice in gpu_device_up:\n{}",
                    up.join("\n")
                ));
            }
            if value(l) == 0.0 {
                if !plan.lost.contains(&g) {
                    problem(format!("a healthy GPU down: {l}"));
                }
                seen.down.insert(g);
                if up.len() < n {
                    seen.down_while_shifted.insert(g);
                }
            }
        }
        // NVML's index order is the bus order: the GPUs listed keep the scenario's order.
        let mut order: Vec<(u32, usize)> = listed
            .iter()
            .map(|(u, i)| (i.parse().unwrap(), at(u).unwrap()))
            .collect();
        order.sort();
        if order.windows(2).any(|w| w[0].1 >= w[1].1) {
            problem(format!("indices out of bus order: {order:?}"));
        }
        // Every series of a GPU: its own index, device node and pods (in the lean shape the
        // device node is on gpu_device_info and the pods on gpu_allocation_info).
        for l in t.lines().filter(|l| {
            l.starts_with("DCGM_FI_")
                || l.starts_with("gpu_device_info{")
                || l.starts_with("gpu_allocation_info{")
        }) {
            let Some(u) = label_opt(l, "UUID") else {
                continue;
            };
            let Some(g) = gpus.get(u) else {
                problem(format!("an unknown UUID: {l}"));
                continue;
            };
            if listed.get(u).map(String::as_str) != label_opt(l, "gpu") {
                problem(format!("not at the index gpu_device_up gives: {l}"));
            }
            if l.starts_with("DCGM_FI_")
                && lost_uuids.contains(u)
                && up.iter().any(|d| label(d, "UUID") == u && value(d) == 0.0)
            {
                problem(format!("a series of a lost GPU: {l}"));
            }
            if let Some(device) = label_opt(l, "device") {
                let minors: Vec<u32> = std::iter::once(g.minor)
                    .chain(plan.new_minor.filter(|(i, _)| *i == g.at).map(|(_, m)| m))
                    .collect();
                if !minors.iter().any(|m| device == format!("nvidia{m}")) {
                    problem(format!(
                        "device is not the GPU's device node {minors:?}: {l}"
                    ));
                }
                seen.devices.insert((g.at, device.to_owned()));
            }
            let pod = label_opt(l, "pod");
            match label_opt(l, "GPU_I_ID") {
                Some(gi) => {
                    let own = g.instances.get(gi).map(|(_, p)| p.as_str());
                    if pod.is_some() && pod != own {
                        problem(format!("another instance's pod: {l}"));
                    }
                }
                None => {
                    if pod.is_some_and(|p| !g.pods.contains(p)) {
                        problem(format!("another GPU's pod: {l}"));
                    }
                }
            }
        }
        // /status: each GPU once, its holders its own, `lost` only on a lost GPU.
        let status = api(e.port, "/status");
        let mut in_status = BTreeSet::new();
        for s in status["gpus"].as_array().unwrap() {
            let u = s["uuid"].as_str().unwrap();
            if !in_status.insert(u.to_owned()) {
                problem(format!("{u} twice in /status"));
            }
            let Some(g) = gpus.get(u) else {
                problem(format!("an unknown UUID in /status: {s}"));
                continue;
            };
            // A GPU's holders: its own pods, and its instances' as `ns/pod/c (GI n)`.
            for h in s["holders"].as_array().unwrap() {
                let h = h.as_str().unwrap();
                let pod = h.split('/').nth(1).unwrap();
                let own = match h.split_once(" (GI ") {
                    Some((_, gi)) => g
                        .instances
                        .get(gi.trim_end_matches(')'))
                        .is_some_and(|(_, p)| p == pod),
                    None => g.pods.contains(pod),
                };
                if !own {
                    problem(format!("another GPU's pod on {u} in /status: {h}"));
                }
            }
            for i in s["instances"].as_array().into_iter().flatten() {
                let gi = i["gpu_instance_id"].to_string();
                let own = g.instances.get(&gi);
                if own.map(|(m, _)| m.as_str()) != i["uuid"].as_str() {
                    problem(format!("another GPU's instance on {u} in /status: {i}"));
                }
                for h in i["holders"].as_array().unwrap() {
                    let pod = h.as_str().unwrap().split('/').nth(1).unwrap();
                    if own.map(|(_, p)| p.as_str()) != Some(pod) {
                        problem(format!("another instance's pod in /status: {i}"));
                    }
                }
            }
            let reasons = s["health"]["reasons"].to_string();
            if reasons.contains("lost") && !plan.lost.contains(&g.at) {
                problem(format!("a healthy GPU lost in /status: {s}"));
            }
        }
        // The Node's conditions name only GPUs that are (or were, within the hold) lost.
        let node = api(port, &format!("/api/v1/nodes/{NODE}"));
        for c in node["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let message = c["message"].as_str().unwrap_or_default();
            for u in uuids_in(message) {
                if !lost_uuids.contains(u.as_str()) {
                    problem(format!("condition {} names {u}: {message}", c["type"]));
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        problems.is_empty(),
        "{}\nlog:\n{}",
        problems.join("\n"),
        e.log()
    );
    let events = api(port, "/apis/events.k8s.io/v1/events");
    (seen, events, e.log())
}

/// Every Event names a lost GPU, by its device node; a pod's Event names the GPU the pod holds.
/// Returns the (pod, reason) pairs written.
fn check_events(
    gpus: &BTreeMap<String, Gpu>,
    plan: &Plan,
    events: &Value,
) -> BTreeSet<(String, String)> {
    let mut on_pods = BTreeSet::new();
    for ev in events["items"].as_array().unwrap() {
        let note = ev["note"].as_str().unwrap_or_default();
        let named = uuids_in(note);
        assert_eq!(named.len(), 1, "an Event names one GPU: {ev}");
        let u = named.first().unwrap();
        let g = gpus
            .get(u)
            .unwrap_or_else(|| panic!("an unknown UUID: {ev}"));
        assert!(plan.lost.contains(&g.at), "an Event on a healthy GPU: {ev}");
        let action = ev["action"].as_str().unwrap();
        let minors: Vec<u32> = std::iter::once(g.minor)
            .chain(plan.new_minor.filter(|(i, _)| *i == g.at).map(|(_, m)| m))
            .collect();
        assert!(
            minors
                .iter()
                .any(|m| action.starts_with(&format!("Gpu{m}"))),
            "the Event names the GPU by its device node {minors:?}: {ev}"
        );
        let regarding = &ev["regarding"];
        if regarding["kind"] == "Pod" {
            let pod = regarding["name"].as_str().unwrap();
            let own = g.pods.contains(pod) || g.instances.values().any(|(_, p)| p == pod);
            assert!(own, "an Event on a pod that does not hold {u}: {ev}");
            on_pods.insert((pod.to_owned(), ev["reason"].as_str().unwrap().to_owned()));
        }
    }
    on_pods
}

/// T5-1: four GPUs, one pod each; GPU 2 is lost while GPU 0 is unbound, so NVML lists GPU 1 at
/// index 0 and the lost GPU at index 1. Only the lost GPU is named lost — in `gpu_device_up`,
/// `/status`, the Node conditions and the Events — and only its pod gets an Event; the healthy
/// GPUs keep their own series and pods at their new indices.
#[test]
fn a_lost_gpu_after_an_unbound_one_is_the_only_one_named_lost() {
    let dir = tempfile::tempdir().unwrap();
    let whole = |p| (Vec::new(), Some(p));
    let (toml, gpus) = scenario(
        "lostshift",
        &[
            whole("pod-g0"),
            whole("pod-g1"),
            whole("pod-g2"),
            whole("pod-g3"),
        ],
        "[[faults]]\nat = 4\nuntil = 10\ngpu = 2\nkind = \"lost\"\n\
         [[faults]]\nat = 5.5\nuntil = 8\ngpu = 0\nkind = \"unbind\"\n",
    );
    let plan = Plan {
        lost: BTreeSet::from([2]),
        new_minor: None,
        end: 10.0,
    };
    let (seen, events, log) = run(dir.path(), &toml, &gpus, &plan);
    assert!(
        seen.down_while_shifted.contains(&2),
        "the lost GPU was never seen while GPU 0 was unbound ({} scrapes)\n{log}",
        seen.scrapes
    );
    // GPU 3 served as nvidia3 while it was NVML's index 2.
    assert!(!seen.devices.iter().any(|(g, d)| *g == 3 && d != "nvidia3"));
    let on_pods = check_events(&gpus, &plan, &events);
    assert!(
        on_pods.contains(&("pod-g2".to_owned(), "GpuLost".to_owned())),
        "the lost GPU's pod got its Event: {on_pods:?}"
    );
}

/// A MIG node (GPU 1 in MIG mode, a pod on each instance): each GPU lost in turn while another
/// is unbound, so a lost GPU sits at index 0, 1 and 2, below and above an unbound one, and the
/// MIG GPU is both lost and unbound; the last GPU unbound comes back with minor number 9. Every
/// surface names the right UUID and pods throughout, the GPU back as `/dev/nvidia9` is served as
/// `nvidia9`, and every lost GPU's pods get its Event.
#[test]
fn lost_and_unbound_gpus_at_every_index_of_a_mig_node_keep_their_names() {
    let dir = tempfile::tempdir().unwrap();
    // (lost GPU, unbound GPU): each phase 4 s, the unbind inside the loss.
    let phases = [(2, 0), (3, 1), (1, 0), (0, 2)];
    let mut faults = String::new();
    for (k, (lost, unbound)) in phases.iter().enumerate() {
        let s = 4.0 + 4.0 * k as f64;
        faults.push_str(&format!(
            "[[faults]]\nat = {s}\nuntil = {}\ngpu = {lost}\nkind = \"lost\"\n\
             [[faults]]\nat = {}\nuntil = {}\ngpu = {unbound}\nkind = \"unbind\"\n",
            s + 3.0,
            s + 0.8,
            s + 2.6
        ));
        if k == phases.len() - 1 {
            faults.push_str("minor = 9\n");
        }
    }
    let (toml, gpus) = scenario(
        "idmig",
        &[
            (Vec::new(), Some("p0")),
            (vec![(7, "p1-7"), (8, "p1-8")], None),
            (Vec::new(), Some("p2")),
            (Vec::new(), Some("p3")),
        ],
        &faults,
    );
    let plan = Plan {
        lost: BTreeSet::from([0, 1, 2, 3]),
        new_minor: Some((2, 9)),
        end: 20.0,
    };
    let (seen, events, log) = run(dir.path(), &toml, &gpus, &plan);
    // Lost at index 1 (GPU 2 after GPU 0), 2 (GPU 3 after GPU 1) and 0 (GPU 1 after GPU 0):
    // each seen while the indices had shifted; GPU 0 lost at index 0 with GPU 2 away.
    for g in [0, 1, 2, 3] {
        assert!(
            seen.down_while_shifted.contains(&g),
            "GPU {g} never seen lost while another was unbound ({} scrapes, {:?})\n{log}",
            seen.scrapes,
            seen.down
        );
    }
    assert!(
        seen.devices.contains(&(2, "nvidia9".to_owned())),
        "GPU 2 back as /dev/nvidia9 is served as nvidia9: {:?}",
        seen.devices
    );
    let on_pods = check_events(&gpus, &plan, &events);
    for pod in ["p0", "p1-7", "p1-8", "p2", "p3"] {
        assert!(
            on_pods.contains(&(pod.to_owned(), "GpuLost".to_owned())),
            "{pod} got its GpuLost Event: {on_pods:?}"
        );
    }
}
