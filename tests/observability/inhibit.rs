//! One notification per fault, in the real Alertmanager of `alertmanager` (the example
//! configuration, alerts/alertmanager.example.yaml, with webhook stand-ins as its paging and
//! ticket receivers):
//!
//! - `check_incidents_groups`: the incidents node (scenarios/incidents.toml, every `for` cut to
//!   a few seconds) gives one notification group per fault, each holding the one alert left
//!   after the inhibit rules (the GPU's verdict, GpuLost, or the alert of a fault the health
//!   model does not judge), each notified once; the alerts the rules silence did fire and are
//!   held by Alertmanager as inhibited, never notified.
//! - `check_inhibit_rules`: each inhibit rule silences what it says and nothing else, on
//!   alerts posted to Alertmanager's API (a lost GPU, the verdicts, critical over warning, an
//!   exporter down, an idle allocation, and the pairs that must stay apart).
//! - `check_for_order`: the source of each rule that silences the same fault on the same GPU
//!   fires no later than each alert it silences (its `for`, and its group's interval where the
//!   two are in groups evaluated apart), so that in a real run the source is there when the
//!   other would be notified.

use super::*;

use std::sync::Mutex;

use super::alertmanager::{ALERTMANAGER_EXAMPLE, Post};

/// The example's receivers that get a webhook stand-in in the run, and the path each posts to.
pub(crate) const WEBHOOK_RECEIVERS: [(&str, &str); 2] = [
    ("default", "/receiver/default"),
    ("gpu-tickets", "/receiver/gpu-tickets"),
];

/// The notification groups of the incidents node: receiver, and the alerts left active in it
/// (`alertname gpu[/GI]`). One per fault of the scenario: GPU 0 overheats, GPU 1's memory is
/// full, GPU 2 has Xid 48 with ECC errors, row remaps and NVLink errors, GPU 3 is power-braked
/// after an application Xid, GPU 4 is lost, GPU 6's instance has an application Xid, GPU 7's
/// link is down, and GPU 5 and an instance of GPU 6 are held idle (the cost alert).
const INCIDENT_GROUPS: [(&str, &[&str]); 8] = [
    ("default", &["GpuHealthCritical 2"]),
    ("default", &["GpuLost 4"]),
    ("gpu-tickets", &["GpuHealthWarning 0"]),
    ("gpu-tickets", &["GpuFramebufferNearFull 1"]),
    ("gpu-tickets", &["GpuHealthWarning 3"]),
    ("gpu-tickets", &["GpuHealthWarning 6"]),
    ("gpu-tickets", &["GpuHealthWarning 7"]),
    (
        "slack-gpu-costs",
        &["GpuAllocatedIdle 5", "GpuAllocatedIdle 6/2"],
    ),
];

/// The incidents node's alerts that the inhibit rules silence: those `placement` expects there
/// (every alert the scenario has a cause for) less the ones left in [`INCIDENT_GROUPS`] and
/// GpuNodeNeedsDrain, which needs kube-state-metrics (not in this run). Each must reach
/// Alertmanager and be held there as inhibited.
fn incident_inhibited() -> BTreeMap<String, &'static str> {
    let left: BTreeSet<&str> = INCIDENT_GROUPS
        .iter()
        .flat_map(|(_, keys)| keys.iter().copied())
        .chain(["GpuNodeNeedsDrain -"])
        .collect();
    let prefix = format!("{INCIDENTS_NODE} ");
    expected_alerts(0, 0)
        .iter()
        .filter_map(|k| k.strip_prefix(&prefix))
        .filter(|k| !left.contains(k))
        .map(|k| (k.to_owned(), "inhibited"))
        .collect()
}

/// How long after the last expected group and inhibited alert the run goes on looking for a
/// notification too many.
const SETTLE: Duration = Duration::from_secs(5);

/// What Alertmanager holds for `host` (no `cluster` label), from `/api/v2/alerts/groups`: each
/// group with an active alert as (receiver, its active alert keys, sorted), and every
/// suppressed alert's key with what suppressed it (`inhibited` or `silenced`).
#[derive(Debug)]
struct Held {
    groups: BTreeSet<(String, Vec<String>)>,
    suppressed: BTreeMap<String, &'static str>,
}

fn held(am_port: u16, host: &str) -> Result<Held, String> {
    let (code, body) = http_get(am_port, "/api/v2/alerts/groups", &[])?;
    let json: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("Alertmanager /api/v2/alerts/groups: HTTP {code}, not JSON ({e})"))?;
    let mut out = Held {
        groups: BTreeSet::new(),
        suppressed: BTreeMap::new(),
    };
    for g in json.as_array().into_iter().flatten() {
        let receiver = g
            .get("receiver")
            .and_then(|r| str_of(r, "name"))
            .unwrap_or("")
            .to_owned();
        let mut active = Vec::new();
        for a in array(g, "alerts") {
            let labels = a.get("labels").cloned().unwrap_or(Value::Null);
            if str_of(&labels, "Hostname") != Some(host) || str_of(&labels, "cluster").is_some() {
                continue;
            }
            let status = a.get("status").cloned().unwrap_or(Value::Null);
            match str_of(&status, "state") {
                Some("active") => active.push(device_key(&labels)),
                Some("suppressed") => {
                    let by = if array(&status, "inhibitedBy").is_empty() {
                        "silenced"
                    } else {
                        "inhibited"
                    };
                    out.suppressed.insert(device_key(&labels), by);
                }
                _ => {}
            }
        }
        if !active.is_empty() {
            active.sort();
            out.groups.insert((receiver, active));
        }
    }
    Ok(out)
}

/// The firing notifications the webhook stand-ins got for `host`, by group key: receiver and
/// the alert keys of each notification.
fn webhook_notifications(
    posts: &[Post],
    host: &str,
) -> BTreeMap<String, Vec<(String, Vec<String>)>> {
    let mut out: BTreeMap<String, Vec<(String, Vec<String>)>> = BTreeMap::new();
    for p in posts {
        let Some((receiver, _)) = WEBHOOK_RECEIVERS.iter().find(|(_, path)| *path == p.path) else {
            continue;
        };
        let Ok(json) = serde_json::from_slice::<Value>(&p.body) else {
            continue;
        };
        let group = json.get("groupLabels").cloned().unwrap_or(Value::Null);
        if str_of(&group, "Hostname") != Some(host) || str_of(&group, "cluster").is_some() {
            continue;
        }
        if str_of(&json, "status") != Some("firing") {
            continue;
        }
        let mut keys: Vec<String> = array(&json, "alerts")
            .iter()
            .filter(|a| str_of(a, "status") == Some("firing"))
            .map(|a| device_key(a.get("labels").unwrap_or(&Value::Null)))
            .collect();
        keys.sort();
        let key = str_of(&json, "groupKey").unwrap_or("").to_owned();
        out.entry(key)
            .or_default()
            .push(((*receiver).to_owned(), keys));
    }
    out
}

/// Waits until Alertmanager holds the incidents node's groups and inhibited alerts as
/// expected (or `deadline`), then `SETTLE` more, and checks them and the notifications.
pub(crate) fn check_incidents_groups(
    am_port: u16,
    posts: &Mutex<Vec<Post>>,
    deadline: Instant,
    f: &mut Failures,
) {
    let want_groups: BTreeSet<(String, Vec<String>)> = INCIDENT_GROUPS
        .iter()
        .map(|(r, keys)| {
            let mut k: Vec<String> = keys.iter().map(|s| (*s).to_owned()).collect();
            k.sort();
            ((*r).to_owned(), k)
        })
        .collect();
    let want_inhibited = incident_inhibited();
    let started = Instant::now();
    let mut last = Err("never asked".to_owned());
    while Instant::now() < deadline {
        last = held(am_port, INCIDENTS_NODE);
        if matches!(&last, Ok(h) if h.groups == want_groups && h.suppressed == want_inhibited) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    std::thread::sleep(SETTLE);
    say(&format!(
        "observability: the incidents node's notification groups in Alertmanager after {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    let h = match held(am_port, INCIDENTS_NODE) {
        Ok(h) => h,
        Err(e) => return f.add(format!("{e} (before: {last:?})")),
    };
    if h.groups != want_groups {
        f.add(format!(
            "the incidents node's notification groups (receiver, active alerts) are not one per fault: missing {:?}, unexpected {:?}",
            want_groups.difference(&h.groups).collect::<Vec<_>>(),
            h.groups.difference(&want_groups).collect::<Vec<_>>()
        ));
    }
    if h.suppressed != want_inhibited {
        let missing: Vec<&String> = want_inhibited
            .keys()
            .filter(|k| h.suppressed.get(*k) != Some(&"inhibited"))
            .collect();
        let unexpected: Vec<(&String, &&str)> = h
            .suppressed
            .iter()
            .filter(|(k, _)| !want_inhibited.contains_key(*k))
            .collect();
        f.add(format!(
            "the incidents node's alerts that the inhibit rules silence: not held as inhibited {missing:?} (each must fire and reach Alertmanager), suppressed but not expected {unexpected:?}"
        ));
    }
    // The notifications themselves: one per group of the webhook receivers, never naming an
    // inhibited alert.
    let got = webhook_notifications(&posts.lock().unwrap(), INCIDENTS_NODE);
    let mut notified: BTreeSet<(String, Vec<String>)> = BTreeSet::new();
    for (key, sent) in &got {
        if sent.len() != 1 {
            f.add(format!(
                "group {key} was notified {} times, not once: {sent:?}",
                sent.len()
            ));
        }
        for (receiver, keys) in sent {
            for k in keys {
                if want_inhibited.contains_key(k) {
                    f.add(format!(
                        "a notification of group {key} to {receiver} names {k}, which an inhibit rule silences: {keys:?}"
                    ));
                }
            }
        }
        if let Some(last) = sent.last() {
            notified.insert(last.clone());
        }
    }
    let want_notified: BTreeSet<(String, Vec<String>)> = want_groups
        .iter()
        .filter(|(r, _)| WEBHOOK_RECEIVERS.iter().any(|(w, _)| w == r))
        .cloned()
        .collect();
    if notified != want_notified {
        f.add(format!(
            "the paging and ticket receivers' notifications for the incidents node (receiver, alerts) are not one group per fault: missing {:?}, unexpected {:?}",
            want_notified.difference(&notified).collect::<Vec<_>>(),
            notified.difference(&want_notified).collect::<Vec<_>>()
        ));
    }
    say(&format!(
        "observability: incidents node: {} groups, {} notifications to the paging and ticket receivers, {} alerts inhibited",
        h.groups.len(),
        got.values().map(Vec::len).sum::<usize>(),
        h.suppressed.len()
    ));
}

// ---------------------------------------------------------------------------------------------
// Each inhibit rule on posted alerts

/// The label shared by the posted alerts, so that nothing else in the run mixes with them.
const CHECK_CLUSTER: &str = "inhibit-check";

/// One posted alert and whether the rules must silence it: its labels (`cluster` added), and
/// `true` for inhibited.
struct Posted {
    labels: &'static [(&'static str, &'static str)],
    inhibited: bool,
    why: &'static str,
}

const fn p(
    labels: &'static [(&'static str, &'static str)],
    inhibited: bool,
    why: &'static str,
) -> Posted {
    Posted {
        labels,
        inhibited,
        why,
    }
}

/// Each case on its own node (`Hostname`), so that the cases do not silence each other.
const POSTED: &[Posted] = &[
    // A lost GPU silences that GPU's other alerts and its node's count drop, not another GPU's.
    p(
        &[
            ("alertname", "GpuLost"),
            ("severity", "critical"),
            ("Hostname", "h1"),
            ("UUID", "GPU-A"),
            ("gpu", "0"),
        ],
        false,
        "the lost GPU itself",
    ),
    p(
        &[
            ("alertname", "GpuHealthCritical"),
            ("severity", "critical"),
            ("Hostname", "h1"),
            ("UUID", "GPU-A"),
            ("gpu", "0"),
        ],
        true,
        "the lost GPU's verdict",
    ),
    p(
        &[
            ("alertname", "GpuXidCritical"),
            ("severity", "critical"),
            ("Hostname", "h1"),
            ("UUID", "GPU-A"),
            ("gpu", "0"),
            ("xid", "79"),
        ],
        true,
        "the lost GPU's Xid 79",
    ),
    p(
        &[
            ("alertname", "GpuCountDropped"),
            ("severity", "critical"),
            ("Hostname", "h1"),
        ],
        true,
        "the count drop of the lost GPU's node",
    ),
    p(
        &[
            ("alertname", "GpuXidCritical"),
            ("severity", "critical"),
            ("Hostname", "h1"),
            ("UUID", "GPU-B"),
            ("gpu", "1"),
            ("xid", "48"),
        ],
        false,
        "another GPU of the node",
    ),
    // The critical verdict silences the GPU's detail alerts, critical ones included.
    p(
        &[
            ("alertname", "GpuHealthCritical"),
            ("severity", "critical"),
            ("Hostname", "h2"),
            ("UUID", "GPU-C"),
            ("gpu", "0"),
        ],
        false,
        "the verdict",
    ),
    p(
        &[
            ("alertname", "GpuEccUncorrectableErrors"),
            ("severity", "critical"),
            ("Hostname", "h2"),
            ("UUID", "GPU-C"),
            ("gpu", "0"),
        ],
        true,
        "a critical detail of the GPU",
    ),
    p(
        &[
            ("alertname", "GpuNvlinkErrors"),
            ("severity", "warning"),
            ("Hostname", "h2"),
            ("UUID", "GPU-C"),
            ("gpu", "0"),
        ],
        true,
        "a warning detail of the GPU",
    ),
    p(
        &[
            ("alertname", "GpuEccUncorrectableErrors"),
            ("severity", "critical"),
            ("Hostname", "h2"),
            ("UUID", "GPU-D"),
            ("gpu", "1"),
        ],
        false,
        "the same detail on another GPU",
    ),
    p(
        &[
            ("alertname", "GpuCountDropped"),
            ("severity", "critical"),
            ("Hostname", "h2"),
        ],
        false,
        "the node's count drop (no GPU is lost)",
    ),
    // The warning verdict silences the GPU's warning details of the model's reasons, neither
    // a critical alert nor a fault it does not judge.
    p(
        &[
            ("alertname", "GpuHealthWarning"),
            ("severity", "warning"),
            ("Hostname", "h3"),
            ("UUID", "GPU-E"),
            ("gpu", "0"),
        ],
        false,
        "the verdict",
    ),
    p(
        &[
            ("alertname", "GpuThermalSlowdown"),
            ("severity", "warning"),
            ("Hostname", "h3"),
            ("UUID", "GPU-E"),
            ("gpu", "0"),
        ],
        true,
        "a detail of the verdict's reasons",
    ),
    p(
        &[
            ("alertname", "GpuFramebufferNearFull"),
            ("severity", "warning"),
            ("Hostname", "h3"),
            ("UUID", "GPU-E"),
            ("gpu", "0"),
        ],
        false,
        "full memory, which the model does not judge",
    ),
    // A critical alert under a warning verdict is not silenced by it; it silences the
    // verdict instead (critical over warning on one GPU).
    p(
        &[
            ("alertname", "GpuHealthWarning"),
            ("severity", "warning"),
            ("Hostname", "h8"),
            ("UUID", "GPU-K"),
            ("gpu", "0"),
        ],
        true,
        "a warning verdict beside a critical alert of the same GPU",
    ),
    p(
        &[
            ("alertname", "GpuXidCritical"),
            ("severity", "critical"),
            ("Hostname", "h8"),
            ("UUID", "GPU-K"),
            ("gpu", "0"),
            ("xid", "48"),
        ],
        false,
        "a critical alert under a warning verdict",
    ),
    // Critical over warning on one GPU (a node without a verdict: dcgm-exporter).
    p(
        &[
            ("alertname", "GpuRowRemapFailure"),
            ("severity", "critical"),
            ("Hostname", "h4"),
            ("UUID", "GPU-F"),
            ("gpu", "0"),
        ],
        false,
        "the critical alert",
    ),
    p(
        &[
            ("alertname", "GpuFramebufferNearFull"),
            ("severity", "warning"),
            ("Hostname", "h4"),
            ("UUID", "GPU-F"),
            ("gpu", "0"),
        ],
        true,
        "a warning of the same GPU",
    ),
    p(
        &[
            ("alertname", "GpuFramebufferNearFull"),
            ("severity", "warning"),
            ("Hostname", "h4"),
            ("UUID", "GPU-G"),
            ("gpu", "1"),
        ],
        false,
        "a warning of another GPU",
    ),
    p(
        &[
            ("alertname", "GpuNodeNeedsDrain"),
            ("severity", "warning"),
            ("Hostname", "h4"),
            ("node", "h4"),
        ],
        false,
        "a warning about the node, not a GPU",
    ),
    // An exporter that is down silences its node's GPU alerts; one whose node is unknown
    // silences nothing.
    p(
        &[
            ("alertname", "GpuExporterDown"),
            ("severity", "warning"),
            ("Hostname", "h5"),
            ("instance", "10.0.0.5:9400"),
            ("job", "gpu-exporter"),
        ],
        false,
        "the exporter down",
    ),
    p(
        &[
            ("alertname", "GpuXidCritical"),
            ("severity", "critical"),
            ("Hostname", "h5"),
            ("UUID", "GPU-H"),
            ("gpu", "0"),
            ("xid", "48"),
        ],
        true,
        "a GPU alert of its node",
    ),
    p(
        &[
            ("alertname", "GpuNodeConditionStale"),
            ("severity", "warning"),
            ("Hostname", "h5"),
            ("node", "h5"),
            ("condition", "GpuUnhealthy"),
        ],
        true,
        "its node's stale condition",
    ),
    p(
        &[
            ("alertname", "GpuXidCritical"),
            ("severity", "critical"),
            ("Hostname", "h6"),
            ("UUID", "GPU-I"),
            ("gpu", "0"),
            ("xid", "48"),
        ],
        false,
        "a GPU alert of another node",
    ),
    p(
        &[
            ("alertname", "GpuExporterDown"),
            ("severity", "warning"),
            ("instance", "10.0.0.7:9400"),
            ("job", "gpu-exporter"),
        ],
        false,
        "an exporter down whose node is unknown",
    ),
    p(
        &[
            ("alertname", "GpuExporterNvmlDown"),
            ("severity", "warning"),
            ("instance", "10.0.0.8:9400"),
            ("job", "gpu-exporter"),
        ],
        false,
        "another target's alert, without a node either",
    ),
    // An idle allocation silences the device's GpuUnderutilized, not another instance's.
    p(
        &[
            ("alertname", "GpuAllocatedIdle"),
            ("severity", "warning"),
            ("Hostname", "h7"),
            ("UUID", "GPU-J"),
            ("gpu", "0"),
            ("GPU_I_ID", "2"),
        ],
        false,
        "the idle allocation",
    ),
    p(
        &[
            ("alertname", "GpuUnderutilized"),
            ("severity", "info"),
            ("Hostname", "h7"),
            ("UUID", "GPU-J"),
            ("gpu", "0"),
            ("GPU_I_ID", "2"),
        ],
        true,
        "the same instance underutilized",
    ),
    p(
        &[
            ("alertname", "GpuUnderutilized"),
            ("severity", "info"),
            ("Hostname", "h7"),
            ("UUID", "GPU-J"),
            ("gpu", "0"),
            ("GPU_I_ID", "3"),
        ],
        false,
        "another instance underutilized",
    ),
];

fn posted_labels(a: &Posted) -> BTreeMap<String, String> {
    let mut m: BTreeMap<String, String> = a
        .labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    m.insert("cluster".into(), CHECK_CLUSTER.into());
    m
}

/// Posts [`POSTED`] to Alertmanager and checks, until they hold or 20 s pass, that exactly the
/// alerts marked inhibited are held as inhibited.
pub(crate) fn check_inhibit_rules(am_port: u16, f: &mut Failures) {
    let body = Value::Array(
        POSTED
            .iter()
            .map(|a| serde_json::json!({"labels": posted_labels(a)}))
            .collect(),
    );
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(10)))
        .build()
        .into();
    let url = format!("http://127.0.0.1:{am_port}/api/v2/alerts");
    match agent
        .post(&url)
        .header("Content-Type", "application/json")
        .send(body.to_string())
    {
        Ok(r) if r.status().is_success() => {}
        Ok(r) => return f.add(format!("POST {url}: HTTP {}", r.status())),
        Err(e) => return f.add(format!("POST {url}: {e}")),
    }
    let filter = format!("cluster=\"{CHECK_CLUSTER}\"");
    let deadline = Instant::now() + Duration::from_secs(20);
    let wrong = loop {
        let (code, body) = match http_get(am_port, "/api/v2/alerts", &[("filter", &filter)]) {
            Ok(r) => r,
            Err(e) => return f.add(e),
        };
        let json: Value = match serde_json::from_slice(&body) {
            Ok(j) => j,
            Err(e) => {
                return f.add(format!(
                    "Alertmanager /api/v2/alerts: HTTP {code}, not JSON ({e})"
                ));
            }
        };
        let state: BTreeMap<BTreeMap<String, String>, bool> = json
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| {
                let labels: BTreeMap<String, String> = a
                    .get("labels")
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_owned()))
                    .collect();
                let inhibited = a
                    .get("status")
                    .is_some_and(|s| !array(s, "inhibitedBy").is_empty());
                (labels, inhibited)
            })
            .collect();
        let wrong: Vec<String> = POSTED
            .iter()
            .filter_map(|a| {
                let labels = posted_labels(a);
                match state.get(&labels) {
                    Some(&got) if got == a.inhibited => None,
                    Some(&got) => Some(format!(
                        "{} ({}) is {}, it should {}be: {labels:?}",
                        a.labels[0].1,
                        a.why,
                        if got { "inhibited" } else { "not inhibited" },
                        if a.inhibited { "" } else { "not " }
                    )),
                    None => Some(format!("{labels:?}: not held by Alertmanager")),
                }
            })
            .collect();
        if wrong.is_empty() || Instant::now() > deadline {
            break wrong;
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    for w in &wrong {
        f.add(format!("{ALERTMANAGER_EXAMPLE}'s inhibit rules: {w}"));
    }
    say(&format!(
        "observability: {} posted alerts checked against the inhibit rules, {} wrong",
        POSTED.len(),
        wrong.len()
    ));
}

// ---------------------------------------------------------------------------------------------
// The order of `for`

/// When an alert is evaluated and how long it waits: its group's name and `interval` (the
/// global evaluation interval when the group sets none, at most Prometheus's default of a
/// minute as far as this check knows) and its `for` (0 when it has none).
struct Timing {
    group: String,
    every: Duration,
    wait: Duration,
}

/// Prometheus's default `evaluation_interval`, taken for a group that sets no `interval`.
const GLOBAL_INTERVAL: Duration = Duration::from_secs(60);

/// Each alert's Timing in the rules file.
fn alert_timings(rules: &Value) -> BTreeMap<String, Timing> {
    // The rules' durations are Go's (`5m`, `1h30m`), as the exporter's flags read them.
    let go = |s: Option<&str>, none: Duration| {
        s.map_or(Ok(none), gpu_exporter::base::duration::parse_go)
            .unwrap_or(Duration::MAX)
    };
    let mut out = BTreeMap::new();
    for g in array(rules, "groups") {
        let group = str_of(g, "name").unwrap_or("").to_owned();
        let every = go(str_of(g, "interval"), GLOBAL_INTERVAL);
        for r in array(g, "rules") {
            if let Some(name) = str_of(r, "alert") {
                let wait = go(str_of(r, "for"), Duration::ZERO);
                out.insert(
                    name.to_owned(),
                    Timing {
                        group: group.clone(),
                        every,
                        wait,
                    },
                );
            }
        }
    }
    out
}

/// Whether `source` fires no later than `target` when both conditions start together: in one
/// group (evaluated at the same instants) when its `for` is no longer; across groups when its
/// `for` plus its group's interval (the latest it can fire) is no longer than the target's
/// `for` (the earliest the target can).
fn fires_first(source: &Timing, target: &Timing) -> bool {
    if source.group == target.group {
        source.wait <= target.wait
    } else {
        source.wait.saturating_add(source.every) <= target.wait
    }
}

/// The alert names a matcher list selects among `names`: `alertname` matchers (`=`, `!=`,
/// `=~`, `!~`) only; `None` when the list selects by no `alertname` equality or regex.
fn selected(matchers: &[Value], names: &BTreeSet<String>) -> Option<BTreeSet<String>> {
    let re = regex::Regex::new(r#"^\s*alertname\s*(=~|!~|!=|=)\s*"(.*)"\s*$"#).unwrap();
    let mut out = names.clone();
    let mut positive = false;
    for m in matchers {
        let Some(c) = m.as_str().and_then(|s| re.captures(s)) else {
            continue;
        };
        let value = c[2].to_owned();
        let full = regex::Regex::new(&format!("^(?:{value})$")).unwrap();
        out.retain(|n| match &c[1] {
            "=" => *n == value,
            "!=" => *n != value,
            "=~" => full.is_match(n),
            _ => !full.is_match(n),
        });
        positive |= matches!(&c[1], "=" | "=~");
    }
    positive.then_some(out)
}

/// For every inhibit rule whose source is named by `alertname` and that silences within one
/// GPU (`equal` has `UUID`) or for a lost GPU: the source fires no later than each target
/// (fires_first: its `for`, and its group's interval where the two are in different groups).
/// A rule about another cause (an exporter down) or by severity alone is not held to it: its
/// targets may have been notified before, for their own cause.
pub(crate) fn check_for_order(example: &Path, rules: &Path, f: &mut Failures) {
    let (example_yaml, rules_yaml) = match (read_yaml(example), read_yaml(rules)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return f.add(e),
    };
    let timings = alert_timings(&rules_yaml);
    let names: BTreeSet<String> = timings.keys().cloned().collect();
    let rules_list = array(&example_yaml, "inhibit_rules");
    if rules_list.is_empty() {
        return f.add(format!("{ALERTMANAGER_EXAMPLE}: no inhibit_rules"));
    }
    let mut checked = 0;
    for (i, r) in rules_list.iter().enumerate() {
        let equal: Vec<&str> = array(r, "equal").iter().filter_map(Value::as_str).collect();
        let (Some(sources), Some(targets)) = (
            selected(array(r, "source_matchers"), &names),
            selected(array(r, "target_matchers"), &names),
        ) else {
            continue;
        };
        if sources.is_empty() || targets.is_empty() {
            f.add(format!(
                "{ALERTMANAGER_EXAMPLE}: inhibit rule {i} names no alert of {RULES_FILE} as its source ({sources:?}) or target ({targets:?})"
            ));
            continue;
        }
        let same_fault = equal.contains(&"UUID") || sources.iter().all(|s| s == "GpuLost");
        if !same_fault {
            continue;
        }
        for s in &sources {
            for t in &targets {
                checked += 1;
                let (a, b) = (&timings[s], &timings[t]);
                if !fires_first(a, b) {
                    f.add(format!(
                        "{ALERTMANAGER_EXAMPLE}: inhibit rule {i}: its source {s} waits {:?} (`for`) in {} (every {:?}), so it may fire after {t} (`for` {:?} in {}, every {:?}), which it silences: {t} would be notified first",
                        a.wait, a.group, a.every, b.wait, b.group, b.every
                    ));
                }
            }
        }
    }
    if checked == 0 {
        f.add(format!(
            "{ALERTMANAGER_EXAMPLE}: no inhibit rule silences by alert name within one GPU: nothing to check the order of `for` on"
        ));
    }
}

/// fires_first: in one group the `for`s alone decide; across groups the source's interval is
/// added to its `for`, so a source in a group evaluated every minute with the same `for` as
/// its target in another group may come a minute late.
#[test]
fn the_source_fires_first_with_its_groups_interval() {
    let at = |group: &str, every: u64, wait: u64| Timing {
        group: group.to_owned(),
        every: Duration::from_secs(every),
        wait: Duration::from_secs(wait),
    };
    assert!(fires_first(&at("a", 60, 300), &at("a", 60, 300)));
    assert!(!fires_first(&at("a", 60, 600), &at("a", 60, 300)));
    assert!(!fires_first(&at("a", 60, 300), &at("b", 15, 300)));
    assert!(fires_first(&at("a", 15, 0), &at("b", 60, 300)));
    assert!(fires_first(&at("a", 60, 240), &at("b", 15, 300)));
    assert!(!fires_first(&at("a", 60, 241), &at("b", 15, 300)));
}
