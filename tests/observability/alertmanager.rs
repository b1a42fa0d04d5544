//! The shipped alerts through a real Alertmanager, end to end: an exporter on an idle node
//! (tests/fixtures/scenarios/idle.toml: two H100s at 4.00 an hour in the example prices) and
//! one on the incidents node, scraped by a real Prometheus that evaluates the shipped rules
//! and prices and sends its alerts to a real Alertmanager (Debian's `prometheus-alertmanager`)
//! configured with alerts/alertmanager.example.yaml, which posts to stand-ins served here:
//! Slack's webhook, and a webhook as each of the example's paging and ticket receivers.
//! GpuNodeIdle must arrive in Slack's shape, in the example's channel, naming the node and its
//! cost (8.00 an hour); the incidents node must give one notification group per fault, the
//! inhibit rules silencing the rest (`inhibit`). `amtool` checks the example and where it
//! routes each alert of the rules file, by its severity. Every alert's `for` is cut to a few
//! seconds (SHORT_FOR says why not 0s; an alert without `for` keeps none, so no alert that
//! came later in production comes earlier here): the durations are the promtool unit tests'
//! to prove (alerts/tests/), their order `inhibit::check_for_order`'s.
//! A failure says where the chain broke, with what Prometheus and Alertmanager hold and the
//! processes' logs.

use super::*;

use std::sync::{Arc, Mutex};

/// The idle node's name (IDLE_SCENARIO: two idle H100s, no pods).
const IDLE_NODE: &str = "sim-idle-node";
/// What its GPUs cost an hour with the example prices: 2 × 4.00.
const IDLE_NODE_COST: &str = "8.00";

pub(crate) const ALERTMANAGER_EXAMPLE: &str = "alertmanager.example.yaml";
const PRICES_FILE: &str = "gpu-prices.example.rules.yaml";
/// The channel and receiver of the cost alerts in the example.
const SLACK_CHANNEL: &str = "#gpu-costs";
const COST_ALERTS: [&str; 2] = ["GpuNodeIdle", "GpuAllocatedIdle"];
/// The path the stand-in Slack webhook is given in the URL (any path is answered).
const SLACK_PATH: &str = "/services/T000/B000/stand-in";

/// Every alert's `for` in the run, when it has one (GpuNodeIdle's 30m, ...). Not 0s: the alert reads the node's price,
/// which comes from the price rules (group gpu-exporter.prices), another group than its own,
/// and groups evaluate at their own offsets, so on the first evaluations after Prometheus
/// starts the alert can be true before a price is recorded (1 run in 10 here with 0s). Firing
/// then, it would carry no cost; Prometheus resends an alert's annotations only a minute later
/// (--rules.alert.resend-delay) and Alertmanager does not notify again for a changed
/// annotation before repeat_interval, so the Slack message would stay without the cost. A few
/// seconds of `for` let the prices be recorded (every second here) before the alert fires.
const SHORT_FOR: &str = "10s";

/// How long, from Prometheus being ready, the alert may take to reach Slack (it takes a few
/// seconds: scrape, three levels of rules, SHORT_FOR, Alertmanager's group_wait).
const DELIVERY_DEADLINE: Duration = Duration::from_secs(90);

/// How long, from Prometheus being ready, the incidents node's groups may take to settle (its
/// last fault lands 16 s into the scenario; then SHORT_FOR, then group_wait).
const INCIDENTS_DEADLINE: Duration = Duration::from_secs(120);

/// The example's group_wait in the run, instead of 30 s to a minute: long enough for the
/// alerts of one rule evaluation (an inhibit rule's source and its targets) to reach
/// Alertmanager before a group's first notification.
const SHORT_GROUP_WAIT: &str = "5s";

#[test]
fn alertmanager_routes_each_fault_once() {
    check_alertmanager(&layout().alerts);
}

// ---------------------------------------------------------------------------------------------
// The stand-in Slack webhook

/// One POST the stand-in received: its path, Content-Type and body.
#[derive(Clone, Debug)]
pub(crate) struct Post {
    pub(crate) path: String,
    pub(crate) content_type: String,
    pub(crate) body: Vec<u8>,
}

/// An HTTP server on 127.0.0.1 standing in for Slack's incoming webhook and the webhook
/// receivers (`inhibit::WEBHOOK_RECEIVERS`, by path): reads each request
/// whole (the body by its Content-Length), answers `200 ok` as Slack does, and keeps what was
/// POSTed. Its threads live as long as the test process. Returns its port and the POSTs.
fn slack_stand_in() -> (u16, Arc<Mutex<Vec<Post>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let posts = Arc::new(Mutex::new(Vec::new()));
    let keep = Arc::clone(&posts);
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let keep = Arc::clone(&keep);
            std::thread::spawn(move || serve_webhook(conn, &keep));
        }
    });
    (port, posts)
}

/// The requests of one keep-alive connection (Alertmanager's HTTP client reuses them)
/// (`serve_connection`): each POST kept; a request without Content-Length is kept with an
/// empty body and a note in its Content-Type, and answered 411.
fn serve_webhook(conn: std::net::TcpStream, posts: &Mutex<Vec<Post>>) {
    serve_connection(conn, |r| {
        let Some(body) = r.body else {
            posts.lock().unwrap().push(Post {
                path: r.path,
                content_type: format!("{} (no Content-Length: body not read)", r.content_type),
                body: Vec::new(),
            });
            return b"HTTP/1.1 411 Length Required\r\nConnection: close\r\n\r\n";
        };
        if r.method == "POST" {
            posts.lock().unwrap().push(Post {
                path: r.path,
                content_type: r.content_type,
                body,
            });
        }
        b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\nok"
    });
}

/// What a Slack message says, for the checks: its channel, and each attachment's title and
/// text joined (Alertmanager's slack_configs put the title and text templates there).
struct SlackMessage {
    channel: String,
    attachments: Vec<String>,
}

impl SlackMessage {
    /// The message of a POST body in Slack's incoming-webhook shape, or why it is not one.
    fn parse(body: &[u8]) -> Result<Self, String> {
        let json: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON ({e})"))?;
        let channel = str_of(&json, "channel").ok_or("no `channel`")?.to_owned();
        let attachments: Vec<String> = array(&json, "attachments")
            .iter()
            .map(|a| {
                format!(
                    "{}\n{}",
                    str_of(a, "title").unwrap_or(""),
                    str_of(a, "text").unwrap_or("")
                )
            })
            .collect();
        if attachments.is_empty() && str_of(&json, "text").is_none() {
            return Err("neither `attachments` nor `text`".into());
        }
        let mut attachments = attachments;
        if let Some(t) = str_of(&json, "text") {
            attachments.push(t.to_owned());
        }
        Ok(Self {
            channel,
            attachments,
        })
    }

    /// The attachment that announces GpuNodeIdle on the idle node (its cost is checked after).
    fn idle_node_alert(&self) -> Option<&str> {
        self.attachments
            .iter()
            .map(String::as_str)
            .find(|a| a.contains("GpuNodeIdle") && a.contains(IDLE_NODE))
    }
}

// ---------------------------------------------------------------------------------------------
// The configurations

/// The example Alertmanager configuration as the test runs it. The substitutions: the Slack
/// URL line (`api_url_file:` or `api_url:`, which must be there once) becomes
/// `api_url: <the stand-in's URL>`, and each receiver of `inhibit::WEBHOOK_RECEIVERS` (which
/// the example leaves without an integration, for the user's own) gets a webhook to the
/// stand-in at its path under `webhook_base`. Besides, only the waits: the example's
/// group_wait (30 s to a minute, for people) becomes SHORT_GROUP_WAIT and its group_interval
/// 1 s, so that a message leaves soon after Alertmanager has the alert, and a second one as
/// soon as a group changes. Routes, matchers, inhibit rules, channel and templates are the
/// example's own.
fn alertmanager_config(
    example: &str,
    slack_url: &str,
    webhook_base: &str,
) -> Result<String, String> {
    let url_re = regex::Regex::new(r"(?m)^(\s*(?:-\s+)?)api_url(?:_file)?:.*$").unwrap();
    let n = url_re.find_iter(example).count();
    if n != 1 {
        return Err(format!(
            "{ALERTMANAGER_EXAMPLE}: expected one `api_url:` or `api_url_file:` line (the Slack receiver's), found {n}"
        ));
    }
    let config = url_re.replace(example, |c: &regex::Captures| {
        format!("{}api_url: '{slack_url}'", &c[1])
    });
    let mut config = config.into_owned();
    for (key, value) in [("group_wait", SHORT_GROUP_WAIT), ("group_interval", "1s")] {
        let re = regex::Regex::new(&format!(r"(?m)^(\s*){key}:.*$")).unwrap();
        config = re
            .replace_all(&config, format!("${{1}}{key}: {value}"))
            .into_owned();
    }
    for (receiver, path) in super::inhibit::WEBHOOK_RECEIVERS {
        let re = regex::Regex::new(&format!(r"(?m)^(\s*)- name: {receiver}\s*$")).unwrap();
        let n = re.find_iter(&config).count();
        if n != 1 {
            return Err(format!(
                "{ALERTMANAGER_EXAMPLE}: expected one receiver `- name: {receiver}`, found {n}"
            ));
        }
        config = re
            .replace(&config, |c: &regex::Captures| {
                format!(
                    "{0}- name: {receiver}\n{0}  webhook_configs:\n{0}    - url: '{webhook_base}{path}'",
                    &c[1]
                )
            })
            .into_owned();
    }
    Ok(config)
}

/// The shipped rules with every alert's `for` made SHORT_FOR (and, by the caller, the groups'
/// own intervals 1s), and nothing else changed: the test proves the chain from the rules to
/// the receivers, not the durations, which the promtool unit tests (alerts/tests/) prove.
/// GpuNodeIdle, whose 30 minutes the Slack check waits for, must be among them.
fn rules_with_short_fors(rules: &str) -> Result<String, String> {
    let re = regex::Regex::new(r"^(\s+)for: (\S+)\s*$").unwrap();
    let mut cut = 0;
    let mut in_idle_node = false;
    let mut idle_node_cut = false;
    let mut out = Vec::new();
    for line in rules.lines() {
        let t = line.trim_start();
        if t.starts_with("- alert:") || t.starts_with("- record:") || t.starts_with("- name:") {
            in_idle_node = t == "- alert: GpuNodeIdle";
        }
        match re.captures(line) {
            Some(c) if &c[2] != "0s" && &c[2] != "0" => {
                out.push(format!("{}for: {SHORT_FOR}", &c[1]));
                cut += 1;
                idle_node_cut |= in_idle_node;
            }
            _ => out.push(line.to_owned()),
        }
    }
    if !idle_node_cut {
        return Err(format!(
            "{RULES_FILE}: GpuNodeIdle has no `for:` line (cut {cut})"
        ));
    }
    Ok(out.join("\n") + "\n")
}

// ---------------------------------------------------------------------------------------------
// The check

pub(crate) fn check_alertmanager(alerts: &Path) {
    let test = "alertmanager_routes_each_fault_once";
    let Some(tools) = tools_or_skip(&["prometheus", "prometheus-alertmanager", "amtool"], test)
    else {
        return;
    };
    let (prometheus_bin, alertmanager_bin, amtool) = (&tools[0], &tools[1], &tools[2]);
    let started = Instant::now();
    let mut f = Failures::default();
    let heading = format!(
        "The shipped alerts through Alertmanager ({}): GpuNodeIdle to Slack, one notification per fault",
        alerts.join(ALERTMANAGER_EXAMPLE).display()
    );

    // The example as it is: valid, and routing the cost alerts (only them) to Slack.
    let example_path = alerts.join(ALERTMANAGER_EXAMPLE);
    let example = match std::fs::read_to_string(&example_path) {
        Ok(t) => t,
        Err(e) => {
            f.add(format!("{}: cannot read: {e}", example_path.display()));
            return f.finish(&heading);
        }
    };
    // amtool loads the inhibit rules: as many as the file has, and some.
    let inhibit_rules = read_yaml(&example_path)
        .map(|y| array(&y, "inhibit_rules").len())
        .unwrap_or(0);
    match run_tool(Command::new(amtool).arg("check-config").arg(&example_path)) {
        Ok(out)
            if inhibit_rules == 0 || !out.contains(&format!(" {inhibit_rules} inhibit rules")) =>
        {
            f.add(format!(
                "amtool check-config does not report the example's {inhibit_rules} inhibit rules (there must be some): {out}"
            ));
        }
        Ok(_) => {}
        Err(e) => f.add(format!("amtool check-config: {e}")),
    }
    check_routes(amtool, &example_path, &alerts.join(RULES_FILE), &mut f);
    super::inhibit::check_for_order(&example_path, &alerts.join(RULES_FILE), &mut f);

    // The files the run reads, in its temporary directory.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut procs = Procs {
        children: Vec::new(),
        dir: tempfile::tempdir().unwrap(),
    };
    let (slack_port, posts) = slack_stand_in();
    let slack_url = format!("http://127.0.0.1:{slack_port}{SLACK_PATH}");
    let webhook_base = format!("http://127.0.0.1:{slack_port}");
    let am_config = match alertmanager_config(&example, &slack_url, &webhook_base) {
        Ok(c) => c,
        Err(e) => {
            f.add(e);
            return f.finish(&heading);
        }
    };
    let rules = match std::fs::read_to_string(alerts.join(RULES_FILE))
        .map_err(|e| format!("{RULES_FILE}: cannot read: {e}"))
        .and_then(|t| rules_with_short_fors(&t))
        .and_then(|t| super::prometheus::with_test_intervals(&t))
    {
        Ok(r) => r,
        Err(e) => {
            f.add(e);
            return f.finish(&heading);
        }
    };
    let am_config_path = procs.dir.path().join("alertmanager.yml");
    let rules_path = procs.dir.path().join(RULES_FILE);
    std::fs::write(&am_config_path, &am_config).unwrap();
    std::fs::write(&rules_path, &rules).unwrap();
    let prices_path = alerts
        .join(PRICES_FILE)
        .canonicalize()
        .unwrap_or_else(|_| alerts.join(PRICES_FILE));

    // The exporters on the idle node and on the incidents node (its faults from 9 s of
    // scenario time, so started first).
    let exporter_port = common::free_port();
    let exporter_idx = procs.spawn(
        "exporter-idle",
        exporter(root, exporter_port).args(["--simulate", IDLE_SCENARIO]),
    );
    let incidents_port = common::free_port();
    let incidents_idx = procs.spawn(
        "exporter-incidents",
        exporter(root, incidents_port).args(["--simulate", INCIDENTS_SCENARIO]),
    );

    // Alertmanager, alone (no cluster), its state in the run's directory.
    let am_port = common::free_port();
    let am_idx = procs.spawn(
        "alertmanager",
        Command::new(alertmanager_bin)
            .arg(format!("--config.file={}", am_config_path.display()))
            .arg(format!(
                "--storage.path={}",
                procs.dir.path().join("alertmanager").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{am_port}"))
            .arg("--cluster.listen-address=")
            .arg("--log.level=info"),
    );
    procs.wait_http(
        exporter_idx,
        exporter_port,
        "/ready",
        Duration::from_secs(60),
    );
    procs.wait_http(
        incidents_idx,
        incidents_port,
        "/ready",
        Duration::from_secs(60),
    );
    procs.wait_http(am_idx, am_port, "/-/ready", Duration::from_secs(60));

    // Prometheus: the rules (every `for` SHORT_FOR) and the example prices, alerts to
    // Alertmanager, the exporters scraped every second.
    let quoted = |p: &Path| serde_json::to_string(&p.to_string_lossy()).unwrap();
    let config = format!(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n  - {}\n  - {}\n\
         alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: [\"127.0.0.1:{am_port}\"]\n\
         scrape_configs:\n  - job_name: gpu-exporter\n    static_configs:\n      - targets: [\"127.0.0.1:{exporter_port}\", \"127.0.0.1:{incidents_port}\"]\n",
        quoted(&rules_path),
        quoted(&prices_path),
    );
    let prom_port = procs.start_prometheus(prometheus_bin, &config);
    let ready = Instant::now();

    // Until Slack has the message, or the deadline.
    let deadline = ready + DELIVERY_DEADLINE;
    let delivered = loop {
        let got = posts.lock().unwrap().clone();
        let found = got.iter().find_map(|p| {
            let m = SlackMessage::parse(&p.body).ok()?;
            m.idle_node_alert()
                .map(|a| (p.clone(), m.channel.clone(), a.to_owned()))
        });
        if let Some(found) = found {
            break Some(found);
        }
        let exited: Vec<String> = procs
            .children
            .iter_mut()
            .filter_map(|(name, c)| Some(format!("{name} exited ({})", c.try_wait().ok()??)))
            .collect();
        if !exited.is_empty() {
            f.add(exited.join("; "));
            break None;
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    let waited = ready.elapsed();

    match &delivered {
        Some((post, channel, attachment)) => {
            if channel != SLACK_CHANNEL {
                f.add(format!(
                    "the Slack message went to channel {channel:?}, not {SLACK_CHANNEL:?}"
                ));
            }
            if post.path != SLACK_PATH {
                f.add(format!(
                    "the Slack message was posted to {:?}, not the api_url's path {SLACK_PATH:?}",
                    post.path
                ));
            }
            if !post.content_type.starts_with("application/json") {
                f.add(format!(
                    "the Slack message's Content-Type is {:?}, not application/json",
                    post.content_type
                ));
            }
            let cost = format!("{IDLE_NODE_COST} an hour");
            if !attachment.contains(&cost) {
                f.add(format!(
                    "the Slack message about GpuNodeIdle on {IDLE_NODE} does not give the node's cost ({cost:?}, 2 × H100 at 4.00): {attachment:?}"
                ));
            }
            // The message states the cost itself, not only where it quotes the rule's
            // description (the template takes it from the `cost_per_hour` annotation).
            match idle_node_description(am_port) {
                Ok(d) if !attachment.replace(&d, "").contains(IDLE_NODE_COST) => f.add(format!(
                    "the Slack message about GpuNodeIdle gives the cost only inside the quoted description ({d:?}): the template did not read it out: {attachment:?}"
                )),
                Ok(_) => {}
                Err(e) => f.add(e),
            }
        }
        None => f.add(format!(
            "no Slack message announcing GpuNodeIdle firing on {IDLE_NODE} within {waited:.0?} of Prometheus being ready; {}",
            where_it_broke(prom_port, am_port, &posts.lock().unwrap())
        )),
    }
    // The incidents node: one notification group per fault; then each inhibit rule alone.
    super::inhibit::check_incidents_groups(am_port, &posts, ready + INCIDENTS_DEADLINE, &mut f);
    super::inhibit::check_inhibit_rules(am_port, &mut f);

    // Only the cost alerts go to Slack.
    for p in posts
        .lock()
        .unwrap()
        .iter()
        .filter(|p| p.path == SLACK_PATH)
    {
        let text = String::from_utf8_lossy(&p.body);
        match SlackMessage::parse(&p.body) {
            Err(e) => f.add(format!(
                "the stand-in Slack got a POST that is not a Slack message ({e}): {text}"
            )),
            Ok(m) => {
                for a in &m.attachments {
                    if !COST_ALERTS.iter().any(|c| a.contains(c)) {
                        f.add(format!(
                            "the stand-in Slack got a message that names no cost alert: {a:?}"
                        ));
                    }
                }
            }
        }
    }
    if !f.0.is_empty() {
        for name in [
            "prometheus",
            "alertmanager",
            "exporter-idle",
            "exporter-incidents",
        ] {
            f.add(format!(
                "{name}'s log (last lines):\n{}",
                procs.log_tail(name)
            ));
        }
        f.add(format!(
            "the Alertmanager configuration run (the example, api_url and waits replaced):\n{am_config}"
        ));
    }
    say(&format!(
        "observability: GpuNodeIdle {} Slack through Alertmanager {:.1} s after Prometheus was ready ({:.1} s in all)",
        if delivered.is_some() {
            "reached"
        } else {
            "did NOT reach"
        },
        waited.as_secs_f64(),
        started.elapsed().as_secs_f64()
    ));
    drop(procs);
    f.finish(&heading);
}

/// Where each alert of the rules file goes in the example, as `amtool config routes test`
/// says, given its `severity`: the cost alerts to a receiver with `slack_configs`, the critical
/// ones to the paging receiver (`default`), warnings and info to the ticket queue
/// (`gpu-tickets`).
fn check_routes(amtool: &Path, example: &Path, rules: &Path, f: &mut Failures) {
    let slack: BTreeSet<String> = match read_yaml(example) {
        Ok(y) => array(&y, "receivers")
            .iter()
            .filter(|r| !array(r, "slack_configs").is_empty())
            .filter_map(|r| str_of(r, "name").map(str::to_owned))
            .collect(),
        Err(e) => {
            f.add(e);
            return;
        }
    };
    if slack.is_empty() {
        f.add(format!(
            "{ALERTMANAGER_EXAMPLE}: no receiver has slack_configs"
        ));
    }
    let alerts: Vec<(String, String)> = match read_yaml(rules) {
        Ok(y) => array(&y, "groups")
            .iter()
            .flat_map(|g| array(g, "rules"))
            .filter_map(|r| {
                let name = str_of(r, "alert")?.to_owned();
                let severity = r.get("labels").and_then(|l| str_of(l, "severity"))?;
                Some((name, severity.to_owned()))
            })
            .collect(),
        Err(e) => return f.add(e),
    };
    let receiver = |alert: &str, severity: &str| -> Result<String, String> {
        run_tool(
            Command::new(amtool)
                .args(["config", "routes", "test"])
                .arg(format!("--config.file={}", example.display()))
                .arg(format!("alertname={alert}"))
                .arg(format!("severity={severity}"))
                .arg(format!("Hostname={IDLE_NODE}"))
                // amtool warns on stderr that the file overrides --alertmanager.url.
                .stderr(Stdio::null()),
        )
        .map(|out| out.trim().to_owned())
    };
    if alerts.len() < 20 {
        f.add(format!(
            "{RULES_FILE}: only {} alerts with a severity found",
            alerts.len()
        ));
    }
    for (alert, severity) in &alerts {
        let want = if COST_ALERTS.contains(&alert.as_str()) {
            "Slack"
        } else if severity == "critical" {
            "default"
        } else {
            "gpu-tickets"
        };
        match receiver(alert, severity) {
            Ok(r) if want == "Slack" && !slack.contains(&r) => f.add(format!(
                "{ALERTMANAGER_EXAMPLE}: {alert} goes to receiver {r:?}; it should go to Slack (those with slack_configs: {slack:?})"
            )),
            Ok(r) if want != "Slack" && r != want => f.add(format!(
                "{ALERTMANAGER_EXAMPLE}: {alert} (severity {severity}) goes to receiver {r:?}; it should go to {want:?}"
            )),
            Ok(_) => {}
            Err(e) => f.add(format!("amtool config routes test: {e}")),
        }
    }
}

/// GpuNodeIdle's description on the idle node, as Alertmanager holds it.
fn idle_node_description(am_port: u16) -> Result<String, String> {
    let (code, body) = http_get(am_port, "/api/v2/alerts", &[])?;
    let json: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("Alertmanager /api/v2/alerts: HTTP {code}, not JSON ({e})"))?;
    json.as_array()
        .into_iter()
        .flatten()
        .find(|a| {
            let l = a.get("labels").unwrap_or(&Value::Null);
            str_of(l, "alertname") == Some("GpuNodeIdle") && str_of(l, "Hostname") == Some(IDLE_NODE)
        })
        .and_then(|a| a.get("annotations").and_then(|n| str_of(n, "description")))
        .map(str::to_owned)
        .ok_or(format!(
            "Alertmanager /api/v2/alerts holds no GpuNodeIdle on {IDLE_NODE} with a description: {json}"
        ))
}

/// Where the chain from the rule to Slack broke, from what Prometheus and Alertmanager hold
/// and what the stand-in received: the first link that lacks the alert, then their whole
/// answers.
fn where_it_broke(prom_port: u16, am_port: u16, posts: &[Post]) -> String {
    let prom = prom_api(prom_port, "/api/v1/alerts", &[]);
    let prom_has = match &prom {
        Ok(d) => array(d, "alerts").iter().any(|a| {
            let l = a.get("labels").unwrap_or(&Value::Null);
            str_of(l, "alertname") == Some("GpuNodeIdle")
                && str_of(l, "Hostname") == Some(IDLE_NODE)
                && str_of(a, "state") == Some("firing")
        }),
        Err(_) => false,
    };
    let am = http_get(am_port, "/api/v2/alerts", &[]);
    let am_json: Option<Value> = am
        .as_ref()
        .ok()
        .and_then(|(_, b)| serde_json::from_slice(b).ok());
    let am_has = am_json.as_ref().and_then(Value::as_array).is_some_and(|a| {
        a.iter().any(|a| {
            let l = a.get("labels").unwrap_or(&Value::Null);
            str_of(l, "alertname") == Some("GpuNodeIdle")
                && str_of(l, "Hostname") == Some(IDLE_NODE)
        })
    });
    let verdict = if !prom_has {
        "BROKEN AT PROMETHEUS: GpuNodeIdle is not firing there (the rules, the exporter's series or the prices)"
    } else if !am_has {
        "BROKEN BETWEEN PROMETHEUS AND ALERTMANAGER: Prometheus fires GpuNodeIdle, Alertmanager does not hold it"
    } else if posts.is_empty() {
        "BROKEN AT ALERTMANAGER: it holds GpuNodeIdle but posted nothing to the stand-in Slack (route, receiver, api_url)"
    } else {
        "BROKEN IN THE MESSAGE: Alertmanager posted to the stand-in Slack, but no message names GpuNodeIdle FIRING on the node (the templates)"
    };
    let prom_text = match prom {
        Ok(d) => d.to_string(),
        Err(ApiError::Fatal(m) | ApiError::Transient(m)) => m,
    };
    let am_text = match am {
        Ok((code, body)) => format!("HTTP {code}: {}", String::from_utf8_lossy(&body)),
        Err(e) => e,
    };
    let bodies: Vec<String> = posts
        .iter()
        .map(|p| format!("{} {}", p.path, String::from_utf8_lossy(&p.body)))
        .collect();
    format!(
        "{verdict}\n    Prometheus /api/v1/alerts: {prom_text}\n    Alertmanager /api/v2/alerts: {am_text}\n    stand-in Slack POSTs ({}): {}",
        posts.len(),
        bodies.join("\n      ")
    )
}
